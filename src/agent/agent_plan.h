/* agent_plan.h - what the agent must do to make a node run what gpupoold
 * assigns: the reconcile plan, and the back-off between failed calls.
 * Pure: no I/O, no clock (times are arguments).
 *
 * Reconcile compares the desired replicas (the assignments' answer, a full
 * state, never a delta) with the replicas the agent has (live or ended and
 * not yet forgotten).  A replica is named by (job, replica, bind_time): a
 * requeued job binds again with another bind_time, and that is another run.
 *
 *   want: job 7 r0 bind 100 run  gpus [A]      have: job 7 r0 bind 100 live gpus [A]
 *         job 9 r0 bind 300 run  gpus [B]            job 8 r0 bind 200 live gpus [B]
 *         job 5 r1 bind 50  stop deadline 900        job 5 r1 bind 50  live gpus [C]
 *   plan: job 8 -> KILL     (not listed: stop it at once)
 *         job 5 -> STOP     (signal now, kill at 900)
 *         job 9 -> nothing yet: GPU B is still held by job 8, which is not
 *                  dead; the next reconcile after job 8 ended starts it.
 *         job 7 -> nothing  (runs as asked)
 *
 * GPUs held: a whole-GPU replica holds its GPUs; a MIG replica holds its
 * instance (its GPU and first memory slice), so two instances of one GPU
 * run side by side but a whole-GPU replica waits for both; MPS and
 * time-slice replicas share their GPU with each other by design.
 *
 * A replica that ended is never started again for the same bind_time (its
 * exit is reported; gpupoold decides what comes next).  A STOP is planned
 * again when the deadline changes (a checkpoint during the grace moves it
 * to now); a KILL is planned once.
 *
 * Ownership: the caller's arrays; the plan points into them by index.
 */
#ifndef GP_AGENT_PLAN_H
#define GP_AGENT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_PLAN_NO_DEADLINE INT64_MIN /* a have not told to stop yet */
#define GP_PLAN_WHOLE_GPU -1            /* gp_plan_gpu.share: the whole GPU */
#define GP_PLAN_SHARED_GPU -2           /* an MPS or time-slice share */

/* One GPU a replica uses, and how: GP_PLAN_WHOLE_GPU, GP_PLAN_SHARED_GPU,
 * or a MIG instance's first memory slice (>= 0). */
typedef struct gp_plan_gpu {
    const char *uuid;
    int share;
} gp_plan_gpu;
#define GP_PLAN_KILLED INT64_MIN + 1  /* a have killed (deadline "at once") */

typedef struct gp_plan_want {
    uint64_t job;
    unsigned replica;
    int64_t bind_time;
    bool stop;                /* action "stop" */
    int64_t kill_deadline;    /* with stop: epoch ms */
    const gp_plan_gpu *gpus;  /* the GPUs the replica uses */
    size_t n_gpus;
} gp_plan_want;

typedef struct gp_plan_have {
    uint64_t job;
    unsigned replica;
    int64_t bind_time;
    bool ended;               /* its exit is known */
    int64_t stop_deadline;    /* the deadline sent, GP_PLAN_NO_DEADLINE or GP_PLAN_KILLED */
    const gp_plan_gpu *gpus;
    size_t n_gpus;
} gp_plan_have;

typedef enum gp_plan_kind { GP_PLAN_START = 0, GP_PLAN_STOP, GP_PLAN_KILL } gp_plan_kind;

typedef struct gp_plan_step {
    gp_plan_kind kind;
    size_t want; /* START, STOP: the index in want */
    size_t have; /* STOP, KILL: the index in have */
} gp_plan_step;

/* Does a `checkpointed` report of h's run, answered applied (or not) by
 * gpupoold, end its grace now?  Yes when h is alive and being stopped (a
 * deadline sent, not killed yet): gpupoold moved its kill deadline to the
 * checkpoint, so the agent kills it at once rather than one long-poll
 * later.  A running replica's checkpoint only counts as a checkpoint. */
bool gp_plan_checkpoint_ends_grace(const gp_plan_have *h, bool applied);

/* The steps, at most n_want + n_have (cap), into steps; returns how many.
 * KILLs and STOPs come before STARTs. */
size_t gp_plan_reconcile(const gp_plan_want *want, size_t n_want, const gp_plan_have *have, size_t n_have,
                         gp_plan_step *steps, size_t cap);

/* True when two replicas cannot use these GPUs at once (see above). */
bool gp_plan_gpus_clash(const gp_plan_gpu *a, const gp_plan_gpu *b);

/* True when the have is the run the want names. */
bool gp_plan_same_run(const gp_plan_want *w, const gp_plan_have *h);

/* The partition fence (docs/operations.md "Partitions"): gpupoold counts
 * a node lost after --node-lost-after of silence, and places its jobs
 * elsewhere; so a node that has heard nothing for after_ms (gpupoold's
 * fence_after_ms, half of --node-lost-after) stops its replicas first.
 * heard_ms is when the last call gpupoold answered was *sent* (gpupoold
 * saw it no earlier), so the node's clock runs ahead of gpupoold's.
 *
 *   --node-lost-after 60: after 30 s, grace 15 s.  Heartbeat sent at 100 s,
 *   answered; the link breaks.  At 130 s the node is fenced: each replica
 *   gets its stop signal, and a kill at 145 s; gpupoold's last sight of
 *   the node was >= 100 s, so it counts it lost at >= 160 s.
 *
 * True when the node is cut off: terms known (after_ms > 0) and nothing
 * heard for longer than after_ms.  Times in ms of one clock. */
bool gp_plan_partitioned(int64_t after_ms, int64_t heard_ms, int64_t now_ms);

/* The kill deadline (epoch ms) the fence gives the live replica h, whose
 * job opted out (keep) or not and has a checkpoint grace of job_grace_ms
 * (< 0: not said): now + the shorter of job_grace_ms and fence_grace_ms;
 * GP_PLAN_NO_DEADLINE when the fence leaves it alone (ended, opted out,
 * killed, or already told to stop by then). */
int64_t gp_plan_fence_deadline(const gp_plan_have *h, bool keep, int64_t job_grace_ms, int64_t fence_grace_ms,
                               int64_t now_real_ms);

#define GP_BACKOFF_FIRST_MS 500
#define GP_BACKOFF_MAX_MS 10000

/* The wait after the failures-th failure in a row (>= 1): 500 ms doubling
 * to 10 s or cap_ms if less (the node's heartbeat period: a node waiting
 * out its back-off must not look silent to a restarted gpupoold; <= 0: no
 * cap), times a jitter in [0.8, 1.2) drawn from (seed, salt, failures), so
 * that many nodes of one agent do not retry in step. */
int64_t gp_backoff_ms(unsigned failures, int64_t cap_ms, uint64_t seed, uint64_t salt);

/* Where in a period of period_ms (> 0) a node's heartbeats fall:
 * [0, period_ms), from (seed, salt), so that the nodes of one agent that
 * registered together do not heartbeat in step. */
int64_t gp_spread_ms(int64_t period_ms, uint64_t seed, uint64_t salt);

#endif
