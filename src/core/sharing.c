/* sharing.c - GPUs shared by several jobs: MIG, MPS and time-slicing.
 *
 * The operator sets each GPU's mode (node config); the engine never mixes
 * modes on one GPU.  A job asks for a share per replica:
 *
 *   mig        a GPU instance of a profile ("1g.10gb"): hardware isolation,
 *              open to untrusted tenants.  Counted as compute/7 of a GPU.
 *   mps        a share of the SMs (milli-GPUs) and a memory limit; the sums
 *              on a GPU stay within 1000 and the GPU's memory.
 *   timeslice  one of the pool's N replicas (default 4, 1..8) of a GPU;
 *              counted as 1000/N; interactive and inference work only, and
 *              always burstable.
 *
 * Trust.  Untrusted tenants get only exclusive GPUs or MIG instances.  An
 * MPS or time-sliced GPU hosts one trust domain (the org, the top-level
 * tenant) at a time: the first job claims the GPU for its org until the
 * GPU is empty again.  A MIG GPU that hosts an untrusted tenant's instance
 * hosts only that tenant's instances until they are gone, so an untrusted
 * tenant never shares a GPU with anyone.  An empty MPS GPU may also run one
 * whole-GPU (exclusive) job.  These rules hold at every placement with the
 * tenant's trust as it is then, not as it was at submit: an mps or
 * timeslice job of a tenant that has become untrusted is placed nowhere
 * (gp__trust_forbids); for running work engine.c asks
 * gp__mig_keep_untrusted.
 *
 * Example: org a trusted, a/x runs an MPS share on GPU g0 (g0 is org a's);
 * a/y submits a share, then an admin makes a/y untrusted.  The next pass
 * puts a/y's share neither beside a/x's nor on an empty GPU: it waits
 * "tenant a/y is untrusted".  Had it been running, it would have been
 * preempted with its grace at the change.
 *
 * MIG layouts change with demand: a replica reuses an idle instance of its
 * profile when there is one, else creates one in free memory slices, else
 * destroys idle instances in the way; running instances are never touched.
 * A GPU's layout changes at most once per mig_reconfigure_interval_s
 * (several creations at the same moment are one change).  Every change is
 * a RECONFIGURE decision before the BIND that uses it.
 *
 * Choosing the GPU for MIG and time-slice replicas: best fit, the fullest
 * GPU that has room (so empty GPUs stay empty for whole-GPU work); among
 * equally full ones, for MIG, the cheapest change (reuse < create <
 * destroy), then the slot that keeps the most instances placeable.  GPUs
 * sit in lists by fullness (fleet.c keeps them, with the pools), so the
 * walk stops at the first level with room.
 * When every pool's score is spread, the walk starts from the emptiest.
 * MPS shares are placed by fragmentation.c.
 *
 * Example: two H100-80GB in MIG mode, g0 with 3g.40gb@4 busy, g1 empty.
 * A 1g.10gb replica goes to g0: both need a create, and g0 is fuller.
 * Its slot: starts 0..3 keep equally many placements for the other
 * profiles (a 4g cannot fit beside the 3g anyway), and the lowest start
 * wins, so 1g.10gb@0.  Layouts are decided one replica at a time: 2g, 2g
 * then 3g on an empty GPU end as 2g@0, 2g@2, 3g@4, but 2g, 3g, 2g may leave
 * the last 2g waiting for the next change.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gp_sharing mode_of(gp_isolation iso)
{
    switch (iso) {
    case GP_ISO_MIG: return GP_SHARING_MIG;
    case GP_ISO_MPS: return GP_SHARING_MPS;
    case GP_ISO_TIMESLICE: return GP_SHARING_TIMESLICE;
    default: return GP_SHARING_EXCLUSIVE;
    }
}

/* ---- one replica on one GPU ---- */

/* The rate limit, and claims: a change now may not keep a claimer from
 * changing the layout when its victims' grace ends (claim_until), unless
 * that time has come (the claimer may then change it at this moment too). */
