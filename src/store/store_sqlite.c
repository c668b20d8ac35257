/* store_sqlite.c - the SQLite backend: connection, schema, event log,
 * tenants and tokens.
 *
 * On-disk format (schema version 9, PRAGMA user_version):
 *
 *   meta(key, value)             next_job_id and other counters
 *   events(seq, time, kind, payload, version, decisions, digest)
 *                                the append-only event log; version: the
 *                                payload's format; decisions, digest: the
 *                                count and SHA-256 of what the engine
 *                                decided (NULL in rows written by schema 1)
 *   jobs(id, tenant, user, name, state, class, reason, submit_time,
 *        bind_time, end_time, updated, spec_json, placement_json)
 *   job_scope(prefix, job_id)    one row per ancestor of the job's tenant
 *                                ("a", "a/b", "a/b/c"): subtree listings
 *                                walk one index range, newest first
 *   job_history(seq, job_id, time, kind, from_state, to_state, reason)
 *   job_runs(job_id, bind_time, replica, node, pid)
 *                                where each replica of each run (a bind)
 *                                was placed, kept after the job ends: whose
 *                                logs a node may ship (server/joblogs.h);
 *                                pid NULL until its agent reported it started
 *   usage(interval_id, job_id, tenant, gpu_type, milli_gpus, class,
 *         topology, start, end_time)         end_time NULL while open
 *   tenants(path, spec_json, updated)
 *   tokens(id, hash, name, role, scope, user, created, created_by, revoked,
 *          expires, last_used)   expires NULL = never; last_used NULL =
 *                                never used, else best effort (auth.h)
 *   audit(seq, time, request_id, actor, role, action, target, result,
 *         prev_hash, hash)
 *   gpu_checks(seq, node, gpu, at, check_name, passed, detail, xid,
 *              action, duration_ms)   what node agents reported of their
 *                                GPUs' checks (store_health.c): the last
 *                                1,000 per GPU
 *   gpu_health(node, gpu, healthy, since, reason)  each GPU's last change
 *   health_drains(node, since)   drains gpupoold made for GPU health (an
 *                                operator's own drain is never listed)
 *   ledger(seq, interval_id, kind, record, hash, job, tenant, user,
 *          gpu_type, milli_gpus, share, class, topology, start, end_time)
 *                                the append-only, hash-chained usage
 *                                ledger (store_ledger.c): one record per
 *                                usage interval opened or closed, per
 *                                guarantee and capacity change; the
 *                                columns after hash repeat the record's
 *                                fields (NULL where it has none) so a
 *                                bill reads rows, not JSON: the index
 *                                ledger_bill covers a month's closes, and
 *                                usage_open (usage rows with end_time NULL)
 *                                finds the open records that have no
 *                                close yet without a probe per interval
 *   prices(effective, currency, version_json, created)
 *                                the price table's versions (store_prices.c)
 *   bill_modes(org, mode, updated)  chargeback or showback per org
 *   job_use(job_id, tenant, gpu_type, milli_per_gpu, busy_gpu_s,
 *           lost_gpu_s, peak_sm, peak_memory_mib, below_since, updated)
 *                                allocated vs used (store_use.c): what
 *                                the agents' telemetry says each job
 *                                drove, flushed every few seconds
 *   snapshots(seq, created, bytes, parts, complete)
 *   snapshot_parts(seq, part, data)
 *                                sealed engine snapshots (store_snapshot.c):
 *                                each covers the log up to event seq, in
 *                                parts of 1 MiB, usable once complete; the
 *                                newest two are kept
 *   leader_lease(id, holder, url, epoch, expires_ms)
 *                                one row (id 1): who leads, its epoch and
 *                                until when (store_lease.c)
 *
 * Invariants: every row of the materialized tables was written in the
 * transaction that appended the event which caused it, so after any crash
 * the log and the tables agree; events.seq, audit.seq and ledger.seq only
 * grow, and ledger rows are never updated or deleted.
 *
 * Durability: WAL mode with synchronous=FULL: each COMMIT fsyncs the WAL
 * before it returns, so an acknowledged request survives kill -9 and power
 * loss alike (on a disk that honours fsync).  Checkpoints into the main
 * file run on their own connection (gp_store_checkpoint), so they never
 * stall a commit.  The daemon commits a batch
 * of requests at once (group commit), so the fsync is paid per batch.
 *
 * Migrations: MIGRATIONS[i] takes user_version i to i + 1; a writer opening
 * an older file runs the missing ones in one transaction.  A reader never
 * migrates: it reads what the file's schema has (events of schema 1 have
 * version 1 and no decisions).
 */
