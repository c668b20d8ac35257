/* plots.h - gnuplot scripts for the simulator's pictures.
 *
 * Each picture is made from CSV files the reports wrote, by a gnuplot
 * script written next to them (so a person can re-run or tweak it), as
 * PNG (pngcairo) and SVG.  Pictures:
 *
 *   alloc_vs_load      allocation % against arrived load %, one line per
 *                      policy (the FGD paper's figure);
 *   wait_cdf           the queueing-delay CDF per policy, log hours;
 *   team_usage-POLICY  GPUs in use per team over time, stacked, with each
 *                      team's cumulative guarantee as a dashed step;
 *   fragmentation      stranded GPUs (free on partly used nodes) % over time
 *                      per policy.
 *
 * gnuplot is a run-time dependency (Debian gnuplot-nox): when it is not
 * installed the scripts are still written and gp_sim_plots_run says so.
 *
 * Ownership: strings are only read.
 */
#ifndef GP_SIM_PLOTS_H
#define GP_SIM_PLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/error.h"

/* Start a gnuplot script dir/NAME.gp that draws NAME.png and NAME.svg:
 * writes the terminal setup and returns the open file; the caller writes
 * the plot commands (gp_sim_plot_both draws them twice), then closes it. */
FILE *gp_sim_plot_begin(const char *dir, const char *name, const char *title, const char *xlabel,
                        const char *ylabel, gp_error *err);
/* Write `commands` once for PNG and once for SVG (the terminal switches in between). */
void gp_sim_plot_both(FILE *script, const char *name, const char *commands);
/* Run gnuplot on every *.gp in dir; false (with a message on warn) when
 * gnuplot is missing or fails. */
bool gp_sim_plots_run(const char *dir, FILE *warn);

#endif
