/* test_reclaim_properties.c - randomized property tests of victim sets.
 *
 * Every sequence builds 4 nodes x 8 H100 (one block) and tenants: g1 and
 * g2 (guarantee 6 each), lim {limit 10} with lim/g (guarantee 6) and lim/b,
 * org with org/b1 and org/b2, and c (no guarantee).  Then 150 random
 * events with non-decreasing time: submits (1 or 2 replicas of 1, 2, 4 or
 * 8 GPUs, topology any, priority -1..1, grace 1..40 s), finishes, cancels
 * of pending and running jobs, checkpoints and ticks.
 *
 * The test keeps its own books from the decisions (who was preempted for
 * whom, when, and which victims it cancelled) and checks, from public
 * queries only:
 *   minimal      after every tick, for each batch of PREEMPTs for one job B
 *                that is still waiting: taking any one victim back out would
 *                leave B short.  Capacity (B claims GPUs for its plan): with
 *                avail(n) = GPUs of node n that are free and unclaimed or
 *                claimed for B, plus the other victims' GPUs, B does not fit
 *                (sum over nodes of avail(n) / gpus < replicas).  Skipped in
 *                a pass that made a reservation (held nodes are invisible
 *                afterwards).  Limit (B claims no GPU): without the victim,
 *                some ancestor of B stays over its limit with B's demand;
 *   gone         no job is preempting for a beneficiary that is gone: every
 *                victim in grace that was not cancelled has its beneficiary
 *                pending and waiting for the reclaim;
 *   idle         for B of 1-GPU replicas (its shape strands nothing), with S
 *                = GPUs B still lacks beyond the free ones: no victim of size
 *                >= S was taken while a job of the same or a lower tier
 *                (priority, then cool-down) that holds between S GPUs and
 *                fewer than the victim kept running (skipped, as minimal is,
 *                after a pass that made a reservation, and for a reclaim for
 *                fair share, whose candidates the tenants' shares filter:
 *                reclaim.c, not modelled here);
 *   invariants   gp_engine_check_invariants() == GP_OK.
 *
 * The state before and after the tick stands in, conservatively, for the
 * moment of the reclaim: a GPU counts as free for B only if it was free
 * (and not claimed for another job) both before and after; later in the
 * pass others only take GPUs and add usage, which can hide a violation
 * but never invent one.
 *
 * Half the sequences run with fair-share reclaim (`fair_share_reclaim`,
 * opt-in), half without.
 *
 * Environment: GP_PROPERTY_SEQUENCES (default 1000), GP_PROPERTY_SEED
 * (base; sequence i uses base + i).
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
#include "support/fleet_builder.h"

#define DEFAULT_SEQUENCES 1000
#define DEFAULT_SEED 0x7265636cULL
#define EVENTS 150
#define MAX_JOBS 200
#define NODES 4
#define GPUS_PER_NODE 8
#define COOLDOWN 600 /* gp_engine_config_default() */

static const char *const tenants[] = {"g1", "g2", "lim/g", "lim/b", "org/b1", "org/b2", "c"};
#define N_TENANTS (sizeof tenants / sizeof *tenants)

typedef struct rjob {
    uint64_t id;
    int tenant;
    bool cancelled;        /* the test asked to cancel it */
    uint64_t victim_of;    /* in grace for this job, 0 when none */
    int64_t last_preempted, prev_preempted; /* the latest two PREEMPTs of it */
    uint64_t preempted_for[8]; /* the jobs it was preempted for, with times */
    int64_t preempted_at[8];
    int n_preempted;
} rjob;

typedef struct world {
    tb_world *w;
    uint64_t rng;
    int64_t now;
    rjob jobs[MAX_JOBS];
    int n_jobs;
    uint64_t claim_before[NODES * GPUS_PER_NODE]; /* before the tick: claimed for, or */
    bool free_before[NODES * GPUS_PER_NODE];       /* free of any job */
    uint64_t seed;
    int event;
} world;

