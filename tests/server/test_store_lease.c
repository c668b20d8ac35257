/* test_store_lease.c - the leader lease and the fence (store.h,
 * store_lease.c) on a SQLite file opened by two connections, as two
 * gpupoold replicas on one host open it; time is the callers' clock.
 *
 * The story of store.h's example: A takes the lease at 1000 (ttl 3000),
 * B is refused while it holds, A stops renewing, B takes it at 5001 with
 * the next epoch; from then on A's renew fails and A's fenced writer
 * commits nothing (its BEGIN and a write outside a transaction are both
 * refused with field "lease").  A store of schema 8 keeps its
 * controller epoch: the lease row starts there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "world.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct two {
    char dir[64];
    char url[128];
    gp_store *a, *b;
} two;

static int two_setup(void **state)
{
    two *t = calloc(1, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "/tmp/gp-lease-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->url, sizeof t->url, "sqlite:%s/s.db", t->dir);
    gp_error err;
    check(gp_store_open(t->url, false, &t->a, &err), &err, "open a");
    check(gp_store_open(t->url, false, &t->b, &err), &err, "open b");
    *state = t;
    return 0;
}

static int two_teardown(void **state)
{
    two *t = *state;
    char cmd[128];
    gp_store_close(t->a);
    gp_store_close(t->b);
    snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
    assert_int_equal(system(cmd), 0);
    free(t);
    return 0;
}

static void a_leads_at_1000(two *t, int64_t *epoch)
{
    gp_error err;
    check(gp_store_lease_acquire(t->a, "a", "http://a", 3000, 1000, epoch, &err), &err, "a acquires");
}

static void a_fresh_store_starts_at_epoch_one(void **state)
{
    two *t = *state;
    gp_error err;
    gp_store_lease l;
    check(gp_store_lease_get(t->a, 500, &l, &err), &err, "get");
    assert_string_equal(l.holder, "");
    assert_int_equal(l.epoch, 0);
    int64_t epoch;
    a_leads_at_1000(t, &epoch);
    assert_int_equal(epoch, 1);
    check(gp_store_lease_get(t->b, 1500, &l, &err), &err, "get");
    assert_string_equal(l.holder, "a");
    assert_string_equal(l.url, "http://a");
    assert_int_equal(l.epoch, 1);
    assert_int_equal(l.expires_ms, 4000);
    assert_int_equal(l.now_ms, 1500);
}

static void another_holder_is_refused_until_the_lease_expires(void **state)
{
    two *t = *state;
    gp_error err;
    int64_t ea, eb = -1;
    a_leads_at_1000(t, &ea);
    check(gp_store_lease_renew(t->a, "a", ea, 3000, 2000, &err), &err, "a renews"); /* until 5000 */
    assert_int_equal(gp_store_lease_acquire(t->b, "b", "http://b", 3000, 4500, &eb, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "lease");
    assert_int_equal(eb, -1);
    check(gp_store_lease_acquire(t->b, "b", "http://b", 3000, 5001, &eb, &err), &err, "b takes over");
    assert_int_equal(eb, ea + 1);
}

static void the_holder_itself_takes_its_lease_again_with_a_new_epoch(void **state)
{
    two *t = *state;
    gp_error err;
    int64_t e1, e2;
    a_leads_at_1000(t, &e1);
    check(gp_store_lease_acquire(t->a, "a", "http://a", 3000, 1100, &e2, &err), &err, "a again");
    assert_int_equal(e2, e1 + 1);
}

static void a_released_lease_is_free_at_once(void **state)
{
    two *t = *state;
    gp_error err;
    int64_t ea, eb;
    a_leads_at_1000(t, &ea);
    assert_int_equal(gp_store_lease_acquire(t->b, "b", "http://b", 3000, 1500, &eb, &err), GP_ERR_CONFLICT);
    check(gp_store_lease_release(t->a, "a", ea, &err), &err, "a releases");
    check(gp_store_lease_acquire(t->b, "b", "http://b", 3000, 1500, &eb, &err), &err, "b takes it");
    assert_int_equal(eb, ea + 1);
    /* a's late release does not end b's lease */
    check(gp_store_lease_release(t->a, "a", ea, &err), &err, "a releases again");
    assert_int_equal(gp_store_lease_acquire(t->a, "a", "http://a", 3000, 1600, &ea, &err), GP_ERR_CONFLICT);
}

