/* reclaim.c - taking borrowed capacity back for a guaranteed job, or for
 * a burstable one whose tenant is below its fair share ("fair-share
 * reclaim", below the capacity reclaim).
 *
 * When a job that runs within its tenant's guarantee cannot be placed, the
 * capacity it is owed is held by borrowers (capacity reclaim); when it fits
 * its guarantee but an ancestor's limit is full of borrowed work, the
 * quota is (limit reclaim).  Victims are running burstable jobs, whole
 * jobs only, never a job the reclaimer was itself preempted for within the
 * cool-down (that would undo the first preemption: a loop), nor a job the
 * engine already preempted max_preemptions times (default 3; 0 = no cap):
 * that job runs to its end, and the reclaimer takes other victims or waits
 * for room.  Every PREEMPT counts (reclaim, untrusted tenant), even one
 * withdrawn later; node loss and GPU failure do not (nobody chose them).
 * The cap limits reclaim only: an untrusted tenant's shared work is still
 * preempted (engine.c, enforce_trust).
 *
 * Which victims.  Every victim set is minimal (no victim can be dropped
 * with the need still met) and, among minimal sets, the cheapest:
 *
 *   1. lower priority first: a job is taken only if no set of jobs of
 *      lower priority suffices; at equal priority, jobs preempted within
 *      the cool-down are taken last (so one job is not bounced again);
 *   2. no more GPUs than needed: within one such tier, victims that fit
 *      within what is still missing are taken first, and a victim larger
 *      than that only when those do not suffice, smallest first;
 *   3. the lowest cost, in GPU-seconds:
 *
 *        cost = (work lost + 300 per job + 60 per GPU) / excess
 *
 *      where work lost is GPU-seconds since the last checkpoint (or bind),
 *      the constants price the restart of each job and GPU disrupted, and
 *      excess (>= 1) is how far the victim's tenant is over its fair
 *      share: its dominant usage (max over GPU types, CPU and memory of
 *      usage / fleet) divided by its entitlement, the fraction of the fleet
 *      that hierarchical DRF gives it (fairshare.c): at each level of its
 *      path, its weight / the weights of it and its siblings.  Ties: the
 *      most recently started, then the lower id.
 *
 * Victims are added in that order until the job would fit (capacity:
 * placement is asked, with topology and best fit; limit: usage is counted
 * at every full ancestor); then each victim is taken out again if the
 * need is still met without it, the largest first, then the most
 * expensive, so the set is minimal.  The search is bounded per pass by
 * max_reclaim_searches.
 *
 * Each victim gets PREEMPT with its checkpoint grace; for a capacity
 * reclaim the plan is claimed for the reclaiming job so nobody else takes
 * it when the grace ends: whole GPUs for a whole-GPU job, and for a shared
 * job only what it will take on each GPU of the plan (MIG slices, an MPS
 * share; sharing.c counts it, "covers" below), so that the rest of those
 * GPUs stays usable by others during the grace.  The reclaiming job waits
 * "for the victims' grace" and is placed by the first pass at or after the
 * last deadline, on what it claimed.  If it no longer needs them while
 * they are still in grace (it was cancelled, was placed without them, or
 * no longer runs within a guarantee), the preemptions are withdrawn: the
 * victims go back to running (TRANSITION preempting -> running,
 * "preemption withdrawn: job N was cancelled"), their usage interval
 * never closed.
 *
 * Example: 16 H100 on two nodes; roots research and ads (weight 1 each);
 * research holds nlp (guarantee 8, idle, so weight 8) and vision (no
 * guarantee, weight 1).  At t=1000 vision runs a 1x8 gang (checkpointed at
 * t=900) and ads eight 1x1 jobs (bound at t=700, never checkpointed), all
 * priority 0; nothing is free.  Costs:
 *
 *   vision's gang: (8 x 100 + 300 + 8 x 60) / excess 9 = 176
 *                  (usage 8/16 against entitlement 1/2 x 1/9 = 1/18)
 *   an ads job:    (1 x 300 + 300 + 60) / excess 1 = 660
 *                  (usage 8/16 against entitlement 1/2)
 *
 * nlp submits a 1x8 job: the gang is the cheapest and fits within the 8
 * GPUs missing: it alone is preempted.  Had nlp submitted a 1-GPU job, the
 * gang would still be cheaper but would leave 7 GPUs idle: an ads job fits
 * within the 1 GPU missing and goes instead (rule 2).
 *
 * Limit reclaim: research {limit 8}; nlp runs 3 guaranteed GPUs, vision a
 * 1-GPU and a 4-GPU job; nlp's next 4-GPU job needs 4 GPUs of the limit
 * back.  The 1-GPU job fits within the 4 missing and goes first, then the
 * 4-GPU job; pruning drops the 1-GPU job (the 4-GPU job alone suffices):
 * one victim, 4 GPUs.
 *
 * What is where.  This file is one subject, choosing victims: the cost and
 * its divisor, the loop guard, the candidates, choosing a minimal set, and
 * the three searches built on them (capacity, with the searches that found
 * nothing; fair-share reclaim; reclaiming quota), then withdrawing.  The
 * searches share one search state and its helpers, which stay private to
 * this file; splitting them into files would make that state a header
 * every search file reads, for no gain in reading.  The books of what a
 * search claims (claims, covers, the room counters) are claims.c's: lower
 * files (sharing.c, admission.c) keep them without calling a policy.
 */
#include "core/internal.h"

#include "util/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a restart costs beyond the work lost, in GPU-seconds. */
#define GP__COST_PER_JOB 300.0
#define GP__COST_PER_GPU 60.0

static bool in_cooldown(const gp_engine *e, const gp__job *j)
{
    return j->last_preempted >= 0 && e->now - j->last_preempted < e->cfg.preempt_cooldown_s;
}

/* Preempted max_preemptions times already (0 = no cap): no victim. */
static bool preemption_capped(const gp_engine *e, const gp__job *j)
{
    return e->cfg.max_preemptions > 0 && j->preemptions >= e->cfg.max_preemptions;
}

bool gp__borrows_reclaimably(const gp_engine *e, const gp__job *j)
{
    return j->cls == GP_CLASS_BURSTABLE && !preemption_capped(e, j);
}

int64_t gp__work_lost(const gp_engine *e, const gp__job *j)
{
    int64_t since = j->last_checkpoint > j->bind_time ? j->last_checkpoint : j->bind_time;
    return (e->now - since) * j->replicas * j->gpus;
}

/* ---- the cost's divisor ---- */

/* How far over its fair share: dominant usage / entitlement, at least 1. */
static double fair_share_excess(const gp_engine *e, uint32_t t)
{
    double usage = 0;
    for (int d = 0; d < GP_DIMS; d++) {
        int64_t cap = e->fleet.capacity.v[d];
        if (cap > 0 && (double)e->tenants[t].usage.v[d] / (double)cap > usage)
            usage = (double)e->tenants[t].usage.v[d] / (double)cap;
    }
    double ent = gp__tenant_entitlement(e, t);
    double excess = ent > 0 ? usage / ent : usage * 1e9;
    return excess > 1.0 ? excess : 1.0;
}

/* ---- the loop guard ---- */

