/* test_wait_reasons.c - a job that can never fit says so, and why.
 *
 * Rule (docs/scheduling.md, "Why a job waits"): a job that cannot fit as
 * the fleet stands is kept pending with a reason that says it cannot fit
 * and why, never "waiting for room": a shared job with no healthy
 * schedulable GPU of an accepted type in its mode (for MIG: with a model
 * that offers its profile) waits GP_WAIT_SHARING_MODE; a job whose demand
 * alone is above a limit of its tenant (or an ancestor, or its user) on
 * every accepted type says it cannot run while that limit stands.  It
 * stays pending because nodes register and limits change: once a GPU of
 * the right mode appears, it runs; so does a replica bigger than every
 * node (GP_WAIT_NODE_SHAPE, naming the largest).  A burstable job kept off
 * free GPUs held for a tenant that does not lend says so (GP_WAIT_LENDING).
 * Amounts are in GPUs ("2.5 GPUs"), never milli-GPUs called GPUs.
 *
 * Example: two exclusive H100 and an MPS job -> "cannot fit as the fleet
 * stands: ... is in MPS mode"; add an MPS node -> bound at the next pass.
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

static void why(const tb_world *w, uint64_t id, char *buf, size_t len)
{
    gp_engine_why(w->e, id, buf, len);
}

static void an_mps_job_without_an_mps_gpu_says_it_cannot_fit_and_runs_once_one_registers(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "x0", "H100", 2, SB_H100_MIB, GP_SHARING_EXCLUSIVE, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_mps_job(1, "org", 300, 0);
    s.replicas = 2;
    sb_submit(w, &s, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_SHARING_MODE);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "cannot fit as the fleet stands"));
    assert_non_null(strstr(text, "MPS mode"));
    assert_null(strstr(text, "waiting for room"));
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MPS, NULL);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 1);
}

static void a_mig_profile_no_model_offers_says_it_cannot_fit(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "a0", "A100", 1, SB_A100_40_MIB, GP_SHARING_MIG, NULL); /* 3g.20gb, not 3g.40gb */
    sb_add_node(w, "l0", "L40S", 2, 49152, GP_SHARING_EXCLUSIVE, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_mig_job(1, "org", "3g.40gb");
    sb_submit(w, &s, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_SHARING_MODE);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "MIG mode with a model that offers 3g.40gb"));
    gp_job_spec fits = sb_mig_job(2, "org", "3g.20gb"); /* the neighbour that does fit */
    sb_submit(w, &fits, 100);
    assert_int_equal(tb_tick(w, 100, GP_DEC_BIND), 1); /* not blocked by job 1's "no room" */
    assert_int_equal(tb_state(w, 2), GP_JOB_RUNNING);
}

static void a_timeslice_job_on_mig_and_exclusive_gpus_says_it_cannot_fit(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "h0", "H100", 1, SB_H100_MIB, GP_SHARING_MIG, NULL);
    sb_add_node(w, "h1", "H100", 1, SB_H100_MIB, GP_SHARING_EXCLUSIVE, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec s = sb_timeslice_job(1, "org", GP_KIND_INTERACTIVE);
    sb_submit(w, &s, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_SHARING_MODE);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "time-slice mode"));
}

static void a_full_mps_gpu_is_waiting_for_room_not_cannot_fit(void **state)
{
    tb_world *w = *state;
    sb_add_node(w, "m0", "H100", 1, SB_H100_MIB, GP_SHARING_MPS, NULL);
    sb_tenant(w, "org", GP_TRUST_TRUSTED);
    gp_job_spec big = sb_mps_job(1, "org", 800, 0), more = sb_mps_job(2, "org", 500, 0);
    sb_submit(w, &big, 0);
    sb_submit(w, &more, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    assert_int_equal(tb_state(w, 1), GP_JOB_RUNNING);
    assert_int_not_equal(tb_info(w, 2).wait.code, GP_WAIT_SHARING_MODE);
}

static void a_job_above_its_limit_says_it_cannot_run_while_the_limit_stands(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 4, "H100", 8, "b0", "z0");
    tb_tenant(w, "capped", "H100", -1, 8);
    tb_submit(w, 1, "capped", 2, 8, 0); /* 16 > 8 even on an idle fleet */
    tb_tick(w, 0, GP_DEC_BIND);
    gp_job_info info = tb_info(w, 1);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_LIMIT);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "cannot run while the limit stands"));
    assert_non_null(strstr(text, "16 GPUs of H100"));
    assert_non_null(strstr(text, "(8 GPUs)"));
}

