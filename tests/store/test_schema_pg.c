/* test_schema_pg.c - the store's PostgreSQL schema (store_schema_pg.c).
 *
 * Runs against GP_TEST_PG_URL (ctest schema_postgres starts a throw-away
 * cluster: run_with_pg.py); exits 77 (skipped) without it.  Each case
 * starts from an empty database (the public schema dropped and made again).
 *
 * Example: an empty database opened by a writer is at version 12 with the
 * lease row (1, '', '', 0, 0); the same tables and columns as a new SQLite
 * store, with PostgreSQL's types; a database at version 13 is refused.
 */
#include "dbtest.h"
#include "store/db.h"
#include "store/store.h"
#include "store/store_schema_pg.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *g_url;

static int empty_database(void **state)
{
    gp_db *db = dbtest_open(g_url, false);
    dbtest_exec(db, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    *state = db;
    return 0;
}

static int close_database(void **state)
{
    gp_db_close(*state);
    return 0;
}

static void open_writer_ok(int *version)
{
    gp_db *db = dbtest_open(g_url, false);
    gp_error err = {0};
    if (gp__schema_open_pg(db, false, version, &err) != GP_OK)
        fail_msg("schema open: %s", err.message);
    gp_db_close(db);
}

static void an_empty_database_gets_schema_12_with_the_lease_row(void **state)
{
    gp_db *db = *state;
    int version = -1;
    open_writer_ok(&version);
    assert_int_equal(version, 12);
    assert_int_equal(dbtest_int(db, "SELECT value FROM meta WHERE key = 'schema_version'", NULL, NULL), 12);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM leader_lease WHERE id = 1 AND holder = '' AND url = ''"
                                   " AND epoch = 0 AND expires_ms = 0",
                               NULL, NULL),
                     1);
    gp_error err = {0};
    assert_int_equal(gp_db_exec(db, "INSERT INTO leader_lease VALUES(2, 'x', 'y', 1, 1)", &err), GP_ERR_INVALID);
}

static void the_store_sequences_number_rows_themselves(void **state)
{
    gp_db *db = *state;
    int version = 0;
    open_writer_ok(&version);
    dbtest_exec(db, "INSERT INTO events(time, kind, payload) VALUES(1, 'a', '{}'), (2, 'b', '{}')");
    dbtest_exec(db, "INSERT INTO job_history(job_id, time, kind) VALUES(1, 1, 'submit')");
    dbtest_exec(db, "INSERT INTO gpu_checks(node, gpu, at, check_name, passed) VALUES('n', 0, 1, 'sim', 1)");
    assert_int_equal(dbtest_int(db, "SELECT max(seq) FROM events", NULL, NULL), 2);
    assert_int_equal(dbtest_int(db, "SELECT version FROM events WHERE seq = 1", NULL, NULL), 1);
    assert_int_equal(dbtest_int(db, "SELECT max(seq) FROM job_history", NULL, NULL), 1);
    assert_int_equal(dbtest_int(db, "SELECT max(seq) FROM gpu_checks", NULL, NULL), 1);
}

/* A new SQLite store's (table, column, declared type) rows, and its index names. */
static gp_db *new_sqlite_store(char *path, size_t cap)
{
    char dir[] = "/tmp/gp-test-schema-XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(path, cap, "sqlite:%s/store.db", dir);
    gp_store *s = NULL;
    gp_error err = {0};
    if (gp_store_open(path, false, &s, &err) != GP_OK)
        fail_msg("sqlite store: %s", err.message);
    gp_store_close(s);
    gp_db *lite = NULL;
    assert_int_equal(gp_db_open(path, true, &lite, &err), GP_OK);
    return lite;
}

static const char *pg_type_of(const char *sqlite_type)
{
    if (strcmp(sqlite_type, "INTEGER") == 0)
        return "bigint";
    if (strcmp(sqlite_type, "REAL") == 0)
        return "double precision";
    if (strcmp(sqlite_type, "BLOB") == 0)
        return "bytea";
    return "text";
}