static void a_renew_after_a_takeover_fails(void **state)
{
    two *t = *state;
    gp_error err;
    int64_t ea, eb;
    a_leads_at_1000(t, &ea);
    check(gp_store_lease_acquire(t->b, "b", "http://b", 3000, 4001, &eb, &err), &err, "b takes over");
    assert_int_equal(gp_store_lease_renew(t->a, "a", ea, 3000, 4100, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "lease");
    check(gp_store_lease_renew(t->b, "b", eb, 3000, 4100, &err), &err, "b renews");
}

static void a_fenced_writer_commits_while_its_epoch_holds(void **state)
{
    two *t = *state;
    gp_error err;
    int64_t ea;
    a_leads_at_1000(t, &ea);
    check(gp_store_fence(t->a, ea, 3000, &err), &err, "fence");
    check(gp_store_begin(t->a, &err), &err, "begin");
    check(gp_store_meta_set(t->a, "k", 1, &err), &err, "meta set");
    check(gp_store_commit(t->a, &err), &err, "commit");
    assert_int_equal(gp_store_meta_get(t->b, "k", 0), 1);
}

static void a_fenced_writer_commits_nothing_after_a_takeover(void **state)
{
    two *t = *state;
    gp_error err;
    int64_t ea, eb;
    a_leads_at_1000(t, &ea);
    check(gp_store_fence(t->a, ea, 3000, &err), &err, "fence");
    check(gp_store_lease_acquire(t->b, "b", "http://b", 3000, 4001, &eb, &err), &err, "b takes over");
    assert_int_equal(gp_store_begin(t->a, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "lease");
    /* a write outside a transaction is refused too */
    assert_int_equal(gp_store_meta_set(t->a, "k", 1, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "lease");
    assert_int_equal(gp_store_meta_get(t->b, "k", 0), 0);
    /* and the refused BEGIN left no transaction open: b still writes */
    check(gp_store_begin(t->b, &err), &err, "b begins");
    check(gp_store_meta_set(t->b, "k", 2, &err), &err, "b writes");
    check(gp_store_commit(t->b, &err), &err, "b commits");
}

static void a_schema_8_store_keeps_its_controller_epoch(void **state)
{
    (void)state;
    char dir[64], path[96], url[128], cmd[128];
    snprintf(dir, sizeof dir, "/tmp/gp-lease8-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.db", dir);
    snprintf(url, sizeof url, "sqlite:%s", path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
                                  /* what schema 10's migration reads (every store has it) */
                                  "CREATE TABLE tokens(id TEXT PRIMARY KEY, scope TEXT NOT NULL, user TEXT NOT NULL,"
                                  " role TEXT NOT NULL, created INTEGER NOT NULL, created_by TEXT NOT NULL,"
                                  " revoked INTEGER);"
                                  /* what schema 12's migration alters (every store has it) */
                                  "CREATE TABLE jobs(id INTEGER PRIMARY KEY);"
                                  "INSERT INTO meta VALUES('controller_epoch', 7); PRAGMA user_version = 8;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    gp_store *s;
    gp_error err;
    int64_t epoch;
    check(gp_store_open(url, false, &s, &err), &err, "open migrates 8 -> 10");
    check(gp_store_lease_acquire(s, "a", "http://a", 3000, 1000, &epoch, &err), &err, "acquire");
    assert_int_equal(epoch, 8);
    assert_int_equal(gp_store_meta_get(s, "controller_epoch", -1), -1);
    gp_store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_fresh_store_starts_at_epoch_one, two_setup, two_teardown),
        cmocka_unit_test_setup_teardown(another_holder_is_refused_until_the_lease_expires, two_setup, two_teardown),
        cmocka_unit_test_setup_teardown(the_holder_itself_takes_its_lease_again_with_a_new_epoch, two_setup,
                                        two_teardown),
        cmocka_unit_test_setup_teardown(a_released_lease_is_free_at_once, two_setup, two_teardown),
        cmocka_unit_test_setup_teardown(a_renew_after_a_takeover_fails, two_setup, two_teardown),
        cmocka_unit_test_setup_teardown(a_fenced_writer_commits_while_its_epoch_holds, two_setup, two_teardown),
        cmocka_unit_test_setup_teardown(a_fenced_writer_commits_nothing_after_a_takeover, two_setup, two_teardown),
        cmocka_unit_test(a_schema_8_store_keeps_its_controller_epoch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
