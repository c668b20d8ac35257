/* jobs.c - the job table: validation, states, history, queues.
 *
 * Jobs live in a slot array (freed slots are reused) with an id -> slot
 * map.  A job moves through
 *
 *     pending -> admitted -> running -> (preempting -> pending) ->
 *     succeeded | failed | cancelled
 *
 * and every move goes through gp__job_transition(), which records the
 * reason in the job's recent history and emits a TRANSITION decision, so
 * the caller can keep the full story.
 *
 * A job's time limit is fixed at submit: its own time_limit_s, else its
 * tenant's default for its kind (inherited down the tree), else none; it
 * counts from each bind, and engine.c stops a job that runs past it.
 * Its CPU, memory and process values must fit its tenant's job maximums
 * (job_limits.c).
 *
 * Submitting is engine.c's event (gp_engine_job_submit): this file validates
 * the spec and files the job (gp__job_create); engine.c tells the
 * fragmentation measure and emits the TRANSITION.
 *
 * Pending jobs sit in their leaf tenant's queue, kept sorted by priority
 * (higher first), then submit time, then id: the order "within a leaf" of
 * the fair-share policy.  The queue is one array with free slots on both
 * sides of its jobs, as a deque keeps them: an insert or a remove finds its
 * place by binary search, then moves the shorter side by one slot.  A bind
 * or a requeue near the head of a long queue moves only the jobs before it,
 * a new job at the tail moves nothing, and a job in the middle of a queue of
 * n moves at most n / 2.  When the side it needs is full the jobs are
 * re-centred in the array, which first doubles while more than half full.
 * Example: a queue of 50,000 jobs binds its 10th: 9 jobs move one slot
 * towards the tail (a memmove of the 49,990 after it, before).  Running and preempting jobs are in one flat list
 * (engine->running) that timers and reclaim walk; the whole-GPU ones are
 * also listed per GPU type (engine->type_running), which backfill reads.
 * Beside each entry of the list, engine->running_due keeps when the tick
 * must look at its job (its time limit, or the end of its grace): the
 * tick reads that small array, not 30,000 job records, and reads a job
 * only when it is due (the month's bench_sim spent 4 % of its time on
 * those reads).  Every change of a listed job's state goes through
 * gp__job_transition and every deadline through gp__job_grace_begin, and
 * both update it.
 */
#include "core/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t gp__job_lookup(const gp_engine *e, uint64_t id)
{
    uint32_t j;
    if (!gp_u64map_get(&e->job_by_id, id, &j))
        return GP__NONE;
    return j;
}

/* ---- one replica's part of a GPU ----
 * What one replica of a shared job takes on a GPU, and whose it makes the
 * GPU (sharing.c places shares by these; claims.c counts claims by them). */

uint32_t gp__job_org(const gp_engine *e, const gp__job *j)
{
    uint32_t t = j->tenant;
    while (e->tenants[t].parent != GP__NONE)
        t = e->tenants[t].parent;
    return t;
}

int gp__replica_milli(const gp_engine *e, const gp__job *j, const gp__gpu *g)
{
    switch (j->isolation) {
    case GP_ISO_MIG:
        if (g && g->mig_model >= 0) {
            int p = gp__mig_profile_find(g->mig_model, j->mig_profile);
            return p >= 0 ? gp__mig_profile_milli(g->mig_model, p) : 0;
        }
        return gp__mig_name_milli(j->mig_profile);
    case GP_ISO_MPS: return j->mps_milli;
    case GP_ISO_TIMESLICE: {
        if (g)
            return 1000 / gp__pool_timeslice(e, e->fleet.nodes[g->node].pool);
        int least = 8; /* admission before placement: the largest share any pool gives */
        for (size_t p = 0; p < e->fleet.n_pools; p++)
            if (e->fleet.pools[p].spec.timeslice_replicas < least)
                least = e->fleet.pools[p].spec.timeslice_replicas;
        return 1000 / (least > 0 ? least : 1);
    }
    default: return j->gpus * 1000;
    }
}

