/* test_share.c - the water-filled fair share and the received / fair
 * ratio (sim/share.h), checked against cases worked by hand.
 *
 * Flat water-filling: demand caps, weights, what a capped claimant leaves
 * going to the rest by weight, nothing given past the demand.  Down a
 * tree: an org's part split among its teams, an idle team's part going
 * to its siblings first, a team with jobs of its own and sub-teams.  The
 * tracker: a day's ratio and Jain index, demand split over accepted GPU
 * types, days with one team skipped, the run's totals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/share.h"

#define DAY GP_SIM_SHARE_DAY_S

/* ---- flat water-filling ---- */

static void everyone_gets_their_demand_when_it_fits(void **state)
{
    (void)state;
    double w[3] = {1, 1, 1}, d[3] = {1, 2, 3}, out[3];
    assert_float_equal(gp_sim_water_fill(3, w, d, 8, out), 6, 1e-12);
    assert_float_equal(out[0], 1, 1e-12);
    assert_float_equal(out[1], 2, 1e-12);
    assert_float_equal(out[2], 3, 1e-12);
}

/* share.h's example: 8 GPUs, a (1) wants 2, b (1) 8, c (2) 8: even by
 * weight 2 : 2 : 4; a is capped at 2, the 6 left go to b and c as 1 : 2. */
static void what_a_capped_team_leaves_goes_to_the_rest_by_weight(void **state)
{
    (void)state;
    double w[3] = {1, 1, 2}, d[3] = {2, 8, 8}, out[3];
    assert_float_equal(gp_sim_water_fill(3, w, d, 8, out), 8, 1e-12);
    assert_float_equal(out[0], 2, 1e-12);
    assert_float_equal(out[1], 2, 1e-12);
    assert_float_equal(out[2], 4, 1e-12);
    double d_no_a[3] = {0, 8, 8};
    gp_sim_water_fill(3, w, d_no_a, 8, out);
    assert_float_equal(out[0], 0, 1e-12);
    assert_float_equal(out[1], 8.0 / 3, 1e-12);
    assert_float_equal(out[2], 16.0 / 3, 1e-12);
}

/* 10 GPUs, weights 1, 2, 3, 4, demands 1, 1, 9, 9: level 1 per weight
 * caps a (1) and b (1 <= 2); 8 left over weights 7: c 24/7 and d 32/7. */
static void caps_cascade_until_the_level_holds(void **state)
{
    (void)state;
    double w[4] = {1, 2, 3, 4}, d[4] = {1, 1, 9, 9}, out[4];
    gp_sim_water_fill(4, w, d, 10, out);
    assert_float_equal(out[0], 1, 1e-12);
    assert_float_equal(out[1], 1, 1e-12);
    assert_float_equal(out[2], 24.0 / 7, 1e-12);
    assert_float_equal(out[3], 32.0 / 7, 1e-12);
    /* raise c's demand cap below its level: c 3, d the 5 left */
    double d2[4] = {1, 1, 3, 9};
    gp_sim_water_fill(4, w, d2, 10, out);
    assert_float_equal(out[2], 3, 1e-12);
    assert_float_equal(out[3], 5, 1e-12);
}

static void no_weight_or_no_demand_gets_nothing(void **state)
{
    (void)state;
    double w[3] = {0, 1, 1}, d[3] = {5, 0, 5}, out[3];
    assert_float_equal(gp_sim_water_fill(3, w, d, 8, out), 5, 1e-12);
    assert_float_equal(out[0], 0, 1e-12);
    assert_float_equal(out[1], 0, 1e-12);
    assert_float_equal(out[2], 5, 1e-12);
    assert_float_equal(gp_sim_water_fill(3, w, d, 0, out), 0, 1e-12);
}

/* ---- down a tree ---- */

/* share.h's tree: org o (node 0) holds p (1) and q (2), team r (3) at the
 * top; all weight 1; groups p, q, r. */
static int32_t tree_parent[4] = {-1, 0, 0, -1};
static double tree_weight[4] = {1, 1, 1, 1};
static int32_t tree_group_node[3] = {1, 2, 3};
static const gp_sim_fair_tree TREE = {.n_nodes = 4, .parent = tree_parent, .weight = tree_weight,
                                      .group_node = tree_group_node};

static void fill_tree(const gp_sim_fair_tree *tree, size_t n_groups, const double *demand, double cap, double *out)
{
    gp_sim_share_tree st;
    assert_int_equal(gp_sim_share_tree_init(&st, tree, n_groups, NULL), GP_OK);
    gp_sim_share_tree_fill(&st, demand, cap, out);
    gp_sim_share_tree_free(&st);
}

static void an_org_splits_its_part_among_its_teams(void **state)
{
    (void)state;
    double d[3] = {8, 1, 8}, out[3];
    fill_tree(&TREE, 3, d, 8, out); /* o 4 and r 4; in o, q takes 1 and p the 3 left */
    assert_float_equal(out[0], 3, 1e-12);
    assert_float_equal(out[1], 1, 1e-12);
    assert_float_equal(out[2], 4, 1e-12);
}

