/* stop_signal.c - the stop signals' names and numbers (stop_signal.h). */
#include "util/stop_signal.h"

#include <signal.h>
#include <stdio.h>

const char *const gp_stop_signal_names[GP_STOP_SIGNALS] = {"SIGTERM", "SIGINT",  "SIGHUP",
                                                           "SIGQUIT", "SIGUSR1", "SIGUSR2"};
static const int NUMBERS[GP_STOP_SIGNALS] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

int gp_stop_signal_number(gp_stop_signal s)
{
    return (unsigned)s < GP_STOP_SIGNALS ? NUMBERS[s] : SIGTERM;
}

void gp_stop_signal_list(char *out, size_t cap, const char *sep)
{
    size_t used = 0;
    if (cap)
        out[0] = '\0';
    for (int s = 0; s < GP_STOP_SIGNALS && used < cap; s++) {
        int n = snprintf(out + used, cap - used, "%s%s", s ? sep : "", gp_stop_signal_names[s]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}
