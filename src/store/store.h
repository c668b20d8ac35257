/* store.h - gpupoold's durable state, behind one narrow interface.
 *
 * The daemon keeps its truth in two forms, written in one transaction:
 *
 *   the event log   every event the engine accepted (submit, cancel,
 *                   tenant set/remove, node add/lost/drain, pool set, and
 *                   the ticks that emitted decisions), with its `now`, in
 *                   order.  The engine is deterministic, so replaying the
 *                   log into a fresh engine rebuilds the exact state.
 *   materialized    jobs (state, class, reason, placement, history),
 *   tables          tenants, usage intervals and their ledger, tokens, the
 *                   audit chain: what the API reads without going through
 *                   the engine, and what a restart checks the replayed
 *                   engine against.
 *
 * The payloads are JSON text the daemon writes and reads back; the store
 * does not interpret them.  Reads hand rows back as jansson objects whose
 * keys are the column names (a column named x_json is embedded as JSON
 * under the key x).
 *
 * Backends: "sqlite:PATH" (embedded, WAL).  The interface is the seam for
 * a PostgreSQL backend: nothing above it speaks SQL.
 *
 * Threads: one writer connection (the engine thread) and any number of
 * reader connections (opened with readonly = true, one per thread at a
 * time).  A gp_store is not shared between threads.
 *
 * Ownership: gp_store_open allocates, gp_store_close frees.  Strings passed
 * in are used during the call only.  json_t results are new
 * references the caller must json_decref.
 */
#ifndef GP_STORE_STORE_H
#define GP_STORE_STORE_H

#include "metering/bill.h"
#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct gp_store gp_store;

/* The schema version this build writes; older files are migrated on open. */
#define GP_STORE_SCHEMA_VERSION 15

/* url: "sqlite:PATH".  The writer creates the file and the schema on first
 * open and migrates older schemas; a reader opens an existing store of
 * this schema or an older one (never migrating it: the replay tool reads
 * old stores as they are). */
gp_err gp_store_open(const char *url, bool readonly, gp_store **out, gp_error *err);
/* The SQLite file a store url names, pointing into url
 * ("sqlite:/var/lib/gpupool/gpupool.db" -> "/var/lib/gpupool/gpupool.db");
 * NULL for PostgreSQL, which keeps no file of gpupoold's. */
const char *gp_store_file(const char *url);
/* NAME in the folder of that file, into out (caller's buffer):
 * "sqlite:/v/g.db", "admin.token" -> "/v/admin.token"; "sqlite:g.db" ->
 * "admin.token".  False, out empty, for PostgreSQL. */
bool gp_store_file_beside(const char *url, const char *name, char *out, size_t cap);
void gp_store_close(gp_store *s);
/* The connection is gone (PostgreSQL: the server restarted, the backend
 * was terminated): nothing on it will work again; close it and open
 * another.  Always false on SQLite.  A failed call on such a connection,
 * or an open that could not connect, fills err->field
 * GP_STORE_CONNECTION_FIELD. */
bool gp_store_broken(const gp_store *s);
#define GP_STORE_CONNECTION_FIELD "store_connection" /* db.h's GP_DB_CONNECTION_FIELD */

/* Checkpointing: the writer does not checkpoint the WAL itself (that
 * would stall a commit now and then); a separate connection calls
 * gp_store_checkpoint every so often instead.  Passive: it never blocks
 * the writer or readers; a WAL file over wal_limit bytes is then emptied
 * when the writer and readers allow within a short wait (db.h,
 * gp_db_checkpoint), so the file stays bounded under steady load. */
gp_err gp_store_checkpoint(gp_store *s, int64_t wal_limit, gp_error *err);

/* One transaction at a time per connection.  A failed commit leaves the
 * transaction rolled back.
 *
 * Group commit overlapped with the next batch (server/loop.c):
 * gp_store_commit_send ends the transaction (its meta values written, the
 * fence sent) and sends the commit without waiting for it (SQLite: commits
 * at once); gp_store_commit_ready says without blocking whether its
 * outcome has arrived; gp_store_commit_wait returns it (GP_OK when none is
 * in flight).  In between the connection may begin and fill the next
 * transaction, which must not be sent to commit before the wait said
 * GP_OK.  A commit that failed, at send or at wait, is rolled back, and
 * so is anything begun behind it.  gp_store_commit = send, then wait. */
