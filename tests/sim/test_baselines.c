/* test_baselines.c - the policies of the pooling experiment on a tiny
 * cluster, checked by hand, and the fleet sizing rule.
 *
 * Cluster: one node of 8 H100; teams a and b with a guarantee of 4 each.
 * Trace: b submits two 4-GPU jobs of 100 s at t=0, a one 4-GPU job of 50 s
 * at t=10; no grace, no checkpoints (a preempted job restarts).
 *
 *   static   b's second job is over b's limit (= guarantee 4) and waits
 *            for b's first: it runs 100..200 (wait 100); a runs at once.
 *   fifo     one queue: b's two jobs take the node at 0, a waits for them
 *            until 100 (wait 90).
 *   gpupool  b's second job borrows a's idle guarantee; at 10 a reclaims it
 *            (PREEMPT, grace 0), a runs 10..60 (wait 0); b's job restarts
 *            at 60 and ends at 160 (wait 50, 4 GPUs x 10 s lost).
 *
 * And FIFO with backfill, one 8-GPU node: A (6 GPUs, 0..100); B (8 GPUs,
 * t=1) is the head and holds the node from 100; C (2 GPUs, 50 s, t=2) fits
 * before 100 and is backfilled; D (2 GPUs, 200 s, t=3) would delay B, so
 * it waits for B (100..110) and runs 110..310.
 *
 * Fairness and lost work (sim/fairness.h, sim/metrics.h).  In the reclaim
 * scenario under gpupool, 40 GPU-s lost of 1,040 delivered (b1 400, b2
 * 40 + 400, a 200) = 3.846 %, one job preempted once.  Three 4-GPU jobs of
 * 2 h per team, all at t=0, a's first (entitlement 0.5 each):
 *   fifo     a1, a2 run 0..2h; a3, b1 2..4h; b2, b3 4..6h.  Hours 0-1: both
 *            backlogged, a holds 8 (x = 2), b none (x = 0): Jain 0.5.
 *            Hours 2-5: only b (or nobody) waits: skipped.
 *   gpupool  DRF alternates: a1, b1 0..2h; a2, b2 2..4h; a3, b3 4..6h.
 *            Hours 0-3: both backlogged at 4 GPUs each: Jain 1; 4-5 skipped.
 * And an entitlement from a weight: setup.c's example.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/metrics.h"
#include "sim/simulator.h"
#include "sim/sizing.h"
#include "tiny_world.h"

static void run(tiny *w, const char *policy, gp_sim_result *r)
{
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse(policy, &p));
    gp_sim_options o = gp_sim_options_default();
    o.checkpoint_interval_s = 0;
    gp_sim_setup s = {.fleet = &w->fleet, .tenants = w->tenants.n_tenants ? &w->tenants : NULL,
                      .trace = &w->trace};
    gp_error err;
    gp_err rc = gp_sim_run(&s, &p, &o, r, &err);
    if (rc)
        fail_msg("%s: %s: %s", policy, err.field, err.message);
}

/* job j (0-based trace index): first start, end, wait */
static void expect_job(const gp_sim_result *r, size_t j, int64_t start, int64_t end, int64_t wait)
{
    const gp_sim_job_result *jr = &r->jobs[j];
    if (jr->first_start != start || jr->end != end || jr->wait_s != wait)
        fail_msg("%s job %zu: start %lld end %lld wait %lld, want %lld %lld %lld", r->policy.name, j,
                 (long long)jr->first_start, (long long)jr->end, (long long)jr->wait_s, (long long)start,
                 (long long)end, (long long)wait);
    assert_int_equal(jr->outcome, GP_SIM_DONE);
}

static const char *two_teams = "tenants:\n"
                               "  - {path: a, guarantee: {gpu: {H100: 4}}}\n"
                               "  - {path: b, guarantee: {gpu: {H100: 4}}}\n";

static void reclaim_scenario(tiny *w)
{
    tiny_init(w, two_teams);
    tiny_job(w, "b", 0, 4, 100);
    tiny_job(w, "b", 0, 4, 100);
    tiny_job(w, "a", 10, 4, 50);
}

