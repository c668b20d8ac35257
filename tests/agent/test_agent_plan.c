/* test_agent_plan.c - the agent's pure decisions (agent/agent_plan.h):
 * the reconcile plan from (desired, running), and the back-off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/agent_plan.h"

static const gp_plan_gpu gpu_a[] = {{"GPU-a", GP_PLAN_WHOLE_GPU}};
static const gp_plan_gpu gpu_b[] = {{"GPU-b", GP_PLAN_WHOLE_GPU}};
static const gp_plan_gpu gpu_c[] = {{"GPU-c", GP_PLAN_WHOLE_GPU}};
static const gp_plan_gpu mig_a0[] = {{"GPU-a", 0}};
static const gp_plan_gpu mig_a4[] = {{"GPU-a", 4}};
static const gp_plan_gpu mps_a[] = {{"GPU-a", GP_PLAN_SHARED_GPU}};

static gp_plan_want run(uint64_t job, int64_t bind, const gp_plan_gpu *gpus)
{
    return (gp_plan_want){.job = job, .bind_time = bind, .gpus = gpus, .n_gpus = 1};
}

static gp_plan_have live(uint64_t job, int64_t bind, const gp_plan_gpu *gpus)
{
    return (gp_plan_have){.job = job, .bind_time = bind, .stop_deadline = GP_PLAN_NO_DEADLINE, .gpus = gpus,
                          .n_gpus = 1};
}

static void the_header_example_kills_stops_and_waits_for_gpus(void **state)
{
    (void)state;
    gp_plan_want want[3] = {run(7, 100, gpu_a), run(9, 300, gpu_b), run(5, 50, gpu_c)};
    want[2].replica = 1;
    want[2].stop = true;
    want[2].kill_deadline = 900;
    gp_plan_have have[3] = {live(7, 100, gpu_a), live(8, 200, gpu_b), live(5, 50, gpu_c)};
    have[2].replica = 1;
    gp_plan_step steps[6];
    size_t n = gp_plan_reconcile(want, 3, have, 3, steps, 6);
    assert_int_equal(n, 2);
    assert_int_equal(steps[0].kind, GP_PLAN_KILL);
    assert_int_equal(steps[0].have, 1);
    assert_int_equal(steps[1].kind, GP_PLAN_STOP);
    assert_int_equal(steps[1].want, 2);
    assert_int_equal(steps[1].have, 2);
    have[1].ended = true; /* job 8 is dead: job 9 may have GPU B */
    have[1].stop_deadline = GP_PLAN_KILLED;
    have[2].stop_deadline = 900;
    n = gp_plan_reconcile(want, 3, have, 3, steps, 6);
    assert_int_equal(n, 1);
    assert_int_equal(steps[0].kind, GP_PLAN_START);
    assert_int_equal(steps[0].want, 1);
}

static void an_applied_checkpoint_ends_a_grace_but_not_a_run(void **state)
{
    (void)state;
    gp_plan_have h = live(7, 100, gpu_a);
    assert_false(gp_plan_checkpoint_ends_grace(&h, true)); /* running: only a checkpoint */
    h.stop_deadline = 1795523141412;                        /* SIGTERM sent, in its grace */
    assert_false(gp_plan_checkpoint_ends_grace(&h, false)); /* not applied (an older one) */
    assert_true(gp_plan_checkpoint_ends_grace(&h, true));
    h.stop_deadline = GP_PLAN_KILLED;
    assert_false(gp_plan_checkpoint_ends_grace(&h, true)); /* killed once */
    h.stop_deadline = 1795523141412;
    h.ended = true;
    assert_false(gp_plan_checkpoint_ends_grace(&h, true));
}

static void an_ended_run_is_never_started_again(void **state)
{
    (void)state;
    gp_plan_want want[1] = {run(7, 100, gpu_a)};
    gp_plan_have have[1] = {live(7, 100, gpu_a)};
    have[0].ended = true;
    gp_plan_step steps[2];
    assert_int_equal(gp_plan_reconcile(want, 1, have, 1, steps, 2), 0);
}

