/* stop_signal.h - the signal a stop (preemption, cancel, time limit) sends
 * first: the one table of their names and numbers.
 *
 * The engine keeps a job's choice (core/types.h's gp_job_spec), the spec
 * codec reads and writes it by name (core/names.c's GP_ENUM_STOP_SIGNAL
 * table is this one), the node agent sends the number, and the CLI's help
 * lists the names (tests/cli checks that it lists exactly these).  Here,
 * below the engine, so the CLI, which never links it, reads the same table.
 *
 *   gp_stop_signal_names[GP_STOP_SIGUSR1]   -> "SIGUSR1"
 *   gp_stop_signal_number(GP_STOP_SIGUSR1)  -> SIGUSR1 (SIGTERM when out of range)
 *   gp_stop_signal_list(buf, sizeof buf, "|") -> "SIGTERM|SIGINT|...|SIGUSR2"
 *
 * Pure; names are static strings, nothing is allocated.
 */
#ifndef GP_UTIL_STOP_SIGNAL_H
#define GP_UTIL_STOP_SIGNAL_H

#include <stddef.h>

typedef enum gp_stop_signal {
    GP_STOP_SIGTERM = 0,
    GP_STOP_SIGINT,
    GP_STOP_SIGHUP,
    GP_STOP_SIGQUIT,
    GP_STOP_SIGUSR1,
    GP_STOP_SIGUSR2,
    GP_STOP_SIGNALS
} gp_stop_signal;

extern const char *const gp_stop_signal_names[GP_STOP_SIGNALS];

/* The signal's number (SIGTERM for a value out of range). */
int gp_stop_signal_number(gp_stop_signal s);
/* Every name joined by sep, cut to fit cap. */
void gp_stop_signal_list(char *out, size_t cap, const char *sep);

#endif
