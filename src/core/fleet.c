/* fleet.c - nodes, GPUs and the free-capacity index placement reads.
 *
 * The fleet is zone -> fabric block -> node -> NVLink domain -> GPU.  Nodes
 * and GPUs live in flat arrays; node k owns GPUs gpu_first..gpu_first+n-1.
 *
 * The index.  Placement must answer "which nodes of type T have at least g
 * free GPUs" thousands of times per pass, so every schedulable node sits in
 * exactly one bucket list head[type][free] (free = healthy, unowned,
 * unclaimed GPUs; 0 = in no list), and hist[type][k] counts the nodes per
 * bucket, for the whole fleet and per fabric block.  With it,
 *   replicas of g GPUs that fit now = sum over k of hist[k] * (k / g)
 * is 16 additions (fewer: no more than free / g fit, so a short free count
 * answers "do r fit" at once, gp__replicas_fit), and best fit is "walk
 * the buckets from k = g upwards".
 * A node leaves the index while it is down, draining, or held for a
 * reservation (backfill.c).
 *
 * Who keeps it.  Per node: free (its free GPUs, 0 when down or draining),
 * withheld, its brief, and the bucket it sits in (indexed = free, or 0
 * while held); per type and per block: hist and free.  Whoever changes a
 * GPU (owner, claim, shares, health, mode) or a node's up or drain calls
 * gp__node_reindex, which recounts the node's GPUs and moves the node
 * (fleet.recounts counts these calls: reclaim.c keeps what it works out
 * from its candidates' GPUs while it stands still).  gp__node_hold changes the bucket only, from the
 * counts as they stand, and gp__node_to_front the place in the list.  The
 * invariants (invariants.c) recount every node and compare.
 *
 * Example: nodes a (8 free) and b (3 free) of type H100.  head[H100][8] = a,
 * head[H100][3] = b.  A 2-GPU job walks k = 2.. and lands on b (best fit),
 * which moves b to bucket 1; a stays whole for an 8-GPU job.
 *
 * The fleet events (node added, lost, drained; GPU health) are engine.c's:
 * this file validates them and keeps the books (capacity, the index);
 * stopping the jobs on a lost node or a failed GPU is decided there.
 *
 * Also fleet data, kept here: the pools (a node's placement score and
 * time-slice factor), the fullness levels of shared GPUs (the lists
 * sharing.c's best fit walks) and the undo log of a placement look (the
 * GPUs and nodes it changed).  A books file (internal.h, "Layers"): it calls no
 * policy file.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int64_t gp__replica_capacity(const uint32_t hist[GP_MAX_GPUS_PER_NODE + 1], int gpus)
{
    int64_t n = 0;
    for (int k = gpus; k <= GP_MAX_GPUS_PER_NODE; k++)
        n += (int64_t)hist[k] * (k / gpus);
    return n;
}

/* Each replica takes `gpus` of a node's free GPUs, so no more than
 * free / gpus replicas fit: with the fleet full (the usual case for a
 * waiting job) that one comparison answers, and otherwise the sum stops
 * as soon as enough replicas fit.  Same answer as the full sum. */
bool gp__replicas_fit(const uint32_t hist[GP_MAX_GPUS_PER_NODE + 1], int64_t free, int gpus, int replicas)
{
    if (free < (int64_t)gpus * replicas)
        return false;
    int64_t n = 0;
    for (int k = gpus; k <= GP_MAX_GPUS_PER_NODE; k++) {
        n += (int64_t)hist[k] * (k / gpus);
        if (n >= replicas)
            return true;
    }
    return false;
}

/* GPU model names match without regard to case ("h100" is the fleet's
 * "H100"): the first spelling registered is the one shown. */
int gp__fleet_type_find(const gp__fleet *f, const char *name)
{
    for (int t = 0; t < f->n_types; t++)
        if (strcasecmp(f->types[t], name) == 0)
            return t;
    return -1;
}

