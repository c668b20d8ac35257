/* test_booking_properties.c - randomized property tests of advance bookings.
 *
 * Every sequence builds 3 nodes of 8 H100 and tenants a (guarantee 8,
 * allowance 50 GPU-hours a week), b (guarantee 8), c (none), leaves a/x,
 * b/x, c/x.  Then 80 random steps, time moving 0-300 s each (ticked every
 * 10 s on the way): bookings of
 * whole nodes (1-2 x 8, lent or not, some daily), cancels, shortenings
 * and extensions, job submits (1-8 GPUs, grace 0-60 s, a time limit or
 * none, some naming a booking of their tenant), finishes, node losses and
 * returns; a tick after each.  Checked after every step:
 *   invariants  gp_engine_check_invariants() == GP_OK, which includes: no
 *               two live bookings hold one GPU in overlapping windows, and
 *               bookings inside a guarantee never exceed it;
 *   cleared     an active booking, one grace (60 s) and one tick interval
 *               (ticks come at least every 10 s, as gpupoold's do) after its start
 *               (or after GPUs were substituted into it: its last note), has
 *               no job of others on its GPUs, except, when it lends, jobs
 *               placed there after its start (borrowers of idle GPUs), and
 *               the occupants of GPUs substituted into it after a loss
 *               (they become borrowers: reclaimed when its jobs need them);
 * and at the end:
 *   progress    with every booking over, finishing every running job and
 *               ticking, round after round, places every job submitted
 *               (no job starves behind an expired booking).
 *
 * Bookings here are whole nodes: the pass keeps jobs off booked GPUs at
 * node granularity (docs/booking.md), which a booking of part of a node
 * shared with another booking would not respect.
 *
 * Environment: GP_PROPERTY_SEQUENCES (default 200), GP_PROPERTY_SEED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prop_env.h"
#include "core/engine.h"
#include "support/fleet_builder.h"

#define DEFAULT_SEQUENCES 200
#define DEFAULT_SEED 0x626f6f6bULL
#define MAX_JOBS 128
#define MAX_BOOKINGS 64
#define GRACE_MAX 60
#define TICK_EVERY 10 /* the driver ticks at least this often (gpupoold: every second) */

static const char *const LEAVES[] = {"a/x", "b/x", "c/x"};

typedef struct world {
    tb_world *tb;
    uint64_t rng;
    int64_t now;
    uint64_t ids[MAX_JOBS];
    char job_booking[MAX_JOBS][GP_BOOKING_NAME_MAX + 8];
    size_t n_jobs;
    int n_bookings;
    char where[160];
} world;

