/* metrics.h - the figures a simulation is judged by.
 *
 * Computed from a gp_sim_result after the run, for all jobs or for one
 * report group (a team):
 *
 *   wait        time a job spent pending, requeues included; a job never
 *               placed waits until the run's end (its wait is a lower bound);
 *   JCT         job completion time, end - submit, finished jobs only;
 *   allocation  GPU-seconds in use / (fleet GPUs x arrival window), where
 *               the window runs from the first arrival to the last, so
 *               policies are compared over the same span of offered load;
 *   usage       a group's time-averaged GPUs in use over the same window;
 *   lost        GPU-hours of work lost to preemption (since the last
 *               checkpoint of each preempted run), also as a % of the
 *               GPU-hours delivered (allocation over the whole run, the
 *               lost work included; all groups only);
 *   max preemptions  the most times any one job was preempted;
 *   share       GPU-hours received / the water-filled fair share
 *               (share.h): per group over the run; for all groups Jain's
 *               index of that ratio over the groups per day (mean and
 *               minimum over the days with at least 2 groups, how many
 *               measured and skipped) and over the run;
 *   hourly Jain Jain's index over the backlogged groups, hour by hour
 *               (fairness.h; a diagnostic): its mean and minimum over the
 *               hours with at least 2 backlogged groups, and how many
 *               hours were measured and skipped (all groups only);
 *   within-guarantee p99 wait: over the jobs marked within_guarantee
 *               (simulator.h): the promise gpupool makes to a team;
 *   the FGD curve: allocation % after each arrival, averaged per 1 % bin
 *               of arrived load (floor of arrived / capacity x 100).
 *
 * Ownership: everything here fills caller-owned structs and arrays.
 */
#ifndef GP_SIM_METRICS_H
#define GP_SIM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/simulator.h"

#define GP_SIM_ALL_GROUPS SIZE_MAX
#define GP_SIM_CURVE_BINS 131 /* arrived load 0..130 % */

typedef struct gp_sim_metrics {
    size_t jobs, done, failed, unfinished, rejected, within_jobs;
    double mean_wait_s, p50_wait_s, p99_wait_s, mean_jct_s;
    double within_p99_wait_s;
    double allocation_pct;     /* all groups only; 0 for a group */
    double mean_usage_gpus;
    double guarantee_gpus;
    double lost_gpu_h;
    double lost_pct;           /* all groups only: lost / delivered GPU-hours x 100 */
    uint64_t preemptions;
    int32_t max_preemptions;   /* of any one job */
    double jain_mean, jain_min; /* all groups only; 1 when no hour was measured */
    double jain_static_mean;    /* the same on the static entitlements (fairness.h) */
    size_t fair_hours, fair_hours_skipped;
    double received_gpu_h, fair_share_gpu_h; /* over the run (share.h) */
    double share_ratio;         /* received / fair share; -1 when the fair share is 0 */
    double share_jain_day_mean, share_jain_day_min; /* all groups only; 1 when no day was measured */
    double share_jain_run;      /* all groups only: over the groups' run ratios */
    size_t share_days, share_days_skipped;
} gp_sim_metrics;

/* group: an index into r->groups, or GP_SIM_ALL_GROUPS. */
gp_err gp_sim_metrics_compute(const gp_sim_result *r, const gp_trace *t, size_t group, gp_sim_metrics *out,
                              gp_error *err);

/* Sorted waits (seconds) of the jobs that arrived and were not rejected;
 * *waits is malloc'ed (caller frees). */
gp_err gp_sim_sorted_waits(const gp_sim_result *r, int64_t **waits, size_t *n, gp_error *err);

/* The FGD curve from r->arrival_*: curve[b] = mean allocation % in bin b,
 * have[b] whether the bin has points. */
void gp_sim_alloc_curve(const gp_sim_result *r, double curve[GP_SIM_CURVE_BINS], bool have[GP_SIM_CURVE_BINS]);
/* The curve's value at `load` %, or at the last bin below it that has
 * points (the inflation can stop a little short of 130 %); -1 if none. */
double gp_sim_curve_at(const double curve[GP_SIM_CURVE_BINS], const bool have[GP_SIM_CURVE_BINS], int load);

/* Median of n doubles (sorted in place). */
double gp_sim_median(double *v, size_t n);

#endif
