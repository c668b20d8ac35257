/* test_placement.c - gangs, topology, type and health filters, drain, best fit.
 *
 * Semantics under test (docs/scheduling.md, "Placement" and "Node and GPU
 * events"): gang all-or-nothing; a replica's GPUs are on one node; BLOCK
 * puts all replicas in one fabric block, NVLINK in one NVLink domain of one
 * node; only nodes up, not draining, GPUs healthy and of an accepted type;
 * best fit: the smallest partly-used node/block that holds it, so empty ones
 * stay whole; cpu/mem per replica must fit on the node.  Drain: no new work,
 * DRAINED once the node has no jobs.
 *
 * To put a filler job on a chosen node, a test drains the other nodes for
 * one tick (placement_on()); that only uses the drain rule tested here.
 * All tenants are without guarantee, so nothing is preempted.
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

static void drain(tb_world *w, const char *node, bool on, int64_t now)
{
    gp_error err;
    gp_error_clear(&err);
    if (gp_engine_node_drain(w->e, node, on, now, &err) != GP_OK)
        fail_msg("drain %s: %s", node, err.message);
}

/* Submits a 1-replica job of `gpus` at `now` and places it on node `target`
 * by draining every other node for one tick. */
static void place_on(tb_world *w, uint64_t id, int gpus, const char *target, int64_t now)
{
    size_t n = gp_engine_node_count(w->e);
    bool drained[256] = {false};
    for (uint32_t i = 0; i < n && i < 256; i++) {
        gp_node_info ni;
        assert_true(gp_engine_node_get(w->e, i, &ni));
        if (strcmp(ni.name, target) != 0 && !ni.draining) {
            drain(w, ni.name, true, now);
            drained[i] = true;
        }
    }
    tb_submit(w, id, "t", 1, gpus, now);
    assert_int_equal(tb_tick(w, now, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, id), tb_node_index(w, target));
    for (uint32_t i = 0; i < n && i < 256; i++) {
        gp_node_info ni;
        assert_true(gp_engine_node_get(w->e, i, &ni));
        if (drained[i])
            drain(w, ni.name, false, now);
    }
    gp_engine_decisions_clear(w->e);
}