static void a_job_over_the_limit_only_because_of_usage_waits_for_it(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 4, "H100", 8, "b0", "z0");
    tb_tenant(w, "capped", "H100", -1, 8);
    tb_submit(w, 1, "capped", 1, 8, 0);
    tb_submit(w, 2, "capped", 1, 4, 0);
    tb_tick(w, 0, GP_DEC_BIND);
    char text[256];
    why(w, 2, text, sizeof text);
    assert_string_equal(text, "limit of capped on H100 reached: 8 + 4 > 8 GPUs in use");
}

/* A waiting job's "could it ever fit" is asked once per fleet shape
 * (engine.c, possible_after_miss): a node lost changes the shape, so a
 * gang that waited for room says it cannot fit as soon as the fleet that
 * is left is too small for it, and fits again once the node is back. */
static void a_waiting_gang_says_it_cannot_fit_once_a_node_it_needs_is_lost(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "org", "H100", -1, -1);
    tb_submit(w, 1, "org", 1, 8, 0);
    tb_submit(w, 2, "org", 1, 8, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 2);
    tb_submit(w, 3, "org", 2, 8, 10);
    tb_tick(w, 10, GP_DEC_BIND);
    tb_tick(w, 20, GP_DEC_BIND); /* two passes of "no room now, but it could fit" */
    assert_int_not_equal(tb_info(w, 3).wait.code, GP_WAIT_TOPOLOGY);
    assert_int_equal(gp_engine_node_lost(w->e, "n01", 30, NULL), GP_OK);
    tb_tick(w, 30, GP_DEC_BIND);
    gp_job_info info = tb_info(w, 3);
    assert_int_equal(info.state, GP_JOB_PENDING);
    assert_int_equal(info.wait.code, GP_WAIT_TOPOLOGY);
    char text[256];
    why(w, 3, text, sizeof text);
    assert_non_null(strstr(text, "2 replicas of 8 H100 GPUs, but the whole fleet holds 1 such replica even when empty"));
    gp_node_spec back = tb_node_spec("n01", "H100", 8, "b0");
    assert_int_equal(gp_engine_node_add(w->e, &back, 40, NULL), GP_OK);
    tb_tick(w, 40, GP_DEC_BIND);
    assert_int_not_equal(tb_info(w, 3).wait.code, GP_WAIT_TOPOLOGY);
}

/* Counts agree with their nouns: "1 GPU", "1 H100 GPU free", "1 node held". */
/* A replica bigger than every node of its types: it says so, with the
 * largest node, and runs once a node that big registers. */
static void a_replica_no_node_is_big_enough_for_says_so_and_runs_on_a_bigger_one(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, NULL, NULL);
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "t", 0);
    s.cpu_millis = TB_NODE_CPU_MILLIS + 1000;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_OK);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_NODE_SHAPE);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "no node of an accepted type has 129000 millicores"));
    assert_non_null(strstr(text, "largest: 128000 millicores"));
    gp_node_spec big = tb_node_spec("big", "H100", 8, "b1");
    big.cpu_millis = 2 * TB_NODE_CPU_MILLIS;
    assert_int_equal(gp_engine_node_add(w->e, &big, 1, &err), GP_OK);
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 1), tb_node_index(w, "big"));
}

/* gp_engine_job_fits: a replica bigger than any node is refused naming
 * "gpus" with the largest node (not "a looser topology": its topology is
 * any already), a node lost or drained still counts, and a type with no
 * node registered yet is waited for. */
