/* agent_image_hints.h - the agent's pre-pulls of the images gpupoold
 * hints (the long-poll answer's "image_hints", docs/agent.md "Images").
 *
 * Each answer offers its hint; the warmer queues the references it has
 * not tried in the last GP_IMAGE_WARM_RETRY_MS and, one at a time, runs
 * `gpupool-agent image pull --warm` (gp_image_pull_spawn, no hold and no
 * credentials) as a child of the agent, never waiting for it: the loop
 * drains its output each turn and reaps it with the other children.  A
 * reference is skipped when it is in the store already (by the reference
 * it was pulled by), when a pull of it runs (a replica's: its lock is
 * held), or when the store has no room: a bounded store whose held
 * images fill 90 % of its bound, an unbounded one on a file system under
 * 10 % free.  The pull's own limit is --pull-timeout-s; a warmed image
 * is held by nobody, so LRU eviction may take it like any other.  One
 * log line per pre-pull (started, then how it ended).
 *
 * Ownership: the warmer is the agent's (static in gp_agent); it borrows
 * opt for its life; offered hints are copied.
 */
#ifndef GP_AGENT_IMAGE_HINTS_H
#define GP_AGENT_IMAGE_HINTS_H

#include "agent/agent_node.h"

#include <jansson.h>

#define GP_IMAGE_WARM_QUEUE 8
#define GP_IMAGE_WARM_TRIED 32
#define GP_IMAGE_WARM_RETRY_MS (10 * 60 * 1000LL)

typedef struct gp_image_warmer {
    const gp_agent_options *opt; /* NULL: off (--no-image-hints) */
    char queue[GP_IMAGE_WARM_QUEUE][GP_IMAGE_REF_MAX + 1];
    size_t n_queue;
    struct {
        char ref[GP_IMAGE_REF_MAX + 1];
        int64_t at_ms; /* monotonic; 0: an empty slot */
    } tried[GP_IMAGE_WARM_TRIED];   /* a ring */
    size_t next_tried;
    pid_t pid;                      /* the pre-pull running, 0 none */
    int fd;                         /* its stdout, -1 none */
    char ref[GP_IMAGE_REF_MAX + 1]; /* what it pulls */
    int64_t started_ms;
    char partial[1024];             /* an incomplete line of its output */
    size_t n_partial;
    char outcome[600];              /* its last line, said in the log */
} gp_image_warmer;

/* opt NULL: a warmer that does nothing. */
void gp_image_warmer_init(gp_image_warmer *w, const gp_agent_options *opt);
/* The references of a long-poll answer's "image_hints" (may be NULL). */
void gp_image_warmer_offer(gp_image_warmer *w, const json_t *hints);
/* One turn of the agent's loop: drains the running pull's output, or
 * starts the next one. */
void gp_image_warmer_step(gp_image_warmer *w, int64_t now_ms);
/* The agent reaped pid: true when it was the pre-pull (logged, done). */
bool gp_image_warmer_reaped(gp_image_warmer *w, pid_t pid, int status, int64_t now_ms);

#endif
