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

void gp__fence_begin(gp_engine *e)
{
    bool any = false;
    for (size_t t = 0; t < e->n_tenants && !any; t++)
        any = !e->tenants[t].removed && e->tenants[t].ded_domain != GP__NONE;
    e->n_ded_nodes = 0;
    for (size_t n = 0; n < e->fleet.n_nodes; n++)
        if (e->fleet.nodes[n].ded_replicas > 0)
            ded_node_add(e, (uint32_t)n);
    e->fenced = any || e->n_ded_nodes > 0;
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
static bool bar(gp_engine *e, uint32_t n, uint32_t domain)
{
    const gp__node *node = &e->fleet.nodes[n];
    if (node->barred || !node->up || node->draining || !node_barred(node, domain))
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
    uint32_t domain = e->tenants[e->jobs[job].tenant].ded_domain;
    if (e->fence_up && e->fence_domain == domain && e->fence_changes == e->changes)
        return true; /* nothing placed or released since: the same nodes are barred */
    gp__fence_down(e);
    bool ok = true;
    e->fence_up = true;
    e->fence_domain = domain;
    e->fence_changes = e->changes;
    e->cand_memo.valid = false; /* reclaim's candidate lists were made behind another fence */
    if (domain == GP__NONE && e->n_ded_nodes != SIZE_MAX) { /* a shared job: only nodes a domain runs on */
        for (size_t i = 0; i < e->n_ded_nodes && ok; i++)
            ok = bar(e, e->ded_nodes[i], domain);
        return ok;
    }
    for (size_t n = 0; n < e->fleet.n_nodes && ok; n++)
        ok = bar(e, (uint32_t)n, domain);
    return ok;
}

void gp__fence_down(gp_engine *e)
{
    for (size_t i = 0; i < e->n_barred; i++)
        gp__node_bar(&e->fleet, e->barred[i], false);
    e->n_barred = 0;
    e->fence_up = false;
}

void gp__fence_wait(const gp_engine *e, const gp__job *j, uint8_t types, gp_wait *w)
{
    int64_t free = 0, best = 0;
    uint32_t holder = GP__NONE;
    int dim = -1;
    for (size_t i = 0; i < e->n_barred; i++) {
        const gp__node *node = &e->fleet.nodes[e->barred[i]];
        if (!(types & (1u << node->type)) || node->free == 0)
            continue;
        free += node->free;
        if (dim < 0)
            dim = node->type;
        if (node->ded_replicas > 0 && node->free > best)
            best = node->free, holder = node->ded_domain;
    }
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