/* The jobs j was preempted for within the cool-down: none unless j itself
 * is cooling down (its latest preemption is recent), so the scan of the
 * recent preemptions is done only then, once per search.  Caller frees. */
static uint64_t *preempted_for(const gp_engine *e, const gp__job *j, size_t *n)
{
    *n = 0;
    if (!in_cooldown(e, j))
        return NULL;
    uint64_t *by = malloc((e->n_recent ? e->n_recent : 1) * sizeof *by);
    for (size_t i = 0; by && i < e->n_recent; i++) {
        const gp__preemption *p = &e->recent[i];
        if (p->victim == j->id && e->now - p->time < e->cfg.preempt_cooldown_s)
            by[(*n)++] = p->by;
    }
    return by;
}

static bool listed(const uint64_t *ids, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
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

/* ---- candidates ---- */

/* A candidate's rank, computed once per search. */
typedef struct victim_key {
    int priority;
    bool cooling;
    double cost;
    int64_t bind_time;
    uint64_t id;
    int64_t size;         /* what it frees of the reclaimed GPU type, milli-GPUs */
} victim_key;

static bool same_tier(const victim_key *a, const victim_key *b)
{
    return a->priority == b->priority && a->cooling == b->cooling;
}

static int victim_order(uint32_t ia, uint32_t ib, const void *ctx)
{
    const victim_key *a = (const victim_key *)ctx + ia, *b = (const victim_key *)ctx + ib;
    if (a->priority != b->priority)
        return a->priority < b->priority ? -1 : 1;
    if (a->cooling != b->cooling)
        return a->cooling ? 1 : -1;
    if (a->cost != b->cost)
        return a->cost < b->cost ? -1 : 1;
    if (a->bind_time != b->bind_time)
        return a->bind_time > b->bind_time ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Pruning order: the highest tier first, then the largest, then the most
 * expensive. */
static int prune_order(uint32_t ia, uint32_t ib, const void *ctx)
{
    const victim_key *a = (const victim_key *)ctx + ia, *b = (const victim_key *)ctx + ib;
    if (!same_tier(a, b))
        return -victim_order(ia, ib, ctx);
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return -victim_order(ia, ib, ctx);
}

static int by_size(uint32_t ia, uint32_t ib, const void *ctx)
{
    const victim_key *a = (const victim_key *)ctx + ia, *b = (const victim_key *)ctx + ib;
    if (a->size != b->size)
        return a->size < b->size ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

static int by_last_run(uint32_t a, uint32_t b, const void *ctx)
{
    const uint64_t *last = ctx;
    return last[a] < last[b] ? -1 : last[a] > last[b];
}

/* Which running jobs may be victims for a reclaiming job. */
typedef bool (*victim_filter)(const gp_engine *e, const gp__job *reclaimer, const gp__job *v, int type);

/* For capacity: whole GPUs are freed by whole-GPU jobs, slices by jobs of
 * the same kind of slice, on the GPU type wanted. */
static bool frees_capacity(const gp_engine *e, const gp__job *j, const gp__job *v, int type)
{
    (void)e;
    return v->bound_type == type && v->isolation == j->isolation && v->gpus > 0;
}

/* For an owned pool (gp__reclaim_pool): the same, from jobs outside the
 * owner's subtree on its nodes. */
static bool frees_pool(const gp_engine *e, const gp__job *j, const gp__job *v, int type)
{
    return frees_capacity(e, j, v, type) && gp__pool_borrower(e, j->tenant, v);
}

/* Burstable and not capped; on an owned pool a borrower of any class (the
 * pool is its owner's whatever the borrower's guarantee), still not capped. */
static bool may_be_victim(const gp_engine *e, const gp__job *v, victim_filter accept)
{
    return accept == frees_pool ? !preemption_capped(e, v) : gp__borrows_reclaimably(e, v);
}

/* The candidates of one search, in victim order (cand and key aligned),
 * in the engine's reclaim buffer (valid until the next search). */
typedef struct victims {
    uint32_t *cand;
    victim_key *key;
    bool *chosen;
    uint32_t *scratch;    /* n indexes of working room */
    size_t n;
} victims;

/* Carve the arrays of one search out of e->reclaim_buf, grown as needed
 * and kept for the next search (no allocation per search). */
typedef struct carver {
    unsigned char *at;
    size_t used;
} carver;

static void *carve(carver *c, size_t bytes)
{
    void *p = c->at + c->used;
    c->used += (bytes + 15) & ~(size_t)15;
    return p;
}

static bool search_buffers(gp_engine *e, size_t n, victims *vs, victim_key **keys, uint32_t **cand,
                           uint32_t **order, double **excess)
{
    size_t need = 7 * 16 + 2 * n * sizeof(victim_key) + 4 * n * sizeof(uint32_t) + n + e->n_tenants * sizeof(double);
    if (need > e->cap_reclaim_buf) {
        unsigned char *buf = realloc(e->reclaim_buf, need);
        if (!buf)
            return false;
        e->reclaim_buf = buf;
        e->cap_reclaim_buf = need;
    }
    carver c = {e->reclaim_buf, 0};
    *keys = carve(&c, n * sizeof **keys);
    vs->key = carve(&c, n * sizeof *vs->key);
    *excess = carve(&c, e->n_tenants * sizeof **excess);
    *cand = carve(&c, n * sizeof **cand);
    *order = carve(&c, n * sizeof **order);
    vs->cand = carve(&c, n * sizeof *vs->cand);
    vs->scratch = carve(&c, n * sizeof *vs->scratch);
    vs->chosen = carve(&c, n * sizeof *vs->chosen);
    memset(*excess, 0, e->n_tenants * sizeof **excess);
    return true;
}

static victim_key key_of(const gp_engine *e, const gp__job *v, int type, double *excess_memo)
{
    double *excess = &excess_memo[v->tenant];
    if (*excess == 0)
        *excess = fair_share_excess(e, v->tenant);
    double gpus = (double)v->milli_total / 1000.0;
    double cost = ((double)gp__work_lost(e, v) + GP__COST_PER_JOB + GP__COST_PER_GPU * gpus) / *excess;
    int64_t size = v->bound_type == type ? v->milli_total : 0;
    return (victim_key){v->priority, in_cooldown(e, v), cost, v->bind_time, v->id, size};
}

/* Every possible victim of the pass, made by its first search: running
 * burstable jobs not capped.  Searches then read it instead of every
 * running job (7,000 on bench_engine, of which a third borrow).  False
 * when out of memory. */
static bool pool_make(gp_engine *e)
{
    if (e->pool_pass == e->pass)
        return true;
    if (!gp__grow((void **)&e->pool, &e->cap_pool, e->n_running ? e->n_running : 1, sizeof *e->pool))
        return false;
    e->n_pool = 0;
    for (size_t i = 0; i < e->n_running; i++)
        if (gp__borrows_reclaimably(e, &e->jobs[e->running[i]]))
            e->pool[e->n_pool++] = e->running[i];
    e->pool_pass = e->pass;
    return true;
}

/* The capacity candidates of one type and isolation are the same for
 * every reclaimer not cooling down (which excludes none of its own) until
 * a decision is made or a share recomputed: the running jobs, their
 * classes, preemption counts and cool-downs, and their tenants' usage are
 * what the list and its order are made of, and within a pass each of them
 * changes only with a decision (changes) or a share (shares_updated).  A
 * capacity search leaves the list in reclaim_buf as it found it (it marks
 * only `chosen`, and unmarks every mark when it fails), so the next such
 * search in the pass takes it from there instead of scanning every running
 * job again.  Under the preemption cap, guaranteed jobs whose borrowers
 * are capped search every pass and find nothing (remembered or not):
 * bench_engine made 256 such searches a pass, each a scan of 7,000 running
 * jobs and a sort. */
static bool memo_applies(const gp_engine *e, const gp__job *j, int type, victim_filter accept)
{
    return accept == frees_capacity && !in_cooldown(e, j) && e->cand_memo.type == type &&
           e->cand_memo.isolation == j->isolation;
}

static bool memo_current(const gp_engine *e)
{
    const struct gp__cand_memo *m = &e->cand_memo;
    return m->valid && m->pass == e->pass && m->changes == e->changes && m->shares == e->shares_updated;
}

static void memo_keep(gp_engine *e, const gp__job *j, int type, victim_filter accept, size_t n)
{
    e->cand_memo = (struct gp__cand_memo){.valid = accept == frees_capacity && !in_cooldown(e, j), .type = type,
                                          .isolation = (uint8_t)j->isolation, .pass = e->pass,
                                          .changes = e->changes, .shares = e->shares_updated, .n = n};
}

/* Running burstable jobs the filter accepts, sorted into victim order.
 * False when out of memory. */
static bool victim_candidates(gp_engine *e, uint32_t job, int type, victim_filter accept, victims *vs)
{
    size_t n_by = 0, n = 0;
    const gp__job *j = &e->jobs[job];
    victim_key *keys;
    uint32_t *cand, *order;
    double *excess;
    memset(vs, 0, sizeof *vs);
    if (memo_current(e) && memo_applies(e, j, type, accept) &&
        search_buffers(e, e->n_running, vs, &keys, &cand, &order, &excess)) {
        vs->n = e->cand_memo.n;
        memset(vs->chosen, 0, vs->n * sizeof *vs->chosen);
        return true;
    }
    e->cand_memo.valid = false;
    uint64_t *by = preempted_for(e, j, &n_by);
    bool ok = (by || !in_cooldown(e, j)) && pool_make(e) &&
              search_buffers(e, e->n_running, vs, &keys, &cand, &order, &excess);
    for (size_t i = 0; ok && i < e->n_pool; i++) { /* the order is total: where they come from does not matter */
        const gp__job *v = &e->jobs[e->pool[i]];
        if (v->state == GP_JOB_RUNNING && may_be_victim(e, v, accept) && e->pool[i] != job &&
            !listed(by, n_by, v->id) && accept(e, j, v, type)) {
            keys[n] = key_of(e, v, type, excess);
            order[n] = (uint32_t)n;
            cand[n++] = e->pool[i];
        }
    }
    ok = ok && gp_sort_indexes(order, n, victim_order, keys);
    for (size_t i = 0; ok && i < n; i++) {
        vs->cand[i] = cand[order[i]];
        vs->key[i] = keys[order[i]];
        vs->chosen[i] = false;
    }
    vs->n = ok ? n : 0;
    if (ok)
        memo_keep(e, j, type, accept, n);
    free(by);
    return ok;
}

/* ---- choosing a minimal set ---- */

/* One search: what "the need is met" means differs between capacity and
 * limit reclaims; the order of trying and pruning does not. */
typedef struct search search;
struct search {
    gp_engine *e;
    uint32_t job;
    int type;
    victims vs;
    int64_t missing;      /* of the reclaimed type, milli-GPUs (an estimate for capacity) */
    bool (*add)(search *s, size_t i);     /* choose i; true when the need is now met */
    bool (*drop)(search *s, size_t i);    /* unchoose i if the need stays met, true if so */
    void (*undo)(search *s, size_t i);    /* unchoose i, the need unmet */
    /* capacity reclaim: candidates added so far, and whether the job does
     * not fit with all of them gone (known once the last one is added) */
    size_t added;
    bool nothing_fits;
    /* limit reclaim: per ancestor, what must still go, per dimension */
    size_t depth;
    uint32_t anc[GP_MAX_TENANT_DEPTH];
    gp_res over[GP_MAX_TENANT_DEPTH];
};

static bool add_victim(search *s, size_t i)
{
    s->vs.chosen[i] = true;
    s->missing -= s->vs.key[i].size;
    return s->add(s, i);
}

/* Try the candidates [from, to) of one tier: first, in order, those that
 * fit within what is still missing; then the others, smallest first. */
static bool add_tier(search *s, size_t from, size_t to, uint32_t *rest)
{
    size_t n_rest = 0;
    for (size_t i = from; i < to; i++) {
        if (s->vs.key[i].size > s->missing)
            rest[n_rest++] = (uint32_t)i;
        else if (add_victim(s, i))
            return true;
    }
    gp_sort_indexes(rest, n_rest, by_size, s->vs.key);
    for (size_t k = 0; k < n_rest; k++)
        if (add_victim(s, rest[k]))
            return true;
    return false;
}

/* Choose victims tier by tier until the need is met; false (nothing
 * chosen) when all of them do not meet it. */
static bool choose_until_met(search *s)
{
    victims *vs = &s->vs;
    uint32_t *rest = vs->scratch;
    bool met = false;
    for (size_t from = 0, to; from < vs->n && !met; from = to) {
        for (to = from + 1; to < vs->n && same_tier(&vs->key[from], &vs->key[to]);)
            to++;
        met = add_tier(s, from, to, rest);
    }
    for (size_t i = 0; i < vs->n && !met; i++)
        if (vs->chosen[i]) {
            s->undo(s, i);
            vs->chosen[i] = false;
        }
    return met;
}

/* Drop every chosen victim the need is still met without, in pruning
 * order, so the set is minimal.  Returns how many remain. */
static size_t prune(search *s)
{
    victims *vs = &s->vs;
    uint32_t *idx = vs->scratch;
    size_t n = 0, count = 0;
    for (size_t i = 0; i < vs->n; i++)
        if (vs->chosen[i]) {
            idx[n++] = (uint32_t)i;
            count++;
        }
    if (!gp_sort_indexes(idx, n, prune_order, vs->key))
        n = 0; /* out of memory: keep the set as chosen */
    for (size_t k = 0; k < n; k++)
        if (s->drop(s, idx[k])) {
            vs->chosen[idx[k]] = false;
            count--;
        }
    return count;
}

/* ---- capacity ---- */

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

static bool capacity_add(search *s, size_t i)
{
    pretend_free(s->e, s->vs.cand[i], true);
    const gp__job *j = &s->e->jobs[s->job];
    bool fits = worth_a_look(s->e, j, s->type, s->vs.cand[i]) && gp__place_find(s->e, j, s->type, false);
    if (++s->added == s->vs.n) /* every candidate gone: a look only to learn it (looks change nothing) */
        s->nothing_fits = !fits && !gp__place_find(s->e, j, s->type, false);
    return fits;
}

/* A search already known to find nothing still leaves a trace that later
 * placements see: the order of the free-capacity lists.  It pretends every
 * candidate gone, then takes them back in victim order; a node where that
 * frees GPUs leaves its list at the first pretend free and comes back to
 * the head of it when the last candidate freeing GPUs there is taken back
 * (a held, down or draining node stays out of the lists throughout).  So
 * the lists end as if each such node were moved to the front, in the order
 * of its last such candidate: that is what the replay does, without the
 * pretend frees and the placement looks.
 *
 * The order (replay_order) is made of the candidates and the state of
 * their GPUs and nodes only, so it is kept with the candidate list
 * (cand_memo) while nothing has been recounted (fleet.recounts: every
 * change of a GPU or a node's up or drain goes through gp__node_reindex).
 * Held nodes are in it and skipped when it is replayed: a look of
 * placement.c holds and puts back nodes without a recount.  In the
 * 30-day bench_sim most replays of a pass replay the same list again
 * (the lists moved in between, so replay_needless does not apply):
 * each walked every candidate's GPUs. */

/* Into e->replay_front: the nodes, up and not draining, where a candidate
 * frees GPUs, by their last such candidate.  False when out of memory. */
static bool replay_order(gp_engine *e, const victims *vs)
{
    gp__fleet *f = &e->fleet;
    uint64_t *last = calloc(f->n_nodes ? f->n_nodes : 1, sizeof *last); /* per node: its last freeing run + 1 */
    size_t n_moved = 0;
    uint64_t run = 0;
    bool ok = last && gp__grow((void **)&e->replay_front, &e->cap_replay_front, f->n_nodes ? f->n_nodes : 1,
                               sizeof *e->replay_front);
    uint32_t *moved = e->replay_front;
    for (size_t c = 0; ok && c < vs->n; c++) {
        const gp__job *v = &e->jobs[vs->cand[c]];
        size_t n = (size_t)v->replicas * v->gpus;
        bool frees = false;
        for (size_t i = 0; i < n; i++) { /* runs of GPUs on one node, as pretend_free reindexes them */
            const gp__gpu *g = &f->gpus[v->placed[i]];
            const gp__node *node = &f->nodes[g->node];
            frees |= gp__gpu_free_if_unowned(g);
            if (i + 1 < n && f->gpus[v->placed[i + 1]].node == g->node)
                continue;
            run++;
            if (frees && node->up && !node->draining) {
                if (!last[g->node])
                    moved[n_moved++] = g->node;
                last[g->node] = run;
            }
            frees = false;
        }
    }
    ok = ok && gp_sort_indexes(moved, n_moved, by_last_run, last);
    free(last);
    e->cand_memo.n_front = ok ? n_moved : 0;
    e->cand_memo.front_known = ok && e->cand_memo.valid;
    e->cand_memo.recounts = f->recounts;
    return ok;
}

/* False when out of memory. */
static bool replay_failed(gp_engine *e, const victims *vs)
{
    const struct gp__cand_memo *m = &e->cand_memo;
    gp__fleet *f = &e->fleet;
    bool known = m->valid && m->front_known && m->recounts == f->recounts;
    if (!known && !replay_order(e, vs))
        return false;
    for (size_t i = 0; i < m->n_front; i++)
        if (!f->nodes[e->replay_front[i]].held)
            gp__node_to_front(f, e->replay_front[i]);
    return true;
}

static void capacity_undo(search *s, size_t i)
{
    pretend_free(s->e, s->vs.cand[i], false);
}

static bool capacity_drop(search *s, size_t i)
{
    pretend_free(s->e, s->vs.cand[i], false);
    if (gp__place_find(s->e, &s->e->jobs[s->job], s->type, false))
        return true;
    pretend_free(s->e, s->vs.cand[i], true);
    return false;
}

/* A block gang's victims outside the block of the plan never help: drop
 * them before pruning (a look each would be wasted). */
static void keep_plan_block(search *s)
{
    const gp__job *j = &s->e->jobs[s->job];
    if (gp__job_shared(j) || j->topology != GP_TOPO_BLOCK)
        return;
    uint32_t block = s->e->fleet.nodes[s->e->fleet.gpus[s->e->scratch.out[0]].node].block;
    for (size_t i = 0; i < s->vs.n; i++)
        if (s->vs.chosen[i] && !touches_block(s->e, s->vs.cand[i], block)) {
            pretend_free(s->e, s->vs.cand[i], false);
            s->vs.chosen[i] = false;
        }
}

/* ---- one guarantee, one set of victims ----
 * A reclaimer is not charged to its guarantee until it binds, so several
 * jobs of one guarantee could each reclaim it in full.  The demand of jobs
 * already waiting for victims counts against the guarantee when another
 * job of it looks for victims: counted once per pass, then kept up as
 * reclaims succeed. */

static void reclaiming_add(gp_engine *e, const gp__job *j, int type)
{
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent)
        gp__res_add(&e->reclaiming[a], &demand);
}

static bool reclaiming_count(gp_engine *e)
{
    if (e->reclaiming_pass == e->pass)
        return true;
    if (!gp__grow((void **)&e->reclaiming, &e->cap_reclaiming, e->n_tenants ? e->n_tenants : 1,
                  sizeof *e->reclaiming))
        return false;
    memset(e->reclaiming, 0, e->n_tenants * sizeof *e->reclaiming);
    for (size_t t = 0; t < e->n_tenants; t++)
        for (size_t k = 0; k < e->tenants[t].n_pending; k++) {
            const gp__job *j = &e->jobs[e->tenants[t].pending[k]];
            if (j->victims_left > 0 && j->wait.code == GP_WAIT_RECLAIM && !j->fair_reclaim && !j->pool_reclaim)
                reclaiming_add(e, j, j->wait.dim);
        }
    e->reclaiming_pass = e->pass;
    return true;
}

/* Does the job still fit every guarantee on its path once the jobs already
 * reclaiming under it are counted? */
static bool guarantee_has_room(gp_engine *e, const gp__job *j, int type)
{
    if (!reclaiming_count(e))
        return false;
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        gp_res taken = t->guaranteed;
        gp__res_add(&taken, &e->reclaiming[a]);
        if (t->has_guarantee && gp__res_exceeds(&taken, &demand, &t->guarantee) >= 0)
            return false;
    }
    return true;
}

static uint32_t guarantee_holder(const gp_engine *e, uint32_t tenant)
{
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (e->tenants[a].has_guarantee)
            return a;
    return tenant;
}

/* Whom a reclaim is for (the tenant its wait and the victims' notes name)
 * and what it does, in words. */
static uint32_t reclaim_holder(const gp_engine *e, const gp__job *j)
{
    if (j->pool_reclaim)
        return gp__pool_owner_of(e, j->tenant);
    return j->fair_reclaim ? j->tenant : guarantee_holder(e, j->tenant);
}

static const char *reclaim_what(const gp__job *j)
{
    if (j->pool_reclaim)
        return "takes its own pool back";
    return j->fair_reclaim ? "is below its fair share and takes borrowed GPUs back" : "reclaims its guarantee";
}

static void preempt(gp_engine *e, uint32_t job, uint32_t victim)
{
    gp__job *j = &e->jobs[job], *v = &e->jobs[victim];
    uint32_t holder = reclaim_holder(e, j);
    const char *what = reclaim_what(j);
    bool counted = gp__borrows_reclaimably(e, v); /* in e->borrowed (a pool's borrower may be guaranteed) */
    int64_t lost = gp__work_lost(e, v);
    gp_decision *d = gp__decision_push(e, GP_DEC_PREEMPT, v->id);
    if (d) {
        d->grace_s = v->grace;
        d->by_job = j->id;
        snprintf(d->by_tenant, sizeof d->by_tenant, "%s", e->tenants[j->tenant].path);
        snprintf(d->guarantee_of, sizeof d->guarantee_of, "%s", e->tenants[holder].path);
        d->work_lost_gpu_s = lost;
        /* names the job's tenant only where the holder is an ancestor: "research reclaims its guarantee for
         * job 7 of research/nlp", but "research/nlp reclaims its guarantee for job 7" */
        snprintf(d->reason, sizeof d->reason, "%s %s for job %llu%s%s", e->tenants[holder].path, what,
                 (unsigned long long)j->id, holder == j->tenant ? "" : " of ",
                 holder == j->tenant ? "" : e->tenants[j->tenant].path);
    }
    gp__job_transition(e, victim, GP_JOB_PREEMPTING,
                       "preempted: %s %s for job %llu of %s; %lld GPU-s since the last checkpoint",
                       e->tenants[holder].path, what, (unsigned long long)j->id, e->tenants[j->tenant].path,
                       (long long)lost);
    gp__job_grace_begin(e, victim);
    v->last_preempted = e->now;
    remember_preemption(e, j, v);
    v->preemptions++;
    v->reclaimed_by = j->id;
    if (j->victims_left == 0)
        j->n_victims = 0;
    if (GP__GROW(j->victims, j->n_victims, j->cap_victims)) /* else withdrawal finds it by a scan */
        j->victims[j->n_victims++] = victim;
    j->victims_left++;
    if (counted)
        e->borrowed[v->bound_type] -= (int64_t)v->replicas * v->gpus;
    e->stats.pass_preempted++;
    e->stats.total_preempted++;
}

/* Preempt the chosen victims and say what the job waits for. */
static void preempt_chosen(gp_engine *e, uint32_t job, int type, const victims *vs, size_t count)
{
    gp__job *j = &e->jobs[job];
    for (size_t i = 0; i < vs->n; i++)
        if (vs->chosen[i])
            preempt(e, job, vs->cand[i]);
    if (!j->fair_reclaim && !j->pool_reclaim)
        reclaiming_add(e, j, type);
    j->wait = (gp_wait){.code = GP_WAIT_RECLAIM, .dim = type, .tenant = reclaim_holder(e, j),
                        .a = (int64_t)count, .b = j->pool_reclaim ? 2 : j->fair_reclaim, .time = e->now};
    for (size_t i = 0; i < e->n_running; i++) { /* the last deadline among its victims */
        const gp__job *v = &e->jobs[e->running[i]];
        if (v->state == GP_JOB_PREEMPTING && v->reclaimed_by == j->id && v->deadline > j->wait.time)
            j->wait.time = v->deadline;
    }
}

static bool search_begin(search *s, gp_engine *e, uint32_t job, int type, victim_filter accept)
{
    memset(s, 0, sizeof *s);
    s->e = e;
    s->job = job;
    s->type = type;
    e->reclaim_searches++;
    e->stats.pass_reclaim_searches++;
    return victim_candidates(e, job, type, accept, &s->vs);
}

/* ---- searches that found nothing ----
 * A capacity reclaim of whole GPUs that found nothing usually finds nothing
 * again in the next pass, and a search pretends every borrower gone with a
 * placement look after each.  It fails exactly when the job does not fit
 * with every candidate gone (placement of whole GPUs is a complete search:
 * more free GPUs, CPU or memory never make a fit fail), so the failure
 * holds, for its shape and every larger one, until room may have come on
 * its type: GPUs, CPU or memory released, a running job that became a
 * possible victim (demoted, or its preemption withdrawn), a claim given up,
 * a node back or undrained, a GPU healthy (claims.c, gp__reclaim_room), or
 * other nodes held for the type's reservation.  Binding never brings room: a
 * borrower that binds is a candidate, and what it took counts as free again
 * in the search.  A job cooling down has fewer candidates (not the jobs it
 * was preempted for): its failures are not remembered.  Nothing is left out
 * of the pass's bookkeeping: a remembered failure is still a search
 * (max_reclaim_searches, stats), and what it would leave behind, the order
 * of the free-capacity lists, is made without its pretend frees and looks
 * (replay_failed).
 *
 * Example: 64 H100 nodes, every GPU held by single-GPU jobs, half of them
 * burstable, each node's CPU full; a guaranteed 1x8 job finds no node with
 * 8 GPUs and the CPU for them even with all borrowers gone.  The next pass
 * replays the search without its 64 x 32 looks; a borrower that finishes
 * (its GPUs and CPU released) makes the next search a real one. */

/* The type's held nodes, as a hash (0 when none are held). */
static uint64_t held_signature(const gp_engine *e, int type)
{
    const gp__reservation *r = gp__reservation_for(e, type);
    uint64_t h = 0;
    for (size_t i = 0; r && i < r->n_nodes; i++)
        h = (h ^ r->nodes[i]) * 1099511628211u + 1;
    return h;
}

static bool nofit_applies(const gp_engine *e, const gp__job *j)
{
    return !gp__job_shared(j) && j->gpus > 0 && !gp__scored_applies(e, j) && !e->fenced;
}

static bool nofit_known(const gp_engine *e, const gp__job *j, int type)
{
    if (!nofit_applies(e, j))
        return false;
    uint64_t held = held_signature(e, type);
    for (size_t i = 0; i < e->n_nofit; i++) {
        const struct gp__nofit *m = &e->nofit[i];
        if (m->type == type && m->room == e->room[type] && m->held == held && m->topology == j->topology &&
            m->gpus == j->gpus && j->replicas >= m->replicas && j->cpu >= m->cpu && j->mem >= m->mem)
            return true;
    }
    return false;
}

static void nofit_note(gp_engine *e, const gp__job *j, int type)
{
    if (!nofit_applies(e, j) || in_cooldown(e, j))
        return;
    size_t slot = e->n_nofit < GP__NOFITS ? e->n_nofit++ : e->nofit_next++ % GP__NOFITS;
    for (size_t i = 0; i < e->n_nofit; i++)
        if (e->nofit[i].room != e->room[e->nofit[i].type]) { /* outdated: reuse */
            slot = i;
            break;
        }
    e->nofit[slot] = (struct gp__nofit){.type = (uint8_t)type, .topology = (uint8_t)j->topology, .gpus = j->gpus,
                                        .replicas = j->replicas, .cpu = j->cpu, .mem = j->mem,
                                        .room = e->room[type], .held = held_signature(e, type)};
}

/* Into e->cand_nodes: each node the candidates' GPUs are on, with how
 * many of them would be free were the candidates gone.  A GPU without an
 * owner (a shared candidate's) is in node->free already and adds nothing.
 * Kept with the candidate list (cand_memo) while nothing has been
 * recounted, as the replay order is.  False when out of memory. */
static bool candidate_nodes(gp_engine *e, const victims *vs)
{
    struct gp__cand_memo *m = &e->cand_memo;
    gp__fleet *f = &e->fleet;
    if (m->valid && m->nodes_known && m->nodes_recounts == f->recounts)
        return true;
    uint32_t *at = malloc((f->n_nodes ? f->n_nodes : 1) * sizeof *at); /* per node: its place, or GP__NONE */
    bool ok = at && gp__grow((void **)&e->cand_nodes, &e->cap_cand_nodes, f->n_nodes ? f->n_nodes : 1,
                             sizeof *e->cand_nodes);
    size_t n = 0;
    if (ok)
        memset(at, 0xff, f->n_nodes * sizeof *at);
    for (size_t c = 0; ok && c < vs->n; c++) {
        const gp__job *v = &e->jobs[vs->cand[c]];
        for (size_t i = 0; i < (size_t)v->replicas * v->gpus; i++) {
            const gp__gpu *g = &f->gpus[v->placed[i]];
            if (at[g->node] == GP__NONE) {
                at[g->node] = (uint32_t)n;
                e->cand_nodes[n++] = (gp__cand_node){g->node, 0};
            }
            e->cand_nodes[at[g->node]].freed += g->owner != 0 && gp__gpu_free_if_unowned(g);
        }
    }
    free(at);
    m->n_nodes = ok ? n : 0;
    m->nodes_known = ok && m->valid;
    m->nodes_recounts = f->recounts;
    return ok;
}

/* The free-capacity histograms with every candidate gone, without the
 * pretend frees: each node the candidates are on is counted as
 * gp__node_reindex would count it with their GPUs unowned (its free GPUs
 * and those they would free: candidate_nodes), and the type's histogram
 * (and each block's) is adjusted by those nodes.  A whole-GPU look starts
 * by asking those histograms whether the replicas could fit by GPU count
 * (placement.c); when even that fails, the search would pretend every
 * candidate gone, look after each and find nothing: its outcome and its
 * trace are a remembered failure's (replay_failed), at the cost of one
 * walk over the candidates' GPUs, or none while candidate_nodes is kept.
 * The bench's capped borrowers made most of its 1x8 and block gangs'
 * searches such ones (bench/RESULTS.md).
 * Example: 1x8 wanted; every H100 node holds a capped borrower's GPU and
 * uncapped 1-GPU borrowers on the other 7: no node reaches 8 free, so
 * nothing is searched. */
static bool count_says_nothing_fits(gp_engine *e, const gp__job *j, int type, const victims *vs)
{
    gp__fleet *f = &e->fleet;
    if (!nofit_applies(e, j) || j->topology == GP_TOPO_NVLINK || vs->n == 0)
        return false;
    uint32_t (*bhist)[GP_MAX_GPUS_PER_NODE + 1] = malloc((f->n_blocks ? f->n_blocks : 1) * sizeof *bhist);
    bool ok = bhist && candidate_nodes(e, vs);
    uint32_t hist[GP_MAX_GPUS_PER_NODE + 1];
    memcpy(hist, f->hist[type], sizeof hist);
    for (size_t b = 0; ok && b < f->n_blocks; b++)
        memcpy(bhist[b], f->blocks[b].hist[type], sizeof bhist[b]);
    for (size_t k = 0; ok && k < e->cand_memo.n_nodes; k++) { /* each node from its bucket to its new one */
        const gp__cand_node *cn = &e->cand_nodes[k];
        const gp__node *node = &f->nodes[cn->node];
        int count = node->up && !node->draining && !node->held && !node->barred ? node->free + cn->freed : 0;
        if (node->indexed > 0) {
            hist[node->indexed]--;
            bhist[node->block][node->indexed]--;
        }
        if (count > 0) {
            hist[count]++;
            bhist[node->block][count]++;
        }
    }
    bool none = ok && gp__replica_capacity(hist, j->gpus) < j->replicas;
    if (ok && !none && j->topology == GP_TOPO_BLOCK) { /* the fleet could: could one block? */
        none = f->n_blocks > 0;
        for (size_t b = 0; none && b < f->n_blocks; b++)
            none = gp__replica_capacity(bhist[b], j->gpus) < j->replicas;
    }
    free(bhist);
    return none;
}

/* A replay moves the nodes its candidates free GPUs on to the front of
 * their lists, in one order that only the candidate list decides.  Done
 * again with the same list (cand_memo current) and no node moved since
 * (fleet.moves), it moves each node to where it already is: it is skipped.
 * A failed search of the list leaves the lists as its replay would, so it
 * counts as done too.  The memo's list is this search's (search_begin). */
static bool replay_needless(const gp_engine *e)
{
    const struct gp__cand_memo *m = &e->cand_memo;
    return m->valid && m->replayed && m->moves == e->fleet.moves;
}

static void replay_done(gp_engine *e)
{
    e->cand_memo.replayed = e->cand_memo.valid;
    e->cand_memo.moves = e->fleet.moves;
}

/* The need is met with the chosen victims: make the set minimal, preempt
 * it and claim the plan.  Returns how many victims. */
static size_t preempt_plan(search *s, uint32_t *plan, int8_t *slot, size_t n_plan)
{
    gp_engine *e = s->e;
    const gp__job *j = &e->jobs[s->job];
    keep_plan_block(s);
    size_t count = prune(s);
    gp__place_find(e, j, s->type, false); /* the plan with the minimal set, into scratch.out (and .slot) */
    memcpy(plan, e->scratch.out, n_plan * sizeof *plan);
    memcpy(slot, e->scratch.slot, (gp__job_shared(j) ? n_plan : 0) * sizeof *slot);
    for (size_t i = 0; i < s->vs.n; i++)
        if (s->vs.chosen[i])
            pretend_free(e, s->vs.cand[i], false);
    preempt_chosen(e, s->job, s->type, &s->vs, count);
    gp__claims_plan(e, s->job, plan, slot, n_plan);
    return count;
}

/* A search for capacity (placement decides when the need is met). */
static bool capacity_search_begin(search *s, gp_engine *e, uint32_t job, int type, victim_filter accept)
{
    const gp__job *j = &e->jobs[job];
    bool ok = search_begin(s, e, job, type, accept);
    s->missing = (int64_t)j->replicas * gp__replica_milli(e, j, NULL) -
                 (gp__job_shared(j) ? 0 : e->fleet.free[type] * 1000);
    s->add = capacity_add;
    s->drop = capacity_drop;
    s->undo = capacity_undo;
    return ok;
}

bool gp__reclaim(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    int64_t need = (int64_t)j->replicas * j->gpus;
    if (!gp__job_shared(j) && j->gpus == 0)
        return false; /* CPU-only work does not reclaim GPUs */
    if (e->reclaim_searches >= e->cfg.max_reclaim_searches ||
        (!gp__job_shared(j) && e->borrowed[type] + e->fleet.free[type] < need) || !guarantee_has_room(e, j, type))
        return false;
    bool known = nofit_known(e, j, type);
    search s;
    bool ok = capacity_search_begin(&s, e, job, type, frees_capacity);
    if (ok && known && (replay_needless(e) || replay_failed(e, &s.vs))) {
        replay_done(e);
        e->stats.pass_reclaim_remembered++;
        return false;
    }
    if (ok && count_says_nothing_fits(e, j, type, &s.vs) && (replay_needless(e) || replay_failed(e, &s.vs))) {
        replay_done(e);
        nofit_note(e, j, type);
        return false;
    }
    size_t count = 0, n_plan = gp__placed_count(j);
    uint32_t *plan = malloc(n_plan * sizeof *plan);
    int8_t *slot = malloc(n_plan * sizeof *slot);
    bool met = ok && plan && slot && choose_until_met(&s);
    if (ok && plan && slot && !met)
        replay_done(e); /* a failed search leaves the lists as its replay would */
    if (met) {
        count = preempt_plan(&s, plan, slot, n_plan);
    } else if (ok && plan && slot && nofit_applies(e, j) && (s.nothing_fits || (s.vs.n == 0 && !gp__place_find(e, j, type, false)))) {
        nofit_note(e, j, type);
    }
    free(plan);
    free(slot);
    return count > 0;
}

/* ---- fair-share reclaim ----
 * Guarantees are floors; what is borrowed above them is shared by
 * fairness.  A burstable job of a leaf below its fair share (dominant
 * usage / entitlement < 1, the ratio of the excess above) that finds no
 * room may preempt borrowers of other tenants that stay at least as far
 * above their fair share as the leaf will be once the job runs, like
 * Kueue's fair sharing ("preempt while the preemptor's final share is at
 * most the target's").  So the borrowed capacity drifts from the tenants
 * furthest above their share to those below theirs, and never back in a
 * loop: a victim's tenant stays at or above the reclaimer's.  Victims are
 * whole-GPU borrowers only, chosen and pruned as for a guarantee (lowest
 * priority, fewest GPUs over the need, cheapest), never capped ones; the
 * preemption cap, the cool-down and one such search per leaf per pass keep
 * it from storming.  The job waits for the victims' grace on the GPUs it
 * claimed and binds burstable.
 *
 * Example: 16 H100 in two nodes; a and b (weight 1 each, entitlement 8
 * GPUs each).  b borrows all 16 with 1-GPU jobs; a submits a 1x8 job.  a
 * is at 0 (below 1) and would be at 8/8 = 1 once it runs; b is at 16/8 = 2
 * and, even without 8 of its GPUs, at 1 >= 1: eight of b's jobs on one node
 * are preempted and a's job waits for their grace.  A second 1x8 job of a
 * would bring a to 2 and b to 0: no preemption, it waits.
 */

static void ent_fill(gp_engine *e, const uint32_t *kids, size_t n, double share)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += gp__tenant_weight(e, &e->tenants[kids[i]]);
    for (size_t i = 0; i < n; i++) {
        gp__tenant *t = &e->tenants[kids[i]];
        e->ent[kids[i]] = sum > 0 ? share * gp__tenant_weight(e, t) / sum : share;
        ent_fill(e, t->children, t->n_children, e->ent[kids[i]]);
    }
}

