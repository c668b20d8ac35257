/* bench_engine.c - the scheduling pass of the engine at fleet scale.
 *
 * What it measures: the time of one gp_engine_tick() (timers plus one
 * scheduling pass) on a full 50,000-GPU fleet that always has about 10,000
 * jobs waiting, and how many placements per second of tick time that buys.
 * Only the tick is timed; building the fleet, submitting, finishing jobs and
 * reading decisions are the caller's work and stay outside the clock.
 *
 * The world (all sizes scale with --gpus; everything random comes from one
 * xoshiro256** stream seeded by --seed, so a run reproduces exactly):
 *
 *   fleet    --gpus / 8 nodes of 8 GPUs: 50 % H100, 30 % A100, 20 % L40S.
 *            Nodes of one type sit in fabric blocks of 32 nodes; blocks are
 *            spread over 4 zones.  128 cores and 1 TiB per node.
 *   tenants  6 orgs x 10 teams x 5 projects = 300 leaf projects.  60 % of
 *            each GPU type is guaranteed, split over the projects that use
 *            the type (one or two types each) by a random weight; teams and
 *            orgs get the sums.  One project in ten has a zero floor (a pure
 *            borrower); one in three has a limit; org0 is capped at 25 % of
 *            the H100s; one project in five has a per-user limit.
 *   --mixed  GPU sharing too: one H100 and A100 node in three is in MIG
 *            mode (a quarter of all GPUs), one in sixteen in MPS mode, and
 *            one L40S node in four in MPS and one in four time-sliced; 40 %
 *            of the 1-GPU jobs become fractional: a MIG instance (1g, 2g or
 *            3g), an MPS share of 25 or 50 %, or a time-slice replica
 *            (interactive); one job in fifty is CPU-only.
 *   jobs     60 % 1 GPU, 15 % 2-4 GPUs, 15 % 1x8, 7 % 2-8 x 8 GPUs in one
 *            block, 3 % 16-64 x 8 GPUs (block topology up to 256 GPUs, any
 *            above); expected runtimes from a minute to two hours, actual
 *            runtime 0.5-1.3 x expected; checkpoint grace 30-300 s; 20 % carry
 *            a priority.  Time is compressed on purpose (small jobs run
 *            minutes, not hours): a 10 s pass sees the churn of a very busy
 *            fleet, 200-300 placements, not the handful a real 10 s brings.
 *
 * Steady state: submit jobs until --pending are waiting, tick, and repeat
 * until the fleet is full.  Then every pass advances the clock by --step
 * seconds, reports the running jobs whose time is up as finished (and
 * forgets them), refills the queue to --pending, and ticks.  To make reclaim
 * happen, 10 % of the guaranteed projects start dormant (their floor is idle
 * and borrowed by everyone else); every --wave-every passes a few of them
 * wake up and submit work up to their guarantee at once (which must preempt
 * borrowers), and as many active projects fall dormant.  Preempted victims
 * are never reported stopped: their grace runs out and the tick releases
 * them, so that work is inside the measured time too.
 *
 * --hot-tenant PCT sends that percentage of the refill's jobs to one project,
 * org1/team0/proj0 (no limit of its own, outside the capped org0; it
 * submits even while dormant), as 1-GPU jobs, like one team submitting a
 * large job array (priorities and runtimes drawn as for any job): its queue
 * then holds most pending jobs, and every submit, bind and requeue there
 * inserts into or removes from one long queue.  0 (the default) draws
 * nothing extra, so the default run is unchanged.
 *
 * --dedicated-orgs N gives orgs org0..org(N-1) `nodes: dedicated` (nodes of
 * their own, core/dedicated.c): the cost of the fence around every job's
 * looks and what exclusivity does to placement.  0 (the default) sets
 * nothing, so the default run is unchanged.
 *
 * Output: a human summary (with the engine's own wait reasons of the jobs
 * still queued at the end, and a warning if a reclaiming job still waits
 * after its victims' graces ended), then as the last line one JSON object
 * (the numbers CI and the docs quote).  placements counts BIND decisions of
 * the measured passes, preemptions PREEMPT decisions; placements_per_s
 * divides the placements by the summed tick time of the same passes.
 * The digest line (and decisions_digest) hashes every decision of the run
 * with the GPUs of every bind: two builds that print the same digest for
 * the same options decided alike (scripts/decisions-compare).
 * --verbose prints one line per pass on stderr; --check-every N runs the
 * engine's invariant check every N passes (outside the timed section).
 */
#include "core/engine.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N_TYPES = 3, N_ORGS = 6, TEAMS_PER_ORG = 10, PROJECTS_PER_TEAM = 5 };
enum { GPUS_PER_NODE = 8, NODES_PER_BLOCK = 32, N_ZONES = 4 };

static const char *const type_names[N_TYPES] = {"H100", "A100", "L40S"};
static const int type_node_pct[N_TYPES] = {50, 30, 0}; /* L40S takes the rest */
static const int64_t type_gpu_mem_mib[N_TYPES] = {81559, 81920, 46068};
static const char *const zone_names[N_ZONES] = {"zone-a", "zone-b", "zone-c", "zone-d"};

static const int64_t node_cpu_millis = 128000;
static const int64_t node_mem_mib = 1048576; /* 1 TiB */
static const double guaranteed_fraction = 0.60;

/* ---- options -------------------------------------------------------- */

typedef struct bench_options {
    uint64_t seed;
    int passes;
    int warmup;
    int64_t gpus;
    int64_t pending;
    int64_t step_s;
    int wave_every;
    int wave_size;
    int check_every; /* run gp_engine_check_invariants every N passes (0 = only at the end) */
    bool verbose;    /* one line per pass on stderr */
    bool mixed;      /* MIG, MPS and time-sliced GPUs and fractional jobs */
    int hot_pct;     /* percentage of refill jobs that go to the hot project (0 = none) */
    int max_preemptions; /* the engine's preemption cap (0 = none) */
    bool fair_share;     /* the engine's fair-share reclaim */
    int dedicated_orgs;  /* orgs 0..N-1 get dedicated nodes (0 = none) */
    bool sweep;      /* --pending-sweep: one run per level of SWEEP_LEVELS, a curve */
    int bookings;    /* future advance bookings made before the fill (0 = none) */
} bench_options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_engine [--seed N] [--passes N] [--warmup N] [--gpus N] [--pending N]\n"
            "                    [--step SECONDS] [--wave-every N] [--wave-size N] [--check-every N]\n"
            "                    [--hot-tenant PCT] [--max-preemptions N] [--fair-share-reclaim 0|1]\n"
            "                    [--dedicated-orgs N] [--bookings N] [--pending-sweep]\n"
            "  --seed        PRNG seed (default 1)\n"
            "  --passes      measured scheduling passes (default 200)\n"
            "  --warmup      unmeasured passes after the fill (default 20)\n"
            "  --gpus        fleet size in GPUs, 8 per node (default 50000)\n"
            "  --pending     jobs kept waiting at the start of every pass (default 10000)\n"
            "  --step        simulated seconds between passes (default 10)\n"
            "  --wave-every  passes between waves of returning guaranteed projects (default 10)\n"
            "  --wave-size   projects that wake up (and fall dormant) per wave (default 3)\n"
            "  --check-every run the engine's invariant check every N passes (default 0: end only)\n"
            "  --hot-tenant  percentage of submitted jobs that go to one project, org1/team0/proj0 (default 0)\n"
            "  --max-preemptions  a job preempted N times is no longer a victim (default 3; 0: no cap)\n"
            "  --fair-share-reclaim  1: tenants below their fair share reclaim from those above (default 0)\n"
            "  --dedicated-orgs  orgs org0..orgN-1 have dedicated nodes (default 0: none)\n"
            "  --bookings    N advance bookings (1-4 x 8 GPUs, 4 h, starting 7 days ahead and later) made\n"
            "                before the fill; prints the booking request latency (default 0)\n"
            "  --verbose     one line per pass on stderr\n"
            "  --mixed       a quarter of the GPUs in MIG mode, some MPS and time-sliced, fractional jobs\n"
            "  --pending-sweep  one run each at 10000, 25000, 50000 and 100000 pending (other options\n"
            "                kept), then the curve: pass p50/p99, CPU p50 and peak memory per level\n");
}

