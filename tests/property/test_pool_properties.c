/* test_pool_properties.c - randomized property tests of pools owned by tenants.
 *
 * Every sequence builds a small fleet: 2-3 shared exclusive H100 nodes in
 * pool "default" (4 or 8 GPUs), 1-2 nodes in pool "pa" owned by org a and
 * one node in pool "pb" owned by the team b/x (an owner below the top);
 * each owner lends with probability 1/2 (its `lend`); one MPS node in
 * "default".  Then 60-200 random events with non-decreasing time: submits
 * of whole-GPU gangs (1-2 replicas of 1-4 GPUs, grace 0 or 20 s), MPS
 * shares and small CPU-only jobs from the leaves a/x, a/y, b/x, b/y, c/x;
 * finishes of running jobs; time; a tick after each.  Every 40 events the
 * engine is replaced by its snapshot read back (the owners must survive
 * it).  No preemption cap and a cool-down of 60 s (test_config).  Checked
 * after every event, from public queries:
 *   fenced       no job from outside an owner's subtree runs on a node of
 *                a pool whose owner does not lend;
 *   invariants   gp_engine_check_invariants() == GP_OK;
 * and at the end:
 *   reclaimed    with nothing finishing and time passing beyond every
 *                grace, no job of an owner's subtree waits while one of
 *                its pool's nodes would hold one of its replicas were the
 *                outsiders there gone (single-replica whole-GPU jobs; one
 *                that waits for the reservation of a job of its own owner
 *                may find the pool held for that one, as backfill would):
 *                borrowers on an owned pool are taken back;
 *   progress     finishing every running job and ticking, round after
 *                round, places every job submitted.
 *
 * Environment: GP_PROPERTY_SEQUENCES (default 300), GP_PROPERTY_SEED.
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
#define DEFAULT_SEED 0x706f6f6cULL
#define MAX_JOBS 256
#define MAX_NODES 8
#define MIB 81920

static const char *const LEAVES[] = {"a/x", "a/y", "b/x", "b/y", "c/x"};
#define N_LEAVES (sizeof LEAVES / sizeof *LEAVES)

typedef struct world {
    gp_engine *e;
    uint64_t rng;
    int64_t now;
    bool lends[2];             /* a, b/x */
    char node_owner[MAX_NODES][8]; /* per node: "a", "b/x" or "" */
    int node_gpus[MAX_NODES];
    char node_name[MAX_NODES][8];
    int n_nodes;
    uint64_t ids[MAX_JOBS];
    int leaf[MAX_JOBS];
    bool whole[MAX_JOBS];
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

static void ok(world *w, gp_err rc, const gp_error *err, const char *what)
{
    if (rc != GP_OK)
        fail_msg("%s: %s: %s (%s: %s)", w->where, what, gp_err_name(rc), err->field, err->message);
}

/* Is the leaf inside owner's subtree ("a" holds a/x, a/y; "b/x" itself)? */
static bool inside(const char *leaf, const char *owner)
{
    size_t n = strlen(owner);
    return strncmp(leaf, owner, n) == 0 && (leaf[n] == '\0' || leaf[n] == '/');
}

static bool owner_lends(const world *w, const char *owner)
{
    return strcmp(owner, "a") == 0 ? w->lends[0] : w->lends[1];
}

static void tenant(world *w, const char *path, int lend)
{
    gp_tenant_spec s;
    memset(&s, 0, sizeof s);
    s.guarantee.cpu_millis = s.guarantee.mem_mib = GP_UNLIMITED;
    s.limit.cpu_millis = s.limit.mem_mib = GP_UNLIMITED;
    s.user_limit.cpu_millis = s.user_limit.mem_mib = GP_UNLIMITED;
    s.lend = lend;
    gp_error err;
    ok(w, gp_engine_tenant_set(w->e, path, &s, w->now, &err), &err, path);
}

static void pool(world *w, const char *name, const char *owner)
{
    gp_pool_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.owner, sizeof s.owner, "%s", owner);
    gp_error err;
    ok(w, gp_engine_pool_set(w->e, name, &s, &err), &err, name);
}

static void node(world *w, const char *pool_name, const char *owner, int gpus, gp_sharing mode)
{
    int i = w->n_nodes++;
    snprintf(w->node_name[i], sizeof w->node_name[i], "n%d", i);
    snprintf(w->node_owner[i], sizeof w->node_owner[i], "%s", owner);
    w->node_gpus[i] = gpus;
    gp_node_spec s = sb_node_spec(w->node_name[i], "H100", gpus, MIB, mode, pool_name);
    gp_error err;
    ok(w, gp_engine_node_add(w->e, &s, w->now, &err), &err, w->node_name[i]);
}

