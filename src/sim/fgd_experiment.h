/* fgd_experiment.h - the FGD paper's experiment (Weng et al., ATC'23).
 *
 * For every seed: inflate the pod list to `ratio` x the fleet's GPUs
 * (inflate.h), then for every policy replay it one pod per second with no
 * departures; a pod the engine cannot place in the tick after its arrival
 * fails (it is cancelled and counted).  The metric is the allocation
 * ratio (allocated GPUs / fleet GPUs) after each arrival, averaged per 1 %
 * bin of arrived load (metrics.h); a policy's figure at 100 % and 130 %
 * is the median over the seeds, as in the paper's
 * fgd-expected-results/analysis_allo_discrete.csv.
 *
 * Ownership: gp_fgd_run_all allocates *runs (caller frees with free()).
 */
#ifndef GP_SIM_FGD_EXPERIMENT_H
#define GP_SIM_FGD_EXPERIMENT_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/metrics.h"
#include "sim/simulator.h"

typedef struct gp_fgd_config {
    double ratio;                  /* 1.3 */
    const uint64_t *seeds;
    size_t n_seeds;
    const gp_sim_policy *policies;
    size_t n_policies;
    bool whole_gpus_only;          /* drop CPU-only and fractional pods before inflating */
} gp_fgd_config;

typedef struct gp_fgd_run {
    size_t policy;                 /* index into config.policies */
    uint64_t seed;
    size_t pods, failed, rejected;
    double alloc_100, alloc_130;   /* allocation % at 100 % / 130 % arrived load */
    double curve[GP_SIM_CURVE_BINS];
    bool have[GP_SIM_CURVE_BINS];
    bool monotone;                 /* the binned curve never decreases */
    uint64_t events;
    double wall_s;
} gp_fgd_run;

gp_err gp_fgd_run_all(const gp_fleet_file *fleet, const gp_trace *pods, const gp_fgd_config *cfg,
                      gp_fgd_run **runs, size_t *n_runs, FILE *progress, gp_error *err);
/* Median over seeds of one policy's runs at 100 % (at130 false) or 130 %. */
double gp_fgd_median(const gp_fgd_run *runs, size_t n_runs, size_t policy, bool at130);
/* The summary JSON line. */
void gp_fgd_summary(FILE *out, const char *trace_desc, const gp_fgd_config *cfg, const gp_fgd_run *runs,
                    size_t n_runs);
/* fgd_runs.csv, fgd_curve.csv (mean curve per policy) and the plot. */
gp_err gp_fgd_report_write(const char *dir, const gp_fgd_config *cfg, const gp_fgd_run *runs, size_t n_runs,
                           gp_error *err);

#endif
