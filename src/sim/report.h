/* report.h - what a simulation leaves behind: JSON, CSV and plots.
 *
 * A run set is one trace replayed under several policies.  Its outputs:
 *
 *   summary line   one JSON object on one line (the last line gpupool-sim
 *                  prints): per policy the headline figures of metrics.h;
 *   report.json    the same plus every report group (team) per policy, the
 *                  options and the trace's reading statistics;
 *   CSV            summary.csv (the headline figures, a row per policy),
 *                  timeseries-POLICY.csv (allocation, demand, stranded
 *                  GPUs, queue), usage-POLICY.csv (GPUs per team over
 *                  time, stacked), waits-POLICY.csv (the wait CDF),
 *                  groups-POLICY.csv (per-team figures),
 *                  fairness-POLICY.csv (Jain's index per hour, fairness.h),
 *                  share-POLICY.csv (per team and day: GPU-hours
 *                  received and fair share, share.h), share_days-POLICY.csv
 *                  (Jain's index of the share ratio per day),
 *                  alloc_vs_load.csv (allocation per 5 % bin of demand);
 *   plots          PNG and SVG by gnuplot (plots.h).
 *
 * Ownership: the run set is only read; files are written under dir,
 * which must exist.
 */
#ifndef GP_SIM_REPORT_H
#define GP_SIM_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "sim/finish_time.h"
#include "sim/simulator.h"

typedef struct gp_sim_run_set {
    const char *trace_desc;       /* how the trace was given, e.g. "itp:a.csv" */
    const char *fleet_desc;
    uint64_t seed;
    const gp_trace *trace;
    const gp_sim_options *options;
    const gp_sim_result *results; /* one per policy */
    size_t n_results;
    const gp_sim_dedicated *dedicated; /* finish-time fairness's baseline (finish_time.h); NULL: none */
} gp_sim_run_set;

/* One JSON line (with newline) on out. */
gp_err gp_sim_report_summary(FILE *out, const gp_sim_run_set *rs, gp_error *err);
/* report.json, the CSV files and the plots into dir. */
gp_err gp_sim_report_write(const char *dir, const gp_sim_run_set *rs, gp_error *err);

/* A JSON string literal for s (quotes and escapes). */
void gp_sim_json_string(FILE *out, const char *s);
/* fopen dir/name for writing, or an error naming the path. */
FILE *gp_sim_open_out(const char *dir, const char *name, gp_error *err);

#endif
