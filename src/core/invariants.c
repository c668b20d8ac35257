/* invariants.c - the engine's self-check, recomputed from first principles.
 *
 * The incremental bookkeeping (free-capacity index, tenant usage, queues)
 * is fast because it is incremental; this file recomputes all of it the
 * slow way and compares.  Tests call it after every event.  Checked:
 *
 *   - every GPU a job holds names that job as owner, and no GPU is held
 *     twice (owned GPUs = sum of placed GPUs);
 *   - gangs are whole: replicas x gpus GPUs, each replica on one up node,
 *     all of its bound type, one block for `block`, one NVLink domain for
 *     `nvlink`; held GPUs are healthy;
 *   - every GPU names its node (in its record and in fleet.gpu_node);
 *   - node CPU, memory, busy and withheld counts, the nodes' briefs and
 *     the free-capacity index agree with the GPUs;
 *   - tenant usage and guaranteed usage are the sums over running jobs of
 *     their subtree, and guaranteed usage fits every guarantee;
 *   - pending queues hold exactly the pending jobs, in queue order, and the
 *     running list exactly the placed ones, each entry with when it is due
 *     (running_due), and the per-type lists exactly its whole-GPU jobs of
 *     that type;
 *   - claims: only pending jobs hold them; a whole GPU claimed names its
 *     claimer; the claimed amounts of a shared GPU (replicas, shares, MPS
 *     memory and covers, MIG slices) are the sums over its claimers; an
 *     MPS claimer's cover on a GPU is at most what its victims hold there;
 *     the shares on an MPS GPU plus its claims less their covers fit it,
 *     time-slice replicas plus claimed ones fit the factor, MIG claims
 *     never overlap each other nor an instance of work that stays (a
 *     victim in its grace is leaving); work that stays beside an MPS or
 *     time-slice claim is of the claim's trust domain;
 *   - dedicated nodes: each node's count of a dedicated domain's replicas
 *     is the sum over the jobs placed there as that domain's, one domain
 *     per node, no node barred between events, and a node that runs a
 *     domain's replica runs no replica of a tenant outside the domain.
 */
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

static gp_err check_gang(const gp_engine *e, uint32_t job, gp_error *err)
{
    const gp__job *j = &e->jobs[job];
    const gp__fleet *f = &e->fleet;
    if (gp__job_shared(j) || j->gpus == 0) { /* slices: gp__shared_check; CPU-only: its nodes */
        for (int r = 0; r < j->replicas; r++) {
            const gp__gpu *g = &f->gpus[j->placed[r]];
            if (!f->nodes[g->node].up || f->nodes[g->node].type != j->bound_type ||
                (gp__job_shared(j) && !g->healthy))
                return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "job %llu sits on a lost node or unhealthy GPU",
                                    (unsigned long long)j->id);
        }
        return GP_OK;
    }
    size_t n = (size_t)j->replicas * j->gpus;
    uint32_t first_node = f->gpus[j->placed[0]].node;
    for (size_t i = 0; i < n; i++) {
        const gp__gpu *g = &f->gpus[j->placed[i]];
        const gp__node *node = &f->nodes[g->node];
        uint32_t replica_node = f->gpus[j->placed[i - i % (size_t)j->gpus]].node;
        if (g->owner != job + 1)
            return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "job %llu holds GPU %u owned by another",
                                (unsigned long long)j->id, j->placed[i]);
        if (!g->healthy || !node->up)
            return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "job %llu holds an unhealthy or lost GPU",
                                (unsigned long long)j->id);
        if (node->type != j->bound_type || !(j->type_mask & (1u << node->type)))
            return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "job %llu holds a GPU of a wrong type",
                                (unsigned long long)j->id);
        if (g->node != replica_node)
            return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "a replica of job %llu spans nodes",
                                (unsigned long long)j->id);
        if (j->topology == GP_TOPO_BLOCK && node->block != f->nodes[first_node].block)
            return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "block job %llu spans blocks", (unsigned long long)j->id);
        if (j->topology == GP_TOPO_NVLINK &&
            (g->node != first_node || g->nvlink != f->gpus[j->placed[0]].nvlink))
            return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "nvlink job %llu spans NVLink domains",
                                (unsigned long long)j->id);
    }
    return GP_OK;
}

