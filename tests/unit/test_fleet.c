/* test_fleet.c - node registration, node loss, GPU health, fleet capacity.
 *
 * Semantics under test (engine.h, types.h, docs/scheduling.md "Node and GPU
 * events", docs/fleet-file.md "Node fields"): a node spec has 1..16 GPUs and
 * an nvlink_domains count that divides them; a name comes back only with the
 * same shape; at most GP_MAX_GPU_TYPES types per fleet.  When a node is lost
 * or a GPU under a job turns unhealthy, the whole job is stopped at once
 * (STOP, grace 0), its GPUs released (except the lost ones) and it goes back
 * to PENDING with the same id.  A returning node keeps its GPUs'
 * health.  Fleet capacity counts healthy GPUs on up nodes only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

static gp_err add_node(tb_world *w, const gp_node_spec *s, gp_error *err)
{
    gp_error_clear(err);
    return gp_engine_node_add(w->e, s, gp_engine_now(w->e), err);
}

static void expect_node_rejected(tb_world *w, const gp_node_spec *s, gp_err code, const char *field)
{
    size_t nodes = gp_engine_node_count(w->e), gpus = gp_engine_gpu_count(w->e);
    gp_error err;
    gp_err rc = add_node(w, s, &err);
    if (rc != code)
        fail_msg("node %s: got %s (%s: %s), want %s", s->name, gp_err_name(rc), err.field, err.message,
                 gp_err_name(code));
    assert_string_equal(err.field, field);
    assert_int_equal(gp_engine_node_count(w->e), nodes);
    assert_int_equal(gp_engine_gpu_count(w->e), gpus);
}

static void stopped_and_requeued(tb_world *w, uint64_t id, int64_t now)
{
    const gp_decision *stop = tb_find(w, id, GP_DEC_STOP);
    assert_non_null(stop);
    assert_int_equal(stop->grace_s, 0);
    assert_int_equal(stop->time, now);
    const gp_decision *t = NULL;
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_TRANSITION && d[i].job_id == id && d[i].to == GP_JOB_PENDING)
            t = &d[i];
    assert_non_null(t);
    gp_job_info info = tb_info(w, id);
    assert_int_equal(info.id, id);
    assert_int_equal(info.state, GP_JOB_PENDING);
    uint32_t gpu;
    assert_int_equal(gp_engine_job_gpus(w->e, id, &gpu, 1), 0);
    const gp_decision *close = tb_find(w, id, GP_DEC_USAGE_CLOSE);
    assert_non_null(close);
    assert_int_equal(close->usage.end, now);
}

/* ---- node_add validation ---- */

static void gpu_count_out_of_range_is_invalid(void **state)
{
    tb_world *w = *state;
    gp_node_spec s = tb_node_spec("n00", "H100", 0, "b0");
    expect_node_rejected(w, &s, GP_ERR_INVALID, "gpu_count");
    s.gpu_count = GP_MAX_GPUS_PER_NODE + 1;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "gpu_count");
    s.gpu_count = GP_MAX_GPUS_PER_NODE;
    gp_error err;
    assert_int_equal(add_node(w, &s, &err), GP_OK);
}

static void nvlink_domains_must_divide_gpu_count(void **state)
{
    tb_world *w = *state;
    gp_node_spec s = tb_node_spec("n00", "H100", 8, "b0");
    s.nvlink_domains = 3;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "nvlink_domains");
    s.nvlink_domains = 0;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "nvlink_domains");
    s.nvlink_domains = 2;
    gp_error err;
    assert_int_equal(add_node(w, &s, &err), GP_OK);
    /* 4 GPUs per domain: GPU 5 is in domain 1 */
    assert_int_equal(tb_gpu(w, tb_gpu_of(w, "n00", 5)).nvlink_domain, 1);
}

static void bad_node_names_are_invalid(void **state)
{
    tb_world *w = *state;
    gp_node_spec s = tb_node_spec("", "H100", 8, "b0");
    expect_node_rejected(w, &s, GP_ERR_INVALID, "name");
    char long_name[GP_NAME_MAX + 1];
    memset(long_name, 'n', GP_NAME_MAX);
    long_name[GP_NAME_MAX] = '\0'; /* 64 chars: names are 1..63 */
    s.name = long_name;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "name");
}

