/* test_trust.c - isolation by trust: who may share a GPU with whom.
 *
 * Semantics under test (src/core/sharing.c "Trust", docs/sharing.md "Trust
 * rules"):
 *   - untrusted tenants (trust inherited down the tree) get only exclusive
 *     GPUs or MIG instances: mps and timeslice are refused at submit,
 *     field "isolation";
 *   - an MPS or time-sliced GPU hosts one trust domain, the org (top-level
 *     tenant): the first job claims it until the GPU is empty again;
 *     gp_gpu_info.trust_domain names the org ("" when empty);
 *   - a MIG GPU holding an instance of an untrusted tenant holds only that
 *     tenant's instances until they are gone (trust_domain = that tenant's
 *     path), and an untrusted tenant never joins a MIG GPU that hosts
 *     anybody else.
 *   - trust is a floor: a tenant is untrusted if it or any ancestor is; a
 *     change that would make a tenant trusted below an untrusted ancestor is
 *     refused (GP_ERR_INVALID, field "trust"), only the ancestor lifts it;
 *   - trust holds at every placement, not only at submit: when a tenant
 *     becomes untrusted (itself or through an ancestor) its pending mps and
 *     timeslice jobs wait with GP_WAIT_TRUST, its running ones get PREEMPT
 *     with their checkpoint grace (reason naming trust) and then wait the
 *     same way; its MIG instances keep running only where they are alone
 *     on their GPU (which then becomes the tenant's own), else they are
 *     preempted too; whole-GPU work is untouched.
 *
 * Tenants: orgs "a" (teams a/x, a/y) and "b" (b/x), trusted; "guest"
 * untrusted (a top-level leaf).  H100 GPUs of 81920 MiB.
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

static void tenants(tb_world *w)
{
    sb_tenant(w, "a", GP_TRUST_TRUSTED);
    sb_tenant(w, "a/x", GP_TRUST_INHERIT);
    sb_tenant(w, "a/y", GP_TRUST_INHERIT);
    sb_tenant(w, "b", GP_TRUST_TRUSTED);
    sb_tenant(w, "b/x", GP_TRUST_INHERIT);
    sb_tenant(w, "guest", GP_TRUST_UNTRUSTED);
}

static void submit(tb_world *w, gp_job_spec s, int64_t now)
{
    sb_submit(w, &s, now);
}

/* ---- refused at submit ---- */

static void an_untrusted_tenant_may_not_ask_for_mps_or_time_slices(void **state)
{
    tb_world *w = *state;
    tenants(w);
    gp_job_spec s = sb_mps_job(1, "guest", 250, 0);
    sb_submit_refused(w, &s, 0, "isolation");
    s = sb_timeslice_job(2, "guest", GP_KIND_INTERACTIVE);
    sb_submit_refused(w, &s, 0, "isolation");
    s = sb_timeslice_job(3, "guest", GP_KIND_INFERENCE);
    sb_submit_refused(w, &s, 0, "isolation");
    /* exclusive and MIG are fine */
    submit(w, sb_mig_job(4, "guest", "1g.10gb"), 0);
    submit(w, sb_whole_job(5, "guest", 1), 0);
    assert_int_equal(tb_jobs_in_state(w, "guest", GP_JOB_PENDING), 2);
}

static void untrust_is_inherited_down_the_tree(void **state)
{
    tb_world *w = *state;
    sb_tenant(w, "ext", GP_TRUST_UNTRUSTED);
    sb_tenant(w, "ext/team", GP_TRUST_INHERIT);
    sb_tenant(w, "ext/team/proj", GP_TRUST_INHERIT);
    assert_true(tb_tenant_info(w, "ext/team/proj").untrusted);
    gp_job_spec s = sb_mps_job(1, "ext/team/proj", 100, 0);
    sb_submit_refused(w, &s, 0, "isolation");
}

/* ---- MPS and time-sliced GPUs: one org at a time ---- */

static void two_orgs_never_share_an_mps_gpu(void **state)
{
    tb_world *w = *state;
    /* a/x claims the GPU for org a; b/x waits although 700 milli are free;
     * a/y (same org, other team) joins.  When the GPU empties, b takes it. */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    submit(w, sb_mps_job(1, "a/x", 300, 0), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "a");
    submit(w, sb_mps_job(2, "b/x", 300, 0), 10);
    submit(w, sb_mps_job(3, "a/y", 300, 0), 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    assert_int_equal(tb_gpu(w, 0).used_milli, 600);
    sb_assert_sharing_consistent(w, MIB);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 0); /* a/y still holds it */
    assert_string_equal(tb_gpu(w, 0).trust_domain, "a");
    tb_finish(w, 3, GP_EXIT_SUCCEEDED, 30);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "");
    assert_int_equal(tb_tick(w, 30, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "b");
    sb_assert_sharing_consistent(w, MIB);
}