/* Every tenant's entitlement, once a pass (weights change only between
 * passes).  False when out of memory. */
static bool entitlements(gp_engine *e)
{
    if (e->ent_pass == e->pass)
        return true;
    if (!gp__grow((void **)&e->ent, &e->cap_ent, e->n_tenants ? e->n_tenants : 1, sizeof *e->ent))
        return false;
    ent_fill(e, e->roots, e->n_roots, 1.0);
    e->ent_pass = e->pass;
    return true;
}

static double dominant(const gp_engine *e, const gp_res *r)
{
    double most = 0;
    for (int d = 0; d < GP_DIMS; d++) {
        int64_t cap = e->fleet.capacity.v[d];
        if (cap > 0 && (double)r->v[d] / (double)cap > most)
            most = (double)r->v[d] / (double)cap;
    }
    return most;
}

/* Tenant t's dominant usage plus `delta` (a dominant share), over its
 * entitlement. */
static double fair_ratio(const gp_engine *e, uint32_t t, double delta)
{
    double ent = e->ent[t];
    double usage = dominant(e, &e->tenants[t].usage) + delta;
    return ent > 0 ? usage / ent : usage * 1e9;
}

static double demand_share(const gp_engine *e, const gp__job *j, int type)
{
    gp_res d;
    gp__job_demand(e, j, type, &d);
    return dominant(e, &d);
}

