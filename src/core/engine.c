/* engine.c - events in, decisions out: the scheduling pass.
 *
 * Every event that reaches jobs enters here: job events (cancel, finish,
 * checkpoint), fleet events (node added, lost, drained, GPU health, a
 * pool's settings) and
 * tenant changes, and the pass.  fleet.c and tenants.c validate an event
 * and keep their own books; what it means for jobs (stop and requeue,
 * demotion, trust) is decided here.  A pass (gp_engine_tick)
 * does, in order:
 *
 *   1. stop running jobs past their time limit (STOP "time_limit"), and
 *      end the grace of preempted, cancelled or time-limited jobs whose
 *      deadline passed: their GPUs are released (to whoever claimed them)
 *      and they are requeued with the same id, or cancelled, or failed;
 *   2. promote burstable jobs whose tenant has guarantee free again;
 *   3. phase 1: every pending job that would run guaranteed, in fair
 *      order: place it, else reclaim from borrowers, else reserve capacity
 *      for it (if it is the first blocked one of its GPU type);
 *   4. phase 2: every other admissible pending job (burstable), in fair
 *      order: place it if it neither delays a reservation nor takes
 *      capacity held for non-lending tenants, else reserve or wait;
 *   5. drop this pass's reservations.
 *
 * Guaranteed work goes first, so a team's floor is served before anybody
 * borrows; within a phase the hierarchical DRF order decides.
 *
 * Example: fleet 16 H100; nlp {guarantee 16} and vision {guarantee 0}.
 * t=0: vision submits 4 jobs of 1x4 -> phase 2 places all four
 * (burstable).  t=60: nlp submits 1x8 -> phase 1: nothing free, reclaim
 * picks two vision jobs (PREEMPT, grace 30 s), nlp waits "reclaiming".
 * t=90: the tick ends the grace, the two victims return to pending, and
 * phase 1 places nlp's job on their claimed GPUs; phase 2 finds no room for
 * the victims, which wait.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gp_engine_config gp_engine_config_default(void)
{
    gp_engine_config c = {.preempt_cooldown_s = 600,
                          .max_preemptions = 3,
                          .fair_share_reclaim = false,
                          .max_reclaim_searches = 256,
                          .overdue_grace_s = 300,
                          .mig_reconfigure_interval_s = 60};
    return c;
}

gp_engine_config gp__config_resolve(const gp_engine_config *cfg)
{
    gp_engine_config c = cfg ? *cfg : gp_engine_config_default();
    if (c.preempt_cooldown_s < 0)
        c.preempt_cooldown_s = 0;
    if (c.max_preemptions < 0)
        c.max_preemptions = 0;
    if (c.max_reclaim_searches < 1)
        c.max_reclaim_searches = 1;
    if (c.overdue_grace_s < 1)
        c.overdue_grace_s = 1;
    if (c.mig_reconfigure_interval_s < 0)
        c.mig_reconfigure_interval_s = 0;
    if (c.clock_resolution_s < 0)
        c.clock_resolution_s = 0;
    return c;
}

gp_engine *gp_engine_new(const gp_engine_config *cfg)
{
    gp_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->cfg = gp__config_resolve(cfg);
    gp__fleet_init(&e->fleet);
    if (gp__pool_get(e, "default") == GP__NONE) {
        gp_engine_free(e);
        return NULL;
    }
    e->last_placed_tenant = GP__NONE;
    return e;
}

void gp_engine_free(gp_engine *e)
{
    if (!e)
        return;
    gp__fleet_free(&e->fleet);
    gp__jobs_free(e); /* the tenants' queues too: before the tenants go */
    gp__tenants_free(e);
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        free(e->reservation[t].nodes);
    gp__scratch_free(&e->scratch);
    gp__share_scores_forget(e);
    free(e->recent);
    free(e->reclaim_buf);
    free(e->replay_front);
    free(e->cand_nodes);
    free(e->barred);
    gp__bookings_free(e);
    free(e->ded_nodes);
    free(e->owned_nodes);
    free(e->pool);
    free(e->ent);
    free(e->reclaiming);
    free(e->entitlement);
    free(e->decisions);
    free(e);
}

static gp_err time_check(const gp_engine *e, int64_t now, gp_error *err)
{
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards: %lld < %lld", (long long)now,
                            (long long)e->now);
    return GP_OK;
}

static gp_err job_find(const gp_engine *e, uint64_t id, uint32_t *job, gp_error *err)
{
    *job = gp__job_lookup(e, id);
    if (*job == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)id);
    return GP_OK;
}

/* ---- binding and releasing ---- */

static void user_charge(gp_engine *e, const gp__job *j, const gp_res *demand, int sign)
{
    if (j->user == GP__NONE)
        return;
    gp_res *u = &e->users[j->user].usage;
    for (int d = 0; d < GP_DIMS; d++)
        u->v[d] += sign * demand->v[d];
}

