/* test_dedicated_properties.c - randomized property tests of dedicated nodes.
 *
 * Every sequence builds a small fleet: 2-4 exclusive H100 nodes of 4 or 8
 * GPUs, one MPS node and one time-sliced node (2 GPUs each); orgs a, b, c
 * and d, each dedicated with probability 0.4 (set on the org), and the
 * team c/sec dedicated on its own inside c (a domain below a shared org);
 * sometimes b holds a guarantee of 4 H100 and c/sec one of 2, so
 * guaranteed work reclaims from borrowers behind the fence.  Then 60-200 random events with non-decreasing time: submits of
 * whole-GPU gangs (1-2 replicas of 1-4 GPUs), MPS shares, time-slice
 * replicas and CPU-only jobs from the leaves (whole gangs with a grace of
 * 0 or 20 s), finishes of running jobs and ticks; every 40 events the
 * engine is replaced by its snapshot read back.  Checked after every
 * event, from public queries:
 *   exclusive    a node that runs a job of a dedicated domain (the
 *                outermost dedicated tenant on its path) runs no job of a
 *                tenant outside that domain, whole GPUs, slices and
 *                CPU-only replicas alike;
 *   invariants   gp_engine_check_invariants() == GP_OK (which counts the
 *                nodes' dedicated replicas again);
 * and at the end:
 *   progress     finishing every running job and ticking, round after
 *                round, places every job submitted (each fits the empty
 *                fleet alone), so no fence strands a job for good.
 *
 * Environment: GP_PROPERTY_SEQUENCES (default 300), GP_PROPERTY_SEED (base;
 * sequence i uses base + i).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prop_env.h"
#include "core/engine.h"
#include "support/fleet_builder.h"
#include "support/prop_steps.h"
#include "support/sharing_builder.h"

#define DEFAULT_SEQUENCES 300
#define DEFAULT_SEED 0x64656469ULL
#define MAX_JOBS 256
#define MIB 81920

static const char *const LEAVES[] = {"a/x", "a/y", "b/x", "c/sec", "c/open", "d/x"};
#define N_LEAVES (sizeof LEAVES / sizeof *LEAVES)

typedef struct world {
    gp_engine *e;
    uint64_t rng;
    int64_t now;
    bool dedicated_org[4]; /* a, b, c, d */
    uint64_t ids[MAX_JOBS];
    int leaf[MAX_JOBS];
    size_t n_jobs;
    char where[256];
} world;

