/* test_job_limits.c - tenant job defaults and maximums (core/job_limits.c).
 *
 * The worked example of job_limits.c: research {job_max: pids_max 4096,
 * mem_mib 65536}, research/nlp {job_defaults: cpu_millis 4000, mem_mib
 * 16384}.  A research/nlp job that sets nothing is filled with 4000 /
 * 16384 / 4096; one asking for more memory than research allows is refused
 * naming mem_mib; a child's maximum over its parent's, and a parent's
 * maximum under a child's default, are refused and change nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine.h"
#include "support/fleet_builder.h"

static gp_tenant_spec limits(gp_job_limits defaults, gp_job_limits max)
{
    gp_tenant_spec s = tb_tenant_spec("H100", -1, -1);
    s.job_defaults = defaults;
    s.job_max = max;
    return s;
}

/* The example's tree on one 8-GPU node. */
static void example_tree(tb_world *w)
{
    tb_add_nodes(w, 1, "H100", 8, "b0", "z0");
    gp_tenant_spec research = limits((gp_job_limits){0}, (gp_job_limits){.pids_max = 4096, .mem_mib = 65536});
    gp_tenant_spec nlp = limits((gp_job_limits){.cpu_millis = 4000, .mem_mib = 16384}, (gp_job_limits){0});
    assert_int_equal(tb_tenant_try(w, "research", &research, NULL), GP_OK);
    assert_int_equal(tb_tenant_try(w, "research/nlp", &nlp, NULL), GP_OK);
    gp_tenant_spec vision = limits((gp_job_limits){0}, (gp_job_limits){0});
    assert_int_equal(tb_tenant_try(w, "research/vision", &vision, NULL), GP_OK);
}

static void a_job_that_sets_nothing_gets_the_nearest_values(void **state)
{
    tb_world *w = *state;
    example_tree(w);
    gp_job_spec s = tb_job(1, "research/nlp", 30);
    s.cpu_millis = s.mem_mib = 0;
    assert_int_equal(gp_engine_job_defaults(w->e, &s, NULL), GP_OK);
    assert_int_equal(s.cpu_millis, 4000);
    assert_int_equal(s.mem_mib, 16384);
    assert_int_equal(s.pids_max, 4096); /* research's maximum, no default above */
    assert_int_equal(tb_submit_spec(w, &s, 0, NULL), GP_OK);

    gp_job_spec v = tb_job(2, "research/vision", 30);
    v.cpu_millis = v.mem_mib = 0;
    v.pids_max = 100;
    assert_int_equal(gp_engine_job_defaults(w->e, &v, NULL), GP_OK);
    assert_int_equal(v.cpu_millis, 0); /* nobody sets one */
    assert_int_equal(v.mem_mib, 65536);
    assert_int_equal(v.pids_max, 100); /* its own */
    gp_tenant_info t = tb_tenant_info(w, "research/nlp");
    assert_int_equal(t.job_defaults.pids_max, 4096);
    assert_int_equal(t.job_max.mem_mib, 65536);
    assert_int_equal(t.job_max.cpu_millis, 0);
}

static void a_job_over_its_tenants_maximum_is_refused_naming_the_field(void **state)
{
    tb_world *w = *state;
    example_tree(w);
    gp_job_spec s = tb_job(1, "research/nlp", 30);
    s.pids_max = 4096;
    s.mem_mib = 131072;
    gp_error err;
    assert_int_equal(tb_submit_spec(w, &s, 0, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "mem_mib");
    s.mem_mib = 1024;
    s.pids_max = 0; /* unlimited where a maximum holds */
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "pids_max");
    s.pids_max = 4096;
    assert_int_equal(gp_engine_job_check(w->e, &s, &err), GP_OK);
}

static void the_trees_rules_are_kept_when_a_tenant_changes(void **state)
{
    tb_world *w = *state;
    example_tree(w);
    gp_error err;
    gp_tenant_spec nlp =
        limits((gp_job_limits){.cpu_millis = 4000, .mem_mib = 16384}, (gp_job_limits){.pids_max = 8192});
    assert_int_equal(tb_tenant_try(w, "research/nlp", &nlp, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "job_max.pids_max");
    gp_tenant_spec research = limits((gp_job_limits){0}, (gp_job_limits){.pids_max = 4096, .mem_mib = 8192});
    assert_int_equal(tb_tenant_try(w, "research", &research, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "job_defaults.mem_mib");
    assert_non_null(strstr(err.message, "research/nlp"));
    assert_int_equal(tb_tenant_info(w, "research").job_max.mem_mib, 65536); /* unchanged */
    gp_tenant_spec child = limits((gp_job_limits){.pids_max = 5000}, (gp_job_limits){0});
    assert_int_equal(tb_tenant_try(w, "research/new", &child, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "job_defaults.pids_max");
    gp_tenant_spec plain = limits((gp_job_limits){0}, (gp_job_limits){0});
    assert_int_equal(tb_tenant_try(w, "research/new", &plain, NULL), GP_OK); /* the refused one was not made */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TB_TEST(a_job_that_sets_nothing_gets_the_nearest_values),
        TB_TEST(a_job_over_its_tenants_maximum_is_refused_naming_the_field),
        TB_TEST(the_trees_rules_are_kept_when_a_tenant_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