size_t gp__fleet_types_format(const gp__fleet *f, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < f->n_types && used < len; t++) {
        int n = snprintf(buf + used, len - used, "%s%s", t ? ", " : "", f->types[t]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return used < len ? used : len - 1;
}

int gp__fleet_type_intern(gp__fleet *f, const char *name)
{
    int t = gp__fleet_type_find(f, name);
    if (t >= 0 || f->n_types == GP_MAX_GPU_TYPES)
        return t;
    snprintf(f->types[f->n_types], GP_NAME_MAX, "%s", name);
    return f->n_types++;
}

static void index_remove(gp__fleet *f, uint32_t n)
{
    gp__node *node = &f->nodes[n];
    int k = node->indexed, t = node->type;
    if (k == 0)
        return;
    if (node->prev != GP__NONE)
        f->nodes[node->prev].next = node->next;
    else
        f->head[t][k] = node->next;
    if (node->next != GP__NONE)
        f->nodes[node->next].prev = node->prev;
    f->hist[t][k]--;
    f->free[t] -= k;
    f->moves++;
    gp__block *b = &f->blocks[node->block];
    b->hist[t][k]--;
    b->free[t] -= k;
    node->indexed = 0;
}

static void index_insert(gp__fleet *f, uint32_t n, int k)
{
    gp__node *node = &f->nodes[n];
    int t = node->type;
    node->indexed = (uint8_t)k;
    node->prev = GP__NONE;
    node->next = f->head[t][k];
    if (node->next != GP__NONE)
        f->nodes[node->next].prev = n;
    f->head[t][k] = n;
    f->hist[t][k]++;
    f->free[t] += k;
    f->moves++;
    gp__block *b = &f->blocks[node->block];
    b->hist[t][k]++;
    b->free[t] += k;
}

/* Unhealthy or claimed whole: its job's end gives it to no one. */
static bool gpu_withheld(const gp__gpu *g)
{
    return !g->healthy || g->claim != 0;
}

static uint8_t count_withheld(const gp__fleet *f, const gp__node *node)
{
    int k = 0;
    for (int i = 0; i < node->gpu_count; i++)
        k += gpu_withheld(&f->gpus[node->gpu_first + i]);
    return (uint8_t)k;
}

/* Put the node in the bucket its counts say (none while held) and refresh
 * its brief.  node->free must be current: every change of a GPU's state is
 * followed by gp__node_reindex, which recounts it first. */
static void node_reposition(gp__fleet *f, uint32_t n)
{
    gp__node *node = &f->nodes[n];
    f->brief[n] = gp__node_brief_of(node);
    int k = node->held || node->barred ? 0 : node->free;
    if (k == node->indexed)
        return;
    index_remove(f, n);
    if (k > 0)
        index_insert(f, n, k);
}

void gp__node_reindex(gp__fleet *f, uint32_t n)
{
    gp__node *node = &f->nodes[n];
    bool usable = node->up && !node->draining;
    int free = 0, withheld = 0;
    f->recounts++;
    gp__node_touch(f, n); /* owners, claims, health or drain may have changed */
    for (int i = 0; i < node->gpu_count; i++) { /* one read of each GPU for both counts */
        const gp__gpu *g = &f->gpus[node->gpu_first + i];
        free += usable && gp__gpu_is_free(g);
        withheld += gpu_withheld(g);
    }
    node->withheld = (uint8_t)withheld;
    node->free = (uint8_t)free;
    node_reposition(f, n);
}

void gp__node_to_front(gp__fleet *f, uint32_t n)
{
    int k = f->nodes[n].indexed;
    gp__node_touch(f, n);
    if (k == 0)
        return;
    index_remove(f, n);
    index_insert(f, n, k);
}

gp__node_brief gp__node_brief_of(const gp__node *node)
{
    return (gp__node_brief){node->block,
                            node->up && !node->draining && !node->barred ? (int16_t)node->free : (int16_t)-1,
                            node->withheld};
}

void gp__node_touch(gp__fleet *f, uint32_t node)
{
    f->nodes[node].stamp++;
    f->touched[node] = ++f->touch_seq;
}

/* Holding moves the node between its bucket and none; its GPUs and counts
 * stay as they are, so there is nothing to recount (the looks of
 * placement.c hold and put back a reservation's nodes around each short
 * job: issue 17, 12 % of the month's CPU as full recounts). */
void gp__node_hold(gp__fleet *f, uint32_t node, bool held)
{
    f->nodes[node].held = held;
    gp__node_touch(f, node);
    node_reposition(f, node);
}

void gp__node_bar(gp__fleet *f, uint32_t node, bool barred)
{
    f->nodes[node].barred = barred;
    gp__node_touch(f, node);
    node_reposition(f, node);
}

void gp__node_dedicate(gp__fleet *f, uint32_t node, uint32_t domain, int sign)
{
    gp__node *n = &f->nodes[node];
    if (domain == GP__NONE)
        return;
    n->ded_replicas = (uint32_t)((int64_t)n->ded_replicas + sign);
    n->ded_domain = n->ded_replicas > 0 ? domain : GP__NONE;
}

static int healthy_gpus(const gp__fleet *f, const gp__node *node, int domain)
{
    int n = 0, per = node->gpu_count / node->domains;
    for (int i = 0; i < node->gpu_count; i++)
        if ((domain < 0 || i / per == domain) && f->gpus[node->gpu_first + i].healthy)
            n++;
    return n;
}

/* Add (sign +1) or remove (-1) a node's share of the fleet's healthy
 * capacity; called around every change of the node's state. */
static void capacity_account(gp__fleet *f, const gp__node *node, int sign)
{
    if (!node->up)
        return;
    f->capacity.v[node->type] += sign * (int64_t)healthy_gpus(f, node, -1) * 1000;
    f->capacity.v[GP_DIM_CPU] += sign * node->cpu_cap;
    f->capacity.v[GP_DIM_MEM] += sign * node->mem_cap;
    f->capacity_version++;
}

/* GPUs of a node (of one NVLink domain when domain >= 0): the healthy
 * ones, or all of them when every is set. */
static int node_gpus(const gp__fleet *f, const gp__node *node, int domain, bool every)
{
    if (every)
        return domain < 0 ? node->gpu_count : node->gpu_count / node->domains;
    return healthy_gpus(f, node, domain);
}

/* GPUs of a node by sharing mode (and MIG model): the healthy ones, or
 * all of them when every is set. */
static void count_modes(const gp__fleet *f, const gp__node *node, bool every, gp__fleet_shape *s)
{
    for (uint32_t g = node->gpu_first; g < node->gpu_first + node->gpu_count; g++) {
        const gp__gpu *gpu = &f->gpus[g];
        if (!gpu->healthy && !every)
            continue;
        s->mode_gpus[node->type][gpu->sharing]++;
        if (gpu->sharing == GP_SHARING_MIG && gpu->mig_model >= 0)
            s->mig_models[node->type] |= 1u << gpu->mig_model;
    }
}

/* Count a shape (gp__fleet_shape): of the healthy schedulable nodes, or of every
 * registered node and GPU when every is set.  O(nodes); false when out of
 * memory (the block tables are then left short). */
static bool shape_count(const gp__fleet *f, bool every, gp__fleet_shape *s)
{
    memset(s, 0, sizeof *s);
    int64_t *per_block = calloc(f->n_blocks ? f->n_blocks : 1,
                                sizeof(int64_t) * GP_MAX_GPU_TYPES * (GP_MAX_GPUS_PER_NODE + 1));
    for (size_t n = 0; n < f->n_nodes; n++) {
        const gp__node *node = &f->nodes[n];
        int gpus = node_gpus(f, node, -1, every);
        if (!every && (!node->up || node->draining || gpus == 0))
            continue;
        if (node->cpu_cap > s->max_cpu[node->type])
            s->max_cpu[node->type] = node->cpu_cap;
        if (node->mem_cap > s->max_mem[node->type])
            s->max_mem[node->type] = node->mem_cap;
        count_modes(f, node, every, s);
        for (int d = 0; d < node->domains; d++) {
            int h = node_gpus(f, node, d, every);
            if (h > s->max_domain[node->type])
                s->max_domain[node->type] = h;
        }
        for (int g = 1; g <= GP_MAX_GPUS_PER_NODE; g++) {
            s->empty_replicas[node->type][g] += gpus / g;
            if (per_block)
                per_block[((size_t)node->block * GP_MAX_GPU_TYPES + node->type) * (GP_MAX_GPUS_PER_NODE + 1) + g] +=
                    gpus / g;
        }
    }
    for (size_t b = 0; per_block && b < f->n_blocks; b++)
        for (int t = 0; t < GP_MAX_GPU_TYPES; t++)
            for (int g = 1; g <= GP_MAX_GPUS_PER_NODE; g++) {
                int64_t v = per_block[(b * GP_MAX_GPU_TYPES + t) * (GP_MAX_GPUS_PER_NODE + 1) + g];
                if (v > s->empty_block_replicas[t][g])
                    s->empty_block_replicas[t][g] = v;
            }
    bool counted = per_block != NULL;
    free(per_block);
    return counted;
}

/* Recompute the "if it were empty" shape after a change (node up/down/
 * drain, GPU health).  O(nodes), so changes only mark the fleet dirty and
 * the next pass recounts once. */
void gp__fleet_recount(gp__fleet *f)
{
    if (!f->shape_dirty)
        return;
    f->shape_dirty = false;
    if (++f->shape_count == 0) /* 0 is every job's "not known" */
        f->shape_count = 1;
    if (!shape_count(f, false, &f->shape))
        f->shape_dirty = true; /* try again next time */
}

bool gp__fleet_registered_shape(const gp__fleet *f, gp__fleet_shape *out)
{
    return shape_count(f, true, out);
}

static gp_err check_name(const char *s, const char *field, gp_error *err)
{
    if (s == NULL || s[0] == '\0')
        return gp_error_set(err, GP_ERR_INVALID, field, "%s is required", field);
    size_t len = strlen(s);
    if (len >= GP_NAME_MAX)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s is longer than %d characters", field, GP_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '/' || c >= 0x7f)
            return gp_error_set(err, GP_ERR_INVALID, field,
                                "%s may hold only printable ASCII without spaces or '/'", field);
    }
    return GP_OK;
}

