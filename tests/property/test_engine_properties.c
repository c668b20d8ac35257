/* test_engine_properties.c - randomized property tests of the scheduling engine.
 *
 * Every sequence builds a small random fleet (2-6 fabric blocks of 2-6 nodes,
 * 4 or 8 GPUs a node, 1-3 GPU types, sometimes two NVLink domains a node;
 * in most fleets 10-50 % of the nodes in MIG (H100/A100), MPS or time-slice
 * mode) and a random tenant tree (1-3 orgs / 1-3 teams / 1-3 projects) whose
 * guarantees fit (sometimes none at all, sometimes lend=0, sometimes
 * limits, some untrusted), then feeds the engine 100-300 random events with
 * non-decreasing time: submits (whole GPUs with any/block/nvlink topology,
 * or MIG, MPS and time-slice shares; one or more accepted types; with a
 * user u0..u2 or none), cancels, finishes, checkpoints, node loss and
 * return, GPU health flips, drains, tenant changes mid-sequence (guarantee,
 * limit, lend, weight, trust, user limit; the engine may reject them),
 * moves of idle leaves under another team (remove and re-create: the
 * engine does not re-parent), deliberately invalid calls, forgets and
 * ticks.  A tick is also forced at every preemption / stop deadline that
 * time passes, exactly at it.
 *
 * The test keeps its own books, built only from what the engine emitted:
 * BIND (plus gp_engine_job_gpus() right after the event), PREEMPT, STOP,
 * TRANSITION and USAGE_OPEN / USAGE_CLOSE.  After every event it checks:
 *
 *  P1  no GPU is held by two live jobs (our GPU -> job map), and the map
 *      equals gp_engine_gpu_get(); held GPUs are healthy and on up nodes;
 *  P2  a bound job has exactly replicas x gpus distinct GPUs, each replica
 *      on one node, all of one accepted type, healthy and schedulable at
 *      bind time; BLOCK = one fabric block, NVLINK = one NVLink domain;
 *  P3  per tenant with a guarantee: guaranteed_usage <= guarantee on every
 *      dimension; per tenant: usage <= limit on every dimension (both
 *      skipped for a tenant whose own change put it over, until it is back
 *      under); usage / guaranteed_usage / pending_jobs equal our books;
 *  P4  guaranteed progress (condition documented at check_guarantee_progress);
 *  P5  metering: sum over intervals of milli_gpus x (end or now - start)
 *      equals our integral of allocated milli-GPU-seconds, and every bound
 *      job has exactly one open interval, every unbound job none;
 *  P6  no preemption loop: if A was preempted for B, B is not preempted for
 *      A within the cool-down (600 s);
 *  P7  gp_engine_check_invariants() == GP_OK;
 *  P8  trust and co-location (pe_check_sharing): effective trust is the
 *      floor of the tree (untrusted if the tenant or an ancestor says so),
 *      "trusted" below an untrusted ancestor is refused naming `trust`, a
 *      trust-only change is otherwise taken; an untrusted tenant's mps or
 *      timeslice submit is refused naming `isolation`; no untrusted tenant
 *      runs an MPS or time-slice share (one in its grace is leaving), its
 *      running MIG slice shares its GPU with no other tenant's; an MPS or
 *      time-sliced GPU holds one org and names it; shared GPUs' used_milli
 *      and jobs equal our slices; after a tick every pending mps/timeslice
 *      job of an untrusted tenant waits with GP_WAIT_TRUST (and only those);
 *      a PREEMPT by no job is a trust preemption of a shared job of an
 *      untrusted tenant with its checkpoint grace;
 *  P9  per-user limits: a user's usage in a leaf stays within the nearest
 *      user limit above it (skipped for a leaf a tenant change put over,
 *      until it is back under);
 * plus consistency of the decision stream (TRANSITION.from equals the state
 * we hold, decisions carry `now`, reclaim victims are running burstable jobs, a
 * preempting job is released at its deadline tick, rejected events emit
 * nothing and change nothing) and a determinism test (same seed, same
 * decision stream).
 *
 * Snapshots: the same sequence run again, its engine swapped at a random
 * event for the engine restored from its snapshot (gp_engine_snapshot_write
 * -> gp_engine_snapshot_read), must keep every property and emit exactly
 * the decision stream of the uninterrupted run (the hash of every field of
 * every decision, reasons included).
 *
 * Environment: GP_PROPERTY_SEQUENCES (default 1000), GP_PROPERTY_SEED (base
 * seed; sequence i uses base + i, so a failing sequence reproduces with
 * GP_PROPERTY_SEED=<its seed> GP_PROPERTY_SEQUENCES=1), GP_PROPERTY_VERBOSE=1
 * (print every event and decision), GP_PROPERTY_KEEP_GOING=1 (run all
 * sequences and report every failing seed instead of stopping at the first).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "prop_env.h"
#include "core/engine.h"

#include "support/prop_engine_model.h"

/* ---- events ------------------------------------------------------------- */

typedef enum ev_kind { EV_PLAIN = 0, EV_TICK, EV_CHANGE } ev_kind;

static void begin_event(sim *s, int64_t t)
{
    if (t < s->now)
        pe_sim_fail(s, "test bug: time goes back");
    s->alloc_integral += s->alloc_milli * (t - s->now);
    s->now = t;
    s->event_index++;
    s->counters->events++;
    pe_hash_i64(s, t);
}

/* The engine goes on as its own snapshot restored: written, read back
 * into a new engine, the old one freed. */
static void snapshot_swap(sim *s)
{
    unsigned char *buf;
    size_t len;
    gp_error err;
    if (gp_engine_snapshot_write(s->e, &buf, &len, &err) != GP_OK)
        pe_sim_fail(s, "gp_engine_snapshot_write: %s (%s)", err.message, err.field);
    gp_engine *restored;
    gp_engine_config cfg = gp_engine_config_default();
    gp_err rc = gp_engine_snapshot_read(buf, len, &cfg, &restored, &err);
    free(buf);
    if (rc != GP_OK)
        pe_sim_fail(s, "gp_engine_snapshot_read: %s (%s)", err.message, err.field);
    gp_engine_free(s->e);
    s->e = restored;
    pe_sim_log(s, "[%d] engine restored from a snapshot of %zu bytes", s->event_index, len);
    if (gp_engine_check_invariants(s->e, &err) != GP_OK)
        pe_sim_fail(s, "P7 after restore: gp_engine_check_invariants: %s (%s)", err.message, err.field);
}

static void end_event(sim *s, ev_kind kind)
{
    pe_process_decisions(s);
    gp_error err;
    if (gp_engine_check_invariants(s->e, &err) != GP_OK)
        pe_sim_fail(s, "P7: gp_engine_check_invariants: %s (%s)", err.message, err.field);
    pe_check_fleet(s);
    pe_check_jobs(s, kind == EV_TICK);
    pe_check_tenants(s);
    pe_check_sharing(s, kind == EV_TICK);
    pe_check_users(s);
    pe_check_metering(s);
    pe_check_guarantee_progress(s, kind == EV_TICK, kind == EV_CHANGE);
    if (s->event_index == s->snapshot_at)
        snapshot_swap(s);
}

