/* engine_demo.c - a small engine scenario, printed for a person to read.
 *
 * The story, on a fleet of 32 H100 (two fabric blocks of two 8-GPU nodes)
 * and one node of 8 A100:
 *
 *   research          (org, the sum of its teams' floors: 24 H100)
 *     research/nlp    guarantee 16 H100
 *     research/vision guarantee  8 H100, limit 24 H100
 *   product
 *     product/search  guarantee  8 H100 + 8 A100
 *
 *   t=+0     search starts a serving job (8 H100) and an embedding job
 *            (8 A100), both inside its floor.
 *   t=+60    vision submits four 8-GPU trainings: the first runs on its own
 *            floor, two more borrow nlp's idle H100 (burstable), the fourth
 *            waits at vision's limit.  A second search job waits for A100s.
 *   t=+360   one borrower saves a checkpoint.
 *   t=+600   nlp submits a 2 x 8 H100 gang that must sit in one fabric
 *            block, inside its guarantee.  No block is free, so the engine
 *            reclaims: it preempts vision's two borrowed jobs (the two that
 *            share a block), each with its checkpoint grace.
 *   ...      the clock ticks every 30 s; when the last grace ends the victims
 *            go back to the queue and nlp's gang binds in the freed block.
 *
 * It ends with each tenant's usage against its guarantee and, for every job
 * still waiting, the engine's own explanation (gp_engine_why).
 */
#include "core/engine.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_JOBS = 16 };

static const int64_t t0 = 1700000000; /* the demo's clock starts here; printed as t=+s */

typedef struct demo_job {
    uint64_t id;
    const char *name;
    const char *tenant;
} demo_job;

typedef struct demo {
    gp_engine *engine;
    int64_t now;
    demo_job jobs[MAX_JOBS];
    int n_jobs;
} demo;

static const char *job_name(const demo *d, uint64_t id)
{
    for (int i = 0; i < d->n_jobs; i++)
        if (d->jobs[i].id == id)
            return d->jobs[i].name;
    return "?";
}

static const char *job_tenant(const demo *d, uint64_t id)
{
    for (int i = 0; i < d->n_jobs; i++)
        if (d->jobs[i].id == id)
            return d->jobs[i].tenant;
    return "?";
}

static bool failed(gp_err rc, const char *what, const gp_error *err)
{
    if (rc == GP_OK)
        return false;
    fprintf(stderr, "engine_demo: %s failed: %s: %s%s%s%s\n", what, gp_err_name(rc), err->message,
            err->field[0] ? " (field " : "", err->field, err->field[0] ? ")" : "");
    return true;
}

/* Append to buf (of len) at *used, never past the end. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* "h100-b1[0-7] h100-b2[0-7] in block blk-b" for a placed job.  Global GPU
 * indexes run node by node, so sorting them groups each node's GPUs. */
static void describe_placement(const demo *d, uint64_t id, char *buf, size_t len)
{
    uint32_t gpus[256];
    size_t n = gp_engine_job_gpus(d->engine, id, gpus, sizeof gpus / sizeof gpus[0]);
    qsort(gpus, n, sizeof gpus[0], compare_u32);
    size_t used = 0;
    buf[0] = '\0';
    char block_names[8][GP_NAME_MAX];
    int n_blocks = 0;
    size_t i = 0;
    while (i < n && used + 1 < len) {
        gp_gpu_info g;
        gp_node_info node;
        if (!gp_engine_gpu_get(d->engine, gpus[i], &g) || !gp_engine_node_get(d->engine, g.node, &node))
            break;
        /* a run of GPUs on this node with consecutive indexes */
        size_t k = i + 1;
        int last = g.index;
        while (k < n) {
            gp_gpu_info h;
            if (!gp_engine_gpu_get(d->engine, gpus[k], &h) || h.node != g.node || h.index != last + 1)
                break;
            last = h.index;
            k++;
        }
        if (last == g.index)
            append(buf, len, &used, "%s%s[%d]", used ? " " : "", node.name, g.index);
        else
            append(buf, len, &used, "%s%s[%d-%d]", used ? " " : "", node.name, g.index, last);
        bool seen = false;
        for (int b = 0; b < n_blocks; b++)
            seen = seen || strcmp(block_names[b], node.block) == 0;
        if (!seen && n_blocks < 8) {
            snprintf(block_names[n_blocks], GP_NAME_MAX, "%s", node.block);
            n_blocks++;
        }
        i = k;
    }
    for (int b = 0; b < n_blocks; b++)
        append(buf, len, &used, "%s%s", b == 0 ? " in block " : ", ", block_names[b]);
}

