/* test_reclaim.c - reclaiming lent guarantee by graceful, whole-gang preemption.
 *
 * Semantics under test (docs/scheduling.md, "Reclaim and preemption";
 * docs/architecture.md, "The life of one job"): a GUARANTEED job that cannot
 * be placed picks victims among RUNNING BURSTABLE jobs (whole jobs) in the
 * order of reclaim.c, "Which victims": lower priority first, and at equal
 * priority jobs in cool-down last; then victims that fit within what is
 * still missing; then the lowest cost (work lost since the last checkpoint
 * or bind, plus a restart price per job and GPU, divided by how far the
 * tenant is over its fair share); ties the most recently bound, then the
 * lower id.  The set is then pruned to a minimal one and preempted: PREEMPT
 * (grace_s = victim's checkpoint_grace_s, by_job, by_tenant, guarantee_of,
 * work_lost_gpu_s) + TRANSITION running->preempting.  At deadline = preempt time + grace, or on
 * job_finished(STOPPED), the victim releases its GPUs and goes back to
 * PENDING with the same id; the reclaimer waits GP_WAIT_RECLAIM and is
 * placed by the first pass at or after the deadline.  Grace 0: released in
 * the same pass.  Guaranteed jobs are never victims.
 *
 * Worked example (most tests): one node of 8 H100.  "owner" has a floor of
 * 4 GPUs it is not using; "borrower" (no floor) fills all 8 GPUs with
 * 1-GPU jobs, grace 60.  At t=100 the owner submits a 4-GPU job: four
 * borrower jobs get PREEMPT (grace 60), keep their GPUs until t=160, and
 * at the tick of t=160 they are PENDING again and the owner's job is bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

enum { OWNER_JOB = 100 };

static void submit_full(tb_world *w, uint64_t id, const char *tenant, int replicas, int gpus, int64_t grace,
                        int priority, int64_t now)
{
    gp_job_spec s = tb_job(id, tenant, grace);
    s.replicas = replicas;
    s.gpus = gpus;
    s.priority = priority;
    assert_int_equal(tb_submit_spec(w, &s, now, NULL), GP_OK);
}

static void owner_and_borrower(tb_world *w, int nodes, int gpus_per_node)
{
    tb_add_nodes(w, nodes, "H100", gpus_per_node, "b0", "z0");
    tb_tenant(w, "owner", "H100", 4, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
}

/* The worked example up to the PREEMPTs at t=100.  Fills victims[4]. */
static void reclaim_scenario(tb_world *w, uint64_t victims[4])
{
    owner_and_borrower(w, 1, 8);
    for (uint64_t id = 1; id <= 8; id++)
        submit_full(w, id, "borrower", 1, 1, 60, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 4);
    size_t n = 0, count = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_PREEMPT && n < 4)
            victims[n++] = d[i].job_id;
    assert_int_equal(n, 4);
}

static void preempted_ids(tb_world *w, uint64_t *out, size_t cap, size_t *n)
{
    size_t count = 0;
    *n = 0;
    const gp_decision *d = gp_engine_decisions(w->e, &count);
    for (size_t i = 0; i < count; i++)
        if (d[i].kind == GP_DEC_PREEMPT && *n < cap)
            out[(*n)++] = d[i].job_id;
}

/* ---- grace ---- */

static void victim_keeps_its_gpus_during_grace(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    for (int i = 0; i < 4; i++) {
        const gp_decision *p = tb_find(w, victims[i], GP_DEC_PREEMPT);
        assert_int_equal(p->grace_s, 60);
        assert_non_null(tb_find_transition(w, victims[i], GP_JOB_RUNNING, GP_JOB_PREEMPTING));
        gp_job_info info = tb_info(w, victims[i]);
        assert_int_equal(info.state, GP_JOB_PREEMPTING);
        assert_int_equal(info.preempt_deadline, 160);
        uint32_t gpu;
        assert_int_equal(gp_engine_job_gpus(w->e, victims[i], &gpu, 1), 1);
        assert_int_equal(tb_gpu(w, gpu).job, victims[i]);
    }
    assert_int_equal(tb_tick(w, 159, GP_DEC_TRANSITION), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_state(w, victims[i]), GP_JOB_PREEMPTING);
    tb_assert_gpus_consistent(w);
}