static uint64_t next(world *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static int pick(world *w, int n)
{
    return (int)(next(w) % (uint64_t)n);
}

/* The domain of a leaf as the test knows it: "a".."d" when its org is
 * dedicated, "c/sec" for that team, "" when shared. */
static const char *domain_of(const world *w, int leaf)
{
    const char *path = LEAVES[leaf];
    int org = path[0] - 'a';
    if (w->dedicated_org[org])
        return org == 0 ? "a" : org == 1 ? "b" : org == 2 ? "c" : "d";
    return strcmp(path, "c/sec") == 0 ? "c/sec" : "";
}

static void ok(world *w, gp_err rc, const gp_error *err, const char *what)
{
    if (rc != GP_OK)
        fail_msg("%s: %s: %s (%s: %s)", w->where, what, gp_err_name(rc), err->field, err->message);
}

/* A tenant without guarantee or limit, with the given nodes policy. */
static gp_tenant_spec nodes_spec(gp_nodes_policy nodes)
{
    gp_tenant_spec s;
    memset(&s, 0, sizeof s);
    s.guarantee.cpu_millis = s.guarantee.mem_mib = GP_UNLIMITED;
    s.limit.cpu_millis = s.limit.mem_mib = GP_UNLIMITED;
    s.user_limit.cpu_millis = s.user_limit.mem_mib = GP_UNLIMITED;
    s.lend = -1;
    s.nodes = nodes;
    return s;
}

static void tenant(world *w, const char *path, gp_nodes_policy nodes, int guarantee_gpus)
{
    gp_tenant_spec s = nodes_spec(nodes);
    if (guarantee_gpus > 0)
        s.guarantee = tb_quota_gpus("H100", guarantee_gpus);
    gp_error err;
    ok(w, gp_engine_tenant_set(w->e, path, &s, w->now, &err), &err, path);
}

static void build(world *w)
{
    gp_error err;
    int exclusive = 2 + pick(w, 3);
    for (int i = 0; i < exclusive + 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        gp_sharing mode = i < exclusive ? GP_SHARING_EXCLUSIVE : i == exclusive ? GP_SHARING_MPS : GP_SHARING_TIMESLICE;
        int gpus = i < exclusive ? (pick(w, 2) ? 8 : 4) : 2;
        gp_node_spec s = sb_node_spec(name, "H100", gpus, MIB, mode, NULL);
        ok(w, gp_engine_node_add(w->e, &s, w->now, &err), &err, name);
    }
    const char *orgs[] = {"a", "b", "c", "d"};
    bool guarantees = pick(w, 2);
    for (int o = 0; o < 4; o++) {
        w->dedicated_org[o] = pick(w, 10) < 4;
        tenant(w, orgs[o], w->dedicated_org[o] ? GP_NODES_DEDICATED : GP_NODES_INHERIT,
               !guarantees ? 0 : o == 1 ? 4 : o == 2 ? 2 : 0);
    }
    for (size_t l = 0; l < N_LEAVES; l++) {
        bool sec = strcmp(LEAVES[l], "c/sec") == 0;
        tenant(w, LEAVES[l], sec ? GP_NODES_DEDICATED : GP_NODES_INHERIT, guarantees && sec ? 2 : 0);
    }
}

static void submit(world *w)
{
    if (w->n_jobs == MAX_JOBS)
        return;
    int leaf = pick(w, (int)N_LEAVES);
    uint64_t id = w->n_jobs + 1;
    gp_job_spec s;
    switch (pick(w, 5)) {
    case 0: s = sb_mps_job(id, LEAVES[leaf], 250 * (1 + pick(w, 2)), 0); break;
    case 1: s = sb_timeslice_job(id, LEAVES[leaf], GP_KIND_INTERACTIVE); break;
    case 2: s = sb_cpu_job(id, LEAVES[leaf], 1000, 1024); break;
    default:
        s = sb_whole_job(id, LEAVES[leaf], 1 + pick(w, 4));
        s.replicas = 1 + pick(w, 2);
        s.checkpoint_grace_s = pick(w, 2) * 20;
        break;
    }
    gp_error err;
    ok(w, gp_engine_job_submit(w->e, &s, w->now, &err), &err, "submit");
    w->ids[w->n_jobs] = id;
    w->leaf[w->n_jobs++] = leaf;
}

static void finish_some(world *w)
{
    if (w->n_jobs > 0)
        gp_prop_finish_if_running(w->e, w->ids[pick(w, (int)w->n_jobs)], w->now, w->where);
}

static void tick(world *w)
{
    gp_prop_tick(w->e, w->now, w->where);
}

/* exclusive: per node, the domain that runs there excludes everybody else. */
static void check_exclusive(world *w)
{
    size_t n_nodes = gp_engine_node_count(w->e);
    for (size_t n = 0; n < n_nodes; n++) {
        gp_node_info node;
        assert_true(gp_engine_node_get(w->e, (uint32_t)n, &node));
        int leaves[MAX_JOBS], n_here = 0;
        const char *domain = "";
        for (size_t k = 0; k < w->n_jobs; k++) {
            gp_job_info info;
            gp_error err;
            ok(w, gp_engine_job_info(w->e, w->ids[k], &info, &err), &err, "info");
            if (info.state != GP_JOB_RUNNING && info.state != GP_JOB_PREEMPTING)
                continue;
            bool here = false;
            for (int r = 0; r < info.replicas && !here; r++) {
                const char *at = gp_engine_job_node(w->e, w->ids[k], r);
                here = at && strcmp(at, node.name) == 0;
            }
            if (!here)
                continue;
            leaves[n_here++] = w->leaf[k];
            if (*domain_of(w, w->leaf[k]))
                domain = domain_of(w, w->leaf[k]);
        }
        for (int i = 0; *domain && i < n_here; i++)
            if (strcmp(domain_of(w, leaves[i]), domain) != 0)
                fail_msg("%s: node %s runs a job of dedicated %s beside one of %s", w->where, node.name, domain,
                         LEAVES[leaves[i]]);
    }
    gp_error err;
    ok(w, gp_engine_check_invariants(w->e, &err), &err, "invariants");
}

static void check_after_tick(void *ctx)
{
    check_exclusive(ctx);
}

/* progress: with everything running finished, round after round, every job places. */
static void check_progress(world *w)
{
    gp_prop_progress(w->e, w->ids, w->n_jobs, &w->now, 10, check_after_tick, w, w->where);
}

/* The engine replaced by its snapshot read back. */
static void restore(world *w)
{
    gp_prop_snapshot_swap(&w->e, NULL, w->where);
}

static void run_sequence(uint64_t seed)
{
    world w = {.rng = seed * 2654435761u + 1, .now = 0};
    snprintf(w.where, sizeof w.where, "seed %llu", (unsigned long long)seed);
    w.e = gp_engine_new(NULL);
    assert_non_null(w.e);
    build(&w);
    int events = 60 + pick(&w, 141);
    for (int i = 0; i < events; i++) {
        int what = pick(&w, 10);
        if (what < 5)
            submit(&w);
        else if (what < 8)
            finish_some(&w);
        else
            w.now += 1 + pick(&w, 30);
        tick(&w);
        check_exclusive(&w);
        if (i % 40 == 39)
            restore(&w);
    }
    check_progress(&w);
    gp_engine_free(w.e);
}

static void dedicated_nodes_hold_under_random_events(void **state)
{
    (void)state;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", DEFAULT_SEED), n = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", DEFAULT_SEQUENCES);
    for (uint64_t i = 0; i < n; i++)
        run_sequence(base + i);
}

