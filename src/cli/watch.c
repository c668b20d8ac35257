/* watch.c - `--watch` and `gpupool top`: redraw until done (see watch.h). */
#include "cli/watch.h"

#include "cli/timefmt.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t gp__watch_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    gp__watch_interrupted = 1;
}

/* What a terminal watch changed, to put back when it ends. */
typedef struct terminal {
    bool keys;               /* stdin is a terminal: q is read from it */
    struct termios saved;
    struct sigaction old_int, old_term;
} terminal;

/* Keys without Enter and without echo (signals stay: Ctrl-C is SIGINT),
 * the cursor hidden, Ctrl-C and SIGTERM caught so the terminal is restored. */
static void terminal_enter(terminal *t)
{
    struct sigaction sa = {.sa_handler = on_interrupt}; /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &t->old_int);
    sigaction(SIGTERM, &sa, &t->old_term);
    t->keys = isatty(STDIN_FILENO) == 1 && tcgetattr(STDIN_FILENO, &t->saved) == 0;
    if (t->keys) {
        struct termios raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    fputs("\033[?25l", stdout);
}

static void terminal_leave(terminal *t)
{
    fputs("\033[?25h", stdout);
    fflush(stdout);
    if (t->keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
    sigaction(SIGINT, &t->old_int, NULL);
    sigaction(SIGTERM, &t->old_term, NULL);
}

/* Waits interval_s seconds; true when the user quit meanwhile (q or Ctrl-C). */
static bool wait_or_quit(const terminal *t, int interval_s)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (gp__watch_interrupted)
            return true;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left = (long long)interval_s * 1000 - ((now.tv_sec - start.tv_sec) * 1000LL +
                                                         (now.tv_nsec - start.tv_nsec) / 1000000);
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        char key;
        if (poll(&p, t->keys ? 1 : 0, (int)left) > 0 && read(STDIN_FILENO, &key, 1) == 1 && (key == 'q' || key == 'Q'))
            return true;
    }
}

static void header(const char *title, int interval_s, bool tty)
{
    char now[64];
    gp_time_local((int64_t)time(NULL), now, sizeof now);
    if (tty)
        printf("\033[H\033[2Jevery %ds: %s    %s%s\n\n", interval_s, title, now, "    (q or Ctrl-C quits)");
    else
        printf("--- %s\n", now);
}

int gp_watch(gp_client *c, const char *title, int interval_s, gp_draw_fn draw, void *arg)
{
    bool tty = isatty(STDOUT_FILENO) == 1;
    terminal t = {0};
    gp__watch_interrupted = 0;
    if (tty)
        terminal_enter(&t);
    int rc;
    for (;;) {
        bool done = false;
        header(title, interval_s, tty);
        rc = draw(c, arg, &done);
        fflush(stdout);
        if (rc != GP_EXIT_OK || done)
            break;
        if (tty ? wait_or_quit(&t, interval_s) : sleep((unsigned)interval_s) != 0)
            break;
    }
    if (tty)
        terminal_leave(&t);
    return rc;
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
