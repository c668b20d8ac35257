/* test_timefmt.c - the CLI's readable times (src/cli/timefmt.c).
 *
 * Semantics under test (timefmt.h): local date-times follow TZ; ages keep
 * one unit rounded toward zero (s < 1m, m < 1h, h < 2d, then d), "ago" for
 * the past and "in" for the future; the parser takes epoch seconds, local
 * dates and date-times, and ages, and refuses anything else.
 *
 * CTest runs this with TZ=UTC; each test sets the zone it means anyway.
 * 1732431234 is 2024-11-24 06:53:54 UTC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cli/timefmt.h"

enum { T = 1732431234 };

static void zone(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static void a_time_prints_as_a_utc_date_time_under_tz_utc(void **state)
{
    (void)state;
    char buf[64];
    zone("UTC");
    assert_string_equal(gp_time_local(T, buf, sizeof buf), "2024-11-24 06:53:54");
}

static void a_time_follows_the_local_zone(void **state)
{
    (void)state;
    char buf[64];
    zone("XST-5:30"); /* a POSIX zone five and a half hours east of UTC, no tz database needed */
    assert_string_equal(gp_time_local(T, buf, sizeof buf), "2024-11-24 12:23:54");
    zone("UTC");
}

static void a_past_time_prints_as_an_age_in_its_largest_unit(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(gp_time_age(T, T + 45, buf, sizeof buf), "45s ago");
    assert_string_equal(gp_time_age(T, T + 190, buf, sizeof buf), "3m ago");
    assert_string_equal(gp_time_age(T, T + 3599, buf, sizeof buf), "59m ago");
    assert_string_equal(gp_time_age(T, T + 7200, buf, sizeof buf), "2h ago");
    assert_string_equal(gp_time_age(T, T + 47 * 3600, buf, sizeof buf), "47h ago");
    assert_string_equal(gp_time_age(T, T + 3 * 86400 + 5, buf, sizeof buf), "3d ago");
}

static void a_future_time_prints_as_in_and_the_same_second_as_just_now(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(gp_time_age(T + 7200, T, buf, sizeof buf), "in 2h");
    assert_string_equal(gp_time_age(T + 59, T, buf, sizeof buf), "in 59s");
    assert_string_equal(gp_time_age(T, T, buf, sizeof buf), "just now");
}

static void the_human_form_holds_the_date_time_and_the_age(void **state)
{
    (void)state;
    char buf[96];
    zone("UTC");
    assert_string_equal(gp_time_human(T, T + 190, buf, sizeof buf), "2024-11-24 06:53:54 (3m ago)");
}

static void a_short_buffer_is_cut_not_overrun(void **state)
{
    (void)state;
    char buf[8];
    memset(buf, 'x', sizeof buf);
    gp_time_human(T, T + 190, buf, sizeof buf);
    assert_int_equal(strlen(buf), 7);
}

static void epoch_stamps_in_a_reason_read_as_local_times(void **state)
{
    (void)state;
    char buf[256];
    zone("UTC");
    assert_string_equal(gp_time_in_text("reclaiming the guarantee of a: 2 borrowing jobs preempted, grace ends at "
                                        "t=1732431294",
                                        T, buf, sizeof buf),
                        "reclaiming the guarantee of a: 2 borrowing jobs preempted, grace ends at "
                        "2024-11-24 06:54:54 (in 1m)");
    assert_string_equal(gp_time_in_text("t=1732431234 and t=1732431174; x", T, buf, sizeof buf),
                        "2024-11-24 06:53:54 (just now) and 2024-11-24 06:52:54 (1m ago); x");
}

static void text_without_a_stamp_is_copied_unchanged(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(gp_time_in_text("bound to 8 H100; limit=8, at=3, t=x", T, buf, sizeof buf),
                        "bound to 8 H100; limit=8, at=3, t=x");
    assert_string_equal(gp_time_in_text("", T, buf, sizeof buf), "");
    char small[12];
    assert_string_equal(gp_time_in_text("grace ends at t=1732431294", T, small, sizeof small), "grace ends ");
}

static void epoch_seconds_dates_and_date_times_parse_in_local_time(void **state)
{
    (void)state;
    int64_t t = 0;
    zone("UTC");
    assert_true(gp_time_parse("1732431234", 0, &t));
    assert_int_equal(t, T);
    assert_true(gp_time_parse("2024-11-24 06:53:54", 0, &t));
    assert_int_equal(t, T);
    assert_true(gp_time_parse("2024-11-24T06:53", 0, &t));
    assert_int_equal(t, T - 54);
    assert_true(gp_time_parse("2024-11-24", 0, &t));
    assert_int_equal(t, T - (6 * 3600 + 53 * 60 + 54));
    zone("XST-5:30");
    assert_true(gp_time_parse("2024-11-24 12:23:54", 0, &t));
    assert_int_equal(t, T);
    zone("UTC");
}

