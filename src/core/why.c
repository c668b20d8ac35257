/* why.c - answers to "why is my job waiting?" and the read-only queries.
 *
 * The pass stores a wait reason as a code with numbers (cheap: it runs for
 * every pending job every pass); this file turns it into a sentence a
 * person can act on only when somebody asks, e.g.
 *
 *   "limit of research on H100 reached: 120 + 16 > 128 GPUs in use"
 *   "no fabric block can hold 64 H100 GPUs even when empty (largest 32)"
 *   "held for the reservation of job 42 (research/nlp), expected to
 *    start at t=5400; this job would still run then"
 *
 * It also holds the read-only query functions of engine.h (the enum names
 * are in names.c).
 */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

static const char *dim_label(const gp_engine *e, int d)
{
    if (d == GP_DIM_CPU)
        return "CPU";
    if (d == GP_DIM_MEM)
        return "memory";
    if (d >= 0 && d < e->fleet.n_types)
        return e->fleet.types[d];
    return "GPU";
}

/* Amount in the dimension's natural unit: GPUs (milli-GPUs shown as GPUs
 * with up to 3 decimals, "2.5"), millicores, MiB. */
static void amount(char *buf, size_t len, int d, int64_t v)
{
    if (d >= 0 && d < GP_MAX_GPU_TYPES && v % 1000 != 0) {
        int64_t frac = (v < 0 ? -v : v) % 1000;
        int digits = frac % 100 == 0 ? 1 : frac % 10 == 0 ? 2 : 3;
        int64_t shown = digits == 1 ? frac / 100 : digits == 2 ? frac / 10 : frac;
        snprintf(buf, len, "%s%lld.%0*lld", v < 0 && v > -1000 ? "-" : "", (long long)(v / 1000), digits,
                 (long long)shown);
    } else if (d >= 0 && d < GP_MAX_GPU_TYPES) {
        snprintf(buf, len, "%lld", (long long)(v / 1000));
    } else {
        snprintf(buf, len, "%lld", (long long)v);
    }
}

/* The unit after an amount v of dimension d: " GPU" for exactly one GPU
 * (1000 milli-GPUs), " GPUs" otherwise. */
static const char *unit(int d, int64_t v)
{
    return d == GP_DIM_CPU ? " millicores" : d == GP_DIM_MEM ? " MiB" : v == 1000 ? " GPU" : " GPUs";
}

