/* claims.c - the books of claims: GPUs, and parts of shared GPUs, held
 * for a reclaiming job while its victims' grace runs, the covers of MPS
 * claims, and the room counters that tell reclaim when a search that found
 * nothing may find something again (e->room, gp__reclaim_room).
 *
 * reclaim.c decides what to claim (its plan) and which victims to preempt;
 * this file only keeps the claims' books on the GPUs (gpu.claim for a whole
 * GPU; claim_jobs, claim_milli, claim_mem, claim_mig, claim_domain,
 * claim_until and the cover for a shared one) and on the job (claimed,
 * claims_dropped).  A books file (internal.h, "Layers"): it calls only the
 * base files, fleet.c and jobs.c, so sharing.c and admission.c may call it.
 *
 * A reclaim for a shared job claims only what the job will take: per
 * replica its share (MPS), one replica slot (time-slicing) or the memory
 * slices of its instance (MIG), on the GPU of its plan.  The rest of the
 * GPU stays usable by others during the victims' grace, in the claimers'
 * trust domain; a MIG layout change by others may not keep the claimer
 * from changing the layout at its grace end (sharing.c, may_reconfigure).
 * When the grace ends the job binds on what it claimed (sharing.c,
 * gp__place_claimed).
 *
 * Example: a guaranteed 1x8 job reclaims a node from two 1x4 borrowers:
 * gp__claims_plan sets gpu.claim = job + 1 on the node's 8 GPUs (a claimed
 * GPU is not free for anyone else, even once its owner is gone); the job's
 * placement look at the grace's end drops them (gp__claims_drop) and takes
 * them back when it fails (gp__claims_retake); once it binds, or is
 * cancelled, gp__claims_forget gives them up.
 */
#include "core/internal.h"

/* ---- one claim on one GPU ---- */

static void claim_changed(gp_engine *e, uint32_t gi)
{
    gp__gpu_relevel(&e->fleet, gi);
    gp__node_reindex(&e->fleet, e->fleet.gpus[gi].node); /* an MPS GPU with a claim is not free for whole-GPU work */
}

static void share_cover(gp_engine *e, uint32_t gi, int milli, int64_t mem)
{
    gp__gpu *g = &e->fleet.gpus[gi];
    g->cover_milli = (uint16_t)(g->cover_milli + milli);
    g->cover_mem += mem;
    claim_changed(e, gi);
}

static void share_claim(gp_engine *e, const gp__job *j, const gp__claim *c, int sign, int64_t until)
{
    uint32_t gi = c->gpu;
    int start = c->start;
    gp__gpu *g = &e->fleet.gpus[gi];
    if (sign > 0) {
        g->claim_domain = gp__share_domain(e, j);
        if (j->isolation == GP_ISO_MIG)
            g->claim_until = g->claim_mig == 0 || until < g->claim_until ? until : g->claim_until;
    }
    g->claim_jobs = (uint16_t)(g->claim_jobs + sign);
    g->claim_milli = (uint16_t)(g->claim_milli + sign * gp__replica_milli(e, j, g));
    g->claim_mem += sign * gp__replica_mem(e, j, g);
    if (j->isolation == GP_ISO_MIG) {
        unsigned slices = gp__mig_span(g, gp__mig_profile_find(g->mig_model, j->mig_profile), start);
        g->claim_mig = (uint8_t)(sign > 0 ? g->claim_mig | slices : g->claim_mig & ~slices);
    }
    g->cover_milli = (uint16_t)(g->cover_milli + sign * c->cover_milli);
    g->cover_mem += sign * c->cover_mem;
    claim_changed(e, gi);
}


/* Claim one GPU of the plan for the job: a whole GPU, or for a shared
 * job one replica's part of it (share_claim above). */
static void claim_one(gp_engine *e, uint32_t job, const gp__claim *c)
{
    const gp__job *j = &e->jobs[job];
    gp__gpu *g = &e->fleet.gpus[c->gpu];
    if (gp__job_shared(j)) {
        share_claim(e, j, c, +1, j->wait.time);
        return;
    }
    g->claim = job + 1;
    gp__node_reindex(&e->fleet, g->node);
}

/* ---- covers ----
 * An MPS claim is counted on its GPU beside the shares running there, but
 * the part of it that the claimer's own victims on that GPU still hold
 * (its cover) is not counted twice: others may use what is left of the
 * GPU both now and once the claimer has bound.  With v the victims' share
 * and c the claim, the GPU counts max(v, c) for them.  The cover shrinks
 * as victims leave (gp__claims_uncover).
 *
 * Example: one MPS GPU runs a borrower's 500 (the victim) and another
 * job's 400; a guaranteed 250 reclaims the 500 and claims 250, all of it
 * covered by the victim: a 100 share of the same org fits beside them
 * during the grace (400 + 500 + 100 now, 400 + 250 + 100 after). */

static void victim_shares_on(const gp_engine *e, uint64_t claimer, uint32_t gpu, int64_t *milli, int64_t *mem)
{
    *milli = *mem = 0;
    for (size_t i = 0; i < e->n_running; i++) {
        const gp__job *v = &e->jobs[e->running[i]];
        for (int r = 0; v->covers_for == claimer && r < v->replicas; r++)
            if (v->placed[r] == gpu) {
                *milli += v->mps_milli;
                *mem += gp__replica_mem(e, v, &e->fleet.gpus[gpu]);
            }
    }
}