/* An event the engine rejected must emit nothing. */
static void expect_no_decisions(sim *s, const char *what, gp_err rc)
{
    size_t n = 0;
    gp_engine_decisions(s->e, &n);
    if (n != 0)
        pe_sim_fail(s, "%s was rejected (%s) but emitted %zu decisions", what, gp_err_name(rc), n);
}

static void ev_tick(sim *s, int64_t t)
{
    /* The pass of this tick sees every job whose P4 window is open. */
    for (int i = 0; i < s->n_jobs; i++)
        if (s->jobs[i].elig_active && s->jobs[i].elig_t1 < 0) {
            s->jobs[i].elig_t1 = t;
            s->counters->p4_windows++;
        }
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " tick", s->event_index, t);
    gp_error err;
    gp_err rc = gp_engine_tick(s->e, t, &err);
    if (rc != GP_OK)
        pe_sim_fail(s, "gp_engine_tick: %s", err.message);
    end_event(s, EV_TICK);
}

/* Tick at every preemption / stop deadline up to t (exactly at it). */
static void advance_to(sim *s, int64_t t)
{
    for (int guard = 0; guard < 1000; guard++) {
        int64_t d = -1;
        for (int i = 0; i < s->n_jobs; i++) {
            const sim_job *j = &s->jobs[i];
            if (j->state == GP_JOB_PREEMPTING && j->deadline >= 0 && (d < 0 || j->deadline < d))
                d = j->deadline;
        }
        if (d < 0 || d > t)
            return;
        ev_tick(s, d < s->now ? s->now : d);
    }
    pe_sim_fail(s, "test bug: deadline ticks do not converge");
}

static int pick_gpus(sim *s)
{
    int r = pe_rng_int(&s->rng, 0, 99);
    if (r < 30)
        return 1;
    if (r < 50)
        return 2;
    if (r < 55)
        return 3;
    if (r < 80)
        return 4;
    if (r < 85)
        return pe_rng_int(&s->rng, 5, 7);
    return 8;
}

static const char *const user_names[PROP_USERS] = {"u0", "u1", "u2"};

/* A share instead of whole GPUs: one per replica, topology any. */
static void random_share(sim *s, sim_job *j)
{
    static const char *const profiles[] = {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"};
    static const int compute[] = {1, 2, 3, 4, 7};
    gp_job_spec *sp = &j->spec;
    int r = pe_rng_int(&s->rng, 0, 2);
    sp->isolation = r == 0 ? GP_ISO_MIG : r == 1 ? GP_ISO_MPS : GP_ISO_TIMESLICE;
    sp->gpus = 1;
    sp->replicas = pe_rng_int(&s->rng, 1, 3);
    sp->topology = GP_TOPO_ANY;
    sp->cpu_millis = 500;
    sp->mem_mib = 1024;
    j->shared = true;
    if (sp->isolation == GP_ISO_MIG) {
        int p = pe_rng_int(&s->rng, 0, 4);
        snprintf(sp->share.mig_profile, sizeof sp->share.mig_profile, "%s", profiles[p]);
        j->slice_milli = 1000 * compute[p] / 7;
    } else if (sp->isolation == GP_ISO_MPS) {
        sp->share.mps_milli = 50 * pe_rng_int(&s->rng, 1, 12);
        j->slice_milli = sp->share.mps_milli;
    } else {
        sp->kind = pe_rng_pct(&s->rng, 50) ? GP_KIND_INTERACTIVE : GP_KIND_INFERENCE;
        j->slice_milli = 1000 / PROP_TIMESLICE;
    }
}

static void ev_submit(sim *s, int64_t t)
{
    if (s->n_jobs >= PROP_MAX_JOBS) {
        ev_tick(s, t);
        return;
    }
    sim_job *j = &s->jobs[s->n_jobs];
    memset(j, 0, sizeof *j);
    j->id = (uint64_t)s->n_jobs + 1;
    j->tenant = s->leaves[pe_rng_int(&s->rng, 0, s->n_leaves - 1)];
    j->state = GP_JOB_PENDING;
    j->bound_type = -1;
    j->bind_time = -1;
    j->deadline = -1;
    j->cls = GP_CLASS_NONE;
    j->elig_t1 = -1;
    gp_job_spec *sp = &j->spec;
    sp->id = j->id;
    sp->tenant = s->tenants[j->tenant].path;
    sp->kind = (gp_job_kind)pe_rng_int(&s->rng, 0, 2);
    int r = pe_rng_int(&s->rng, 0, 99);
    sp->replicas = r < 50 ? 1 : r < 75 ? 2 : r < 85 ? 3 : 4;
    sp->gpus = pick_gpus(s);
    /* Accepted types: none listed (any), one, or two. */
    int ntypes = 0;
    r = pe_rng_int(&s->rng, 0, 99);
    if (r < 25)
        ntypes = 0;
    else if (r < 80 || s->n_types == 1)
        ntypes = 1;
    else
        ntypes = 2;
    if (ntypes == 0) {
        for (int k = 0; k < s->n_types; k++)
            j->accepts |= 1u << s->type_engine[k];
    } else {
        int first = pe_rng_int(&s->rng, 0, s->n_types - 1);
        for (int x = 0; x < ntypes; x++) {
            int k = (first + x) % s->n_types;
            sp->gpu_types[sp->n_gpu_types++] = s->type_name[k];
            j->accepts |= 1u << s->type_engine[k];
        }
    }
    sp->cpu_millis = (int64_t)sp->gpus * 2000;
    sp->mem_mib = (int64_t)sp->gpus * 8192;
    r = pe_rng_int(&s->rng, 0, 99);
    sp->topology = r < 60 ? GP_TOPO_ANY : r < 85 ? GP_TOPO_BLOCK : GP_TOPO_NVLINK;
    sp->isolation = GP_ISO_EXCLUSIVE;
    if (pe_rng_pct(&s->rng, s->n_shared_nodes > 0 ? 30 : 5))
        random_share(s, j);
    j->user = pe_rng_pct(&s->rng, 50) ? -1 : pe_rng_int(&s->rng, 0, PROP_USERS - 1);
    sp->user = j->user >= 0 ? user_names[j->user] : NULL;
    static const int prios[] = {-100, 0, 0, 0, 50, 500};
    sp->priority = prios[pe_rng_int(&s->rng, 0, 5)];
    sp->checkpoint_grace_s = pe_rng_pct(&s->rng, 20) ? 0 : pe_rng_int(&s->rng, 1, PROP_GRACE_MAX);
    sp->expected_runtime_s = pe_rng_pct(&s->rng, 20) ? 0 : pe_rng_int(&s->rng, 60, 3600);
    s->n_jobs++;

    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " submit job %" PRIu64 " %s %dx%d types=%s%s%s %s %s(%s%d) user=%s prio=%d grace=%" PRId64
               " runtime=%" PRId64,
            s->event_index, t, j->id, sp->tenant, sp->replicas, sp->gpus, sp->n_gpu_types ? sp->gpu_types[0] : "any",
            sp->n_gpu_types > 1 ? "," : "", sp->n_gpu_types > 1 ? sp->gpu_types[1] : "",
            gp_topology_name(sp->topology), gp_isolation_name(sp->isolation), sp->share.mig_profile,
            sp->share.mps_milli, sp->user ? sp->user : "-", sp->priority, sp->checkpoint_grace_s,
            sp->expected_runtime_s);
    gp_error err;
    gp_err rc = gp_engine_job_submit(s->e, sp, t, &err);
    bool forbidden = (sp->isolation == GP_ISO_MPS || sp->isolation == GP_ISO_TIMESLICE) && pe_untrusted(s, j->tenant);
    if (forbidden) { /* refused, nothing changed; the id is used again */
        if (rc != GP_ERR_INVALID || strcmp(err.field, "isolation") != 0)
            pe_sim_fail(s, "P8: %s submit of untrusted %s: %s, expected invalid isolation", gp_isolation_name(sp->isolation),
                        sp->tenant, gp_err_name(rc));
        pe_sim_log(s, "    refused: %s", err.message);
        s->n_jobs--;
        s->counters->trust_refusals++;
        expect_no_decisions(s, "untrusted share submit", rc);
        end_event(s, EV_PLAIN);
        return;
    }
    if (rc != GP_OK)
        pe_sim_fail(s, "valid submit of job %" PRIu64 " rejected: %s (%s)", j->id, err.message, err.field);
    end_event(s, EV_PLAIN);
}