static void two_orgs_never_share_a_time_sliced_gpu(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    tenants(w);
    submit(w, sb_timeslice_job(1, "b/x", GP_KIND_INFERENCE), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "b");
    submit(w, sb_timeslice_job(2, "a/x", GP_KIND_INTERACTIVE), 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_int_equal(tb_gpu(w, 0).jobs, 1); /* 3 replicas free, none for org a */
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "a");
    sb_assert_sharing_consistent(w, MIB);
}

static void two_orgs_land_on_different_mps_gpus(void **state)
{
    tb_world *w = *state;
    /* a/x takes one GPU for org a, b/x the other for org b, and a/y can
     * only join a/x's */
    sb_add_node(w, "p0", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    submit(w, sb_mps_job(1, "a/x", 200, 0), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit(w, sb_mps_job(2, "b/x", 200, 0), 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    submit(w, sb_mps_job(3, "a/y", 200, 0), 20);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_not_equal(sb_slice(w, 1).gpu, sb_slice(w, 2).gpu);
    assert_int_equal(sb_slice(w, 3).gpu, sb_slice(w, 1).gpu);
    assert_string_equal(tb_gpu(w, sb_slice(w, 1).gpu).trust_domain, "a");
    assert_string_equal(tb_gpu(w, sb_slice(w, 2).gpu).trust_domain, "b");
    sb_assert_sharing_consistent(w, MIB);
}

/* ---- MIG: an untrusted tenant's GPU is its own ---- */

static void an_untrusted_tenants_mig_instance_makes_the_gpu_its_own(void **state)
{
    tb_world *w = *state;
    /* guest's 1g claims the only GPU (trust_domain "guest"); a/x's 1g
     * waits although 6 slices are free; guest's second 1g joins.  When
     * guest's instances are idle again, a/x gets one (reusing an idle 1g:
     * no change) and the GPU is nobody's domain (trusted MIG). */
    sb_add_node(w, "m0", "H100", 1, MIB, GP_SHARING_MIG, NULL);
    tenants(w);
    submit(w, sb_mig_job(1, "guest", "1g.10gb"), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "guest");
    submit(w, sb_mig_job(2, "a/x", "1g.10gb"), 100);
    submit(w, sb_mig_job(3, "guest", "1g.10gb"), 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 3), GP_JOB_RUNNING);
    sb_assert_sharing_consistent(w, MIB);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 200);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 0);
    tb_finish(w, 3, GP_EXIT_SUCCEEDED, 300);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "");
    assert_int_equal(tb_tick(w, 300, GP_DEC_BIND), 1);
    assert_int_equal(tb_count(w, GP_DEC_RECONFIGURE), 0);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "");
    sb_assert_sharing_consistent(w, MIB);
}