/* Print every decision since the last clear as one line, then clear. */
static void show_decisions(demo *d)
{
    size_t n = 0;
    const gp_decision *dec = gp_engine_decisions(d->engine, &n);
    for (size_t i = 0; i < n; i++) {
        const gp_decision *x = &dec[i];
        const char *name = job_name(d, x->job_id);
        printf("  t=+%-5" PRId64 " %-11s ", x->time - t0, gp_decision_kind_name(x->kind));
        switch (x->kind) {
        case GP_DEC_TRANSITION:
            printf("%s: %s -> %s (%s)\n", name, gp_job_state_name(x->from), gp_job_state_name(x->to), x->reason);
            break;
        case GP_DEC_BIND: {
            char where[512];
            describe_placement(d, x->job_id, where, sizeof where);
            printf("%s (%s) on %s\n", name, job_tenant(d, x->job_id), where);
            break;
        }
        case GP_DEC_PREEMPT:
            printf("%s (%s), grace %" PRId64 "s, by %s (%s) reclaiming the guarantee of %s, "
                   "work lost %" PRId64 " GPU-s (%s)\n",
                   name, job_tenant(d, x->job_id), x->grace_s, job_name(d, x->by_job), x->by_tenant,
                   x->guarantee_of, x->work_lost_gpu_s, x->reason);
            break;
        case GP_DEC_STOP:
            printf("%s, grace %" PRId64 "s (%s)\n", name, x->grace_s, x->reason);
            break;
        case GP_DEC_DRAINED:
            printf("node %s\n", x->node);
            break;
        case GP_DEC_USAGE_OPEN:
            printf("%s: interval %" PRIu64 " for %s, %" PRId64 " %s GPUs %s from t=+%" PRId64 "\n", name,
                   x->usage.interval_id, x->usage.tenant, x->usage.milli_gpus / 1000, x->usage.gpu_type,
                   gp_class_name(x->usage.cls), x->usage.start - t0);
            break;
        case GP_DEC_USAGE_CLOSE:
            printf("%s: interval %" PRIu64 " for %s, %" PRId64 " %s GPUs %s, t=+%" PRId64 "..+%" PRId64
                   " = %" PRId64 " GPU-s\n",
                   name, x->usage.interval_id, x->usage.tenant, x->usage.milli_gpus / 1000, x->usage.gpu_type,
                   gp_class_name(x->usage.cls), x->usage.start - t0, x->usage.end - t0,
                   x->usage.milli_gpus / 1000 * (x->usage.end - x->usage.start));
            break;
        case GP_DEC_RECONFIGURE:
            printf("node %s GPU %d MIG layout \"%s\"\n", x->node, x->gpu_index, x->mig_layout);
            break;
        default: /* a kind newer than this demo */
            printf("job %" PRIu64 " %s\n", x->job_id, x->reason);
            break;
        }
    }
    gp_engine_decisions_clear(d->engine);
}

static void scene(const demo *d, const char *text)
{
    printf("\n== t=+%" PRId64 "s  %s\n", d->now - t0, text);
}

static gp_err add_node(demo *d, const char *name, const char *block, const char *type)
{
    gp_node_spec spec = {
        .name = name,
        .zone = "zone-a",
        .block = block,
        .gpu_type = type,
        .gpu_count = 8,
        .nvlink_domains = 1,
        .gpu_mem_mib = 81920,
        .cpu_millis = 128000,
        .mem_mib = 1048576,
    };
    gp_error err;
    gp_err rc = gp_engine_node_add(d->engine, &spec, d->now, &err);
    failed(rc, name, &err);
    return rc;
}

/* Quota of whole GPUs: up to two types; cpu and memory not constraining. */
static gp_quota gpus(const char *type_a, int64_t a, const char *type_b, int64_t b)
{
    gp_quota q = {.set = true, .cpu_millis = GP_UNLIMITED, .mem_mib = GP_UNLIMITED};
    if (type_a) {
        snprintf(q.gpu[q.n_gpu].type, GP_NAME_MAX, "%s", type_a);
        q.gpu[q.n_gpu++].milli = a * 1000;
    }
    if (type_b) {
        snprintf(q.gpu[q.n_gpu].type, GP_NAME_MAX, "%s", type_b);
        q.gpu[q.n_gpu++].milli = b * 1000;
    }
    return q;
}

static gp_err add_tenant(demo *d, const char *path, gp_quota guarantee, gp_quota limit)
{
    gp_tenant_spec spec = {.guarantee = guarantee, .limit = limit, .weight = 0, .lend = -1};
    gp_error err;
    gp_err rc = gp_engine_tenant_set(d->engine, path, &spec, d->now, &err);
    failed(rc, path, &err);
    return rc;
}

typedef struct demo_submit {
    const char *name;
    const char *tenant;
    gp_job_kind kind;
    int replicas, gpus;
    const char *type;
    gp_topology topology;
    int priority;
    int64_t grace_s, runtime_s;
} demo_submit;