static void an_idle_teams_part_goes_to_its_siblings_first(void **state)
{
    (void)state;
    double d[3] = {8, 0, 8}, out[3];
    fill_tree(&TREE, 3, d, 8, out); /* q idle: p gets all of o's 4, not 8/3 as in a flat tree */
    assert_float_equal(out[0], 4, 1e-12);
    assert_float_equal(out[1], 0, 1e-12);
    assert_float_equal(out[2], 4, 1e-12);
    double small_org[3] = {1, 1, 8};
    fill_tree(&TREE, 3, small_org, 8, out); /* o wants 2 in all: r gets the other 6 */
    assert_float_equal(out[0], 1, 1e-12);
    assert_float_equal(out[1], 1, 1e-12);
    assert_float_equal(out[2], 6, 1e-12);
}

/* Weights down the tree: org o (weight 3) with p (1) and q (3), r (1) at
 * the top; 16 GPUs, everyone wants 16: o 12, r 4; p 3, q 9. */
static void weights_apply_at_every_level(void **state)
{
    (void)state;
    double weight[4] = {3, 1, 3, 1};
    gp_sim_fair_tree tree = TREE;
    tree.weight = weight;
    double d[3] = {16, 16, 16}, out[3];
    fill_tree(&tree, 3, d, 16, out);
    assert_float_equal(out[0], 3, 1e-12);
    assert_float_equal(out[1], 9, 1e-12);
    assert_float_equal(out[2], 4, 1e-12);
}

/* A team with jobs of its own and a sub-team: its own jobs are one more
 * child of its weight.  Team t (node 0, weight 1, group 0) holds s (node
 * 1, weight 1, group 1); u (node 2, weight 2, group 2) at the top; 12
 * GPUs, all want 12: t 4, u 8; within t, its own 2 and s 2. */
static void a_teams_own_jobs_share_with_its_sub_teams(void **state)
{
    (void)state;
    int32_t parent[3] = {-1, 0, -1}, group_node[3] = {0, 1, 2};
    double weight[3] = {1, 1, 2};
    gp_sim_fair_tree tree = {.n_nodes = 3, .parent = parent, .weight = weight, .group_node = group_node};
    double d[3] = {12, 12, 12}, out[3];
    fill_tree(&tree, 3, d, 12, out);
    assert_float_equal(out[0], 2, 1e-12);
    assert_float_equal(out[1], 2, 1e-12);
    assert_float_equal(out[2], 8, 1e-12);
}

/* Children listed before their parents in the tree's numbering. */
static void the_tree_may_list_children_first(void **state)
{
    (void)state;
    int32_t parent[4] = {3, 3, -1, -1}, group_node[3] = {0, 1, 2}; /* p, q under o (node 3); r node 2 */
    double weight[4] = {1, 1, 1, 1};
    gp_sim_fair_tree tree = {.n_nodes = 4, .parent = parent, .weight = weight, .group_node = group_node};
    double d[3] = {8, 1, 8}, out[3];
    fill_tree(&tree, 3, d, 8, out);
    assert_float_equal(out[0], 3, 1e-12);
    assert_float_equal(out[1], 1, 1e-12);
    assert_float_equal(out[2], 4, 1e-12);
}

/* ---- the tracker: one GPU type of 8, a flat tree of 3 teams, days from t=0 ---- */

static void tracker(gp_sim_share *s, size_t n_groups, int n_types, const int64_t *cap)
{
    gp_sim_fair_tree flat = {0};
    assert_int_equal(gp_sim_share_init(s, n_groups, &flat, n_types, cap, 0, NULL), GP_OK);
}

/* share.h's day: a wants 2, b 8, c (weight 1 here) 8 all day; a holds 2,
 * b nothing, c 6.  Fair (2, 3, 3); ratios (1, 0, 2). */
static void a_day_compares_what_each_held_with_its_fair_share(void **state)
{
    (void)state;
    int64_t cap[1] = {8000};
    gp_sim_share s;
    tracker(&s, 3, 1, cap);
    gp_sim_share_pending(&s, 0, 1, 1u, 8000, +1); /* b's 8 wait all day */
    gp_sim_share_pending(&s, 0, 2, 1u, 2000, +1); /* c waits for 2 more */
    gp_sim_share_usage(&s, 0, 0, 0, 2000);
    gp_sim_share_usage(&s, 0, 2, 0, 6000);
    gp_sim_share_result r;
    assert_true(gp_sim_share_take(&s, DAY, &r));
    gp_sim_share_free(&s);
    assert_int_equal(r.n_days, 1);
    assert_int_equal(r.days[0].teams, 3);
    assert_float_equal(r.fair_h[0], 2 * 24, 1e-6);
    assert_float_equal(r.fair_h[1], 3 * 24, 1e-6);
    assert_float_equal(r.fair_h[2], 3 * 24, 1e-6);
    assert_float_equal(r.received_h[2], 6 * 24, 1e-6);
    double x[3] = {1, 0, 2};
    assert_float_equal(r.days[0].jain, gp_sim_jain(x, 3), 1e-9); /* 9 / (3 x 5) = 0.6 */
    assert_float_equal(r.days[0].jain, 0.6, 1e-9);
    gp_sim_share_result_free(&r);
}

