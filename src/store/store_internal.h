/* store_internal.h - private to the store's files (store_*.c).
 *
 * The connection (db.h, whichever database it is), its cached prepared
 * statements, the schema's entry point, and the helpers the files share
 * (running a statement, row -> JSON).  Nothing outside src/store includes
 * this.  Every statement is written in db.h's portable SQL.
 */
#ifndef GP_STORE_STORE_INTERNAL_H
#define GP_STORE_STORE_INTERNAL_H

#include "store/db.h"
#include "store/store.h"

/* Statements prepared once per connection and reused (reset after use). */
typedef enum gp__stmt_id {
    GP__ST_META_GET = 0,
    GP__ST_META_SET,
    GP__ST_EVENT_APPEND,
    GP__ST_JOB_INSERT,
    GP__ST_JOB_SCOPE,
    GP__ST_JOB_UPDATE,
    GP__ST_JOB_SPEC,
    GP__ST_HISTORY_ADD,
    GP__ST_RUN_ADD,
    GP__ST_RUN_STARTED,
    GP__ST_RUN_NODE,
    GP__ST_RUN_LIST,
    GP__ST_USAGE_OPEN,
    GP__ST_USAGE_CLOSE,
    GP__ST_TENANT_PUT,
    GP__ST_TENANT_DELETE,
    GP__ST_AUDIT_APPEND,
    GP__ST_AUDIT_LAST,
    GP__ST_LEDGER_APPEND,
    GP__ST_LEDGER_LAST,
    GP__ST_LEDGER_OPEN_GET,
    GP__ST_USE_OPEN,
    GP__ST_USE_LOST,
    GP__ST_USE_SAMPLE,
    GP__ST_LAST_SEQ,
    GP__ST_SNAPSHOT_PART,
    GP__ST_COUNT
} gp__stmt_id;

/* A hash chain's head (last seq and hash) as the writer caches it, loaded
 * lazily and forgotten on rollback: the audit chain and the ledger. */
typedef struct gp__chain_head {
    bool loaded;
    int64_t seq;
    char hash[65];
} gp__chain_head;

struct gp_store {
    gp_db *conn;  /* the connection (db.h) */
    bool readonly;
    bool in_tx;
    int schema;           /* the schema version once open (a reader may see an older one) */
    gp_db_stmt *stmt[GP__ST_COUNT];
    gp__chain_head audit, ledger;
    json_t *meta;         /* gp_store_meta_set's values in this transaction (key -> integer), written once at
                             its commit: gpupoold sets next_job_id once per submit, a batch holds dozens */
    json_t *levels;       /* gp_store_ledger_levels' rows, read once per transaction and kept up to date by its
                             appends (store_ledger.c): "kind\ttenant\ttype" -> [kind, tenant, type, milli] */
    int64_t fence_epoch;  /* gp_store_fence's epoch; 0 = not fenced */
    gp_db_stmt *fence;    /* its check (store_lease.c), prepared by gp_store_fence */
};

/* The fence of a fenced connection inside its open transaction
 * (store_lease.c), checked once per transaction where the database holds
 * the lease row against a takeover until the commit: SQLite right after
 * BEGIN IMMEDIATE (its write lock lasts to the end), PostgreSQL just
 * before COMMIT (reading the row FOR SHARE, so it is locked only for the
 * commit).  GP_ERR_CONFLICT, field "lease", when the row's epoch is not
 * s->fence_epoch: at once on SQLite; on PostgreSQL the check is queued
 * with the transaction's writes and its failure fails the commit. */
gp_err gp__store_fence_check(gp_store *s, gp_error *err);

/* Drops what a transaction keeps of its own writes (meta, levels): at
 * its commit or rollback, so the next transaction reads the tables. */
void gp__store_tx_forget(gp_store *s);

/* The hash before the first record of a chain: 64 zeros. */
extern const char GP__ZERO_HASH[65];
/* SHA-256 of len bytes as lowercase hex (store_audit.c). */
void gp__store_sha256_hex(const void *data, size_t len, char out[65]);
/* Loads h from statement `last` (SELECT seq, hash ... ORDER BY seq DESC
 * LIMIT 1) unless loaded already: seq 0 and the zero hash when empty. */
gp_err gp__store_head_load(gp_store *s, gp__stmt_id last, gp__chain_head *h, gp_error *err);

/* Opens the schema of db (store_schema.c): a writer (readonly false)
 * creates or migrates it to GP_STORE_SCHEMA_VERSION, a reader checks it is
 * one it reads (1..GP_STORE_SCHEMA_VERSION); *version: the schema version
 * found (after migrating).  A database newer than this build is refused. */
gp_err gp__schema_open(gp_db *db, bool readonly, int *version, gp_error *err);

/* Schema 10's backfill, in both dialects: a store upgraded from before
 * user bindings binds each user named by a live member or tenant-admin
 * token to the scope of the oldest such token (ties: the smaller id), as
 * if that token had been minted since (store_users.c). */
#define GP__BIND_TOKEN_USERS                                                                                          \
    "INSERT INTO user_tenants(name, tenant, bound, bound_by)"                                                       \
    " SELECT t.\"user\", t.scope, t.created, t.created_by FROM tokens t"                                              \
    " WHERE t.\"user\" <> '' AND t.scope <> '' AND t.revoked IS NULL AND t.role IN ('member', 'tenant-admin')"       \
    " AND NOT EXISTS (SELECT 1 FROM tokens o WHERE o.\"user\" = t.\"user\" AND o.scope <> '' AND o.revoked IS NULL"    \
    " AND o.role IN ('member', 'tenant-admin') AND (o.created < t.created OR (o.created = t.created AND o.id < t.id)));"

/* Prepared statement by id (prepared on first use); NULL on error. */
gp_db_stmt *gp__store_stmt(gp_store *s, gp__stmt_id id, gp_error *err);
/* A statement of its own (the caller finalizes it; flags: db.h's
 * GP_DB_STREAM for big scans); NULL on error, err naming `what`. */
gp_db_stmt *gp__store_prepare(gp_store *s, const char *sql, unsigned flags, const char *what, gp_error *err);
/* Steps a bound statement that returns no rows (or whose rows are not
 * wanted), then resets it; err names `what`. */
gp_err gp__store_exec_stmt(gp_db_stmt *st, const char *what, gp_error *err);
/* gp__store_exec_stmt, then finalizes st: a one-off statement. */
gp_err gp__store_exec_once(gp_db_stmt *st, const char *what, gp_error *err);
/* After a db.h call failed into err: prefixes its message with `what`
 * and returns its code (GP_ERR_INVALID when err is NULL). */
gp_err gp__store_failed(gp_error *err, const char *what);
/* Deletes every secret of tenant path (store_secrets.c), for tenant delete. */
gp_err gp__store_secrets_forget(gp_store *s, const char *path, gp_error *err);
/* The current row as an object (see store.h for the key rules). */
json_t *gp__store_row_json(gp_db_stmt *st);
/* Column i as an integer, -1 when NULL. */
int64_t gp__store_int_or_none(gp_db_stmt *st, int i);
/* Binds v, or NULL when v < 0. */
void gp__store_bind_int_or_null(gp_db_stmt *st, int index, int64_t v);

#endif