static void reclaimer_is_placed_at_the_deadline_and_not_before(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    assert_null(tb_find(w, OWNER_JOB, GP_DEC_BIND));
    gp_job_info info = tb_info(w, OWNER_JOB);
    assert_int_equal(info.wait.code, GP_WAIT_RECLAIM);
    assert_int_equal(info.wait.a, 4);
    assert_int_equal(info.wait.time, 160);

    assert_int_equal(tb_tick(w, 159, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_PENDING);

    assert_int_equal(tb_tick(w, 160, GP_DEC_BIND), 1);
    assert_non_null(tb_find(w, OWNER_JOB, GP_DEC_BIND));
    info = tb_info(w, OWNER_JOB);
    assert_int_equal(info.state, GP_JOB_RUNNING);
    assert_int_equal(info.bind_time, 160);
    assert_int_equal(info.cls, GP_CLASS_GUARANTEED);
    tb_assert_gpus_consistent(w);
}

static void victim_is_requeued_pending_with_the_same_id(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    tb_tick(w, 160, GP_DEC_BIND);
    for (int i = 0; i < 4; i++) {
        assert_non_null(tb_find_transition(w, victims[i], GP_JOB_PREEMPTING, GP_JOB_PENDING));
        gp_job_info info = tb_info(w, victims[i]);
        assert_int_equal(info.id, victims[i]);
        assert_int_equal(info.state, GP_JOB_PENDING);
        assert_int_equal(info.preemptions, 1);
        uint32_t gpu;
        assert_int_equal(gp_engine_job_gpus(w->e, victims[i], &gpu, 1), 0);
    }
    /* 4 borrower + 4 owner GPUs: the fleet is full, victims wait */
    assert_int_equal(tb_jobs_holding(w, "borrower"), 4);
    assert_int_equal(tb_jobs_in_state(w, "borrower", GP_JOB_PENDING), 4);
    assert_int_equal(tb_free_gpus(w), 0);
}

static void grace_zero_victim_is_released_in_the_same_pass(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    submit_full(w, 1, "borrower", 1, 8, 0, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit_full(w, OWNER_JOB, "owner", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, OWNER_JOB, GP_DEC_BIND));
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
}

static void finished_stopped_ends_the_grace_early(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    submit_full(w, 1, "borrower", 1, 8, 300, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit_full(w, OWNER_JOB, "owner", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_info(w, 1).preempt_deadline, 400);

    gp_engine_decisions_clear(w->e);
    tb_finish(w, 1, GP_EXIT_STOPPED, 120); /* the victim checkpointed and left early */
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    uint32_t gpu;
    assert_int_equal(gp_engine_job_gpus(w->e, 1, &gpu, 1), 0);
    tb_advance(w, 120);
    const gp_decision *bind = tb_find(w, OWNER_JOB, GP_DEC_BIND);
    assert_non_null(bind);
    assert_int_equal(bind->time, 120);
    assert_int_equal(tb_info(w, OWNER_JOB).bind_time, 120);
}

/* ---- whole gangs ---- */

static void whole_gang_is_preempted_and_released_at_once(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 2, 4);                   /* n00, n01: 4 GPUs each */
    submit_full(w, 1, "borrower", 2, 4, 30, 0, 0); /* the gang takes all 8 */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    uint32_t gang_gpus[8];
    assert_int_equal(gp_engine_job_gpus(w->e, 1, gang_gpus, 8), 8);

    /* the owner needs 4 = one replica's worth; the whole gang goes */
    submit_full(w, OWNER_JOB, "owner", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_PREEMPT), 1);
    /* every replica's work counts: 2 replicas x 4 GPUs x (100 - bind 0) */
    assert_int_equal(tb_find(w, 1, GP_DEC_PREEMPT)->work_lost_gpu_s, 800);

    tb_tick(w, 129, GP_DEC_BIND);
    for (int i = 0; i < 8; i++) /* nothing released early, replica by replica */
        assert_int_equal(tb_gpu(w, gang_gpus[i]).job, 1);

    assert_int_equal(tb_tick(w, 130, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    for (int i = 0; i < 8; i++)
        assert_int_not_equal(tb_gpu(w, gang_gpus[i]).job, 1);
    assert_int_equal(tb_gpus_held(w, "owner"), 4);
    assert_int_equal(tb_free_gpus(w), 4); /* the gang needs 8: it waits */
    tb_assert_gpus_consistent(w);
}

/* ---- who is a victim ---- */

static void guaranteed_jobs_are_never_preempted(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "owner", "H100", 4, -1);
    tb_tenant(w, "borrower", "H100", 4, -1);
    for (uint64_t id = 1; id <= 8; id++)
        submit_full(w, id, "borrower", 1, 1, 10, 0, (int64_t)id);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 8);
    for (uint64_t id = 1; id <= 8; id++) /* oldest four under the floor */
        assert_int_equal(tb_info(w, id).cls, id <= 4 ? GP_CLASS_GUARANTEED : GP_CLASS_BURSTABLE);

    for (uint64_t id = 101; id <= 104; id++)
        submit_full(w, id, "owner", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 4);
    for (uint64_t id = 1; id <= 4; id++)
        assert_null(tb_find(w, id, GP_DEC_PREEMPT));
    for (uint64_t id = 5; id <= 8; id++)
        assert_non_null(tb_find(w, id, GP_DEC_PREEMPT));

    assert_int_equal(tb_tick(w, 110, GP_DEC_BIND), 4); /* grace 10 over */
    for (int64_t t = 120; t <= 200; t += 40)
        assert_int_equal(tb_tick(w, t, GP_DEC_PREEMPT), 0);
    for (uint64_t id = 1; id <= 4; id++)
        assert_int_equal(tb_state(w, id), GP_JOB_RUNNING);
}

/* A burstable job reclaims nothing for a guarantee.  Fair share (below)
 * lets it preempt only while the victims' tenant stays at or above it:
 * owner (weight 4, entitled to 4/5 of 8 GPUs) with all 8 GPUs would be at
 * 1.25 times its share, borrower without them at 0: nothing is taken.
 * (Before fair share this test asked 6 GPUs; fair share now takes those,
 * fair_share_job_preempts_borrowers_of_the_tenant_far_above_its_share.) */
static void burstable_job_never_preempts(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    tb_submit_many(w, 1, 8, "borrower", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 8, 0, 0, 100); /* 8 > floor 4: burstable */
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_PENDING);
}

/* ---- fair share (reclaim.c, "fair share") ----
 * One node of 8 H100; owner is guaranteed 4 (weight 4, entitled to 4/5 of
 * the fleet: 6.4 GPUs), borrower has no guarantee (weight 1: 1.6 GPUs) and
 * holds all 8.  owner's 1x6 job is burstable (6 > 4) but would leave owner
 * at (6/8) / 0.8 = 0.94 of its share; borrower, 6 GPUs fewer, would still
 * be at (2/8) / 0.2 = 1.25: six borrowers are preempted for it.  Fair
 * share is opt-in (`fair_share_reclaim`); these tests turn it on. */
