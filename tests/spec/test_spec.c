/* test_spec.c - one codec for every spec (src/spec, src/core/names.c).
 *
 * Semantics under test:
 *  - GPU amounts are exact decimals with up to three places on every path:
 *    the API's JSON numbers (gp_json_gpu_amount), the YAML files (through
 *    the same function) and decimal text (gp_gpu_amount_parse); a fourth
 *    decimal is refused even where a floating multiply would round it away;
 *  - the same tenant and the same node written as a YAML file and as the
 *    API's / event log's JSON decode to identical structs, and a rule the
 *    API has (weight 0 = default, time limit 0 = the parent's) holds in the
 *    file too;
 *  - a codec error in a file carries the file, the line and the field path;
 *  - the YAML reader keeps quoted scalars as strings, refuses duplicate
 *    keys and aliases, and records every value's line;
 *  - every enum name round-trips through the one table in core, and a bad
 *    name's error lists the accepted ones.
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
#include "spec/json_input.h"
#include "spec/spec_json.h"
#include "spec/yaml_json.h"

/* ---- GPU amounts ---- */

static bool amount_of_json(const char *text, int64_t *milli)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    gp_error err;
    bool ok = gp_json_gpu_amount(v, "gpu", milli, &err) == GP_OK;
    json_decref(v);
    return ok;
}

static void api_gpu_amounts_are_exact_decimals(void **state)
{
    (void)state;
    const struct {
        const char *json;
        int64_t milli;
    } good[] = {{"0.001", 1},          {"2.675", 2675},       {"0.1", 100},
                {"1e-3", 1},           {"16", 16000},         {"0", 0},
                {"-0", 0},             {"-0.0", 0},           {"1000000000", INT64_C(1000000000000)},
                {"1e9", INT64_C(1000000000000)},              {"999999999.999", INT64_C(999999999999)}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t m = -1;
        if (!amount_of_json(good[i].json, &m) || m != good[i].milli)
            fail_msg("%s: got %lld, want %lld", good[i].json, (long long)m, (long long)good[i].milli);
    }
    /* 1000000.0001 and 123456789.0005: a multiply-and-round kept them */
    const char *bad[] = {"0.0005", "1000000000.001", "-1", "-0.5", "1000000.0001", "123456789.0005",
                         "1000000001", "\"4\"", "true", "null", "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t m = -1;
        if (amount_of_json(bad[i], &m))
            fail_msg("accepted %s as %lld milli-GPUs", bad[i], (long long)m);
    }
}

static void decimal_text_amounts(void **state)
{
    (void)state;
    int64_t m = -1;
    assert_true(gp_gpu_amount_parse("16", &m));
    assert_int_equal(m, 16000);
    assert_true(gp_gpu_amount_parse("0.5", &m));
    assert_int_equal(m, 500);
    assert_true(gp_gpu_amount_parse("2.125", &m));
    assert_int_equal(m, 2125);
    assert_true(gp_gpu_amount_parse("1000000000", &m));
    assert_int_equal(m, INT64_C(1000000000000));
    const char *bad[] = {"", "-1", "0.0005", "1.", ".5", "1e3", "abc", "1 ", "1000000001", "1,5", NULL};
    for (int i = 0; bad[i]; i++)
        if (gp_gpu_amount_parse(bad[i], &m))
            fail_msg("accepted \"%s\"", bad[i]);
    assert_false(gp_gpu_amount_parse(NULL, &m));
}

static gp_err tenant_file(const char *text, gp_tenant_file *f, gp_error *err)
{
    return gp_tenant_file_parse(text, strlen(text), "tenants.yaml", f, err);
}

static void yaml_gpu_amounts_follow_the_api_rule(void **state)
{
    (void)state;
    gp_tenant_file f;
    gp_error err;
    assert_int_equal(tenant_file("tenants:\n  - path: a\n    guarantee: {gpu: {H100: 2.675, A100: 1e-3, L4: 0.1}}\n",
                                 &f, &err),
                     GP_OK);
    assert_int_equal(f.tenants[0].spec.guarantee.gpu[0].milli, 2675);
    assert_int_equal(f.tenants[0].spec.guarantee.gpu[1].milli, 1);
    assert_int_equal(f.tenants[0].spec.guarantee.gpu[2].milli, 100);
    gp_tenant_file_free(&f);
    const char *bad[] = {"0.0005", "1000000.0001", "1000000000.001", "-1", "\"2\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "tenants:\n  - path: a\n    limit:\n      gpu:\n        H100: %s\n", bad[i]);
        assert_int_not_equal(tenant_file(text, &f, &err), GP_OK);
        assert_string_equal(err.field, "tenants[0].limit.gpu.H100");
        if (strncmp(err.message, "tenants.yaml:5: tenants[0]: limit.gpu.H100 ", 43) != 0)
            fail_msg("%s: message \"%s\"", bad[i], err.message);
    }
}