/* "GPU" or "GPUs", "node" or "nodes": the noun for a count of n. */
static const char *noun(int64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

size_t gp__amount_format(const gp_engine *e, int d, int64_t v, char *buf, size_t len)
{
    char a[32];
    amount(a, sizeof a, d, v);
    int n = d >= 0 && d < GP_MAX_GPU_TYPES ? snprintf(buf, len, "%s %s%s", a, dim_label(e, d), unit(d, v))
                                           : snprintf(buf, len, "%s%s", a, unit(d, v));
    return n < 0 ? 0 : (size_t)n;
}

static const char *tenant_name(const gp_engine *e, uint32_t t)
{
    return t < e->n_tenants ? e->tenants[t].path : "?";
}

static const char *topology_domain(gp_topology t)
{
    return t == GP_TOPO_BLOCK ? "fabric block" : t == GP_TOPO_NVLINK ? "NVLink domain" : "fleet";
}

size_t gp__wait_format(const gp_engine *e, const gp__job *j, const gp_wait *w, char *buf, size_t len)
{
    char a[32], b[32], c[32];
    amount(a, sizeof a, w->dim, w->a);
    amount(b, sizeof b, w->dim, w->b);
    amount(c, sizeof c, w->dim, w->c);
    const char *type = dim_label(e, w->dim);
    int n;
    switch (w->code) {
    case GP_WAIT_NEW:
        n = snprintf(buf, len, "waiting for the next scheduling pass");
        break;
    case GP_WAIT_LIMIT:
        if (w->b > w->c)
            n = snprintf(buf, len, "cannot run while the limit stands: it needs %s%s of %s, more than the limit of "
                         "%s (%s%s) even with nothing else running; ask for less or for a higher limit",
                         b, unit(w->dim, w->b), type, tenant_name(e, w->tenant), c, unit(w->dim, w->c));
        else
            n = snprintf(buf, len, "limit of %s on %s reached: %s + %s > %s%s in use", tenant_name(e, w->tenant),
                         type, a, b, c, unit(w->dim, w->c));
        break;
    case GP_WAIT_USER_LIMIT:
        if (w->b > w->c)
            n = snprintf(buf, len, "cannot run while the limit stands: it needs %s%s of %s, more than the per-user "
                         "limit in %s (%s%s); ask for less or for a higher limit",
                         b, unit(w->dim, w->b), type, tenant_name(e, w->tenant), c, unit(w->dim, w->c));
        else
            n = snprintf(buf, len, "per-user limit in %s on %s reached: %s + %s > %s%s",
                         tenant_name(e, w->tenant), type, a, b, c, unit(w->dim, w->c));
        break;
    case GP_WAIT_NO_GPU_TYPE:
        n = snprintf(buf, len, "no healthy, schedulable GPU of an accepted type is in the fleet");
        break;
    case GP_WAIT_TOPOLOGY:
        n = snprintf(buf, len,
                     "no %s can hold %d x %d %s %s even when empty (largest holds %lld); ask for a looser "
                     "topology or fewer GPUs",
                     topology_domain(j->topology), j->replicas, j->gpus, type,
                     noun((int64_t)j->replicas * j->gpus, "GPU", "GPUs"), (long long)w->a);
        break;
    case GP_WAIT_NODE_SHAPE:
        n = snprintf(buf, len, "no node of an accepted type has %lld millicores and %lld MiB for one replica "
                     "(largest: %lld millicores, %lld MiB)",
                     (long long)j->cpu, (long long)j->mem, (long long)w->a, (long long)w->b);
        break;
    case GP_WAIT_CAPACITY:
        if (j->isolation == GP_ISO_MIG)
            n = snprintf(buf, len, "waiting for room: no %s GPU in MIG mode can take a %s instance now (layouts "
                         "change only around running instances, at most once per %llds per GPU)",
                         type, j->mig_profile, (long long)e->cfg.mig_reconfigure_interval_s);
        else if (j->isolation == GP_ISO_MPS || j->isolation == GP_ISO_TIMESLICE)
            n = snprintf(buf, len, "waiting for room: no %s GPU in %s mode has room for this share for its trust "
                         "domain", type, j->isolation == GP_ISO_MPS ? "MPS" : "time-slice");
        else if (w->tenant != GP__NONE && w->tenant != j->tenant)
            n = snprintf(buf, len, "waiting for capacity: %lld %s %s free, needs %lld (%s topology); %s went "
                         "ahead in the fair order",
                         (long long)w->a, type, noun(w->a, "GPU", "GPUs"), (long long)w->b,
                         gp_topology_name(j->topology),
                         tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len, "waiting for capacity: %lld %s %s free, needs %lld (%s topology)",
                         (long long)w->a, type, noun(w->a, "GPU", "GPUs"), (long long)w->b,
                         gp_topology_name(j->topology));
        break;
    case GP_WAIT_LENDING:
        n = snprintf(buf, len,
                     "the %lld free %s %s kept for tenants that do not lend their idle guarantee (%lld held)",
                     (long long)w->a, type, w->a == 1 ? "GPU is" : "GPUs are", (long long)w->b);
        break;
    case GP_WAIT_RESERVATION:
        if (w->time == GP__START_UNKNOWN)
            n = snprintf(buf, len,
                         "held for the reservation of job %llu (%s), which starts once running jobs without a time "
                         "limit or expected runtime end; until then its nodes take no other work",
                         (unsigned long long)w->job, tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len,
                         "held for the reservation of job %llu (%s), expected to start at t=%lld; this job would "
                         "still be running then",
                         (unsigned long long)w->job, tenant_name(e, w->tenant), (long long)w->time);
        break;
    case GP_WAIT_RESERVED:
        if (w->time == GP__START_UNKNOWN)
            n = snprintf(buf, len, "first in line for %s: %lld %s held; starts once the jobs on %s without a "
                         "time limit or expected runtime end", type, (long long)w->a, noun(w->a, "node", "nodes"),
                         noun(w->a, "it", "them"));
        else
            n = snprintf(buf, len, "first in line for %s: %lld %s held, expected to start at t=%lld", type,
                         (long long)w->a, noun(w->a, "node", "nodes"), (long long)w->time);
        break;
    case GP_WAIT_RECLAIM:
        if (w->b) /* for fair share (reclaim.c) */
            n = snprintf(buf, len, "%s is below its fair share: %lld borrowing %s of tenants above theirs preempted, "
                         "grace ends at t=%lld", tenant_name(e, w->tenant), (long long)w->a,
                         noun(w->a, "job", "jobs"), (long long)w->time);
        else
            n = snprintf(buf, len, "reclaiming the guarantee of %s: %lld borrowing %s preempted, grace ends at t=%lld",
                         tenant_name(e, w->tenant), (long long)w->a, noun(w->a, "job", "jobs"), (long long)w->time);
        break;
    case GP_WAIT_TRUST:
        if (w->tenant == j->tenant)
            n = snprintf(buf, len, "tenant %s is untrusted: %s is not allowed; cancel and resubmit as exclusive or mig, "
                         "or ask an admin to trust %s", tenant_name(e, j->tenant), gp_isolation_name(j->isolation),
                         tenant_name(e, w->tenant));
        else
            n = snprintf(buf, len, "tenant %s is untrusted (inherited from %s): %s is not allowed; cancel and resubmit "
                         "as exclusive or mig, or ask an admin to trust %s", tenant_name(e, j->tenant),
                         tenant_name(e, w->tenant), gp_isolation_name(j->isolation), tenant_name(e, w->tenant));
        break;
    case GP_WAIT_SHARING_MODE:
        if (j->isolation == GP_ISO_MIG)
            n = snprintf(buf, len, "cannot fit as the fleet stands: no healthy, schedulable GPU of an accepted type "
                         "(%s, ...) is in MIG mode with a model that offers %s; it waits for such a GPU",
                         type, j->mig_profile);
        else
            n = snprintf(buf, len, "cannot fit as the fleet stands: no healthy, schedulable GPU of an accepted type "
                         "(%s, ...) is in %s mode; it waits for such a GPU",
                         type, j->isolation == GP_ISO_MPS ? "MPS" : "time-slice");
        break;
    case GP_WAIT_BACKOFF:
        n = snprintf(buf, len, "restarting after a failure (restart %lld of %lld, restart_policy on-failure): eligible "
                     "again at t=%lld", (long long)w->a, (long long)w->b, (long long)w->time);
        break;
    default:
        n = snprintf(buf, len, "not waiting");
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}

size_t gp_engine_why(const gp_engine *e, uint64_t id, char *buf, size_t len)
{
    if (!e || !buf || len == 0)
        return 0;
    uint32_t job = gp__job_lookup(e, id);
    if (job == GP__NONE) {
        int n = snprintf(buf, len, "no job %llu", (unsigned long long)id);
        return n < 0 ? 0 : (size_t)n;
    }
    const gp__job *j = &e->jobs[job];
    if (j->state == GP_JOB_PENDING)
        return gp__wait_format(e, j, &j->wait, buf, len);
    const gp_history_entry *h = &e->histories[job].entry[(j->n_history + GP__HISTORY - 1) % GP__HISTORY];
    int n = snprintf(buf, len, "%s", j->n_history > 0 ? h->reason : gp_job_state_name(j->state));
    return n < 0 ? 0 : (size_t)n;
}

size_t gp_engine_job_history(const gp_engine *e, uint64_t id, gp_history_entry *out, size_t cap)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE || !out)
        return 0;
    const gp__job *j = &e->jobs[job];
    size_t kept = j->n_history < GP__HISTORY ? (size_t)j->n_history : GP__HISTORY, n = 0;
    for (size_t i = j->n_history - kept; i < (size_t)j->n_history && n < cap; i++)
        out[n++] = e->histories[job].entry[i % GP__HISTORY];
    return n;
}