#include "store/db_internal.h"
#include "store/sqlite_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const MIGRATIONS[] = {
    /* 0 -> 1 */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE events(seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, kind TEXT NOT NULL,"
    " payload TEXT NOT NULL);"
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, user TEXT, name TEXT,"
    " state TEXT NOT NULL, class TEXT, reason TEXT, submit_time INTEGER, bind_time INTEGER,"
    " end_time INTEGER, updated INTEGER, spec_json TEXT NOT NULL, placement_json TEXT);"
    "CREATE INDEX jobs_by_tenant ON jobs(tenant, id);"
    "CREATE TABLE job_scope(prefix TEXT NOT NULL, job_id INTEGER NOT NULL, PRIMARY KEY(prefix, job_id))"
    " WITHOUT ROWID;"
    "CREATE INDEX jobs_by_state ON jobs(state, id);"
    "CREATE TABLE job_history(seq INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, time INTEGER NOT NULL,"
    " kind TEXT NOT NULL, from_state TEXT, to_state TEXT, reason TEXT);"
    "CREATE INDEX job_history_by_job ON job_history(job_id, seq);"
    "CREATE TABLE usage(interval_id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, tenant TEXT NOT NULL,"
    " gpu_type TEXT NOT NULL, milli_gpus INTEGER NOT NULL, class TEXT NOT NULL, topology TEXT NOT NULL,"
    " start INTEGER NOT NULL, end_time INTEGER);"
    "CREATE INDEX usage_by_tenant ON usage(tenant, start);"
    "CREATE TABLE tenants(path TEXT PRIMARY KEY, spec_json TEXT NOT NULL, updated INTEGER NOT NULL);"
    "CREATE TABLE tokens(id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT NOT NULL,"
    " role TEXT NOT NULL, scope TEXT NOT NULL, user TEXT NOT NULL, created INTEGER NOT NULL,"
    " created_by TEXT NOT NULL, revoked INTEGER);"
    "CREATE TABLE audit(seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, request_id TEXT NOT NULL,"
    " actor TEXT NOT NULL, role TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL,"
    " result TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);",
    /* 1 -> 2: token expiry and last use (issue 12); the payload's format
     * version and the record of each event's decisions (issue 11) */
    "ALTER TABLE tokens ADD COLUMN expires INTEGER;"
    "ALTER TABLE tokens ADD COLUMN last_used INTEGER;"
    "ALTER TABLE events ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE events ADD COLUMN decisions INTEGER;"
    "ALTER TABLE events ADD COLUMN digest TEXT;",
    /* 2 -> 3: where each replica of each run was placed (issue 13: job logs) */
    "CREATE TABLE job_runs(job_id INTEGER NOT NULL, bind_time INTEGER NOT NULL, replica INTEGER NOT NULL,"
    " node TEXT NOT NULL, pid INTEGER, PRIMARY KEY(job_id, bind_time, replica)) WITHOUT ROWID;",
    /* 3 -> 4: GPU checks, health and the drains health made (issue 14) */
    "CREATE TABLE gpu_checks(seq INTEGER PRIMARY KEY, node TEXT NOT NULL, gpu INTEGER NOT NULL, at INTEGER NOT NULL,"
    " check_name TEXT NOT NULL, passed INTEGER NOT NULL, detail TEXT, xid INTEGER, action TEXT, duration_ms INTEGER);"
    "CREATE INDEX gpu_checks_by_gpu ON gpu_checks(node, gpu, seq);"
    "CREATE TABLE gpu_health(node TEXT NOT NULL, gpu INTEGER NOT NULL, healthy INTEGER NOT NULL,"
    " since INTEGER NOT NULL, reason TEXT, PRIMARY KEY(node, gpu)) WITHOUT ROWID;"
    "CREATE TABLE health_drains(node TEXT PRIMARY KEY, since INTEGER NOT NULL);",
    /* 4 -> 5: the hash-chained usage ledger (issue 15) */
    "CREATE TABLE ledger(seq INTEGER PRIMARY KEY, interval_id INTEGER NOT NULL, kind TEXT NOT NULL,"
    " record TEXT NOT NULL, hash TEXT NOT NULL);"
    "CREATE INDEX ledger_by_interval ON ledger(interval_id, kind);",
    /* 5 -> 6: allocated vs used, per job (issue 15) */
    "CREATE TABLE job_use(job_id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, gpu_type TEXT NOT NULL,"
    " milli_per_gpu INTEGER NOT NULL, busy_gpu_s REAL NOT NULL DEFAULT 0, lost_gpu_s INTEGER NOT NULL DEFAULT 0,"
    " peak_sm INTEGER NOT NULL DEFAULT 0, peak_memory_mib INTEGER NOT NULL DEFAULT 0, below_since BLOB,"
    " updated INTEGER);"
    "CREATE INDEX job_use_by_tenant ON job_use(tenant);",
    /* 6 -> 7: prices and bills (issue 15): the ledger's fields a bill
     * reads as typed columns (filled on insert, backfilled here), the
     * versioned price table and each org's billing mode */
    "ALTER TABLE ledger ADD COLUMN job INTEGER;"
    "ALTER TABLE ledger ADD COLUMN tenant TEXT;"
    "ALTER TABLE ledger ADD COLUMN user TEXT;"
    "ALTER TABLE ledger ADD COLUMN gpu_type TEXT;"
    "ALTER TABLE ledger ADD COLUMN milli_gpus INTEGER;"
    "ALTER TABLE ledger ADD COLUMN share TEXT;"
    "ALTER TABLE ledger ADD COLUMN class TEXT;"
    "ALTER TABLE ledger ADD COLUMN topology TEXT;"
    "ALTER TABLE ledger ADD COLUMN start INTEGER;"
    "ALTER TABLE ledger ADD COLUMN end_time INTEGER;"
    "UPDATE ledger SET job = json_extract(record, '$.job'), tenant = json_extract(record, '$.tenant'),"
    " user = json_extract(record, '$.user'), gpu_type = json_extract(record, '$.gpu_type'),"
    " milli_gpus = json_extract(record, '$.milli_gpus'), share = json_extract(record, '$.share'),"
    " class = json_extract(record, '$.class'), topology = json_extract(record, '$.topology'),"
    " start = json_extract(record, '$.start'), end_time = json_extract(record, '$.end');"
    "CREATE INDEX ledger_bill ON ledger(kind, end_time, start, seq, interval_id, job, tenant, user, gpu_type, share,"
    " class, topology, milli_gpus);"
    "CREATE INDEX ledger_by_key ON ledger(kind, tenant, gpu_type, seq);"
    "CREATE INDEX usage_open ON usage(interval_id) WHERE end_time IS NULL;"
    "CREATE TABLE prices(effective INTEGER PRIMARY KEY, currency TEXT NOT NULL, version_json TEXT NOT NULL,"
    " created INTEGER NOT NULL);"
    "CREATE TABLE bill_modes(org TEXT PRIMARY KEY, mode TEXT NOT NULL, updated INTEGER NOT NULL);",
    /* 7 -> 8: engine snapshots (issue 16, store_snapshot.c) */
    "CREATE TABLE snapshots(seq INTEGER PRIMARY KEY, created INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " parts INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE snapshot_parts(seq INTEGER NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL,"
    " PRIMARY KEY(seq, part));",
    /* 8 -> 9: the leader lease (issue 16, store_lease.c); its epoch is the
     * controller epoch, which meta "controller_epoch" held until now */
    "CREATE TABLE leader_lease(id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, url TEXT NOT NULL,"
    " epoch INTEGER NOT NULL, expires_ms INTEGER NOT NULL);"
    "INSERT INTO leader_lease(id, holder, url, epoch, expires_ms)"
    " SELECT 1, '', '', coalesce((SELECT value FROM meta WHERE key = 'controller_epoch'), 0), 0;"
    "DELETE FROM meta WHERE key = 'controller_epoch';",
};

static const char *const STATEMENTS[GP__ST_COUNT] = {
    [GP__ST_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [GP__ST_META_SET] = "INSERT INTO meta(key, value) VALUES(?1, ?2)"
                        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [GP__ST_EVENT_APPEND] = "INSERT INTO events(time, kind, payload, version, decisions, digest)"
                            " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [GP__ST_JOB_INSERT] = "INSERT INTO jobs(id, tenant, user, name, state, class, reason, submit_time,"
                          " bind_time, end_time, updated, spec_json, placement_json)"
                          " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [GP__ST_JOB_SCOPE] = "INSERT INTO job_scope(prefix, job_id) VALUES(?1, ?2)",
    [GP__ST_JOB_UPDATE] = "UPDATE jobs SET state = ?2, class = ?3, reason = ?4, bind_time = ?5,"
                          " end_time = ?6, updated = ?7, placement_json = ?8 WHERE id = ?1",
    [GP__ST_HISTORY_ADD] = "INSERT INTO job_history(job_id, time, kind, from_state, to_state, reason)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [GP__ST_RUN_ADD] = "INSERT OR REPLACE INTO job_runs(job_id, bind_time, replica, node) VALUES(?1, ?2, ?3, ?4)",
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
    [GP__ST_LEDGER_APPEND] = "INSERT INTO ledger(seq, interval_id, kind, record, hash, job, tenant, user, gpu_type,"
                             " milli_gpus, share, class, topology, start, end_time)"
                             " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [GP__ST_LEDGER_LAST] = "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1",
    [GP__ST_LEDGER_OPEN_GET] = "SELECT record FROM ledger WHERE interval_id = ?1 AND kind = 'open'"
                               " ORDER BY seq DESC LIMIT 1",
    [GP__ST_JOB_USER] = "SELECT user FROM jobs WHERE id = ?1",
    [GP__ST_USE_OPEN] = "INSERT INTO job_use(job_id, tenant, gpu_type, milli_per_gpu) VALUES(?1, ?2, ?3, ?4)"
                        " ON CONFLICT(job_id) DO UPDATE SET tenant = excluded.tenant, gpu_type = excluded.gpu_type,"
                        " milli_per_gpu = excluded.milli_per_gpu",
    [GP__ST_USE_LOST] = "UPDATE job_use SET lost_gpu_s = lost_gpu_s + ?2 WHERE job_id = ?1",
    [GP__ST_USE_SAMPLE] = "UPDATE job_use SET busy_gpu_s = ?2, peak_sm = ?3, peak_memory_mib = ?4,"
                          " below_since = ?5, updated = ?6 WHERE job_id = ?1",
};

/* ---- helpers shared by the backend's files ---- */

gp_err gp__store_fail(gp_store *s, const char *what, gp_error *err)
{
    int code = sqlite3_errcode(s->db);
    gp_err rc = GP_ERR_INVALID;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        rc = GP_ERR_CONFLICT;
    else if (code == SQLITE_NOMEM)
        rc = GP_ERR_NOMEM;
    return gp_error_set(err, rc, "store", "%s: %s", what, sqlite3_errmsg(s->db));
}

sqlite3_stmt *gp__store_stmt(gp_store *s, gp__stmt_id id, gp_error *err)
{
    if (!s->stmt[id] && sqlite3_prepare_v3(s->db, STATEMENTS[id], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[id],
                                           NULL) != SQLITE_OK) {
        gp__store_fail(s, "prepare", err);
        return NULL;
    }
    return s->stmt[id];
}

gp_err gp__store_exec_stmt(gp_store *s, sqlite3_stmt *st, const char *what, gp_error *err)
{
    if (s->fence_epoch && !s->in_tx) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return gp_error_set(err, GP_ERR_CONFLICT, "lease", "%s: a fenced connection writes only in a transaction",
                            what);
    }
    int rc = sqlite3_step(st);
    gp_err out = GP_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = gp__store_fail(s, what, err);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

void gp__store_bind_text(sqlite3_stmt *st, int index, const char *text)
{
    if (text)
        sqlite3_bind_text(st, index, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, index);
}

json_t *gp__store_row_json(sqlite3_stmt *st)
{
    json_t *row = json_object();
    int n = sqlite3_column_count(st);
    for (int i = 0; i < n; i++) {
        const char *name = sqlite3_column_name(st, i);
        size_t len = strlen(name);
        json_t *v;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER: v = json_integer(sqlite3_column_int64(st, i)); break;
        case SQLITE_FLOAT: v = json_real(sqlite3_column_double(st, i)); break;
        case SQLITE_NULL: v = json_null(); break;
        default: {
            const char *text = (const char *)sqlite3_column_text(st, i);
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

static gp_err exec_sql(gp_store *s, const char *sql, gp_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        gp_err rc = gp_error_set(err, GP_ERR_INVALID, "store", "%s", msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return rc;
    }
    return GP_OK;
}

/* ---- open, schema ---- */

static int user_version(gp_store *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

static gp_err migrate(gp_store *s, gp_error *err)
{
    int have = user_version(s);
    int want = (int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]);
    if (have < 0)
        return gp__store_fail(s, "read schema version", err);
    if (have > want)
        return gp_error_set(err, GP_ERR_CONFLICT, "store",
                            "store schema version %d is newer than this gpupoold (%d)", have, want);
    if (have == want)
        return GP_OK;
    gp_err rc = exec_sql(s, "BEGIN IMMEDIATE", err);
    for (int v = have; rc == GP_OK && v < want; v++)
        rc = exec_sql(s, MIGRATIONS[v], err);
    if (rc == GP_OK) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", want);
        rc = exec_sql(s, sql, err);
    }
    if (rc == GP_OK)
        rc = exec_sql(s, "COMMIT", err);
    else
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

gp_err gp_store_open(const char *url, bool readonly, gp_store **out, gp_error *err)
{
    *out = NULL;
    if (!url || strncmp(url, "sqlite:", 7) != 0 || url[7] == '\0')
        return gp_error_set(err, GP_ERR_INVALID, "store", "store must be sqlite:PATH, got %s", url ? url : "(null)");
    gp_store *s = calloc(1, sizeof *s);
    if (!s)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    s->readonly = readonly;
    gp_err rc = gp_db_open(url, readonly, &s->conn, err);
    if (rc != GP_OK) {
        free(s);
        return rc;
    }
    s->db = gp__db_sqlite_handle(s->conn);
    if (!readonly) {
        rc = migrate(s, err);
    } else if (user_version(s) < 1 || user_version(s) > GP_STORE_SCHEMA_VERSION) {
        rc = gp_error_set(err, GP_ERR_CONFLICT, "store", "store %s has schema version %d, this build reads 1..%d",
                          url + 7, user_version(s), GP_STORE_SCHEMA_VERSION);
    }
    s->schema = user_version(s);
    if (rc != GP_OK) {
        gp_store_close(s);
        return rc;
    }
    *out = s;
    return GP_OK;
}

void gp_store_close(gp_store *s)
{
    if (!s)
        return;
    for (int i = 0; i < GP__ST_COUNT; i++)
        sqlite3_finalize(s->stmt[i]);
    gp_db_close(s->conn);
    free(s);
}

gp_err gp_store_checkpoint(gp_store *s, gp_error *err)
{
    return gp_db_checkpoint(s->conn, err);
}

gp_err gp_store_begin(gp_store *s, gp_error *err)
{
    gp_err rc = exec_sql(s, s->readonly ? "BEGIN" : "BEGIN IMMEDIATE", err);
    s->in_tx = rc == GP_OK;
    if (rc == GP_OK && s->fence_epoch) {
        rc = gp__store_fence_check(s, err);
        if (rc != GP_OK)
            gp_store_rollback(s);
    }
    return rc;
}

gp_err gp_store_commit(gp_store *s, gp_error *err)
{
    gp_err rc = exec_sql(s, "COMMIT", err);
    if (rc != GP_OK)
        gp_store_rollback(s);
    s->in_tx = false;
    return rc;
}

void gp_store_rollback(gp_store *s)
{
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_tx = false;
    s->audit.loaded = false; /* the cached chain heads may be gone */
    s->ledger.loaded = false;
}

/* ---- meta ---- */

int64_t gp_store_meta_get(gp_store *s, const char *key, int64_t fallback)
{
    sqlite3_stmt *st = gp__store_stmt(s, GP__ST_META_GET, NULL);
    if (!st)
        return fallback;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int64_t v = fallback;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return v;
}

gp_err gp_store_meta_set(gp_store *s, const char *key, int64_t value, gp_error *err)
{
    sqlite3_stmt *st = gp__store_stmt(s, GP__ST_META_SET, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, value);
    return gp__store_exec_stmt(s, st, "meta set", err);
}

/* ---- event log ---- */

gp_err gp_store_event_append(gp_store *s, const gp_store_event *ev, gp_error *err)
{
    sqlite3_stmt *st = gp__store_stmt(s, GP__ST_EVENT_APPEND, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    sqlite3_bind_int64(st, 1, ev->time);
    sqlite3_bind_text(st, 2, ev->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, ev->payload, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, ev->version);
    if (ev->decisions >= 0)
        sqlite3_bind_int64(st, 5, ev->decisions);
    else
        sqlite3_bind_null(st, 5);
    gp__store_bind_text(st, 6, ev->digest);
    return gp__store_exec_stmt(s, st, "event append", err);
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
    sqlite3_stmt *st;
    int64_t seq = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT max(seq) FROM events", -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        seq = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return seq;
}

gp_err gp_store_events_scan(gp_store *s, gp_store_event_fn fn, void *ctx, gp_error *err)
{
    return gp_store_events_scan_after(s, 0, fn, ctx, err);
}

gp_err gp_store_events_scan_after(gp_store *s, int64_t after, gp_store_event_fn fn, void *ctx, gp_error *err)
{
    sqlite3_stmt *st;
    char sql[256];
    events_select(s, "", "WHERE seq > ?1 ORDER BY seq", sql, sizeof sql);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "events scan", err);
    sqlite3_bind_int64(st, 1, after);
    gp_err rc = GP_OK;
    int step;
    while (rc == GP_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        gp_store_event ev = {
            .seq = sqlite3_column_int64(st, 0),
            .time = sqlite3_column_int64(st, 1),
            .kind = (const char *)sqlite3_column_text(st, 2),
            .payload = (const char *)sqlite3_column_text(st, 3),
            .version = sqlite3_column_int(st, 4),
            .decisions = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5),
            .digest = (const char *)sqlite3_column_text(st, 6),
        };
        rc = fn(ctx, &ev, err);
    }
    if (rc == GP_OK && step != SQLITE_DONE)
        rc = gp__store_fail(s, "events scan", err);
    sqlite3_finalize(st);
    return rc;
}

gp_err gp_store_events_list(gp_store *s, int64_t after, int limit, json_t **out, gp_error *err)
{
    sqlite3_stmt *st;
    char sql[256];
    *out = NULL;
    /* the payload is embedded as JSON (store.h: a column named x_json) */
    events_select(s, " AS payload_json", "WHERE seq > ?1 ORDER BY seq LIMIT ?2", sql, sizeof sql);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "events list", err);
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int(st, 2, limit);
    json_t *events = json_array();
    int64_t last = 0;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_array_append_new(events, gp__store_row_json(st));
        last = sqlite3_column_int64(st, 0);
        n++;
    }
    sqlite3_finalize(st);
    *out = json_pack("{s:o, s:o}", "events", events, "next", n == limit ? json_integer(last) : json_null());
    return GP_OK;
}

/* ---- tenants ---- */

gp_err gp_store_tenant_put(gp_store *s, const char *path, const char *spec_json, int64_t time, gp_error *err)
{
    sqlite3_stmt *st = gp__store_stmt(s, GP__ST_TENANT_PUT, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, spec_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, time);
    return gp__store_exec_stmt(s, st, "tenant put", err);
}

gp_err gp_store_tenant_delete(gp_store *s, const char *path, gp_error *err)
{
    sqlite3_stmt *st = gp__store_stmt(s, GP__ST_TENANT_DELETE, err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    return gp__store_exec_stmt(s, st, "tenant delete", err);
}

gp_err gp_store_tenants_get(gp_store *s, json_t **out, gp_error *err)
{
    sqlite3_stmt *st;
    *out = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT path, spec_json FROM tenants ORDER BY path", -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "tenants", err);
    json_t *all = json_object();
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *spec = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
        json_object_set_new(all, (const char *)sqlite3_column_text(st, 0), spec ? spec : json_null());
    }
    sqlite3_finalize(st);
    *out = all;
    return GP_OK;
}

/* ---- tokens ---- */

gp_err gp_store_token_insert(gp_store *s, const gp_store_token *t, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO tokens(id, hash, name, role, scope, user, created, created_by, revoked,"
                           " expires, last_used) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, ?9, NULL)",
                           -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "token insert", err);
    sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, t->hash_hex, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, t->role, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, t->scope, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, t->user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, t->created);
    sqlite3_bind_text(st, 8, t->created_by, -1, SQLITE_STATIC);
    if (t->expires >= 0)
        sqlite3_bind_int64(st, 9, t->expires);
    else
        sqlite3_bind_null(st, 9);
    gp_err rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : gp__store_fail(s, "token insert", err);
    sqlite3_finalize(st);
    return rc;
}

gp_err gp_store_token_revoke(gp_store *s, const char *id, int64_t time, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "UPDATE tokens SET revoked = ?2 WHERE id = ?1 AND revoked IS NULL", -1, &st,
                           NULL) != SQLITE_OK)
        return gp__store_fail(s, "token revoke", err);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, time);
    gp_err rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : gp__store_fail(s, "token revoke", err);
    if (rc == GP_OK && sqlite3_changes(s->db) == 0)
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no live token %s", id);
    sqlite3_finalize(st);
    return rc;
}