static void an_age_parses_as_that_long_before_now(void **state)
{
    (void)state;
    int64_t t = 0;
    assert_true(gp_time_parse("7d", T, &t));
    assert_int_equal(t, T - 7 * 86400);
    assert_true(gp_time_parse("90m", T, &t));
    assert_int_equal(t, T - 5400);
    assert_true(gp_time_parse("30s", T, &t));
    assert_int_equal(t, T - 30);
    assert_true(gp_time_parse("2w", T, &t)); /* util/duration.h's units, weeks too */
    assert_int_equal(t, T - 14 * 86400);
}

static void a_signed_relative_time_parses_before_or_after_now(void **state)
{
    (void)state;
    int64_t t;
    assert_true(gp_time_parse("-24h", T, &t));
    assert_int_equal(t, T - 86400);
    assert_true(gp_time_parse("+2h", T, &t));
    assert_int_equal(t, T + 7200);
    assert_true(gp_time_parse("2w", T, &t));
    assert_int_equal(t, T - 14 * 86400);
}

static void an_iso_time_with_a_zone_parses_in_that_zone(void **state)
{
    (void)state;
    int64_t t;
    assert_true(gp_time_parse("2024-11-24T06:53:54Z", T, &t));
    assert_int_equal(t, 1732431234);
    assert_true(gp_time_parse("2024-11-24T08:53:54+02:00", T, &t));
    assert_int_equal(t, 1732431234);
    assert_true(gp_time_parse("2024-11-24T01:53:54-0500", T, &t));
    assert_int_equal(t, 1732431234);
    assert_true(gp_time_parse("2024-02-29T00:00Z", T, &t)); /* a leap day */
    assert_int_equal(t, 1709164800);
}

static void a_duration_keeps_one_unit(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(gp_duration(45, buf, sizeof buf), "45s");
    assert_string_equal(gp_duration(7300, buf, sizeof buf), "2h");
    assert_string_equal(gp_duration(3 * 86400, buf, sizeof buf), "3d");
    assert_string_equal(gp_duration(0, buf, sizeof buf), "0s");
    assert_string_equal(gp_duration(-5, buf, sizeof buf), "0s");
}

static void anything_else_is_refused_and_leaves_the_output_alone(void **state)
{
    (void)state;
    const char *bad[] = {"", "yesterday", "7y", "--7d", "+-7d", "7dd", "2024-13-01", "2024-02-31",
                         "2024-11-24 25:00", "2024-11-24x06:53", "2024-11-24 06:53 extra", "-5", "12abc",
                         "2024-11-24T06:53+25:00", "2024-02-30T00:00Z", "2024-11-24Z", "2024-11-24T06:53ZZ",
                         "2024-11-24T06:53+2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t t = 42;
        assert_false(gp_time_parse(bad[i], T, &t));
        assert_int_equal(t, 42);
    }
    int64_t t = 42;
    assert_false(gp_time_parse(NULL, T, &t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_time_prints_as_a_utc_date_time_under_tz_utc),
        cmocka_unit_test(a_time_follows_the_local_zone),
        cmocka_unit_test(a_past_time_prints_as_an_age_in_its_largest_unit),
        cmocka_unit_test(a_future_time_prints_as_in_and_the_same_second_as_just_now),
        cmocka_unit_test(the_human_form_holds_the_date_time_and_the_age),
        cmocka_unit_test(a_short_buffer_is_cut_not_overrun),
        cmocka_unit_test(epoch_stamps_in_a_reason_read_as_local_times),
        cmocka_unit_test(text_without_a_stamp_is_copied_unchanged),
        cmocka_unit_test(epoch_seconds_dates_and_date_times_parse_in_local_time),
        cmocka_unit_test(an_age_parses_as_that_long_before_now),
        cmocka_unit_test(a_signed_relative_time_parses_before_or_after_now),
        cmocka_unit_test(an_iso_time_with_a_zone_parses_in_that_zone),
        cmocka_unit_test(a_duration_keeps_one_unit),
        cmocka_unit_test(anything_else_is_refused_and_leaves_the_output_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