static bool bind(gp_engine *e, uint32_t job, int type, gp_class cls)
{
    gp__job *j = &e->jobs[job];
    size_t n = gp__placed_count(j);
    j->placed = malloc((n ? n : 1) * sizeof *j->placed);
    j->slot = gp__job_shared(j) ? malloc(n * sizeof *j->slot) : NULL;
    if (!j->placed || (gp__job_shared(j) && !j->slot) || !gp__running_add(e, job, type)) {
        free(j->placed);
        free(j->slot);
        j->placed = NULL;
        j->slot = NULL;
        return false;
    }
    memcpy(j->placed, e->scratch.out, n * sizeof *j->placed);
    if (j->slot)
        memcpy(j->slot, e->scratch.slot, n * sizeof *j->slot);
    gp__place_commit(e, job, type);
    gp__node_tag(e, j, +1);
    gp__queue_remove(e, job);
    j->bound_type = type;
    j->cls = cls;
    j->bind_time = e->now;
    j->withdrawn = false;
    gp_res demand;
    gp__job_demand(e, j, type, &demand); /* milli_total is known now */
    gp__tenant_charge(e, j->tenant, &demand, cls, +1);
    user_charge(e, j, &demand, +1);
    gp__decision_push(e, GP_DEC_BIND, j->id);
    const char *tenant = e->tenants[j->tenant].path;
    if (cls == GP_CLASS_GUARANTEED)
        gp__job_transition(e, job, GP_JOB_ADMITTED, "admitted as guaranteed: within the guarantee of %s", tenant);
    else
        gp__job_transition(e, job, GP_JOB_ADMITTED,
                           "admitted as burstable: %s borrows idle capacity beyond its guarantee", tenant);
    const gp__node *first = &e->fleet.nodes[e->fleet.gpus[j->placed[0]].node];
    if (j->gpus == 0 && !gp__job_shared(j))
        gp__job_transition(e, job, GP_JOB_RUNNING, "bound: %d CPU-only %s (first node %s)", j->replicas,
                           j->replicas == 1 ? "replica" : "replicas", first->name);
    else if (gp__job_shared(j))
        gp__job_transition(e, job, GP_JOB_RUNNING, "bound to %zu %s %s of %s GPUs (%.3f GPUs, first node %s)", n,
                           gp_isolation_name(j->isolation), n == 1 ? "slice" : "slices", e->fleet.types[type],
                           (double)j->milli_total / 1000.0, first->name);
    else
        gp__job_transition(e, job, GP_JOB_RUNNING, "bound to %zu %s %s (%s topology, first node %s in block %s)",
                           (size_t)j->replicas * j->gpus, e->fleet.types[type],
                           (size_t)j->replicas * j->gpus == 1 ? "GPU" : "GPUs", gp_topology_name(j->topology),
                           first->name, e->fleet.blocks[first->block].name);
    gp__usage_open(e, job);
    j->wait = (gp_wait){.code = GP_WAIT_NONE, .dim = -1, .tenant = GP__NONE};
    e->last_placed_tenant = j->tenant;
    if (!gp__job_shared(j) && gp__borrows_reclaimably(e, j))
        e->borrowed[type] += (int64_t)j->replicas * j->gpus;
    if (cls == GP_CLASS_BURSTABLE)
        e->pool_pass = 0; /* a possible victim the pass's list lacks: made again if a search follows */
    e->stats.pass_placed++;
    e->stats.total_placed++;
    if (j->victims_left > 0) /* placed without the victims still in grace */
        gp__reclaim_withdraw(e, job, "was placed without it");
    return true;
}

static void release(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (!j->placed)
        return;
    gp_res demand;
    gp__job_demand(e, j, j->bound_type, &demand);
    gp__usage_close(e, job);
    gp__tenant_charge(e, j->tenant, &demand, j->cls, -1);
    user_charge(e, j, &demand, -1);
    e->n_miss = 0; /* room again */
    gp__reclaim_room(e, j->bound_type);
    gp__running_remove(e, job);
    gp__node_tag(e, j, -1);
    gp__place_release(e, job);
    j->cls = GP_CLASS_NONE;
}

/* The job was a victim: tell its reclaimer one victim fewer is in grace. */
static void victim_done(gp_engine *e, gp__job *j)
{
    if (j->reclaimed_by == 0)
        return;
    uint32_t r = gp__job_lookup(e, j->reclaimed_by);
    if (r != GP__NONE && e->jobs[r].victims_left > 0)
        e->jobs[r].victims_left--;
    j->reclaimed_by = 0;
}

static void requeue(gp_engine *e, uint32_t job, const char *why)
{
    gp__job *j = &e->jobs[job];
    if (j->time_limited) {
        gp__job_transition(e, job, GP_JOB_FAILED, "time_limit: ran past its limit of %llds (%s)",
                           (long long)j->limit, why);
        return;
    }
    if (j->cancel_requested) {
        gp__job_transition(e, job, GP_JOB_CANCELLED, "cancelled: %s", why);
        return;
    }
    gp__job_transition(e, job, GP_JOB_PENDING, "requeued: %s", why);
    j->requeues++;
    j->wait = (gp_wait){.code = GP_WAIT_NEW, .dim = -1, .tenant = GP__NONE};
    gp__queue_insert(e, job);
}

/* A preempting (or cancelling) job's grace is over or it reported stopped. */
static void grace_over(gp_engine *e, uint32_t job, const char *how)
{
    gp__job *j = &e->jobs[job];
    char why[GP_REASON_MAX];
    if (j->reclaimed_by)
        snprintf(why, sizeof why, "%s; its GPUs go to job %llu", how, (unsigned long long)j->reclaimed_by);
    else
        snprintf(why, sizeof why, "%s", how);
    victim_done(e, j);
    release(e, job);
    requeue(e, job, why);
}

/* Stop a job at once (node lost, GPU failed): STOP with grace 0, release,
 * requeue as pending with the same id. */
static void job_stop_requeue(gp_engine *e, uint32_t job, const char *why)
{
    gp__job *j = &e->jobs[job];
    gp_decision *d = gp__decision_push(e, GP_DEC_STOP, j->id);
    if (d)
        snprintf(d->reason, sizeof d->reason, "%s", why);
    victim_done(e, j);
    release(e, job);
    requeue(e, job, why);
}

/* ---- fleet events ----
 * fleet.c validates an event and keeps the fleet's books (capacity, the
 * free-capacity index); what a node lost or a GPU failed means for jobs is
 * decided here: every job with a replica there is stopped at once and
 * requeued with the same id.  A node added or back, and a drain, touch no
 * job (a drain waits for its jobs to end). */

/* Stop every job that has a GPU on node n (all of them, or only those on
 * GPU `only` when only >= 0), requeueing them. */
static void stop_jobs_on(gp_engine *e, uint32_t n, int only, const char *why)
{
    gp__node *node = &e->fleet.nodes[n];
    for (int i = 0; i < node->gpu_count; i++) {
        if (only >= 0 && i != only)
            continue;
        uint32_t owner = e->fleet.gpus[node->gpu_first + i].owner;
        if (owner)
            job_stop_requeue(e, owner - 1, why);
    }
    for (size_t r = e->n_running; r-- > 0;) { /* slices of shared GPUs there, CPU-only replicas */
        if (r >= e->n_running)
            continue;
        uint32_t job = e->running[r];
        const gp__job *j = &e->jobs[job];
        if (!gp__job_shared(j) && (j->gpus > 0 || only >= 0))
            continue; /* whole GPUs were handled above; CPU-only jobs go with the whole node */
        for (int k = 0; k < j->replicas; k++) {
            const gp__gpu *g = &e->fleet.gpus[j->placed[k]];
            if (g->node == n && (only < 0 || g->index == only)) {
                job_stop_requeue(e, job, why);
                break;
            }
        }
    }
}

