/* admission.c - limits, guarantee classes, promotion and lending.
 *
 * A pending job is admissible on GPU type T when, at every tenant from its
 * leaf up to the top, usage + demand <= limit, and its user's usage +
 * demand <= the nearest user limit.  It then runs in one of two classes:
 *
 *   guaranteed  at every tenant on the path that has a guarantee (there
 *               must be at least one), guaranteed usage + demand fits in
 *               the guarantee.  Never preempted.
 *   burstable   otherwise: it borrows idle capacity and may be reclaimed.
 *
 * When guaranteed usage frees up (a guaranteed job ends, a guarantee
 * grows), running burstable jobs of that subtree are promoted, oldest
 * first, as far as they fit; when a guarantee shrinks, the newest
 * guaranteed jobs are demoted until it holds again.  Each class change
 * closes the job's usage interval and opens one of the new class.
 *
 * Lending: the unused guarantee of a tenant with lend = no is kept free:
 * burstable jobs may use only free capacity beyond it.  A reserve never
 * blocks its owner: the tenant's own jobs (and those of its subtree) may
 * use it, also above the guarantee.
 *
 * Example: research {limit 40 H100} -> research/nlp {guarantee 16}.  nlp
 * runs 16 guaranteed GPUs; a further 8-GPU job is admissible (24 <= 40)
 * and burstable (16 + 8 > 16).  A 24-GPU job on top is refused with
 * "limit of research on H100: 24 + 24 > 40".  When one guaranteed 8-GPU
 * job ends, the burstable one is promoted (8 + 8 <= 16).
 */
#include "core/internal.h"

#include "util/sort.h"

#include <stdlib.h>

bool gp__fits_guarantee(const gp_engine *e, uint32_t tenant, const gp_res *demand, int type)
{
    bool any = false;
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        if (!t->has_guarantee)
            continue;
        any = true;
        if (gp__res_exceeds_job(&t->guaranteed, demand, &t->guarantee, type) >= 0)
            return false;
    }
    return any;
}

static gp_wait wait_of(gp_wait_code code, uint32_t tenant, int dim, int64_t a, int64_t b, int64_t c)
{
    gp_wait w = {.code = code, .dim = dim, .tenant = tenant, .a = a, .b = b, .c = c};
    return w;
}

/* Whether a limit refusal of a guaranteed-eligible job is only borrowed
 * usage: at every tenant, guaranteed usage + demand fits the limit. */
static bool limit_is_borrowed(const gp_engine *e, const gp__job *j, const gp_res *demand, int type)
{
    if (j->isolation == GP_ISO_TIMESLICE || !gp__fits_guarantee(e, j->tenant, demand, type))
        return false;
    for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (gp__res_exceeds_job(&e->tenants[a].guaranteed, demand, &e->tenants[a].limit, type) >= 0)
            return false;
    return true;
}

/* ---- a leaf's room ----
 * Every pass asks, for every pending job, whether its demand fits each
 * limit and each guarantee on its path.  Those figures (limits, guarantees,
 * usage) are the same for all jobs of a leaf until one of them changes, and
 * every such change recomputes the tenant's share (shares_updated).  So the
 * leaf keeps, per dimension, the least room left on its path; a job whose
 * demand fits that room fits at every tenant, and needs no walk.  A job that
 * does not fit, or whose user meets a user limit, walks the path as before,
 * which finds the tenant and figures its wait names.  Same answers (issue
 * 17: admission was a quarter of a pass's instructions at 50,000 pending).
 * Example: research {limit 40 H100, usage 24} -> nlp {limit 32, usage 20}:
 * room 12 H100; an 8-GPU job fits at once, a 16-GPU one walks the path and
 * waits on nlp's limit (20 + 16 > 32). */
static void room_least(gp_res *room, const gp_res *cap, const gp_res *used)
{
    for (int d = 0; d < GP_DIMS; d++)
        if (cap->v[d] != GP_UNLIMITED && cap->v[d] - used->v[d] < room->v[d])
            room->v[d] = cap->v[d] - used->v[d];
}

