/* test_backfill.c - reservations keep large gangs from starving; backfill.
 *
 * Semantics under test (docs/scheduling.md, "Backfill" and "Why a job
 * waits"; types.h, expected_runtime_s): the first job in pass order blocked
 * by capacity gets a reservation: from the running jobs' expected ends (bind
 * + expected_runtime_s) the engine computes when and where it can start and
 * holds those nodes.  Later jobs may use held nodes only if now +
 * expected_runtime_s <= that start (expected_runtime 0 = never).  Jobs not
 * touching held nodes are placed freely.  Waiting jobs say
 * GP_WAIT_RESERVATION (job = the head, time = its start); the head says
 * GP_WAIT_RESERVED (time = expected start).
 *
 * Worked example (most tests): 8 nodes x 8 H100 = 64 GPUs.  At t=0 team
 * "small" starts four 1-GPU jobs expected to run 1000 s.  At t=10 team
 * "big" submits an 8 x 8 gang (all 64 GPUs): it cannot start, so it
 * reserves the fleet from t=1000.  At t=20 small submits a long job (2000
 * s: would end at 2020 > 1000, waits) and a short one (500 s: ends at 520
 * <= 1000, backfilled).  Without the reservation every new 1-GPU job would
 * take one of the 60 free GPUs and the gang would never find 64.
 * Nobody has a guarantee: nothing is preempted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

enum { GANG = 10, LONG_JOB = 20, SHORT_JOB = 21 };

static void submit_runtime(tb_world *w, uint64_t id, const char *tenant, int replicas, int gpus,
                           int64_t runtime, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, 0);
    s.replicas = replicas;
    s.gpus = gpus;
    s.expected_runtime_s = runtime;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void teams(tb_world *w)
{
    tb_tenant(w, "big", "H100", -1, -1);
    tb_tenant(w, "small", "H100", -1, -1);
}

/* The worked example up to the gang's reservation at t=10. */
static void gang_waits_for_small_jobs(tb_world *w)
{
    tb_add_nodes(w, 8, "H100", 8, "b0", "z0");
    teams(w);
    for (uint64_t id = 1; id <= 4; id++)
        submit_runtime(w, id, "small", 1, 1, 1000, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    submit_runtime(w, GANG, "big", 8, 8, 5000, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
}

static void assert_waits_for_gang(tb_world *w, uint64_t id)
{
    gp_job_info info = tb_info(w, id);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_RESERVATION);
    assert_int_equal(info.wait.job, GANG);
    assert_int_equal(info.wait.time, 1000);
}

static void head_gang_holds_the_reservation(void **state)
{
    tb_world *w = *state;
    gang_waits_for_small_jobs(w);
    gp_job_info info = tb_info(w, GANG);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_RESERVED);
    assert_int_equal(info.wait.time, 1000); /* bind 0 + expected 1000 */
}

static void long_job_waits_behind_the_reservation(void **state)
{
    tb_world *w = *state;
    gang_waits_for_small_jobs(w);
    submit_runtime(w, LONG_JOB, "small", 1, 1, 2000, 20); /* 20 + 2000 > 1000 */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_waits_for_gang(w, LONG_JOB);
    assert_int_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
}

static void short_job_is_backfilled(void **state)
{
    tb_world *w = *state;
    gang_waits_for_small_jobs(w);
    submit_runtime(w, LONG_JOB, "small", 1, 1, 2000, 20);
    submit_runtime(w, SHORT_JOB, "small", 1, 1, 500, 20); /* 20 + 500 <= 1000 */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, SHORT_JOB, GP_DEC_BIND));
    assert_int_equal(tb_state(w, LONG_JOB), GP_JOB_PENDING);
}

static void backfill_may_end_exactly_at_the_reservation(void **state)
{
    tb_world *w = *state;
    gang_waits_for_small_jobs(w);
    submit_runtime(w, SHORT_JOB, "small", 1, 1, 980, 20); /* 20 + 980 = 1000 */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, SHORT_JOB, GP_DEC_BIND));
}

