/* server.c - gpupoold's start-up and shut-down (order in server.h).
 *
 * The fleet file is reconciled with the replayed engine at every start:
 * a node the file lists and the engine lacks (or holds as lost) is added
 * and marked up; a node the engine holds up but the file no longer lists
 * is lost (its jobs are requeued); a node whose type, GPU count, block or
 * zone changed is refused -- gpupoold does not start, and says which node.
 * All of it goes through the journal, so the event log stays the whole
 * truth.  Nodes registered by an agent are not the file's: they stay.
 *
 * The bootstrap admin token is made when the store holds no token at all
 * (a fresh store): written to --token-file (default: admin.token next to
 * the SQLite file) with mode 0600, and its path is logged.  The key that
 * seals tenants' secrets (secret_box.h) is read from --secret-key-file
 * (default secret.key next to the SQLite file), made on the first start.
 * On PostgreSQL there is no file to put things next to: --token-file,
 * --job-logs and --secret-key-file are required.
 *
 * A database that is away (PostgreSQL restarting, a standby not promoted
 * yet) is waited for: the start tries to connect with a backoff, logging
 * event=store_wait for each failed try, and a start that loses its
 * connection half-way re-executes and waits again (lease.h's step-down).
 */
#include "server/server.h"

#include "config/fleet_file.h"
#include "server/api.h"
#include "util/hashmap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

gp_server_config gp_server_config_default(void)
{
    gp_server_config c = {
        .listen = "127.0.0.1:8750",
        .store_url = "sqlite:./var/gpupool.db",
        .max_body = 1024 * 1024,
        .max_connections = 256,
        .timeout_s = 30,
        .rate_limit = 1000,
        .tick_ms = 1000,
        .pass_min_ms = 20,
        .member_token_ttl_s = 90 * 86400,
        .min_job_uid = 1000,
        .node_lost_after_s = 60,
        .snapshot_every_events = 10000,
        .snapshot_every_s = 300,
        .metrics_tenants = 50,
        .lease_ms = 3000,
        .audit_refusals_per_min = 10,
    };
    return c;
}

/* ---- readers ---- */

gp_store *gp_readers_take(gp_readers *r, gp_error *err)
{
    gp_store *s = NULL;
    pthread_mutex_lock(&r->lock);
    if (r->n_free > 0)
        s = r->free_list[--r->n_free];
    pthread_mutex_unlock(&r->lock);
    if (!s && gp_store_open(r->url, true, &s, err) != GP_OK)
        return NULL;
    return s;
}

