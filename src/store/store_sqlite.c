/* store_sqlite.c - the store's connection, transactions, event log,
 * tenants and tokens, on db.h (SQLite or PostgreSQL; the schema is
 * store_schema.c's).
 *
 * Invariants: every row of the materialized tables was written in the
 * transaction that appended the event which caused it, so after any crash
 * the log and the tables agree; events.seq, audit.seq and ledger.seq only
 * grow, and ledger rows are never updated or deleted.
 *
 * Durability (SQLite): WAL mode with synchronous=FULL: each COMMIT fsyncs the WAL
 * before it returns, so an acknowledged request survives kill -9 and power
 * loss alike (on a disk that honours fsync).  Checkpoints into the main
 * file run on their own connection (gp_store_checkpoint), so they never
 * stall a commit.  The daemon commits a batch
 * of requests at once (group commit), so the fsync is paid per batch.
 */
#include "store/store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A job update's new state (?2) is final. */
#define FINAL_STATE "?2 IN ('succeeded', 'failed', 'cancelled')"

static const char *const STATEMENTS[GP__ST_COUNT] = {
    [GP__ST_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [GP__ST_META_SET] = "INSERT INTO meta(key, value) VALUES(?1, ?2)"
                        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [GP__ST_EVENT_APPEND] = "INSERT INTO events(time, kind, payload, version, decisions, digest)"
                            " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [GP__ST_JOB_INSERT] = "INSERT INTO jobs(id, tenant, \"user\", name, state, class, reason, submit_time,"
                          " bind_time, end_time, updated, spec_json, placement_json, array_id, array_index)"
                          " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [GP__ST_JOB_SCOPE] = "INSERT INTO job_scope(prefix, job_id) VALUES(?1, ?2)",
    /* the engine forgets a job's class and placement when it ends: a
     * finished row keeps its last ones (and its first end time) */
    [GP__ST_JOB_UPDATE] = "UPDATE jobs SET state = ?2, class = COALESCE(?3, CASE WHEN " FINAL_STATE " THEN class END),"
                          " reason = ?4, bind_time = COALESCE(?5, CASE WHEN " FINAL_STATE " THEN bind_time END),"
                          " end_time = CASE WHEN " FINAL_STATE " THEN COALESCE(end_time, ?6) END, updated = ?7,"
                          " placement_json = COALESCE(?8, CASE WHEN " FINAL_STATE " THEN placement_json END) WHERE id = ?1",
    [GP__ST_JOB_SPEC] = "UPDATE jobs SET spec_json = ?2 WHERE id = ?1",
    [GP__ST_HISTORY_ADD] = "INSERT INTO job_history(job_id, time, kind, from_state, to_state, reason)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [GP__ST_RUN_ADD] = "INSERT INTO job_runs(job_id, bind_time, replica, node) VALUES(?1, ?2, ?3, ?4)"
                       " ON CONFLICT(job_id, bind_time, replica) DO UPDATE SET node = excluded.node, pid = NULL",
    [GP__ST_RUN_STARTED] = "UPDATE job_runs SET pid = ?4 WHERE job_id = ?1 AND bind_time = ?2 AND replica = ?3"
                           " AND pid IS NULL",
    [GP__ST_RUN_NODE] = "SELECT node FROM job_runs WHERE job_id = ?1 AND bind_time = ?2 AND replica = ?3",
    [GP__ST_RUN_LIST] = "SELECT DISTINCT bind_time FROM job_runs WHERE job_id = ?1 AND replica = ?2 ORDER BY bind_time DESC",
    [GP__ST_USAGE_OPEN] = "INSERT INTO usage(interval_id, job_id, tenant, gpu_type, milli_gpus, class,"
                          " topology, start, end_time) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL)",
    [GP__ST_USAGE_CLOSE] = "UPDATE usage SET end_time = ?2 WHERE interval_id = ?1",
    [GP__ST_TENANT_PUT] = "INSERT INTO tenants(path, spec_json, updated) VALUES(?1, ?2, ?3)"
                          " ON CONFLICT(path) DO UPDATE SET spec_json = excluded.spec_json,"
                          " updated = excluded.updated",
    [GP__ST_TENANT_DELETE] = "DELETE FROM tenants WHERE path = ?1",
    [GP__ST_AUDIT_APPEND] = "INSERT INTO audit(seq, time, request_id, actor, role, action, target, result,"
                            " prev_hash, hash) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [GP__ST_AUDIT_LAST] = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
    [GP__ST_LEDGER_APPEND] = "INSERT INTO ledger(seq, interval_id, kind, record, hash, job, tenant, \"user\", gpu_type,"
                             " milli_gpus, share, class, topology, start, end_time)"
                             " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [GP__ST_LEDGER_LAST] = "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1",
    [GP__ST_LEDGER_OPEN_GET] = "SELECT record FROM ledger WHERE interval_id = ?1 AND kind = 'open'"
                               " ORDER BY seq DESC LIMIT 1",
    [GP__ST_USE_OPEN] = "INSERT INTO job_use(job_id, tenant, gpu_type, milli_per_gpu) VALUES(?1, ?2, ?3, ?4)"
                        " ON CONFLICT(job_id) DO UPDATE SET tenant = excluded.tenant, gpu_type = excluded.gpu_type,"
                        " milli_per_gpu = excluded.milli_per_gpu",
    [GP__ST_USE_LOST] = "UPDATE job_use SET lost_gpu_s = lost_gpu_s + ?2 WHERE job_id = ?1",
    [GP__ST_USE_SAMPLE] = "UPDATE job_use SET busy_gpu_s = ?2, peak_sm = ?3, peak_memory_mib = ?4,"
                          " below_since = ?5, updated = ?6 WHERE job_id = ?1",
    [GP__ST_LAST_SEQ] = "SELECT max(seq) FROM events",
    [GP__ST_SNAPSHOT_PART] = "INSERT INTO snapshot_parts(seq, part, data) VALUES (?1, ?2, ?3)",
};

/* The writes of the log and of the tables it materializes: no rows back,
 * nobody reads their changes, and a failure fails the daemon's whole batch
 * (journal.c, the audit row).  On PostgreSQL they are queued, not waited
 * for, until the transaction's next read or its commit (db.h). */
static const unsigned FLAGS[GP__ST_COUNT] = {
    [GP__ST_META_SET] = GP_DB_DEFER,     [GP__ST_EVENT_APPEND] = GP_DB_DEFER, [GP__ST_JOB_INSERT] = GP_DB_DEFER,
    [GP__ST_JOB_SCOPE] = GP_DB_DEFER,    [GP__ST_JOB_UPDATE] = GP_DB_DEFER,   [GP__ST_HISTORY_ADD] = GP_DB_DEFER,
    [GP__ST_JOB_SPEC] = GP_DB_DEFER,
    [GP__ST_RUN_ADD] = GP_DB_DEFER,      [GP__ST_USAGE_OPEN] = GP_DB_DEFER,   [GP__ST_USAGE_CLOSE] = GP_DB_DEFER,
    [GP__ST_TENANT_PUT] = GP_DB_DEFER,   [GP__ST_TENANT_DELETE] = GP_DB_DEFER, [GP__ST_AUDIT_APPEND] = GP_DB_DEFER,
    [GP__ST_LEDGER_APPEND] = GP_DB_DEFER, [GP__ST_USE_OPEN] = GP_DB_DEFER,    [GP__ST_USE_LOST] = GP_DB_DEFER,
    [GP__ST_USE_SAMPLE] = GP_DB_DEFER,
};

/* ---- helpers shared by the store's files ---- */

gp_err gp__store_failed(gp_error *err, const char *what)
{
    if (!err)
        return GP_ERR_INVALID;
    char msg[GP_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s: %s", what, err->message);
    memcpy(err->message, msg, sizeof msg);
    return err->code;
}

/* A fenced connection (store_lease.c) writes only inside a transaction,
 * where gp_store_begin has checked its epoch: a statement that writes is
 * refused outside one. */
static gp_err unfenced_write(const gp_store *s, const char *sql, const char *what, gp_error *err)
{
    if (!s->fence_epoch || s->in_tx || strncmp(sql, "SELECT", 6) == 0)
        return GP_OK;
    return gp_error_set(err, GP_ERR_CONFLICT, "lease", "%s: a fenced connection writes only in a transaction", what);
}

gp_db_stmt *gp__store_stmt(gp_store *s, gp__stmt_id id, gp_error *err)
{
    if (unfenced_write(s, STATEMENTS[id], "store", err) != GP_OK)
        return NULL;
    if (!s->stmt[id] && gp_db_prepare(s->conn, STATEMENTS[id], FLAGS[id], &s->stmt[id], err) != GP_OK)
        return NULL;
    return s->stmt[id];
}

gp_db_stmt *gp__store_prepare(gp_store *s, const char *sql, unsigned flags, const char *what, gp_error *err)
{
    gp_db_stmt *st;
    if (unfenced_write(s, sql, what, err) != GP_OK)
        return NULL;
    if (gp_db_prepare(s->conn, sql, flags, &st, err) != GP_OK) {
        gp__store_failed(err, what);
        return NULL;
    }
    return st;
}

gp_err gp__store_exec_stmt(gp_db_stmt *st, const char *what, gp_error *err)
{
    gp_err out = gp_db_step(st, err) == GP_DB_ERROR ? gp__store_failed(err, what) : GP_OK;
    gp_db_reset(st);
    return out;
}

gp_err gp__store_exec_once(gp_db_stmt *st, const char *what, gp_error *err)
{
    gp_err rc = gp__store_exec_stmt(st, what, err);
    gp_db_finalize(st);
    return rc;
}

int64_t gp__store_int_or_none(gp_db_stmt *st, int i)
{
    return gp_db_column_type(st, i) == GP_DB_NULL ? -1 : gp_db_column_int64(st, i);
}

void gp__store_bind_int_or_null(gp_db_stmt *st, int index, int64_t v)
{
    if (v >= 0)
        gp_db_bind_int64(st, index, v);
    else
        gp_db_bind_null(st, index);
}

json_t *gp__store_row_json(gp_db_stmt *st)
{
    json_t *row = json_object();
    int n = gp_db_column_count(st);
    for (int i = 0; i < n; i++) {
        const char *name = gp_db_column_name(st, i);
        size_t len = strlen(name);
        json_t *v;
        switch (gp_db_column_type(st, i)) {
        case GP_DB_INT: v = json_integer(gp_db_column_int64(st, i)); break;
        case GP_DB_REAL: v = json_real(gp_db_column_double(st, i)); break;
        case GP_DB_NULL: v = json_null(); break;
        default: {
            const char *text = gp_db_column_text(st, i);
            if (len > 5 && strcmp(name + len - 5, "_json") == 0) {
                v = json_loads(text ? text : "null", JSON_DECODE_ANY, NULL);
                if (!v)
                    v = json_null();
                char key[64];
                snprintf(key, sizeof key, "%.*s", (int)(len - 5), name);
                json_object_set_new(row, key, v);
                continue;
            }
            v = json_string(text ? text : "");
            if (!v) /* not UTF-8: cannot happen for text we wrote */
                v = json_null();
        }
        }
        json_object_set_new(row, name, v);
    }
    return row;
}

/* ---- open, transactions ---- */

gp_err gp_store_open(const char *url, bool readonly, gp_store **out, gp_error *err)
{
    *out = NULL;
    gp_store *s = calloc(1, sizeof *s);
    if (!s)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    s->readonly = readonly;
    gp_err rc = gp_db_open(url, readonly, &s->conn, err);
    if (rc != GP_OK) {
        free(s);
        return rc;
    }
    rc = gp__schema_open(s->conn, readonly, &s->schema, err);
    if (rc != GP_OK) {
        gp_store_close(s);
        return rc;
    }
    *out = s;
    return GP_OK;
}

const char *gp_store_file(const char *url)
{
    return gp_db_sqlite_file(url);
}

bool gp_store_file_beside(const char *url, const char *name, char *out, size_t cap)
{
    const char *path = gp_store_file(url);
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!path)
        snprintf(out, cap, "%s", "");
    else if (slash)
        snprintf(out, cap, "%.*s/%s", (int)(slash - path), path, name);
    else
        snprintf(out, cap, "%s", name);
    return path != NULL;
}

void gp_store_close(gp_store *s)
{
    if (!s)
        return;
    for (int i = 0; i < GP__ST_COUNT; i++)
        gp_db_finalize(s->stmt[i]);
    gp_db_finalize(s->fence);
    gp__store_tx_forget(s);
    gp_db_close(s->conn);
    free(s);
}

bool gp_store_broken(const gp_store *s)
{
    return s && gp_db_broken(s->conn);
}

gp_err gp_store_checkpoint(gp_store *s, int64_t wal_limit, gp_error *err)
{
    return gp_db_checkpoint(s->conn, wal_limit, err);
}

gp_err gp_store_begin(gp_store *s, gp_error *err)
{
    gp_err rc = gp_db_begin(s->conn, !s->readonly, err);
    s->in_tx = rc == GP_OK;
    if (rc == GP_OK && s->fence_epoch && gp_db_dialect_of(s->conn) == GP_DB_SQLITE) {
        rc = gp__store_fence_check(s, err);
        if (rc != GP_OK)
            gp_store_rollback(s);
    }
    return rc;
}

gp_err gp_store_begin_snapshot(gp_store *s, gp_error *err)
{
    gp_err rc = gp_db_exec(s->conn,
                           gp_db_dialect_of(s->conn) == GP_DB_POSTGRES ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                                                                       : "BEGIN",
                           err);
    s->in_tx = rc == GP_OK;
    return rc;
}

static gp_err meta_write(gp_store *s, const char *key, int64_t value, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_META_SET, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, key);
    gp_db_bind_int64(st, 2, value);
    return gp__store_exec_stmt(st, "meta set", err);
}

/* The transaction's meta values, each written once. */
static gp_err meta_flush(gp_store *s, gp_error *err)
{
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach(s->meta, key, v) {
        if (rc == GP_OK)
            rc = meta_write(s, key, json_integer_value(v), err);
    }
    return rc;
}

gp_err gp_store_commit_send(gp_store *s, gp_error *err)
{
    gp_err rc = meta_flush(s, err);
    if (rc == GP_OK && s->fence_epoch && gp_db_dialect_of(s->conn) == GP_DB_POSTGRES)
        rc = gp__store_fence_check(s, err);
    if (rc == GP_OK)
        rc = gp_db_commit_send(s->conn, err);
    if (rc != GP_OK)
        gp_store_rollback(s);
    s->in_tx = false;
    gp__store_tx_forget(s);
    return rc;
}

bool gp_store_commit_ready(gp_store *s)
{
    return gp_db_commit_ready(s->conn);
}

int gp_store_commit_fd(gp_store *s)
{
    return gp_db_commit_fd(s->conn);
}

gp_err gp_store_commit_wait(gp_store *s, gp_error *err)
{
    gp_err rc = gp_db_commit_wait(s->conn, err);
    if (rc != GP_OK)
        gp_store_rollback(s);
    return rc;
}

gp_err gp_store_commit(gp_store *s, gp_error *err)
{
    gp_err rc = gp_store_commit_send(s, err);
    return rc == GP_OK ? gp_store_commit_wait(s, err) : rc;
}

void gp_store_rollback(gp_store *s)
{
    gp_db_rollback(s->conn);
    s->in_tx = false;
    s->audit.loaded = false; /* the cached chain heads may be gone */
    s->ledger.loaded = false;
    gp__store_tx_forget(s);
}

void gp__store_tx_forget(gp_store *s)
{
    json_decref(s->meta);
    s->meta = NULL;
    json_decref(s->levels);
    s->levels = NULL;
}

/* ---- meta ---- */

int64_t gp_store_meta_get(gp_store *s, const char *key, int64_t fallback)
{
    json_t *set = s->meta ? json_object_get(s->meta, key) : NULL;
    if (set)
        return json_integer_value(set);
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_META_GET, NULL);
    if (!st)
        return fallback;
    gp_db_bind_text(st, 1, key);
    int64_t v = fallback;
    if (gp_db_step(st, NULL) == GP_DB_ROW)
        v = gp_db_column_int64(st, 0);
    gp_db_reset(st);
    return v;
}

