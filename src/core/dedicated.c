/* dedicated.c - dedicated nodes: the nodes a job may not share.
 *
 * A tenant with nodes "dedicated" (inherited as a floor, tenants.c) makes
 * the outermost dedicated tenant on its path a dedicated domain (at the
 * org when the org says so; a team inside a shared org may be one of its
 * own).  The rule: a node that runs any replica of a domain's jobs, whole
 * GPUs, shared slices or CPU-only, runs no replica from outside the domain
 * at the same time.  fleet.c counts each node's replicas of a domain
 * (ded_domain, ded_replicas; a job counts as its tenant's domain was when
 * it bound, until it leaves the node).
 *
 * The fence: before the engine looks at a job (placement, reclaim,
 * reservation: every look of gp__place_*, the reclaim searches and the
 * backfill sweep read only indexed, unbarred nodes), the nodes the job may
 * not use are barred, and put back after.  A node is barred for job j of
 * domain D (GP__NONE when shared) when
 *   - another domain's replicas run there (ded_replicas > 0, ded_domain != D), or
 *   - D is a domain and replicas not counted as D's run there (replicas >
 *     ded_replicas): a dedicated job needs a node free of everybody else.
 * Without a dedicated tenant or a node running a domain's replicas
 * (e->fenced false) nothing is barred and nothing is walked: the decisions
 * of a fleet without dedicated tenants are those of the engine before.
 * Cost while fenced: a shared job's fence walks only the nodes a domain
 * runs on (e->ded_nodes, listed at the pass's start and at each dedicated
 * bind); a dedicated job's walks every node (others may run anywhere).
 *
 * Example: nodes a, b (8 GPUs each).  secure is dedicated.  lab runs a
 * 1-GPU job on a.  secure's 4-GPU job goes to b (a is barred: lab runs
 * there); lab's next job goes to a (b is barred: secure runs there), and a
 * second secure job of 8 GPUs waits "dedicated" although a has 6 free.
 *
 * Changing the policy changes where new jobs go; running jobs stay where
 * they are (a job counts on its nodes as its domain was when it bound).
 *
 * Owned pools, behind the same fence.  An admin may give a pool an owner
 * tenant (gp_pool_spec.owner; a Slurm partition with AllowAccounts, a
 * Kubernetes taint one team tolerates).  Jobs of the owner's subtree place
 * on its nodes as on any other (and elsewhere as before).  A job from
 * outside finds them barred unless the owner lends (its `lend`, the switch
 * that also lends its idle guarantee; the default is to lend); placed there
 * while it does, it is a borrower, and a job of the owner's subtree that
 * finds no room takes the pool back from such borrowers with grace, as a
 * guarantee is reclaimed (reclaim.c, gp__reclaim_pool: the fence narrowed
 * to the owner's pools, victims from outside chosen and pruned alike).  A
 * job kept out waits "dedicated" with c = 2 naming the pool and its owner.
 * Owners are resolved from their paths at each pass's start, and the
 * nodes of owned pools listed; a path that names no tenant (not made yet,
 * removed, mistyped) closes the pool to every job until it does; the
 * fence of a shared job walks them and the dedicated nodes only.  Without
 * an owned pool nothing of this is walked: decisions are those before.
 *
 * Example: pool team-a (nodes a0, a1) owned by org/a, lend off; org/b's job
 * waits "its free GPUs are in pool team-a owned by org/a" while the other
 * nodes are full.  With lend on it runs on a0; org/a/x then submits a job
 * that only a0 could hold: org/b's job is preempted with its grace and the
 * job waits for it ("reclaiming ... from pool team-a"), then runs on a0.
 */
#include "core/internal.h"

static bool node_barred(const gp__node *n, uint32_t domain)
{
    if (n->ded_replicas > 0 && n->ded_domain != domain)
        return true;
    return domain != GP__NONE && n->replicas > n->ded_replicas;
}

/* SIZE_MAX in n_ded_nodes: out of memory once, the list is not whole and
 * fences walk every node until the next pass's start. */
static void ded_node_add(gp_engine *e, uint32_t node)
{
    if (e->n_ded_nodes == SIZE_MAX || (e->n_ded_nodes > 0 && e->ded_nodes[e->n_ded_nodes - 1] == node))
        return;
    if (GP__GROW(e->ded_nodes, e->n_ded_nodes, e->cap_ded_nodes))
        e->ded_nodes[e->n_ded_nodes++] = node;
    else
        e->n_ded_nodes = SIZE_MAX;
}

/* ---- owned pools ---- */

static bool is_under(const gp_engine *e, uint32_t tenant, uint32_t ancestor)
{
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        if (a == ancestor)
            return true;
    return false;
}

