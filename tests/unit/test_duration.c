/* test_duration.c - spans of time as people type them (util/duration.h).
 *
 * Rule (issue 12, tokens): `token create --ttl 30d` and gpupoold's
 * `--member-token-ttl` take s, m, h, d and w; anything else is refused,
 * never read as zero.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/duration.h"

static int64_t parsed(const char *text)
{
    int64_t v = -7;
    assert_true(gp_duration_parse(text, &v));
    return v;
}

static void every_unit_is_read_in_seconds(void **state)
{
    (void)state;
    assert_int_equal(parsed("45s"), 45);
    assert_int_equal(parsed("90m"), 5400);
    assert_int_equal(parsed("12h"), 43200);
    assert_int_equal(parsed("30d"), 2592000);
    assert_int_equal(parsed("2w"), 1209600);
    assert_int_equal(parsed("0"), 0);
}

static void a_number_without_unit_or_with_junk_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {"30", "", "d", "-1d", "+1d", "1.5h", "1 d", "1dd", "1y", "abc", " 1d", "99999999999999w"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = -7;
        assert_false(gp_duration_parse(bad[i], &v));
        assert_int_equal(v, -7);
    }
    assert_false(gp_duration_parse(NULL, NULL));
}

/* Slurm's --time forms (issue 32): M:SS, H:MM:SS, D-H, D-H:MM, D-H:MM:SS. */
static void slurm_clock_forms_are_read(void **state)
{
    (void)state;
    assert_int_equal(parsed("2:00:00"), 7200);
    assert_int_equal(parsed("90:00"), 5400);
    assert_int_equal(parsed("0:30"), 30);
    assert_int_equal(parsed("2-00:00:00"), 172800);
    assert_int_equal(parsed("1-12"), 129600);
    assert_int_equal(parsed("1-2:30"), 95400);
    assert_int_equal(parsed("100:00:00"), 360000);
}

static void bad_clock_forms_and_overflow_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"2:0:00", "2:60:00", "2:00:60", "1:00:00:00", "1-24", "1-", "-1:00", "2:00:", ":30",
                         "1-2:3", "1--2", "2h30m", "1.5:00", "2:00 ", "99999999999:00:00", "99999999-00:00:00",
                         "1099511627776:00", "1099511627777s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = -7;
        assert_false(gp_duration_parse(bad[i], &v));
        assert_false(gp_duration_parse_seconds(bad[i], &v));
        assert_int_equal(v, -7);
    }
    int64_t v = 0;
    assert_true(gp_duration_parse("1099511627776s", &v)); /* 2^40: the most */
    assert_int_equal(v, INT64_C(1) << 40);
}

/* Fields that always took seconds keep taking a bare number. */
static void seconds_or_any_duration(void **state)
{
    (void)state;
    int64_t v = -7;
    assert_true(gp_duration_parse_seconds("7200", &v));
    assert_int_equal(v, 7200);
    assert_true(gp_duration_parse_seconds("2h", &v));
    assert_int_equal(v, 7200);
    assert_true(gp_duration_parse_seconds("2-00:00:00", &v));
    assert_int_equal(v, 172800);
    v = -7;
    const char *bad[] = {"", "-5", "+5", "5 ", "0x10", "1e3", "2hours", "1099511627777"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(gp_duration_parse_seconds(bad[i], &v));
    assert_int_equal(v, -7);
    assert_false(gp_duration_parse_seconds(NULL, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slurm_clock_forms_are_read),
        cmocka_unit_test(bad_clock_forms_and_overflow_are_refused),
        cmocka_unit_test(seconds_or_any_duration),
        cmocka_unit_test(every_unit_is_read_in_seconds),
        cmocka_unit_test(a_number_without_unit_or_with_junk_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
