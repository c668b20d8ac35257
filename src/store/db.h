/* db.h - the little SQL driver the store speaks: one interface, two
 * databases (SQLite, embedded; PostgreSQL through libpq).
 *
 * The store's files write their SQL once, in the dialect both databases
 * accept, and run it through these calls:
 *
 *   placeholders    ?1, ?2, ... (numbered, each number used in order of
 *                   first appearance); the PostgreSQL driver rewrites them
 *                   to $1, $2 before preparing.
 *   portable SQL    quote the column "user" (a keyword in PostgreSQL); no
 *                   INSERT OR REPLACE/IGNORE (use ON CONFLICT ... DO ...);
 *                   no rowid or last_insert_rowid (use RETURNING); coalesce,
 *                   not ifnull; integers are 64-bit; booleans are 0/1
 *                   integers; binary data is a BLOB (bytea).
 *   dialect         gp_db_dialect() for the few statements that must differ
 *                   (schema, the clock, locking a row).
 *
 * A statement: gp_db_prepare, then bind (1-based), then gp_db_step until it
 * says done, reading columns (0-based) while it says row, then gp_db_reset
 * to use it again (it also clears the bindings), gp_db_finalize at the end.
 * On PostgreSQL a statement is executed at its first step and all its rows
 * are fetched then, unless it was prepared with GP_DB_STREAM (big scans:
 * rows arrive one at a time, and no other statement may run on the
 * connection until it is done or reset).
 *
 * Deferred writes (GP_DB_DEFER): a statement that returns no rows and
 * whose outcome the caller does not read at once (an INSERT or UPDATE
 * inside a transaction that fails as a whole if it fails).  On PostgreSQL,
 * inside a transaction, its step sends it without waiting and answers
 * GP_DB_DONE; the server's answers to all the statements queued so come
 * back in one round trip at the connection's next call that waits (a step
 * of a statement without the flag, exec, a reader's begin, commit,
 * prepare).  An
 * error of a deferred statement fails that call with the statement's
 * message, and the transaction with it: its commit fails, nothing of it is
 * kept.  gp_db_changes does not count deferred statements.  On SQLite, and
 * outside a transaction, the flag changes nothing.
 *
 * Errors: a failing call fills err with field "store" and returns
 *   GP_ERR_CONFLICT  busy, locked, a serialization failure or deadlock:
 *                    the transaction may be retried;
 *   GP_ERR_NOMEM     out of memory;
 *   GP_ERR_INVALID   anything else (bad SQL, a constraint, the connection
 *                    lost: see gp_db_broken).
 * except that a connection that cannot be opened or is lost (PostgreSQL)
 * fills field GP_DB_CONNECTION_FIELD ("store_connection") instead: the
 * database is away, not the request wrong, and trying again later helps;
 * and that SQLSTATE GP_DB_PG_LEASE_SQLSTATE, which the store's lease
 * fence raises on the server (store_lease.c), is GP_ERR_CONFLICT with
 * field "lease".
 *
 * Threads: a gp_db is one connection, used by one thread at a time.
 *
 * Ownership: gp_db_open allocates, gp_db_close frees (finalize its
 * statements first).  Text and blobs bound are not copied: they must stay
 * valid until the statement's next gp_db_step returns.  Column names, text
 * and blobs are owned by the statement and valid until its next step or
 * reset.
 */
#ifndef GP_STORE_DB_H
#define GP_STORE_DB_H

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_db gp_db;
typedef struct gp_db_stmt gp_db_stmt;

typedef enum gp_db_dialect { GP_DB_SQLITE, GP_DB_POSTGRES } gp_db_dialect;
typedef enum gp_db_type { GP_DB_NULL, GP_DB_INT, GP_DB_REAL, GP_DB_TEXT, GP_DB_BLOB } gp_db_type;

/* gp_db_step's answers. */
#define GP_DB_ROW 1
#define GP_DB_DONE 0
#define GP_DB_ERROR (-1)

/* The SQLSTATE of a fenced transaction whose lease moved (PostgreSQL). */
#define GP_DB_PG_LEASE_SQLSTATE "GPL01"

/* err->field of a connection that cannot be opened or was lost. */
#define GP_DB_CONNECTION_FIELD "store_connection"

/* gp_db_prepare's flags. */
#define GP_DB_STREAM 1u
#define GP_DB_DEFER 2u

/* url: "sqlite:PATH" (readonly: open an existing file read-only; else
 * create it when missing, in WAL mode with synchronous=FULL) or a libpq connection string: "postgres://...",
 * "postgresql://..." or "host=... dbname=..." (keyword form; multi-host
 * and target_session_attrs as libpq takes them).  Opens the connection
 * only: the schema is the store's business. */
gp_err gp_db_open(const char *url, bool readonly, gp_db **out, gp_error *err);
/* The PATH of "sqlite:PATH", pointing into url (empty for "sqlite:");
 * NULL for any other url (PostgreSQL).  The one place a url is read. */
const char *gp_db_sqlite_file(const char *url);
void gp_db_close(gp_db *db);
gp_db_dialect gp_db_dialect_of(const gp_db *db);
/* The connection is gone (PostgreSQL: server closed it, network); only
 * closing it and opening another helps.  Always false on SQLite. */