static bool may_reconfigure(const gp_engine *e, const gp__gpu *g)
{
    int64_t interval = e->cfg.mig_reconfigure_interval_s;
    bool due = g->reconfigured_at < 0 || g->reconfigured_at == e->now || e->now - g->reconfigured_at >= interval;
    return due && (g->claim_mig == 0 || e->now >= g->claim_until || e->now + interval <= g->claim_until);
}

bool gp__trust_forbids(const gp_engine *e, const gp__job *j)
{
    return (j->isolation == GP_ISO_MPS || j->isolation == GP_ISO_TIMESLICE) && e->tenants[j->tenant].untrusted;
}

bool gp__mig_keep_untrusted(gp_engine *e, uint32_t job)
{
    const gp__job *j = &e->jobs[job];
    for (int r = 0; r < j->replicas; r++) {
        const gp__gpu *g = &e->fleet.gpus[j->placed[r]];
        if (g->trust == j->tenant)
            continue;
        if (g->trust != GP__NONE)
            return false;
        for (int i = 0; i < g->n_mig; i++)
            if (g->mig[i].owner && e->jobs[g->mig[i].owner - 1].tenant != j->tenant)
                return false;
    }
    for (int r = 0; r < j->replicas; r++) {
        gp__gpu *g = &e->fleet.gpus[j->placed[r]];
        g->trust = j->tenant;
        gp__node_touch(&e->fleet, g->node);
    }
    return true;
}

/* A claim stands for the claimer's replica: only its trust domain may
 * move in beside it. */
static bool trust_allows(const gp_engine *e, const gp__job *j, const gp__gpu *g)
{
    if (gp__trust_forbids(e, j) || (g->claim_jobs > 0 && g->claim_domain != gp__share_domain(e, j)))
        return false;
    if (j->isolation == GP_ISO_MIG) {
        if (e->tenants[j->tenant].untrusted)
            return g->trust == j->tenant || (g->trust == GP__NONE && g->jobs == 0);
        return g->trust == GP__NONE;
    }
    return g->trust == GP__NONE || g->trust == gp__job_org(e, j);
}

bool gp__mps_fits(const gp_engine *e, const gp__job *j, const gp__gpu *g)
{
    const gp__node *n = &e->fleet.nodes[g->node];
    return g->sharing == GP_SHARING_MPS && g->healthy && !g->owner && !g->claim &&
           g->used_milli + g->claim_milli - g->cover_milli + j->mps_milli <= 1000 &&
           g->used_mem + g->claim_mem - g->cover_mem + gp__replica_mem(e, j, g) <= n->gpu_mem_mib &&
           trust_allows(e, j, g);
}

/* Whether one replica of j fits on GPU gi now (for MIG at `start`, or
 * anywhere for -1); for MIG, which slot. */
static bool replica_fits(const gp_engine *e, const gp__job *j, uint32_t gi, int start, gp__mig_choice *mig)
{
    const gp__gpu *g = &e->fleet.gpus[gi];
    const gp__node *n = &e->fleet.nodes[g->node];
    if (!n->up || n->draining || n->barred || !g->healthy || g->claim || g->owner ||
        g->sharing != mode_of(j->isolation))
        return false;
    if ((j->cpu > 0 && n->cpu_cap - n->cpu_used < j->cpu) || (j->mem > 0 && n->mem_cap - n->mem_used < j->mem))
        return false;
    if (!trust_allows(e, j, g))
        return false;
    switch (j->isolation) {
    case GP_ISO_MIG: {
        int p = g->mig_model >= 0 ? gp__mig_profile_find(g->mig_model, j->mig_profile) : -1;
        if (p < 0)
            return false;
        *mig = gp__mig_choose(g, p, start, may_reconfigure(e, g));
        return mig->kind != GP__MIG_NONE;
    }
    case GP_ISO_TIMESLICE:
        return g->jobs + g->claim_jobs < gp__pool_timeslice(e, n->pool);
    case GP_ISO_MPS:
        return gp__mps_fits(e, j, g);
    default:
        return false;
    }
}

/* Put one replica (owner = job + 1) on GPU gi; returns true when a MIG
 * layout changed.  The caller saved what it needs to undo. */