static void job_of_unknown_runtime_is_never_backfilled(void **state)
{
    tb_world *w = *state;
    gang_waits_for_small_jobs(w);
    submit_runtime(w, 30, "small", 1, 1, 0, 20); /* expected_runtime 0 = unknown */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_waits_for_gang(w, 30);
}

static void gang_starts_when_running_jobs_end_despite_a_stream(void **state)
{
    tb_world *w = *state;
    gang_waits_for_small_jobs(w);
    submit_runtime(w, LONG_JOB, "small", 1, 1, 2000, 20);
    submit_runtime(w, SHORT_JOB, "small", 1, 1, 500, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1); /* the short one */

    /* a stream of long 1-GPU jobs every 100 s; none may take a held GPU */
    uint64_t next = 100;
    for (int64_t t = 100; t < 1000; t += 100) {
        submit_runtime(w, next++, "small", 1, 1, 3000, t);
        if (t == 500) /* the short job ends: its GPU is held for the gang too */
            tb_finish(w, SHORT_JOB, GP_EXIT_SUCCEEDED, t);
        assert_int_equal(tb_tick(w, t, GP_DEC_BIND), 0);
        assert_int_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
    }
    assert_int_equal(tb_jobs_holding(w, "small"), 4); /* the first four only */

    for (uint64_t id = 1; id <= 4; id++)
        tb_finish(w, id, GP_EXIT_SUCCEEDED, 1000);
    assert_int_equal(tb_tick(w, 1000, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, GANG, GP_DEC_BIND));
    assert_int_equal(tb_info(w, GANG).bind_time, 1000);
    assert_int_equal(tb_state(w, LONG_JOB), GP_JOB_PENDING);
    tb_assert_gpus_consistent(w);
}

/* Drain every node but `target` for one tick so job `id` lands there. */
static void place_on(tb_world *w, uint64_t id, int64_t runtime, const char *target)
{
    size_t n = gp_engine_node_count(w->e);
    for (uint32_t i = 0; i < n; i++) {
        gp_node_info ni;
        assert_true(gp_engine_node_get(w->e, i, &ni));
        if (strcmp(ni.name, target) != 0)
            assert_int_equal(gp_engine_node_drain(w->e, ni.name, true, 0, NULL), GP_OK);
    }
    submit_runtime(w, id, "small", 1, 1, runtime, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, id), tb_node_index(w, target));
    for (uint32_t i = 0; i < n; i++) {
        gp_node_info ni;
        assert_true(gp_engine_node_get(w->e, i, &ni));
        if (strcmp(ni.name, target) != 0)
            assert_int_equal(gp_engine_node_drain(w->e, ni.name, false, 0, NULL), GP_OK);
    }
}

static void job_off_the_held_nodes_is_placed_freely(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 9, "H100", 8, "b0", "z0"); /* n00..n08 */
    teams(w);
    place_on(w, 1, 1000, "n00"); /* frees at 1000 */
    place_on(w, 2, 3000, "n01"); /* frees at 3000 */
    /* 8 whole nodes exist first at t=1000: n00 + n02..n08; n01 is not held */
    submit_runtime(w, GANG, "big", 8, 8, 5000, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
    assert_int_equal(tb_info(w, GANG).wait.time, 1000);

    submit_runtime(w, LONG_JOB, "small", 1, 1, 2000, 20); /* too long for held nodes */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, LONG_JOB), tb_node_index(w, "n01"));

    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 1000);
    assert_int_equal(tb_tick(w, 1000, GP_DEC_BIND), 1);
    uint32_t gpus[64];
    assert_int_equal(gp_engine_job_gpus(w->e, GANG, gpus, 64), 64);
    for (int i = 0; i < 64; i++)
        assert_int_not_equal(tb_gpu(w, gpus[i]).node, tb_node_index(w, "n01"));
    tb_assert_gpus_consistent(w);
}