static void static_partitioning(void **state)
{
    (void)state;
    tiny w;
    reclaim_scenario(&w);
    gp_sim_result r;
    run(&w, "static", &r);
    expect_job(&r, 0, 0, 100, 0);
    expect_job(&r, 1, 100, 200, 100);
    expect_job(&r, 2, 10, 60, 0);
    assert_int_equal(r.preemptions, 0);
    assert_int_equal(r.n_groups, 2);
    assert_true(r.jobs[2].within_guarantee);  /* a: 4 <= 4 */
    assert_true(r.jobs[0].within_guarantee);  /* b: 4 <= 4 */
    assert_false(r.jobs[1].within_guarantee); /* b: 8 > 4 */
    gp_sim_result_free(&r);
    tiny_free(&w);
}

static void fifo_queue(void **state)
{
    (void)state;
    tiny w;
    reclaim_scenario(&w);
    gp_sim_result r;
    run(&w, "fifo", &r);
    expect_job(&r, 0, 0, 100, 0);
    expect_job(&r, 1, 0, 100, 0);
    expect_job(&r, 2, 100, 150, 90);
    /* reports still group by team, not by the single FIFO tenant */
    assert_int_equal(r.n_groups, 2);
    gp_sim_result_free(&r);
    tiny_free(&w);
}

static void gpupool_reclaims(void **state)
{
    (void)state;
    tiny w;
    reclaim_scenario(&w);
    gp_sim_result r;
    run(&w, "gpupool", &r);
    expect_job(&r, 0, 0, 100, 0);
    expect_job(&r, 2, 10, 60, 0);
    expect_job(&r, 1, 0, 160, 50);
    assert_int_equal(r.jobs[1].preemptions, 1);
    assert_int_equal(r.jobs[1].lost_gpu_s, 40);
    assert_int_equal(r.preemptions, 1);
    gp_sim_metrics m;
    assert_int_equal(gp_sim_metrics_compute(&r, &w.trace, GP_SIM_ALL_GROUPS, &m, NULL), GP_OK);
    assert_float_equal(m.lost_pct, 100.0 * 40 / 1040, 1e-9);
    assert_int_equal(m.max_preemptions, 1);
    assert_int_equal(m.fair_hours + m.fair_hours_skipped, 0); /* shorter than an hour */
    gp_sim_result_free(&r);
    tiny_free(&w);
}

static void three_jobs_each(tiny *w)
{
    tiny_init(w, two_teams);
    for (int i = 0; i < 3; i++)
        tiny_job(w, "a", 0, 4, 7200);
    for (int i = 0; i < 3; i++)
        tiny_job(w, "b", 0, 4, 7200);
}

/* The run's overall metrics; both teams are entitled to half the fleet. */
static void fairness_run(const char *policy, gp_sim_metrics *m)
{
    tiny w;
    three_jobs_each(&w);
    gp_sim_result r;
    run(&w, policy, &r);
    assert_int_equal(r.n_groups, 2);
    assert_float_equal(r.group_entitlement[0], 0.5, 1e-12);
    assert_float_equal(r.group_entitlement[1], 0.5, 1e-12);
    assert_int_equal(gp_sim_metrics_compute(&r, &w.trace, GP_SIM_ALL_GROUPS, m, NULL), GP_OK);
    gp_sim_result_free(&r);
    tiny_free(&w);
}

static void fifo_starves_the_later_team(void **state)
{
    (void)state;
    gp_sim_metrics m;
    fairness_run("fifo", &m);
    assert_int_equal(m.fair_hours, 2);
    assert_int_equal(m.fair_hours_skipped, 4);
    assert_float_equal(m.jain_mean, 0.5, 1e-9);
    assert_float_equal(m.jain_min, 0.5, 1e-9);
}

static void gpupool_shares_by_entitlement(void **state)
{
    (void)state;
    gp_sim_metrics m;
    fairness_run("gpupool", &m);
    assert_int_equal(m.fair_hours, 4);
    assert_int_equal(m.fair_hours_skipped, 2);
    assert_float_equal(m.jain_mean, 1.0, 1e-9);
    assert_float_equal(m.jain_min, 1.0, 1e-9);
    assert_int_equal(m.max_preemptions, 0);
    assert_float_equal(m.lost_pct, 0, 1e-12);
}