uint32_t gp__pool_owned_by(const gp_engine *e, uint32_t pool, uint32_t tenant)
{
    uint32_t owner = e->fleet.pools[pool].owner;
    return owner != GP__NONE && is_under(e, tenant, owner) ? owner : GP__NONE;
}

uint32_t gp__pool_owner_of(const gp_engine *e, uint32_t tenant)
{
    for (uint32_t a = tenant; a != GP__NONE; a = e->tenants[a].parent)
        for (size_t p = 0; p < e->fleet.n_pools; p++)
            if (e->fleet.pools[p].owner == a)
                return a;
    return GP__NONE;
}

bool gp__pool_borrower(const gp_engine *e, uint32_t tenant, const gp__job *v)
{
    size_t n = gp__placed_count(v);
    for (size_t i = 0; i < n; i++) {
        uint32_t owner = gp__pool_owned_by(e, e->fleet.nodes[e->fleet.gpus[v->placed[i]].node].pool, tenant);
        if (owner != GP__NONE && !is_under(e, v->tenant, owner))
            return true;
    }
    return false;
}

/* Node n is in a pool whose owner keeps tenant out (tenant is outside its
 * subtree and it does not lend), or whose owner names no tenant (closed:
 * a typo or a tenant not made yet opens nothing). */
static bool pool_barred(const gp_engine *e, const gp__node *n, uint32_t tenant)
{
    const gp__pool *pl = &e->fleet.pools[n->pool];
    if (pl->owner == GP__NONE)
        return pl->spec.owner[0] != '\0';
    return !e->tenants[pl->owner].lend && !is_under(e, tenant, pl->owner);
}

/* Each pool's owner from its path, and the nodes of owned pools into
 * e->owned_nodes (SIZE_MAX: out of memory, fences walk every node). */
static void owners_resolve(gp_engine *e)
{
    gp__fleet *f = &e->fleet;
    bool any = false;
    e->n_owned_nodes = 0;
    for (size_t p = 0; p < f->n_pools; p++) {
        gp__pool *pl = &f->pools[p];
        pl->owner = pl->spec.owner[0] ? gp__tenant_lookup(e, pl->spec.owner) : GP__NONE;
        any |= pl->spec.owner[0] != '\0';
    }
    for (size_t n = 0; any && n < f->n_nodes && e->n_owned_nodes != SIZE_MAX; n++) {
        if (!f->pools[f->nodes[n].pool].spec.owner[0])
            continue;
        if (GP__GROW(e->owned_nodes, e->n_owned_nodes, e->cap_owned_nodes))
            e->owned_nodes[e->n_owned_nodes++] = (uint32_t)n;
        else
            e->n_owned_nodes = SIZE_MAX;
    }
}

void gp__fence_begin(gp_engine *e)
{
    bool any = false;
    for (size_t t = 0; t < e->n_tenants && !any; t++)
        any = !e->tenants[t].removed && e->tenants[t].ded_domain != GP__NONE;
    e->n_ded_nodes = 0;
    for (size_t n = 0; n < e->fleet.n_nodes; n++)
        if (e->fleet.nodes[n].ded_replicas > 0)
            ded_node_add(e, (uint32_t)n);
    owners_resolve(e);
    e->fenced = any || e->n_ded_nodes > 0 || e->n_owned_nodes > 0;
}

void gp__fence_note(gp_engine *e, uint32_t job)
{
    const gp__job *j = &e->jobs[job];
    if (!e->fenced || j->ded_domain == GP__NONE)
        return;
    size_t n = gp__placed_count(j);
    for (size_t i = 0; i < n; i++)
        ded_node_add(e, e->fleet.gpus[j->placed[i]].node);
}

/* False when out of memory (the node is left as it was). */
static bool bar(gp_engine *e, uint32_t n, uint32_t domain, uint32_t tenant)
{
    const gp__node *node = &e->fleet.nodes[n];
    if (node->barred || !node->up || node->draining ||
        (!node_barred(node, domain) && !pool_barred(e, node, tenant)))
        return true;
    if (!GP__GROW(e->barred, e->n_barred, e->cap_barred))
        return false;
    e->barred[e->n_barred++] = n;
    gp__node_bar(&e->fleet, n, true);
    return true;
}