bool gp__share_take_one(gp_engine *e, const gp__job *j, uint32_t owner, uint32_t gi, int start)
{
    gp__gpu *g = &e->fleet.gpus[gi];
    gp__node *n = &e->fleet.nodes[g->node];
    bool changed = false;
    if (j->isolation == GP_ISO_MIG) {
        changed = gp__mig_take(g, gp__mig_profile_find(g->mig_model, j->mig_profile), start, owner);
        if (e->tenants[j->tenant].untrusted)
            g->trust = j->tenant;
    } else {
        g->trust = gp__job_org(e, j);
    }
    g->used_milli = (uint16_t)(g->used_milli + gp__replica_milli(e, j, g));
    g->used_mem += gp__replica_mem(e, j, g);
    g->jobs++;
    gp__node_touch(&e->fleet, g->node);
    n->cpu_used += j->cpu;
    n->mem_used += j->mem;
    n->replicas++;
    gp__node_dedicate(&e->fleet, g->node, j->ded_domain, +1);
    return changed;
}

static void replica_give(gp_engine *e, const gp__job *j, uint32_t owner, uint32_t gi, int start)
{
    gp__gpu *g = &e->fleet.gpus[gi];
    gp__node *n = &e->fleet.nodes[g->node];
    if (j->isolation == GP_ISO_MIG)
        gp__mig_give(g, owner, start);
    g->used_milli = (uint16_t)(g->used_milli - gp__replica_milli(e, j, g));
    g->used_mem -= gp__replica_mem(e, j, g);
    g->jobs--;
    if (g->jobs == 0)
        g->trust = GP__NONE;
    gp__node_touch(&e->fleet, g->node);
    n->cpu_used -= j->cpu;
    n->mem_used -= j->mem;
    n->replicas--;
    gp__node_dedicate(&e->fleet, g->node, j->ded_domain, -1);
}

/* ---- choosing GPUs ---- */

typedef struct candidate {
    int kind;         /* MIG change class, 0 otherwise */
    int room;         /* capacity left on the GPU after the replica */
    int keeps;        /* MIG: placements kept */
} candidate;

/* Within one fullness level: the cheapest MIG change, then the fullest
 * after the replica, then the layout that strands least. */
static bool better(const candidate *a, const candidate *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind;
    if (a->room != b->room)
        return a->room < b->room;
    return a->keeps > b->keeps;
}

static candidate describe(const gp_engine *e, const gp__job *j, uint32_t gi, const gp__mig_choice *mig)
{
    const gp__gpu *g = &e->fleet.gpus[gi];
    candidate c = {0, 0, 0};
    switch (j->isolation) {
    case GP_ISO_MIG:
        c.kind = mig->kind;
        c.room = 8 - __builtin_popcount(gp__mig_mask(g, true) | g->claim_mig) - 1;
        c.keeps = mig->keeps;
        break;
    case GP_ISO_TIMESLICE:
        c.room = gp__pool_timeslice(e, e->fleet.nodes[g->node].pool) - g->jobs - g->claim_jobs - 1;
        break;
    default: /* MPS shares are placed by fragmentation.c */
        break;
    }
    return c;
}

/* The best GPU for one more replica: walk the fullness levels from the
 * fullest down (best fit; upwards when every pool spreads) and stop at the
 * first level with room; within it the cheapest MIG change, then the
 * layout that keeps most placeable, then the lowest index.  Empty GPUs
 * are all alike: the walk stops there after GP__EMPTY_LOOK candidates. */
#define GP__EMPTY_LOOK 64

static uint32_t best_gpu(gp_engine *e, const gp__job *j, int type, gp__mig_choice *mig_out)
{
    gp__fleet *f = &e->fleet;
    const uint32_t *heads = f->level_head[mode_of(j->isolation)][type];
    uint32_t best = GP__NONE;
    candidate best_c = {0, 0, 0};
    for (int step = 0; step < 9 && best == GP__NONE; step++) {
        int level = f->all_spread ? step : 8 - step;
        int seen = 0;
        for (uint32_t gi = heads[level]; gi != GP__NONE && (level > 0 || seen < GP__EMPTY_LOOK);
             gi = f->gpus[gi].lnext) {
            gp__mig_choice mig = {.kind = GP__MIG_NONE};
            if (!replica_fits(e, j, gi, -1, &mig))
                continue;
            seen++;
            candidate c = describe(e, j, gi, &mig);
            if (best == GP__NONE || better(&c, &best_c) || (!better(&best_c, &c) && gi < best)) {
                best = gi;
                best_c = c;
                *mig_out = mig;
            }
        }
    }
    return best;
}