static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int64_t)v;
    return true;
}

/* 0: run; 1: help printed, exit 0; 2: bad command line. */
static int parse_options(int argc, char **argv, bench_options *o)
{
    *o = (bench_options){.seed = 1, .passes = 200, .warmup = 20, .gpus = 50000, .pending = 10000,
                         .step_s = 10, .wave_every = 10, .wave_size = 3, .check_every = 0,
                         .max_preemptions = gp_engine_config_default().max_preemptions,
                         .fair_share = gp_engine_config_default().fair_share_reclaim};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(flag, "--mixed") == 0) {
            o->mixed = true;
            continue;
        }
        if (strcmp(flag, "--verbose") == 0 || strcmp(flag, "-v") == 0) {
            o->verbose = true;
            continue;
        }
        if (strcmp(flag, "--pending-sweep") == 0) {
            o->sweep = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_engine: %s needs a value\n", flag);
            return 2;
        }
        const char *value = argv[++i];
        int64_t v = 0;
        bool ok = true;
        if (strcmp(flag, "--seed") == 0) {
            char *end = NULL;
            errno = 0;
            unsigned long long s = strtoull(value, &end, 10);
            ok = errno == 0 && end != value && *end == '\0';
            o->seed = (uint64_t)s;
        } else if (strcmp(flag, "--passes") == 0) {
            ok = parse_int(value, 1, 1000000, &v);
            o->passes = (int)v;
        } else if (strcmp(flag, "--warmup") == 0) {
            ok = parse_int(value, 0, 1000000, &v);
            o->warmup = (int)v;
        } else if (strcmp(flag, "--gpus") == 0) {
            ok = parse_int(value, GPUS_PER_NODE, 1000000, &o->gpus);
        } else if (strcmp(flag, "--pending") == 0) {
            ok = parse_int(value, 0, 10000000, &o->pending);
        } else if (strcmp(flag, "--step") == 0) {
            ok = parse_int(value, 1, 86400, &o->step_s);
        } else if (strcmp(flag, "--wave-every") == 0) {
            ok = parse_int(value, 0, 1000000, &v);
            o->wave_every = (int)v;
        } else if (strcmp(flag, "--wave-size") == 0) {
            ok = parse_int(value, 0, 300, &v);
            o->wave_size = (int)v;
        } else if (strcmp(flag, "--check-every") == 0) {
            ok = parse_int(value, 0, 1000000, &v);
            o->check_every = (int)v;
        } else if (strcmp(flag, "--bookings") == 0) {
            ok = parse_int(value, 0, 100000, &v);
            o->bookings = (int)v;
        } else if (strcmp(flag, "--hot-tenant") == 0) {
            ok = parse_int(value, 0, 100, &v);
            o->hot_pct = (int)v;
        } else if (strcmp(flag, "--max-preemptions") == 0) {
            ok = parse_int(value, 0, 1000000, &v);
            o->max_preemptions = (int)v;
        } else if (strcmp(flag, "--fair-share-reclaim") == 0) {
            ok = parse_int(value, 0, 1, &v);
            o->fair_share = v == 1;
        } else if (strcmp(flag, "--dedicated-orgs") == 0) {
            ok = parse_int(value, 0, N_ORGS, &v);
            o->dedicated_orgs = (int)v;
        } else {
            fprintf(stderr, "bench_engine: unknown flag %s\n", flag);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "bench_engine: bad value for %s: %s\n", flag, value);
            return 2;
        }
    }
    return 0;
}

/* ---- deterministic PRNG: xoshiro256** seeded through splitmix64 ------ */

typedef struct bench_rng {
    uint64_t s[4];
} bench_rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(bench_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(bench_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1). */
static double rng_unit(bench_rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [lo, hi]. */
static int64_t rng_range(bench_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(rng_next(r) % span);
}

/* Log-uniform in [lo, hi]. */
static int64_t rng_log_range(bench_rng *r, double lo, double hi)
{
    return (int64_t)llround(exp(log(lo) + rng_unit(r) * (log(hi) - log(lo))));
}

/* ---- the world -------------------------------------------------------- */

typedef struct bench_project {
    char path[GP_PATH_MAX];
    int primary;              /* GPU type its work mostly asks for */
    int secondary;            /* second guaranteed type, or -1 */
    double weight;            /* demand and guarantee weight */
    bool borrower;            /* zero floor: all its work is burstable */
    int64_t guarantee[N_TYPES]; /* whole GPUs */
    bool dormant;             /* submits nothing for now */
} bench_project;

enum { JOB_UNKNOWN = 0, JOB_PENDING, JOB_RUNNING, JOB_PREEMPTING, JOB_DONE };

/* What the bench (playing the node agents) knows of a job. */
typedef struct bench_job {
    int32_t runtime_s; /* how long it really runs once bound */
    uint32_t seq;      /* bumped on every bind, so stale finish events are skipped */
    uint8_t state;
    bool wave;         /* submitted by a returning project (must run under its floor) */
} bench_job;

/* A running job's end, in a binary min-heap on time. */
typedef struct finish_event {
    int64_t time;
    uint64_t id;
    uint32_t seq;
} finish_event;

typedef struct bench_pass {
    double tick_ms;
    double tick_cpu_ms; /* the same tick in this thread's CPU time (less sensitive to a busy machine) */
    int64_t placed, preempted, pending, running;
} bench_pass;

typedef struct bench {
    bench_options opt;
    bench_rng rng;
    gp_engine *engine;
    int64_t now;

    int64_t nodes;
    int64_t type_gpus[N_TYPES];
    int64_t blocks;

    bench_project projects[N_ORGS * TEAMS_PER_ORG * PROJECTS_PER_TEAM];
    int n_projects;
    int tenant_nodes;
    double *active_cum; /* cumulative weights of active projects (for the pick) */
    int *active_idx;
    int n_active;

    bench_job *jobs;    /* by id */
    size_t cap_jobs;
    uint64_t next_id;

    finish_event *heap;
    size_t n_heap, cap_heap;

    /* counters since the last reset (reset when the measured passes start) */
    int64_t released_victims, finished, submitted, wave_jobs, stops;
    uint64_t digest;    /* FNV-1a over every decision of the run and the GPUs of every bind */
} bench;

static void digest_add(uint64_t *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        *h = (*h ^ p[i]) * 1099511628211u;
}

/* What two engines that decide alike agree on: a decision's kind, time,
 * job, states, grace, reclaimer and reason, and where a bound job runs. */
static void digest_decision(bench *b, const gp_decision *d)
{
    digest_add(&b->digest, &d->kind, sizeof d->kind);
    digest_add(&b->digest, &d->time, sizeof d->time);
    digest_add(&b->digest, &d->job_id, sizeof d->job_id);
    digest_add(&b->digest, &d->from, sizeof d->from);
    digest_add(&b->digest, &d->to, sizeof d->to);
    digest_add(&b->digest, &d->grace_s, sizeof d->grace_s);
    digest_add(&b->digest, &d->by_job, sizeof d->by_job);
    digest_add(&b->digest, d->reason, strlen(d->reason));
    if (d->kind == GP_DEC_BIND) {
        uint32_t gpus[4096];
        size_t n = gp_engine_job_gpus(b->engine, d->job_id, gpus, sizeof gpus / sizeof gpus[0]);
        digest_add(&b->digest, gpus, n * sizeof gpus[0]);
    }
}

static void die(const char *what, const gp_error *err)
{
    fprintf(stderr, "bench_engine: %s: %s (%s%s%s)\n", what, err ? err->message : "",
            err ? gp_err_name(err->code) : "", err && err->field[0] ? ", field " : "",
            err ? err->field : "");
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "bench_engine: out of memory\n");
        exit(1);
    }
    return q;
}