int64_t gp__replica_mem(const gp_engine *e, const gp__job *j, const gp__gpu *g)
{
    int64_t gpu_mem = e->fleet.nodes[g->node].gpu_mem_mib;
    if (j->isolation == GP_ISO_MPS)
        return j->share_mem > 0 ? j->share_mem : gpu_mem * j->mps_milli / 1000;
    return 0;
}

uint32_t gp__share_domain(const gp_engine *e, const gp__job *j)
{
    if (j->isolation == GP_ISO_MIG)
        return e->tenants[j->tenant].untrusted ? j->tenant : GP__NONE;
    return gp__job_org(e, j);
}

void gp__job_demand(const gp_engine *e, const gp__job *j, int type, gp_res *out)
{
    gp__res_zero(out);
    out->v[type] = j->placed ? j->milli_total : (int64_t)j->replicas * gp__replica_milli(e, j, NULL);
    out->v[GP_DIM_CPU] = (int64_t)j->replicas * j->cpu;
    out->v[GP_DIM_MEM] = (int64_t)j->replicas * j->mem;
}

int64_t gp__running_due(const gp__job *j)
{
    if (j->state == GP_JOB_PREEMPTING)
        return j->deadline;
    if (j->state == GP_JOB_RUNNING && j->limit > 0)
        return j->bind_time + j->limit;
    return INT64_MAX;
}

static void running_due_update(gp_engine *e, uint32_t job)
{
    const gp__job *j = &e->jobs[job];
    if (j->running_pos != GP__NONE)
        e->running_due[j->running_pos] = gp__running_due(j);
}

void gp__job_transition(gp_engine *e, uint32_t job, gp_job_state to, const char *fmt, ...)
{
    gp__job *j = &e->jobs[job];
    gp_history_entry *h = &e->histories[job].entry[j->n_history % GP__HISTORY];
    h->time = e->now;
    h->from = j->state;
    h->to = to;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->reason, sizeof h->reason, fmt, ap);
    va_end(ap);
    j->n_history++;
    gp_decision *d = gp__decision_push(e, GP_DEC_TRANSITION, j->id);
    if (d) {
        d->from = j->state;
        d->to = to;
        memcpy(d->reason, h->reason, sizeof d->reason);
    }
    if (j->state == GP_JOB_PENDING)
        e->n_pending--;
    if (to == GP_JOB_PENDING)
        e->n_pending++;
    j->state = to;
    running_due_update(e, job);
}

void gp__job_note(gp_engine *e, uint32_t job, const char *fmt, ...)
{
    gp__job *j = &e->jobs[job];
    gp_history_entry *h = &e->histories[job].entry[j->n_history % GP__HISTORY];
    h->time = e->now;
    h->from = h->to = j->state;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->reason, sizeof h->reason, fmt, ap);
    va_end(ap);
    j->n_history++;
}

/* Queue order: priority desc, submit asc, id asc. */
static bool queue_before(const gp__job *a, const gp__job *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    if (a->submit_time != b->submit_time)
        return a->submit_time < b->submit_time;
    return a->id < b->id;
}

