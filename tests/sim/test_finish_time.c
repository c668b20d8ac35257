/* test_finish_time.c - finish-time fairness (sim/finish_time.h), and the
 * simulator's share figures (sim/share.h), on a tiny cluster, checked by
 * hand.
 *
 * Cluster: one node of 8 H100; teams a and b with a guarantee of 4 each.
 * finish_time.h's example: a submits two 4-GPU jobs of 1 h at t=0.  Alone
 * on its 4 GPUs (the node cut to 4) they run one after the other, 1 h and
 * 2 h.  Shared under gpupool with b idle both run at once: rho 1 and 0.5.
 * Under static (a capped at 4) they queue as alone: rho 1 and 1.  When b
 * holds 8 GPUs (gpupool, b borrowing a's 4 from t=0 for 3 h, no grace, no
 * checkpoints), a reclaims its 4 at once: a's jobs run as alone.  The
 * simulator's share figures (sim/share.h) on the same trace.  A job
 * larger than its team's share has no ratio; a team without a guarantee
 * is not replayed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/finish_time.h"
#include "sim/metrics.h"
#include "tiny_world.h"

/* Options of every run here: no checkpoints (a preempted job restarts). */
static gp_sim_options options(void)
{
    gp_sim_options o = gp_sim_options_default();
    o.checkpoint_interval_s = 0;
    return o;
}

static gp_sim_setup setup_of(tiny *w)
{
    return (gp_sim_setup){.fleet = &w->fleet, .tenants = &w->tenants, .trace = &w->trace};
}

static void run(tiny *w, const char *policy, gp_sim_result *r)
{
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse(policy, &p));
    gp_sim_setup s = setup_of(w);
    gp_sim_options o = options();
    gp_error err;
    if (gp_sim_run(&s, &p, &o, r, &err))
        fail_msg("%s: %s: %s", policy, err.field, err.message);
}

static void dedicated(tiny *w, gp_sim_dedicated *d)
{
    gp_sim_setup s = setup_of(w);
    gp_sim_options o = options();
    gp_error err;
    if (gp_sim_dedicated_run(&s, &o, d, &err))
        fail_msg("dedicated: %s: %s", err.field, err.message);
}

static const char *two_teams = "tenants:\n"
                               "  - {path: a, guarantee: {gpu: {H100: 4}}}\n"
                               "  - {path: b, guarantee: {gpu: {H100: 4}}}\n";

/* b's 8-GPU job of 3 h at t=0, then a's 4-GPU job of 1 h at 600 s. */
static void b_first_then_a(tiny *w)
{
    tiny_init(w, two_teams);
    tiny_job(w, "b", 0, 8, 3 * 3600);
    tiny_job(w, "a", 600, 4, 3600);
}

static void the_ratio_is_shared_over_dedicated_time(void **state)
{
    (void)state;
    assert_float_equal(gp_sim_finish_ratio(3600, 7200), 0.5, 1e-12);
    assert_float_equal(gp_sim_finish_ratio(7200, 3600), 2.0, 1e-12);
    assert_float_equal(gp_sim_finish_ratio(0, 0), 1.0, 1e-12); /* both counted as 1 s */
    assert_true(gp_sim_finish_ratio(3600, -1) < 0);
}

/* a alone on its 4 GPUs: its two 1-hour jobs finish at 1 h and 2 h. */
static void a_team_alone_on_its_guarantee_queues_its_own_jobs(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, two_teams);
    tiny_job(&w, "a", 0, 4, 3600);
    tiny_job(&w, "a", 0, 4, 3600);
    gp_sim_dedicated d;
    dedicated(&w, &d);
    assert_int_equal(d.teams, 1); /* b has no jobs: not a report group */
    assert_int_equal(d.jct[0], 3600);
    assert_int_equal(d.jct[1], 7200);
    gp_sim_dedicated_free(&d);
    tiny_free(&w);
}

static void borrowing_idle_gpus_finishes_sooner_than_owning_the_share(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, two_teams);
    tiny_job(&w, "a", 0, 4, 3600);
    tiny_job(&w, "a", 0, 4, 3600);
    gp_sim_dedicated d;
    dedicated(&w, &d);
    gp_sim_result r;
    run(&w, "gpupool", &r);
    gp_sim_finish_stats st;
    assert_int_equal(gp_sim_finish_stats_compute(&r, &w.trace, &d, 0, &st, NULL), GP_OK);
    assert_int_equal(st.jobs, 2);
    assert_float_equal(st.p50, 0.5, 1e-12); /* rho 1 and 0.5 */
    assert_float_equal(st.p95, 1.0, 1e-12);
    assert_float_equal(st.max, 1.0, 1e-12);
    assert_false(st.team_within); /* its second job is over its guarantee */
    gp_sim_result_free(&r);
    run(&w, "static", &r);
    assert_int_equal(gp_sim_finish_stats_compute(&r, &w.trace, &d, 0, &st, NULL), GP_OK);
    assert_float_equal(st.p50, 1.0, 1e-12); /* capped at 4: as alone */
    assert_float_equal(st.max, 1.0, 1e-12);
    gp_sim_result_free(&r);
    gp_sim_dedicated_free(&d);
    tiny_free(&w);
}