static void a_new_bind_of_the_same_job_is_another_run(void **state)
{
    (void)state;
    gp_plan_want want[1] = {run(7, 200, gpu_a)};
    gp_plan_have have[1] = {live(7, 100, gpu_a)};
    gp_plan_step steps[2];
    size_t n = gp_plan_reconcile(want, 1, have, 1, steps, 2);
    assert_int_equal(n, 1); /* the old run is killed; the new one waits for GPU A */
    assert_int_equal(steps[0].kind, GP_PLAN_KILL);
    have[0].stop_deadline = GP_PLAN_KILLED;
    assert_int_equal(gp_plan_reconcile(want, 1, have, 1, steps, 2), 0); /* killed once, not again */
}

static void a_moved_deadline_stops_again_and_the_same_one_does_not(void **state)
{
    (void)state;
    gp_plan_want want[1] = {run(7, 100, gpu_a)};
    want[0].stop = true;
    want[0].kill_deadline = 900;
    gp_plan_have have[1] = {live(7, 100, gpu_a)};
    have[0].stop_deadline = 900;
    gp_plan_step steps[2];
    assert_int_equal(gp_plan_reconcile(want, 1, have, 1, steps, 2), 0);
    want[0].kill_deadline = 500; /* a checkpoint ended the grace */
    assert_int_equal(gp_plan_reconcile(want, 1, have, 1, steps, 2), 1);
    assert_int_equal(steps[0].kind, GP_PLAN_STOP);
}

static void a_stop_for_a_run_not_here_does_nothing(void **state)
{
    (void)state;
    gp_plan_want want[1] = {run(7, 100, gpu_a)};
    want[0].stop = true;
    gp_plan_step steps[2];
    assert_int_equal(gp_plan_reconcile(want, 1, NULL, 0, steps, 2), 0);
}

/* How many STARTs the plan has for want (one replica) beside have. */
static size_t starts_beside(const gp_plan_gpu *want_gpus, const gp_plan_gpu *have_gpus)
{
    gp_plan_want want[2] = {run(9, 300, want_gpus), run(8, 200, have_gpus)};
    gp_plan_have have[1] = {live(8, 200, have_gpus)};
    gp_plan_step steps[4];
    size_t n = gp_plan_reconcile(want, 2, have, 1, steps, 4), starts = 0;
    for (size_t i = 0; i < n; i++)
        starts += steps[i].kind == GP_PLAN_START;
    return starts;
}

static void shared_gpus_run_side_by_side_and_a_whole_gpu_waits_for_them(void **state)
{
    (void)state;
    assert_int_equal(starts_beside(mig_a4, mig_a0), 1); /* two MIG instances of one GPU */
    assert_int_equal(starts_beside(mig_a0, mig_a0), 0); /* the same instance: wait */
    assert_int_equal(starts_beside(mps_a, mps_a), 1);   /* MPS / time-slice shares */
    assert_int_equal(starts_beside(gpu_a, mig_a0), 0);  /* the whole GPU waits for the slice */
    assert_int_equal(starts_beside(mps_a, gpu_a), 0);   /* and a share for the whole GPU */
    assert_int_equal(starts_beside(gpu_b, gpu_a), 1);   /* another GPU */
}

static void backoff_doubles_from_half_a_second_to_ten_with_jitter(void **state)
{
    (void)state;
    int64_t first = gp_backoff_ms(1, 0, 0, 0), fifth = gp_backoff_ms(5, 0, 0, 0), many = gp_backoff_ms(40, 0, 0, 0);
    assert_true(first >= 400 && first < 600);
    assert_true(fifth >= 6400 && fifth < 9600);
    assert_true(many >= 8000 && many < 12000);
    assert_int_equal(gp_backoff_ms(3, 0, 42, 7), gp_backoff_ms(3, 0, 42, 7)); /* the same seed, the same wait */
    int differ = 0;
    for (uint64_t node = 1; node < 20; node++)
        differ += gp_backoff_ms(3, 0, 42, node) != gp_backoff_ms(3, 0, 42, 0);
    assert_true(differ > 10); /* nodes of one agent do not retry in step */
}