static void submit_topo(tb_world *w, uint64_t id, int replicas, int gpus, gp_topology topo, int64_t now)
{
    gp_job_spec s = tb_job(id, "t", 0);
    s.replicas = replicas;
    s.gpus = gpus;
    s.topology = topo;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void submit_types(tb_world *w, uint64_t id, int gpus, const char *t1, const char *t2, int64_t now)
{
    gp_job_spec s = tb_job(id, "t", 0);
    s.gpus = gpus;
    s.gpu_types[0] = t1;
    s.gpu_types[1] = t2;
    s.n_gpu_types = t2 ? 2 : 1;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void assert_not_placed(tb_world *w, uint64_t id)
{
    uint32_t gpu;
    assert_int_equal(tb_state(w, id), GP_JOB_PENDING);
    assert_int_equal(gp_engine_job_gpus(w->e, id, &gpu, 1), 0);
    assert_null(tb_find(w, id, GP_DEC_BIND));
}

/* ---- gangs ---- */

static void gang_is_all_or_nothing(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 4, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    tb_submit(w, 1, "t", 1, 8, 0);
    tb_submit(w, 2, "t", 1, 8, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);

    /* 3 x 8 needs three free nodes; only two are free: nothing is placed */
    tb_submit(w, 3, "t", 3, 8, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_not_placed(w, 3);
    assert_int_equal(tb_free_gpus(w), 16);
    tb_assert_gpus_consistent(w);

    /* a third node frees: the whole gang goes at once, 8 GPUs per node */
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    uint32_t gpus[24];
    assert_int_equal(gp_engine_job_gpus(w->e, 3, gpus, 24), 24);
    for (int r = 0; r < 3; r++)
        for (int i = 1; i < 8; i++)
            assert_int_equal(tb_gpu(w, gpus[r * 8 + i]).node, tb_gpu(w, gpus[r * 8]).node);
    tb_assert_gpus_consistent(w);
}

static void replica_never_spans_nodes(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 3, "H100", 4, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 1, "n00", 0);
    place_on(w, 2, 1, "n01", 0);
    /* 3 + 3 + 4 = 10 free GPUs, but 2 x 4 needs two whole 4-GPU nodes */
    tb_submit(w, 3, "t", 2, 4, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_not_placed(w, 3);
}

static void block_gang_lands_in_one_block_or_waits(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 8, "H100", 8, "A", "z0"); /* n00..n07: 64 GPUs */
    tb_add_nodes(w, 8, "H100", 8, "B", "z0"); /* n08..n15: 64 GPUs */
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 8, "n03", 0); /* block A: 7 whole nodes left */
    place_on(w, 2, 8, "n12", 0); /* block B: 7 whole nodes left */

    /* 8 x 8 = 64 GPUs in one block: 112 GPUs free, 56 per block: waits */
    submit_topo(w, 3, 8, 8, GP_TOPO_BLOCK, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_not_placed(w, 3);
    assert_int_equal(tb_free_gpus(w), 112);

    /* block B becomes whole: the gang lands there, entirely */
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_true(tb_job_in_block(w, 3, "B"));
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    tb_assert_gpus_consistent(w);
}

static void block_gang_larger_than_any_block_waits_topology(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "A", "z0");
    tb_add_nodes(w, 2, "H100", 8, "B", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    submit_topo(w, 1, 3, 8, GP_TOPO_BLOCK, 0); /* 24 GPUs, blocks hold 16 */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    gp_job_info info = tb_info(w, 1);
    assert_int_equal(info.wait.code, GP_WAIT_TOPOLOGY);
    assert_int_equal(info.wait.a, 16);
    assert_int_equal(info.wait.b, 24);
    /* the same gang without topology fits the 32-GPU fleet */
    submit_topo(w, 2, 3, 8, GP_TOPO_ANY, 1);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_BIND));
}

static void nvlink_gang_stays_in_one_nvlink_domain(void **state)
{
    tb_world *w = *state;
    tb_add_nodes_nvlink(w, 2, "H100", 8, 2, "b0"); /* 2 nodes x 2 domains of 4 */
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 1, "n00", 0); /* one domain of n00 now has 3 free */

    submit_topo(w, 2, 4, 1, GP_TOPO_NVLINK, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    uint32_t gpus[4];
    assert_int_equal(gp_engine_job_gpus(w->e, 2, gpus, 4), 4);
    gp_gpu_info first = tb_gpu(w, gpus[0]);
    for (int i = 1; i < 4; i++) {
        gp_gpu_info gi = tb_gpu(w, gpus[i]);
        assert_int_equal(gi.node, first.node);
        assert_int_equal(gi.nvlink_domain, first.nvlink_domain);
    }
    tb_assert_gpus_consistent(w);
}

static void nvlink_gang_larger_than_a_domain_waits_topology(void **state)
{
    tb_world *w = *state;
    tb_add_nodes_nvlink(w, 2, "H100", 8, 2, "b0");
    tb_tenant(w, "t", "H100", -1, -1);
    submit_topo(w, 1, 2, 4, GP_TOPO_NVLINK, 0); /* 8 GPUs, domains hold 4 */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    gp_job_info info = tb_info(w, 1);
    assert_int_equal(info.wait.code, GP_WAIT_TOPOLOGY);
    assert_int_equal(info.wait.a, 4);
    assert_int_equal(info.wait.b, 8);
}

