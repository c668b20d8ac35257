/* lead.c - the leader's start (lead.h), in the order server.h gives:
 * fence the writer at the lease's epoch, tail and check the log, the
 * agents' epoch, the clock resolution, the ledger's baseline and its
 * verification, the snapshot writer, the jobs' use, the fleet file
 * (fleet_sync.h), the tokens and the bootstrap token (bootstrap_token.h),
 * the WAL checkpointer (checkpointer.h), a renewal of the lease; each step
 * timed for the log (event=lead_steps).
 */
#include "server/lead.h"

#include "server/bootstrap_token.h"
#include "server/fleet_sync.h"
#include "server/gpu_types.h"
#include "server/server.h"

#include <time.h>

/* Engine time is whole seconds of wall-clock time (gp_wall_ms() / 1000), up
 * to 1 s behind it: graces end 1 s later so that none ends early.  It is an
 * event of the log (a log written before it existed replays without it). */
static gp_err set_clock_resolution(gp_server *srv, gp_error *err)
{
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    gp_err rc = gp_store_begin(srv->store, err);
    if (rc == GP_OK)
        rc = gp_journal_clock_resolution(&srv->journal, 1, now, err);
    if (rc == GP_OK)
        rc = gp_store_commit(srv->store, err);
    else
        gp_store_rollback(srv->store);
    return rc;
}

/* The guarantee and capacity records as the replayed engine has them:
 * none on a start that changed nothing; on a store that had none (the
 * first start after schema 7) the baseline of every guarantee and model. */
static gp_err ledger_baseline(gp_server *srv, gp_error *err)
{
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    gp_err rc = gp_store_begin(srv->store, err);
    if (rc == GP_OK)
        rc = gp_ledger_sync(srv->store, srv->journal.engine, true, true, now, err);
    if (rc == GP_OK)
        rc = gp_store_commit(srv->store, err);
    else
        gp_store_rollback(srv->store);
    return rc;
}

/* The usage ledger at start: verified whole (a broken chain is logged at
 * error level and shown by GET /v1/ledger/verify; gpupoold still serves),
 * on a reader connection in a thread of its own, so that neither a start
 * nor a takeover waits for it (1.2 s of a 1.6 s takeover with 100,000
 * jobs on PostgreSQL); the gauge says "not yet" (-1) until it is done.
 * The engine thread's first batch logs the ledger's head. */
static void *ledger_verify_thread(void *arg)
{
    gp_server *srv = arg;
    gp_error err;
    char q[300];
    gp_store_ledger_check check;
    gp_store *r = gp_readers_take(&srv->readers, &err);
    gp_err rc = r ? gp_store_ledger_verify(r, &check, &err) : err.code;
    if (r)
        gp_readers_give(&srv->readers, r);
    if (rc == GP_OK)
        gp_ledger_verified(&srv->ledger, &check, gp_wall_ms() / 1000);
    else
        gp_log(GP_LOG_WARN, "ledger_verify", "error=%s", gp_log_quote(err.message, q, sizeof q));
    return NULL;
}

static gp_err ledger_start(gp_server *srv, gp_error *err)
{
    if (pthread_create(&srv->ledger_verifier, NULL, ledger_verify_thread, srv) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot start the ledger's verification");
    srv->ledger_verifying = true;
    return GP_OK;
}

/* The writers a leader starts with the lease's epoch: its engine
 * snapshots' connection is fenced like the engine's. */
static gp_err snapshots_start(gp_server *srv, int64_t epoch, gp_error *err)
{
    gp_err rc = gp_snapshots_start(&srv->snapshots, srv->cfg.store_url, srv->cfg.snapshot_every_events,
                                   srv->cfg.snapshot_every_s, srv->journal.snapshot_seq, err);
    if (rc == GP_OK && srv->snapshots.store)
        rc = gp_store_fence(srv->snapshots.store, epoch, srv->cfg.lease_ms, err);
    return rc;
}

static int64_t lead_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The steps of a leader's start that a takeover waits for, timed for the
 * log (event=lead_steps). */
typedef struct lead_times {
    int64_t follow, use, fleet, rest;
} lead_times;

static gp_err lead_step(gp_err rc, int64_t *ms, int64_t *t)
{
    int64_t now = lead_ms();
    *ms += now - *t;
    *t = now;
    return rc;
}

gp_err gp_server_lead(gp_server *srv, gp_error *err)
{
    lead_times lt = {0};
    int64_t t = lead_ms(), t0 = t;
    int64_t epoch = atomic_load(&srv->lease.epoch);
    gp_err rc = gp_store_fence(srv->store, epoch, srv->cfg.lease_ms, err);
    if (rc == GP_OK)
        rc = lead_step(gp_journal_follow(&srv->journal, true, err), &lt.follow, &t);
    if (rc)
        return rc;
    gp_agents_set_epoch(&srv->agents, epoch);
    gp_log(GP_LOG_INFO, "epoch", "controller_epoch=%lld", (long long)epoch);
    rc = gp_agents_load(&srv->agents, srv->store, gp_wall_ms(), err); /* agents' last seen: now */
    if (rc == GP_OK)
        rc = set_clock_resolution(srv, err);
    if (rc == GP_OK)
        rc = ledger_baseline(srv, err);
    if (rc == GP_OK)
        rc = snapshots_start(srv, epoch, err);
    if (rc == GP_OK)
        rc = ledger_start(srv, err);
    lead_step(rc, &lt.rest, &t);
    if (rc == GP_OK) {
        gp_use_init(&srv->use, srv->cfg.node_lost_after_s);
        rc = lead_step(gp_use_load(&srv->use, srv->store, err), &lt.use, &t);
    }
    if (rc == GP_OK)
        rc = lead_step(gp_fleet_sync(srv, err), &lt.fleet, &t);
    if (rc == GP_OK) /* stores written before issue 32: one spelling per GPU type */
        rc = gp_gpu_types_migrate(srv, gp_wall_ms() / 1000, err);
    if (rc == GP_OK) {
        gp_agents_seal(&srv->agents);
        gp_agents_publish(&srv->agents);
    }
    if (rc == GP_OK)
        rc = gp_auth_reload(&srv->auth, srv->store, err);
    if (rc == GP_OK)
        rc = gp_bootstrap_token(srv, err);
    if (rc == GP_OK)
        rc = gp_checkpointer_start(&srv->checkpointer, srv->cfg.store_url, srv->cfg.store_wal_limit, err);
    if (rc == GP_OK)
        rc = gp_lease_renew_now(&srv->lease, srv->store, err);
    lead_step(rc, &lt.rest, &t);
    if (rc == GP_OK)
        atomic_store(&srv->lease.leading, true);
    gp_log(GP_LOG_INFO, "lead_steps", "ms=%lld tail_and_check=%lld job_use=%lld fleet=%lld rest=%lld",
           (long long)(t - t0), (long long)lt.follow, (long long)lt.use, (long long)lt.fleet, (long long)lt.rest);
    return rc;
}
