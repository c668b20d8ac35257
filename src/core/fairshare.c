/* fairshare.c - hierarchical weighted Dominant Resource Fairness.
 *
 * Which pending job is looked at next?  Walk down the tenancy tree: at each
 * level take the child with the lowest dominant share among those that
 * still have untried jobs below them; at the leaf take its next job in
 * queue order (priority, then age).  A tenant's dominant share is
 *
 *     max over resources r of usage_r / fleet_r, divided by its weight
 *
 * where the resources are each GPU type, CPU and memory, and usage covers
 * the whole subtree.  Shares are updated as jobs are placed during the
 * pass, so the order adapts as it goes.
 *
 * Example: 8 H100, teams a and b (weight 1 each), each with ten 1-GPU jobs
 * pending.  Both start at share 0; ties go to the lower index, so a, then b
 * (a is now at 1/8), then a, b, ... and each ends with 4 GPUs.  With
 * weights 3 and 1, a's share grows a third as fast: a gets 6, b gets 2.
 *
 * Shares are computed when usage or weight change (tenants.c); each
 * phase's start computes again only those computed before the fleet's
 * capacity last changed (the others would come out the same).
 *
 * Each pass sees every pending job at most once per phase: a leaf whose
 * cursor reached the end of its queue drops out ("active" counts, per
 * tenant, the leaves below it that still have jobs to try).
 */
#include "core/internal.h"

static void activate(gp_engine *e, uint32_t leaf, int delta)
{
    for (uint32_t a = leaf; a != GP__NONE; a = e->tenants[a].parent)
        e->tenants[a].active += (uint32_t)delta;
}

void gp__fair_begin(gp_engine *e)
{
    e->fair_leaf = GP__NONE;
    for (size_t i = 0; i < e->n_tenants; i++) {
        e->tenants[i].cursor = 0;
        e->tenants[i].active = 0;
        if (e->tenants[i].removed)
            continue;
        if (e->tenants[i].share_capacity != e->fleet.capacity_version)
            gp__tenant_update_share(e, (uint32_t)i);
        else /* usage and weight changes compute it at once: it is what it would be; counted as computed */
            e->shares_updated++;
    }
    for (size_t i = 0; i < e->n_tenants; i++) {
        const gp__tenant *t = &e->tenants[i];
        if (!t->removed && t->n_children == 0 && t->n_pending > 0)
            activate(e, (uint32_t)i, +1);
    }
}

static uint32_t lowest_share(const gp_engine *e, const uint32_t *kids, size_t n)
{
    uint32_t best = GP__NONE;
    for (size_t i = 0; i < n; i++) {
        const gp__tenant *t = &e->tenants[kids[i]];
        if (t->active == 0)
            continue;
        if (best == GP__NONE || t->share < e->tenants[best].share)
            best = kids[i];
    }
    return best;
}

/* The pass reads a few fields of every pending job it is handed, and the
 * jobs lie far apart in memory: with tens of thousands waiting, the wait
 * for each one's cache lines was most of the pass (issue 17).  So when a
 * leaf hands out a job, the lines of its next one are fetched ahead; the
 * leaf's next turn finds them in cache.  Decisions do not depend on it. */
static void prefetch_job(const gp_engine *e, uint32_t job)
{
    const gp__job *j = &e->jobs[job];
    __builtin_prefetch(j);
    __builtin_prefetch(&j->eligible_at);
}

/* Phase 1 looks at the jobs that could run within a guarantee.  When a
 * tenant on a leaf's path has used up its guarantee of every GPU type, no
 * job of the leaf that asks for a GPU fits it: phase 1 would only read
 * each one to hand it to phase 2, and nothing in phase 1 gives guaranteed
 * room back.  Such a leaf is dropped from phase 1 when it comes up, unless
 * a job there asks for no GPU or its jobs may meet a trust refusal (which
 * acts in phase 1).  Its jobs come up in phase 2 as before: the same
 * decisions, in the same order (the original reads them one after the
 * other with nothing changed between).
 * Example: nlp has a guarantee of 16 H100 and runs 16 guaranteed; its
 * 2,000 waiting jobs are not read in phase 1. */
static bool guarantee_used_up(const gp_engine *e, uint32_t leaf)
{
    const gp__tenant *l = &e->tenants[leaf];
    if (l->untrusted || l->n_pending_gpuless > 0)
        return false;
    for (uint32_t a = leaf; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        if (!t->has_guarantee)
            continue;
        int d = 0;
        while (d < e->fleet.n_types && t->guarantee.v[d] != GP_UNLIMITED && t->guaranteed.v[d] >= t->guarantee.v[d])
            d++;
        if (d == e->fleet.n_types)
            return true;
    }
    return false;
}

/* The leaf's next job, its successor's lines fetched ahead. */
static uint32_t hand_out(gp_engine *e, gp__tenant *leaf)
{
    uint32_t job = leaf->pending[leaf->cursor++];
    if (leaf->cursor < leaf->n_pending)
        prefetch_job(e, leaf->pending[leaf->cursor]);
    return job;
}

/* The descent reads only the shares and the active counts.  Counts change
 * only when a leaf is dropped (below, which descends again), shares only
 * when one is recomputed (a placement, a release): while neither happened,
 * a descent would reach the leaf it reached last, so its next job is handed
 * out without one.  A leaf whose jobs find no room keeps the lowest share,
 * so most jobs come this way (issue 17: the descent was 12 % of a pass's
 * instructions at 50,000 pending).
 * Example: a and b at share 0.1 and 0.2; a's 500 jobs all wait: one
 * descent reaches a, its other 499 jobs follow without one. */
static bool same_leaf_again(gp_engine *e, bool guaranteed_phase)
{
    if (e->fair_leaf == GP__NONE || e->fair_leaf_shares != e->shares_updated)
        return false;
    const gp__tenant *leaf = &e->tenants[e->fair_leaf];
    return leaf->cursor < leaf->n_pending && !(guaranteed_phase && guarantee_used_up(e, e->fair_leaf));
}

uint32_t gp__fair_next(gp_engine *e, bool guaranteed_phase)
{
    if (same_leaf_again(e, guaranteed_phase))
        return hand_out(e, &e->tenants[e->fair_leaf]);
    for (;;) {
        uint32_t t = lowest_share(e, e->roots, e->n_roots);
        if (t == GP__NONE)
            return GP__NONE;
        while (e->tenants[t].n_children > 0) {
            uint32_t next = lowest_share(e, e->tenants[t].children, e->tenants[t].n_children);
            if (next == GP__NONE)
                break;
            t = next;
        }
        gp__tenant *leaf = &e->tenants[t];
        if (leaf->n_children > 0 || leaf->cursor >= leaf->n_pending || (guaranteed_phase && guarantee_used_up(e, t))) {
            activate(e, t, -(int)leaf->active); /* nothing left here: drop it */
            continue;
        }
        e->fair_leaf = t;
        e->fair_leaf_shares = e->shares_updated;
        return hand_out(e, leaf);
    }
}