static void overdue_running_job_is_assumed_to_end_within_overdue_grace(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    teams(w);
    submit_runtime(w, 1, "small", 1, 1, 100, 0); /* expected to end at 100 */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    /* t=200: job 1 is overdue; default overdue_grace_s 300 -> assumed end 500 */
    submit_runtime(w, GANG, "big", 2, 8, 1000, 200);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 0);
    gp_job_info info = tb_info(w, GANG);
    assert_int_equal(info.wait.code, GP_WAIT_RESERVED);
    assert_int_equal(info.wait.time, 500);
    submit_runtime(w, SHORT_JOB, "small", 1, 1, 300, 200); /* 200 + 300 <= 500 */
    submit_runtime(w, LONG_JOB, "small", 1, 1, 301, 200);  /* 501 > 500 */
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, SHORT_JOB, GP_DEC_BIND));
    assert_int_equal(tb_info(w, LONG_JOB).wait.code, GP_WAIT_RESERVATION);
}

/* Held nodes that cannot take a replica of a short job stay held: the
 * short job's look does not put them back (and finds what it would have
 * found), while one they could take is put back and placed there.
 * 2 nodes x 8 H100, each runs a 7-GPU job of small until t=1000; big's
 * 2x8 gang holds both from t=1000; each node has 1 GPU free. */
static size_t held_looks(tb_world *w)
{
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    return st.pass_held_looks;
}

