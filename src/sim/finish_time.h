/* finish_time.h - finish-time fairness (Themis, Mahajan et al., NSDI 2020):
 * did sharing the fleet make a team's jobs finish later than owning its
 * share would have?
 *
 * For every job: rho = its completion time (end - submit) on the shared
 * fleet / its completion time on a dedicated cluster of its team's
 * entitled share.  The dedicated cluster is estimated by replaying the
 * team alone (its jobs only, no quotas, the same options and engine) on
 * a fleet of its guarantee: per GPU type of the guarantee, that many GPUs
 * (rounded to whole GPUs, at least 1) taken from the fleet's nodes of the
 * type, spread evenly over them (so the mix of sharing modes stays), the
 * last node cut down to what is left (its CPU and memory in proportion).
 * rho <= 1: the job finished no later than on its own share.
 *
 *   no ratio     a team without a guarantee has no dedicated cluster; a
 *                job that asks for more GPUs of its types than the
 *                team's cluster has, or did not finish there, has no
 *                ratio either (counted as `no_ratio`);
 *   unfinished   a job that did not finish on the shared fleet counts
 *                the run's end as its end (its rho is a lower bound);
 *   zero         times below 1 s count as 1 s.
 *
 * Per team: p50, p95 and max of rho over its jobs with a ratio (nearest
 * rank, as metrics.h), the same p95 over its within-guarantee jobs
 * (simulator.h: those its ideal demand keeps under its guarantee), and
 * whether the team stays within its guarantee (all its jobs within).
 * The promise "sharing never makes a team slower than owning its share"
 * is judged on the within-guarantee jobs' p95: few teams keep every job
 * within (none of the five ITP clusters sized at p90 does), so judging
 * only such teams would judge nobody.
 *
 * Worked example: team a owns 4 GPUs (guarantee 4) on a shared fleet of
 * 8; it submits two 4-GPU jobs of 1 h at t = 0.  Alone on 4 GPUs they run
 * one after the other: completion 1 h and 2 h.  Shared, while team b is
 * idle, both run at once (a borrows b's 4): 1 h and 1 h; rho = 1 and 0.5,
 * p50 0.5 (nearest rank), p95 and max 1.  Had b held its 4 GPUs all the
 * while, a gets the same as alone: rho 1 and 1.
 *
 * Ownership: gp_sim_dedicated_run fills a caller-owned gp_sim_dedicated
 * whose array it allocates; gp_sim_dedicated_free releases it.
 */
#ifndef GP_SIM_FINISH_TIME_H
#define GP_SIM_FINISH_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/metrics.h"

typedef struct gp_sim_dedicated {
    int64_t *jct;     /* per trace job: completion time alone on its team's share; -1: none */
    size_t n_jobs;
    size_t teams;     /* teams replayed */
    double wall_s;
} gp_sim_dedicated;

/* Replay every report group of setup (simulator.h) that has a guarantee
 * in setup->tenants alone on its share, with opt (its ledger and progress
 * unused). */
gp_err gp_sim_dedicated_run(const gp_sim_setup *setup, const gp_sim_options *opt, gp_sim_dedicated *out,
                            gp_error *err);
void gp_sim_dedicated_free(gp_sim_dedicated *d);

/* rho of one job: shared completion time / dedicated one, both at least 1 s;
 * -1 when dedicated_jct < 0. */
double gp_sim_finish_ratio(int64_t shared_jct, int64_t dedicated_jct);

typedef struct gp_sim_finish_stats {
    size_t jobs, no_ratio;     /* jobs with a ratio, and without */
    double p50, p95, max;      /* over the jobs with a ratio; -1 when none */
    double within_p95;         /* over its within-guarantee jobs with a ratio; -1 when none */
    bool team_within;          /* every job of the group within its guarantee */
} gp_sim_finish_stats;

/* Group `group`'s figures (GP_SIM_ALL_GROUPS: every job) for run r. */
gp_err gp_sim_finish_stats_compute(const gp_sim_result *r, const gp_trace *t, const gp_sim_dedicated *d,
                                   size_t group, gp_sim_finish_stats *out, gp_error *err);

/* Over the teams of run r, the promise judged on the jobs it covers:
 * the teams with a ratio for at least one within-guarantee job, how many
 * of them read within_p95 <= 1, and the worst within_p95 (-1: none); the
 * teams all of whose jobs are within (team_within); `all`: the figures
 * over every job. */
typedef struct gp_sim_finish_summary {
    size_t teams_judged, teams_met, teams_all_within;
    double worst_within_p95;
    gp_sim_finish_stats all;
} gp_sim_finish_summary;

gp_err gp_sim_finish_summary_compute(const gp_sim_result *r, const gp_trace *t, const gp_sim_dedicated *d,
                                     gp_sim_finish_summary *out, gp_error *err);

#endif