gp_err gp_store_token_touch(gp_store *s, const char *id, int64_t time, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE tokens SET last_used = ?2 WHERE id = ?1 AND (last_used IS NULL OR last_used < ?2)",
                           -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "token last use", err);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, time);
    gp_err rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : gp__store_fail(s, "token last use", err);
    sqlite3_finalize(st);
    return rc;
}

static int64_t column_or_none(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

gp_err gp_store_tokens_scan(gp_store *s, gp_store_token_fn fn, void *ctx, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, hash, name, role, scope, user, created, created_by, revoked, expires,"
                           " last_used FROM tokens ORDER BY created, id",
                           -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "tokens scan", err);
    gp_err rc = GP_OK;
    while (rc == GP_OK && sqlite3_step(st) == SQLITE_ROW) {
        gp_store_token t = {
            .id = (const char *)sqlite3_column_text(st, 0),
            .hash_hex = (const char *)sqlite3_column_text(st, 1),
            .name = (const char *)sqlite3_column_text(st, 2),
            .role = (const char *)sqlite3_column_text(st, 3),
            .scope = (const char *)sqlite3_column_text(st, 4),
            .user = (const char *)sqlite3_column_text(st, 5),
            .created = sqlite3_column_int64(st, 6),
            .created_by = (const char *)sqlite3_column_text(st, 7),
            .revoked = column_or_none(st, 8),
            .expires = column_or_none(st, 9),
            .last_used = column_or_none(st, 10),
        };
        rc = fn(ctx, &t, err);
    }
    sqlite3_finalize(st);
    return rc;
}