static gp_err check_node_spec(const gp_node_spec *s, gp_error *err)
{
    gp_err rc;
    if (s == NULL)
        return gp_error_set(err, GP_ERR_INVALID, "node", "node spec is required");
    if ((rc = check_name(s->name, "name", err)) || (rc = check_name(s->zone, "zone", err)) ||
        (rc = check_name(s->block, "block", err)) || (rc = check_name(s->gpu_type, "gpu_type", err)))
        return rc;
    if (s->gpu_count < 1 || s->gpu_count > GP_MAX_GPUS_PER_NODE)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_count", "gpu_count must be 1..%d, got %d",
                            GP_MAX_GPUS_PER_NODE, s->gpu_count);
    if (s->nvlink_domains < 1 || s->nvlink_domains > s->gpu_count || s->gpu_count % s->nvlink_domains != 0)
        return gp_error_set(err, GP_ERR_INVALID, "nvlink_domains",
                            "nvlink_domains must be >= 1 and divide gpu_count (%d), got %d", s->gpu_count,
                            s->nvlink_domains);
    if (s->gpu_mem_mib < 0 || s->cpu_millis < 0 || s->mem_mib < 0)
        return gp_error_set(err, GP_ERR_INVALID, s->cpu_millis < 0 ? "cpu_millis" : s->mem_mib < 0 ? "mem_mib" : "gpu_mem_mib",
                            "node resources must not be negative");
    for (int i = 0; i < s->gpu_count; i++) {
        gp_sharing m = s->gpu_sharing ? s->gpu_sharing[i] : s->sharing;
        if (m < GP_SHARING_EXCLUSIVE || m > GP_SHARING_TIMESLICE)
            return gp_error_set(err, GP_ERR_INVALID, "sharing", "sharing must be exclusive, mig, mps or timeslice");
        if (m == GP_SHARING_MIG && gp__mig_model_find(s->gpu_type, s->gpu_mem_mib) < 0)
            return gp_error_set(err, GP_ERR_INVALID, "sharing",
                                "%s with %lld MiB has no MIG geometry gpupool knows (%s)", s->gpu_type,
                                (long long)s->gpu_mem_mib, gp__mig_models_known());
    }
    if (s->pool && (s->pool[0] == '\0' || strlen(s->pool) >= GP_NAME_MAX))
        return gp_error_set(err, GP_ERR_INVALID, "pool", "pool must be 1..%d characters", GP_NAME_MAX - 1);
    for (int i = 0; s->gpu_uuids && i < s->gpu_count; i++)
        if (s->gpu_uuids[i] == NULL || strlen(s->gpu_uuids[i]) >= GP_UUID_MAX)
            return gp_error_set(err, GP_ERR_INVALID, "gpu_uuids", "GPU %d has no UUID or one over %d characters",
                                i, GP_UUID_MAX - 1);
    return GP_OK;
}

