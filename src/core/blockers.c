/* blockers.c - every reason a pending job cannot start, not only the
 * first one the pass met (gp_engine_blockers; `gpupool why` prints each
 * with what would lift it).
 *
 * The pass stops at the first blocker it meets (a limit before the fleet's
 * shape, the leaf's limit before its parent's), which is enough to decide
 * and cheap.  A person lifting that one should know what comes next, e.g.
 * a 2 x 8 block gang in platform/eval (limit 8) under platform (limit 12)
 * when no block has two empty nodes: the pass says "limit of platform/eval
 * reached"; the blockers say that, platform's limit, and "no fabric block
 * can hold 2 x 8" -- raising one limit alone starts nothing.  Reads the
 * engine only: the pass decides nothing from it.  A top file (internal.h,
 * "Layers"): nothing in src/core calls it.
 */
#include "core/internal.h"

typedef struct blockers {
    gp_wait *out;
    size_t cap, n;
} blockers;

static void blocker_add(blockers *b, gp_wait w)
{
    if (b->n < b->cap)
        b->out[b->n] = w;
    b->n++;
}

/* Whether the pass's wait adds to what gp_engine_blockers finds itself:
 * capacity, reservations, fences, reclaims, back-offs only a pass knows
 * ("new" only says that no pass has looked yet). */
static bool wait_adds(gp_wait_code c)
{
    return !(c == GP_WAIT_NEW || c == GP_WAIT_LIMIT || c == GP_WAIT_USER_LIMIT || c == GP_WAIT_TRUST ||
             c == GP_WAIT_TOPOLOGY || c == GP_WAIT_NODE_SHAPE || c == GP_WAIT_SHARING_MODE ||
             c == GP_WAIT_NO_GPU_TYPE);
}

/* The limits on type `type` that refuse the job: every tenant's on its
 * path, and the nearest per-user limit (the one gp__admit checks).  Returns
 * how many. */
static size_t limits_on_type(const gp_engine *e, const gp__job *j, int type, blockers *b)
{
    gp_res demand;
    gp__job_demand(e, j, type, &demand);
    bool user_checked = j->user == GP__NONE;
    size_t found = 0;
    for (uint32_t a = j->tenant; a != GP__NONE; a = e->tenants[a].parent) {
        const gp__tenant *t = &e->tenants[a];
        int d = gp__res_exceeds_job(&t->usage, &demand, &t->limit, type);
        if (d >= 0) {
            blocker_add(b, (gp_wait){.code = GP_WAIT_LIMIT, .dim = d, .tenant = a, .a = t->usage.v[d],
                                     .b = demand.v[d], .c = t->limit.v[d]});
            found++;
        }
        if (!user_checked && t->has_user_limit) {
            user_checked = true;
            const gp_res *u = &e->users[j->user].usage;
            d = gp__res_exceeds_job(u, &demand, &t->user_limit, type);
            if (d >= 0) {
                blocker_add(b, (gp_wait){.code = GP_WAIT_USER_LIMIT, .dim = d, .tenant = a, .a = u->v[d],
                                         .b = demand.v[d], .c = t->user_limit.v[d]});
                found++;
            }
        }
    }
    return found;
}

/* The limits that block the job: none when some accepted type passes them
 * all (it runs on that one), else those of every accepted type. */
static void limits_add(const gp_engine *e, const gp__job *j, blockers *b)
{
    size_t mark = b->n;
    for (int t = 0; t < e->fleet.n_types; t++) {
        if (!(j->type_mask & (1u << t)))
            continue;
        if (limits_on_type(e, j, t, b) == 0) {
            b->n = mark; /* forget those of the other types */
            return;
        }
    }
}

size_t gp_engine_blockers(const gp_engine *e, uint64_t id, gp_wait *out, size_t cap)
{
    uint32_t job = e ? gp__job_lookup(e, id) : GP__NONE;
    if (job == GP__NONE || e->jobs[job].state != GP_JOB_PENDING)
        return 0;
    const gp__job *j = &e->jobs[job];
    blockers b = {.out = out, .cap = cap};
    if (gp__trust_forbids(e, j))
        blocker_add(&b, (gp_wait){.code = GP_WAIT_TRUST, .dim = -1, .tenant = gp__trust_source(e, j->tenant)});
    gp_wait shape = gp__place_possible(e, j);
    if (shape.code != GP_WAIT_NONE)
        blocker_add(&b, shape);
    limits_add(e, j, &b);
    if (b.n == 0 || wait_adds(j->wait.code))
        blocker_add(&b, j->wait);
    return b.n;
}