/* Node specs are caller data (fleet files, agents' registrations): each
 * bad field is refused with its name and adds nothing. */
static void bad_node_fields_are_refused_with_the_field_named(void **state)
{
    tb_world *w = *state;
    const gp_node_spec good = tb_node_spec("n00", "H100", 2, "b0");
    gp_node_spec s = good;
    s.cpu_millis = -1;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "cpu_millis");
    s = good;
    s.mem_mib = -1;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "mem_mib");
    s = good;
    s.gpu_mem_mib = -1;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "gpu_mem_mib");
    s = good;
    s.sharing = (gp_sharing)99;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "sharing");
    s = good;
    s.pool = "";
    expect_node_rejected(w, &s, GP_ERR_INVALID, "pool");
    char long_pool[GP_NAME_MAX + 1];
    memset(long_pool, 'p', GP_NAME_MAX);
    long_pool[GP_NAME_MAX] = '\0';
    s.pool = long_pool;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "pool");
    s = good;
    const char *uuids[] = {"GPU-a", NULL};
    s.gpu_uuids = uuids;
    expect_node_rejected(w, &s, GP_ERR_INVALID, "gpu_uuids");
    gp_error err;
    assert_int_equal(add_node(w, &good, &err), GP_OK);
}

static void a_block_is_in_one_zone(void **state)
{
    tb_world *w = *state;
    gp_node_spec s = tb_node_spec("n00", "H100", 2, "b0");
    s.zone = "z0";
    gp_error err;
    assert_int_equal(add_node(w, &s, &err), GP_OK);
    s = tb_node_spec("n01", "H100", 2, "b0");
    s.zone = "z1";
    expect_node_rejected(w, &s, GP_ERR_INVALID, "zone");
}

static void same_name_with_another_shape_is_refused(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_node_spec s = tb_node_spec("n00", "H100", 4, "b0");
    expect_node_rejected(w, &s, GP_ERR_EXISTS, "name");
    s = tb_node_spec("n00", "A100", 8, "b0");
    expect_node_rejected(w, &s, GP_ERR_EXISTS, "name");
    gp_node_info n = tb_node(w, "n00");
    assert_int_equal(n.gpu_count, 8);
    assert_int_equal(n.type, tb_type_index(w, "H100"));
}

static void same_name_with_same_shape_is_a_return(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_node_spec s = tb_node_spec("n00", "H100", 8, "b0");
    gp_error err;
    assert_int_equal(add_node(w, &s, &err), GP_OK);
    assert_int_equal(gp_engine_node_count(w->e), 1);
    assert_int_equal(gp_engine_gpu_count(w->e), 8);
}

static void ninth_gpu_type_is_refused(void **state)
{
    tb_world *w = *state;
    char type[16];
    for (int i = 0; i < GP_MAX_GPU_TYPES; i++) {
        snprintf(type, sizeof type, "T%d", i);
        tb_add_nodes(w, 1, type, 8, "b0", "z0");
    }
    assert_int_equal(gp_engine_gpu_type_count(w->e), 8);
    gp_node_spec s = tb_node_spec("extra", "T8", 8, "b0");
    expect_node_rejected(w, &s, GP_ERR_INVALID, "gpu_type");
    assert_int_equal(gp_engine_gpu_type_count(w->e), 8);
    s.gpu_type = "T3"; /* a known type is still fine */
    gp_error err;
    assert_int_equal(add_node(w, &s, &err), GP_OK);
}

static void events_on_unknown_nodes_are_not_found(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    assert_int_equal(gp_engine_node_lost(w->e, "ghost", 0, NULL), GP_ERR_NOT_FOUND);
    assert_int_equal(gp_engine_node_drain(w->e, "ghost", true, 0, NULL), GP_ERR_NOT_FOUND);
    assert_int_equal(gp_engine_gpu_health(w->e, "ghost", 0, false, 0, NULL), GP_ERR_NOT_FOUND);
}

