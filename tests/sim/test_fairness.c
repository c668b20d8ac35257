/* test_fairness.c - Jain's index over backlogged teams, lost work as a share
 * of delivered work, and the most preemptions of one job (sim/fairness.h,
 * sim/metrics.h), checked by hand.
 *
 * The index: equal x -> 1; one team starved among n, the rest equal ->
 * (n-1)/n; shares are divided by entitlements first.  The tracker: a team
 * pending less than half an hour is not backlogged; hours with fewer than
 * 2 backlogged teams are skipped.
 *
 * End to end, one node of 8 H100, teams a and b with a guarantee of 4 each
 * (entitlement 0.5 each), three 4-GPU jobs of 2 h each per team, all
 * submitted at t=0, a's first:
 *   fifo     a1, a2 run 0..2h; a3, b1 2..4h; b2, b3 4..6h.  Hours 0-1: both
 *            backlogged, a holds 8 (x = 2), b none (x = 0): J = 0.5.
 *            Hours 2-5: only b (or nobody) waits: skipped.
 *   gpupool  DRF alternates: a1, b1 0..2h; a2, b2 2..4h; a3, b3 4..6h.
 *            Hours 0-3: both backlogged at 4 GPUs each: J = 1; 4-5 skipped.
 * And the reclaim scenario of test_baselines.c under gpupool: 40 GPU-s lost
 * of 1,040 delivered (b1 400, b2 40 + 400, a 200) = 3.846 %, one job
 * preempted once.  And an entitlement from a weight (setup.c's example).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/fairness.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

/* ---- the index ---- */

static void equal_shares_give_one(void **state)
{
    (void)state;
    double x[3] = {0.7, 0.7, 0.7};
    assert_float_equal(gp_sim_jain(x, 3), 1.0, 1e-12);
}

static void one_team_starved_among_n_gives_n_minus_one_over_n(void **state)
{
    (void)state;
    double four[4] = {1, 1, 1, 0};
    assert_float_equal(gp_sim_jain(four, 4), 0.75, 1e-12); /* 3^2 / (4 * 3) */
    double two[2] = {2, 0};
    assert_float_equal(gp_sim_jain(two, 2), 0.5, 1e-12);
}

static void unequal_shares_give_the_formula(void **state)
{
    (void)state;
    double x[3] = {1, 2, 3};
    assert_float_equal(gp_sim_jain(x, 3), 36.0 / 42.0, 1e-12); /* (1+2+3)^2 / (3 * (1+4+9)) */
}

/* ---- the tracker: one GPU type of 8, hours from t=0 ---- */

static void tracker(gp_sim_fairness *f, size_t n_groups, const double *entitlement)
{
    int64_t cap[1] = {8000};
    assert_int_equal(gp_sim_fairness_init(f, n_groups, entitlement, 1, cap, 0, NULL), GP_OK);
}

static void shares_are_divided_by_entitlement(void **state)
{
    (void)state;
    double ent[2] = {0.75, 0.25};
    gp_sim_fairness f;
    tracker(&f, 2, ent);
    gp_sim_fairness_pending(&f, 0, 0, +1);
    gp_sim_fairness_pending(&f, 0, 1, +1);
    gp_sim_fairness_usage(&f, 0, 0, 0, 6000); /* 6/8 = 0.75: x = 1 */
    gp_sim_fairness_usage(&f, 0, 1, 0, 2000); /* 2/8 = 0.25: x = 1 */
    assert_true(gp_sim_fairness_advance(&f, 3600));
    size_t n;
    gp_sim_fair_hour *h = gp_sim_fairness_take_hours(&f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].backlogged, 2);
    assert_float_equal(h[0].jain, 1.0, 1e-12);
    free(h);
    gp_sim_fairness_free(&f);
}

static void a_team_not_backlogged_is_ignored(void **state)
{
    (void)state;
    double ent[3] = {0.25, 0.25, 0.5};
    gp_sim_fairness f;
    tracker(&f, 3, ent);
    gp_sim_fairness_pending(&f, 0, 0, +1);
    gp_sim_fairness_pending(&f, 0, 1, +1);
    gp_sim_fairness_usage(&f, 0, 0, 0, 2000);
    gp_sim_fairness_usage(&f, 0, 1, 0, 2000);
    gp_sim_fairness_usage(&f, 0, 2, 0, 4000); /* c holds a lot but waits for nothing */
    gp_sim_fairness_pending(&f, 0, 2, +1);    /* ... except for 20 minutes */
    gp_sim_fairness_pending(&f, 1200, 2, -1);
    assert_true(gp_sim_fairness_advance(&f, 3600));
    size_t n;
    gp_sim_fair_hour *h = gp_sim_fairness_take_hours(&f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].backlogged, 2);
    assert_float_equal(h[0].jain, 1.0, 1e-12);
    free(h);
    gp_sim_fairness_free(&f);
}