/* ---- one codec: file and API agree ---- */

static void same_tenant_as_file_and_api(void **state)
{
    (void)state;
    const char *yaml = "tenants:\n"
                       "  - path: research\n"
                       "    guarantee: {gpu: {H100: 16, A100: 0.5}, cpu_millis: 512000, mem_mib: 4194304}\n"
                       "    limit:\n"
                       "      gpu: {H100: 40}\n"
                       "    user_limit: {gpu: {H100: 8}}\n"
                       "    weight: 1.5\n"
                       "    lend: false\n"
                       "    trust: untrusted\n"
                       "    time_limit: {training: 86400, interactive: 0}\n";
    const char *api = "{\"guarantee\": {\"gpu\": {\"H100\": 16, \"A100\": 0.5}, \"cpu_millis\": 512000,"
                      " \"mem_mib\": 4194304}, \"limit\": {\"gpu\": {\"H100\": 40}},"
                      " \"user_limit\": {\"gpu\": {\"H100\": 8}}, \"weight\": 1.5, \"lend\": false,"
                      " \"trust\": \"untrusted\", \"time_limit\": {\"training\": 86400, \"interactive\": 0}}";
    gp_tenant_file f;
    gp_error err;
    assert_int_equal(tenant_file(yaml, &f, &err), GP_OK);
    json_t *body = json_loads(api, 0, NULL);
    gp_tenant_spec from_api;
    assert_int_equal(gp_tenant_spec_parse(body, &from_api, &err), GP_OK);
    assert_memory_equal(&f.tenants[0].spec, &from_api, sizeof from_api);
    assert_int_equal(from_api.guarantee.gpu[1].milli, 500);
    json_decref(body);
    gp_tenant_file_free(&f);
}

static void api_defaults_hold_in_the_file(void **state)
{
    (void)state;
    gp_tenant_file f;
    gp_error err;
    /* weight 0 = the default, time limit 0 = the parent's: as PUT /v1/tenants */
    assert_int_equal(tenant_file("tenants:\n  - {path: a, weight: 0, time_limit: {training: 0}}\n", &f, &err), GP_OK);
    assert_true(f.tenants[0].spec.weight == 0.0);
    assert_int_equal(f.tenants[0].spec.time_limit_s[GP_KIND_TRAINING], 0);
    gp_tenant_file_free(&f);
}

static void same_node_as_file_and_event_log(void **state)
{
    (void)state;
    const char *yaml = "pools: [{name: infer}]\n"
                       "nodes:\n"
                       "  - name: l40s-0\n"
                       "    zone: z1\n"
                       "    block: b1\n"
                       "    gpu_type: L40S\n"
                       "    gpus: 2\n"
                       "    nvlink_domains: 2\n"
                       "    gpu_mem_mib: 46068\n"
                       "    cpu_millis: 64000\n"
                       "    mem_mib: 262144\n"
                       "    sharing: mps\n"
                       "    gpu_uuids: [GPU-a, GPU-b]\n"
                       "    gpu_sharing: [mps, exclusive]\n"
                       "    pool: infer\n";
    const char *log = "{\"name\": \"l40s-0\", \"zone\": \"z1\", \"block\": \"b1\", \"gpu_type\": \"L40S\","
                      " \"gpu_count\": 2, \"nvlink_domains\": 2, \"gpu_mem_mib\": 46068, \"cpu_millis\": 64000,"
                      " \"mem_mib\": 262144, \"sharing\": \"mps\", \"gpu_uuids\": [\"GPU-a\", \"GPU-b\"],"
                      " \"gpu_sharing\": [\"mps\", \"exclusive\"], \"pool\": \"infer\"}";
    gp_fleet_file f;
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(yaml, strlen(yaml), "fleet.yaml", &f, &err), GP_OK);
    json_t *body = json_loads(log, 0, NULL);
    gp_node_request r;
    assert_int_equal(gp_node_request_parse(body, &r, &err), GP_OK);
    const gp_node_spec *a = &f.nodes[0], *b = &r.spec;
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->zone, b->zone);
    assert_string_equal(a->block, b->block);
    assert_string_equal(a->gpu_type, b->gpu_type);
    assert_string_equal(a->pool, b->pool);
    assert_int_equal(a->gpu_count, b->gpu_count);
    assert_int_equal(a->nvlink_domains, b->nvlink_domains);
    assert_int_equal(a->gpu_mem_mib, b->gpu_mem_mib);
    assert_int_equal(a->cpu_millis, b->cpu_millis);
    assert_int_equal(a->mem_mib, b->mem_mib);
    assert_int_equal(a->sharing, b->sharing);
    for (int g = 0; g < 2; g++) {
        assert_string_equal(a->gpu_uuids[g], b->gpu_uuids[g]);
        assert_int_equal(a->gpu_sharing[g], b->gpu_sharing[g]);
    }
    /* and the defaults agree: zone, block, pool "default", one NVLink domain */
    json_t *bare = json_pack("{s:s, s:s, s:i}", "name", "n", "gpu_type", "H100", "gpu_count", 8);
    assert_int_equal(gp_node_request_parse(bare, &r, &err), GP_OK);
    assert_string_equal(r.spec.zone, "default");
    assert_string_equal(r.spec.block, "default");
    assert_string_equal(r.spec.pool, "default");
    assert_int_equal(r.spec.nvlink_domains, 1);
    json_decref(bare);
    json_decref(body);
    gp_fleet_file_free(&f);
}