static void gang_never_mixes_gpu_types(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_add_nodes(w, 1, "A100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "t", 0);
    s.replicas = 2;
    s.gpus = 8;
    s.gpu_types[0] = "H100";
    s.gpu_types[1] = "A100";
    s.n_gpu_types = 2;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    /* one replica per node would need an H100 and an A100 node: never */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_not_placed(w, 1);
}

/* ---- filters ---- */

static void gpu_type_filter_restricts_placement(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0"); /* n00 */
    tb_add_nodes(w, 1, "A100", 8, "b0", "z0"); /* n01 */
    tb_tenant(w, "t", "H100", -1, -1);
    submit_types(w, 1, 8, "A100", NULL, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 1), tb_node_index(w, "n01"));
    assert_int_equal(tb_info(w, 1).gpu_type, tb_type_index(w, "A100"));

    /* A100 full: an A100-only job waits although 8 H100 are free */
    submit_types(w, 2, 1, "A100", NULL, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_not_placed(w, 2);
    /* a job accepting either type takes an H100 */
    submit_types(w, 3, 1, "A100", "H100", 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 3), tb_node_index(w, "n00"));
}

/* L4 is known (a quota names it) but no node has one: the job waits. */
static void gpu_type_absent_from_fleet_waits_no_gpu_type(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "L4", -1, 8);
    submit_types(w, 1, 1, "L4", NULL, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_NO_GPU_TYPE);
}

/* A type nobody ever named is a typo: refused, nothing registered. */
static void unknown_gpu_type_is_refused_at_submit(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "t", 0);
    s.gpu_types[0] = "H1OO";
    s.n_gpu_types = 1;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu_types");
    assert_int_equal(gp_engine_gpu_type_count(w->e), 1);
}

static void unhealthy_gpu_is_never_chosen(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    assert_int_equal(gp_engine_gpu_health(w->e, "n00", 3, false, 0, NULL), GP_OK);
    tb_submit_many(w, 1, 10, "t", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 7); /* 8 - 1 unhealthy */
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    gp_gpu_info bad = tb_gpu(w, tb_gpu_of(w, "n00", 3));
    assert_false(bad.healthy);
    assert_int_equal(bad.job, 0);
    gp_node_info n = tb_node(w, "n00");
    assert_int_equal(n.gpus_healthy, 7);
    assert_int_equal(n.gpus_free, 0);
    tb_assert_gpus_consistent(w);
}

static void cpu_per_replica_must_fit_on_one_node(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0"); /* 128000 mCPU each */
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec big = tb_job(1, "t", 0);
    big.cpu_millis = TB_NODE_CPU_MILLIS + 1000; /* no node has that much */
    assert_int_equal(tb_submit_spec(w, &big, 0, NULL), GP_OK);
    gp_job_spec pair = tb_job(2, "t", 0);
    pair.replicas = 2;
    pair.cpu_millis = 100000; /* two replicas cannot share a node */
    assert_int_equal(tb_submit_spec(w, &pair, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_not_placed(w, 1);
    uint32_t gpus[2];
    assert_int_equal(gp_engine_job_gpus(w->e, 2, gpus, 2), 2);
    assert_int_not_equal(tb_gpu(w, gpus[0]).node, tb_gpu(w, gpus[1]).node);
}

/* gp_engine_job_node: replica r's node is the node of its GPUs, as the
 * placement JSON names it; nothing for a replica it lacks or a job not
 * placed. */
static void each_replicas_node_is_the_node_of_its_gpus(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 3, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    tb_submit(w, 1, "t", 2, 8, 0);
    tb_submit(w, 2, "t", 2, 8, 0); /* one node is left: waits */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    uint32_t gpus[16];
    assert_int_equal(gp_engine_job_gpus(w->e, 1, gpus, 16), 16);
    for (int r = 0; r < 2; r++) {
        gp_node_info n;
        assert_true(gp_engine_node_get(w->e, tb_gpu(w, gpus[r * 8]).node, &n));
        assert_string_equal(gp_engine_job_node(w->e, 1, r), n.name);
    }
    assert_string_not_equal(gp_engine_job_node(w->e, 1, 0), gp_engine_job_node(w->e, 1, 1));
    assert_null(gp_engine_job_node(w->e, 1, 2));
    assert_null(gp_engine_job_node(w->e, 1, -1));
    assert_null(gp_engine_job_node(w->e, 2, 0));
    assert_null(gp_engine_job_node(w->e, 99, 0));
}

/* ---- drain ---- */

static void draining_node_gets_no_new_work(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 1, "n00", 0);
    drain(w, "n00", true, 10);
    /* best fit alone would pick partly used n00; draining forbids it */
    tb_submit_many(w, 2, 9, "t", 10); /* 9 jobs, n01 holds 8 */
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 8);
    for (uint64_t id = 2; id <= 10; id++)
        if (tb_state(w, id) == GP_JOB_RUNNING)
            assert_int_equal(tb_job_node(w, id), tb_node_index(w, "n01"));
    gp_node_info n00 = tb_node(w, "n00");
    assert_true(n00.draining);
    int owned = 0;
    for (int i = 0; i < n00.gpu_count; i++)
        owned += tb_gpu(w, n00.gpu_first + (uint32_t)i).job != 0;
    assert_int_equal(owned, 1); /* job 1 only */
}