bool gp__place_shared(gp_engine *e, const gp__job *j, int type)
{
    gp__fleet *f = &e->fleet;
    int claimed_type;
    if (gp__place_claimed(e, j, (uint8_t)(1u << type), &claimed_type))
        return true;
    if (!gp__scratch_reserve(e, (size_t)j->replicas))
        return false;
    uint32_t owner = (uint32_t)(j - e->jobs) + 1;
    bool ok = true;
    for (int r = 0; r < j->replicas && ok; r++) {
        gp__mig_choice mig = {.kind = GP__MIG_NONE};
        uint32_t best = best_gpu(e, j, type, &mig);
        if (best == GP__NONE) {
            ok = false;
            break;
        }
        gp__tx_save_gpu(e, best); /* tentative: the GPU stays in its level list */
        gp__tx_save_node(e, f->gpus[best].node);
        int start = j->isolation == GP_ISO_MIG ? mig.start : -1;
        gp__share_take_one(e, j, owner, best, start);
        e->scratch.out[r] = best;
        e->scratch.slot[r] = (int8_t)start;
    }
    gp__tx_rollback(e);
    return ok;
}

/* ---- binding on claims ----
 * A shared job whose victims' grace has ended binds on the shares or
 * slices claimed for it (claims.c keeps the claims). */

bool gp__place_claimed(gp_engine *e, const gp__job *j, uint8_t types, int *type)
{
    if (!gp__job_shared(j) || j->n_claimed != (size_t)j->replicas || !gp__scratch_reserve(e, (size_t)j->replicas))
        return false;
    int t = e->fleet.nodes[e->fleet.gpus[j->claimed[0].gpu].node].type;
    uint32_t owner = (uint32_t)(j - e->jobs) + 1;
    bool ok = (types >> t) & 1u;
    for (int r = 0; r < j->replicas && ok; r++) {
        uint32_t gi = j->claimed[r].gpu;
        int start = j->claimed[r].start;
        gp__mig_choice mig = {.kind = GP__MIG_NONE};
        ok = e->fleet.nodes[e->fleet.gpus[gi].node].type == t && replica_fits(e, j, gi, start, &mig);
        if (!ok)
            break;
        gp__tx_save_gpu(e, gi);
        gp__tx_save_node(e, e->fleet.gpus[gi].node);
        gp__share_take_one(e, j, owner, gi, start);
        e->scratch.out[r] = gi;
        e->scratch.slot[r] = (int8_t)start;
    }
    gp__tx_rollback(e);
    *type = t;
    return ok;
}

/* ---- placed jobs ---- */

static void emit_reconfigure(gp_engine *e, uint32_t gi)
{
    gp__gpu *g = &e->fleet.gpus[gi];
    g->reconfigured_at = e->now;
    gp_decision *d = gp__decision_push(e, GP_DEC_RECONFIGURE, 0);
    if (!d)
        return;
    snprintf(d->node, sizeof d->node, "%s", e->fleet.nodes[g->node].name);
    d->gpu_index = g->index;
    gp__mig_layout_format(g, d->mig_layout, sizeof d->mig_layout);
}

void gp__shared_take(gp_engine *e, uint32_t job, bool emit)
{
    gp__job *j = &e->jobs[job];
    j->milli_total = 0;
    for (int r = 0; r < j->replicas; r++) {
        uint32_t gi = j->placed[r];
        bool changed = gp__share_take_one(e, j, job + 1, gi, j->slot[r]);
        j->milli_total += gp__replica_milli(e, j, &e->fleet.gpus[gi]);
        if (changed && emit)
            emit_reconfigure(e, gi);
        gp__gpu_relevel(&e->fleet, gi);
        if (r + 1 == j->replicas || e->fleet.gpus[j->placed[r + 1]].node != e->fleet.gpus[gi].node)
            gp__node_reindex(&e->fleet, e->fleet.gpus[gi].node);
    }
}