/* A borrower of the type whose tenant, without this victim's GPUs or the
 * reclaimer's whole demand (whichever is more), stays at or above the
 * reclaimer's leaf once the reclaimer runs. */
static bool frees_fairly(const gp_engine *e, const gp__job *j, const gp__job *v, int type)
{
    if (!frees_capacity(e, j, v, type) || v->tenant == j->tenant)
        return false;
    double need = demand_share(e, j, type), gone = demand_share(e, v, v->bound_type);
    return fair_ratio(e, v->tenant, -(gone > need ? gone : need)) >= fair_ratio(e, j->tenant, need);
}

/* Is any tenant with borrowed work at or above this ratio?  If not, no
 * borrower may be taken (frees_fairly), and the search is not made: a
 * 512-GPU gang of a team entitled to 19 GPUs would end at 27 times its
 * share, and nobody is that far above theirs. */
static bool someone_above(const gp_engine *e, double ratio)
{
    for (size_t t = 0; t < e->n_tenants; t++) {
        const gp__tenant *x = &e->tenants[t];
        if (!x->removed && x->n_children == 0 && fair_ratio(e, (uint32_t)t, 0) >= ratio)
            return true;
    }
    return false;
}

bool gp__reclaim_fair(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    gp__tenant *leaf = &e->tenants[j->tenant];
    if (!e->cfg.fair_share_reclaim || !nofit_applies(e, j) || leaf->fair_pass == e->pass || e->reclaim_searches >= e->cfg.max_reclaim_searches ||
        e->borrowed[type] + e->fleet.free[type] < (int64_t)j->replicas * j->gpus || !entitlements(e) ||
        fair_ratio(e, j->tenant, 0) >= 1.0)
        return false;
    leaf->fair_pass = e->pass;
    if (!someone_above(e, fair_ratio(e, j->tenant, demand_share(e, j, type))))
        return false;
    search s;
    bool ok = capacity_search_begin(&s, e, job, type, frees_fairly); /* whole GPUs only (nofit_applies) */
    size_t count = 0, n_plan = gp__placed_count(j);
    uint32_t *plan = malloc(n_plan * sizeof *plan);
    int8_t *slot = malloc(n_plan * sizeof *slot);
    if (ok && plan && slot && !count_says_nothing_fits(e, j, type, &s.vs) && choose_until_met(&s)) {
        j->fair_reclaim = true;
        count = preempt_plan(&s, plan, slot, n_plan);
    }
    free(plan);
    free(slot);
    return count > 0;
}