static gp_err submit(demo *d, uint64_t id, demo_submit s)
{
    gp_job_spec spec = {
        .id = id,
        .name = s.name,
        .tenant = s.tenant,
        .user = NULL,
        .kind = s.kind,
        .replicas = s.replicas,
        .gpus = s.gpus,
        .n_gpu_types = 1,
        .gpu_types = {s.type},
        .cpu_millis = s.gpus * 12000,
        .mem_mib = s.gpus * 98304,
        .topology = s.topology,
        .isolation = GP_ISO_EXCLUSIVE,
        .priority = s.priority,
        .checkpoint_grace_s = s.grace_s,
        .expected_runtime_s = s.runtime_s,
    };
    gp_error err;
    gp_err rc = gp_engine_job_submit(d->engine, &spec, d->now, &err);
    if (failed(rc, s.name, &err))
        return rc;
    if (d->n_jobs < MAX_JOBS)
        d->jobs[d->n_jobs++] = (demo_job){id, s.name, s.tenant};
    printf("  submit      %s: %s, %d x %d %s, %s topology, grace %" PRId64 "s\n", s.name, s.tenant, s.replicas,
           s.gpus, s.type, gp_topology_name(s.topology), s.grace_s);
    show_decisions(d);
    return GP_OK;
}

static gp_err tick(demo *d)
{
    gp_error err;
    gp_err rc = gp_engine_tick(d->engine, d->now, &err);
    if (failed(rc, "tick", &err))
        return rc;
    show_decisions(d);
    return GP_OK;
}

static void show_why(const demo *d, uint64_t id)
{
    char why[512];
    gp_engine_why(d->engine, id, why, sizeof why);
    printf("  why %-15s %s\n", job_name(d, id), why);
}

/* "16" or "16 (limit 24)" in whole GPUs for one dimension. */
static void format_gpus(char *buf, size_t len, int64_t milli)
{
    if (milli == GP_UNLIMITED)
        snprintf(buf, len, "-");
    else if (milli % 1000 == 0)
        snprintf(buf, len, "%" PRId64, milli / 1000);
    else
        snprintf(buf, len, "%.3f", (double)milli / 1000.0);
}

static void show_tenants(const demo *d)
{
    int types = gp_engine_gpu_type_count(d->engine);
    printf("  %-16s %-5s %11s %11s %11s %11s %8s %8s %6s\n", "tenant", "type", "guarantee", "limit", "usage",
           "guaranteed", "running", "pending", "share");
    size_t n = gp_engine_tenant_count(d->engine);
    for (uint32_t i = 0; i < n; i++) {
        gp_tenant_info t;
        if (!gp_engine_tenant_get(d->engine, i, &t))
            continue;
        for (int type = 0; type < types; type++) {
            if (t.guarantee.v[type] == 0 && t.usage.v[type] == 0)
                continue;
            char g[24], l[24], u[24], gu[24];
            format_gpus(g, sizeof g, t.has_guarantee ? t.guarantee.v[type] : 0);
            format_gpus(l, sizeof l, t.limit.v[type]);
            format_gpus(u, sizeof u, t.usage.v[type]);
            format_gpus(gu, sizeof gu, t.guaranteed_usage.v[type]);
            printf("  %-16s %-5s %11s %11s %11s %11s %8d %8d %6.3f\n", t.path, gp_engine_gpu_type_name(d->engine, type),
                   g, l, u, gu, t.running_jobs, t.pending_jobs, t.dominant_share);
        }
    }
}

