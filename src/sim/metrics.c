/* metrics.c - waits, completion times, allocation, the FGD curve.
 *
 * See metrics.h for the definitions.  Percentiles are nearest-rank:
 * p99 of n sorted values is the value at rank ceil(0.99 n).
 */
#include "sim/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const int64_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)ceil(p * (double)n);
    return (double)sorted[rank == 0 ? 0 : rank - 1];
}

double gp_sim_median(double *v, size_t n)
{
    if (n == 0)
        return -1;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bool in_group(const gp_sim_result *r, size_t j, size_t group)
{
    return group == GP_SIM_ALL_GROUPS || r->job_group[j] == group;
}

/* Time average of a group's usage (GPUs) over the arrival window, from the samples. */
static double mean_usage(const gp_sim_result *r, size_t group)
{
    double area = 0, span = 0;
    for (size_t s = 0; s + 1 < r->n_samples; s++) {
        int64_t from = r->samples[s].t, to = r->samples[s + 1].t;
        if (to > r->t_last_arrival)
            to = r->t_last_arrival;
        if (to <= from)
            continue;
        double v = 0;
        if (group == GP_SIM_ALL_GROUPS)
            v = (double)r->samples[s].allocated_milli;
        else
            v = (double)r->group_usage[s * r->n_groups + group];
        area += v / 1000.0 * (double)(to - from);
        span += (double)(to - from);
    }
    return span > 0 ? area / span : 0;
}

static void count_outcomes(const gp_sim_result *r, size_t group, gp_sim_metrics *m, double *jct_sum)
{
    for (size_t j = 0; j < r->n_jobs; j++) {
        if (!in_group(r, j, group))
            continue;
        const gp_sim_job_result *jr = &r->jobs[j];
        m->jobs++;
        m->preemptions += (uint64_t)jr->preemptions;
        if (jr->preemptions > m->max_preemptions)
            m->max_preemptions = jr->preemptions;
        m->lost_gpu_h += (double)jr->lost_gpu_s / 3600.0;
        if (jr->outcome == GP_SIM_DONE)
            m->done++;
        else if (jr->outcome == GP_SIM_FAILED)
            m->failed++;
        else if (jr->outcome == GP_SIM_REJECTED)
            m->rejected++;
        else
            m->unfinished++;
        if (jr->outcome == GP_SIM_DONE)
            *jct_sum += (double)jr->end;
    }
}

/* Mean and minimum of the measured hours' index (fairness.h). */
static void fairness_summary(const gp_sim_result *r, gp_sim_metrics *m)
{
    double sum = 0, sum_static = 0;
    m->jain_min = 1;
    for (size_t h = 0; h < r->n_fair_hours; h++) {
        double j = r->fair_hours[h].jain;
        if (j < 0) {
            m->fair_hours_skipped++;
            continue;
        }
        m->fair_hours++;
        sum += j;
        sum_static += r->fair_hours[h].jain_static;
        m->jain_min = j < m->jain_min ? j : m->jain_min;
    }
    m->jain_mean = m->fair_hours ? sum / (double)m->fair_hours : 1;
    m->jain_static_mean = m->fair_hours ? sum_static / (double)m->fair_hours : 1;
}

/* Jain's index of the share ratio per day and over the run (share.h). */
static gp_err share_summary(const gp_sim_result *r, gp_sim_metrics *m, gp_error *err)
{
    const gp_sim_share_result *sh = &r->share;
    double sum = 0, *ratio = malloc((sh->n_groups ? sh->n_groups : 1) * sizeof *ratio);
    if (!ratio)
        return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    m->share_jain_day_min = 1;
    for (size_t d = 0; d < sh->n_days; d++) {
        double j = sh->days[d].jain;
        if (j < 0) {
            m->share_days_skipped++;
            continue;
        }
        m->share_days++;
        sum += j;
        m->share_jain_day_min = j < m->share_jain_day_min ? j : m->share_jain_day_min;
    }
    m->share_jain_day_mean = m->share_days ? sum / (double)m->share_days : 1;
    size_t n = 0;
    for (size_t g = 0; g < sh->n_groups; g++) {
        m->received_gpu_h += sh->received_h[g];
        m->fair_share_gpu_h += sh->fair_h[g];
        if (sh->fair_h[g] > 1e-9)
            ratio[n++] = sh->received_h[g] / sh->fair_h[g];
    }
    m->share_jain_run = gp_sim_jain(ratio, n);
    m->share_ratio = m->fair_share_gpu_h > 1e-9 ? m->received_gpu_h / m->fair_share_gpu_h : -1;
    free(ratio);
    return GP_OK;
}

/* A group's GPU-hours received and its fair share over the run (share.h). */
static void group_share(const gp_sim_result *r, size_t g, gp_sim_metrics *m)
{
    if (g >= r->share.n_groups) {
        m->share_ratio = -1;
        return;
    }
    m->received_gpu_h = r->share.received_h[g];
    m->fair_share_gpu_h = r->share.fair_h[g];
    m->share_ratio = m->fair_share_gpu_h > 1e-9 ? m->received_gpu_h / m->fair_share_gpu_h : -1;
}

gp_err gp_sim_metrics_compute(const gp_sim_result *r, const gp_trace *t, size_t group, gp_sim_metrics *m,
                              gp_error *err)
{
    memset(m, 0, sizeof *m);
    int64_t *waits = malloc((r->n_jobs ? r->n_jobs : 1) * sizeof *waits);
    int64_t *within = malloc((r->n_jobs ? r->n_jobs : 1) * sizeof *within);
    if (!waits || !within) {
        free(waits);
        free(within);
        return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    }
    double end_sum = 0, submit_sum = 0, wait_sum = 0;
    count_outcomes(r, group, m, &end_sum);
    size_t n = 0;
    for (size_t j = 0; j < r->n_jobs; j++) {
        const gp_sim_job_result *jr = &r->jobs[j];
        if (!in_group(r, j, group) || jr->outcome == GP_SIM_REJECTED)
            continue;
        waits[n++] = jr->wait_s;
        wait_sum += (double)jr->wait_s;
        if (jr->outcome == GP_SIM_DONE)
            submit_sum += (double)t->jobs[j].submit;
        if (jr->within_guarantee)
            within[m->within_jobs++] = jr->wait_s;
    }
    qsort(waits, n, sizeof *waits, cmp_i64);
    qsort(within, m->within_jobs, sizeof *within, cmp_i64);
    m->mean_wait_s = n ? wait_sum / (double)n : 0;
    m->p50_wait_s = percentile(waits, n, 0.50);
    m->p99_wait_s = percentile(waits, n, 0.99);
    m->within_p99_wait_s = percentile(within, m->within_jobs, 0.99);
    m->mean_jct_s = m->done ? (end_sum - submit_sum) / (double)m->done : 0;
    m->mean_usage_gpus = mean_usage(r, group);
    if (group == GP_SIM_ALL_GROUPS) {
        double window = (double)(r->t_last_arrival - r->t_first_arrival);
        double cap = (double)r->capacity_milli / 1000.0;
        m->allocation_pct = window > 0 && cap > 0 ? 100.0 * r->allocated_gpu_s / (cap * window)
                            : cap > 0          ? 100.0 * m->mean_usage_gpus / cap
                                               : 0;
        for (size_t g = 0; g < r->n_groups; g++)
            m->guarantee_gpus += (double)r->group_guarantee_milli[g] / 1000.0;
        m->lost_pct = r->delivered_gpu_s > 0 ? 100.0 * m->lost_gpu_h * 3600.0 / r->delivered_gpu_s : 0;
        fairness_summary(r, m);
    } else {
        m->guarantee_gpus = (double)r->group_guarantee_milli[group] / 1000.0;
        group_share(r, group, m);
    }
    free(waits);
    free(within);
    return group == GP_SIM_ALL_GROUPS ? share_summary(r, m, err) : GP_OK;
}

gp_err gp_sim_sorted_waits(const gp_sim_result *r, int64_t **waits, size_t *n, gp_error *err)
{
    int64_t *w = malloc((r->n_jobs ? r->n_jobs : 1) * sizeof *w);
    if (!w)
        return gp_error_set(err, GP_ERR_NOMEM, "report", "out of memory");
    size_t k = 0;
    for (size_t j = 0; j < r->n_jobs; j++)
        if (r->jobs[j].outcome != GP_SIM_REJECTED && r->jobs[j].outcome != GP_SIM_FAILED)
            w[k++] = r->jobs[j].wait_s;
    qsort(w, k, sizeof *w, cmp_i64);
    *waits = w;
    *n = k;
    return GP_OK;
}

void gp_sim_alloc_curve(const gp_sim_result *r, double curve[GP_SIM_CURVE_BINS], bool have[GP_SIM_CURVE_BINS])
{
    size_t count[GP_SIM_CURVE_BINS] = {0};
    for (int b = 0; b < GP_SIM_CURVE_BINS; b++) {
        curve[b] = 0;
        have[b] = false;
    }
    if (r->capacity_milli <= 0)
        return;
    for (size_t k = 0; k < r->n_arrivals; k++) {
        int64_t bin = r->arrival_arrived[k] * 100 / r->capacity_milli;
        if (bin < 0 || bin >= GP_SIM_CURVE_BINS)
            continue;
        curve[bin] += 100.0 * (double)r->arrival_allocated[k] / (double)r->capacity_milli;
        count[bin]++;
    }
    for (int b = 0; b < GP_SIM_CURVE_BINS; b++) {
        have[b] = count[b] > 0;
        if (have[b])
            curve[b] /= (double)count[b];
    }
}

double gp_sim_curve_at(const double curve[GP_SIM_CURVE_BINS], const bool have[GP_SIM_CURVE_BINS], int load)
{
    for (int b = load < GP_SIM_CURVE_BINS ? load : GP_SIM_CURVE_BINS - 1; b >= 0; b--)
        if (have[b])
            return curve[b];
    return -1;
}
