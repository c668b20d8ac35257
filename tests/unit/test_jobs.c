/* test_jobs.c - job spec validation and the job lifecycle.
 *
 * Semantics under test (types.h, engine.h, docs/scheduling.md "Jobs: states
 * and events", docs/architecture.md "The event interface"): a bad spec is
 * rejected with the right code and `field` named as the caller spelled it,
 * and nothing changes; cancel of a pending job cancels at once, of a running
 * job emits STOP with its grace, the job is PREEMPTING, then CANCELLED when
 * the grace ends or the node reports it stopped; finish releases GPUs at
 * once (STOPPED without a request counts as FAILED); time never goes
 * backwards (GP_ERR_TIME); gp_engine_why explains every state; history keeps
 * the transitions with reasons; a leaf's queue stays in (priority desc,
 * submit time, id) order through inserts and removes at its head, its tail
 * and its middle (jobs.c moves the shorter side of the array), and a pass
 * binds its jobs in that order.
 *
 * Fleet: one node of 8 H100.  Tenants: "org" (not a leaf) and "org/team".
 */
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
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, LEAF, "H100", -1, -1);
}

/* Submits `spec`, expects `code` with `field`, and checks nothing changed. */
static void expect_rejected(tb_world *w, const gp_job_spec *spec, gp_err code, const char *field)
{
    gp_engine_stats before, after;
    gp_engine_stats_get(w->e, &before);
    int pending_before = tb_tenant_info(w, LEAF).pending_jobs;
    gp_error err;
    gp_error_clear(&err);
    /* the check without submit gives the same answer and changes nothing */
    assert_int_equal(gp_engine_job_check(w->e, spec, &err), code);
    assert_string_equal(err.field, field);
    gp_error_clear(&err);
    gp_err rc = tb_submit_spec(w, spec, 0, &err);
    if (rc != code)
        fail_msg("got %s (%s: %s), want %s", gp_err_name(rc), err.field, err.message, gp_err_name(code));
    assert_int_equal(err.code, code);
    assert_string_equal(err.field, field);
    assert_true(err.message[0] != '\0');
    gp_engine_stats_get(w->e, &after);
    assert_int_equal(after.jobs, before.jobs);
    assert_int_equal(after.pending, before.pending);
    assert_int_equal(tb_tenant_info(w, LEAF).pending_jobs, pending_before);
}

static void a_valid_spec_passes_the_check_and_nothing_changes(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    gp_error err;
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_OK);
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    assert_int_equal(st.jobs, 0);
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_OK);
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_ERR_EXISTS); /* the id is taken now */
}

/* The ledger's open record takes a job's user from the engine (no read of
 * the jobs table in the middle of a batch). */
static void a_jobs_user_is_the_one_it_was_submitted_with(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.user = "ann";
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_OK);
    gp_job_spec t = tb_job(2, LEAF, 0);
    assert_int_equal(tb_submit_spec(w, &t, 0, &err), GP_OK);
    assert_string_equal(gp_engine_job_user(w->e, 1), "ann");
    assert_null(gp_engine_job_user(w->e, 2)); /* submitted without one */
    assert_null(gp_engine_job_user(w->e, 3)); /* no such job */
}

static void expect_unknown(tb_world *w, uint64_t id)
{
    gp_job_info info;
    assert_int_equal(gp_engine_job_info(w->e, id, &info, NULL), GP_ERR_NOT_FOUND);
}

/* ---- validation ---- */

static void replicas_out_of_range_are_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.replicas = 0;
    expect_rejected(w, &s, GP_ERR_INVALID, "replicas");
    s.replicas = 5000; /* > GP_MAX_REPLICAS */
    expect_rejected(w, &s, GP_ERR_INVALID, "replicas");
    expect_unknown(w, 1);
}

static void gpus_out_of_range_are_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.gpus = -1; /* 0 is a CPU-only job */
    expect_rejected(w, &s, GP_ERR_INVALID, "gpus");
    s.gpus = 17; /* > GP_MAX_GPUS_PER_NODE */
    expect_rejected(w, &s, GP_ERR_INVALID, "gpus");
    expect_unknown(w, 1);
}

