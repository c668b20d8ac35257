/* db_sqlite.c - db.h on SQLite: a thin layer over sqlite3, which already
 * speaks ?N placeholders and steps rows one at a time.
 *
 * Example: gp_db_open("sqlite:/var/lib/gpupool/store.db", false, ...)
 * opens (creating) the file read-write with a 10 s busy timeout; the
 * store then sets WAL and migrates.
 */
#include "store/db_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { BUSY_TIMEOUT_MS = 10000 };

struct gp__db_sqlite {
    gp_db base;
    sqlite3 *handle;
};

struct gp__stmt_sqlite {
    gp_db_stmt base;
    sqlite3_stmt *st;
};

static sqlite3 *handle_of(gp_db *db) { return ((struct gp__db_sqlite *)db)->handle; }
static sqlite3_stmt *st_of(gp_db_stmt *st) { return ((struct gp__stmt_sqlite *)st)->st; }

static gp_err fail(gp_db *db, const char *what, gp_error *err)
{
    sqlite3 *h = handle_of(db);
    int code = sqlite3_errcode(h);
    gp_err rc = GP_ERR_INVALID;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        rc = GP_ERR_CONFLICT;
    else if (code == SQLITE_NOMEM)
        rc = GP_ERR_NOMEM;
    return gp_error_set(err, rc, "store", "%s: %s", what, sqlite3_errmsg(h));
}

static void sq_close(gp_db *db)
{
    sqlite3_close(handle_of(db));
    free(db);
}

static gp_err sq_exec(gp_db *db, const char *sql, gp_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(handle_of(db), sql, NULL, NULL, &msg) != SQLITE_OK) {
        gp_err rc = fail(db, "exec", err);
        sqlite3_free(msg);
        return rc;
    }
    return GP_OK;
}

static gp_err sq_begin(gp_db *db, bool write, gp_error *err) { return sq_exec(db, write ? "BEGIN IMMEDIATE" : "BEGIN", err); }

static int64_t sq_changes(gp_db *db) { return sqlite3_changes64(handle_of(db)); }

/* The WAL file's size in bytes (0 when there is none). */
static int64_t wal_size(sqlite3 *h)
{
    char path[4096];
    struct stat st;
    const char *main = sqlite3_db_filename(h, "main");
    if (!main || snprintf(path, sizeof path, "%s-wal", main) >= (int)sizeof path || stat(path, &st) != 0)
        return 0;
    return (int64_t)st.st_size;
}

static gp_err sq_checkpoint(gp_db *db, int64_t wal_limit, gp_error *err)
{
    sqlite3 *h = handle_of(db);
    if (sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) != SQLITE_OK)
        return fail(db, "checkpoint", err);
    if (wal_size(h) <= wal_limit)
        return GP_OK;
    /* The busy timeout bounds the waits for the writer lock and for the
     * readers; SQLITE_BUSY means they did not allow it this time. */
    sqlite3_busy_timeout(h, GP_DB_TRUNCATE_WAIT_MS);
    int rc = sqlite3_wal_checkpoint_v2(h, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(h, BUSY_TIMEOUT_MS);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        return fail(db, "checkpoint", err);
    return GP_OK;
}

static gp_err sq_prepare(gp_db *db, const char *sql, unsigned flags, gp_db_stmt **out, gp_error *err)
{
    (void)flags; /* SQLite always steps one row at a time */
    struct gp__stmt_sqlite *st = calloc(1, sizeof *st);
    if (!st)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    if (sqlite3_prepare_v3(handle_of(db), sql, -1, SQLITE_PREPARE_PERSISTENT, &st->st, NULL) != SQLITE_OK) {
        free(st);
        return fail(db, "prepare", err);
    }
    st->base.db = db;
    *out = &st->base;
    return GP_OK;
}

static void sq_finalize(gp_db_stmt *st)
{
    sqlite3_finalize(st_of(st));
    free(st);
}

static void sq_bind_int64(gp_db_stmt *st, int i, int64_t v) { sqlite3_bind_int64(st_of(st), i, v); }
static void sq_bind_double(gp_db_stmt *st, int i, double v) { sqlite3_bind_double(st_of(st), i, v); }
static void sq_bind_null(gp_db_stmt *st, int i) { sqlite3_bind_null(st_of(st), i); }

