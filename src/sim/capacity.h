/* capacity.h - the capacity experiment: the smallest fleet that meets a
 * service level, per policy, and the utilization it reaches.
 *
 * The pooling experiment replays a trace on one fixed fleet, so every
 * policy allocates the same share of it.  This one asks the question the
 * other way round: how many 8-GPU nodes does each policy need so that the
 * workload meets the service level, and how busy is that fleet?
 *
 * Service level (gp_sim_slo), judged for every team (report group,
 * setup.c) on its own:
 *   - p99 wait of the team's within-promise jobs <= p99_wait_guaranteed_s;
 *   - mean wait of all the team's jobs <= mean_wait_s;
 *   - every job of the team finished (none left unplaceable).
 * The within-promise jobs are fixed once for every policy and fleet: the
 * jobs the promise tenant file (its guarantees, e.g. --size-fleet's p90
 * need) marks within guarantee (simulator.h); a smaller fleet does not
 * shrink the set the policy is judged on.
 *
 * Fleets.  fleet(n) takes n nodes from the base fleet in proportion: node
 * k of fleet(n) is base node floor(k x base / n), renamed "c<k>", so a
 * fleet smaller than the base is an evenly spread subset (the mix of GPU
 * types and sharing modes kept) and a larger one repeats base nodes.
 * Example: base H100, H100, A100, L40S; fleet(2) = H100, A100; fleet(8) =
 * each twice.  On fleet(n) the promise guarantees are scaled down, per GPU
 * type, by min(1, the type's GPUs / the sum of the top-level guarantees
 * of that type), and kept as they are otherwise.
 *
 * Policies:
 *   static   every team alone on its own cluster fleet(n_i) (its jobs only,
 *            no quotas): one search per team; the fleet is the sum of the
 *            n_i;
 *   fifo, gpupool (or a placement score): the whole trace on one fleet(n).
 *
 * Search (gp_sim_bisect): the service level is assumed monotone in n.
 * Start at hi (the base's nodes for one fleet; four times the team's
 * promise in nodes for a static team), double it while it fails (up to
 * 64 x the start), then bisect between the last failing size and it.
 * Example: meets(n) = n >= 37, lo 1, hi 8: 8, 16, 32 fail, 64 meets;
 * bisect 33..64: 48, 40, 36 (fails), 38, 37 -> 37.
 *
 * Utilization = offered work / (fleet GPUs x window), the window running
 * from the first arrival to the last and the offered work being every
 * job's GPUs x the part of [submit, submit + duration] inside it (no
 * queueing): the same numerator for every policy, so utilization ranks
 * policies as fleet size does.  Allocation is the simulator's (metrics.h)
 * on the fleet found; for static, the teams' GPU-seconds in use over the
 * sum of their GPUs x their own windows.
 *
 * Ownership: the configuration is only read; results go to caller-owned
 * rows.  Runs print one line per probe on config->log when it is not NULL.
 */
#ifndef GP_SIM_CAPACITY_H
#define GP_SIM_CAPACITY_H

#include <stdint.h>
#include <stdio.h>

#include "sim/simulator.h"

typedef struct gp_sim_slo {
    int64_t p99_wait_guaranteed_s; /* --slo-p99-wait-guaranteed, default 600 */
    int64_t mean_wait_s;           /* --slo-mean-wait, default 3600 */
} gp_sim_slo;

/* 1: n meets the predicate; 0: it does not; -1: error (err set). */
typedef int (*gp_sim_meets_fn)(void *ctx, int64_t n, gp_error *err);

/* Smallest n >= lo with meets(n), for a monotone meets (see above).
 * *out = -1 when even max fails; *probes (may be NULL) counts the calls. */
gp_err gp_sim_bisect(int64_t lo, int64_t hi, int64_t max, gp_sim_meets_fn meets, void *ctx, int64_t *out,
                     int *probes, gp_error *err);

typedef struct gp_sim_capacity_config {
    const gp_fleet_file *base;       /* the node mix fleets are drawn from */
    const gp_tenant_file *promises;  /* guarantees: teams and their within-promise jobs */
    const gp_trace *trace;
    gp_sim_slo slo;
    gp_sim_options opt;              /* options of every run (progress is not used) */
    double offered_gpu_s;            /* offered work in the window; 0: computed from trace */
    FILE *log;                       /* one line per probe; NULL: none */
} gp_sim_capacity_config;

typedef struct gp_sim_capacity_row {
    char policy[32];
    int64_t nodes, gpus;             /* -1: not met up to the largest fleet tried */
    double utilization_pct, allocation_pct;
    double worst_mean_wait_s, worst_within_p99_s; /* over the teams, on the fleet found */
    int probes;
} gp_sim_capacity_row;

gp_err gp_sim_capacity_run(const gp_sim_capacity_config *c, const gp_sim_policy *policy, gp_sim_capacity_row *row,
                           gp_error *err);

/* Group `team`'s jobs of t (marks->job_group, gp__sim_groups) as a trace
 * of their own, in trace order, into out (gp_trace_init'ed here; caller
 * frees); within[k] (NULL: not wanted) says whether its k-th job is
 * within guarantee. */
gp_err gp_sim_team_trace(const gp_trace *t, const gp_sim_result *marks, uint32_t team, gp_trace *out, bool *within,
                         gp_error *err);

/* GPU-seconds of work the trace offers between its first and last
 * arrival (see above). */
double gp_sim_offered_gpu_s(const gp_trace *t);

/* The whole-GPUs-only world: every share (MPS, time-slicing, MIG) becomes
 * one whole exclusive GPU and every node of the fleet is unshared. */
void gp_sim_whole_gpus_only(gp_trace *t, gp_fleet_file *fleet);

/* capacity.csv (a row per policy) and the capacity plot (fleet GPUs as
 * bars, utilization as a line) into dir; label names the workload. */
gp_err gp_sim_capacity_write(const char *dir, const char *label, const gp_sim_capacity_row *rows, size_t n,
                             gp_error *err);

#endif