/* A random job matching `want` (bit per state), or NULL. */
static sim_job *pick_job(sim *s, unsigned want)
{
    int idx[PROP_MAX_JOBS];
    int n = 0;
    for (int i = 0; i < s->n_jobs; i++)
        if (!s->jobs[i].forgotten && (want & (1u << s->jobs[i].state)))
            idx[n++] = i;
    if (n == 0)
        return NULL;
    return &s->jobs[idx[pe_rng_int(&s->rng, 0, n - 1)]];
}

#define ST(x) (1u << (x))

/* The back-off after the n-th restart (core/restart.c): 10 s, doubling,
 * at most 5 minutes. */
static int64_t restart_backoff(int n)
{
    int64_t s = 10;
    for (int i = 1; i < n && s < 300; i++)
        s *= 2;
    return s < 300 ? s : 300;
}

/* Would a failure of this running job requeue it (core/restart.c)? */
static bool restarts_left(const sim_job *j)
{
    gp_restart_policy p = j->spec.restart_policy;
    if (p == GP_RESTART_DEFAULT)
        p = j->spec.kind == GP_KIND_INFERENCE ? GP_RESTART_ON_FAILURE : GP_RESTART_NEVER;
    return p == GP_RESTART_ON_FAILURE && j->restarts < (j->spec.max_restarts > 0 ? j->spec.max_restarts : 3);
}

static void ev_finish(sim *s, int64_t t)
{
    sim_job *j = pick_job(s, ST(GP_JOB_RUNNING) | ST(GP_JOB_PREEMPTING));
    if (j == NULL) {
        ev_tick(s, t);
        return;
    }
    gp_job_state before = j->state;
    bool preempted = j->preempted, stopping = j->stopping, cancelled = j->cancel_asked, withdrawn = j->withdrawn;
    int r = pe_rng_int(&s->rng, 0, 99);
    gp_exit how;
    if (before == GP_JOB_PREEMPTING)
        how = r < 60 ? GP_EXIT_STOPPED : r < 85 ? GP_EXIT_SUCCEEDED : GP_EXIT_FAILED;
    else
        how = r < 55 ? GP_EXIT_SUCCEEDED : r < 85 ? GP_EXIT_FAILED : GP_EXIT_STOPPED;
    static const char *const hows[] = {"succeeded", "failed", "stopped"};
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " finish job %" PRIu64 " (%s) %s", s->event_index, t, j->id,
            gp_job_state_name(before), hows[how]);
    gp_error err;
    gp_err rc = gp_engine_job_finished(s->e, j->id, how, t, &err);
    if (rc != GP_OK)
        pe_sim_fail(s, "job_finished(%" PRIu64 ", %s) on a %s job: %s", j->id, hows[how], gp_job_state_name(before),
                 err.message);
    end_event(s, EV_PLAIN);
    if (j->bound)
        pe_sim_fail(s, "job %" PRIu64 " still holds GPUs after it finished", j->id);
    gp_job_state want = GP_JOB_PENDING;
    bool check = true;
    if (before == GP_JOB_RUNNING && withdrawn && how == GP_EXIT_STOPPED)
        want = GP_JOB_PENDING; /* it answered a withdrawn preemption: requeued */
    else if (before == GP_JOB_RUNNING && how == GP_EXIT_FAILED && restarts_left(j))
        want = GP_JOB_PENDING, j->restarts++, j->eligible_at = t + restart_backoff(j->restarts); /* on-failure */
    else if (before == GP_JOB_RUNNING)
        want = how == GP_EXIT_SUCCEEDED ? GP_JOB_SUCCEEDED : GP_JOB_FAILED;
    else if (how == GP_EXIT_STOPPED && cancelled)
        want = GP_JOB_CANCELLED; /* cancelled while running or while preempting */
    else if (how == GP_EXIT_STOPPED && preempted && !stopping)
        want = GP_JOB_PENDING;
    else
        check = false;
    if (check && j->state != want)
        pe_sim_fail(s, "job %" PRIu64 " (%s, preempted=%d stopping=%d cancelled=%d) finished %s: now %s, expected %s",
                 j->id, gp_job_state_name(before), preempted, stopping, cancelled, hows[how],
                 gp_job_state_name(j->state),
                 gp_job_state_name(want));
}

static void ev_cancel(sim *s, int64_t t)
{
    sim_job *j = pick_job(s, ST(GP_JOB_PENDING) | ST(GP_JOB_RUNNING) | ST(GP_JOB_PREEMPTING));
    if (j == NULL) {
        ev_tick(s, t);
        return;
    }
    gp_job_state before = j->state;
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " cancel job %" PRIu64 " (%s)", s->event_index, t, j->id, gp_job_state_name(before));
    gp_error err;
    gp_err rc = gp_engine_job_cancel(s->e, j->id, t, &err);
    if (rc != GP_OK)
        pe_sim_fail(s, "cancel of %s job %" PRIu64 ": %s", gp_job_state_name(before), j->id, err.message);
    if (j->bound)
        j->cancel_asked = true;
    end_event(s, EV_PLAIN);
    if (before == GP_JOB_PENDING && j->state != GP_JOB_CANCELLED)
        pe_sim_fail(s, "cancel of pending job %" PRIu64 " left it %s", j->id, gp_job_state_name(j->state));
    if (before == GP_JOB_RUNNING && j->state != GP_JOB_PREEMPTING && j->state != GP_JOB_CANCELLED)
        pe_sim_fail(s, "cancel of running job %" PRIu64 " left it %s", j->id, gp_job_state_name(j->state));
}

static void ev_checkpoint(sim *s, int64_t t)
{
    sim_job *j = pick_job(s, ST(GP_JOB_RUNNING));
    if (j == NULL) {
        ev_tick(s, t);
        return;
    }
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " checkpoint job %" PRIu64, s->event_index, t, j->id);
    gp_error err;
    gp_err rc = gp_engine_job_checkpointed(s->e, j->id, t, &err);
    if (rc != GP_OK)
        pe_sim_fail(s, "checkpoint of running job %" PRIu64 ": %s", j->id, err.message);
    end_event(s, EV_PLAIN);
    gp_job_info info;
    if (gp_engine_job_info(s->e, j->id, &info, &err) != GP_OK || info.last_checkpoint != t)
        pe_sim_fail(s, "job %" PRIu64 " last_checkpoint %" PRId64 " after a checkpoint at %" PRId64, j->id,
                 info.last_checkpoint, t);
}

