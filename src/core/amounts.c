/* amounts.c - an amount of one of the engine's dimensions in words: GPUs of
 * a type (kept in milli-GPUs), CPU (millicores) and memory (MiB), for the
 * messages of tenants.c (quota checks) and why.c (wait reasons).
 *
 * A base file (internal.h, "Layers"): it reads the fleet's type names and
 * calls no other file of src/core.
 *
 * Example: gp__amount_format(e, H100, 24000, ...) writes "24 H100 GPUs",
 * (e, H100, 2500, ...) "2.5 H100 GPUs", (e, GP_DIM_CPU, 4000, ...) "4000
 * millicores"; gp__amount_number(buf, len, H100, 1500) writes "1.5".
 */
#include "core/internal.h"

#include <stdio.h>

const char *gp__dim_label(const gp_engine *e, int d)
{
    if (d == GP_DIM_CPU)
        return "CPU";
    if (d == GP_DIM_MEM)
        return "memory";
    if (d >= 0 && d < e->fleet.n_types)
        return e->fleet.types[d];
    return "GPU";
}

/* Amount in the dimension's natural unit: GPUs (milli-GPUs shown as GPUs
 * with up to 3 decimals, "2.5"), millicores, MiB. */
void gp__amount_number(char *buf, size_t len, int d, int64_t v)
{
    if (d >= 0 && d < GP_MAX_GPU_TYPES && v % 1000 != 0) {
        int64_t frac = (v < 0 ? -v : v) % 1000;
        int digits = frac % 100 == 0 ? 1 : frac % 10 == 0 ? 2 : 3;
        int64_t shown = digits == 1 ? frac / 100 : digits == 2 ? frac / 10 : frac;
        snprintf(buf, len, "%s%lld.%0*lld", v < 0 && v > -1000 ? "-" : "", (long long)(v / 1000), digits,
                 (long long)shown);
    } else if (d >= 0 && d < GP_MAX_GPU_TYPES) {
        snprintf(buf, len, "%lld", (long long)(v / 1000));
    } else {
        snprintf(buf, len, "%lld", (long long)v);
    }
}

/* The unit after an amount v of dimension d: " GPU" for exactly one GPU
 * (1000 milli-GPUs), " GPUs" otherwise. */
const char *gp__amount_unit(int d, int64_t v)
{
    return d == GP_DIM_CPU ? " millicores" : d == GP_DIM_MEM ? " MiB" : v == 1000 ? " GPU" : " GPUs";
}

size_t gp__amount_format(const gp_engine *e, int d, int64_t v, char *buf, size_t len)
{
    char a[32];
    gp__amount_number(a, sizeof a, d, v);
    const char *u = gp__amount_unit(d, v);
    int n = d >= 0 && d < GP_MAX_GPU_TYPES ? snprintf(buf, len, "%s %s%s", a, gp__dim_label(e, d), u)
                                           : snprintf(buf, len, "%s%s", a, u);
    return n < 0 ? 0 : (size_t)n;
}