static void every_sqlite_table_column_and_index_exists_on_postgres(void **state)
{
    gp_db *db = *state;
    int version = 0;
    open_writer_ok(&version);
    char path[128];
    gp_db *lite = new_sqlite_store(path, sizeof path);
    gp_db_stmt *cols = NULL;
    assert_int_equal(gp_db_prepare(lite,
                                   "SELECT m.name, p.name, upper(p.type) FROM sqlite_master m"
                                   " JOIN pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY 1, 2",
                                   0, &cols, NULL),
                     GP_OK);
    int n = 0;
    while (gp_db_step(cols, NULL) == GP_DB_ROW) {
        const char *table = gp_db_column_text(cols, 0), *column = gp_db_column_text(cols, 1);
        gp_db_stmt *typed = NULL;
        assert_int_equal(gp_db_prepare(db,
                                       "SELECT count(*) FROM information_schema.columns WHERE table_schema ="
                                       " current_schema() AND table_name = ?1 AND column_name = ?2"
                                       " AND data_type = ?3",
                                       0, &typed, NULL),
                         GP_OK);
        gp_db_bind_text(typed, 1, table);
        gp_db_bind_text(typed, 2, column);
        gp_db_bind_text(typed, 3, pg_type_of(gp_db_column_text(cols, 2)));
        assert_int_equal(gp_db_step(typed, NULL), GP_DB_ROW);
        if (gp_db_column_int64(typed, 0) != 1)
            fail_msg("%s.%s (%s) missing on PostgreSQL", table, column, gp_db_column_text(cols, 2));
        gp_db_finalize(typed);
        n++;
    }
    gp_db_finalize(cols);
    assert_true(n > 100);

    gp_db_stmt *idx = NULL;
    assert_int_equal(gp_db_prepare(lite, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL", 0,
                                   &idx, NULL),
                     GP_OK);
    while (gp_db_step(idx, NULL) == GP_DB_ROW)
        if (dbtest_int(db, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?1",
                      gp_db_column_text(idx, 0), NULL) != 1)
            fail_msg("index %s missing on PostgreSQL", gp_db_column_text(idx, 0));
    gp_db_finalize(idx);

    /* and nothing on PostgreSQL that SQLite lacks, but the lease (schema 9) */
    gp_db_stmt *tables = NULL;
    assert_int_equal(gp_db_prepare(db, "SELECT table_name FROM information_schema.tables WHERE table_schema ="
                                       " current_schema() AND table_name <> 'leader_lease'",
                                   0, &tables, NULL),
                     GP_OK);
    while (gp_db_step(tables, NULL) == GP_DB_ROW)
        if (dbtest_int(lite, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                      gp_db_column_text(tables, 0), NULL) != 1)
            fail_msg("table %s only on PostgreSQL", gp_db_column_text(tables, 0));
    gp_db_finalize(tables);
    gp_db_close(lite);
}

static void ordered_text_columns_compare_bytes(void **state)
{
    gp_db *db = *state;
    int version = 0;
    open_writer_ok(&version);
    const char *columns[][2] = {{"tenants", "path"}, {"job_scope", "prefix"}, {"tokens", "id"}, {"jobs", "tenant"}};
    for (size_t i = 0; i < 4; i++)
        if (dbtest_int(db, "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema()"
                          " AND table_name = ?1 AND column_name = ?2 AND collation_name = 'C'",
                      columns[i][0], columns[i][1]) != 1)
            fail_msg("%s.%s does not collate as bytes", columns[i][0], columns[i][1]);
}

static void reopening_migrates_nothing_and_keeps_rows(void **state)
{
    gp_db *db = *state;
    int version = 0;
    open_writer_ok(&version);
    dbtest_exec(db, "INSERT INTO meta(key, value) VALUES('next_job_id', 41)");
    open_writer_ok(&version);
    assert_int_equal(version, 12);
    assert_int_equal(dbtest_int(db, "SELECT value FROM meta WHERE key = 'next_job_id'", NULL, NULL), 41);

    gp_db *ro = dbtest_open(g_url, true);
    gp_error err = {0};
    assert_int_equal(gp__schema_open_pg(ro, true, &version, &err), GP_OK);
    assert_int_equal(version, 12);
    gp_db_close(ro);
}

static void a_newer_database_is_refused_and_left_alone(void **state)
{
    gp_db *db = *state;
    int version = 0;
    open_writer_ok(&version);
    dbtest_exec(db, "UPDATE meta SET value = 13 WHERE key = 'schema_version'");
    for (int readonly = 0; readonly <= 1; readonly++) {
        gp_db *other = dbtest_open(g_url, readonly);
        gp_error err = {0};
        assert_int_equal(gp__schema_open_pg(other, readonly, &version, &err), GP_ERR_CONFLICT);
        assert_string_equal(err.field, "store");
        assert_non_null(strstr(err.message, "newer than this gpupoold"));
        gp_db_close(other);
    }
    assert_int_equal(dbtest_int(db, "SELECT value FROM meta WHERE key = 'schema_version'", NULL, NULL), 13);
}

