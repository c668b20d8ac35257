/* fragmentation.c - placing by node score: FGD and the policies it is
 * compared with.
 *
 * The measure (Weng et al., "Beware of Fragmentation: Scheduling
 * GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX
 * ATC'23).  Take the workload mix M: task shapes m (CPU, number of GPUs,
 * milli-GPUs per GPU, accepted types) with frequencies p_m.  For a node n
 * with free GPU capacity left_g on each GPU g, the capacity task m could
 * not use is
 *
 *   F_n(m) = sum of left_g over the GPUs with left_g < m.milli
 *                        if m fits on n (enough such GPUs, CPU, type);
 *          = sum of all left_g   otherwise (CPU-only shapes count their
 *                        node's whole free GPU capacity either way);
 *
 * and F_n(M) = sum_m p_m F_n(m).  The fleet's fragmentation is the sum over
 * nodes.  FGD places each task where F grows least.  M is made of the
 * most frequent shapes that together make up 95 % of the caller's mix
 * (gp_engine_workload_set) or, by default, of the jobs submitted so far
 * (the paper's "typical pods").
 *
 * Example: M = {1 GPU: 50 %, 0.5 GPU: 50 %}; node a has GPUs left
 * (1000, 600), node b (1000, 1000).  A 0.5-GPU task: on a's 600-GPU the
 * rest is 100 < 500, a fragment for both shapes: F_a goes from 0.5 x 600
 * = 300 to 0.5 x 100 + 0.5 x 100 = 100 (down 200); on b it would create a
 * 500 that the 1-GPU shape cannot use (up 250).  FGD puts it on a.
 *
 * Scores (gp_pool_spec.score; higher is better):
 *   fgd         sigmoid(-dF / 1000) x 100 truncated to an integer, as the
 *               paper's plugin: a band about 40 milli-GPUs wide near dF = 0;
 *   bestfit     the paper's BestFit: 100 x (1 - (cpu left/max + gpu left/max)/2);
 *   spread      its opposite (worst fit);
 *   packing     the paper's GpuPacking: shared GPUs first, then used nodes;
 *   clustering  the paper's GpuClustering: nodes hosting the same kind of
 *               task (same accepted types and whole/share) first;
 *   dotprod     Tetris' alignment of free resources with the request,
 *               normalised per node (a simplification of the paper's);
 *   random      any node that fits, a fresh draw for every task;
 *   default     gpupool's: FGD (below: which jobs it places).  Variants
 *               tried on the openb traces (ties to the fuller node, to the
 *               node with fewest free GPUs, to the best fit of CPU and
 *               GPU, the exact dF) came within 0.3 points of it either
 *               way, none above it on every trace.
 *
 * Ties go to a fixed node order drawn once from the pool's seed.  The
 * paper's simulator numbers its nodes by a permutation drawn once per run,
 * and only a fixed order reproduces its results.  It matters: equal scores
 * broken by a fresh draw per task spread small tasks over every node,
 * while a fixed order packs them onto the same nodes and keeps the others
 * whole.  On the openb default trace the same FGD scores allocate
 * 95.13 % at 100 % load with a fixed order and 90.01 % with a fresh draw
 * per task (bench/fgd/run at commits 35687e6 and 73c340d; the paper
 * reports 95.23 %).  The order is a hash of the seed and the
 * node, so a look that places nothing leaves no trace (the daemon's log
 * replay must reproduce every choice).
 *
 * Which jobs are placed by score: MPS shares always; whole-GPU and
 * CPU-only jobs when every pool uses one of the paper's scores, or when
 * every node of the GPU models they accept shares its GPUs by MPS (then a
 * whole-GPU job takes a GPU the shares could have used, and the measure
 * decides which one costs least).  Other whole-GPU jobs go through the
 * topology-aware best fit of placement.c; MIG and time-slicing through
 * sharing.c.
 */
