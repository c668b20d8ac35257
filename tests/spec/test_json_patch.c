/* test_json_patch.c - JSON merge patch (RFC 7396) and the field diff
 * (spec/json_patch.h).  The merge cases include RFC 7396's appendix A. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "spec/json_patch.h"

#include <string.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(v);
    return v;
}

/* merge(target, patch) equals want, and neither input changed. */
static void assert_merge(const char *target, const char *patch, const char *want)
{
    json_t *t = parse(target), *p = parse(patch), *w = parse(want);
    json_t *t_before = json_deep_copy(t), *p_before = json_deep_copy(p);
    json_t *got = gp_json_merge_patch(t, p);
    assert_non_null(got);
    if (!json_equal(got, w)) {
        char *text = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS);
        fail_msg("merge(%s, %s) = %s, want %s", target, patch, text, want);
    }
    assert_true(json_equal(t, t_before));
    assert_true(json_equal(p, p_before));
    json_decref(t), json_decref(p), json_decref(w), json_decref(got), json_decref(t_before), json_decref(p_before);
}

static void a_merge_patch_changes_only_the_keys_it_names(void **state)
{
    (void)state;
    assert_merge("{\"guarantee\": {\"gpu\": {\"H100\": 8}}, \"limit\": {\"gpu\": {\"L40S\": 8, \"H100\": 24}}}",
                 "{\"limit\": {\"gpu\": {\"L40S\": 6}}}",
                 "{\"guarantee\": {\"gpu\": {\"H100\": 8}}, \"limit\": {\"gpu\": {\"L40S\": 6, \"H100\": 24}}}");
}

static void a_null_in_a_merge_patch_removes_the_key(void **state)
{
    (void)state;
    assert_merge("{\"weight\": 2.0, \"trust\": \"untrusted\"}", "{\"weight\": null}", "{\"trust\": \"untrusted\"}");
    assert_merge("{\"limit\": {\"gpu\": {\"L40S\": 8, \"H100\": 1}}}", "{\"limit\": {\"gpu\": {\"L40S\": null}}}",
                 "{\"limit\": {\"gpu\": {\"H100\": 1}}}");
    assert_merge("{\"a\": 1}", "{\"missing\": null}", "{\"a\": 1}"); /* removing nothing is no error */
}

/* RFC 7396, appendix A, every example. */
static void the_examples_of_rfc_7396_hold(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
        {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
        {"{\"a\":\"foo\"}", "null", "null"},
        {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_merge(cases[i][0], cases[i][1], cases[i][2]);
}

static void a_merge_patch_onto_nothing_builds_the_patch_without_its_nulls(void **state)
{
    (void)state;
    json_t *p = parse("{\"weight\": 2, \"lend\": null}"), *want = parse("{\"weight\": 2}");
    json_t *got = gp_json_merge_patch(NULL, p);
    assert_true(json_equal(got, want));
    json_decref(p), json_decref(want), json_decref(got);
}

static void the_diff_lists_each_changed_leaf_by_its_dotted_name(void **state)
{
    (void)state;
    json_t *from = parse("{\"guarantee\": {\"gpu\": {\"H100\": 8}}, \"limit\": {\"gpu\": {\"L40S\": 8}},"
                         " \"weight\": 2.0}");
    json_t *to = parse("{\"guarantee\": {\"gpu\": {\"H100\": 8}}, \"limit\": {\"gpu\": {\"L40S\": 6}},"
                       " \"lend\": false}");
    json_t *want = parse("[{\"field\": \"lend\", \"from\": null, \"to\": false},"
                         " {\"field\": \"limit.gpu.L40S\", \"from\": 8, \"to\": 6},"
                         " {\"field\": \"weight\", \"from\": 2.0, \"to\": null}]");
    json_t *got = gp_json_field_diff(from, to);
    assert_true(json_equal(got, want));
    json_decref(from), json_decref(to), json_decref(want), json_decref(got);
}

static void equal_documents_have_an_empty_diff(void **state)
{
    (void)state;
    json_t *a = parse("{\"guarantee\": {\"gpu\": {}}, \"time_limit\": {\"training\": 60}}");
    json_t *got = gp_json_field_diff(a, a);
    assert_int_equal(json_array_size(got), 0);
    json_decref(a), json_decref(got);
}

static void an_empty_object_is_a_leaf_of_the_diff(void **state)
{
    (void)state;
    /* a guarantee of nothing differs from no guarantee at all */
    json_t *from = parse("{}"), *to = parse("{\"guarantee\": {\"gpu\": {}}}");
    json_t *want = parse("[{\"field\": \"guarantee.gpu\", \"from\": null, \"to\": {}}]");
    json_t *got = gp_json_field_diff(from, to);
    assert_true(json_equal(got, want));
    json_t *from_nothing = gp_json_field_diff(NULL, to);
    assert_true(json_equal(from_nothing, want));
    json_decref(from), json_decref(to), json_decref(want), json_decref(got), json_decref(from_nothing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_merge_patch_changes_only_the_keys_it_names),
        cmocka_unit_test(a_null_in_a_merge_patch_removes_the_key),
        cmocka_unit_test(the_examples_of_rfc_7396_hold),
        cmocka_unit_test(a_merge_patch_onto_nothing_builds_the_patch_without_its_nulls),
        cmocka_unit_test(the_diff_lists_each_changed_leaf_by_its_dotted_name),
        cmocka_unit_test(equal_documents_have_an_empty_diff),
        cmocka_unit_test(an_empty_object_is_a_leaf_of_the_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
