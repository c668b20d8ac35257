/* test_db.c - db.h's drivers keep its promises, whichever database is under.
 *
 * Every case runs against one database: PostgreSQL when GP_TEST_PG_URL
 * names one (ctest db_postgres starts a throw-away cluster and sets it:
 * run_with_pg.py), else a temporary SQLite file (ctest db_sqlite).  The
 * cases that need a server (a serialization conflict, a backend killed
 * under the connection) are skipped on SQLite.
 *
 * Example: ?2 bound before ?1, a '?1' inside a literal left alone, a row
 * of INT64_MIN, 0.1, "it's", a blob of zero bytes read back exactly.
 */
#include "dbtest.h"
#include "store/db.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char g_url[512];

static bool on_postgres(void) { return strncmp(g_url, "sqlite:", 7) != 0; }

static void step_done(gp_db_stmt *st)
{
    gp_error err = {0};
    int rc = gp_db_step(st, &err);
    if (rc != GP_DB_DONE)
        fail_msg("step: %d %s", rc, err.message);
}

/* A fresh table t(i, r, s, b) for each case. */
static int setup(void **state)
{
    gp_db *db = dbtest_open(g_url, false);
    dbtest_exec(db, "DROP TABLE IF EXISTS t");
    dbtest_exec(db, on_postgres() ? "CREATE TABLE t(i BIGINT, r DOUBLE PRECISION, s TEXT, b BYTEA)"
                              : "CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB)");
    *state = db;
    return 0;
}

static int teardown(void **state)
{
    gp_db_close(*state);
    return 0;
}

static void placeholders_bind_by_number_and_skip_literals(void **state)
{
    gp_db *db = *state;
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(s, i) VALUES(?2, ?1)", 0);
    gp_db_bind_int64(ins, 1, 7);
    gp_db_bind_text(ins, 2, "seven");
    step_done(ins);
    gp_db_finalize(ins);

    gp_db_stmt *st = dbtest_prepare(db, "SELECT s, '?1' AS lit, \"i\" FROM t WHERE i = ?1 AND s <> '?2'", 0);
    gp_db_bind_int64(st, 1, 7);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
    assert_string_equal(gp_db_column_text(st, 0), "seven");
    assert_string_equal(gp_db_column_text(st, 1), "?1");
    assert_int_equal(gp_db_column_int64(st, 2), 7);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_DONE);
    gp_db_finalize(st);
}

static void a_reset_statement_runs_again_with_new_bindings(void **state)
{
    gp_db *db = *state;
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i) VALUES(?1)", 0);
    for (int i = 1; i <= 3; i++) {
        gp_db_bind_int64(ins, 1, i);
        step_done(ins);
        gp_db_reset(ins);
    }
    gp_db_finalize(ins);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 3);
    assert_int_equal(dbtest_int(db, "SELECT max(i) FROM t", NULL, NULL), 3);
}

static void nulls_read_back_as_null(void **state)
{
    gp_db *db = *state;
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i, r, s, b) VALUES(?1, ?2, ?3, ?4)", 0);
    gp_db_bind_null(ins, 1);
    gp_db_bind_null(ins, 2);
    gp_db_bind_text(ins, 3, NULL);
    gp_db_bind_null(ins, 4);
    step_done(ins);
    gp_db_finalize(ins);

    gp_db_stmt *st = dbtest_prepare(db, "SELECT i, r, s, b FROM t", 0);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
    for (int c = 0; c < 4; c++)
        assert_int_equal(gp_db_column_type(st, c), GP_DB_NULL);
    assert_int_equal(gp_db_column_int64(st, 0), 0);
    assert_true(gp_db_column_double(st, 1) == 0.0);
    assert_null(gp_db_column_text(st, 2));
    size_t len = 99;
    assert_null(gp_db_column_blob(st, 3, &len));
    assert_int_equal(len, 0);
    gp_db_finalize(st);
}