static void unknown_tenant_is_not_found(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, "org/ghost", 0);
    expect_rejected(w, &s, GP_ERR_NOT_FOUND, "tenant");
    expect_unknown(w, 1);
}

static void non_leaf_tenant_is_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, "org", 0); /* has child org/team */
    expect_rejected(w, &s, GP_ERR_INVALID, "tenant");
    expect_unknown(w, 1);
}

static void duplicate_id_exists_and_keeps_the_first(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 2, 0);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.replicas = 3;
    expect_rejected(w, &s, GP_ERR_EXISTS, "id");
    gp_job_info info = tb_info(w, 1);
    assert_int_equal(info.replicas, 1);
    assert_int_equal(info.gpus, 2);
}

static void id_zero_is_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(0, LEAF, 0);
    expect_rejected(w, &s, GP_ERR_INVALID, "id");
}

static void negative_cpu_and_mem_are_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.cpu_millis = -1;
    expect_rejected(w, &s, GP_ERR_INVALID, "cpu_millis");
    s = tb_job(1, LEAF, 0);
    s.mem_mib = -1;
    expect_rejected(w, &s, GP_ERR_INVALID, "mem_mib");
    expect_unknown(w, 1);
}

static void priority_out_of_range_is_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.priority = GP_PRIORITY_MAX + 1;
    expect_rejected(w, &s, GP_ERR_INVALID, "priority");
    s.priority = GP_PRIORITY_MIN - 1;
    expect_rejected(w, &s, GP_ERR_INVALID, "priority");
}

static void grace_out_of_range_is_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, -1);
    expect_rejected(w, &s, GP_ERR_INVALID, "checkpoint_grace_s");
    s.checkpoint_grace_s = GP_GRACE_MAX_S + 1;
    expect_rejected(w, &s, GP_ERR_INVALID, "checkpoint_grace_s");
}

static void unknown_enum_values_are_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.isolation = (gp_isolation)42;
    expect_rejected(w, &s, GP_ERR_INVALID, "isolation");
    s = tb_job(1, LEAF, 0);
    s.topology = (gp_topology)9;
    expect_rejected(w, &s, GP_ERR_INVALID, "topology");
    s = tb_job(1, LEAF, 0);
    s.kind = (gp_job_kind)7;
    expect_rejected(w, &s, GP_ERR_INVALID, "kind");
}

/* A share needs its size; each kind of share checks its own field. */
static void gpu_shares_without_a_valid_size_are_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.isolation = GP_ISO_MIG; /* no profile */
    expect_rejected(w, &s, GP_ERR_INVALID, "share.mig");
    snprintf(s.share.mig_profile, sizeof s.share.mig_profile, "9g.99gb");
    expect_rejected(w, &s, GP_ERR_INVALID, "share.mig");
    s = tb_job(1, LEAF, 0);
    s.isolation = GP_ISO_MPS; /* no percentage */
    expect_rejected(w, &s, GP_ERR_INVALID, "share.mps");
    s.share.mps_milli = 1001;
    expect_rejected(w, &s, GP_ERR_INVALID, "share.mps");
    s.share.mps_milli = 250;
    s.gpus = 2; /* a share is of one GPU */
    expect_rejected(w, &s, GP_ERR_INVALID, "gpus");
    s = tb_job(1, LEAF, 0);
    s.isolation = GP_ISO_TIMESLICE; /* tb_job makes training work */
    expect_rejected(w, &s, GP_ERR_INVALID, "isolation");
    expect_unknown(w, 1);
}

static void negative_expected_runtime_is_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.expected_runtime_s = -5;
    expect_rejected(w, &s, GP_ERR_INVALID, "expected_runtime_s");
}

static void too_many_gpu_types_are_invalid(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 0);
    s.n_gpu_types = GP_MAX_GPU_TYPES + 1;
    expect_rejected(w, &s, GP_ERR_INVALID, "gpu_types");
    s.n_gpu_types = -1;
    expect_rejected(w, &s, GP_ERR_INVALID, "gpu_types");
}