static void a_job_no_registered_node_could_hold_is_refused_naming_the_field(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 2, "H100", 8, "b0", "z0");
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec s = tb_job(1, "t", 0);
    s.gpus = 16;
    s.replicas = 1;
    gp_error err;
    assert_int_equal(gp_engine_job_fits(w->e, &s, &err), GP_ERR_NEVER_FITS);
    assert_string_equal(err.field, "gpus");
    assert_non_null(strstr(err.message, "16 H100 GPUs in one replica, but the largest H100 node has 8"));
    assert_null(strstr(err.message, "looser topology"));
    s.gpus = 8;
    s.replicas = 2;
    assert_int_equal(gp_engine_node_lost(w->e, "n01", 1, NULL), GP_OK);
    assert_int_equal(gp_engine_node_drain(w->e, "n00", true, 1, NULL), GP_OK);
    assert_int_equal(gp_engine_job_fits(w->e, &s, &err), GP_OK); /* both nodes may come back */
    s.replicas = 3;
    assert_int_equal(gp_engine_job_fits(w->e, &s, &err), GP_ERR_NEVER_FITS);
    assert_string_equal(err.field, "replicas");
    s.replicas = 1;
    s.cpu_millis = TB_NODE_CPU_MILLIS + 1;
    assert_int_equal(gp_engine_job_fits(w->e, &s, &err), GP_ERR_NEVER_FITS);
    assert_string_equal(err.field, "cpu_millis");
}

/* A declared type (gp_engine_gpu_type_declare) is known with no node: a
 * job naming it is accepted by the engine but no node could hold it, so
 * gp_engine_job_fits refuses it naming "gpu_types"; a job of any type on a
 * fleet with no GPU node at all (being brought up) is not judged. */
static void a_job_for_a_declared_type_no_node_has_never_fits(void **state)
{
    tb_world *w = *state;
    gp_error err;
    tb_tenant(w, "t", "H100", -1, -1);
    gp_job_spec any = tb_job(1, "t", 0);
    assert_int_equal(gp_engine_job_fits(w->e, &any, &err), GP_OK);
    assert_int_equal(gp_engine_gpu_type_declare(w->e, "h200", 1, &err), GP_OK);
    assert_int_equal(gp_engine_gpu_type_declare(w->e, "H200", 1, &err), GP_OK); /* known: the first spelling stays */
    assert_int_equal(tb_type_index(w, "h200"), gp_engine_gpu_type_count(w->e) - 1);
    tb_add_nodes(w, 1, "H100", 8, NULL, NULL);
    gp_job_spec s = tb_job(2, "t", 0);
    s.gpu_types[0] = "H200";
    s.n_gpu_types = 1;
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_OK);
    assert_int_equal(gp_engine_job_fits(w->e, &s, &err), GP_ERR_NEVER_FITS);
    assert_string_equal(err.field, "gpu_types");
    assert_string_equal(err.message, "no node of GPU type h200 has joined the fleet yet");
    assert_int_equal(tb_submit_spec(w, &s, 1, &err), GP_OK); /* asked to wait: it waits for the type's node */
    assert_int_equal(tb_tick(w, 1, GP_DEC_BIND), 0);
    gp_node_spec n = tb_node_spec("h200-0", "H200", 8, "b1");
    assert_int_equal(gp_engine_node_add(w->e, &n, 2, &err), GP_OK);
    assert_int_equal(gp_engine_job_fits(w->e, &s, &err), GP_OK);
    assert_int_equal(tb_tick(w, 2, GP_DEC_BIND), 1);
    assert_int_equal(tb_job_node(w, 2), tb_node_index(w, "h200-0"));
    assert_int_equal(gp_engine_gpu_type_declare(w->e, "", 3, &err), GP_ERR_INVALID);
    assert_int_equal(gp_engine_gpu_type_declare(w->e, "B200", 0, &err), GP_ERR_TIME);
}

/* Free GPUs kept for a tenant that does not lend its idle guarantee: a
 * burstable job of another tenant says that is why it waits. */
