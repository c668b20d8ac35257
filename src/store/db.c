/* db.c - db.h's entry points: picks the driver by the URL and forwards
 * each call to the connection's table of operations (db_internal.h).
 *
 * Example: "sqlite:/tmp/s.db" -> db_sqlite.c; "postgresql://gpupool@db1,db2/
 * gpupool?target_session_attrs=read-write" and "host=db1 dbname=gpupool"
 * -> db_pg.c (libpq reads the rest).
 */
#include "store/db_internal.h"

#include <string.h>

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* A libpq connection string: a URI, or the keyword form naming a host,
 * a database or a service (libpq checks the rest when it connects). */
static bool is_postgres(const char *url)
{
    return starts_with(url, "postgres://") || starts_with(url, "postgresql://") || starts_with(url, "host=") ||
           starts_with(url, "hostaddr=") || starts_with(url, "dbname=") || starts_with(url, "service=") ||
           (strchr(url, '=') && (strstr(url, " host=") || strstr(url, " dbname=") || strstr(url, " service=")));
}

const char *gp_db_sqlite_file(const char *url)
{
    return url && starts_with(url, "sqlite:") ? url + strlen("sqlite:") : NULL;
}

gp_err gp_db_open(const char *url, bool readonly, gp_db **out, gp_error *err)
{
    *out = NULL;
    const char *file = gp_db_sqlite_file(url);
    if (file && file[0])
        return gp__db_open_sqlite(file, readonly, out, err);
    if (url && is_postgres(url))
        return gp__db_open_pg(url, readonly, out, err);
    return gp_error_set(err, GP_ERR_INVALID, "store",
                        "store must be sqlite:PATH or a PostgreSQL URL (postgresql://..., host=...), got %s",
                        url ? url : "(null)");
}

void gp_db_close(gp_db *db)
{
    if (db)
        db->ops->close(db);
}

gp_db_dialect gp_db_dialect_of(const gp_db *db) { return db->dialect; }
bool gp_db_broken(const gp_db *db) { return db->broken; }
gp_err gp_db_exec(gp_db *db, const char *sql, gp_error *err) { return db->ops->exec(db, sql, err); }
gp_err gp_db_begin(gp_db *db, bool write, gp_error *err) { return db->ops->begin(db, write, err); }
gp_err gp_db_commit_send(gp_db *db, gp_error *err)
{
    if (db->ops->commit_send)
        return db->ops->commit_send(db, err);
    db->commit_rc = db->ops->exec(db, "COMMIT", &db->commit_err);
    db->commit_sent = true;
    if (db->commit_rc != GP_OK && err)
        *err = db->commit_err;
    return db->commit_rc;
}

bool gp_db_commit_ready(gp_db *db) { return db->ops->commit_ready ? db->ops->commit_ready(db) : true; }

int gp_db_commit_fd(gp_db *db) { return db->ops->commit_fd ? db->ops->commit_fd(db) : -1; }

gp_err gp_db_commit_wait(gp_db *db, gp_error *err)
{
    if (db->ops->commit_wait)
        return db->ops->commit_wait(db, err);
    gp_err rc = db->commit_sent ? db->commit_rc : GP_OK;
    if (rc != GP_OK && err)
        *err = db->commit_err;
    db->commit_sent = false;
    return rc;
}

gp_err gp_db_commit(gp_db *db, gp_error *err)
{
    gp_err rc = gp_db_commit_send(db, err);
    gp_err waited = gp_db_commit_wait(db, err);
    return rc != GP_OK ? rc : waited;
}

void gp_db_rollback(gp_db *db)
{
    db->commit_sent = false;
    db->ops->exec(db, "ROLLBACK", NULL);
}
int64_t gp_db_changes(gp_db *db) { return db->ops->changes(db); }
gp_err gp_db_checkpoint(gp_db *db, int64_t wal_limit, gp_error *err)
{
    return db->ops->checkpoint(db, wal_limit, err);
}

gp_err gp_db_prepare(gp_db *db, const char *sql, unsigned flags, gp_db_stmt **out, gp_error *err)
{
    *out = NULL;
    return db->ops->prepare(db, sql, flags, out, err);
}

void gp_db_finalize(gp_db_stmt *st)
{
    if (st)
        st->db->ops->finalize(st);
}

void gp_db_bind_int64(gp_db_stmt *st, int i, int64_t v) { st->db->ops->bind_int64(st, i, v); }
void gp_db_bind_double(gp_db_stmt *st, int i, double v) { st->db->ops->bind_double(st, i, v); }
void gp_db_bind_text(gp_db_stmt *st, int i, const char *text) { st->db->ops->bind_text(st, i, text); }
void gp_db_bind_blob(gp_db_stmt *st, int i, const void *data, size_t len) { st->db->ops->bind_blob(st, i, data, len); }
void gp_db_bind_null(gp_db_stmt *st, int i) { st->db->ops->bind_null(st, i); }
int gp_db_step(gp_db_stmt *st, gp_error *err) { return st->db->ops->step(st, err); }
void gp_db_reset(gp_db_stmt *st) { st->db->ops->reset(st); }
int gp_db_column_count(gp_db_stmt *st) { return st->db->ops->column_count(st); }
const char *gp_db_column_name(gp_db_stmt *st, int c) { return st->db->ops->column_name(st, c); }
gp_db_type gp_db_column_type(gp_db_stmt *st, int c) { return st->db->ops->column_type(st, c); }
int64_t gp_db_column_int64(gp_db_stmt *st, int c) { return st->db->ops->column_int64(st, c); }
double gp_db_column_double(gp_db_stmt *st, int c) { return st->db->ops->column_double(st, c); }
const char *gp_db_column_text(gp_db_stmt *st, int c) { return st->db->ops->column_text(st, c); }
const void *gp_db_column_blob(gp_db_stmt *st, int c, size_t *len) { return st->db->ops->column_blob(st, c, len); }
