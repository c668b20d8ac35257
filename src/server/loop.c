/* loop.c - the engine thread (see loop.h for the batch protocol).
 *
 * Why one thread: the engine is not thread-safe by design (it is a pure
 * state machine), and SQLite has one writer anyway.  One thread that owns
 * both makes every request a serial step with no locks in the engine, and
 * batching makes that thread's fsync cost shared: with 64 clients in
 * flight one COMMIT acknowledges up to 64 submits.
 */
#include "server/loop.h"

#include "server/server.h"
#include "util/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BATCH = 1024, FOLLOW_EVERY_MS = 100, AUTH_RELOAD_EVERY = 10 };

int64_t gp_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec gp_deadline_after(clockid_t clock, int64_t wait_ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += wait_ms / 1000;
    ts.tv_nsec += (wait_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    return ts;
}

/* The monotonic clock in seconds (the metrics' histograms) and in ms. */
static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t mono_ms(void)
{
    return (int64_t)(mono_seconds() * 1000.0);
}

int gp_status_of(gp_err code)
{
    switch (code) {
    case GP_OK: return 200;
    case GP_ERR_INVALID: return 400;
    case GP_ERR_NOT_FOUND: return 404;
    case GP_ERR_EXISTS: return 409;
    case GP_ERR_CONFLICT: return 409;
    case GP_ERR_QUOTA: return 422;
    case GP_ERR_NOMEM: return 503;
    default: return 500;
    }
}

void gp_op_reply(gp_op *op, int status, json_t *reply)
{
    json_decref(op->reply);
    op->status = status;
    op->reply = reply;
}

void gp_op_fail(gp_op *op, const gp_error *err)
{
    const char *code = gp_err_name(err->code);
    gp_op_reply(op, gp_status_of(err->code),
                json_pack("{s:{s:s, s:s, s:s}}", "error", "code", code, "message", err->message, "field",
                          err->field));
    snprintf(op->error_text, sizeof op->error_text, "%s: %s", code, err->message);
}

void gp_loop_init(gp_loop *l, int tick_ms, int pass_min_ms)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    l->tick_ms = tick_ms > 0 ? tick_ms : 1000;
    l->pass_min_ms = pass_min_ms >= 0 ? pass_min_ms : 0;
}

/* When the next pass is due (monotonic ms): soon after a change, else on
 * the timer. */
static int64_t pass_due(const gp_loop *l)
{
    if (atomic_load(&l->following))
        return l->last_tick_ms + FOLLOW_EVERY_MS;
    return l->last_tick_ms + (l->dirty ? l->pass_min_ms : l->tick_ms);
}

void gp_loop_run(gp_loop *l, gp_op *op)
{
    sem_init(&op->done, 0, 0);
    op->next = NULL;
    op->status = 0;
    pthread_mutex_lock(&l->lock);
    if (l->stopping) {
        pthread_mutex_unlock(&l->lock);
        sem_destroy(&op->done);
        gp_op_reply(op, 503,
                    json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "unavailable", "message",
                              "gpupoold is shutting down", "field", ""));
        return;
    }
    if (l->tail)
        l->tail->next = op;
    else
        l->head = op;
    l->tail = op;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    while (sem_wait(&op->done) != 0 && errno == EINTR)
        ;
    sem_destroy(&op->done);
}

/* ---- one batch ---- */

/* A write that failed: nothing of the batch is committed nor answered.
 * Another replica leading, or the database connection lost (PostgreSQL
 * restarted, the backend terminated, the primary gone): step down and
 * come back (as a follower until the lease is taken again).  Anything
 * else: exit, as on SQLite. */
static _Noreturn void store_fatal(gp_server *srv, const char *what, const gp_error *err)
{
    char q[300];
    if (strcmp(err->field, "lease") == 0) /* another replica leads now */
        gp_lease_step_down(err->message);
    if (strcmp(err->field, GP_STORE_CONNECTION_FIELD) == 0 || gp_store_broken(srv->store))
        gp_lease_step_down("the database connection was lost; nothing of this batch is committed");
    gp_log(GP_LOG_ERROR, "store_fatal", "step=%s error=%s action=exit", what, gp_log_quote(err->message, q, sizeof q));
    _exit(70);
}