static void boundary_values_are_accepted(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, GP_GRACE_MAX_S);
    s.replicas = GP_MAX_REPLICAS;
    s.gpus = GP_MAX_GPUS_PER_NODE;
    s.priority = GP_PRIORITY_MAX;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    s = tb_job(2, LEAF, 0);
    s.priority = GP_PRIORITY_MIN;
    s.cpu_millis = 0;
    s.mem_mib = 0;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    assert_int_equal(st.jobs, 2);
    assert_int_equal(st.pending, 2);
}

/* ---- bind ---- */

static void bind_emits_bind_transitions_and_usage(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 2, 3, 0);
    tb_tick(w, 7, GP_DEC_BIND);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_BIND), 1);
    assert_int_equal(tb_find(w, 1, GP_DEC_BIND)->time, 7);
    const gp_decision *admitted = tb_find_transition(w, 1, GP_JOB_PENDING, GP_JOB_ADMITTED);
    const gp_decision *running = tb_find_transition(w, 1, GP_JOB_ADMITTED, GP_JOB_RUNNING);
    assert_non_null(admitted);
    assert_non_null(running);
    assert_true(running > admitted); /* in this order, in one array */
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_USAGE_OPEN), 1);
    gp_job_info info = tb_info(w, 1);
    assert_int_equal(info.state, GP_JOB_RUNNING);
    assert_int_equal(info.bind_time, 7);
    assert_int_equal(info.submit_time, 0);
    assert_int_equal(info.gpu_type, 0);
    uint32_t gpus[6];
    assert_int_equal(gp_engine_job_gpus(w->e, 1, gpus, 6), 6);
    tb_assert_gpus_consistent(w);
}

static void stats_count_jobs_and_gpus(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 4, 0);
    tb_submit(w, 2, LEAF, 1, 2, 0);
    tb_submit(w, 3, LEAF, 1, 4, 0); /* 4 + 2 + 4 > 8: waits */
    tb_advance(w, 0);
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    assert_int_equal(st.jobs, 3);
    assert_int_equal(st.running, 2);
    assert_int_equal(st.pending, 1);
    assert_int_equal(st.gpus_total, 8);
    assert_int_equal(st.gpus_healthy, 8);
    assert_int_equal(st.gpus_allocated, 6);
    assert_int_equal(st.pass_placed, 2);
    assert_int_equal(st.total_placed, 2);
    assert_int_equal(tb_tenant_info(w, LEAF).running_jobs, 2);
    assert_int_equal(tb_tenant_info(w, LEAF).pending_jobs, 1);
}

/* ---- cancel ---- */

static void cancel_pending_job_cancels_at_once(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 1, 0);
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 5, NULL), GP_OK);
    assert_int_equal(tb_state(w, 1), GP_JOB_CANCELLED);
    assert_non_null(tb_find_transition(w, 1, GP_JOB_PENDING, GP_JOB_CANCELLED));
    assert_null(tb_find(w, 1, GP_DEC_STOP));
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    assert_int_equal(st.pending, 0);
}

static void cancel_running_job_stops_with_grace_then_cancels(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 30);
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    uint32_t gpu;
    assert_int_equal(gp_engine_job_gpus(w->e, 1, &gpu, 1), 1);

    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 100, NULL), GP_OK);
    const gp_decision *stop = tb_find(w, 1, GP_DEC_STOP);
    assert_non_null(stop);
    assert_int_equal(stop->grace_s, 30);
    assert_int_equal(stop->time, 100);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    assert_int_equal(tb_gpu(w, gpu).job, 1); /* held during the grace */

    tb_tick(w, 129, GP_DEC_TRANSITION);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    tb_tick(w, 130, GP_DEC_TRANSITION);
    assert_int_equal(tb_state(w, 1), GP_JOB_CANCELLED);
    assert_non_null(tb_find_transition(w, 1, GP_JOB_PREEMPTING, GP_JOB_CANCELLED));
    assert_int_equal(tb_gpu(w, gpu).job, 0);
    const gp_decision *close = tb_find(w, 1, GP_DEC_USAGE_CLOSE);
    assert_non_null(close);
    assert_int_equal(close->usage.end, 130);
}

