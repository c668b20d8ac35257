/* test_fairshare.c - hierarchical weighted DRF ordering and order within a leaf.
 *
 * Semantics under test (docs/scheduling.md, "Ordering"): at each tree level
 * the child with the lowest dominant share (max over dims of usage / fleet
 * capacity, divided by weight) goes next; shares update after each
 * placement; inside a leaf, priority (higher first), then submit time, then
 * id.
 *
 * Worked example used below: an 8-GPU fleet, teams org/a and org/b with
 * equal weights, 20 one-GPU jobs each.  One pass gives 4 and 4: after
 * every placement the team with fewer GPUs goes next.  When a job of team b
 * finishes, b (3 GPUs) is below a (4 GPUs), so b's next job takes the free
 * GPU even though all of a's waiting jobs are older.
 *
 * No tenant has a guarantee, so every job is burstable and nothing is ever
 * preempted: what these tests see is ordering alone; the last test gives
 * one a guarantee, to see phase 1 skip only what it may.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

static void fleet8(tb_world *w)
{
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
}

static void weighted_team(tb_world *w, const char *path, double weight)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.weight = weight;
    assert_int_equal(tb_tenant_try(w, path, &s, NULL), GP_OK);
}

static void two_teams(tb_world *w, double weight_a, double weight_b)
{
    tb_tenant(w, "org", "H100", -1, -1);
    weighted_team(w, "org/a", weight_a);
    weighted_team(w, "org/b", weight_b);
}

/* Team a: ids 1..20 at t=0; team b: ids 101..120 at t=1 (all of a's are older). */
static void twenty_each(tb_world *w)
{
    tb_submit_many(w, 1, 20, "org/a", 0);
    tb_submit_many(w, 101, 20, "org/b", 1);
}

static bool is_team_a(uint64_t id)
{
    return id < 100;
}

static void submit_prio(tb_world *w, uint64_t id, const char *tenant, int priority, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.priority = priority;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

/* Lowest-id job of the tenant in state s, or 0. */
static uint64_t oldest_in_state(tb_world *w, uint64_t first, uint64_t last, gp_job_state s)
{
    for (uint64_t id = first; id <= last; id++)
        if (tb_state(w, id) == s)
            return id;
    return 0;
}

static void equal_weights_split_the_fleet_four_and_four(void **state)
{
    tb_world *w = *state;
    fleet8(w);
    two_teams(w, 0, 0);
    twenty_each(w);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 8);
    assert_int_equal(tb_jobs_holding(w, "org/a"), 4);
    assert_int_equal(tb_jobs_holding(w, "org/b"), 4);

    /* shares update after each placement: no prefix of the bind order is
     * more than one GPU out of balance */
    uint64_t bound[8];
    assert_int_equal(tb_bound_jobs(w, bound, 8), 8);
    int a = 0, b = 0;
    for (int i = 0; i < 8; i++) {
        is_team_a(bound[i]) ? a++ : b++;
        assert_true(abs(a - b) <= 1);
    }
    /* inside each team, oldest first: a got 1..4, b got 101..104 */
    assert_int_equal(tb_state(w, 4), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 5), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 104), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 105), GP_JOB_PENDING);
}

static void freed_gpu_goes_to_the_team_below_its_share(void **state)
{
    tb_world *w = *state;
    fleet8(w);
    two_teams(w, 0, 0);
    twenty_each(w);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 8);

    /* Rounds alternate: a job of a finishes, then one of b, ...  Each time
     * the finishing team drops to 3 and must get the GPU back, although
     * team a's waiting jobs are older than all of team b's. */
    for (int round = 0; round < 8; round++) {
        bool team_a = round % 2 == 0;
        uint64_t first = team_a ? 1 : 101, last = team_a ? 20 : 120;
        uint64_t done = oldest_in_state(w, first, last, GP_JOB_RUNNING);
        uint64_t next = oldest_in_state(w, first, last, GP_JOB_PENDING);
        assert_true(done != 0 && next != 0);
        int64_t now = 10 + round;
        tb_finish(w, done, GP_EXIT_SUCCEEDED, now);
        assert_int_equal(tb_tick(w, now, GP_DEC_BIND), 1);
        uint64_t bound = 0;
        tb_bound_jobs(w, &bound, 1);
        if (bound != next)
            fail_msg("round %d: bound job %llu, want %llu (team %s)", round, (unsigned long long)bound,
                     (unsigned long long)next, team_a ? "a" : "b");
        assert_int_equal(tb_jobs_holding(w, "org/a"), 4);
        assert_int_equal(tb_jobs_holding(w, "org/b"), 4);
    }
    tb_assert_gpus_consistent(w);
}

