/* backfill.c - the head job's reservation, so big gangs do not starve.
 *
 * EASY backfill, per GPU type.  In each pass, the first job in fair order
 * that cannot be placed for lack of free capacity (and that reclaim cannot
 * help) becomes the head of its type.  From the expected end of every
 * running job of that type (a preempting job at its grace deadline; else
 * bind time + expected runtime, capped by bind + time limit + grace; a job
 * past its estimate is assumed to end within overdue_grace_s; without an
 * estimate, bind + time limit + grace) we sweep forward in time until some
 * domain (the fleet for `any`, a fabric block for `block`, a node for
 * `nvlink`) would hold the head job.  That time is its expected start; the
 * nodes that would hold it are held: for the rest of the pass only jobs
 * that end before the expected start (now + expected runtime, else time
 * limit + grace, <= start) may use them.  Jobs placed elsewhere cannot
 * delay the head, so they go ahead freely.
 *
 * Jobs that nothing bounds (no estimate, no time limit) end at an unknown
 * time: the sweep takes them last, node by node, the nodes with the fewest
 * GPUs of such jobs first, and a start found only through them is
 * GP__START_UNKNOWN.  Nothing ends before an unknown start, so the held
 * nodes take no other work (engine.c lends them only to burstable work of
 * a guaranteed head, which can reclaim it): their GPUs accumulate for the
 * head as the jobs on them end.  That is the rule that the head of the
 * fair order is never overtaken without bound.
 *
 * Example: 4 nodes x 8 H100, all busy with 1-GPU jobs ending at t = 100,
 * 200, 300, ...  A 4x8 gang at the head finds its start at the time the
 * last of those jobs ends, say t = 900, and holds all four nodes.  A
 * 1-GPU job with expected runtime 50 s submitted at t = 110 can use a GPU
 * freed at t = 100 (ends at 160 <= 900); one with 3600 s cannot and waits
 * "held for the reservation of job <gang>".  Were the 1-GPU jobs without
 * estimates or limits, the gang would hold the node with the fewest of them
 * (n00 among equals) with no known start, and the GPUs freed there would
 * wait for it.
 *
 * What a sweep costs: it reads only the running whole-GPU jobs of its
 * type (engine->type_running, kept on bind and release), one expected end
 * each, and orders them by (end, place in engine->running) with a radix
 * sort of the pair packed into 64 bits (a comparison sort in the rare
 * case it does not fit); it reads a job's GPUs only when it gets to it,
 * so a sweep that finds its start after k releases reads k of them, not
 * all.  The key's last part is the tie-break of a stable sort of
 * engine->running by end, so the order is exactly that sort's.  (A binary
 * heap popped them before: the month's sweeps pop four in five of their
 * jobs, and the pops were a tenth of bench_sim.)  The jobs
 * that nothing bounds are ordered (by node) only when the sweep gets to
 * them.  A sweep starts from the nodes' briefs (fleet->brief: free GPUs,
 * -1 when down or draining, block and withheld; kept by
 * gp__node_reindex), a small array, not from the node records.  A released
 * replica's GPUs are read only on a node that withholds some (unhealthy,
 * or claimed by a reclaim: the brief's withheld); elsewhere it gives back
 * all of them.  Its node comes from fleet->gpu_node, not from the GPU
 * record: the records of 50,000 GPUs do not stay in cache, and the
 * month's sweeps released enough replicas for those two reads to be a tenth
 * of bench_sim.  Example: 6,000 running jobs of the type, a 2x8 gang
 * that fits once the third ends: 6,000 ends read and sorted in five
 * linear rounds, the GPUs of 3 jobs read.
 *
 * A sweep that finds no time at all (the domain's GPUs are held by shared
 * jobs, or CPU or memory block it) is tried by only the first
 * GP__RESERVE_TRIES blocked jobs of a type in a pass: such a sweep reads
 * every running job of the type.
 *
 * Holds last one pass: each pass clears them and computes them again from
 * the state it finds, so they follow the fleet as it changes.
 */
#include "core/internal.h"

#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

#define GP__RESERVE_TRIES 4

typedef struct release {
    int64_t time;
    uint32_t node;
    int gpus;
} release;

