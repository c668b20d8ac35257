/* test_time_limit.c - jobs have time limits, and the engine enforces them.
 *
 * Semantics under test (docs/scheduling.md, "Time limits"): a job's time
 * limit is its own time_limit_s, else its tenant's default for its kind
 * (a child's unset default is its parent's), else none.  The default is
 * also the most a job may ask for.  A running job whose limit (counted
 * from its bind) is up gets STOP with its checkpoint grace and reason
 * "time_limit" and goes to preempting; when the grace ends, or its node
 * reports it stopped, it ends failed ("time_limit: ..."), never requeued.
 * Reservations count a job without an estimate as ending at bind + limit +
 * grace, and a job with a limit may be backfilled if that ends in time.
 *
 * Worked example (most tests): one node of 8 H100, tenant "team" with no
 * defaults.  Job 1 (1 GPU, time_limit_s 100, grace 30) binds at t=0; at
 * t=99 it runs; at t=100 STOP (grace 30, "time_limit"); at t=130 it is
 * failed and its GPU is free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

enum { LIMITED = 1, GANG = 10 };

static void submit_limited(tb_world *w, uint64_t id, const char *tenant, gp_job_kind kind, int64_t limit,
                           int64_t grace, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, grace);
    s.kind = kind;
    s.time_limit_s = limit;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

/* A tenant without quotas whose defaults are training / interactive /
 * inference seconds (0 = unset). */
static void tenant_with_defaults(tb_world *w, const char *path, int64_t training, int64_t inference,
                                 int64_t interactive)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.time_limit_s[GP_KIND_TRAINING] = training;
    s.time_limit_s[GP_KIND_INFERENCE] = inference;
    s.time_limit_s[GP_KIND_INTERACTIVE] = interactive;
    assert_int_equal(tb_tenant_try(w, path, &s, NULL), GP_OK);
}

/* The worked example up to t=0. */
static void limited_job_runs(tb_world *w)
{
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    submit_limited(w, LIMITED, "team", GP_KIND_TRAINING, 100, 30, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
}

static void job_past_its_time_limit_is_stopped_with_its_grace(void **state)
{
    tb_world *w = *state;
    limited_job_runs(w);
    assert_int_equal(tb_tick(w, 99, GP_DEC_STOP), 0);
    assert_int_equal(tb_state(w, LIMITED), GP_JOB_RUNNING);

    assert_int_equal(tb_tick(w, 100, GP_DEC_STOP), 1);
    const gp_decision *d = tb_find(w, LIMITED, GP_DEC_STOP);
    assert_non_null(d);
    assert_int_equal(d->grace_s, 30);
    assert_string_equal(d->reason, "time_limit");
    assert_int_equal(tb_state(w, LIMITED), GP_JOB_PREEMPTING);
    assert_int_equal(tb_info(w, LIMITED).preempt_deadline, 130);
}

static void time_limited_job_fails_when_its_grace_ends(void **state)
{
    tb_world *w = *state;
    limited_job_runs(w);
    tb_tick(w, 100, GP_DEC_STOP);
    assert_int_equal(tb_tick(w, 129, GP_DEC_TRANSITION), 0);
    tb_tick(w, 130, GP_DEC_TRANSITION);
    const gp_decision *d = tb_find_transition(w, LIMITED, GP_JOB_PREEMPTING, GP_JOB_FAILED);
    assert_non_null(d);
    assert_memory_equal(d->reason, "time_limit: ", 12);
    assert_int_equal(tb_state(w, LIMITED), GP_JOB_FAILED);
    assert_int_equal(tb_free_gpus(w), 8);
    tb_assert_gpus_consistent(w);
}

static void time_limited_job_reported_stopped_fails_not_requeued(void **state)
{
    tb_world *w = *state;
    limited_job_runs(w);
    tb_tick(w, 100, GP_DEC_STOP);
    tb_finish(w, LIMITED, GP_EXIT_STOPPED, 110);
    assert_int_equal(tb_state(w, LIMITED), GP_JOB_FAILED);
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 0);
    assert_int_equal(tb_free_gpus(w), 8);
}

static void time_limited_job_finishing_within_its_grace_succeeded(void **state)
{
    tb_world *w = *state;
    limited_job_runs(w);
    tb_tick(w, 100, GP_DEC_STOP);
    tb_finish(w, LIMITED, GP_EXIT_SUCCEEDED, 105);
    assert_int_equal(tb_state(w, LIMITED), GP_JOB_SUCCEEDED);
}