#include "core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct node_view {
    int type;
    int64_t cpu_left;
    int n;
    int left[GP_MAX_GPUS_PER_NODE]; /* milli-GPUs left per GPU */
} node_view;

int gp__job_tag(const gp__job *j)
{
    return (j->type_mask * 7 + (gp__job_shared(j) ? 3 : 0)) % GP__TAGS;
}

void gp__node_tag(gp_engine *e, const gp__job *j, int sign)
{
    if (!j->placed || (j->gpus == 0 && !gp__job_shared(j)))
        return;
    int tag = gp__job_tag(j);
    size_t stride = gp__job_shared(j) ? 1 : (size_t)j->gpus;
    for (int r = 0; r < j->replicas; r++) {
        gp__node *n = &e->fleet.nodes[e->fleet.gpus[j->placed[(size_t)r * stride]].node];
        n->tag_count[tag] = (uint16_t)(n->tag_count[tag] + sign);
    }
}

/* ---- the workload mix ---- */

static void mix_typical(gp__mix *m)
{
    double total = 0;
    uint32_t order[GP__MIX_MAX];
    for (size_t i = 0; i < m->n; i++) {
        total += m->shapes[i].weight;
        order[i] = (uint32_t)i;
    }
    for (size_t a = 1; a < m->n; a++) /* most frequent first (stable) */
        for (size_t b = a; b > 0 && m->shapes[order[b]].weight > m->shapes[order[b - 1]].weight; b--) {
            uint32_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    double cum = 0;
    m->n_typical = 0;
    for (size_t i = 0; i < m->n && cum < 0.95 * total; i++) {
        m->typical[m->n_typical++] = m->shapes[order[i]];
        cum += m->shapes[order[i]].weight;
    }
    for (size_t i = 0; i < m->n_typical && cum > 0; i++)
        m->typical[i].weight /= cum;
    m->dirty = false;
    m->version++;
}

static bool shape_equal(const gp__shape *a, const gp__shape *b)
{
    return a->cpu == b->cpu && a->gpus == b->gpus && a->milli == b->milli && a->type_mask == b->type_mask;
}

/* The learned mix counts every job; its typical shapes are recomputed each
 * time the count has grown by 1 % (every job while there are fewer than
 * 100), so the measure holds still between refreshes and node scores can
 * be remembered (see "remembered scores" below). */
void gp__workload_observe(gp_engine *e, const gp__job *j)
{
    gp__mix *m = &e->mix;
    if (m->fixed || j->isolation == GP_ISO_MIG || j->isolation == GP_ISO_TIMESLICE)
        return;
    gp__shape s = {.cpu = j->cpu,
                   .gpus = j->isolation == GP_ISO_MPS ? 1 : j->gpus,
                   .milli = j->isolation == GP_ISO_MPS ? j->mps_milli : (j->gpus ? 1000 : 0),
                   .type_mask = j->type_mask,
                   .weight = 1};
    size_t i = 0;
    while (i < m->n && !shape_equal(&m->shapes[i], &s))
        i++;
    if (i < m->n)
        m->shapes[i].weight += 1;
    else if (m->n < GP__MIX_MAX) /* past that, new shapes are rare ones: ignored */
        m->shapes[m->n++] = s;
    else
        return;
    if (++m->observed >= m->refresh_at) {
        m->dirty = true;
        m->refresh_at = m->observed + (m->observed / 100 > 1 ? m->observed / 100 : 1);
    }
}

gp_err gp_engine_workload_set(gp_engine *e, const gp_workload_shape *shapes, size_t n, gp_error *err)
{
    if (!e || (n > 0 && !shapes))
        return gp_error_set(err, GP_ERR_INVALID, "shapes", "shapes are required");
    if (n > GP__MIX_MAX)
        return gp_error_set(err, GP_ERR_INVALID, "shapes", "at most %d shapes", GP__MIX_MAX);
    for (size_t i = 0; i < n; i++) {
        const gp_workload_shape *s = &shapes[i];
        if (s->cpu_millis < 0 || s->gpus < 0 || s->gpus > GP_MAX_GPUS_PER_NODE || s->milli < 0 || s->milli > 1000 ||
            (s->gpus > 0) != (s->milli > 0) || !(s->weight > 0) || s->n_gpu_types < 0 ||
            s->n_gpu_types > GP_MAX_GPU_TYPES)
            return gp_error_set(err, GP_ERR_INVALID, "shapes", "shape %zu is out of range", i);
    }
    int unknown = 0; /* type names are checked before anything changes */
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < shapes[i].n_gpu_types; t++) {
            const char *name = shapes[i].gpu_types[t];
            if (!name || !name[0] || strlen(name) >= GP_NAME_MAX)
                return gp_error_set(err, GP_ERR_INVALID, "shapes", "shape %zu has an empty GPU type", i);
            unknown += gp__fleet_type_find(&e->fleet, name) < 0;
        }
    if (e->fleet.n_types + unknown > GP_MAX_GPU_TYPES)
        return gp_error_set(err, GP_ERR_INVALID, "shapes", "the shapes name more GPU types than a fleet holds (%d)",
                            GP_MAX_GPU_TYPES);
    gp__mix *m = &e->mix;
    m->n = 0;
    m->fixed = n > 0;
    m->observed = m->refresh_at = 0;
    for (size_t i = 0; i < n; i++) {
        const gp_workload_shape *s = &shapes[i];
        uint8_t mask = s->n_gpu_types ? 0 : 0xff;
        for (int t = 0; t < s->n_gpu_types; t++)
            mask |= (uint8_t)(1u << gp__fleet_type_intern(&e->fleet, s->gpu_types[t]));
        m->shapes[m->n++] = (gp__shape){s->cpu_millis, s->gpus, s->milli, mask, s->weight};
    }
    m->dirty = true;
    return GP_OK;
}

