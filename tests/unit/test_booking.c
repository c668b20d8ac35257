/* test_booking.c - advance bookings (core/booking.c): admission from the
 * guarantee and the allowance, refusal with a suggested start, no two
 * bookings on one GPU, clearing before the start, jobs of the booking run
 * on it, no-show release, recurring occurrences, a lost node, a snapshot. */
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

#define H 3600

/* Four 8-GPU H100 nodes; org a (guarantee 16, leaf a/t), org b (guarantee 8, leaf b/t). */
static void fleet(tb_world *w)
{
    tb_add_nodes(w, 4, "H100", 8, "b0", "z0");
    tb_tenant(w, "a", "H100", 16, -1);
    tb_tenant(w, "a/t", "H100", -1, -1);
    tb_tenant(w, "b", "H100", 8, -1);
    tb_tenant(w, "b/t", "H100", -1, -1);
}

/* One 8-GPU node: org a guaranteed all of it, org b nothing. */
static void one_node(tb_world *w)
{
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "a", "H100", 8, -1);
    tb_tenant(w, "a/t", "H100", -1, -1);
    tb_tenant(w, "b", "H100", -1, -1);
    tb_tenant(w, "b/t", "H100", -1, -1);
}

static gp_booking_spec spec(const char *name, const char *tenant, int replicas, int gpus, int64_t start,
                            int64_t end)
{
    return (gp_booking_spec){.name = name, .tenant = tenant, .replicas = replicas, .gpus = gpus,
                             .start = start, .end = end, .lend = -1};
}

static gp_err book(tb_world *w, gp_booking_spec s, int64_t now, gp_booking_result *r)
{
    gp_error err;
    gp_err rc = gp_engine_booking_add(w->e, &s, now, r, &err);
    gp_error chk;
    assert_int_equal(gp_engine_check_invariants(w->e, &chk), GP_OK);
    return rc;
}

static gp_booking_info info(tb_world *w, const char *name)
{
    gp_booking_info bi;
    gp_error err;
    assert_int_equal(gp_engine_booking_get(w->e, name, &bi, &err), GP_OK);
    return bi;
}

static void inside_the_guarantee_is_free_beyond_it_needs_an_allowance(void **state)
{
    tb_world *w = *state;
    fleet(w);
    gp_booking_result r;
    assert_int_equal(book(w, spec("pre", "a/t", 2, 8, 10 * H, 20 * H), 0, &r), GP_OK);
    assert_int_equal(r.accepted, 1);
    assert_int_equal(info(w, "pre").guaranteed_gpus, 16);
    /* 8 more for a: beyond its guarantee, no allowance yet */
    assert_int_equal(book(w, spec("more", "a/t", 1, 8, 10 * H, 20 * H), 0, &r), GP_ERR_CONFLICT);
    assert_non_null(strstr(r.reason, "GPU-hours"));
    gp_error err;
    assert_int_equal(gp_engine_booking_allowance_set(w->e, "a", 100, 0, &err), GP_OK);
    assert_int_equal(book(w, spec("more", "a/t", 1, 8, 10 * H, 20 * H), 0, &r), GP_OK);
    assert_int_equal(info(w, "more").allowance_gpus, 8);
    gp_booking_allowance al;
    assert_int_equal(gp_engine_booking_allowance_get(w->e, "a/t", 10 * H, &al, &err), GP_OK);
    assert_true(al.left_gpu_hours > 19.9 && al.left_gpu_hours < 20.1); /* 100 - 8 x 10 h */
    /* b's guarantee (8) is promised: nothing beyond guarantees is left in that window */
    assert_int_equal(gp_engine_booking_allowance_set(w->e, "a", -1, 0, &err), GP_OK);
    assert_int_equal(book(w, spec("greedy", "a/t", 1, 8, 10 * H, 20 * H), 0, &r), GP_ERR_CONFLICT);
    assert_int_equal(r.suggested_start, 20 * H); /* when "pre" and "more" end */
    /* b books inside its own guarantee in the same window: still possible */
    assert_int_equal(book(w, spec("bee", "b/t", 1, 8, 10 * H, 20 * H), 0, &r), GP_OK);
}

