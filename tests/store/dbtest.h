/* dbtest.h - the store tests' shortcuts over db.h: each call must succeed,
 * else the cmocka case fails with the database's message.
 *
 * Ownership: dbtest_open's connection and dbtest_prepare's statement are
 * the caller's (gp_db_close, gp_db_finalize).
 */
#ifndef GP_TESTS_STORE_DBTEST_H
#define GP_TESTS_STORE_DBTEST_H

#include "store/db.h"

gp_db *dbtest_open(const char *url, bool readonly);
void dbtest_exec(gp_db *db, const char *sql);
gp_db_stmt *dbtest_prepare(gp_db *db, const char *sql, unsigned flags);
/* The first column of sql's first row as an integer; p1, p2 are bound as
 * text to ?1, ?2 when not NULL. */
int64_t dbtest_int(gp_db *db, const char *sql, const char *p1, const char *p2);

#endif