void gp__reservations_clear(gp_engine *e)
{
    for (int t = 0; t < GP_MAX_GPU_TYPES; t++) {
        gp__reservation *r = &e->reservation[t];
        if (!r->active)
            continue;
        for (size_t i = 0; i < r->n_nodes; i++)
            gp__node_hold(&e->fleet, r->nodes[i], false);
        r->n_nodes = 0;
        r->active = false;
    }
}

const gp__reservation *gp__reservation_for(const gp_engine *e, int type)
{
    return e->reservation[type].active ? &e->reservation[type] : NULL;
}

int64_t gp__job_duration(const gp__job *j)
{
    int64_t bound = j->limit > 0 ? j->limit + j->grace : 0;
    if (j->runtime > 0 && (bound == 0 || j->runtime < bound))
        return j->runtime;
    return bound;
}

/* When a running job's GPUs come back: its estimate (or, overdue, soon),
 * never later than its time limit and grace; GP__START_UNKNOWN when
 * nothing bounds it. */
static int64_t expected_end(const gp_engine *e, const gp__job *j)
{
    if (j->state == GP_JOB_PREEMPTING)
        return j->deadline;
    int64_t bound = j->limit > 0 ? j->bind_time + j->limit + j->grace : GP__START_UNKNOWN;
    if (j->runtime <= 0)
        return bound;
    int64_t end = j->bind_time + j->runtime;
    if (end <= e->now)
        end = e->now + e->cfg.overdue_grace_s;
    return end < bound ? end : bound;
}

/* A running job's turn in the sweep: by expected end, then by place in
 * engine->running.  That is the order a stable sort of engine->running by
 * time kept; pos is unique, so the order is total. */
typedef struct turn {
    int64_t time;
    uint32_t pos;
    int replicas, gpus;
    const uint32_t *placed; /* the job's GPUs, copied here with the fields above
                               while its record is in cache: the sweep reads no job */
} turn;