static void another_tenants_mig_job_goes_to_another_gpu(void **state)
{
    tb_world *w = *state;
    /* best fit would put a/x's 1g beside guest's (fuller GPU); trust sends
     * it to the empty one */
    sb_add_node(w, "m0", "H100", 2, MIB, GP_SHARING_MIG, NULL);
    tenants(w);
    submit(w, sb_mig_job(1, "guest", "3g.40gb"), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit(w, sb_mig_job(2, "a/x", "1g.10gb"), 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1);
    assert_int_not_equal(sb_slice(w, 2).gpu, sb_slice(w, 1).gpu);
    assert_string_equal(tb_gpu(w, sb_slice(w, 1).gpu).trust_domain, "guest");
    assert_string_equal(tb_gpu(w, sb_slice(w, 2).gpu).trust_domain, "");
    sb_assert_sharing_consistent(w, MIB);
}

static void an_untrusted_tenant_never_joins_a_mig_gpu_in_use(void **state)
{
    tb_world *w = *state;
    /* a/x's 3g runs on the only GPU; guest's 1g waits until it is gone */
    sb_add_node(w, "m0", "H100", 1, MIB, GP_SHARING_MIG, NULL);
    tenants(w);
    submit(w, sb_mig_job(1, "a/x", "3g.40gb"), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit(w, sb_mig_job(2, "guest", "1g.10gb"), 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
    tb_finish(w, 1, GP_EXIT_SUCCEEDED, 200);
    assert_int_equal(tb_tick(w, 200, GP_DEC_BIND), 1);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "guest");
}

static void two_untrusted_tenants_never_share_a_mig_gpu(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "m0", "H100", 1, MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "g1", GP_TRUST_UNTRUSTED);
    sb_tenant(w, "g2", GP_TRUST_UNTRUSTED);
    submit(w, sb_mig_job(1, "g1", "1g.10gb"), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    submit(w, sb_mig_job(2, "g2", "1g.10gb"), 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 0);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "g1");
}

static void an_untrusted_team_holds_the_gpu_for_itself_not_its_org(void **state)
{
    tb_world *w = *state;
    /* o/ext is untrusted inside a trusted org: o/int (same org) may not
     * join its MIG GPU, because the domain of an untrusted tenant is the
     * tenant itself */
    sb_add_node(w, "m0", "H100", 1, MIB, GP_SHARING_MIG, NULL);
    sb_tenant(w, "o", GP_TRUST_TRUSTED);
    sb_tenant(w, "o/ext", GP_TRUST_UNTRUSTED);
    sb_tenant(w, "o/int", GP_TRUST_INHERIT);
    submit(w, sb_mig_job(1, "o/ext", "1g.10gb"), 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "o/ext");
    submit(w, sb_mig_job(2, "o/int", "1g.10gb"), 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 2), GP_JOB_PENDING);
}