static bool same_shape(const gp__fleet *f, const gp__node *n, const gp_node_spec *s)
{
    for (int i = 0; i < n->gpu_count; i++)
        if (f->gpus[n->gpu_first + i].sharing != (s->gpu_sharing ? s->gpu_sharing[i] : s->sharing))
            return false;
    return n->gpu_count == s->gpu_count && n->domains == s->nvlink_domains &&
           strcasecmp(f->types[n->type], s->gpu_type) == 0 && strcmp(f->blocks[n->block].name, s->block) == 0 &&
           strcmp(f->zones[n->zone], s->zone) == 0;
}

static uint32_t zone_get(gp__fleet *f, const char *name)
{
    for (size_t z = 0; z < f->n_zones; z++)
        if (strcmp(f->zones[z], name) == 0)
            return (uint32_t)z;
    if (!GP__GROW(f->zones, f->n_zones, f->cap_zones))
        return GP__NONE;
    snprintf(f->zones[f->n_zones], GP_NAME_MAX, "%s", name);
    return (uint32_t)f->n_zones++;
}

static gp_err block_get(gp__fleet *f, const char *name, uint32_t zone, uint32_t *out, gp_error *err)
{
    uint32_t b;
    if (gp_strmap_get(&f->block_by_name, name, &b)) {
        if (f->blocks[b].zone != zone)
            return gp_error_set(err, GP_ERR_INVALID, "zone", "block %s is in zone %s, not %s", name,
                                f->zones[f->blocks[b].zone], f->zones[zone]);
        *out = b;
        return GP_OK;
    }
    if (!GP__GROW(f->blocks, f->n_blocks, f->cap_blocks) ||
        !gp_strmap_put(&f->block_by_name, name, (uint32_t)f->n_blocks))
        return gp_error_set(err, GP_ERR_NOMEM, "block", "out of memory");
    gp__block *blk = &f->blocks[f->n_blocks];
    memset(blk, 0, sizeof *blk);
    snprintf(blk->name, sizeof blk->name, "%s", name);
    blk->zone = zone;
    *out = (uint32_t)f->n_blocks++;
    return GP_OK;
}