static int turn_order(uint32_t a, uint32_t b, const void *ctx)
{
    const turn *x = &((const turn *)ctx)[a], *y = &((const turn *)ctx)[b];
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A turn's place as one number: (time - earliest) above pos's bits. */
typedef struct packed_turn {
    uint64_t key;
    uint32_t turn;
} packed_turn;

/* Bits that hold every value up to x. */
static int bits_for(uint64_t x)
{
    int b = 0;
    while (b < 64 && (x >> b) != 0)
        b++;
    return b;
}

/* Into order: the n turns in turn order, by a radix sort of their packed
 * keys, 8 bits a round (linear: a sweep reads most of the turns, and the
 * binary heap it used to pop them from was a tenth of the month's
 * bench_sim).  False when the keys do not fit 64 bits (times far apart) or
 * out of memory: the caller sorts by comparison then. */
static bool radix_order(const turn *t, size_t n, uint32_t *order)
{
    int64_t lo = t[0].time, hi = t[0].time;
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++) {
        lo = t[i].time < lo ? t[i].time : lo;
        hi = t[i].time > hi ? t[i].time : hi;
        top = t[i].pos > top ? t[i].pos : top;
    }
    int pos_bits = bits_for(top), bits = pos_bits + bits_for((uint64_t)hi - (uint64_t)lo);
    packed_turn *buf = bits <= 64 ? malloc(2 * n * sizeof *buf) : NULL;
    if (!buf)
        return false;
    packed_turn *a = buf, *b = buf + n; /* each round from a into b, then they swap */
    for (size_t i = 0; i < n; i++)
        a[i] = (packed_turn){((uint64_t)t[i].time - (uint64_t)lo) << pos_bits | t[i].pos, (uint32_t)i};
    for (int shift = 0; shift < bits; shift += 8) {
        size_t start[257] = {0};
        for (size_t i = 0; i < n; i++)
            start[(a[i].key >> shift & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            start[d + 1] += start[d];
        for (size_t i = 0; i < n; i++)
            b[start[a[i].key >> shift & 0xff]++] = a[i];
        packed_turn *swap = a;
        a = b;
        b = swap;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = a[i].turn;
    free(buf);
    return true;
}

/* The type's running jobs: those with a known end in turn order (*turns,
 * *order, *n_known of each; the caller frees both), those that nothing
 * bounds in *unbounded_jobs (in the caller's buffer, *n_unbounded).  False
 * when out of memory. */
static bool collect_turns(const gp_engine *e, int type, turn **turns, uint32_t **order, uint32_t *unbounded_jobs,
                          size_t *n_known, size_t *n_unbounded)
{
    size_t n_jobs = e->n_type_running[type];
    turn *t = malloc((n_jobs ? n_jobs : 1) * sizeof *t);
    uint32_t *o = malloc((n_jobs ? n_jobs : 1) * sizeof *o);
    size_t n = 0, u = 0;
    for (size_t i = 0; t && o && i < n_jobs; i++) {
        uint32_t job = e->type_running[type][i];
        const gp__job *j = &e->jobs[job];
        int64_t end = expected_end(e, j);
        if (end == GP__START_UNKNOWN)
            unbounded_jobs[u++] = job;
        else
            t[n++] = (turn){end, j->running_pos, j->replicas, j->gpus, j->placed};
    }
    bool ok = t && o;
    if (ok && n > 0 && !radix_order(t, n, o)) {
        for (size_t i = 0; i < n; i++)
            o[i] = (uint32_t)i;
        ok = gp_sort_indexes(o, n, turn_order, t);
    }
    *turns = t;
    *order = o;
    *n_known = n;
    *n_unbounded = u;
    return ok;
}

/* What replica r of a running job (its GPUs `placed`, `gpus` a replica)
 * gives back: its node and its GPUs there that are healthy and not
 * claimed (claimed GPUs are not given back to the general pool); all of
 * them, without reading them, on a node that withholds none. */
static release replica_release(const gp_engine *e, const uint32_t *placed, int gpus, int64_t time, int r)
{
    release rel = {time, e->fleet.gpu_node[placed[(size_t)r * gpus]], 0};
    if (e->fleet.brief[rel.node].withheld == 0) {
        rel.gpus = gpus;
        return rel;
    }
    for (int k = 0; k < gpus; k++) {
        const gp__gpu *g = &e->fleet.gpus[placed[(size_t)r * gpus + k]];
        rel.gpus += g->healthy && g->claim == 0;
    }
    return rel;
}

typedef struct unbounded_release {
    release rel;
    uint32_t pos; /* the job's place in engine->running */
    int replica;
} unbounded_release;

typedef struct unbounded_order {
    const unbounded_release *rel;
    const int *unbounded; /* per node: GPUs held by jobs that nothing bounds */
} unbounded_order;

/* Releases of unknown time, node by node, the nodes with the fewest
 * unbounded GPUs first (they need the fewest unknown ends), then in fleet
 * order; on one node in engine->running order. */
static int by_node(uint32_t a, uint32_t b, const void *ctx)
{
    const unbounded_order *o = ctx;
    const unbounded_release *x = &o->rel[a], *y = &o->rel[b];
    int ux = o->unbounded[x->rel.node], uy = o->unbounded[y->rel.node];
    if (ux != uy)
        return ux < uy ? -1 : 1;
    if (x->rel.node != y->rel.node)
        return x->rel.node < y->rel.node ? -1 : 1;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->replica < y->replica ? -1 : x->replica > y->replica;
}

/* The releases of the jobs that nothing bounds, in sweep order (*out, with
 * *order; the caller frees both), *count of them; false when out of memory. */
static bool unbounded_releases(const gp_engine *e, const uint32_t *jobs, size_t n_jobs, unbounded_release **out,
                               uint32_t **order, size_t *count)
{
    size_t cap = 0;
    for (size_t i = 0; i < n_jobs; i++)
        cap += (size_t)e->jobs[jobs[i]].replicas;
    unbounded_release *rel = malloc((cap ? cap : 1) * sizeof *rel);
    uint32_t *idx = malloc((cap ? cap : 1) * sizeof *idx);
    int *unbounded = calloc(e->fleet.n_nodes ? e->fleet.n_nodes : 1, sizeof *unbounded);
    bool ok = rel && idx && unbounded;
    size_t n = 0;
    for (size_t i = 0; ok && i < n_jobs; i++) {
        const gp__job *j = &e->jobs[jobs[i]];
        for (int r = 0; r < j->replicas; r++) {
            release one = replica_release(e, j->placed, j->gpus, GP__START_UNKNOWN, r);
            if (one.gpus == 0)
                continue;
            unbounded[one.node] += one.gpus;
            idx[n] = (uint32_t)n;
            rel[n++] = (unbounded_release){one, j->running_pos, r};
        }
    }
    unbounded_order o = {rel, unbounded};
    ok = ok && gp_sort_indexes(idx, n, by_node, &o);
    free(unbounded);
    if (!ok) {
        free(rel);
        free(idx);
        return false;
    }
    *out = rel;
    *order = idx;
    *count = n;
    return true;
}

/* Domain of a node for this topology: 0 for any, block, or node. */
static uint32_t domain_of(const gp_engine *e, const gp__job *j, uint32_t n)
{
    switch (j->topology) {
    case GP_TOPO_BLOCK: return e->fleet.brief[n].block;
    case GP_TOPO_NVLINK: return n;
    default: return 0;
    }
}

static int64_t replicas_on(const gp__job *j, int avail)
{
    if (j->topology == GP_TOPO_NVLINK)
        return avail >= j->replicas * j->gpus ? j->replicas : 0;
    return avail / j->gpus;
}

typedef struct sweep {
    int *avail;        /* per node: GPUs available at the current sweep time */
    int64_t *capacity; /* per domain: replicas that fit */
    uint32_t domain;   /* the domain that first holds the job */
    int64_t start;
} sweep;

/* One release in the sweep: its GPUs come back on its node (a node out of
 * service takes none).  True when that makes the job's domain hold it. */
static bool sweep_release(const gp_engine *e, const gp__job *j, sweep *s, release r)
{
    if (r.gpus == 0 || s->avail[r.node] < 0)
        return false;
    uint32_t d = domain_of(e, j, r.node);
    s->capacity[d] -= replicas_on(j, s->avail[r.node]);
    s->avail[r.node] += r.gpus;
    s->capacity[d] += replicas_on(j, s->avail[r.node]);
    if (s->capacity[d] < j->replicas)
        return false;
    s->domain = d;
    s->start = r.time;
    return true;
}

static bool sweep_run(gp_engine *e, const gp__job *j, int type, sweep *s)
{
    const gp__fleet *f = &e->fleet;
    for (size_t n = 0; n < f->n_nodes; n++)
        s->avail[n] = -1;
    for (size_t i = 0; i < f->n_type_nodes[type]; i++) {
        uint32_t n = f->type_nodes[type][i];
        int free = f->brief[n].free; /* -1: down or draining */
        if (free >= 0) {
            s->avail[n] = free;
            uint32_t d = domain_of(e, j, n);
            s->capacity[d] += replicas_on(j, free);
            if (s->capacity[d] >= j->replicas)
                return false; /* GPUs are there: CPU or memory blocks it, waiting won't help */
        }
    }
    size_t n_known = 0, n_unknown = 0;
    uint32_t *unbounded_jobs = malloc((e->n_type_running[type] ? e->n_type_running[type] : 1) * sizeof *unbounded_jobs);
    turn *turns = NULL;
    uint32_t *sorted = NULL;
    bool ok = unbounded_jobs && collect_turns(e, type, &turns, &sorted, unbounded_jobs, &n_known, &n_unknown);
    bool found = false;
    for (size_t k = 0; ok && k < n_known && !found; k++) {
        const turn *t = &turns[sorted[k]];
        if (k + 1 < n_known) /* the next job's GPUs: read while this one's are (bench_sim --days 5: 7.1 s CPU, 7.9 s without) */
            __builtin_prefetch(turns[sorted[k + 1]].placed);
        for (int r = 0; r < t->replicas && !found; r++)
            found = sweep_release(e, j, s, replica_release(e, t->placed, t->gpus, t->time, r));
    }
    unbounded_release *rel = NULL;
    uint32_t *order = NULL;
    size_t n_rel = 0;
    ok = ok && !found && n_unknown > 0 && unbounded_releases(e, unbounded_jobs, n_unknown, &rel, &order, &n_rel);
    for (size_t i = 0; ok && i < n_rel && !found; i++)
        found = sweep_release(e, j, s, rel[order[i]].rel);
    free(unbounded_jobs);
    free(turns);
    free(sorted);
    free(rel);
    free(order);
    return found;
}

/* The nodes of the sweep's domain that will have room at the start time,
 * those with the fewest free GPUs now first (they waste the least
 * meanwhile), in fleet order among equals.  A node's free count is
 * 0..GP_MAX_GPUS_PER_NODE, so one stable counting pass orders them: linear
 * even for topology any, where the domain is every node of the type. */
static size_t hold_candidates(const gp_engine *e, const gp__job *j, int type, const sweep *s, uint32_t *cand)
{
    const gp__fleet *f = &e->fleet;
    size_t start[GP_MAX_GPUS_PER_NODE + 2] = {0};
    for (size_t i = 0; i < f->n_type_nodes[type]; i++) {
        uint32_t node = f->type_nodes[type][i];
        if (s->avail[node] >= 0 && domain_of(e, j, node) == s->domain && replicas_on(j, s->avail[node]) > 0)
            start[f->brief[node].free + 1]++;
    }
    for (int c = 1; c <= GP_MAX_GPUS_PER_NODE + 1; c++)
        start[c] += start[c - 1];
    size_t n = start[GP_MAX_GPUS_PER_NODE + 1];
    for (size_t i = 0; i < f->n_type_nodes[type]; i++) {
        uint32_t node = f->type_nodes[type][i];
        if (s->avail[node] >= 0 && domain_of(e, j, node) == s->domain && replicas_on(j, s->avail[node]) > 0)
            cand[start[f->brief[node].free]++] = node;
    }
    return n;
}

/* Hold the candidates, in that order, until they cover the job. */
static bool hold_nodes(gp_engine *e, const gp__job *j, int type, const sweep *s, gp__reservation *r)
{
    const gp__fleet *f = &e->fleet;
    uint32_t *cand = malloc((f->n_nodes ? f->n_nodes : 1) * sizeof *cand);
    if (!cand)
        return false;
    size_t n = hold_candidates(e, j, type, s, cand);
    int64_t covered = 0;
    bool ok = true;
    for (size_t i = 0; i < n && covered < j->replicas; i++) {
        if (!GP__GROW(r->nodes, r->n_nodes, r->cap_nodes)) {
            ok = false;
            break;
        }
        r->nodes[r->n_nodes++] = cand[i];
        covered += replicas_on(j, s->avail[cand[i]]);
    }
    free(cand);
    return ok;
}

static bool reserve_type(gp_engine *e, uint32_t job, int type, bool guaranteed)
{
    const gp__job *j = &e->jobs[job];
    const gp__fleet *f = &e->fleet;
    size_t domains = j->topology == GP_TOPO_BLOCK ? f->n_blocks : j->topology == GP_TOPO_NVLINK ? f->n_nodes : 1;
    sweep s = {0};
    s.avail = malloc((f->n_nodes ? f->n_nodes : 1) * sizeof *s.avail);
    s.capacity = calloc(domains ? domains : 1, sizeof *s.capacity);
    bool ok = s.avail && s.capacity && sweep_run(e, j, type, &s);
    gp__reservation *r = &e->reservation[type];
    if (ok) {
        r->n_nodes = 0;
        ok = hold_nodes(e, j, type, &s, r);
    }
    if (ok) {
        r->active = true;
        r->job = job;
        r->start = s.start;
        r->head_guaranteed = guaranteed;
        for (size_t i = 0; i < r->n_nodes; i++)
            gp__node_hold(&e->fleet, r->nodes[i], true);
    }
    free(s.avail);
    free(s.capacity);
    return ok;
}

bool gp__reserve(gp_engine *e, uint32_t job, uint8_t types, bool guaranteed)
{
    gp__job *j = &e->jobs[job];
    bool any = false;
    if (gp__job_shared(j) || j->gpus == 0)
        return false; /* slices and CPU-only work are small: they never hold nodes */
    /* never on owned pools it is outside of: their owner may take them back */
    size_t mark = e->n_owned_nodes > 0 ? gp__fence_narrow(e, j->tenant, false) : e->n_barred;
    if (mark == SIZE_MAX)
        return false;
    for (int t = 0; t < e->fleet.n_types; t++) {
        if (!(types & (1u << t)) || e->reservation[t].active || e->reserve_tries[t] >= GP__RESERVE_TRIES)
            continue;
        e->reserve_tries[t]++;
        if (reserve_type(e, job, t, guaranteed)) {
            any = true;
            e->stats.pass_reservations++;
            j->wait = (gp_wait){.code = GP_WAIT_RESERVED, .dim = t, .tenant = GP__NONE, .time = e->reservation[t].start,
                                .a = (int64_t)e->reservation[t].n_nodes};
            break; /* one type is enough to bound its wait */
        }
    }
    gp__fence_widen(e, mark);
    return any;
}
