/* test_invariants.c - the engine's self-check (src/core/invariants.c)
 * fails on broken books.
 *
 * Every unit and property test trusts gp_engine_check_invariants, run after
 * each event, to catch an engine whose incremental books went wrong; until
 * this file no test had seen it fail (make coverage, docs/coverage.md).
 * Each case builds a small world through the public API, breaks one book
 * the way a bug in the engine would, and expects the check to name it.
 * Breaking a book needs the engine's insides: this is the one test that
 * includes core/internal.h, and it only writes to it.
 *
 * Example: job 1 runs on a GPU of n00; that GPU is marked free behind the
 * engine's back; the check says "job 1 holds GPU g owned by another".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "support/fleet_builder.h"
#include "support/sharing_builder.h"

/* The check fails with field and a message containing words. */
static void assert_check_says(const tb_world *w, const char *field, const char *words)
{
    gp_error err = {0};
    assert_int_equal(gp_engine_check_invariants(w->e, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, field);
    if (!strstr(err.message, words))
        fail_msg("the check said \"%s\", not \"%s\"", err.message, words);
}

/* One node of two H100, tenant "t", job 1 (one GPU) running on GPU 0. */
static void one_job_running(tb_world *w)
{
    tb_add_nodes(w, 1, "H100", 2, NULL, NULL);
    tb_tenant(w, "t", "H100", -1, -1);
    tb_submit(w, 1, "t", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
}

/* One MPS H100, trusted org "org", job 1 running a 400-milli share on it. */
static void one_share_running(tb_world *w)
{
    sb_add_node(w, "p0", "H100", 1, SB_H100_MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_mps_job(1, "org", 400, 0);
    sb_submit(w, &s, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 1);
}

static void a_held_gpu_marked_free_is_caught(void **state)
{
    tb_world *w = *state;
    one_job_running(w);
    uint32_t gpu = tb_gpu(w, 0).job == 1 ? 0 : 1;
    assert_int_equal(tb_gpu(w, gpu).job, 1);
    w->e->fleet.gpus[gpu].owner = 0;
    char says[64];
    snprintf(says, sizeof says, "job 1 holds GPU %u owned by another", gpu);
    assert_check_says(w, "gpu", says);
}

static void tenant_usage_that_forgets_a_running_job_is_caught(void **state)
{
    tb_world *w = *state;
    one_job_running(w);
    gp__res_zero(&w->e->tenants[tb_tenant_index(w, "t")].usage);
    assert_check_says(w, "tenant", "usage of t does not match its jobs");
}

static void a_shared_gpu_counting_a_share_too_many_is_caught(void **state)
{
    tb_world *w = *state;
    one_share_running(w);
    w->e->fleet.gpus[0].used_milli += 100;
    assert_check_says(w, "gpu", "bookkeeping of shared GPU 0 is out of step");
}

/* An untrusted tenant's share must never run beside others on MPS: the
 * engine preempts it when the tenant is made untrusted; one left running
 * is a leak of the trust rule the check must see. */
static void an_untrusted_share_left_on_an_mps_gpu_is_caught(void **state)
{
    tb_world *w = *state;
    one_share_running(w);
    w->e->tenants[tb_tenant_index(w, "org")].untrusted = true;
    assert_check_says(w, "gpu", "job 1 of an untrusted tenant runs on a shared GPU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(a_held_gpu_marked_free_is_caught),
        TB_TEST(tenant_usage_that_forgets_a_running_job_is_caught),
        TB_TEST(a_shared_gpu_counting_a_share_too_many_is_caught),
        TB_TEST(an_untrusted_share_left_on_an_mps_gpu_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
