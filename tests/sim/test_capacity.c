/* test_capacity.c - the capacity experiment (sim/capacity.h): its
 * bisection, and a tiny world whose answer is computed by hand.
 *
 * Bisection: meets(n) = n >= 37 from lo 1, hi 8: 8, 16, 32 fail, 64
 * meets, then 48, 40, 36 (fails), 38, 37: answer 37 in 9 calls.
 *
 * Tiny world: base fleet one node of 8 H100; teams a and b, each promised
 * 16 GPUs.  a submits two 8-GPU jobs of 10,000 s at t=0 (and a 1-GPU job
 * of 1 s at t=30,000 that closes the window); b two 8-GPU jobs of 10,000 s
 * at t=15,000.  Every job is within its team's promise, so each needs its
 * job to start at once (p99 wait <= 600 s): a team's cluster alone needs
 * its peak, 16 GPUs = 2 nodes, and static needs 2 + 2 = 4 nodes; the teams
 * never overlap, so one shared fleet needs the joint peak, 16 GPUs = 2
 * nodes, under FIFO and gpupool alike.  Offered work in the window [0,
 * 30,000]: 4 x 8 x 10,000 = 320,000 GPU-s (the last job's second falls
 * after it): static 320,000 / (32 x 30,000) = 33.33 %, pooled 66.67 %.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/capacity.h"
#include "tiny_world.h"

typedef struct counter {
    int64_t threshold;
    int calls;
} counter;

static int at_least(void *ctx, int64_t n, gp_error *err)
{
    (void)err;
    counter *c = ctx;
    c->calls++;
    return n >= c->threshold;
}

static void bisection_finds_the_smallest_size_that_meets(void **state)
{
    (void)state;
    counter c = {.threshold = 37};
    int64_t out = 0;
    int probes = 0;
    assert_int_equal(gp_sim_bisect(1, 8, 1000, at_least, &c, &out, &probes, NULL), GP_OK);
    assert_int_equal(out, 37);
    assert_int_equal(probes, 9);
    assert_int_equal(c.calls, 9);
}

static void bisection_goes_down_to_lo_when_everything_meets(void **state)
{
    (void)state;
    counter c = {.threshold = 1};
    int64_t out = 0;
    assert_int_equal(gp_sim_bisect(1, 8, 1000, at_least, &c, &out, NULL, NULL), GP_OK);
    assert_int_equal(out, 1);
}

static void bisection_says_not_met_when_the_largest_size_fails(void **state)
{
    (void)state;
    counter c = {.threshold = 500};
    int64_t out = 0;
    assert_int_equal(gp_sim_bisect(1, 8, 64, at_least, &c, &out, NULL, NULL), GP_OK);
    assert_int_equal(out, -1);
    assert_int_equal(c.calls, 4); /* 8, 16, 32, 64 */
}

static int broken(void *ctx, int64_t n, gp_error *err)
{
    (void)ctx;
    (void)n;
    gp_error_set(err, GP_ERR_INVALID, "run", "failed");
    return -1;
}

static void bisection_stops_at_an_error(void **state)
{
    (void)state;
    int64_t out = 7;
    gp_error err;
    assert_int_not_equal(gp_sim_bisect(1, 8, 64, broken, NULL, &out, NULL, &err), GP_OK);
    assert_int_equal(out, 7);
}

/* The one-node world (tiny_world.h) with a and b guaranteed 16 H100 each. */
static void world_init(tiny *w)
{
    tiny_init(w, "tenants:\n"
                 "  - {path: a, guarantee: {gpu: {H100: 16}}}\n"
                 "  - {path: b, guarantee: {gpu: {H100: 16}}}\n");
    tiny_job(w, "a", 0, 8, 10000);
    tiny_job(w, "a", 0, 8, 10000);
    tiny_job(w, "b", 15000, 8, 10000);
    tiny_job(w, "b", 15000, 8, 10000);
    tiny_job(w, "a", 30000, 1, 1);
}

static void capacity_of(tiny *w, const char *policy, gp_sim_capacity_row *row)
{
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse(policy, &p));
    gp_sim_capacity_config c = {.base = &w->fleet, .promises = &w->tenants, .trace = &w->trace,
                                .slo = {.p99_wait_guaranteed_s = 600, .mean_wait_s = 3600},
                                .opt = gp_sim_options_default()};
    c.opt.checkpoint_interval_s = 0;
    gp_error err;
    if (gp_sim_capacity_run(&c, &p, row, &err) != GP_OK)
        fail_msg("%s: %s", policy, err.message);
}