static void cancelled_job_ends_early_when_node_reports_stopped(void **state)
{
    tb_world *w = *state;
    base(w);
    gp_job_spec s = tb_job(1, LEAF, 300);
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 100, NULL), GP_OK);
    tb_finish(w, 1, GP_EXIT_STOPPED, 110);
    assert_int_equal(tb_state(w, 1), GP_JOB_CANCELLED);
    assert_int_equal(tb_free_gpus(w), 8);
}

static void cancel_of_final_or_unknown_job_is_refused(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 1, 0);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 0, NULL), GP_OK);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 0, NULL), GP_ERR_CONFLICT);
    assert_int_equal(gp_engine_job_cancel(w->e, 99, 0, NULL), GP_ERR_NOT_FOUND);
}

/* ---- finish ---- */

static void finish_releases_gpus_at_once(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 8, 0);
    tb_submit(w, 2, LEAF, 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 50);
    assert_int_equal(tb_state(w, 1), GP_JOB_SUCCEEDED);
    assert_non_null(tb_find_transition(w, 1, GP_JOB_RUNNING, GP_JOB_SUCCEEDED));
    assert_int_equal(tb_free_gpus(w), 8); /* before any tick */
    assert_int_equal(tb_tick(w, 50, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_BIND));
}

static void finish_failed_and_unrequested_stop_are_failed(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit_many(w, 1, 2, LEAF, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    tb_finish(w, 1, GP_EXIT_FAILED, 10);
    tb_finish(w, 2, GP_EXIT_STOPPED, 10); /* nobody asked it to stop */
    assert_int_equal(tb_state(w, 1), GP_JOB_FAILED);
    assert_int_equal(tb_state(w, 2), GP_JOB_FAILED);
    assert_int_equal(tb_free_gpus(w), 8);
}

static void finish_of_pending_job_conflicts(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 1, 0);
    assert_int_equal(gp_engine_job_finished(w->e, 1, GP_EXIT_SUCCEEDED, 5, NULL), GP_ERR_CONFLICT);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
}