void gp__shared_give(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (j->covers_for) /* a victim leaving: a claim no longer counts on its shares */
        gp__claims_uncover(e, job);
    for (int r = 0; r < j->replicas; r++) {
        uint32_t gi = j->placed[r];
        replica_give(e, j, job + 1, gi, j->slot[r]);
        gp__gpu_relevel(&e->fleet, gi);
        gp__node_reindex(&e->fleet, e->fleet.gpus[gi].node);
    }
}

/* ---- self-check ---- */

gp_err gp__shared_check(const gp_engine *e, gp_error *err)
{
    const gp__fleet *f = &e->fleet;
    size_t n = f->n_gpus ? f->n_gpus : 1;
    int *milli = calloc(n, sizeof *milli), *jobs = calloc(n, sizeof *jobs);
    int64_t *mem = calloc(n, sizeof *mem);
    uint32_t *domain = malloc(n * sizeof *domain);
    gp_err rc = GP_OK;
    if (!milli || !jobs || !mem || !domain)
        rc = gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    for (size_t i = 0; domain && i < n; i++)
        domain[i] = GP__NONE;
    for (size_t i = 0; !rc && i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        if (!gp__job_shared(j))
            continue;
        for (int r = 0; r < j->replicas && !rc; r++) {
            uint32_t gi = j->placed[r];
            const gp__gpu *g = &f->gpus[gi];
            uint32_t dom = gp__share_domain(e, j);
            milli[gi] += gp__replica_milli(e, j, g);
            mem[gi] += gp__replica_mem(e, j, g);
            jobs[gi]++;
            if (g->sharing != mode_of(j->isolation))
                rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "job %llu holds a slice of a GPU in another mode",
                                  (unsigned long long)j->id);
            else if (j->isolation != GP_ISO_MIG && domain[gi] != GP__NONE && domain[gi] != dom)
                rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "two trust domains share GPU %u", gi);
            else if (j->state != GP_JOB_PREEMPTING && gp__trust_forbids(e, j)) /* in grace it is leaving */
                rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "job %llu of an untrusted tenant runs on a shared GPU",
                                  (unsigned long long)j->id);
            else if (j->isolation == GP_ISO_MIG && j->state != GP_JOB_PREEMPTING && e->tenants[j->tenant].untrusted &&
                     g->trust != j->tenant)
                rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "untrusted job %llu shares a MIG GPU",
                                  (unsigned long long)j->id);
            if (j->isolation != GP_ISO_MIG || dom != GP__NONE)
                domain[gi] = dom;
        }
    }
    for (size_t gi = 0; !rc && gi < f->n_gpus; gi++) {
        const gp__gpu *g = &f->gpus[gi];
        if (g->sharing == GP_SHARING_EXCLUSIVE)
            continue;
        int64_t gpu_mem = f->nodes[g->node].gpu_mem_mib;
        if (g->used_milli != milli[gi] || g->jobs != jobs[gi] || g->used_mem != mem[gi])
            rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "bookkeeping of shared GPU %zu is out of step", gi);
        else if (milli[gi] > 1000 || (g->sharing == GP_SHARING_MPS && mem[gi] > gpu_mem))
            rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %zu is shared beyond its capacity", gi);
        else if (g->sharing == GP_SHARING_TIMESLICE && jobs[gi] > gp__pool_timeslice(e, f->nodes[g->node].pool))
            rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %zu has more time-slice replicas than allowed", gi);
        else if (g->sharing == GP_SHARING_MIG && !gp__mig_layout_valid(g))
            rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "MIG instances of GPU %zu overlap", gi);
        else if (g->owner && jobs[gi])
            rc = gp_error_set(err, GP_ERR_CONFLICT, "gpu", "GPU %zu is both whole and shared", gi);
    }
    free(milli);
    free(jobs);
    free(mem);
    free(domain);
    return rc;
}