/* Schema 9 -> 10 binds each user of a live scoped token to its oldest token's scope. */
static void schema_10_binds_users_from_their_tokens(void **state)
{
    gp_db *db = *state;
    int version = 0;
    open_writer_ok(&version);
    dbtest_exec(db, "DROP TABLE user_tenants; DROP TABLE node_approvals; DROP TABLE secrets; DROP TABLE gpu_types; DROP TABLE rolebindings;"
                    "ALTER TABLE tokens DROP COLUMN single_use; UPDATE meta SET value = 9 WHERE key = 'schema_version';"
                    "INSERT INTO tokens(id, hash, name, role, scope, \"user\", created, created_by) VALUES"
                    " ('b', 'h1', 'a1', 'member', 'research/nlp', 'alice', 10, 'adm'),"
                    " ('a', 'h2', 'a2', 'member', 'product/ads', 'alice', 20, 'adm'),"
                    " ('c', 'h3', 'b1', 'tenant-admin', 'product', 'bob', 5, 'adm'),"
                    " ('d', 'h4', 'ops', 'admin', '', 'carol', 1, 'adm')");
    open_writer_ok(&version);
    assert_int_equal(version, 12);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM user_tenants", NULL, NULL), 2);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM user_tenants WHERE name = 'alice' AND"
                                    " tenant = 'research/nlp' AND bound = 10 AND bound_by = 'adm'", NULL, NULL), 1);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM user_tenants WHERE name = 'bob' AND tenant = 'product'",
                                NULL, NULL), 1);
}

static void a_reader_refuses_a_database_without_schema(void **state)
{
    gp_db *db = *state;
    gp_db *ro = dbtest_open(g_url, true);
    int version = -1;
    gp_error err = {0};
    assert_int_equal(gp__schema_open_pg(ro, true, &version, &err), GP_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "no gpupool schema"));
    gp_db_close(ro);
    assert_int_equal(dbtest_int(db, "SELECT count(*) FROM information_schema.tables WHERE table_schema ="
                                   " current_schema()",
                               NULL, NULL),
                     0);
}

struct racer {
    pthread_barrier_t *start;
    gp_err rc;
    int version;
    char message[GP_ERROR_MESSAGE_MAX];
};

static void *race(void *arg)
{
    struct racer *r = arg;
    gp_db *db = dbtest_open(g_url, false);
    gp_error err = {0};
    pthread_barrier_wait(r->start);
    r->rc = gp__schema_open_pg(db, false, &r->version, &err);
    snprintf(r->message, sizeof r->message, "%s", err.message);
    gp_db_close(db);
    return NULL;
}

static void writers_starting_together_migrate_once(void **state)
{
    (void)state;
    enum { N = 4 };
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N);
    struct racer racers[N];
    pthread_t threads[N];
    for (int i = 0; i < N; i++) {
        racers[i] = (struct racer){.start = &start};
        pthread_create(&threads[i], NULL, race, &racers[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < N; i++) {
        if (racers[i].rc != GP_OK)
            fail_msg("writer %d: %s", i, racers[i].message);
        assert_int_equal(racers[i].version, 12);
    }
}

int main(void)
{
    g_url = getenv("GP_TEST_PG_URL");
    if (!g_url || !*g_url) {
        printf("skip: GP_TEST_PG_URL is not set (ctest schema_postgres sets it)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_empty_database_gets_schema_12_with_the_lease_row, empty_database,
                                        close_database),
        cmocka_unit_test_setup_teardown(the_store_sequences_number_rows_themselves, empty_database, close_database),
        cmocka_unit_test_setup_teardown(every_sqlite_table_column_and_index_exists_on_postgres, empty_database,
                                        close_database),
        cmocka_unit_test_setup_teardown(ordered_text_columns_compare_bytes, empty_database, close_database),
        cmocka_unit_test_setup_teardown(reopening_migrates_nothing_and_keeps_rows, empty_database, close_database),
        cmocka_unit_test_setup_teardown(a_newer_database_is_refused_and_left_alone, empty_database, close_database),
        cmocka_unit_test_setup_teardown(schema_10_binds_users_from_their_tokens, empty_database, close_database),
        cmocka_unit_test_setup_teardown(a_reader_refuses_a_database_without_schema, empty_database, close_database),
        cmocka_unit_test_setup_teardown(writers_starting_together_migrate_once, empty_database, close_database),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
