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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_unit_is_read_in_seconds),
        cmocka_unit_test(a_number_without_unit_or_with_junk_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