static void node_spec_of(const sim *s, const sim_node *n, gp_node_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->name = n->name;
    spec->zone = n->zone;
    spec->block = n->block;
    spec->gpu_type = s->type_name[n->type];
    spec->gpu_count = n->gpu_count;
    spec->nvlink_domains = n->nvlink_domains;
    spec->gpu_mem_mib = 81920;
    spec->sharing = n->sharing;
    spec->cpu_millis = (int64_t)n->gpu_count * 2000 + 4000;
    spec->mem_mib = (int64_t)n->gpu_count * 8192 + 16384;
}

static void ev_node(sim *s, int64_t t)
{
    sim_node *n = &s->nodes[pe_rng_int(&s->rng, 0, s->n_nodes - 1)];
    gp_error err;
    gp_err rc;
    begin_event(s, t);
    if (n->up) {
        pe_sim_log(s, "[%d] t=%" PRId64 " node %s lost", s->event_index, t, n->name);
        rc = gp_engine_node_lost(s->e, n->name, t, &err);
        if (rc != GP_OK)
            pe_sim_fail(s, "node_lost(%s): %s", n->name, err.message);
        n->up = false;
    } else {
        gp_node_spec spec;
        node_spec_of(s, n, &spec);
        pe_sim_log(s, "[%d] t=%" PRId64 " node %s added back", s->event_index, t, n->name);
        rc = gp_engine_node_add(s->e, &spec, t, &err);
        if (rc != GP_OK)
            pe_sim_fail(s, "node_add(%s) of a lost node: %s", n->name, err.message);
        n->up = true;
    }
    end_event(s, EV_CHANGE);
    for (int g = 0; g < n->gpu_count; g++)
        if (!n->up && s->owner[n->gpu_first + (uint32_t)g] != 0)
            pe_sim_fail(s, "job %" PRIu64 " still holds a GPU of lost node %s", s->owner[n->gpu_first + (uint32_t)g],
                     n->name);
}

static void ev_gpu_health(sim *s, int64_t t)
{
    int g = pe_rng_int(&s->rng, 0, s->n_gpus - 1);
    sim_node *n = &s->nodes[s->gpu_node[g]];
    if (!n->up) {
        ev_tick(s, t);
        return;
    }
    bool healthy = !s->gpu_healthy[g];
    int local = g - (int)n->gpu_first;
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " gpu %s/%d (#%d) %s", s->event_index, t, n->name, local, g,
            healthy ? "healthy" : "unhealthy");
    gp_error err;
    gp_err rc = gp_engine_gpu_health(s->e, n->name, local, healthy, t, &err);
    if (rc != GP_OK)
        pe_sim_fail(s, "gpu_health(%s, %d): %s", n->name, local, err.message);
    end_event(s, EV_CHANGE);
    if (s->gpu_healthy[g] != healthy)
        pe_sim_fail(s, "gpu %d health is %d after setting %d", g, s->gpu_healthy[g], healthy);
}

static void ev_drain(sim *s, int64_t t)
{
    sim_node *n = &s->nodes[pe_rng_int(&s->rng, 0, s->n_nodes - 1)];
    if (!n->up) {
        ev_tick(s, t);
        return;
    }
    bool drain = !n->draining;
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " node %s %s", s->event_index, t, n->name, drain ? "drain" : "undrain");
    gp_error err;
    gp_err rc = gp_engine_node_drain(s->e, n->name, drain, t, &err);
    if (rc != GP_OK)
        pe_sim_fail(s, "node_drain(%s, %d): %s", n->name, drain, err.message);
    end_event(s, EV_CHANGE);
    if (n->draining != drain)
        pe_sim_fail(s, "node %s draining=%d after drain(%d)", n->name, n->draining, drain);
}

static void random_guarantee_change(sim *s, gp_quota *g)
{
    if (g->set && pe_rng_pct(&s->rng, 15)) {
        pe_quota_clear(g, false);
        return;
    }
    if (!g->set)
        pe_quota_clear(g, true);
    for (int k = 0; k < s->n_types; k++) {
        int64_t cur = pe_quota_get(g, s->type_name[k]);
        int64_t capk = s->type_capacity[k] / 1000;
        int64_t v;
        if (cur > 0 && pe_rng_pct(&s->rng, 60))
            v = cur * pe_rng_int(&s->rng, 0, 150) / 100 / 1000 * 1000;
        else
            v = (int64_t)pe_rng_int(&s->rng, 0, (int)(capk / 2)) * 1000;
        if (pe_rng_pct(&s->rng, 10))
            v += 500;
        pe_quota_put(g, s->type_name[k], v);
    }
}

static void random_limit(sim *s, gp_quota *l, const gp_quota *g)
{
    if (pe_rng_pct(&s->rng, 35)) {
        pe_quota_clear(l, false);
        return;
    }
    pe_quota_clear(l, true);
    for (int k = 0; k < s->n_types; k++) {
        if (!pe_rng_pct(&s->rng, 60))
            continue;
        int64_t v = (int64_t)pe_rng_int(&s->rng, 0, (int)(s->type_capacity[k] / 1000)) * 1000;
        if (g != NULL) {
            int64_t gv = pe_quota_get(g, s->type_name[k]);
            if (g->set && gv > v)
                v = gv;
        }
        pe_quota_put(l, s->type_name[k], v);
    }
}

static void random_user_limit(sim *s, gp_quota *l)
{
    if (pe_rng_pct(&s->rng, 35)) {
        pe_quota_clear(l, false);
        return;
    }
    pe_quota_clear(l, true);
    for (int k = 0; k < s->n_types; k++)
        if (pe_rng_pct(&s->rng, 70))
            pe_quota_put(l, s->type_name[k], (int64_t)pe_rng_int(&s->rng, 0, 8) * 500);
}