static void build(world *w)
{
    w->lends[0] = pick(w, 2);
    w->lends[1] = pick(w, 2);
    tenant(w, "a", w->lends[0] ? 1 : 0);
    tenant(w, "b", -1);
    tenant(w, "c", -1);
    for (size_t l = 0; l < N_LEAVES; l++)
        tenant(w, LEAVES[l], strcmp(LEAVES[l], "b/x") == 0 ? (w->lends[1] ? 1 : 0) : -1);
    pool(w, "pa", "a");
    pool(w, "pb", "b/x");
    int shared = 2 + pick(w, 2), pa = 1 + pick(w, 2); /* two shared nodes hold any job */
    for (int i = 0; i < shared; i++)
        node(w, NULL, "", pick(w, 2) ? 8 : 4, GP_SHARING_EXCLUSIVE);
    for (int i = 0; i < pa; i++)
        node(w, "pa", "a", pick(w, 2) ? 8 : 4, GP_SHARING_EXCLUSIVE);
    node(w, "pb", "b/x", 4, GP_SHARING_EXCLUSIVE);
    node(w, NULL, "", 2, GP_SHARING_MPS);
}

static void submit(world *w)
{
    if (w->n_jobs == MAX_JOBS)
        return;
    int leaf = pick(w, (int)N_LEAVES);
    uint64_t id = w->n_jobs + 1;
    gp_job_spec s;
    bool whole = false;
    switch (pick(w, 6)) {
    case 0: s = sb_mps_job(id, LEAVES[leaf], 250 * (1 + pick(w, 2)), 0); break;
    case 1: s = sb_cpu_job(id, LEAVES[leaf], 500, 512); break;
    default:
        s = sb_whole_job(id, LEAVES[leaf], 1 + pick(w, 4));
        s.replicas = 1 + pick(w, 2);
        s.checkpoint_grace_s = pick(w, 2) * 20;
        whole = true;
        break;
    }
    gp_error err;
    ok(w, gp_engine_job_submit(w->e, &s, w->now, &err), &err, "submit");
    w->ids[w->n_jobs] = id;
    w->whole[w->n_jobs] = whole;
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

static int node_index(const world *w, const char *name)
{
    for (int i = 0; name && i < w->n_nodes; i++)
        if (strcmp(w->node_name[i], name) == 0)
            return i;
    return -1;
}

static bool holds(gp_job_state s)
{
    return s == GP_JOB_RUNNING || s == GP_JOB_PREEMPTING || s == GP_JOB_ADMITTED;
}

/* fenced: nobody from outside on a pool whose owner does not lend. */
static void check_fenced(world *w)
{
    for (size_t k = 0; k < w->n_jobs; k++) {
        gp_job_info info;
        gp_error err;
        ok(w, gp_engine_job_info(w->e, w->ids[k], &info, &err), &err, "info");
        if (!holds(info.state))
            continue;
        for (int r = 0; r < info.replicas; r++) {
            int n = node_index(w, gp_engine_job_node(w->e, w->ids[k], r));
            const char *owner = n >= 0 ? w->node_owner[n] : "";
            if (*owner && !owner_lends(w, owner) && !inside(LEAVES[w->leaf[k]], owner))
                fail_msg("%s: job %llu of %s runs on %s in a pool of %s, which does not lend", w->where,
                         (unsigned long long)w->ids[k], LEAVES[w->leaf[k]], w->node_name[n], owner);
        }
    }
    gp_error err;
    ok(w, gp_engine_check_invariants(w->e, &err), &err, "invariants");
}

/* GPUs on node n that are free or held by jobs from outside owner. */
static int room_without_outsiders(world *w, int n, const char *owner)
{
    gp_node_info info;
    assert_true(gp_engine_node_get(w->e, (uint32_t)n, &info));
    int room = info.gpus_free;
    for (size_t k = 0; k < w->n_jobs; k++) {
        gp_job_info j;
        gp_error err;
        ok(w, gp_engine_job_info(w->e, w->ids[k], &j, &err), &err, "info");
        if (!w->whole[k] || !holds(j.state) || inside(LEAVES[w->leaf[k]], owner))
            continue;
        for (int r = 0; r < j.replicas; r++)
            if (node_index(w, gp_engine_job_node(w->e, w->ids[k], r)) == n)
                room += j.gpus;
    }
    return room;
}

/* reclaimed: time passes, nothing ends; no owner's single job still waits
 * where outsiders alone keep it out. */
static void check_reclaimed(world *w)
{
    for (int round = 0; round < 8; round++) {
        w->now += 30;
        tick(w);
        check_fenced(w);
    }
    for (size_t k = 0; k < w->n_jobs; k++) {
        gp_job_info j;
        gp_error err;
        ok(w, gp_engine_job_info(w->e, w->ids[k], &j, &err), &err, "info");
        if (!w->whole[k] || j.state != GP_JOB_PENDING || j.replicas != 1)
            continue;
        /* an owner's own head job may hold the pool's nodes (a reservation:
         * backfill); an outsider's reservation never does */
        if (j.wait.code == GP_WAIT_RESERVATION && j.wait.job >= 1 && j.wait.job <= w->n_jobs &&
            inside(LEAVES[w->leaf[j.wait.job - 1]], "a") == inside(LEAVES[w->leaf[k]], "a") &&
            inside(LEAVES[w->leaf[j.wait.job - 1]], "b/x") == inside(LEAVES[w->leaf[k]], "b/x"))
            continue;
        for (int n = 0; n < w->n_nodes; n++) {
            const char *owner = w->node_owner[n];
            if (!*owner || !inside(LEAVES[w->leaf[k]], owner) || room_without_outsiders(w, n, owner) < j.gpus)
                continue;
            gp_node_info info;
            assert_true(gp_engine_node_get(w->e, (uint32_t)n, &info));
            if (room_without_outsiders(w, n, owner) > info.gpus_free) {
                char why[256];
                gp_engine_why(w->e, w->ids[k], why, sizeof why);
                fail_msg("%s: job %llu of %s (%d GPUs) waits while outsiders hold %s of %s: %s", w->where,
                         (unsigned long long)w->ids[k], LEAVES[w->leaf[k]], j.gpus, w->node_name[n], owner, why);
            }
        }
    }
}

static void check_after_tick(void *ctx)
{
    check_fenced(ctx);
}

/* progress: with everything running finished, round after round, every job places. */
static void check_progress(world *w)
{
    gp_prop_progress(w->e, w->ids, w->n_jobs, &w->now, 30, check_after_tick, w, w->where);
}

/* No preemption cap, so every outsider can be reclaimed; a short cool-down
 * (a reclaimer skips the jobs it was preempted for within it), so the
 * "reclaimed" rounds outlast it. */
static gp_engine_config test_config(void)
{
    gp_engine_config cfg = gp_engine_config_default();
    cfg.max_preemptions = 0;
    cfg.preempt_cooldown_s = 60;
    return cfg;
}

static void restore(world *w)
{
    gp_engine_config cfg = test_config();
    gp_prop_snapshot_swap(&w->e, &cfg, w->where);
}

static gp_engine *engine_new(void)
{
    gp_engine_config cfg = test_config();
    return gp_engine_new(&cfg);
}

static void run_sequence(uint64_t seed)
{
    world w = {.rng = seed * 2654435761u + 1, .now = 0};
    snprintf(w.where, sizeof w.where, "seed %llu", (unsigned long long)seed);
    w.e = engine_new();
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
        check_fenced(&w);
        if (i % 40 == 39)
            restore(&w);
    }
    check_reclaimed(&w);
    check_progress(&w);
    gp_engine_free(w.e);
}