/* ---- the measure ---- */

/* Claimed shares count as used, but not twice where the claimers' victims
 * still hold them (claims.c). */
static int gpu_left(const gp__gpu *g)
{
    if (!g->healthy || g->owner || g->claim)
        return 0;
    if (g->sharing == GP_SHARING_EXCLUSIVE)
        return 1000;
    if (g->sharing == GP_SHARING_MPS)
        return 1000 - g->used_milli - g->claim_milli + g->cover_milli;
    return 0;
}

static void view_of(const gp_engine *e, uint32_t n, node_view *v)
{
    const gp__node *node = &e->fleet.nodes[n];
    v->type = node->type;
    v->cpu_left = node->cpu_cap - node->cpu_used;
    v->n = node->gpu_count;
    for (int i = 0; i < node->gpu_count; i++)
        v->left[i] = gpu_left(&e->fleet.gpus[node->gpu_first + i]);
}

static double view_frag(const gp__mix *m, const node_view *v)
{
    int64_t total = 0;
    for (int i = 0; i < v->n; i++)
        total += v->left[i];
    if (total == 0)
        return 0;
    double f = 0;
    for (size_t k = 0; k < m->n_typical; k++) {
        const gp__shape *s = &m->typical[k];
        if (s->milli == 0 || !(s->type_mask & (1u << v->type))) {
            f += s->weight * (double)total;
            continue;
        }
        int fit = 0;
        int64_t frag = 0;
        for (int i = 0; i < v->n; i++) {
            if (v->left[i] >= s->milli)
                fit++;
            else
                frag += v->left[i];
        }
        bool hosts = fit >= s->gpus && v->cpu_left >= s->cpu;
        f += s->weight * (double)(hosts ? frag : total);
    }
    return f;
}

double gp_engine_fragmentation(gp_engine *e)
{
    if (!e)
        return 0;
    if (e->mix.dirty)
        mix_typical(&e->mix);
    double f = 0;
    for (size_t n = 0; n < e->fleet.n_nodes; n++) {
        const gp__node *node = &e->fleet.nodes[n];
        if (!node->up || node->draining)
            continue;
        node_view v;
        view_of(e, (uint32_t)n, &v);
        f += view_frag(&e->mix, &v);
    }
    return f;
}