static void sq_bind_text(gp_db_stmt *st, int i, const char *text)
{
    if (text)
        sqlite3_bind_text(st_of(st), i, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st_of(st), i);
}

static void sq_bind_blob(gp_db_stmt *st, int i, const void *data, size_t len)
{
    sqlite3_bind_blob64(st_of(st), i, data ? data : "", len, SQLITE_STATIC);
}

static int sq_step(gp_db_stmt *st, gp_error *err)
{
    int rc = sqlite3_step(st_of(st));
    if (rc == SQLITE_ROW)
        return GP_DB_ROW;
    if (rc == SQLITE_DONE)
        return GP_DB_DONE;
    fail(st->db, "step", err);
    return GP_DB_ERROR;
}

static void sq_reset(gp_db_stmt *st)
{
    sqlite3_reset(st_of(st));
    sqlite3_clear_bindings(st_of(st));
}

static int sq_column_count(gp_db_stmt *st) { return sqlite3_column_count(st_of(st)); }
static const char *sq_column_name(gp_db_stmt *st, int c) { return sqlite3_column_name(st_of(st), c); }

static gp_db_type sq_column_type(gp_db_stmt *st, int c)
{
    switch (sqlite3_column_type(st_of(st), c)) {
    case SQLITE_INTEGER: return GP_DB_INT;
    case SQLITE_FLOAT: return GP_DB_REAL;
    case SQLITE_NULL: return GP_DB_NULL;
    case SQLITE_BLOB: return GP_DB_BLOB;
    default: return GP_DB_TEXT;
    }
}

static int64_t sq_column_int64(gp_db_stmt *st, int c) { return sqlite3_column_int64(st_of(st), c); }
static double sq_column_double(gp_db_stmt *st, int c) { return sqlite3_column_double(st_of(st), c); }
static const char *sq_column_text(gp_db_stmt *st, int c) { return (const char *)sqlite3_column_text(st_of(st), c); }

static const void *sq_column_blob(gp_db_stmt *st, int c, size_t *len)
{
    const void *p = sqlite3_column_blob(st_of(st), c);
    *len = p ? (size_t)sqlite3_column_bytes(st_of(st), c) : 0;
    return p;
}

static const gp__db_ops SQLITE_OPS = {
    .close = sq_close,
    .exec = sq_exec,
    .begin = sq_begin,
    .changes = sq_changes,
    .checkpoint = sq_checkpoint,
    .prepare = sq_prepare,
    .finalize = sq_finalize,
    .bind_int64 = sq_bind_int64,
    .bind_double = sq_bind_double,
    .bind_text = sq_bind_text,
    .bind_blob = sq_bind_blob,
    .bind_null = sq_bind_null,
    .step = sq_step,
    .reset = sq_reset,
    .column_count = sq_column_count,
    .column_name = sq_column_name,
    .column_type = sq_column_type,
    .column_int64 = sq_column_int64,
    .column_double = sq_column_double,
    .column_text = sq_column_text,
    .column_blob = sq_column_blob,
};

gp_err gp__db_open_sqlite(const char *path, bool readonly, gp_db **out, gp_error *err)
{
    struct gp__db_sqlite *db = calloc(1, sizeof *db);
    if (!db)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &db->handle, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        gp_err rc = gp_error_set(err, GP_ERR_INVALID, "store", "cannot open %s: %s", path,
                                 db->handle ? sqlite3_errmsg(db->handle) : "out of memory");
        sqlite3_close(db->handle);
        free(db);
        return rc;
    }
    sqlite3_busy_timeout(db->handle, BUSY_TIMEOUT_MS);
    db->base.ops = &SQLITE_OPS;
    db->base.dialect = GP_DB_SQLITE;
    if (!readonly) {
        sqlite3_wal_autocheckpoint(db->handle, 0); /* gp_db_checkpoint does it, off the commit path */
        gp_err rc = sq_exec(&db->base, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", err);
        if (rc != GP_OK) {
            sq_close(&db->base);
            return rc;
        }
    }
    *out = &db->base;
    return GP_OK;
}
