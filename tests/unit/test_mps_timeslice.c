/* test_mps_timeslice.c - MPS shares, time-slice replicas and CPU-only work.
 *
 * Semantics under test (src/core/sharing.c, docs/sharing.md):
 *   mps        a share of the SMs (1..1000 milli) and a memory limit
 *              (default: the same share of the GPU's memory); on one GPU
 *              the shares add up to at most 1000 and the limits to at most
 *              the GPU's memory.  An empty MPS GPU may run one whole-GPU
 *              job, and takes shares again only when it ends.
 *   timeslice  one of the pool's N replicas (timeslice_replicas, 1..8,
 *              default 4), counted 1000 / N; interactive and inference
 *              only; always burstable.
 *   CPU-only   gpus = 0: binds on a node without GPUs, counts CPU and
 *              memory only.
 *
 * Fleets are H100 with 81920 MiB per GPU (TB_GPU_MEM_MIB), one tenant
 * "org" without guarantee unless said otherwise; shares are placed in id
 * order within a pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"
#include "support/sharing_builder.h"

#define MIB 81920

static void submit_mps(tb_world *w, uint64_t id, int milli, int64_t mem, int64_t now)
{
    gp_job_spec s = sb_mps_job(id, "org", milli, mem);
    sb_submit(w, &s, now);
}

static void submit_ts(tb_world *w, uint64_t id, int64_t now)
{
    gp_job_spec s = sb_timeslice_job(id, "org", GP_KIND_INTERACTIVE);
    sb_submit(w, &s, now);
}

/* ---- MPS ---- */

static void mps_shares_on_a_gpu_never_add_up_past_1000(void **state)
{
    tb_world *w = *state;
    /* 400 + 400 = 800; +300 = 1100 > 1000 waits; +200 = 1000 fits.
     * Memory (default limits): 32768 + 32768 + 16384 = 81920, exactly. */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 400, 0, 0);
    submit_mps(w, 2, 400, 0, 0);
    submit_mps(w, 3, 300, 0, 0);
    submit_mps(w, 4, 200, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    assert_string_equal(gp_engine_job_node(w->e, 1, 0), "p0"); /* a share's node */
    assert_null(gp_engine_job_node(w->e, 3, 0));
    assert_int_equal(tb_gpu(w, 0).used_milli, 1000);
    assert_int_equal(tb_gpu(w, 0).jobs, 3);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 1000);
    sb_assert_sharing_consistent(w, MIB);
    /* 400 ends: 600 + 300 = 900 */
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 50);
    assert_int_equal(tb_tick(w, 50, GP_DEC_BIND), 1);
    assert_int_equal(tb_gpu(w, 0).used_milli, 900);
    sb_assert_sharing_consistent(w, MIB);
}

static void the_default_mps_memory_limit_is_the_share_of_the_gpu_memory(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 250, 0, 0);     /* 81920 x 250 / 1000 = 20480 */
    submit_mps(w, 2, 100, 30000, 0); /* given */
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(sb_slice(w, 1).gpu_mem_mib, 20480);
    assert_int_equal(sb_slice(w, 1).milli, 250);
    assert_int_equal(sb_slice(w, 1).kind, GP_ISO_MPS);
    assert_int_equal(sb_slice(w, 2).gpu_mem_mib, 30000);
    assert_int_equal(sb_slice(w, 2).milli, 100);
}

static void an_mps_share_whose_memory_limit_does_not_fit_waits(void **state)
{
    tb_world *w = *state;
    /* job 1 takes 10 % of the SMs and all 81920 MiB; job 2's 10 % with its
     * default 8192 MiB fits the SMs (200 <= 1000) but not the memory */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 100, MIB, 0);
    submit_mps(w, 2, 100, 0, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_gpu(w, 0).used_milli, 100);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    /* a limit above the GPU's memory never fits, even on an empty GPU */
    submit_mps(w, 3, 100, MIB + 1, 20);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    sb_assert_sharing_consistent(w, MIB);
}