static void with_fair_share(tb_world *w)
{
    gp_engine_config cfg = gp_engine_config_default();
    cfg.fair_share_reclaim = true;
    tb_use_config(w, &cfg);
}

static void fair_share_job_preempts_borrowers_of_the_tenant_far_above_its_share(void **state)
{
    tb_world *w = *state;
    with_fair_share(w);
    owner_and_borrower(w, 1, 8);
    tb_submit_many(w, 1, 8, "borrower", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 6, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 6);
    const gp_decision *d = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(d);
    assert_int_equal(d->by_job, OWNER_JOB);
    assert_non_null(strstr(d->reason, "below its fair share"));
    char why[512];
    assert_true(gp_engine_why(w->e, OWNER_JOB, why, sizeof why) > 0);
    assert_non_null(strstr(why, "below its fair share"));
    assert_int_equal(tb_tick(w, 160, GP_DEC_BIND), 1); /* the victims' grace ends: it binds, burstable */
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING);
}

/* Without the option (the default), the same 1x6 job preempts nothing: it
 * is burstable and waits for capacity. */
static void fair_share_is_off_by_default(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    tb_submit_many(w, 1, 8, "borrower", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 6, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_PENDING);
}

/* The example of reclaim.c: 16 H100 on two nodes; a and b without
 * guarantees (weight 1 each: 8 GPUs each).  b borrows all 16; a's 1x8
 * would bring a to 8/8 = 1 and leave b at 8/8 = 1: eight of b's jobs on one
 * node go.  a's second 1x8 would bring a to 2 and b to 0: it waits. */
static void fair_share_stops_where_the_victims_tenant_would_fall_below(void **state)
{
    tb_world *w = *state;
    with_fair_share(w);
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "a", "H100", -1, -1);
    tb_tenant(w, "b", "H100", -1, -1);
    tb_submit_many(w, 1, 16, "b", 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 16);
    submit_full(w, 101, "a", 1, 8, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 8);
    assert_int_equal(tb_tick(w, 160, GP_DEC_BIND), 1); /* the victims' grace (60 s) ends */
    assert_int_equal(tb_state(w, 101), GP_JOB_RUNNING);
    submit_full(w, 102, "a", 1, 8, 0, 0, 200);
    assert_int_equal(tb_tick(w, 200, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_state(w, 102), GP_JOB_PENDING);
}

static void lowest_priority_victims_go_first(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    const int prio[8] = {5, 3, 7, -2, 9, 0, 1, 4}; /* jobs 1..8 */
    for (uint64_t id = 1; id <= 8; id++)
        submit_full(w, id, "borrower", 1, 1, 0, prio[id - 1], 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    /* two GPUs needed: the two lowest, job 4 (-2) and job 6 (0) */
    submit_full(w, OWNER_JOB, "owner", 1, 2, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 2);
    assert_non_null(tb_find(w, 4, GP_DEC_PREEMPT));
    assert_non_null(tb_find(w, 6, GP_DEC_PREEMPT));
}

static void least_work_lost_victim_goes_first(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    for (uint64_t id = 1; id <= 4; id++) /* four 2-GPU jobs bound at t=0 */
        submit_full(w, id, "borrower", 1, 2, 0, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 1, 100, NULL), GP_OK);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 3, 500, NULL), GP_OK);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 2, 900, NULL), GP_OK);
    /* job 4 never checkpointed.  Lost at t=1000: 1: 2*900, 2: 2*100, 3: 2*500, 4: 2*1000 */
    submit_full(w, OWNER_JOB, "owner", 1, 2, 0, 0, 1000);
    assert_int_equal(tb_tick(w, 1000, GP_DEC_PREEMPT), 1);
    const gp_decision *p = tb_find(w, 2, GP_DEC_PREEMPT);
    assert_non_null(p);
    assert_int_equal(p->work_lost_gpu_s, 200);
    assert_int_equal(tb_info(w, 2).last_checkpoint, 900);
}

/* Priority comes before every other rank: x's jobs have the lower
 * priority, so one of them goes although y is further over its share. */