static void gang_holds_two_nodes_with_one_gpu_free_each(tb_world *w)
{
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    teams(w);
    submit_runtime(w, 1, "small", 1, 7, 1000, 0);
    submit_runtime(w, 2, "small", 1, 7, 1000, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    submit_runtime(w, GANG, "big", 2, 8, 5000, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
    assert_int_equal(tb_info(w, GANG).wait.a, 2); /* nodes held */
}

static void short_job_too_big_for_any_held_node_leaves_them_held(void **state)
{
    tb_world *w = *state;
    gang_holds_two_nodes_with_one_gpu_free_each(w);
    submit_runtime(w, SHORT_JOB, "small", 1, 2, 100, 20); /* ends at 120 <= 1000, needs 2 on one node */
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_equal(held_looks(w), 0);
    assert_waits_for_gang(w, SHORT_JOB);
    tb_assert_gpus_consistent(w);
}

static void short_job_a_held_node_can_take_is_placed_there(void **state)
{
    tb_world *w = *state;
    gang_holds_two_nodes_with_one_gpu_free_each(w);
    submit_runtime(w, SHORT_JOB, "small", 1, 1, 100, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(held_looks(w), 1);
    assert_non_null(tb_find(w, SHORT_JOB, GP_DEC_BIND));
    tb_assert_gpus_consistent(w);
}

/* Holding a node and putting it back keep its free GPUs as they are: what
 * changes under it while held (a short job binds there, then ends) is
 * counted by the bind and the release, and the node comes back to the
 * bucket of its free GPUs (fleet.c, gp__node_hold; the invariants compare
 * every bucket with a full recount).  A long job never gets the freed GPU
 * (the node is out of the buckets while held), a second short job does,
 * and the gang then finds both nodes whole. */
static void held_node_comes_back_to_the_bucket_of_its_free_gpus(void **state)
{
    tb_world *w = *state;
    gang_holds_two_nodes_with_one_gpu_free_each(w);
    submit_runtime(w, SHORT_JOB, "small", 1, 1, 100, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    tb_assert_gpus_consistent(w);
    tb_finish(w, SHORT_JOB, GP_EXIT_SUCCEEDED, 120);
    submit_runtime(w, LONG_JOB, "small", 1, 1, 2000, 120);
    assert_int_equal(tb_tick(w, 120, GP_DEC_BIND), 0);
    assert_waits_for_gang(w, LONG_JOB);
    tb_assert_gpus_consistent(w);
    submit_runtime(w, SHORT_JOB + 1, "small", 1, 1, 100, 130);
    assert_int_equal(tb_tick(w, 130, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, SHORT_JOB + 1, GP_DEC_BIND));
    tb_finish(w, SHORT_JOB + 1, GP_EXIT_SUCCEEDED, 230);
    tb_assert_gpus_consistent(w);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 1000);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 1000);
    assert_int_equal(tb_tick(w, 1000, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, GANG, GP_DEC_BIND));
    tb_assert_gpus_consistent(w);
}

/* An engine without fair-share reclaim, for a test of the sweep alone: with
 * it, the gang's tenant (below its share) would preempt the other's jobs
 * instead of reserving. */
static void without_fair_share(tb_world *w)
{
    gp_engine_config cfg = gp_engine_config_default();
    cfg.fair_share_reclaim = false;
    tb_use_config(w, &cfg);
}

/* Releases at the same expected time are swept in running-list order (the
 * order a stable sort by time keeps), not fleet order.  3 nodes x 2 H100:
 * jobs 1, 2, 3 (1 GPU, ending at 1000) on n00, n01, n02; job 1 ends at
 * once, so job 3 moves to its place in the running list, before job 2;
 * jobs 4 and 5 (ending at 3000) fill n00.  A 1x2 gang's sweep meets job 3's
 * release first: it holds n02, and a long job takes n01's free GPU. */
static void releases_at_one_time_are_swept_in_running_order(void **state)
{
    tb_world *w = *state;
    without_fair_share(w);
    tb_add_nodes(w, 3, "H100", 2, "b0", "z0"); /* n00..n02 */
    teams(w);
    place_on(w, 1, 1000, "n00");
    place_on(w, 2, 1000, "n01");
    place_on(w, 3, 1000, "n02");
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 0);
    place_on(w, 4, 3000, "n00");
    place_on(w, 5, 3000, "n00");
    submit_runtime(w, GANG, "big", 1, 2, 5000, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
    assert_int_equal(tb_info(w, GANG).wait.time, 1000);
    assert_int_equal(tb_info(w, GANG).wait.a, 1); /* one node held */
    submit_runtime(w, LONG_JOB, "small", 1, 1, 2000, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, LONG_JOB), tb_node_index(w, "n01"));
    tb_assert_gpus_consistent(w);
}

/* GPUs claimed by a reclaim come back to the claimer, not to the gang.
 * 2 nodes x 8 H100: small's 1x8 jobs run on n00 (grace 100 s, ending at
 * 1000) and n01 (ending at 2000); team "g", guaranteed 8 GPUs, preempts
 * the first and claims its GPUs for its grace.  big's 2x8 gang then finds
 * no time at which both nodes come back: n00's GPUs go to g's job. */
static void a_gang_does_not_count_on_gpus_a_reclaim_claimed(void **state)
{
    tb_world *w = *state;
    without_fair_share(w);
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    teams(w);
    tb_tenant(w, "g", "H100", 8, -1);
    gp_job_spec first = tb_job(1, "small", 100);
    first.gpus = 8;
    first.expected_runtime_s = 1000;
    assert_int_equal(tb_submit_spec(w, &first, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit_runtime(w, 2, "small", 1, 8, 2000, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit_runtime(w, 3, "g", 1, 8, 5000, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    submit_runtime(w, GANG, "big", 2, 8, 5000, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_not_equal(tb_info(w, GANG).wait.code, GP_WAIT_RESERVED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(head_gang_holds_the_reservation),
        TB_TEST(long_job_waits_behind_the_reservation),
        TB_TEST(short_job_is_backfilled),
        TB_TEST(backfill_may_end_exactly_at_the_reservation),
        TB_TEST(job_of_unknown_runtime_is_never_backfilled),
        TB_TEST(gang_starts_when_running_jobs_end_despite_a_stream),
        TB_TEST(job_off_the_held_nodes_is_placed_freely),
        TB_TEST(overdue_running_job_is_assumed_to_end_within_overdue_grace),
        TB_TEST(short_job_too_big_for_any_held_node_leaves_them_held),
        TB_TEST(short_job_a_held_node_can_take_is_placed_there),
        TB_TEST(held_node_comes_back_to_the_bucket_of_its_free_gpus),
        TB_TEST(releases_at_one_time_are_swept_in_running_order),
        TB_TEST(a_gang_does_not_count_on_gpus_a_reclaim_claimed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
