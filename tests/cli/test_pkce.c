/* test_pkce.c - base64url and PKCE's S256 challenge (cli/pkce.h); the
 * expected values were computed with Python's hashlib and base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/pkce.h"

#include <string.h>

static void base64url_uses_dash_and_underscore_and_no_padding(void **state)
{
    (void)state;
    char out[16];
    const unsigned char bytes[] = {0xfb, 0xff, 0xfe, 0x01};
    assert_true(gp_base64url_encode(bytes, sizeof bytes, out, sizeof out));
    assert_string_equal(out, "-__-AQ");
    unsigned char back[8];
    assert_int_equal(gp_base64url_decode("-__-AQ==", 8, back, sizeof back), 4);
    assert_memory_equal(back, bytes, 4);
    assert_int_equal(gp_base64url_decode("+/", 2, back, sizeof back), -1); /* standard base64's, not url's */
    assert_false(gp_base64url_encode(bytes, sizeof bytes, out, 6));        /* no room for the NUL */
}

static void the_s256_challenge_is_base64url_of_sha256_of_the_verifier(void **state)
{
    (void)state;
    char challenge[64];
    assert_true(gp_pkce_challenge("abc", challenge, sizeof challenge));
    assert_string_equal(challenge, "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
    assert_true(gp_pkce_challenge("gpupool-verifier-0123456789-abcdefghijklmnopqrstu", challenge, sizeof challenge));
    assert_string_equal(challenge, "t4xsQl_-Rp4FjdaXXkyn7J3Fo9aNGI3v4tKDuOGBuUs");
}

static void each_verifier_is_new_43_characters_and_matches_its_challenge(void **state)
{
    (void)state;
    char v1[64], c1[64], v2[64], c2[64], again[64];
    assert_true(gp_pkce_make(v1, sizeof v1, c1, sizeof c1));
    assert_true(gp_pkce_make(v2, sizeof v2, c2, sizeof c2));
    assert_int_equal(strlen(v1), 43); /* RFC 7636: 43 to 128 characters */
    assert_string_not_equal(v1, v2);
    assert_true(gp_pkce_challenge(v1, again, sizeof again));
    assert_string_equal(again, c1);
    assert_string_not_equal(c1, v1); /* the challenge never is the verifier */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base64url_uses_dash_and_underscore_and_no_padding),
        cmocka_unit_test(the_s256_challenge_is_base64url_of_sha256_of_the_verifier),
        cmocka_unit_test(each_verifier_is_new_43_characters_and_matches_its_challenge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
