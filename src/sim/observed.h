/* observed.h - what a trace's own scheduler did, as a simulation result.
 *
 * A Slurm history (trace_slurm.c) carries, per job, when Slurm started
 * and ended it and whether it preempted it.  gp_sim_observed turns that
 * into a gp_sim_result shaped exactly like a simulated run's (the same
 * report groups, entitlements, samples and fairness hours), so the
 * metrics (metrics.h) judge Slurm and gpupool by one measure.
 *
 * Per job: wait = Start - Submit, one preemption when Slurm's State was
 * PREEMPTED, and then its whole run lost (Slurm requeues from scratch;
 * nothing says it checkpointed).  Jobs without observations (other
 * formats) are marked rejected and left out of every figure.
 *
 * Ownership: fills a caller-owned result (free it with
 * gp_sim_result_free); the setup is only read.
 */
#ifndef GP_SIM_OBSERVED_H
#define GP_SIM_OBSERVED_H

#include "sim/simulator.h"

/* The observed run, named `name` ("slurm"); opt gives the sample step and
 * the engine configuration used to read the entitlements. */
gp_err gp_sim_observed(const gp_sim_setup *setup, const gp_sim_options *opt, const char *name, gp_sim_result *out,
                       gp_error *err);

/* True when some job of t carries observations. */
bool gp_sim_trace_observed(const gp_trace *t);

#endif
