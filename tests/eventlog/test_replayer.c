/* test_replayer.c - the apply step the daemon and replay share
 * (src/eventlog/replayer.c) and the decisions' digest (decisions.c).
 *
 * Semantics under test (replayer.h, decisions.h):
 *   - the same events give the same decisions and the same digest in two
 *     engines; a job that asks for other GPUs gives another digest;
 *   - a bind's line lists the GPUs the job got;
 *   - a pool_set with unchanged settings, a clock_resolution equal to the
 *     engine's and a tick that changed nothing are not logged;
 *   - settle forgets a job that reached a final state and clears the
 *     decisions; the next id moves past every submitted id;
 *   - a tenant_set asking for trusted below an untrusted ancestor is
 *     refused live (field "trust") and read as inherit in replay.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eventlog/decisions.h"
#include "eventlog/replayer.h"

static void apply(gp_replayer *r, const gp_event *ev, gp_apply_mode mode, bool expect_logged)
{
    gp_error err = {0};
    bool logged;
    assert_int_equal(gp_replayer_apply(r, ev, mode, &logged, &err), GP_OK);
    assert_int_equal(logged, expect_logged);
}

/* pool, one 8 x H100 node, tenant "t" guaranteed 8 H100 */
static void setup_fleet(gp_replayer *r)
{
    gp_error err = {0};
    assert_int_equal(gp_replayer_init(r, NULL, &err), GP_OK);
    gp_pool_spec pool = {0};
    gp_node_spec node = {.name = "n0", .zone = "z", .block = "b0", .gpu_type = "H100", .gpu_count = 8,
                         .nvlink_domains = 1, .gpu_mem_mib = 81920, .cpu_millis = 64000, .mem_mib = 1 << 20};
    gp_tenant_spec t = {.lend = -1};
    t.guarantee.set = true;
    t.guarantee.n_gpu = 1;
    strcpy(t.guarantee.gpu[0].type, "H100");
    t.guarantee.gpu[0].milli = 8000;
    t.guarantee.cpu_millis = t.guarantee.mem_mib = GP_UNLIMITED;
    t.limit.cpu_millis = t.limit.mem_mib = t.user_limit.cpu_millis = t.user_limit.mem_mib = GP_UNLIMITED;
    gp_event evs[] = {{.kind = GP_EV_POOL_SET, .time = 0, .name = "default", .pool = &pool},
                      {.kind = GP_EV_NODE_ADD, .time = 0, .node = &node},
                      {.kind = GP_EV_TENANT_SET, .time = 0, .path = "t", .tenant = &t}};
    for (size_t i = 0; i < 3; i++) {
        apply(r, &evs[i], GP_APPLY_REPLAY, true);
        gp_replayer_settle(r);
    }
}

static void submit(gp_replayer *r, uint64_t id, int gpus, int64_t now)
{
    gp_job_request req = {0};
    req.spec = (gp_job_spec){.id = id, .tenant = "t", .replicas = 1, .gpus = gpus, .checkpoint_grace_s = 30};
    gp_event ev = {.kind = GP_EV_SUBMIT, .time = now, .job = &req};
    apply(r, &ev, GP_APPLY_LIVE, true);
    gp_replayer_settle(r);
}

/* Submits a job of `gpus` at t=10 and ticks; the tick's digest. */
static int64_t tick_digest(int gpus, char hex[65])
{
    gp_replayer r;
    setup_fleet(&r);
    submit(&r, 1, gpus, 10);
    gp_event tick = {.kind = GP_EV_TICK, .time = 10};
    apply(&r, &tick, GP_APPLY_LIVE, true);
    int64_t count;
    gp_error err = {0};
    assert_int_equal(gp_replayer_digest(&r, &count, hex, &err), GP_OK);
    gp_replayer_settle(&r);
    gp_replayer_free(&r);
    return count;
}

static void the_same_events_give_the_same_digest_and_other_gpus_another(void **state)
{
    (void)state;
    char a[65], b[65], c[65];
    int64_t na = tick_digest(4, a), nb = tick_digest(4, b), nc = tick_digest(2, c);
    assert_true(na > 0);
    assert_int_equal(na, nb);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), 64);
    assert_int_equal(na, nc);
    assert_string_not_equal(a, c);
}