static void ev_tenant_change(sim *s, int64_t t)
{
    int ti = pe_rng_int(&s->rng, 0, s->n_tenants - 1);
    sim_tenant *st = &s->tenants[ti];
    gp_tenant_spec spec = st->spec;
    const char *what;
    bool trust_only = false;
    switch (pe_rng_int(&s->rng, 0, 8)) {
    case 0:
    case 1:
        random_guarantee_change(s, &spec.guarantee);
        what = "guarantee";
        break;
    case 2:
        random_limit(s, &spec.limit, NULL);
        what = "limit";
        break;
    case 3:
        spec.lend = spec.lend == -1 ? 0 : spec.lend == 0 ? 1 : -1;
        what = "lend";
        break;
    case 4:
        spec.weight = pe_rng_pct(&s->rng, 30) ? 0.0 : (double)pe_rng_int(&s->rng, 1, 4);
        what = "weight";
        break;
    case 5:
        random_guarantee_change(s, &spec.guarantee);
        random_limit(s, &spec.limit, &spec.guarantee);
        what = "guarantee+limit";
        break;
    case 6:
    case 7: {
        static const gp_trust trusts[] = {GP_TRUST_INHERIT, GP_TRUST_TRUSTED, GP_TRUST_UNTRUSTED,
                                          GP_TRUST_UNTRUSTED};
        spec.trust = trusts[pe_rng_int(&s->rng, 0, 3)];
        trust_only = true;
        what = spec.trust == GP_TRUST_INHERIT ? "trust=inherit"
               : spec.trust == GP_TRUST_TRUSTED ? "trust=trusted"
                                                : "trust=untrusted";
        break;
    }
    default:
        random_user_limit(s, &spec.user_limit);
        what = "user_limit";
        break;
    }
    /* trust is a floor: "trusted" below an untrusted ancestor is refused */
    bool below_untrusted = st->parent >= 0 && pe_untrusted(s, st->parent);
    bool floor_refusal = spec.trust == GP_TRUST_TRUSTED && below_untrusted;
    gp_tenant_info before[PROP_MAX_TENANTS];
    pe_read_tenants(s, before);
    begin_event(s, t);
    char desc[160];
    size_t off = (size_t)snprintf(desc, sizeof desc, "g%s", spec.guarantee.set ? "" : "=none");
    for (int i = 0; spec.guarantee.set && i < spec.guarantee.n_gpu && off < sizeof desc; i++)
        off += (size_t)snprintf(desc + off, sizeof desc - off, " %s=%" PRId64, spec.guarantee.gpu[i].type,
                                spec.guarantee.gpu[i].milli);
    for (int i = 0; spec.limit.set && i < spec.limit.n_gpu && off < sizeof desc; i++)
        off += (size_t)snprintf(desc + off, sizeof desc - off, " L%s=%" PRId64, spec.limit.gpu[i].type,
                                spec.limit.gpu[i].milli);
    pe_sim_log(s, "[%d] t=%" PRId64 " tenant %s set %s: %s lend=%d w=%g", s->event_index, t, st->path, what, desc,
            spec.lend, spec.weight);
    gp_error err;
    gp_err rc = gp_engine_tenant_set(s->e, st->path, &spec, t, &err);
    if (floor_refusal)
        s->counters->trust_refusals++;
    if (floor_refusal && (rc != GP_ERR_INVALID || strcmp(err.field, "trust") != 0))
        pe_sim_fail(s, "P8: tenant_set(%s) asks trusted below an untrusted ancestor: %s, expected invalid trust",
                    st->path, gp_err_name(rc));
    if (trust_only && !floor_refusal && rc != GP_OK)
        pe_sim_fail(s, "P8: trust change of %s refused: %s (%s)", st->path, err.message, err.field);
    if (rc != GP_OK) {
        s->counters->rejected_tenant_changes++;
        pe_sim_log(s, "    rejected: %s (%s)", gp_err_name(rc), err.message);
        expect_no_decisions(s, "tenant_set", rc);
        gp_tenant_info after[PROP_MAX_TENANTS];
        pe_read_tenants(s, after);
        for (int k = 0; k < s->n_tenants; k++)
            if (!pe_tenant_info_same(&before[k], &after[k]))
                pe_sim_fail(s, "rejected tenant_set(%s) changed tenant %s", st->path, s->tenants[k].path);
        end_event(s, EV_PLAIN);
        return;
    }
    s->counters->accepted_tenant_changes++;
    st->spec = spec;
    gp_tenant_info now;
    if (!gp_engine_tenant_get(s->e, st->engine_index, &now))
        pe_sim_fail(s, "tenant_get(%s) failed", st->path);
    for (int d = 0; d < GP_DIMS; d++)
        if (now.usage.v[d] > now.limit.v[d])
            st->limit_relaxed = true;
    if (now.has_guarantee)
        for (int d = 0; d < GP_DIMS; d++)
            if (now.guaranteed_usage.v[d] > now.guarantee.v[d])
                st->guarantee_relaxed = true;
    pe_mark_user_relaxed(s);
    end_event(s, EV_CHANGE);
}

/* The engine does not re-parent: a move is a remove and a re-create at
 * the new place (as POST /v1/tenants:move does), for an idle leaf without
 * a guarantee of its own and without "trusted" (so no quota or trust rule
 * can refuse the new place: it must be taken).  Moved under an untrusted
 * team it is untrusted (P8 checks the floor after the event).  (A leaf
 * with a guarantee may not come back once nodes are lost: the re-create
 * is refused when the guarantees exceed the shrunken fleet.) */
static void ev_tenant_move(sim *s, int64_t t)
{
    int cand[PROP_MAX_TENANTS], teams[PROP_MAX_TENANTS], n = 0, n_teams = 0;
    pe_read_tenants(s, s->tinfo);
    for (int i = 0; i < s->n_tenants; i++) {
        const sim_tenant *st = &s->tenants[i];
        if (st->leaf && !st->spec.guarantee.set && st->spec.trust != GP_TRUST_TRUSTED &&
            s->tinfo[i].pending_jobs + s->tinfo[i].running_jobs == 0)
            cand[n++] = i;
        if (st->depth == 1)
            teams[n_teams++] = i;
    }
    if (n == 0 || n_teams < 2) {
        ev_tick(s, t);
        return;
    }
    sim_tenant *st = &s->tenants[cand[pe_rng_int(&s->rng, 0, n - 1)]];
    int to = teams[pe_rng_int(&s->rng, 0, n_teams - 1)];
    if (to == st->parent) {
        ev_tick(s, t);
        return;
    }
    char old_path[GP_PATH_MAX], new_path[GP_PATH_MAX];
    memcpy(old_path, st->path, sizeof old_path);
    snprintf(new_path, sizeof new_path, "%.150s/m%d", s->tenants[to].path, s->event_index + 1);
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " tenant move %s -> %s", s->event_index, t, old_path, new_path);
    gp_error err;
    if (gp_engine_tenant_remove(s->e, old_path, t, &err) != GP_OK)
        pe_sim_fail(s, "tenant_remove(%s) of an idle leaf: %s", old_path, err.message);
    if (gp_engine_tenant_set(s->e, new_path, &st->spec, t, &err) != GP_OK)
        pe_sim_fail(s, "tenant_set(%s) of a moved leaf: %s (%s)", new_path, err.message, err.field);
    memcpy(st->path, new_path, sizeof st->path);
    st->parent = to;
    if (gp_engine_tenant_find(s->e, st->path, &st->engine_index, &err) != GP_OK)
        pe_sim_fail(s, "tenant_find(%s) after a move: %s", st->path, err.message);
    s->counters->accepted_tenant_changes++;
    pe_mark_user_relaxed(s);
    end_event(s, EV_CHANGE);
}

