/* test_tenant_file.c - the tenant file reader (src/config/tenant_file.c).
 *
 * Semantics under test (tenant_file.h, docs/fleet-file.md): quotas with GPU
 * amounts in GPUs (up to three decimals), cpu/mem defaults, weight, lend,
 * trust, time limits per job kind; YAML and JSON; errors with file, line and field for unknown
 * fields, wrong types, bad amounts and duplicates; entries in any order,
 * null fields kept for gpupoold's apply (a parent the file does not list
 * is the engine's to find);
 * applying the file builds the tree in an engine, and an engine
 * refusal names the tenant.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/fleet_file.h"
#include "config/tenant_file.h"

static gp_tenant_file parse_ok(const char *text)
{
    gp_tenant_file f;
    gp_error err;
    gp_err rc = gp_tenant_file_parse(text, strlen(text), "tenants.yaml", &f, &err);
    if (rc != GP_OK)
        fail_msg("parse failed: %s: %s", err.field, err.message);
    return f;
}

static void expect_error(const char *text, int line, const char *field)
{
    gp_tenant_file f;
    gp_error err;
    gp_err rc = gp_tenant_file_parse(text, strlen(text), "tenants.yaml", &f, &err);
    if (rc == GP_OK)
        fail_msg("accepted a bad file, expected an error on %s", field);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "tenants.yaml:%d:", line);
    if (strncmp(err.message, prefix, strlen(prefix)) != 0 || strcmp(err.field, field) != 0)
        fail_msg("got field %s message \"%s\", want field %s at %s", err.field, err.message, field, prefix);
    assert_null(f.tenants);
}

static void full_entry(void **state)
{
    (void)state;
    gp_tenant_file f = parse_ok("tenants:\n"
                                "  - path: research\n"
                                "    guarantee: {gpu: {H100: 24}}\n"
                                "    limit: {gpu: {H100: 40}}\n"
                                "  - path: research/nlp\n"
                                "    guarantee: {gpu: {H100: 16, A100: 0.5}, cpu_millis: 512000, mem_mib: 4194304}\n"
                                "    weight: 1.5\n"
                                "    lend: no\n"
                                "    trust: untrusted\n"
                                "    user_limit: {gpu: {H100: 8}}\n");
    assert_int_equal(f.n_tenants, 2);
    const gp_tenant_spec *r = &f.tenants[0].spec;
    assert_string_equal(f.tenants[0].path, "research");
    assert_true(r->guarantee.set);
    assert_int_equal(r->guarantee.n_gpu, 1);
    assert_int_equal(r->guarantee.gpu[0].milli, 24000);
    assert_int_equal(r->guarantee.cpu_millis, GP_UNLIMITED);
    assert_true(r->limit.set);
    assert_false(r->user_limit.set);
    assert_int_equal(r->lend, -1);
    assert_int_equal(r->trust, GP_TRUST_INHERIT);
    assert_true(r->weight == 0.0);
    const gp_tenant_spec *n = &f.tenants[1].spec;
    assert_int_equal(n->guarantee.n_gpu, 2);
    assert_string_equal(n->guarantee.gpu[1].type, "A100");
    assert_int_equal(n->guarantee.gpu[1].milli, 500);
    assert_int_equal(n->guarantee.cpu_millis, 512000);
    assert_int_equal(n->guarantee.mem_mib, 4194304);
    assert_true(n->weight == 1.5);
    assert_int_equal(n->lend, 0);
    assert_int_equal(n->trust, GP_TRUST_UNTRUSTED);
    assert_int_equal(n->user_limit.gpu[0].milli, 8000);
    gp_tenant_file_free(&f);
}

static void json_is_accepted(void **state)
{
    (void)state;
    gp_tenant_file f = parse_ok("{\"tenants\": [{\"path\": \"a\", \"guarantee\": {\"gpu\": {\"H100\": 2}}},\n"
                                " {\"path\": \"a/b\", \"lend\": true}]}");
    assert_int_equal(f.n_tenants, 2);
    assert_int_equal(f.tenants[1].spec.lend, 1);
    gp_tenant_file_free(&f);
}

/* The order is free (gpupoold's apply judges the tree after the whole
 * file), and a null field is kept in `fields` for the apply to clear. */