static gp_err node_create(gp_engine *e, const gp_node_spec *s, gp_error *err)
{
    gp__fleet *f = &e->fleet;
    int type = gp__fleet_type_find(f, s->gpu_type);
    if (type < 0) {
        if (f->n_types == GP_MAX_GPU_TYPES)
            return gp_error_set(err, GP_ERR_INVALID, "gpu_type", "a fleet holds at most %d GPU types; %s is one more",
                                GP_MAX_GPU_TYPES, s->gpu_type);
        type = f->n_types;
    }
    uint32_t zone = zone_get(f, s->zone), block = 0;
    if (zone == GP__NONE)
        return gp_error_set(err, GP_ERR_NOMEM, "zone", "out of memory");
    gp_err rc = block_get(f, s->block, zone, &block, err);
    if (rc)
        return rc;
    gp__block *b = &f->blocks[block];
    if (!GP__GROW(f->nodes, f->n_nodes, f->cap_nodes) || !GP__GROW(b->nodes, b->n_nodes, b->cap_nodes) ||
        !gp__grow((void **)&f->gpus, &f->cap_gpus, f->n_gpus + (size_t)s->gpu_count, sizeof *f->gpus) ||
        !GP__GROW(f->type_nodes[type], f->n_type_nodes[type], f->cap_type_nodes[type]) ||
        !GP__GROW(f->touched, f->n_nodes, f->cap_touched) || !GP__GROW(f->brief, f->n_nodes, f->cap_brief) ||
        !gp__grow((void **)&f->gpu_node, &f->cap_gpu_node, f->n_gpus + (size_t)s->gpu_count, sizeof *f->gpu_node) ||
        !gp_strmap_put(&f->node_by_name, s->name, (uint32_t)f->n_nodes) ||
        !gp__scratch_reserve(e, f->n_gpus + (size_t)s->gpu_count))
        return gp_error_set(err, GP_ERR_NOMEM, "name", "out of memory");
    uint32_t pool = gp__pool_get(e, s->pool);
    if (pool == GP__NONE)
        return gp_error_set(err, GP_ERR_NOMEM, "pool", "out of memory");
    if (type == f->n_types)
        snprintf(f->types[f->n_types++], GP_NAME_MAX, "%s", s->gpu_type);
    uint32_t n = (uint32_t)f->n_nodes++;
    gp__node *node = &f->nodes[n];
    memset(node, 0, sizeof *node);
    snprintf(node->name, sizeof node->name, "%s", s->name);
    node->zone = zone;
    node->block = block;
    node->type = (uint8_t)type;
    node->gpu_count = (uint8_t)s->gpu_count;
    node->domains = (uint8_t)s->nvlink_domains;
    node->gpu_first = (uint32_t)f->n_gpus;
    node->gpu_mem_mib = s->gpu_mem_mib;
    node->cpu_cap = s->cpu_millis;
    node->mem_cap = s->mem_mib;
    node->prev = node->next = GP__NONE;
    node->ded_domain = GP__NONE;
    node->pool = (uint16_t)pool;
    b->nodes[b->n_nodes++] = n;
    f->type_nodes[type][f->n_type_nodes[type]++] = n;
    bool mps = false;
    for (int i = 0; i < s->gpu_count; i++)
        mps |= (s->gpu_sharing ? s->gpu_sharing[i] : s->sharing) == GP_SHARING_MPS;
    if (mps && gp__grow((void **)&f->mps_nodes[type], &f->cap_mps_nodes[type], f->n_mps_nodes[type] + 1,
                        sizeof *f->mps_nodes[type]))
        f->mps_nodes[type][f->n_mps_nodes[type]++] = n;
    int per = s->gpu_count / s->nvlink_domains;
    for (int i = 0; i < s->gpu_count; i++) {
        f->gpu_node[f->n_gpus] = n;
        gp__gpu *g = &f->gpus[f->n_gpus++];
        memset(g, 0, sizeof *g);
        g->node = n;
        g->index = (uint8_t)i;
        g->nvlink = (uint8_t)(i / per);
        g->healthy = true;
        g->sharing = (uint8_t)(s->gpu_sharing ? s->gpu_sharing[i] : s->sharing);
        g->trust = GP__NONE;
        g->reconfigured_at = -1;
        g->mig_model = (int8_t)(g->sharing == GP_SHARING_MIG ? gp__mig_model_find(s->gpu_type, s->gpu_mem_mib) : -1);
        if (g->sharing != GP_SHARING_EXCLUSIVE) {
            g->level = 9; /* in no list yet */
            gp__gpu_relevel(f, (uint32_t)(f->n_gpus - 1));
        }
        if (s->gpu_uuids)
            snprintf(g->uuid, sizeof g->uuid, "%s", s->gpu_uuids[i]);
        else
            snprintf(g->uuid, sizeof g->uuid, "%.40s/%d", s->name, i);
    }
    return GP_OK;
}