/* ---- taking an owned pool back ----
 * A job of an owner's subtree that finds no room looks for victims on the
 * pools its tenant owns only (the fence narrowed to them, dedicated.c):
 * jobs from outside the owner's subtree, of any class, chosen and pruned
 * as for a guarantee (priority, fewest GPUs over the need, cheapest), never
 * capped ones.  Their GPUs are claimed for the job, which waits for their
 * grace (GP_WAIT_RECLAIM, b = 2, tenant = the owner) and binds on them,
 * guaranteed or burstable as its admission says.  One search per job per
 * pass, bounded by max_reclaim_searches like the others.
 *
 * Example: pool team-a (one node, 8 GPUs) owned by org/a, which lends;
 * org/b runs a 1x8 job there (priority 0, checkpointed a minute ago) and
 * the other nodes are full.  org/a/x's 1x4 job: org/b's job is the only
 * candidate and alone frees enough; it is preempted with its grace, and
 * the 1x4 job waits for it, then binds on team-a. */

bool gp__reclaim_pool(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    if (e->n_owned_nodes == 0 || (!gp__job_shared(j) && j->gpus == 0) ||
        e->reclaim_searches >= e->cfg.max_reclaim_searches || gp__pool_owner_of(e, j->tenant) == GP__NONE)
        return false;
    size_t mark = gp__fence_narrow(e, j->tenant, true);
    if (mark == SIZE_MAX)
        return false;
    search s;
    bool ok = capacity_search_begin(&s, e, job, type, frees_pool);
    size_t count = 0, n_plan = gp__placed_count(j);
    uint32_t *plan = malloc(n_plan * sizeof *plan);
    int8_t *slot = malloc(n_plan * sizeof *slot);
    if (ok && plan && slot && choose_until_met(&s)) {
        j->pool_reclaim = true;
        count = preempt_plan(&s, plan, slot, n_plan);
    }
    free(plan);
    free(slot);
    gp__fence_widen(e, mark);
    return count > 0;
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

/* Take victim i's usage off (sign -1) or back on (+1) every full ancestor
 * it is under. */
static void quota_count(search *s, size_t i, int sign)
{
    const gp__job *v = &s->e->jobs[s->vs.cand[i]];
    gp_res vd;
    gp__job_demand(s->e, v, v->bound_type, &vd);
    for (size_t k = 0; k < s->depth; k++)
        if (under(s->e, v->tenant, s->anc[k]))
            for (int d = 0; d < GP_DIMS; d++)
                s->over[k].v[d] += sign * vd.v[d];
}

static bool quota_met(const search *s)
{
    for (size_t k = 0; k < s->depth; k++)
        for (int d = 0; d < GP_DIMS; d++)
            if (s->over[k].v[d] > 0)
                return false;
    return true;
}

static bool quota_add(search *s, size_t i)
{
    quota_count(s, i, -1);
    return quota_met(s);
}

static void quota_undo(search *s, size_t i)
{
    quota_count(s, i, +1);
}

static bool quota_drop(search *s, size_t i)
{
    quota_count(s, i, +1);
    if (quota_met(s))
        return true;
    quota_count(s, i, -1);
    return false;
}

/* Does victim i free anything an over-full ancestor lacks? */
static bool quota_helps(const search *s, size_t i)
{
    const gp__job *v = &s->e->jobs[s->vs.cand[i]];
    gp_res vd;
    gp__job_demand(s->e, v, v->bound_type, &vd);
    for (size_t k = 0; k < s->depth; k++)
        for (int d = 0; d < GP_DIMS; d++)
            if (s->over[k].v[d] > 0 && vd.v[d] > 0 && under(s->e, v->tenant, s->anc[k]))
                return true;
    return false;
}

/* The job fits its guarantees, but an ancestor's limit is full because
 * burstable jobs under it borrow: preempt a minimal, cheapest set of them
 * so that the job fits under every limit again (guaranteed usage always
 * does: a guarantee never exceeds an ancestor's limit).  The job waits
 * for their grace; once they are gone it is admitted and placed as usual. */
bool gp__reclaim_limit(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    if (e->reclaim_searches >= e->cfg.max_reclaim_searches || !guarantee_has_room(e, j, type))
        return false;
    search s;
    bool ok = search_begin(&s, e, job, type, frees_quota);
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    for (uint32_t a = j->tenant; a != GP__NONE && s.depth < GP_MAX_TENANT_DEPTH; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        s.anc[s.depth] = a;
        for (int d = 0; d < GP_DIMS; d++)
            s.over[s.depth].v[d] = t->limit.v[d] == GP_UNLIMITED ? 0 : t->usage.v[d] + demand.v[d] - t->limit.v[d];
        if (s.over[s.depth].v[type] > s.missing)
            s.missing = s.over[s.depth].v[type];
        s.depth++;
    }
    size_t kept = 0; /* only candidates that free something lacking */
    for (size_t i = 0; ok && i < s.vs.n; i++)
        if (quota_helps(&s, i)) {
            s.vs.cand[kept] = s.vs.cand[i];
            s.vs.key[kept++] = s.vs.key[i];
        }
    s.vs.n = kept;
    s.add = quota_add;
    s.drop = quota_drop;
    s.undo = quota_undo;
    size_t count = ok && choose_until_met(&s) ? prune(&s) : 0;
    if (count > 0)
        preempt_chosen(e, job, type, &s.vs, count);
    return count > 0;
}

/* ---- withdrawing ---- */

/* A victim goes back to running only where the trust rules of its
 * tenant as it is now allow it (docs/sharing.md); a share whose tenant
 * became untrusted while it was in grace keeps stopping. */
static bool may_run_where_it_is(gp_engine *e, uint32_t job)
{
    const gp__job *j = &e->jobs[job];
    if (!gp__job_shared(j) || !e->tenants[j->tenant].untrusted)
        return true;
    return !gp__trust_forbids(e, j) && gp__mig_keep_untrusted(e, job);
}

void gp__reclaim_withdraw(gp_engine *e, uint32_t job, const char *why)
{
    gp__job *j = &e->jobs[job];
    /* its list first; a scan of the running jobs only for victims the list
     * could not hold (out of memory) */
    for (size_t i = 0; i < j->n_victims + e->n_running && j->victims_left > 0; i++) {
        uint32_t vi = i < j->n_victims ? j->victims[i] : e->running[i - j->n_victims];
        gp__job *v = &e->jobs[vi];
        if (v->state != GP_JOB_PREEMPTING || v->reclaimed_by != j->id)
            continue;
        v->reclaimed_by = 0;
        v->covers_for = 0;
        j->victims_left--;
        if (v->cancel_requested) { /* it stops anyway, for its own cancel */
            gp__job_note(e, vi, "preemption withdrawn: job %llu %s; still stopping: cancel requested",
                         (unsigned long long)j->id, why);
            continue;
        }
        if (!may_run_where_it_is(e, vi)) { /* its tenant became untrusted during the grace */
            gp__job_note(e, vi, "preemption withdrawn: job %llu %s; still stopping: tenant %s is untrusted and "
                         "its %s work may not stay on a shared GPU", (unsigned long long)j->id, why,
                         e->tenants[v->tenant].path, gp_isolation_name(v->isolation));
            continue;
        }
        gp__job_transition(e, vi, GP_JOB_RUNNING, "preemption withdrawn: job %llu %s", (unsigned long long)j->id,
                           why);
        v->withdrawn = true;
        gp__reclaim_room(e, v->bound_type); /* a possible victim again */
        if (gp__borrows_reclaimably(e, v))
            e->borrowed[v->bound_type] += (int64_t)v->replicas * v->gpus;
    }
    j->victims_left = 0;
    j->fair_reclaim = false;
    j->pool_reclaim = false;
    gp__claims_cover_recount(e, job);
}

