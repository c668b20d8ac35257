/* test_server_url.c - gpupoold's URL lists and the leader a 307 names
 * (util/server_url.h).
 *
 * Rules: --server takes a comma-separated list (spaces and a trailing '/'
 * trimmed, empty entries skipped, too many refused); a client follows a
 * follower's 307 only to an http(s) URL with a host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/server_url.h"

static void a_list_splits_at_commas_with_blanks_and_trailing_slashes_trimmed(void **state)
{
    (void)state;
    char list[] = "http://gp-a:8750, http://gp-b:8750/ ,,https://gp-c/";
    char *urls[4];
    assert_int_equal(gp_server_urls_split(list, urls, 4), 3);
    assert_string_equal(urls[0], "http://gp-a:8750");
    assert_string_equal(urls[1], "http://gp-b:8750");
    assert_string_equal(urls[2], "https://gp-c");
}

static void one_url_is_a_list_of_one_and_an_empty_list_has_none(void **state)
{
    (void)state;
    char one[] = "http://127.0.0.1:8750", empty[] = " , ";
    char *urls[2];
    assert_int_equal(gp_server_urls_split(one, urls, 2), 1);
    assert_string_equal(urls[0], "http://127.0.0.1:8750");
    assert_int_equal(gp_server_urls_split(empty, urls, 2), 0);
}

static void more_urls_than_room_are_refused(void **state)
{
    (void)state;
    char list[] = "http://a,http://b,http://c";
    char *urls[2];
    assert_int_equal(gp_server_urls_split(list, urls, 2), -1);
}

static void only_http_and_https_urls_with_a_host_are_followed(void **state)
{
    (void)state;
    assert_true(gp_server_url_followable("http://gp-b:8750/v1/jobs"));
    assert_true(gp_server_url_followable("HTTPS://gp-b/v1/jobs?x=1"));
    assert_false(gp_server_url_followable("file:///etc/passwd"));
    assert_false(gp_server_url_followable("ftp://gp-b/v1/jobs"));
    assert_false(gp_server_url_followable("/v1/jobs"));
    assert_false(gp_server_url_followable("http://"));
    assert_false(gp_server_url_followable("http:///v1/jobs"));
    assert_false(gp_server_url_followable("http://gp-b/v1/jobs\r\nX-Evil: 1"));
    assert_false(gp_server_url_followable("http://gp b/"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_list_splits_at_commas_with_blanks_and_trailing_slashes_trimmed),
        cmocka_unit_test(one_url_is_a_list_of_one_and_an_empty_list_has_none),
        cmocka_unit_test(more_urls_than_room_are_refused),
        cmocka_unit_test(only_http_and_https_urls_with_a_host_are_followed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
