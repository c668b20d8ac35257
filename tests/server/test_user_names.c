/* test_user_names.c - which user names a job may run as (server/users.h):
 * never root or nobody, never a name that is not a plain user name, never
 * a name that resolves here to uid 0, below the floor or to 65534; a name
 * this host does not know passes (the node checks it again).
 *
 * Uses this machine's passwd: root (0), daemon (1) and nobody (65534) are
 * on every Debian host; "gpupool-no-such-user" is on none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "server/users.h"

static void refused(const char *name, int64_t min_uid)
{
    gp_error err = {0};
    if (gp_user_name_check(name, min_uid, &err) != GP_ERR_INVALID)
        fail_msg("%s was not refused with floor %lld", name, (long long)min_uid);
    assert_string_equal(err.field, "user");
}

static void root_and_nobody_are_refused_by_name_and_by_uid(void **state)
{
    (void)state;
    refused("root", 1);
    refused("nobody", 1);
}

static void names_that_are_not_plain_user_names_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "0", "1000", "-rf", "a b", "a/b", "../x", "al\nice", "x:y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused(bad[i], 1000);
}

static void a_system_account_is_refused_below_the_floor_only(void **state)
{
    (void)state;
    gp_error err = {0};
    refused("daemon", 1000);
    assert_int_equal(gp_user_name_check("daemon", 1, &err), GP_OK);
    refused("daemon", 2);
}

static void a_name_this_host_does_not_know_passes(void **state)
{
    (void)state;
    gp_error err = {0};
    assert_int_equal(gp_user_name_check("gpupool-no-such-user", 1000, &err), GP_OK);
    assert_int_equal(gp_user_name_check("alice.smith@corp", 1000, &err), GP_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(root_and_nobody_are_refused_by_name_and_by_uid),
        cmocka_unit_test(names_that_are_not_plain_user_names_are_refused),
        cmocka_unit_test(a_system_account_is_refused_below_the_floor_only),
        cmocka_unit_test(a_name_this_host_does_not_know_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
