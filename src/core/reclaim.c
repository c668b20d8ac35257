/* reclaim.c - taking borrowed capacity back for a guaranteed job.
 *
 * When a job that runs within its tenant's guarantee cannot be placed, the
 * capacity it is owed is held by borrowers.  We pick victims among running
 * burstable jobs of an accepted GPU type, whole jobs only, in this order:
 *
 *   1. jobs not preempted within the cool-down (a victim of last resort
 *      otherwise, so one job is not bounced again and again);
 *   2. jobs of the tenants furthest over their guarantee (dominant share of
 *      usage above guarantee, divided by weight);
 *   3. lower priority first;
 *   4. least work lost: GPU-seconds since the last checkpoint (or bind);
 *   5. the most recently started.
 *
 * Victims are added in that order until the job would fit if their GPUs
 * were free (placement is asked, with topology and best fit); then each
 * victim is taken out again, last added first, if the job still fits
 * without it, so the set is minimal.  Each victim gets PREEMPT with its
 * checkpoint grace; its GPUs are claimed for the reclaiming job so nobody
 * else takes them when the grace ends.  The reclaiming job waits "for the
 * victims' grace" and is placed by the first pass at or after the last
 * deadline.  Guaranteed jobs are never victims, so a victim can never
 * preempt its reclaimer back: no preemption loop.
 *
 * Example: 16 H100; research/nlp (guarantee 16) idle; research/vision
 * (guarantee 0) borrows all 16 with a 1x8 job (priority 0, checkpointed
 * 10 min ago) and two 1x4 jobs (priority 5, started 1 min ago).  nlp
 * submits a 1x8 job: victims in order are the 1x8 (lower priority), and it
 * alone suffices: PREEMPT, grace 120 s, work lost 8 x 600 GPU-s; the two
 * 1x4 jobs keep running.
 */
#include "core/internal.h"

#include "util/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool in_cooldown(const gp_engine *e, const gp__job *j)
{
    return j->last_preempted >= 0 && e->now - j->last_preempted < e->cfg.preempt_cooldown_s;
}

static double over_share(const gp_engine *e, uint32_t tenant)
{
    const gp__tenant *t = &e->tenants[tenant];
    double over = 0;
    for (int d = 0; d < GP_DIMS; d++) {
        int64_t cap = e->fleet.capacity.v[d];
        int64_t g = t->has_guarantee && t->guarantee.v[d] != GP_UNLIMITED ? t->guarantee.v[d] : 0;
        if (cap > 0 && t->usage.v[d] > g) {
            double s = (double)(t->usage.v[d] - g) / (double)cap;
            if (s > over)
                over = s;
        }
    }
    return over / gp__tenant_weight(e, t);
}

static int64_t work_lost(const gp_engine *e, const gp__job *j)
{
    int64_t since = j->last_checkpoint > j->bind_time ? j->last_checkpoint : j->bind_time;
    return (e->now - since) * j->replicas * j->gpus;
}

/* Was j itself preempted for v within the cool-down?  Then v is no victim
 * of j: that would undo the first preemption (a loop).  Every preemption
 * of the last cool-down counts, not only j's latest. */
static bool preempted_for(const gp_engine *e, const gp__job *j, const gp__job *v)
{
    for (size_t i = 0; i < e->n_recent; i++) {
        const gp__preemption *p = &e->recent[i];
        if (p->victim == j->id && p->by == v->id && e->now - p->time < e->cfg.preempt_cooldown_s)
            return true;
    }
    return false;
}

/* Keep the preemption of v for j, and forget those past the cool-down. */
static void remember_preemption(gp_engine *e, const gp__job *j, const gp__job *v)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->n_recent; i++)
        if (e->now - e->recent[i].time < e->cfg.preempt_cooldown_s)
            e->recent[kept++] = e->recent[i];
    e->n_recent = kept;
    if (GP__GROW(e->recent, e->n_recent, e->cap_recent))
        e->recent[e->n_recent++] = (gp__preemption){j->id, v->id, e->now};
}