double gp_engine_tenant_entitlement(const gp_engine *e, uint32_t tenant)
{
    if (!e || tenant >= e->n_tenants || e->tenants[tenant].removed)
        return 0;
    return e->entitlements_known ? e->entitlement[tenant] : gp__tenant_entitlement_walk(e, tenant);
}

const char *gp_engine_job_user(const gp_engine *e, uint64_t id)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE || e->jobs[job].user == GP__NONE)
        return NULL;
    return e->users[e->jobs[job].user].name;
}

gp_err gp_engine_job_info(const gp_engine *e, uint64_t id, gp_job_info *out, gp_error *err)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE || !out)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)id);
    const gp__job *j = &e->jobs[job];
    memset(out, 0, sizeof *out);
    out->id = j->id;
    out->state = j->state;
    out->cls = j->cls;
    out->tenant = j->tenant;
    out->replicas = j->replicas;
    out->gpus = j->gpus;
    out->priority = j->priority;
    out->gpu_type = j->placed ? j->bound_type : -1;
    out->submit_time = j->submit_time;
    out->bind_time = j->placed ? j->bind_time : -1;
    out->last_checkpoint = j->last_checkpoint;
    out->preempt_deadline = j->state == GP_JOB_PREEMPTING ? j->deadline : -1;
    out->preemptions = j->preemptions;
    out->wait = j->wait;
    out->time_limit_s = j->limit;
    out->time_limited = j->time_limited;
    out->restarts = j->restarts;
    out->requeues = j->requeues;
    return GP_OK;
}

