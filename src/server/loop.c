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
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BATCH = 1024, FOLLOW_EVERY_MS = 100, AUTH_RELOAD_EVERY = 10 };

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
    case GP_ERR_NEVER_FITS: return 422;
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
    gp_error text = *err;
    gp_utf8_scrub(text.message); /* a message quoting bad input stays a JSON string (never a null body) */
    gp_utf8_scrub(text.field);
    gp_op_reply(op, gp_status_of(err->code),
                json_pack("{s:{s:s, s:s, s:s}}", "error", "code", code, "message", text.message, "field", text.field));
    snprintf(op->error_text, sizeof op->error_text, "%s: %s", code, text.message);
}

void gp_loop_init(gp_loop *l, int tick_ms, int pass_min_ms)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    l->tick_ms = tick_ms > 0 ? tick_ms : 1000;
    l->pass_min_ms = pass_min_ms >= 0 ? pass_min_ms : 0;
}

/* When the next pass is due (monotonic ms): at once when a reclaimer waits
 * for GPUs just freed, soon after another change, else on the timer. */
static int64_t pass_due(const gp_loop *l)
{
    if (atomic_load(&l->following))
        return l->last_tick_ms + FOLLOW_EVERY_MS;
    if (l->pass_now)
        return l->last_tick_ms;
    return l->last_tick_ms + (l->dirty ? l->pass_min_ms : l->tick_ms);
}

/* Ends the engine thread's sleep (sleep_until), if it sleeps; under lock. */
static void wake_locked(gp_loop *l)
{
    uint64_t one = 1;
    if (l->sleeping && write(l->wake_fd, &one, sizeof one) == (ssize_t)sizeof one)
        l->sleeping = false;
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
    wake_locked(l);
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
    srv->loop.pass_now = false;
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

/* Refused requests (refusals.h): audit rows of this batch, like every
 * other; a failed append is the batch's failure. */
static void flush_refusals(gp_server *srv, int64_t now)
{
    gp_error err;
    if (gp_refusals_flush(&srv->refusals, srv->store, gp_wall_ms(), now, false, &err) != GP_OK)
        store_fatal(srv, "audit_refusals", &err);
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

/* What a snapshot keeps beside the engine (snapshots.h). */
static json_t *agents_saved(void *ctx)
{
    gp_server *srv = ctx;
    return gp_agents_saved(&srv->agents);
}

/* The chores that need the engine to hold exactly what is committed (no
 * batch begun after the last commit): a snapshot when due, the ledger's
 * head hourly. */
static void quiet_chores(gp_server *srv)
{
    gp_snapshots_after_commit(&srv->snapshots, srv->store, &srv->journal.replayer, srv->journal.events_logged,
                              agents_saved, srv);
    gp_ledger_head_log(&srv->ledger, srv->store, mono_ms()); /* hourly */
}

static bool quiet_chores_due(gp_server *srv)
{
    return gp_snapshots_maybe_due(&srv->snapshots, srv->journal.events_logged) ||
           gp_ledger_head_log_due(&srv->ledger, mono_ms());
}

/* The batch in flight: waits for its commit (fatal when it failed), then
 * publishes what it decided to the agents and wakes its callers.  quiet:
 * no batch is open (quiet_chores run). */
static void complete_sent(gp_server *srv, bool quiet)
{
    gp_loop_batch *b = &srv->loop.sent;
    gp_error err;
    if (!b->active)
        return;
    if (gp_store_commit_wait(srv->store, &err) != GP_OK)
        store_fatal(srv, "commit", &err);
    b->active = false;
    if (b->renewing)
        gp_lease_renewed(&srv->lease, b->renew_sent);
    gp_metrics_commit(&srv->metrics, mono_seconds() - b->sent_at);
    gp_agents_publish(&srv->agents); /* what the batch decided reaches the agents' long-polls */
    atomic_fetch_add(&srv->loop.commits_ms_total, (uint64_t)(mono_ms() - b->t0_ms));
    for (size_t i = 0; i < b->n; i++)
        sem_post(&b->ops[i]->done);
    atomic_fetch_add(&srv->loop.batches, 1);
    atomic_fetch_add(&srv->loop.ops, b->n);
    if (b->n > atomic_load(&srv->loop.max_batch))
        atomic_store(&srv->loop.max_batch, b->n);
    if (quiet)
        quiet_chores(srv);
}

/* The batch in flight, if its commit has come back (never blocks); quiet
 * when no batch is open. */
static void complete_if_committed(gp_server *srv)
{
    if (srv->loop.sent.active && gp_store_commit_ready(srv->store))
        complete_sent(srv, !srv->loop.open.active);
}

static bool any_mutates(gp_op **ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i]->mutates)
            return true;
    return false;
}

