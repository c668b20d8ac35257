/* exit_reason.h - how a replica ended: the one table of exit reasons and
 * their names.
 *
 * The launcher decides the reason (agent/launch/launch.h, first match in
 * the order below), the agent writes it in its state files and reports it
 * to gpupoold, gpupoold parses the report, the event log keeps it in a
 * replica_exit event and the CLI shows it in a job's history: all with
 * these names, both ways.
 *
 *   gp_exit_reason_name(GP_EXIT_REASON_OOM)          -> "oom"
 *   gp_exit_reason_parse("time_limit", &r)           -> true, GP_EXIT_REASON_TIME_LIMIT
 *   gp_exit_reason_list(buf, sizeof buf)             -> "exited, signalled, oom,
 *                                                       killed_after_grace, time_limit, gpu_memory, image_pull
 *                                                       or checkpointed"
 *
 * Pure functions; names are static strings, nothing is allocated.
 */
#ifndef GP_UTIL_EXIT_REASON_H
#define GP_UTIL_EXIT_REASON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gp_exit_reason {
    GP_EXIT_REASON_EXITED = 0,         /* the process exited by itself (exit_code) */
    GP_EXIT_REASON_SIGNALLED,          /* killed by a signal it was not sent by the agent (signal) */
    GP_EXIT_REASON_OOM,                /* killed for going over its memory limit */
    GP_EXIT_REASON_KILLED_AFTER_GRACE, /* asked to stop, still running at the kill deadline */
    GP_EXIT_REASON_TIME_LIMIT,         /* ran past its time limit */
    GP_EXIT_REASON_GPU_MEMORY,         /* its processes used more GPU memory than its MPS or time-slice share */
    GP_EXIT_REASON_IMAGE_PULL,         /* its container's image could not be pulled (exit_code 127; the log says why) */
    GP_EXIT_REASON_CHECKPOINTED,       /* asked to stop, said its checkpoint was done in its grace, then killed by
                                          the agent as planned (not killed_after_grace: the grace did not run out) */
    GP_EXIT_REASONS
} gp_exit_reason;

/* "exited", "signalled", ...; NULL for a value out of range. */
const char *gp_exit_reason_name(gp_exit_reason r);
/* false (and *out untouched) when name is not a reason. */
bool gp_exit_reason_parse(const char *name, gp_exit_reason *out);
/* Every name, for an error message: "exited, signalled, ... or gpu_memory". */
void gp_exit_reason_list(char *out, size_t cap);

#endif