gp_err gp_engine_node_add(gp_engine *e, const gp_node_spec *spec, int64_t now, gp_error *err)
{
    gp_err rc = time_check(e, now, err);
    if (rc)
        return rc;
    bool up = false;
    rc = gp__fleet_node_add(e, spec, &up, err);
    if (rc == GP_OK && up) {
        e->now = now;
        gp__reclaim_room(e, -1);
    }
    return rc;
}

gp_err gp_engine_node_lost(gp_engine *e, const char *name, int64_t now, gp_error *err)
{
    uint32_t n;
    gp_err rc = gp__node_event(e, name, now, &n, err);
    if (rc)
        return rc;
    if (!gp__fleet_node_down(&e->fleet, n))
        return GP_OK;
    char why[GP_REASON_MAX];
    snprintf(why, sizeof why, "node %s was lost", e->fleet.nodes[n].name);
    stop_jobs_on(e, n, -1, why);
    gp__fleet_node_settle(&e->fleet, n);
    gp__booking_gpus_lost(e);
    return GP_OK;
}

gp_err gp_engine_node_drain(gp_engine *e, const char *name, bool drain, int64_t now, gp_error *err)
{
    uint32_t n;
    gp_err rc = gp__node_event(e, name, now, &n, err);
    if (rc)
        return rc;
    gp__fleet_node_drain(e, n, drain);
    gp__reclaim_room(e, -1);
    return GP_OK;
}

gp_err gp_engine_gpu_health(gp_engine *e, const char *name, int gpu_index, bool healthy, int64_t now,
                            gp_error *err)
{
    uint32_t n;
    if (e && name && gp_strmap_get(&e->fleet.node_by_name, name, &n) &&
        (gpu_index < 0 || gpu_index >= e->fleet.nodes[n].gpu_count)) /* refused before anything moves */
        return gp_error_set(err, GP_ERR_INVALID, "gpu_index", "node %s has GPUs 0..%d, not %d", name,
                            e->fleet.nodes[n].gpu_count - 1, gpu_index);
    gp_err rc = gp__node_event(e, name, now, &n, err);
    if (rc)
        return rc;
    if (!gp__fleet_gpu_health(&e->fleet, n, gpu_index, healthy))
        return GP_OK;
    gp__reclaim_room(e, -1);
    const gp__node *node = &e->fleet.nodes[n];
    const gp__gpu *g = &e->fleet.gpus[node->gpu_first + gpu_index];
    if (!healthy && (g->owner || g->jobs)) {
        char why[GP_REASON_MAX];
        snprintf(why, sizeof why, "GPU %d (%s) of node %s turned unhealthy", gpu_index, g->uuid, node->name);
        stop_jobs_on(e, n, gpu_index, why);
    }
    gp__fleet_node_settle(&e->fleet, n);
    if (!healthy)
        gp__booking_gpus_lost(e);
    return GP_OK;
}

gp_err gp_engine_gpu_type_declare(gp_engine *e, const char *name, int64_t now, gp_error *err)
{
    gp_err rc = time_check(e, now, err);
    if (rc)
        return rc;
    if (!name || !name[0] || !memchr(name, '\0', GP_NAME_MAX))
        return gp_error_set(err, GP_ERR_INVALID, "name", "a GPU type's name is 1..%d characters", GP_NAME_MAX - 1);
    if (gp__fleet_type_intern(&e->fleet, name) < 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "name", "a fleet holds at most %d GPU types", GP_MAX_GPU_TYPES);
    e->now = now;
    return GP_OK;
}

/* A pool's score or time-slice factor (fleet.c keeps the pools): placement
 * may look differently now, so reclaim searches that found nothing and the
 * remembered share scores are forgotten. */
gp_err gp_engine_pool_set(gp_engine *e, const char *pool, const gp_pool_spec *spec, gp_error *err)
{
    if (e && spec && strnlen(spec->owner, sizeof spec->owner) == sizeof spec->owner)
        return gp_error_set(err, GP_ERR_INVALID, "owner", "owner is a tenant path of at most %d characters",
                            GP_PATH_MAX - 1);
    gp_err rc = gp__pool_set(e, pool, spec, err);
    if (rc)
        return rc;
    gp__reclaim_room(e, -1);
    gp__share_scores_forget(e);
    return GP_OK;
}

/* ---- tenant events ----
 * tenants.c validates and applies a change; what it means for jobs is
 * decided here.  Guarantees: running guaranteed work over a guarantee that
 * shrank is demoted to burstable (gp__demote_over_guarantee).  Trust: a change can make tenants untrusted (the tenant,
 * or a whole subtree when an ancestor changes).  Untrusted work may run
 * only on whole GPUs or on MIG GPUs of its own (sharing.c), so running
 * work placed while the tenant was trusted may have to go: its MPS and
 * time-sliced jobs, and MIG jobs that share a GPU with another tenant, are
 * preempted with their checkpoint grace and requeued; they then wait with
 * GP_WAIT_TRUST (the pass checks trust before it places, consider()) until
 * they are cancelled or an admin trusts the tenant again.  A MIG job alone
 * on its GPUs keeps running; the GPUs become the tenant's own.  Whole-GPU
 * work is untouched.
 *
 * Example: a/x runs a time-sliced job with grace 30 s; at t=100 an admin
 * makes org a untrusted: PREEMPT (grace 30, "tenant a/x is untrusted ...");
 * the tick at t=130 requeues it and it waits "tenant a/x is untrusted
 * (inherited from a): timeslice is not allowed ...". */