static void mps_share_out_of_range_is_refused_at_submit(void **state)
{
    tb_world *w = *state;
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_mps_job(1, "org", 0, 0);
    sb_submit_refused(w, &s, 0, "share.mps");
    s = sb_mps_job(2, "org", 1001, 0);
    sb_submit_refused(w, &s, 0, "share.mps");
    s = sb_mps_job(3, "org", 500, -1);
    sb_submit_refused(w, &s, 0, "share.gpu_mem_mib");
    s = sb_mps_job(4, "org", 500, 0);
    s.gpus = 2; /* one share per replica */
    sb_submit_refused(w, &s, 0, "gpus");
}

static void an_empty_mps_gpu_runs_a_whole_gpu_job_and_then_no_shares(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec whole = sb_whole_job(1, "org", 1);
    sb_submit(w, &whole, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_gpu(w, 0).job, 1);
    submit_mps(w, 2, 100, 0, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_gpu(w, 0).jobs, 0);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_gpu(w, 0).job, 0);
    assert_int_equal(tb_gpu(w, 0).used_milli, 100);
    sb_assert_sharing_consistent(w, MIB);
}

static void a_whole_gpu_job_waits_while_an_mps_gpu_holds_a_share(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 100, 0, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    gp_job_spec whole = sb_whole_job(2, "org", 1);
    sb_submit(w, &whole, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_gpu(w, 0).job, 0);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_gpu(w, 0).job, 2);
}

static void an_mps_share_on_a_gpu_that_turns_unhealthy_is_requeued(void **state)
{
    tb_world *w = *state;
    /* docs/scheduling.md: a GPU turning unhealthy under a job stops it
     * (STOP, grace 0) and requeues it */
    sb_add_node(w, "p0", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_mps(w, 1, 300, 0, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    int index = tb_gpu(w, sb_slice(w, 1).gpu).index;
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_gpu_health(w->e, "p0", index, false, 10, NULL), GP_OK);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_STOP), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    sb_assert_sharing_consistent(w, MIB);
}

static void a_guaranteed_mps_share_reclaims_a_burstable_share(void **state)
{
    tb_world *w = *state;
    /* org "b" has no guarantee: its 1000 share on the only MPS GPU is
     * burstable.  Org "g" holds a guarantee of 1 GPU and asks for 500: it
     * reclaims from the burstable share of the same kind (PREEMPT, grace
     * 30 s); at t=40 the GPU is empty, g's share runs and the GPU is g's. */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tb_tenant(w, "g", "H100", 1, -1);
    sb_tenant(w, "b", GP_TRUST_TRUSTED);
    gp_job_spec big = sb_mps_job(1, "b", 1000, 0);
    big.checkpoint_grace_s = 30;
    sb_submit(w, &big, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_BURSTABLE);
    gp_job_spec mine = sb_mps_job(2, "g", 500, 0);
    sb_submit(w, &mine, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    const gp_decision *p = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(p);
    assert_int_equal(p->by_job, 2);
    assert_int_equal(p->grace_s, 30);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_tick(w, 40, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_GUARANTEED);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "g");
    sb_assert_sharing_consistent(w, MIB);
}

/* A reclaim claims only the beneficiary's share (docs/sharing.md "Claims
 * during a reclaim"): the rest of the GPU stays usable by its org. */
/* Org a on one MPS GPU: a/b borrows `victim` (grace 120), a/x runs `kept`
 * at priority 1 (so it is never the victim); a/g holds a guarantee of 1. */
