/* store_schema.c - the store's schema: its tables, their versions and the
 * migrations between them, opened by gp__schema_open for either database.
 *
 * On-disk format (schema version 10, PRAGMA user_version):
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
 *          expires, last_used, single_use)   expires NULL = never;
 *                                last_used NULL = never used, else best
 *                                effort (auth.h); scope: a tenant path
 *                                (tenant-admin, member), the node's name
 *                                (node), the node-name patterns a join
 *                                token registers ("h100-*,a100-?");
 *                                single_use 1: a join token spent by its
 *                                first registration
 *   node_approvals(node, state, time, actor)
 *                                state "awaiting": a node registered under
 *                                --approve-nodes, cordoned until approved;
 *                                "approved": an admin let the next join-token
 *                                registration of that existing node in
 *                                (store_nodes.c)
 *   secrets(tenant, name, sealed, bytes, set_by, updated)
 *                                a tenant's secrets, AES-256-GCM sealed by
 *                                gpupoold's key (server/secret_box.h):
 *                                sealed = base64(nonce || ciphertext || tag)
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
 *   user_tenants(name, tenant, bound, bound_by)
 *                                the tenant each job user is bound to
 *                                (store_users.c)
 *   gpu_types(name, declared, declared_by)
 *                                GPU types declared before their nodes
 *                                arrive (store_gpu_types.c)
 *   rolebindings(id, kind, subject, role, scope, created, created_by)
 *                                OIDC users' and groups' roles and scopes
 *                                (store_rolebindings.c)
 *
 * Migrations (SQLite): MIGRATIONS[i] takes user_version i to i + 1; a
 * writer opening an older file runs the missing ones in one transaction.
 * A reader never migrates: it reads what the file's schema has (events of
 * schema 1 have version 1 and no decisions).  gp__schema_open dispatches
 * on the database's dialect; another database brings its own DDL and
 * migrations of the same tables.
 */
#include "store/store_internal.h"
#include "store/store_schema_pg.h"

#include <stdio.h>

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
    /* 9 -> 10 (issue 29): each job user's tenant (store_users.c), bound
     * to the scope of its oldest live scoped token (GP__BIND_TOKEN_USERS);
     * nodes that are who they say, and job secrets: a join token spent by
     * its first registration, nodes awaiting or granted an admin's
     * approval (store_nodes.c), tenants' secrets sealed by gpupoold
     * (store_secrets.c) */
    "CREATE TABLE user_tenants(name TEXT PRIMARY KEY, tenant TEXT NOT NULL, bound INTEGER NOT NULL,"
    " bound_by TEXT NOT NULL);" GP__BIND_TOKEN_USERS
    "ALTER TABLE tokens ADD COLUMN single_use INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE node_approvals(node TEXT PRIMARY KEY, state TEXT NOT NULL, time INTEGER NOT NULL,"
    " actor TEXT NOT NULL);"
    "CREATE TABLE secrets(tenant TEXT NOT NULL, name TEXT NOT NULL, sealed TEXT NOT NULL, bytes INTEGER NOT NULL,"
    " set_by TEXT NOT NULL, updated INTEGER NOT NULL, PRIMARY KEY(tenant, name)) WITHOUT ROWID;",
    /* 10 -> 11 (issue 32): GPU types an admin declared before their nodes
     * arrive (store_gpu_types.c) */
    "CREATE TABLE gpu_types(name TEXT PRIMARY KEY, declared INTEGER NOT NULL, declared_by TEXT NOT NULL);",
    /* 11 -> 12 (issue 33): who signed in through OIDC holds which role
     * where (store_rolebindings.c) */
    "CREATE TABLE rolebindings(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, subject TEXT NOT NULL,"
    " role TEXT NOT NULL, scope TEXT NOT NULL, created INTEGER NOT NULL, created_by TEXT NOT NULL,"
    " UNIQUE(kind, subject, role, scope));",
};

static int user_version(gp_db *db)
{
    gp_db_stmt *st;
    int v = -1;
    if (gp_db_prepare(db, "PRAGMA user_version", 0, &st, NULL) == GP_OK) {
        if (gp_db_step(st, NULL) == GP_DB_ROW)
            v = (int)gp_db_column_int64(st, 0);
        gp_db_finalize(st);
    }
    return v;
}

static gp_err migrate(gp_db *db, int have, gp_error *err)
{
    int want = (int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]);
    if (have > want)
        return gp_error_set(err, GP_ERR_CONFLICT, "store",
                            "store schema version %d is newer than this gpupoold (%d)", have, want);
    if (have == want)
        return GP_OK;
    gp_err rc = gp_db_begin(db, true, err);
    for (int v = have; rc == GP_OK && v < want; v++)
        rc = gp_db_exec(db, MIGRATIONS[v], err);
    if (rc == GP_OK) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", want);
        rc = gp_db_exec(db, sql, err);
    }
    if (rc == GP_OK)
        rc = gp_db_commit(db, err);
    else
        gp_db_rollback(db);
    return rc;
}

static gp_err schema_open_sqlite(gp_db *db, bool readonly, int *version, gp_error *err)
{
    int have = user_version(db);
    if (have < 0)
        return gp_error_set(err, GP_ERR_INVALID, "store", "cannot read the store's schema version");
    gp_err rc = GP_OK;
    if (!readonly)
        rc = migrate(db, have, err);
    else if (have < 1 || have > GP_STORE_SCHEMA_VERSION)
        rc = gp_error_set(err, GP_ERR_CONFLICT, "store", "store has schema version %d, this build reads 1..%d", have,
                          GP_STORE_SCHEMA_VERSION);
    *version = user_version(db);
    return rc;
}

gp_err gp__schema_open(gp_db *db, bool readonly, int *version, gp_error *err)
{
    *version = 0;
    switch (gp_db_dialect_of(db)) {
    case GP_DB_SQLITE:
        return schema_open_sqlite(db, readonly, version, err);
    case GP_DB_POSTGRES:
        return gp__schema_open_pg(db, readonly, version, err);
    }
    return gp_error_set(err, GP_ERR_INVALID, "store", "unknown database dialect");
}