size_t gp_engine_job_gpus(const gp_engine *e, uint64_t id, uint32_t *out, size_t cap)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE || !e->jobs[job].placed || !out || e->jobs[job].gpus == 0)
        return 0;
    const gp__job *j = &e->jobs[job];
    size_t n = gp__placed_count(j);
    if (n > cap)
        n = cap;
    memcpy(out, j->placed, n * sizeof *out);
    return n;
}

size_t gp_engine_job_slices(const gp_engine *e, uint64_t id, gp_slice *out, size_t cap)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE || !out || !e->jobs[job].placed || !gp__job_shared(&e->jobs[job]))
        return 0;
    const gp__job *j = &e->jobs[job];
    size_t n = 0;
    for (int r = 0; r < j->replicas && n < cap; r++, n++) {
        const gp__gpu *g = &e->fleet.gpus[j->placed[r]];
        gp_slice *s = &out[n];
        memset(s, 0, sizeof *s);
        s->gpu = j->placed[r];
        s->kind = j->isolation;
        s->milli = gp__replica_milli(e, j, g);
        int64_t gpu_mem = e->fleet.nodes[g->node].gpu_mem_mib;
        s->mig_start = j->slot[r];
        if (j->isolation == GP_ISO_MIG) {
            snprintf(s->mig_profile, sizeof s->mig_profile, "%s", j->mig_profile);
            s->gpu_mem_mib = gp__mig_profile_mem(g, gpu_mem, gp__mig_profile_find(g->mig_model, j->mig_profile));
        } else if (j->isolation == GP_ISO_MPS) {
            s->gpu_mem_mib = j->share_mem > 0 ? j->share_mem : gpu_mem * j->mps_milli / 1000;
        } else {
            s->gpu_mem_mib = gpu_mem;
        }
    }
    return n;
}

int64_t gp_engine_now(const gp_engine *e) { return e ? e->now : 0; }

uint64_t gp_engine_changes(const gp_engine *e) { return e ? e->changes : 0; }

void gp_engine_stats_get(const gp_engine *e, gp_engine_stats *out)
{
    if (!e || !out)
        return;
    *out = e->stats;
    out->pending = e->n_pending;
    out->running = out->preempting = 0;
    for (size_t i = 0; i < e->n_running; i++) {
        if (e->jobs[e->running[i]].state == GP_JOB_PREEMPTING)
            out->preempting++;
        else
            out->running++;
    }
    out->jobs = e->n_jobs - e->n_free_slots;
    out->gpus_total = (int64_t)e->fleet.n_gpus;
    out->gpus_healthy = out->gpus_allocated = 0;
    for (size_t g = 0; g < e->fleet.n_gpus; g++) {
        const gp__gpu *gpu = &e->fleet.gpus[g];
        out->gpus_healthy += gpu->healthy && e->fleet.nodes[gpu->node].up;
        out->gpus_allocated += gpu->owner != 0;
    }
}

size_t gp_engine_tenant_count(const gp_engine *e) { return e ? e->n_tenants : 0; }

gp_err gp_engine_tenant_find(const gp_engine *e, const char *path, uint32_t *index, gp_error *err)
{
    uint32_t t = e ? gp__tenant_lookup(e, path) : GP__NONE;
    if (t == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "path", "no tenant %s", path ? path : "(null)");
    if (index)
        *index = t;
    return GP_OK;
}