static void owned_pools_hold_under_random_events(void **state)
{
    (void)state;
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", DEFAULT_SEED);
    uint64_t n = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", DEFAULT_SEQUENCES);
    for (uint64_t i = 0; i < n; i++)
        run_sequence(base + i);
}

/* The story of docs/operations.md: lend off keeps b out and says why; lend
 * on lets it borrow, and a's job takes the pool back with grace. */
static void an_owner_keeps_lends_and_takes_back(void **state)
{
    (void)state;
    world w = {.rng = 1};
    snprintf(w.where, sizeof w.where, "story");
    w.e = engine_new();
    gp_error err;
    tenant(&w, "org", -1);
    tenant(&w, "org/a", 0);
    tenant(&w, "org/b", -1);
    pool(&w, "team-a", "org/a");
    node(&w, NULL, "", 4, GP_SHARING_EXCLUSIVE);
    node(&w, "team-a", "org/a", 4, GP_SHARING_EXCLUSIVE);
    gp_job_spec s = sb_whole_job(1, "org/b", 4);
    ok(&w, gp_engine_job_submit(w.e, &s, 0, &err), &err, "submit 1");
    s = sb_whole_job(2, "org/b", 4);
    s.checkpoint_grace_s = 30;
    ok(&w, gp_engine_job_submit(w.e, &s, 0, &err), &err, "submit 2");
    tick(&w);
    assert_string_equal(gp_engine_job_node(w.e, 1, 0), "n0");
    gp_job_info info;
    char why[256];
    ok(&w, gp_engine_job_info(w.e, 2, &info, &err), &err, "info 2");
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_DEDICATED);
    assert_int_equal(info.wait.c, 2);
    gp_engine_why(w.e, 2, why, sizeof why);
    assert_non_null(strstr(why, "its free GPUs are in pool team-a owned by tenant org/a"));
    /* a snapshot keeps the owner */
    restore(&w);
    w.now = 10;
    tick(&w);
    ok(&w, gp_engine_job_info(w.e, 2, &info, &err), &err, "info 2 after restore");
    assert_int_equal(info.state, GP_JOB_PENDING);
    /* org/a lends: b's job borrows the pool */
    tenant(&w, "org/a", 1);
    w.now = 20;
    tick(&w);
    assert_string_equal(gp_engine_job_node(w.e, 2, 0), "n1");
    uint32_t p = gp_engine_pool_find(w.e, "team-a");
    gp_pool_info pi;
    assert_true(gp_engine_pool_get(w.e, p, &pi));
    assert_true(pi.owned && pi.lent);
    assert_int_equal(pi.gpus_borrowed, 4);
    /* a's job takes it back: b's job is preempted with its grace */
    s = sb_whole_job(3, "org/a", 2);
    ok(&w, gp_engine_job_submit(w.e, &s, 30, &err), &err, "submit 3");
    w.now = 30;
    tick(&w);
    ok(&w, gp_engine_job_info(w.e, 2, &info, &err), &err, "info 2 preempted");
    assert_int_equal(info.state, GP_JOB_PREEMPTING);
    ok(&w, gp_engine_job_info(w.e, 3, &info, &err), &err, "info 3 waits");
    assert_int_equal(info.wait.code, GP_WAIT_RECLAIM);
    assert_int_equal(info.wait.b, 2);
    gp_engine_why(w.e, 3, why, sizeof why);
    assert_non_null(strstr(why, "org/a takes its own pool back"));
    /* the grace ends (the agent reports the replica gone): a's job runs on the pool */
    ok(&w, gp_engine_job_finished(w.e, 2, GP_EXIT_STOPPED, 61, &err), &err, "victim gone");
    w.now = 61;
    tick(&w);
    ok(&w, gp_engine_job_info(w.e, 3, &info, &err), &err, "info 3 runs");
    assert_int_equal(info.state, GP_JOB_RUNNING);
    assert_string_equal(gp_engine_job_node(w.e, 3, 0), "n1");
    gp_engine_free(w.e);
}