void gp_readers_give(gp_readers *r, gp_store *s)
{
    if (!s)
        return;
    if (gp_store_broken(s)) { /* the database restarted: the next take opens a fresh one */
        gp_store_close(s);
        return;
    }
    pthread_mutex_lock(&r->lock);
    if (r->n_free < (int)(sizeof r->free_list / sizeof r->free_list[0])) {
        r->free_list[r->n_free++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&r->lock);
    gp_store_close(s);
}

static void readers_close(gp_readers *r)
{
    for (int i = 0; i < r->n_free; i++)
        gp_store_close(r->free_list[i]);
    r->n_free = 0;
    pthread_mutex_destroy(&r->lock);
}

/* ---- WAL checkpoints ---- */

enum { CHECKPOINT_EVERY_MS = 500 };

static void *checkpoint_thread(void *arg)
{
    gp_checkpointer *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += CHECKPOINT_EVERY_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&c->wake, &c->lock, &ts);
        if (c->stopping)
            break;
        pthread_mutex_unlock(&c->lock);
        gp_error err;
        if (gp_store_checkpoint(c->store, &err) != GP_OK)
            gp_log(GP_LOG_WARN, "checkpoint", "error=\"%s\"", err.message);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static gp_err checkpointer_start(gp_checkpointer *c, const char *url, gp_error *err)
{
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    gp_err rc = gp_store_open(url, false, &c->store, err);
    if (rc == GP_OK && pthread_create(&c->thread, NULL, checkpoint_thread, c) != 0)
        rc = gp_error_set(err, GP_ERR_NOMEM, "thread", "cannot start the checkpoint thread");
    c->started = rc == GP_OK;
    return rc;
}

static void checkpointer_stop(gp_checkpointer *c)
{
    if (c->started) {
        pthread_mutex_lock(&c->lock);
        c->stopping = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
        c->started = false;
    }
    gp_store_close(c->store);
    c->store = NULL;
}

/* ---- audit rows of the daemon itself ---- */

gp_err gp_server_audit_self(gp_server *srv, const char *action, const char *target, int64_t now, gp_error *err)
{
    gp_store_audit a = {.time = now,
                        .request_id = "startup",
                        .actor = "gpupoold",
                        .role = "system",
                        .action = action,
                        .target = target,
                        .result = "ok"};
    return gp_store_audit_append(srv->store, &a, err);
}

/* ---- fleet file ---- */

static bool node_shape_matches(const gp_engine *e, const gp_node_info *n, const gp_node_spec *s)
{
    return strcmp(gp_engine_gpu_type_name(e, n->type), s->gpu_type) == 0 && n->gpu_count == s->gpu_count &&
           strcmp(n->block, s->block ? s->block : "") == 0 && strcmp(n->zone, s->zone ? s->zone : "") == 0;
}

/* engine: node name -> engine index, for the nodes the engine knows. */
static gp_err reconcile_node(gp_server *srv, const gp_strmap *engine, const gp_node_spec *s, int64_t now,
                             int *added, gp_error *err)
{
    const gp_engine *e = srv->journal.engine;
    uint32_t i;
    gp_node_info n;
    if (gp_strmap_get(engine, s->name, &i) && gp_engine_node_get(e, i, &n)) {
        if (!node_shape_matches(e, &n, s))
            return gp_error_set(err, GP_ERR_CONFLICT, "fleet",
                                "node %s changed its type, GPU count, block or zone; remove it from the fleet file,"
                                " start once, then add it under a new name",
                                s->name);
        if (n.up)
            return GP_OK;
    }
    (*added)++;
    return gp_journal_node_add(&srv->journal, s, now, err);
}

static gp_err reconcile_fleet(gp_server *srv, const gp_fleet_file *f, gp_error *err)
{
    int64_t now = gp_journal_now(&srv->journal, gp_wall_ms() / 1000);
    int added = 0, lost = 0;
    const gp_engine *e = srv->journal.engine;
    gp_strmap engine_nodes = {0}, file_nodes = {0};
    gp_err rc = GP_OK;
    for (uint32_t i = 0; rc == GP_OK && i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        if (gp_engine_node_get(e, i, &n) && !gp_strmap_put(&engine_nodes, n.name, i))
            rc = gp_error_set(err, GP_ERR_NOMEM, "fleet", "out of memory");
    }
    for (size_t i = 0; rc == GP_OK && i < f->n_nodes; i++)
        if (!gp_strmap_put(&file_nodes, f->nodes[i].name, (uint32_t)i))
            rc = gp_error_set(err, GP_ERR_NOMEM, "fleet", "out of memory");
    if (rc == GP_OK)
        rc = gp_store_begin(srv->store, err);
    for (size_t i = 0; rc == GP_OK && i < f->n_pools; i++)
        rc = gp_journal_pool_set(&srv->journal, f->pools[i].name, &f->pools[i].spec, now, err);
    for (size_t i = 0; rc == GP_OK && i < f->n_nodes; i++)
        rc = reconcile_node(srv, &engine_nodes, &f->nodes[i], now, &added, err);
    for (uint32_t i = 0; rc == GP_OK && i < gp_engine_node_count(e); i++) {
        gp_node_info n;
        uint32_t unused;
        if (gp_engine_node_get(e, i, &n) && n.up && !gp_strmap_get(&file_nodes, n.name, &unused) &&
            !gp_agents_has_agent(&srv->agents, n.name)) {
            rc = gp_journal_node_lost(&srv->journal, n.name, now, err);
            lost++;
        }
    }
    gp_strmap_free(&engine_nodes);
    gp_strmap_free(&file_nodes);
    if (rc == GP_OK && (added || lost))
        rc = gp_journal_tick(&srv->journal, now, err);
    if (rc != GP_OK) {
        gp_store_rollback(srv->store); /* harmless when no transaction is open */
        return rc;
    }
    rc = gp_store_commit(srv->store, err);
    gp_log(GP_LOG_INFO, "fleet", "nodes=%zu added=%d lost=%d", f->n_nodes, added, lost);
    return rc;
}

/* ---- bootstrap token ---- */

/* NAME in the SQLite file's folder. */
static void default_file(const char *store_url, const char *name, char *out, size_t cap)
{
    const char *path = store_url + strlen("sqlite:");
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(out, cap, "%.*s/%s", (int)(slash - path), path, name);
    else
        snprintf(out, cap, "%s", name);
}

static gp_err bootstrap_token(gp_server *srv, gp_error *err)
{
    if (gp_auth_count(&srv->auth) > 0)
        return GP_OK;
    char secret[GP_TOKEN_SECRET_LEN + 1], id[GP_TOKEN_ID_LEN + 1], hash[65], path[1024];
    if (srv->cfg.token_file)
        snprintf(path, sizeof path, "%s", srv->cfg.token_file);
    else
        default_file(srv->cfg.store_url, "admin.token", path, sizeof path);
    int64_t now = gp_wall_ms() / 1000;
    /* it never expires: it is the way back in (docs/operations.md); rotate it by hand */
    gp_store_token t = {.id = id, .hash_hex = hash, .name = "bootstrap", .role = "admin", .scope = "", .user = "",
                        .created = now, .revoked = -1, .expires = -1, .last_used = -1, .created_by = "gpupoold"};
    gp_err rc = gp_token_generate(secret, id, hash, err);
    if (rc)
        return rc;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "token_file", "cannot write the bootstrap token to %s", path);
    bool ok = fchmod(fd, 0600) == 0 && write(fd, secret, strlen(secret)) == (ssize_t)strlen(secret) &&
              write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    close(fd);
    if (!ok)
        return gp_error_set(err, GP_ERR_INVALID, "token_file", "cannot write the bootstrap token to %s", path);
    char target[64];
    snprintf(target, sizeof target, "token/%s", id);
    rc = gp_store_begin(srv->store, err);
    if (rc == GP_OK)
        rc = gp_store_token_insert(srv->store, &t, err);
    if (rc == GP_OK)
        rc = gp_server_audit_self(srv, "token.create", target, now, err);
    if (rc == GP_OK)
        rc = gp_store_commit(srv->store, err);
    else
        gp_store_rollback(srv->store);
    if (rc == GP_OK)
        rc = gp_auth_add(&srv->auth, &t, err);
    if (rc == GP_OK)
        gp_log(GP_LOG_WARN, "bootstrap_token", "path=%s id=%s note=\"admin token written (mode 0600); keep it safe\"",
               path, id);
    return rc;
}