static void an_untrusted_tenant_may_run_a_whole_gpu(void **state)
{
    tb_world *w = *state;
    /* guest's whole-GPU job takes the empty MPS GPU; nobody's share joins */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    submit(w, sb_whole_job(1, "guest", 1), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    assert_int_equal(tb_gpu(w, 0).job, 1);
    submit(w, sb_mps_job(2, "a/x", 100, 0), 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    sb_assert_sharing_consistent(w, MIB);
}

/* ---- trust is a floor ---- */

static gp_err set_trust(tb_world *w, const char *path, gp_trust trust, gp_error *err)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.trust = trust;
    gp_engine_decisions_clear(w->e);
    return tb_tenant_try(w, path, &s, err);
}

static void retrust(tb_world *w, const char *path, gp_trust trust)
{
    gp_error err;
    gp_err rc = set_trust(w, path, trust, &err);
    if (rc != GP_OK)
        fail_msg("tenant_set %s: %s (%s: %s)", path, gp_err_name(rc), err.field, err.message);
}

static void a_child_may_not_be_trusted_below_an_untrusted_parent(void **state)
{
    tb_world *w = *state;
    sb_tenant(w, "ext", GP_TRUST_UNTRUSTED);
    sb_tenant(w, "ext/team", GP_TRUST_INHERIT);
    gp_error err;
    /* created as trusted: refused, not created */
    assert_int_equal(set_trust(w, "ext/new", GP_TRUST_TRUSTED, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "trust");
    uint32_t index;
    assert_int_equal(gp_engine_tenant_find(w->e, "ext/new", &index, NULL), GP_ERR_NOT_FOUND);
    /* changed to trusted: refused, unchanged */
    assert_int_equal(set_trust(w, "ext/team", GP_TRUST_TRUSTED, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "trust");
    assert_true(tb_tenant_info(w, "ext/team").untrusted);
    gp_job_spec s = sb_mps_job(1, "ext/team", 100, 0);
    sb_submit_refused(w, &s, 0, "isolation");
    /* deeper: an untrusted grandparent counts too */
    sb_tenant(w, "ext/team/p", GP_TRUST_INHERIT);
    assert_int_equal(set_trust(w, "ext/team/p/q", GP_TRUST_TRUSTED, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "trust");
}

static void untrusting_an_ancestor_untrusts_explicitly_trusted_descendants(void **state)
{
    tb_world *w = *state;
    sb_tenant(w, "o", GP_TRUST_TRUSTED);
    sb_tenant(w, "o/a", GP_TRUST_TRUSTED);
    sb_tenant(w, "o/a/p", GP_TRUST_INHERIT);
    retrust(w, "o", GP_TRUST_UNTRUSTED);
    assert_true(tb_tenant_info(w, "o/a").untrusted);
    assert_true(tb_tenant_info(w, "o/a/p").untrusted);
    gp_job_spec s = sb_mps_job(1, "o/a/p", 100, 0);
    sb_submit_refused(w, &s, 0, "isolation");
    /* only the ancestor lifts it */
    retrust(w, "o", GP_TRUST_TRUSTED);
    assert_false(tb_tenant_info(w, "o/a").untrusted);
    assert_false(tb_tenant_info(w, "o/a/p").untrusted);
}

static void a_tenant_re_created_under_an_untrusted_parent_is_untrusted(void **state)
{
    tb_world *w = *state;
    /* a move is a remove and a re-create: the new place's floor applies */
    sb_tenant(w, "o", GP_TRUST_TRUSTED);
    sb_tenant(w, "o/a", GP_TRUST_INHERIT);
    sb_tenant(w, "ext", GP_TRUST_UNTRUSTED);
    assert_int_equal(gp_engine_tenant_remove(w->e, "o/a", gp_engine_now(w->e), NULL), GP_OK);
    sb_tenant(w, "ext/a", GP_TRUST_INHERIT);
    assert_true(tb_tenant_info(w, "ext/a").untrusted);
    gp_error err;
    assert_int_equal(set_trust(w, "ext/b", GP_TRUST_TRUSTED, &err), GP_ERR_INVALID);
}

/* ---- trust holds at placement ---- */

static void assert_waits_for_trust(tb_world *w, uint64_t id, const char *names)
{
    gp_job_info info = tb_info(w, id);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_TRUST);
    char why[GP_REASON_MAX * 2];
    gp_engine_why(w->e, id, why, sizeof why);
    assert_non_null(strstr(why, "untrusted"));
    assert_non_null(strstr(why, names));
    assert_non_null(strstr(why, "resubmit as exclusive or mig"));
}

static void a_pending_mps_job_is_not_placed_after_its_tenant_becomes_untrusted(void **state)
{
    tb_world *w = *state;
    /* a/x's share holds the GPU for org a; a/y's share was submitted while
     * a/y was trusted; a/y turns untrusted before the next pass: its share
     * must not join a/x's GPU (nor any other) */
    sb_add_node(w, "p0", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    submit(w, sb_mps_job(1, "a/x", 300, 0), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit(w, sb_mps_job(2, "a/y", 300, 0), 10);
    retrust(w, "a/y", GP_TRUST_UNTRUSTED);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_waits_for_trust(w, 2, "tenant a/y is untrusted");
    assert_int_equal(tb_gpu(w, sb_job_gpu(w, 1)).jobs, 1);
    sb_assert_sharing_consistent(w, MIB);
    /* lifting it lets the share run */
    retrust(w, "a/y", GP_TRUST_INHERIT);
    assert_int_equal(tb_tick(w, 20, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

static void a_pending_time_slice_waits_when_its_org_becomes_untrusted(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    tenants(w);
    submit(w, sb_timeslice_job(1, "b/x", GP_KIND_INFERENCE), 0);
    retrust(w, "b", GP_TRUST_UNTRUSTED);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_waits_for_trust(w, 1, "inherited from b");
    assert_int_equal(tb_gpu(w, 0).jobs, 0);
}

static void running_mps_work_is_preempted_with_its_grace_when_its_tenant_becomes_untrusted(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    gp_job_spec s = sb_mps_job(1, "a/x", 300, 0);
    s.checkpoint_grace_s = 30;
    submit(w, s, 0);
    submit(w, sb_mps_job(2, "a/y", 300, 0), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    tb_tick(w, 100, GP_DEC_BIND);
    retrust(w, "a/x", GP_TRUST_UNTRUSTED);
    const gp_decision *d = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(d);
    assert_int_equal(d->grace_s, 30);
    assert_int_equal(d->time, 100);
    assert_non_null(strstr(d->reason, "untrusted"));
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    assert_int_equal(tb_info(w, 1).preempt_deadline, 130);
    assert_null(tb_find(w, 2, GP_DEC_PREEMPT)); /* a/y is still trusted */
    sb_assert_sharing_consistent(w, MIB);
    tb_tick(w, 129, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    tb_tick(w, 130, GP_DEC_BIND);
    assert_waits_for_trust(w, 1, "tenant a/x is untrusted");
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    sb_assert_sharing_consistent(w, MIB);
}

/* A victim of a reclaim is in grace when its tenant becomes untrusted
 * (only running work is preempted for trust: it is stopping already);
 * then its reclaimer is cancelled.  The preemption is withdrawn, but the
 * victim may not go back to running on the shared GPU: it keeps stopping,
 * and then waits for trust. */
static void a_withdrawn_victim_whose_tenant_became_untrusted_keeps_stopping(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tb_tenant(w, "a", "H100", -1, -1);
    tb_tenant(w, "b", "H100", 1, -1);
    gp_job_spec s = sb_mps_job(1, "a", 600, 0);
    s.checkpoint_grace_s = 30;
    submit(w, s, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit(w, sb_mps_job(2, "b", 600, 0), 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING);
    retrust(w, "a", GP_TRUST_UNTRUSTED);
    assert_int_equal(gp_engine_job_cancel(w->e, 2, 20, NULL), GP_OK);
    assert_int_equal(tb_state(w, 1), GP_JOB_PREEMPTING); /* not back to running on the shared GPU */
    gp_history_entry h[8];
    size_t n = gp_engine_job_history(w->e, 1, h, 8);
    assert_non_null(strstr(h[n - 1].reason, "still stopping: tenant a is untrusted"));
    tb_tick(w, 40, GP_DEC_BIND);
    assert_waits_for_trust(w, 1, "tenant a is untrusted");
    sb_assert_sharing_consistent(w, MIB);
    gp_error err;
    assert_int_equal(gp_engine_check_invariants(w->e, &err), GP_OK);
}

static void running_time_slices_are_preempted_when_an_ancestor_becomes_untrusted(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "t0", "H100", 1, MIB, GP_SHARING_TIMESLICE, NULL);
    tenants(w);
    submit(w, sb_timeslice_job(1, "b/x", GP_KIND_INTERACTIVE), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    retrust(w, "b", GP_TRUST_UNTRUSTED);
    /* grace 0: stopped and requeued at once */
    const gp_decision *d = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(d);
    assert_int_equal(d->grace_s, 0);
    assert_int_equal(tb_gpu(w, 0).jobs, 0);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 0);
    assert_waits_for_trust(w, 1, "inherited from b");
    sb_assert_sharing_consistent(w, MIB);
}

static void whole_gpu_work_keeps_running_when_its_tenant_becomes_untrusted(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "p0", "H100", 2, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    submit(w, sb_whole_job(1, "a/x", 1), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit(w, sb_whole_job(2, "a/x", 1), 10);
    retrust(w, "a", GP_TRUST_UNTRUSTED);
    assert_int_equal(tb_count(w, GP_DEC_PREEMPT), 0);
    assert_int_equal(tb_tick(w, 10, GP_DEC_BIND), 1);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

static void a_newly_untrusted_mig_instance_alone_on_its_gpu_keeps_it(void **state)
{
    tb_world *w = *state;
    /* a/x's instance is alone on its GPU: it keeps running and the GPU
     * becomes a/x's own, so b/x's instance goes elsewhere */
    sb_add_node(w, "m0", "H100", 1, MIB, GP_SHARING_MIG, NULL);
    tenants(w);
    submit(w, sb_mig_job(1, "a/x", "1g.10gb"), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    retrust(w, "a/x", GP_TRUST_UNTRUSTED);
    assert_int_equal(tb_count(w, GP_DEC_PREEMPT), 0);
    assert_string_equal(tb_gpu(w, 0).trust_domain, "a/x");
    submit(w, sb_mig_job(2, "b/x", "1g.10gb"), 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    sb_assert_sharing_consistent(w, MIB);
}

static void a_newly_untrusted_mig_instance_beside_another_tenant_is_preempted(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "m0", "H100", 1, MIB, GP_SHARING_MIG, NULL);
    tenants(w);
    gp_job_spec s = sb_mig_job(1, "a/x", "1g.10gb");
    s.checkpoint_grace_s = 20;
    submit(w, s, 0);
    submit(w, sb_mig_job(2, "b/x", "1g.10gb"), 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    assert_int_equal(sb_job_gpu(w, 1), sb_job_gpu(w, 2));
    tb_tick(w, 50, GP_DEC_BIND);
    retrust(w, "a/x", GP_TRUST_UNTRUSTED);
    const gp_decision *d = tb_find(w, 1, GP_DEC_PREEMPT);
    assert_non_null(d);
    assert_int_equal(d->grace_s, 20);
    assert_non_null(strstr(d->reason, "untrusted"));
    assert_null(tb_find(w, 2, GP_DEC_PREEMPT));
    sb_assert_sharing_consistent(w, MIB);
    /* after the grace it waits: the GPU hosts b/x */
    assert_int_equal(tb_tick(w, 70, GP_DEC_BIND), 0);
    assert_int_equal(tb_state(w, 1), GP_JOB_PENDING);
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
    sb_assert_sharing_consistent(w, MIB);
}

static void a_reclaiming_share_whose_tenant_becomes_untrusted_gives_up_its_claim(void **state)
{
    tb_world *w = *state;
    /* a/x's guaranteed share reclaims the only MPS GPU from b/x's borrowed
     * one; a/x turns untrusted during the victim's grace: its share waits
     * for trust and the GPU is not held for it, so b/x's requeued share
     * takes it again */
    sb_add_node(w, "p0", "H100", 1, MIB, GP_SHARING_MPS, NULL);
    tenants(w);
    gp_tenant_spec g = tb_tenant_spec("H100", 1, -1);
    assert_int_equal(tb_tenant_try(w, "a", &g, NULL), GP_OK);
    assert_int_equal(tb_tenant_try(w, "a/x", &g, NULL), GP_OK);
    gp_job_spec s = sb_mps_job(1, "b/x", 800, 0);
    s.checkpoint_grace_s = 30;
    submit(w, s, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
    submit(w, sb_mps_job(2, "a/x", 500, 0), 10);
    assert_int_equal(tb_tick(w, 10, GP_DEC_PREEMPT), 1);
    assert_int_equal(tb_info(w, 2).wait.code, GP_WAIT_RECLAIM);
    g.trust = GP_TRUST_UNTRUSTED;
    assert_int_equal(tb_tenant_try(w, "a/x", &g, NULL), GP_OK);
    tb_tick(w, 20, GP_DEC_BIND);
    assert_waits_for_trust(w, 2, "tenant a/x is untrusted");
    assert_int_equal(tb_tick(w, 40, GP_DEC_BIND), 1); /* the grace ended: b/x is back */
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_waits_for_trust(w, 2, "tenant a/x is untrusted");
    sb_assert_sharing_consistent(w, MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(an_untrusted_tenant_may_not_ask_for_mps_or_time_slices),
        TB_TEST(untrust_is_inherited_down_the_tree),
        TB_TEST(two_orgs_never_share_an_mps_gpu),
        TB_TEST(two_orgs_never_share_a_time_sliced_gpu),
        TB_TEST(two_orgs_land_on_different_mps_gpus),
        TB_TEST(an_untrusted_tenants_mig_instance_makes_the_gpu_its_own),
        TB_TEST(another_tenants_mig_job_goes_to_another_gpu),
        TB_TEST(an_untrusted_tenant_never_joins_a_mig_gpu_in_use),
        TB_TEST(two_untrusted_tenants_never_share_a_mig_gpu),
        TB_TEST(an_untrusted_team_holds_the_gpu_for_itself_not_its_org),
        TB_TEST(an_untrusted_tenant_may_run_a_whole_gpu),
        TB_TEST(a_child_may_not_be_trusted_below_an_untrusted_parent),
        TB_TEST(untrusting_an_ancestor_untrusts_explicitly_trusted_descendants),
        TB_TEST(a_tenant_re_created_under_an_untrusted_parent_is_untrusted),
        TB_TEST(a_pending_mps_job_is_not_placed_after_its_tenant_becomes_untrusted),
        TB_TEST(a_pending_time_slice_waits_when_its_org_becomes_untrusted),
        TB_TEST(running_mps_work_is_preempted_with_its_grace_when_its_tenant_becomes_untrusted),
        TB_TEST(running_time_slices_are_preempted_when_an_ancestor_becomes_untrusted),
        TB_TEST(a_withdrawn_victim_whose_tenant_became_untrusted_keeps_stopping),
        TB_TEST(whole_gpu_work_keeps_running_when_its_tenant_becomes_untrusted),
        TB_TEST(a_newly_untrusted_mig_instance_alone_on_its_gpu_keeps_it),
        TB_TEST(a_newly_untrusted_mig_instance_beside_another_tenant_is_preempted),
        TB_TEST(a_reclaiming_share_whose_tenant_becomes_untrusted_gives_up_its_claim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
