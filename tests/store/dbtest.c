/* dbtest.c - the store tests' shortcuts over db.h (dbtest.h). */
#include "dbtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

gp_db *dbtest_open(const char *url, bool readonly)
{
    gp_db *db = NULL;
    gp_error err = {0};
    if (gp_db_open(url, readonly, &db, &err) != GP_OK)
        fail_msg("open %s: %s", url, err.message);
    return db;
}

void dbtest_exec(gp_db *db, const char *sql)
{
    gp_error err = {0};
    if (gp_db_exec(db, sql, &err) != GP_OK)
        fail_msg("%s: %s", sql, err.message);
}

gp_db_stmt *dbtest_prepare(gp_db *db, const char *sql, unsigned flags)
{
    gp_db_stmt *st = NULL;
    gp_error err = {0};
    if (gp_db_prepare(db, sql, flags, &st, &err) != GP_OK)
        fail_msg("prepare %s: %s", sql, err.message);
    return st;
}

int64_t dbtest_int(gp_db *db, const char *sql, const char *p1, const char *p2)
{
    gp_db_stmt *st = dbtest_prepare(db, sql, 0);
    gp_error err = {0};
    if (p1)
        gp_db_bind_text(st, 1, p1);
    if (p2)
        gp_db_bind_text(st, 2, p2);
    if (gp_db_step(st, &err) != GP_DB_ROW)
        fail_msg("%s: no row %s", sql, err.message);
    int64_t v = gp_db_column_int64(st, 0);
    gp_db_finalize(st);
    return v;
}