/* Every field of an audit row is UTF-8 text: a target or an error quoting
 * bytes a client sent (or cut inside a character) would otherwise read
 * back as null (jansson builds no string from invalid UTF-8). */
static void audit_op(gp_server *srv, gp_op *op, int64_t now)
{
    char result[360], target[sizeof op->target], action[sizeof op->action];
    if (op->status < 400)
        snprintf(result, sizeof result, "ok");
    else
        snprintf(result, sizeof result, "%d %s", op->status, op->error_text);
    snprintf(target, sizeof target, "%s", op->target);
    snprintf(action, sizeof action, "%s", op->action);
    gp_utf8_scrub(result);
    gp_utf8_scrub(target);
    gp_utf8_scrub(action);
    gp_store_audit a = {.time = now,
                        .request_id = op->request_id ? op->request_id : "",
                        .actor = op->who ? op->who->token_id : "gpupoold",
                        .role = op->who ? gp_role_name(op->who->role) : "system",
                        .action = action,
                        .target = target,
                        .result = result};
    gp_error err;
    if (gp_store_audit_append(srv->store, &a, &err) != GP_OK)
        store_fatal(srv, "audit", &err); /* the change may not commit without its audit row */
}


static void tick(gp_server *srv, int64_t now)
{
    gp_error err;
    double t0 = mono_seconds();
    gp_err rc = gp_journal_tick(&srv->journal, now, &err);
    gp_metrics_pass(&srv->metrics, mono_seconds() - t0);
    srv->loop.last_tick_ms = mono_ms();
    srv->loop.dirty = false;
    atomic_fetch_add(&srv->loop.ticks, 1);
    if (rc != GP_OK && rc != GP_ERR_TIME)
        store_fatal(srv, "tick", &err);
    if (srv->journal.broken)
        store_fatal(srv, "tick", &(gp_error){.message = "a store write failed during the pass"});
}

typedef struct silent_ctx {
    gp_server *srv;
    int64_t now;
    bool changed;
} silent_ctx;

/* An agent node silent past --node-lost-after is lost: its jobs are
 * requeued (gangs whole), by the journal, in this batch's transaction. */
static void node_silent(void *arg, const char *node)
{
    silent_ctx *c = arg;
    gp_error err;
    char target[GP_NAME_MAX + 8], q[300];
    if (gp_journal_node_lost(&c->srv->journal, node, c->now, &err) != GP_OK) {
        if (c->srv->journal.broken)
            store_fatal(c->srv, "node_lost", &err);
        gp_log(GP_LOG_WARN, "node_lost", "node=%s error=%s", node, gp_log_quote(err.message, q, sizeof q));
        return;
    }
    snprintf(target, sizeof target, "node/%s", node);
    gp_op op = {.action = "node.lost", .request_id = "liveness"};
    snprintf(op.target, sizeof op.target, "%s", target);
    audit_op(c->srv, &op, c->now);
    gp_log(GP_LOG_WARN, "node_lost", "node=%s silent_s=%lld note=\"no heartbeat; its jobs are requeued\"", node,
           (long long)c->srv->cfg.node_lost_after_s);
    c->changed = true;
}

/* Tokens' last uses ride along with the batch (auth.h): best effort, so a
 * failed write is logged, not fatal. */
static void flush_last_used(gp_server *srv)
{
    gp_error err;
    char q[300];
    if (gp_auth_flush_last_used(&srv->auth, srv->store, &err) != GP_OK)
        gp_log(GP_LOG_WARN, "token_last_used", "error=%s", gp_log_quote(err.message, q, sizeof q));
}

/* Allocated vs used (use.h): the changed counters every few seconds, in
 * this batch's transaction; best effort like the tokens' last uses. */
static void flush_use(gp_server *srv)
{
    gp_error err;
    char q[300];
    if (gp_use_flush(&srv->use, srv->store, gp_wall_ms(), false, &err) != GP_OK)
        gp_log(GP_LOG_WARN, "job_use_flush", "error=%s", gp_log_quote(err.message, q, sizeof q));
}

