/* test_text.c - UTF-8 validity and control characters (util/text.h).
 *
 * Rule (docs/api.md, "Bad input"): names, paths and query strings are
 * strict UTF-8 without control characters; audit rows and error messages
 * are made valid UTF-8 before they are stored or sent, so no field of
 * either is ever null.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/text.h"

static bool valid(const char *s)
{
    return gp_utf8_valid(s, strlen(s));
}

static bool printable(const char *s)
{
    return gp_text_printable(s, strlen(s));
}

static void strict_utf8_is_valid_and_everything_else_is_not(void **state)
{
    (void)state;
    assert_true(valid("train-7 \xc3\xa9t\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x9a\x80"));
    assert_false(valid("\xff\xfe"));
    assert_false(valid("a\xc3"));              /* cut short */
    assert_false(valid("\xc0\xaf"));           /* overlong '/' */
    assert_false(valid("\xe0\x80\xaf"));       /* overlong '/' */
    assert_false(valid("\xed\xa0\x80"));       /* surrogate */
    assert_false(valid("\xf4\x90\x80\x80"));   /* above U+10FFFF */
    assert_false(valid("\x80"));               /* lone continuation */
    assert_true(gp_utf8_valid("a\0b", 3));     /* U+0000 is UTF-8, not printable */
    assert_false(gp_text_printable("a\0b", 3));
}

static void control_characters_are_not_printable(void **state)
{
    (void)state;
    assert_true(printable("research/nlp train-7_v2.final"));
    assert_false(printable("a\nb"));
    assert_false(printable("a\tb"));
    assert_false(printable("\x1b[31mred"));
    assert_false(printable("del\x7f"));
    assert_false(printable("c1\xc2\x85"));            /* U+0085 NEXT LINE */
    assert_false(printable("gpu\xe2\x80\xae" "cod.exe")); /* U+202E RIGHT-TO-LEFT OVERRIDE */
    assert_false(printable("x\xe2\x81\xa6y"));        /* U+2066 LEFT-TO-RIGHT ISOLATE */
    assert_true(printable("\xe2\x80\x94 dash"));      /* U+2014 is text */
}

static void scrubbing_replaces_each_invalid_byte(void **state)
{
    (void)state;
    char a[] = "node/\xff\xfe/drain";
    gp_utf8_scrub(a);
    assert_string_equal(a, "node/?" "?/drain");
    char b[] = "caf\xc3\xa9 and cut \xe6\x97";
    gp_utf8_scrub(b);
    assert_string_equal(b, "caf\xc3\xa9 and cut ?" "?");
    assert_true(valid(a) && valid(b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strict_utf8_is_valid_and_everything_else_is_not),
        cmocka_unit_test(control_characters_are_not_printable),
        cmocka_unit_test(scrubbing_replaces_each_invalid_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
