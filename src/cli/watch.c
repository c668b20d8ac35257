/* watch.c - `--watch`: redraw until done (see watch.h). */
#include "cli/watch.h"

#include "cli/timefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void header(const char *title, int interval_s, bool tty)
{
    char now[64];
    gp_time_local((int64_t)time(NULL), now, sizeof now);
    if (tty)
        printf("\033[H\033[2Jevery %ds: %s    %s\n\n", interval_s, title, now);
    else
        printf("--- %s\n", now);
}

int gp_watch(gp_client *c, const char *title, int interval_s, gp_draw_fn draw, void *arg)
{
    bool tty = isatty(STDOUT_FILENO) == 1;
    for (;;) {
        bool done = false;
        header(title, interval_s, tty);
        int rc = draw(c, arg, &done);
        fflush(stdout);
        if (rc != GP_EXIT_OK || done)
            return rc;
        sleep((unsigned)interval_s);
    }
}

bool gp_watch_interval(const char *text, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!text[0] || *end || v < 1 || v > 3600)
        return false;
    *out = (int)v;
    return true;
}
