/* progress.c - the progress line (see progress.h).
 *
 * "\r" returns to the start of the line and "\033[K" erases to its end, so
 * a shorter line leaves no tail of the longer one before it.
 */
#include "sim/progress.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLEAR_LINE "\r\033[K"

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

bool gp_sim_progress_wanted(FILE *out, bool quiet)
{
    return !quiet && out && isatty(fileno(out));
}

static void format_duration(char *buf, size_t size, double s)
{
    if (s >= 3600)
        snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
    else
        snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

static void draw(gp_sim_progress *p, const gp_sim_point *at, double now)
{
    double elapsed = now - p->start_s;
    double window = (double)(at->t_last_arrival - at->t_first_arrival);
    double done = (double)(at->now - at->t_first_arrival);
    double rate = elapsed > 0 ? (double)at->events / elapsed : 0;
    fprintf(p->out, CLEAR_LINE "gpupool-sim: %s  day %.1f of %.1f", p->label, done / 86400.0, window / 86400.0);
    if (done >= window) {
        fprintf(p->out, "  draining  %.2fM events/s", rate / 1e6);
    } else {
        double f = window > 0 ? done / window : 0;
        char eta[32] = "-";
        if (f > 0.01)
            format_duration(eta, sizeof eta, elapsed * (1 - f) / f);
        fprintf(p->out, "  %.0f%%  %.2fM events/s  ETA %s", 100 * f, rate / 1e6, eta);
    }
    fflush(p->out);
    p->last_draw_s = now;
}

void gp_sim_progress_begin(gp_sim_progress *p, FILE *out, const char *label)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    snprintf(p->label, sizeof p->label, "%s", label);
    p->start_s = wall_s();
    if (out) {
        fprintf(out, CLEAR_LINE "gpupool-sim: %s  starting", p->label);
        fflush(out);
    }
}

void gp_sim_progress_update(void *progress, const gp_sim_point *at)
{
    gp_sim_progress *p = progress;
    if (!p->out)
        return;
    double now = wall_s();
    if (now - p->last_draw_s >= 1.0 / GP_SIM_PROGRESS_HZ)
        draw(p, at, now);
}

void gp_sim_progress_end(gp_sim_progress *p)
{
    if (p->out) {
        fputs(CLEAR_LINE, p->out);
        fflush(p->out);
    }
}
