/* sizing.h - sizing a shared fleet and its guarantees from a trace.
 *
 * The pooling experiment asks: if teams that today own separate clusters
 * shared one fleet, who wins?  To compare fairly, the shared fleet is the
 * same size as the sum of the static partitions, and each team's
 * guarantee is its partition.  The rule (docs/simulator.md):
 *
 *   need_i     = max(p-th percentile of team i's ideal concurrent demand,
 *                    team i's largest job)
 *                ideal demand: every job running from submit for its
 *                duration, no queueing; the percentile is time-weighted
 *                over the trace's span (first submit to last end);
 *   fleet      = sum of need_i, rounded up to whole nodes;
 *   guarantee_i = need_i scaled so the guarantees sum to the fleet
 *                (largest-remainder rounding to whole GPUs).
 *
 * The largest-job floor keeps every job runnable under static
 * partitioning (otherwise a team's 64-GPU jobs could never start on its
 * partition, and the comparison would be about that, not about pooling).
 *
 * Output: a fleet file (nodes of gpus_per_node GPUs of gpu_type, one
 * block) and a tenant file (a parent per path prefix, the trace's tenants
 * with guarantees) as YAML text, malloc'ed, for the caller to free.
 */
#ifndef GP_SIM_SIZING_H
#define GP_SIM_SIZING_H

#include "sim/trace.h"

typedef struct gp_sizing {
    double percentile;    /* 0..100, e.g. 90 */
    int gpus_per_node;
    const char *gpu_type;
} gp_sizing;

gp_err gp_sim_size_fleet(const gp_trace *t, const gp_sizing *how, char **fleet_yaml, char **tenants_yaml,
                         gp_error *err);

#endif