/* A running job holds whole GPUs exactly when it is listed under its type. */
static bool type_listed(const gp_engine *e, uint32_t job)
{
    const gp__job *j = &e->jobs[job];
    bool whole = gp__job_whole_gpus(j);
    if (j->type_pos == GP__NONE)
        return !whole;
    return whole && j->type_pos < e->n_type_running[j->bound_type] &&
           e->type_running[j->bound_type][j->type_pos] == job;
}

static gp_err check_jobs(const gp_engine *e, gp_res *usage, gp_res *guaranteed, gp_error *err)
{
    size_t owned = 0, placed = 0, listed = 0, pending = 0, type_listed_count = 0, type_lists = 0;
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        type_lists += e->n_type_running[t];
    for (size_t g = 0; g < e->fleet.n_gpus; g++)
        owned += e->fleet.gpus[g].owner != 0;
    for (size_t i = 0; i < e->n_jobs; i++) {
        const gp__job *j = &e->jobs[i];
        if (!j->used)
            continue;
        bool live = j->state == GP_JOB_RUNNING || j->state == GP_JOB_PREEMPTING || j->state == GP_JOB_ADMITTED;
        if (live != (j->placed != NULL) || live != (j->running_pos != GP__NONE))
            return gp_error_set(err, GP_ERR_CONFLICT, "job", "job %llu is %s but %s placed", (unsigned long long)j->id,
                                gp_job_state_name(j->state), j->placed ? "is" : "is not");
        pending += j->state == GP_JOB_PENDING;
        if (!live)
            continue;
        listed++;
        if (!gp__job_shared(j))
            placed += (size_t)j->replicas * j->gpus;
        if (!type_listed(e, (uint32_t)i))
            return gp_error_set(err, GP_ERR_CONFLICT, "job", "job %llu is not in the running list of its GPU type",
                                (unsigned long long)j->id);
        type_listed_count += j->type_pos != GP__NONE;
        if (j->running_pos >= e->n_running || e->running[j->running_pos] != i ||
            e->running_due[j->running_pos] != gp__running_due(j))
            return gp_error_set(err, GP_ERR_CONFLICT, "job", "job %llu: its running entry or when it is due is out of step",
                                (unsigned long long)j->id);
        gp_err rc = check_gang(e, (uint32_t)i, err);
        if (rc)
            return rc;
        gp_res demand;
        gp__job_demand(e, j, j->bound_type, &demand);
        for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent) {
            gp__res_add(&usage[a], &demand);
            if (j->cls == GP_CLASS_GUARANTEED)
                gp__res_add(&guaranteed[a], &demand);
        }
    }
    if (owned != placed)
        return gp_error_set(err, GP_ERR_CONFLICT, "gpu", "%zu GPUs owned but jobs hold %zu", owned, placed);
    if (listed != e->n_running || pending != e->n_pending || type_listed_count != type_lists)
        return gp_error_set(err, GP_ERR_CONFLICT, "job", "running list or pending count out of step");
    return GP_OK;
}

static gp_err check_tenants(const gp_engine *e, const gp_res *usage, const gp_res *guaranteed, gp_error *err)
{
    size_t queued = 0;
    for (size_t i = 0; i < e->n_tenants; i++) {
        const gp__tenant *t = &e->tenants[i];
        if (t->removed)
            continue;
        if (memcmp(&t->usage, &usage[i], sizeof usage[i]) || memcmp(&t->guaranteed, &guaranteed[i], sizeof usage[i]))
            return gp_error_set(err, GP_ERR_CONFLICT, "tenant", "usage of %s does not match its jobs", t->path);
        if (t->has_guarantee) {
            gp_res none;
            gp__res_zero(&none);
            int d = gp__res_exceeds(&t->guaranteed, &none, &t->guarantee);
            if (d >= 0)
                return gp_error_set(err, GP_ERR_QUOTA, "tenant", "guaranteed usage of %s exceeds its guarantee",
                                    t->path);
        }
        for (size_t k = 0; k < t->n_pending; k++) {
            const gp__job *j = &e->jobs[t->pending[k]];
            if (j->state != GP_JOB_PENDING || j->tenant != i)
                return gp_error_set(err, GP_ERR_CONFLICT, "tenant", "queue of %s holds a job that is not its pending job",
                                    t->path);
            if (k > 0) {
                const gp__job *p = &e->jobs[t->pending[k - 1]];
                bool ordered = p->priority > j->priority ||
                               (p->priority == j->priority &&
                                (p->submit_time < j->submit_time || (p->submit_time == j->submit_time && p->id < j->id)));
                if (!ordered)
                    return gp_error_set(err, GP_ERR_CONFLICT, "tenant", "queue of %s is out of order", t->path);
            }
        }
        size_t gpuless = 0;
        for (size_t k = 0; k < t->n_pending; k++)
            gpuless += gp__job_asks_no_gpu(e, &e->jobs[t->pending[k]]);
        if (gpuless != t->n_pending_gpuless)
            return gp_error_set(err, GP_ERR_CONFLICT, "tenant", "queue of %s counts %zu jobs without GPU, holds %zu",
                                t->path, t->n_pending_gpuless, gpuless);
        queued += t->n_pending;
    }
    if (queued != e->n_pending)
        return gp_error_set(err, GP_ERR_CONFLICT, "tenant", "%zu jobs queued, %zu pending", queued, e->n_pending);
    return GP_OK;
}

