/* test_progress.c - the head of the fair order is never overtaken without bound.
 *
 * Semantics under test (docs/scheduling.md, "Backfill"): the first job in
 * fair order that is blocked for capacity reserves the nodes where it will
 * fit first.  When running jobs with neither an expected runtime nor a
 * time limit must end before it fits, its start is unknown: the held
 * nodes then take no other work as they free up (a later job's estimate
 * cannot end "before" an unknown start), except burstable work when the
 * head runs guaranteed and can reclaim it.  So the GPUs freed on the held
 * nodes accumulate for the head, which starts once the jobs that were on
 * them have ended, however many small jobs arrive meanwhile.
 *
 * Worked example (the seen case): 2 nodes x 8 H100, nobody has a
 * guarantee, no job has an estimate or a limit (the API's defaults).  At
 * t=0 "small" runs 16 one-GPU jobs; at t=10 "big" submits a 1 x 8 gang; at
 * t=20 small queues 16 more one-GPU jobs.  Every 10 s one running job of
 * the first 16 ends, alternately on n00 and n01.  Before the rule, each
 * freed GPU went to a queued small job and the gang never started; now
 * n00 (the first of two equally busy nodes) is held: the GPUs freed on
 * n01 go to small jobs, those freed on n00 wait, and the gang binds on n00
 * at the tick where n00's last original job ends. *
 * Fair-share reclaim (reclaim.c) is off here: with it, big (at 0 of its
 * half of the fleet) would take 8 of small's 16 GPUs back at once, which
 * is test_reclaim's matter; these tests isolate the reservation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

enum { GANG = 100, LATE = 200 };

/* Each test's engine, without fair-share reclaim (see above). */
#define PROGRESS_TEST(fn) cmocka_unit_test_setup_teardown(fn, setup_without_fair_share, tb_teardown)

static int setup_without_fair_share(void **state)
{
    int rc = tb_setup(state);
    tb_world *w = *state;
    gp_engine_config cfg = gp_engine_config_default();
    cfg.fair_share_reclaim = false;
    if (rc == 0)
        tb_use_config(w, &cfg);
    return rc;
}

static void submit_gang(tb_world *w, const char *tenant, int64_t now)
{
    gp_job_spec s = tb_job(GANG, tenant, 0);
    s.gpus = 8;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

/* Job ids of the first 16 jobs by node: on[0] on n00, on[1] on n01. */
static void jobs_by_node(tb_world *w, uint64_t on[2][8])
{
    int count[2] = {0, 0};
    for (uint64_t id = 1; id <= 16; id++) {
        int node = tb_job_node(w, id) == tb_node_index(w, "n00") ? 0 : 1;
        assert_true(count[node] < 8);
        on[node][count[node]++] = id;
    }
}

static void gang_is_not_starved_by_later_small_jobs_without_estimates(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "small", "H100", -1, -1);
    tb_tenant(w, "big", "H100", -1, -1);
    tb_submit_many(w, 1, 16, "small", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 16);
    submit_gang(w, "big", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    tb_submit_many(w, LATE, 16, "small", 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);

    uint64_t on[2][8];
    jobs_by_node(w, on);
    int64_t t = 30;
    for (int i = 0; i < 8; i++) {
        for (int node = 0; node < 2; node++, t += 10) {
            tb_finish(w, on[node][i], GP_EXIT_SUCCEEDED, t);
            tb_tick(w, t, GP_DEC_BIND);
            bool last_on_n00 = node == 0 && i == 7;
            assert_int_equal(tb_state(w, GANG), last_on_n00 ? GP_JOB_RUNNING : GP_JOB_PENDING);
            if (last_on_n00)
                break;
        }
        if (tb_state(w, GANG) == GP_JOB_RUNNING)
            break;
    }
    assert_int_equal(tb_job_node(w, GANG), tb_node_index(w, "n00"));
    assert_int_equal(tb_info(w, GANG).bind_time, 170); /* n00's eighth job ends at t=170 */
    assert_int_equal(tb_jobs_holding(w, "small"), 8);   /* n01: one original, seven late */
    tb_assert_gpus_consistent(w);
}

/* 16 one-GPU jobs without estimates on 2 x 8 GPUs, and the gang reserved
 * at t=10 with no known start. */
static void gang_reserved_without_a_start(tb_world *w, int big_guarantee)
{
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "small", "H100", -1, -1);
    tb_tenant(w, "big", "H100", big_guarantee, -1);
    tb_submit_many(w, 1, 16, "small", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 16);
}