static const gp__tenant *leaf_room(gp_engine *e, uint32_t leaf)
{
    gp__tenant *l = &e->tenants[leaf];
    if (l->room_stamp == e->shares_updated + 1)
        return l;
    for (int d = 0; d < GP_DIMS; d++)
        l->room.v[d] = l->guarantee_room.v[d] = GP_UNLIMITED;
    l->room_guaranteed = l->room_user_limited = false;
    for (uint32_t a = leaf; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        room_least(&l->room, &t->limit, &t->usage);
        if (t->has_guarantee) {
            l->room_guaranteed = true;
            room_least(&l->guarantee_room, &t->guarantee, &t->guaranteed);
        }
        l->room_user_limited |= t->has_user_limit;
    }
    l->room_stamp = e->shares_updated + 1;
    return l;
}

/* The demand fits the room: gp__res_exceeds_job with nothing used yet and
 * the room as the limit. */
static bool fits_room(const gp_res *room, const gp_res *demand, int type)
{
    static const gp_res nothing;
    return gp__res_exceeds_job(&nothing, demand, room, type) < 0;
}

gp_wait gp__admit(gp_engine *e, const gp__job *j, int type, gp_class *cls, bool *borrowed_limit)
{
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    bool user_checked = j->user == GP__NONE;
    *borrowed_limit = false;
    const gp__tenant *leaf = leaf_room(e, j->tenant);
    if ((user_checked || !leaf->room_user_limited) && fits_room(&leaf->room, &demand, type)) {
        *cls = j->isolation != GP_ISO_TIMESLICE && leaf->room_guaranteed &&
                       fits_room(&leaf->guarantee_room, &demand, type)
                   ? GP_CLASS_GUARANTEED
                   : GP_CLASS_BURSTABLE;
        return wait_of(GP_WAIT_NONE, GP__NONE, -1, 0, 0, 0);
    }
    for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        int d = gp__res_exceeds_job(&t->usage, &demand, &t->limit, type);
        if (d >= 0) {
            *borrowed_limit = limit_is_borrowed(e, j, &demand, type);
            return wait_of(GP_WAIT_LIMIT, a, d, t->usage.v[d], demand.v[d], t->limit.v[d]);
        }
        if (!user_checked && t->has_user_limit) {
            user_checked = true;
            const gp_res *u = &e->users[j->user].usage;
            d = gp__res_exceeds_job(u, &demand, &t->user_limit, type);
            if (d >= 0)
                return wait_of(GP_WAIT_USER_LIMIT, a, d, u->v[d], demand.v[d], t->user_limit.v[d]);
        }
    }
    /* time-sliced work is best effort: always burstable */
    *cls = j->isolation != GP_ISO_TIMESLICE && gp__fits_guarantee(e, j->tenant, &demand, type) ? GP_CLASS_GUARANTEED
                                                                                         : GP_CLASS_BURSTABLE;
    return wait_of(GP_WAIT_NONE, GP__NONE, -1, 0, 0, 0);
}

/* The outermost tenant on the path that has a guarantee and does not lend
 * (its reserve covers those below it), or GP__NONE. */
static uint32_t outer_reserve_holder(const gp_engine *e, uint32_t tenant)
{
    uint32_t outer = GP__NONE;
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (!e->tenants[a].lend && e->tenants[a].has_guarantee)
            outer = a;
    return outer;
}

static int64_t idle_guarantee_gpus(const gp__tenant *t, int type)
{
    int64_t idle = t->guarantee.v[type] - t->guaranteed.v[type];
    return idle > 0 ? idle / 1000 : 0;
}

void gp__lending_reserve(const gp_engine *e, int64_t out[GP_MAX_GPU_TYPES])
{
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
        out[t] = 0;
    for (size_t i = 0; i < e->n_tenants; i++) {
        const gp__tenant *t = &e->tenants[i];
        if (t->removed || outer_reserve_holder(e, (uint32_t)i) != i)
            continue; /* count only the outermost non-lending tenant */
        for (int d = 0; d < GP_MAX_GPU_TYPES; d++)
            out[d] += idle_guarantee_gpus(t, d);
    }
}

int64_t gp__lending_reserve_own(const gp_engine *e, uint32_t tenant, int type)
{
    uint32_t holder = outer_reserve_holder(e, tenant);
    return holder == GP__NONE ? 0 : idle_guarantee_gpus(&e->tenants[holder], type);
}

/* Change a running job's class: close its usage interval, re-charge the
 * tenant path, open an interval of the new class. */