gp_err gp_store_begin(gp_store *s, gp_error *err);
gp_err gp_store_commit(gp_store *s, gp_error *err);
gp_err gp_store_commit_send(gp_store *s, gp_error *err);
bool gp_store_commit_ready(gp_store *s);
int gp_store_commit_fd(gp_store *s); /* db.h's gp_db_commit_fd */
gp_err gp_store_commit_wait(gp_store *s, gp_error *err);
/* A transaction that only reads, all of it at one moment of the database
 * while other connections commit (PostgreSQL: REPEATABLE READ READ ONLY;
 * SQLite: a deferred BEGIN, fixed at its first read).  End it with
 * gp_store_rollback.  A follower's start reads the log and the job table
 * in one: the check of one against the other must not see a commit land
 * between them. */
gp_err gp_store_begin_snapshot(gp_store *s, gp_error *err);
void gp_store_rollback(gp_store *s);

/* ---- the leader lease and fencing (store_lease.c) ----
 *
 * One row, leader_lease(holder, url, epoch, expires_ms): which gpupoold
 * leads, where it answers, its epoch (the controller epoch agents see) and
 * until when the lease holds.  Time is epoch milliseconds by the
 * database's clock on PostgreSQL (now_ms is ignored there) and by the
 * caller's wall clock on SQLite (now_ms; one host).  Each call runs its
 * own short transaction -- but gp_store_lease_renew on a connection with
 * a transaction open runs inside it (a batch that ran long renews at its
 * end instead of queueing for the write lock beside it).
 *
 * Example, ttl 3000: A acquires at 1000 (epoch 5 -> 6, expires 4000),
 * renews at 2000 (expires 5000); B's acquire at 4500 is refused
 * (GP_ERR_CONFLICT); A stops; B's acquire at 5001 wins (epoch 7); A's
 * next renew and A's fenced connections' next transaction fail with
 * GP_ERR_CONFLICT, field "lease" (at BEGIN on SQLite, at COMMIT on
 * PostgreSQL). */
typedef struct gp_store_lease {
    char holder[256];
    char url[1024];
    int64_t epoch;
    int64_t expires_ms;
    int64_t now_ms; /* the lease's clock when read: expired when expires_ms <= now_ms */
} gp_store_lease;

/* Takes the lease for holder (answering at url) until now + ttl_ms when it
 * is free, expired, or holder's already; *epoch = the row's epoch + 1, in
 * the same transaction.  GP_ERR_CONFLICT when another holder's lease has
 * not expired. */
gp_err gp_store_lease_acquire(gp_store *s, const char *holder, const char *url, int64_t ttl_ms, int64_t now_ms,
                              int64_t *epoch, gp_error *err);
/* Extends the lease to now + ttl_ms; GP_ERR_CONFLICT (field "lease") when
 * the row is no longer holder's at epoch (lost). */
gp_err gp_store_lease_renew(gp_store *s, const char *holder, int64_t epoch, int64_t ttl_ms, int64_t now_ms,
                            gp_error *err);
/* Ends holder's lease at epoch now (a leader stopping cleanly), so that
 * a follower need not wait for it to expire; nothing when it is not
 * holder's any more. */
gp_err gp_store_lease_release(gp_store *s, const char *holder, int64_t epoch, gp_error *err);
/* The row as it is (holder "" before anyone led). */
gp_err gp_store_lease_get(gp_store *s, int64_t now_ms, gp_store_lease *out, gp_error *err);
/* Fences this (writer) connection at epoch: from now on every write
 * transaction checks the lease row's epoch once and fails with
 * GP_ERR_CONFLICT, field "lease", when it is not epoch -- on SQLite in
 * gp_store_begin (BEGIN IMMEDIATE's write lock then excludes a takeover
 * to the end), on PostgreSQL in gp_store_commit(_send), under a shared
 * row lock just before COMMIT, on the server (a function of the session
 * raises when the epoch moved, so the commit needs no round trip of its
 * own; a takeover's UPDATE waits for the commit; the commit fails after a
 * takeover), so the row is locked only for the commit.  A
 * statement that writes outside a transaction is refused the same way.
 * On PostgreSQL it also sets idle_in_transaction_session_timeout to ttl_ms,
 * so a stopped leader's transaction is aborted and its locks freed. */