static void org_a_on_one_mps_gpu(tb_world *w, int victim, int kept)
{
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "a", GP_TRUST_TRUSTED);
    tb_tenant(w, "a/g", "H100", 1, -1);
    sb_tenant(w, "a/x", GP_TRUST_INHERIT);
    sb_tenant(w, "a/b", GP_TRUST_INHERIT);
    gp_job_spec borrower = sb_mps_job(1, "a/b", victim, 0);
    borrower.checkpoint_grace_s = 120;
    sb_submit(w, &borrower, 0);
    gp_job_spec held = sb_mps_job(2, "a/x", kept, 0);
    held.priority = 1;
    sb_submit(w, &held, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
}

static void an_mps_reclaim_claims_only_its_share_and_the_org_uses_the_rest(void **state)
{
    tb_world *w = *state;
    /* 500 (a/b, borrowed) + 400 (a/x) + 100 free.  a/g's 250 does not fit
     * in the 100: it reclaims a/b's 500 and claims 250 of it.  During the
     * grace a 100 share of a/x fits beside them (900 + 100 now, 400 + 250
     * + 100 once a/g runs) and binds; before, the whole GPU was claimed.
     * At t=130 a/g binds on its claim. */
    org_a_on_one_mps_gpu(w, 500, 400);
    gp_job_spec mine = sb_mps_job(3, "a/g", 250, 0);
    sb_submit(w, &mine, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_find(w, 1, GP_DEC_PREEMPT)->by_job, 3);
    gp_job_spec small = sb_mps_job(4, "a/x", 100, 0);
    sb_submit(w, &small, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 4), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    assert_int_equal(tb_gpu(w, 0).used_milli, 1000);
    sb_assert_sharing_consistent(w, MIB);
    tb_tick(w, 130, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    assert_int_equal(sb_job_gpu(w, 3), 0);
    assert_int_equal(tb_gpu(w, 0).used_milli, 750);
    sb_assert_sharing_consistent(w, MIB);
}

static void others_may_not_take_the_part_of_a_claim_its_victims_do_not_hold(void **state)
{
    tb_world *w = *state;
    /* 200 (a/b, borrowed) + 700 (a/x) + 100 free.  a/g's 250 reclaims the
     * 200 and claims 250: 200 of it the victim holds, 50 comes out of the
     * free 100.  During the grace a 100 share fits the GPU as it is, but
     * would leave a/g short once the victim is gone (700 + 250 + 100): it
     * waits; a 50 share binds. */
    org_a_on_one_mps_gpu(w, 200, 700);
    gp_job_spec mine = sb_mps_job(3, "a/g", 250, 0);
    sb_submit(w, &mine, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    gp_job_spec hundred = sb_mps_job(4, "a/x", 100, 0), fifty = sb_mps_job(5, "a/x", 50, 0);
    sb_submit(w, &hundred, 20);
    sb_submit(w, &fifty, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 4), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 5), GP_JOB_RUNNING);
    sb_assert_sharing_consistent(w, MIB);
    tb_tick(w, 130, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    assert_int_equal(tb_gpu(w, 0).used_milli, 1000);
    sb_assert_sharing_consistent(w, MIB);
}

static void an_mps_claim_keeps_other_orgs_off_the_gpu_during_the_grace(void **state)
{
    tb_world *w = *state;
    /* Org c borrows 500 of the only MPS GPU (grace 60); org g (guarantee
     * 1) cannot share c's GPU, so its 250 reclaims c's share and claims
     * 250 for org g.  During the grace the GPU still runs c's share, yet
     * another 250 of org c may not move in: it would sit beside g's share
     * once the grace ends.  At t=70 g binds; c's share keeps waiting. */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "c", GP_TRUST_TRUSTED);
    tb_tenant(w, "g", "H100", 1, -1);
    gp_job_spec borrower = sb_mps_job(1, "c", 500, 0);
    borrower.checkpoint_grace_s = 60;
    sb_submit(w, &borrower, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    gp_job_spec mine = sb_mps_job(2, "g", 250, 0);
    sb_submit(w, &mine, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    gp_job_spec other = sb_mps_job(3, "c", 250, 0);
    sb_submit(w, &other, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    sb_assert_sharing_consistent(w, MIB);
    tb_tick(w, 70, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "g");
    sb_assert_sharing_consistent(w, MIB);
}

/* ---- time-slicing ---- */

static void a_time_sliced_gpu_takes_four_replicas_by_default(void **state)
{
    tb_world *w = *state;
    /* 4 replicas of 250: used 1000, the fifth waits */
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 5; id++)
        submit_ts(w, id, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 4);
    assert_int_equal(tb_state(w, 5), GP_JOB_PENDING);
    assert_int_equal(tb_gpu(w, 0).jobs, 4);
    assert_int_equal(tb_gpu(w, 0).used_milli, 1000);
    assert_int_equal(sb_slice(w, 1).milli, 250);
    assert_int_equal(sb_slice(w, 1).kind, GP_ISO_TIMESLICE);
    assert_int_equal(sb_slice(w, 1).gpu_mem_mib, MIB); /* a replica sees the whole GPU */
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 1000);
    sb_assert_sharing_consistent(w, MIB);
}

static void a_pool_with_factor_2_takes_two_replicas_of_500(void **state)
{
    tb_world *w = *state;
    sb_pool(w, "two", GP_SCORE_DEFAULT, 2, 0);
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, "two");
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 3; id++)
        submit_ts(w, id, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(tb_state(w, 3), GP_JOB_PENDING);
    assert_int_equal(sb_slice(w, 1).milli, 500);
    assert_int_equal(tb_gpu(w, 0).used_milli, 1000);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 1000);
    sb_assert_sharing_consistent(w, MIB);
}

