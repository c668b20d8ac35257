/* inflate.h - the FGD experiment's workload inflation.
 *
 * Weng et al. (ATC'23) evaluate placement policies by submitting the pods
 * of a trace, one at a time and without departures, until the requested
 * GPUs reach 130 % of the cluster's capacity; the allocation ratio as load
 * arrives is the metric.  Their simulator (kubernetes-scheduler-simulator,
 * TunePodsByNodeTotalResource) builds the submission list as:
 *
 *   1. the trace's pods in trace order, shuffled by the seed;
 *   2. pods sampled uniformly with replacement from the trace, appended
 *      while total requested GPUs + the next pod's per-GPU share stays
 *      <= ratio x capacity (their exact stopping rule);
 *   3. when the trace alone asks for more than ratio x capacity, pods are
 *      removed at random instead until it does not.
 *
 * gp_trace_inflate reproduces that with our generator (the sequence is
 * ours, so runs match theirs in distribution, not pod by pod).  The result
 * has one pod per second (submit = 1, 2, ...) and no departures
 * (duration -1), so each pod is its own scheduling batch.
 *
 * Ownership: out must be an initialised trace (gp_trace_init); jobs,
 * tenants and types are appended/copied into it.
 */
#ifndef GP_SIM_INFLATE_H
#define GP_SIM_INFLATE_H

#include <stdint.h>

#include "sim/trace.h"

gp_err gp_trace_inflate(const gp_trace *src, double ratio, int64_t capacity_milli, uint64_t seed, gp_trace *out,
                        gp_error *err);

#endif
