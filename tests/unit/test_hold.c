/* test_hold.c - changes to pending jobs (core/hold.c): a held job is
 * never placed and says who held it, a release puts it back, a new
 * priority reorders its queue, a running job changes nothing, and a
 * snapshot keeps the hold. */
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

/* One 8-GPU node: job 1 (8 GPUs) runs, jobs 2 and 3 (8 GPUs each) wait. */
static void one_running_two_waiting(tb_world *w)
{
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, LEAF, "H100", -1, -1);
    for (uint64_t id = 1; id <= 3; id++)
        tb_submit(w, id, LEAF, 1, 8, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
}

static gp_err update(tb_world *w, uint64_t id, gp_job_update u, int64_t now, gp_error *err)
{
    return gp_engine_job_update(w->e, id, &u, now, err);
}

static void a_held_job_is_passed_over_until_released(void **state)
{
    tb_world *w = *state;
    one_running_two_waiting(w);
    gp_error err;
    assert_int_equal(update(w, 2, (gp_job_update){.has_hold = true, .hold = true, .by = "alice"}, 1, &err), GP_OK);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING); /* the later job, not the held one */
    assert_int_equal(tb_info(w, 2).wait.code, GP_WAIT_HELD);
    char why[256];
    gp_engine_why(w->e, 2, why, sizeof why);
    assert_non_null(strstr(why, "held by alice"));
    tb_finish(w, 3, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0); /* room, still held */
    assert_int_equal(update(w, 2, (gp_job_update){.has_hold = true, .hold = false}, 21, &err), GP_OK);
    assert_int_equal(tb_info(w, 2).wait.code, GP_WAIT_NEW);
    assert_int_equal(tb_tick(w, 21, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

static void a_new_priority_moves_the_job_ahead(void **state)
{
    tb_world *w = *state;
    one_running_two_waiting(w);
    gp_error err;
    assert_int_equal(update(w, 3, (gp_job_update){.has_priority = true, .priority = 10}, 1, &err), GP_OK);
    assert_int_equal(tb_info(w, 3).priority, 10);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(gp_engine_check_invariants(w->e, &err), GP_OK);
}

static void only_a_pending_job_changes_and_bad_values_change_nothing(void **state)
{
    tb_world *w = *state;
    one_running_two_waiting(w);
    gp_error err;
    assert_int_equal(update(w, 1, (gp_job_update){.has_priority = true, .priority = 3}, 1, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "priority");
    assert_int_equal(update(w, 1, (gp_job_update){.has_hold = true, .hold = true, .by = "a"}, 1, &err),
                     GP_ERR_CONFLICT);
    assert_string_equal(err.field, "hold");
    assert_int_equal(update(w, 2, (gp_job_update){.has_priority = true, .priority = 5000}, 1, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "priority");
    assert_int_equal(update(w, 2, (gp_job_update){.has_hold = true, .hold = true, .by = ""}, 1, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "by");
    assert_int_equal(update(w, 2, (gp_job_update){.has_time_limit = true, .time_limit_s = -1}, 1, &err),
                     GP_ERR_INVALID);
    assert_string_equal(err.field, "time_limit_s");
    assert_int_equal(update(w, 9, (gp_job_update){.has_hold = true, .hold = false}, 1, &err), GP_ERR_NOT_FOUND);
    assert_int_equal(tb_info(w, 2).priority, 0);
    assert_int_equal(tb_info(w, 2).wait.code == GP_WAIT_HELD, 0);
    /* a time limit counts from the next bind */
    assert_int_equal(update(w, 2, (gp_job_update){.has_time_limit = true, .time_limit_s = 7200}, 1, &err), GP_OK);
    assert_int_equal(tb_info(w, 2).time_limit_s, 7200);
}

static void a_snapshot_keeps_the_hold(void **state)
{
    tb_world *w = *state;
    one_running_two_waiting(w);
    gp_error err;
    assert_int_equal(update(w, 2, (gp_job_update){.has_hold = true, .hold = true, .by = "bob"}, 1, &err), GP_OK);
    gp_engine_decisions_clear(w->e);
    unsigned char *buf = NULL;
    size_t len = 0;
    assert_int_equal(gp_engine_snapshot_write(w->e, &buf, &len, &err), GP_OK);
    gp_engine *copy = NULL;
    assert_int_equal(gp_engine_snapshot_read(buf, len, NULL, &copy, &err), GP_OK);
    free(buf);
    assert_int_equal(gp_engine_job_finished(copy, 1, GP_EXIT_SUCCEEDED, 10, &err), GP_OK);
    assert_int_equal(gp_engine_tick(copy, 10, &err), GP_OK);
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(copy, 2, &info, &err), GP_OK);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_HELD);
    char why[256];
    gp_engine_why(copy, 2, why, sizeof why);
    assert_non_null(strstr(why, "held by bob"));
    assert_int_equal(gp_engine_job_info(copy, 3, &info, &err), GP_OK);
    assert_int_equal(info.state, GP_JOB_RUNNING);
    gp_engine_free(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_held_job_is_passed_over_until_released, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(a_new_priority_moves_the_job_ahead, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(only_a_pending_job_changes_and_bad_values_change_nothing, tb_setup,
                                        tb_teardown),
        cmocka_unit_test_setup_teardown(a_snapshot_keeps_the_hold, tb_setup, tb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