/* One 1-GPU job per group, in this order; the groups' entitlements. */
static void expect_entitlements(tiny *w, const char *policy, const char *const names[3], const double want[3])
{
    for (size_t g = 0; g < 3; g++)
        tiny_job(w, names[g], 0, 1, 10);
    gp_sim_result r;
    run(w, policy, &r);
    assert_int_equal(r.n_groups, 3);
    for (size_t g = 0; g < 3; g++) {
        assert_string_equal(r.groups[g], names[g]);
        assert_float_equal(r.group_entitlement[g], want[g], 1e-12);
    }
    gp_sim_result_free(&r);
    tiny_free(w);
}

/* setup.c's example: 8 H100 and 8 A100; a guarantees {H100: 4, A100: 2};
 * b has no tenant entry (weight 1), c a weight of 3 and no guarantee; a's
 * default weight is its 6 guaranteed GPUs: a 6/10, b 1/10, c 3/10, the
 * shares DRF gives them (a's guarantee as a share, 4/8, would be on
 * another scale than the weight shares). */
static void a_team_without_guarantee_is_entitled_to_its_weight_share(void **state)
{
    (void)state;
    const char *fleet = "nodes:\n  - {name: h, gpu_type: H100, gpus: 8}\n  - {name: x, gpu_type: A100, gpus: 8}\n";
    tiny w;
    tiny_init(&w, "tenants:\n  - {path: a, guarantee: {gpu: {H100: 4, A100: 2}}}\n  - {path: c, weight: 3}\n");
    gp_fleet_file_free(&w.fleet);
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "fleet", &w.fleet, NULL), GP_OK);
    static const char *const names[3] = {"a", "b", "c"};
    static const double want[3] = {0.6, 0.1, 0.3};
    expect_entitlements(&w, "gpupool", names, want);
}

/* 8 H100; a guarantees 3 (weight 3), b has none (weight 1); twelve 1-GPU
 * jobs of 2 h each at t=0.  DRF splits the node 6 : 2 (a's share / 3 =
 * b's share / 1), which is fair: entitlements 3/4 and 1/4, x = (1, 1),
 * Jain 1 in hours 0-1, while both wait.  Judged on a's guarantee share
 * (3/8) it would read x = (2, 1), Jain 0.9. */
static void a_drf_fair_split_between_guaranteed_and_unguaranteed_scores_one(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, "tenants:\n  - {path: a, guarantee: {gpu: {H100: 3}}}\n");
    for (int i = 0; i < 12; i++) {
        tiny_job(&w, "a", 0, 1, 7200);
        tiny_job(&w, "b", 0, 1, 7200);
    }
    gp_sim_result r;
    run(&w, "gpupool", &r);
    assert_float_equal(r.group_entitlement[0], 0.75, 1e-12);
    assert_float_equal(r.group_entitlement[1], 0.25, 1e-12);
    gp_sim_metrics m;
    assert_int_equal(gp_sim_metrics_compute(&r, &w.trace, GP_SIM_ALL_GROUPS, &m, NULL), GP_OK);
    assert_int_equal(m.fair_hours, 2);
    assert_float_equal(m.jain_mean, 1.0, 1e-9);
    gp_sim_result_free(&r);
    tiny_free(&w);
}

/* setup.c's org example: o (weight 8) next to z (weight 2); o's teams p
 * (weight 3) and q (weight 1): p 8/10 x 3/4, q 8/10 x 1/4, z 2/10. */
static void an_entitlement_multiplies_the_weight_shares_down_the_tree(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, "tenants:\n  - {path: o, weight: 8}\n  - {path: o/p, weight: 3}\n  - {path: o/q, weight: 1}\n"
                  "  - {path: z, weight: 2}\n");
    static const char *const names[3] = {"o/p", "o/q", "z"};
    static const double want[3] = {0.6, 0.2, 0.2};
    expect_entitlements(&w, "fifo", names, want);
}

static void fifo_backfill(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, NULL);
    tiny_job(&w, "t", 0, 6, 100);
    tiny_job(&w, "t", 1, 8, 10);
    tiny_job(&w, "t", 2, 2, 50);
    tiny_job(&w, "t", 3, 2, 200);
    gp_sim_result r;
    run(&w, "fifo", &r);
    expect_job(&r, 0, 0, 100, 0);
    expect_job(&r, 1, 100, 110, 99);
    expect_job(&r, 2, 2, 52, 0);
    expect_job(&r, 3, 110, 310, 107);
    gp_sim_result_free(&r);
    tiny_free(&w);
}

