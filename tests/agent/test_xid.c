/* test_xid.c - the XID table (agent/xid.h): the catalog's actions, the
 * default for unknown codes, and the operator's override file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "agent/xid.h"

static void the_catalog_keeps_application_xids_in_service_and_resets_on_hardware_ones(void **state)
{
    (void)state;
    gp_xid_table t;
    gp_xid_table_default(&t);
    assert_int_equal(gp_xid_action_of(&t, 13), GP_XID_RESTART_APP);
    assert_int_equal(gp_xid_action_of(&t, 31), GP_XID_RESTART_APP);
    assert_int_equal(gp_xid_action_of(&t, 45), GP_XID_IGNORE);
    assert_int_equal(gp_xid_action_of(&t, 48), GP_XID_RESET_GPU);
    assert_int_equal(gp_xid_action_of(&t, 95), GP_XID_RESET_GPU);
    assert_int_equal(gp_xid_action_of(&t, 79), GP_XID_REBOOT_NODE);
    assert_false(gp_xid_action_takes_gpu_out(gp_xid_action_of(&t, 13)));
    assert_true(gp_xid_action_takes_gpu_out(gp_xid_action_of(&t, 48)));
    assert_false(gp_xid_action_drains_node(gp_xid_action_of(&t, 48)));
    assert_true(gp_xid_action_drains_node(gp_xid_action_of(&t, 79)));
    assert_string_equal(gp_xid_description(79), "GPU has fallen off the bus");
}

static void an_xid_missing_from_the_catalog_resets_the_gpu(void **state)
{
    (void)state;
    gp_xid_table t;
    gp_xid_table_default(&t);
    assert_int_equal(gp_xid_action_of(&t, 999), GP_XID_RESET_GPU);
    assert_int_equal(gp_xid_action_of(&t, 1), GP_XID_RESET_GPU);
    assert_int_equal(gp_xid_action_of(&t, 5000), GP_XID_RESET_GPU);
    assert_string_equal(gp_xid_description(999), "");
}

static void an_override_file_replaces_the_entries_it_names_and_no_other(void **state)
{
    (void)state;
    gp_xid_table t;
    gp_xid_table_default(&t);
    const char *yaml = "\"79\": reset_gpu\n\"13\": drain\n\"500\": ignore\n";
    gp_error err;
    assert_int_equal(gp_xid_table_parse(&t, yaml, strlen(yaml), "xids.yaml", &err), GP_OK);
    assert_int_equal(gp_xid_action_of(&t, 79), GP_XID_RESET_GPU);
    assert_int_equal(gp_xid_action_of(&t, 13), GP_XID_DRAIN);
    assert_int_equal(gp_xid_action_of(&t, 500), GP_XID_IGNORE);
    assert_true(t.overridden[79]);
    assert_int_equal(gp_xid_action_of(&t, 48), GP_XID_RESET_GPU);
    assert_false(t.overridden[48]);
    const char *json = "{\"48\": \"ignore\"}";
    assert_int_equal(gp_xid_table_parse(&t, json, strlen(json), "xids.json", &err), GP_OK);
    assert_int_equal(gp_xid_action_of(&t, 48), GP_XID_IGNORE);
}

static void a_bad_override_names_its_line_and_key_and_changes_nothing(void **state)
{
    (void)state;
    gp_xid_table t;
    gp_xid_table_default(&t);
    gp_error err;
    const char *bad_action = "\"13\": ignore\n\"79\": restart\n";
    assert_int_equal(gp_xid_table_parse(&t, bad_action, strlen(bad_action), "xids.yaml", &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "79");
    assert_non_null(strstr(err.message, "xids.yaml:2"));
    assert_non_null(strstr(err.message, "restart_app"));
    assert_int_equal(gp_xid_action_of(&t, 13), GP_XID_RESTART_APP); /* the good line before it was not applied */
    const char *bad_code = "abc: ignore\n";
    assert_int_equal(gp_xid_table_parse(&t, bad_code, strlen(bad_code), "xids.yaml", &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "abc");
    const char *too_big = "\"1024\": ignore\n";
    assert_int_equal(gp_xid_table_parse(&t, too_big, strlen(too_big), "xids.yaml", &err), GP_ERR_INVALID);
    const char *list = "- 79\n";
    assert_int_equal(gp_xid_table_parse(&t, list, strlen(list), "xids.yaml", &err), GP_ERR_INVALID);
    assert_int_equal(gp_xid_table_load(&t, "/nonexistent/xids.yaml", &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "xid_actions");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_catalog_keeps_application_xids_in_service_and_resets_on_hardware_ones),
        cmocka_unit_test(an_xid_missing_from_the_catalog_resets_the_gpu),
        cmocka_unit_test(an_override_file_replaces_the_entries_it_names_and_no_other),
        cmocka_unit_test(a_bad_override_names_its_line_and_key_and_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