static gp_err check_nodes(const gp_engine *e, gp_error *err)
{
    const gp__fleet *f = &e->fleet;
    uint32_t hist[GP_MAX_GPU_TYPES][GP_MAX_GPUS_PER_NODE + 1];
    memset(hist, 0, sizeof hist);
    int64_t *cpu = calloc(f->n_nodes + 1, sizeof *cpu), *mem = calloc(f->n_nodes + 1, sizeof *mem);
    uint32_t *reps = calloc(f->n_nodes + 1, sizeof *reps);
    if (!cpu || !mem || !reps) {
        free(cpu);
        free(mem);
        free(reps);
        return gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    }
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        size_t stride = gp__job_shared(j) || j->gpus == 0 ? 1 : (size_t)j->gpus;
        for (int r = 0; r < j->replicas; r++) {
            uint32_t n = f->gpus[j->placed[(size_t)r * stride]].node;
            cpu[n] += j->cpu;
            mem[n] += j->mem;
            reps[n]++;
        }
    }
    gp_err rc = GP_OK;
    for (size_t n = 0; n < f->n_nodes && !rc; n++) {
        const gp__node *node = &f->nodes[n];
        int free_gpus = 0, busy = 0, withheld = 0, strays = 0;
        for (int i = 0; i < node->gpu_count; i++) {
            const gp__gpu *g = &f->gpus[node->gpu_first + i];
            free_gpus += gp__gpu_is_free(g);
            busy += g->owner != 0;
            withheld += !g->healthy || g->claim != 0;
            strays += g->node != n || f->gpu_node[node->gpu_first + i] != n;
        }
        if (!node->up || node->draining)
            free_gpus = 0;
        if (strays)
            rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "GPUs of node %s name another node", node->name);
        else if (node->free != free_gpus || node->busy != (uint32_t)busy || node->cpu_used != cpu[n] ||
            node->mem_used != mem[n] || node->replicas != reps[n] || node->withheld != withheld)
            rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "bookkeeping of node %s is out of step", node->name);
        else if (f->brief[n].block != node->block || f->brief[n].free != gp__node_brief_of(node).free ||
                 f->brief[n].withheld != node->withheld)
            rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "the brief of node %s is out of step", node->name);
        else if (node->indexed != (node->held ? 0 : node->free))
            rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "node %s sits in the wrong index bucket", node->name);
        else if (node->indexed)
            hist[node->type][node->indexed]++;
    }
    free(cpu);
    free(mem);
    free(reps);
    if (!rc && memcmp(hist, f->hist, sizeof hist))
        rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "free-capacity histogram is out of step");
    return rc;
}

/* Per GPU: what claims add up to, or what work that stays holds. */
typedef struct gpu_sum {
    int jobs;
    int64_t milli, mem, cover_milli, cover_mem;
    unsigned mig;
    uint32_t whole;       /* whole-GPU claims naming the GPU */
} gpu_sum;

/* Job j's MPS covers on each GPU it claims are at most what the victims
 * that cover it hold there. */