/* A node registers (first time: created) or comes back; *up tells whether
 * it came up (false for a live node registering again, where nothing
 * changes).  Only fleet bookkeeping: engine.c owns the event. */
gp_err gp__fleet_node_add(gp_engine *e, const gp_node_spec *spec, bool *up, gp_error *err)
{
    gp_err rc;
    *up = false;
    if ((rc = check_node_spec(spec, err)))
        return rc;
    gp__fleet *f = &e->fleet;
    uint32_t n;
    if (gp_strmap_get(&f->node_by_name, spec->name, &n)) {
        if (!same_shape(f, &f->nodes[n], spec))
            return gp_error_set(err, GP_ERR_EXISTS, "name",
                                "node %s is already registered with another shape (type, GPUs, block or zone)",
                                spec->name);
        if (f->nodes[n].up)
            return GP_OK; /* re-registration of a live node: nothing changes */
    } else {
        if ((rc = node_create(e, spec, err)))
            return rc;
        n = (uint32_t)f->n_nodes - 1;
    }
    *up = true;
    gp__node *node = &f->nodes[n];
    node->up = true;
    node->cpu_cap = spec->cpu_millis;
    node->mem_cap = spec->mem_mib;
    gp__node_touch(f, n);
    capacity_account(f, node, +1);
    gp__node_reindex(f, n);
    f->shape_dirty = true;
    return GP_OK;
}

gp_err gp__node_event(gp_engine *e, const char *name, int64_t now, uint32_t *n, gp_error *err)
{
    if (!e)
        return gp_error_set(err, GP_ERR_INVALID, "engine", "engine is NULL");
    if (name == NULL || !gp_strmap_get(&e->fleet.node_by_name, name, n))
        return gp_error_set(err, GP_ERR_NOT_FOUND, "node", "no node named %s", name ? name : "(null)");
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards");
    e->now = now;
    return GP_OK;
}

bool gp__fleet_node_down(gp__fleet *f, uint32_t n)
{
    gp__node *node = &f->nodes[n];
    if (!node->up)
        return false;
    capacity_account(f, node, -1);
    node->up = false;
    gp__node_touch(f, n);
    f->brief[n] = gp__node_brief_of(node);
    return true;
}

bool gp__fleet_gpu_health(gp__fleet *f, uint32_t n, int gpu_index, bool healthy)
{
    gp__node *node = &f->nodes[n];
    gp__gpu *g = &f->gpus[node->gpu_first + gpu_index];
    if (g->healthy == healthy)
        return false;
    capacity_account(f, node, -1);
    g->healthy = healthy;
    capacity_account(f, node, +1);
    gp__node_touch(f, n);
    node->withheld = count_withheld(f, node);
    f->brief[n] = gp__node_brief_of(node);
    return true;
}

void gp__fleet_node_settle(gp__fleet *f, uint32_t n)
{
    gp__node_reindex(f, n);
    f->shape_dirty = true;
}

void gp__fleet_node_drain(gp_engine *e, uint32_t n, bool drain)
{
    gp__node *node = &e->fleet.nodes[n];
    if (node->draining == drain)
        return;
    node->draining = drain;
    node->drained_reported = false;
    gp__node_touch(&e->fleet, n);
    gp__fleet_node_settle(&e->fleet, n);
    gp__node_check_drained(e, n);
}