static int run(demo *d)
{
    /* ---- the fleet and the tenants ---- */
    scene(d, "fleet: blocks blk-a and blk-b with two 8 x H100 nodes each, blk-c with one 8 x A100 node");
    if (add_node(d, "h100-a1", "blk-a", "H100") || add_node(d, "h100-a2", "blk-a", "H100") ||
        add_node(d, "h100-b1", "blk-b", "H100") || add_node(d, "h100-b2", "blk-b", "H100") ||
        add_node(d, "a100-c1", "blk-c", "A100"))
        return 1;
    gp_quota none = {0};
    printf("  tenants: research/nlp floor 16 H100, research/vision floor 8 H100 (limit 24),"
           " product/search floor 8 H100 + 8 A100\n");
    if (add_tenant(d, "research", gpus("H100", 24, NULL, 0), none) ||
        add_tenant(d, "research/nlp", gpus("H100", 16, NULL, 0), none) ||
        add_tenant(d, "research/vision", gpus("H100", 8, NULL, 0), gpus("H100", 24, NULL, 0)) ||
        add_tenant(d, "product", gpus("H100", 8, "A100", 8), none) ||
        add_tenant(d, "product/search", gpus("H100", 8, "A100", 8), none))
        return 1;

    /* ---- search runs inside its floor ---- */
    scene(d, "product/search starts serving and an embedding run, inside its guarantee");
    if (submit(d, 1, (demo_submit){"search-serving", "product/search", GP_KIND_INFERENCE, 1, 8, "H100",
                                   GP_TOPO_NVLINK, 100, 30, 0}) ||
        submit(d, 2, (demo_submit){"search-embed", "product/search", GP_KIND_TRAINING, 1, 8, "A100", GP_TOPO_ANY,
                                   0, 60, 7200}) ||
        tick(d))
        return 1;

    /* ---- vision borrows ---- */
    d->now += 60;
    scene(d, "research/vision submits four 8-GPU trainings; nlp is idle, so vision borrows its H100");
    static const char *const vision_names[4] = {"vision-train-1", "vision-train-2", "vision-train-3",
                                                "vision-train-4"};
    static const int64_t vision_grace[4] = {120, 90, 60, 120};
    for (int i = 0; i < 4; i++)
        if (submit(d, 10 + (uint64_t)i, (demo_submit){vision_names[i], "research/vision", GP_KIND_TRAINING, 1, 8,
                                                      "H100", GP_TOPO_ANY, 0, vision_grace[i], 14400}))
            return 1;
    if (submit(d, 3, (demo_submit){"search-embed-2", "product/search", GP_KIND_TRAINING, 1, 4, "A100",
                                   GP_TOPO_ANY, 0, 60, 3600}) ||
        tick(d))
        return 1;
    for (uint64_t id = 10; id < 14; id++) {
        gp_job_info info;
        gp_error err;
        if (failed(gp_engine_job_info(d->engine, id, &info, &err), "job_info", &err))
            return 1;
        printf("  %-15s %-10s %s\n", job_name(d, id), gp_job_state_name(info.state), gp_class_name(info.cls));
    }
    show_why(d, 13);
    show_why(d, 3);

    /* ---- a checkpoint ---- */
    d->now += 300;
    scene(d, "vision-train-2 saves a checkpoint (work before now survives a preemption)");
    gp_error err;
    if (failed(gp_engine_job_checkpointed(d->engine, 11, d->now, &err), "checkpoint", &err) || tick(d))
        return 1;

    /* ---- nlp comes back: reclaim ---- */
    d->now += 240;
    scene(d, "research/nlp submits a 2 x 8 H100 gang in one block, inside its 16-GPU guarantee");
    if (submit(d, 20, (demo_submit){"nlp-pretrain", "research/nlp", GP_KIND_TRAINING, 2, 8, "H100", GP_TOPO_BLOCK,
                                    0, 300, 86400}) ||
        tick(d))
        return 1;
    show_why(d, 20);

    /* ---- the graces run out ---- */
    scene(d, "the clock ticks every 30 s until the victims' graces end");
    for (int i = 0; i < 20; i++) {
        gp_job_info info;
        if (failed(gp_engine_job_info(d->engine, 20, &info, &err), "job_info", &err))
            return 1;
        if (info.state == GP_JOB_RUNNING)
            break;
        d->now += 30;
        printf("  -- tick t=+%" PRId64 "s\n", d->now - t0);
        if (tick(d))
            return 1;
    }
    gp_job_info nlp;
    if (failed(gp_engine_job_info(d->engine, 20, &nlp, &err), "job_info", &err))
        return 1;
    char where[512];
    describe_placement(d, 20, where, sizeof where);
    printf("  nlp-pretrain is %s (%s) on %s\n", gp_job_state_name(nlp.state), gp_class_name(nlp.cls),
           nlp.state == GP_JOB_RUNNING ? where : "nothing yet");

    /* ---- where everyone stands ---- */
    scene(d, "usage per tenant (GPUs)");
    show_tenants(d);

    scene(d, "why each waiting job waits");
    for (int i = 0; i < d->n_jobs; i++) {
        gp_job_info info;
        if (gp_engine_job_info(d->engine, d->jobs[i].id, &info, NULL) == GP_OK && info.state == GP_JOB_PENDING)
            show_why(d, d->jobs[i].id);
    }

    gp_error check;
    gp_err rc = gp_engine_check_invariants(d->engine, &check);
    printf("\ninvariants: %s%s\n", rc == GP_OK ? "ok" : "VIOLATED: ", rc == GP_OK ? "" : check.message);
    return rc == GP_OK && nlp.state == GP_JOB_RUNNING ? 0 : 1;
}

int main(void)
{
    demo d = {.engine = gp_engine_new(NULL), .now = t0};
    if (!d.engine) {
        fprintf(stderr, "engine_demo: out of memory\n");
        return 1;
    }
    int rc = run(&d);
    gp_engine_free(d.engine);
    return rc;
}