static void a_bind_line_lists_the_gpus_of_the_job(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    submit(&r, 1, 2, 10);
    gp_event tick = {.kind = GP_EV_TICK, .time = 10};
    apply(&r, &tick, GP_APPLY_LIVE, true);
    size_t n;
    const gp_decision *ds = gp_engine_decisions(r.engine, &n);
    uint32_t gpus[2];
    assert_int_equal(gp_engine_job_gpus(r.engine, 1, gpus, 2), 2);
    char want[64];
    snprintf(want, sizeof want, "bind t=10 job=1 gpus=%u,%u\n", gpus[0], gpus[1]);
    bool seen = false;
    for (size_t i = 0; i < n; i++) {
        char line[512];
        gp_decision_text(r.engine, &ds[i], line, sizeof line);
        if (ds[i].kind == GP_DEC_BIND) {
            assert_string_equal(line, want);
            seen = true;
        }
    }
    assert_true(seen);
    gp_replayer_settle(&r);
    gp_replayer_free(&r);
}

static void events_that_change_nothing_are_not_logged(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    gp_pool_spec same = {0}, other = {.score = GP_SCORE_BESTFIT};
    gp_event pool = {.kind = GP_EV_POOL_SET, .time = 1, .name = "default", .pool = &same};
    apply(&r, &pool, GP_APPLY_LIVE, false);
    pool.pool = &other;
    apply(&r, &pool, GP_APPLY_LIVE, true);
    gp_event clock = {.kind = GP_EV_CLOCK_RESOLUTION, .time = 1, .seconds = 0};
    apply(&r, &clock, GP_APPLY_LIVE, false);
    clock.seconds = 1;
    apply(&r, &clock, GP_APPLY_LIVE, true);
    gp_event tick = {.kind = GP_EV_TICK, .time = 2};
    bool logged;
    gp_error err = {0};
    assert_int_equal(gp_replayer_apply(&r, &tick, GP_APPLY_LIVE, &logged, &err), GP_OK); /* the first pass */
    gp_replayer_settle(&r);
    tick.time = 3;
    apply(&r, &tick, GP_APPLY_LIVE, false); /* no jobs: nothing to do */
    gp_replayer_settle(&r);
    gp_replayer_free(&r);
}

static void settle_forgets_final_jobs_and_the_next_id_moves_on(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    submit(&r, 5, 16, 10); /* never fits: stays pending */
    assert_int_equal(r.next_job_id, 6);
    gp_event cancel = {.kind = GP_EV_CANCEL, .time = 11, .job_id = 5};
    apply(&r, &cancel, GP_APPLY_LIVE, true);
    assert_int_equal(r.n_touched, 1);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(r.engine, 5, &info, NULL), GP_OK);
    assert_int_equal(info.state, GP_JOB_CANCELLED);
    gp_replayer_settle(&r);
    assert_int_not_equal(gp_engine_job_info(r.engine, 5, &info, NULL), GP_OK);
    size_t n;
    gp_engine_decisions(r.engine, &n);
    assert_int_equal(n, 0);
    gp_replayer_free(&r);
}

/* Job `id` of `replicas` x 1 GPU (time limit: 0 = none) submitted and bound
 * at t=10; its bind time. */
static int64_t bound_gang(gp_replayer *r, uint64_t id, int replicas, int64_t time_limit_s)
{
    gp_job_request req = {0};
    req.spec = (gp_job_spec){.id = id, .tenant = "t", .replicas = replicas, .gpus = 1, .checkpoint_grace_s = 30,
                             .time_limit_s = time_limit_s};
    gp_event ev = {.kind = GP_EV_SUBMIT, .time = 10, .job = &req};
    apply(r, &ev, GP_APPLY_LIVE, true);
    gp_replayer_settle(r);
    gp_event tick = {.kind = GP_EV_TICK, .time = 10};
    apply(r, &tick, GP_APPLY_LIVE, true);
    gp_replayer_settle(r);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(r->engine, id, &info, NULL), GP_OK);
    assert_int_equal(info.state, GP_JOB_RUNNING);
    return info.bind_time;
}