static double monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int64_t rss_hwm_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    int64_t kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = strtoll(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib < 0 ? -1 : (kib + 1023) / 1024;
}

/* ---- finish-event heap ------------------------------------------------ */

static void heap_push(bench *b, finish_event ev)
{
    if (b->n_heap == b->cap_heap) {
        b->cap_heap = b->cap_heap ? b->cap_heap * 2 : 4096;
        b->heap = xrealloc(b->heap, b->cap_heap * sizeof *b->heap);
    }
    size_t i = b->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (b->heap[parent].time <= ev.time)
            break;
        b->heap[i] = b->heap[parent];
        i = parent;
    }
    b->heap[i] = ev;
}

static finish_event heap_pop(bench *b)
{
    finish_event top = b->heap[0];
    finish_event last = b->heap[--b->n_heap];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= b->n_heap)
            break;
        if (child + 1 < b->n_heap && b->heap[child + 1].time < b->heap[child].time)
            child++;
        if (last.time <= b->heap[child].time)
            break;
        b->heap[i] = b->heap[child];
        i = child;
    }
    if (b->n_heap > 0)
        b->heap[i] = last;
    return top;
}

/* ---- fleet ------------------------------------------------------------ */

/* --mixed: which nodes share their GPUs, and how. */
static gp_sharing sharing_of(int type, int64_t k)
{
    if (type == 2) /* L40S: no MIG */
        return k % 4 == 1 ? GP_SHARING_MPS : k % 4 == 2 ? GP_SHARING_TIMESLICE : GP_SHARING_EXCLUSIVE;
    if (k % 3 == 1)
        return GP_SHARING_MIG;
    return k % 16 == 2 ? GP_SHARING_MPS : GP_SHARING_EXCLUSIVE;
}

static void build_fleet(bench *b)
{
    b->nodes = b->opt.gpus / GPUS_PER_NODE;
    int64_t type_nodes[N_TYPES];
    int64_t assigned = 0;
    for (int t = 0; t < N_TYPES - 1; t++) {
        type_nodes[t] = b->nodes * type_node_pct[t] / 100;
        assigned += type_nodes[t];
    }
    type_nodes[N_TYPES - 1] = b->nodes - assigned;

    int64_t node_number = 0;
    for (int t = 0; t < N_TYPES; t++) {
        b->type_gpus[t] = type_nodes[t] * GPUS_PER_NODE;
        for (int64_t k = 0; k < type_nodes[t]; k++) {
            int64_t block_in_type = k / NODES_PER_BLOCK;
            int64_t block_number = b->blocks + block_in_type;
            char name[GP_NAME_MAX], block[GP_NAME_MAX];
            snprintf(name, sizeof name, "node-%05" PRId64, node_number++);
            snprintf(block, sizeof block, "blk-%s-%03" PRId64, type_names[t], block_in_type);
            gp_node_spec spec = {
                .sharing = b->opt.mixed ? sharing_of(t, k) : GP_SHARING_EXCLUSIVE,
                .name = name,
                .zone = zone_names[block_number % N_ZONES],
                .block = block,
                .gpu_type = type_names[t],
                .gpu_count = GPUS_PER_NODE,
                .nvlink_domains = 1,
                .gpu_mem_mib = type_gpu_mem_mib[t],
                .cpu_millis = node_cpu_millis,
                .mem_mib = node_mem_mib,
                .gpu_uuids = NULL,
            };
            gp_error err;
            if (gp_engine_node_add(b->engine, &spec, b->now, &err) != GP_OK)
                die("node_add", &err);
        }
        b->blocks += (type_nodes[t] + NODES_PER_BLOCK - 1) / NODES_PER_BLOCK;
    }
}

/* ---- tenants ---------------------------------------------------------- */

/* A quota of whole GPUs per type (0 entries left out), cpu and memory in
 * proportion to the node share of each GPU. */
static gp_quota quota_of(const int64_t gpus[N_TYPES], bool with_host)
{
    gp_quota q = {.set = true, .cpu_millis = GP_UNLIMITED, .mem_mib = GP_UNLIMITED};
    int64_t total = 0;
    for (int t = 0; t < N_TYPES; t++) {
        total += gpus[t];
        if (gpus[t] <= 0)
            continue;
        snprintf(q.gpu[q.n_gpu].type, sizeof q.gpu[q.n_gpu].type, "%s", type_names[t]);
        q.gpu[q.n_gpu].milli = gpus[t] * 1000;
        q.n_gpu++;
    }
    if (with_host) {
        q.cpu_millis = total * (node_cpu_millis / GPUS_PER_NODE);
        q.mem_mib = total * (node_mem_mib / GPUS_PER_NODE);
    }
    return q;
}

static gp_quota limit_of(const int64_t gpus[N_TYPES])
{
    gp_quota q = {.set = true, .cpu_millis = GP_UNLIMITED, .mem_mib = GP_UNLIMITED};
    for (int t = 0; t < N_TYPES; t++) {
        if (gpus[t] <= 0)
            continue;
        snprintf(q.gpu[q.n_gpu].type, sizeof q.gpu[q.n_gpu].type, "%s", type_names[t]);
        q.gpu[q.n_gpu].milli = gpus[t] * 1000;
        q.n_gpu++;
    }
    return q;
}

static void tenant_set(bench *b, const char *path, const gp_tenant_spec *spec)
{
    gp_error err;
    if (gp_engine_tenant_set(b->engine, path, spec, b->now, &err) != GP_OK) {
        fprintf(stderr, "bench_engine: tenant %s\n", path);
        die("tenant_set", &err);
    }
    b->tenant_nodes++;
}

static int pick_type(bench_rng *r)
{
    double u = rng_unit(r);
    return u < 0.5 ? 0 : u < 0.8 ? 1 : 2;
}

