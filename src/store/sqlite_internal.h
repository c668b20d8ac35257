/* sqlite_internal.h - private to the SQLite backend of the store.
 *
 * The connection, its cached prepared statements, and the helpers the
 * backend's files share (error mapping, row -> JSON).  Nothing outside
 * src/store includes this.
 */
#ifndef GP_STORE_SQLITE_INTERNAL_H
#define GP_STORE_SQLITE_INTERNAL_H

#include "store/db.h"
#include "store/store.h"

#include <sqlite3.h>

/* Statements prepared once per connection and reused (reset after use). */
typedef enum gp__stmt_id {
    GP__ST_META_GET = 0,
    GP__ST_META_SET,
    GP__ST_EVENT_APPEND,
    GP__ST_JOB_INSERT,
    GP__ST_JOB_SCOPE,
    GP__ST_JOB_UPDATE,
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
    GP__ST_JOB_USER,
    GP__ST_USE_OPEN,
    GP__ST_USE_LOST,
    GP__ST_USE_SAMPLE,
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
    sqlite3 *db;  /* conn's SQLite handle, for code not yet on db.h */
    bool readonly;
    bool in_tx;
    int schema;           /* PRAGMA user_version once open (a reader may see an older one) */
    sqlite3_stmt *stmt[GP__ST_COUNT];
    gp__chain_head audit, ledger;
    int64_t fence_epoch;  /* gp_store_fence's epoch; 0 = not fenced */
};

/* The fence check of a fenced connection inside its open transaction
 * (store_lease.c): GP_ERR_CONFLICT, field "lease", when the lease row's
 * epoch is not s->fence_epoch. */
gp_err gp__store_fence_check(gp_store *s, gp_error *err);

/* The hash before the first record of a chain: 64 zeros. */
extern const char GP__ZERO_HASH[65];
/* SHA-256 of len bytes as lowercase hex (store_audit.c). */
void gp__store_sha256_hex(const void *data, size_t len, char out[65]);
/* Loads h from statement `last` (SELECT seq, hash ... ORDER BY seq DESC
 * LIMIT 1) unless loaded already: seq 0 and the zero hash when empty. */
gp_err gp__store_head_load(gp_store *s, gp__stmt_id last, gp__chain_head *h, gp_error *err);

/* Prepared statement by id (prepared on first use); NULL on error. */
sqlite3_stmt *gp__store_stmt(gp_store *s, gp__stmt_id id, gp_error *err);
/* Fills err from the connection's last error; returns GP_ERR_CONFLICT for
 * busy/locked, GP_ERR_NOMEM for out of memory, else GP_ERR_INVALID. */
gp_err gp__store_fail(gp_store *s, const char *what, gp_error *err);
/* Steps a bound statement that returns no rows, then resets it. */
gp_err gp__store_exec_stmt(gp_store *s, sqlite3_stmt *st, const char *what, gp_error *err);
/* Text or NULL. */
void gp__store_bind_text(sqlite3_stmt *st, int index, const char *text);
/* The current row as an object (see store.h for the key rules). */
json_t *gp__store_row_json(sqlite3_stmt *st);

#endif
