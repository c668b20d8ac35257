/* test_auth_failures.c - failed sign-ins by address and user
 * (auth_failures.h): counts over the last ten minutes, a window that drops
 * whole minutes, and tables that stay bounded under a spray while the
 * address that keeps failing keeps its row.
 */
#include "world.h"

#include "server/auth_failures.h"

#include <stdio.h>
#include <string.h>

enum { T0_MS = 1000 * 60000, MINUTE_MS = 60000 };

static gp_auth_failures failures; /* big: not on the stack */
static gp_auth_failure_counts counts;

static uint32_t count_of(const gp_auth_failure_count *keys, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i].key, key) == 0)
            return keys[i].failures;
    return 0;
}

static void counts_by_address_and_user_over_ten_minutes(void **state)
{
    (void)state;
    gp_auth_failures_init(&failures);
    for (int i = 0; i < 12; i++)
        gp_auth_failure_note(&failures, "10.0.0.9", NULL, T0_MS + i * 10000); /* 10:00-10:01:50 */
    gp_auth_failure_note(&failures, "10.0.0.9", "alice", T0_MS + 5 * MINUTE_MS);
    gp_auth_failure_note(&failures, "", "", T0_MS + 5 * MINUTE_MS);
    gp_auth_failures_copy(&failures, T0_MS + 6 * MINUTE_MS, &counts);
    assert_int_equal(count_of(counts.by_address, counts.n_address, "10.0.0.9"), 13);
    assert_int_equal(count_of(counts.by_address, counts.n_address, "-"), 1); /* unknown address */
    assert_int_equal(counts.n_user, 1);
    assert_int_equal(count_of(counts.by_user, counts.n_user, "alice"), 1);
    assert_int_equal(counts.total, 14);
    /* 10:12: the first twelve (minutes 0 and 1) are out of the window 10:03-10:12 */
    gp_auth_failures_copy(&failures, T0_MS + 12 * MINUTE_MS, &counts);
    assert_int_equal(count_of(counts.by_address, counts.n_address, "10.0.0.9"), 1);
    /* 10:16: nothing left in the window: no key shown, the total stays */
    gp_auth_failures_copy(&failures, T0_MS + 16 * MINUTE_MS, &counts);
    assert_int_equal(counts.n_address + counts.n_user, 0);
    assert_int_equal(counts.total, 14);
    gp_auth_failures_destroy(&failures);
}

static void a_spray_of_addresses_stays_bounded_and_the_persistent_one_keeps_its_row(void **state)
{
    (void)state;
    gp_auth_failures_init(&failures);
    for (int i = 0; i < 30; i++)
        gp_auth_failure_note(&failures, "192.0.2.1", "root", T0_MS + i);
    char address[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(address, sizeof address, "198.51.%d.%d", i / 250, i % 250);
        gp_auth_failure_note(&failures, address, address, T0_MS + 100 + i);
    }
    gp_auth_failures_copy(&failures, T0_MS + MINUTE_MS, &counts);
    assert_int_equal(counts.n_address, GP_AUTH_FAILURE_KEYS);
    assert_int_equal(counts.n_user, GP_AUTH_FAILURE_KEYS);
    assert_int_equal(count_of(counts.by_address, counts.n_address, "192.0.2.1"), 30);
    assert_int_equal(count_of(counts.by_user, counts.n_user, "root"), 30);
    assert_int_equal(counts.total, 5030);
    /* the newest of the spray holds a row; each such row counts its one try */
    assert_int_equal(count_of(counts.by_address, counts.n_address, "198.51.19.249"), 1);
    gp_auth_failures_destroy(&failures);
}

static void a_long_key_is_cut_not_refused(void **state)
{
    (void)state;
    char user[200];
    memset(user, 'u', sizeof user - 1);
    user[sizeof user - 1] = '\0';
    gp_auth_failures_init(&failures);
    gp_auth_failure_note(&failures, "10.0.0.1", user, T0_MS);
    gp_auth_failure_note(&failures, "10.0.0.1", user, T0_MS + 1);
    gp_auth_failures_copy(&failures, T0_MS + 2, &counts);
    assert_int_equal(counts.n_user, 1);
    assert_int_equal(strlen(counts.by_user[0].key), GP_AUTH_FAILURE_KEY_MAX - 1);
    assert_int_equal(counts.by_user[0].failures, 2);
    gp_auth_failures_destroy(&failures);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_by_address_and_user_over_ten_minutes),
        cmocka_unit_test(a_spray_of_addresses_stays_bounded_and_the_persistent_one_keeps_its_row),
        cmocka_unit_test(a_long_key_is_cut_not_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