gp_err gp_store_meta_set(gp_store *s, const char *key, int64_t value, gp_error *err)
{
    if (!s->in_tx)
        return meta_write(s, key, value, err);
    if (!s->meta)
        s->meta = json_object();
    if (!s->meta || json_object_set_new(s->meta, key, json_integer(value)) != 0)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    return GP_OK;
}

/* ---- event log ---- */

gp_err gp_store_event_append(gp_store *s, const gp_store_event *ev, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_EVENT_APPEND, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, ev->time);
    gp_db_bind_text(st, 2, ev->kind);
    gp_db_bind_text(st, 3, ev->payload);
    gp_db_bind_int64(st, 4, ev->version);
    gp__store_bind_int_or_null(st, 5, ev->decisions);
    gp_db_bind_text(st, 6, ev->digest);
    return gp__store_exec_stmt(st, "event append", err);
}

/* SELECT of events with the columns as this file's schema has them, then
 * `tail` (WHERE, ORDER BY); payload_alias renames the payload column. */
static void events_select(const gp_store *s, const char *payload_alias, const char *tail, char *sql, size_t cap)
{
    snprintf(sql, cap, "SELECT seq, time, kind, payload%s, %s FROM events %s", payload_alias,
             s->schema >= 2 ? "version, decisions, digest" : "1 AS version, NULL AS decisions, NULL AS digest", tail);
}