static void report_exit(gp_replayer *r, uint64_t id, int replica, int64_t bind_time, int code, bool expect_logged)
{
    gp_replica_exit x = {.job_id = id, .replica = replica, .bind_time = bind_time, .exit_code = code};
    strcpy(x.node, "n0");
    gp_event ev = {.kind = GP_EV_REPLICA_EXIT, .time = 20, .exit = &x};
    apply(r, &ev, GP_APPLY_LIVE, expect_logged);
    gp_replayer_settle(r);
}

static gp_job_state state_of(gp_replayer *r, uint64_t id)
{
    gp_job_info info;
    return gp_engine_job_info(r->engine, id, &info, NULL) == GP_OK ? info.state : GP_JOB_SUCCEEDED; /* forgotten */
}

static void a_gang_succeeds_once_every_replica_exited_zero_and_repeats_count_once(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    int64_t bound = bound_gang(&r, 1, 2, 0);
    report_exit(&r, 1, 0, bound, 0, true);
    assert_int_equal(state_of(&r, 1), GP_JOB_RUNNING);
    report_exit(&r, 1, 0, bound, 0, false); /* sent again: nothing */
    report_exit(&r, 1, 1, bound - 1, 0, false); /* another run's: stale */
    assert_int_equal(state_of(&r, 1), GP_JOB_RUNNING);
    gp_event tick = {.kind = GP_EV_TICK, .time = 20};
    bool logged;
    gp_error err = {0};
    assert_int_equal(gp_replayer_apply(&r, &tick, GP_APPLY_LIVE, &logged, &err), GP_OK);
    gp_replayer_settle(&r);
    gp_replica_exit x = {.job_id = 1, .replica = 1, .bind_time = bound};
    gp_event ev = {.kind = GP_EV_REPLICA_EXIT, .time = 21, .exit = &x};
    apply(&r, &ev, GP_APPLY_LIVE, true);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(r.engine, 1, &info, NULL), GP_OK);
    assert_int_equal(info.state, GP_JOB_SUCCEEDED);
    gp_replayer_settle(&r);
    report_exit(&r, 1, 1, bound, 0, false); /* the job is gone: nothing */
    assert_int_equal(r.exits.n, 0);
    gp_replayer_free(&r);
}

static void one_failing_replica_fails_the_gang_whole(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    int64_t bound = bound_gang(&r, 1, 3, 0);
    gp_replica_exit x = {.job_id = 1, .replica = 2, .bind_time = bound, .exit_code = 3};
    gp_event ev = {.kind = GP_EV_REPLICA_EXIT, .time = 20, .exit = &x};
    apply(&r, &ev, GP_APPLY_LIVE, true);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(r.engine, 1, &info, NULL), GP_OK);
    assert_int_equal(info.state, GP_JOB_FAILED);
    gp_engine_stats st;
    gp_engine_stats_get(r.engine, &st);
    assert_int_equal(st.gpus_allocated, 0); /* all three replicas' GPUs are free */
    gp_replayer_settle(&r);
    gp_replayer_free(&r);
}

static void a_cancelled_gang_ends_when_its_last_replica_is_gone(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    int64_t bound = bound_gang(&r, 1, 2, 0);
    gp_event cancel = {.kind = GP_EV_CANCEL, .time = 15, .job_id = 1};
    apply(&r, &cancel, GP_APPLY_LIVE, true);
    gp_replayer_settle(&r);
    assert_int_equal(state_of(&r, 1), GP_JOB_PREEMPTING);
    report_exit(&r, 1, 0, bound, 0, true); /* exit 0 after the signal: still a stop */
    assert_int_equal(state_of(&r, 1), GP_JOB_PREEMPTING);
    gp_replica_exit x = {.job_id = 1, .replica = 1, .bind_time = bound, .signal = 9,
                         .reason = GP_EXIT_REASON_KILLED_AFTER_GRACE};
    gp_event ev = {.kind = GP_EV_REPLICA_EXIT, .time = 21, .exit = &x};
    apply(&r, &ev, GP_APPLY_LIVE, true);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(r.engine, 1, &info, NULL), GP_OK);
    assert_int_equal(info.state, GP_JOB_CANCELLED); /* before its grace ended at t=45 */
    gp_replayer_settle(&r);
    gp_replayer_free(&r);
}

