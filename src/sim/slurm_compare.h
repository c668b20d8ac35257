/* slurm_compare.h - a Slurm site's history beside its replay under gpupool.
 *
 * One table, per report group (account or the tenant it maps to) and for
 * all jobs, one row per run: "slurm" (what Slurm did, observed.h) first,
 * then each simulated policy.  Columns: jobs, mean and p95 wait (nearest
 * rank), GPUs in use on average over the arrival window (and, for all,
 * allocation % of the fleet), guaranteed-share attainment, preemptions,
 * GPU-hours lost, and for all jobs Jain's index (fairness.h).
 *
 * Guaranteed-share attainment: at each sample, a group is promised
 * P = min(guarantee, demand), demand being the GPUs of its jobs
 * submitted and not ended; it attains min(in use, P).  Attainment is
 * the sum of attained over the sum of promised, in %; "-" when the group
 * was never promised anything (no guarantee, or no demand).  For all
 * jobs, the sums over the groups.
 *
 * Ownership: only reads; prints to out.
 */
#ifndef GP_SIM_SLURM_COMPARE_H
#define GP_SIM_SLURM_COMPARE_H

#include <stdio.h>

#include "sim/simulator.h"

/* runs[0] is the observed run, runs[1..n) the simulated ones; all of the
 * same trace (so the same groups). */
gp_err gp_sim_slurm_compare(FILE *out, const gp_trace *t, const gp_sim_result *runs, size_t n, gp_error *err);

/* Per group g of r, the sums over the samples of the promised and the
 * attained milli-GPUs (caller-owned arrays of r->n_groups); attainment
 * is attained / promised. */
gp_err gp_sim_attainment_sums(const gp_sim_result *r, const gp_trace *t, double *promised, double *attained,
                              gp_error *err);

#endif