/* Set the covers of job's MPS claims to what its victims hold now. */
void gp__claims_cover_recount(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    for (size_t i = 0; j->isolation == GP_ISO_MPS && i < j->n_claimed; i++) {
        bool seen = false; /* GPU done with an earlier replica's claim */
        for (size_t k = 0; k < i && !seen; k++)
            seen = j->claimed[k].gpu == j->claimed[i].gpu;
        if (seen)
            continue;
        uint32_t gpu = j->claimed[i].gpu;
        int64_t milli, mem, share_mem = gp__replica_mem(e, j, &e->fleet.gpus[gpu]);
        victim_shares_on(e, j->id, gpu, &milli, &mem);
        for (size_t k = i; k < j->n_claimed; k++) {
            gp__claim *c = &j->claimed[k];
            if (c->gpu != gpu)
                continue;
            int cover = (int)(milli < j->mps_milli ? milli : j->mps_milli);
            int64_t cover_mem = mem < share_mem ? mem : share_mem;
            if (!j->claims_dropped)
                share_cover(e, gpu, cover - c->cover_milli, cover_mem - c->cover_mem);
            c->cover_milli = (int16_t)cover;
            c->cover_mem = cover_mem;
            milli -= cover;
            mem -= cover_mem;
        }
    }
}

void gp__claims_uncover(gp_engine *e, uint32_t victim)
{
    uint32_t claimer = gp__job_lookup(e, e->jobs[victim].covers_for);
    e->jobs[victim].covers_for = 0;
    if (claimer != GP__NONE)
        gp__claims_cover_recount(e, claimer);
}

/* Hold the planned GPUs (victims' and free ones alike) for the job, so
 * that nobody takes them while the victims' grace runs: whole GPUs for a
 * whole-GPU job, only the planned shares or slices for a shared one. */
void gp__claims_plan(gp_engine *e, uint32_t job, const uint32_t *plan, const int8_t *slot, size_t n)
{
    gp__job *j = &e->jobs[job];
    if (!gp__grow((void **)&j->claimed, &j->n_claimed_cap, j->n_claimed + n, sizeof *j->claimed))
        return;
    j->claims_dropped = false;
    for (size_t i = 0; i < n; i++) {
        gp__claim c = {plan[i], gp__job_shared(j) ? slot[i] : -1, 0, 0};
        claim_one(e, job, &c);
        j->claimed[j->n_claimed++] = c;
    }
    for (size_t i = 0; j->isolation == GP_ISO_MPS && i < e->n_running; i++) {
        gp__job *v = &e->jobs[e->running[i]];
        if (v->state == GP_JOB_PREEMPTING && v->reclaimed_by == j->id)
            v->covers_for = j->id;
    }
    gp__claims_cover_recount(e, job);
}


/* ---- a placement look, and the end of a claim ---- */

/* Claims are given back for the job's own placement look and taken back
 * if it fails (nothing else happens in between: a shared part is taken
 * back as it was); claims_dropped keeps a second drop from counting a
 * part twice. */
void gp__claims_drop(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (j->claims_dropped)
        return;
    for (size_t i = 0; i < j->n_claimed; i++) {
        gp__gpu *g = &e->fleet.gpus[j->claimed[i].gpu];
        if (gp__job_shared(j)) {
            share_claim(e, j, &j->claimed[i], -1, 0);
        } else if (g->claim == job + 1) {
            g->claim = 0;
            gp__node_reindex(&e->fleet, g->node);
        }
    }
    j->claims_dropped = true;
}

void gp__claims_retake(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    size_t kept = 0;
    if (!j->claims_dropped)
        return;
    for (size_t i = 0; i < j->n_claimed; i++) {
        const gp__gpu *g = &e->fleet.gpus[j->claimed[i].gpu];
        if (!gp__job_shared(j) &&
            (g->claim != 0 || (g->owner != 0 && e->jobs[g->owner - 1].state != GP_JOB_PREEMPTING)))
            continue; /* someone else's now */
        claim_one(e, job, &j->claimed[i]);
        j->claimed[kept++] = j->claimed[i];
    }
    if (kept != j->n_claimed) {
        e->changes++; /* a claim went to someone else: silent, but it matters */
        gp__reclaim_room(e, -1);
    }
    j->n_claimed = kept;
    j->claims_dropped = false;
}

void gp__claims_forget(gp_engine *e, uint32_t job)
{
    const gp__job *waiting = &e->jobs[job];
    if (waiting->n_claimed == 0 && waiting->victims_left == 0 && !waiting->claims_dropped)
        return; /* nothing claimed, none in grace: the usual waiting job, every pass (issue 17) */
    if (e->jobs[job].n_claimed > 0 || e->jobs[job].victims_left > 0) {
        e->n_miss = 0; /* claimed capacity is free again */
        e->changes++;  /* no decision says so, but later placements see it */
        gp__reclaim_room(e, -1);
    }
    gp__claims_drop(e, job);
    gp__job *j = &e->jobs[job];
    j->n_claimed = 0;
    j->victims_left = 0;
    j->claims_dropped = false;
    j->fair_reclaim = false;
    j->pool_reclaim = false;
}

/* ---- room ----
 * What reclaim.c's remembered failures ("searches that found nothing")
 * depend on: room[type] changes whenever more room may have come. */

void gp__reclaim_room(gp_engine *e, int type)
{
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        if (type < 0 || t == type)
            e->room[t]++;
}