static uint64_t next(world *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static int pick(world *w, int n)
{
    return (int)(next(w) % (uint64_t)n);
}

static void check(world *w)
{
    gp_error err;
    if (gp_engine_check_invariants(w->tb->e, &err) != GP_OK)
        fail_msg("%s: invariant: %s", w->where, err.message);
}

static const char *booking_of(const world *w, uint64_t job)
{
    for (size_t i = 0; i < w->n_jobs; i++)
        if (w->ids[i] == job)
            return w->job_booking[i];
    return "";
}

/* cleared: see the header. */
static void check_cleared(world *w)
{
    gp_engine *e = w->tb->e;
    for (size_t i = 0; i < gp_engine_booking_count(e); i++) {
        gp_booking_info b;
        assert_true(gp_engine_booking_at(e, i, &b));
        int64_t since = b.start; /* or its last note: GPUs substituted after a loss are cleared from then */
        int kept = b.n_history < GP_BOOKING_HISTORY ? b.n_history : GP_BOOKING_HISTORY;
        for (int h = 0; h < kept; h++)
            if (b.history[h].from == b.history[h].to && b.history[h].time > since)
                since = b.history[h].time;
        if (b.state != GP_BOOKING_ACTIVE || w->now < since + GRACE_MAX + TICK_EVERY + 1)
            continue;
        uint32_t g[32];
        size_t n = gp_engine_booking_gpus(e, b.name, g, 32);
        for (size_t k = 0; k < n && k < 32; k++) {
            gp_gpu_info gi;
            assert_true(gp_engine_gpu_get(e, g[k], &gi));
            if (gi.job == 0 || strcmp(booking_of(w, gi.job), b.name) == 0)
                continue;
            gp_job_info ji;
            gp_error err;
            assert_int_equal(gp_engine_job_info(e, gi.job, &ji, &err), GP_OK);
            if (!b.lend || (ji.bind_time < b.start && since == b.start))
                fail_msg("%s: t=%lld job %llu (bound at %lld) holds GPU %u of booking %s (start %lld, lend %d)",
                         w->where, (long long)w->now, (unsigned long long)gi.job, (long long)ji.bind_time, g[k],
                         b.name, (long long)b.start, b.lend);
        }
    }
}

static void step_book(world *w)
{
    char name[16];
    snprintf(name, sizeof name, "b%d", w->n_bookings++);
    gp_booking_spec s = {.name = name, .tenant = LEAVES[pick(w, 3)], .replicas = 1 + pick(w, 2), .gpus = 8,
                         .lend = pick(w, 2), .no_show_s = 600};
    s.start = w->now + pick(w, 3000);
    s.end = s.start + 300 + pick(w, 2700);
    if (pick(w, 10) == 0) {
        s.recurrence = GP_RECUR_DAILY;
        s.until = s.start + 3 * 86400;
    }
    gp_error err;
    gp_engine_booking_add(w->tb->e, &s, w->now, NULL, &err); /* refusals are fine */
}

static void step_change(world *w, bool cancel)
{
    size_t n = gp_engine_booking_count(w->tb->e);
    if (n == 0)
        return;
    gp_booking_info b;
    assert_true(gp_engine_booking_at(w->tb->e, (size_t)pick(w, (int)n), &b));
    gp_error err;
    if (cancel) {
        gp_engine_booking_cancel(w->tb->e, b.name, w->now, &err);
        return;
    }
    gp_booking_change c = {.has_end = true, .end = b.end + pick(w, 2000) - 1000};
    gp_engine_booking_change(w->tb->e, b.name, &c, w->now, &err);
}

/* A live booking of `tenant`, or NULL. */
static const char *live_booking(world *w, const char *tenant, char *buf, size_t cap)
{
    uint32_t t = tb_tenant_index(w->tb, tenant);
    for (size_t i = 0; i < gp_engine_booking_count(w->tb->e); i++) {
        gp_booking_info b;
        assert_true(gp_engine_booking_at(w->tb->e, i, &b));
        if (b.tenant == t && b.state <= GP_BOOKING_ACTIVE) {
            snprintf(buf, cap, "%s", b.name);
            return buf;
        }
    }
    return NULL;
}

static void step_submit(world *w)
{
    if (w->n_jobs >= MAX_JOBS)
        return;
    uint64_t id = w->n_jobs + 1;
    const char *leaf = LEAVES[pick(w, 3)];
    gp_job_spec s = tb_job(id, leaf, pick(w, GRACE_MAX + 1));
    s.gpus = 1 + pick(w, 8);
    s.time_limit_s = pick(w, 3) == 0 ? 0 : 300 + pick(w, 2700);
    char name[GP_BOOKING_NAME_MAX + 8];
    if (pick(w, 3) == 0)
        s.booking = live_booking(w, leaf, name, sizeof name);
    gp_error err;
    if (gp_engine_job_submit(w->tb->e, &s, w->now, &err) != GP_OK)
        return;
    w->ids[w->n_jobs] = id;
    snprintf(w->job_booking[w->n_jobs], sizeof w->job_booking[0], "%s", s.booking ? s.booking : "");
    w->n_jobs++;
}

static void step_finish(world *w)
{
    if (w->n_jobs == 0)
        return;
    uint64_t id = w->ids[pick(w, (int)w->n_jobs)];
    gp_job_info ji;
    gp_error err;
    if (gp_engine_job_info(w->tb->e, id, &ji, &err) == GP_OK && ji.state == GP_JOB_RUNNING)
        gp_engine_job_finished(w->tb->e, id, GP_EXIT_SUCCEEDED, w->now, &err);
}

static void step_node(world *w)
{
    char name[16];
    int k = pick(w, 3);
    gp_node_info ni;
    assert_true(gp_engine_node_get(w->tb->e, (uint32_t)k, &ni));
    snprintf(name, sizeof name, "%s", ni.name);
    gp_error err;
    if (ni.up) {
        assert_int_equal(gp_engine_node_lost(w->tb->e, name, w->now, &err), GP_OK);
    } else {
        gp_node_spec s = tb_node_spec(name, "H100", 8, "b0");
        assert_int_equal(gp_engine_node_add(w->tb->e, &s, w->now, &err), GP_OK);
    }
}

static void tick(world *w)
{
    gp_error err;
    gp_engine_decisions_clear(w->tb->e);
    if (gp_engine_tick(w->tb->e, w->now, &err) != GP_OK)
        fail_msg("%s: tick: %s", w->where, err.message);
    check(w);
    check_cleared(w);
}

/* progress: see the header. */
static void check_progress(world *w)
{
    w->now += 40 * 86400; /* past every booking (daily ones end within 4 days) */
    for (int round = 0; round < 3 * MAX_JOBS; round++) {
        tick(w);
        bool waiting = false;
        for (size_t i = 0; i < w->n_jobs; i++) {
            gp_job_info ji;
            gp_error err;
            assert_int_equal(gp_engine_job_info(w->tb->e, w->ids[i], &ji, &err), GP_OK);
            if (ji.state == GP_JOB_RUNNING)
                gp_engine_job_finished(w->tb->e, w->ids[i], GP_EXIT_SUCCEEDED, w->now, &err);
            waiting |= ji.state == GP_JOB_PENDING || ji.state == GP_JOB_PREEMPTING || ji.state == GP_JOB_RUNNING;
        }
        if (!waiting)
            return;
        w->now += 100;
    }
    fail_msg("%s: jobs still wait after every booking ended and everything else finished", w->where);
}

static void one_sequence(uint64_t seed)
{
    world w = {.rng = seed ? seed : 1};
    snprintf(w.where, sizeof w.where, "seed %llu", (unsigned long long)seed);
    w.tb = tb_new();
    tb_add_nodes(w.tb, 3, "H100", 8, "b0", "z0");
    tb_tenant(w.tb, "a", "H100", 8, -1);
    tb_tenant(w.tb, "a/x", "H100", -1, -1);
    tb_tenant(w.tb, "b", "H100", 8, -1);
    tb_tenant(w.tb, "b/x", "H100", -1, -1);
    tb_tenant(w.tb, "c", "H100", -1, -1);
    tb_tenant(w.tb, "c/x", "H100", -1, -1);
    gp_error err;
    assert_int_equal(gp_engine_booking_allowance_set(w.tb->e, "a", 50, 0, &err), GP_OK);
    for (int i = 0; i < 80; i++) {
        for (int64_t until = w.now + pick(&w, 301); w.now + TICK_EVERY < until;) {
            w.now += TICK_EVERY;
            tick(&w);
        }
        int r = pick(&w, 100);
        if (r < 20)
            step_book(&w);
        else if (r < 30)
            step_change(&w, true);
        else if (r < 35)
            step_change(&w, false);
        else if (r < 70)
            step_submit(&w);
        else if (r < 92)
            step_finish(&w);
        else
            step_node(&w);
        tick(&w);
    }
    for (int k = 0; k < 3; k++) { /* every node back for the progress check */
        gp_node_info ni;
        assert_true(gp_engine_node_get(w.tb->e, (uint32_t)k, &ni));
        gp_node_spec s = tb_node_spec(ni.name, "H100", 8, "b0");
        if (!ni.up)
            assert_int_equal(gp_engine_node_add(w.tb->e, &s, w.now, &err), GP_OK);
    }
    check_progress(&w);
    tb_free(w.tb);
}

static void bookings_hold_under_random_events(void **state)
{
    (void)state;
    uint64_t n = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", DEFAULT_SEQUENCES);
    uint64_t seed = gp_prop_env_u64("GP_PROPERTY_SEED", DEFAULT_SEED);
    for (uint64_t i = 0; i < n; i++)
        one_sequence(seed + i * 0x9e3779b97f4a7c15ULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bookings_hold_under_random_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