gp_err gp_store_fence(gp_store *s, int64_t epoch, int64_t ttl_ms, gp_error *err);

/* ---- engine snapshots (store_snapshot.c) ---- */

/* Stores a sealed snapshot covering the log up to event seq (bytes as
 * eventlog/snapshot.h seals them), in parts of 1 MiB, each part its own
 * short transaction so that a writer on another connection never waits
 * long; then marks it complete and deletes all but the newest `keep`
 * complete snapshots.  Not inside a transaction of the caller's; meant
 * for a connection of its own (server/snapshots.h). */
#define GP_STORE_SNAPSHOTS_KEPT 2
gp_err gp_store_snapshot_put(gp_store *s, int64_t seq, int64_t created, const unsigned char *bytes, size_t len,
                             int keep, gp_error *err);
/* The complete snapshots' seqs, newest first (at most cap; *n how many). */
gp_err gp_store_snapshots_list(gp_store *s, int64_t *seqs, size_t cap, size_t *n, gp_error *err);
/* One snapshot's bytes into a new buffer (the caller frees it). */
gp_err gp_store_snapshot_get(gp_store *s, int64_t seq, unsigned char **bytes, size_t *len, gp_error *err);

/* Small integer settings (next job id, ...).  Set inside a transaction,
 * a value is kept and written once at its commit (a batch of submits sets
 * next_job_id once each: one write, not dozens), read back in it, and
 * forgotten by its rollback; outside one it is written at once. */
int64_t gp_store_meta_get(gp_store *s, const char *key, int64_t fallback);
gp_err gp_store_meta_set(gp_store *s, const char *key, int64_t value, gp_error *err);

/* ---- event log ---- */

/* One event of the log (eventlog/event.h reads the payload) with the
 * record of what the engine decided (eventlog/decisions.h). */
typedef struct gp_store_event {
    int64_t seq;           /* set by the store on append */
    int64_t time;
    const char *kind;
    const char *payload;   /* JSON text */
    int version;           /* the payload's format version */
    int64_t decisions;     /* how many decisions the event emitted; -1 = not recorded (schema 1) */
    const char *digest;    /* SHA-256 of their canonical text, hex; NULL when not recorded */
} gp_store_event;

gp_err gp_store_event_append(gp_store *s, const gp_store_event *ev, gp_error *err);
typedef gp_err (*gp_store_event_fn)(void *ctx, const gp_store_event *ev, gp_error *err);
/* Calls fn for every event in order; stops at the first error fn returns. */
gp_err gp_store_events_scan(gp_store *s, gp_store_event_fn fn, void *ctx, gp_error *err);
/* The seq of the last event logged, 0 when none. */
int64_t gp_store_last_seq(gp_store *s);
/* The same for the events with seq > after (the log's tail after a snapshot). */
gp_err gp_store_events_scan_after(gp_store *s, int64_t after, gp_store_event_fn fn, void *ctx, gp_error *err);
/* Events with seq > after, oldest first, at most limit (1..1000):
 * {"events": [{"seq", "time", "kind", "version", "payload" (JSON),
 * "decisions" (null when not recorded), "digest"}], "next": seq|null}. */
gp_err gp_store_events_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err);

/* ---- jobs ---- */

typedef struct gp_store_job {
    uint64_t id;
    const char *tenant, *user, *name; /* user and name may be NULL */
    const char *state, *cls, *reason; /* cls may be NULL */
    int64_t submit_time, bind_time, end_time, updated; /* -1 = not yet */
    const char *spec_json;      /* the job as submitted, canonical */
    const char *placement_json; /* NULL when not placed */
    uint64_t array_id;          /* the job array it is a member of, 0 = none */
    int64_t array_index;        /* its place in that array */
} gp_store_job;

gp_err gp_store_job_insert(gp_store *s, const gp_store_job *j, gp_error *err);
/* Updates state, class, reason, times and placement (spec stays). */
gp_err gp_store_job_update(gp_store *s, const gp_store_job *j, gp_error *err);
/* Replaces the job's spec (a pending job's update: hold, priority, time limit). */
gp_err gp_store_job_spec_set(gp_store *s, uint64_t id, const char *spec_json, gp_error *err);
gp_err gp_store_history_add(gp_store *s, uint64_t job, int64_t time, const char *kind, const char *from,
                            const char *to, const char *reason, gp_error *err);