/* The victim order's sort key, computed once per candidate. */
typedef struct victim_key {
    bool cooling;
    double over;
    int priority;
    int64_t lost;
    int64_t bind_time;
    uint64_t id;
} victim_key;

static int victim_order(uint32_t ia, uint32_t ib, const void *ctx)
{
    const victim_key *a = (const victim_key *)ctx + ia, *b = (const victim_key *)ctx + ib;
    if (a->cooling != b->cooling)
        return a->cooling ? 1 : -1;
    if (a->over != b->over)
        return a->over > b->over ? -1 : 1;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    if (a->lost != b->lost)
        return a->lost < b->lost ? -1 : 1;
    if (a->bind_time != b->bind_time)
        return a->bind_time > b->bind_time ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Running burstable jobs of `type`, sorted into victim order. */
/* Which running jobs may be victims for a reclaiming job. */
typedef bool (*victim_filter)(const gp_engine *e, const gp__job *reclaimer, const gp__job *v, int type);

/* For capacity: whole GPUs are freed by whole-GPU jobs, slices by jobs of
 * the same kind of slice, on the GPU type wanted. */
static bool frees_capacity(const gp_engine *e, const gp__job *j, const gp__job *v, int type)
{
    (void)e;
    return v->bound_type == type && v->isolation == j->isolation && v->gpus > 0;
}

/* Running burstable jobs the filter accepts, sorted into victim order. */
static size_t victim_candidates(const gp_engine *e, uint32_t job, int type, victim_filter accept, uint32_t *cand)
{
    size_t n = 0;
    const gp__job *j = &e->jobs[job];
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *v = &e->jobs[e->running[i]];
        if (v->state == GP_JOB_RUNNING && v->cls == GP_CLASS_BURSTABLE && e->running[i] != job &&
            !preempted_for(e, j, v) && accept(e, j, v, type))
            cand[n++] = e->running[i];
    }
    victim_key *keys = calloc(n ? n : 1, sizeof *keys);
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (keys && order) {
        for (size_t i = 0; i < n; i++) {
            const gp__job *v = &e->jobs[cand[i]];
            keys[i] = (victim_key){in_cooldown(e, v), over_share(e, v->tenant), v->priority, work_lost(e, v),
                                   v->bind_time, v->id};
            order[i] = (uint32_t)i;
        }
        gp_sort_indexes(order, n, victim_order, keys);
        for (size_t i = 0; i < n; i++)
            order[i] = cand[order[i]];
        memcpy(cand, order, n * sizeof *cand);
    }
    free(keys);
    free(order);
    return n;
}

/* Pretend victim v's GPUs (and its CPU and memory) are free, or take them
 * back, for a placement look. */
static void pretend_free(gp_engine *e, uint32_t v, bool freed)
{
    gp__job *j = &e->jobs[v];
    if (gp__job_shared(j)) {
        if (freed)
            gp__shared_give(e, v);
        else
            gp__shared_take(e, v, false);
        return;
    }
    size_t n = (size_t)j->replicas * j->gpus;
    for (size_t i = 0; i < n; i++) {
        gp__gpu *g = &e->fleet.gpus[j->placed[i]];
        gp__node *node = &e->fleet.nodes[g->node];
        g->owner = freed ? 0 : v + 1;
        if (i % (size_t)j->gpus == 0) {
            node->cpu_used += freed ? -j->cpu : j->cpu;
            node->mem_used += freed ? -j->mem : j->mem;
        }
        if (i + 1 == n || e->fleet.gpus[j->placed[i + 1]].node != g->node)
            gp__node_reindex(&e->fleet, g->node);
    }
}

static bool touches_block(const gp_engine *e, uint32_t victim, uint32_t block)
{
    const gp__job *v = &e->jobs[victim];
    size_t n = gp__placed_count(v);
    for (size_t i = 0; i < n; i++)
        if (e->fleet.nodes[e->fleet.gpus[v->placed[i]].node].block == block)
            return true;
    return false;
}