static void int64_extremes_round_trip(void **state)
{
    gp_db *db = *state;
    const int64_t values[] = {INT64_MIN, INT64_MAX, 0, -1, 1};
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i, s) VALUES(?1, ?2)", 0);
    for (size_t k = 0; k < 5; k++) {
        char tag[8];
        snprintf(tag, sizeof tag, "%zu", k);
        gp_db_bind_int64(ins, 1, values[k]);
        gp_db_bind_text(ins, 2, tag);
        step_done(ins);
        gp_db_reset(ins);
    }
    gp_db_finalize(ins);
    gp_db_stmt *st = dbtest_prepare(db, "SELECT i FROM t WHERE s = ?1", 0);
    for (size_t k = 0; k < 5; k++) {
        char tag[8];
        snprintf(tag, sizeof tag, "%zu", k);
        gp_db_bind_text(st, 1, tag);
        assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
        assert_int_equal(gp_db_column_type(st, 0), GP_DB_INT);
        assert_true(gp_db_column_int64(st, 0) == values[k]);
        gp_db_reset(st);
    }
    gp_db_finalize(st);
}

static void doubles_round_trip_exactly(void **state)
{
    gp_db *db = *state;
    const double values[] = {0.1, -1e300, 1.0 / 3.0, 5e-324, 123456.789};
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i, r) VALUES(?1, ?2)", 0);
    for (int k = 0; k < 5; k++) {
        gp_db_bind_int64(ins, 1, k);
        gp_db_bind_double(ins, 2, values[k]);
        step_done(ins);
        gp_db_reset(ins);
    }
    gp_db_finalize(ins);
    gp_db_stmt *st = dbtest_prepare(db, "SELECT r FROM t ORDER BY i", 0);
    for (int k = 0; k < 5; k++) {
        assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
        assert_int_equal(gp_db_column_type(st, 0), GP_DB_REAL);
        assert_true(gp_db_column_double(st, 0) == values[k]);
    }
    gp_db_finalize(st);
}

static void text_with_quotes_and_utf8_round_trips(void **state)
{
    gp_db *db = *state;
    const char *texts[] = {"it's \"quoted\"; -- not a comment ? ?1 $1", "Gr\xc3\xbc\xc3\x9f" "e, \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x9a\x80", ""};
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i, s) VALUES(?1, ?2)", 0);
    for (int k = 0; k < 3; k++) {
        gp_db_bind_int64(ins, 1, k);
        gp_db_bind_text(ins, 2, texts[k]);
        step_done(ins);
        gp_db_reset(ins);
    }
    gp_db_finalize(ins);
    gp_db_stmt *st = dbtest_prepare(db, "SELECT s FROM t ORDER BY i", 0);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
        assert_int_equal(gp_db_column_type(st, 0), GP_DB_TEXT);
        assert_string_equal(gp_db_column_text(st, 0), texts[k]);
    }
    gp_db_finalize(st);
}

static void blobs_with_zero_bytes_round_trip(void **state)
{
    gp_db *db = *state;
    unsigned char bytes[600];
    for (size_t k = 0; k < sizeof bytes; k++)
        bytes[k] = (unsigned char)(k % 3 == 0 ? 0 : k);
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i, b) VALUES(?1, ?2)", 0);
    gp_db_bind_int64(ins, 1, 1);
    gp_db_bind_blob(ins, 2, bytes, sizeof bytes);
    step_done(ins);
    gp_db_reset(ins);
    gp_db_bind_int64(ins, 1, 2);
    gp_db_bind_blob(ins, 2, NULL, 0);
    step_done(ins);
    gp_db_finalize(ins);

    gp_db_stmt *st = dbtest_prepare(db, "SELECT b, b FROM t ORDER BY i", 0);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
    assert_int_equal(gp_db_column_type(st, 0), GP_DB_BLOB);
    size_t len = 0, len2 = 0;
    const void *got = gp_db_column_blob(st, 0, &len);
    const void *again = gp_db_column_blob(st, 1, &len2);
    assert_int_equal(len, sizeof bytes);
    assert_memory_equal(got, bytes, sizeof bytes);
    assert_memory_equal(again, bytes, sizeof bytes); /* two columns' blobs valid at once */
    assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
    assert_int_equal(gp_db_column_type(st, 0), GP_DB_BLOB); /* empty, not NULL */
    assert_null(gp_db_column_blob(st, 0, &len));
    assert_int_equal(len, 0);
    gp_db_finalize(st);
}

