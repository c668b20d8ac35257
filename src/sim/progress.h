/* progress.h - a long simulation's progress line on a terminal.
 *
 * gpupool-sim replays weeks of a fleet in minutes; on a terminal it says
 * where it is, on one stderr line rewritten in place ("\r"), at most
 * GP_SIM_PROGRESS_HZ times a second, and erased when the run ends:
 *
 *   gpupool-sim: gpupool (3/3)  day 12.4 of 30.0  41%  1.2M events/s  ETA 2m13s
 *
 * "day" counts simulated days since the first arrival; the percentage and
 * the ETA take the arrival window as the whole run (time per simulated day
 * roughly constant); after the last arrival the line says "draining" (jobs
 * still running or waiting, no ETA).  Nothing is written when the stream
 * is not a terminal or the user asked for --quiet (gp_sim_progress_wanted),
 * so logs and pipes stay clean.
 *
 * The wall clock is read here, in the simulator's driver, never in the
 * engine.  gp_sim_run calls gp_sim_progress_update through
 * gp_sim_options.progress every few thousand events.
 *
 * Ownership: the progress struct is the caller's; it keeps the stream
 * pointer, never closes it.
 */
#ifndef GP_SIM_PROGRESS_H
#define GP_SIM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/simulator.h"

#define GP_SIM_PROGRESS_HZ 4

typedef struct gp_sim_progress {
    FILE *out;            /* NULL: quiet */
    char label[64];       /* the run: policy and its place, e.g. "gpupool (3/3)" */
    double start_s, last_draw_s;
} gp_sim_progress;

/* Whether to show progress on out: a terminal and not quiet. */
bool gp_sim_progress_wanted(FILE *out, bool quiet);
/* Start a run's line (drawn at once); out NULL: stay quiet. */
void gp_sim_progress_begin(gp_sim_progress *p, FILE *out, const char *label);
/* gp_sim_options.progress: redraw when 1/GP_SIM_PROGRESS_HZ s has passed. */
void gp_sim_progress_update(void *progress, const gp_sim_point *at);
/* Erase the line. */
void gp_sim_progress_end(gp_sim_progress *p);

#endif