static void trust_preempt(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    const char *tenant = e->tenants[j->tenant].path;
    const char *source = e->tenants[gp__trust_source(e, j->tenant)].path;
    const char *iso = gp_isolation_name(j->isolation);
    int64_t lost = gp__work_lost(e, j);
    gp_decision *d = gp__decision_push(e, GP_DEC_PREEMPT, j->id);
    if (d) {
        d->grace_s = j->grace;
        d->work_lost_gpu_s = lost;
        snprintf(d->reason, sizeof d->reason, "tenant %s is untrusted (set on %s): its %s work may not share a GPU",
                 tenant, source, iso);
    }
    gp__job_transition(e, job, GP_JOB_PREEMPTING,
                       "preempted: tenant %s is untrusted (set on %s), %s work may not share a GPU; %lld GPU-s since "
                       "the last checkpoint",
                       tenant, source, iso, (long long)lost);
    gp__job_grace_begin(e, job);
    j->last_preempted = e->now;
    j->preemptions++;
    if (j->grace == 0)
        grace_over(e, job, "preempted with no grace");
}

static void enforce_trust(gp_engine *e)
{
    for (size_t i = e->n_running; i-- > 0;) {
        if (i >= e->n_running)
            continue;
        uint32_t job = e->running[i];
        const gp__job *j = &e->jobs[job];
        if (j->state != GP_JOB_RUNNING || !e->tenants[j->tenant].untrusted || !gp__job_shared(j))
            continue;
        if (gp__trust_forbids(e, j) || !gp__mig_keep_untrusted(e, job))
            trust_preempt(e, job);
    }
}

gp_err gp_engine_tenant_set(gp_engine *e, const char *path, const gp_tenant_spec *spec, int64_t now,
                            gp_error *err)
{
    gp_err rc = gp__tenant_set(e, path, spec, now, err);
    if (rc)
        return rc;
    gp__demote_over_guarantee(e); /* a guarantee that shrank: its excess runs burstable */
    enforce_trust(e);
    return GP_OK;
}

/* ---- clock resolution ----
 * How conservative every grace deadline is (gp__grace_deadline, jobs.c). */

gp_err gp_engine_clock_resolution_set(gp_engine *e, int64_t seconds, int64_t now, gp_error *err)
{
    gp_err rc = time_check(e, now, err);
    if (rc)
        return rc;
    if (seconds < 0 || seconds > 60)
        return gp_error_set(err, GP_ERR_INVALID, "clock_resolution_s", "clock resolution must be 0..60 s, not %lld",
                            (long long)seconds);
    e->now = now;
    e->cfg.clock_resolution_s = seconds;
    e->changes++;
    return GP_OK;
}

int64_t gp_engine_clock_resolution(const gp_engine *e)
{
    return e->cfg.clock_resolution_s;
}

/* ---- time limits ----
 * A running job whose time limit (counted from its bind) is up is stopped
 * like a cancel: STOP with its checkpoint grace and reason "time_limit"
 * (the node agent enforces it).  When the grace ends or its node reports it
 * stopped it ends failed (requeue above); one that finishes successfully
 * within the grace succeeded. */

static bool past_time_limit(const gp__job *j, int64_t now)
{
    return j->state == GP_JOB_RUNNING && j->limit > 0 && now - j->bind_time >= j->limit;
}

static void stop_past_time_limit(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    gp_decision *d = gp__decision_push(e, GP_DEC_STOP, j->id);
    if (d) {
        d->grace_s = j->grace;
        snprintf(d->reason, sizeof d->reason, "time_limit");
    }
    j->time_limited = true;
    gp__job_grace_begin(e, job);
    gp__job_transition(e, job, GP_JOB_PREEMPTING, "time_limit: ran past its limit of %llds; stopping within %llds",
                       (long long)j->limit, (long long)j->grace);
}

/* ---- job events ---- */

/* The id of the live booking of the job's tenant that s names (0: none
 * named); GP_ERR_NOT_FOUND "booking" when there is no such booking. */
static gp_err job_booking(const gp_engine *e, const gp_job_spec *s, uint64_t *id, gp_error *err)
{
    *id = 0;
    if (!s->booking || !s->booking[0])
        return GP_OK;
    uint32_t b = gp__booking_live(e, s->booking), t;
    if (b == GP__NONE || !s->tenant || !gp_strmap_get(&e->tenant_by_path, s->tenant, &t) ||
        e->bookings[b].tenant != t)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "booking", "no booking %s of tenant %s is planned or active",
                            s->booking, s->tenant ? s->tenant : "");
    if ((int64_t)s->replicas * (s->gpus ? s->gpus : 1) > e->bookings[b].n_held)
        return gp_error_set(err, GP_ERR_INVALID, "booking", "the job needs more GPUs than booking %s holds (%d)",
                            s->booking, e->bookings[b].n_held);
    *id = e->bookings[b].id;
    return GP_OK;
}

gp_err gp_engine_job_submit(gp_engine *e, const gp_job_spec *s, int64_t now, gp_error *err)
{
    uint32_t job;
    uint64_t booking;
    gp_err rc = job_booking(e, s, &booking, err);
    if (rc || (rc = gp__job_create(e, s, now, &job, err)))
        return rc;
    e->jobs[job].booking = booking;
    const gp__job *j = &e->jobs[job];
    gp__workload_observe(e, j); /* the fragmentation measure learns the mix */
    gp_decision *d = gp__decision_push(e, GP_DEC_TRANSITION, j->id);
    if (d) {
        d->from = d->to = GP_JOB_PENDING;
        snprintf(d->reason, sizeof d->reason, "submitted to %s", e->tenants[j->tenant].path);
    }
    return GP_OK;
}

