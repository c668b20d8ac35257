/* test_fleet_file.c - the fleet file reader (src/config/fleet_file.c).
 *
 * Semantics under test (fleet_file.h, docs/fleet-file.md): YAML and JSON
 * both read; defaults; `count: N` expands to NAME-0..NAME-(N-1); every kind
 * of mistake (unknown field, wrong type, quoted number, out of range,
 * missing required field, duplicate key, duplicate node, unknown pool,
 * list lengths, syntax error) is an error naming the file, the line and
 * the field; applying a file adds the nodes to an engine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/fleet_file.h"

static gp_fleet_file parse_ok(const char *text)
{
    gp_fleet_file f;
    gp_error err;
    gp_err rc = gp_fleet_file_parse(text, strlen(text), "fleet.yaml", &f, &err);
    if (rc != GP_OK)
        fail_msg("parse failed: %s: %s", err.field, err.message);
    return f;
}

/* The file must be refused with `field` and a message starting with
 * "fleet.yaml:LINE:". */
static void expect_error(const char *text, int line, const char *field)
{
    gp_fleet_file f;
    gp_error err;
    gp_err rc = gp_fleet_file_parse(text, strlen(text), "fleet.yaml", &f, &err);
    if (rc == GP_OK)
        fail_msg("accepted a bad file, expected an error on %s", field);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "fleet.yaml:%d:", line);
    if (strncmp(err.message, prefix, strlen(prefix)) != 0 || strcmp(err.field, field) != 0)
        fail_msg("got field %s message \"%s\", want field %s at %s", err.field, err.message, field, prefix);
    assert_null(f.nodes);
}

static void yaml_with_defaults(void **state)
{
    (void)state;
    gp_fleet_file f = parse_ok("nodes:\n"
                               "  - name: a\n"
                               "    gpu_type: H100\n"
                               "    gpus: 8\n");
    assert_int_equal(f.n_nodes, 1);
    assert_int_equal(f.n_pools, 0);
    const gp_node_spec *n = &f.nodes[0];
    assert_string_equal(n->name, "a");
    assert_string_equal(n->zone, "default");
    assert_string_equal(n->block, "default");
    assert_string_equal(n->pool, "default");
    assert_string_equal(n->gpu_type, "H100");
    assert_int_equal(n->gpu_count, 8);
    assert_int_equal(n->nvlink_domains, 1);
    assert_int_equal(n->cpu_millis, 0);
    assert_int_equal(n->sharing, GP_SHARING_EXCLUSIVE);
    assert_null(n->gpu_uuids);
    assert_null(n->gpu_sharing);
    gp_fleet_file_free(&f);
}

static void count_expands_names(void **state)
{
    (void)state;
    gp_fleet_file f = parse_ok("pools:\n"
                               "  - name: infer\n"
                               "    score: fgd\n"
                               "    timeslice_replicas: 2\n"
                               "    seed: 7\n"
                               "nodes:\n"
                               "  - name: h100-a\n"
                               "    count: 3\n"
                               "    zone: z1\n"
                               "    block: blk-a\n"
                               "    gpu_type: H100\n"
                               "    gpus: 8\n"
                               "    nvlink_domains: 2\n"
                               "    gpu_mem_mib: 81920\n"
                               "    cpu_millis: 192000\n"
                               "    mem_mib: 2097152\n"
                               "    sharing: mps\n"
                               "    pool: infer\n"
                               "  - name: solo\n"
                               "    gpu_type: L40S\n"
                               "    gpus: 2\n"
                               "    gpu_uuids: [u0, u1]\n"
                               "    gpu_sharing: [mig, exclusive]\n");
    assert_int_equal(f.n_nodes, 4);
    assert_string_equal(f.nodes[0].name, "h100-a-0");
    assert_string_equal(f.nodes[2].name, "h100-a-2");
    assert_string_equal(f.nodes[2].block, "blk-a");
    assert_string_equal(f.nodes[2].pool, "infer");
    assert_int_equal(f.nodes[2].nvlink_domains, 2);
    assert_int_equal(f.nodes[2].cpu_millis, 192000);
    assert_int_equal(f.nodes[2].sharing, GP_SHARING_MPS);
    assert_string_equal(f.nodes[3].name, "solo");
    assert_string_equal(f.nodes[3].gpu_uuids[1], "u1");
    assert_int_equal(f.nodes[3].gpu_sharing[0], GP_SHARING_MIG);
    assert_int_equal(f.n_pools, 1);
    assert_string_equal(f.pools[0].name, "infer");
    assert_int_equal(f.pools[0].spec.score, GP_SCORE_FGD);
    assert_int_equal(f.pools[0].spec.timeslice_replicas, 2);
    assert_int_equal(f.pools[0].spec.seed, 7);
    gp_fleet_file_free(&f);
}