/* Where job goes in t's queue: the number of queued jobs before it. */
static size_t queue_position(const gp_engine *e, const gp__tenant *t, uint32_t job)
{
    size_t lo = 0, hi = t->n_pending;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (queue_before(&e->jobs[t->pending[mid]], &e->jobs[job]))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Move the queued jobs to the middle of their array, doubling it first
 * while it is more than half full, so both sides have free slots. */
static bool queue_recenter(gp__tenant *t)
{
    uint32_t *base = t->pending ? t->pending - t->pending_front : NULL;
    size_t cap = t->cap_pending, need = 2 * (t->n_pending + 1);
    if (cap < need) {
        size_t ncap = cap ? cap * 2 : 16;
        while (ncap < need)
            ncap *= 2;
        uint32_t *grown = realloc(base, ncap * sizeof *grown);
        if (!grown)
            return false;
        base = grown;
        cap = ncap;
    }
    size_t front = (cap - t->n_pending) / 2;
    memmove(base + front, base + t->pending_front, t->n_pending * sizeof *base);
    t->pending = base + front;
    t->pending_front = front;
    t->cap_pending = cap;
    return true;
}

bool gp__job_asks_no_gpu(const gp_engine *e, const gp__job *j)
{
    return j->replicas <= 0 || gp__replica_milli(e, j, NULL) <= 0;
}

bool gp__queue_insert(gp_engine *e, uint32_t job)
{
    gp__tenant *t = &e->tenants[e->jobs[job].tenant];
    size_t lo = queue_position(e, t, job);
    bool move_front = lo < t->n_pending - lo;
    bool room = move_front ? t->pending_front > 0 : t->pending_front + t->n_pending < t->cap_pending;
    if (!room && !queue_recenter(t))
        return false;
    if (move_front) {
        memmove(t->pending - 1, t->pending, lo * sizeof *t->pending);
        t->pending--;
        t->pending_front--;
    } else {
        memmove(&t->pending[lo + 1], &t->pending[lo], (t->n_pending - lo) * sizeof *t->pending);
    }
    t->pending[lo] = job;
    t->n_pending++;
    t->n_pending_gpuless += gp__job_asks_no_gpu(e, &e->jobs[job]);
    if (lo < t->cursor)
        t->cursor++; /* keep the pass cursor on the same job */
    return true;
}

void gp__queue_remove(gp_engine *e, uint32_t job)
{
    gp__tenant *t = &e->tenants[e->jobs[job].tenant];
    size_t lo = queue_position(e, t, job); /* then confirm */
    if (lo >= t->n_pending || t->pending[lo] != job)
        return;
    if (lo < t->n_pending - 1 - lo) {
        memmove(t->pending + 1, t->pending, lo * sizeof *t->pending);
        t->pending++;
        t->pending_front++;
    } else {
        memmove(&t->pending[lo], &t->pending[lo + 1], (t->n_pending - lo - 1) * sizeof *t->pending);
    }
    t->n_pending--;
    t->n_pending_gpuless -= gp__job_asks_no_gpu(e, &e->jobs[job]);
    if (lo < t->cursor)
        t->cursor--;
}

void gp__queue_free(gp__tenant *t)
{
    if (t->pending)
        free(t->pending - t->pending_front);
    t->pending = NULL;
    t->n_pending = t->cap_pending = t->pending_front = t->n_pending_gpuless = 0;
}

static bool type_running_add(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    j->type_pos = GP__NONE;
    if (!gp__job_whole_gpus(j)) /* the only kind whose releases a reservation sweeps */
        return true;
    if (!GP__GROW(e->type_running[type], e->n_type_running[type], e->cap_type_running[type]))
        return false;
    j->type_pos = (uint32_t)e->n_type_running[type];
    e->type_running[type][e->n_type_running[type]++] = job;
    return true;
}

bool gp__running_add(gp_engine *e, uint32_t job, int type)
{
    if (!GP__GROW(e->running, e->n_running, e->cap_running) ||
        !gp__grow((void **)&e->running_due, &e->cap_running_due, e->n_running + 1, sizeof *e->running_due) ||
        !type_running_add(e, job, type))
        return false;
    e->jobs[job].running_pos = (uint32_t)e->n_running;
    e->running_due[e->n_running] = gp__running_due(&e->jobs[job]);
    e->running[e->n_running++] = job;
    e->tenants[e->jobs[job].tenant].running++;
    return true;
}

void gp__running_remove(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (j->running_pos == GP__NONE)
        return;
    uint32_t last = e->running[--e->n_running];
    e->running[j->running_pos] = last;
    e->running_due[j->running_pos] = e->running_due[e->n_running];
    e->jobs[last].running_pos = j->running_pos;
    j->running_pos = GP__NONE;
    e->tenants[j->tenant].running--;
    if (j->type_pos != GP__NONE) {
        int t = j->bound_type;
        last = e->type_running[t][--e->n_type_running[t]];
        e->type_running[t][j->type_pos] = last;
        e->jobs[last].type_pos = j->type_pos;
        j->type_pos = GP__NONE;
    }
}

bool gp__running_derived_rebuild(gp_engine *e)
{
    if (!gp__grow((void **)&e->running_due, &e->cap_running_due, e->n_running ? e->n_running : 1,
                  sizeof *e->running_due))
        return false;
    for (size_t i = 0; i < e->n_running; i++) {
        e->running_due[i] = gp__running_due(&e->jobs[e->running[i]]);
        if (!type_running_add(e, e->running[i], e->jobs[e->running[i]].bound_type))
            return false;
    }
    return true;
}

/* The share a mig/mps/timeslice job asks for, and who may ask for it. */
static gp_err check_share(const gp_engine *e, const gp_job_spec *s, uint32_t tenant, gp_error *err)
{
    if (s->isolation == GP_ISO_EXCLUSIVE)
        return GP_OK;
    const char *iso = gp_isolation_name(s->isolation);
    if (s->gpus != 1)
        return gp_error_set(err, GP_ERR_INVALID, "gpus", "a %s job takes one share per replica: gpus must be 1", iso);
    if (s->topology != GP_TOPO_ANY)
        return gp_error_set(err, GP_ERR_INVALID, "topology", "a %s job takes topology any", iso);
    if (e->tenants[tenant].untrusted && s->isolation != GP_ISO_MIG)
        return gp_error_set(err, GP_ERR_INVALID, "isolation",
                            "%s is untrusted: it may use exclusive GPUs or MIG instances, not %s", s->tenant, iso);
    switch (s->isolation) {
    case GP_ISO_MIG:
        if (memchr(s->share.mig_profile, '\0', sizeof s->share.mig_profile) == NULL ||
            !gp__mig_profile_known(s->share.mig_profile))
            return gp_error_set(err, GP_ERR_INVALID, "share.mig",
                                "unknown MIG profile; profiles are e.g. 1g.10gb, 2g.20gb, 3g.40gb (docs/sharing.md)");
        break;
    case GP_ISO_MPS:
        if (s->share.mps_milli < 1 || s->share.mps_milli > 1000)
            return gp_error_set(err, GP_ERR_INVALID, "share.mps", "an MPS share must be 1..100 %% of the SMs");
        if (s->share.gpu_mem_mib < 0 || s->share.gpu_mem_mib > INT64_C(1) << 30)
            return gp_error_set(err, GP_ERR_INVALID, "share.gpu_mem_mib", "gpu_mem_mib must be >= 0");
        break;
    default: /* timeslice */
        if (s->kind == GP_KIND_TRAINING)
            return gp_error_set(err, GP_ERR_INVALID, "isolation",
                                "time-slicing is for interactive work and inference, not training");
        break;
    }
    return GP_OK;
}

static gp_err check_job_spec(const gp_engine *e, const gp_job_spec *s, uint32_t *tenant, gp_error *err)
{
    if (s == NULL)
        return gp_error_set(err, GP_ERR_INVALID, "job", "job spec is required");
    if (s->id == 0 || s->id == UINT64_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "id", "job id must be non-zero");
    if (gp__job_lookup(e, s->id) != GP__NONE)
        return gp_error_set(err, GP_ERR_EXISTS, "id", "job %llu already exists", (unsigned long long)s->id);
    if (s->name && strlen(s->name) >= GP_NAME_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "name", "name is longer than %d characters", GP_NAME_MAX - 1);
    if (s->user && (s->user[0] == '\0' || strlen(s->user) >= GP_NAME_MAX))
        return gp_error_set(err, GP_ERR_INVALID, "user", "user must be 1..%d characters", GP_NAME_MAX - 1);
    if (s->kind < GP_KIND_TRAINING || s->kind > GP_KIND_INTERACTIVE)
        return gp_error_set(err, GP_ERR_INVALID, "kind", "kind must be training, inference or interactive");
    if (s->replicas < 1 || s->replicas > GP_MAX_REPLICAS)
        return gp_error_set(err, GP_ERR_INVALID, "replicas", "replicas must be 1..%d, got %d", GP_MAX_REPLICAS,
                            s->replicas);
    if (s->gpus < 0 || s->gpus > GP_MAX_GPUS_PER_NODE)
        return gp_error_set(err, GP_ERR_INVALID, "gpus", "gpus per replica must be 0..%d, got %d",
                            GP_MAX_GPUS_PER_NODE, s->gpus);
    if (s->cpu_millis < 0 || s->cpu_millis > INT64_C(1) << 40)
        return gp_error_set(err, GP_ERR_INVALID, "cpu_millis", "cpu_millis must be 0..2^40");
    if (s->mem_mib < 0 || s->mem_mib > INT64_C(1) << 40)
        return gp_error_set(err, GP_ERR_INVALID, "mem_mib", "mem_mib must be 0..2^40");
    if (s->topology < GP_TOPO_ANY || s->topology > GP_TOPO_NVLINK)
        return gp_error_set(err, GP_ERR_INVALID, "topology", "topology must be any, block or nvlink");
    if (s->isolation < GP_ISO_EXCLUSIVE || s->isolation > GP_ISO_TIMESLICE)
        return gp_error_set(err, GP_ERR_INVALID, "isolation", "isolation must be exclusive, mig, mps or timeslice");
    if (s->priority < GP_PRIORITY_MIN || s->priority > GP_PRIORITY_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "priority", "priority must be %d..%d", GP_PRIORITY_MIN,
                            GP_PRIORITY_MAX);
    if (s->checkpoint_grace_s < 0 || s->checkpoint_grace_s > GP_GRACE_MAX_S)
        return gp_error_set(err, GP_ERR_INVALID, "checkpoint_grace_s", "checkpoint_grace_s must be 0..%d",
                            GP_GRACE_MAX_S);
    if (s->expected_runtime_s < 0 || s->expected_runtime_s > INT64_C(1) << 40)
        return gp_error_set(err, GP_ERR_INVALID, "expected_runtime_s", "expected_runtime_s must be >= 0");
    if (s->n_gpu_types < 0 || s->n_gpu_types > GP_MAX_GPU_TYPES)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "gpu_types lists at most %d types", GP_MAX_GPU_TYPES);
    for (int i = 0; i < s->n_gpu_types; i++) {
        if (s->gpu_types[i] == NULL || s->gpu_types[i][0] == '\0' || strlen(s->gpu_types[i]) >= GP_NAME_MAX)
            return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "gpu_types has an empty or over-long entry");
        /* a type the engine has never heard of is a typo, not a future node:
         * registering it would let junk submits use up the type table */
        if (gp__fleet_type_find(&e->fleet, s->gpu_types[i]) < 0) {
            char known[GP_MAX_GPU_TYPES * (GP_NAME_MAX + 2)];
            gp__fleet_types_format(&e->fleet, known, sizeof known);
            return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "no GPU type %s in the fleet or its quotas (%s%s)",
                                s->gpu_types[i], known[0] ? "known: " : "none known yet", known);
        }
    }
    *tenant = gp__tenant_lookup(e, s->tenant);
    if (*tenant == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "tenant", "no tenant %s", s->tenant ? s->tenant : "(null)");
    if (!gp__tenant_is_leaf(e, *tenant))
        return gp_error_set(err, GP_ERR_INVALID, "tenant", "%s has sub-tenants; submit to one of them",
                            s->tenant);
    return check_share(e, s, *tenant, err);
}