/* ---- start / stop ---- */

static gp_err load_fleet(gp_server *srv, gp_error *err)
{
    if (!srv->cfg.fleet_path)
        return GP_OK;
    gp_fleet_file f;
    gp_err rc = gp_fleet_file_load(srv->cfg.fleet_path, &f, err);
    if (rc)
        return rc;
    rc = reconcile_fleet(srv, &f, err);
    gp_fleet_file_free(&f);
    return rc;
}

static gp_err write_port_file(gp_server *srv, gp_error *err)
{
    if (!srv->cfg.port_file)
        return GP_OK;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", srv->cfg.port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", srv->port) < 0 || fclose(f) != 0 || rename(tmp, srv->cfg.port_file) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "port_file", "cannot write %s", srv->cfg.port_file);
    return GP_OK;
}

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

/* The agents' table, before the replay that fills it: at the lease's
 * epoch (a follower's is the leader's until it takes the lead). */
static gp_err agents_start(gp_server *srv, gp_error *err)
{
    char url[8];
    int64_t epoch;
    gp_lease_leader(&srv->lease, url, sizeof url, &epoch);
    gp_agents_init(&srv->agents, epoch, srv->cfg.node_lost_after_s);
    return gp_agents_load(&srv->agents, srv->store, gp_wall_ms(), err);
}

/* The replica logs' directory: --job-logs, else next to the SQLite file
 * (PATH.logs). */
static gp_err joblogs_start(gp_server *srv, gp_error *err)
{
    char dir[4096];
    if (srv->cfg.job_logs)
        snprintf(dir, sizeof dir, "%s", srv->cfg.job_logs);
    else
        snprintf(dir, sizeof dir, "%s.logs", srv->cfg.store_url + strlen("sqlite:"));
    return gp_joblogs_init(&srv->joblogs, dir, err);
}

/* The key of tenants' secrets: --secret-key-file, else secret.key next to
 * the SQLite file; made (and logged) when missing. */
static gp_err secret_key_start(gp_server *srv, gp_error *err)
{
    char path[4096];
    if (srv->cfg.secret_key_file)
        snprintf(path, sizeof path, "%s", srv->cfg.secret_key_file);
    else
        default_file(srv->cfg.store_url, "secret.key", path, sizeof path);
    bool created = false;
    gp_err rc = gp_secret_key_load(path, &srv->secret_key, &created, err);
    if (rc == GP_OK && created)
        gp_log(GP_LOG_WARN, "secret_key", "path=%s note=\"key of tenants' secrets made (mode 0600); back it up apart"
               " from the store\"", path);
    return rc;
}