static void weights_three_to_one_give_six_and_two(void **state)
{
    tb_world *w = *state;
    fleet8(w);
    /* shares a/3 and b/1 equalise at a=6, b=2 (6/8/3 = 2/8/1 = 0.25) */
    two_teams(w, 3, 1);
    twenty_each(w);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 8);
    assert_int_equal(tb_jobs_holding(w, "org/a"), 6);
    assert_int_equal(tb_jobs_holding(w, "org/b"), 2);
}

static void shares_split_at_each_level_of_the_tree(void **state)
{
    tb_world *w = *state;
    fleet8(w);
    tb_tenant(w, "org1", "H100", -1, -1);
    tb_tenant(w, "org1/x", "H100", -1, -1);
    tb_tenant(w, "org1/y", "H100", -1, -1);
    tb_tenant(w, "org2", "H100", -1, -1);
    tb_tenant(w, "org2/z", "H100", -1, -1);
    tb_submit_many(w, 1, 10, "org1/x", 0);
    tb_submit_many(w, 101, 10, "org1/y", 0);
    tb_submit_many(w, 201, 10, "org2/z", 0);
    /* top level: org1 4, org2 4 (not 3 teams x 8/3); inside org1: x 2, y 2 */
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 8);
    assert_int_equal(tb_jobs_holding(w, "org2/z"), 4);
    assert_int_equal(tb_jobs_holding(w, "org1/x"), 2);
    assert_int_equal(tb_jobs_holding(w, "org1/y"), 2);
}

static void dominant_share_uses_the_scarcest_resource(void **state)
{
    tb_world *w = *state;
    fleet8(w); /* 8 GPUs, 128000 mCPU */
    two_teams(w, 0, 0);
    /* a's jobs take 1 GPU + 32000 mCPU: dominant share 0.25 each (CPU);
     * b's take 1 GPU + 1000 mCPU: 0.125 each (GPU).  Greedy DRF:
     * a=1 .25 | b=2 .25 | a=2 .5 | b=4 .5 | a=3 .75 | b=5 .625 -> 8 GPUs.
     * GPU-only fairness would give 4 and 4. */
    for (uint64_t id = 1; id <= 8; id++) {
        gp_job_spec s = tb_job(id, "org/a", 0);
        s.cpu_millis = 32000;
        assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    }
    tb_submit_many(w, 101, 8, "org/b", 0);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 8);
    assert_int_equal(tb_jobs_holding(w, "org/a"), 3);
    assert_int_equal(tb_jobs_holding(w, "org/b"), 5);
}

static void submit_typed(tb_world *w, uint64_t id, const char *tenant, const char *type, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.n_gpu_types = 1;
    s.gpu_types[0] = type;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void shares_follow_a_change_of_the_fleet(void **state)
{
    tb_world *w = *state;
    /* 8 H100 and 2 A100: a runs 7 H100 jobs (share 7/8), b 2 A100 jobs
     * (2/2).  Six A100 more come up: b is at 2/8 now, below a, so b's job
     * takes the last H100 although a's waiting job is as old. */
    fleet8(w);
    tb_add_nodes(w, 1, "A100", 2, "b0", "z0");
    two_teams(w, 0, 0);
    for (uint64_t id = 1; id <= 7; id++)
        submit_typed(w, id, "org/a", "H100", 0);
    submit_typed(w, 101, "org/b", "A100", 0);
    submit_typed(w, 102, "org/b", "A100", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 9);
    tb_add_nodes(w, 3, "A100", 2, "b0", "z0");
    submit_typed(w, 8, "org/a", "H100", 10);
    submit_typed(w, 103, "org/b", "H100", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 103), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 8), GP_JOB_PENDING);
}