static void node_events_refuse_time_going_backwards(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_advance(w, 100);
    gp_node_spec s = tb_node_spec("n01", "H100", 8, "b0");
    assert_int_equal(gp_engine_node_add(w->e, &s, 50, NULL), GP_ERR_TIME);
    assert_int_equal(gp_engine_node_count(w->e), 1);
    assert_int_equal(gp_engine_node_lost(w->e, "n00", 50, NULL), GP_ERR_TIME);
    assert_true(tb_node(w, "n00").up);
    assert_int_equal(gp_engine_node_drain(w->e, "n00", true, 50, NULL), GP_ERR_TIME);
    assert_false(tb_node(w, "n00").draining);
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", 0, false, 50, NULL), GP_ERR_TIME);
    assert_true(tb_gpu(w, tb_gpu_of(w, "n00", 0)).healthy);
}

/* ---- node lost ---- */

static void lost_node_requeues_its_jobs(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "t", 120); /* its grace does not apply to node loss */
    s.gpus = 8;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    tb_submit(w, 2, "t", 1, 8, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    uint64_t on_n00 = tb_job_node(w, 1) == tb_node_index(w, "n00") ? 1 : 2;
    uint64_t other = 3 - on_n00;

    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_node_lost(w->e, "n00", 100, NULL), GP_OK);
    stopped_and_requeued(w, on_n00, 100);
    assert_null(tb_find(w, other, GP_DEC_STOP));
    assert_int_equal(tb_state(w, other), GP_JOB_RUNNING);
    assert_false(tb_node(w, "n00").up);

    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 0); /* n01 is full, n00 gone */
    gp_node_spec back = tb_node_spec("n00", "H100", 8, "b0");
    assert_int_equal(gp_engine_node_add(w->e, &back, 200, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, on_n00), tb_node_index(w, "n00"));
    tb_assert_gpus_consistent(w);
}

static void lost_node_stops_the_whole_gang(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 3, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    tb_submit(w, 1, "t", 2, 8, 0); /* two of the three nodes */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    uint32_t gpus[16];
    assert_int_equal(gp_engine_job_gpus(w->e, 1, gpus, 16), 16);
    uint32_t lost = tb_gpu(w, gpus[0]).node;
    gp_node_info lost_node;
    assert_true(gp_engine_node_get(w->e, lost, &lost_node));

    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_node_lost(w->e, lost_node.name, 100, NULL), GP_OK);
    stopped_and_requeued(w, 1, 100);
    for (int i = 8; i < 16; i++) /* the replica on the surviving node is released too */
        assert_int_equal(tb_gpu(w, gpus[i]).job, 0);

    /* two nodes are still up: the gang runs again, not on the lost one */
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 1);
    assert_int_equal(gp_engine_job_gpus(w->e, 1, gpus, 16), 16);
    for (int i = 0; i < 16; i++)
        assert_int_not_equal(tb_gpu(w, gpus[i]).node, lost);
    tb_assert_gpus_consistent(w);
}

/* ---- GPU health ---- */