int64_t gp_store_last_seq(gp_store *s)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_LAST_SEQ, NULL); /* asked when a snapshot may be due: kept prepared */
    int64_t seq = 0;
    if (!st)
        return 0;
    if (gp_db_step(st, NULL) == GP_DB_ROW)
        seq = gp_db_column_int64(st, 0);
    gp_db_reset(st);
    return seq;
}

gp_err gp_store_events_scan(gp_store *s, gp_store_event_fn fn, void *ctx, gp_error *err)
{
    return gp_store_events_scan_after(s, 0, fn, ctx, err);
}

gp_err gp_store_events_scan_after(gp_store *s, int64_t after, gp_store_event_fn fn, void *ctx, gp_error *err)
{
    char sql[256];
    events_select(s, "", "WHERE seq > ?1 ORDER BY seq", sql, sizeof sql);
    gp_db_stmt *st = gp__store_prepare(s, sql, GP_DB_STREAM, "events scan", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, after);
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW) {
        gp_store_event ev = {
            .seq = gp_db_column_int64(st, 0),
            .time = gp_db_column_int64(st, 1),
            .kind = gp_db_column_text(st, 2),
            .payload = gp_db_column_text(st, 3),
            .version = (int)gp_db_column_int64(st, 4),
            .decisions = gp__store_int_or_none(st, 5),
            .digest = gp_db_column_text(st, 6),
        };
        rc = fn(ctx, &ev, err);
    }
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "events scan");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_events_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err)
{
    char sql[256];
    *out = NULL;
    /* the payload is embedded as JSON (store.h: a column named x_json) */
    events_select(s, " AS payload_json", "WHERE seq > ?1 ORDER BY seq LIMIT ?2", sql, sizeof sql);
    gp_db_stmt *st = gp__store_prepare(s, sql, 0, "events list", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, after);
    gp_db_bind_int64(st, 2, limit);
    json_t *events = json_array();
    int64_t last = 0;
    int n = 0;
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        json_array_append_new(events, gp__store_row_json(st));
        last = gp_db_column_int64(st, 0);
        n++;
    }
    gp_db_finalize(st);
    *out = json_pack("{s:o, s:o}", "events", events, "next", n == limit ? json_integer(last) : json_null());
    return GP_OK;
}