static uint64_t next(world *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static int pick(world *s, int n)
{
    return (int)(next(s) % (uint64_t)n);
}

static void failf(const world *s, const char *prop, const char *fmt, ...)
{
    va_list ap;
    char msg[512];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail_msg("%s: seed=0x%" PRIx64 " event=%d t=%" PRId64 ": %s (reproduce: GP_PROPERTY_SEED=0x%" PRIx64
             " GP_PROPERTY_SEQUENCES=1)",
             prop, s->seed, s->event, s->now, msg, s->seed);
}

static rjob *find(world *s, uint64_t id)
{
    for (int i = 0; i < s->n_jobs; i++)
        if (s->jobs[i].id == id)
            return &s->jobs[i];
    return NULL;
}

/* ---- the world ---- */

static void build(world *s)
{
    tb_add_nodes(s->w, NODES, "H100", GPUS_PER_NODE, "b0", "z0");
    tb_tenant(s->w, "g1", "H100", 6, -1);
    tb_tenant(s->w, "g2", "H100", 6, -1);
    tb_tenant(s->w, "lim", "H100", -1, 10);
    tb_tenant(s->w, "lim/g", "H100", 6, -1);
    tb_tenant(s->w, "lim/b", "H100", -1, -1);
    tb_tenant(s->w, "org", "H100", -1, -1);
    tb_tenant(s->w, "org/b1", "H100", -1, -1);
    tb_tenant(s->w, "org/b2", "H100", -1, -1);
    tb_tenant(s->w, "c", "H100", -1, -1);
}

static void submit(world *s)
{
    if (s->n_jobs >= MAX_JOBS)
        return;
    static const int sizes[] = {1, 1, 2, 4, 8};
    rjob *j = &s->jobs[s->n_jobs];
    memset(j, 0, sizeof *j);
    j->id = (uint64_t)s->n_jobs + 1;
    j->tenant = pick(s, (int)N_TENANTS);
    j->last_preempted = j->prev_preempted = -1;
    gp_job_spec spec = tb_job(j->id, tenants[j->tenant], 1 + pick(s, 40));
    spec.gpus = sizes[pick(s, 5)];
    spec.replicas = spec.gpus <= 4 && pick(s, 4) == 0 ? 2 : 1;
    spec.priority = pick(s, 3) - 1;
    if (tb_submit_spec(s->w, &spec, s->now, NULL) == GP_OK)
        s->n_jobs++;
}

/* A random tracked job in one of the states (bit per gp_job_state), or NULL. */
static rjob *random_job(world *s, unsigned states)
{
    int n = 0;
    rjob *cand[MAX_JOBS];
    for (int i = 0; i < s->n_jobs; i++)
        if (states & (1u << tb_state(s->w, s->jobs[i].id)))
            cand[n++] = &s->jobs[i];
    return n ? cand[pick(s, n)] : NULL;
}

/* Read the decisions of the last event into the books. */
static void read_decisions(world *s)
{
    size_t n;
    const gp_decision *d = gp_engine_decisions(s->w->e, &n);
    for (size_t i = 0; i < n; i++) {
        rjob *j = find(s, d[i].job_id);
        if (!j)
            continue;
        if (d[i].kind == GP_DEC_PREEMPT) {
            j->victim_of = d[i].by_job;
            j->prev_preempted = j->last_preempted;
            j->last_preempted = s->now;
            if (j->n_preempted < 8) {
                j->preempted_for[j->n_preempted] = d[i].by_job;
                j->preempted_at[j->n_preempted++] = s->now;
            }
        } else if (d[i].kind == GP_DEC_TRANSITION && d[i].from == GP_JOB_PREEMPTING) {
            j->victim_of = 0;
        }
    }
}

/* ---- minimal ---- */

static int node_of_gpu(world *s, uint32_t g)
{
    gp_gpu_info info;
    assert_true(gp_engine_gpu_get(s->w->e, g, &info));
    return (int)info.node;
}

static void snapshot(world *s)
{
    for (uint32_t g = 0; g < NODES * GPUS_PER_NODE; g++) {
        gp_gpu_info info;
        assert_true(gp_engine_gpu_get(s->w->e, g, &info));
        s->free_before[g] = info.job == 0;
        s->claim_before[g] = info.claimed_for;
    }
}

/* GPUs per node B could use besides its victims': free and unclaimed (or
 * claimed for B) both before and after the tick, so also when B looked
 * (claims of others can be given up later in the pass). */
static void free_for(world *s, uint64_t b, int avail[NODES])
{
    memset(avail, 0, NODES * sizeof *avail);
    for (uint32_t g = 0; g < NODES * GPUS_PER_NODE; g++) {
        gp_gpu_info info;
        assert_true(gp_engine_gpu_get(s->w->e, g, &info));
        if (info.job == 0 && (info.claimed_for == 0 || info.claimed_for == b) && s->free_before[g] &&
            (s->claim_before[g] == 0 || s->claim_before[g] == b))
            avail[info.node]++;
    }
}

/* Does B fit with the free GPUs and the victims' except victim `skip`? */
static bool fits_without(world *s, const gp_job_info *b, const uint64_t *v, int nv, int skip)
{
    int avail[NODES];
    free_for(s, b->id, avail);
    for (int k = 0; k < nv; k++) {
        if (k == skip)
            continue;
        uint32_t gpus[16];
        size_t got = gp_engine_job_gpus(s->w->e, v[k], gpus, 16);
        for (size_t x = 0; x < got; x++)
            avail[node_of_gpu(s, gpus[x])]++;
    }
    int replicas = 0;
    for (int n = 0; n < NODES; n++)
        replicas += avail[n] / b->gpus;
    return replicas >= b->replicas;
}

static bool under(world *s, uint32_t tenant, uint32_t ancestor)
{
    for (uint32_t a = tenant; a != UINT32_MAX;) {
        if (a == ancestor)
            return true;
        gp_tenant_info t;
        assert_true(gp_engine_tenant_get(s->w->e, a, &t));
        a = t.parent;
    }
    return false;
}

/* Is some ancestor of B still over its H100 limit with B's demand when the
 * victims other than `skip` are taken off? */
static bool over_limit(world *s, const gp_job_info *b, const uint64_t *v, int nv, int skip)
{
    int64_t demand = (int64_t)b->replicas * b->gpus * 1000;
    for (uint32_t a = b->tenant; a != UINT32_MAX;) {
        gp_tenant_info t;
        assert_true(gp_engine_tenant_get(s->w->e, a, &t));
        int64_t usage = t.usage.v[0];
        for (int k = 0; k < nv; k++) {
            gp_job_info vi = tb_info(s->w, v[k]);
            if (k != skip && under(s, vi.tenant, a))
                usage -= (int64_t)vi.replicas * vi.gpus * 1000;
        }
        if (t.limit.v[0] != GP_UNLIMITED && usage + demand > t.limit.v[0])
            return true;
        a = t.parent;
    }
    return false;
}

/* A capacity reclaim claims the GPUs of its plan; a limit reclaim none. */
static bool claims_any(world *s, uint64_t b)
{
    size_t n = gp_engine_gpu_count(s->w->e);
    for (uint32_t g = 0; g < n; g++) {
        gp_gpu_info info;
        assert_true(gp_engine_gpu_get(s->w->e, g, &info));
        if (info.claimed_for == b)
            return true;
    }
    return false;
}

static void check_minimal(world *s, const gp_job_info *b, const uint64_t *v, int nv)
{
    gp_engine_stats st;
    gp_engine_stats_get(s->w->e, &st);
    if (!claims_any(s, b->id)) { /* a limit reclaim */
        for (int k = 0; k < nv; k++)
            if (!over_limit(s, b, v, nv, k))
                failf(s, "minimal", "limit reclaim for job %" PRIu64 ": victim %" PRIu64 " was not needed", b->id,
                      v[k]);
        return;
    }
    if (st.pass_reservations > 0)
        return;
    for (int k = 0; k < nv; k++)
        if (fits_without(s, b, v, nv, k))
            failf(s, "minimal", "job %" PRIu64 " (%dx%d) fits without victim %" PRIu64 " of %d", b->id, b->replicas,
                  b->gpus, v[k], nv);
}

/* ---- idle ---- */

/* Priority, then cool-down, as the pass saw it: a PREEMPT of this tick
 * does not count. */
static int tier_rank(world *s, const rjob *j, const gp_job_info *info)
{
    int64_t last = j->last_preempted == s->now ? j->prev_preempted : j->last_preempted;
    bool cooling = last >= 0 && s->now - last < COOLDOWN;
    return info->priority * 2 + (cooling ? 1 : 0);
}

static bool loop_guarded(world *s, const rjob *b, uint64_t w)
{
    for (int k = 0; k < b->n_preempted; k++)
        if (b->preempted_for[k] == w && s->now - b->preempted_at[k] < COOLDOWN)
            return true;
    return false;
}

static void check_idle(world *s, const gp_job_info *b, const uint64_t *v, int nv)
{
    gp_engine_stats st;
    gp_engine_stats_get(s->w->e, &st);
    if (b->gpus != 1 || st.pass_reservations > 0 || !claims_any(s, b->id) || b->wait.b != 0)
        return;
    int avail[NODES], free_gpus = 0;
    free_for(s, b->id, avail);
    for (int n = 0; n < NODES; n++)
        free_gpus += avail[n];
    int shortfall = b->replicas - free_gpus;
    const rjob *rb = find(s, b->id);
    for (int k = 0; k < nv; k++) {
        gp_job_info vi = tb_info(s->w, v[k]);
        int size = vi.replicas * vi.gpus, tier = tier_rank(s, find(s, v[k]), &vi);
        if (size < shortfall)
            continue;
        for (int i = 0; i < s->n_jobs; i++) {
            gp_job_info wi = tb_info(s->w, s->jobs[i].id);
            int wsize = wi.replicas * wi.gpus;
            if (wi.state != GP_JOB_RUNNING || wi.cls != GP_CLASS_BURSTABLE || wi.bind_time == s->now ||
                loop_guarded(s, rb, wi.id) || tier_rank(s, &s->jobs[i], &wi) > tier || wsize < shortfall ||
                wsize >= size)
                continue;
            failf(s, "idle",
                  "job %" PRIu64 " lacked %d GPUs: victim %" PRIu64 " of %d GPUs taken while job %" PRIu64
                  " of %d ran on",
                  b->id, shortfall, v[k], size, wi.id, wsize);
        }
    }
}

/* Every batch of PREEMPTs of the last tick, per beneficiary still waiting. */
static void check_batches(world *s)
{
    size_t n;
    const gp_decision *d = gp_engine_decisions(s->w->e, &n);
    uint64_t done[64];
    int n_done = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i].kind != GP_DEC_PREEMPT)
            continue;
        uint64_t by = d[i].by_job;
        bool seen = false;
        for (int k = 0; k < n_done; k++)
            seen |= done[k] == by;
        if (seen || n_done == 64)
            continue;
        done[n_done++] = by;
        gp_job_info b = tb_info(s->w, by);
        if (b.state != GP_JOB_PENDING || b.wait.code != GP_WAIT_RECLAIM)
            continue; /* bound in the same pass (victims of grace 0 do not exist here) */
        uint64_t v[32];
        int nv = 0;
        for (size_t k = 0; k < n && nv < 32; k++)
            if (d[k].kind == GP_DEC_PREEMPT && d[k].by_job == by && tb_state(s->w, d[k].job_id) == GP_JOB_PREEMPTING)
                v[nv++] = d[k].job_id;
        check_minimal(s, &b, v, nv);
        check_idle(s, &b, v, nv);
    }
}