/* ---- one replica on one node ---- */

typedef struct option {
    bool ok;
    double score;        /* higher is better */
    double tie;          /* within a node, higher is better (the paper's other scores: fuller GPU) */
    int gpu;             /* share: the GPU within the node */
} option;

/* A hash of the seed, the job (0 for the fixed node order) and the node. */
static uint64_t tie_draw(uint64_t seed, uint64_t job, uint32_t node)
{
    uint64_t x = seed ^ (job * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)node << 32 | node);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int64_t sum_left(const node_view *v)
{
    int64_t t = 0;
    for (int i = 0; i < v->n; i++)
        t += v->left[i];
    return t;
}

/* The paper's integer scores for the node as it would be after the task. */
static double policy_score(const gp_engine *e, gp_score score, const gp__job *j, uint32_t n, const node_view *before,
                           const node_view *after, double d_frag)
{
    const gp__node *node = &e->fleet.nodes[n];
    double cap_cpu = e->fleet.shape.max_cpu[node->type] > 0 ? (double)e->fleet.shape.max_cpu[node->type] : 1;
    double cap_gpu = (double)node->gpu_count * 1000;
    switch (score) {
    case GP_SCORE_FGD:
    case GP_SCORE_DEFAULT:
        return floor(100.0 / (1.0 + exp(d_frag / 1000.0)));
    case GP_SCORE_BESTFIT:
    case GP_SCORE_SPREAD: {
        double s = floor((1.0 - ((double)after->cpu_left / cap_cpu + (double)sum_left(after) / (8000.0)) / 2) * 100);
        return score == GP_SCORE_SPREAD ? -s : s;
    }
    case GP_SCORE_PACKING: {
        if (j->gpus == 0 && !gp__job_shared(j))
            return 0;
        int fully_free = 0, used_full = 0;
        int64_t left_on_used = 0;
        for (int i = 0; i < before->n; i++) {
            fully_free += before->left[i] == 1000;
            if (before->left[i] == 1000 && after->left[i] < 1000)
                used_full++;
            else if (before->left[i] != after->left[i])
                left_on_used += before->left[i] * 100 / 1000;
        }
        if (fully_free == before->n)
            return fmax(100 / 3 - fully_free, fully_free);
        if (used_full > 0)
            return fmax(100 / 2 - used_full, 100 / 3);
        return fmax(100 - left_on_used / 10, 100 / 2);
    }
    case GP_SCORE_CLUSTERING: {
        if (j->gpus == 0 && !gp__job_shared(j))
            return 0;
        double fill = 25.0 * (cap_gpu - (double)sum_left(before)) / cap_gpu;
        int tag = gp__job_tag(j);
        bool mine = false, others = false;
        for (int t = 0; t < GP__TAGS; t++) {
            mine |= t == tag && node->tag_count[t] > 0;
            others |= t != tag && node->tag_count[t] > 0;
        }
        if (mine)
            return floor(fill + (others ? 50 : 75));
        return floor(fill + (others ? 0 : 25));
    }
    case GP_SCORE_DOTPROD: {
        double req_gpu = gp__job_shared(j) ? j->mps_milli : (double)j->gpus * 1000;
        double dot = ((double)before->cpu_left / cap_cpu) * ((double)j->cpu / cap_cpu) +
                     ((double)sum_left(before) / cap_gpu) * (req_gpu / cap_gpu);
        return floor((1.0 - dot / 2) * 100);
    }
    default: /* GP_SCORE_RANDOM */
        return 0;
    }
}