gp_err gp_engine_job_cancel(gp_engine *e, uint64_t id, int64_t now, gp_error *err)
{
    uint32_t job;
    gp_err rc;
    if ((rc = time_check(e, now, err)) || (rc = job_find(e, id, &job, err)))
        return rc;
    gp__job *j = &e->jobs[job];
    switch (j->state) {
    case GP_JOB_PENDING:
        e->now = now;
        gp__queue_remove(e, job);
        gp__reclaim_withdraw(e, job, "was cancelled");
        gp__claims_forget(e, job);
        gp__job_transition(e, job, GP_JOB_CANCELLED, "cancelled while pending");
        return GP_OK;
    case GP_JOB_ADMITTED:
    case GP_JOB_RUNNING: {
        e->now = now;
        gp_decision *d = gp__decision_push(e, GP_DEC_STOP, j->id);
        if (d) {
            d->grace_s = j->grace;
            snprintf(d->reason, sizeof d->reason, "cancel requested");
        }
        j->cancel_requested = true;
        gp__job_grace_begin(e, job);
        gp__job_transition(e, job, GP_JOB_PREEMPTING, "cancel requested; stopping within %llds",
                           (long long)j->grace);
        if (j->grace == 0)
            grace_over(e, job, "stopped");
        return GP_OK;
    }
    case GP_JOB_PREEMPTING:
        e->now = now;
        j->cancel_requested = true;
        return GP_OK;
    default:
        return gp_error_set(err, GP_ERR_CONFLICT, "id", "job %llu already ended (%s)", (unsigned long long)id,
                            gp_job_state_name(j->state));
    }
}

/* Why a job restarting after a failure waits: its back-off, until eligible_at. */
static gp_wait backoff_wait(const gp__job *j)
{
    return (gp_wait){.code = GP_WAIT_BACKOFF, .dim = -1, .tenant = GP__NONE, .a = j->restarts, .b = j->max_restarts,
                     .time = j->eligible_at};
}

/* A running job failed and its restart_policy restarts it (restart.c):
 * requeued whole with the same id, placed again after its back-off. */
static void restart_after_failure(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    victim_done(e, j);
    release(e, job);
    j->restarts++;
    j->eligible_at = e->now + gp__restart_backoff(j->restarts);
    gp__job_transition(e, job, GP_JOB_PENDING,
                       "requeued: a replica failed; restart %d of %d (restart_policy on-failure), eligible again at "
                       "t=%lld",
                       j->restarts, j->max_restarts, (long long)j->eligible_at);
    j->wait = backoff_wait(j);
    gp__queue_insert(e, job);
}

gp_err gp_engine_job_finished(gp_engine *e, uint64_t id, gp_exit how, int64_t now, gp_error *err)
{
    uint32_t job;
    gp_err rc;
    if ((rc = time_check(e, now, err)) || (rc = job_find(e, id, &job, err)))
        return rc;
    if (how < GP_EXIT_SUCCEEDED || how > GP_EXIT_STOPPED)
        return gp_error_set(err, GP_ERR_INVALID, "how", "exit must be succeeded, failed or stopped");
    gp__job *j = &e->jobs[job];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_ADMITTED && j->state != GP_JOB_PREEMPTING)
        return gp_error_set(err, GP_ERR_CONFLICT, "id", "job %llu is not running (%s)", (unsigned long long)id,
                            gp_job_state_name(j->state));
    e->now = now;
    if (j->state == GP_JOB_PREEMPTING && how != GP_EXIT_SUCCEEDED) {
        grace_over(e, job, "stopped within its grace");
        return GP_OK;
    }
    if (j->state == GP_JOB_RUNNING && j->withdrawn && how == GP_EXIT_STOPPED) {
        /* it was signalled, then told to go on: stopping was an answer to us */
        grace_over(e, job, "stopped after its preemption was withdrawn");
        return GP_OK;
    }
    if (how == GP_EXIT_FAILED && gp__restart_wanted(j)) {
        restart_after_failure(e, job);
        return GP_OK;
    }
    victim_done(e, j);
    release(e, job);
    if (how == GP_EXIT_SUCCEEDED)
        gp__job_transition(e, job, GP_JOB_SUCCEEDED, "finished successfully");
    else if (how == GP_EXIT_FAILED && j->restart == GP_RESTART_ON_FAILURE)
        gp__job_transition(e, job, GP_JOB_FAILED, "failed; no restarts left (%d of %d used)", j->restarts,
                           j->max_restarts);
    else
        gp__job_transition(e, job, GP_JOB_FAILED, how == GP_EXIT_FAILED ? "failed" : "stopped without being asked");
    return GP_OK;
}

gp_err gp_engine_job_checkpointed(gp_engine *e, uint64_t id, int64_t now, gp_error *err)
{
    uint32_t job;
    gp_err rc;
    if ((rc = time_check(e, now, err)) || (rc = job_find(e, id, &job, err)))
        return rc;
    gp__job *j = &e->jobs[job];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_PREEMPTING)
        return gp_error_set(err, GP_ERR_CONFLICT, "id", "job %llu is not running", (unsigned long long)id);
    e->now = now;
    j->last_checkpoint = now;
    return GP_OK;
}

gp_err gp_engine_job_forget(gp_engine *e, uint64_t id, gp_error *err)
{
    uint32_t job;
    gp_err rc;
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if ((rc = job_find(e, id, &job, err)))
        return rc;
    gp_job_state s = e->jobs[job].state;
    if (s != GP_JOB_SUCCEEDED && s != GP_JOB_FAILED && s != GP_JOB_CANCELLED)
        return gp_error_set(err, GP_ERR_CONFLICT, "id", "job %llu has not ended", (unsigned long long)id);
    gp__job_release_slot(e, job);
    return GP_OK;
}

/* ---- the pass ---- */

typedef struct pass_ctx {
    gp_class phase;
    int64_t lend_reserve[GP_MAX_GPU_TYPES];
} pass_ctx;

static bool lending_blocks(const gp_engine *e, const gp__job *j, int type, const pass_ctx *p)
{
    return p->phase == GP_CLASS_BURSTABLE && p->lend_reserve[type] > 0 &&
           e->fleet.free[type] - (int64_t)j->replicas * j->gpus <
               p->lend_reserve[type] - gp__lending_reserve_own(e, j->tenant, type);
}

/* May this job use the nodes held for the reservation of `type`?  Only if
 * it ends before the reservation starts (by its estimate, else its time
 * limit).  When no start is known (running jobs that nothing bounds must
 * end first), the held nodes are lent only to burstable work and only when
 * the head runs guaranteed, so that it can reclaim them. */
