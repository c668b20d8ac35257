/* scratch.h - removing a replica's own folders on the node: its working
 * folder and the folder of its private /tmp (launch.h makes them), when it
 * ends or, with the agent's --keep-scratch-s, that much later.
 *
 * What is inside was written by the job, an attacker: a symbolic link it
 * planted must not make the agent remove something of the host.  So the
 * walk (`rm -rf --one-file-system`, which never follows a link) runs in a
 * child switched to the folder's owner (the job's uid) when the caller is
 * root; only the then empty folder is removed as root.
 */
#ifndef GP_AGENT_SCRATCH_H
#define GP_AGENT_SCRATCH_H

#include <stdbool.h>

/* Removes path and everything under it (nothing when it does not exist).
 * true when it is gone.  Blocks until the walk ends; forks and execs, so
 * it is fine in a process with threads. */
bool gp_scratch_remove(const char *path);

#endif