/* Evaluate putting one replica of j on node n (view v, before). */
static option evaluate(gp_engine *e, const gp__job *j, uint32_t n, const node_view *v, gp_score score)
{
    option best = {.ok = false};
    const gp__node *node = &e->fleet.nodes[n];
    if ((j->cpu > 0 && v->cpu_left < j->cpu) || (j->mem > 0 && node->mem_cap - node->mem_used < j->mem))
        return best;
    bool shared = gp__job_shared(j), fits[GP_MAX_GPUS_PER_NODE], any = false;
    for (int i = 0; shared && i < v->n; i++)
        any |= fits[i] = gp__mps_fits(e, j, &e->fleet.gpus[node->gpu_first + i]);
    if (shared && !any) /* no GPU with room: not worth measuring */
        return best;
    double f_before = view_frag(&e->mix, v);
    node_view after = *v;
    after.cpu_left -= j->cpu;
    if (!shared) {
        int need = j->gpus;
        for (int i = 0; i < v->n && need > 0; i++)
            if (after.left[i] == 1000 && gp__gpu_is_free(&e->fleet.gpus[node->gpu_first + i])) {
                after.left[i] = 0;
                need--;
            }
        if (need > 0)
            return best;
        double d = view_frag(&e->mix, &after) - f_before;
        best = (option){true, policy_score(e, score, j, n, v, &after, d), 0, -1};
        return best;
    }
    for (int i = 0; i < v->n; i++) {
        if (!fits[i])
            continue;
        bool seen = false; /* GPUs with the same room give the same measure */
        for (int k = 0; k < i && !seen; k++)
            seen = fits[k] && v->left[k] == v->left[i];
        if (seen)
            continue;
        after.left[i] = v->left[i] - j->mps_milli;
        double d = view_frag(&e->mix, &after) - f_before;
        option o = {true, policy_score(e, score, j, n, v, &after, d), 0, i};
        if (score != GP_SCORE_FGD && score != GP_SCORE_DEFAULT) /* the others pick the fullest GPU that fits */
            o.tie = -(double)(v->left[i]);
        after.left[i] = v->left[i];
        if (!best.ok || o.score > best.score || (o.score == best.score && o.tie > best.tie))
            best = o;
    }
    return best;
}

/* ---- remembered scores ----
 * A waiting share is looked at pass after pass, and most nodes have not
 * changed in between.  Each node remembers its last GP__MEMOS FGD-band
 * evaluations of a share with what they depend on: the node's stamp
 * (bumped by every change to one of its GPUs: shares taken or given back,
 * owners, claims, health, drain), its CPU and memory in use, the job's
 * needs, the score and the mix version, and the job's trust domain when
 * one of the node's GPUs has one.  A node that changed is measured again,
 * so a remembered score is exactly the one evaluate() would give (the
 * daemon's replay sees the same choices). */

/* A GPU's trust domain, or a claim's, makes the score depend on the org. */
static bool node_has_trust(const gp_engine *e, const gp__node *node)
{
    for (int i = 0; i < node->gpu_count; i++) {
        const gp__gpu *g = &e->fleet.gpus[node->gpu_first + i];
        if (g->trust != GP__NONE || g->claim_jobs > 0)
            return true;
    }
    return false;
}

static bool memo_matches(const gp__memo *m, const gp_engine *e, const gp__job *j, uint32_t org,
                         const gp__node *node, gp_score score)
{
    return m->valid && m->stamp == node->stamp && m->cpu_used == node->cpu_used &&
           m->mem_used == node->mem_used && m->mix_version == e->mix.version && m->score_kind == score &&
           m->milli == j->mps_milli && m->cpu == j->cpu && m->mem == j->mem && m->share_mem == j->share_mem &&
           (m->any_org || m->org == org);
}

/* evaluate(), remembered for shares under the FGD band scores; org is
 * the job's trust domain. */