static void time_limited_job_on_a_lost_node_fails_not_requeued(void **state)
{
    tb_world *w = *state;
    limited_job_runs(w);
    tb_tick(w, 100, GP_DEC_STOP);
    assert_int_equal(gp_engine_node_lost(w->e, "n00", 105, NULL), GP_OK);
    assert_int_equal(tb_state(w, LIMITED), GP_JOB_FAILED);
}

static void job_without_a_limit_takes_its_tenants_default_for_its_kind(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tenant_with_defaults(w, "team", 3600, 0, 600);
    submit_limited(w, 1, "team", GP_KIND_TRAINING, 0, 0, 0);
    submit_limited(w, 2, "team", GP_KIND_INTERACTIVE, 0, 0, 0);
    submit_limited(w, 3, "team", GP_KIND_TRAINING, 60, 0, 0);
    assert_int_equal(tb_info(w, 1).time_limit_s, 3600);
    assert_int_equal(tb_info(w, 2).time_limit_s, 600);
    assert_int_equal(tb_info(w, 3).time_limit_s, 60);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_tick(w, 60, GP_DEC_STOP), 1);
    assert_non_null(tb_find(w, 3, GP_DEC_STOP));
    assert_int_equal(tb_tick(w, 600, GP_DEC_STOP), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_STOP));
}

static void child_without_a_default_inherits_its_parents(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tenant_with_defaults(w, "org", 7200, 0, 0);
    tenant_with_defaults(w, "org/team", 0, 0, 900);
    tenant_with_defaults(w, "org/other", 1800, 0, 0);
    submit_limited(w, 1, "org/team", GP_KIND_TRAINING, 0, 0, 0);
    submit_limited(w, 2, "org/team", GP_KIND_INTERACTIVE, 0, 0, 0);
    submit_limited(w, 3, "org/other", GP_KIND_TRAINING, 0, 0, 0);
    assert_int_equal(tb_info(w, 1).time_limit_s, 7200);
    assert_int_equal(tb_info(w, 2).time_limit_s, 900);
    assert_int_equal(tb_info(w, 3).time_limit_s, 1800);
    gp_tenant_info t = tb_tenant_info(w, "org/team");
    assert_int_equal(t.time_limit_s[GP_KIND_TRAINING], 7200);
    assert_int_equal(t.time_limit_s[GP_KIND_INTERACTIVE], 900);
    assert_int_equal(t.time_limit_s[GP_KIND_INFERENCE], 0);
}

static void inference_without_a_default_runs_without_a_limit(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tenant_with_defaults(w, "team", 3600, 0, 3600);
    submit_limited(w, 1, "team", GP_KIND_INFERENCE, 0, 0, 0);
    assert_int_equal(tb_info(w, 1).time_limit_s, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_tick(w, 1000000, GP_DEC_STOP), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
}

static void job_without_any_default_has_no_limit(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    submit_limited(w, 1, "team", GP_KIND_TRAINING, 0, 0, 0);
    assert_int_equal(tb_info(w, 1).time_limit_s, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_tick(w, 1000000, GP_DEC_STOP), 0);
}

static void job_may_not_ask_for_more_than_its_tenants_default(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tenant_with_defaults(w, "org", 3600, 0, 0);
    tenant_with_defaults(w, "org/team", 0, 0, 0);
    gp_job_spec s = tb_job(1, "org/team", 0);
    s.time_limit_s = 3601;
    gp_error err;
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_ERR_INVALID); /* a batch is refused alike */
    assert_string_equal(err.field, "time_limit_s");
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "time_limit_s");
    s.time_limit_s = 3600;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
}

static void negative_job_time_limit_is_refused(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "team", 0);
    s.time_limit_s = -1;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "time_limit_s");
}