/* ---- tenants ---- */

gp_err gp_store_tenant_put(gp_store *s, const char *path, const char *spec_json, int64_t time, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_TENANT_PUT, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, path);
    gp_db_bind_text(st, 2, spec_json);
    gp_db_bind_int64(st, 3, time);
    return gp__store_exec_stmt(st, "tenant put", err);
}

gp_err gp_store_tenant_delete(gp_store *s, const char *path, gp_error *err)
{
    gp_db_stmt *st = gp__store_stmt(s, GP__ST_TENANT_DELETE, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, path);
    gp_err rc = gp__store_exec_stmt(st, "tenant delete", err);
    return rc == GP_OK ? gp__store_secrets_forget(s, path, err) : rc;
}

gp_err gp_store_tenants_get(gp_store *s, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT path, spec_json FROM tenants ORDER BY path", 0, "tenants", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    json_t *all = json_object();
    while (gp_db_step(st, NULL) == GP_DB_ROW) {
        json_t *spec = json_loads(gp_db_column_text(st, 1), 0, NULL);
        json_object_set_new(all, gp_db_column_text(st, 0), spec ? spec : json_null());
    }
    gp_db_finalize(st);
    *out = all;
    return GP_OK;
}

gp_err gp_store_tenant_get(gp_store *s, const char *path, json_t **out, gp_error *err)
{
    *out = NULL;
    gp_db_stmt *st = gp__store_prepare(s, "SELECT spec_json FROM tenants WHERE path = ?1", 0, "tenant get", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, path);
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW)
        *out = json_loads(gp_db_column_text(st, 0), 0, NULL);
    gp_db_finalize(st);
    return step == GP_DB_ERROR ? gp__store_failed(err, "tenant get") : GP_OK;
}