static void backoff_never_waits_much_past_a_heartbeat_period(void **state)
{
    (void)state;
    /* heartbeat 2 s (--node-lost-after 8): a restarted gpupoold must hear
     * from the node before it counts it lost */
    for (unsigned failures = 1; failures < 40; failures++)
        assert_true(gp_backoff_ms(failures, 2000, 0, failures) < 2400);
    assert_true(gp_backoff_ms(40, 2000, 0, 0) >= 1600);
    assert_true(gp_backoff_ms(1, 200, 0, 0) < 240); /* a cap below the first wait */
    assert_true(gp_backoff_ms(40, 60000, 0, 0) < 12000); /* a cap above 10 s changes nothing */
}

static void heartbeats_of_many_nodes_spread_over_the_period(void **state)
{
    (void)state;
    int buckets[10] = {0};
    for (uint64_t node = 0; node < 1000; node++) {
        int64_t at = gp_spread_ms(15000, 7, node);
        assert_true(at >= 0 && at < 15000);
        buckets[at / 1500]++;
    }
    for (int b = 0; b < 10; b++)
        assert_true(buckets[b] > 50 && buckets[b] < 150); /* about 100 each, not all at once */
    assert_int_equal(gp_spread_ms(15000, 7, 3), gp_spread_ms(15000, 7, 3));
}

/* The header's example: --node-lost-after 60, heartbeat answered when sent at 100 s. */
static void a_node_is_fenced_only_after_the_fence_interval_of_silence(void **state)
{
    (void)state;
    assert_false(gp_plan_partitioned(30000, 100000, 130000)); /* exactly 30 s: not yet */
    assert_true(gp_plan_partitioned(30000, 100000, 130001));
    assert_false(gp_plan_partitioned(0, 100000, 999999)); /* no terms from gpupoold: no fence */
}

static void the_fence_stops_with_the_shorter_grace_and_spares_opted_out_jobs(void **state)
{
    (void)state;
    gp_plan_have h = {.job = 7, .stop_deadline = GP_PLAN_NO_DEADLINE};
    assert_int_equal(gp_plan_fence_deadline(&h, false, 30000, 15000, 130000), 145000);
    assert_int_equal(gp_plan_fence_deadline(&h, false, 5000, 15000, 130000), 135000);
    assert_int_equal(gp_plan_fence_deadline(&h, false, -1, 15000, 130000), 145000);
    assert_int_equal(gp_plan_fence_deadline(&h, true, 30000, 15000, 130000), GP_PLAN_NO_DEADLINE);
    h.stop_deadline = 140000; /* already stopping, sooner: left alone */
    assert_int_equal(gp_plan_fence_deadline(&h, false, 30000, 15000, 130000), GP_PLAN_NO_DEADLINE);
    h.stop_deadline = 190000; /* stopping, later than the fence allows: brought forward */
    assert_int_equal(gp_plan_fence_deadline(&h, false, 30000, 15000, 130000), 145000);
    h.stop_deadline = GP_PLAN_KILLED;
    assert_int_equal(gp_plan_fence_deadline(&h, false, 30000, 15000, 130000), GP_PLAN_NO_DEADLINE);
    h = (gp_plan_have){.job = 7, .ended = true, .stop_deadline = GP_PLAN_NO_DEADLINE};
    assert_int_equal(gp_plan_fence_deadline(&h, false, 30000, 15000, 130000), GP_PLAN_NO_DEADLINE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_header_example_kills_stops_and_waits_for_gpus),
        cmocka_unit_test(an_ended_run_is_never_started_again),
        cmocka_unit_test(a_new_bind_of_the_same_job_is_another_run),
        cmocka_unit_test(a_moved_deadline_stops_again_and_the_same_one_does_not),
        cmocka_unit_test(an_applied_checkpoint_ends_a_grace_but_not_a_run),
        cmocka_unit_test(a_stop_for_a_run_not_here_does_nothing),
        cmocka_unit_test(shared_gpus_run_side_by_side_and_a_whole_gpu_waits_for_them),
        cmocka_unit_test(backoff_doubles_from_half_a_second_to_ten_with_jitter),
        cmocka_unit_test(backoff_never_waits_much_past_a_heartbeat_period),
        cmocka_unit_test(heartbeats_of_many_nodes_spread_over_the_period),
        cmocka_unit_test(a_node_is_fenced_only_after_the_fence_interval_of_silence),
        cmocka_unit_test(the_fence_stops_with_the_shorter_grace_and_spares_opted_out_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