/* Calls that must be refused, and refused without any effect. */
static void ev_invalid(sim *s, int64_t t)
{
    gp_engine_stats before, after;
    gp_engine_stats_get(s->e, &before);
    gp_error err;
    gp_err rc = GP_OK;
    const char *what = "";
    int kind = pe_rng_int(&s->rng, 0, 4);
    int64_t engine_now = gp_engine_now(s->e); /* job_forget carries no time */
    sim_job *dup = pick_job(s, ~0u);
    if (kind == 0 && engine_now > 0) {
        /* Time going back: no begin_event, our clock stays. */
        s->event_index++;
        what = "tick in the past";
        pe_sim_log(s, "[%d] t=%" PRId64 " invalid: %s", s->event_index, engine_now - 1, what);
        rc = gp_engine_tick(s->e, engine_now - 1, &err);
        if (rc != GP_ERR_TIME)
            pe_sim_fail(s, "tick(now - 1) returned %s, expected time", gp_err_name(rc));
    } else {
        begin_event(s, t);
        gp_job_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.tenant = s->tenants[s->leaves[0]].path;
        spec.replicas = 1;
        spec.gpus = 1;
        spec.cpu_millis = 1000;
        spec.mem_mib = 1024;
        spec.id = (uint64_t)s->n_jobs + 100000;
        switch (kind) {
        case 1:
            what = "cancel of an unknown job";
            rc = gp_engine_job_cancel(s->e, (uint64_t)s->n_jobs + 100000, t, &err);
            break;
        case 2:
            if (dup != NULL) { /* a forgotten id may be reused */
                what = "submit with a duplicate id";
                spec.id = dup->id;
            } else {
                what = "submit with replicas 0";
                spec.replicas = 0;
            }
            rc = gp_engine_job_submit(s->e, &spec, t, &err);
            break;
        case 3:
            what = "submit to a non-leaf tenant";
            spec.tenant = s->tenants[0].path; /* an org, which always has children */
            rc = gp_engine_job_submit(s->e, &spec, t, &err);
            break;
        default:
            /* (gpus 0 would also break the header's 1..GP_MAX_GPUS_PER_NODE,
             * but the engine now takes it as a CPU-only job; see the report.) */
            what = "submit with gpus above GP_MAX_GPUS_PER_NODE";
            spec.gpus = GP_MAX_GPUS_PER_NODE + 1;
            rc = gp_engine_job_submit(s->e, &spec, t, &err);
            break;
        }
        pe_sim_log(s, "[%d] t=%" PRId64 " invalid: %s -> %s", s->event_index, t, what, gp_err_name(rc));
        if (rc == GP_OK)
            pe_sim_fail(s, "%s was accepted", what);
    }
    s->counters->invalid_calls++;
    expect_no_decisions(s, what, rc);
    gp_engine_stats_get(s->e, &after);
    if (before.pending != after.pending || before.running != after.running || before.preempting != after.preempting ||
        before.jobs != after.jobs || before.gpus_allocated != after.gpus_allocated)
        pe_sim_fail(s, "%s was rejected but changed the job counts", what);
    end_event(s, EV_PLAIN);
}

static void ev_forget(sim *s, int64_t t)
{
    sim_job *j = pick_job(s, ST(GP_JOB_SUCCEEDED) | ST(GP_JOB_FAILED) | ST(GP_JOB_CANCELLED));
    if (j == NULL) {
        ev_tick(s, t);
        return;
    }
    begin_event(s, t);
    pe_sim_log(s, "[%d] t=%" PRId64 " forget job %" PRIu64, s->event_index, t, j->id);
    gp_error err;
    if (gp_engine_job_forget(s->e, j->id, &err) != GP_OK)
        pe_sim_fail(s, "forget of final job %" PRIu64 ": %s", j->id, err.message);
    j->forgotten = true;
    gp_job_info info;
    if (gp_engine_job_info(s->e, j->id, &info, &err) != GP_ERR_NOT_FOUND)
        pe_sim_fail(s, "job %" PRIu64 " still found after forget", j->id);
    end_event(s, EV_PLAIN);
}

/* ---- building a sequence ------------------------------------------------ */

static void build_fleet(sim *s)
{
    s->n_types = pe_rng_int(&s->rng, 1, PROP_MAX_TYPES);
    int first = pe_rng_int(&s->rng, 0, PROP_MAX_TYPES - 1);
    for (int k = 0; k < s->n_types; k++)
        snprintf(s->type_name[k], GP_NAME_MAX, "%s", prop_type_names[(first + k) % PROP_MAX_TYPES]);
    int blocks = pe_rng_int(&s->rng, 2, PROP_MAX_BLOCKS);
    bool type_per_block = pe_rng_pct(&s->rng, 60);
    bool size_per_fleet = pe_rng_pct(&s->rng, 50);
    int fleet_size = pe_rng_pct(&s->rng, 50) ? 4 : 8;
    s->two_domains = pe_rng_pct(&s->rng, 30);
    int zones = pe_rng_int(&s->rng, 1, 2);
    int shared_pct = pe_rng_pct(&s->rng, 60) ? pe_rng_int(&s->rng, 10, 50) : 0; /* nodes in a sharing mode */
    for (int b = 0; b < blocks; b++) {
        int nodes = pe_rng_int(&s->rng, 2, PROP_MAX_NODES_PER_BLOCK);
        int btype = pe_rng_int(&s->rng, 0, s->n_types - 1);
        for (int i = 0; i < nodes; i++) {
            sim_node *n = &s->nodes[s->n_nodes++];
            snprintf(n->name, sizeof n->name, "b%d-n%d", b, i);
            snprintf(n->zone, sizeof n->zone, "zone-%d", b % zones);
            snprintf(n->block, sizeof n->block, "block-%d", b);
            n->type = type_per_block ? btype : pe_rng_int(&s->rng, 0, s->n_types - 1);
            n->gpu_count = size_per_fleet ? fleet_size : (pe_rng_pct(&s->rng, 50) ? 4 : 8);
            n->nvlink_domains = s->two_domains && pe_rng_pct(&s->rng, 70) ? 2 : 1;
            n->up = true;
            n->sharing = GP_SHARING_EXCLUSIVE;
            if (pe_rng_pct(&s->rng, shared_pct)) {
                /* MIG needs a MIG-capable model: H100 or A100 of 80 GB here, not L40S */
                bool mig_ok = strcmp(s->type_name[n->type], "L40S") != 0;
                int r = pe_rng_int(&s->rng, mig_ok ? 0 : 1, 2);
                n->sharing = r == 0 ? GP_SHARING_MIG : r == 1 ? GP_SHARING_MPS : GP_SHARING_TIMESLICE;
                s->n_shared_nodes++;
            }
        }
    }
    gp_error err;
    for (int k = 0; k < s->n_nodes; k++) {
        gp_node_spec spec;
        node_spec_of(s, &s->nodes[k], &spec);
        if (gp_engine_node_add(s->e, &spec, 0, &err) != GP_OK)
            pe_sim_fail(s, "setup: node_add(%s): %s", spec.name, err.message);
    }
    gp_engine_decisions_clear(s->e);
    if (gp_engine_node_count(s->e) != (size_t)s->n_nodes)
        pe_sim_fail(s, "setup: node_count %zu, added %d", gp_engine_node_count(s->e), s->n_nodes);
    for (int k = 0; k < s->n_types; k++) {
        s->type_engine[k] = -1;
        for (int x = 0; x < gp_engine_gpu_type_count(s->e); x++)
            if (strcmp(gp_engine_gpu_type_name(s->e, x), s->type_name[k]) == 0)
                s->type_engine[k] = x;
    }
    /* A type we picked but no node got: drop it (keep types 0..n-1 real). */
    int kept = 0;
    for (int k = 0; k < s->n_types; k++) {
        if (s->type_engine[k] < 0)
            continue;
        if (kept != k) {
            memcpy(s->type_name[kept], s->type_name[k], GP_NAME_MAX);
            s->type_engine[kept] = s->type_engine[k];
            for (int i = 0; i < s->n_nodes; i++)
                if (s->nodes[i].type == k)
                    s->nodes[i].type = kept;
        }
        kept++;
    }
    s->n_types = kept;
    for (int k = 0; k < s->n_nodes; k++) {
        sim_node *n = &s->nodes[k];
        gp_node_info ni;
        if (!gp_engine_node_get(s->e, (uint32_t)k, &ni) || strcmp(ni.name, n->name) != 0 ||
            ni.gpu_count != n->gpu_count)
            pe_sim_fail(s, "setup: node %d is not %s", k, n->name);
        n->gpu_first = ni.gpu_first;
        for (int g = 0; g < n->gpu_count; g++) {
            uint32_t gi = n->gpu_first + (uint32_t)g;
            if (gi >= PROP_MAX_GPUS)
                pe_sim_fail(s, "setup: GPU index %u out of range", gi);
            s->gpu_node[gi] = k;
            s->gpu_healthy[gi] = true;
        }
        s->n_gpus += n->gpu_count;
        s->type_capacity[n->type] += (int64_t)n->gpu_count * 1000;
    }
    if (gp_engine_gpu_count(s->e) != (size_t)s->n_gpus)
        pe_sim_fail(s, "setup: gpu_count %zu, expected %d", gp_engine_gpu_count(s->e), s->n_gpus);
}