/* Runs: replica `replica` of the job's run bound at bind_time was placed
 * on `node` (written with the bind; kept after the job ends).
 * gp_store_run_node: the node into node[cap], "" when no such run;
 * gp_store_runs_list: the replica's runs' bind times, newest first, up to
 * cap written, returns how many there are (-1 on a store error). */
gp_err gp_store_run_add(gp_store *s, uint64_t job, int64_t bind_time, int replica, const char *node, gp_error *err);
/* The run's replica started (its agent said so) with pid (0 = not said):
 * *first false when it was noted already, or there is no such run. */
gp_err gp_store_run_started(gp_store *s, uint64_t job, int64_t bind_time, int replica, int64_t pid, bool *first,
                            gp_error *err);
gp_err gp_store_run_node(gp_store *s, uint64_t job, int64_t bind_time, int replica, char *node, size_t cap,
                         gp_error *err);
int64_t gp_store_runs_list(gp_store *s, uint64_t job, int replica, int64_t *bind_times, size_t cap);

/* One job with its history under "history"; *out NULL when absent. */
gp_err gp_store_job_get(gp_store *s, uint64_t id, json_t **out, gp_error *err);

typedef struct gp_store_job_filter {
    const char *const *scopes; /* tenant subtrees the caller may see; NULL = all */
    int n_scopes;
    const char *tenant;        /* subtree filter, NULL = none */
    const char *state;         /* NULL = any; "live" = not final */
    const char *user;          /* NULL = any user */
    uint64_t before;           /* ids below this (paging), 0 = from the newest */
    int64_t from, to;          /* only jobs alive some time in [from, to): submitted before to, not ended
                                  before from (epoch seconds; 0 = no bound) */
    int limit;                 /* 1..1000 */
} gp_store_job_filter;

/* Jobs newest first, without history: {"jobs": [...], "next": id|null}. */
gp_err gp_store_jobs_list(gp_store *s, const gp_store_job_filter *f, json_t **out, gp_error *err);

/* The members of job array array_id (schema 12), by index:
 * [{"id", "array_index", "tenant", "user", "state", "reason"}, ...] in
 * *out (a new reference; empty when there is no such array).  Not
 * scoped: the caller checks each member's tenant. */
gp_err gp_store_array_members(gp_store *s, uint64_t array_id, json_t **out, gp_error *err);

typedef gp_err (*gp_store_job_fn)(void *ctx, uint64_t id, const char *state, const char *placement_json,
                                  gp_error *err);
/* Every job not in a final state (for the restart check). */
gp_err gp_store_live_jobs_scan(gp_store *s, gp_store_job_fn fn, void *ctx, gp_error *err);

/* ---- usage intervals ---- */

typedef struct gp_store_usage {
    uint64_t interval_id, job_id;
    const char *tenant, *gpu_type, *cls, *topology;
    int64_t milli_gpus, start, end; /* end -1 while open */
} gp_store_usage;

gp_err gp_store_usage_open(gp_store *s, const gp_store_usage *u, gp_error *err);
gp_err gp_store_usage_close(gp_store *s, uint64_t interval_id, int64_t end, gp_error *err);
/* GPU-seconds in [from, to) by tenant (by_user: and the job's user), GPU
 * type and class; open intervals count up to `now`.
 * {"usage": [{"tenant",("user",)"gpu_type","class","gpu_seconds"}]}; a job
 * without a user has "user": null. */
gp_err gp_store_usage_query(gp_store *s, const char *const *scopes, int n_scopes, const char *tenant, bool by_user,
                            int64_t from, int64_t to, int64_t now, json_t **out, gp_error *err);
/* When each tenant's usage began: {"TENANT": earliest interval start, ...}
 * over the tenants with any usage (server/baseline.h's history). */
gp_err gp_store_usage_first_starts(gp_store *s, json_t **out, gp_error *err);
typedef gp_err (*gp_store_usage_fn)(void *ctx, const char *tenant, int64_t start, int64_t end, int64_t milli_gpus,
                                    gp_error *err);
/* Every usage interval that overlaps [from, to), raw (end: an open one's
 * `now`), to fn: one pass over the table with no aggregation, which is
 * several times cheaper than gp_store_usage_query on a large table. */
