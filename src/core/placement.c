/* placement.c - where a gang goes: all replicas or none.
 *
 * A job asks for R replicas of G whole GPUs of an accepted type, each
 * replica on one node, with a topology:
 *   any     replicas anywhere;
 *   block   all replicas in one fabric block (one InfiniBand leaf);
 *   nvlink  all replicas in one NVLink domain of one node.
 * Only up, undrained nodes with healthy, unowned, unclaimed GPUs count, and
 * the node must also have each replica's CPU and memory free.
 *
 * Best fit keeps big holes whole: nodes are tried from the fewest free GPUs
 * upwards (the bucket walk of fleet.c), a block gang goes to the block with
 * the least free capacity that holds it, and inside a node a replica takes
 * the NVLink domain with the fewest free GPUs that still fits it.
 *
 * Example: blocks b0 (node a: 8 free, node b: 8 free) and b1 (node c: 8
 * free, node d: 2 free).  A 2x8 block gang can only go to b0 (b1 holds one
 * 8-GPU replica); a 2-GPU job goes to d (fewest free that fits), leaving
 * a, b and c whole; a 1x8 nvlink job then goes to c, the partly used block,
 * so b0 stays whole for the next 16-GPU gang.
 *
 * gp__place_find only looks: it writes the chosen GPUs to e->scratch.out.
 * gp__place_commit takes them; gp__place_release gives them back.
 */
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

static int64_t fit_count(int64_t cap, int64_t used, int64_t per)
{
    if (per <= 0)
        return INT32_MAX;
    return cap > used ? (cap - used) / per : 0;
}

/* Take up to `want` replicas on node n (inside NVLink domain `domain`, or
 * any when -1), appending their GPUs to scratch.out.  Returns how many. */
static int take_on_node(gp_engine *e, uint32_t n, const gp__job *j, int want, int domain, size_t *n_out)
{
    const gp__node *node = &e->fleet.nodes[n];
    int per = node->gpu_count / node->domains, G = j->gpus;
    uint32_t free_gpu[GP_MAX_GPUS_PER_NODE][GP_MAX_GPUS_PER_NODE];
    int n_free[GP_MAX_GPUS_PER_NODE] = {0}, total = 0;
    for (int i = 0; i < node->gpu_count; i++) {
        uint32_t g = node->gpu_first + (uint32_t)i;
        int d = i / per;
        if ((domain < 0 || d == domain) && gp__gpu_is_free(&e->fleet.gpus[g])) {
            free_gpu[d][n_free[d]++] = g;
            total++;
        }
    }
    int64_t fits = total / G;
    int64_t by_cpu = fit_count(node->cpu_cap, node->cpu_used, j->cpu);
    int64_t by_mem = fit_count(node->mem_cap, node->mem_used, j->mem);
    if (by_cpu < fits)
        fits = by_cpu;
    if (by_mem < fits)
        fits = by_mem;
    if (fits > want)
        fits = want;
    for (int r = 0; r < fits; r++) {
        int best = -1; /* the domain with the fewest free GPUs that holds G */
        for (int d = 0; d < node->domains; d++)
            if (n_free[d] >= G && (best < 0 || n_free[d] < n_free[best]))
                best = d;
        for (int got = 0; got < G;) {
            int d = best;
            if (d < 0) /* spread over domains, fullest first */
                for (int k = 0; k < node->domains; k++)
                    if (n_free[k] > 0 && (d < 0 || n_free[k] > n_free[d]))
                        d = k;
            e->scratch.out[(*n_out)++] = free_gpu[d][--n_free[d]];
            got++;
        }
    }
    return (int)fits;
}

/* CPU-only replicas (gpus = 0) go where they strand the fewest GPUs: the
 * node with the fewest free GPUs, then the least free CPU, that fits. */
