/* test_agent_health.c - one GPU's health state machine
 * (agent/agent_health.h): out, repair, re-validation, return, back-off,
 * an operator needed, periodic checks and diagnostics on idle GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "agent/agent_health.h"

static const gp_health_policy WITH_REPAIR = {.every_ms = 300000, .repair_attempts = 3, .has_repair = true,
                                             .n_diagnostics = 1};

static void the_header_example_repairs_revalidates_and_returns_the_gpu(void **state)
{
    (void)state;
    gp_health_gpu h;
    gp_health_init(&h, 0);
    h.announced = true;
    assert_int_equal(gp_health_fail(&h, &WITH_REPAIR, "XID 79", false, 10000), GP_HEALTH_REPORT_UNHEALTHY);
    assert_int_equal(h.state, GP_HEALTH_OUT);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, false, false, 11000), GP_HEALTH_DO_NOTHING); /* job 7 runs */
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 12000), GP_HEALTH_DO_REPAIR);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, true, 13000), GP_HEALTH_DO_NOTHING);
    assert_int_equal(gp_health_repair_done(&h, &WITH_REPAIR, true, "", 20000), GP_HEALTH_REPORT_NONE);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 20000), GP_HEALTH_DO_CHECK);
    assert_int_equal(gp_health_checked(&h, &WITH_REPAIR, true, "", 20000), GP_HEALTH_REPORT_NONE);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 20000), GP_HEALTH_DO_DIAGNOSTIC);
    assert_int_equal(h.diag, 0);
    assert_int_equal(gp_health_diagnostic_done(&h, &WITH_REPAIR, true, "", 80000), GP_HEALTH_REPORT_HEALTHY);
    assert_int_equal(h.state, GP_HEALTH_IN_SERVICE);
    assert_string_equal(h.reason, "");
    assert_int_equal(h.next_ms, 80000 + 300000);
}

static void failed_repairs_back_off_then_need_an_operator(void **state)
{
    (void)state;
    gp_health_gpu h;
    gp_health_init(&h, 0);
    gp_health_fail(&h, &WITH_REPAIR, "XID 48", false, 0);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 0), GP_HEALTH_DO_REPAIR);
    assert_int_equal(gp_health_repair_done(&h, &WITH_REPAIR, false, "repair exited 1", 1000), GP_HEALTH_REPORT_NONE);
    assert_int_equal(h.state, GP_HEALTH_OUT);
    assert_int_equal(h.next_ms, 1000 + 5000);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 5999), GP_HEALTH_DO_NOTHING);
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 6000), GP_HEALTH_DO_REPAIR);
    gp_health_repair_done(&h, &WITH_REPAIR, true, "", 7000);
    gp_health_next(&h, &WITH_REPAIR, true, false, 7000);
    assert_int_equal(gp_health_checked(&h, &WITH_REPAIR, false, "2 uncorrected ECC errors", 7000),
                     GP_HEALTH_REPORT_NONE);
    assert_int_equal(h.next_ms, 7000 + 10000); /* doubled */
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 17000), GP_HEALTH_DO_REPAIR);
    assert_int_equal(gp_health_repair_done(&h, &WITH_REPAIR, false, "repair exited 1", 18000),
                     GP_HEALTH_REPORT_UNHEALTHY);
    assert_int_equal(h.state, GP_HEALTH_OPERATOR);
    assert_non_null(strstr(h.reason, "an operator is needed"));
    assert_int_equal(gp_health_next(&h, &WITH_REPAIR, true, false, 1000000), GP_HEALTH_DO_NOTHING);
}

static void the_back_off_doubles_up_to_the_health_period(void **state)
{
    (void)state;
    assert_int_equal(gp_health_backoff_ms(1, 300000), 5000);
    assert_int_equal(gp_health_backoff_ms(3, 300000), 20000);
    assert_int_equal(gp_health_backoff_ms(30, 300000), 300000);
    assert_int_equal(gp_health_backoff_ms(1, 2000), 2000);
}

static void without_a_repair_command_the_gpu_is_revalidated_one_period_later(void **state)
{
    (void)state;
    gp_health_policy p = {.every_ms = 60000, .repair_attempts = 3};
    gp_health_gpu h;
    gp_health_init(&h, 0);
    gp_health_fail(&h, &p, "lost", false, 1000);
    assert_int_equal(gp_health_next(&h, &p, true, false, 60999), GP_HEALTH_DO_NOTHING);
    assert_int_equal(gp_health_next(&h, &p, true, false, 61000), GP_HEALTH_DO_CHECK);
    assert_int_equal(h.state, GP_HEALTH_VALIDATING);
    assert_int_equal(gp_health_checked(&h, &p, true, "", 61000), GP_HEALTH_REPORT_HEALTHY);
    assert_int_equal(h.state, GP_HEALTH_IN_SERVICE);
}