/* Job 1, 2 replicas with a 5 s limit, bound at t=10: the tick at t=15
 * stops it (time_limit, grace 30); replica 0 exits `code` at t=20, replica
 * 1 exits 0 at t=21, both within the grace.  The job's state then. */
static gp_job_state state_after_exits_past_time_limit(int code)
{
    gp_replayer r;
    setup_fleet(&r);
    int64_t bound = bound_gang(&r, 1, 2, 5);
    gp_event tick = {.kind = GP_EV_TICK, .time = 15};
    apply(&r, &tick, GP_APPLY_LIVE, true);
    gp_replayer_settle(&r);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(r.engine, 1, &info, NULL), GP_OK);
    assert_int_equal(info.state, GP_JOB_PREEMPTING);
    assert_true(info.time_limited);
    report_exit(&r, 1, 0, bound, code, true);
    assert_int_equal(state_of(&r, 1), GP_JOB_PREEMPTING);
    gp_replica_exit x = {.job_id = 1, .replica = 1, .bind_time = bound};
    gp_event ev = {.kind = GP_EV_REPLICA_EXIT, .time = 21, .exit = &x};
    apply(&r, &ev, GP_APPLY_LIVE, true);
    assert_int_equal(gp_engine_job_info(r.engine, 1, &info, NULL), GP_OK);
    gp_replayer_settle(&r);
    gp_replayer_free(&r);
    return info.state;
}

static void a_gang_past_its_time_limit_that_exits_zero_within_the_grace_succeeded(void **state)
{
    (void)state;
    assert_int_equal(state_after_exits_past_time_limit(0), GP_JOB_SUCCEEDED);
}

static void a_gang_past_its_time_limit_with_a_failed_replica_failed(void **state)
{
    (void)state;
    assert_int_equal(state_after_exits_past_time_limit(3), GP_JOB_FAILED);
}

static void trusted_below_untrusted_is_refused_live_and_inherit_in_replay(void **state)
{
    (void)state;
    gp_replayer r;
    setup_fleet(&r);
    gp_tenant_spec parent = {.lend = -1, .trust = GP_TRUST_UNTRUSTED}, child = {.lend = -1, .trust = GP_TRUST_TRUSTED};
    gp_tenant_spec *specs[] = {&parent, &child};
    for (int i = 0; i < 2; i++)
        specs[i]->guarantee.cpu_millis = specs[i]->guarantee.mem_mib = specs[i]->limit.cpu_millis =
            specs[i]->limit.mem_mib = specs[i]->user_limit.cpu_millis = specs[i]->user_limit.mem_mib = GP_UNLIMITED;
    gp_event p = {.kind = GP_EV_TENANT_SET, .time = 1, .path = "u", .tenant = &parent};
    apply(&r, &p, GP_APPLY_LIVE, true);
    gp_replayer_settle(&r);
    gp_event c = {.kind = GP_EV_TENANT_SET, .time = 1, .path = "u/c", .tenant = &child};
    gp_error err = {0};
    bool logged;
    assert_int_equal(gp_replayer_apply(&r, &c, GP_APPLY_LIVE, &logged, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "trust");
    apply(&r, &c, GP_APPLY_REPLAY, true);
    assert_true(r.trust_floor_applied);
    gp_replayer_settle(&r);
    uint32_t index;
    assert_int_equal(gp_engine_tenant_find(r.engine, "u/c", &index, NULL), GP_OK);
    gp_replayer_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_same_events_give_the_same_digest_and_other_gpus_another),
        cmocka_unit_test(a_bind_line_lists_the_gpus_of_the_job),
        cmocka_unit_test(events_that_change_nothing_are_not_logged),
        cmocka_unit_test(settle_forgets_final_jobs_and_the_next_id_moves_on),
        cmocka_unit_test(trusted_below_untrusted_is_refused_live_and_inherit_in_replay),
        cmocka_unit_test(a_gang_succeeds_once_every_replica_exited_zero_and_repeats_count_once),
        cmocka_unit_test(one_failing_replica_fails_the_gang_whole),
        cmocka_unit_test(a_cancelled_gang_ends_when_its_last_replica_is_gone),
        cmocka_unit_test(a_gang_past_its_time_limit_that_exits_zero_within_the_grace_succeeded),
        cmocka_unit_test(a_gang_past_its_time_limit_with_a_failed_replica_failed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