static void lower_priority_goes_before_the_tenant_further_over(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    tb_tenant(w, "x", "H100", -1, -1);
    tb_tenant(w, "y", "H100", -1, -1);
    for (uint64_t id = 1; id <= 3; id++) /* x: 3 GPUs, low priority */
        submit_full(w, id, "x", 1, 1, 0, -10, 0);
    for (uint64_t id = 11; id <= 15; id++) /* y: 5 GPUs, high priority */
        submit_full(w, id, "y", 1, 1, 0, 10, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    uint64_t victim = 0;
    size_t n = 0;
    preempted_ids(w, &victim, 1, &n);
    assert_true(victim >= 1 && victim <= 3);
}

/* "Over fair share" is hierarchical: usage against the entitlement DRF
 * gives a tenant through its ancestors.  Roots owner (weight 2: its
 * guarantee), org and b (weight 1): org gets 1/4 of the fleet, and its
 * three teams 1/12 each.  org/a1 runs 3 of 8 GPUs: 3/8 against 1/12, 4.5
 * times its share; b runs 5: 5/8 against 1/4, 2.5 times.  Equal work
 * lost: the victim is a1's, although b is further over in GPUs. */
static void victims_come_from_the_tenant_furthest_over_its_fair_share_first(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "owner", "H100", 2, -1);
    tb_tenant(w, "org", "H100", -1, -1);
    tb_tenant(w, "org/a1", "H100", -1, -1);
    tb_tenant(w, "org/a2", "H100", -1, -1);
    tb_tenant(w, "org/a3", "H100", -1, -1);
    tb_tenant(w, "b", "H100", -1, -1);
    for (uint64_t id = 1; id <= 3; id++)
        submit_full(w, id, "org/a1", 1, 1, 0, 0, 0);
    for (uint64_t id = 11; id <= 15; id++)
        submit_full(w, id, "b", 1, 1, 0, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    uint64_t victim = 0;
    size_t n = 0;
    preempted_ids(w, &victim, 1, &n);
    assert_true(victim >= 1 && victim <= 3);
}

/* ---- minimal sets ---- */

/* Seen: to place a 1-GPU guaranteed job the engine preempted a 16-GPU
 * gang while 1-GPU borrowers existed, and 15 GPUs then stood idle.  The
 * gang's tenant is further over, but the gang frees 16 where 1 is
 * missing: a 1-GPU borrower fits the need and goes instead. */
static void one_gpu_need_takes_a_one_gpu_borrower_not_a_gang(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 3, "H100", 8, "b0", "z0");
    tb_tenant(w, "owner", "H100", 1, -1);
    tb_tenant(w, "vision", "H100", -1, -1);
    tb_tenant(w, "ads", "H100", -1, -1);
    submit_full(w, 1, "vision", 2, 8, 30, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    for (uint64_t id = 11; id <= 18; id++)
        submit_full(w, id, "ads", 1, 1, 30, 0, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "owner", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_null(tb_find(w, 1, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_int_equal(tb_tick(w, 130, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING);
    assert_int_equal(tb_free_gpus(w), 0); /* nothing freed stands idle */
    tb_assert_gpus_consistent(w);
}

/* The worked example of reclaim.c: the gang is the cheapest victim (its
 * tenant is 9 times over its fair share) and fits the 8 GPUs missing. */
static void cheapest_victim_that_fits_the_need_goes(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "research", "H100", -1, -1);
    tb_tenant(w, "research/nlp", "H100", 8, -1);
    tb_tenant(w, "research/vision", "H100", -1, -1);
    tb_tenant(w, "ads", "H100", -1, -1);
    submit_full(w, 1, "research/vision", 1, 8, 30, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 1, 900, NULL), GP_OK);
    for (uint64_t id = 11; id <= 18; id++)
        submit_full(w, id, "ads", 1, 1, 30, 0, 900);
    assert_int_equal(tb_tick(w, 900, GP_DEC_BIND), 8);
    submit_full(w, OWNER_JOB, "research/nlp", 1, 8, 0, 0, 1000);
    assert_int_equal(tb_tick(w, 1000, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 1, GP_DEC_PREEMPT));
}

/* Seen: a limit reclaim preempted two borrowers (5 GPUs) where one (4
 * GPUs) was enough.  research {limit 8}: nlp runs 3, vision a 1-GPU job
 * (cheaper: bound later) and a 4-GPU job; nlp's 4-GPU job needs 4 back. */
static void limit_reclaim_takes_a_minimal_set(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "research", "H100", -1, 8);
    tb_tenant(w, "research/nlp", "H100", 8, -1);
    tb_tenant(w, "research/vision", "H100", -1, -1);
    submit_full(w, 1, "research/nlp", 1, 3, 30, 0, 0);
    submit_full(w, 2, "research/vision", 1, 4, 30, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    submit_full(w, 3, "research/vision", 1, 1, 30, 0, 50);
    assert_int_equal(tb_tick(w, 50, GP_DEC_BIND), 1);
    submit_full(w, OWNER_JOB, "research/nlp", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    assert_int_equal(tb_tick(w, 130, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING);
    assert_int_equal(tb_tenant_info(w, "research").usage.v[0], 8000);
}

/* Within a tier, victims that fit within what is still missing go
 * first: 3 GPUs missing, borrowers of 2, 2 and 1 GPUs in cost order (the
 * 2-GPU jobs checkpointed at t=95).  Taking them in cost order would stop
 * both 2-GPU jobs and leave a GPU idle; 2 + 1 fit exactly. */
static void victims_that_fit_the_need_go_before_larger_ones(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 5, "b0", "z0");
    tb_tenant(w, "owner", "H100", 3, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    submit_full(w, 1, "borrower", 1, 2, 0, 0, 0);
    submit_full(w, 2, "borrower", 1, 2, 0, 0, 0);
    submit_full(w, 3, "borrower", 1, 1, 0, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 1, 95, NULL), GP_OK);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 2, 95, NULL), GP_OK);
    submit_full(w, OWNER_JOB, "owner", 1, 3, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 2);
    assert_non_null(tb_find(w, 1, GP_DEC_PREEMPT));
    assert_non_null(tb_find(w, 3, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING); /* grace 0 */
    assert_int_equal(tb_free_gpus(w), 0);
}

/* ---- cool-down and claims ---- */

static void recently_preempted_job_is_a_victim_of_last_resort(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 2, "b0", "z0");
    tb_tenant(w, "owner", "H100", 2, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    submit_full(w, 1, "borrower", 1, 1, 0, 0, 0); /* A */
    submit_full(w, 2, "borrower", 1, 1, 0, 0, 0); /* B: cheaper, it checkpoints */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(gp_engine_job_checkpointed(w->e, 2, 90, NULL), GP_OK);

    submit_full(w, 101, "owner", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT)); /* B, the cheaper */
    tb_finish(w, 101, GP_EXIT_SUCCEEDED, 200);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 1); /* B runs again */
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);

    /* t=300: B (bound at 200) is still the cheaper, but it was preempted
     * 200 s ago, inside the default 600 s cool-down: A goes */
    submit_full(w, 102, "owner", 1, 1, 0, 0, 300);
    assert_int_equal(tb_tick(w, 300, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 1, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

/* The cool-down orders jobs of one priority only: a job of lower priority
 * goes again before a higher one. */
static void cool_down_does_not_shield_a_lower_priority_job(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 2, "b0", "z0");
    tb_tenant(w, "owner", "H100", 2, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    submit_full(w, 1, "borrower", 1, 1, 0, 0, 0);  /* A */
    submit_full(w, 2, "borrower", 1, 1, 0, -5, 0); /* B: lower priority */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    submit_full(w, 101, "owner", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT));
    tb_finish(w, 101, GP_EXIT_SUCCEEDED, 200);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 1);
    submit_full(w, 102, "owner", 1, 1, 0, 0, 300);
    assert_int_equal(tb_tick(w, 300, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
}

static void a_victim_does_not_take_its_gpus_back_within_the_cool_down(void **state)
{
    tb_world *w = *state;
    /* One 2-GPU node; a and b are guaranteed 1 GPU each.  b runs two jobs
     * (one borrows a's GPU); a's job 10 reclaims it at t=100 (grace 0: the
     * victim, 2, is gone at once and waits).  At t=200 the guarantees swap:
     * a holds none, b two, so 2 is guaranteed and 10 is burstable.  Taking
     * 10's GPU now would undo the first preemption: inside the 600 s
     * cool-down 2 waits, even though its grace (and so its tie to the
     * reclaimer) ended long ago.  After the cool-down it reclaims. */
    tb_add_nodes(w, 1, "H100", 2, "b0", "z0");
    tb_tenant(w, "a", "H100", 1, -1);
    tb_tenant(w, "b", "H100", 1, -1);
    submit_full(w, 1, "b", 1, 1, 0, 0, 0);
    submit_full(w, 2, "b", 1, 1, 0, -5, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    submit_full(w, 10, "a", 1, 1, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, 10), GP_JOB_RUNNING);
    tb_tenant(w, "a", "H100", 0, -1);
    tb_tenant(w, "b", "H100", 2, -1);
    assert_int_equal(tb_tick(w, 200, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_tick(w, 800, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 10, GP_DEC_PREEMPT));
}

static void claimed_gpus_are_not_given_to_others(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 1, 8);
    tb_tenant(w, "other", "H100", -1, -1);
    for (uint64_t id = 1; id <= 4; id++) /* four 2-GPU jobs, grace 100 */
        submit_full(w, id, "borrower", 1, 2, 100, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    submit_full(w, OWNER_JOB, "owner", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 2);
    uint64_t victims[2];
    size_t n = 0;
    preempted_ids(w, victims, 2, &n);
    assert_int_equal(n, 2);

    /* one victim leaves early: its 2 GPUs are free but claimed for the owner */
    tb_finish(w, victims[0], GP_EXIT_STOPPED, 120);
    submit_full(w, 50, "other", 1, 1, 0, 0, 120);
    assert_int_equal(tb_tick(w, 120, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 50), GP_JOB_PENDING);

    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 1); /* second deadline */
    assert_non_null(tb_find(w, OWNER_JOB, GP_DEC_BIND));
    tb_assert_gpus_consistent(w);
}

/* The reason of the TRANSITION preempting -> running of a victim. */
static const char *withdrawal_reason(tb_world *w, uint64_t victim)
{
    const gp_decision *d = tb_find_transition(w, victim, GP_JOB_PREEMPTING, GP_JOB_RUNNING);
    assert_non_null(d);
    return d->reason;
}

/* Seen: when a reclaiming job was cancelled during its victims' grace, the
 * victims were still stopped and requeued for it.  They go back to running
 * at once, and their history says why. */
static void cancelled_reclaimer_withdraws_its_preemptions(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims); /* 4 victims, deadline 160 */
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_job_cancel(w->e, OWNER_JOB, 120, NULL), GP_OK);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_CANCELLED);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tb_state(w, victims[i]), GP_JOB_RUNNING);
        assert_string_equal(withdrawal_reason(w, victims[i]), "preemption withdrawn: job 100 was cancelled");
        assert_int_equal(tb_info(w, victims[i]).bind_time, 0); /* the same run goes on */
    }
    assert_int_equal(tb_count(w, GP_DEC_USAGE_CLOSE), 0);
    assert_int_equal(tb_tick(w, 160, GP_DEC_TRANSITION), 0); /* nothing is stopped at the deadline */
    assert_int_equal(tb_jobs_holding(w, "borrower"), 8);
    assert_int_equal(tb_free_gpus(w), 0);
    tb_assert_gpus_consistent(w);
}