static void column_names_and_types_follow_the_select(void **state)
{
    gp_db *db = *state;
    dbtest_exec(db, "INSERT INTO t(i, r, s) VALUES(1, 2.5, 'x')");
    gp_db_stmt *st = dbtest_prepare(db, "SELECT i AS id, r, s AS name_json, count(*) AS n FROM t GROUP BY i, r, s", 0);
    assert_int_equal(gp_db_step(st, NULL), GP_DB_ROW);
    assert_int_equal(gp_db_column_count(st), 4);
    assert_string_equal(gp_db_column_name(st, 0), "id");
    assert_string_equal(gp_db_column_name(st, 2), "name_json");
    assert_int_equal(gp_db_column_type(st, 0), GP_DB_INT);
    assert_int_equal(gp_db_column_type(st, 1), GP_DB_REAL);
    assert_int_equal(gp_db_column_type(st, 2), GP_DB_TEXT);
    assert_int_equal(gp_db_column_type(st, 3), GP_DB_INT);
    gp_db_finalize(st);
}

static void streaming_reads_100000_rows_in_order(void **state)
{
    gp_db *db = *state;
    dbtest_exec(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)"
                " INSERT INTO t(i, s) SELECT x, 'row' FROM c");
    gp_db_stmt *st = dbtest_prepare(db, "SELECT i, s FROM t WHERE i > ?1 ORDER BY i", GP_DB_STREAM);
    gp_db_bind_int64(st, 1, 0);
    int64_t n = 0, sum = 0;
    gp_error err = {0};
    int rc;
    while ((rc = gp_db_step(st, &err)) == GP_DB_ROW) {
        n++;
        if (gp_db_column_int64(st, 0) != n)
            fail_msg("row %lld out of order", (long long)n);
        sum += gp_db_column_int64(st, 0);
    }
    assert_int_equal(rc, GP_DB_DONE);
    assert_int_equal(n, 100000);
    assert_true(sum == 5000050000LL);

    /* stopped half way: reset frees the connection for the next statement */
    gp_db_reset(st);
    gp_db_bind_int64(st, 1, 50000);
    assert_int_equal(gp_db_step(st, &err), GP_DB_ROW);
    assert_int_equal(gp_db_column_int64(st, 0), 50001);
    gp_db_reset(st);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 100000);
    gp_db_finalize(st);
}

static void changes_counts_the_last_statements_rows(void **state)
{
    gp_db *db = *state;
    dbtest_exec(db, "INSERT INTO t(i) VALUES(1), (2), (3)");
    gp_db_stmt *up = dbtest_prepare(db, "UPDATE t SET s = 'big' WHERE i > ?1", 0);
    gp_db_bind_int64(up, 1, 1);
    step_done(up);
    assert_int_equal(gp_db_changes(db), 2);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 3); /* a SELECT changes nothing */
    assert_int_equal(gp_db_changes(db), 2);
    gp_db_finalize(up);
    gp_db_stmt *del = dbtest_prepare(db, "DELETE FROM t WHERE i > ?1", 0);
    gp_db_bind_int64(del, 1, 10);
    step_done(del);
    assert_int_equal(gp_db_changes(db), 0);
    gp_db_finalize(del);
}

static void a_syntax_error_says_so(void **state)
{
    gp_db *db = *state;
    gp_db_stmt *st = NULL;
    gp_error err = {0};
    assert_int_equal(gp_db_prepare(db, "SELEC i FROM t", 0, &st, &err), GP_ERR_INVALID);
    assert_null(st);
    assert_string_equal(err.field, "store");
    assert_non_null(strstr(err.message, "syntax error"));
    assert_false(gp_db_broken(db));
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 0); /* the connection still works */
}