/* ---- tokens ---- */

gp_err gp_store_token_insert(gp_store *s, const gp_store_token *t, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO tokens(id, hash, name, role, scope, \"user\", created,"
                                       " created_by, revoked, expires, last_used, single_use)"
                                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, ?9, NULL, ?10)",
                                       0, "token insert", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, t->id);
    gp_db_bind_text(st, 2, t->hash_hex);
    gp_db_bind_text(st, 3, t->name);
    gp_db_bind_text(st, 4, t->role);
    gp_db_bind_text(st, 5, t->scope);
    gp_db_bind_text(st, 6, t->user);
    gp_db_bind_int64(st, 7, t->created);
    gp_db_bind_text(st, 8, t->created_by);
    gp__store_bind_int_or_null(st, 9, t->expires);
    gp_db_bind_int64(st, 10, t->single_use);
    return gp__store_exec_once(st, "token insert", err);
}

gp_err gp_store_token_revoke(gp_store *s, const char *id, int64_t time, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, "UPDATE tokens SET revoked = ?2 WHERE id = ?1 AND revoked IS NULL", 0,
                                       "token revoke", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, id);
    gp_db_bind_int64(st, 2, time);
    gp_err rc = gp__store_exec_once(st, "token revoke", err);
    if (rc == GP_OK && gp_db_changes(s->conn) == 0)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no live token %s", id);
    return rc;
}