static void forget_drops_final_jobs_only(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit_many(w, 1, 2, LEAF, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(gp_engine_job_forget(w->e, 1, NULL), GP_OK);
    expect_unknown(w, 1);
    assert_int_equal(gp_engine_job_forget(w->e, 2, NULL), GP_ERR_CONFLICT);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

/* ---- time ---- */

static void time_going_backwards_is_refused(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 1, 0);
    tb_advance(w, 100);
    gp_job_spec s = tb_job(2, LEAF, 0);
    assert_int_equal(tb_submit_spec(w, &s, 50, NULL), GP_ERR_TIME);
    expect_unknown(w, 2);
    assert_int_equal(gp_engine_tick(w->e, 99, NULL), GP_ERR_TIME);
    assert_int_equal(gp_engine_job_cancel(w->e, 1, 50, NULL), GP_ERR_TIME);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_int_equal(gp_engine_now(w->e), 100);
    tb_advance(w, 100); /* the same second again is fine */
}

/* ---- why and history ---- */

static void assert_why_says_something(tb_world *w, uint64_t id)
{
    char buf[GP_REASON_MAX * 2];
    size_t n = gp_engine_why(w->e, id, buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal(strlen(buf), n < sizeof buf ? n : sizeof buf - 1);
}

static void why_explains_pending_running_and_preempted_jobs(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_tenant(w, "owner", "H100", 4, -1);
    gp_job_spec s = tb_job(1, LEAF, 60);
    s.gpus = 8;
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);
    tb_submit(w, 2, LEAF, 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_why_says_something(w, 1); /* running */
    assert_why_says_something(w, 2); /* pending: no capacity */

    tb_submit(w, 3, "owner", 1, 4, 100); /* reclaims from job 1 */
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    assert_why_says_something(w, 1); /* preempting */
    assert_why_says_something(w, 3); /* waiting for reclaim */
    tb_tick(w, 160, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_why_says_something(w, 1); /* preempted, requeued */
}

static void why_returns_the_full_length_like_snprintf(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 1, 0);
    tb_advance(w, 0);
    char full[512], small[8];
    size_t n = gp_engine_why(w->e, 1, full, sizeof full);
    assert_true(n > 7);
    assert_int_equal(gp_engine_why(w->e, 1, small, sizeof small), n);
    assert_int_equal(strlen(small), 7);
    assert_memory_equal(small, full, 7);
}

static void history_records_transitions_with_reasons(void **state)
{
    tb_world *w = *state;
    base(w);
    tb_submit(w, 1, LEAF, 1, 1, 0);
    assert_int_equal(tb_tick(w, 5, GP_DEC_BIND), 1);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 50);

    gp_history_entry h[16];
    size_t n = gp_engine_job_history(w->e, 1, h, 16);
    const struct {
        gp_job_state from, to;
        int64_t time;
    } want[] = {
        {GP_JOB_PENDING, GP_JOB_ADMITTED, 5},
        {GP_JOB_ADMITTED, GP_JOB_RUNNING, 5},
        {GP_JOB_RUNNING, GP_JOB_SUCCEEDED, 50},
    };
    size_t k = 0;
    for (size_t i = 0; i < n && k < 3; i++) {
        assert_true(h[i].reason[0] != '\0');
        if (h[i].from == want[k].from && h[i].to == want[k].to) {
            assert_int_equal(h[i].time, want[k].time);
            k++;
        }
    }
    if (k != 3)
        fail_msg("history has %zu entries; transition %zu of pending->admitted->running->succeeded missing", n, k);
    assert_true(tb_find_transition(w, 1, GP_JOB_RUNNING, GP_JOB_SUCCEEDED)->reason[0] != '\0');
}

/* ---- queue order ---- */

typedef struct queued {
    int priority;
    int64_t submit;
    uint64_t id;
} queued;

static int queue_order(const void *pa, const void *pb)
{
    const queued *a = pa, *b = pb;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* The model of the leaf's queue: live jobs kept sorted as the engine must. */
typedef struct queue_model {
    queued job[640];
    size_t n;
    uint64_t next_id;
} queue_model;

static void model_submit(tb_world *w, queue_model *m, int priority, int64_t now)
{
    gp_job_spec s = tb_job(m->next_id, LEAF, 0);
    s.priority = priority;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, now, &err), GP_OK);
    assert_true(m->n < sizeof m->job / sizeof m->job[0]);
    m->job[m->n++] = (queued){priority, now, m->next_id++};
    qsort(m->job, m->n, sizeof m->job[0], queue_order);
}

static void model_cancel_at(tb_world *w, queue_model *m, size_t k, int64_t now)
{
    assert_true(k < m->n);
    assert_int_equal(gp_engine_job_cancel(w->e, m->job[k].id, now, NULL), GP_OK);
    memmove(&m->job[k], &m->job[k + 1], (m->n - k - 1) * sizeof m->job[0]);
    m->n--;
}

/* The engine's own check covers "the queue holds exactly the pending jobs,
 * in queue order"; the tenant's count must match the model's. */
static void assert_queue_sound(tb_world *w, const queue_model *m)
{
    gp_error err;
    if (gp_engine_check_invariants(w->e, &err) != GP_OK)
        fail_msg("invariants: %s", err.message);
    assert_int_equal(tb_tenant_info(w, LEAF).pending_jobs, (int)m->n);
}