/* Can freeing this victim have made a block gang fit?  Only if a block it
 * touches now holds the gang by GPU count: a cheap test that saves a
 * placement look over every block after each candidate. */
static bool worth_a_look(const gp_engine *e, const gp__job *j, int type, uint32_t victim)
{
    if (gp__job_shared(j) || j->topology != GP_TOPO_BLOCK)
        return true;
    const gp__job *v = &e->jobs[victim];
    size_t n = gp__placed_count(v);
    for (size_t i = 0; i < n; i++) {
        const gp__block *b = &e->fleet.blocks[e->fleet.nodes[e->fleet.gpus[v->placed[i]].node].block];
        if (gp__replica_capacity(b->hist[type], j->gpus) >= j->replicas)
            return true;
    }
    return false;
}

/* Victims for job on type, in *chosen (count returned); 0 = none suffice.
 * On success the GPUs the job would then take are left in e->scratch.out
 * (gp__placed_count of them): the plan its claims will hold. */
static size_t choose_victims(gp_engine *e, uint32_t job, int type, uint32_t *cand, size_t n_cand, bool *chosen)
{
    gp__job *j = &e->jobs[job];
    size_t added = 0;
    bool fits = false;
    for (; added < n_cand && !fits; added++) {
        pretend_free(e, cand[added], true);
        fits = worth_a_look(e, j, type, cand[added]) && gp__place_find(e, j, type, false);
    }
    if (!fits) {
        for (size_t i = 0; i < added; i++)
            pretend_free(e, cand[i], false);
        return 0;
    }
    for (size_t i = 0; i < added; i++)
        chosen[i] = true;
    if (!gp__job_shared(j) && j->topology == GP_TOPO_BLOCK) { /* victims outside the plan's block never help */
        uint32_t block = e->fleet.nodes[e->fleet.gpus[e->scratch.out[0]].node].block;
        for (size_t i = 0; i < added; i++)
            if (!touches_block(e, cand[i], block)) {
                pretend_free(e, cand[i], false);
                chosen[i] = false;
            }
    }
    for (size_t i = added; i-- > 0;) { /* minimise: drop victims not needed */
        if (!chosen[i])
            continue;
        pretend_free(e, cand[i], false);
        if (gp__place_find(e, j, type, false))
            chosen[i] = false;
        else
            pretend_free(e, cand[i], true);
    }
    gp__place_find(e, j, type, false); /* the plan with the minimal set, into scratch.out */
    size_t count = 0;
    for (size_t i = 0; i < added; i++)
        if (chosen[i]) {
            pretend_free(e, cand[i], false);
            count++;
        }
    return count;
}

static uint32_t guarantee_holder(const gp_engine *e, uint32_t tenant)
{
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (e->tenants[a].has_guarantee)
            return a;
    return tenant;
}

/* Hold the planned GPUs (victims' and free ones alike) for the job, so
 * that nobody takes them while the victims' grace runs. */
static void claim_plan(gp_engine *e, uint32_t job, const uint32_t *plan, size_t n)
{
    gp__job *j = &e->jobs[job];
    if (!gp__grow((void **)&j->claimed, &j->n_claimed_cap, j->n_claimed + n, sizeof *j->claimed))
        return;
    for (size_t i = 0; i < n; i++) {
        gp__gpu *g = &e->fleet.gpus[plan[i]];
        if (g->claim == job + 1)
            continue; /* two replicas planned on one shared GPU */
        g->claim = job + 1;
        j->claimed[j->n_claimed++] = plan[i];
        gp__node_reindex(&e->fleet, g->node);
    }
}