static void static_needs_the_sum_of_team_peaks_pooled_the_joint_peak(void **state)
{
    (void)state;
    tiny w;
    world_init(&w);
    assert_float_equal(gp_sim_offered_gpu_s(&w.trace), 320000.0, 1e-6);
    gp_sim_capacity_row row;
    capacity_of(&w, "static", &row);
    assert_int_equal(row.nodes, 4);
    assert_int_equal(row.gpus, 32);
    assert_float_equal(row.utilization_pct, 100.0 / 3.0, 1e-3);
    capacity_of(&w, "fifo", &row);
    assert_int_equal(row.nodes, 2);
    assert_float_equal(row.utilization_pct, 200.0 / 3.0, 1e-3);
    capacity_of(&w, "gpupool", &row);
    assert_int_equal(row.nodes, 2);
    assert_int_equal(row.gpus, 16);
    assert_float_equal(row.utilization_pct, 200.0 / 3.0, 1e-3);
    assert_float_equal(row.worst_within_p99_s, 0, 1e-9);
    tiny_free(&w);
}

/* With a mean-wait level of 4,000 s and no p99 level, static team a fits
 * on one node: its waits are 0, 10,000 and 0 (the 1-GPU job), mean 3,333 s. */
static void a_looser_service_level_needs_fewer_nodes(void **state)
{
    (void)state;
    tiny w;
    world_init(&w);
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse("static", &p));
    gp_sim_capacity_config c = {.base = &w.fleet, .promises = &w.tenants, .trace = &w.trace,
                                .slo = {.p99_wait_guaranteed_s = 100000, .mean_wait_s = 4000},
                                .opt = gp_sim_options_default()};
    c.opt.checkpoint_interval_s = 0;
    gp_sim_capacity_row row;
    gp_error err;
    assert_int_equal(gp_sim_capacity_run(&c, &p, &row, &err), GP_OK);
    assert_int_equal(row.nodes, 3); /* a: 1 node (mean 3,333 s); b: 2 (mean 5,000 s on one) */
    tiny_free(&w);
}

static void whole_gpus_only_rounds_shares_up_and_unshares_nodes(void **state)
{
    (void)state;
    const char *fleet = "nodes: [{name: n, gpu_type: L40S, gpus: 8, cpu_millis: 64000, mem_mib: 65536, "
                        "sharing: mps}]\n";
    tiny w;
    gp_error err;
    if (gp_fleet_file_parse(fleet, strlen(fleet), "fleet", &w.fleet, &err) != GP_OK)
        fail_msg("%s", err.message);
    assert_int_equal(w.fleet.nodes[0].sharing, GP_SHARING_MPS);
    gp_trace_init(&w.trace);
    tiny_job(&w, "a", 0, 1, 100);
    w.trace.jobs[0].gpu_milli = 250;
    w.trace.jobs[0].isolation = GP_ISO_MPS;
    tiny_job(&w, "a", 0, 2, 100);
    gp_sim_whole_gpus_only(&w.trace, &w.fleet);
    assert_int_equal(w.trace.jobs[0].gpus, 1);
    assert_int_equal(w.trace.jobs[0].gpu_milli, 0);
    assert_int_equal(w.trace.jobs[0].isolation, GP_ISO_EXCLUSIVE);
    assert_int_equal(w.trace.jobs[1].gpus, 2);
    assert_int_equal(w.fleet.nodes[0].sharing, GP_SHARING_EXCLUSIVE);
    gp_fleet_file_free(&w.fleet);
    gp_trace_free(&w.trace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bisection_finds_the_smallest_size_that_meets),
        cmocka_unit_test(bisection_goes_down_to_lo_when_everything_meets),
        cmocka_unit_test(bisection_says_not_met_when_the_largest_size_fails),
        cmocka_unit_test(bisection_stops_at_an_error),
        cmocka_unit_test(static_needs_the_sum_of_team_peaks_pooled_the_joint_peak),
        cmocka_unit_test(a_looser_service_level_needs_fewer_nodes),
        cmocka_unit_test(whole_gpus_only_rounds_shares_up_and_unshares_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