gp_err gp_store_usage_scan(gp_store *s, int64_t from, int64_t to, int64_t now, gp_store_usage_fn fn, void *ctx,
                           gp_error *err);

/* The newest `limit` preemptions (job history rows of kind "preempt") of
 * the jobs in scope, newest first: {"preemptions": [{"time", "job",
 * "tenant", "reason"}]}. */
gp_err gp_store_preemptions_list(gp_store *s, const char *const *scopes, int n_scopes, int limit, json_t **out,
                                 gp_error *err);

/* ---- tenants (the specs as last set) ---- */

gp_err gp_store_tenant_put(gp_store *s, const char *path, const char *spec_json, int64_t time, gp_error *err);
/* Its secrets go with it: a tenant made again at that path (or moved
 * there) does not inherit them. */
gp_err gp_store_tenant_delete(gp_store *s, const char *path, gp_error *err);
/* {"path": spec, ...}; *out is an empty object when there are none. */
gp_err gp_store_tenants_get(gp_store *s, json_t **out, gp_error *err);
/* One tenant's spec as last set: *out a new reference, NULL when none. */
gp_err gp_store_tenant_get(gp_store *s, const char *path, json_t **out, gp_error *err);

/* ---- GPU types declared before their nodes arrive (schema 11) ---- */

/* Declares name (kept as spelt; a second declaration keeps the first). */
gp_err gp_store_gpu_type_declare(gp_store *s, const char *name, int64_t time, const char *by, gp_error *err);
/* *found: a declaration was removed. */
gp_err gp_store_gpu_type_undeclare(gp_store *s, const char *name, bool *found, gp_error *err);
/* [{"name", "declared", "declared_by"}] by name; *out a new reference. */
gp_err gp_store_gpu_types_declared(gp_store *s, json_t **out, gp_error *err);

/* ---- tokens (hashes only) ---- */

typedef struct gp_store_token {
    const char *id;        /* public, short: shown in lists and audit */
    const char *hash_hex;  /* SHA-256 of the secret, lowercase hex */
    const char *name, *role, *scope, *user; /* scope "" for fleet-wide roles; user may be "" */
    int64_t created, revoked; /* revoked -1 = live */
    int64_t expires;          /* epoch seconds; -1 = never */
    int64_t last_used;        /* epoch seconds, best effort (auth.h); -1 = never; insert ignores it */
    const char *created_by;
    bool single_use;          /* join: spent (revoked) by its first registration */
} gp_store_token;

gp_err gp_store_token_insert(gp_store *s, const gp_store_token *t, gp_error *err);
/* Records a use of token id at time (kept when an older time comes late). */
gp_err gp_store_token_touch(gp_store *s, const char *id, int64_t time, gp_error *err);
gp_err gp_store_token_revoke(gp_store *s, const char *id, int64_t time, gp_error *err);
typedef gp_err (*gp_store_token_fn)(void *ctx, const gp_store_token *t, gp_error *err);
gp_err gp_store_tokens_scan(gp_store *s, gp_store_token_fn fn, void *ctx, gp_error *err);

/* ---- job users and their tenants (store_users.c) ---- */

typedef struct gp_store_user {
    const char *name;     /* the Unix user name jobs run as */
    const char *tenant;   /* the tenant path it is bound to */
    int64_t bound;        /* epoch seconds */
    const char *bound_by; /* the id of the token that bound it */
} gp_store_user;

/* The tenant path name is bound to, copied into tenant[cap]; "" when none. */
gp_err gp_store_user_tenant(gp_store *s, const char *name, char *tenant, size_t cap, gp_error *err);
/* Binds name to tenant, replacing any binding it had. */
gp_err gp_store_user_bind(gp_store *s, const char *name, const char *tenant, int64_t time, const char *by,
                          gp_error *err);
/* GP_ERR_NOT_FOUND (field "user") when name is bound to nothing. */
gp_err gp_store_user_unbind(gp_store *s, const char *name, gp_error *err);
/* Every binding, by name; the strings live for the call of fn only. */
typedef gp_err (*gp_store_user_fn)(void *ctx, const gp_store_user *u, gp_error *err);
gp_err gp_store_users_scan(gp_store *s, gp_store_user_fn fn, void *ctx, gp_error *err);
/* ---- OIDC role bindings (store_rolebindings.c) ---- */