/* The job's time limit: its own, else its tenant's default for its kind
 * (0 = none).  The default is also the most a job may ask for, so a tenant
 * admin bounds how long every job of the subtree may hold its GPUs. */
gp_err gp__time_limit_resolve(const gp_engine *e, gp_job_kind kind, int64_t own, uint32_t tenant, int64_t *limit,
                              gp_error *err)
{
    if (own < 0 || own > GP_TIME_LIMIT_MAX_S)
        return gp_error_set(err, GP_ERR_INVALID, "time_limit_s", "time_limit_s must be 1..%lld seconds (0 = the "
                            "tenant's default)", (long long)GP_TIME_LIMIT_MAX_S);
    int64_t tenant_max = gp__tenant_time_limit(e, tenant, kind);
    if (tenant_max > 0 && own > tenant_max)
        return gp_error_set(err, GP_ERR_INVALID, "time_limit_s",
                            "time_limit_s %llds is more than the %llds that %s allows %s jobs",
                            (long long)own, (long long)tenant_max, e->tenants[tenant].path,
                            gp_job_kind_name(kind));
    *limit = own > 0 ? own : tenant_max;
    return GP_OK;
}

static uint32_t user_get(gp_engine *e, uint32_t tenant, const char *name)
{
    char key[GP_PATH_MAX + GP_NAME_MAX + 2];
    snprintf(key, sizeof key, "%u:%s", tenant, name);
    uint32_t u;
    if (gp_strmap_get(&e->user_by_key, key, &u))
        return u;
    if (!GP__GROW(e->users, e->n_users, e->cap_users) || !gp_strmap_put(&e->user_by_key, key, (uint32_t)e->n_users))
        return GP__NONE;
    gp__user *usr = &e->users[e->n_users];
    memset(usr, 0, sizeof *usr);
    usr->tenant = tenant;
    snprintf(usr->name, sizeof usr->name, "%s", name);
    return (uint32_t)e->n_users++;
}