static void a_pool_with_factor_3_counts_333_per_replica(void **state)
{
    tb_world *w = *state;
    /* 1000 / 3 rounded down: three replicas use 999 */
    sb_pool(w, "three", GP_SCORE_DEFAULT, 3, 0);
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, "three");
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 4; id++)
        submit_ts(w, id, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 3);
    assert_int_equal(sb_slice(w, 1).milli, 333);
    assert_int_equal(tb_gpu(w, 0).used_milli, 999);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 999);
}

static void replicas_go_by_the_factor_of_their_gpus_pool(void **state)
{
    tb_world *w = *state;
    /* pool "two" (500 per replica) and the default pool (250): 2 + 4 */
    sb_pool(w, "two", GP_SCORE_DEFAULT, 2, 0);
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, "two");
    sb_add_node(w, "t1", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 7; id++)
        submit_ts(w, id, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 6);
    assert_int_equal(tb_gpu(w, 0).jobs, 2);
    assert_int_equal(tb_gpu(w, 1).jobs, 4);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 2 * 500 + 4 * 250);
    sb_assert_sharing_consistent(w, MIB);
}

static void the_timeslice_factor_is_bounded_1_to_8(void **state)
{
    tb_world *w = *state;
    gp_pool_spec p = {.score = GP_SCORE_DEFAULT, .timeslice_replicas = 9};
    gp_error err;
    gp_error_clear(&err);
    assert_int_equal(gp_engine_pool_set(w->e, "x", &p, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "timeslice_replicas");
    p.timeslice_replicas = -1;
    assert_int_equal(gp_engine_pool_set(w->e, "x", &p, &err), GP_ERR_INVALID);
    /* 8 is allowed: 125 each; 0 means the default 4 */
    sb_pool(w, "eight", GP_SCORE_DEFAULT, 8, 0);
    sb_pool(w, "zero", GP_SCORE_DEFAULT, 0, 0);
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, "eight");
    sb_add_node(w, "t1", "H100", 1, MIB, GP_SHARING_TIMESLICE, "zero");
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    for (uint64_t id = 1; id <= 13; id++)
        submit_ts(w, id, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 12);
    assert_int_equal(tb_gpu(w, 0).jobs, 8);
    assert_int_equal(tb_gpu(w, 0).used_milli, 1000);
    assert_int_equal(tb_gpu(w, 1).jobs, 4);
}