static void no_two_bookings_hold_a_gpu_at_once(void **state)
{
    tb_world *w = *state;
    fleet(w);
    gp_error err;
    assert_int_equal(gp_engine_booking_allowance_set(w->e, "a", -1, 0, &err), GP_OK);
    assert_int_equal(book(w, spec("x", "a/t", 2, 8, 10 * H, 20 * H), 0, NULL), GP_OK);
    assert_int_equal(book(w, spec("y", "b/t", 1, 8, 15 * H, 25 * H), 0, NULL), GP_OK);
    uint32_t gx[16], gy[8];
    assert_int_equal(gp_engine_booking_gpus(w->e, "x", gx, 16), 16);
    assert_int_equal(gp_engine_booking_gpus(w->e, "y", gy, 8), 8);
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < 8; k++)
            assert_int_not_equal(gx[i], gy[k]);
    /* back to back with x: the same GPUs may serve both */
    assert_int_equal(book(w, spec("z", "a/t", 2, 8, 20 * H, 30 * H), 0, NULL), GP_OK);
}

static void borrowers_are_cleared_by_the_start_and_unbounded_jobs_stay_off(void **state)
{
    tb_world *w = *state;
    one_node(w);
    /* b's job (grace 60) runs before the booking exists */
    gp_job_spec j = tb_job(1, "b/t", 60);
    j.gpus = 8;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &j, 0, &err), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(book(w, spec("pre", "a/t", 1, 8, 1000, 5000), 10, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 900, GP_DEC_PREEMPT), 0);     /* not yet: its grace is 60 s */
    assert_int_equal(tb_tick(w, 940, GP_DEC_PREEMPT), 1);     /* start - grace */
    const gp_decision *d = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_string_equal(d->booking, "pre");
    assert_int_equal(info(w, "pre").state, GP_BOOKING_CLEARING);
    tb_tick(w, 1000, GP_DEC_BIND); /* the grace ended: the GPUs are free at the start... */
    assert_int_equal(info(w, "pre").state, GP_BOOKING_ACTIVE);
    assert_int_equal(info(w, "pre").n_cleared, 1);
    /* ...and, idle and lent, borrowed again; a job of the booking takes them back with the borrower's grace */
    gp_job_spec mine = tb_job(2, "a/t", 30);
    mine.gpus = 8;
    mine.booking = "pre";
    assert_int_equal(tb_submit_spec(w, &mine, 1001, &err), GP_OK);
    tb_tick(w, 1001, GP_DEC_PREEMPT);
    if (tb_state(w, 1) == GP_JOB_RUNNING) /* not borrowed back at 1000: nothing to take */
        fail_msg("job 1 should have been preempted for the booking's own job");
    tb_tick(w, 1070, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    assert_int_equal(tb_gpus_held(w, "b/t"), 0);
}

static void a_booking_that_does_not_lend_keeps_its_gpus_idle(void **state)
{
    tb_world *w = *state;
    one_node(w);
    gp_booking_spec s = spec("quiet", "a/t", 1, 8, 100, 5000);
    s.lend = 0;
    assert_int_equal(book(w, s, 0, NULL), GP_OK);
    gp_job_spec j = tb_job(1, "b/t", 30);
    j.time_limit_s = 60;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &j, 200, &err), GP_OK);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 0);
    assert_int_equal(info(w, "quiet").state, GP_BOOKING_ACTIVE);
}

static void a_job_without_a_limit_stays_off_booked_gpus(void **state)
{
    tb_world *w = *state;
    one_node(w);
    assert_int_equal(book(w, spec("pre", "a/t", 1, 8, 10 * H, 20 * H), 0, NULL), GP_OK);
    gp_error err;
    gp_job_spec j = tb_job(1, "b/t", 30); /* no time limit: unbounded */
    assert_int_equal(tb_submit_spec(w, &j, 0, &err), GP_OK);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 0);
    gp_job_spec k = tb_job(2, "b/t", 30);
    k.time_limit_s = H; /* ends before the start */
    assert_int_equal(tb_submit_spec(w, &k, 1, &err), GP_OK);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

