/* test_job_handle.c - job and array-member handles as people type them
 * (src/cli/job_handle.c) and the index sets inside them (util/index_set.h).
 *
 * Rule (issue 32 item 9): `gpupool cancel 13_[0-19]`, `13_4`, `13_[1,3,5-7]`
 * and `13` are read as Slurm reads them; anything else is a usage error
 * that names the text, never a guess (a bad range is not "no members").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli/job_handle.h"

static const char *formatted(const gp_index_set *s)
{
    static char buf[256];
    return gp_index_set_format(s, buf, sizeof buf);
}

static void a_plain_id_is_a_job_not_members(void **state)
{
    (void)state;
    gp_job_handle h;
    char why[200];
    assert_true(gp_job_handle_parse("13", &h, why, sizeof why));
    assert_int_equal(h.id, 13);
    assert_false(h.members);
}

static void a_member_and_a_bracketed_range_name_members(void **state)
{
    (void)state;
    gp_job_handle h;
    char why[200];
    assert_true(gp_job_handle_parse("13_4", &h, why, sizeof why));
    assert_int_equal(h.id, 13);
    assert_true(h.members);
    assert_string_equal(formatted(&h.index), "4");
    assert_true(gp_job_handle_parse("13_[0-19]", &h, why, sizeof why));
    assert_string_equal(formatted(&h.index), "0-19");
    assert_int_equal(gp_index_set_count(&h.index), 20);
    assert_true(gp_job_handle_parse("13_[1,3,5-7]", &h, why, sizeof why));
    assert_string_equal(formatted(&h.index), "1,3,5-7");
    assert_true(gp_job_handle_parse("13_1,3,5-7", &h, why, sizeof why)); /* brackets are optional */
    assert_string_equal(formatted(&h.index), "1,3,5-7");
}

static void sets_are_sorted_and_merged(void **state)
{
    (void)state;
    gp_index_set s;
    char why[200];
    assert_true(gp_index_set_parse("7,1,3,5-7", &s, why, sizeof why));
    assert_string_equal(formatted(&s), "1,3,5-7");
    assert_true(gp_index_set_parse("4-5,6,0-2,3", &s, why, sizeof why));
    assert_string_equal(formatted(&s), "0-6");
    assert_true(gp_index_set_parse("10-20,0,15-30,9", &s, why, sizeof why));
    assert_string_equal(formatted(&s), "0,9-30");
    assert_true(gp_index_set_has(&s, 9));
    assert_false(gp_index_set_has(&s, 8));
    assert_true(gp_index_set_parse("9999", &s, why, sizeof why));
}

static void bad_text_is_refused_naming_it(void **state)
{
    (void)state;
    struct {
        const char *text, *why;
    } bad[] = {
        {"13_[5-3]", "13_[5-3]: 5-3: the range ends before it starts"},
        {"13_[0-19", "13_[0-19: a '[' without its ']'"},
        {"13_0-19]", "13_0-19]: a ']' without its '['"},
        {"13_[1,,2]", "13_[1,,2]: an empty item between commas"},
        {"13_[1,]", "13_[1,]: an empty item at the end"},
        {"13_[]", "13_[]: no index given"},
        {"13_", "13_: no index given"},
        {"13_[a-b]", "13_[a-b]: a-b: not an index (0-9999) or a range LO-HI"},
        {"13_[1-7:2]", "13_[1-7:2]: 1-7:2: not an index (0-9999) or a range LO-HI"},
        {"13_[0-3]%2", "13_[0-3]%2: a '[' without its ']'"},
        {"13_[10000]", "13_[10000]: 10000: not an index (0-9999) or a range LO-HI"},
        {"13_[-1]", "13_[-1]: -1: not an index (0-9999) or a range LO-HI"},
        {"13_[ 1]", NULL},
        {"abc", "abc: not a job id (13), an array member (13_4) or members (13_[0-19], 13_[1,3,5-7])"},
        {"0", "0: not a job id (13), an array member (13_4) or members (13_[0-19], 13_[1,3,5-7])"},
        {"13x", "13x: not a job id (13), an array member (13_4) or members (13_[0-19], 13_[1,3,5-7])"},
        {"", ": not a job id (13), an array member (13_4) or members (13_[0-19], 13_[1,3,5-7])"},
        {"99999999999999999999", "99999999999999999999: not a job id (13), an array member (13_4) or members"
                                 " (13_[0-19], 13_[1,3,5-7])"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_job_handle h;
        char why[200] = "";
        assert_false(gp_job_handle_parse(bad[i].text, &h, why, sizeof why));
        if (strcmp(bad[i].text, "13_[ 1]") == 0) /* the space is in the item named */
            assert_string_equal(why, "13_[ 1]:  1: not an index (0-9999) or a range LO-HI");
        else
            assert_string_equal(why, bad[i].why);
    }
}

static void too_many_ranges_are_refused(void **state)
{
    (void)state;
    char text[1024] = "";
    for (int i = 0; i <= GP_INDEX_RANGES_MAX; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", i ? "," : "", i * 2);
    gp_index_set s;
    char why[200];
    assert_false(gp_index_set_parse(text, &s, why, sizeof why));
    assert_string_equal(why, "more than 64 separate ranges");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_plain_id_is_a_job_not_members),
        cmocka_unit_test(a_member_and_a_bracketed_range_name_members),
        cmocka_unit_test(sets_are_sorted_and_merged),
        cmocka_unit_test(bad_text_is_refused_naming_it),
        cmocka_unit_test(too_many_ranges_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