static uint32_t slot_take(gp_engine *e)
{
    if (e->n_free_slots > 0)
        return e->free_slots[--e->n_free_slots];
    if (!GP__GROW(e->jobs, e->n_jobs, e->cap_jobs) ||
        !gp__grow((void **)&e->histories, &e->cap_histories, e->n_jobs + 1, sizeof *e->histories))
        return GP__NONE;
    return (uint32_t)e->n_jobs++;
}

void gp__job_release_slot(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    gp_u64map_remove(&e->job_by_id, j->id);
    free(j->placed);
    free(j->slot);
    free(j->claimed);
    free(j->victims);
    memset(j, 0, sizeof *j);
    memset(&e->histories[job], 0, sizeof e->histories[job]);
    /* the free-slot list never needs more room than the job array */
    if (gp__grow((void **)&e->free_slots, &e->cap_free_slots, e->n_free_slots + 1, sizeof *e->free_slots))
        e->free_slots[e->n_free_slots++] = job;
}

uint8_t gp__job_type_mask(const gp__fleet *f, const gp_job_spec *s)
{
    uint8_t mask = s->n_gpu_types == 0 ? 0xff : 0;
    for (int i = 0; i < s->n_gpu_types; i++)
        mask |= (uint8_t)(1u << gp__fleet_type_find(f, s->gpu_types[i]));
    return mask;
}