static void tenant_default_out_of_range_is_refused_naming_the_kind(void **state)
{
    tb_world *w = *state;
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.time_limit_s[GP_KIND_INTERACTIVE] = -5;
    gp_error err;
    assert_int_equal(tb_tenant_try(w, "team", &s, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "time_limit.interactive");
    assert_int_equal(gp_engine_tenant_find(w->e, "team", NULL, NULL), GP_ERR_NOT_FOUND);
}

/* Two nodes; job 1 (limit 1000, grace 60) fills n00 with 8 GPUs at t=0. */
static void node_busy_until_its_limit(tb_world *w)
{
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    tb_tenant(w, "big", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "team", 60);
    s.gpus = 8;
    s.time_limit_s = 1000;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
}

static void reservation_counts_a_job_without_estimate_until_its_limit_and_grace(void **state)
{
    tb_world *w = *state;
    node_busy_until_its_limit(w);
    gp_job_spec gang = tb_job(GANG, "big", 0);
    gang.replicas = 2;
    gang.gpus = 8;
    assert_int_equal(tb_submit_spec(w, &gang, 10, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    gp_job_info info = tb_info(w, GANG);
    assert_int_equal(info.wait.code, GP_WAIT_RESERVED);
    assert_int_equal(info.wait.time, 1060); /* bind 0 + limit 1000 + grace 60 */
}

static void job_whose_limit_ends_before_the_reservation_is_backfilled(void **state)
{
    tb_world *w = *state;
    node_busy_until_its_limit(w);
    gp_job_spec gang = tb_job(GANG, "big", 0);
    gang.replicas = 2;
    gang.gpus = 8;
    assert_int_equal(tb_submit_spec(w, &gang, 10, NULL), GP_OK);
    submit_limited(w, 20, "team", GP_KIND_TRAINING, 1000, 30, 10); /* 10 + 1030 <= 1060 */
    submit_limited(w, 21, "team", GP_KIND_TRAINING, 1100, 30, 10); /* would run past 1060 */
    submit_limited(w, 22, "team", GP_KIND_TRAINING, 0, 30, 10);    /* no bound at all */
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 20, GP_DEC_BIND));
    assert_int_equal(tb_info(w, 21).wait.code, GP_WAIT_RESERVATION);
    assert_int_equal(tb_info(w, 22).wait.code, GP_WAIT_RESERVATION);
}

/* The tick reads when each running job is due from a small array beside
 * the running list (jobs.c, running_due).  Jobs 1 (limit 100), 2 (none)
 * and 3 (limit 50) bind at t=0; job 2 ends at t=10 and job 3 takes its
 * entry in the list: it is still stopped at its limit and ends with its
 * grace, and so is job 1 after it. */
static void time_limits_hold_when_other_jobs_leave_the_running_list(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    submit_limited(w, 1, "team", GP_KIND_TRAINING, 100, 30, 0);
    submit_limited(w, 2, "team", GP_KIND_TRAINING, 0, 30, 0);
    submit_limited(w, 3, "team", GP_KIND_TRAINING, 50, 30, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_tick(w, 49, GP_DEC_STOP), 0);
    assert_int_equal(tb_tick(w, 50, GP_DEC_STOP), 1);
    assert_non_null(tb_find(w, 3, GP_DEC_STOP));
    assert_int_equal(tb_tick(w, 80, GP_DEC_STOP), 0);
    assert_int_equal(tb_state(w, 3), GP_JOB_FAILED);
    assert_int_equal(tb_tick(w, 100, GP_DEC_STOP), 1);
    assert_non_null(tb_find(w, 1, GP_DEC_STOP));
    tb_assert_gpus_consistent(w); /* the invariants compare the array with the jobs */
    assert_int_equal(tb_tick(w, 129, GP_DEC_STOP), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    assert_int_equal(tb_tick(w, 130, GP_DEC_STOP), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_FAILED);
    tb_assert_gpus_consistent(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(job_past_its_time_limit_is_stopped_with_its_grace),
        TB_TEST(time_limited_job_fails_when_its_grace_ends),
        TB_TEST(time_limited_job_reported_stopped_fails_not_requeued),
        TB_TEST(time_limited_job_finishing_within_its_grace_succeeded),
        TB_TEST(time_limited_job_on_a_lost_node_fails_not_requeued),
        TB_TEST(job_without_a_limit_takes_its_tenants_default_for_its_kind),
        TB_TEST(child_without_a_default_inherits_its_parents),
        TB_TEST(inference_without_a_default_runs_without_a_limit),
        TB_TEST(job_without_any_default_has_no_limit),
        TB_TEST(job_may_not_ask_for_more_than_its_tenants_default),
        TB_TEST(negative_job_time_limit_is_refused),
        TB_TEST(tenant_default_out_of_range_is_refused_naming_the_kind),
        TB_TEST(reservation_counts_a_job_without_estimate_until_its_limit_and_grace),
        TB_TEST(job_whose_limit_ends_before_the_reservation_is_backfilled),
        TB_TEST(time_limits_hold_when_other_jobs_leave_the_running_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