static void a_burstable_job_behind_a_guarantee_not_lent_says_so(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, NULL, NULL);
    gp_tenant_spec keeper = tb_tenant_spec("H100", 8, -1);
    keeper.lend = 0;
    gp_error err;
    assert_int_equal(tb_tenant_try(w, "keeper", &keeper, &err), GP_OK);
    tb_tenant(w, "b", "H100", -1, -1);
    tb_submit(w, 1, "b", 1, 1, 0);
    assert_int_equal(tb_tick(w, 0, GP_DEC_BIND), 0);
    assert_int_equal(tb_info(w, 1).wait.code, GP_WAIT_LENDING);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "the 8 free H100 GPUs are kept for tenants that do not lend their idle guarantee"));
}

static void a_count_of_one_reads_in_the_singular(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    tb_tenant(w, "capped", "H100", -1, 1);
    tb_tenant(w, "big", "H100", -1, -1);
    tb_submit(w, 1, "capped", 1, 2, 0); /* 2 > the limit of 1 */
    tb_submit(w, 2, "big", 1, 7, 0);
    tb_submit(w, 3, "big", 1, 2, 0); /* 1 GPU free, needs 2 */
    tb_tick(w, 0, GP_DEC_BIND);
    char text[256];
    why(w, 1, text, sizeof text);
    assert_non_null(strstr(text, "more than the limit of capped (1 GPU)"));
    why(w, 3, text, sizeof text);
    assert_int_equal(tb_info(w, 3).wait.code, GP_WAIT_RESERVED);
    assert_non_null(strstr(text, "1 node held"));
    assert_null(strstr(text, "1 nodes"));
}

static void quota_errors_state_gpu_amounts_in_gpus(void **state)
{
    tb_world *w = *state;
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_tenant_spec parent = tb_tenant_spec("H100", -1, 2);
    parent.limit.gpu[0].milli = 2500; /* 2.5 GPUs */
    assert_int_equal(tb_tenant_try(w, "org", &parent, NULL), GP_OK);
    gp_tenant_spec child = tb_tenant_spec("H100", 3, -1);
    gp_error err;
    assert_int_equal(tb_tenant_try(w, "org/team", &child, &err), GP_ERR_QUOTA);
    assert_string_equal(err.message, "the guarantees under org add up to 3 H100 GPUs, more than its limit of 2.5 "
                                     "H100 GPUs");
    gp_tenant_spec greedy = tb_tenant_spec("H100", 9, -1);
    assert_int_equal(tb_tenant_try(w, "greedy", &greedy, &err), GP_ERR_QUOTA);
    assert_string_equal(err.message, "guarantees would add up to 9 H100 GPUs, more than the healthy fleet's 8 H100 GPUs");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(an_mps_job_without_an_mps_gpu_says_it_cannot_fit_and_runs_once_one_registers),
        TB_TEST(a_mig_profile_no_model_offers_says_it_cannot_fit),
        TB_TEST(a_timeslice_job_on_mig_and_exclusive_gpus_says_it_cannot_fit),
        TB_TEST(a_full_mps_gpu_is_waiting_for_room_not_cannot_fit),
        TB_TEST(a_job_above_its_limit_says_it_cannot_run_while_the_limit_stands),
        TB_TEST(a_job_over_the_limit_only_because_of_usage_waits_for_it),
        TB_TEST(a_waiting_gang_says_it_cannot_fit_once_a_node_it_needs_is_lost),
        TB_TEST(a_replica_no_node_is_big_enough_for_says_so_and_runs_on_a_bigger_one),
        TB_TEST(a_job_no_registered_node_could_hold_is_refused_naming_the_field),
        TB_TEST(a_job_for_a_declared_type_no_node_has_never_fits),
        TB_TEST(a_burstable_job_behind_a_guarantee_not_lent_says_so),
        TB_TEST(a_count_of_one_reads_in_the_singular),
        TB_TEST(quota_errors_state_gpu_amounts_in_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