/* A checkpointing job loses only the work since its last checkpoint. */
static void checkpoints_limit_lost_work(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, two_teams);
    tiny_job(&w, "b", 0, 8, 1000);
    tiny_job(&w, "a", 250, 4, 50);
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse("gpupool", &p));
    gp_sim_options o = gp_sim_options_default();
    o.checkpoint_interval_s = 100;
    gp_sim_setup s = {.fleet = &w.fleet, .tenants = &w.tenants, .trace = &w.trace};
    gp_sim_result r;
    gp_error err;
    assert_int_equal(gp_sim_run(&s, &p, &o, &r, &err), GP_OK);
    /* b's 8-GPU job is burstable (8 > 4); preempted at 250, checkpointed at 200: 50 s x 8 GPUs lost,
     * 800 s of work left; it restarts when a ends at 300 and ends at 1100 */
    assert_int_equal(r.jobs[0].preemptions, 1);
    assert_int_equal(r.jobs[0].lost_gpu_s, 400);
    expect_job(&r, 0, 0, 1100, 50);
    expect_job(&r, 1, 250, 300, 0);
    gp_sim_result_free(&r);
    tiny_free(&w);
}

static void sizing_rule(void **state)
{
    (void)state;
    gp_trace t;
    gp_trace_init(&t);
    uint16_t a, b;
    assert_true(gp_trace_tenant(&t, "itp/a", &a));
    assert_true(gp_trace_tenant(&t, "itp/b", &b));
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    j.replicas = 1;
    j.gpus = 8;
    j.tenant = a;
    j.duration = 1000; /* a: 8 GPUs all the time */
    for (int k = 0; k < 10; k++) {
        j.submit = k * 1000;
        assert_int_equal(gp_trace_add(&t, &j, NULL), GP_OK);
    }
    j.tenant = b; /* b: one short 4 x 8 gang: p90 0, largest job 32 */
    j.replicas = 4;
    j.submit = 5000;
    j.duration = 10;
    assert_int_equal(gp_trace_add(&t, &j, NULL), GP_OK);
    gp_sizing how = {.percentile = 90, .gpus_per_node = 8, .gpu_type = "GPU"};
    char *fleet_yaml, *tenants_yaml;
    gp_error err;
    assert_int_equal(gp_sim_size_fleet(&t, &how, &fleet_yaml, &tenants_yaml, &err), GP_OK);
    gp_fleet_file f;
    gp_tenant_file tf;
    assert_int_equal(gp_fleet_file_parse(fleet_yaml, strlen(fleet_yaml), "f", &f, &err), GP_OK);
    assert_int_equal(gp_tenant_file_parse(tenants_yaml, strlen(tenants_yaml), "t", &tf, &err), GP_OK);
    assert_int_equal(f.n_nodes, 5); /* 8 + 32 = 40 GPUs */
    assert_int_equal(tf.n_tenants, 3);
    assert_string_equal(tf.tenants[0].path, "itp");
    assert_int_equal(tf.tenants[1].spec.guarantee.gpu[0].milli, 8000);
    assert_int_equal(tf.tenants[2].spec.guarantee.gpu[0].milli, 32000);
    gp_fleet_file_free(&f);
    gp_tenant_file_free(&tf);
    free(fleet_yaml);
    free(tenants_yaml);
    gp_trace_free(&t);
}

static void policy_names(void **state)
{
    (void)state;
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse("fgd", &p));
    assert_true(p.set_score);
    assert_int_equal(p.score, GP_SCORE_FGD);
    assert_true(gp_sim_policy_parse("static", &p));
    assert_int_equal(p.kind, GP_SIM_STATIC);
    assert_false(gp_sim_policy_parse("slurm", &p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(static_partitioning), cmocka_unit_test(fifo_queue),
        cmocka_unit_test(gpupool_reclaims),    cmocka_unit_test(fifo_backfill),
        cmocka_unit_test(checkpoints_limit_lost_work), cmocka_unit_test(sizing_rule),
        cmocka_unit_test(policy_names),        cmocka_unit_test(fifo_starves_the_later_team),
        cmocka_unit_test(gpupool_shares_by_entitlement),
        cmocka_unit_test(a_drf_fair_split_between_guaranteed_and_unguaranteed_scores_one),
        cmocka_unit_test(a_team_without_guarantee_is_entitled_to_its_weight_share),
        cmocka_unit_test(an_entitlement_multiplies_the_weight_shares_down_the_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
