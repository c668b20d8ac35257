/* queries.c - the engine's read-only queries (engine.h, "queries"): a
 * job's history, placement, slices, replicas' nodes, user and info; a
 * tenant's entitlement, info and path; nodes, GPUs, GPU types, capacity; the clock, the change
 * counter and the statistics; and a spec with its tenant's job defaults
 * filled in.  None of them changes the engine.  The one query that puts a
 * wait into words, gp_engine_why, is why.c's.
 *
 * A top file (internal.h, "Layers"): it reads the books of every other
 * file and nothing in src/core calls it.
 *
 * Example: after a bind of job 7 on node a's GPUs 0..3,
 * gp_engine_job_gpus(e, 7, out, 8) returns 4 with out = {0, 1, 2, 3}
 * (fleet GPU indexes); gp_engine_gpu_get(e, 0, &info) names node a.
 */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

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
    return e ? gp__tenant_entitlement(e, tenant) : 0;
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

const char *gp_engine_job_node(const gp_engine *e, uint64_t id, int replica)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE)
        return NULL;
    const gp__job *j = &e->jobs[job];
    bool shared = gp__job_shared(j);
    if (!j->placed || replica < 0 || replica >= j->replicas || (!shared && j->gpus == 0))
        return NULL;
    uint32_t first = j->placed[shared ? replica : replica * j->gpus]; /* as gp_engine_job_gpus/slices lay it out */
    return e->fleet.nodes[e->fleet.gpus[first].node].name;
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
    out->dedicated = t->ded_domain != GP__NONE;
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

size_t gp_engine_pool_count(const gp_engine *e) { return e ? e->fleet.n_pools : 0; }

uint32_t gp_engine_pool_find(const gp_engine *e, const char *name)
{
    for (size_t p = 0; e && name && p < e->fleet.n_pools; p++)
        if (strcmp(e->fleet.pools[p].name, name) == 0)
            return (uint32_t)p;
    return UINT32_MAX;
}

const char *gp_engine_pool_name(const gp_engine *e, uint32_t index)
{
    return e && index < e->fleet.n_pools ? e->fleet.pools[index].name : "";
}

/* A whole GPU held by a job from outside owner's subtree. */
static bool gpu_borrowed(const gp_engine *e, const gp__gpu *g, uint32_t owner)
{
    if (g->owner == 0)
        return false;
    for (uint32_t a = e->jobs[g->owner - 1].tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (a == owner)
            return false;
    return true;
}

bool gp_engine_pool_get(const gp_engine *e, uint32_t index, gp_pool_info *out)
{
    if (!e || !out || index >= e->fleet.n_pools)
        return false;
    const gp__pool *pl = &e->fleet.pools[index];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", pl->name);
    out->spec = pl->spec;
    uint32_t owner = pl->spec.owner[0] ? gp__tenant_lookup(e, pl->spec.owner) : GP__NONE;
    out->owned = owner != GP__NONE;
    out->lent = out->owned && e->tenants[owner].lend;
    for (size_t n = 0; n < e->fleet.n_nodes; n++) {
        const gp__node *node = &e->fleet.nodes[n];
        if (node->pool != index)
            continue;
        out->nodes++;
        out->gpus += node->gpu_count;
        for (int g = 0; out->owned && g < node->gpu_count; g++)
            out->gpus_borrowed += gpu_borrowed(e, &e->fleet.gpus[node->gpu_first + g], owner);
    }
    return true;
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
    out->replicas = (int)n->replicas;
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

gp_err gp_engine_job_defaults(const gp_engine *e, gp_job_spec *s, gp_error *err)
{
    uint32_t tenant = e ? gp__tenant_lookup(e, s->tenant) : GP__NONE;
    if (tenant == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "tenant", "no tenant %s", s->tenant ? s->tenant : "(null)");
    gp__job_limits_fill(e, tenant, s);
    return GP_OK;
}