/* A victim may have acted on its signal before the withdrawal reached it
 * (checkpointed and exited): its node then reports it stopped.  We asked
 * it to stop, so it is requeued with its id, not failed. */
static void victim_that_stops_after_a_withdrawal_is_requeued_not_failed(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    assert_int_equal(gp_engine_job_cancel(w->e, OWNER_JOB, 120, NULL), GP_OK);
    assert_int_equal(tb_state(w, victims[0]), GP_JOB_RUNNING);
    tb_finish(w, victims[0], GP_EXIT_STOPPED, 125);
    assert_int_equal(tb_state(w, victims[0]), GP_JOB_PENDING);
    assert_int_equal(tb_count(w, GP_DEC_USAGE_CLOSE), 1);
    /* one that fails (not stopped) after the withdrawal still failed */
    tb_finish(w, victims[1], GP_EXIT_FAILED, 126);
    assert_int_equal(tb_state(w, victims[1]), GP_JOB_FAILED);
    tb_assert_gpus_consistent(w);
}

/* The reclaimer found room elsewhere before its victims' grace ended (four
 * other borrowers finished): the victims still in grace keep running. */
static void reclaimer_placed_elsewhere_withdraws_its_preemptions(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    for (uint64_t id = 1; id <= 8; id++)
        if (tb_state(w, id) == GP_JOB_RUNNING)
            tb_finish(w, id, GP_EXIT_SUCCEEDED, 120);
    assert_int_equal(tb_tick(w, 120, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tb_state(w, victims[i]), GP_JOB_RUNNING);
        assert_string_equal(withdrawal_reason(w, victims[i]), "preemption withdrawn: job 100 was placed without it");
    }
    assert_int_equal(tb_tick(w, 160, GP_DEC_TRANSITION), 0);
    tb_assert_gpus_consistent(w);
}

