/* test_restart.c - restart_policy (core/restart.c): a failed job restarts
 * whole after a back-off while it has restarts left, else it fails; the
 * defaults by kind; bad specs refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

#define LEAF "org/team"

static void base(tb_world *w)
{
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, LEAF, "H100", -1, -1);
}

/* Submits job 1 (replicas x 8 GPUs, the kind and policy given) at t=0 and
 * binds it. */
static void running(tb_world *w, gp_job_kind kind, gp_restart_policy policy, int max_restarts, int replicas)
{
    gp_job_spec s = tb_job(1, LEAF, 30);
    s.kind = kind;
    s.replicas = replicas;
    s.gpus = 8;
    s.restart_policy = policy;
    s.max_restarts = max_restarts;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
}

static void an_inference_job_that_fails_is_requeued_whole_and_binds_after_its_backoff(void **state)
{
    tb_world *w = *state;
    base(w);
    running(w, GP_KIND_INFERENCE, GP_RESTART_DEFAULT, 0, 2);
    tb_finish(w, 1, GP_EXIT_FAILED, 100);
    gp_job_info info = tb_info(w, 1);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.restarts, 1);
    assert_int_equal(info.wait.code, GP_WAIT_BACKOFF);
    assert_int_equal(info.wait.time, 110);
    assert_int_equal(tb_free_gpus(w), 16); /* both replicas' GPUs are free */
    char why[256];
    gp_engine_why(w->e, 1, why, sizeof why);
    assert_non_null(strstr(why, "restart 1 of 3"));
    assert_int_equal(tb_tick(w, 109, GP_DEC_BIND), 0); /* still backing off */
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_BACKOFF);
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
}

static void the_backoff_doubles_and_the_last_failure_fails_the_job(void **state)
{
    tb_world *w = *state;
    base(w);
    running(w, GP_KIND_TRAINING, GP_RESTART_ON_FAILURE, 2, 1);
    tb_finish(w, 1, GP_EXIT_FAILED, 100);
    assert_int_equal(tb_info(w, 1).wait.time, 110);
    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 1);
    tb_finish(w, 1, GP_EXIT_FAILED, 200);
    assert_int_equal(tb_info(w, 1).wait.time, 220); /* 20 s: doubled */
    assert_int_equal(tb_info(w, 1).restarts, 2);
    assert_int_equal(tb_tick(w, 220, GP_DEC_BIND), 1);
    tb_finish(w, 1, GP_EXIT_FAILED, 300);
    assert_int_equal(tb_state(w, 1), GP_JOB_FAILED);
    const gp_decision *d = tb_find_transition(w, 1, GP_JOB_RUNNING, GP_JOB_FAILED);
    assert_non_null(d);
    assert_non_null(strstr(d->reason, "no restarts left (2 of 2 used)"));
}

/* Job 1 (1 x 8 GPUs, the kind and policy given) bound at t=0 ends `how`
 * at t=100: its state then. */
static gp_job_state state_after(tb_world *w, gp_job_kind kind, gp_restart_policy policy, gp_exit how)
{
    base(w);
    running(w, kind, policy, 0, 1);
    tb_finish(w, 1, how, 100);
    return tb_state(w, 1);
}

static void a_training_job_fails_at_its_first_failure_by_default(void **state)
{
    assert_int_equal(state_after(*state, GP_KIND_TRAINING, GP_RESTART_DEFAULT, GP_EXIT_FAILED), GP_JOB_FAILED);
}

static void an_inference_job_with_restart_policy_never_fails(void **state)
{
    assert_int_equal(state_after(*state, GP_KIND_INFERENCE, GP_RESTART_NEVER, GP_EXIT_FAILED), GP_JOB_FAILED);
}

static void a_success_is_not_restarted(void **state)
{
    assert_int_equal(state_after(*state, GP_KIND_INFERENCE, GP_RESTART_ON_FAILURE, GP_EXIT_SUCCEEDED),
                     GP_JOB_SUCCEEDED);
}

static void the_backoff_is_capped_at_five_minutes(void **state)
{
    tb_world *w = *state;
    base(w);
    running(w, GP_KIND_INFERENCE, GP_RESTART_ON_FAILURE, 10, 1);
    int64_t t = 100, waited = 0;
    for (int k = 1; k <= 7; k++) {
        tb_finish(w, 1, GP_EXIT_FAILED, t);
        waited = tb_info(w, 1).wait.time - t;
        t = tb_info(w, 1).wait.time;
        assert_int_equal(tb_tick(w, t, GP_DEC_BIND), 1);
    }
    assert_int_equal(waited, 300); /* 10, 20, 40, 80, 160, 300, 300 */
}

static void bad_restart_specs_are_refused_with_the_field(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 30);
    gp_error err;
    s.max_restarts = 2; /* a training job never restarts by default */
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "max_restarts");
    s.restart_policy = GP_RESTART_ON_FAILURE;
    s.max_restarts = GP_MAX_RESTARTS_MAX + 1;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "max_restarts");
    s.max_restarts = 0;
    s.restart_policy = (gp_restart_policy)7;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "restart_policy");
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    assert_int_equal(st.jobs, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_inference_job_that_fails_is_requeued_whole_and_binds_after_its_backoff,
                                        tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(the_backoff_doubles_and_the_last_failure_fails_the_job, tb_setup,
                                        tb_teardown),
        cmocka_unit_test_setup_teardown(a_training_job_fails_at_its_first_failure_by_default, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(an_inference_job_with_restart_policy_never_fails, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(a_success_is_not_restarted, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(the_backoff_is_capped_at_five_minutes, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(bad_restart_specs_are_refused_with_the_field, tb_setup, tb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