void gp__node_check_drained(gp_engine *e, uint32_t n)
{
    gp__node *node = &e->fleet.nodes[n];
    if (!node->draining || node->drained_reported || node->replicas > 0)
        return;
    node->drained_reported = true;
    gp_decision *d = gp__decision_push(e, GP_DEC_DRAINED, 0);
    if (d)
        snprintf(d->node, sizeof d->node, "%s", node->name);
}

void gp__fleet_free(gp__fleet *f)
{
    for (size_t b = 0; b < f->n_blocks; b++)
        free(f->blocks[b].nodes);
    free(f->blocks);
    free(f->nodes);
    free(f->gpus);
    free(f->zones);
    free(f->pools);
    free(f->touched);
    free(f->brief);
    free(f->gpu_node);
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++) {
        free(f->mps_nodes[t]);
        free(f->type_nodes[t]);
    }
    gp_strmap_free(&f->node_by_name);
    gp_strmap_free(&f->block_by_name);
}

void gp__fleet_init(gp__fleet *f)
{
    memset(f, 0, sizeof *f);
    f->shape_count = 1; /* above every job's possible_shape of 0 */
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++) {
        for (int k = 0; k <= GP_MAX_GPUS_PER_NODE; k++)
            f->head[t][k] = GP__NONE;
        for (int m = 0; m < 4; m++)
            for (int l = 0; l < 9; l++)
                f->level_head[m][t][l] = GP__NONE;
    }
}

/* ---- pools ----
 * A node's pool: its placement score and time-slice factor (pool 0 is
 * "default").  gp_engine_pool_set (engine.c) sets one with gp__pool_set. */

uint32_t gp__pool_get(gp_engine *e, const char *name)
{
    gp__fleet *f = &e->fleet;
    if (!name || !name[0])
        name = "default";
    for (size_t p = 0; p < f->n_pools; p++)
        if (strcmp(f->pools[p].name, name) == 0)
            return (uint32_t)p;
    if (!GP__GROW(f->pools, f->n_pools, f->cap_pools))
        return GP__NONE;
    gp__pool *p = &f->pools[f->n_pools];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->spec.timeslice_replicas = 4;
    p->owner = GP__NONE;
    return (uint32_t)f->n_pools++;
}

int gp__pool_timeslice(const gp_engine *e, uint32_t pool)
{
    return pool < e->fleet.n_pools ? e->fleet.pools[pool].spec.timeslice_replicas : 4;
}

/* Whether a GPU of pool p holds time-slice replicas (their share depends
 * on the pool's factor, so it may not change under them). */
static bool timeslice_in_use(const gp_engine *e, uint32_t p)
{
    for (size_t g = 0; g < e->fleet.n_gpus; g++) {
        const gp__gpu *gpu = &e->fleet.gpus[g];
        if (gpu->sharing == GP_SHARING_TIMESLICE && gpu->jobs > 0 && e->fleet.nodes[gpu->node].pool == p)
            return true;
    }
    return false;
}

gp_err gp__pool_set(gp_engine *e, const char *pool, const gp_pool_spec *spec, gp_error *err)
{
    if (!e || !spec)
        return gp_error_set(err, GP_ERR_INVALID, "pool", "engine and spec are required");
    if (!pool || !pool[0] || strlen(pool) >= GP_NAME_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "pool", "pool name must be 1..%d characters", GP_NAME_MAX - 1);
    if (spec->score < GP_SCORE_DEFAULT || spec->score > GP_SCORE_SPREAD)
        return gp_error_set(err, GP_ERR_INVALID, "score", "unknown placement score");
    if (spec->timeslice_replicas < 0 || spec->timeslice_replicas > 8)
        return gp_error_set(err, GP_ERR_INVALID, "timeslice_replicas", "timeslice_replicas must be 1..8 (0 = 4)");
    uint32_t p = gp__pool_get(e, pool);
    if (p == GP__NONE)
        return gp_error_set(err, GP_ERR_NOMEM, "pool", "out of memory");
    gp__pool *pl = &e->fleet.pools[p];
    int factor = spec->timeslice_replicas ? spec->timeslice_replicas : 4;
    if (factor != pl->spec.timeslice_replicas && timeslice_in_use(e, p))
        return gp_error_set(err, GP_ERR_CONFLICT, "timeslice_replicas",
                            "pool %s has time-sliced replicas running; change the factor once they are gone", pool);
    pl->spec = *spec;
    if (pl->spec.timeslice_replicas == 0)
        pl->spec.timeslice_replicas = 4;
    e->fleet.all_paper_scores = e->fleet.all_spread = true;
    for (size_t i = 0; i < e->fleet.n_pools; i++) {
        e->fleet.all_paper_scores &= e->fleet.pools[i].spec.score != GP_SCORE_DEFAULT;
        e->fleet.all_spread &= e->fleet.pools[i].spec.score == GP_SCORE_SPREAD;
    }
    return GP_OK;
}