static void preempt(gp_engine *e, uint32_t job, uint32_t victim)
{
    gp__job *j = &e->jobs[job], *v = &e->jobs[victim];
    uint32_t holder = guarantee_holder(e, j->tenant);
    int64_t lost = work_lost(e, v);
    gp_decision *d = gp__decision_push(e, GP_DEC_PREEMPT, v->id);
    if (d) {
        d->grace_s = v->grace;
        d->by_job = j->id;
        snprintf(d->by_tenant, sizeof d->by_tenant, "%s", e->tenants[j->tenant].path);
        snprintf(d->guarantee_of, sizeof d->guarantee_of, "%s", e->tenants[holder].path);
        d->work_lost_gpu_s = lost;
        snprintf(d->reason, sizeof d->reason, "%s reclaims its guarantee for job %llu", e->tenants[holder].path,
                 (unsigned long long)j->id);
    }
    gp__job_transition(e, victim, GP_JOB_PREEMPTING,
                       "preempted: %s reclaims its guarantee for job %llu of %s; %lld GPU-s since the last checkpoint",
                       e->tenants[holder].path, (unsigned long long)j->id, e->tenants[j->tenant].path,
                       (long long)lost);
    v->deadline = gp__grace_deadline(e, v->grace);
    v->last_preempted = e->now;
    remember_preemption(e, j, v);
    v->preemptions++;
    v->reclaimed_by = j->id;
    j->victims_left++;
    e->borrowed[v->bound_type] -= (int64_t)v->replicas * v->gpus;
    e->stats.pass_preempted++;
    e->stats.total_preempted++;
}

bool gp__reclaim(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    int64_t need = (int64_t)j->replicas * j->gpus;
    if (!gp__job_shared(j) && j->gpus == 0)
        return false; /* CPU-only work does not reclaim GPUs */
    if (e->reclaim_searches >= e->cfg.max_reclaim_searches ||
        (!gp__job_shared(j) && e->borrowed[type] + e->fleet.free[type] < need))
        return false;
    e->reclaim_searches++;
    e->stats.pass_reclaim_searches++;
    uint32_t *cand = malloc((e->n_running ? e->n_running : 1) * sizeof *cand);
    bool *chosen = calloc(e->n_running ? e->n_running : 1, sizeof *chosen);
    size_t n = 0, count = 0, n_plan = gp__placed_count(j);
    uint32_t *plan = malloc(n_plan * sizeof *plan);
    if (cand && chosen && plan) {
        n = victim_candidates(e, job, type, frees_capacity, cand);
        count = choose_victims(e, job, type, cand, n, chosen);
        memcpy(plan, e->scratch.out, n_plan * sizeof *plan);
    }
    for (size_t i = 0; i < n && count > 0; i++)
        if (chosen[i])
            preempt(e, job, cand[i]);
    if (count > 0)
        claim_plan(e, job, plan, n_plan);
    free(plan);
    free(cand);
    free(chosen);
    if (count == 0)
        return false;
    j->wait = (gp_wait){.code = GP_WAIT_RECLAIM, .dim = type, .tenant = guarantee_holder(e, j->tenant),
                        .a = (int64_t)count, .time = e->now};
    for (size_t i = 0; i < e->n_running; i++) { /* the last deadline among its victims */
        const gp__job *v = &e->jobs[e->running[i]];
        if (v->state == GP_JOB_PREEMPTING && v->reclaimed_by == j->id && v->deadline > j->wait.time)
            j->wait.time = v->deadline;
    }
    return true;
}

/* ---- reclaiming quota ---- */

static bool under(const gp_engine *e, uint32_t tenant, uint32_t ancestor)
{
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (a == ancestor)
            return true;
    return false;
}

/* For a full limit: any borrower under an ancestor whose limit is full. */
static bool frees_quota(const gp_engine *e, const gp__job *j, const gp__job *v, int type)
{
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (gp__res_exceeds(&e->tenants[a].usage, &demand, &e->tenants[a].limit) >= 0 && under(e, v->tenant, a))
            return true;
    return false;
}

/* The job fits its guarantees, but an ancestor's limit is full because
 * burstable jobs under it borrow: preempt the cheapest of them until the
 * job fits under every limit again (guaranteed usage always does: a
 * guarantee never exceeds an ancestor's limit).  The job waits for their
 * grace; once they are gone it is admitted and placed as usual. */