static void head_waiting_on_unbounded_jobs_has_no_start_time(void **state)
{
    tb_world *w = *state;
    gang_reserved_without_a_start(w, -1);
    submit_gang(w, "big", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    gp_job_info info = tb_info(w, GANG);
    assert_int_equal(info.wait.code, GP_WAIT_RESERVED);
    assert_int_equal(info.wait.time, INT64_MAX);
    char why[256];
    gp_engine_why(w->e, GANG, why, sizeof why);
    assert_non_null(strstr(why, "without a time limit or expected runtime"));
}

static void job_with_an_estimate_does_not_take_capacity_held_without_a_start(void **state)
{
    tb_world *w = *state;
    gang_reserved_without_a_start(w, -1);
    submit_gang(w, "big", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    uint64_t on[2][8];
    jobs_by_node(w, on);
    tb_finish(w, on[0][0], GP_EXIT_SUCCEEDED, 20);
    gp_job_spec s = tb_job(LATE, "small", 0);
    s.expected_runtime_s = 1;
    s.time_limit_s = 1;
    assert_int_equal(tb_submit_spec(w, &s, 20, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    gp_job_info info = tb_info(w, LATE);
    assert_int_equal(info.wait.code, GP_WAIT_RESERVATION);
    assert_int_equal(info.wait.job, GANG);
}

static void capacity_off_the_held_nodes_still_goes_to_later_jobs(void **state)
{
    tb_world *w = *state;
    gang_reserved_without_a_start(w, -1);
    submit_gang(w, "big", 10);
    tb_tick(w, 10, GP_DEC_BIND);
    uint64_t on[2][8];
    jobs_by_node(w, on);
    tb_finish(w, on[0][0], GP_EXIT_SUCCEEDED, 20); /* n00 held: closest to 8 free */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    tb_finish(w, on[1][0], GP_EXIT_SUCCEEDED, 30); /* n01 is not held (7 unbounded each: fleet order) */
    tb_submit(w, LATE, "small", 1, 1, 30);
    assert_int_equal(tb_tick(w, 30, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, LATE), tb_node_index(w, "n01"));
}

/* Drain `other` for one tick so the jobs submitted by `fill` land on the other node. */
static void submit_on(tb_world *w, const char *other, uint64_t first, const char *tenant, int count)
{
    assert_int_equal(gp_engine_node_drain(w->e, other, true, 0, NULL), GP_OK);
    tb_submit_many(w, first, count, tenant, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), (size_t)count);
    assert_int_equal(gp_engine_node_drain(w->e, other, false, 0, NULL), GP_OK);
}

/* Each node: 4 guaranteed jobs of "steady" (ids 1-4 on n00, 11-14 on n01)
 * and 4 burstable of "small" (5-8 on n00, 15-18 on n01); none bounded.
 * "big" (guarantee `big_guarantee`) submits the 1 x 8 gang at t=10:
 * reclaiming small's 8 GPUs would leave 4 + 4, so it reserves n00. */
static void guaranteed_and_borrowed_halves(tb_world *w, int big_guarantee)
{
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "steady", "H100", 8, -1);
    tb_tenant(w, "small", "H100", -1, -1);
    tb_tenant(w, "big", "H100", big_guarantee, -1);
    submit_on(w, "n01", 1, "steady", 4);
    submit_on(w, "n01", 5, "small", 4);
    submit_on(w, "n00", 11, "steady", 4);
    submit_on(w, "n00", 15, "small", 4);
    submit_gang(w, "big", 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_count(w, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
    tb_finish(w, 5, GP_EXIT_SUCCEEDED, 20); /* a GPU frees on the held n00 */
    tb_submit(w, LATE, "small", 1, 1, 20);  /* burstable */
}

static void held_capacity_is_lent_to_burstable_work_of_a_guaranteed_head(void **state)
{
    tb_world *w = *state;
    guaranteed_and_borrowed_halves(w, 8);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_info(w, LATE).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_job_node(w, LATE), tb_node_index(w, "n00"));
}

static void held_capacity_is_not_lent_when_the_head_could_not_reclaim_it(void **state)
{
    tb_world *w = *state;
    guaranteed_and_borrowed_halves(w, -1);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, LATE).wait.code, GP_WAIT_RESERVATION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        PROGRESS_TEST(gang_is_not_starved_by_later_small_jobs_without_estimates),
        PROGRESS_TEST(head_waiting_on_unbounded_jobs_has_no_start_time),
        PROGRESS_TEST(job_with_an_estimate_does_not_take_capacity_held_without_a_start),
        PROGRESS_TEST(capacity_off_the_held_nodes_still_goes_to_later_jobs),
        PROGRESS_TEST(held_capacity_is_lent_to_burstable_work_of_a_guaranteed_head),
        PROGRESS_TEST(held_capacity_is_not_lent_when_the_head_could_not_reclaim_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