bool gp_engine_tenant_get(const gp_engine *e, uint32_t index, gp_tenant_info *out)
{
    if (!e || !out || index >= e->n_tenants || e->tenants[index].removed)
        return false;
    const gp__tenant *t = &e->tenants[index];
    memset(out, 0, sizeof *out);
    out->index = index;
    out->parent = t->parent;
    snprintf(out->path, sizeof out->path, "%s", t->path);
    out->has_guarantee = t->has_guarantee;
    out->guarantee = t->guarantee;
    out->limit = t->limit;
    out->user_limit = t->user_limit;
    out->usage = t->usage;
    out->guaranteed_usage = t->guaranteed;
    out->weight = gp__tenant_weight(e, t);
    out->dominant_share = t->share;
    out->lend = t->lend;
    out->untrusted = t->untrusted;
    out->pending_jobs = (int)t->n_pending;
    out->running_jobs = t->running;
    out->oldest_pending_submit = -1;
    for (size_t i = 0; i < t->n_pending; i++) {
        int64_t submit = e->jobs[t->pending[i]].submit_time;
        if (out->oldest_pending_submit < 0 || submit < out->oldest_pending_submit)
            out->oldest_pending_submit = submit;
    }
    for (int k = GP_KIND_TRAINING; k <= GP_KIND_INTERACTIVE; k++)
        out->time_limit_s[k] = gp__tenant_time_limit(e, index, (gp_job_kind)k);
    gp__tenant_job_limits(e, index, &out->job_defaults, &out->job_max);
    return true;
}

const char *gp_engine_tenant_path(const gp_engine *e, uint32_t index)
{
    return e && index < e->n_tenants && !e->tenants[index].removed ? e->tenants[index].path : "";
}

size_t gp_engine_node_count(const gp_engine *e) { return e ? e->fleet.n_nodes : 0; }

bool gp_engine_node_get(const gp_engine *e, uint32_t index, gp_node_info *out)
{
    if (!e || !out || index >= e->fleet.n_nodes)
        return false;
    const gp__node *n = &e->fleet.nodes[index];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", n->name);
    snprintf(out->zone, sizeof out->zone, "%s", e->fleet.zones[n->zone]);
    snprintf(out->block, sizeof out->block, "%s", e->fleet.blocks[n->block].name);
    out->type = n->type;
    out->gpu_count = n->gpu_count;
    for (int i = 0; i < n->gpu_count; i++) {
        out->gpus_healthy += e->fleet.gpus[n->gpu_first + i].healthy;
        out->gpus_free += gp__gpu_is_free(&e->fleet.gpus[n->gpu_first + i]);
    }
    out->gpu_first = n->gpu_first;
    out->up = n->up;
    out->draining = n->draining;
    out->cpu_millis = n->cpu_cap;
    out->cpu_used = n->cpu_used;
    out->mem_mib = n->mem_cap;
    out->mem_used = n->mem_used;
    out->gpu_mem_mib = n->gpu_mem_mib;
    return true;
}

size_t gp_engine_gpu_count(const gp_engine *e) { return e ? e->fleet.n_gpus : 0; }

bool gp_engine_gpu_get(const gp_engine *e, uint32_t gpu, gp_gpu_info *out)
{
    if (!e || !out || gpu >= e->fleet.n_gpus)
        return false;
    const gp__gpu *g = &e->fleet.gpus[gpu];
    memset(out, 0, sizeof *out);
    out->node = g->node;
    out->index = g->index;
    out->nvlink_domain = g->nvlink;
    out->type = e->fleet.nodes[g->node].type;
    out->healthy = g->healthy;
    out->job = g->owner ? e->jobs[g->owner - 1].id : 0;
    snprintf(out->uuid, sizeof out->uuid, "%s", g->uuid);
    out->sharing = (gp_sharing)g->sharing;
    out->used_milli = g->used_milli;
    out->jobs = g->jobs;
    if (g->trust != GP__NONE)
        snprintf(out->trust_domain, sizeof out->trust_domain, "%s", e->tenants[g->trust].path);
    if (g->mig_model >= 0)
        gp__mig_layout_format(g, out->mig_layout, sizeof out->mig_layout);
    out->claimed_for = g->claim ? e->jobs[g->claim - 1].id : 0;
    return true;
}

int gp_engine_gpu_type_count(const gp_engine *e) { return e ? e->fleet.n_types : 0; }

const char *gp_engine_gpu_type_name(const gp_engine *e, int type)
{
    return e && type >= 0 && type < e->fleet.n_types ? e->fleet.types[type] : NULL;
}

void gp_engine_fleet_capacity(const gp_engine *e, gp_res *out)
{
    if (e && out)
        *out = e->fleet.capacity;
}

void gp_engine_gpus_by_type(const gp_engine *e, int64_t out[GP_MAX_GPU_TYPES])
{
    memset(out, 0, GP_MAX_GPU_TYPES * sizeof *out);
    for (uint32_t i = 0; e && i < e->fleet.n_nodes; i++) {
        const gp__node *n = &e->fleet.nodes[i];
        if (n->type < GP_MAX_GPU_TYPES)
            out[n->type] += n->gpu_count;
    }
}
