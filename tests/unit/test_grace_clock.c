/* test_grace_clock.c - grace deadlines on a caller clock that rounds down.
 *
 * Rule (docs/scheduling.md, "Grace in true time"): a job told to stop
 * within g seconds keeps its GPUs until g seconds have passed in the
 * caller's true time.  A caller whose `now` is its true time rounded down
 * by up to r seconds (gpupoold: whole seconds of wall-clock time, r = 1)
 * sets clock_resolution_s = r, and every deadline after which GPUs are
 * freed moves r seconds later; the PREEMPT and STOP decisions still carry
 * the true grace g.  Grace 0 frees the GPUs at once whatever r is.
 *
 * Worked example (most tests): one node of 8 H100, "owner" with an unused
 * floor of 4, "borrower" filling all 8 GPUs with 1-GPU jobs of grace 4.
 * At now = 10 (true time anywhere in [10, 11)) the owner submits a 4-GPU
 * job: four borrowers get PREEMPT grace 4.  With r = 1 their deadline is
 * 15, not 14: at now = 14 (true time possibly 14.0 < 10.9 + 4) the owner
 * still waits; at now = 15 it is bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

enum { OWNER_JOB = 100, GRACE = 4, T_RECLAIM = 10 };

static tb_world *world_with_resolution(int64_t resolution_s)
{
    gp_engine_config cfg = gp_engine_config_default();
    assert_int_equal(cfg.clock_resolution_s, 0);
    cfg.clock_resolution_s = resolution_s;
    tb_world *w = tb_new();
    gp_engine_free(w->e);
    w->e = gp_engine_new(&cfg);
    assert_non_null(w->e);
    return w;
}

static void borrowers_fill_the_node(tb_world *w, int64_t grace)
{
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "owner", "H100", 4, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    for (uint64_t id = 1; id <= 8; id++) {
        gp_job_spec s = tb_job(id, "borrower", grace);
        assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    }
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
}

static void owner_reclaims(tb_world *w, size_t expect_preempts)
{
    gp_job_spec s = tb_job(OWNER_JOB, "owner", 0);
    s.gpus = 4;
    assert_int_equal(tb_submit_spec(w, &s, T_RECLAIM, NULL), GP_OK);
    assert_int_equal(tb_tick(w, T_RECLAIM, GP_DEC_PREEMPT), expect_preempts);
}

static void a_coarse_clock_moves_the_reclaim_deadline_one_resolution_later(void **state)
{
    (void)state;
    tb_world *w = world_with_resolution(1);
    borrowers_fill_the_node(w, GRACE);
    owner_reclaims(w, 4);
    size_t n = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &n);
    for (size_t i = 0; i < n; i++)
        if (d[i].kind == GP_DEC_PREEMPT) {
            assert_int_equal(d[i].grace_s, GRACE); /* the victim is told its true grace */
            assert_int_equal(tb_info(w, d[i].job_id).preempt_deadline, T_RECLAIM + GRACE + 1);
        }
    assert_int_equal(tb_info(w, OWNER_JOB).wait.time, T_RECLAIM + GRACE + 1);
    assert_int_equal(tb_tick(w, T_RECLAIM + GRACE, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_PENDING);
    assert_int_equal(tb_tick(w, T_RECLAIM + GRACE + 1, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING);
    tb_assert_gpus_consistent(w);
    tb_free(w);
}

static void an_exact_clock_ends_the_grace_at_now_plus_grace(void **state)
{
    (void)state;
    tb_world *w = world_with_resolution(0);
    borrowers_fill_the_node(w, GRACE);
    owner_reclaims(w, 4);
    assert_int_equal(tb_info(w, OWNER_JOB).wait.time, T_RECLAIM + GRACE);
    assert_int_equal(tb_tick(w, T_RECLAIM + GRACE, GP_DEC_BIND), 1);
    tb_free(w);
}

static void zero_grace_victims_free_their_gpus_at_once_on_a_coarse_clock(void **state)
{
    (void)state;
    tb_world *w = world_with_resolution(1);
    borrowers_fill_the_node(w, 0);
    owner_reclaims(w, 4);
    assert_int_equal(tb_count_for_job(w, OWNER_JOB, GP_DEC_BIND), 1);
    tb_free(w);
}

static void a_cancelled_job_keeps_its_gpus_for_grace_plus_resolution(void **state)
{
    (void)state;
    tb_world *w = world_with_resolution(1);
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "team", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "team", GRACE);
    s.gpus = 8;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, T_RECLAIM, NULL), GP_OK);
    const gp_decision *stop = tb_find(w, 1, GP_DEC_STOP);
    assert_non_null(stop);
    assert_int_equal(stop->grace_s, GRACE);
    assert_int_equal(tb_info(w, 1).preempt_deadline, T_RECLAIM + GRACE + 1);
    tb_tick(w, T_RECLAIM + GRACE, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    assert_int_equal(tb_gpus_held(w, "team"), 8);
    tb_tick(w, T_RECLAIM + GRACE + 1, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_CANCELLED);
    assert_int_equal(tb_free_gpus(w), 8);
    tb_free(w);
}

static void a_negative_resolution_counts_as_zero(void **state)
{
    (void)state;
    tb_world *w = world_with_resolution(-5);
    borrowers_fill_the_node(w, GRACE);
    owner_reclaims(w, 4);
    assert_int_equal(tb_info(w, OWNER_JOB).wait.time, T_RECLAIM + GRACE);
    tb_free(w);
}

/* The resolution is an event: graces that started before a change keep
 * their deadline, later ones use the new resolution. */
static void a_resolution_change_applies_to_graces_that_start_after_it(void **state)
{
    (void)state;
    tb_world *w = world_with_resolution(0);
    borrowers_fill_the_node(w, GRACE);
    gp_error err = {0};
    assert_int_equal(gp_engine_clock_resolution_set(w->e, 1, 5, &err), GP_OK);
    assert_int_equal(gp_engine_clock_resolution(w->e), 1);
    owner_reclaims(w, 4);
    assert_int_equal(tb_info(w, OWNER_JOB).wait.time, T_RECLAIM + GRACE + 1);
    assert_int_equal(gp_engine_clock_resolution_set(w->e, 61, T_RECLAIM, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "clock_resolution_s");
    assert_int_equal(gp_engine_clock_resolution_set(w->e, 0, T_RECLAIM - 1, &err), GP_ERR_TIME);
    assert_int_equal(gp_engine_clock_resolution(w->e), 1);
    tb_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_coarse_clock_moves_the_reclaim_deadline_one_resolution_later),
        cmocka_unit_test(an_exact_clock_ends_the_grace_at_now_plus_grace),
        cmocka_unit_test(zero_grace_victims_free_their_gpus_at_once_on_a_coarse_clock),
        cmocka_unit_test(a_cancelled_job_keeps_its_gpus_for_grace_plus_resolution),
        cmocka_unit_test(a_negative_resolution_counts_as_zero),
        cmocka_unit_test(a_resolution_change_applies_to_graces_that_start_after_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