static bool tenant_untrusted(sim *s, int t)
{
    gp_tenant_info info;
    if (!gp_engine_tenant_get(s->e, s->tenants[t].engine_index, &info))
        pe_sim_fail(s, "tenant_get(%s) failed", s->tenants[t].path);
    return info.untrusted;
}

static void build_subtree(sim *s, int parent, int depth, int64_t *budget, bool no_guarantees)
{
    int n = pe_rng_int(&s->rng, 1, 3);
    for (int c = 0; c < n; c++) {
        int t = s->n_tenants++;
        sim_tenant *st = &s->tenants[t];
        memset(st, 0, sizeof *st);
        st->parent = parent;
        st->depth = depth;
        static const char prefix[] = {'o', 't', 'p'};
        if (parent < 0)
            snprintf(st->path, sizeof st->path, "%c%d", prefix[depth], c);
        else {
            char parent_path[GP_PATH_MAX];
            memcpy(parent_path, s->tenants[parent].path, sizeof parent_path);
            snprintf(st->path, sizeof st->path, "%.120s/%c%d", parent_path, prefix[depth], c);
        }
        gp_tenant_spec *sp = &st->spec;
        pe_quota_clear(&sp->guarantee, false);
        pe_quota_clear(&sp->limit, false);
        pe_quota_clear(&sp->user_limit, false);
        sp->weight = pe_rng_pct(&s->rng, 70) ? 0.0 : (double)pe_rng_int(&s->rng, 1, 4);
        int r = pe_rng_int(&s->rng, 0, 99);
        sp->lend = r < 80 ? -1 : r < 90 ? 0 : 1;
        r = pe_rng_int(&s->rng, 0, 99);
        sp->trust = r < 90 ? GP_TRUST_INHERIT : r < 95 ? GP_TRUST_TRUSTED : GP_TRUST_UNTRUSTED;
        if (sp->trust == GP_TRUST_TRUSTED && parent >= 0 && tenant_untrusted(s, parent))
            sp->trust = GP_TRUST_INHERIT; /* trust is a floor: "trusted" below untrusted is refused */
        int64_t local[PROP_MAX_TYPES] = {0};
        int64_t *child_budget = budget;
        if (!no_guarantees && pe_rng_pct(&s->rng, 65)) {
            pe_quota_clear(&sp->guarantee, true);
            for (int k = 0; k < s->n_types; k++) {
                int whole = (int)(budget[k] / 1000);
                int64_t take = 0;
                if (whole > 0 && pe_rng_pct(&s->rng, 80))
                    take = (int64_t)pe_rng_int(&s->rng, 0, pe_rng_pct(&s->rng, 50) ? whole : (whole + 1) / 2) * 1000;
                if (budget[k] - take >= 500 && pe_rng_pct(&s->rng, 10))
                    take += 500;
                budget[k] -= take;
                local[k] = take;
                if (take > 0 || pe_rng_pct(&s->rng, 30))
                    pe_quota_put(&sp->guarantee, s->type_name[k], take);
            }
            child_budget = local;
            s->any_guarantee = true;
        }
        if (pe_rng_pct(&s->rng, 25)) {
            random_limit(s, &sp->limit, &sp->guarantee);
            /* a limit may not be below the guarantees its subtree can still get */
            for (int k = 0; k < s->n_types && sp->limit.set; k++)
                for (int i = 0; i < sp->limit.n_gpu; i++)
                    if (strcmp(sp->limit.gpu[i].type, s->type_name[k]) == 0 && sp->limit.gpu[i].milli < child_budget[k])
                        sp->limit.gpu[i].milli = child_budget[k];
        }
        gp_error err;
        if (gp_engine_tenant_set(s->e, st->path, sp, 0, &err) != GP_OK)
            pe_sim_fail(s, "setup: tenant_set(%s): %s (%s)", st->path, err.message, err.field);
        if (gp_engine_tenant_find(s->e, st->path, &st->engine_index, &err) != GP_OK)
            pe_sim_fail(s, "setup: tenant_find(%s): %s", st->path, err.message);
        if (depth < 2)
            build_subtree(s, t, depth + 1, child_budget, no_guarantees);
        else {
            st->leaf = true;
            s->leaves[s->n_leaves++] = t;
        }
    }
}

static void sim_run(sim *s)
{
    build_fleet(s);
    int64_t budget[PROP_MAX_TYPES];
    memcpy(budget, s->type_capacity, sizeof budget);
    build_subtree(s, -1, 0, budget, pe_rng_pct(&s->rng, 15));
    gp_engine_decisions_clear(s->e);
    pe_sim_log(s, "setup: %d nodes, %d GPUs, %d types, %d tenants (%d leaves)%s", s->n_nodes, s->n_gpus, s->n_types,
            s->n_tenants, s->n_leaves, s->any_guarantee ? "" : ", no guarantees");
    pe_read_tenants(s, s->tinfo);

    int events = pe_rng_int(&s->rng, PROP_MIN_EVENTS, PROP_MAX_EVENTS);
    for (int i = 0; i < events; i++) {
        int64_t t = s->now + (pe_rng_pct(&s->rng, 15) ? 0 : pe_rng_int(&s->rng, 1, 25));
        advance_to(s, t);
        int r = pe_rng_int(&s->rng, 0, 99);
        if (r < 28)
            ev_tick(s, t);
        else if (r < 54)
            ev_submit(s, t);
        else if (r < 66)
            ev_finish(s, t);
        else if (r < 71)
            ev_cancel(s, t);
        else if (r < 75)
            ev_checkpoint(s, t);
        else if (r < 78)
            ev_node(s, t);
        else if (r < 82)
            ev_gpu_health(s, t);
        else if (r < 85)
            ev_drain(s, t);
        else if (r < 90)
            ev_tenant_change(s, t);
        else if (r < 91)
            ev_tenant_move(s, t);
        else if (r < 93)
            ev_invalid(s, t);
        else if (r < 95)
            ev_forget(s, t);
        else
            ev_tick(s, t);
    }
    /* Let every grace period run out, then one last pass. */
    advance_to(s, s->now + PROP_GRACE_MAX + 1);
    ev_tick(s, s->now + 1);
}