static void a_rolled_back_transaction_leaves_nothing(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    assert_int_equal(gp_db_begin(db, true, &err), GP_OK);
    dbtest_exec(db, "INSERT INTO t(i) VALUES(1)");
    gp_db_rollback(db);
    assert_int_equal(gp_db_begin(db, true, &err), GP_OK);
    dbtest_exec(db, "INSERT INTO t(i) VALUES(2)");
    assert_int_equal(gp_db_commit(db, &err), GP_OK);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 1);
    assert_int_equal(dbtest_int(db, "SELECT max(i) FROM t", NULL, NULL), 2);
}

/* SQLite keeps what came before a failed statement; PostgreSQL aborts the
 * whole transaction: either way a successful commit has the row, and a
 * commit that lost it says so. */
static void a_commit_never_claims_rows_it_did_not_keep(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    assert_int_equal(gp_db_begin(db, true, &err), GP_OK);
    dbtest_exec(db, "INSERT INTO t(i) VALUES(1)");
    assert_int_equal(gp_db_exec(db, "INSERT INTO no_such_table VALUES(1)", &err), GP_ERR_INVALID);
    gp_err rc = gp_db_commit(db, &err);
    if (rc != GP_OK)
        gp_db_rollback(db);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), rc == GP_OK ? 1 : 0);
    if (on_postgres())
        assert_int_not_equal(rc, GP_OK);
}

static void a_readonly_connection_refuses_writes(void **state)
{
    (void)state;
    gp_db *ro = dbtest_open(g_url, true);
    assert_int_equal(dbtest_int(ro, "SELECT count(*) FROM t", NULL, NULL), 0);
    gp_error err = {0};
    gp_db_stmt *st = NULL;
    gp_err rc = gp_db_prepare(ro, "INSERT INTO t(i) VALUES(1)", 0, &st, &err);
    if (rc == GP_OK) /* PostgreSQL refuses at execution */
        assert_int_equal(gp_db_step(st, &err), GP_DB_ERROR);
    assert_string_equal(err.field, "store");
    assert_non_null(strstr(err.message, "read"));
    gp_db_finalize(st);
    gp_db_close(ro);
}

static void an_unknown_url_is_refused_clearly(void **state)
{
    (void)state;
    gp_db *db = NULL;
    gp_error err = {0};
    assert_int_equal(gp_db_open("mysql://x/y", false, &db, &err), GP_ERR_INVALID);
    assert_null(db);
    assert_non_null(strstr(err.message, "PostgreSQL"));
    assert_int_equal(gp_db_open("host=/nonexistent-gp-socket-dir dbname=x connect_timeout=2", false, &db, &err),
                     GP_ERR_INVALID);
    assert_null(db);
    assert_non_null(strstr(err.message, "cannot connect to PostgreSQL"));
    assert_string_equal(err.field, GP_DB_CONNECTION_FIELD); /* gpupoold waits for the database */
}

/* ---- deferred writes (GP_DB_DEFER) ---- */

/* Steps ins (a deferred INSERT of i) with i bound: DONE, or on SQLite,
 * where nothing is deferred, whatever the insert answers at once. */
static int step_insert(gp_db_stmt *ins, int64_t i, gp_error *err)
{
    gp_db_bind_int64(ins, 1, i);
    int rc = gp_db_step(ins, err);
    gp_db_reset(ins);
    return rc;
}

/* BEGIN, then deferred inserts of 1 and of 1 again (a unique index says
 * no): PostgreSQL has not answered yet, SQLite has. */
static gp_db_stmt *begin_with_a_duplicate(gp_db *db, gp_error *err)
{
    dbtest_exec(db, "CREATE UNIQUE INDEX t_i ON t(i)");
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i) VALUES(?1)", GP_DB_DEFER);
    assert_int_equal(gp_db_begin(db, true, err), GP_OK);
    assert_int_equal(step_insert(ins, 1, err), GP_DB_DONE);
    assert_int_equal(step_insert(ins, 1, err), on_postgres() ? GP_DB_DONE : GP_DB_ERROR);
    return ins;
}