/* A person signed in through OIDC holds role (admin, tenant-admin, member)
 * at scope (a tenant path; "" for admin) when the binding names its user
 * (kind "user") or one of its groups (kind "group"). */
typedef struct gp_store_rolebinding {
    int64_t id;
    const char *kind, *subject, *role, *scope;
    int64_t created;        /* epoch seconds */
    const char *created_by; /* the actor that created it */
} gp_store_rolebinding;

/* Adds b with the next free id (into b->id); GP_ERR_EXISTS (field
 * "subject") when the same kind, subject, role and scope are bound. */
gp_err gp_store_rolebinding_add(gp_store *s, gp_store_rolebinding *b, gp_error *err);
/* GP_ERR_NOT_FOUND (field "id") when there is none. */
gp_err gp_store_rolebinding_delete(gp_store *s, int64_t id, gp_error *err);
/* Every binding by id (id > 0: that one only); the strings live for the
 * call of fn only. */
typedef gp_err (*gp_store_rolebinding_fn)(void *ctx, const gp_store_rolebinding *b, gp_error *err);
gp_err gp_store_rolebindings_scan(gp_store *s, int64_t id, gp_store_rolebinding_fn fn, void *ctx, gp_error *err);

/* ---- node approvals (store_nodes.c) ---- */

/* state "awaiting" (a new node cordoned under --approve-nodes) or
 * "approved" (the next join-token registration of that existing node is
 * let in); set replaces the node's row. */
gp_err gp_store_node_approval_set(gp_store *s, const char *node, const char *state, int64_t time, const char *actor,
                                  gp_error *err);
/* The node's state into state (cap bytes), "" when it has none, and when
 * it was set into *time (-1 when none). */
gp_err gp_store_node_approval_get(gp_store *s, const char *node, char *state, size_t cap, int64_t *time,
                                  gp_error *err);
gp_err gp_store_node_approval_clear(gp_store *s, const char *node, gp_error *err);

/* An operator's drain of node (store_nodes.c): why ("" when not said), by
 * whom and since when; a node drained already keeps its since. */
gp_err gp_store_node_drain_set(gp_store *s, const char *node, const char *reason, const char *by, int64_t since,
                               gp_error *err);
gp_err gp_store_node_drain_clear(gp_store *s, const char *node, gp_error *err);
/* Why nodes are drained: node's (NULL: every node's) as {"NAME":
 * {"reason", "by", "since", "kind"}}, kind "operator" (gp_store_node_drain_set),
 * "health" (gp_store_health_drain_set; by "gpupoold") or "approval" (a
 * node awaiting an admin's approval; by the registering token's id); a
 * node in several has its operator's drain, else its health drain.
 * Rows of nodes that no longer drain are the caller's to ignore.  *out a
 * new reference the caller frees. */
gp_err gp_store_node_drains(gp_store *s, const char *node, json_t **out, gp_error *err);

/* ---- the node CA (store_node_ca.c, issue 33) ---- */

/* The CA's row: *cert_pem and *key_sealed (the caller frees both), both
 * NULL when there is none yet. */
gp_err gp_store_node_ca_get(gp_store *s, char **cert_pem, char **key_sealed, gp_error *err);
/* Adds the CA unless one is there already (then nothing changes: read it). */
gp_err gp_store_node_ca_add(gp_store *s, const char *cert_pem, const char *key_sealed, int64_t created, gp_error *err);
/* Forgets the CA (gpupoold --rotate-node-ca makes the next). */
gp_err gp_store_node_ca_remove(gp_store *s, gp_error *err);

/* ---- tenants' secrets, sealed (store_secrets.c) ---- */

typedef struct gp_store_secret {
    const char *tenant, *name;
    const char *sealed;      /* server/secret_box.h's text; never the value */
    int64_t bytes;           /* the value's length */
    const char *set_by;      /* the token id that set it */
    int64_t updated;         /* epoch seconds */
} gp_store_secret;

/* Inserts or replaces tenant's secret name. */
gp_err gp_store_secret_put(gp_store *s, const gp_store_secret *sec, gp_error *err);
/* GP_ERR_NOT_FOUND (field "name") when tenant has no such secret. */
gp_err gp_store_secret_delete(gp_store *s, const char *tenant, const char *name, gp_error *err);
/* *sealed: the sealed text (the caller frees it), NULL when there is none. */
gp_err gp_store_secret_get(gp_store *s, const char *tenant, const char *name, char **sealed, gp_error *err);
/* *out: [{"name", "bytes", "set_by", "updated"}] of tenant, by name (the
 * caller decrefs it). */