static void a_job_of_the_booking_waits_for_it_then_runs_on_its_gpus(void **state)
{
    tb_world *w = *state;
    fleet(w);
    assert_int_equal(book(w, spec("pre", "a/t", 1, 8, 100, 5000), 0, NULL), GP_OK);
    gp_job_spec j = tb_job(1, "a/t", 30);
    j.gpus = 8;
    j.booking = "pre";
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &j, 0, &err), GP_OK);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_BOOKING);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    uint32_t booked[8], got[8];
    assert_int_equal(gp_engine_booking_gpus(w->e, "pre", booked, 8), 8);
    assert_int_equal(gp_engine_job_gpus(w->e, 1, got, 8), 8);
    assert_int_equal(tb_gpu(w, got[0]).node, tb_gpu(w, booked[0]).node);
    /* a job of another tenant may not name it */
    gp_job_spec k = tb_job(2, "b/t", 30);
    k.booking = "pre";
    assert_int_equal(tb_submit_spec(w, &k, 101, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "booking");
}

static void a_booking_nobody_uses_is_released(void **state)
{
    tb_world *w = *state;
    fleet(w);
    gp_booking_spec s = spec("idle", "a/t", 1, 8, 100, 100 + 10 * H);
    s.no_show_s = 600;
    assert_int_equal(book(w, s, 0, NULL), GP_OK);
    tb_tick(w, 100, GP_DEC_BOOKING);
    assert_int_equal(info(w, "idle").state, GP_BOOKING_ACTIVE);
    tb_tick(w, 699, GP_DEC_BOOKING);
    assert_int_equal(info(w, "idle").state, GP_BOOKING_ACTIVE);
    assert_int_equal(tb_tick(w, 700, GP_DEC_BOOKING), 1);
    gp_booking_info bi = info(w, "idle");
    assert_int_equal(bi.state, GP_BOOKING_RELEASED_NO_SHOW);
    assert_int_equal(bi.n_gpus, 0);
    assert_non_null(strstr(bi.reason, "no job used it"));
}

static void each_occurrence_is_admitted_or_refused_on_its_own(void **state)
{
    tb_world *w = *state;
    one_node(w);
    /* Monday 1970-01-05 09:00 .. 18:00 UTC, weekdays for two weeks */
    int64_t mon = 345600 + 9 * H;
    assert_int_equal(book(w, spec("wed", "a/t", 1, 8, mon + 2 * 86400, mon + 2 * 86400 + 9 * H), 0, NULL), GP_OK);
    gp_booking_spec s = spec("surge", "a/t", 1, 8, mon, mon + 9 * H);
    s.recurrence = GP_RECUR_WEEKDAYS;
    s.until = mon + 14 * 86400;
    gp_booking_result r;
    assert_int_equal(book(w, s, 0, &r), GP_OK);
    assert_int_equal(r.occurrences, 10);
    assert_int_equal(r.accepted, 9); /* Wednesday of week one is "wed"'s */
    assert_string_equal(r.first_refused, "surge.3");
    assert_int_equal(info(w, "surge.3").state, GP_BOOKING_REFUSED);
    assert_int_equal(info(w, "surge.6").start, mon + 7 * 86400); /* the next Monday: no weekend */
    gp_error err;
    assert_int_equal(gp_engine_booking_cancel(w->e, "surge", 1, &err), GP_OK);
    assert_int_equal(info(w, "surge.1").state, GP_BOOKING_CANCELLED);
}

static void a_lost_node_is_substituted_or_the_booking_says_it_is_short(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "a", "H100", 8, -1);
    tb_tenant(w, "a/t", "H100", -1, -1);
    assert_int_equal(book(w, spec("pre", "a/t", 1, 8, 100, 5000), 0, NULL), GP_OK);
    uint32_t g[8];
    gp_engine_booking_gpus(w->e, "pre", g, 8);
    gp_node_info n;
    assert_true(gp_engine_node_get(w->e, tb_gpu(w, g[0]).node, &n));
    gp_error err;
    assert_int_equal(gp_engine_node_lost(w->e, n.name, 10, &err), GP_OK);
    gp_booking_info bi = info(w, "pre");
    assert_int_equal(bi.substitutions, 8);
    assert_int_equal(bi.gpus_short, 0);
    gp_engine_booking_gpus(w->e, "pre", g, 8);
    assert_true(gp_engine_node_get(w->e, tb_gpu(w, g[0]).node, &n));
    assert_int_equal(gp_engine_node_lost(w->e, n.name, 11, &err), GP_OK);
    assert_int_equal(info(w, "pre").gpus_short, 8);
    gp_error chk;
    assert_int_equal(gp_engine_check_invariants(w->e, &chk), GP_OK);
}