static bool ends_before(const gp_engine *e, const gp__job *j, int type, const pass_ctx *p)
{
    const gp__reservation *r = gp__reservation_for(e, type);
    if (!r || r->job == (uint32_t)(j - e->jobs))
        return false;
    if (r->start == GP__START_UNKNOWN)
        return p->phase == GP_CLASS_BURSTABLE && r->head_guaranteed;
    int64_t duration = gp__job_duration(j);
    return duration > 0 && e->now + duration <= r->start;
}

/* ---- shapes that found no room ----
 * Within a pass capacity only shrinks until something is released, so a
 * job that found no room leaves none for any job of the same kind (type,
 * topology, isolation, trust domain) that needs as much or more of every
 * resource.  With thousands of waiting jobs this turns most failures into
 * a lookup.  A job holding claims sees more than others: it always looks. */

static struct gp__miss miss_key(const gp_engine *e, const gp__job *j, int type)
{
    struct gp__miss k = {.isolation = (uint8_t)j->isolation,
                         .type = (uint8_t)type,
                         .topology = (uint8_t)j->topology,
                         .trust = GP__NONE,
                         .milli = gp__replica_milli(e, j, NULL),
                         .replicas = j->replicas,
                         .cpu = j->cpu,
                         .mem = j->mem + j->share_mem};
    if (e->fenced) /* the fence differs by tenant (dedicated.c) */
        k.trust = j->tenant;
    else if (j->isolation == GP_ISO_MPS || j->isolation == GP_ISO_TIMESLICE)
        k.trust = gp__job_org(e, j);
    else if (j->isolation == GP_ISO_MIG && e->tenants[j->tenant].untrusted)
        k.trust = j->tenant;
    return k;
}

/* Only where a look is costly: slices (a walk over shared GPUs or a
 * fragmentation score per node) and block gangs (every block); a plain
 * whole-GPU look is already a 16-step count. */
static bool worth_remembering(const gp__job *j)
{
    return j->n_claimed == 0 && (gp__job_shared(j) || j->topology == GP_TOPO_BLOCK);
}

static bool miss_found(const gp_engine *e, const gp__job *j, int type)
{
    struct gp__miss k = miss_key(e, j, type);
    for (size_t i = 0; i < e->n_miss; i++) {
        const struct gp__miss *m = &e->miss[i];
        if (m->isolation == k.isolation && m->type == k.type && m->topology == k.topology && m->trust == k.trust &&
            k.milli >= m->milli && k.replicas >= m->replicas && k.cpu >= m->cpu && k.mem >= m->mem)
            return true;
    }
    return false;
}

/* The test first, inlined: most looks are plain whole-GPU ones. */
static inline bool missed(const gp_engine *e, const gp__job *j, int type)
{
    return worth_remembering(j) && miss_found(e, j, type);
}

static void miss_note(gp_engine *e, const gp__job *j, int type)
{
    if (worth_remembering(j) && e->n_miss < GP__MISSES)
        e->miss[e->n_miss++] = miss_key(e, j, type);
}

/* Jobs placed by node score look at every accepted type at once. */
static bool try_scored(gp_engine *e, uint32_t job, uint8_t types, const pass_ctx *p, bool *lend_blocked)
{
    gp__job *j = &e->jobs[job];
    uint8_t usable = 0;
    for (int t = 0; t < e->fleet.n_types; t++) {
        if (!(types & (1u << t)) || missed(e, j, t))
            continue;
        if (lending_blocks(e, j, t, p))
            *lend_blocked = true;
        else
            usable |= (uint8_t)(1u << t);
    }
    int type;
    if (usable && gp__place_scored(e, j, usable, &type))
        return bind(e, job, type, p->phase);
    for (int t = 0; t < e->fleet.n_types; t++)
        if (usable & (1u << t))
            miss_note(e, j, t);
    return false;
}

static bool try_types(gp_engine *e, uint32_t job, uint8_t types, const pass_ctx *p, bool *lend_blocked)
{
    gp__job *j = &e->jobs[job];
    if (gp__scored_applies(e, j))
        return try_scored(e, job, types, p, lend_blocked);
    for (int pass = 0; pass < 2; pass++) /* 0: free nodes, 1: also held ones (short jobs) */
        for (int t = 0; t < e->fleet.n_types; t++) {
            if (!(types & (1u << t)) || (pass == 1 && !ends_before(e, j, t, p)))
                continue;
            if (lending_blocks(e, j, t, p)) {
                *lend_blocked = true;
                continue;
            }
            if (pass == 0 && missed(e, j, t))
                continue;
            if (gp__place_find_unscored(e, j, t, pass == 1))
                return bind(e, job, t, p->phase);
            if (pass == 0)
                miss_note(e, j, t);
        }
    return false;
}

/* gp__place_possible for a job whose look found no room.  Its answer
 * depends on the job's shape (fixed at submit) and the fleet's empty_*
 * tables, which only gp__fleet_recount changes (it counts itself in
 * shape_count): a job found possible stays possible until the next
 * recount, so a job that waits pass after pass asks once.  The answer is
 * the same; the wait it leaves is the same.
 * Example: a 1x8 H100 job that waits 300 passes on a full fleet whose
 * nodes do not change is checked in its first pass only. */
static gp_wait possible_after_miss(const gp_engine *e, gp__job *j)
{
    if (j->possible_shape == e->fleet.shape_count)
        return (gp_wait){.code = GP_WAIT_NONE, .dim = -1, .tenant = GP__NONE};
    gp_wait w = gp__place_possible(e, j);
    if (w.code == GP_WAIT_NONE)
        j->possible_shape = e->fleet.shape_count;
    return w;
}

/* Victims with no grace are gone at once; then the job may fit now. */
static void end_zero_grace_victims(gp_engine *e, const gp__job *j)
{
    for (size_t i = e->n_running; i-- > 0;) {
        uint32_t v = e->running[i];
        if (e->jobs[v].state == GP_JOB_PREEMPTING && e->jobs[v].reclaimed_by == j->id &&
            e->jobs[v].deadline <= e->now)
            grace_over(e, v, "preempted with no grace");
    }
}