/* Runs ops into the open batch (begun here if none is): a mutating op
 * with its audit row, a read as it comes (it sees the batch so far).
 * None is answered before the batch's commit.  While the store's disk is
 * below --store-reserve a mutating op is refused unrun (store_space.h). */
static void batch_add(gp_server *srv, gp_op **ops, size_t n)
{
    gp_loop_batch *b = &srv->loop.open;
    gp_error err;
    bool full = any_mutates(ops, n) && gp_store_space_low(&srv->store_space);
    if (!b->active) {
        if (gp_store_begin(srv->store, &err) != GP_OK)
            store_fatal(srv, "begin", &err);
        b->active = true;
        b->n = 0;
        b->t0_ms = mono_ms();
    }
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    for (size_t i = 0; i < n; i++) {
        gp_op *op = ops[i];
        b->ops[b->n++] = op;
        if (op->mutates && full) {
            gp_op_reply(op, 503, gp_store_space_refusal(&srv->store_space));
            continue;
        }
        op->run(srv, op, now);
        if (!op->mutates)
            continue;
        if (srv->journal.broken)
            store_fatal(srv, op->action, &(gp_error){.message = "a store write failed after the engine took the event"});
        audit_op(srv, op, now);
        srv->loop.dirty = srv->loop.dirty || op->status < 400;
        complete_if_committed(srv); /* the batch in flight's callers need not wait for this one's ops */
    }
}

/* Ends the open batch and sends its commit (nothing may be in flight):
 * lost agents, the pass when due, each mutating op's finish, the tokens'
 * last uses, the refusals and the use counters, the lease.  The batch is then in
 * flight; on SQLite it is committed already and completed at once. */
static void batch_send(gp_server *srv)
{
    gp_loop *l = &srv->loop;
    gp_loop_batch *b = &l->open;
    gp_error err;
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    silent_ctx silent = {.srv = srv, .now = now};
    gp_agents_silent(&srv->agents, gp_wall_ms(), node_silent, &silent);
    l->dirty = l->dirty || silent.changed;
    if (mono_ms() >= pass_due(l))
        tick(srv, now);
    for (size_t i = 0; i < b->n; i++)
        if (b->ops[i]->mutates && b->ops[i]->finish && b->ops[i]->status < 400)
            b->ops[i]->finish(srv, b->ops[i], now);
    flush_last_used(srv);
    flush_refusals(srv, now);
    flush_use(srv);
    /* A batch that ran long renews the lease in its own transaction, at
     * its end: committed, the renew proves the lease was this leader's
     * throughout (the fence), so the trust window needs no other check. */
    b->renewing = gp_lease_renew_due(&srv->lease, &b->renew_sent);
    if (b->renewing && gp_store_lease_renew(srv->store, srv->lease.holder, atomic_load(&srv->lease.epoch),
                                            srv->lease.ttl_ms, gp_wall_ms(), &err) != GP_OK)
        store_fatal(srv, "lease_renew", &err);
    if (!b->renewing && !gp_lease_trusted(&srv->lease)) {
        gp_store_rollback(srv->store);
        gp_lease_step_down("the lease was not renewed in time; nothing of this batch is committed");
    }
    b->sent_at = mono_seconds();
    if (gp_store_commit_send(srv->store, &err) != GP_OK)
        store_fatal(srv, "commit", &err);
    gp_agents_seal(&srv->agents);
    gp_op **spare = l->sent.ops; /* the two op arrays take turns */
    l->sent = *b;
    *b = (gp_loop_batch){.ops = spare};
    complete_if_committed(srv); /* SQLite: committed already */
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
    if (srv->loop.lead(srv, &err) != GP_OK)
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
    wake_locked(l);
    pthread_mutex_unlock(&l->lock);
}

/* Takes up to room queued ops, without waiting; *stop: the loop stops and
 * nothing is queued. */
