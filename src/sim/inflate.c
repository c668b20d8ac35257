/* inflate.c - the FGD experiment's inflation sampler (see inflate.h).
 *
 * Example: a trace of pods asking 0.5, 1 and 8 GPUs (9.5 in all) on a
 * 10-GPU cluster with ratio 1.3 (target 13): the three pods are shuffled,
 * then samples are appended while total + the sample's per-GPU share <= 13,
 * e.g. 1 (total 10.5), 0.5 (11), 1 (12); a sampled 8-GPU pod has a per-GPU
 * share of 1, 12 + 1 <= 13, so it is appended too (total 20) and the next
 * sample stops the loop.  The per-GPU comparison is FGD's; we keep it to
 * compare like with like.
 */
#include "sim/inflate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim/rng.h"
#include "util/grow.h"

/* The GPU share one replica asks for (FGD's MilliGpu). */
static int64_t per_gpu_milli(const gp_trace_job *j)
{
    return j->gpus == 0 ? 0 : j->gpu_milli > 0 ? j->gpu_milli : 1000;
}

static gp_err copy_tables(const gp_trace *src, gp_trace *out, uint16_t *tenant_map, gp_error *err)
{
    for (size_t i = 0; i < src->n_tenants; i++)
        if (!gp_trace_tenant(out, src->tenants[i], &tenant_map[i]))
            return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    for (int b = 0; b < src->n_types; b++)
        if (gp_trace_type(out, src->types[b]) != b)
            return gp_error_set(err, GP_ERR_INVALID, "trace", "the inflated trace must start without GPU types");
    return GP_OK;
}

/* The list of source indexes: shuffled trace, then samples (or removals). */
static uint32_t *submission_order(const gp_trace *src, double target, gp_rng *r, size_t *n_out)
{
    size_t n = src->n_jobs, cap = n * 2 + 16;
    uint32_t *idx = malloc(cap * sizeof *idx);
    if (!idx)
        return NULL;
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        idx[i] = (uint32_t)i;
        total += (double)gp_trace_job_milli(&src->jobs[i]);
    }
    gp_rng_shuffle_u32(r, idx, n);
    bool tune_down = total > target;
    while (total > target && n > 0) { /* tune down */
        size_t k = (size_t)gp_rng_below(r, n);
        total -= (double)gp_trace_job_milli(&src->jobs[idx[k]]);
        memmove(idx + k, idx + k + 1, (n - k - 1) * sizeof *idx);
        n--;
    }
    bool any_gpu = false;
    for (size_t i = 0; i < src->n_jobs; i++)
        any_gpu = any_gpu || per_gpu_milli(&src->jobs[i]) > 0;
    while (!tune_down && total < target && any_gpu) { /* tune up */
        uint32_t pick = (uint32_t)gp_rng_below(r, src->n_jobs);
        if (total + (double)per_gpu_milli(&src->jobs[pick]) > target)
            break;
        uint32_t *grown = gp_grow(idx, &cap, n + 1, sizeof *idx);
        if (!grown) {
            free(idx);
            return NULL;
        }
        idx = grown;
        idx[n++] = pick;
        total += (double)gp_trace_job_milli(&src->jobs[pick]);
    }
    *n_out = n;
    return idx;
}

gp_err gp_trace_inflate(const gp_trace *src, double ratio, int64_t capacity_milli, uint64_t seed, gp_trace *out,
                        gp_error *err)
{
    if (!(ratio > 0) || capacity_milli <= 0)
        return gp_error_set(err, GP_ERR_INVALID, "ratio", "inflation needs a ratio > 0 and a non-empty fleet");
    uint16_t *tenant_map = calloc(src->n_tenants ? src->n_tenants : 1, sizeof *tenant_map);
    if (!tenant_map)
        return gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    gp_err rc = copy_tables(src, out, tenant_map, err);
    gp_rng r = gp_rng_new(seed);
    size_t n = 0;
    uint32_t *idx = rc ? NULL : submission_order(src, ratio * (double)capacity_milli, &r, &n);
    if (rc == GP_OK && !idx)
        rc = gp_error_set(err, GP_ERR_NOMEM, "trace", "out of memory");
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        gp_trace_job j = src->jobs[idx[i]];
        j.submit = (int64_t)i + 1;
        j.duration = -1;
        j.tenant = tenant_map[j.tenant];
        rc = gp_trace_add(out, &j, err);
    }
    free(idx);
    free(tenant_map);
    return rc;
}