static void reclassify(gp_engine *e, uint32_t job, gp_class to)
{
    gp__job *j = &e->jobs[job];
    gp_res demand;
    gp__job_demand(e, j, j->bound_type, &demand);
    gp__usage_close(e, job);
    gp__tenant_charge(e, j->tenant, &demand, j->cls, -1);
    j->cls = to;
    if (to == GP_CLASS_BURSTABLE) /* a possible victim now */
        gp__reclaim_room(e, j->bound_type);
    gp__tenant_charge(e, j->tenant, &demand, j->cls, +1);
    gp__usage_open(e, job);
}

static bool path_dirty(const gp_engine *e, uint32_t tenant)
{
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (e->tenants[a].promote_dirty)
            return true;
    return false;
}

static int by_bind_time(uint32_t ja, uint32_t jb, const void *ctx)
{
    const gp_engine *e = ctx;
    const gp__job *a = &e->jobs[ja], *b = &e->jobs[jb];
    if (a->bind_time != b->bind_time)
        return a->bind_time < b->bind_time ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Promotions only add guaranteed usage, so a job that does not fit its
 * guarantee before the first promotion of a round fits after none: it is
 * left out before the sort instead of after it. */
static bool fits_guarantee_now(const gp_engine *e, const gp__job *j)
{
    gp_res demand;
    gp__job_demand(e, j, j->bound_type, &demand);
    return gp__fits_guarantee(e, j->tenant, &demand, j->bound_type);
}

void gp__promote(gp_engine *e)
{
    bool any = false;
    for (size_t i = 0; i < e->n_tenants && !any; i++)
        any = e->tenants[i].promote_dirty && !e->tenants[i].removed;
    if (!any)
        return;
    uint32_t *cand = malloc((e->n_running ? e->n_running : 1) * sizeof *cand);
    size_t n = 0;
    for (size_t i = 0; cand && i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        if (j->state == GP_JOB_RUNNING && j->cls == GP_CLASS_BURSTABLE && j->isolation != GP_ISO_TIMESLICE &&
            path_dirty(e, j->tenant) && fits_guarantee_now(e, j))
            cand[n++] = e->running[i];
    }
    gp_sort_indexes(cand, n, by_bind_time, e);
    for (size_t i = 0; i < n; i++) {
        gp__job *j = &e->jobs[cand[i]];
        if (!fits_guarantee_now(e, j))
            continue;
        reclassify(e, cand[i], GP_CLASS_GUARANTEED);
        gp__job_note(e, cand[i], "promoted to guaranteed: %s has guarantee free again", e->tenants[j->tenant].path);
    }
    free(cand);
    for (size_t i = 0; i < e->n_tenants; i++)
        e->tenants[i].promote_dirty = false;
    e->changes++; /* clearing the flags is state too: the daemon's log keeps this tick */
}

static bool over_guarantee(const gp_engine *e, uint32_t tenant)
{
    bool any = false;
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        if (!t->has_guarantee)
            continue;
        any = true;
        for (int d = 0; d < GP_DIMS; d++)
            if (t->guarantee.v[d] != GP_UNLIMITED && t->guaranteed.v[d] > t->guarantee.v[d])
                return true;
    }
    return !any; /* no guarantee left on the path: nothing guarantees the job */
}

void gp__demote_over_guarantee(gp_engine *e)
{
    uint32_t *cand = malloc((e->n_running ? e->n_running : 1) * sizeof *cand);
    size_t n = 0;
    for (size_t i = 0; cand && i < e->n_running; i++) {
        const gp__job *j = &e->jobs[e->running[i]];
        if (j->cls == GP_CLASS_GUARANTEED && over_guarantee(e, j->tenant))
            cand[n++] = e->running[i];
    }
    gp_sort_indexes(cand, n, by_bind_time, e);
    for (size_t i = n; i-- > 0;) { /* newest first */
        gp__job *j = &e->jobs[cand[i]];
        if (!over_guarantee(e, j->tenant))
            continue;
        reclassify(e, cand[i], GP_CLASS_BURSTABLE);
        gp__job_note(e, cand[i], "demoted to burstable: the guarantee of %s shrank", e->tenants[j->tenant].path);
    }
    free(cand);
}