static void time_slicing_is_for_interactive_and_inference_only(void **state)
{
    tb_world *w = *state;
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_timeslice_job(1, "org", GP_KIND_TRAINING);
    sb_submit_refused(w, &s, 0, "isolation");
    s = sb_timeslice_job(2, "org", GP_KIND_INTERACTIVE);
    sb_submit(w, &s, 0);
    s = sb_timeslice_job(3, "org", GP_KIND_INFERENCE);
    sb_submit(w, &s, 0);
}

static void time_sliced_jobs_are_always_burstable(void **state)
{
    tb_world *w = *state;
    /* org holds a guarantee of 2 GPUs: an MPS share of 300 is guaranteed,
     * a time-slice replica (250) is burstable all the same, and stays so */
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tb_tenant(w, "org", "H100", 2, -1);
    submit_ts(w, 1, 0);
    submit_mps(w, 2, 300, 0, 0);
    gp_engine_decisions_clear(w->e);
    tb_advance(w, 0);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_find(w, 1, GP_DEC_USAGE_OPEN)->usage.cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_info(w, 2).cls, GP_CLASS_GUARANTEED);
    tb_advance(w, 100);
    tb_advance(w, 200);
    assert_int_equal(tb_info(w, 1).cls, GP_CLASS_BURSTABLE);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_USAGE_OPEN), 1);
}

static void changing_the_factor_under_running_replicas_keeps_the_books(void **state)
{
    tb_world *w = *state;
    /* two replicas of 250 run in pool "p" (factor 4); the operator sets
     * factor 2.  Whatever the engine does with the running replicas, its
     * books must stay consistent, and be empty once both end. */
    sb_pool(w, "p", GP_SCORE_DEFAULT, 4, 0);
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, "p");
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_ts(w, 1, 0);
    submit_ts(w, 2, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    gp_pool_spec p = {.score = GP_SCORE_DEFAULT, .timeslice_replicas = 2};
    gp_error err;
    gp_error_clear(&err);
    gp_err rc = gp_engine_pool_set(w->e, "p", &p, &err);
    assert_true(rc == GP_OK || rc == GP_ERR_CONFLICT);
    sb_assert_sharing_consistent(w, MIB);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(tb_gpu(w, 0).used_milli, 0);
    assert_int_equal(sb_tenant_gpu_usage(w, "org", "H100"), 0);
    sb_assert_sharing_consistent(w, MIB);
}

static void usage_intervals_carry_the_share_of_mps_and_time_slice_jobs(void **state)
{
    tb_world *w = *state;
    /* MPS 300 and a time-slice replica (250) from t=0 to t=10:
     * 300 x 10 + 250 x 10 = 5,500 mGPU-s */
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    submit_ts(w, 1, 0);
    submit_mps(w, 2, 300, 0, 0);
    gp_engine_decisions_clear(w->e);
    tb_advance(w, 0);
    assert_int_equal(sb_usage_open_milli(w, 1), 250);
    assert_int_equal(sb_usage_open_milli(w, 2), 300);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 10);
    tb_finish(w, 2, GP_EXIT_SUCCEEDED, 10);
    assert_int_equal(sb_metered_milli_seconds(w, 10), 5500);
}

/* ---- CPU-only ---- */

