/* test_sharing_properties.c - randomized property tests of GPU sharing.
 *
 * Every sequence builds a mixed fleet: exclusive H100 nodes, MIG nodes
 * (H100 81920 MiB, sometimes an A100 40960 MiB whose "1g.10gb" is the
 * two-slice profile), MPS nodes, time-sliced nodes and sometimes a node
 * with one GPU of each mode, spread over pools "p2", "p3" and "p4" (time
 * slice factors 2, 3, 4) with random placement scores; orgs o1, o2 and
 * sometimes o3 with teams, some guarantees and limits, and one untrusted
 * tenant (an untrusted team "o2/u" or an untrusted org "guest").  Then
 * 100-300 random events with non-decreasing time: submits of whole-GPU,
 * MIG, MPS, time-slice and CPU-only jobs (some that must be refused),
 * finishes, cancels, node loss and return, GPU health flips, drains and
 * ticks.
 *
 * The test keeps its own books from the decisions (BIND, TRANSITION,
 * USAGE_OPEN/CLOSE, RECONFIGURE) and the slices the engine reports right
 * after each event, and checks after every event, from public queries:
 *   submit       untrusted mps/timeslice, timeslice training and unknown MIG
 *                profiles are refused (with the right field), the rest taken;
 *   mig          layouts parse under NVIDIA's table (tests/support) with no
 *                two instances sharing a memory slice, every running slice is
 *                in its GPU's layout and never moves while it runs, a
 *                profile only lands on a model that has it, layout changes
 *                on one GPU are >= 60 s apart (default config);
 *   mps          shares <= 1000 and memory limits <= the GPU's memory;
 *   timeslice    replicas <= the pool's factor, each 1000 / factor, always
 *                burstable;
 *   shared-books per GPU, used_milli and jobs equal the slices on it; slices
 *                only on GPUs of their mode; a whole-GPU owner has no slices;
 *   trust        an untrusted tenant never shares a GPU with another tenant;
 *                two orgs never share an MPS or time-sliced GPU; trust_domain
 *                names the holder ("" when none);
 *   down         nothing holds a GPU of a lost node or an unhealthy GPU, and
 *                a lost node has no CPU or memory in use;
 *   usage        sum of milli_gpus x duration over the usage intervals equals
 *                our integral of allocated milli-GPUs (from binds, releases
 *                and the expected share of each slice); each tenant's usage
 *                equals its running jobs', stays within its H100 limit, and
 *                its guaranteed usage within its guarantee;
 *   invariants   gp_engine_check_invariants() == GP_OK.
 * Plus a determinism test (same seed, same decision stream).
 *
 * Environment: GP_PROPERTY_SEQUENCES (default 1000), GP_PROPERTY_SEED (base;
 * sequence i uses base + i, so GP_PROPERTY_SEED=<seed> GP_PROPERTY_SEQUENCES=1
 * reproduces one), GP_PROPERTY_VERBOSE=1 (print every event),
 * GP_PROPERTY_KEEP_GOING=1 (run all sequences, count failures per property),
 * GP_PROPERTY_SKIP=name,name (do not check those properties).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prop_env.h"
#include "core/engine.h"
#include "support/sharing_builder.h"

#define DEFAULT_SEQUENCES 1000
#define DEFAULT_SEED 0x73686172ULL
#define MAX_NODES 12
#define MAX_GPUS 48
#define MAX_TENANTS 8
#define MAX_JOBS 320
#define MAX_REPLICAS 3
#define LOG_LINES 16
#define RECONFIGURE_INTERVAL 60 /* gp_engine_config_default() */

enum { P_SUBMIT, P_MIG, P_MPS, P_TIMESLICE, P_BOOKS, P_TRUST, P_DOWN, P_USAGE, P_INVARIANTS, P_COUNT };
static const char *const prop_names[P_COUNT] = {"submit", "mig",  "mps",   "timeslice",  "shared-books",
                                                "trust",  "down", "usage", "invariants"};

typedef struct pnode {
    char name[8];
    const char *type;
    int gpus;
    int64_t mem;
    gp_sharing modes[4];
    int pool;
    bool up;
    uint32_t gpu_first;
} pnode;

typedef struct ptenant {
    char path[16];
    int org;           /* index of its org, itself for an org */
    bool leaf, untrusted;
    int guarantee, limit; /* H100 GPUs, -1 = none */
} ptenant;

typedef struct pjob {
    gp_job_spec spec;
    int tenant;
    bool live, bound;
    int64_t bind_at, milli;
    bool fresh;        /* bound during this event: milli and slices to fill in */
    gp_slice slices[MAX_REPLICAS];
} pjob;

typedef struct seq {
    uint64_t seed, rng;
    gp_engine *e;
    int64_t now;
    int event;
    pnode nodes[MAX_NODES];
    int n_nodes;
    int factor[3];     /* pools p2, p3, p4 */
    bool healthy[MAX_GPUS];
    int64_t reconfigured[MAX_GPUS];
    ptenant tenants[MAX_TENANTS];
    int n_tenants;
    pjob jobs[MAX_JOBS];
    int n_jobs;
    int64_t mine_closed; /* milli-GPU-seconds of released jobs */
    sb_meter meter;      /* the usage intervals */
    uint64_t hash;
    bool verbose, failed;
    unsigned skip;
    int failed_prop, failed_event;
    char message[1024];
    char log[LOG_LINES][160];
} seq;