static option scored(gp_engine *e, const gp__job *j, uint32_t org, uint32_t n, gp_score score)
{
    node_view v;
    if (!gp__job_shared(j) || (score != GP_SCORE_FGD && score != GP_SCORE_DEFAULT)) {
        view_of(e, n, &v);
        return evaluate(e, j, n, &v, score);
    }
    gp__node *node = &e->fleet.nodes[n];
    for (int k = 0; k < GP__MEMOS; k++) {
        const gp__memo *m = &node->memo[k];
        if (memo_matches(m, e, j, org, node, score))
            return (option){m->ok, m->score, m->tie, m->gpu};
    }
    view_of(e, n, &v);
    option o = evaluate(e, j, n, &v, score);
    node->memo[node->memo_next] = (gp__memo){.valid = true,
                                             .any_org = !node_has_trust(e, node),
                                             .ok = o.ok,
                                             .gpu = (int8_t)o.gpu,
                                             .score_kind = (uint8_t)score,
                                             .milli = (int16_t)j->mps_milli,
                                             .org = org,
                                             .mix_version = e->mix.version,
                                             .stamp = node->stamp,
                                             .cpu_used = node->cpu_used,
                                             .mem_used = node->mem_used,
                                             .cpu = j->cpu,
                                             .mem = j->mem,
                                             .share_mem = j->share_mem,
                                             .score = o.score,
                                             .tie = o.tie};
    node->memo_next = (uint8_t)((node->memo_next + 1) % GP__MEMOS);
    return o;
}

static bool node_usable(const gp_engine *e, uint32_t n, int type)
{
    const gp__node *node = &e->fleet.nodes[n];
    return node->type == type && node->up && !node->draining && !node->held && !node->barred;
}

/* Put one replica on node n tentatively (saved for rollback). */
static void take_tentative(gp_engine *e, const gp__job *j, uint32_t n, int gpu, size_t *n_out)
{
    gp__node *node = &e->fleet.nodes[n];
    uint32_t owner = (uint32_t)(j - e->jobs) + 1;
    gp__tx_save_node(e, n);
    if (gp__job_shared(j)) {
        uint32_t gi = node->gpu_first + (uint32_t)gpu;
        gp__tx_save_gpu(e, gi);
        gp__share_take_one(e, j, owner, gi, -1);
        e->scratch.out[*n_out] = gi;
        e->scratch.slot[(*n_out)++] = -1;
        return;
    }
    node->cpu_used += j->cpu;
    node->mem_used += j->mem;
    if (j->gpus == 0) {
        e->scratch.out[(*n_out)++] = node->gpu_first;
        return;
    }
    int need = j->gpus;
    for (int i = 0; i < node->gpu_count && need > 0; i++) {
        uint32_t gi = node->gpu_first + (uint32_t)i;
        if (gp__gpu_is_free(&e->fleet.gpus[gi])) {
            gp__tx_save_gpu(e, gi);
            e->fleet.gpus[gi].owner = owner;
            e->scratch.out[(*n_out)++] = gi;
            need--;
        }
    }
}

/* Every node of every GPU model the job accepts shares its GPUs by MPS. */
static bool accepts_only_mps_models(const gp_engine *e, const gp__job *j)
{
    const gp__fleet *f = &e->fleet;
    bool any = false;
    for (int t = 0; t < f->n_types; t++) {
        if (!(j->type_mask & (1u << t)) || f->n_type_nodes[t] == 0)
            continue;
        if (f->n_mps_nodes[t] < f->n_type_nodes[t])
            return false;
        any = true;
    }
    return any;
}

bool gp__scored_applies(const gp_engine *e, const gp__job *j)
{
    if (j->isolation == GP_ISO_MIG || j->isolation == GP_ISO_TIMESLICE || j->topology != GP_TOPO_ANY)
        return false;
    return j->isolation == GP_ISO_MPS || e->fleet.all_paper_scores || accepts_only_mps_models(e, j);
}