/* ---- tentative changes ----
 * The undo log of a placement look (sharing.c, fragmentation.c): the GPUs
 * and nodes it changes, saved in e->scratch before the change. */

void gp__tx_save_gpu(gp_engine *e, uint32_t gpu)
{
    gp__scratch *s = &e->scratch;
    for (size_t i = 0; i < s->n_saved_gpus; i++)
        if (s->saved_gpus[i].index == gpu)
            return; /* the first copy is the one to restore */
    if (!GP__GROW(s->saved_gpus, s->n_saved_gpus, s->cap_saved_gpus))
        return;
    s->saved_gpus[s->n_saved_gpus++] = (struct gp__saved_gpu){gpu, e->fleet.gpus[gpu]};
}

void gp__tx_save_node(gp_engine *e, uint32_t node)
{
    gp__scratch *s = &e->scratch;
    for (size_t i = 0; i < s->n_saved_nodes; i++)
        if (s->saved_nodes[i].index == node)
            return;
    if (!GP__GROW(s->saved_nodes, s->n_saved_nodes, s->cap_saved_nodes))
        return;
    const gp__node *n = &e->fleet.nodes[node];
    s->saved_nodes[s->n_saved_nodes++] =
        (struct gp__saved_node){node, n->cpu_used, n->mem_used, n->replicas, n->ded_domain, n->ded_replicas};
}

/* Undo the tentative changes of a placement look.  Only fields that a look
 * changes are saved: a GPU whole, a node's CPU, memory and replica count
 * (a look never moves nodes in the free-capacity index). */
void gp__tx_rollback(gp_engine *e)
{
    gp__scratch *s = &e->scratch;
    for (size_t i = s->n_saved_gpus; i-- > 0;) {
        gp__gpu *g = &e->fleet.gpus[s->saved_gpus[i].index];
        *g = s->saved_gpus[i].copy;
        gp__node_touch(&e->fleet, g->node); /* scores remembered meanwhile are stale */
    }
    for (size_t i = s->n_saved_nodes; i-- > 0;) {
        gp__node *n = &e->fleet.nodes[s->saved_nodes[i].index];
        gp__node_touch(&e->fleet, s->saved_nodes[i].index);
        n->cpu_used = s->saved_nodes[i].cpu_used;
        n->mem_used = s->saved_nodes[i].mem_used;
        n->replicas = s->saved_nodes[i].replicas;
        n->ded_domain = s->saved_nodes[i].ded_domain;
        n->ded_replicas = s->saved_nodes[i].ded_replicas;
    }
    s->n_saved_gpus = s->n_saved_nodes = 0;
}

/* ---- fullness levels ----
 * Shared GPUs per mode and type by fullness (fleet.level_head), the lists
 * sharing.c walks for best fit. */

/* Claims count as taken: a claimed GPU is as full as it will be. */
static int level_of(const gp__gpu *g)
{
    int jobs = g->jobs + g->claim_jobs, milli = g->used_milli + g->claim_milli - g->cover_milli;
    switch (g->sharing) {
    case GP_SHARING_MIG: return __builtin_popcount(gp__mig_mask(g, true) | g->claim_mig);
    case GP_SHARING_TIMESLICE: return jobs > 8 ? 8 : jobs;
    default: return milli / 125 > 8 ? 8 : milli / 125;
    }
}

void gp__gpu_relevel(gp__fleet *f, uint32_t gi)
{
    gp__gpu *g = &f->gpus[gi];
    int type = f->nodes[g->node].type, level = level_of(g);
    uint32_t *heads = f->level_head[g->sharing][type];
    if (g->level == level)
        return;
    if (g->level <= 8) { /* unlink */
        if (g->lprev != GP__NONE)
            f->gpus[g->lprev].lnext = g->lnext;
        else
            heads[g->level] = g->lnext;
        if (g->lnext != GP__NONE)
            f->gpus[g->lnext].lprev = g->lprev;
    }
    g->level = (uint8_t)level;
    g->lprev = GP__NONE;
    g->lnext = heads[level];
    if (g->lnext != GP__NONE)
        f->gpus[g->lnext].lprev = gi;
    heads[level] = gi;
}
