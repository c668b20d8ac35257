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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