/* ---- gone ---- */

static void check_gone(world *s)
{
    for (int i = 0; i < s->n_jobs; i++) {
        const rjob *j = &s->jobs[i];
        if (j->victim_of == 0 || j->cancelled || tb_state(s->w, j->id) != GP_JOB_PREEMPTING)
            continue;
        gp_job_info b = tb_info(s->w, j->victim_of);
        if (b.state != GP_JOB_PENDING || b.wait.code != GP_WAIT_RECLAIM)
            failf(s, "gone", "job %" PRIu64 " is preempting for job %" PRIu64 ", which is %s (wait %d)", j->id, b.id,
                  gp_job_state_name(b.state), (int)b.wait.code);
    }
}

/* ---- one sequence ---- */

static void step(world *s)
{
    gp_engine_decisions_clear(s->w->e);
    int r = pick(s, 20);
    bool ticked = false;
    if (r < 7) {
        submit(s);
    } else if (r < 9) {
        rjob *j = random_job(s, 1u << GP_JOB_RUNNING);
        if (j)
            tb_finish(s->w, j->id, GP_EXIT_SUCCEEDED, s->now);
    } else if (r < 11) {
        rjob *j = random_job(s, 1u << GP_JOB_PENDING | 1u << GP_JOB_RUNNING | 1u << GP_JOB_PREEMPTING);
        if (j) {
            assert_int_equal(gp_engine_job_cancel(s->w->e, j->id, s->now, NULL), GP_OK);
            j->cancelled = true;
        }
    } else if (r < 12) {
        rjob *j = random_job(s, 1u << GP_JOB_RUNNING);
        if (j)
            assert_int_equal(gp_engine_job_checkpointed(s->w->e, j->id, s->now, NULL), GP_OK);
    } else {
        snapshot(s);
        s->now += 1 + pick(s, 30);
        assert_int_equal(gp_engine_tick(s->w->e, s->now, NULL), GP_OK);
        ticked = true;
    }
    read_decisions(s);
    if (ticked)
        check_batches(s);
    check_gone(s);
    gp_error err;
    if (gp_engine_check_invariants(s->w->e, &err) != GP_OK)
        failf(s, "invariants", "%s: %s", err.field, err.message);
}

static void with_fair_share(world *s)
{
    gp_engine_config cfg = gp_engine_config_default();
    cfg.fair_share_reclaim = true;
    gp_engine_free(s->w->e);
    s->w->e = gp_engine_new(&cfg);
    if (!s->w->e)
        failf(s, "setup", "out of memory");
}

static void random_sequences_keep_victim_sets_minimal_and_fair(void **state)
{
    (void)state;
    uint64_t n = gp_prop_env_u64("GP_PROPERTY_SEQUENCES", DEFAULT_SEQUENCES);
    uint64_t base = gp_prop_env_u64("GP_PROPERTY_SEED", DEFAULT_SEED);
    static world s;
    for (uint64_t q = 0; q < n; q++) {
        memset(&s, 0, sizeof s);
        s.seed = base + q;
        s.rng = s.seed * 0x9e3779b97f4a7c15ULL + 1;
        s.w = tb_new();
        if (next(&s) % 2) /* half the sequences with fair-share reclaim (opt-in) */
            with_fair_share(&s);
        build(&s);
        for (s.event = 0; s.event < EVENTS; s.event++)
            step(&s);
        tb_free(s.w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_sequences_keep_victim_sets_minimal_and_fair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