gp_err gp_engine_job_check(const gp_engine *e, const gp_job_spec *s, gp_error *err)
{
    uint32_t tenant;
    int64_t limit;
    gp_restart_policy policy;
    int max_restarts;
    gp_err rc;
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if ((rc = check_job_spec(e, s, &tenant, err)) || (rc = gp__time_limit_resolve(e, s->kind, s->time_limit_s, tenant, &limit, err)) ||
        (rc = gp__job_limits_check(e, s, tenant, err)))
        return rc;
    return gp__restart_resolve(s, &policy, &max_restarts, err);
}

gp_err gp__job_create(gp_engine *e, const gp_job_spec *s, int64_t now, uint32_t *job, gp_error *err)
{
    uint32_t tenant = GP__NONE;
    uint8_t mask;
    gp_err rc;
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    int64_t limit = 0;
    gp_restart_policy policy;
    int max_restarts;
    if ((rc = check_job_spec(e, s, &tenant, err)) || (rc = gp__time_limit_resolve(e, s->kind, s->time_limit_s, tenant, &limit, err)) ||
        (rc = gp__job_limits_check(e, s, tenant, err)) || (rc = gp__restart_resolve(s, &policy, &max_restarts, err)))
        return rc;
    mask = gp__job_type_mask(&e->fleet, s);
    uint32_t user = GP__NONE;
    if (s->user && (user = user_get(e, tenant, s->user)) == GP__NONE)
        return gp_error_set(err, GP_ERR_NOMEM, "user", "out of memory");
    uint32_t slot = slot_take(e);
    if (slot == GP__NONE || !gp_u64map_put(&e->job_by_id, s->id, slot))
        return gp_error_set(err, GP_ERR_NOMEM, "id", "out of memory");
    e->now = now;
    gp__job *j = &e->jobs[slot];
    memset(j, 0, sizeof *j);
    j->used = true;
    j->id = s->id;
    snprintf(j->name, sizeof j->name, "%s", s->name ? s->name : "");
    j->tenant = tenant;
    j->user = user;
    j->kind = s->kind;
    j->replicas = s->replicas;
    j->gpus = s->gpus;
    j->type_mask = mask;
    j->cpu = s->cpu_millis;
    j->mem = s->mem_mib;
    j->topology = s->topology;
    j->isolation = s->isolation;
    snprintf(j->mig_profile, sizeof j->mig_profile, "%s", s->isolation == GP_ISO_MIG ? s->share.mig_profile : "");
    j->mps_milli = s->isolation == GP_ISO_MPS ? s->share.mps_milli : 0;
    j->share_mem = s->isolation == GP_ISO_MPS ? s->share.gpu_mem_mib : 0;
    j->priority = s->priority;
    j->grace = s->checkpoint_grace_s;
    j->runtime = s->expected_runtime_s;
    j->limit = limit;
    j->restart = policy;
    j->max_restarts = max_restarts;
    j->state = GP_JOB_PENDING;
    j->bound_type = -1;
    j->submit_time = now;
    j->bind_time = -1;
    j->last_checkpoint = -1;
    j->last_preempted = -1;
    j->running_pos = GP__NONE;
    j->type_pos = GP__NONE;
    j->wait.code = GP_WAIT_NEW;
    j->wait.dim = -1;
    j->wait.tenant = GP__NONE;
    e->n_pending++;
    if (!gp__queue_insert(e, slot)) {
        e->n_pending--;
        gp__job_release_slot(e, slot);
        return gp_error_set(err, GP_ERR_NOMEM, "id", "out of memory");
    }
    *job = slot;
    return GP_OK;
}