/* The reclaimer no longer runs within a guarantee (its tenant's guarantee
 * was taken away during the grace): it would borrow, and borrowers do not
 * preempt, so its victims keep running. */
static void reclaimer_no_longer_guaranteed_withdraws_its_preemptions(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    tb_tenant(w, "owner", "H100", -1, -1);
    tb_tick(w, 120, GP_DEC_TRANSITION);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_PENDING);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tb_state(w, victims[i]), GP_JOB_RUNNING);
        assert_string_equal(withdrawal_reason(w, victims[i]),
                            "preemption withdrawn: job 100 no longer runs within a guarantee");
    }
    assert_int_equal(tb_tick(w, 160, GP_DEC_BIND), 0);
    assert_int_equal(tb_jobs_holding(w, "borrower"), 8);
    tb_assert_gpus_consistent(w);
}

/* A victim cancelled during its grace keeps stopping when the preemption
 * is withdrawn: the cancel stands. */
static void withdrawal_leaves_a_cancelled_victim_stopping(void **state)
{
    tb_world *w = *state;
    uint64_t victims[4];
    reclaim_scenario(w, victims);
    assert_int_equal(gp_engine_job_cancel(w->e, victims[0], 110, NULL), GP_OK);
    assert_int_equal(gp_engine_job_cancel(w->e, OWNER_JOB, 120, NULL), GP_OK);
    assert_int_equal(tb_state(w, victims[0]), GP_JOB_PREEMPTING);
    assert_int_equal(tb_state(w, victims[1]), GP_JOB_RUNNING);
    tb_tick(w, 160, GP_DEC_TRANSITION);
    assert_int_equal(tb_state(w, victims[0]), GP_JOB_CANCELLED);
    tb_assert_gpus_consistent(w);
}

static void victim_node_lost_during_grace_reclaims_elsewhere(void **state)
{
    tb_world *w = *state;
    owner_and_borrower(w, 2, 4); /* n00, n01: 4 GPUs each */
    submit_full(w, 1, "borrower", 1, 4, 60, 0, 0);
    submit_full(w, 2, "borrower", 1, 4, 60, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    submit_full(w, OWNER_JOB, "owner", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    uint64_t victim = 0, other = 0;
    size_t n = 0;
    preempted_ids(w, &victim, 1, &n);
    other = victim == 1 ? 2 : 1;
    gp_node_info lost;
    assert_true(gp_engine_node_get(w->e, tb_job_node(w, victim), &lost));

    /* the victim's node dies inside the grace: the GPUs claimed for the
     * owner are gone; the owner is still owed 4 GPUs and the other
     * borrower job is the only place left */
    assert_int_equal(gp_engine_node_lost(w->e, lost.name, 120, NULL), GP_OK);
    assert_int_equal(tb_state(w, victim), GP_JOB_PENDING);
    tb_tick(w, 120, GP_DEC_BIND);
    assert_null(tb_find(w, OWNER_JOB, GP_DEC_BIND)); /* nothing free on up nodes */
    assert_non_null(tb_find(w, other, GP_DEC_PREEMPT));
    assert_int_equal(tb_tick(w, 180, GP_DEC_BIND), 1); /* 120 + grace 60 */
    assert_non_null(tb_find(w, OWNER_JOB, GP_DEC_BIND));
    assert_int_not_equal(tb_job_node(w, OWNER_JOB), tb_node_index(w, lost.name));
    tb_assert_gpus_consistent(w);
}

/* ---- what PREEMPT says ---- */

/* research {limit 16 H100} holds nlp {guarantee 8} and cv (no guarantee).
 * cv borrows research's whole limit with two 1x8 jobs on a 32-GPU fleet
 * (16 GPUs stay free).  nlp's 1x8 job fits its guarantee but not research's
 * limit (16 + 8 > 16), only because cv borrows: one cv job is preempted
 * (both bound at t=10 with equal priority and work lost: the lower id, 1),
 * and after its 30 s grace nlp's job is admitted, guaranteed. */
static void guaranteed_job_reclaims_a_limit_filled_by_borrowers(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 4, "H100", 8, "b0", "z0");
    tb_tenant(w, "research", "H100", -1, 16);
    tb_tenant(w, "research/nlp", "H100", 8, -1);
    tb_tenant(w, "research/cv", "H100", -1, -1);
    submit_full(w, 1, "research/cv", 1, 8, 30, 0, 0);
    submit_full(w, 2, "research/cv", 1, 8, 30, 0, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 2); /* both bind at t=10 */
    submit_full(w, OWNER_JOB, "research/nlp", 1, 8, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    const gp_decision *p = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(p);
    assert_int_equal(p->by_job, OWNER_JOB);
    assert_int_equal(tb_info(w, OWNER_JOB).wait.code, GP_WAIT_RECLAIM);
    assert_int_equal(tb_tick(w, 129, GP_DEC_BIND), 0); /* still inside the grace */
    assert_int_equal(tb_tick(w, 130, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, OWNER_JOB), GP_JOB_RUNNING);
    assert_int_equal(tb_info(w, OWNER_JOB).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_LIMIT);
    assert_int_equal(tb_tenant_info(w, "research").usage.v[0], 16000);
}

/* A limit a guarantee below it could never use is refused: research's
 * limit of 4 H100 cannot hold nlp's floor of 8. */
static void limit_below_the_guarantees_under_it_is_refused(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "research", "H100", -1, -1);
    tb_tenant(w, "research/nlp", "H100", 8, -1);
    gp_tenant_spec spec = tb_tenant_spec("H100", -1, 4);
    gp_error err;
    assert_int_equal(tb_tenant_try(w, "research", &spec, &err), GP_ERR_QUOTA);
    assert_string_equal(err.field, "limit");
}

static void preempt_names_reclaimer_guarantee_and_work_lost(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "acme", "H100", 4, -1);
    tb_tenant(w, "acme/ml", "H100", -1, -1); /* guaranteed through acme's floor */
    tb_tenant(w, "borrower", "H100", -1, -1);
    submit_full(w, 1, "borrower", 1, 8, 45, 0, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    submit_full(w, OWNER_JOB, "acme/ml", 1, 4, 0, 0, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_PREEMPT), 1);
    const gp_decision *p = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(p);
    assert_int_equal(p->time, 100);
    assert_int_equal(p->grace_s, 45);
    assert_int_equal(p->by_job, OWNER_JOB);
    assert_string_equal(p->by_tenant, "acme/ml");
    assert_string_equal(p->guarantee_of, "acme");
    assert_int_equal(p->work_lost_gpu_s, 8 * (100 - 10)); /* no checkpoint: since bind */
    assert_true(p->reason[0] != '\0');
}