static void a_deferred_error_fails_the_commit_and_nothing_is_kept(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    gp_db_stmt *ins = begin_with_a_duplicate(db, &err);
    if (on_postgres()) { /* SQLite answered at the step (above) */
        assert_int_equal(step_insert(ins, 2, &err), GP_DB_DONE);
        assert_int_equal(gp_db_commit(db, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "store");
        assert_non_null(strstr(err.message, "duplicate key"));
    }
    gp_db_rollback(db);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 0);
    /* the rollback forgot the error: the next transaction commits */
    assert_int_equal(gp_db_begin(db, true, &err), GP_OK);
    assert_int_equal(step_insert(ins, 3, &err), GP_DB_DONE);
    assert_int_equal(gp_db_commit(db, &err), GP_OK);
    assert_int_equal(dbtest_int(db, "SELECT max(i) FROM t", NULL, NULL), 3);
    gp_db_finalize(ins);
}

static void a_deferred_error_fails_the_next_statement_that_waits(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    gp_db_stmt *count = dbtest_prepare(db, "SELECT count(*) FROM t", 0);
    gp_db_stmt *ins = begin_with_a_duplicate(db, &err);
    if (on_postgres()) {
        memset(&err, 0, sizeof err);
        assert_int_equal(gp_db_step(count, &err), GP_DB_ERROR);
        assert_non_null(strstr(err.message, "duplicate key"));
        assert_false(gp_db_broken(db));
    }
    gp_db_reset(count);
    gp_db_rollback(db);
    assert_int_equal(gp_db_step(count, &err), GP_DB_ROW);
    assert_int_equal(gp_db_column_int64(count, 0), 0);
    gp_db_finalize(count);
    gp_db_finalize(ins);
}

/* finalize cannot report an error: the commit after it does. */
static void a_deferred_error_seen_by_finalize_fails_the_commit(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    gp_db_stmt *ins = begin_with_a_duplicate(db, &err);
    gp_db_finalize(ins);
    gp_err rc = gp_db_commit(db, &err);
    if (rc != GP_OK)
        gp_db_rollback(db);
    if (on_postgres()) {
        assert_int_equal(rc, GP_ERR_INVALID);
        assert_non_null(strstr(err.message, "duplicate key"));
    }
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), rc == GP_OK ? 1 : 0);
}

/* 10,000 deferred rows (the queue is read at most 8,192 at a time), an
 * UPDATE of them, then reads in the same transaction (the first one sent
 * behind the queue, the others after it) and after it. */
static void reads_after_deferred_writes_see_them(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i, s) VALUES(?1, 'row')", GP_DB_DEFER);
    gp_db_stmt *up = dbtest_prepare(db, "UPDATE t SET s = 'seven' WHERE i = ?1", GP_DB_DEFER);
    gp_db_stmt *sum = dbtest_prepare(db, "SELECT count(*), sum(i) FROM t WHERE i <= ?1", 0);
    assert_int_equal(gp_db_begin(db, true, &err), GP_OK);
    for (int i = 1; i <= 10000; i++)
        assert_int_equal(step_insert(ins, i, &err), GP_DB_DONE);
    assert_int_equal(step_insert(up, 7, &err), GP_DB_DONE);
    gp_db_bind_int64(sum, 1, 1000);
    assert_int_equal(gp_db_step(sum, &err), GP_DB_ROW);
    assert_int_equal(gp_db_column_int64(sum, 0), 1000);
    assert_int_equal(gp_db_column_int64(sum, 1), 1000 * 1001 / 2);
    assert_int_equal(gp_db_step(sum, &err), GP_DB_DONE);
    gp_db_finalize(sum);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 10000);
    assert_int_equal(dbtest_int(db, "SELECT sum(i) FROM t", NULL, NULL), 10000 * 10001 / 2);
    assert_int_equal(dbtest_int(db, "SELECT i FROM t WHERE s = 'seven'", NULL, NULL), 7);
    assert_int_equal(step_insert(ins, 10001, &err), GP_DB_DONE);
    assert_int_equal(gp_db_commit(db, &err), GP_OK);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 10001);
    gp_db_finalize(up);
    gp_db_finalize(ins);
}

