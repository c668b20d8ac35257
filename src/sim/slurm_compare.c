/* slurm_compare.c - the side-by-side table of Slurm's history and gpupool's replay.
 *
 * See slurm_compare.h for the columns.  Every figure but attainment and
 * p95 comes from gp_sim_metrics_compute, the simulator's own measures, so
 * the Slurm row and the gpupool rows are judged alike.
 */
#include "sim/slurm_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/metrics.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank p95 of the waits of group's jobs; -1 when out of memory. */
static double p95_wait(const gp_sim_result *r, size_t group)
{
    int64_t *w = malloc((r->n_jobs ? r->n_jobs : 1) * sizeof *w);
    if (!w)
        return -1;
    size_t n = 0;
    for (size_t j = 0; j < r->n_jobs; j++)
        if (r->jobs[j].outcome != GP_SIM_REJECTED && (group == GP_SIM_ALL_GROUPS || r->job_group[j] == group))
            w[n++] = r->jobs[j].wait_s;
    qsort(w, n, sizeof *w, cmp_i64);
    size_t rank = (size_t)ceil(0.95 * (double)n);
    double v = n ? (double)w[rank ? rank - 1 : 0] : 0;
    free(w);
    return v;
}

/* demand[g] = the milli-GPUs group g's jobs asked for at time x: submitted and not ended. */
static void demand_at(const gp_sim_result *r, const gp_trace *t, int64_t x, int64_t *demand)
{
    memset(demand, 0, r->n_groups * sizeof *demand);
    for (size_t j = 0; j < r->n_jobs; j++) {
        const gp_sim_job_result *jr = &r->jobs[j];
        if (jr->outcome == GP_SIM_REJECTED || t->jobs[j].submit > x || (jr->end >= 0 && jr->end <= x))
            continue;
        demand[r->job_group[j]] += gp_trace_job_milli(&t->jobs[j]);
    }
}

gp_err gp_sim_attainment_sums(const gp_sim_result *r, const gp_trace *t, double *promised, double *attained,
                              gp_error *err)
{
    int64_t *demand = calloc(r->n_groups ? r->n_groups : 1, sizeof *demand);
    if (!demand)
        return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    memset(promised, 0, r->n_groups * sizeof *promised);
    memset(attained, 0, r->n_groups * sizeof *attained);
    for (size_t s = 0; s < r->n_samples; s++) {
        demand_at(r, t, r->samples[s].t, demand);
        for (size_t g = 0; g < r->n_groups; g++) {
            int64_t guarantee = r->group_guarantee_milli[g];
            int64_t p = demand[g] < guarantee ? demand[g] : guarantee;
            int64_t u = r->group_usage[s * r->n_groups + g];
            if (p <= 0)
                continue;
            promised[g] += (double)p;
            attained[g] += (double)(u < p ? u : p);
        }
    }
    free(demand);
    return GP_OK;
}

/* Attainment in % of group (GP_SIM_ALL_GROUPS: the sums over all), -1 when nothing was promised. */
static double attainment_pct(size_t n_groups, const double *promised, const double *attained, size_t group)
{
    double p = 0, a = 0;
    for (size_t g = 0; g < n_groups; g++)
        if (group == GP_SIM_ALL_GROUPS || g == group) {
            p += promised[g];
            a += attained[g];
        }
    return p > 0 ? 100.0 * a / p : -1;
}

static void print_header(FILE *out)
{
    fprintf(out, "%-22s %-9s %6s %10s %10s %9s %8s %8s %7s %9s %6s\n", "account", "run", "jobs", "mean wait",
            "p95 wait", "GPUs used", "alloc %", "attain %", "preempt", "lost GPUh", "Jain");
}

/* One run's row for group; sums: its attainment sums (promised, then attained, n_groups each). */
static gp_err print_row(FILE *out, const char *label, const gp_sim_result *r, const gp_trace *t, size_t group,
                        const double *sums, gp_error *err)
{
    gp_sim_metrics m;
    gp_err rc = gp_sim_metrics_compute(r, t, group, &m, err);
    if (rc)
        return rc;
    char alloc[16] = "-", attain[16] = "-", jain[16] = "-";
    double a = attainment_pct(r->n_groups, sums, sums + r->n_groups, group);
    if (a >= 0)
        snprintf(attain, sizeof attain, "%.1f", a);
    if (group == GP_SIM_ALL_GROUPS) {
        snprintf(alloc, sizeof alloc, "%.1f", m.allocation_pct);
        snprintf(jain, sizeof jain, "%.3f", m.jain_mean);
    }
    fprintf(out, "%-22s %-9s %6zu %10.0f %10.0f %9.2f %8s %8s %7llu %9.2f %6s\n", label, r->policy.name,
            m.jobs - m.rejected, m.mean_wait_s, p95_wait(r, group), m.mean_usage_gpus, alloc, attain,
            (unsigned long long)m.preemptions, m.lost_gpu_h, jain);
    return GP_OK;
}

gp_err gp_sim_slurm_compare(FILE *out, const gp_trace *t, const gp_sim_result *runs, size_t n, gp_error *err)
{
    fprintf(out, "slurm: %zu rows: %zu jobs replayed, %zu never ran (cancelled while pending, or not ended), "
                 "%zu malformed",
            t->rows, t->n_jobs, t->not_run, t->malformed);
    for (size_t i = 0; i < t->malformed && i < sizeof t->first_malformed / sizeof t->first_malformed[0]; i++)
        fprintf(out, "%s%zu", i ? ", " : " (lines ", t->first_malformed[i]);
    fprintf(out, "%s\n", t->malformed ? (t->malformed > 4 ? ", ...)" : ")") : "");
    print_header(out);
    size_t n_groups = n > 0 ? runs[0].n_groups : 0;
    double *sums = calloc(n * 2 * n_groups + 1, sizeof *sums); /* per run: promised, attained */
    if (!sums)
        return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        rc = gp_sim_attainment_sums(&runs[i], t, sums + i * 2 * n_groups, sums + (i * 2 + 1) * n_groups, err);
    for (size_t g = 0; rc == GP_OK && g < n_groups; g++)
        for (size_t i = 0; rc == GP_OK && i < n; i++)
            rc = print_row(out, runs[0].groups[g], &runs[i], t, g, sums + i * 2 * n_groups, err);
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        rc = print_row(out, "(all)", &runs[i], t, GP_SIM_ALL_GROUPS, sums + i * 2 * n_groups, err);
    free(sums);
    return rc;
}