static bool place_cpu_only(gp_engine *e, const gp__job *j, int type)
{
    gp__fleet *f = &e->fleet;
    for (int r = 0; r < j->replicas; r++) {
        uint32_t best = GP__NONE;
        for (size_t n = 0; n < f->n_nodes; n++) {
            gp__node *node = &f->nodes[n];
            if (node->type != type || !node->up || node->draining || node->held || node->barred ||
                node->cpu_cap - node->cpu_used < j->cpu || node->mem_cap - node->mem_used < j->mem)
                continue;
            if (best == GP__NONE || node->free < f->nodes[best].free ||
                (node->free == f->nodes[best].free &&
                 node->cpu_cap - node->cpu_used < f->nodes[best].cpu_cap - f->nodes[best].cpu_used))
                best = (uint32_t)n;
        }
        if (best == GP__NONE) {
            gp__tx_rollback(e);
            return false;
        }
        gp__tx_save_node(e, best);
        f->nodes[best].cpu_used += j->cpu;
        f->nodes[best].mem_used += j->mem;
        e->scratch.out[r] = f->nodes[best].gpu_first;
    }
    gp__tx_rollback(e);
    return true;
}

static bool place_any(gp_engine *e, const gp__job *j, int type)
{
    const gp__fleet *f = &e->fleet;
    if (!gp__replicas_fit(f->hist[type], f->free[type], j->gpus, j->replicas))
        return false;
    size_t n_out = 0;
    int got = 0;
    for (int k = j->gpus; k <= GP_MAX_GPUS_PER_NODE; k++)
        for (uint32_t n = f->head[type][k]; n != GP__NONE; n = f->nodes[n].next) {
            got += take_on_node(e, n, j, j->replicas - got, -1, &n_out);
            if (got == j->replicas)
                return true;
        }
    return false;
}

static bool place_in_block(gp_engine *e, const gp__job *j, int type, uint32_t b)
{
    const gp__fleet *f = &e->fleet;
    const gp__block *blk = &f->blocks[b];
    size_t n_out = 0;
    int got = 0;
    for (int k = j->gpus; k <= GP_MAX_GPUS_PER_NODE; k++) {
        if (blk->hist[type][k] == 0)
            continue;
        for (size_t i = 0; i < blk->n_nodes; i++) {
            const gp__node *node = &f->nodes[blk->nodes[i]];
            if (node->type != type || node->indexed != k)
                continue;
            got += take_on_node(e, blk->nodes[i], j, j->replicas - got, -1, &n_out);
            if (got == j->replicas)
                return true;
        }
    }
    return false;
}

static bool place_block(gp_engine *e, const gp__job *j, int type)
{
    const gp__fleet *f = &e->fleet;
    if (!gp__replicas_fit(f->hist[type], f->free[type], j->gpus, j->replicas))
        return false;
    /* try feasible blocks from the least free upwards (best fit); a block
     * fails only when CPU or memory do not fit, then the next one is tried */
    bool *tried = NULL, ok = false;
    for (;;) {
        uint32_t best = GP__NONE;
        for (size_t b = 0; b < f->n_blocks; b++) {
            const gp__block *blk = &f->blocks[b];
            if ((tried && tried[b]) || !gp__replicas_fit(blk->hist[type], blk->free[type], j->gpus, j->replicas))
                continue;
            if (best == GP__NONE || blk->free[type] < f->blocks[best].free[type])
                best = (uint32_t)b;
        }
        if (best == GP__NONE || (ok = place_in_block(e, j, type, best)))
            break;
        if (!tried && !(tried = calloc(f->n_blocks, sizeof *tried)))
            break;
        tried[best] = true;
    }
    free(tried);
    return ok;
}

static bool place_nvlink(gp_engine *e, const gp__job *j, int type)
{
    const gp__fleet *f = &e->fleet;
    int need = j->replicas * j->gpus;
    if (need > GP_MAX_GPUS_PER_NODE)
        return false;
    for (int k = need; k <= GP_MAX_GPUS_PER_NODE; k++)
        for (uint32_t n = f->head[type][k]; n != GP__NONE; n = f->nodes[n].next) {
            const gp__node *node = &f->nodes[n];
            int per = node->gpu_count / node->domains, best = -1, best_free = 0;
            for (int d = 0; d < node->domains; d++) {
                int free = 0;
                for (int i = d * per; i < (d + 1) * per; i++)
                    free += gp__gpu_is_free(&f->gpus[node->gpu_first + i]);
                if (free >= need && (best < 0 || free < best_free))
                    best = d, best_free = free;
            }
            size_t n_out = 0;
            if (best >= 0 && take_on_node(e, n, j, j->replicas, best, &n_out) == j->replicas)
                return true;
        }
    return false;
}