static void higher_priority_goes_first_within_a_leaf(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 2, "b0", "z0"); /* room for two */
    tb_tenant(w, "t", "H100", -1, -1);
    submit_prio(w, 1, "t", 0, 0);
    submit_prio(w, 2, "t", 5, 1);
    submit_prio(w, 3, "t", 0, 2);
    submit_prio(w, 4, "t", 5, 3);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 2);
    assert_non_null(tb_find(w, 2, GP_DEC_BIND));
    assert_non_null(tb_find(w, 4, GP_DEC_BIND));
    /* one GPU frees: equal priority 0 left, the older (job 1) goes */
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 1, GP_DEC_BIND));
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
}

static void older_job_goes_first_at_equal_priority(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 1, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    submit_prio(w, 10, "t", 0, 5); /* older, higher id */
    submit_prio(w, 9, "t", 0, 6);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 10, GP_DEC_BIND));
}

static void lower_id_breaks_a_tie_of_submit_time(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 1, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    submit_prio(w, 7, "t", 0, 5);
    submit_prio(w, 3, "t", 0, 5); /* submitted second, same second, lower id */
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 3, GP_DEC_BIND));
}

static void priority_does_not_override_fair_share_between_teams(void **state)
{
    tb_world *w = *state;
    fleet8(w);
    two_teams(w, 0, 0);
    for (uint64_t id = 1; id <= 10; id++)
        submit_prio(w, id, "org/a", GP_PRIORITY_MAX, 0);
    for (uint64_t id = 101; id <= 110; id++)
        submit_prio(w, id, "org/b", GP_PRIORITY_MIN, 0);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 8);
    assert_int_equal(tb_jobs_holding(w, "org/a"), 4);
    assert_int_equal(tb_jobs_holding(w, "org/b"), 4);
}

/* Phase 1 passes over a team whose GPU guarantee is used up (fairshare.c):
 * none of its GPU jobs fits the guarantee.  A CPU-only job still does, so
 * the team is not passed over while it has one waiting. */
static void cpu_only_job_still_runs_guaranteed_when_the_gpu_guarantee_is_used_up(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, "org/a", "H100", 8, -1);
    tb_submit(w, 1, "org/a", 1, 8, 0);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 1);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_GUARANTEED);
    tb_submit(w, 2, "org/a", 1, 8, 2); /* no guarantee left: burstable */
    tb_submit(w, 3, "org/a", 1, 0, 3); /* CPU-only: within the guarantee */
    assert_int_equal(tb_tick(w, 4, GP_DEC_BIND), 2);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_info(w, 3).cls, GP_CLASS_GUARANTEED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(equal_weights_split_the_fleet_four_and_four),
        TB_TEST(freed_gpu_goes_to_the_team_below_its_share),
        TB_TEST(weights_three_to_one_give_six_and_two),
        TB_TEST(shares_split_at_each_level_of_the_tree),
        TB_TEST(dominant_share_uses_the_scarcest_resource),
        TB_TEST(shares_follow_a_change_of_the_fleet),
        TB_TEST(higher_priority_goes_first_within_a_leaf),
        TB_TEST(older_job_goes_first_at_equal_priority),
        TB_TEST(lower_id_breaks_a_tie_of_submit_time),
        TB_TEST(priority_does_not_override_fair_share_between_teams),
        TB_TEST(cpu_only_job_still_runs_guaranteed_when_the_gpu_guarantee_is_used_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