static void node_rules_hold_in_the_event_log_too(void **state)
{
    (void)state;
    const char *bad[][2] = {
        {"{\"name\": \"n\", \"gpu_type\": \"H100\", \"gpu_count\": 8, \"nvlink_domains\": 3}", "nvlink_domains"},
        {"{\"name\": \"n\", \"gpu_type\": \"H100\", \"gpu_count\": 2, \"gpu_uuids\": [\"x\"]}", "gpu_uuids"},
        {"{\"name\": \"n\", \"gpu_type\": \"H100\"}", "gpu_count"},
        {"{\"name\": \"n\", \"gpu_count\": 8}", "gpu_type"},
        {"{\"name\": \"n\", \"gpu_type\": \"H100\", \"gpus\": 8}", "gpus"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *body = json_loads(bad[i][0], 0, NULL);
        gp_node_request r;
        gp_error err;
        assert_int_equal(gp_node_request_parse(body, &r, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, bad[i][1]);
        json_decref(body);
    }
}

static void codec_errors_in_a_file_name_file_line_and_field(void **state)
{
    (void)state;
    gp_tenant_file f;
    gp_error err;
    const char *text = "# research\n"
                       "tenants:\n"
                       "  - path: research\n"
                       "  - path: research/nlp\n"
                       "    guarantee:\n"
                       "      gpu:\n"
                       "        H100: 16\n"
                       "      cpu_milis: 4\n";
    assert_int_equal(tenant_file(text, &f, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "tenants[1].guarantee.cpu_milis");
    assert_string_equal(err.message, "tenants.yaml:8: tenants[1]: unknown field guarantee.cpu_milis");
    const char *fleet = "nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 8\n    sharing: shared\n";
    gp_fleet_file ff;
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "fleet.yaml", &ff, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "nodes[0].sharing");
    assert_string_equal(err.message,
                        "fleet.yaml:5: nodes[0]: sharing must be one of: exclusive, mig, mps, timeslice");
}

/* ---- the YAML reader ---- */

static json_t *read_yaml(const char *text, gp_yaml_lines *lines, gp_error *err)
{
    json_t *out = NULL;
    if (gp_yaml_to_json(text, strlen(text), "t.yaml", &out, lines, err) != GP_OK)
        return NULL;
    return out;
}

static void yaml_scalars_keep_what_was_written(void **state)
{
    (void)state;
    gp_error err;
    json_t *v = read_yaml("a: \"8\"\nb: 8\nc: 0.5\nd: '1e3'\ne: true\nf: ~\ng: 99999999999999999999\n"
                          "h: 1.\ni: +5\nj: yes\nk: \"no\"\nl: no\n",
                          NULL, &err);
    assert_non_null(v);
    assert_true(json_is_string(json_object_get(v, "a"))); /* quoted stays a string */
    assert_int_equal(json_integer_value(json_object_get(v, "b")), 8);
    assert_true(json_is_real(json_object_get(v, "c")));
    assert_true(json_is_string(json_object_get(v, "d")));
    assert_true(json_is_true(json_object_get(v, "e")));
    assert_true(json_is_null(json_object_get(v, "f")));
    /* not JSON numbers: the codec sees the text and refuses it by name */
    assert_true(json_is_string(json_object_get(v, "g")));
    assert_true(json_is_string(json_object_get(v, "h")));
    assert_true(json_is_string(json_object_get(v, "i")));
    /* yes/no are booleans, as the CLI's --lend yes|no; quoted, a string */
    assert_true(json_is_true(json_object_get(v, "j")));
    assert_true(json_is_string(json_object_get(v, "k")));
    assert_true(json_is_false(json_object_get(v, "l")));
    json_decref(v);
}

static void yaml_refuses_duplicates_and_aliases(void **state)
{
    (void)state;
    gp_error err;
    assert_null(read_yaml("a:\n  b: 1\n  c: 2\n  b: 3\n", NULL, &err));
    assert_string_equal(err.field, "a.b");
    assert_string_equal(err.message, "t.yaml:4: a.b is given twice (first on line 2)");
    assert_null(read_yaml("x: &q {gpu: {H100: 1}}\ny: *q\n", NULL, &err));
    assert_non_null(strstr(err.message, "aliases"));
    assert_null(read_yaml("a: [1\n", NULL, &err));
    assert_string_equal(err.field, "file");
    assert_int_equal(strncmp(err.message, "t.yaml:2: ", 10), 0);
}

static void yaml_line_map(void **state)
{
    (void)state;
    gp_error err;
    gp_yaml_lines lines;
    json_t *v = read_yaml("nodes:\n  - name: a\n\n    gpus: 8\n  - {name: b, gpus: 4}\n", &lines, &err);
    assert_non_null(v);
    assert_int_equal(gp_yaml_line(&lines, "nodes[0].gpus"), 4);
    assert_int_equal(gp_yaml_line(&lines, "nodes[1].gpus"), 5);
    assert_int_equal(gp_yaml_line(&lines, "nodes[0].missing"), 2); /* the entry's line */
    assert_int_equal(gp_yaml_line(&lines, "nowhere"), 1);
    json_decref(v);
    gp_yaml_lines_free(&lines);
}

static void cli_values_go_as_written(void **state)
{
    (void)state;
    const char *numbers[] = {"8", "0.5", "-1", "1e3", "0.0005"};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        json_t *v = gp_json_number_or_string(numbers[i]);
        assert_true(json_is_number(v));
        json_decref(v);
    }
    const char *texts[] = {"abc", "", "8x", " 8", "true", "1e400", "99999999999999999999", "0x10"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_t *v = gp_json_number_or_string(texts[i]);
        assert_true(json_is_string(v));
        assert_string_equal(json_string_value(v), texts[i]);
        json_decref(v);
    }
}

/* ---- enum names ---- */

static void enum_names_round_trip(void **state)
{
    (void)state;
    const int counts[GP_ENUM_COUNT] = {
        [GP_ENUM_JOB_STATE] = GP_JOB_CANCELLED + 1,      [GP_ENUM_CLASS] = GP_CLASS_BURSTABLE + 1,
        [GP_ENUM_TOPOLOGY] = GP_TOPO_NVLINK + 1,         [GP_ENUM_ISOLATION] = GP_ISO_TIMESLICE + 1,
        [GP_ENUM_JOB_KIND] = GP_KIND_INTERACTIVE + 1,    [GP_ENUM_DECISION_KIND] = GP_DEC_BOOKING + 1,
        [GP_ENUM_SHARING] = GP_SHARING_TIMESLICE + 1,    [GP_ENUM_SCORE] = GP_SCORE_SPREAD + 1,
        [GP_ENUM_TRUST] = GP_TRUST_UNTRUSTED + 1,        [GP_ENUM_RESTART_POLICY] = GP_RESTART_ON_FAILURE + 1,
        [GP_ENUM_STOP_SIGNAL] = GP_STOP_SIGUSR2 + 1,     [GP_ENUM_NODES] = GP_NODES_DEDICATED + 1,
        [GP_ENUM_CANCEL] = GP_CANCEL_TENANT + 1,        [GP_ENUM_BOOKING] = GP_BOOKING_MEMBERS + 1,
    };
    for (int e = 0; e < GP_ENUM_COUNT; e++) {
        assert_int_equal(gp_enum_count((gp_enum)e), counts[e]);
        for (int v = 0; v < counts[e]; v++) {
            int back = -1;
            assert_string_not_equal(gp_enum_name((gp_enum)e, v), "unknown");
            assert_true(gp_enum_value((gp_enum)e, gp_enum_name((gp_enum)e, v), &back));
            assert_int_equal(back, v);
        }
        int untouched = 42;
        assert_false(gp_enum_value((gp_enum)e, "no-such-name", &untouched));
        assert_false(gp_enum_value((gp_enum)e, NULL, &untouched));
        assert_int_equal(untouched, 42);
        assert_string_equal(gp_enum_name((gp_enum)e, counts[e]), "unknown");
        assert_string_equal(gp_enum_name((gp_enum)e, -1), "unknown");
    }
    assert_string_equal(gp_sharing_name(GP_SHARING_TIMESLICE), "timeslice");
    assert_string_equal(gp_score_name(GP_SCORE_FGD), "fgd");
    assert_string_equal(gp_trust_name(GP_TRUST_UNTRUSTED), "untrusted");
    assert_string_equal(gp_restart_policy_name(GP_RESTART_ON_FAILURE), "on-failure");
    assert_string_equal(gp_job_state_name(GP_JOB_PREEMPTING), "preempting");
}

static void bad_enum_value_lists_the_names(void **state)
{
    (void)state;
    json_t *v = json_string("paper");
    gp_error err;
    int out = 0;
    assert_int_equal(gp_json_enum(v, "score", GP_ENUM_SCORE, &out, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "score");
    assert_string_equal(err.message,
                        "score must be one of: default, bestfit, fgd, random, dotprod, clustering, packing, spread");
    json_decref(v);
}

/* An unknown field of a job or a node: the nearest known name, else what
 * another scheduler's name stands for (any case, "-" as "_"); a name
 * near nothing gets no guess. */
static void unknown_fields_get_did_you_mean(void **state)
{
    (void)state;
    const struct {
        const char *body, *message;
        bool node;
    } cases[] = {
        {"{\"tenant\": \"t\", \"gpu\": 2}", "unknown field gpu; did you mean gpus?", false},
        {"{\"tenant\": \"t\", \"imge\": \"x\"}", "unknown field imge; did you mean image?", false},
        {"{\"tenant\": \"t\", \"GPUS-PER-NODE\": 2}", "unknown field GPUS-PER-NODE; did you mean gpus?", false},
        {"{\"tenant\": \"t\", \"frobnicate\": 2}", "unknown field frobnicate", false},
        {"{\"name\": \"n\", \"gpu_type\": \"H100\", \"gpus_per_node\": 8}",
         "unknown field gpus_per_node; did you mean gpus?", true},
        {"{\"name\": \"n\", \"gpu_model\": \"H100\", \"gpus\": 8}", "unknown field gpu_model; did you mean gpu_type?",
         true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *body = json_loads(cases[i].body, 0, NULL);
        gp_error err;
        gp_job_request job;
        gp_node_request node;
        gp_err rc = cases[i].node ? gp_fleet_node_parse(body, &node, &err) : gp_job_request_parse(body, false, &job, &err);
        assert_int_equal(rc, GP_ERR_INVALID);
        assert_string_equal(err.message, cases[i].message);
        if (!cases[i].node)
            gp_job_request_free(&job);
        json_decref(body);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(api_gpu_amounts_are_exact_decimals),
        cmocka_unit_test(decimal_text_amounts),
        cmocka_unit_test(yaml_gpu_amounts_follow_the_api_rule),
        cmocka_unit_test(same_tenant_as_file_and_api),
        cmocka_unit_test(api_defaults_hold_in_the_file),
        cmocka_unit_test(same_node_as_file_and_event_log),
        cmocka_unit_test(node_rules_hold_in_the_event_log_too),
        cmocka_unit_test(codec_errors_in_a_file_name_file_line_and_field),
        cmocka_unit_test(yaml_scalars_keep_what_was_written),
        cmocka_unit_test(yaml_refuses_duplicates_and_aliases),
        cmocka_unit_test(yaml_line_map),
        cmocka_unit_test(cli_values_go_as_written),
        cmocka_unit_test(enum_names_round_trip),
        cmocka_unit_test(bad_enum_value_lists_the_names),
        cmocka_unit_test(unknown_fields_get_did_you_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