/* Moves the mutating ops to the front, keeping arrival order within each
 * group; returns how many mutate.  Done before anything is answered: an
 * answered op belongs to its caller again and may be gone. */
static size_t partition(gp_op **ops, size_t n, gp_op **scratch)
{
    size_t m = 0, r = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i]->mutates)
            ops[m++] = ops[i];
        else
            scratch[r++] = ops[i];
    memcpy(ops + m, scratch, r * sizeof *ops);
    return m;
}

/* What a snapshot keeps beside the engine (snapshots.h). */
static json_t *agents_saved(void *ctx)
{
    gp_server *srv = ctx;
    return gp_agents_saved(&srv->agents);
}

static void run_batch(gp_server *srv, gp_op **ops, gp_op **scratch, size_t n)
{
    gp_error err;
    bool changed = false;
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    int64_t t0 = mono_ms();
    size_t m = partition(ops, n, scratch);
    if (gp_store_begin(srv->store, &err) != GP_OK)
        store_fatal(srv, "begin", &err);
    for (size_t i = 0; i < m; i++) {
        ops[i]->run(srv, ops[i], now);
        if (srv->journal.broken)
            store_fatal(srv, ops[i]->action, &(gp_error){.message = "a store write failed after the engine took the event"});
        audit_op(srv, ops[i], now);
        changed = changed || ops[i]->status < 400;
    }
    silent_ctx silent = {.srv = srv, .now = now};
    gp_agents_silent(&srv->agents, gp_wall_ms(), node_silent, &silent);
    srv->loop.dirty = srv->loop.dirty || changed || silent.changed;
    if (mono_ms() >= pass_due(&srv->loop))
        tick(srv, now);
    for (size_t i = 0; i < m; i++)
        if (ops[i]->finish && ops[i]->status < 400)
            ops[i]->finish(srv, ops[i], now);
    flush_last_used(srv);
    flush_use(srv);
    /* A batch that ran long renews the lease in its own transaction, at
     * its end: committed, the renew proves the lease was this leader's
     * throughout (the fence), so the trust window needs no other check. */
    int64_t renew_sent;
    bool renewing = gp_lease_renew_due(&srv->lease, &renew_sent);
    if (renewing && gp_store_lease_renew(srv->store, srv->lease.holder, atomic_load(&srv->lease.epoch),
                                         srv->lease.ttl_ms, gp_wall_ms(), &err) != GP_OK)
        store_fatal(srv, "lease_renew", &err);
    if (!renewing && !gp_lease_trusted(&srv->lease)) {
        gp_store_rollback(srv->store);
        gp_lease_step_down("the lease was not renewed in time; nothing of this batch is committed");
    }
    double c0 = mono_seconds();
    if (gp_store_commit(srv->store, &err) != GP_OK)
        store_fatal(srv, "commit", &err);
    if (renewing)
        gp_lease_renewed(&srv->lease, renew_sent);
    gp_metrics_commit(&srv->metrics, mono_seconds() - c0);
    gp_agents_publish(&srv->agents); /* what the batch decided reaches the agents' long-polls */
    gp_snapshots_after_commit(&srv->snapshots, srv->store, &srv->journal.replayer, agents_saved, srv);
    gp_ledger_head_log(&srv->ledger, srv->store, mono_ms()); /* hourly */
    atomic_fetch_add(&srv->loop.commits_ms_total, (uint64_t)(mono_ms() - t0));
    for (size_t i = 0; i < m; i++)
        sem_post(&ops[i]->done);
    for (size_t i = m; i < n; i++) {
        ops[i]->run(srv, ops[i], now);
        sem_post(&ops[i]->done);
    }
    atomic_fetch_add(&srv->loop.batches, 1);
    atomic_fetch_add(&srv->loop.ops, n);
    if (n > atomic_load(&srv->loop.max_batch))
        atomic_store(&srv->loop.max_batch, n);
}

/* ---- a follower's batch ---- */