static void build_tenants(bench *b)
{
    b->n_projects = N_ORGS * TEAMS_PER_ORG * PROJECTS_PER_TEAM;
    double type_weight[N_TYPES] = {0};
    for (int p = 0; p < b->n_projects; p++) {
        bench_project *pr = &b->projects[p];
        int org = p / (TEAMS_PER_ORG * PROJECTS_PER_TEAM);
        int team = (p / PROJECTS_PER_TEAM) % TEAMS_PER_ORG;
        snprintf(pr->path, sizeof pr->path, "org%d/team%d/proj%d", org, team, p % PROJECTS_PER_TEAM);
        pr->primary = pick_type(&b->rng);
        pr->secondary = -1;
        if (rng_unit(&b->rng) < 0.3) {
            pr->secondary = (pr->primary + 1 + (int)rng_range(&b->rng, 0, 1)) % N_TYPES;
        }
        pr->weight = 0.5 + 1.5 * rng_unit(&b->rng);
        pr->borrower = rng_unit(&b->rng) < 0.10;
        if (!pr->borrower) {
            type_weight[pr->primary] += pr->weight;
            if (pr->secondary >= 0)
                type_weight[pr->secondary] += pr->weight * 0.5;
        }
    }
    /* split 60 % of each type over the projects that use it */
    for (int p = 0; p < b->n_projects; p++) {
        bench_project *pr = &b->projects[p];
        if (pr->borrower)
            continue;
        for (int t = 0; t < N_TYPES; t++) {
            double w = t == pr->primary ? pr->weight : t == pr->secondary ? pr->weight * 0.5 : 0.0;
            if (w <= 0 || type_weight[t] <= 0)
                continue;
            double pool = floor(guaranteed_fraction * (double)b->type_gpus[t]);
            pr->guarantee[t] = (int64_t)floor(pool * w / type_weight[t]);
        }
    }

    /* orgs, then teams, then projects: parents must exist first */
    for (int org = 0; org < N_ORGS; org++) {
        int64_t org_g[N_TYPES] = {0};
        for (int p = 0; p < b->n_projects; p++)
            if (p / (TEAMS_PER_ORG * PROJECTS_PER_TEAM) == org)
                for (int t = 0; t < N_TYPES; t++)
                    org_g[t] += b->projects[p].guarantee[t];
        gp_tenant_spec spec = {.guarantee = quota_of(org_g, true), .weight = 0, .lend = -1};
        if (org < b->opt.dedicated_orgs)
            spec.nodes = GP_NODES_DEDICATED;
        if (org == 0) {
            int64_t cap[N_TYPES] = {b->type_gpus[0] / 4, 0, 0};
            if (cap[0] < org_g[0])
                cap[0] = org_g[0];
            spec.limit = limit_of(cap);
        }
        char path[GP_PATH_MAX];
        snprintf(path, sizeof path, "org%d", org);
        tenant_set(b, path, &spec);
    }
    for (int team = 0; team < N_ORGS * TEAMS_PER_ORG; team++) {
        int64_t team_g[N_TYPES] = {0};
        for (int k = 0; k < PROJECTS_PER_TEAM; k++)
            for (int t = 0; t < N_TYPES; t++)
                team_g[t] += b->projects[team * PROJECTS_PER_TEAM + k].guarantee[t];
        gp_tenant_spec spec = {.guarantee = quota_of(team_g, true), .weight = 0, .lend = -1};
        char path[GP_PATH_MAX];
        snprintf(path, sizeof path, "org%d/team%d", team / TEAMS_PER_ORG, team % TEAMS_PER_ORG);
        tenant_set(b, path, &spec);
    }
    for (int p = 0; p < b->n_projects; p++) {
        bench_project *pr = &b->projects[p];
        gp_tenant_spec spec = {.guarantee = quota_of(pr->guarantee, true), .weight = 0, .lend = -1};
        if (p % 3 == 1) {
            /* a ceiling: twice the floor (at least 16 GPUs) on the types it uses */
            int64_t cap[N_TYPES] = {0};
            cap[pr->primary] = pr->guarantee[pr->primary] * 2 > 16 ? pr->guarantee[pr->primary] * 2 : 16;
            if (pr->secondary >= 0)
                cap[pr->secondary] =
                    pr->guarantee[pr->secondary] * 2 > 16 ? pr->guarantee[pr->secondary] * 2 : 16;
            spec.limit = limit_of(cap);
        }
        if (p % 5 == 2) {
            int64_t per_user[N_TYPES] = {0};
            per_user[pr->primary] = 64;
            spec.user_limit = limit_of(per_user);
        }
        tenant_set(b, pr->path, &spec);
    }
}

/* Dormant projects submit nothing; 10 % of the guaranteed ones start so. */
static void rebuild_active(bench *b)
{
    b->n_active = 0;
    double sum = 0;
    for (int p = 0; p < b->n_projects; p++) {
        if (b->projects[p].dormant)
            continue;
        sum += b->projects[p].weight;
        b->active_idx[b->n_active] = p;
        b->active_cum[b->n_active] = sum;
        b->n_active++;
    }
}