/* A job waits an hour, then runs 3 hours: fair share 4 h x 4 GPUs, received 3 h x 4. */
static void waiting_reads_below_one_and_binding_moves_pending_to_usage(void **state)
{
    (void)state;
    int64_t cap[1] = {8000};
    gp_sim_share s;
    tracker(&s, 2, 1, cap);
    gp_sim_share_usage(&s, 0, 1, 0, 4000); /* b: 4 GPUs all day, as it asked */
    gp_sim_share_pending(&s, 0, 0, 1u, 4000, +1);
    gp_sim_share_pending(&s, 3600, 0, 1u, 4000, -1); /* bound */
    gp_sim_share_usage(&s, 3600, 0, 0, 4000);
    gp_sim_share_usage(&s, 4 * 3600, 0, 0, -4000); /* done */
    gp_sim_share_result r;
    assert_true(gp_sim_share_take(&s, DAY, &r));
    gp_sim_share_free(&s);
    assert_float_equal(r.fair_h[0], 16, 1e-6);
    assert_float_equal(r.received_h[0], 12, 1e-6);
    assert_float_equal(r.fair_h[1], 96, 1e-6);
    double x[2] = {0.75, 1};
    assert_float_equal(r.days[0].jain, gp_sim_jain(x, 2), 1e-9);
    gp_sim_share_result_free(&r);
}

/* Two types of 8 each; a pending job that accepts both counts half on each. */
static void a_pending_job_of_several_types_counts_on_each_equally(void **state)
{
    (void)state;
    int64_t cap[2] = {8000, 8000};
    gp_sim_share s;
    tracker(&s, 2, 2, cap);
    gp_sim_share_pending(&s, 0, 0, 3u, 16000, +1); /* a: 8 wanted of each type */
    gp_sim_share_pending(&s, 0, 1, 1u, 8000, +1);  /* b: 8 of type 0 only */
    gp_sim_share_result r;
    assert_true(gp_sim_share_take(&s, DAY, &r));
    gp_sim_share_free(&s);
    assert_float_equal(r.fair_h[0], (4 + 8) * 24, 1e-6); /* type 0 split 4 : 4, type 1 all a's */
    assert_float_equal(r.fair_h[1], 4 * 24, 1e-6);
    gp_sim_share_result_free(&r);
}

static void days_with_one_team_are_skipped_and_the_run_adds_up(void **state)
{
    (void)state;
    int64_t cap[1] = {8000};
    gp_sim_share s;
    tracker(&s, 2, 1, cap);
    gp_sim_share_usage(&s, 0, 0, 0, 8000);          /* day 0: a alone, all it asked for */
    gp_sim_share_usage(&s, DAY, 0, 0, -8000);
    gp_sim_share_pending(&s, DAY, 0, 1u, 8000, +1); /* day 1: a and b wait, b holds 8 */
    gp_sim_share_usage(&s, DAY, 1, 0, 8000);
    gp_sim_share_pending(&s, DAY, 1, 1u, 8000, +1);
    gp_sim_share_result r;
    assert_true(gp_sim_share_take(&s, 2 * DAY + 3600, &r)); /* the last hour: totals only */
    gp_sim_share_free(&s);
    assert_int_equal(r.n_days, 2);
    assert_true(r.days[0].jain < 0);
    assert_int_equal(r.days[0].teams, 1);
    assert_float_equal(r.days[1].jain, 0.5, 1e-9); /* ratios (0, 2) */
    assert_float_equal(r.day_fair_h[1 * 2 + 0], 4 * 24, 1e-6);
    assert_float_equal(r.received_h[0], 8 * 24, 1e-6);
    assert_float_equal(r.fair_h[0], 8 * 24 + 4 * 25, 1e-6);
    assert_float_equal(r.received_h[1], 8 * 25, 1e-6);
    gp_sim_share_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(everyone_gets_their_demand_when_it_fits),
        cmocka_unit_test(what_a_capped_team_leaves_goes_to_the_rest_by_weight),
        cmocka_unit_test(caps_cascade_until_the_level_holds),
        cmocka_unit_test(no_weight_or_no_demand_gets_nothing),
        cmocka_unit_test(an_org_splits_its_part_among_its_teams),
        cmocka_unit_test(an_idle_teams_part_goes_to_its_siblings_first),
        cmocka_unit_test(weights_apply_at_every_level),
        cmocka_unit_test(a_teams_own_jobs_share_with_its_sub_teams),
        cmocka_unit_test(the_tree_may_list_children_first),
        cmocka_unit_test(a_day_compares_what_each_held_with_its_fair_share),
        cmocka_unit_test(waiting_reads_below_one_and_binding_moves_pending_to_usage),
        cmocka_unit_test(a_pending_job_of_several_types_counts_on_each_equally),
        cmocka_unit_test(days_with_one_team_are_skipped_and_the_run_adds_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
