/* test_suggest.c - nearest names and the flags of a usage text (cli/suggest.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/suggest.h"

static const char *const COMMANDS[] = {"submit", "jobs", "job", "why", "cancel", "nodes", "tenants", "quota"};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static void the_edit_distance_counts_a_swap_of_neighbours_once(void **state)
{
    (void)state;
    assert_int_equal(gp_edit_distance("jobs", "jobs"), 0);
    assert_int_equal(gp_edit_distance("jbos", "jobs"), 1);
    assert_int_equal(gp_edit_distance("tenat", "tenant"), 1);
    assert_int_equal(gp_edit_distance("", "abc"), 3);
    assert_int_equal(gp_edit_distance("kitten", "sitting"), 3);
}

static void a_typo_of_a_command_suggests_the_nearest_one(void **state)
{
    (void)state;
    assert_string_equal(gp_suggest("jbos", COMMANDS, N_COMMANDS), "jobs");
    assert_string_equal(gp_suggest("sumbit", COMMANDS, N_COMMANDS), "submit");
    assert_string_equal(gp_suggest("tenant", COMMANDS, N_COMMANDS), "tenants");
    assert_string_equal(gp_suggest("--tenat", (const char *const[]){"--tenant", "--state"}, 2), "--tenant");
}

static void a_mistyped_tenant_path_suggests_the_nearest_path(void **state)
{
    (void)state;
    static const char *const paths[] = {"ml", "ml/train", "ml/eval", "research"};
    assert_string_equal(gp_suggest("ml/trian", paths, 4), "ml/train");
    assert_string_equal(gp_suggest("ml/evl", paths, 4), "ml/eval");
    assert_null(gp_suggest("product/ads", paths, 4));
}

static void nothing_near_suggests_nothing(void **state)
{
    (void)state;
    assert_null(gp_suggest("frobnicate", COMMANDS, N_COMMANDS));
    assert_null(gp_suggest("xyz", COMMANDS, N_COMMANDS));
    assert_null(gp_suggest("anything", COMMANDS, 0));
}

static void the_flags_of_a_usage_text_are_read_once_each_in_order(void **state)
{
    (void)state;
    const char *usage = "usage: gpupool jobs [--tenant PATH] [--state STATE|live] [--gpu-type T]...\n"
                        "       [--lend yes|no] [--tenant=X] -- COMMAND ARGS... [--watch [--interval S]]\n";
    char buf[256];
    const char *flags[8];
    size_t n = gp_usage_flags(usage, buf, sizeof buf, flags, 8);
    assert_int_equal(n, 6);
    assert_string_equal(flags[0], "--tenant");
    assert_string_equal(flags[1], "--state");
    assert_string_equal(flags[2], "--gpu-type");
    assert_string_equal(flags[3], "--lend");
    assert_string_equal(flags[4], "--watch");
    assert_string_equal(flags[5], "--interval");
}

static void a_full_flag_list_stops_at_its_capacity(void **state)
{
    (void)state;
    char buf[256];
    const char *flags[2];
    assert_int_equal(gp_usage_flags("--a1 --b2 --c3", buf, sizeof buf, flags, 2), 2);
    assert_int_equal(gp_usage_flags("--a1 --b2 --c3", buf, 6, flags, 2), 1); /* "--a1\0" fits, "--b2" does not */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_edit_distance_counts_a_swap_of_neighbours_once),
        cmocka_unit_test(a_typo_of_a_command_suggests_the_nearest_one),
        cmocka_unit_test(a_mistyped_tenant_path_suggests_the_nearest_path),
        cmocka_unit_test(nothing_near_suggests_nothing),
        cmocka_unit_test(the_flags_of_a_usage_text_are_read_once_each_in_order),
        cmocka_unit_test(a_full_flag_list_stops_at_its_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