bool gp_db_broken(const gp_db *db);

/* Runs one or more ;-separated statements without parameters or rows
 * (schema, BEGIN, COMMIT, PRAGMA, SET). */
gp_err gp_db_exec(gp_db *db, const char *sql, gp_error *err);
/* BEGIN for a writer (SQLite: BEGIN IMMEDIATE, taking the write lock
 * now; PostgreSQL: sent in the pipeline, not waited for, so a failed BEGIN
 * fails the next call that waits) or a reader (plain BEGIN), COMMIT,
 * ROLLBACK (never fails; it also forgets a commit sent and not waited
 * for). */
gp_err gp_db_begin(gp_db *db, bool write, gp_error *err);
gp_err gp_db_commit(gp_db *db, gp_error *err);
void gp_db_rollback(gp_db *db);
/* A commit that does not wait: gp_db_commit_send ends the transaction
 * and sends its COMMIT (PostgreSQL: behind the deferred statements still
 * queued, in the pipeline, and returns at once; SQLite: commits now and
 * keeps the outcome); gp_db_commit_wait returns that outcome, as
 * gp_db_commit would have (GP_OK when no commit was sent).  In between,
 * the connection may begin the next write transaction and queue deferred
 * statements in it, so the next batch's work overlaps the commit's fsync;
 * a call that waits for the server reads the commit's answer first and
 * keeps it for gp_db_commit_wait.  The next transaction must not commit
 * before gp_db_commit_wait said GP_OK: a failed commit leaves the
 * connection in a failed transaction (every statement behind it fails,
 * with the commit's error) until gp_db_rollback.  gp_db_commit_ready:
 * whether the outcome has arrived, without blocking (always true on
 * SQLite, and when nothing was sent).  gp_db_commit = send, then wait.
 *
 * Example (PostgreSQL): BEGIN, INSERT (deferred), commit_send: the
 * INSERT's Sync, then "COMMIT" and a Sync go out together; BEGIN and
 * three deferred INSERTs of the next batch follow on the wire while the
 * server fsyncs; commit_ready says true once the COMMIT's answer came
 * back; commit_wait returns GP_OK; the next batch's commit_send. */
gp_err gp_db_commit_send(gp_db *db, gp_error *err);
bool gp_db_commit_ready(gp_db *db);
/* A descriptor to poll for reading while gp_db_commit_ready says false:
 * it turns readable when more of the answer arrives (PostgreSQL: the
 * connection's socket); -1 when nothing is in flight, and on SQLite. */
int gp_db_commit_fd(gp_db *db);
gp_err gp_db_commit_wait(gp_db *db, gp_error *err);
/* SQLite: a passive WAL checkpoint (never blocks the writer or readers;
 * the writer does not checkpoint by itself); then, when the WAL file is
 * larger than wal_limit bytes, a TRUNCATE checkpoint that waits at most
 * GP_DB_TRUNCATE_WAIT_MS for the writer and the readers (so it stalls a
 * commit that long at worst) and empties the file; one they do not allow
 * in time is left for the next call (not an error).  PostgreSQL: nothing
 * to do. */
gp_err gp_db_checkpoint(gp_db *db, int64_t wal_limit, gp_error *err);
#define GP_DB_TRUNCATE_WAIT_MS 100
/* Rows the last INSERT, UPDATE or DELETE stepped on this connection
 * changed (not counting GP_DB_DEFER statements). */
int64_t gp_db_changes(gp_db *db);

gp_err gp_db_prepare(gp_db *db, const char *sql, unsigned flags, gp_db_stmt **out, gp_error *err);
void gp_db_finalize(gp_db_stmt *st); /* NULL is allowed */

void gp_db_bind_int64(gp_db_stmt *st, int index, int64_t v);
void gp_db_bind_double(gp_db_stmt *st, int index, double v);
/* NULL text binds SQL NULL. */
void gp_db_bind_text(gp_db_stmt *st, int index, const char *text);
void gp_db_bind_blob(gp_db_stmt *st, int index, const void *data, size_t len);
void gp_db_bind_null(gp_db_stmt *st, int index);

/* GP_DB_ROW, GP_DB_DONE or GP_DB_ERROR (err filled). */
int gp_db_step(gp_db_stmt *st, gp_error *err);
/* Ready to bind and step again; bindings cleared. */
void gp_db_reset(gp_db_stmt *st);

int gp_db_column_count(gp_db_stmt *st);
const char *gp_db_column_name(gp_db_stmt *st, int col);
gp_db_type gp_db_column_type(gp_db_stmt *st, int col);
int64_t gp_db_column_int64(gp_db_stmt *st, int col);   /* 0 for NULL */
double gp_db_column_double(gp_db_stmt *st, int col);   /* 0 for NULL */
const char *gp_db_column_text(gp_db_stmt *st, int col); /* NULL for NULL */
/* A BLOB's bytes and length (NULL and 0 for NULL or empty). */
const void *gp_db_column_blob(gp_db_stmt *st, int col, size_t *len);

#endif