/* What the sequences exercised, for the summary line. */
static struct {
    uint64_t events, binds[4], cpu_only, preempts, reconfigures, refused;
} counted;

static const char *const pool_names[3] = {"p2", "p3", "p4"};
static const char *const mig_profiles[] = {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
                                           "1g.5gb",  "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};

/* ---- randomness and failure ---- */

static uint64_t rnd(seq *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int rint_(seq *s, int lo, int hi)
{
    return hi <= lo ? lo : lo + (int)(rnd(s) % (uint64_t)(hi - lo + 1));
}

static bool pct(seq *s, int p)
{
    return rint_(s, 0, 99) < p;
}

static void note(seq *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(seq *s, const char *fmt, ...)
{
    char *line = s->log[s->event % LOG_LINES];
    int n = snprintf(line, 160, "#%d t=%" PRId64 ": ", s->event, s->now);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, 160 - (size_t)n, fmt, ap);
    va_end(ap);
    if (s->verbose)
        fprintf(stderr, "%s\n", line);
}

static bool check(seq *s, int prop, bool ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool check(seq *s, int prop, bool ok, const char *fmt, ...)
{
    if (ok || s->failed || (s->skip >> prop & 1u))
        return ok;
    s->failed = true;
    s->failed_prop = prop;
    s->failed_event = s->event;
    int n = snprintf(s->message, sizeof s->message, "[%s] seed=0x%" PRIx64 " event=%d t=%" PRId64 ": ",
                     prop_names[prop], s->seed, s->event, s->now);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message + n, sizeof s->message - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- setup ---- */

/* A node of `gpus` GPUs in `mode`, or (mixed) GPU i in mode i. */
static void add_node(seq *s, const char *prefix, const char *type, int gpus, int64_t mem, gp_sharing mode, bool mixed)
{
    pnode *n = &s->nodes[s->n_nodes];
    snprintf(n->name, sizeof n->name, "%s%d", prefix, s->n_nodes);
    n->type = type;
    n->gpus = gpus;
    n->mem = mem;
    for (int i = 0; i < gpus; i++)
        n->modes[i] = mode;
    for (int i = 0; mixed && i < gpus; i++)
        n->modes[i] = (gp_sharing)i;
    n->pool = rint_(s, 0, 2);
    s->n_nodes++;
}

static gp_node_spec node_spec(const pnode *n)
{
    gp_node_spec spec = sb_node_spec(n->name, n->type, n->gpus, n->mem, n->modes[0], pool_names[n->pool]);
    spec.gpu_sharing = n->modes;
    spec.cpu_millis = 32000;
    spec.mem_mib = 262144;
    return spec;
}

static void tenant(seq *s, const char *path, int org, bool leaf, gp_trust trust, int guarantee, int limit)
{
    ptenant *t = &s->tenants[s->n_tenants++];
    snprintf(t->path, sizeof t->path, "%s", path);
    t->org = org < 0 ? s->n_tenants - 1 : org;
    t->leaf = leaf;
    t->guarantee = guarantee;
    t->limit = limit;
    t->untrusted = trust == GP_TRUST_UNTRUSTED || (trust == GP_TRUST_INHERIT && s->tenants[t->org].untrusted);
    gp_tenant_spec spec = tb_tenant_spec("H100", guarantee, limit);
    spec.trust = trust;
    gp_error err;
    if (gp_engine_tenant_set(s->e, path, &spec, s->now, &err) != GP_OK)
        check(s, P_INVARIANTS, false, "tenant %s refused: %s", path, err.message);
}

static void setup(seq *s)
{
    static const gp_score scores[] = {GP_SCORE_DEFAULT,  GP_SCORE_DEFAULT, GP_SCORE_FGD,     GP_SCORE_BESTFIT,
                                      GP_SCORE_SPREAD,   GP_SCORE_PACKING, GP_SCORE_RANDOM,  GP_SCORE_CLUSTERING,
                                      GP_SCORE_DOTPROD};
    const int factors[3] = {2, 3, 4};
    bool all_paper = pct(s, 20);
    for (int p = 0; p < 4; p++) {
        gp_score sc = scores[rint_(s, all_paper ? 2 : 0, 8)];
        gp_pool_spec spec = {.score = sc, .timeslice_replicas = p < 3 ? factors[p] : 0, .seed = rnd(s)};
        if (p == 2 && pct(s, 50))
            spec.timeslice_replicas = 0; /* p4 by the default */
        gp_engine_pool_set(s->e, p < 3 ? pool_names[p] : "default", &spec, NULL);
        if (p < 3)
            s->factor[p] = factors[p];
    }
    for (int i = rint_(s, 1, 2); i > 0; i--)
        add_node(s, "x", "H100", 2, SB_H100_MIB, GP_SHARING_EXCLUSIVE, false);
    for (int i = rint_(s, 1, 2); i > 0; i--)
        add_node(s, "m", "H100", rint_(s, 1, 2), SB_H100_MIB, GP_SHARING_MIG, false);
    if (pct(s, 50))
        add_node(s, "a", "A100", 1, SB_A100_40_MIB, GP_SHARING_MIG, false);
    for (int i = rint_(s, 1, 2); i > 0; i--)
        add_node(s, "p", "H100", 2, SB_H100_MIB, GP_SHARING_MPS, false);
    for (int i = 0; i < 2; i++)
        add_node(s, "t", "H100", 1, SB_H100_MIB, GP_SHARING_TIMESLICE, false);
    if (pct(s, 50))
        add_node(s, "y", "H100", 4, SB_H100_MIB, GP_SHARING_EXCLUSIVE, true);
    for (int i = 0; i < s->n_nodes; i++) {
        gp_node_spec spec = node_spec(&s->nodes[i]);
        gp_error err;
        gp_node_info info;
        if (gp_engine_node_add(s->e, &spec, 0, &err) != GP_OK)
            check(s, P_INVARIANTS, false, "node %s refused: %s", spec.name, err.message);
        gp_engine_node_get(s->e, (uint32_t)i, &info);
        s->nodes[i].up = true;
        s->nodes[i].gpu_first = info.gpu_first;
        for (int g = 0; g < s->nodes[i].gpus; g++) {
            s->healthy[info.gpu_first + (uint32_t)g] = true;
            s->reconfigured[info.gpu_first + (uint32_t)g] = -1;
        }
    }
    bool guarded = pct(s, 50);
    tenant(s, "o1", -1, false, GP_TRUST_TRUSTED, guarded ? rint_(s, 1, 2) : -1, -1);
    tenant(s, "o1/a", 0, true, GP_TRUST_INHERIT, guarded && pct(s, 50) ? 1 : -1, -1);
    tenant(s, "o1/b", 0, true, GP_TRUST_INHERIT, -1, -1);
    tenant(s, "o2", -1, false, GP_TRUST_TRUSTED, -1, pct(s, 30) ? 3 : -1);
    tenant(s, "o2/a", 3, true, GP_TRUST_INHERIT, -1, -1);
    if (pct(s, 50)) {
        tenant(s, "o2/u", 3, true, GP_TRUST_UNTRUSTED, -1, -1);
    } else {
        tenant(s, "guest", -1, true, GP_TRUST_UNTRUSTED, -1, -1);
    }
    if (pct(s, 50)) {
        tenant(s, "o3", -1, false, GP_TRUST_TRUSTED, -1, -1);
        tenant(s, "o3/a", s->n_tenants - 1, true, GP_TRUST_INHERIT, -1, -1);
    }
}

/* ---- the books ---- */

static pjob *job_of(seq *s, uint64_t id)
{
    return id >= 1 && id <= (uint64_t)s->n_jobs ? &s->jobs[id - 1] : NULL;
}

static int node_of_gpu(const seq *s, uint32_t gpu)
{
    for (int i = 0; i < s->n_nodes; i++)
        if (gpu >= s->nodes[i].gpu_first && gpu < s->nodes[i].gpu_first + (uint32_t)s->nodes[i].gpus)
            return i;
    return -1;
}

static const sb_mig_model *model_of_gpu(const seq *s, uint32_t gpu)
{
    const pnode *n = &s->nodes[node_of_gpu(s, gpu)];
    return sb_mig_model_of(n->type, n->mem);
}

/* What one slice should count, from our tables; -1 when it may not exist. */
static int64_t expected_slice_milli(seq *s, const pjob *j, const gp_slice *sl)
{
    const pnode *n = &s->nodes[node_of_gpu(s, sl->gpu)];
    switch (j->spec.isolation) {
    case GP_ISO_MIG: {
        const sb_mig_profile *p = sb_mig_profile_of(model_of_gpu(s, sl->gpu), j->spec.share.mig_profile);
        return p ? sb_mig_milli(p->compute) : -1;
    }
    case GP_ISO_MPS: return j->spec.share.mps_milli;
    default: return 1000 / s->factor[n->pool];
    }
}

/* A job bound during this event: read its slices once, compute what it is charged. */
static void fill_bound(seq *s, pjob *j)
{
    j->fresh = false;
    const gp_job_spec *sp = &j->spec;
    if (sp->isolation == GP_ISO_EXCLUSIVE) {
        j->milli = (int64_t)sp->replicas * sp->gpus * 1000;
        return;
    }
    size_t n = gp_engine_job_slices(s->e, sp->id, j->slices, MAX_REPLICAS);
    j->milli = 0;
    if (!check(s, P_BOOKS, n == (size_t)sp->replicas, "job %" PRIu64 ": %zu slices for %d replicas", sp->id, n,
               sp->replicas))
        return;
    for (size_t r = 0; r < n; r++) {
        int64_t want = expected_slice_milli(s, j, &j->slices[r]);
        check(s, P_MIG, want >= 0, "job %" PRIu64 ": %s landed on a GPU whose model lacks it", sp->id,
              sp->share.mig_profile);
        check(s, P_BOOKS, j->slices[r].milli == want, "job %" PRIu64 " slice counts %d, expected %" PRId64, sp->id,
              j->slices[r].milli, want);
        j->milli += want;
    }
}

static bool holds(gp_job_state st)
{
    return st == GP_JOB_ADMITTED || st == GP_JOB_RUNNING || st == GP_JOB_PREEMPTING;
}

/* Reads this event's decisions into the books, then clears them. */
static void absorb(seq *s)
{
    size_t count = 0;
    const gp_decision *d = gp_engine_decisions(s->e, &count);
    for (size_t i = 0; i < count; i++) {
        s->hash = (s->hash ^ ((uint64_t)d[i].kind << 56 ^ d[i].job_id ^ (uint64_t)d[i].time << 20)) *
                  0x100000001b3ULL;
        pjob *j = job_of(s, d[i].job_id);
        switch (d[i].kind) {
        case GP_DEC_BIND:
            if (j) {
                j->bound = j->fresh = true;
                j->bind_at = d[i].time;
                if (j->spec.gpus == 0)
                    counted.cpu_only++;
                else
                    counted.binds[j->spec.isolation]++;
            }
            break;
        case GP_DEC_PREEMPT:
            counted.preempts++;
            break;
        case GP_DEC_TRANSITION:
            if (j && holds(d[i].from) && !holds(d[i].to) && j->bound) {
                if (j->fresh) /* bound and released within this event: 0 s */
                    j->fresh = false;
                else
                    s->mine_closed += j->milli * (d[i].time - j->bind_at);
                j->bound = false;
            }
            if (j && (d[i].to == GP_JOB_SUCCEEDED || d[i].to == GP_JOB_FAILED || d[i].to == GP_JOB_CANCELLED))
                j->live = false;
            break;
        case GP_DEC_USAGE_OPEN:
        case GP_DEC_USAGE_CLOSE: {
            char why[256];
            check(s, P_USAGE, sb_meter_take(&s->meter, &d[i], why, sizeof why), "%s", why);
            break;
        }
        case GP_DEC_RECONFIGURE: {
            int n = 0;
            while (n < s->n_nodes && strcmp(s->nodes[n].name, d[i].node) != 0)
                n++;
            if (!check(s, P_MIG, n < s->n_nodes, "RECONFIGURE of unknown node %s", d[i].node))
                break;
            uint32_t gpu = s->nodes[n].gpu_first + (uint32_t)d[i].gpu_index;
            char why[256];
            check(s, P_MIG, sb_mig_layout_parse(model_of_gpu(s, gpu), d[i].mig_layout, NULL, 0, NULL, why,
                                                sizeof why) >= 0,
                  "RECONFIGURE %s/%d: %s", d[i].node, d[i].gpu_index, why);
            int64_t last = s->reconfigured[gpu];
            check(s, P_MIG, last < 0 || last == d[i].time || d[i].time - last >= RECONFIGURE_INTERVAL,
                  "GPU %u changed layout at %" PRId64 " and again at %" PRId64, gpu, last, d[i].time);
            s->reconfigured[gpu] = d[i].time;
            counted.reconfigures++;
            break;
        }
        default:
            break;
        }
    }
    for (int k = 0; k < s->n_jobs; k++)
        if (s->jobs[k].fresh)
            fill_bound(s, &s->jobs[k]);
    gp_engine_decisions_clear(s->e);
}

/* ---- the checks ---- */

typedef struct gpu_view {
    int milli, jobs, n_mig;
    int64_t mem;
    int org, tenant;     /* -1: none yet; -2: several */
    bool untrusted;
    sb_mig_instance mig[8];
    uint64_t owner;
} gpu_view;

/* Per job: state against our books, time-slice class, untrusted isolation,
 * slices unchanged since bind; collects what each GPU holds into v.
 * Returns our allocated milli-GPU-seconds of the jobs still bound. */
static int64_t check_jobs(seq *s, gpu_view *v)
{
    int64_t mine_open = 0;
    for (int k = 0; k < s->n_jobs; k++) {
        pjob *j = &s->jobs[k];
        gp_job_info info;
        if (gp_engine_job_info(s->e, j->spec.id, &info, NULL) != GP_OK)
            continue;
        check(s, P_BOOKS, holds(info.state) == j->bound, "job %" PRIu64 " is %s, our books say %s", j->spec.id,
              gp_job_state_name(info.state), j->bound ? "bound" : "not bound");
        if (!j->bound)
            continue;
        mine_open += j->milli * (s->now - j->bind_at);
        const ptenant *t = &s->tenants[j->tenant];
        if (j->spec.isolation == GP_ISO_EXCLUSIVE) {
            uint32_t gpus[8];
            size_t n = gp_engine_job_gpus(s->e, j->spec.id, gpus, 8);
            for (size_t i = 0; i < n; i++) {
                check(s, P_BOOKS, v[gpus[i]].owner == 0, "GPU %u owned twice", gpus[i]);
                v[gpus[i]].owner = j->spec.id;
            }
            continue;
        }
        check(s, P_TIMESLICE, j->spec.isolation != GP_ISO_TIMESLICE || info.cls == GP_CLASS_BURSTABLE,
              "time-slice job %" PRIu64 " runs %s", j->spec.id, gp_class_name(info.cls));
        check(s, P_TRUST, !t->untrusted || j->spec.isolation == GP_ISO_MIG, "untrusted %s runs %s", t->path,
              gp_isolation_name(j->spec.isolation));
        gp_slice now_sl[MAX_REPLICAS];
        size_t n = gp_engine_job_slices(s->e, j->spec.id, now_sl, MAX_REPLICAS);
        check(s, P_MIG, n == (size_t)j->spec.replicas && memcmp(now_sl, j->slices, n * sizeof *now_sl) == 0,
              "job %" PRIu64 "'s slices changed while it runs", j->spec.id);
        for (size_t r = 0; r < n && r < MAX_REPLICAS; r++) {
            gpu_view *g = &v[now_sl[r].gpu];
            g->milli += now_sl[r].milli;
            g->jobs++;
            g->mem += now_sl[r].gpu_mem_mib;
            g->org = g->org == -1 || g->org == t->org ? t->org : -2;
            g->tenant = g->tenant == -1 || g->tenant == j->tenant ? j->tenant : -2;
            g->untrusted |= t->untrusted;
            if (now_sl[r].kind == GP_ISO_MIG && g->n_mig < 8) {
                g->mig[g->n_mig].profile = sb_mig_profile_of(model_of_gpu(s, now_sl[r].gpu), now_sl[r].mig_profile);
                g->mig[g->n_mig++].start = now_sl[r].mig_start;
            }
        }
    }
    return mine_open;
}

/* Per GPU: books, mode, lost/unhealthy, trust, MPS, time-slice and MIG rules. */
static void check_gpus(seq *s, const gpu_view *v, size_t n_gpus)
{
    for (uint32_t g = 0; g < n_gpus; g++) {
        gp_gpu_info gi;
        gp_engine_gpu_get(s->e, g, &gi);
        int ni = node_of_gpu(s, g);
        const pnode *node = &s->nodes[ni];
        const gpu_view *b = &v[g];
        check(s, P_BOOKS, gi.job == b->owner, "GPU %u: owner %" PRIu64 ", jobs say %" PRIu64, g, gi.job, b->owner);
        check(s, P_BOOKS, gi.used_milli == b->milli && gi.jobs == b->jobs,
              "GPU %u (%s): used_milli %d jobs %d, slices %d / %d", g, node->name, gi.used_milli, gi.jobs, b->milli,
              b->jobs);
        check(s, P_BOOKS, gi.sharing == node->modes[gi.index], "GPU %u changed mode", g);
        check(s, P_BOOKS, !(b->owner && b->jobs), "GPU %u is whole and shared", g);
        check(s, P_DOWN, (node->up && s->healthy[g]) || (!b->owner && !b->jobs), "GPU %u of %s (%s) is held",
              g, node->name, node->up ? "unhealthy" : "lost");
        check(s, P_TRUST, !b->untrusted || (b->tenant >= 0 && !b->owner),
              "GPU %u: an untrusted tenant shares it", g);
        const char *holder = "";
        if (gi.sharing == GP_SHARING_MPS || gi.sharing == GP_SHARING_TIMESLICE) {
            check(s, P_TRUST, b->org != -2, "GPU %u (%s): two orgs share it", g, node->name);
            holder = b->org >= 0 ? s->tenants[b->org].path : "";
        } else if (gi.sharing == GP_SHARING_MIG && b->untrusted && b->tenant >= 0) {
            holder = s->tenants[b->tenant].path;
        }
        check(s, P_TRUST, strcmp(gi.trust_domain, holder) == 0, "GPU %u: trust_domain \"%s\", expected \"%s\"", g,
              gi.trust_domain, holder);
        if (gi.sharing == GP_SHARING_MPS)
            check(s, P_MPS, b->milli <= 1000 && b->mem <= node->mem, "GPU %u: MPS %d milli, %" PRId64 " MiB", g,
                  b->milli, b->mem);
        if (gi.sharing == GP_SHARING_TIMESLICE)
            check(s, P_TIMESLICE, b->jobs <= s->factor[node->pool] && b->milli <= 1000,
                  "GPU %u: %d replicas with factor %d", g, b->jobs, s->factor[node->pool]);
        if (gi.sharing == GP_SHARING_MIG) {
            sb_mig_instance inst[8];
            char why[256];
            int n = sb_mig_layout_parse(model_of_gpu(s, g), gi.mig_layout, inst, 8, NULL, why, sizeof why);
            check(s, P_MIG, n >= 0, "GPU %u: %s", g, why);
            for (int k = 0; k < b->n_mig && n >= 0; k++) {
                bool found = false;
                for (int i = 0; i < n && i < 8; i++)
                    found |= inst[i].profile == b->mig[k].profile && inst[i].start == b->mig[k].start;
                check(s, P_MIG, found, "GPU %u: a running %s@%d is not in layout \"%s\"", g,
                      b->mig[k].profile ? b->mig[k].profile->name : "?", b->mig[k].start, gi.mig_layout);
            }
        }
    }
}

/* Lost nodes hold nothing; metering and tenant usage match our books. */
static void check_nodes_and_usage(seq *s, int64_t mine_open)
{
    for (int i = 0; i < s->n_nodes; i++) {
        gp_node_info ni;
        gp_engine_node_get(s->e, (uint32_t)i, &ni);
        check(s, P_DOWN, ni.up == s->nodes[i].up, "node %s up=%d", ni.name, ni.up);
        check(s, P_DOWN, ni.up || (ni.cpu_used == 0 && ni.mem_used == 0),
              "lost node %s still has %" PRId64 " millicores and %" PRId64 " MiB in use", ni.name, ni.cpu_used,
              ni.mem_used);
    }
    int64_t metered = sb_meter_total(&s->meter, s->now);
    check(s, P_USAGE, metered == s->mine_closed + mine_open,
          "usage intervals sum to %" PRId64 " mGPU-s, allocations to %" PRId64, metered, s->mine_closed + mine_open);
    for (int t = 0; t < s->n_tenants; t++) {
        uint32_t index;
        gp_tenant_info ti;
        gp_engine_tenant_find(s->e, s->tenants[t].path, &index, NULL);
        gp_engine_tenant_get(s->e, index, &ti);
        int64_t want = 0, got = 0;
        for (int k = 0; k < s->n_jobs; k++)
            if (s->jobs[k].bound && (s->jobs[k].tenant == t || s->tenants[s->jobs[k].tenant].org == t))
                want += s->jobs[k].milli;
        for (int d = 0; d < GP_MAX_GPU_TYPES; d++)
            got += ti.usage.v[d];
        check(s, P_USAGE, got == want, "tenant %s uses %" PRId64 " mGPU, its jobs %" PRId64, ti.path, got, want);
        int h100 = 0;
        while (h100 < gp_engine_gpu_type_count(s->e) - 1 && strcmp(gp_engine_gpu_type_name(s->e, h100), "H100"))
            h100++;
        const ptenant *pt = &s->tenants[t];
        check(s, P_USAGE, pt->limit < 0 || ti.usage.v[h100] <= pt->limit * 1000,
              "tenant %s uses %" PRId64 " H100 mGPU over its limit of %d GPUs", ti.path, ti.usage.v[h100], pt->limit);
        check(s, P_USAGE, pt->guarantee < 0 || ti.guaranteed_usage.v[h100] <= pt->guarantee * 1000,
              "tenant %s runs %" PRId64 " H100 mGPU guaranteed, over its guarantee of %d GPUs", ti.path,
              ti.guaranteed_usage.v[h100], pt->guarantee);
    }
}

static void check_all(seq *s)
{
    static gpu_view v[MAX_GPUS];
    size_t n_gpus = gp_engine_gpu_count(s->e);
    memset(v, 0, sizeof v);
    for (size_t g = 0; g < n_gpus; g++)
        v[g].org = v[g].tenant = -1;
    int64_t mine_open = check_jobs(s, v);
    check_gpus(s, v, n_gpus);
    check_nodes_and_usage(s, mine_open);
    gp_error err;
    gp_err rc = gp_engine_check_invariants(s->e, &err);
    check(s, P_INVARIANTS, rc == GP_OK, "%s: %s", gp_err_name(rc), err.message);
}

/* ---- events ---- */

static void submit(seq *s)
{
    if (s->n_jobs == MAX_JOBS)
        return;
    int t;
    do
        t = rint_(s, 0, s->n_tenants - 1);
    while (!s->tenants[t].leaf);
    pjob *j = &s->jobs[s->n_jobs];
    memset(j, 0, sizeof *j);
    uint64_t id = (uint64_t)s->n_jobs + 1;
    const char *path = s->tenants[t].path;
    int kind = rint_(s, 0, 99), replicas = rint_(s, 1, MAX_REPLICAS);
    if (kind < 20) {
        j->spec = sb_whole_job(id, path, rint_(s, 1, 2));
        replicas = rint_(s, 1, 2);
    } else if (kind < 45) {
        bool unknown = pct(s, 3);
        j->spec = sb_mig_job(id, path, unknown ? "9g.99gb" : mig_profiles[rint_(s, 0, 10)]);
    } else if (kind < 70) {
        static const int shares[] = {100, 125, 200, 250, 300, 333, 400, 500, 750, 1000};
        j->spec = sb_mps_job(id, path, pct(s, 80) ? shares[rint_(s, 0, 9)] : rint_(s, 1, 1000),
                             pct(s, 70) ? 0 : rint_(s, 1, 90000));
    } else if (kind < 85) {
        j->spec = sb_timeslice_job(id, path, pct(s, 10)   ? GP_KIND_TRAINING
                                             : pct(s, 50) ? GP_KIND_INFERENCE
                                                          : GP_KIND_INTERACTIVE);
    } else {
        j->spec = sb_cpu_job(id, path, rint_(s, 500, 16000), rint_(s, 0, 65536));
        replicas = rint_(s, 1, 2);
    }
    j->spec.replicas = replicas;
    j->spec.priority = rint_(s, -5, 5);
    j->spec.checkpoint_grace_s = rint_(s, 0, 60);
    if (j->spec.gpus > 0 && pct(s, 30)) {
        j->spec.n_gpu_types = 1;
        /* only a type the engine knows: an unknown one is refused at submit */
        bool a100 = false;
        for (int k = 0; k < gp_engine_gpu_type_count(s->e); k++)
            a100 |= strcmp(gp_engine_gpu_type_name(s->e, k), "A100") == 0;
        j->spec.gpu_types[0] = pct(s, 70) || !a100 ? "H100" : "A100";
    }
    if (j->spec.isolation == GP_ISO_EXCLUSIVE && pct(s, 50)) {
        j->spec.cpu_millis = rint_(s, 0, 8000);
        j->spec.mem_mib = rint_(s, 0, 16384);
    }
    j->tenant = t;
    const char *field = "";
    gp_isolation iso = j->spec.isolation;
    if (s->tenants[t].untrusted && (iso == GP_ISO_MPS || iso == GP_ISO_TIMESLICE))
        field = "isolation";
    else if (iso == GP_ISO_MIG && strcmp(j->spec.share.mig_profile, "9g.99gb") == 0)
        field = "share.mig";
    else if (iso == GP_ISO_TIMESLICE && j->spec.kind == GP_KIND_TRAINING)
        field = "isolation";
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_job_submit(s->e, &j->spec, s->now, &err);
    note(s, "submit %" PRIu64 " %s %s x%d gpus=%d %s mps=%d mem=%" PRId64 " -> %s", id, path,
         gp_isolation_name(iso), replicas, j->spec.gpus, j->spec.share.mig_profile, j->spec.share.mps_milli,
         j->spec.share.gpu_mem_mib, gp_err_name(rc));
    if (field[0]) {
        check(s, P_SUBMIT, rc == GP_ERR_INVALID && strcmp(err.field, field) == 0,
              "job %" PRIu64 " (%s of %s) should be refused on %s, got %s (%s)", id, gp_isolation_name(iso), path,
              field, gp_err_name(rc), err.field);
        counted.refused += rc != GP_OK;
        if (rc == GP_OK)
            gp_engine_job_cancel(s->e, id, s->now, NULL);
        else
            return;
    } else {
        check(s, P_SUBMIT, rc == GP_OK, "job %" PRIu64 " refused: %s (%s)", id, err.message, err.field);
        if (rc != GP_OK)
            return;
    }
    j->live = true;
    s->n_jobs++;
}

static int pick_job(seq *s, bool bound_only)
{
    int k = rint_(s, 0, s->n_jobs > 0 ? s->n_jobs - 1 : 0);
    for (int i = 0; i < s->n_jobs; i++) {
        pjob *j = &s->jobs[(k + i) % s->n_jobs];
        if (j->live && (!bound_only || j->bound))
            return (k + i) % s->n_jobs;
    }
    return -1;
}

static void one_event(seq *s)
{
    int r = rint_(s, 0, 99), k;
    pnode *n = &s->nodes[rint_(s, 0, s->n_nodes - 1)];
    if (r < 40) {
        submit(s);
    } else if (r < 55 && (k = pick_job(s, true)) >= 0) {
        gp_exit how = pct(s, 80) ? GP_EXIT_SUCCEEDED : GP_EXIT_FAILED;
        note(s, "finish %" PRIu64, s->jobs[k].spec.id);
        gp_engine_job_finished(s->e, s->jobs[k].spec.id, how, s->now, NULL);
    } else if (r < 62 && (k = pick_job(s, false)) >= 0) {
        note(s, "cancel %" PRIu64, s->jobs[k].spec.id);
        gp_engine_job_cancel(s->e, s->jobs[k].spec.id, s->now, NULL);
    } else if (r < 65 && n->up) {
        note(s, "lose %s", n->name);
        gp_engine_node_lost(s->e, n->name, s->now, NULL);
        n->up = false;
    } else if (r < 69 && !n->up) {
        gp_node_spec spec = node_spec(n);
        gp_error err;
        note(s, "re-add %s", n->name);
        check(s, P_INVARIANTS, gp_engine_node_add(s->e, &spec, s->now, &err) == GP_OK, "re-add %s: %s", n->name,
              err.message);
        n->up = true;
    } else if (r < 71) {
        int i = rint_(s, 0, n->gpus - 1);
        uint32_t g = n->gpu_first + (uint32_t)i;
        s->healthy[g] = !s->healthy[g];
        note(s, "GPU %s/%d healthy=%d", n->name, i, s->healthy[g]);
        gp_engine_gpu_health(s->e, n->name, i, s->healthy[g], s->now, NULL);
    } else if (r < 73) {
        gp_node_info info;
        gp_engine_node_get(s->e, (uint32_t)(n - s->nodes), &info);
        note(s, "drain %s %d", n->name, !info.draining);
        gp_engine_node_drain(s->e, n->name, !info.draining, s->now, NULL);
    } else {
        s->now += pct(s, 15) ? 0 : rint_(s, 1, 90);
        note(s, "tick");
        gp_engine_tick(s->e, s->now, NULL);
    }
}

static void run_sequence(seq *s, uint64_t seed, bool verbose, unsigned skip)
{
    memset(s, 0, sizeof *s);
    s->seed = s->rng = seed;
    s->verbose = verbose;
    s->skip = skip;
    s->hash = 0xcbf29ce484222325ULL;
    s->e = gp_engine_new(NULL);
    setup(s);
    gp_engine_tick(s->e, 0, NULL);
    absorb(s);
    int events = rint_(s, 100, 300);
    for (s->event = 1; s->event <= events && !s->failed; s->event++) {
        one_event(s);
        counted.events++;
        absorb(s);
        check_all(s);
    }
    gp_engine_free(s->e);
    sb_meter_free(&s->meter);
}

/* ---- tests ---- */

static unsigned env_skip(void)
{
    const char *v = getenv("GP_PROPERTY_SKIP");
    unsigned mask = 0;
    for (int p = 0; v && p < P_COUNT; p++)
        if (strstr(v, prop_names[p]))
            mask |= 1u << p;
    return mask;
}

static void random_sequences_keep_the_sharing_properties(void **state)
{
    (void)state;
    static seq s;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", DEFAULT_SEED), count = gp_prop_env_u64("GP_PROPERTY_SEQUENCES",
                                                                               DEFAULT_SEQUENCES);
    bool keep_going = gp_prop_env_u64("GP_PROPERTY_KEEP_GOING", 0) != 0, verbose = gp_prop_env_u64("GP_PROPERTY_VERBOSE", 0) != 0;
    unsigned skip = env_skip();
    uint64_t failures = 0, ran = 0, per_prop[P_COUNT] = {0};
    char first[1400] = "";
    for (uint64_t i = 0; i < count; i++) {
        run_sequence(&s, base + i, verbose, skip);
        ran++;
        if (!s.failed)
            continue;
        failures++;
        per_prop[s.failed_prop]++;
        fprintf(stderr, "FAIL %s\n  reproduce: GP_PROPERTY_SEED=0x%" PRIx64 " GP_PROPERTY_SEQUENCES=1\n", s.message,
                s.seed);
        if (per_prop[s.failed_prop] == 1) {
            fprintf(stderr, "  last events:\n");
            for (int e = s.failed_event - LOG_LINES + 1; e <= s.failed_event; e++)
                if (e >= 1)
                    fprintf(stderr, "    %s\n", s.log[e % LOG_LINES]);
        }
        if (failures == 1)
            snprintf(first, sizeof first, "%s (reproduce: GP_PROPERTY_SEED=0x%" PRIx64 " GP_PROPERTY_SEQUENCES=1)",
                     s.message, s.seed);
        if (!keep_going)
            break;
    }
    printf("sharing property: %" PRIu64 " of %" PRIu64 " sequences run passed (base seed 0x%" PRIx64 ")\n",
           ran - failures, ran, base);
    printf("  %" PRIu64 " events; binds: %" PRIu64 " whole, %" PRIu64 " MIG, %" PRIu64 " MPS, %" PRIu64
           " time-slice, %" PRIu64 " CPU-only; %" PRIu64 " preemptions, %" PRIu64 " layout changes, %" PRIu64
           " submits refused\n",
           counted.events, counted.binds[GP_ISO_EXCLUSIVE], counted.binds[GP_ISO_MIG], counted.binds[GP_ISO_MPS],
           counted.binds[GP_ISO_TIMESLICE], counted.cpu_only, counted.preempts, counted.reconfigures,
           counted.refused);
    for (int p = 0; p < P_COUNT; p++)
        if (per_prop[p])
            printf("  %s: %" PRIu64 " failing sequences\n", prop_names[p], per_prop[p]);
    if (failures > 0)
        fail_msg("%s%s", first, keep_going ? "" : "\n(stopped at the first failure; GP_PROPERTY_KEEP_GOING=1 runs all)");
}

static void the_same_seed_gives_the_same_decisions(void **state)
{
    (void)state;
    static seq a, b;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", DEFAULT_SEED);
    for (uint64_t i = 0; i < 8; i++) {
        run_sequence(&a, base + 7919 * i, false, ~0u);
        run_sequence(&b, base + 7919 * i, false, ~0u);
        if (a.hash != b.hash)
            fail_msg("seed 0x%" PRIx64 ": two runs emit different decisions", base + 7919 * i);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_sequences_keep_the_sharing_properties),
        cmocka_unit_test(the_same_seed_gives_the_same_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