/* ---- grace ----
 * The caller's `now` may be its true time rounded down (gpupoold feeds
 * whole seconds of wall-clock time): a job told at true time 10.6 s (now =
 * 10) to stop within 4 s must keep its GPUs until 14.6 s, but now = 14
 * arrives at 14.0 s.  Adding the clock's resolution makes the rounding
 * conservative: the deadline 15 arrives at 15.0 s >= 14.6 s.  Grace 0
 * means "kill now" and frees the GPUs at once. */

int64_t gp__grace_deadline(const gp_engine *e, int64_t grace)
{
    return grace > 0 ? e->now + grace + e->cfg.clock_resolution_s : e->now;
}

void gp__job_grace_begin(gp_engine *e, uint32_t job)
{
    e->jobs[job].deadline = gp__grace_deadline(e, e->jobs[job].grace);
    running_due_update(e, job);
}

void gp__jobs_free(gp_engine *e)
{
    for (size_t i = 0; i < e->n_jobs; i++) {
        free(e->jobs[i].slot);
        free(e->jobs[i].placed);
        free(e->jobs[i].claimed);
        free(e->jobs[i].victims);
    }
    for (size_t i = 0; i < e->n_tenants; i++)
        gp__queue_free(&e->tenants[i]);
    free(e->jobs);
    free(e->histories);
    free(e->free_slots);
    free(e->running);
    free(e->running_due);
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        free(e->type_running[t]);
    gp_u64map_free(&e->job_by_id);
}