/* The log's tail into the engine; the tokens now and then.  A tail that
 * does not apply is a follower that can no longer trust its engine: it
 * starts over (re-executes, as a step-down does). */
static void follow(gp_server *srv)
{
    gp_error err;
    char q[300];
    if (gp_journal_follow(&srv->journal, false, &err) != GP_OK)
        gp_lease_step_down(err.message);
    if (++srv->loop.follows % AUTH_RELOAD_EVERY == 0 && gp_auth_reload(&srv->auth, srv->store, &err) != GP_OK)
        gp_log(GP_LOG_WARN, "token_reload", "error=%s", gp_log_quote(err.message, q, sizeof q));
    srv->loop.last_tick_ms = mono_ms();
}

/* Reads are answered from the follower's engine; a write that got here
 * (the lead changed while it was queued) is told to try again. */
static void follow_batch(gp_server *srv, gp_op **ops, size_t n)
{
    if (mono_ms() >= pass_due(&srv->loop))
        follow(srv);
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->mutates)
            gp_op_reply(ops[i], 503,
                        json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "no_leader", "field", "leader", "message",
                                  "this replica does not lead; try again"));
        else
            ops[i]->run(srv, ops[i], now);
        sem_post(&ops[i]->done);
    }
}

/* The lease was taken: the leader's start, on this thread (it owns the
 * engine and the writer).  One that fails starts over as a follower. */
static void take_lead(gp_server *srv)
{
    gp_error err;
    if (gp_server_lead(srv, &err) != GP_OK)
        gp_lease_step_down(err.message);
    srv->loop.last_tick_ms = mono_ms();
    atomic_store(&srv->loop.following, false);
    gp_log(GP_LOG_INFO, "lead", "epoch=%lld note=\"took over from a follower\"",
           (long long)atomic_load(&srv->lease.epoch));
}

void gp_loop_takeover(gp_loop *l)
{
    pthread_mutex_lock(&l->lock);
    atomic_store(&l->takeover, true);
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
}

/* Takes up to MAX_BATCH queued ops; waits for one or the timer. */
static size_t take_batch(gp_loop *l, gp_op **ops, bool *stop)
{
    pthread_mutex_lock(&l->lock);
    while (!l->head && !l->stopping && !atomic_load(&l->takeover)) {
        int64_t due = pass_due(l) - mono_ms();
        if (due <= 0)
            break;
        struct timespec ts = gp_deadline_after(CLOCK_REALTIME, due);
        pthread_cond_timedwait(&l->wake, &l->lock, &ts);
    }
    size_t n = 0;
    while (l->head && n < MAX_BATCH) {
        ops[n++] = l->head;
        l->head = l->head->next;
    }
    if (!l->head)
        l->tail = NULL;
    *stop = l->stopping && n == 0;
    pthread_mutex_unlock(&l->lock);
    return n;
}

static void *engine_thread(void *arg)
{
    gp_server *srv = arg;
    gp_op **ops = malloc(2 * MAX_BATCH * sizeof *ops);
    bool stop = false;
    if (!ops) {
        gp_log(GP_LOG_ERROR, "engine_thread", "error=\"out of memory\" action=exit");
        _exit(70);
    }
    while (!stop) {
        size_t n = take_batch(&srv->loop, ops, &stop);
        if (atomic_exchange(&srv->loop.takeover, false))
            take_lead(srv);
        if (atomic_load(&srv->loop.following))
            follow_batch(srv, ops, n);
        else if (n > 0 || !stop)
            run_batch(srv, ops, ops + MAX_BATCH, n);
    }
    free(ops);
    return NULL;
}

gp_err gp_loop_start(gp_server *srv, bool following, gp_error *err)
{
    srv->loop.last_tick_ms = mono_ms();
    atomic_store(&srv->loop.following, following);
    if (pthread_create(&srv->loop.thread, NULL, engine_thread, srv) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot start the engine thread");
    srv->loop.started = true;
    return GP_OK;
}

void gp_loop_stop(gp_server *srv)
{
    gp_loop *l = &srv->loop;
    if (!l->started)
        return;
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    l->started = false;
}