gp_err gp_store_secrets_list(gp_store *s, const char *tenant, json_t **out, gp_error *err);

/* ---- GPU health (store_health.c) ---- */

/* One check a node agent reported (docs/api.md, report gpu_check). */
typedef struct gp_store_gpu_check {
    const char *node;
    int gpu;
    int64_t at;              /* epoch seconds */
    const char *check;       /* "sim", "nvml", "xid", "repair", a diagnostic's name */
    bool passed;
    const char *detail;      /* NULL: none */
    int xid;                 /* 0: none */
    const char *action;      /* the XID's action, NULL: none */
    int64_t duration_ms;     /* -1: not said */
} gp_store_gpu_check;

/* Appends the check; keeps the last 1,000 of its GPU. */
gp_err gp_store_gpu_check_add(gp_store *s, const gp_store_gpu_check *c, gp_error *err);
/* The node's GPU `gpu` (-1: every GPU) checks, newest first, at most limit:
 * {"checks": [{"gpu","at","check","passed","detail","xid","action","duration_ms"}]}. */
gp_err gp_store_gpu_checks_list(gp_store *s, const char *node, int gpu, int limit, json_t **out, gp_error *err);
/* The GPU's health is `healthy` for `reason` (NULL: none): since `since`
 * when that is a change, else since when it was (the reason is updated:
 * "... an operator is needed"). */
gp_err gp_store_gpu_health_set(gp_store *s, const char *node, int gpu, bool healthy, int64_t since,
                               const char *reason, gp_error *err);
/* Per GPU 0..gpu_count-1 an object {"since", "reason", "last_check",
 * "xids": [{"xid","action","at"}] (newest first, at most 20)}; since,
 * reason and last_check null where nothing is recorded. */
gp_err gp_store_gpu_health_view(gp_store *s, const char *node, int gpu_count, json_t **out, gp_error *err);
/* The node is drained for GPU health (true) or not. */
gp_err gp_store_health_drain_set(gp_store *s, const char *node, bool drained, int64_t since, gp_error *err);
gp_err gp_store_health_drain_get(gp_store *s, const char *node, bool *drained, gp_error *err);

/* ---- audit chain ---- */

typedef struct gp_store_audit {
    int64_t time;
    const char *request_id, *actor, *role, *action, *target, *result;
} gp_store_audit;

/* Appends a row whose hash covers the previous row's hash and this row's
 * fields (see store_audit.c for the exact bytes). */
gp_err gp_store_audit_append(gp_store *s, const gp_store_audit *a, gp_error *err);
/* Rows with seq > after, oldest first: {"audit": [...], "next": seq|null}. */
gp_err gp_store_audit_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err);
/* Recomputes the chain.  *first_broken = seq of the first row whose hash
 * does not match (0 when the chain is whole); *checked = rows read. */
gp_err gp_store_audit_verify(gp_store *s, int64_t *checked, int64_t *first_broken, gp_error *err);

/* ---- usage ledger (store_ledger.c) ---- */

/* Appends a record: the caller's fields (with "interval" and "kind") plus
 * "seq" and "prev", which the store sets in `record` itself; its canonical
 * text and that text's SHA-256 are stored (see store_ledger.c). */
gp_err gp_store_ledger_append(gp_store *s, json_t *record, gp_error *err);
/* The newest "open" record of the interval, *out NULL when there is none
 * (a new reference). */
gp_err gp_store_ledger_open_get(gp_store *s, uint64_t interval, json_t **out, gp_error *err);
/* The last record's seq and hash (0 and 64 zeros when empty). */
gp_err gp_store_ledger_head(gp_store *s, int64_t *seq, char hash[65], gp_error *err);
/* Records with seq > after, oldest first, at most limit (1..1000):
 * {"records": [{"seq", "record" (JSON), "hash"}], "next": seq|null}. */
gp_err gp_store_ledger_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err);

/* The ledger's records a bill of [from, as_of) needs (metering/bill.h:
 * the usage that overlaps it, open ones only while no close exists, and
 * every guarantee and capacity record before as_of), read from the typed
 * columns; fn's record lives during the call only. */