static void queue_keeps_its_order_through_inserts_and_removes_at_both_ends(void **state)
{
    tb_world *w = *state;
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, LEAF, "H100", -1, -1);
    queue_model m = {.n = 0, .next_id = 1};
    int64_t now = 0;
    /* grow it: each round one new head, one new tail, one among the heads
     * (priority 100 + r / 2, so the front side moves) and one in the middle
     * (priority 0 after the older priority-0 jobs); every third round the
     * head and the tail leave, every fourth the jobs a quarter from each
     * end, every fifth the middle job */
    for (int r = 0; r < 120; r++, now++) {
        model_submit(w, &m, 100 + r, now);
        model_submit(w, &m, -100 - r, now);
        model_submit(w, &m, 100 + r / 2, now);
        model_submit(w, &m, 0, now);
        if (r % 3 == 2) {
            model_cancel_at(w, &m, 0, now);
            model_cancel_at(w, &m, m.n - 1, now);
        }
        if (r % 4 == 3) {
            model_cancel_at(w, &m, m.n / 4, now);
            model_cancel_at(w, &m, m.n - 1 - m.n / 4, now);
        }
        if (r % 5 == 4)
            model_cancel_at(w, &m, m.n / 2, now);
        assert_queue_sound(w, &m);
    }
    /* drain it from the head to two jobs, then refill at the head and the tail */
    while (m.n > 2) {
        model_cancel_at(w, &m, 0, now);
        assert_queue_sound(w, &m);
    }
    for (int r = 0; r < 40; r++, now++) {
        model_submit(w, &m, 500 + r, now);
        model_submit(w, &m, -500 - r, now);
        assert_queue_sound(w, &m);
    }
    /* one pass with room for all: binds follow the queue, head first */
    tb_add_nodes(w, (int)(m.n + 7) / 8, "H100", 8, "b0", "z0");
    assert_int_equal(tb_tick(w, now, GP_DEC_BIND), m.n);
    uint64_t bound[sizeof m.job / sizeof m.job[0]];
    assert_int_equal(tb_bound_jobs(w, bound, m.n), m.n);
    for (size_t k = 0; k < m.n; k++)
        if (bound[k] != m.job[k].id)
            fail_msg("bind %zu is job %llu, want job %llu", k, (unsigned long long)bound[k],
                     (unsigned long long)m.job[k].id);
    assert_queue_sound(w, &(queue_model){.n = 0});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(replicas_out_of_range_are_invalid),
        TB_TEST(gpus_out_of_range_are_invalid),
        TB_TEST(unknown_tenant_is_not_found),
        TB_TEST(non_leaf_tenant_is_invalid),
        TB_TEST(duplicate_id_exists_and_keeps_the_first),
        TB_TEST(id_zero_is_invalid),
        TB_TEST(negative_cpu_and_mem_are_invalid),
        TB_TEST(priority_out_of_range_is_invalid),
        TB_TEST(grace_out_of_range_is_invalid),
        TB_TEST(unknown_enum_values_are_invalid),
        TB_TEST(gpu_shares_without_a_valid_size_are_invalid),
        TB_TEST(negative_expected_runtime_is_invalid),
        TB_TEST(too_many_gpu_types_are_invalid),
        TB_TEST(boundary_values_are_accepted),
        TB_TEST(bind_emits_bind_transitions_and_usage),
        TB_TEST(stats_count_jobs_and_gpus),
        TB_TEST(cancel_pending_job_cancels_at_once),
        TB_TEST(cancel_running_job_stops_with_grace_then_cancels),
        TB_TEST(cancelled_job_ends_early_when_node_reports_stopped),
        TB_TEST(cancel_of_final_or_unknown_job_is_refused),
        TB_TEST(finish_releases_gpus_at_once),
        TB_TEST(finish_failed_and_unrequested_stop_are_failed),
        TB_TEST(finish_of_pending_job_conflicts),
        TB_TEST(forget_drops_final_jobs_only),
        TB_TEST(time_going_backwards_is_refused),
        TB_TEST(why_explains_pending_running_and_preempted_jobs),
        TB_TEST(why_returns_the_full_length_like_snprintf),
        TB_TEST(history_records_transitions_with_reasons),
        TB_TEST(a_valid_spec_passes_the_check_and_nothing_changes),
        TB_TEST(a_jobs_user_is_the_one_it_was_submitted_with),
        TB_TEST(queue_keeps_its_order_through_inserts_and_removes_at_both_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