/* An owner that names no tenant closes the pool to everybody until it
 * exists; then its jobs place there. */
static void an_owner_not_made_yet_closes_the_pool(void **state)
{
    (void)state;
    world w = {.rng = 1};
    snprintf(w.where, sizeof w.where, "closed");
    w.e = engine_new();
    gp_error err;
    tenant(&w, "b", -1);
    pool(&w, "p", "a");
    node(&w, "p", "a", 4, GP_SHARING_EXCLUSIVE);
    gp_job_spec s = sb_whole_job(1, "b", 1);
    ok(&w, gp_engine_job_submit(w.e, &s, 0, &err), &err, "submit 1");
    tick(&w);
    gp_job_info info;
    ok(&w, gp_engine_job_info(w.e, 1, &info, &err), &err, "info 1");
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_DEDICATED);
    assert_int_equal(info.wait.c, 2);
    tenant(&w, "a", 0);
    s = sb_whole_job(2, "a", 1);
    ok(&w, gp_engine_job_submit(w.e, &s, 1, &err), &err, "submit 2");
    w.now = 1;
    tick(&w);
    assert_string_equal(gp_engine_job_node(w.e, 2, 0), "n0");
    ok(&w, gp_engine_job_info(w.e, 1, &info, &err), &err, "info 1 again");
    assert_int_equal(info.state, GP_JOB_PENDING);
    gp_engine_free(w.e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_owner_keeps_lends_and_takes_back),
        cmocka_unit_test(an_owner_not_made_yet_closes_the_pool),
        cmocka_unit_test(owned_pools_hold_under_random_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