static void json_is_accepted(void **state)
{
    (void)state;
    gp_fleet_file f = parse_ok("{\"nodes\": [{\"name\": \"n\", \"count\": 2, \"gpu_type\": \"A100\",\n"
                               "  \"gpus\": 4, \"cpu_millis\": 64000, \"mem_mib\": 512000}]}");
    assert_int_equal(f.n_nodes, 2);
    assert_string_equal(f.nodes[1].name, "n-1");
    assert_int_equal(f.nodes[1].gpu_count, 4);
    gp_fleet_file_free(&f);
}

static void unknown_field(void **state)
{
    (void)state;
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 8\n    gpu: 3\n", 5, "nodes[0].gpu");
    expect_error("nodes: []\nnode: []\n", 2, "node");
    expect_error("pools:\n  - name: p\n    scor: fgd\nnodes: []\n", 3, "pools[0].scor");
}

static void wrong_types(void **state)
{
    (void)state;
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: eight\n", 4, "nodes[0].gpus");
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: \"8\"\n", 4, "nodes[0].gpus");
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: [8]\n", 4, "nodes[0].gpus");
    expect_error("nodes:\n  - name: [a]\n    gpu_type: H100\n    gpus: 8\n", 2, "nodes[0].name");
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 8\n    sharing: shared\n", 5, "nodes[0].sharing");
    expect_error("nodes:\n  name: a\n", 2, "nodes");
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 8\n    cpu_millis: 1.5\n", 5, "nodes[0].cpu_millis");
}

static void out_of_range(void **state)
{
    (void)state;
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 17\n", 4, "nodes[0].gpus");
    expect_error("nodes:\n  - name: a\n    count: 0\n    gpu_type: H100\n    gpus: 8\n", 3, "nodes[0].count");
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 8\n    nvlink_domains: 3\n", 5,
                 "nodes[0].nvlink_domains");
    expect_error("pools:\n  - name: p\n    timeslice_replicas: 9\nnodes: []\n", 3, "pools[0].timeslice_replicas");
}

static void missing_and_duplicates(void **state)
{
    (void)state;
    expect_error("nodes:\n  - name: a\n    gpus: 8\n", 2, "nodes[0].gpu_type");
    expect_error("nodes:\n  - gpu_type: H100\n    gpus: 8\n", 2, "nodes[0].name");
    expect_error("pools: []\n", 1, "nodes");
    expect_error("nodes:\n  - name: a\n    gpu_type: H100\n    gpus: 8\n    gpus: 4\n", 5, "nodes[0].gpus");
    expect_error("nodes:\n  - {name: a-1, gpu_type: H100, gpus: 8}\n"
                 "  - {name: a, count: 2, gpu_type: H100, gpus: 8}\n",
                 3, "nodes[1].name");
    expect_error("nodes:\n  - {name: a, gpu_type: H100, gpus: 8, pool: nowhere}\n", 2, "nodes[0].pool");
    expect_error("pools:\n  - {name: p}\n  - {name: p}\nnodes: []\n", 3, "pools[1].name");
    expect_error("nodes:\n  - {name: a, gpu_type: H100, gpus: 2, gpu_uuids: [x]}\n", 2, "nodes[0].gpu_uuids");
}

static void syntax_error(void **state)
{
    (void)state;
    expect_error("nodes:\n  - name: a\n    gpus: [8\n", 4, "file");
    expect_error("", 1, "nodes");
}

/* The file's top, checked by the skeleton every file reader shares
 * (config/yaml_file.h): each message whole, as it was before the skeleton. */
static void expect_message(const char *text, const char *field, const char *message)
{
    gp_fleet_file f;
    gp_error err;
    assert_int_not_equal(gp_fleet_file_parse(text, strlen(text), "fleet.yaml", &f, &err), GP_OK);
    assert_string_equal(err.field, field);
    assert_string_equal(err.message, message);
    assert_null(f.nodes);
    assert_null(f.pools);
}