static void wait_for_capacity(gp_engine *e, gp__job *j, uint8_t types)
{
    for (int t = 0; t < e->fleet.n_types; t++) {
        const gp__reservation *r = gp__reservation_for(e, t);
        if ((types & (1u << t)) && r && r->job != (uint32_t)(j - e->jobs)) {
            j->wait = (gp_wait){.code = GP_WAIT_RESERVATION, .dim = t, .tenant = e->jobs[r->job].tenant,
                                .job = e->jobs[r->job].id, .time = r->start};
            return;
        }
    }
    int t0 = 0;
    while (t0 < e->fleet.n_types && !(types & (1u << t0)))
        t0++;
    j->wait = (gp_wait){.code = GP_WAIT_CAPACITY, .dim = t0, .tenant = e->last_placed_tenant,
                        .a = t0 < e->fleet.n_types ? e->fleet.free[t0] : 0, .b = (int64_t)j->replicas * j->gpus};
}

/* A guaranteed-eligible job kept out by a limit that borrowers fill. */
static void reclaim_quota(gp_engine *e, uint32_t job, uint8_t types, const gp_wait *limit)
{
    gp__job *j = &e->jobs[job];
    j->pass_seen = e->pass;
    e->stats.pass_considered++;
    if (j->victims_left > 0)
        return; /* still waiting for the victims' grace (wait says so) */
    if (j->n_claimed > 0)
        gp__claims_forget(e, job); /* GPUs claimed by an earlier reclaim would stand idle behind the limit */
    for (int t = 0; t < e->fleet.n_types; t++)
        if ((types & (1u << t)) && gp__reclaim_limit(e, job, t)) {
            end_zero_grace_victims(e, j);
            return;
        }
    j->wait = *limit;
}

/* Preempt victims for the job on the first of its types where `reclaim`
 * finds some; victims without grace are gone at once, and then it is
 * placed if it fits.  False when no victims were found. */
static bool reclaim_then_place(gp_engine *e, uint32_t job, uint8_t types, const pass_ctx *p, bool *lend_blocked,
                               bool (*reclaim)(gp_engine *, uint32_t, int))
{
    gp__job *j = &e->jobs[job];
    for (int t = 0; t < e->fleet.n_types; t++) {
        if (!(types & (1u << t)) || !reclaim(e, job, t))
            continue;
        end_zero_grace_victims(e, j);
        if (j->victims_left == 0) {
            gp__claims_drop(e, job);
            if (try_types(e, job, types, p, lend_blocked)) {
                gp__claims_forget(e, job);
                return true;
            }
            gp__claims_forget(e, job);
        }
        return true;
    }
    return false;
}

static void consider(gp_engine *e, uint32_t job, const pass_ctx *p)
{
    gp__job *j = &e->jobs[job];
    if (j->pass_seen == e->pass)
        return;
    if (j->held) { /* held (hold.c): nothing to place until a release; claims it made go */
        j->pass_seen = e->pass;
        gp__claims_forget(e, job);
        j->wait = (gp_wait){.code = GP_WAIT_HELD, .dim = -1, .tenant = GP__NONE};
        return;
    }
    if (gp__trust_forbids(e, j)) { /* its tenant became untrusted after submit: before a back-off, which ends */
        j->pass_seen = e->pass;
        e->stats.pass_considered++;
        gp__claims_forget(e, job); /* GPUs it was reclaiming are nobody's now */
        j->wait = (gp_wait){.code = GP_WAIT_TRUST, .dim = -1, .tenant = gp__trust_source(e, j->tenant)};
        return;
    }
    if (j->eligible_at > e->now) { /* restarting after a failure: its back-off is not over (wait says so) */
        j->pass_seen = e->pass;
        j->wait = backoff_wait(j);
        return;
    }
    uint8_t guaranteed = 0, burstable = 0, borrowed_limit = 0;
    gp_wait limit = {.code = GP_WAIT_NONE};
    for (int t = 0; t < e->fleet.n_types; t++) {
        if (!(j->type_mask & (1u << t)))
            continue;
        gp_class cls = GP_CLASS_NONE;
        bool borrowed = false;
        gp_wait w = gp__admit(e, j, t, &cls, &borrowed);
        if (w.code != GP_WAIT_NONE) {
            if (limit.code == GP_WAIT_NONE || (limit.b > limit.c && w.b <= w.c))
                limit = w; /* say "cannot run" only when no accepted type could ever admit it */
            if (borrowed)
                borrowed_limit |= (uint8_t)(1u << t);
        } else if (cls == GP_CLASS_GUARANTEED) {
            guaranteed |= (uint8_t)(1u << t);
        } else {
            burstable |= (uint8_t)(1u << t);
        }
    }
    if (p->phase == GP_CLASS_GUARANTEED && !guaranteed && borrowed_limit) {
        reclaim_quota(e, job, borrowed_limit, &limit);
        return;
    }
    if (p->phase == GP_CLASS_GUARANTEED && !guaranteed)
        return; /* phase 2 looks at it */
    j->pass_seen = e->pass;
    e->stats.pass_considered++;
    uint8_t types = p->phase == GP_CLASS_GUARANTEED ? guaranteed : burstable;
    if (p->phase == GP_CLASS_BURSTABLE && (j->n_claimed > 0 || j->victims_left > 0) &&
        (!(j->fair_reclaim || j->pool_reclaim) || !types)) {
        /* claims and victims serve a guaranteed placement, or a fair-share or
         * owned-pool one of a job still admissible */
        gp__reclaim_withdraw(e, job, j->fair_reclaim || j->pool_reclaim ? "is no longer admissible" : "no longer runs within a guarantee");
        gp__claims_forget(e, job);
    }
    if (!types) {
        j->wait = limit.code != GP_WAIT_NONE ? limit : gp__place_possible(e, j);
        if (j->wait.code == GP_WAIT_NONE) /* accepted types not in the fleet at all */
            j->wait = (gp_wait){.code = GP_WAIT_NO_GPU_TYPE, .dim = -1, .tenant = GP__NONE};
        return;
    }
    if (gp__job_shared(j) && j->n_claimed == 0) {
        /* no GPU in its mode at all: no look, and no "no room" noted for
         * shares of its size that other profiles or modes could place */
        gp_wait possible = gp__place_possible(e, j);
        if (possible.code == GP_WAIT_SHARING_MODE) {
            j->wait = possible;
            return;
        }
    }
    bool had_claims = j->n_claimed > 0, lend_blocked = false;
    if (had_claims)
        gp__claims_drop(e, job);
    if (try_types(e, job, types, p, &lend_blocked)) {
        gp__claims_forget(e, job);
        return;
    }
    if (had_claims && j->victims_left > 0) {
        gp__claims_retake(e, job);
        return; /* still waiting for the victims' grace (wait already says so) */
    }
    if (j->victims_left > 0) /* a limit reclaim whose limit has room again, or claims all lost */
        gp__reclaim_withdraw(e, job, "no longer needs it");
    gp__claims_forget(e, job);
    gp_wait possible = possible_after_miss(e, j);
    if (possible.code != GP_WAIT_NONE) {
        j->wait = possible;
        return;
    }
    if (reclaim_then_place(e, job, types, p, &lend_blocked, gp__reclaim_pool)) /* false at once: no owned pool */
        return;
    if (p->phase == GP_CLASS_GUARANTEED && reclaim_then_place(e, job, types, p, &lend_blocked, gp__reclaim))
        return;
    if (p->phase == GP_CLASS_BURSTABLE && !lend_blocked &&
        reclaim_then_place(e, job, types, p, &lend_blocked, gp__reclaim_fair))
        return;
    if (lend_blocked) {
        int t = 0;
        while (!(types & (1u << t)))
            t++;
        j->wait = (gp_wait){.code = GP_WAIT_LENDING, .dim = t, .tenant = GP__NONE, .a = e->fleet.free[t],
                            .b = p->lend_reserve[t]};
        return;
    }
    if (gp__reserve(e, job, types, p->phase == GP_CLASS_GUARANTEED))
        return;
    wait_for_capacity(e, j, types);
}