/* Could a held node take a replica of j once put back?  Only one with at
 * least a replica's GPUs free: put back, any other goes into a bucket
 * below j->gpus, which no look of j walks (any and nvlink walk from there
 * up, block gangs count and walk those buckets only).  Held nodes that
 * cannot help are left held: the look sees the same buckets, so it finds
 * the same GPUs, and is spared taking every held node out and back in
 * (issue 17: 11 % of a pass's instructions at 50,000 pending). */
static bool held_nodes_help(const gp__fleet *f, const gp__reservation *r, int gpus)
{
    for (size_t i = 0; i < r->n_nodes; i++)
        if (f->nodes[r->nodes[i]].free >= gpus)
            return true;
    return false;
}

bool gp__place_find(gp_engine *e, const gp__job *j, int type, bool use_held)
{
    if (type < 0 || type >= e->fleet.n_types || !(j->type_mask & (1u << type)))
        return false;
    int chosen;
    if (gp__scored_applies(e, j)) /* never for MIG or time-sliced jobs */
        return gp__place_scored(e, j, (uint8_t)(1u << type), &chosen);
    return gp__place_find_unscored(e, j, type, use_held);
}

bool gp__place_find_unscored(gp_engine *e, const gp__job *j, int type, bool use_held)
{
    if (type < 0 || type >= e->fleet.n_types || !(j->type_mask & (1u << type)))
        return false;
    if (j->isolation == GP_ISO_MIG || j->isolation == GP_ISO_TIMESLICE)
        return gp__place_shared(e, j, type);
    if (j->gpus == 0)
        return place_cpu_only(e, j, type);
    gp__reservation *r = &e->reservation[type];
    bool unhold = use_held && r->active && r->job != (uint32_t)(j - e->jobs) &&
                  held_nodes_help(&e->fleet, r, j->gpus);
    if (unhold) { /* a short job may use held nodes: put them back for this look */
        e->stats.pass_held_looks++;
        for (size_t i = 0; i < r->n_nodes; i++)
            gp__node_hold(&e->fleet, r->nodes[i], false);
    }
    bool ok;
    switch (j->topology) {
    case GP_TOPO_BLOCK: ok = place_block(e, j, type); break;
    case GP_TOPO_NVLINK: ok = place_nvlink(e, j, type); break;
    default: ok = place_any(e, j, type); break;
    }
    if (unhold)
        for (size_t i = 0; i < r->n_nodes; i++)
            gp__node_hold(&e->fleet, r->nodes[i], true);
    return ok;
}

/* Whether shape s has a GPU of type t in the job's sharing mode (for MIG:
 * of a model that offers its profile). */
static bool sharing_mode_present(const gp__fleet_shape *s, const gp__job *j, int t)
{
    gp_sharing mode = j->isolation == GP_ISO_MIG   ? GP_SHARING_MIG
                      : j->isolation == GP_ISO_MPS ? GP_SHARING_MPS
                                                   : GP_SHARING_TIMESLICE;
    if (s->mode_gpus[t][mode] == 0)
        return false;
    if (mode != GP_SHARING_MIG)
        return true;
    for (int m = 0; m < 32; m++)
        if ((s->mig_models[t] >> m & 1u) && gp__mig_profile_find(m, j->mig_profile) >= 0)
            return true;
    return false;
}

gp_wait gp__place_possible(const gp_engine *e, const gp__job *j)
{
    return gp__place_possible_in(&e->fleet, &e->fleet.shape, j);
}