bool gp__reclaim_limit(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    if (e->reclaim_searches >= e->cfg.max_reclaim_searches)
        return false;
    e->reclaim_searches++;
    e->stats.pass_reclaim_searches++;
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    size_t depth = 0;
    gp_res over[GP_MAX_TENANT_DEPTH]; /* per ancestor: what must go, per dimension */
    uint32_t anc[GP_MAX_TENANT_DEPTH];
    for (uint32_t a = j->tenant; a != GP__NONE && depth < GP_MAX_TENANT_DEPTH; a = e->tenants[a].parent, depth++) {
        const gp__tenant *t = &e->tenants[a];
        anc[depth] = a;
        for (int d = 0; d < GP_DIMS; d++)
            over[depth].v[d] = t->limit.v[d] == GP_UNLIMITED ? 0 : t->usage.v[d] + demand.v[d] - t->limit.v[d];
    }
    uint32_t *cand = malloc((e->n_running ? e->n_running : 1) * sizeof *cand);
    bool *chosen = calloc(e->n_running ? e->n_running : 1, sizeof *chosen);
    size_t n = cand && chosen ? victim_candidates(e, job, type, frees_quota, cand) : 0, count = 0;
    bool covered = false;
    for (size_t i = 0; i < n && !covered; i++) {
        const gp__job *v = &e->jobs[cand[i]];
        gp_res vd;
        gp__job_demand(e, v, v->bound_type, &vd);
        bool helps = false;
        for (size_t k = 0; k < depth; k++)
            for (int d = 0; d < GP_DIMS; d++)
                helps |= over[k].v[d] > 0 && vd.v[d] > 0 && under(e, v->tenant, anc[k]);
        if (!helps)
            continue;
        chosen[i] = true;
        count++;
        covered = true;
        for (size_t k = 0; k < depth; k++)
            for (int d = 0; d < GP_DIMS; d++) {
                if (under(e, v->tenant, anc[k]))
                    over[k].v[d] -= vd.v[d];
                covered &= over[k].v[d] <= 0;
            }
    }
    for (size_t i = 0; i < n && covered; i++)
        if (chosen[i])
            preempt(e, job, cand[i]);
    free(cand);
    free(chosen);
    if (!covered)
        return false;
    j->wait = (gp_wait){.code = GP_WAIT_RECLAIM, .dim = type, .tenant = guarantee_holder(e, j->tenant),
                        .a = (int64_t)count, .time = e->now};
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *v = &e->jobs[e->running[i]];
        if (v->state == GP_JOB_PREEMPTING && v->reclaimed_by == j->id && v->deadline > j->wait.time)
            j->wait.time = v->deadline;
    }
    return true;
}

void gp__claims_drop(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    for (size_t i = 0; i < j->n_claimed; i++) {
        gp__gpu *g = &e->fleet.gpus[j->claimed[i]];
        if (g->claim == job + 1) {
            g->claim = 0;
            gp__node_reindex(&e->fleet, g->node);
        }
    }
}

void gp__claims_retake(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    size_t kept = 0;
    for (size_t i = 0; i < j->n_claimed; i++) {
        gp__gpu *g = &e->fleet.gpus[j->claimed[i]];
        if (g->claim != 0 || (g->owner != 0 && e->jobs[g->owner - 1].state != GP_JOB_PREEMPTING))
            continue; /* someone else's now */
        g->claim = job + 1;
        j->claimed[kept++] = j->claimed[i];
        gp__node_reindex(&e->fleet, g->node);
    }
    if (kept != j->n_claimed)
        e->changes++; /* a claim went to someone else: silent, but it matters */
    j->n_claimed = kept;
}

void gp__claims_forget(gp_engine *e, uint32_t job)
{
    if (e->jobs[job].n_claimed > 0 || e->jobs[job].victims_left > 0) {
        e->n_miss = 0; /* claimed capacity is free again */
        e->changes++;  /* no decision says so, but later placements see it */
    }
    gp__claims_drop(e, job);
    gp__job *j = &e->jobs[job];
    j->n_claimed = 0;
    j->victims_left = 0;
}