static void any_order_and_null_fields(void **state)
{
    (void)state;
    gp_tenant_file f = parse_ok("tenants:\n  - path: a/b/c\n    time_limit: null\n  - path: a\n");
    assert_int_equal(f.n_tenants, 2);
    assert_string_equal(f.tenants[0].path, "a/b/c");
    assert_true(json_is_null(json_object_get(f.tenants[0].fields, "time_limit")));
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_TRAINING], 0);
    assert_int_equal(json_object_size(f.tenants[1].fields), 0);
    gp_tenant_file_free(&f);
}

static void time_limits_per_kind(void **state)
{
    (void)state;
    gp_tenant_file f = parse_ok("tenants:\n"
                                "  - path: research\n"
                                "    time_limit: {training: 86400, interactive: 28800}\n"
                                "  - path: research/nlp\n"
                                "    time_limit: {inference: 600}\n");
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_TRAINING], 86400);
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_INTERACTIVE], 28800);
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_INFERENCE], 0);
    assert_int_equal(f.tenants[1].spec.time_limit_s[GP_KIND_INFERENCE], 600);
    assert_int_equal(f.tenants[1].spec.time_limit_s[GP_KIND_TRAINING], 0); /* the parent's */
    gp_tenant_file_free(&f);
    expect_error("tenants:\n  - path: a\n    time_limit: {batch: 60}\n", 3, "tenants[0].time_limit.batch");
    expect_error("tenants:\n  - path: a\n    time_limit: {training: -1}\n", 3, "tenants[0].time_limit.training");
    /* durations with units in the file only (issue 32; the API takes seconds) */
    f = parse_ok("tenants:\n  - path: a\n    time_limit: {training: 1h, interactive: \"8:00:00\", inference: 2-00:00:00}\n");
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_TRAINING], 3600);
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_INTERACTIVE], 28800);
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_INFERENCE], 172800);
    gp_tenant_file_free(&f);
    expect_error("tenants:\n  - path: a\n    time_limit: {training: 1 hour}\n", 3, "tenants[0].time_limit.training");
    expect_error("tenants:\n  - path: a\n    time_limit: {training: 2:60:00}\n", 3, "tenants[0].time_limit.training");
    expect_error("tenants:\n  - path: a\n    time_limit: 3600\n", 3, "tenants[0].time_limit");
}

static void errors(void **state)
{
    (void)state;
    expect_error("tenants:\n  - path: a\n    guarante: {gpu: {H100: 1}}\n", 3, "tenants[0].guarante");
    expect_error("tenants:\n  - path: a\n    guarantee: {gpus: {H100: 1}}\n", 3, "tenants[0].guarantee.gpus");
    expect_error("tenants:\n  - path: a\n    guarantee: {gpu: {H100: 0.0001}}\n", 3, "tenants[0].guarantee.gpu.H100");
    expect_error("tenants:\n  - path: a\n    guarantee: {gpu: {H100: \"4\"}}\n", 3, "tenants[0].guarantee.gpu.H100");
    expect_error("tenants:\n  - path: a\n    guarantee: {gpu: {H100: -4}}\n", 3, "tenants[0].guarantee.gpu.H100");
    expect_error("tenants:\n  - path: a\n    guarantee: {gpu: [H100]}\n", 3, "tenants[0].guarantee.gpu");
    expect_error("tenants:\n  - path: a\n    weight: heavy\n", 3, "tenants[0].weight");
    expect_error("tenants:\n  - path: a\n    weight: 0.0001\n", 3, "tenants[0].weight");
    expect_error("tenants:\n  - path: a\n    lend: yes please\n", 3, "tenants[0].lend");
    expect_error("tenants:\n  - path: a\n    trust: maybe\n", 3, "tenants[0].trust");
    expect_error("tenants:\n  - path: a\n    limit: {cpu_millis: -1}\n", 3, "tenants[0].limit.cpu_millis");
    expect_error("tenants:\n  - weight: 1\n", 2, "tenants[0].path");
    expect_error("tenants:\n  - path: a\n  - path: a\n", 3, "tenants[1].path");
    expect_error("tenants:\n  - {path: a, lend: true, lend: false}\n", 2, "tenants[0].lend");
    expect_error("tenant: []\n", 1, "tenant");
    expect_error("tenants: {path: a}\n", 1, "tenants");
}