static void a_periodic_check_failure_takes_the_gpu_out_and_the_first_pass_is_announced_once(void **state)
{
    (void)state;
    gp_health_policy p = {.every_ms = 1000, .repair_attempts = 1, .has_repair = true};
    gp_health_gpu h;
    gp_health_init(&h, 500);
    assert_int_equal(gp_health_next(&h, &p, true, false, 499), GP_HEALTH_DO_NOTHING);
    assert_int_equal(gp_health_next(&h, &p, true, false, 500), GP_HEALTH_DO_CHECK);
    assert_int_equal(gp_health_checked(&h, &p, true, "", 500), GP_HEALTH_REPORT_HEALTHY);
    assert_int_equal(gp_health_next(&h, &p, true, false, 1500), GP_HEALTH_DO_CHECK);
    assert_int_equal(gp_health_checked(&h, &p, true, "", 1500), GP_HEALTH_REPORT_NONE);
    assert_int_equal(gp_health_checked(&h, &p, false, "row remapping failed", 2500), GP_HEALTH_REPORT_UNHEALTHY);
    assert_int_equal(h.state, GP_HEALTH_OUT);
    assert_string_equal(h.reason, "row remapping failed");
}

static void diagnostics_run_only_on_idle_gpus_and_a_failed_one_takes_the_gpu_out(void **state)
{
    (void)state;
    gp_health_policy p = {.every_ms = 1000, .repair_attempts = 3, .has_repair = true, .n_diagnostics = 2};
    gp_health_gpu h;
    gp_health_init(&h, 0);
    h.announced = true;
    gp_health_checked(&h, &p, true, "", 0);
    assert_int_equal(gp_health_next(&h, &p, false, false, 1), GP_HEALTH_DO_NOTHING); /* busy: round skipped */
    assert_int_equal(gp_health_next(&h, &p, true, false, 2), GP_HEALTH_DO_NOTHING);
    gp_health_checked(&h, &p, true, "", 1000);
    assert_int_equal(gp_health_next(&h, &p, true, false, 1001), GP_HEALTH_DO_DIAGNOSTIC);
    assert_int_equal(gp_health_diagnostic_done(&h, &p, true, "", 1100), GP_HEALTH_REPORT_NONE);
    assert_int_equal(gp_health_next(&h, &p, true, false, 1101), GP_HEALTH_DO_DIAGNOSTIC);
    assert_int_equal(h.diag, 1);
    assert_int_equal(gp_health_diagnostic_done(&h, &p, false, "burn timed out after 600 s (killed)", 1200),
                     GP_HEALTH_REPORT_UNHEALTHY);
    assert_int_equal(h.state, GP_HEALTH_OUT);
    assert_string_equal(h.reason, "burn timed out after 600 s (killed)");
}

static void a_drain_asked_while_out_is_reported_again(void **state)
{
    (void)state;
    gp_health_gpu h;
    gp_health_init(&h, 0);
    assert_int_equal(gp_health_fail(&h, &WITH_REPAIR, "XID 48", false, 0), GP_HEALTH_REPORT_UNHEALTHY);
    assert_false(h.drain_node);
    assert_int_equal(gp_health_fail(&h, &WITH_REPAIR, "XID 48", false, 1), GP_HEALTH_REPORT_NONE);
    assert_int_equal(gp_health_fail(&h, &WITH_REPAIR, "XID 79", true, 2), GP_HEALTH_REPORT_UNHEALTHY);
    assert_true(h.drain_node);
}

static void a_fault_during_revalidation_fails_the_attempt(void **state)
{
    (void)state;
    gp_health_gpu h;
    gp_health_init(&h, 0);
    gp_health_fail(&h, &WITH_REPAIR, "XID 48", false, 0);
    gp_health_next(&h, &WITH_REPAIR, true, false, 0);
    gp_health_repair_done(&h, &WITH_REPAIR, true, "", 100);
    gp_health_next(&h, &WITH_REPAIR, true, false, 100);
    gp_health_checked(&h, &WITH_REPAIR, true, "", 100);
    gp_health_fail(&h, &WITH_REPAIR, "XID 48", false, 150);
    assert_int_equal(h.state, GP_HEALTH_OUT);
    assert_int_equal(h.attempts, 1);
    /* the diagnostic that was running ends later: it no longer counts */
    assert_int_equal(gp_health_diagnostic_done(&h, &WITH_REPAIR, true, "", 200), GP_HEALTH_REPORT_NONE);
    assert_int_equal(h.state, GP_HEALTH_OUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_header_example_repairs_revalidates_and_returns_the_gpu),
        cmocka_unit_test(failed_repairs_back_off_then_need_an_operator),
        cmocka_unit_test(the_back_off_doubles_up_to_the_health_period),
        cmocka_unit_test(without_a_repair_command_the_gpu_is_revalidated_one_period_later),
        cmocka_unit_test(a_periodic_check_failure_takes_the_gpu_out_and_the_first_pass_is_announced_once),
        cmocka_unit_test(diagnostics_run_only_on_idle_gpus_and_a_failed_one_takes_the_gpu_out),
        cmocka_unit_test(a_drain_asked_while_out_is_reported_again),
        cmocka_unit_test(a_fault_during_revalidation_fails_the_attempt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
