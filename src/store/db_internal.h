/* db_internal.h - private to the drivers behind db.h: the table of
 * operations each database fills in, and the base structs a driver's own
 * connection and statement structs begin with.  Nothing outside the
 * driver files (db.c, db_sqlite.c, db_pg.c) includes this.
 */
#ifndef GP_STORE_DB_INTERNAL_H
#define GP_STORE_DB_INTERNAL_H

#include "store/db.h"

typedef struct gp__db_ops {
    void (*close)(gp_db *db);
    gp_err (*exec)(gp_db *db, const char *sql, gp_error *err);
    gp_err (*begin)(gp_db *db, bool write, gp_error *err);
    /* NULL: db.c commits at send and keeps the outcome (SQLite) */
    gp_err (*commit_send)(gp_db *db, gp_error *err);
    bool (*commit_ready)(gp_db *db);
    int (*commit_fd)(gp_db *db);
    gp_err (*commit_wait)(gp_db *db, gp_error *err);
    int64_t (*changes)(gp_db *db);
    gp_err (*checkpoint)(gp_db *db, int64_t wal_limit, gp_error *err);
    gp_err (*prepare)(gp_db *db, const char *sql, unsigned flags, gp_db_stmt **out, gp_error *err);
    void (*finalize)(gp_db_stmt *st);
    void (*bind_int64)(gp_db_stmt *st, int index, int64_t v);
    void (*bind_double)(gp_db_stmt *st, int index, double v);
    void (*bind_text)(gp_db_stmt *st, int index, const char *text);
    void (*bind_blob)(gp_db_stmt *st, int index, const void *data, size_t len);
    void (*bind_null)(gp_db_stmt *st, int index);
    int (*step)(gp_db_stmt *st, gp_error *err);
    void (*reset)(gp_db_stmt *st);
    int (*column_count)(gp_db_stmt *st);
    const char *(*column_name)(gp_db_stmt *st, int col);
    gp_db_type (*column_type)(gp_db_stmt *st, int col);
    int64_t (*column_int64)(gp_db_stmt *st, int col);
    double (*column_double)(gp_db_stmt *st, int col);
    const char *(*column_text)(gp_db_stmt *st, int col);
    const void *(*column_blob)(gp_db_stmt *st, int col, size_t *len);
} gp__db_ops;

/* The first member of every driver's connection struct. */
struct gp_db {
    const gp__db_ops *ops;
    gp_db_dialect dialect;
    bool broken; /* PostgreSQL: the connection is gone */
    /* db.c's commit_send without a driver's own: the outcome kept */
    bool commit_sent;
    gp_err commit_rc;
    gp_error commit_err;
};

/* The first member of every driver's statement struct. */
struct gp_db_stmt {
    gp_db *db;
};

/* The drivers' constructors (db.c picks one by the URL). */
gp_err gp__db_open_sqlite(const char *path, bool readonly, gp_db **out, gp_error *err);
/* conninfo: a libpq URI or keyword string, passed to libpq as it is. */
gp_err gp__db_open_pg(const char *conninfo, bool readonly, gp_db **out, gp_error *err);

#endif