/* consider() behind the job's fence when dedicated nodes are in play
 * (dedicated.c): its looks see only the nodes it may share, and a wait
 * for capacity that the fence made says so. */
static void consider_fenced(gp_engine *e, uint32_t job, const pass_ctx *p)
{
    gp__job *j = &e->jobs[job];
    if (!e->fenced || j->pass_seen == e->pass) {
        consider(e, job, p);
        return;
    }
    if (!gp__fence_up(e, job)) { /* out of memory: not looked at in this pass rather than looked at unfenced */
        gp__fence_down(e);
        return;
    }
    consider(e, job, p);
    if (j->state == GP_JOB_PENDING && j->wait.code == GP_WAIT_CAPACITY)
        gp__fence_wait(e, j, j->type_mask, false, &j->wait);
    else if (j->state == GP_JOB_PENDING && j->wait.code == GP_WAIT_RESERVED && j->wait.time == GP__START_UNKNOWN)
        gp__fence_wait(e, j, j->type_mask, true, &j->wait); /* first in line for nodes of no known end */
}

/* consider_fenced() behind the job's booking fence (booking.c): kept off
 * GPUs booked for others, or onto its own booking's; not looked at while
 * its booking has not begun. */
static void consider_booked(gp_engine *e, uint32_t job, const pass_ctx *p)
{
    gp__job *j = &e->jobs[job];
    if ((e->n_live_bookings == 0 && j->booking == 0) || j->pass_seen == e->pass) {
        consider_fenced(e, job, p);
        return;
    }
    if (!gp__booking_fence_up(e, job)) {
        j->pass_seen = e->pass;
        return;
    }
    consider_fenced(e, job, p);
    gp__booking_fence_down(e);
}

static void run_pass(gp_engine *e)
{
    e->pass++;
    e->stats.pass_considered = e->stats.pass_placed = e->stats.pass_preempted = 0;
    e->stats.pass_reclaim_searches = e->stats.pass_reservations = e->stats.pass_reclaim_remembered = 0;
    e->stats.pass_held_looks = 0;
    e->reclaim_searches = 0;
    memset(e->reserve_tries, 0, sizeof e->reserve_tries);
    e->n_miss = 0;
    e->last_placed_tenant = GP__NONE;
    gp__fence_begin(e);
    gp__fleet_recount(&e->fleet);
    gp__promote(e);
    memset(e->borrowed, 0, sizeof e->borrowed);
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        if (j->state == GP_JOB_RUNNING && gp__borrows_reclaimably(e, j))
            e->borrowed[j->bound_type] += (int64_t)j->replicas * j->gpus;
    }
    pass_ctx p;
    gp__lending_reserve(e, p.lend_reserve);
    const gp_class phases[2] = {GP_CLASS_GUARANTEED, GP_CLASS_BURSTABLE};
    for (int i = 0; i < 2; i++) {
        p.phase = phases[i];
        gp__fair_begin(e);
        for (uint32_t job; (job = gp__fair_next(e, p.phase == GP_CLASS_GUARANTEED)) != GP__NONE;)
            consider_booked(e, job, &p);
    }
    gp__fence_down(e);
    gp__reservations_clear(e);
    gp__dedicated_idle_sync(e);
    e->stats.total_passes++;
}

gp_err gp_engine_tick(gp_engine *e, int64_t now, gp_error *err)
{
    gp_err rc = time_check(e, now, err);
    if (rc)
        return rc;
    e->now = now;
    gp__booking_tick(e);
    for (size_t i = e->n_running; i-- > 0;) {
        if (i >= e->n_running || e->running_due[i] > now) /* most jobs: nothing due, their records unread */
            continue;
        uint32_t job = e->running[i];
        gp__job *j = &e->jobs[job];
        if (past_time_limit(j, now))
            stop_past_time_limit(e, job);
        if (j->state == GP_JOB_PREEMPTING && j->deadline <= now)
            grace_over(e, job, j->cancel_requested ? "stopped at the end of its grace" : "grace period over");
    }
    run_pass(e);
    return GP_OK;
}