static void usage_is_averaged_over_the_hour(void **state)
{
    (void)state;
    double ent[2] = {0.5, 0.5};
    gp_sim_fairness f;
    tracker(&f, 2, ent);
    gp_sim_fairness_pending(&f, 0, 0, +1);
    gp_sim_fairness_pending(&f, 0, 1, +1);
    gp_sim_fairness_usage(&f, 0, 0, 0, 8000);     /* a: 8 GPUs for the first half hour */
    gp_sim_fairness_usage(&f, 1800, 0, 0, -8000); /* then b: 8 for the second */
    gp_sim_fairness_usage(&f, 1800, 1, 0, 8000);
    assert_true(gp_sim_fairness_advance(&f, 7200)); /* the second hour: b holds 8, a none */
    size_t n;
    gp_sim_fair_hour *h = gp_sim_fairness_take_hours(&f, &n);
    assert_int_equal(n, 2);
    assert_float_equal(h[0].jain, 1.0, 1e-12); /* 4 GPUs each on average */
    assert_float_equal(h[1].jain, 0.5, 1e-12);
    assert_int_equal(h[1].start, 3600);
    free(h);
    gp_sim_fairness_free(&f);
}

static void hours_with_fewer_than_two_backlogged_teams_are_skipped(void **state)
{
    (void)state;
    double ent[2] = {0.5, 0.5};
    gp_sim_fairness f;
    tracker(&f, 2, ent);
    gp_sim_fairness_pending(&f, 0, 0, +1);
    gp_sim_fairness_usage(&f, 0, 1, 0, 8000);
    assert_true(gp_sim_fairness_advance(&f, 3600 + 1800)); /* one full hour closed, not the half */
    size_t n;
    gp_sim_fair_hour *h = gp_sim_fairness_take_hours(&f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].backlogged, 1);
    assert_true(h[0].jain < 0);
    free(h);
    gp_sim_fairness_free(&f);
}

/* ---- end to end ---- */

typedef struct world {
    gp_fleet_file fleet;
    gp_tenant_file tenants;
    gp_trace trace;
} world;

static void world_init(world *w)
{
    const char *fleet = "nodes: [{name: n, gpu_type: H100, gpus: 8, cpu_millis: 64000, mem_mib: 65536}]\n";
    const char *tenants = "tenants:\n  - {path: a, guarantee: {gpu: {H100: 4}}}\n"
                          "  - {path: b, guarantee: {gpu: {H100: 4}}}\n";
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "fleet", &w->fleet, &err), GP_OK);
    assert_int_equal(gp_tenant_file_parse(tenants, strlen(tenants), "tenants", &w->tenants, &err), GP_OK);
    gp_trace_init(&w->trace);
}

static void world_job(world *w, const char *tenant, int64_t submit, int64_t duration)
{
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    assert_true(gp_trace_tenant(&w->trace, tenant, &j.tenant));
    j.submit = submit;
    j.duration = duration;
    j.replicas = 1;
    j.gpus = 4;
    assert_int_equal(gp_trace_add(&w->trace, &j, NULL), GP_OK);
}

static void world_free(world *w)
{
    gp_fleet_file_free(&w->fleet);
    gp_tenant_file_free(&w->tenants);
    gp_trace_free(&w->trace);
}

static void run(const world *w, const char *policy, gp_sim_metrics *m)
{
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse(policy, &p));
    gp_sim_options opt = gp_sim_options_default();
    opt.checkpoint_interval_s = 0;
    gp_sim_setup s = {.fleet = &w->fleet, .tenants = &w->tenants, .trace = &w->trace};
    gp_sim_result r;
    gp_error err;
    assert_int_equal(gp_sim_run(&s, &p, &opt, &r, &err), GP_OK);
    assert_int_equal(r.n_groups, 2);
    assert_float_equal(r.group_entitlement[0], 0.5, 1e-12);
    assert_float_equal(r.group_entitlement[1], 0.5, 1e-12);
    assert_int_equal(gp_sim_metrics_compute(&r, &w->trace, GP_SIM_ALL_GROUPS, m, &err), GP_OK);
    gp_sim_result_free(&r);
}