/* The file's top, checked by the skeleton every file reader shares
 * (config/yaml_file.h): each message whole, as it was before the skeleton. */
static void expect_message(const char *text, const char *field, const char *message)
{
    gp_tenant_file f;
    gp_error err;
    assert_int_not_equal(gp_tenant_file_parse(text, strlen(text), "tenants.yaml", &f, &err), GP_OK);
    assert_string_equal(err.field, field);
    assert_string_equal(err.message, message);
    assert_null(f.tenants);
}

static void the_top_is_checked_with_these_messages(void **state)
{
    (void)state;
    expect_message("", "tenants", "tenants.yaml:1: the tenant file is empty");
    expect_message("just text\n", "tenants", "tenants.yaml:1: a tenant file is a mapping with a tenants list");
    expect_message("tenants: []\nusers: []\n", "users",
                   "tenants.yaml:2: unknown field users (a tenant file has tenants)");
    expect_message("{}\n", "tenants", "tenants.yaml:1: the tenant file has no tenants list");
    expect_message("tenants: research\n", "tenants", "tenants.yaml:1: tenants must be a list");
    expect_message("tenants:\n  - path: a\n  - b\n", "tenants[1]", "tenants.yaml:3: tenants[1] must be a mapping");
}

/* The parent may already exist where the file is applied: not the file's
 * to refuse (the engine does, when it does not exist). */
static void a_file_may_list_a_child_without_its_parent(void **state)
{
    (void)state;
    gp_tenant_file f = parse_ok("tenants:\n  - {path: ml/eval, guarantee: {gpu: {H100: 2}}}\n"
                                "  - {path: ml/eval/nightly}\n  - {path: ml/train}\n");
    assert_int_equal(f.n_tenants, 3);
    assert_string_equal(f.tenants[0].path, "ml/eval");
    gp_engine *e = gp_engine_new(NULL);
    gp_error err;
    assert_int_equal(gp_tenant_file_apply(&f, e, 0, &err), GP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "parent tenant ml does not exist"));
    gp_engine_free(e);
    gp_tenant_file_free(&f);
}

static void apply_builds_tree(void **state)
{
    (void)state;
    const char *fleet_text = "nodes: [{name: n, count: 4, gpu_type: H100, gpus: 8}]\n";
    gp_fleet_file fleet;
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(fleet_text, strlen(fleet_text), "f", &fleet, &err), GP_OK);
    gp_engine *e = gp_engine_new(NULL);
    assert_int_equal(gp_fleet_file_apply(&fleet, e, 0, &err), GP_OK);
    gp_tenant_file f = parse_ok("tenants:\n"
                                "  - {path: research, guarantee: {gpu: {H100: 24}}}\n"
                                "  - {path: research/nlp, guarantee: {gpu: {H100: 16}}}\n"
                                "  - {path: research/cv, guarantee: {gpu: {H100: 12}}}\n");
    assert_int_equal(gp_tenant_file_apply(&f, e, 0, &err), GP_ERR_QUOTA);
    assert_non_null(strstr(err.message, "tenant research/cv: "));
    uint32_t idx;
    assert_int_equal(gp_engine_tenant_find(e, "research/nlp", &idx, &err), GP_OK);
    gp_tenant_file_free(&f);
    gp_fleet_file_free(&fleet);
    gp_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_entry), cmocka_unit_test(json_is_accepted),
        cmocka_unit_test(errors),      cmocka_unit_test(apply_builds_tree), cmocka_unit_test(any_order_and_null_fields), cmocka_unit_test(time_limits_per_kind),
        cmocka_unit_test(a_file_may_list_a_child_without_its_parent),
        cmocka_unit_test(the_top_is_checked_with_these_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
