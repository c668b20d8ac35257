/* sizing.c - a shared fleet and guarantees from the trace (see sizing.h).
 *
 * Worked example: team a's ideal demand is 8 GPUs half the time and 24
 * the other half; its largest job is 16.  p90 = 24, need = 24.  Team b:
 * p90 10, largest job 32, need 32.  Sum 56 = 7 nodes of 8: fleet 56,
 * guarantees a 24, b 32.  With 8-GPU nodes and a sum of 50, the fleet is
 * 56 and the guarantees are scaled by 56/50 (26.9 -> 27, 29.1 -> 29).
 */
#include "sim/sizing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/strbuf.h"

typedef struct step {
    int64_t time;
    int64_t milli;
} step;

static int by_time(const void *a, const void *b)
{
    const step *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (x->milli > y->milli) - (x->milli < y->milli);
}

typedef struct level {
    int64_t milli;
    int64_t seconds;
} level;

static int by_milli(const void *a, const void *b)
{
    const level *x = a, *y = b;
    return (x->milli > y->milli) - (x->milli < y->milli);
}

/* Time-weighted percentile of one tenant's ideal demand, in milli-GPUs;
 * *largest gets its largest job. */
static gp_err tenant_need(const gp_trace *t, uint16_t tenant, double pct, int64_t span_from, int64_t span_to,
                          int64_t *p_milli, int64_t *largest, gp_error *err)
{
    step *steps = malloc((2 * t->n_jobs + 1) * sizeof *steps);
    level *levels = malloc((2 * t->n_jobs + 2) * sizeof *levels);
    if (!steps || !levels) {
        free(steps);
        free(levels);
        return gp_error_set(err, GP_ERR_NOMEM, "sizing", "out of memory");
    }
    size_t n = 0, nl = 0;
    *largest = 0;
    for (size_t j = 0; j < t->n_jobs; j++) {
        const gp_trace_job *tj = &t->jobs[j];
        if (tj->tenant != tenant)
            continue;
        int64_t m = gp_trace_job_milli(tj);
        *largest = m > *largest ? m : *largest;
        steps[n++] = (step){tj->submit, m};
        steps[n++] = (step){tj->duration >= 0 ? tj->submit + tj->duration : span_to, -m};
    }
    qsort(steps, n, sizeof *steps, by_time);
    int64_t cur = 0, prev = span_from;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].time > prev)
            levels[nl++] = (level){cur, steps[i].time - prev};
        cur += steps[i].milli;
        prev = steps[i].time > prev ? steps[i].time : prev;
    }
    if (span_to > prev)
        levels[nl++] = (level){cur, span_to - prev};
    qsort(levels, nl, sizeof *levels, by_milli);
    double total = (double)(span_to - span_from), acc = 0;
    *p_milli = 0;
    for (size_t i = 0; i < nl; i++) {
        acc += (double)levels[i].seconds;
        *p_milli = levels[i].milli;
        if (acc >= pct / 100.0 * total)
            break;
    }
    free(steps);
    free(levels);
    return GP_OK;
}

/* Parents of every tenant path, once, before the tenants. */
static void parents_yaml(gp_strbuf *b, const gp_trace *t)
{
    for (size_t i = 0; i < t->n_tenants; i++) {
        const char *path = t->tenants[i];
        for (const char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
            size_t len = (size_t)(slash - path);
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                seen = strncmp(t->tenants[k], path, len) == 0 && t->tenants[k][len] == '/';
            if (!seen)
                gp_strbuf_printf(b, "  - {path: \"%.*s\"}\n", (int)len, path);
        }
    }
}

gp_err gp_sim_size_fleet(const gp_trace *t, const gp_sizing *how, char **fleet_yaml, char **tenants_yaml,
                         gp_error *err)
{
    if (t->n_jobs == 0 || t->n_tenants == 0)
        return gp_error_set(err, GP_ERR_INVALID, "trace", "sizing needs a trace with jobs");
    int64_t from = INT64_MAX, to = INT64_MIN;
    for (size_t j = 0; j < t->n_jobs; j++) {
        int64_t end = t->jobs[j].submit + (t->jobs[j].duration > 0 ? t->jobs[j].duration : 0);
        from = t->jobs[j].submit < from ? t->jobs[j].submit : from;
        to = end > to ? end : to;
    }
    int64_t *need = calloc(t->n_tenants, sizeof *need), sum = 0;
    if (!need)
        return gp_error_set(err, GP_ERR_NOMEM, "sizing", "out of memory");
    for (size_t i = 0; i < t->n_tenants; i++) {
        int64_t p = 0, largest = 0;
        gp_err rc = tenant_need(t, (uint16_t)i, how->percentile, from, to > from ? to : from + 1, &p, &largest, err);
        if (rc) {
            free(need);
            return rc;
        }
        need[i] = ((p > largest ? p : largest) + 999) / 1000; /* whole GPUs, rounded up */
        need[i] = need[i] > 0 ? need[i] : 1;
        sum += need[i];
    }
    int64_t nodes = (sum + how->gpus_per_node - 1) / how->gpus_per_node, fleet = nodes * how->gpus_per_node;
    gp_strbuf fb = {0}, tb = {0};
    gp_strbuf_printf(&fb,
                     "# sized by gpupool-sim: p%g of ideal demand (floor: largest job), %lld GPUs needed\n"
                     "nodes:\n  - {name: pool, count: %lld, block: b0, gpu_type: %s, gpus: %d, "
                     "cpu_millis: 1000000, mem_mib: 16777216}\n",
                     how->percentile, (long long)sum, (long long)nodes, how->gpu_type, how->gpus_per_node);
    gp_strbuf_printf(&tb, "# sized by gpupool-sim: guarantees scaled to a %lld-GPU fleet\ntenants:\n",
                     (long long)fleet);
    parents_yaml(&tb, t);
    int64_t given = 0;
    double *rem = calloc(t->n_tenants, sizeof *rem);
    int64_t *g = calloc(t->n_tenants, sizeof *g);
    for (size_t i = 0; rem && g && i < t->n_tenants; i++) {
        double exact = (double)need[i] * (double)fleet / (double)sum;
        g[i] = (int64_t)floor(exact);
        rem[i] = exact - (double)g[i];
        given += g[i];
    }
    for (; rem && g && given < fleet; given++) { /* largest remainder first */
        size_t best = 0;
        for (size_t i = 1; i < t->n_tenants; i++)
            best = rem[i] > rem[best] ? i : best;
        g[best]++;
        rem[best] = -1;
    }
    for (size_t i = 0; rem && g && i < t->n_tenants; i++)
        gp_strbuf_printf(&tb, "  - {path: \"%s\", guarantee: {gpu: {%s: %lld}}}\n", t->tenants[i], how->gpu_type,
                         (long long)g[i]);
    bool ok = rem && g;
    free(rem);
    free(g);
    free(need);
    *fleet_yaml = gp_strbuf_take(&fb);
    *tenants_yaml = gp_strbuf_take(&tb);
    if (!ok || !*fleet_yaml || !*tenants_yaml) {
        free(*fleet_yaml);
        free(*tenants_yaml);
        return gp_error_set(err, GP_ERR_NOMEM, "sizing", "out of memory");
    }
    return GP_OK;
}