static void shorten_always_extend_only_when_free(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "a", "H100", 8, -1);
    tb_tenant(w, "a/t", "H100", -1, -1);
    assert_int_equal(book(w, spec("one", "a/t", 1, 8, 100, 1000), 0, NULL), GP_OK);
    assert_int_equal(book(w, spec("two", "a/t", 1, 8, 1000, 2000), 0, NULL), GP_OK);
    gp_error err;
    gp_booking_change c = {.has_end = true, .end = 1500};
    assert_int_equal(gp_engine_booking_change(w->e, "one", &c, 1, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "end");
    c.end = 800;
    assert_int_equal(gp_engine_booking_change(w->e, "one", &c, 1, &err), GP_OK);
    c.end = 1000;
    assert_int_equal(gp_engine_booking_change(w->e, "one", &c, 2, &err), GP_OK);
    assert_int_equal(info(w, "one").end, 1000);
}

static void bad_input_changes_nothing(void **state)
{
    tb_world *w = *state;
    fleet(w);
    gp_error err;
    gp_booking_spec s = spec("bad name!", "a/t", 1, 8, 100, 200);
    assert_int_equal(gp_engine_booking_add(w->e, &s, 0, NULL, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "name");
    s = spec("ok", "a/t", 1, 8, 200, 100);
    assert_int_equal(gp_engine_booking_add(w->e, &s, 0, NULL, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "end");
    s = spec("ok", "nobody", 1, 8, 100, 200);
    assert_int_equal(gp_engine_booking_add(w->e, &s, 0, NULL, &err), GP_ERR_NOT_FOUND);
    s = spec("ok", "a", 1, 8, 100, 200);
    assert_int_equal(gp_engine_booking_add(w->e, &s, 0, NULL, &err), GP_ERR_INVALID);
    assert_int_equal(gp_engine_booking_count(w->e), 0);
    s = spec("ok", "a/t", 1, 8, 100, 200);
    assert_int_equal(gp_engine_booking_add(w->e, &s, 0, NULL, &err), GP_OK);
    assert_int_equal(gp_engine_booking_add(w->e, &s, 0, NULL, &err), GP_ERR_EXISTS);
    assert_int_equal(gp_engine_booking_count(w->e), 1);
}

static void a_snapshot_keeps_the_bookings(void **state)
{
    tb_world *w = *state;
    fleet(w);
    assert_int_equal(book(w, spec("pre", "a/t", 2, 8, 100, 5000), 0, NULL), GP_OK);
    gp_engine_decisions_clear(w->e);
    unsigned char *buf;
    size_t len;
    gp_error err;
    assert_int_equal(gp_engine_snapshot_write(w->e, &buf, &len, &err), GP_OK);
    gp_engine *copy;
    assert_int_equal(gp_engine_snapshot_read(buf, len, NULL, &copy, &err), GP_OK);
    free(buf);
    assert_int_equal(gp_engine_check_invariants(copy, &err), GP_OK);
    gp_booking_info bi;
    assert_int_equal(gp_engine_booking_get(copy, "pre", &bi, &err), GP_OK);
    assert_int_equal(bi.n_gpus, 16);
    uint32_t a[16], b[16];
    gp_engine_booking_gpus(w->e, "pre", a, 16);
    gp_engine_booking_gpus(copy, "pre", b, 16);
    assert_memory_equal(a, b, sizeof a);
    gp_engine_free(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(inside_the_guarantee_is_free_beyond_it_needs_an_allowance, tb_setup,
                                        tb_teardown),
        cmocka_unit_test_setup_teardown(no_two_bookings_hold_a_gpu_at_once, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(borrowers_are_cleared_by_the_start_and_unbounded_jobs_stay_off, tb_setup,
                                        tb_teardown),
        cmocka_unit_test_setup_teardown(a_job_without_a_limit_stays_off_booked_gpus, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(a_booking_that_does_not_lend_keeps_its_gpus_idle, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(a_job_of_the_booking_waits_for_it_then_runs_on_its_gpus, tb_setup,
                                        tb_teardown),
        cmocka_unit_test_setup_teardown(a_booking_nobody_uses_is_released, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(each_occurrence_is_admitted_or_refused_on_its_own, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(a_lost_node_is_substituted_or_the_booking_says_it_is_short, tb_setup,
                                        tb_teardown),
        cmocka_unit_test_setup_teardown(shorten_always_extend_only_when_free, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(bad_input_changes_nothing, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(a_snapshot_keeps_the_bookings, tb_setup, tb_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