/* The wait of a job that a dedicated tenant's nodes keep out, in words. */
static void the_wait_names_the_dedicated_tenant(void **state)
{
    (void)state;
    world w = {.rng = 1};
    snprintf(w.where, sizeof w.where, "wait");
    w.e = gp_engine_new(NULL);
    gp_error err;
    for (int i = 0; i < 2; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        gp_node_spec s = sb_node_spec(name, "H100", 8, MIB, GP_SHARING_EXCLUSIVE, NULL);
        ok(&w, gp_engine_node_add(w.e, &s, 0, &err), &err, name);
    }
    tenant(&w, "secure", GP_NODES_DEDICATED, 0);
    tenant(&w, "lab", GP_NODES_INHERIT, 0);
    gp_job_spec s = sb_whole_job(1, "lab", 1);
    ok(&w, gp_engine_job_submit(w.e, &s, 0, &err), &err, "submit 1");
    tick(&w);
    s = sb_whole_job(2, "secure", 4);
    ok(&w, gp_engine_job_submit(w.e, &s, 1, &err), &err, "submit 2");
    w.now = 1;
    tick(&w);
    const char *lab_node = gp_engine_job_node(w.e, 1, 0), *secure_node = gp_engine_job_node(w.e, 2, 0);
    assert_non_null(secure_node);
    assert_string_not_equal(lab_node, secure_node);
    /* a gang of two whole nodes fits only across both: each waits, and says why */
    s = sb_whole_job(3, "lab", 8);
    s.replicas = 2;
    ok(&w, gp_engine_job_submit(w.e, &s, 2, &err), &err, "submit 3");
    s = sb_whole_job(4, "secure", 8);
    s.replicas = 2;
    ok(&w, gp_engine_job_submit(w.e, &s, 2, &err), &err, "submit 4");
    w.now = 2;
    tick(&w);
    gp_job_info info;
    char why[256];
    ok(&w, gp_engine_job_info(w.e, 3, &info, &err), &err, "info 3");
    assert_int_equal(info.wait.code, GP_WAIT_DEDICATED);
    gp_engine_why(w.e, 3, why, sizeof why);
    assert_non_null(strstr(why, "4 free H100 GPUs are on nodes dedicated to secure"));
    ok(&w, gp_engine_job_info(w.e, 4, &info, &err), &err, "info 4");
    assert_int_equal(info.wait.code, GP_WAIT_DEDICATED);
    gp_engine_why(w.e, 4, why, sizeof why);
    assert_non_null(strstr(why, "a node of its own"));
    /* a lab job of one GPU goes beside lab's first, never beside secure */
    s = sb_whole_job(5, "lab", 1);
    ok(&w, gp_engine_job_submit(w.e, &s, 3, &err), &err, "submit 5");
    w.now = 3;
    tick(&w);
    assert_string_equal(gp_engine_job_node(w.e, 5, 0), lab_node);
    gp_engine_free(w.e);
}

/* "shared" below a dedicated tenant is refused, as "trusted" below an untrusted one. */
static void shared_below_dedicated_is_refused(void **state)
{
    (void)state;
    world w = {.rng = 1};
    w.e = gp_engine_new(NULL);
    tenant(&w, "secure", GP_NODES_DEDICATED, 0);
    gp_tenant_spec s = nodes_spec(GP_NODES_SHARED);
    gp_error err;
    assert_int_equal(gp_engine_tenant_set(w.e, "secure/team", &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "nodes");
    s.nodes = GP_NODES_INHERIT;
    assert_int_equal(gp_engine_tenant_set(w.e, "secure/team", &s, 0, &err), GP_OK);
    uint32_t t;
    assert_int_equal(gp_engine_tenant_find(w.e, "secure/team", &t, &err), GP_OK);
    gp_tenant_info info;
    assert_true(gp_engine_tenant_get(w.e, t, &info));
    assert_true(info.dedicated);
    gp_engine_free(w.e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_wait_names_the_dedicated_tenant),
        cmocka_unit_test(shared_below_dedicated_is_refused),
        cmocka_unit_test(dedicated_nodes_hold_under_random_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