/* A read sent behind queued writes fails on its own error: so does the
 * commit. */
static void a_read_that_fails_behind_deferred_writes_says_why(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i) VALUES(?1)", GP_DB_DEFER);
    gp_db_stmt *bad = dbtest_prepare(db, "SELECT count(*) FROM t WHERE i = 1 / (?1 - 1)", 0);
    assert_int_equal(gp_db_begin(db, true, &err), GP_OK);
    assert_int_equal(step_insert(ins, 1, &err), GP_DB_DONE);
    gp_db_bind_int64(bad, 1, 1);
    int rc = gp_db_step(bad, &err);
    gp_db_finalize(bad);
    gp_db_finalize(ins);
    if (!on_postgres()) { /* SQLite's division by zero is NULL, no error */
        gp_db_rollback(db);
        return;
    }
    assert_int_equal(rc, GP_DB_ERROR);
    assert_non_null(strstr(err.message, "division by zero"));
    assert_false(gp_db_broken(db));
    assert_int_not_equal(gp_db_commit(db, &err), GP_OK);
    gp_db_rollback(db);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 0);
}

/* Outside a transaction there is nothing to fail later: it runs at once. */
static void a_deferred_statement_outside_a_transaction_runs_at_once(void **state)
{
    gp_db *db = *state;
    gp_error err = {0};
    dbtest_exec(db, "CREATE UNIQUE INDEX t_i ON t(i)");
    gp_db_stmt *ins = dbtest_prepare(db, "INSERT INTO t(i) VALUES(?1)", GP_DB_DEFER);
    int first = step_insert(ins, 1, &err);
    if (first != GP_DB_DONE)
        fail_msg("first insert: %s", err.message);
    assert_int_equal(step_insert(ins, 1, &err), GP_DB_ERROR);
    assert_non_null(strstr(err.message, on_postgres() ? "duplicate key" : "UNIQUE"));
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM t", NULL, NULL), 1);
    gp_db_finalize(ins);
}

/* ---- PostgreSQL only ---- */