static gp_err check_covers(const gp_engine *e, const gp__job *j, gp_error *err)
{
    for (size_t k = 0; j->isolation == GP_ISO_MPS && k < j->n_claimed; k++) {
        uint32_t gi = j->claimed[k].gpu;
        int64_t cover = 0, held = 0;
        for (size_t m = 0; m < j->n_claimed; m++)
            cover += j->claimed[m].gpu == gi ? j->claimed[m].cover_milli : 0;
        for (size_t i = 0; i < e->n_running; i++) {
            const gp__job *v = &e->jobs[e->running[i]];
            for (int r = 0; v->covers_for == j->id && r < v->replicas; r++)
                held += v->placed[r] == gi ? v->mps_milli : 0;
        }
        if (cover > held || j->claimed[k].cover_milli > j->mps_milli)
            return gp_error_set(err, GP_ERR_CONFLICT, "claim", "job %llu counts on more than its victims hold on GPU %u",
                                (unsigned long long)j->id, gi);
    }
    return GP_OK;
}

static gp_err sum_claims(const gp_engine *e, gpu_sum *claims, gp_error *err)
{
    for (size_t i = 0; i < e->n_jobs; i++) {
        const gp__job *j = &e->jobs[i];
        if (!j->used || j->n_claimed == 0)
            continue;
        if (j->state != GP_JOB_PENDING || j->claims_dropped)
            return gp_error_set(err, GP_ERR_CONFLICT, "claim", "job %llu holds claims but is %s",
                                (unsigned long long)j->id, j->claims_dropped ? "between looks" : "not pending");
        for (size_t k = 0; k < j->n_claimed; k++) {
            uint32_t gi = j->claimed[k].gpu;
            const gp__gpu *g = &e->fleet.gpus[gi];
            gpu_sum *c = &claims[gi];
            if (!gp__job_shared(j)) {
                c->whole++;
                if (g->claim != i + 1)
                    return gp_error_set(err, GP_ERR_CONFLICT, "claim", "GPU %u claimed for job %llu names another",
                                        gi, (unsigned long long)j->id);
                continue;
            }
            c->jobs++;
            c->milli += gp__replica_milli(e, j, g);
            c->mem += gp__replica_mem(e, j, g);
            c->cover_milli += j->claimed[k].cover_milli;
            c->cover_mem += j->claimed[k].cover_mem;
            if (j->isolation == GP_ISO_MIG) {
                unsigned span = gp__mig_span(g, gp__mig_profile_find(g->mig_model, j->mig_profile), j->claimed[k].start);
                if (c->mig & span)
                    return gp_error_set(err, GP_ERR_CONFLICT, "claim", "MIG claims on GPU %u overlap", gi);
                c->mig |= span;
            } else if (g->claim_domain != gp__share_domain(e, j)) {
                return gp_error_set(err, GP_ERR_CONFLICT, "claim", "job %llu claims GPU %u of another trust domain",
                                    (unsigned long long)j->id, gi);
            }
        }
        gp_err rc = check_covers(e, j, err);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* Shared work that stays (not in a grace) per GPU (MIG slices); GP_ERR_CONFLICT
 * when it is of another trust domain than a claim on its GPU. */
static gp_err sum_staying(const gp_engine *e, gpu_sum *stay, gp_error *err)
{
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        if (!gp__job_shared(j) || j->state == GP_JOB_PREEMPTING)
            continue;
        for (int r = 0; r < j->replicas; r++) {
            uint32_t gi = j->placed[r];
            const gp__gpu *g = &e->fleet.gpus[gi];
            if (j->isolation == GP_ISO_MIG)
                stay[gi].mig |= gp__mig_span(g, gp__mig_profile_find(g->mig_model, j->mig_profile), j->slot[r]);
            else if (g->claim_jobs > 0 && g->claim_domain != gp__share_domain(e, j))
                return gp_error_set(err, GP_ERR_CONFLICT, "claim", "job %llu runs beside a claim of another org",
                                    (unsigned long long)j->id);
        }
    }
    return GP_OK;
}

static gp_err check_gpu_claims(const gp_engine *e, const gpu_sum *claims, const gpu_sum *stay, gp_error *err)
{
    const gp__fleet *f = &e->fleet;
    for (size_t gi = 0; gi < f->n_gpus; gi++) {
        const gp__gpu *g = &f->gpus[gi];
        const gpu_sum *c = &claims[gi], *s = &stay[gi];
        if (c->whole != (g->claim != 0) || c->jobs != g->claim_jobs || c->milli != g->claim_milli ||
            c->mem != g->claim_mem || c->mig != g->claim_mig || c->cover_milli != g->cover_milli ||
            c->cover_mem != g->cover_mem)
            return gp_error_set(err, GP_ERR_CONFLICT, "claim", "claimed amounts of GPU %zu are out of step", gi);
        if (c->jobs == 0)
            continue;
        bool over = false;
        switch (g->sharing) {
        case GP_SHARING_MIG: over = (s->mig & c->mig) != 0; break;
        case GP_SHARING_TIMESLICE: over = g->jobs + c->jobs > gp__pool_timeslice(e, f->nodes[g->node].pool); break;
        default:
            over = g->used_milli + c->milli - c->cover_milli > 1000 ||
                   g->used_mem + c->mem - c->cover_mem > f->nodes[g->node].gpu_mem_mib;
            break;
        }
        if (over || g->owner || g->claim)
            return gp_error_set(err, GP_ERR_CONFLICT, "claim", "GPU %zu is claimed beyond what its staying work leaves",
                                gi);
    }
    return GP_OK;
}

static gp_err check_claims(const gp_engine *e, gp_error *err)
{
    size_t n = e->fleet.n_gpus ? e->fleet.n_gpus : 1;
    gpu_sum *claims = calloc(n, sizeof *claims), *stay = calloc(n, sizeof *stay);
    gp_err rc;
    if (!claims || !stay)
        rc = gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    else if (!(rc = sum_claims(e, claims, err)) && !(rc = sum_staying(e, stay, err)))
        rc = check_gpu_claims(e, claims, stay, err);
    free(claims);
    free(stay);
    return rc;
}

static bool in_subtree(const gp_engine *e, uint32_t tenant, uint32_t root)
{
    for (uint32_t t = tenant; t != GP__NONE; t = e->tenants[t].parent)
        if (t == root)
            return true;
    return false;
}

/* One replica of j on node n: counted as a domain's, or beside one. */
static gp_err check_dedicated_replica(const gp_engine *e, const gp__job *j, uint32_t n, uint32_t *ded, gp_error *err)
{
    const gp__node *node = &e->fleet.nodes[n];
    if (j->ded_domain != GP__NONE) {
        ded[n]++;
        if (node->ded_domain != j->ded_domain)
            return gp_error_set(err, GP_ERR_CONFLICT, "node", "node %s runs replicas of two dedicated domains",
                                node->name);
    }
    if (node->ded_replicas > 0 && !in_subtree(e, j->tenant, node->ded_domain))
        return gp_error_set(err, GP_ERR_CONFLICT, "node", "node %s, dedicated to %s, runs job %llu of %s", node->name,
                            e->tenants[node->ded_domain].path, (unsigned long long)j->id, e->tenants[j->tenant].path);
    return GP_OK;
}

static gp_err check_dedicated(const gp_engine *e, gp_error *err)
{
    const gp__fleet *f = &e->fleet;
    uint32_t *ded = calloc(f->n_nodes ? f->n_nodes : 1, sizeof *ded);
    if (!ded)
        return gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    gp_err rc = GP_OK;
    for (size_t i = 0; i < e->n_running && !rc; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        size_t stride = gp__job_shared(j) || j->gpus == 0 ? 1 : (size_t)j->gpus;
        for (int r = 0; r < j->replicas && !rc; r++)
            rc = check_dedicated_replica(e, j, f->gpus[j->placed[(size_t)r * stride]].node, ded, err);
    }
    for (size_t n = 0; n < f->n_nodes && !rc; n++) {
        const gp__node *node = &f->nodes[n];
        if (node->ded_replicas != ded[n] || (node->ded_replicas == 0) != (node->ded_domain == GP__NONE))
            rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "dedicated count of node %s is out of step", node->name);
        else if (node->barred)
            rc = gp_error_set(err, GP_ERR_CONFLICT, "node", "node %s is still barred", node->name);
    }
    free(ded);
    return rc;
}

gp_err gp_engine_check_invariants(const gp_engine *e, gp_error *err)
{
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    size_t n = e->n_tenants ? e->n_tenants : 1;
    gp_res *usage = calloc(n, sizeof *usage), *guaranteed = calloc(n, sizeof *guaranteed);
    gp_err rc;
    if (!usage || !guaranteed)
        rc = gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    else if (!(rc = check_jobs(e, usage, guaranteed, err)) && !(rc = check_tenants(e, usage, guaranteed, err)) &&
             !(rc = check_nodes(e, err)) && !(rc = gp__shared_check(e, err)) && !(rc = check_claims(e, err)) &&
             !(rc = check_dedicated(e, err)))
        rc = gp__booking_check(e, err);
    free(usage);
    free(guaranteed);
    return rc;
}