/* b borrows a's idle 4 GPUs; a's job within its guarantee reclaims them at once. */
static void a_team_within_its_guarantee_is_not_slower_than_alone(void **state)
{
    (void)state;
    tiny w;
    b_first_then_a(&w);
    gp_sim_dedicated d;
    dedicated(&w, &d);
    assert_int_equal(d.jct[0], -1); /* 8 GPUs: larger than b's 4 */
    assert_int_equal(d.jct[1], 3600);
    gp_sim_result r;
    run(&w, "gpupool", &r);
    gp_sim_finish_stats st;
    assert_int_equal(gp_sim_finish_stats_compute(&r, &w.trace, &d, 1, &st, NULL), GP_OK); /* group 1: a */
    assert_true(st.team_within);
    assert_int_equal(st.jobs, 1);
    assert_float_equal(st.max, 1.0, 1e-12);
    assert_float_equal(st.within_p95, 1.0, 1e-12);
    assert_int_equal(gp_sim_finish_stats_compute(&r, &w.trace, &d, 0, &st, NULL), GP_OK); /* b: no ratio */
    assert_int_equal(st.jobs, 0);
    assert_int_equal(st.no_ratio, 1);
    assert_true(st.p95 < 0);
    gp_sim_finish_summary fs;
    assert_int_equal(gp_sim_finish_summary_compute(&r, &w.trace, &d, &fs, NULL), GP_OK);
    assert_int_equal(fs.teams_judged, 1);
    assert_int_equal(fs.teams_met, 1);
    assert_int_equal(fs.teams_all_within, 1);
    assert_float_equal(fs.worst_within_p95, 1.0, 1e-12);
    gp_sim_result_free(&r);
    gp_sim_dedicated_free(&d);
    tiny_free(&w);
}

/* The FIFO baseline lets b's 8-GPU job hold the node: a waits 3 h - 600 s. */
static void a_fifo_queue_makes_the_team_slower_than_alone(void **state)
{
    (void)state;
    tiny w;
    b_first_then_a(&w);
    gp_sim_dedicated d;
    dedicated(&w, &d);
    gp_sim_result r;
    run(&w, "fifo", &r);
    gp_sim_finish_stats st;
    assert_int_equal(gp_sim_finish_stats_compute(&r, &w.trace, &d, 1, &st, NULL), GP_OK);
    assert_float_equal(st.max, (4 * 3600.0 - 600) / 3600, 1e-12); /* ends at 4 h, submitted at 600 s */
    gp_sim_result_free(&r);
    gp_sim_dedicated_free(&d);
    tiny_free(&w);
}

/* The same trace's share (sim/share.h) as the simulator measures it,
 * under FIFO: b holds 8 GPUs 0..3 h, a waits and runs 3..4 h.  Fair
 * shares: 0..600 s b alone wants 8; 600 s..3 h both (a 4, b 8) get 4
 * each; 3..4 h a's 4.  b: received 24 GPU-h, fair 8/6 + 4 x 10200/3600;
 * a: received 4, fair 4 x 10200/3600 + 4.  No full day: no day measured. */
static void the_simulator_measures_the_share_against_water_filled_demand(void **state)
{
    (void)state;
    tiny w;
    b_first_then_a(&w);
    gp_sim_result r;
    run(&w, "fifo", &r);
    assert_int_equal(r.share.n_days, 0);
    assert_float_equal(r.share.received_h[0], 24, 1e-9);
    assert_float_equal(r.share.fair_h[0], 8.0 / 6 + 4 * 10200.0 / 3600, 1e-9);
    assert_float_equal(r.share.received_h[1], 4, 1e-9);
    assert_float_equal(r.share.fair_h[1], 4 * 10200.0 / 3600 + 4, 1e-9);
    gp_sim_metrics m;
    assert_int_equal(gp_sim_metrics_compute(&r, &w.trace, 1, &m, NULL), GP_OK);
    assert_float_equal(m.share_ratio, 4 / (4 * 10200.0 / 3600 + 4), 1e-9);
    gp_sim_result_free(&r);
    tiny_free(&w);
}

static void a_team_without_a_guarantee_is_not_replayed(void **state)
{
    (void)state;
    tiny w;
    tiny_init(&w, "tenants:\n  - {path: a, guarantee: {gpu: {H100: 4}}}\n");
    tiny_job(&w, "c", 0, 2, 100);
    tiny_job(&w, "a", 0, 2, 100);
    gp_sim_dedicated d;
    dedicated(&w, &d);
    assert_int_equal(d.teams, 1);
    assert_int_equal(d.jct[0], -1);
    assert_int_equal(d.jct[1], 100);
    gp_sim_dedicated_free(&d);
    tiny_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_ratio_is_shared_over_dedicated_time),
        cmocka_unit_test(a_team_alone_on_its_guarantee_queues_its_own_jobs),
        cmocka_unit_test(borrowing_idle_gpus_finishes_sooner_than_owning_the_share),
        cmocka_unit_test(a_team_within_its_guarantee_is_not_slower_than_alone),
        cmocka_unit_test(a_fifo_queue_makes_the_team_slower_than_alone),
        cmocka_unit_test(the_simulator_measures_the_share_against_water_filled_demand),
        cmocka_unit_test(a_team_without_a_guarantee_is_not_replayed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