gp_wait gp__place_possible_in(const gp__fleet *fleet, const gp__fleet_shape *s, const gp__job *j)
{
    gp_wait w = {.code = GP_WAIT_NO_GPU_TYPE, .dim = -1, .tenant = GP__NONE};
    int64_t largest = 0, needed = (int64_t)j->replicas * j->gpus;
    for (int t = 0; t < fleet->n_types; t++) {
        if (!(j->type_mask & (1u << t)) || s->empty_replicas[t][1] == 0)
            continue;
        if (j->cpu > s->max_cpu[t] || j->mem > s->max_mem[t]) {
            if (w.code == GP_WAIT_NO_GPU_TYPE)
                w = (gp_wait){.code = GP_WAIT_NODE_SHAPE, .dim = t, .tenant = GP__NONE, .a = s->max_cpu[t],
                              .b = s->max_mem[t]};
            continue;
        }
        if (gp__job_shared(j)) { /* several replicas may share a GPU: the mode is what matters */
            if (sharing_mode_present(s, j, t)) {
                w.code = GP_WAIT_NONE;
                return w;
            }
            if (w.code == GP_WAIT_NO_GPU_TYPE)
                w = (gp_wait){.code = GP_WAIT_SHARING_MODE, .dim = t, .tenant = GP__NONE};
            continue;
        }
        int64_t have;
        switch (j->topology) {
        case GP_TOPO_BLOCK: have = s->empty_block_replicas[t][j->gpus] * j->gpus; break;
        case GP_TOPO_NVLINK: have = s->max_domain[t] >= needed ? needed : s->max_domain[t]; break;
        default: have = s->empty_replicas[t][j->gpus] * j->gpus; break;
        }
        if (have >= needed) {
            w.code = GP_WAIT_NONE;
            return w;
        }
        if (w.code != GP_WAIT_TOPOLOGY || have > largest)
            w = (gp_wait){.code = GP_WAIT_TOPOLOGY, .dim = t, .tenant = GP__NONE, .a = have, .b = needed};
        if (have > largest)
            largest = have;
    }
    return w;
}

/* CPU and memory of CPU-only replicas, on the nodes of their anchors. */
static void cpu_only_charge(gp_engine *e, const gp__job *j, int sign)
{
    for (int r = 0; r < j->replicas; r++) {
        uint32_t n = e->fleet.gpus[j->placed[r]].node;
        gp__node *node = &e->fleet.nodes[n];
        node->cpu_used += sign * j->cpu;
        node->mem_used += sign * j->mem;
        node->replicas = (uint32_t)((int64_t)node->replicas + sign);
        gp__node_dedicate(&e->fleet, n, j->ded_domain, sign);
        gp__node_touch(&e->fleet, n);
    }
}

void gp__place_commit(gp_engine *e, uint32_t job, int type)
{
    gp__job *j = &e->jobs[job];
    size_t n = (size_t)j->replicas * j->gpus;
    (void)type;
    j->ded_domain = e->tenants[j->tenant].ded_domain; /* counted on its nodes until it leaves them */
    gp__fence_note(e, job);
    if (gp__job_shared(j)) {
        gp__shared_take(e, job, true);
        return;
    }
    j->milli_total = (int64_t)n * 1000;
    if (j->gpus == 0) {
        cpu_only_charge(e, j, +1);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t g = j->placed[i];
        gp__gpu *gpu = &e->fleet.gpus[g];
        gp__node *node = &e->fleet.nodes[gpu->node];
        gpu->owner = job + 1;
        node->busy++;
        if (i % (size_t)j->gpus == 0) {
            node->cpu_used += j->cpu;
            node->mem_used += j->mem;
            node->replicas++;
            gp__node_dedicate(&e->fleet, gpu->node, j->ded_domain, +1);
        }
        if (i + 1 == n || e->fleet.gpus[j->placed[i + 1]].node != gpu->node)
            gp__node_reindex(&e->fleet, gpu->node);
    }
}

void gp__place_release(gp_engine *e, uint32_t job)
{
    gp__job *j = &e->jobs[job];
    if (!j->placed)
        return;
    size_t n = (size_t)j->replicas * j->gpus;
    if (gp__job_shared(j))
        gp__shared_give(e, job);
    else if (j->gpus == 0)
        cpu_only_charge(e, j, -1);
    for (size_t i = 0; !gp__job_shared(j) && i < n; i++) {
        gp__gpu *gpu = &e->fleet.gpus[j->placed[i]];
        gp__node *node = &e->fleet.nodes[gpu->node];
        gpu->owner = 0;
        node->busy--;
        if (i % (size_t)j->gpus == 0) {
            node->cpu_used -= j->cpu;
            node->mem_used -= j->mem;
            node->replicas--;
            gp__node_dedicate(&e->fleet, gpu->node, j->ded_domain, -1);
        }
        if (i + 1 == n || e->fleet.gpus[j->placed[i + 1]].node != gpu->node) {
            gp__node_reindex(&e->fleet, gpu->node);
            gp__node_check_drained(e, gpu->node);
        }
    }
    if (gp__job_shared(j) || j->gpus == 0)
        for (int r = 0; r < j->replicas; r++)
            gp__node_check_drained(e, e->fleet.gpus[j->placed[r]].node);
    free(j->placed);
    free(j->slot);
    j->placed = NULL;
    j->slot = NULL;
}