static void drained_is_reported_once_when_last_job_finishes(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 1, "n00", 0);
    drain(w, "n00", true, 10);
    tb_advance(w, 10);
    assert_int_equal(tb_count(w, GP_DEC_DRAINED), 0); /* job 1 still there */

    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    tb_advance(w, 20);
    assert_int_equal(tb_count(w, GP_DEC_DRAINED), 1);
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_DRAINED)
            assert_string_equal(d[i].node, "n00");
    assert_int_equal(tb_tick(w, 30, GP_DEC_DRAINED), 0); /* once, not every tick */
}

static void undrained_node_takes_work_again(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    drain(w, "n00", true, 0);
    tb_submit(w, 1, "t", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    drain(w, "n00", false, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_false(tb_node(w, "n00").draining);
}

/* ---- best fit ---- */

static void best_fit_prefers_a_partly_used_node(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 7, "n01", 0); /* n01: 7 used, 1 free; n00 empty */

    tb_submit(w, 2, "t", 1, 1, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 2), tb_node_index(w, "n01")); /* not the lower-numbered empty n00 */

    /* n00 stayed whole for an 8-GPU job */
    tb_submit(w, 3, "t", 1, 8, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 3), tb_node_index(w, "n00"));
}

static void best_fit_prefers_the_fullest_node_that_fits(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 3, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    place_on(w, 1, 2, "n00", 0); /* n00: 6 free */
    place_on(w, 2, 5, "n01", 0); /* n01: 3 free */
    place_on(w, 3, 7, "n02", 0); /* n02: 1 free */
    /* a 2-GPU job: n02 is too full, n01 (3 free) is the smallest that holds it */
    tb_submit(w, 4, "t", 1, 2, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 4), tb_node_index(w, "n01"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(gang_is_all_or_nothing),
        TB_TEST(replica_never_spans_nodes),
        TB_TEST(block_gang_lands_in_one_block_or_waits),
        TB_TEST(block_gang_larger_than_any_block_waits_topology),
        TB_TEST(nvlink_gang_stays_in_one_nvlink_domain),
        TB_TEST(nvlink_gang_larger_than_a_domain_waits_topology),
        TB_TEST(gang_never_mixes_gpu_types),
        TB_TEST(gpu_type_filter_restricts_placement),
        TB_TEST(gpu_type_absent_from_fleet_waits_no_gpu_type),
        TB_TEST(unknown_gpu_type_is_refused_at_submit),
        TB_TEST(unhealthy_gpu_is_never_chosen),
        TB_TEST(cpu_per_replica_must_fit_on_one_node),
        TB_TEST(each_replicas_node_is_the_node_of_its_gpus),
        TB_TEST(draining_node_gets_no_new_work),
        TB_TEST(drained_is_reported_once_when_last_job_finishes),
        TB_TEST(undrained_node_takes_work_again),
        TB_TEST(best_fit_prefers_a_partly_used_node),
        TB_TEST(best_fit_prefers_the_fullest_node_that_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
