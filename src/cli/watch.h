/* watch.h - `--watch`: redraw a command's output until it is done.
 *
 * On a terminal each refresh clears the screen and draws a header line
 * ("every 2s: gpupool jobs    2026-11-24 10:31:07") above the output, as
 * watch(1) does; when stdout is not a terminal (a pipe, a file, a test)
 * there are no escape codes: each refresh is printed after a line
 * "--- 2026-11-24 10:31:07", so the output stays plain text.
 *
 * The draw function prints one refresh and returns an exit code; it sets
 * *done when there is nothing more to wait for (a watched job ended).  The
 * watch ends then, on a draw error (its code is returned) or when the user
 * interrupts it: on a terminal q (read from stdin without Enter) or
 * Ctrl-C ends it cleanly (echo, line mode and the cursor are restored;
 * exit 0).
 */
#ifndef GP_CLI_WATCH_H
#define GP_CLI_WATCH_H

#include "cli/client.h"

typedef int (*gp_draw_fn)(gp_client *c, void *arg, bool *done);

int gp_watch(gp_client *c, const char *title, int interval_s, gp_draw_fn draw, void *arg);

/* Reads --interval's value: 1..3600 seconds; false on anything else. */
bool gp_watch_interval(const char *text, int *out);

#endif