typedef gp_err (*gp_store_bill_fn)(void *ctx, const gp_bill_record *r, gp_error *err);
gp_err gp_store_bill_records(gp_store *s, int64_t from, int64_t as_of, gp_store_bill_fn fn, void *ctx, gp_error *err);
/* The last guarantee record of every (tenant, GPU type) and capacity
 * record of every type (tenant NULL): what the ledger says is in force. */
typedef void (*gp_store_level_fn)(void *ctx, const char *kind, const char *tenant, const char *gpu_type,
                                  int64_t milli_gpus);
gp_err gp_store_ledger_levels(gp_store *s, gp_store_level_fn fn, void *ctx, gp_error *err);

/* ---- prices and billing modes (store_prices.c) ---- */

/* Adds the price version effective at `effective` (version_json: its
 * canonical JSON, metering/price.h); GP_ERR_EXISTS when one is. */
gp_err gp_store_price_add(gp_store *s, int64_t effective, const char *currency, const char *version_json,
                          int64_t created, gp_error *err);
/* The latest version's effective time, -1 when there is none, and its
 * currency into currency[cap] ("" when none). */
gp_err gp_store_price_latest(gp_store *s, int64_t *effective, char *currency, size_t cap, gp_error *err);
gp_err gp_store_bill_mode_set(gp_store *s, const char *org, const char *mode, int64_t time, gp_error *err);
/* The price table as GET /v1/prices answers it (metering/price.h):
 * {"currency", "versions": [...] by effective, "modes": {org: mode}}. */
gp_err gp_store_prices_get(gp_store *s, json_t **out, gp_error *err);

typedef struct gp_store_ledger_check {
    int64_t records;       /* rows read */
    int64_t first_bad;     /* 0 when the chain is whole */
    char why[160];         /* what is wrong with first_bad */
    int64_t head_seq;      /* the last good record, and its hash */
    char head_hash[65];
} gp_store_ledger_check;

/* Recomputes the chain from the first record. */
gp_err gp_store_ledger_verify(gp_store *s, gp_store_ledger_check *out, gp_error *err);

/* ---- allocated vs used (store_use.c) ---- */

/* Levels of SM activity a job's "below since" is kept for: 0..100 %. */
#define GP_STORE_USE_LEVELS 101

/* What the agents' telemetry says one job drove (server/use.h). */
typedef struct gp_store_job_use {
    uint64_t job_id;
    double busy_gpu_s;        /* sum over its GPUs of SM activity x seconds (a whole GPU busy 1 s = 1) */
    int peak_sm;              /* percent, the highest sample of any of its GPUs */
    int64_t peak_memory_mib;  /* the highest sample of one GPU */
    int64_t below_since[GP_STORE_USE_LEVELS]; /* [L]: epoch s since every sample was below L %, 0 = not */
    int64_t updated;          /* epoch s of the last sample */
} gp_store_job_use;

/* The job's row (when its usage interval opens, in the decision's
 * transaction): tenant, GPU type and milli-GPUs held on each of its GPUs. */
gp_err gp_store_job_use_open(gp_store *s, uint64_t job, const char *tenant, const char *gpu_type,
                             int64_t milli_per_gpu, gp_error *err);
/* Adds GPU-seconds lost to a preemption (work since the last checkpoint). */
gp_err gp_store_job_use_lost(gp_store *s, uint64_t job, int64_t gpu_s, gp_error *err);
/* Writes the telemetry counters of a job that has a row (else nothing). */
gp_err gp_store_job_use_sample(gp_store *s, const gp_store_job_use *u, gp_error *err);
/* Calls fn for every row's counters (start-up: server/use.c reloads them). */
typedef void (*gp_store_job_use_fn)(void *ctx, const gp_store_job_use *u);
gp_err gp_store_job_use_scan(gp_store *s, gp_store_job_use_fn fn, void *ctx, gp_error *err);
/* Used and lost GPU-seconds by tenant and GPU type (whole runs of the jobs,
 * not cut to a period): {"tenant": {"gpu_type": [used, lost]}} in *out
 * (a new reference).  Scoped like gp_store_usage_query. */
gp_err gp_store_use_query(gp_store *s, const char *const *scopes, int n_scopes, const char *tenant, json_t **out,
                          gp_error *err);

#endif