static void unhealthy_gpu_under_a_job_requeues_it(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    tb_submit(w, 1, "t", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    uint32_t bad;
    assert_int_equal(gp_engine_job_gpus(w->e, 1, &bad, 1), 1);
    gp_gpu_info gi = tb_gpu(w, bad);

    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", gi.index, false, 50, NULL), GP_OK);
    stopped_and_requeued(w, 1, 50);
    assert_false(tb_gpu(w, bad).healthy);
    assert_int_equal(tb_gpu(w, bad).job, 0);

    assert_int_equal(tb_tick(w, 60, GP_DEC_BIND), 1);
    uint32_t again;
    assert_int_equal(gp_engine_job_gpus(w->e, 1, &again, 1), 1);
    assert_int_not_equal(again, bad);
}

static void health_change_of_a_free_gpu_stops_nothing(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    tb_submit(w, 1, "t", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    uint32_t used;
    assert_int_equal(gp_engine_job_gpus(w->e, 1, &used, 1), 1);
    int free_index = tb_gpu(w, used).index == 0 ? 1 : 0;
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", free_index, false, 10, NULL), GP_OK);
    assert_int_equal(tb_count(w, GP_DEC_STOP), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
}

/* ---- capacity ---- */

static void fleet_capacity_excludes_unhealthy_gpus_and_down_nodes(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    gp_res cap;
    gp_engine_fleet_capacity(w->e, &cap);
    assert_int_equal(cap.v[0], 16000);
    assert_int_equal(cap.v[GP_DIM_CPU], 2 * TB_NODE_CPU_MILLIS);
    assert_int_equal(cap.v[GP_DIM_MEM], 2 * (int64_t)TB_NODE_MEM_MIB);

    assert_int_equal(gp_engine_gpu_health(w->e, "n00", 2, false, 0, NULL), GP_OK);
    gp_engine_fleet_capacity(w->e, &cap);
    assert_int_equal(cap.v[0], 15000);

    assert_int_equal(gp_engine_node_lost(w->e, "n01", 0, NULL), GP_OK);
    gp_engine_fleet_capacity(w->e, &cap);
    assert_int_equal(cap.v[0], 7000); /* n00's 7 healthy GPUs */
    assert_int_equal(cap.v[GP_DIM_CPU], TB_NODE_CPU_MILLIS);
    assert_int_equal(cap.v[GP_DIM_MEM], TB_NODE_MEM_MIB);
}

/* What the ledger records as capacity: every node's GPUs, down or not. */
static void gpus_by_type_count_every_node_up_or_down(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_add_nodes(w, 1, "A100", 4, "b1", "z0");
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", 2, false, 0, NULL), GP_OK);
    assert_int_equal(gp_engine_node_lost(w->e, "n01", 0, NULL), GP_OK);
    int64_t gpus[GP_MAX_GPU_TYPES];
    gp_engine_gpus_by_type(w->e, gpus);
    assert_int_equal(gpus[0], 16);
    assert_int_equal(gpus[1], 4);
    assert_int_equal(gpus[2], 0);
}

static void returning_node_keeps_its_gpu_health(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", 2, false, 0, NULL), GP_OK);
    assert_int_equal(gp_engine_node_lost(w->e, "n00", 10, NULL), GP_OK);
    gp_node_spec back = tb_node_spec("n00", "H100", 8, "b0");
    assert_int_equal(gp_engine_node_add(w->e, &back, 20, NULL), GP_OK);
    assert_true(tb_node(w, "n00").up);
    assert_false(tb_gpu(w, tb_gpu_of(w, "n00", 2)).healthy);
    gp_res cap;
    gp_engine_fleet_capacity(w->e, &cap);
    assert_int_equal(cap.v[0], 7000);
}

/* GPU model names match without regard to case, in nodes, quotas and
 * jobs; an unknown one is refused with the names that exist. */
static void gpu_type_names_match_without_regard_to_case(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_node_spec again = tb_node_spec("h100-late", "h100", 8, "b0");
    assert_int_equal(gp_engine_node_add(w->e, &again, 0, NULL), GP_OK);
    assert_int_equal(tb_node(w, "h100-late").type, tb_type_index(w, "H100")); /* one type, not two */
    tb_tenant(w, "team", "h100", 4, -1); /* the fleet's H100 */
    assert_int_equal(tb_tenant_info(w, "team").guarantee.v[tb_type_index(w, "H100")], 4000);
    gp_job_spec s = tb_job(1, "team", 30);
    s.gpu_types[0] = "h100";
    s.n_gpu_types = 1;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    gp_job_spec bad = tb_job(2, "team", 30);
    bad.gpu_types[0] = "H10O";
    bad.n_gpu_types = 1;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &bad, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu_types");
    assert_non_null(strstr(err.message, "known: H100"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(gpu_count_out_of_range_is_invalid),
        TB_TEST(gpu_type_names_match_without_regard_to_case),
        TB_TEST(nvlink_domains_must_divide_gpu_count),
        TB_TEST(bad_node_names_are_invalid),
        TB_TEST(bad_node_fields_are_refused_with_the_field_named),
        TB_TEST(a_block_is_in_one_zone),
        TB_TEST(same_name_with_another_shape_is_refused),
        TB_TEST(same_name_with_same_shape_is_a_return),
        TB_TEST(ninth_gpu_type_is_refused),
        TB_TEST(events_on_unknown_nodes_are_not_found),
        TB_TEST(node_events_refuse_time_going_backwards),
        TB_TEST(lost_node_requeues_its_jobs),
        TB_TEST(lost_node_stops_the_whole_gang),
        TB_TEST(unhealthy_gpu_under_a_job_requeues_it),
        TB_TEST(health_change_of_a_free_gpu_stops_nothing),
        TB_TEST(fleet_capacity_excludes_unhealthy_gpus_and_down_nodes),
        TB_TEST(gpus_by_type_count_every_node_up_or_down),
        TB_TEST(returning_node_keeps_its_gpu_health),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