bool gp__fence_up(gp_engine *e, uint32_t job)
{
    if (!e->fenced)
        return true;
    uint32_t tenant = e->jobs[job].tenant, domain = e->tenants[tenant].ded_domain;
    uint32_t access = e->n_owned_nodes > 0 ? tenant : GP__NONE; /* owned pools bar per tenant */
    if (e->fence_up && e->fence_domain == domain && e->fence_tenant == access && e->fence_changes == e->changes)
        return true; /* nothing placed or released since: the same nodes are barred */
    gp__fence_down(e);
    bool ok = true;
    e->fence_up = true;
    e->fence_domain = domain;
    e->fence_tenant = access;
    e->fence_changes = e->changes;
    e->cand_memo.valid = false; /* reclaim's candidate lists were made behind another fence */
    if (domain == GP__NONE && e->n_ded_nodes != SIZE_MAX && e->n_owned_nodes != SIZE_MAX) {
        /* a shared job: only nodes a domain runs on, and those of owned pools */
        for (size_t i = 0; i < e->n_ded_nodes && ok; i++)
            ok = bar(e, e->ded_nodes[i], domain, tenant);
        for (size_t i = 0; i < e->n_owned_nodes && ok; i++)
            ok = bar(e, e->owned_nodes[i], domain, tenant);
        return ok;
    }
    for (size_t n = 0; n < e->fleet.n_nodes && ok; n++)
        ok = bar(e, (uint32_t)n, domain, tenant);
    return ok;
}

void gp__fence_down(gp_engine *e)
{
    for (size_t i = 0; i < e->n_barred; i++)
        gp__node_bar(&e->fleet, e->barred[i], false);
    e->n_barred = 0;
    e->fence_up = false;
}

size_t gp__fence_narrow(gp_engine *e, uint32_t tenant, bool to_own)
{
    size_t mark = e->n_barred;
    for (size_t n = 0; n < e->fleet.n_nodes; n++) {
        const gp__node *node = &e->fleet.nodes[n];
        bool own = gp__pool_owned_by(e, node->pool, tenant) != GP__NONE;
        bool keep = to_own ? own : own || !e->fleet.pools[node->pool].spec.owner[0];
        if (node->barred || !node->up || node->draining || keep)
            continue;
        if (!GP__GROW(e->barred, e->n_barred, e->cap_barred)) {
            gp__fence_widen(e, mark);
            return SIZE_MAX;
        }
        e->barred[e->n_barred++] = (uint32_t)n;
        gp__node_bar(&e->fleet, (uint32_t)n, true);
    }
    return mark;
}

void gp__fence_widen(gp_engine *e, size_t mark)
{
    for (size_t i = mark; i < e->n_barred; i++)
        gp__node_bar(&e->fleet, e->barred[i], false);
    e->n_barred = mark;
}

/* The part of the wait that owned pools make: their barred free GPUs (the
 * pool holding the most names the wait).  False when there are none. */
static bool pool_wait(const gp_engine *e, const gp__job *j, uint8_t types, int64_t others, gp_wait *w)
{
    int64_t free = 0, best = 0;
    uint32_t pool = 0;
    int dim = -1;
    for (size_t i = 0; i < e->n_barred; i++) {
        const gp__node *node = &e->fleet.nodes[e->barred[i]];
        if (!(types & (1u << node->type)) || node->free == 0 || !pool_barred(e, node, j->tenant))
            continue;
        free += node->free;
        if (dim < 0)
            dim = node->type;
        if (node->free > best)
            best = node->free, pool = node->pool;
    }
    if (free == 0 || free < others)
        return false;
    *w = (gp_wait){.code = GP_WAIT_DEDICATED, .dim = dim, .tenant = e->fleet.pools[pool].owner, .a = free,
                   .b = (int64_t)j->replicas * j->gpus, .c = 2, .pool = pool};
    return true;
}

void gp__fence_wait(const gp_engine *e, const gp__job *j, uint8_t types, bool pools_only, gp_wait *w)
{
    if (pools_only) {
        if (e->n_owned_nodes > 0)
            pool_wait(e, j, types, 0, w);
        return;
    }
    int64_t free = 0, best = 0;
    uint32_t holder = GP__NONE;
    int dim = -1;
    for (size_t i = 0; i < e->n_barred; i++) {
        const gp__node *node = &e->fleet.nodes[e->barred[i]];
        if (!(types & (1u << node->type)) || node->free == 0 || pool_barred(e, node, j->tenant))
            continue;
        free += node->free;
        if (dim < 0)
            dim = node->type;
        if (node->ded_replicas > 0 && node->free > best)
            best = node->free, holder = node->ded_domain;
    }
    if (e->n_owned_nodes > 0 && pool_wait(e, j, types, free, w))
        return;
    if (free == 0)
        return;
    uint32_t own = e->tenants[j->tenant].ded_domain;
    *w = (gp_wait){.code = GP_WAIT_DEDICATED,
                   .dim = dim,
                   .tenant = own != GP__NONE ? own : holder,
                   .a = free,
                   .b = (int64_t)j->replicas * j->gpus,
                   .c = own != GP__NONE ? 1 : 0};
}