static int pick_active_project(bench *b)
{
    double u = rng_unit(&b->rng) * b->active_cum[b->n_active - 1];
    int lo = 0, hi = b->n_active - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (b->active_cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return b->active_idx[lo];
}

/* ---- jobs ------------------------------------------------------------- */

static bench_job *job_slot(bench *b, uint64_t id)
{
    if (id >= b->cap_jobs) {
        size_t cap = b->cap_jobs ? b->cap_jobs : 65536;
        while (cap <= id)
            cap *= 2;
        b->jobs = xrealloc(b->jobs, cap * sizeof *b->jobs);
        memset(b->jobs + b->cap_jobs, 0, (cap - b->cap_jobs) * sizeof *b->jobs);
        b->cap_jobs = cap;
    }
    return &b->jobs[id];
}

typedef struct job_shape {
    int replicas, gpus;
    gp_topology topology;
} job_shape;

static job_shape pick_shape(bench_rng *r)
{
    double u = rng_unit(r);
    if (u < 0.60)
        return (job_shape){1, 1, GP_TOPO_ANY};
    if (u < 0.75)
        return (job_shape){1, rng_unit(r) < 0.5 ? 2 : 4, rng_unit(r) < 0.5 ? GP_TOPO_NVLINK : GP_TOPO_ANY};
    if (u < 0.90)
        return (job_shape){1, 8, GP_TOPO_ANY};
    if (u < 0.97)
        return (job_shape){(int)rng_range(r, 2, 8), 8, GP_TOPO_BLOCK};
    int replicas = (int)rng_range(r, 16, 64);
    return (job_shape){replicas, 8, replicas * 8 <= NODES_PER_BLOCK * GPUS_PER_NODE ? GP_TOPO_BLOCK : GP_TOPO_ANY};
}

/* --mixed: turn some 1-GPU jobs into slices or CPU-only work. */
static void make_fractional(gp_job_spec *spec, bench_rng *r)
{
    static const char *const mig_profiles[] = {"1g.10gb", "2g.20gb", "3g.40gb"};
    double u = rng_unit(r);
    if (u < 0.02) {
        spec->gpus = 0;
        spec->n_gpu_types = 0;
        spec->kind = GP_KIND_INFERENCE;
        return;
    }
    if (spec->replicas * spec->gpus != 1 || u > 0.42)
        return;
    u = rng_unit(r);
    spec->topology = GP_TOPO_ANY;
    spec->cpu_millis /= 2;
    spec->mem_mib /= 2;
    if (u < 0.5) { /* MIG needs an H100 or A100 */
        spec->isolation = GP_ISO_MIG;
        snprintf(spec->share.mig_profile, sizeof spec->share.mig_profile, "%s",
                 mig_profiles[rng_range(r, 0, 2)]);
        spec->n_gpu_types = 2;
        spec->gpu_types[0] = type_names[0];
        spec->gpu_types[1] = type_names[1];
    } else if (u < 0.8) {
        spec->isolation = GP_ISO_MPS;
        spec->share.mps_milli = rng_unit(r) < 0.5 ? 250 : 500;
        spec->kind = GP_KIND_INFERENCE;
    } else {
        spec->isolation = GP_ISO_TIMESLICE;
        spec->kind = GP_KIND_INTERACTIVE;
    }
}

/* Submit one job of project p.  only_type >= 0 forces that single type (the
 * returning projects' waves, which must land under their floor). */
static void submit_job(bench *b, int p, job_shape shape, int only_type)
{
    const bench_project *pr = &b->projects[p];
    bench_rng *r = &b->rng;
    uint64_t id = b->next_id++;
    gp_job_spec spec = {0};
    char user[GP_NAME_MAX];
    snprintf(user, sizeof user, "user%d", (int)rng_range(r, 0, 15));
    spec.id = id;
    spec.name = NULL;
    spec.tenant = pr->path;
    spec.user = user;
    spec.replicas = shape.replicas;
    spec.gpus = shape.gpus;
    spec.topology = shape.topology;
    spec.isolation = GP_ISO_EXCLUSIVE;
    int total = shape.replicas * shape.gpus;
    spec.kind = total >= 8 ? GP_KIND_TRAINING : (gp_job_kind)rng_range(r, GP_KIND_TRAINING, GP_KIND_INTERACTIVE);
    if (only_type >= 0) {
        spec.n_gpu_types = 1;
        spec.gpu_types[0] = type_names[only_type];
    } else {
        int first = pr->primary;
        if (shape.replicas >= 16 && first == 2)
            first = 0; /* big gangs want H100 or A100 */
        double u = rng_unit(r);
        if (u < 0.75) {
            spec.n_gpu_types = 1;
            spec.gpu_types[0] = type_names[first];
        } else if (u < 0.90) {
            int second = pr->secondary >= 0 && pr->secondary != first ? pr->secondary : (first + 1) % N_TYPES;
            spec.n_gpu_types = 2;
            spec.gpu_types[0] = type_names[first];
            spec.gpu_types[1] = type_names[second];
        } else {
            spec.n_gpu_types = 0; /* any type */
        }
    }
    spec.cpu_millis = shape.gpus * rng_range(r, 8, 15) * 1000;
    spec.mem_mib = shape.gpus * rng_range(r, 64, 120) * 1024;
    if (b->opt.mixed && only_type < 0)
        make_fractional(&spec, r);
    spec.priority = rng_unit(r) < 0.2 ? (int)rng_range(r, -100, 100) : 0;
    spec.checkpoint_grace_s = rng_range(r, 30, 300);
    if (total <= 8)
        spec.expected_runtime_s = rng_log_range(r, 60, 1200);
    else if (total <= 64)
        spec.expected_runtime_s = rng_log_range(r, 600, 3600);
    else
        spec.expected_runtime_s = rng_log_range(r, 1200, 7200);
    double factor = rng_unit(r) < 0.85 ? 0.5 + 0.5 * rng_unit(r) : 1.0 + 0.3 * rng_unit(r);

    bench_job *j = job_slot(b, id);
    j->runtime_s = (int32_t)fmax(1.0, (double)spec.expected_runtime_s * factor);
    j->seq = 0;
    j->state = JOB_PENDING;
    j->wave = false;

    gp_error err;
    if (gp_engine_job_submit(b->engine, &spec, b->now, &err) != GP_OK) {
        fprintf(stderr, "bench_engine: job %" PRIu64 " of %s\n", id, pr->path);
        die("job_submit", &err);
    }
    b->submitted++;
}

/* A returning project asks for (almost) all of its floor at once, on its
 * primary type only, so every job is guaranteed and must reclaim. */
static void wake_project(bench *b, int p)
{
    bench_project *pr = &b->projects[p];
    pr->dormant = false;
    int t = pr->primary;
    int64_t budget = pr->guarantee[t] * 9 / 10;
    while (budget > 0) {
        job_shape shape;
        if (budget >= 16 && rng_unit(&b->rng) < 0.25) {
            int64_t replicas = budget / 8 > 4 ? 4 : budget / 8;
            shape = (job_shape){(int)replicas, 8, GP_TOPO_BLOCK};
        } else if (budget >= 8) {
            shape = (job_shape){1, 8, GP_TOPO_ANY};
        } else if (budget >= 4) {
            shape = (job_shape){1, 4, GP_TOPO_NVLINK};
        } else {
            shape = (job_shape){1, 1, GP_TOPO_ANY};
        }
        submit_job(b, p, shape, t);
        b->jobs[b->next_id - 1].wave = true;
        b->wave_jobs++;
        budget -= (int64_t)shape.replicas * shape.gpus;
    }
}

static void wave(bench *b)
{
    int dormant[N_ORGS * TEAMS_PER_ORG * PROJECTS_PER_TEAM], n_dormant = 0;
    int awake[N_ORGS * TEAMS_PER_ORG * PROJECTS_PER_TEAM], n_awake = 0;
    for (int p = 0; p < b->n_projects; p++) {
        const bench_project *pr = &b->projects[p];
        if (pr->borrower)
            continue;
        if (pr->dormant)
            dormant[n_dormant++] = p;
        else
            awake[n_awake++] = p;
    }
    for (int k = 0; k < b->opt.wave_size && n_dormant > 0; k++) {
        int pick = (int)rng_range(&b->rng, 0, n_dormant - 1);
        wake_project(b, dormant[pick]);
        dormant[pick] = dormant[--n_dormant];
    }
    for (int k = 0; k < b->opt.wave_size && n_awake > 0; k++) {
        int pick = (int)rng_range(&b->rng, 0, n_awake - 1);
        b->projects[awake[pick]].dormant = true;
        awake[pick] = awake[--n_awake];
    }
    rebuild_active(b);
}

/* --hot-tenant: org1/team0/proj0 (index 50: 50 % 3 != 1, so no limit of its
 * own; 50 % 5 != 2, so no per-user limit; org1 has no cap). */
enum { HOT_PROJECT = 1 * TEAMS_PER_ORG * PROJECTS_PER_TEAM };

/* Submit the next refill job; with --hot-tenant 0 it draws exactly what it
 * always did. */
static void submit_refill_job(bench *b)
{
    if (b->opt.hot_pct > 0 && rng_range(&b->rng, 0, 99) < b->opt.hot_pct) {
        submit_job(b, HOT_PROJECT, (job_shape){1, 1, GP_TOPO_ANY}, -1);
        return;
    }
    int p = pick_active_project(b);
    submit_job(b, p, pick_shape(&b->rng), -1);
}

static void refill_pending(bench *b)
{
    gp_engine_stats st;
    gp_engine_stats_get(b->engine, &st);
    for (int64_t n = (int64_t)st.pending; n < b->opt.pending; n++)
        submit_refill_job(b);
}

/* The node agents report every running job whose time is up. */
static void finish_due_jobs(bench *b)
{
    while (b->n_heap > 0 && b->heap[0].time <= b->now) {
        finish_event ev = heap_pop(b);
        bench_job *j = &b->jobs[ev.id];
        if (j->state != JOB_RUNNING || j->seq != ev.seq)
            continue; /* preempted since, or an older run */
        gp_error err;
        if (gp_engine_job_finished(b->engine, ev.id, GP_EXIT_SUCCEEDED, b->now, &err) != GP_OK) {
            fprintf(stderr, "bench_engine: job %" PRIu64 "\n", ev.id);
            die("job_finished", &err);
        }
        if (gp_engine_job_forget(b->engine, ev.id, &err) != GP_OK) {
            fprintf(stderr, "bench_engine: job %" PRIu64 "\n", ev.id);
            die("job_forget", &err);
        }
        j->state = JOB_DONE;
        b->finished++;
    }
}

/* Read the decisions since the last clear, track job states, count. */
static void read_decisions(bench *b, int64_t *binds, int64_t *preempts)
{
    size_t n = 0;
    const gp_decision *d = gp_engine_decisions(b->engine, &n);
    for (size_t i = 0; i < n; i++) {
        bench_job *j = d[i].job_id < b->cap_jobs ? &b->jobs[d[i].job_id] : NULL;
        digest_decision(b, &d[i]);
        switch (d[i].kind) {
        case GP_DEC_BIND:
            (*binds)++;
            if (j) {
                j->state = JOB_RUNNING;
                j->seq++;
                heap_push(b, (finish_event){b->now + j->runtime_s, d[i].job_id, j->seq});
            }
            break;
        case GP_DEC_PREEMPT:
            (*preempts)++;
            if (j)
                j->state = JOB_PREEMPTING;
            break;
        case GP_DEC_STOP:
            b->stops++;
            if (j)
                j->state = JOB_PREEMPTING;
            break;
        case GP_DEC_TRANSITION:
            if (j && d[i].to == GP_JOB_PENDING && d[i].from == GP_JOB_PREEMPTING) {
                j->state = JOB_PENDING;
                b->released_victims++;
            }
            break;
        default:
            break;
        }
    }
    gp_engine_decisions_clear(b->engine);
}

static void check_invariants(bench *b, const char *when)
{
    gp_error err;
    if (gp_engine_check_invariants(b->engine, &err) != GP_OK) {
        fprintf(stderr, "bench_engine: invariant violated %s (t=%" PRId64 ")\n", when, b->now);
        die("check_invariants", &err);
    }
}

/* One pass: time moves, jobs end, waves, refill, then the timed tick. */
static bench_pass run_pass(bench *b, int pass_number)
{
    bench_pass out = {0};
    b->now += b->opt.step_s;
    finish_due_jobs(b);
    if (b->opt.wave_every > 0 && pass_number > 0 && pass_number % b->opt.wave_every == 0)
        wave(b);
    refill_pending(b);

    gp_engine_stats st;
    gp_engine_stats_get(b->engine, &st);
    out.pending = (int64_t)st.pending;
    out.running = (int64_t)st.running;

    gp_error err;
    double c0 = thread_cpu_ms();
    double t0 = monotonic_ms();
    gp_err rc = gp_engine_tick(b->engine, b->now, &err);
    double t1 = monotonic_ms();
    double c1 = thread_cpu_ms();
    if (rc != GP_OK)
        die("tick", &err);
    out.tick_ms = t1 - t0;
    out.tick_cpu_ms = c1 - c0;
    int64_t released_before = b->released_victims;
    read_decisions(b, &out.placed, &out.preempted);
    if (b->opt.verbose) {
        gp_engine_stats_get(b->engine, &st);
        fprintf(stderr,
                "pass %4d t=%-7" PRId64 " tick %7.2f ms  pending %6" PRId64 " running %6" PRId64
                "  placed %4" PRId64 " preempted %3" PRId64 " released %3" PRId64
                "  considered %6zu searches %3zu (known %3zu) reservations %zu  alloc %.1f%%\n",
                pass_number, b->now, out.tick_ms, out.pending, out.running, out.placed, out.preempted,
                b->released_victims - released_before, st.pass_considered, st.pass_reclaim_searches,
                st.pass_reclaim_remembered, st.pass_reservations, 100.0 * (double)st.gpus_allocated / (double)(st.gpus_healthy ? st.gpus_healthy : 1));
    }
    return out;
}

static const char *wait_name(gp_wait_code c)
{
    static const char *const names[] = {"none",     "new",      "limit",       "user_limit", "no_gpu_type",
                                        "topology", "capacity", "lending",     "reservation", "reserved",
                                        "reclaim",  "node_shape"};
    return (size_t)c < sizeof names / sizeof names[0] ? names[c] : "other";
}

/* Why the jobs still waiting wait, from the engine's own wait codes; and
 * whether any guaranteed reclaimer is still waiting after its victims'
 * graces ended (that would be an engine bug). */
static void summarize_waits(bench *b)
{
    enum { N_CODES = 16 };
    int64_t count[N_CODES] = {0}, wave_count[N_CODES] = {0};
    int64_t overdue = 0, wave_pending = 0;
    uint64_t overdue_example = 0;
    for (uint64_t id = 1; id < b->next_id; id++) {
        if (b->jobs[id].state != JOB_PENDING)
            continue;
        gp_job_info info;
        if (gp_engine_job_info(b->engine, id, &info, NULL) != GP_OK || info.state != GP_JOB_PENDING)
            continue;
        int c = (int)info.wait.code < N_CODES ? (int)info.wait.code : N_CODES - 1;
        count[c]++;
        if (b->jobs[id].wave) {
            wave_count[c]++;
            wave_pending++;
        }
        if (info.wait.code == GP_WAIT_RECLAIM && info.wait.time + b->opt.step_s < b->now) {
            overdue++;
            overdue_example = id;
        }
    }
    printf("waiting:");
    for (int c = 0; c < N_CODES; c++)
        if (count[c])
            printf(" %s %" PRId64, wait_name((gp_wait_code)c), count[c]);
    printf("\n");
    printf("returning projects: %" PRId64 " of their jobs still wait:", wave_pending);
    for (int c = 0; c < N_CODES; c++)
        if (wave_count[c])
            printf(" %s %" PRId64, wait_name((gp_wait_code)c), wave_count[c]);
    printf("\n");
    if (overdue > 0)
        printf("WARNING: %" PRId64 " reclaiming jobs still wait after their victims' graces ended "
               "(e.g. job %" PRIu64 ")\n", overdue, overdue_example);
}

static int compare_double(const void *a, const void *b);
static double percentile(const double *sorted, size_t n, double p);

/* --bookings: N future bookings of guaranteed projects, on their primary
 * type, each timed (admission and placement, or refusal with a
 * suggestion).  A PRNG of its own, so the job stream is the same as
 * without bookings.  Prints accepted count and p50/p99 into out[0..2]. */
static void make_bookings(bench *b, double out[3])
{
    bench_rng r;
    rng_seed(&r, b->opt.seed ^ 0xb00c1u);
    gp_error err;
    for (int o = 0; o < N_ORGS; o++) {
        char org[16];
        snprintf(org, sizeof org, "org%d", o);
        if (gp_engine_booking_allowance_set(b->engine, org, -1, b->now, &err) != GP_OK)
            die("booking allowance", &err);
    }
    double *ms = xrealloc(NULL, sizeof *ms * (size_t)b->opt.bookings);
    int accepted = 0;
    for (int k = 0; k < b->opt.bookings; k++) {
        const bench_project *pr = &b->projects[rng_range(&r, 0, b->n_projects - 1)];
        char name[32];
        snprintf(name, sizeof name, "bk%d", k);
        const char *type = type_names[pr->primary];
        gp_booking_spec s = {.name = name, .tenant = pr->path, .n_gpu_types = 1, .gpu_types = {type},
                             .replicas = (int)rng_range(&r, 1, 4), .gpus = GPUS_PER_NODE, .lend = -1,
                             .start = b->now + 7 * 86400 + k * 600};
        s.end = s.start + 4 * 3600;
        gp_booking_result res;
        double t0 = monotonic_ms();
        gp_err rc = gp_engine_booking_add(b->engine, &s, b->now, &res, &err);
        ms[k] = monotonic_ms() - t0;
        accepted += rc == GP_OK;
    }
    gp_engine_decisions_clear(b->engine);
    qsort(ms, (size_t)b->opt.bookings, sizeof *ms, compare_double);
    out[0] = accepted;
    out[1] = b->opt.bookings ? percentile(ms, (size_t)b->opt.bookings, 50) : 0;
    out[2] = b->opt.bookings ? percentile(ms, (size_t)b->opt.bookings, 99) : 0;
    free(ms);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static int bench_run(const bench_options *opt)
{
    bench b = {0};
    b.digest = 14695981039346656037u; /* FNV-1a offset basis */
    b.opt = *opt;
    double wall0 = monotonic_ms();
    rng_seed(&b.rng, b.opt.seed);
    b.now = 1000;
    b.next_id = 1;
    gp_engine_config cfg = gp_engine_config_default();
    cfg.max_preemptions = b.opt.max_preemptions;
    cfg.fair_share_reclaim = b.opt.fair_share;
    b.engine = gp_engine_new(&cfg);
    if (!b.engine) {
        fprintf(stderr, "bench_engine: gp_engine_new: out of memory\n");
        return 1;
    }
    b.active_cum = xrealloc(NULL, sizeof(double) * N_ORGS * TEAMS_PER_ORG * PROJECTS_PER_TEAM);
    b.active_idx = xrealloc(NULL, sizeof(int) * N_ORGS * TEAMS_PER_ORG * PROJECTS_PER_TEAM);

    printf("gpupool engine benchmark (seed %" PRIu64 ")\n", b.opt.seed);
    double setup0 = monotonic_ms();
    build_fleet(&b);
    double fleet_ms = monotonic_ms() - setup0;
    build_tenants(&b);
    int n_dormant = 0;
    for (int p = 0; p < b.n_projects; p++) {
        if (!b.projects[p].borrower && rng_unit(&b.rng) < 0.10) {
            b.projects[p].dormant = true;
            n_dormant++;
        }
    }
    rebuild_active(&b);
    int64_t total_gpus = b.nodes * GPUS_PER_NODE;
    printf("fleet:   %" PRId64 " GPUs on %" PRId64 " nodes in %" PRId64 " blocks, %d zones "
           "(H100 %" PRId64 ", A100 %" PRId64 ", L40S %" PRId64 "); %" PRId64 " node_add calls took %.0f ms\n",
           total_gpus, b.nodes, b.blocks, N_ZONES, b.type_gpus[0], b.type_gpus[1], b.type_gpus[2], b.nodes,
           fleet_ms);
    int borrowers = 0;
    int64_t guaranteed[N_TYPES] = {0};
    for (int p = 0; p < b.n_projects; p++) {
        borrowers += b.projects[p].borrower;
        for (int t = 0; t < N_TYPES; t++)
            guaranteed[t] += b.projects[p].guarantee[t];
    }
    printf("tenants: %d leaf projects (%d tenants in the tree), %d pure borrowers, %d dormant at start; "
           "guaranteed H100 %.0f%%, A100 %.0f%%, L40S %.0f%%\n",
           b.n_projects, b.tenant_nodes, borrowers, n_dormant,
           100.0 * (double)guaranteed[0] / (double)(b.type_gpus[0] ? b.type_gpus[0] : 1),
           100.0 * (double)guaranteed[1] / (double)(b.type_gpus[1] ? b.type_gpus[1] : 1),
           100.0 * (double)guaranteed[2] / (double)(b.type_gpus[2] ? b.type_gpus[2] : 1));

    double booked[3] = {0, 0, 0};
    if (b.opt.bookings > 0) {
        make_bookings(&b, booked);
        printf("book:    %d bookings, %.0f accepted; request p50 %.3f ms, p99 %.3f ms\n", b.opt.bookings, booked[0],
               booked[1], booked[2]);
    }

    /* fill: top the queue up and tick until the fleet is (nearly) full */
    double fill0 = monotonic_ms();
    int fill_rounds = 0;
    double first_tick_ms = 0;
    int64_t first_binds = 0;
    gp_engine_stats st;
    for (;;) {
        refill_pending(&b);
        gp_error err;
        double t0 = monotonic_ms();
        if (gp_engine_tick(b.engine, b.now, &err) != GP_OK)
            die("tick", &err);
        double t1 = monotonic_ms();
        int64_t binds = 0, preempts = 0;
        read_decisions(&b, &binds, &preempts);
        if (fill_rounds == 0) {
            first_tick_ms = t1 - t0;
            first_binds = binds;
        }
        fill_rounds++;
        gp_engine_stats_get(b.engine, &st);
        if (st.gpus_allocated >= st.gpus_healthy * 95 / 100 || fill_rounds >= 20)
            break;
        b.now += b.opt.step_s;
        finish_due_jobs(&b);
    }
    printf("fill:    %d rounds in %.0f ms; first tick placed %" PRId64 " jobs in %.1f ms; "
           "%.1f%% of GPUs allocated, %zu running, %zu pending\n",
           fill_rounds, monotonic_ms() - fill0, first_binds, first_tick_ms,
           100.0 * (double)st.gpus_allocated / (double)(st.gpus_healthy ? st.gpus_healthy : 1), st.running,
           st.pending);

    int pass_number = 0;
    double warm0 = monotonic_ms();
    for (int i = 0; i < b.opt.warmup; i++, pass_number++)
        (void)run_pass(&b, pass_number);
    if (b.opt.warmup > 0)
        printf("warmup:  %d passes in %.0f ms\n", b.opt.warmup, monotonic_ms() - warm0);

    b.released_victims = b.finished = b.submitted = b.wave_jobs = b.stops = 0;
    bench_pass *passes = xrealloc(NULL, sizeof *passes * (size_t)b.opt.passes);
    double *tick_ms = xrealloc(NULL, sizeof *tick_ms * (size_t)b.opt.passes);
    double *tick_cpu_ms = xrealloc(NULL, sizeof *tick_cpu_ms * (size_t)b.opt.passes);
    double tick_total_ms = 0, pending_sum = 0, running_sum = 0, alloc_sum = 0;
    int64_t placed_total = 0, preempted_total = 0, passes_with_preempt = 0;
    for (int i = 0; i < b.opt.passes; i++, pass_number++) {
        passes[i] = run_pass(&b, pass_number);
        tick_ms[i] = passes[i].tick_ms;
        tick_cpu_ms[i] = passes[i].tick_cpu_ms;
        tick_total_ms += passes[i].tick_ms;
        placed_total += passes[i].placed;
        preempted_total += passes[i].preempted;
        passes_with_preempt += passes[i].preempted > 0;
        pending_sum += (double)passes[i].pending;
        running_sum += (double)passes[i].running;
        gp_engine_stats_get(b.engine, &st);
        alloc_sum += (double)st.gpus_allocated / (double)(st.gpus_healthy ? st.gpus_healthy : 1);
        if (b.opt.check_every > 0 && (i + 1) % b.opt.check_every == 0)
            check_invariants(&b, "during the measured passes");
    }
    double check0 = monotonic_ms();
    check_invariants(&b, "at the end");
    double check_ms = monotonic_ms() - check0;

    qsort(tick_ms, (size_t)b.opt.passes, sizeof *tick_ms, compare_double);
    qsort(tick_cpu_ms, (size_t)b.opt.passes, sizeof *tick_cpu_ms, compare_double);
    double cpu_p50 = percentile(tick_cpu_ms, (size_t)b.opt.passes, 50);
    double p50 = percentile(tick_ms, (size_t)b.opt.passes, 50);
    double p99 = percentile(tick_ms, (size_t)b.opt.passes, 99);
    double pmax = tick_ms[b.opt.passes - 1];
    double mean_ms = tick_total_ms / b.opt.passes;
    double placements_per_s = tick_total_ms > 0 ? (double)placed_total / (tick_total_ms / 1e3) : 0;
    double mean_pending = pending_sum / b.opt.passes;
    double mean_running = running_sum / b.opt.passes;
    int64_t rss = rss_hwm_mib();

    printf("passes:  %d measured, %" PRId64 " s apart; tick p50 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms "
           "(CPU time p50 %.2f ms)\n",
           b.opt.passes, b.opt.step_s, p50, p99, pmax, mean_ms, cpu_p50);
    printf("load:    %.0f pending and %.0f running jobs at pass start (mean); %.1f%% of GPUs allocated\n",
           mean_pending, mean_running, 100.0 * alloc_sum / b.opt.passes);
    printf("work:    %" PRId64 " placements (%.1f per pass, %.0f per second of tick time), "
           "%" PRId64 " submitted, %" PRId64 " finished\n",
           placed_total, (double)placed_total / b.opt.passes, placements_per_s, b.submitted, b.finished);
    printf("reclaim: %" PRId64 " preemptions in %" PRId64 " passes, %" PRId64 " victims released at grace end, "
           "%" PRId64 " jobs from returning projects\n",
           preempted_total, passes_with_preempt, b.released_victims, b.wave_jobs);
    gp_engine_stats_get(b.engine, &st);
    printf("engine:  %zu jobs held, %" PRIu64 " passes, last pass considered %zu, placed %zu, "
           "reclaim searches %zu (%zu known to find nothing), reservations %zu\n",
           st.jobs, st.total_passes, st.pass_considered, st.pass_placed, st.pass_reclaim_searches,
           st.pass_reclaim_remembered, st.pass_reservations);
    printf("check:   invariants hold (%.1f ms)\n", check_ms);
    summarize_waits(&b);
    printf("memory:  %" PRId64 " MiB peak resident (VmHWM)\n", rss);
    printf("digest:  %016" PRIx64 " (every decision and bind placement of the run: equal digests, equal decisions)\n",
           b.digest);
    bool ok_p50 = p50 <= 20.0, ok_rate = placements_per_s >= 10000.0, ok_rss = rss >= 0 && rss <= 256;
    printf("targets: pass p50 <= 20 ms %s, >= 10000 placements/s %s, <= 256 MiB %s%s\n",
           ok_p50 ? "ok" : "MISSED", ok_rate ? "ok" : "MISSED", ok_rss ? "ok" : "MISSED",
           preempted_total > 0 ? "" : "; WARNING: no preemption happened");
    printf("total:   %.1f s wall\n", (monotonic_ms() - wall0) / 1e3);

    printf("{\"bench\":\"engine\",\"mixed\":%s,\"gpus\":%" PRId64 ",\"nodes\":%" PRId64 ",\"tenants\":%d,"
           "\"tenant_nodes\":%d,\"pending\":%.0f,\"running\":%.0f,\"passes\":%d,\"step_s\":%" PRId64 ","
           "\"pass_ms_p50\":%.3f,\"pass_ms_p99\":%.3f,\"pass_ms_max\":%.3f,\"pass_ms_mean\":%.3f,\"pass_cpu_ms_p50\":%.3f,"
           "\"placements_per_s\":%.0f,\"placements_total\":%" PRId64 ",\"preemptions_total\":%" PRId64 ","
           "\"gpu_alloc_pct\":%.1f,\"fleet_setup_ms\":%.0f,\"rss_mib\":%" PRId64 ",\"seed\":%" PRIu64 ","
           "\"hot_tenant_pct\":%d,\"bookings\":%d,\"bookings_accepted\":%.0f,\"booking_ms_p50\":%.3f,"
           "\"booking_ms_p99\":%.3f,\"decisions_digest\":\"%016" PRIx64 "\"}\n",
           b.opt.mixed ? "true" : "false", total_gpus, b.nodes, b.n_projects, b.tenant_nodes, mean_pending, mean_running, b.opt.passes,
           b.opt.step_s, p50, p99, pmax, mean_ms, cpu_p50, placements_per_s, placed_total, preempted_total,
           100.0 * alloc_sum / b.opt.passes, fleet_ms, rss, b.opt.seed, b.opt.hot_pct, b.opt.bookings, booked[0],
           booked[1], booked[2], b.digest);

    gp_engine_free(b.engine);
    free(passes);
    free(tick_ms);
    free(tick_cpu_ms);
    free(b.jobs);
    free(b.heap);
    free(b.active_cum);
    free(b.active_idx);
    return 0;
}

/* ---- --pending-sweep ------------------------------------------------- */

static const int64_t SWEEP_LEVELS[] = {10000, 25000, 50000, 100000};

/* The number after "\"key\":" in a JSON line, or NAN. */
static double json_number(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(line, pat);
    return at ? strtod(at + strlen(pat), NULL) : NAN;
}

/* One run at `pending` in a child process (its peak memory is its own);
 * its report is copied through and its JSON line kept in `json`. */
static bool sweep_one(const bench_options *opt, int64_t pending, char *json, size_t cap)
{
    int fd[2];
    fflush(stdout);
    if (pipe(fd) != 0)
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], STDOUT_FILENO);
        bench_options o = *opt;
        o.pending = pending;
        o.sweep = false;
        int rc = bench_run(&o);
        fflush(stdout);
        _exit(rc);
    }
    close(fd[1]);
    FILE *in = fdopen(fd[0], "r");
    char line[4096];
    json[0] = '\0';
    while (in && fgets(line, sizeof line, in)) {
        fputs(line, stdout);
        if (line[0] == '{')
            snprintf(json, cap, "%s", line);
    }
    if (in)
        fclose(in);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && json[0];
}

