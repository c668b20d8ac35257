/* agent_ckpt_watch.h - wakes the agent the moment a replica in its stop
 * grace says "checkpoint done" (docs/agent.md, "The checkpoint protocol").
 *
 * Without it the agent finds `$GPUPOOL_CHECKPOINT_DIR/.done` by looking
 * every 20 ms during a grace: up to 20 ms (about 19 on the bench, whose
 * jobs write `.done` just after the first look) of the chain "checkpoint
 * done -> reclaimer started".  One inotify descriptor per agent process
 * (the kernel allows 128 per user by default: not one per node) sits in
 * the agent's epoll set; a replica's checkpoint folder is watched from
 * its stop until its end.  An event names the watch, and the agent looks
 * at once on the nodes whose replicas hold that watch.  The 20 ms look
 * stays as the fallback (a folder that cannot be watched, a `.done`
 * written by another host on a shared filesystem, two replicas of one
 * job in one agent, whose shared folder is one watch that the first end
 * removes).
 *
 * Example: job 7's replica is stopped at t=0; its folder CKPT/job7 gets
 * watch 3.  At t=6 ms the job creates CKPT/job7/.done: the descriptor is
 * readable, gp_ckpt_watch_read gives {3}, the node holding watch 3 looks
 * now and reports `checkpointed` at t=6 ms rather than t=20.
 *
 * Ownership: the agent (agent.c) owns the watch; nodes point to it.
 */
#pragma once

#include "agent/agent_http.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct gp_ckpt_watch {
    int fd;               /* inotify, -1 when none could be made (the 20 ms look only) */
    gp_http_fd watch;     /* fd in the agent's loop, tag: this gp_ckpt_watch */
} gp_ckpt_watch;

/* Makes the descriptor and puts it in h's loop; on failure w->fd is -1
 * (callers go on without it). */
gp_err gp_ckpt_watch_open(gp_ckpt_watch *w, gp_http *h, gp_error *err);
void gp_ckpt_watch_close(gp_ckpt_watch *w, gp_http *h);
/* Watches dir for a `.done` made, written, touched or moved in: the watch
 * (>= 0), or -1 (no descriptor, or dir cannot be watched). */
int gp_ckpt_watch_add(gp_ckpt_watch *w, const char *dir);
void gp_ckpt_watch_remove(gp_ckpt_watch *w, int wd);
/* Reads what is queued: the watches whose `.done` changed, into wds (at
 * most cap, each once); returns how many.  Never blocks. */
size_t gp_ckpt_watch_read(gp_ckpt_watch *w, int *wds, size_t cap);