/* ---- searches that found nothing ----
 * Three nodes of 8 H100; the owner (floor 23) runs a 1x5 job on each, a
 * borrower the 9 GPUs left, 3 per node.  The owner's 1x8 job finds no
 * node with 8 GPUs even with every borrower gone: the search finds
 * nothing, and the next passes know it without looking.  When one of the
 * owner's 1x5 jobs finishes, that node could hold the 1x8 once its 3
 * borrowers go: the next pass searches again and preempts them. */

static void owner_gang_blocked_by_its_own_jobs(tb_world *w)
{
    tb_add_nodes(w, 3, "H100", 8, "b0", "z0");
    tb_tenant(w, "owner", "H100", 23, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    for (uint64_t id = 1; id <= 3; id++)
        submit_full(w, id, "owner", 1, 5, 60, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    for (uint64_t id = 11; id <= 19; id++)
        submit_full(w, id, "borrower", 1, 1, 60, 0, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 9);
    submit_full(w, OWNER_JOB, "owner", 1, 8, 60, 0, 20);
}

static gp_engine_stats stats(const tb_world *w)
{
    gp_engine_stats st;
    gp_engine_stats_get(w->e, &st);
    return st;
}

static void reclaim_that_found_nothing_is_remembered_until_room_comes(void **state)
{
    tb_world *w = *state;
    owner_gang_blocked_by_its_own_jobs(w);
    assert_int_equal(tb_tick(w, 20, GP_DEC_PREEMPT), 0);
    assert_int_equal(stats(w).pass_reclaim_searches, 1);
    assert_int_equal(stats(w).pass_reclaim_remembered, 0); /* the first search looks */
    for (int64_t t = 30; t <= 50; t += 10) {
        assert_int_equal(tb_tick(w, t, GP_DEC_PREEMPT), 0);
        assert_int_equal(stats(w).pass_reclaim_searches, 1);
        assert_int_equal(stats(w).pass_reclaim_remembered, 1);
    }
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 55);
    assert_int_equal(tb_tick(w, 60, GP_DEC_PREEMPT), 3);
    assert_int_equal(stats(w).pass_reclaim_remembered, 0);
}

/* Binding a borrower does not bring room (the search counts it as gone),
 * but a borrower finishing does: its GPUs are free even without reclaim. */
static void remembered_reclaim_is_searched_again_after_a_release(void **state)
{
    tb_world *w = *state;
    owner_gang_blocked_by_its_own_jobs(w);
    assert_int_equal(tb_tick(w, 20, GP_DEC_PREEMPT), 0);
    tb_finish(w, 11, GP_EXIT_SUCCEEDED, 25);
    submit_full(w, 20, "borrower", 1, 1, 60, 0, 25);
    assert_int_equal(tb_tick(w, 30, GP_DEC_BIND), 1); /* the new borrower takes the freed GPU */
    assert_int_equal(stats(w).pass_reclaim_remembered, 0); /* searched again after the release */
    assert_int_equal(tb_tick(w, 40, GP_DEC_PREEMPT), 0);
    assert_int_equal(stats(w).pass_reclaim_remembered, 1); /* the bind brought no room */
}

/* ---- the preemption cap (max_preemptions, default 3) ----
 *
 * One node of 2 H100; "owner" is guaranteed 1 GPU it does not use.
 * Borrower job 2 (priority -5, so always the first victim) is preempted
 * for owner jobs 101, 102, 103 (grace 0) and runs again after each ends:
 * three preemptions.  The fourth owner job cannot take it any more. */

static void engine_with_cap(tb_world *w, int max_preemptions)
{
    gp_engine_config cfg = gp_engine_config_default();
    cfg.max_preemptions = max_preemptions;
    tb_use_config(w, &cfg);
}

/* The other GPU's job: a second borrower (`guaranteed` false) or a job of
 * "other" within its 1-GPU guarantee, which is never a victim. */
static void capped_scenario(tb_world *w, bool guaranteed)
{
    tb_add_nodes(w, 1, "H100", 2, "b0", "z0");
    tb_tenant(w, "owner", "H100", 1, -1);
    tb_tenant(w, "other", "H100", 1, -1);
    tb_tenant(w, "borrower", "H100", -1, -1);
    submit_full(w, 1, guaranteed ? "other" : "borrower", 1, 1, 0, 0, 0);
    submit_full(w, 2, "borrower", 1, 1, 0, -5, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    for (uint64_t k = 0; k < 3; k++) {
        int64_t t = 100 + 200 * (int64_t)k;
        submit_full(w, 101 + k, "owner", 1, 1, 0, 0, t);
        assert_int_equal(tb_tick(w, t, GP_DEC_PREEMPT), 1);
        assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT));
        tb_finish(w, 101 + k, GP_EXIT_SUCCEEDED, t + 100);
        assert_int_equal(tb_tick(w, t + 100, GP_DEC_BIND), 1);
        assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    }
    submit_full(w, 104, "owner", 1, 1, 0, 0, 700);
}

