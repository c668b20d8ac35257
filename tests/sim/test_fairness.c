/* test_fairness.c - Jain's index over backlogged teams (sim/fairness.h),
 * checked by hand.
 *
 * The index: equal x -> 1; one team starved among n, the rest equal ->
 * (n-1)/n; shares are divided by entitlements first.  The tracker: a team
 * pending less than half an hour is not backlogged; usage is averaged over
 * the hour; hours with fewer than 2 backlogged teams are skipped.  The
 * simulator's use of it (fifo vs gpupool, lost work, entitlements from
 * weights) is in test_baselines.c.
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
    assert_int_equal(gp_sim_fairness_init(f, n_groups, entitlement, NULL, 1, cap, 0, NULL), GP_OK);
}

/* Groups 0 and 1 have work pending from t=0 on. */
static void first_two_waiting(gp_sim_fairness *f)
{
    gp_sim_fairness_pending(f, 0, 0, +1);
    gp_sim_fairness_pending(f, 0, 1, +1);
}

/* Close the hours up to now, expect n_hours of them, free the tracker; the caller frees the hours. */
static gp_sim_fair_hour *close_until(gp_sim_fairness *f, int64_t now, size_t n_hours)
{
    assert_true(gp_sim_fairness_advance(f, now));
    size_t n;
    gp_sim_fair_hour *h = gp_sim_fairness_take_hours(f, &n);
    assert_int_equal(n, n_hours);
    gp_sim_fairness_free(f);
    return h;
}

static void shares_are_divided_by_entitlement(void **state)
{
    (void)state;
    double ent[2] = {0.75, 0.25};
    gp_sim_fairness f;
    tracker(&f, 2, ent);
    first_two_waiting(&f);
    gp_sim_fairness_usage(&f, 0, 0, 0, 6000); /* 6/8 = 0.75: x = 1 */
    gp_sim_fairness_usage(&f, 0, 1, 0, 2000); /* 2/8 = 0.25: x = 1 */
    gp_sim_fair_hour *h = close_until(&f, 3600, 1);
    assert_int_equal(h[0].backlogged, 2);
    assert_float_equal(h[0].jain, 1.0, 1e-12);
    free(h);
}

static void a_team_not_backlogged_is_ignored(void **state)
{
    (void)state;
    double ent[3] = {0.25, 0.25, 0.5};
    gp_sim_fairness f;
    tracker(&f, 3, ent);
    first_two_waiting(&f);
    gp_sim_fairness_usage(&f, 0, 0, 0, 2000);
    gp_sim_fairness_usage(&f, 0, 1, 0, 2000);
    gp_sim_fairness_usage(&f, 0, 2, 0, 4000); /* c holds a lot but waits for nothing */
    gp_sim_fairness_pending(&f, 0, 2, +1);    /* ... except for 20 minutes */
    gp_sim_fairness_pending(&f, 1200, 2, -1);
    gp_sim_fair_hour *h = close_until(&f, 3600, 1);
    assert_int_equal(h[0].backlogged, 2);
    assert_float_equal(h[0].jain, 1.0, 1e-12);
    free(h);
}

static void usage_is_averaged_over_the_hour(void **state)
{
    (void)state;
    double ent[2] = {0.5, 0.5};
    gp_sim_fairness f;
    tracker(&f, 2, ent);
    first_two_waiting(&f);
    gp_sim_fairness_usage(&f, 0, 0, 0, 8000);     /* a: 8 GPUs for the first half hour */
    gp_sim_fairness_usage(&f, 1800, 0, 0, -8000); /* then b: 8 for the second */
    gp_sim_fairness_usage(&f, 1800, 1, 0, 8000);
    gp_sim_fair_hour *h = close_until(&f, 7200, 2); /* the second hour: b holds 8, a none */
    assert_float_equal(h[0].jain, 1.0, 1e-12);     /* 4 GPUs each on average */
    assert_float_equal(h[1].jain, 0.5, 1e-12);
    assert_int_equal(h[1].start, 3600);
    free(h);
}

static void hours_with_fewer_than_two_backlogged_teams_are_skipped(void **state)
{
    (void)state;
    double ent[2] = {0.5, 0.5};
    gp_sim_fairness f;
    tracker(&f, 2, ent);
    gp_sim_fairness_pending(&f, 0, 0, +1);
    gp_sim_fairness_usage(&f, 0, 1, 0, 8000);
    gp_sim_fair_hour *h = close_until(&f, 3600 + 1800, 1); /* one full hour closed, not the half */
    assert_int_equal(h[0].backlogged, 1);
    assert_true(h[0].jain < 0);
    free(h);
}

/* fairness.h's tree example: org o (node 0) holds p (1) and q (2), org z
 * (3) holds r (4); every weight 1; groups p, q, r. */
static int32_t tree_parent[5] = {-1, 0, 0, -1, 3};
static double tree_weight[5] = {1, 1, 1, 1, 1};
static int32_t tree_group_node[3] = {1, 2, 4};
static const gp_sim_fair_tree TREE = {.n_nodes = 5, .parent = tree_parent, .weight = tree_weight,
                                      .group_node = tree_group_node};

static void an_idle_teams_part_goes_to_its_siblings_first(void **state)
{
    (void)state;
    bool active[5];
    double sum[6], out[3];
    bool p_and_r[3] = {true, false, true};
    gp_sim_fair_tree_entitlements(&TREE, 3, p_and_r, active, sum, out);
    assert_float_equal(out[0], 0.5, 1e-12); /* p takes q's part of o */
    assert_float_equal(out[1], 0.0, 1e-12);
    assert_float_equal(out[2], 0.5, 1e-12);
    bool all[3] = {true, true, true};
    gp_sim_fair_tree_entitlements(&TREE, 3, all, active, sum, out);
    assert_float_equal(out[0], 0.25, 1e-12); /* the static shares */
    assert_float_equal(out[1], 0.25, 1e-12);
    assert_float_equal(out[2], 0.5, 1e-12);
    bool p_and_q[3] = {true, true, false};
    gp_sim_fair_tree_entitlements(&TREE, 3, p_and_q, active, sum, out);
    assert_float_equal(out[0], 0.5, 1e-12); /* o takes z's part */
    assert_float_equal(out[1], 0.5, 1e-12);
}

/* p and r wait all hour and hold half the fleet each, q is idle: fair
 * among the backlogged (x = 1, 1); judged on the static shares 1/4 and
 * 1/2 it would read x = (2, 1), J = 0.9. */
static void the_index_judges_the_backlogged_on_what_hierarchical_drf_gives_them(void **state)
{
    (void)state;
    double ent[3] = {0.25, 0.25, 0.5};
    int64_t cap[1] = {8000};
    gp_sim_fairness f;
    assert_int_equal(gp_sim_fairness_init(&f, 3, ent, &TREE, 1, cap, 0, NULL), GP_OK);
    gp_sim_fairness_pending(&f, 0, 0, +1);
    gp_sim_fairness_pending(&f, 0, 2, +1);
    gp_sim_fairness_usage(&f, 0, 0, 0, 4000);
    gp_sim_fairness_usage(&f, 0, 2, 0, 4000);
    gp_sim_fair_hour *h = close_until(&f, 3600, 1);
    assert_int_equal(h[0].backlogged, 2);
    assert_float_equal(h[0].jain, 1.0, 1e-12);
    assert_float_equal(h[0].jain_static, 0.9, 1e-12);
    free(h);
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
        cmocka_unit_test(an_idle_teams_part_goes_to_its_siblings_first),
        cmocka_unit_test(the_index_judges_the_backlogged_on_what_hierarchical_drf_gives_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