static void a_serialization_failure_is_a_conflict(void **state)
{
    if (!on_postgres())
        skip();
    gp_db *a = *state, *b = dbtest_open(g_url, false);
    dbtest_exec(a, "INSERT INTO t(i) VALUES(1)");
    dbtest_exec(a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_int_equal(dbtest_int(a, "SELECT i FROM t", NULL, NULL), 1); /* a's snapshot is taken */
    dbtest_exec(b, "UPDATE t SET i = 2");
    gp_db_stmt *st = dbtest_prepare(a, "UPDATE t SET i = 3", 0);
    gp_error err = {0};
    assert_int_equal(gp_db_step(st, &err), GP_DB_ERROR);
    assert_int_equal(err.code, GP_ERR_CONFLICT);
    assert_false(gp_db_broken(a));
    gp_db_finalize(st);
    gp_db_rollback(a);
    assert_int_equal(dbtest_int(a, "SELECT i FROM t", NULL, NULL), 2);
    gp_db_close(b);
}

/* A connection named appname in pg_stat_activity, and its end: the
 * killer terminates its backend and waits until it is gone. */
static gp_db *open_victim(const char *appname)
{
    setenv("GP_PG_APPNAME", appname, 1);
    gp_db *victim = dbtest_open(g_url, false);
    unsetenv("GP_PG_APPNAME");
    return victim;
}

static void terminate_victim(gp_db *killer, const char *appname)
{
    assert_int_equal(dbtest_int(killer,
                                "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity"
                                " WHERE application_name = ?1",
                                appname, NULL),
                     1);
}

static void a_terminated_backend_breaks_the_connection(void **state)
{
    if (!on_postgres())
        skip();
    gp_db *killer = *state;
    gp_db *victim = open_victim("gp-test-db-victim");
    gp_db_stmt *st = dbtest_prepare(victim, "SELECT count(*) FROM t", 0);
    terminate_victim(killer, "gp-test-db-victim");
    gp_error err = {0};
    int rc = GP_DB_ROW;
    for (int tries = 0; tries < 50 && rc != GP_DB_ERROR; tries++) { /* the backend may take a moment to go */
        rc = gp_db_step(st, &err);
        gp_db_reset(st);
        nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
    }
    assert_int_equal(rc, GP_DB_ERROR);
    assert_true(gp_db_broken(victim));
    assert_non_null(strstr(err.message, "connection to PostgreSQL lost"));
    assert_string_equal(err.field, GP_DB_CONNECTION_FIELD); /* gpupoold steps down and reconnects */
    gp_db_finalize(st);
    gp_db_close(victim);
}

/* The backend dies while deferred inserts wait: the commit says the
 * connection is lost, and nothing of the transaction is there. */
static void a_terminated_backend_mid_pipeline_breaks_the_connection(void **state)
{
    if (!on_postgres())
        skip();
    gp_db *killer = *state;
    gp_db *victim = open_victim("gp-test-db-pipeline-victim");
    gp_db_stmt *ins = dbtest_prepare(victim, "INSERT INTO t(i) VALUES(?1)", GP_DB_DEFER);
    gp_error err = {0};
    assert_int_equal(gp_db_begin(victim, true, &err), GP_OK);
    assert_int_equal(step_insert(ins, 1, &err), GP_DB_DONE);
    terminate_victim(killer, "gp-test-db-pipeline-victim");
    step_insert(ins, 2, &err); /* queued, or refused by a socket already closed */
    assert_int_not_equal(gp_db_commit(victim, &err), GP_OK);
    assert_true(gp_db_broken(victim));
    assert_string_equal(err.field, GP_DB_CONNECTION_FIELD);
    assert_non_null(strstr(err.message, "connection to PostgreSQL lost"));
    gp_db_finalize(ins);
    gp_db_close(victim);
    assert_int_equal(dbtest_int(killer, "SELECT count(*) FROM t", NULL, NULL), 0);
}

int main(void)
{
    const char *pg = getenv("GP_TEST_PG_URL");
    if (pg && *pg) {
        snprintf(g_url, sizeof g_url, "%s", pg);
    } else {
        char dir[] = "/tmp/gp-test-db-XXXXXX";
        if (!mkdtemp(dir))
            return 1;
        snprintf(g_url, sizeof g_url, "sqlite:%s/db.sqlite", dir);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(placeholders_bind_by_number_and_skip_literals, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reset_statement_runs_again_with_new_bindings, setup, teardown),
        cmocka_unit_test_setup_teardown(nulls_read_back_as_null, setup, teardown),
        cmocka_unit_test_setup_teardown(int64_extremes_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(doubles_round_trip_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(text_with_quotes_and_utf8_round_trips, setup, teardown),
        cmocka_unit_test_setup_teardown(blobs_with_zero_bytes_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(column_names_and_types_follow_the_select, setup, teardown),
        cmocka_unit_test_setup_teardown(streaming_reads_100000_rows_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(changes_counts_the_last_statements_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(a_syntax_error_says_so, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rolled_back_transaction_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_commit_never_claims_rows_it_did_not_keep, setup, teardown),
        cmocka_unit_test_setup_teardown(a_readonly_connection_refuses_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unknown_url_is_refused_clearly, setup, teardown),
        cmocka_unit_test_setup_teardown(a_serialization_failure_is_a_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(a_terminated_backend_breaks_the_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(a_deferred_error_fails_the_commit_and_nothing_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(a_deferred_error_fails_the_next_statement_that_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(a_deferred_error_seen_by_finalize_fails_the_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(reads_after_deferred_writes_see_them, setup, teardown),
        cmocka_unit_test_setup_teardown(a_read_that_fails_behind_deferred_writes_says_why, setup, teardown),
        cmocka_unit_test_setup_teardown(a_deferred_statement_outside_a_transaction_runs_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_terminated_backend_mid_pipeline_breaks_the_connection, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