gp_err gp_store_token_touch(gp_store *s, const char *id, int64_t time, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(
        s, "UPDATE tokens SET last_used = ?2 WHERE id = ?1 AND (last_used IS NULL OR last_used < ?2)", 0,
        "token last use", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, id);
    gp_db_bind_int64(st, 2, time);
    return gp__store_exec_once(st, "token last use", err);
}

gp_err gp_store_tokens_scan(gp_store *s, gp_store_token_fn fn, void *ctx, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "SELECT id, hash, name, role, scope, \"user\", created, created_by, revoked,"
                                       " expires, last_used, single_use FROM tokens ORDER BY created, id",
                                       GP_DB_STREAM, "tokens scan", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = gp_db_step(st, err)) == GP_DB_ROW) {
        gp_store_token t = {
            .id = gp_db_column_text(st, 0),
            .hash_hex = gp_db_column_text(st, 1),
            .name = gp_db_column_text(st, 2),
            .role = gp_db_column_text(st, 3),
            .scope = gp_db_column_text(st, 4),
            .user = gp_db_column_text(st, 5),
            .created = gp_db_column_int64(st, 6),
            .created_by = gp_db_column_text(st, 7),
            .revoked = gp__store_int_or_none(st, 8),
            .expires = gp__store_int_or_none(st, 9),
            .last_used = gp__store_int_or_none(st, 10),
            .single_use = gp_db_column_int64(st, 11) != 0,
        };
        rc = fn(ctx, &t, err);
    }
    if (rc == GP_OK && step == GP_DB_ERROR)
        rc = gp__store_failed(err, "tokens scan");
    gp_db_finalize(st);
    return rc;
}