/* ---- scores of a share shape ----
 * Every look of a share scores every MPS node of its types, and between
 * two looks only a few nodes change (the last bind's, a release's).  So
 * the engine keeps, for the last GP__SHARE_SCORES share shapes (type,
 * share, CPU, memory, GPU memory, trust domain, mix version), the option
 * of every MPS node of the type, each with the node's place in the tie
 * order.  Every change to what a node's score reads (its GPUs, its CPU
 * and memory in use, up, drain, held) goes through gp__node_touch, which
 * stamps the node with the fleet's next touch number; a look scores again
 * only the nodes touched since its shape's table was last brought up to
 * date, then takes the best entry of the table in node order, as the
 * scan did.  Only for types whose MPS nodes all score by the FGD band
 * (the others' scores are not remembered, and random draws per job).
 *
 * Example: shares of 250 milli of one org look 40 times in a pass over
 * 875 MPS nodes: the first look scores 875 nodes, each later one scores
 * the node the previous bind took (one touch) and reads 875 table
 * entries, instead of 875 nodes and their remembered scores. */

/* A node's entry in a share shape's table: what the scan below would see. */
static gp__share_score share_score(gp_engine *e, const gp__job *j, uint32_t org, uint32_t n, int type)
{
    gp__share_score s = {.ok = false};
    if (!node_usable(e, n, type))
        return s;
    const gp__pool *pool = &e->fleet.pools[e->fleet.nodes[n].pool];
    option o = scored(e, j, org, n, pool->spec.score);
    return (gp__share_score){.score = o.score, .draw = tie_draw(pool->spec.seed, 0, n), .gpu = (int8_t)o.gpu, .ok = o.ok};
}

static bool shape_matches(const gp__share_scores *t, const gp_engine *e, const gp__job *j, uint32_t org, int type)
{
    return t->valid && t->type == type && t->n == e->fleet.n_mps_nodes[type] && t->milli == j->mps_milli &&
           t->org == org && t->mix_version == e->mix.version && t->cpu == j->cpu && t->mem == j->mem &&
           t->share_mem == j->share_mem;
}

/* Whether every MPS node of the type scores by the FGD band. */
static bool type_scores_fgd(const gp_engine *e, int type)
{
    const gp__fleet *f = &e->fleet;
    for (size_t c = 0; c < f->n_mps_nodes[type]; c++) {
        gp_score score = f->pools[f->nodes[f->mps_nodes[type][c]].pool].spec.score;
        if (score != GP_SCORE_FGD && score != GP_SCORE_DEFAULT)
            return false;
    }
    return true;
}

/* A table made afresh for the shape, in the least recently used slot. */
static gp__share_scores *shape_table_new(gp_engine *e, const gp__job *j, uint32_t org, int type)
{
    const gp__fleet *f = &e->fleet;
    if (!type_scores_fgd(e, type))
        return NULL;
    gp__share_scores *t = &e->share_scores[0];
    for (int k = 1; k < GP__SHARE_SCORES && t->valid; k++)
        if (!e->share_scores[k].valid || e->share_scores[k].used < t->used)
            t = &e->share_scores[k];
    size_t n = f->n_mps_nodes[type];
    t->valid = false;
    if (!gp__grow((void **)&t->at, &t->cap, n ? n : 1, sizeof *t->at))
        return NULL;
    for (size_t c = 0; c < n; c++)
        t->at[c] = share_score(e, j, org, f->mps_nodes[type][c], type);
    *t = (gp__share_scores){.valid = true, .type = (uint8_t)type, .milli = (int16_t)j->mps_milli, .org = org,
                            .mix_version = e->mix.version, .cpu = j->cpu, .mem = j->mem, .share_mem = j->share_mem,
                            .seen = f->touch_seq, .at = t->at, .n = n, .cap = t->cap};
    return t;
}

/* The shape's table, up to date, or NULL where the type has none (a node
 * not scored by the FGD band, or no memory). */
