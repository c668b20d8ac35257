/* loop.h - the engine thread: one queue, batches, group commit, the timer.
 *
 * API threads never touch the engine or the store writer.  They wrap a
 * request in a gp_op and call gp_loop_run, which queues it and sleeps
 * until the engine thread has answered.  The engine thread gathers the
 * ops into batches, each one transaction:
 *
 *     BEGIN
 *       each op as it is taken, in arrival order: op->run (a mutating op
 *       then writes its audit row; a read sees the batch so far)
 *     at the batch's end:
 *       agent nodes silent past --node-lost-after: node lost (agents.h)
 *       a scheduling pass (gp_journal_tick) when one is due: the timer
 *       (--tick-ms), or --pass-min-ms after the last pass once anything
 *       changed (so a burst of submits shares passes)
 *       for each mutating op: op->finish (its answer, after the pass)
 *       the tokens' last uses and the use counters that are due
 *     COMMIT sent        <- one fsync for the whole batch
 *     ...the next batch fills meanwhile...
 *     COMMIT known: bump the assignment versions of the nodes the batch
 *     touched and wake the agents' long-polls (agents.h), then wake every
 *     caller of the batch
 *
 * The commit overlaps the next batch: once a batch's COMMIT is sent
 * (gp_store_commit_send: on PostgreSQL it goes down the pipeline with the
 * batch's writes and the fence, and nothing waits), the thread begins the
 * next transaction and runs the ops queued meanwhile into it (their
 * writes queue behind the COMMIT; a pass that falls due runs in it too).
 * It sends that batch as soon as the previous commit is known, and
 * answers the previous batch's callers the moment its commit comes back,
 * which it watches for between ops and while it sleeps (poll on the
 * connection's socket and an eventfd that gp_loop_run writes).  So a
 * batch is as long as a commit, not a commit plus the engine's work, and
 * the batches grow with the load.  On SQLite the commit is done when sent
 * and the batch is answered at once.  Snapshots and the hourly ledger
 * head (quiet_chores) need the engine to hold exactly what is committed:
 * when one is due, no batch opens until the commit in flight is known.
 *
 * Before the COMMIT the leader asks whether its lease is still trusted
 * (lease.h); when not, or when the store refuses the transaction for the
 * lease (the fence, field "lease"), it commits nothing and steps down.  A
 * follower's thread runs no transaction: it answers the reads and tails
 * the event log into its engine (gp_journal_follow) every
 * FOLLOW_EVERY_MS, and reloads the tokens every tenth time.
 *
 * So a request is acknowledged only once it (and the decisions it caused)
 * are durable, and many requests share one fsync.  A read is answered
 * with its batch, so what it saw is committed when it is answered.  A
 * failed COMMIT leaves the engine ahead of the store: the daemon logs it
 * and exits (status 70) or steps down (the lease, the connection lost),
 * and the restart rebuilds the engine from the durable log; no caller of
 * that batch or of the one filling behind it was told "done".
 *
 * Ownership: ops belong to their callers (usually on the API thread's
 * stack); the loop only links them while queued and in a batch.
 */
#ifndef GP_SERVER_LOOP_H
#define GP_SERVER_LOOP_H

#include "server/auth.h"
#include "server/clock.h"

#include <jansson.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

typedef struct gp_server gp_server;
typedef struct gp_op gp_op;
typedef void (*gp_op_fn)(gp_server *srv, gp_op *op, int64_t now);
/* The leader's start (server/lead.h's gp_server_lead), handed to the loop
 * so that the engine thread can run it on a takeover without calling up. */
typedef gp_err (*gp_loop_lead_fn)(gp_server *srv, gp_error *err);

struct gp_op {
    gp_op_fn run;            /* required */
    gp_op_fn finish;         /* optional, mutating ops only */
    bool mutates;
    void *arg;               /* the handler's own data */
    const gp_principal *who;
    const char *request_id;
    char action[32];         /* audit: "job.submit", ... */
    char target[256];        /* audit: "job/7", "tenant/research/nlp", ... */
    /* the answer, set on the engine thread */
    int status;
    json_t *reply;
    char error_text[320];    /* for the audit row when status >= 400 */
    /* private */
    sem_t done;
    gp_op *next;
};

/* A batch of ops (engine thread only): the open one, filling, or the one
 * whose commit is in flight; its callers are woken once it is committed. */
typedef struct gp_loop_batch {
    bool active;
    gp_op **ops;             /* room for MAX_BATCH (loop.c), the engine thread's */
    size_t n;
    int64_t t0_ms;           /* begun, monotonic ms */
    bool renewing;           /* its transaction renewed the lease, asked at renew_sent */
    int64_t renew_sent;
    double sent_at;          /* its commit sent, monotonic s */
} gp_loop_batch;

typedef struct gp_loop {
    pthread_mutex_t lock;
    int wake_fd;             /* eventfd: ends the engine thread's sleep */
    bool sleeping;           /* the engine thread sleeps in poll (under lock) */
    gp_op *head, *tail;
    bool stopping;
    bool started;
    pthread_t thread;
    int tick_ms;             /* timer: a pass at least this often */
    int pass_min_ms;         /* after a change, a pass once this long since the last one */
    bool dirty;              /* changed since the last pass (engine thread only) */
    bool pass_now;           /* GPUs a reclaimer waits for were freed: the pass runs in this batch, not
                              * pass_min_ms after the last one (engine thread only) */
    int64_t last_tick_ms;
    /* counters for /metrics */
    atomic_uint_least64_t batches, ops, commits_ms_total, ticks; /* commits_ms_total: whole batches, ms */
    atomic_uint_least64_t max_batch;
    /* a follower (server/lease.h): no transactions; the log's tail every
     * FOLLOW_EVERY_MS instead of passes; takeover: the lease was taken */
    atomic_bool following, takeover;
    int follows;             /* tails done (engine thread only) */
    gp_loop_lead_fn lead;    /* the leader's start on a takeover (gp_loop_start's) */
    gp_loop_batch open, sent;
} gp_loop;

void gp_loop_init(gp_loop *l, int tick_ms, int pass_min_ms);
/* following: the replica follows until gp_loop_takeover; lead: the
 * leader's start the engine thread runs then. */
gp_err gp_loop_start(gp_server *srv, bool following, gp_loop_lead_fn lead, gp_error *err);
/* The lease is ours: the engine thread does the leader's start (lead,
 * given to gp_loop_start) before its next batch, then leads. */
void gp_loop_takeover(gp_loop *l);
/* Drains the queue, stops the thread. */
void gp_loop_stop(gp_server *srv);
/* Queues op and waits for its answer (op->status, op->reply). */
void gp_loop_run(gp_loop *l, gp_op *op);

/* Helpers for op->run: set the answer. */
void gp_op_reply(gp_op *op, int status, json_t *reply); /* steals reply */
void gp_op_fail(gp_op *op, const gp_error *err);        /* status from err->code */
int gp_status_of(gp_err code);

#endif