static int pending_sweep(const bench_options *opt)
{
    enum { N = sizeof SWEEP_LEVELS / sizeof SWEEP_LEVELS[0] };
    char json[N][4096];
    for (int i = 0; i < N; i++)
        if (!sweep_one(opt, SWEEP_LEVELS[i], json[i], sizeof json[i])) {
            fprintf(stderr, "bench_engine: the run at %" PRId64 " pending failed\n", SWEEP_LEVELS[i]);
            return 1;
        }
    printf("\ncurve (%" PRId64 " GPUs%s, seed %" PRIu64 "):\n", opt->gpus, opt->mixed ? ", mixed" : "", opt->seed);
    printf("  pending  pass p50 ms  pass p99 ms  CPU p50 ms  peak MiB  digest\n");
    for (int i = 0; i < N; i++) {
        const char *d = strstr(json[i], "\"decisions_digest\":\"");
        printf("  %7" PRId64 "  %11.2f  %11.2f  %10.2f  %8.0f  %.16s\n", SWEEP_LEVELS[i],
               json_number(json[i], "pass_ms_p50"), json_number(json[i], "pass_ms_p99"),
               json_number(json[i], "pass_cpu_ms_p50"), json_number(json[i], "rss_mib"),
               d ? d + strlen("\"decisions_digest\":\"") : "?");
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench_options opt;
    int parsed = parse_options(argc, argv, &opt);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    return opt.sweep ? pending_sweep(&opt) : bench_run(&opt);
}