static const gp__share_scores *shape_table(gp_engine *e, const gp__job *j, uint32_t org, int type)
{
    const gp__fleet *f = &e->fleet;
    gp__share_scores *t = NULL;
    for (int k = 0; k < GP__SHARE_SCORES && !t; k++)
        if (shape_matches(&e->share_scores[k], e, j, org, type))
            t = &e->share_scores[k];
    if (!t)
        t = shape_table_new(e, j, org, type);
    else
        for (size_t c = 0; c < t->n; c++)
            if (f->touched[f->mps_nodes[type][c]] > t->seen)
                t->at[c] = share_score(e, j, org, f->mps_nodes[type][c], type);
    if (t) {
        t->seen = f->touch_seq;
        t->used = ++e->share_scores_used;
    }
    return t;
}

void gp__share_scores_forget(gp_engine *e)
{
    for (int k = 0; k < GP__SHARE_SCORES; k++) {
        free(e->share_scores[k].at);
        e->share_scores[k] = (gp__share_scores){.valid = false};
    }
}

/* Keep option o of node n (tie order draw) when it beats the best so far. */
static void consider_node(uint32_t n, option o, uint64_t draw, uint32_t *best, option *best_o, uint64_t *best_draw)
{
    bool take;
    if (*best == GP__NONE || o.score != best_o->score)
        take = *best == GP__NONE || o.score > best_o->score;
    else /* equal scores: the node order (random: a fresh draw) */
        take = draw < *best_draw;
    if (take) {
        *best = n;
        *best_draw = draw;
        *best_o = o;
    }
}

/* The best node for one replica among the accepted types (the paper's
 * scorer looks at every node the task may use, whatever its GPU model). */
static uint32_t best_node(gp_engine *e, const gp__job *j, uint8_t types, option *best_o)
{
    gp__fleet *f = &e->fleet;
    bool shares = j->isolation == GP_ISO_MPS, whole = !shares && j->gpus > 0;
    uint32_t org = shares ? gp__job_org(e, j) : GP__NONE;
    uint32_t best = GP__NONE;
    uint64_t best_draw = 0;
    for (int type = 0; type < f->n_types; type++) {
        if (!(types & (1u << type)))
            continue;
        const gp__share_scores *t = shares ? shape_table(e, j, org, type) : NULL;
        for (size_t c = 0; t && c < t->n; c++)
            if (t->at[c].ok)
                consider_node(f->mps_nodes[type][c], (option){true, t->at[c].score, 0, t->at[c].gpu}, t->at[c].draw,
                              &best, best_o, &best_draw);
        if (t)
            continue;
        size_t n_cand = shares ? f->n_mps_nodes[type] : f->n_nodes;
        for (size_t c = 0; c < n_cand; c++) {
            uint32_t n = shares ? f->mps_nodes[type][c] : (uint32_t)c;
            if (!node_usable(e, n, type) || (whole && f->nodes[n].free < j->gpus))
                continue;
            gp__pool *pool = &f->pools[f->nodes[n].pool];
            gp_score score = pool->spec.score;
            option o = scored(e, j, org, n, score);
            if (o.ok)
                consider_node(n, o, tie_draw(pool->spec.seed, score == GP_SCORE_RANDOM ? j->id : 0, n), &best, best_o,
                              &best_draw);
        }
    }
    return best;
}

bool gp__place_scored(gp_engine *e, const gp__job *j, uint8_t types, int *chosen)
{
    if (gp__trust_forbids(e, j))
        return false;
    if (gp__place_claimed(e, j, types, chosen))
        return true;
    if (e->mix.dirty)
        mix_typical(&e->mix);
    if (!gp__scratch_reserve(e, gp__placed_count(j)))
        return false;
    size_t n_out = 0;
    bool ok = true;
    for (int r = 0; r < j->replicas && ok; r++) {
        option best_o = {.ok = false};
        uint32_t best = best_node(e, j, types, &best_o);
        if (best == GP__NONE) {
            ok = false;
            break;
        }
        *chosen = e->fleet.nodes[best].type;
        types = (uint8_t)(1u << *chosen); /* the other replicas on the same model */
        take_tentative(e, j, best, best_o.gpu, &n_out);
    }
    gp__tx_rollback(e);
    return ok;
}