static void job_preempted_three_times_is_no_victim_the_next_goes(void **state)
{
    tb_world *w = *state;
    capped_scenario(w, false);
    assert_int_equal(tb_tick(w, 700, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 1, GP_DEC_PREEMPT));
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

static void reclaimer_waits_when_only_capped_jobs_borrow(void **state)
{
    tb_world *w = *state;
    capped_scenario(w, true);
    assert_int_equal(tb_tick(w, 700, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_state(w, 104), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 800); /* it ran to its end: the owner is placed */
    assert_int_equal(tb_tick(w, 800, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 104), GP_JOB_RUNNING);
}

/* The capped job's GPU is no borrowed GPU a reclaim could take: the
 * owner's job is not searched for pass after pass (no candidate list, no
 * placement looks), it simply waits. */
static void reclaim_with_only_capped_borrowers_is_not_searched(void **state)
{
    tb_world *w = *state;
    capped_scenario(w, true);
    assert_int_equal(tb_tick(w, 700, GP_DEC_PREEMPT), 0);
    assert_int_equal(stats(w).pass_reclaim_searches, 0);
    assert_int_equal(tb_tick(w, 710, GP_DEC_PREEMPT), 0);
    assert_int_equal(stats(w).pass_reclaim_searches, 0);
}

static void cap_zero_preempts_a_job_any_number_of_times(void **state)
{
    tb_world *w = *state;
    engine_with_cap(w, 0);
    capped_scenario(w, true);
    assert_int_equal(tb_tick(w, 700, GP_DEC_PREEMPT), 1);
    assert_non_null(tb_find(w, 2, GP_DEC_PREEMPT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(victim_keeps_its_gpus_during_grace),
        TB_TEST(reclaim_that_found_nothing_is_remembered_until_room_comes),
        TB_TEST(remembered_reclaim_is_searched_again_after_a_release),
        TB_TEST(guaranteed_job_reclaims_a_limit_filled_by_borrowers),
        TB_TEST(limit_below_the_guarantees_under_it_is_refused),
        TB_TEST(reclaimer_is_placed_at_the_deadline_and_not_before),
        TB_TEST(victim_is_requeued_pending_with_the_same_id),
        TB_TEST(grace_zero_victim_is_released_in_the_same_pass),
        TB_TEST(finished_stopped_ends_the_grace_early),
        TB_TEST(whole_gang_is_preempted_and_released_at_once),
        TB_TEST(guaranteed_jobs_are_never_preempted),
        TB_TEST(burstable_job_never_preempts),
        TB_TEST(fair_share_job_preempts_borrowers_of_the_tenant_far_above_its_share),
        TB_TEST(fair_share_stops_where_the_victims_tenant_would_fall_below),
        TB_TEST(fair_share_is_off_by_default),
        TB_TEST(lowest_priority_victims_go_first),
        TB_TEST(least_work_lost_victim_goes_first),
        TB_TEST(lower_priority_goes_before_the_tenant_further_over),
        TB_TEST(victims_come_from_the_tenant_furthest_over_its_fair_share_first),
        TB_TEST(one_gpu_need_takes_a_one_gpu_borrower_not_a_gang),
        TB_TEST(cheapest_victim_that_fits_the_need_goes),
        TB_TEST(limit_reclaim_takes_a_minimal_set),
        TB_TEST(victims_that_fit_the_need_go_before_larger_ones),
        TB_TEST(cool_down_does_not_shield_a_lower_priority_job),
        TB_TEST(preempt_names_reclaimer_guarantee_and_work_lost),
        TB_TEST(recently_preempted_job_is_a_victim_of_last_resort),
        TB_TEST(a_victim_does_not_take_its_gpus_back_within_the_cool_down),
        TB_TEST(claimed_gpus_are_not_given_to_others),
        TB_TEST(cancelled_reclaimer_withdraws_its_preemptions),
        TB_TEST(victim_that_stops_after_a_withdrawal_is_requeued_not_failed),
        TB_TEST(reclaimer_placed_elsewhere_withdraws_its_preemptions),
        TB_TEST(reclaimer_no_longer_guaranteed_withdraws_its_preemptions),
        TB_TEST(withdrawal_leaves_a_cancelled_victim_stopping),
        TB_TEST(victim_node_lost_during_grace_reclaims_elsewhere),
        TB_TEST(job_preempted_three_times_is_no_victim_the_next_goes),
        TB_TEST(reclaimer_waits_when_only_capped_jobs_borrow),
        TB_TEST(reclaim_with_only_capped_borrowers_is_not_searched),
        TB_TEST(cap_zero_preempts_a_job_any_number_of_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