static size_t take_ops(gp_loop *l, gp_op **ops, size_t room, bool *stop)
{
    pthread_mutex_lock(&l->lock);
    size_t n = 0;
    while (l->head && n < room) {
        ops[n++] = l->head;
        l->head = l->head->next;
    }
    if (!l->head)
        l->tail = NULL;
    *stop = l->stopping && !l->head;
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* Sleeps until an op is queued, a takeover, the stop, fd (when >= 0)
 * readable, or timeout_ms. */
static void sleep_until(gp_loop *l, int fd, int64_t timeout_ms)
{
    pthread_mutex_lock(&l->lock);
    l->sleeping = !l->head && !l->stopping && !atomic_load(&l->takeover);
    bool sleep = l->sleeping;
    pthread_mutex_unlock(&l->lock);
    if (sleep && timeout_ms > 0) {
        struct pollfd p[2] = {{.fd = l->wake_fd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
        poll(p, fd >= 0 ? 2 : 1, timeout_ms < INT_MAX ? (int)timeout_ms : INT_MAX);
    }
    pthread_mutex_lock(&l->lock);
    l->sleeping = false;
    pthread_mutex_unlock(&l->lock);
    uint64_t count;
    if (read(l->wake_fd, &count, sizeof count) < 0 && errno != EAGAIN)
        gp_log(GP_LOG_WARN, "engine_thread", "error=\"cannot read the wake-up: %s\"", strerror(errno));
}

/* The milliseconds until the next pass is due (0 when it is). */
static int64_t until_pass(const gp_loop *l)
{
    int64_t left = pass_due(l) - mono_ms();
    return left > 0 ? left : 0;
}

/* One turn of a follower: the reads queued, the log's tail when due. */
static bool follower_turn(gp_server *srv, gp_op **in)
{
    bool stop;
    size_t n = take_ops(&srv->loop, in, MAX_BATCH, &stop);
    if (n == 0 && stop)
        return false;
    if (n == 0 && until_pass(&srv->loop) > 0) {
        sleep_until(&srv->loop, -1, until_pass(&srv->loop));
        return true;
    }
    follow_batch(srv, in, n);
    return true;
}

/* One turn of the leader.  While a batch's commit is in flight the next
 * batch fills: each op queued meanwhile runs into it at once (and its pass
 * when one is due), so the engine's work overlaps the commit's fsync; the
 * batch is sent as soon as the commit before it is known.  With nothing
 * in flight an open batch is sent at once.  While a chore needs the
 * committed state (a snapshot due), no new batch opens until the commit in
 * flight is known, nor while the open one is full.  False when the loop
 * stops. */
static bool leader_turn(gp_server *srv, gp_op **in)
{
    gp_loop *l = &srv->loop;
    bool stop = false;
    if (l->sent.active && (l->open.n == MAX_BATCH || (!l->open.active && quiet_chores_due(srv)))) {
        complete_sent(srv, !l->open.active); /* no room, or a chore needs the committed state: wait */
        return true;
    }
    size_t n = take_ops(l, in, MAX_BATCH - l->open.n, &stop);
    if (n > 0)
        batch_add(srv, in, n);
    complete_if_committed(srv);
    if (l->sent.active) {
        if (l->open.active && until_pass(l) == 0)
            tick(srv, gp_journal_now(&srv->journal, gp_wall_ms() / 1000)); /* into the open batch */
        if (n == 0 && !gp_store_commit_ready(srv->store)) /* (a read in the pass may have waited for it) */
            sleep_until(l, gp_store_commit_fd(srv->store), l->open.active ? until_pass(l) : 1000);
        return true;
    }
    if (!l->open.active && until_pass(l) == 0)
        batch_add(srv, in, 0); /* the timer's pass, in a batch of its own */
    if (l->open.active) {
        batch_send(srv);
        return true;
    }
    if (stop)
        return false;
    sleep_until(l, -1, until_pass(l));
    return true;
}

static void *engine_thread(void *arg)
{
    gp_server *srv = arg;
    gp_loop *l = &srv->loop;
    gp_op **in = malloc(3 * MAX_BATCH * sizeof *in);
    if (!in) {
        gp_log(GP_LOG_ERROR, "engine_thread", "error=\"out of memory\" action=exit");
        _exit(70);
    }
    l->open.ops = in + MAX_BATCH;
    l->sent.ops = in + 2 * MAX_BATCH;
    bool go = true;
    while (go) {
        if (atomic_exchange(&l->takeover, false))
            take_lead(srv);
        go = atomic_load(&l->following) ? follower_turn(srv, in) : leader_turn(srv, in);
    }
    complete_sent(srv, true);
    free(in);
    return NULL;
}

gp_err gp_loop_start(gp_server *srv, bool following, gp_loop_lead_fn lead, gp_error *err)
{
    if (srv->loop.wake_fd < 0)
        return gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot make the engine thread's eventfd");
    srv->loop.lead = lead;
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
    wake_locked(l);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    l->started = false;
}