typedef struct seq_result {
    bool ok;
    uint64_t hash;
    int events;
    char message[1024];
} seq_result;

static void sim_free(sim *s)
{
    if (s->e != NULL)
        gp_engine_free(s->e);
    free(s->interval_ids);
    free(s->pre);
    free(s);
}

static void run_sequence(uint64_t seed, bool verbose, int snapshot_at, prop_counters *counters, seq_result *out)
{
    sim *volatile s = calloc(1, sizeof(sim));
    memset(out, 0, sizeof *out);
    if (s == NULL) {
        snprintf(out->message, sizeof out->message, "out of memory");
        return;
    }
    s->seed = seed;
    s->snapshot_at = snapshot_at;
    s->rng.state = seed;
    s->hash = 0xcbf29ce484222325ULL;
    s->verbose = verbose;
    s->counters = counters;
    if (setjmp(s->fail_jmp) != 0) {
        pe_sim_print_log(s);
        out->ok = false;
        out->hash = s->hash;
        out->events = s->event_index;
        snprintf(out->message, sizeof out->message, "%s", s->fail_text);
        sim_free(s);
        return;
    }
    gp_engine_config cfg = gp_engine_config_default();
    if (cfg.preempt_cooldown_s != PROP_COOLDOWN)
        pe_sim_fail(s, "default preempt_cooldown_s is %" PRId64 ", test assumes %d", cfg.preempt_cooldown_s,
                 PROP_COOLDOWN);
    s->e = gp_engine_new(&cfg);
    if (s->e == NULL)
        pe_sim_fail(s, "gp_engine_new failed");
    sim_run(s);
    counters->sequences++;
    out->ok = true;
    out->hash = s->hash;
    out->events = s->event_index;
    sim_free(s);
}

/* ---- tests -------------------------------------------------------------- */

static void test_random_sequences_keep_properties(void **state)
{
    (void)state;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", PROP_DEFAULT_SEED);
    uint64_t count = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", PROP_DEFAULT_SEQUENCES);
    bool keep_going = gp_prop_env_u64("GP_PROPERTY_KEEP_GOING", 0) != 0;
    bool verbose = gp_prop_env_u64("GP_PROPERTY_VERBOSE", 0) != 0;
    prop_counters c;
    memset(&c, 0, sizeof c);
    uint64_t failures = 0;
    char first[1200] = "";
    for (uint64_t i = 0; i < count; i++) {
        uint64_t seed = base + i;
        seq_result r;
        run_sequence(seed, verbose, -1, &c, &r);
        if (r.ok)
            continue;
        failures++;
        fprintf(stderr, "FAIL %s\n  reproduce: GP_PROPERTY_SEED=0x%" PRIx64 " GP_PROPERTY_SEQUENCES=1\n", r.message,
                seed);
        if (failures == 1)
            snprintf(first, sizeof first, "%s (reproduce: GP_PROPERTY_SEED=0x%" PRIx64 " GP_PROPERTY_SEQUENCES=1)",
                     r.message, seed);
        if (!keep_going)
            break;
    }
    printf("property: %" PRIu64 " sequences passed of %" PRIu64 " (base seed 0x%" PRIx64 "), %" PRIu64
           " events, %" PRIu64 " binds, %" PRIu64 " preemptions, %" PRIu64 " stops, %" PRIu64 " promotions, %" PRIu64
           " tenant changes accepted / %" PRIu64 " rejected, %" PRIu64 " invalid calls refused; P4: %" PRIu64
           " windows reached a tick, %" PRIu64 " bound inside them; P8/P9: %" PRIu64 " shared binds, %" PRIu64
           " trust preemptions, %" PRIu64 " trust refusals, %" PRIu64 " user-limit waits\n",
           c.sequences, count, base, c.events, c.binds, c.preemptions, c.stops, c.promotions, c.accepted_tenant_changes,
           c.rejected_tenant_changes, c.invalid_calls, c.p4_windows, c.p4_bound_in_window, c.shared_binds,
           c.trust_preemptions, c.trust_refusals, c.user_limit_waits);
    if (failures > 0 && keep_going)
        fail_msg("%" PRIu64 " of %" PRIu64 " sequences failed; first: %s", failures, count, first);
    if (failures > 0)
        fail_msg("%s\n(stopped at the first failing sequence; GP_PROPERTY_KEEP_GOING=1 runs them all)", first);
}

static void test_same_seed_same_decisions(void **state)
{
    (void)state;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", PROP_DEFAULT_SEED);
    uint64_t count = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", PROP_DEFAULT_SEQUENCES);
    if (count > PROP_DETERMINISM_SEQUENCES)
        count = PROP_DETERMINISM_SEQUENCES;
    if (count == 0)
        count = 1;
    prop_counters c;
    memset(&c, 0, sizeof c);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t seed = base + 7919 * i;
        seq_result a, b;
        run_sequence(seed, false, -1, &c, &a);
        run_sequence(seed, false, -1, &c, &b);
        /* A property failure is reported by the other test; here both runs
         * must agree, including where and how they stop. */
        if (a.ok != b.ok || a.hash != b.hash || a.events != b.events || strcmp(a.message, b.message) != 0)
            fail_msg("seed 0x%" PRIx64 ": two runs differ (hash %016" PRIx64 " vs %016" PRIx64 ", %d vs %d events)",
                     seed, a.hash, b.hash, a.events, b.events);
    }
}

static void test_snapshot_restore_decides_as_uninterrupted(void **state)
{
    (void)state;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", PROP_DEFAULT_SEED);
    uint64_t count = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", PROP_DEFAULT_SEQUENCES);
    bool verbose = gp_prop_env_u64("GP_PROPERTY_VERBOSE", 0) != 0;
    prop_counters c;
    memset(&c, 0, sizeof c);
    uint64_t swapped = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t seed = base + i;
        seq_result plain, restored;
        run_sequence(seed, false, -1, &c, &plain);
        if (!plain.ok || plain.events < 1)
            continue; /* a property failure is reported by the first test */
        prop_rng pick = {seed ^ 0x736e6170ULL};
        int at = pe_rng_int(&pick, 0, plain.events);
        run_sequence(seed, verbose, at, &c, &restored);
        if (!restored.ok)
            fail_msg("seed 0x%" PRIx64 ", snapshot after event %d: %s (reproduce: GP_PROPERTY_SEED=0x%" PRIx64
                     " GP_PROPERTY_SEQUENCES=1)", seed, at, restored.message, seed);
        if (restored.hash != plain.hash || restored.events != plain.events)
            fail_msg("seed 0x%" PRIx64 ", snapshot after event %d: decisions differ from the uninterrupted run"
                     " (hash %016" PRIx64 " vs %016" PRIx64 ", %d vs %d events; reproduce: GP_PROPERTY_SEED=0x%" PRIx64
                     " GP_PROPERTY_SEQUENCES=1 GP_PROPERTY_VERBOSE=1)", seed, at, restored.hash, plain.hash,
                     restored.events, plain.events, seed);
        swapped++;
    }
    printf("snapshot property: %" PRIu64 " sequences restored from a snapshot at a random event decided as the"
           " uninterrupted run\n", swapped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_sequences_keep_properties),
        cmocka_unit_test(test_same_seed_same_decisions),
        cmocka_unit_test(test_snapshot_restore_decides_as_uninterrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