static void the_top_is_checked_with_these_messages(void **state)
{
    (void)state;
    expect_message("", "nodes", "fleet.yaml:1: the fleet file is empty");
    expect_message("[a]\n", "nodes", "fleet.yaml:1: a fleet file is a mapping with pools and nodes");
    expect_message("nodes: []\nracks: []\n", "racks",
                   "fleet.yaml:2: unknown field racks (a fleet file has pools and nodes)");
    expect_message("pools: []\n", "nodes", "fleet.yaml:1: the fleet file has no nodes list");
    expect_message("nodes: 3\n", "nodes", "fleet.yaml:1: nodes must be a list");
    expect_message("pools: {}\nnodes: []\n", "pools", "fleet.yaml:1: pools must be a list");
    expect_message("nodes:\n  - a\n", "nodes[0]", "fleet.yaml:2: nodes[0] must be a mapping");
    expect_message("pools:\n  - p\nnodes: []\n", "pools[0]", "fleet.yaml:2: pools[0] must be a mapping");
}

static void load_missing_file(void **state)
{
    (void)state;
    gp_fleet_file f;
    gp_error err;
    assert_int_equal(gp_fleet_file_load("/nonexistent/fleet.yaml", &f, &err), GP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.message, "/nonexistent/fleet.yaml"));
}

static void apply_adds_nodes(void **state)
{
    (void)state;
    gp_fleet_file f = parse_ok("nodes:\n"
                               "  - {name: h, count: 2, block: b0, gpu_type: H100, gpus: 8,"
                               " cpu_millis: 1000, mem_mib: 1000}\n"
                               "  - {name: l, block: b1, gpu_type: L40S, gpus: 4, cpu_millis: 1000,"
                               " mem_mib: 1000}\n");
    gp_engine *e = gp_engine_new(NULL);
    gp_error err;
    assert_int_equal(gp_fleet_file_apply(&f, e, 0, &err), GP_OK);
    assert_int_equal(gp_engine_node_count(e), 3);
    assert_int_equal(gp_engine_gpu_count(e), 20);
    gp_fleet_file_free(&f);
    gp_engine_free(e);
}

static void apply_sets_pools(void **state)
{
    (void)state;
    gp_fleet_file f = parse_ok("pools: [{name: infer, score: bestfit}]\n"
                               "nodes:\n"
                               "  - {name: a, gpu_type: L40S, gpus: 4, sharing: mps, pool: infer,"
                               " cpu_millis: 1000, mem_mib: 1000}\n");
    gp_engine *e = gp_engine_new(NULL);
    gp_error err;
    assert_int_equal(gp_fleet_file_apply(&f, e, 0, &err), GP_OK);
    gp_gpu_info g;
    assert_true(gp_engine_gpu_get(e, 0, &g));
    assert_int_equal(g.sharing, GP_SHARING_MPS);
    gp_fleet_file_free(&f);
    gp_engine_free(e);
}

/* A pool's owner: a tenant path with or without its '/', and whether the
 * file said one (without it, the owner set by the API stays: fleet_sync.c). */
static void pools_name_their_owner(void **state)
{
    (void)state;
    gp_fleet_file f = parse_ok("pools: [{name: team-a, owner: /org/a}, {name: team-b, owner: org/b},"
                               " {name: open}, {name: freed, owner: null}]\n"
                               "nodes: []\n");
    assert_int_equal(f.n_pools, 4);
    assert_string_equal(f.pools[0].spec.owner, "org/a");
    assert_string_equal(f.pools[1].spec.owner, "org/b");
    assert_true(f.pools[0].owner_given && f.pools[1].owner_given && f.pools[3].owner_given);
    assert_false(f.pools[2].owner_given);
    assert_string_equal(f.pools[2].spec.owner, "");
    assert_string_equal(f.pools[3].spec.owner, "");
    gp_fleet_file_free(&f);
    expect_error("pools: [{name: p, owner: 3}]\nnodes: []\n", 1, "pools[0].owner");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yaml_with_defaults), cmocka_unit_test(count_expands_names),
        cmocka_unit_test(json_is_accepted),   cmocka_unit_test(unknown_field),
        cmocka_unit_test(wrong_types),        cmocka_unit_test(out_of_range),
        cmocka_unit_test(missing_and_duplicates), cmocka_unit_test(syntax_error),
        cmocka_unit_test(load_missing_file),  cmocka_unit_test(apply_adds_nodes),
        cmocka_unit_test(apply_sets_pools),   cmocka_unit_test(the_top_is_checked_with_these_messages),
        cmocka_unit_test(pools_name_their_owner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