static void cpu_only_jobs_bind_without_gpus(void **state)
{
    tb_world *w = *state;
    /* 4 cores and 8 GiB on a node of 2 exclusive GPUs: both GPUs stay free */
    tb_add_nodes(w, 1, "H100", 2, NULL, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_cpu_job(1, "org", 4000, 8192);
    sb_submit(w, &s, 0);
    gp_engine_decisions_clear(w->e);
    tb_advance(w, 0);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    uint32_t gpus[4];
    gp_slice slices[2];
    assert_int_equal(gp_engine_job_gpus(w->e, 1, gpus, 4), 0);
    assert_int_equal(gp_engine_job_slices(w->e, 1, slices, 2), 0);
    assert_null(gp_engine_job_node(w->e, 1, 0)); /* no GPU: no placement, as the placement JSON has it */
    assert_int_equal(tb_free_gpus(w), 2);
    gp_node_info n = tb_node(w, "n00");
    assert_int_equal(n.cpu_used, 4000);
    assert_int_equal(n.mem_used, 8192);
    assert_int_equal(n.gpus_free, 2);
    gp_tenant_info t = tb_tenant_info(w, "org");
    assert_int_equal(t.usage.v[tb_type_index(w, "H100")], 0);
    assert_int_equal(t.usage.v[GP_DIM_CPU], 4000);
    assert_int_equal(t.usage.v[GP_DIM_MEM], 8192);
    assert_int_equal(sb_usage_open_milli(w, 1), 0);
    /* the GPUs are still there for a whole-GPU job */
    gp_job_spec whole = sb_whole_job(2, "org", 2);
    sb_submit(w, &whole, 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_node(w, "n00").cpu_used, 0);
    assert_int_equal(tb_tenant_info(w, "org").usage.v[GP_DIM_CPU], 0);
    sb_assert_sharing_consistent(w, 0);
}

static void a_cpu_only_job_on_a_lost_node_is_requeued(void **state)
{
    tb_world *w = *state;
    /* engine.h: "The node is gone: its jobs are stopped and requeued" */
    tb_add_nodes(w, 1, "H100", 2, NULL, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_cpu_job(1, "org", 4000, 8192);
    sb_submit(w, &s, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    gp_engine_decisions_clear(w->e);
    assert_int_equal(gp_engine_node_lost(w->e, "n00", 10, NULL), GP_OK);
    assert_int_equal(tb_count_for_job(w, 1, GP_DEC_STOP), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_tenant_info(w, "org").usage.v[GP_DIM_CPU], 0);
    sb_assert_sharing_consistent(w, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(mps_shares_on_a_gpu_never_add_up_past_1000),
        TB_TEST(the_default_mps_memory_limit_is_the_share_of_the_gpu_memory),
        TB_TEST(an_mps_share_whose_memory_limit_does_not_fit_waits),
        TB_TEST(mps_share_out_of_range_is_refused_at_submit),
        TB_TEST(an_empty_mps_gpu_runs_a_whole_gpu_job_and_then_no_shares),
        TB_TEST(a_whole_gpu_job_waits_while_an_mps_gpu_holds_a_share),
        TB_TEST(an_mps_share_on_a_gpu_that_turns_unhealthy_is_requeued),
        TB_TEST(a_guaranteed_mps_share_reclaims_a_burstable_share),
        TB_TEST(an_mps_reclaim_claims_only_its_share_and_the_org_uses_the_rest),
        TB_TEST(others_may_not_take_the_part_of_a_claim_its_victims_do_not_hold),
        TB_TEST(an_mps_claim_keeps_other_orgs_off_the_gpu_during_the_grace),
        TB_TEST(a_time_sliced_gpu_takes_four_replicas_by_default),
        TB_TEST(a_pool_with_factor_2_takes_two_replicas_of_500),
        TB_TEST(a_pool_with_factor_3_counts_333_per_replica),
        TB_TEST(replicas_go_by_the_factor_of_their_gpus_pool),
        TB_TEST(the_timeslice_factor_is_bounded_1_to_8),
        TB_TEST(time_slicing_is_for_interactive_and_inference_only),
        TB_TEST(time_sliced_jobs_are_always_burstable),
        TB_TEST(changing_the_factor_under_running_replicas_keeps_the_books),
        TB_TEST(usage_intervals_carry_the_share_of_mps_and_time_slice_jobs),
        TB_TEST(cpu_only_jobs_bind_without_gpus),
        TB_TEST(a_cpu_only_job_on_a_lost_node_is_requeued),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