static void three_jobs_each(world *w)
{
    world_init(w);
    for (int i = 0; i < 3; i++)
        world_job(w, "a", 0, 7200);
    for (int i = 0; i < 3; i++)
        world_job(w, "b", 0, 7200);
}

static void fifo_starves_the_later_team(void **state)
{
    (void)state;
    world w;
    three_jobs_each(&w);
    gp_sim_metrics m;
    run(&w, "fifo", &m);
    assert_int_equal(m.fair_hours, 2);
    assert_int_equal(m.fair_hours_skipped, 4);
    assert_float_equal(m.jain_mean, 0.5, 1e-9);
    assert_float_equal(m.jain_min, 0.5, 1e-9);
    world_free(&w);
}

static void gpupool_shares_by_entitlement(void **state)
{
    (void)state;
    world w;
    three_jobs_each(&w);
    gp_sim_metrics m;
    run(&w, "gpupool", &m);
    assert_int_equal(m.fair_hours, 4);
    assert_int_equal(m.fair_hours_skipped, 2);
    assert_float_equal(m.jain_mean, 1.0, 1e-9);
    assert_float_equal(m.jain_min, 1.0, 1e-9);
    assert_int_equal(m.max_preemptions, 0);
    assert_float_equal(m.lost_pct, 0, 1e-12);
    world_free(&w);
}

static void lost_work_is_a_share_of_delivered_work(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    world_job(&w, "b", 0, 100);
    world_job(&w, "b", 0, 100);
    world_job(&w, "a", 10, 50);
    gp_sim_metrics m;
    run(&w, "gpupool", &m);
    assert_float_equal(m.lost_gpu_h * 3600, 40, 1e-9);
    assert_float_equal(m.lost_pct, 100.0 * 40 / 1040, 1e-9);
    assert_int_equal(m.max_preemptions, 1);
    assert_int_equal(m.fair_hours + m.fair_hours_skipped, 0); /* shorter than an hour */
    assert_float_equal(m.jain_mean, 1.0, 1e-12);
    world_free(&w);
}

/* setup.c's example: 8 H100 and 8 A100; a guarantees {H100: 4, A100: 2}
 * (0.5); b has no tenant entry (weight 1), c a weight of 3 and no
 * guarantee; a's default weight is its 6 guaranteed GPUs. */
static void a_team_without_guarantee_is_entitled_to_its_weight_share(void **state)
{
    (void)state;
    const char *fleet = "nodes:\n  - {name: h, gpu_type: H100, gpus: 8}\n  - {name: x, gpu_type: A100, gpus: 8}\n";
    const char *tenants = "tenants:\n  - {path: a, guarantee: {gpu: {H100: 4, A100: 2}}}\n  - {path: c, weight: 3}\n";
    world w;
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "fleet", &w.fleet, &err), GP_OK);
    assert_int_equal(gp_tenant_file_parse(tenants, strlen(tenants), "tenants", &w.tenants, &err), GP_OK);
    gp_trace_init(&w.trace);
    world_job(&w, "a", 0, 10);
    world_job(&w, "b", 0, 10);
    world_job(&w, "c", 0, 10);
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse("gpupool", &p));
    gp_sim_options opt = gp_sim_options_default();
    gp_sim_setup s = {.fleet = &w.fleet, .tenants = &w.tenants, .trace = &w.trace};
    gp_sim_result r;
    assert_int_equal(gp_sim_run(&s, &p, &opt, &r, &err), GP_OK);
    assert_int_equal(r.n_groups, 3);
    assert_string_equal(r.groups[1], "b");
    assert_float_equal(r.group_entitlement[0], 0.5, 1e-12);
    assert_float_equal(r.group_entitlement[1], 0.1, 1e-12);
    assert_float_equal(r.group_entitlement[2], 0.3, 1e-12);
    gp_sim_result_free(&r);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_shares_give_one),
        cmocka_unit_test(one_team_starved_among_n_gives_n_minus_one_over_n),
        cmocka_unit_test(unequal_shares_give_the_formula),
        cmocka_unit_test(shares_are_divided_by_entitlement),
        cmocka_unit_test(a_team_not_backlogged_is_ignored),
        cmocka_unit_test(usage_is_averaged_over_the_hour),
        cmocka_unit_test(hours_with_fewer_than_two_backlogged_teams_are_skipped),
        cmocka_unit_test(fifo_starves_the_later_team),
        cmocka_unit_test(gpupool_shares_by_entitlement),
        cmocka_unit_test(lost_work_is_a_share_of_delivered_work),
        cmocka_unit_test(a_team_without_guarantee_is_entitled_to_its_weight_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
