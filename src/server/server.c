/* server.c - gpupoold's start-up and shut-down (order in server.h): the
 * parts in their order, each owned by its file (the leader's start by
 * lead.c), and the stop in reverse.
 *
 * On PostgreSQL there is no file to put things next to: --token-file,
 * --job-logs and --secret-key-file are required (a SQLite store's are
 * beside its file, store.h's gp_store_file_beside).  The key that seals
 * tenants' secrets (secret_box.h) is read from --secret-key-file (default
 * secret.key next to the SQLite file), made on the first start.
 *
 * A database that is away (PostgreSQL restarting, a standby not promoted
 * yet) is waited for: the start tries to connect with a backoff, logging
 * event=store_wait for each failed try, and a start that loses its
 * connection half-way re-executes and waits again (lease.h's step-down).
 */
#include "server/server.h"

#include "server/api.h"
#include "server/lead.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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
        .oidc = {.mfa_for = GP_OIDC_MFA_ADMIN | GP_OIDC_MFA_TENANT_ADMIN},
        .node_lost_after_s = 60,
        .snapshot_every_events = 10000,
        .snapshot_every_s = 300,
        .metrics_tenants = 50,
        .lease_ms = 3000,
        .audit_refusals_per_min = 10,
        .agent_cert_ttl_s = GP_NODE_CERT_TTL_DEFAULT_S,
        .store_wal_limit = 64 << 20,
        .store_reserve = 64 << 20,
    };
    return c;
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
        snprintf(dir, sizeof dir, "%s.logs", gp_store_file(srv->cfg.store_url));
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
        gp_store_file_beside(srv->cfg.store_url, "secret.key", path, sizeof path);
    bool created = false;
    gp_err rc = gp_secret_key_load(path, &srv->secret_key, &created, err);
    if (rc == GP_OK && created)
        gp_log(GP_LOG_WARN, "secret_key", "path=%s note=\"key of tenants' secrets made (mode 0600); back it up apart"
               " from the store\"", path);
    return rc;
}

/* The node CA (node_ca.h), with HTTPS and --agent-mtls on: read from the
 * store, made and added on the first start (or replaced with
 * --rotate-node-ca); a replica that lost the race to add it reads the
 * winner's. */
static gp_err node_ca_start(gp_server *srv, gp_error *err)
{
    pthread_mutex_init(&srv->nodes_without_cert.lock, NULL);
    if (srv->cfg.agent_mtls == GP_AGENT_MTLS_OFF)
        return GP_OK;
    char *cert = NULL, *key = NULL;
    gp_err rc = srv->cfg.rotate_node_ca ? GP_OK : gp_store_node_ca_get(srv->store, &cert, &key, err);
    if (rc == GP_OK && !cert) {
        int64_t now = gp_wall_ms() / 1000;
        rc = gp_node_ca_make(&srv->secret_key, now, &cert, &key, err);
        if (rc == GP_OK)
            rc = gp_store_begin(srv->store, err);
        if (rc == GP_OK && srv->cfg.rotate_node_ca)
            rc = gp_store_node_ca_remove(srv->store, err);
        if (rc == GP_OK)
            rc = gp_store_node_ca_add(srv->store, cert, key, now, err);
        if (rc == GP_OK)
            rc = gp_store_commit(srv->store, err);
        else
            gp_store_rollback(srv->store);
        free(cert);
        free(key);
        cert = key = NULL;
        if (rc == GP_OK)
            rc = gp_store_node_ca_get(srv->store, &cert, &key, err);
        if (rc == GP_OK)
            gp_log(GP_LOG_WARN, "node_ca", "note=\"node CA %s (ECDSA P-256): agents' certificates are signed by it\"",
                   srv->cfg.rotate_node_ca ? "replaced" : "made");
    }
    if (rc == GP_OK && !cert)
        rc = gp_error_set(err, GP_ERR_INVALID, "node_ca", "the node CA was not stored");
    if (rc == GP_OK)
        rc = gp_node_ca_open(&srv->node_ca, &srv->secret_key, cert, key, err);
    free(cert);
    free(key);
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

/* Paths a SQLite store gives defaults for; a PostgreSQL one has none. */
static gp_err paths_check(const gp_server_config *cfg, gp_error *err)
{
    if (gp_store_file(cfg->store_url))
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
    if (gp_store_file(store_url))
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

enum { FDS_BESIDE_CONNECTIONS = 64 }; /* store, readers, logs, snapshots, agents' files */

/* Descriptors: the soft limit raised to the hard one; one still below
 * --max-connections plus what the daemon needs beside is said at start
 * (connections past it wait in the listen backlog: slow, not refused). */
static void fd_limit(const gp_server_config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t need = (rlim_t)cfg->max_connections + FDS_BESIDE_CONNECTIONS;
    if (rl.rlim_cur < need)
        gp_log(GP_LOG_WARN, "fd_limit", "nofile=%llu need=%llu max_connections=%d note=\"raise ulimit -n (LimitNOFILE=) "
               "or lower --max-connections: connections past the limit wait unanswered\"",
               (unsigned long long)rl.rlim_cur, (unsigned long long)need, cfg->max_connections);
}

/* The lease thread took the lead: the engine thread does the rest. */
static void lease_won(void *ctx)
{
    gp_server *srv = ctx;
    gp_loop_takeover(&srv->loop);
}

gp_err gp_server_start(gp_server *srv, const gp_server_config *cfg, gp_error *err)
{
    memset(srv, 0, sizeof *srv);
    srv->cfg = *cfg;
    srv->listen_fd = -1;
    gp_auth_init(&srv->auth, cfg->rate_limit);
    gp_loop_init(&srv->loop, cfg->tick_ms, cfg->pass_min_ms);
    gp_metrics_init(&srv->metrics);
    gp_readers_init(&srv->readers, cfg->store_url);
    gp_store_space_init(&srv->store_space, cfg->store_url, cfg->store_reserve);
    gp_ledger_state_init(&srv->ledger);
    gp_refusals_init(&srv->refusals, cfg->audit_refusals_per_min);
    gp_auth_failures_init(&srv->auth_failures);
    gp_baseline_init(&srv->baseline);
    gp_log_reads_init(&srv->log_reads);
    gp_image_hints_init(&srv->image_hints);
    fd_limit(cfg);
    gp_err rc = gp_http_check(cfg, err);
    if (rc == GP_OK)
        rc = gp_oidc_init(&srv->oidc, &cfg->oidc, NULL, NULL, err);
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
        rc = node_ca_start(srv, err);
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
        rc = gp_loop_start(srv, !leads, gp_server_lead, err);
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
    gp_checkpointer_stop(&srv->checkpointer);
    if (srv->ledger_verifying)
        pthread_join(srv->ledger_verifier, NULL);
    gp_readers_close(&srv->readers);
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
    gp_node_ca_close(&srv->node_ca);
    gp_strmap_free(&srv->nodes_without_cert.names);
    gp_oidc_free(&srv->oidc);
    gp_metrics_destroy(&srv->metrics);
    gp_refusals_destroy(&srv->refusals);
    gp_auth_failures_destroy(&srv->auth_failures);
    gp_baseline_free(&srv->baseline);
    gp_log_reads_destroy(&srv->log_reads);
    gp_image_hints_free(&srv->image_hints);
}