/* The journal's observer: the agents learn what each event touched; the
 * metrics count the preemptions of live events (not the start-up replay's,
 * which happened before this process). */
static void observe(void *ctx, const gp_engine *e, const gp_event *ev)
{
    gp_server *srv = ctx;
    gp_agents_observe(&srv->agents, e, ev);
    if (srv->loop.started && !atomic_load(&srv->loop.following))
        gp_metrics_observe(&srv->metrics, e);
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

/* The journal's snapshot hooks: the agents' table is part of what a
 * start restores (agents.h). */
static void restored(void *ctx, const gp_engine *e, const json_t *saved)
{
    gp_server *srv = ctx;
    gp_agents_restore(&srv->agents, e, saved);
}

static void reset(void *ctx)
{
    gp_server *srv = ctx;
    gp_agents_reset_jobs(&srv->agents);
}

/* Replays the log (from the newest snapshot that holds) and logs how. */
static gp_err journal_start(gp_server *srv, gp_error *err)
{
    int64_t t0 = gp_wall_ms();
    gp_engine_config engine_cfg = gp_engine_config_default();
    gp_journal_hooks hooks = {.observe = observe, .restored = restored, .reset = reset, .ctx = srv};
    /* A follower reads the log and checks it against the job table while
     * the leader commits: both at one moment of the database. */
    bool follower = !atomic_load(&srv->lease.won);
    gp_err rc = follower ? gp_store_begin_snapshot(srv->store, err) : GP_OK;
    if (rc == GP_OK)
        rc = gp_journal_open(&srv->journal, srv->store, &engine_cfg, &hooks, err);
    if (follower && srv->store)
        gp_store_rollback(srv->store);
    if (rc)
        return rc;
    gp_engine_stats st;
    gp_engine_stats_get(srv->journal.engine, &st);
    gp_log(GP_LOG_INFO, "replay", "snapshot_seq=%lld events=%lld live_jobs=%zu next_job_id=%llu ms=%lld",
           (long long)srv->journal.snapshot_seq, (long long)srv->journal.events_replayed, st.jobs,
           (unsigned long long)srv->journal.replayer.next_job_id, (long long)(gp_wall_ms() - t0));
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

/* The replica's URL for the others: --advertise-url, else its listen
 * address with the port it bound. */
static void self_url(gp_server *srv, char *out, size_t cap)
{
    if (srv->cfg.advertise_url) {
        snprintf(out, cap, "%s", srv->cfg.advertise_url);
        return;
    }
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    int port = getsockname(srv->listen_fd, (struct sockaddr *)&addr, &len) == 0 ? ntohs(addr.sin_port) : 0;
    const char *colon = strrchr(srv->cfg.listen, ':');
    snprintf(out, cap, "%s://%.*s:%d", srv->cfg.tls_cert ? "https" : "http", (int)(colon - srv->cfg.listen),
             srv->cfg.listen, port);
}

/* ---- waiting for the database ---- */

enum { STORE_WAIT_FIRST_MS = 100, STORE_WAIT_MAX_MS = 2000 };

static bool is_sqlite(const char *store_url)
{
    return strncmp(store_url, "sqlite:", strlen("sqlite:")) == 0;
}

/* Paths a SQLite store gives defaults for; a PostgreSQL one has none. */
static gp_err paths_check(const gp_server_config *cfg, gp_error *err)
{
    if (is_sqlite(cfg->store_url))
        return GP_OK;
    if (!cfg->token_file)
        return gp_error_set(err, GP_ERR_INVALID, "token_file",
                            "--token-file is required with a PostgreSQL store (where the bootstrap admin token goes)");
    if (!cfg->job_logs)
        return gp_error_set(err, GP_ERR_INVALID, "job_logs",
                            "--job-logs is required with a PostgreSQL store (the replica logs' directory)");
    if (!cfg->secret_key_file)
        return gp_error_set(err, GP_ERR_INVALID, "secret_key_file",
                            "--secret-key-file is required with a PostgreSQL store (the key of tenants' secrets; the"
                            " same file on every replica)");
    return GP_OK;
}

/* Until PostgreSQL takes a connection: a try, then event=store_wait
 * with the error and a pause doubling from 100 ms to 2 s.  Any other
 * error (a schema newer than this gpupoold) ends the wait.  A SQLite file
 * is there or not: nothing to wait for. */
static gp_err wait_for_store(const char *store_url, gp_error *err)
{
    char q[400];
    if (is_sqlite(store_url))
        return GP_OK;
    int64_t pause_ms = STORE_WAIT_FIRST_MS;
    for (;;) {
        gp_store *s = NULL;
        gp_err rc = gp_store_open(store_url, false, &s, err);
        gp_store_close(s);
        if (rc == GP_OK || strcmp(err->field, GP_STORE_CONNECTION_FIELD) != 0)
            return rc;
        gp_log(GP_LOG_WARN, "store_wait", "error=%s retry_ms=%lld", gp_log_quote(err->message, q, sizeof q),
               (long long)pause_ms);
        struct timespec ts = {.tv_sec = pause_ms / 1000, .tv_nsec = pause_ms % 1000 * 1000000L};
        nanosleep(&ts, NULL);
        pause_ms = pause_ms * 2 < STORE_WAIT_MAX_MS ? pause_ms * 2 : STORE_WAIT_MAX_MS;
    }
}

/* Opens the lease and tries it once: a replica that does not get it
 * follows (not an error). */
static gp_err lease_open(gp_server *srv, gp_error *err)
{
    char url[1024];
    self_url(srv, url, sizeof url);
    gp_err rc = gp_lease_open(&srv->lease, srv->cfg.store_url, srv->cfg.holder, url, srv->cfg.lease_ms, err);
    if (rc == GP_OK)
        rc = gp_lease_try(&srv->lease, err);
    return rc == GP_ERR_CONFLICT ? GP_OK : rc;
}

/* The lease thread took the lead: the engine thread does the rest. */
static void lease_won(void *ctx)
{
    gp_server *srv = ctx;
    gp_loop_takeover(&srv->loop);
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
        rc = lead_step(load_fleet(srv, err), &lt.fleet, &t);
    if (rc == GP_OK) {
        gp_agents_seal(&srv->agents);
        gp_agents_publish(&srv->agents);
    }
    if (rc == GP_OK)
        rc = gp_auth_reload(&srv->auth, srv->store, err);
    if (rc == GP_OK)
        rc = bootstrap_token(srv, err);
    if (rc == GP_OK)
        rc = checkpointer_start(&srv->checkpointer, srv->cfg.store_url, err);
    if (rc == GP_OK)
        rc = gp_lease_renew_now(&srv->lease, srv->store, err);
    lead_step(rc, &lt.rest, &t);
    if (rc == GP_OK)
        atomic_store(&srv->lease.leading, true);
    gp_log(GP_LOG_INFO, "lead_steps", "ms=%lld tail_and_check=%lld job_use=%lld fleet=%lld rest=%lld",
           (long long)(t - t0), (long long)lt.follow, (long long)lt.use, (long long)lt.fleet, (long long)lt.rest);
    return rc;
}

gp_err gp_server_start(gp_server *srv, const gp_server_config *cfg, gp_error *err)
{
    memset(srv, 0, sizeof *srv);
    srv->cfg = *cfg;
    srv->listen_fd = -1;
    gp_auth_init(&srv->auth, cfg->rate_limit);
    gp_loop_init(&srv->loop, cfg->tick_ms, cfg->pass_min_ms);
    gp_metrics_init(&srv->metrics);
    pthread_mutex_init(&srv->readers.lock, NULL);
    gp_ledger_state_init(&srv->ledger);
    gp_refusals_init(&srv->refusals, cfg->audit_refusals_per_min);
    srv->readers.url = cfg->store_url;
    gp_err rc = gp_http_check(cfg, err);
    if (rc == GP_OK && cfg->web_root)
        rc = gp_web_root_check(cfg->web_root, err);
    else if (!cfg->web_root)
        srv->cfg.web_root = gp_web_root_default();
    if (rc == GP_OK)
        rc = paths_check(cfg, err);
    if (rc == GP_OK)
        rc = gp_http_bind(srv, err); /* a port in use fails here, before a store or token exists */
    if (rc == GP_OK)
        rc = gp_store_files_check(cfg, err);
    if (rc == GP_OK)
        rc = wait_for_store(cfg->store_url, err);
    if (rc == GP_OK) {
        gp_lease_keep_fd(srv->listen_fd);
        rc = lease_open(srv, err);
    }
    if (rc == GP_OK)
        rc = gp_store_open(cfg->store_url, false, &srv->store, err);
    if (rc == GP_OK)
        rc = agents_start(srv, err);
    if (rc == GP_OK)
        rc = joblogs_start(srv, err);
    if (rc == GP_OK)
        rc = secret_key_start(srv, err);
    if (rc == GP_OK)
        rc = journal_start(srv, err);
    if (rc == GP_OK)
        rc = gp_auth_reload(&srv->auth, srv->store, err);
    bool leads = atomic_load(&srv->lease.won);
    if (rc == GP_OK) /* renews through the leader's start (a follower's takeover waits for the loop) */
        rc = gp_lease_start(&srv->lease, lease_won, srv, err);
    if (rc == GP_OK && leads)
        rc = gp_server_lead(srv, err);
    if (rc == GP_ERR_CONFLICT && strcmp(err->field, "lease") == 0)
        gp_lease_step_down(err->message); /* taken during the start: come back as a follower */
    if (rc != GP_OK && strcmp(err->field, GP_STORE_CONNECTION_FIELD) == 0)
        gp_lease_step_down(err->message); /* the database went away during the start: wait for it again */
    if (rc == GP_OK)
        rc = gp_loop_start(srv, !leads, err);
    if (rc == GP_OK)
        rc = gp_http_start(srv, err);
    if (rc == GP_OK)
        rc = write_port_file(srv, err);
    if (rc != GP_OK) {
        gp_server_stop(srv);
        return rc;
    }
    const char *colon = strrchr(cfg->listen, ':');
    gp_log(GP_LOG_INFO, "listening", "url=%s://%.*s:%d store=%s role=%s", cfg->tls_cert ? "https" : "http",
           (int)(colon - cfg->listen), cfg->listen, srv->port, cfg->store_url, leads ? "leader" : "follower");
    return GP_OK;
}

/* The last telemetry counters (the engine thread has stopped: the
 * writer is this thread's), then the map. */
static void use_stop(gp_server *srv)
{
    gp_error err;
    char q[300];
    if (srv->store && (gp_store_begin(srv->store, &err) != GP_OK ||
                       gp_use_flush(&srv->use, srv->store, gp_wall_ms(), true, &err) != GP_OK ||
                       gp_store_commit(srv->store, &err) != GP_OK))
        gp_log(GP_LOG_WARN, "job_use_flush", "error=%s", gp_log_quote(err.message, q, sizeof q));
    gp_use_free(&srv->use);
}

/* The refusals not written yet and the counts of those suppressed (the
 * engine thread has stopped: the writer is this thread's). */
static void refusals_stop(gp_server *srv)
{
    gp_error err;
    char q[300];
    if (srv->store && atomic_load(&srv->lease.leading) &&
        (gp_store_begin(srv->store, &err) != GP_OK ||
         gp_refusals_flush(&srv->refusals, srv->store, gp_wall_ms(), gp_wall_ms() / 1000, true, &err) != GP_OK ||
         gp_store_commit(srv->store, &err) != GP_OK))
        gp_log(GP_LOG_WARN, "audit_refusals", "error=%s", gp_log_quote(err.message, q, sizeof q));
}

void gp_server_stop(gp_server *srv)
{
    if (srv->agents.epoch)
        gp_agents_stop(&srv->agents); /* long-polls answer now, so the HTTP server can stop */
    if (srv->joblogs.dir[0])
        gp_joblogs_stop(&srv->joblogs);
    gp_http_stop(srv);
    gp_lease_stop(&srv->lease);
    gp_loop_stop(srv);
    gp_snapshots_stop(&srv->snapshots);
    checkpointer_stop(&srv->checkpointer);
    if (srv->ledger_verifying)
        pthread_join(srv->ledger_verifier, NULL);
    readers_close(&srv->readers);
    if (srv->use.cap_s)
        use_stop(srv);
    refusals_stop(srv);
    if (srv->journal.engine)
        gp_journal_close(&srv->journal);
    gp_store_close(srv->store);
    srv->store = NULL;
    gp_lease_close(&srv->lease); /* a leader ends its lease: a follower need not wait for it */
    if (srv->agents.epoch)
        gp_agents_free(&srv->agents);
    if (srv->joblogs.dir[0])
        gp_joblogs_free(&srv->joblogs);
    gp_auth_free(&srv->auth);
    gp_metrics_destroy(&srv->metrics);
    gp_refusals_destroy(&srv->refusals);
}
