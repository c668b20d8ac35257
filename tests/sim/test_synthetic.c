/* test_synthetic.c - the synthetic world generator and a small end-to-end run.
 *
 * Semantics under test (sim/synthetic.h): every parameter is settable by
 * name and bad names/values are refused; the same seed gives the same
 * world, another seed another one; the fleet and tenant files it writes
 * are valid and fit together (guarantees within the fleet); jobs are
 * sorted, in the simulated span, of the documented shapes; a small world
 * runs through the simulator with every job placed or accounted for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/simulator.h"
#include "sim/synthetic.h"

static gp_synth_params small_world(uint64_t seed)
{
    gp_synth_params p = gp_synth_defaults();
    p.seed = seed;
    assert_true(gp_synth_set(&p, "days", "0.5"));
    assert_true(gp_synth_set(&p, "gpus", "1024"));
    assert_true(gp_synth_set(&p, "teams", "12"));
    assert_true(gp_synth_set(&p, "orgs", "3"));
    assert_true(gp_synth_set(&p, "jobs-per-day", "600"));
    assert_true(gp_synth_set(&p, "gang-max", "64"));
    assert_true(gp_synth_set(&p, "nodes-per-block", "16"));
    return p;
}

static void parameters(void **state)
{
    (void)state;
    gp_synth_params p = gp_synth_defaults();
    assert_true(p.gpus == 50000 && p.teams == 300 && p.jobs_per_day == 30000);
    assert_true(gp_synth_set(&p, "seed", "99"));
    assert_int_equal(p.seed, 99);
    assert_false(gp_synth_set(&p, "no-such", "1"));
    assert_false(gp_synth_set(&p, "days", "-1"));
    assert_false(gp_synth_set(&p, "days", "ten"));
    assert_false(gp_synth_set(&p, "seed", "-3"));
    FILE *out = tmpfile();
    gp_synth_describe(&p, out);
    rewind(out);
    char line[4096];
    assert_non_null(fgets(line, sizeof line, out));
    assert_memory_equal(line, "seed=99 ", 8);
    assert_non_null(strstr(line, " jobs-per-day=30000"));
    fclose(out);
}

static void generate(gp_synth_params *p, gp_trace *t, gp_fleet_file *f, gp_tenant_file *tf)
{
    char *fleet, *tenants;
    gp_error err;
    gp_trace_init(t);
    assert_int_equal(gp_synth_generate(p, t, &fleet, &tenants, &err), GP_OK);
    gp_err rc = gp_fleet_file_parse(fleet, strlen(fleet), "synthetic fleet", f, &err);
    if (rc)
        fail_msg("fleet: %s", err.message);
    rc = gp_tenant_file_parse(tenants, strlen(tenants), "synthetic tenants", tf, &err);
    if (rc)
        fail_msg("tenants: %s", err.message);
    free(fleet);
    free(tenants);
}

static void deterministic_world(void **state)
{
    (void)state;
    gp_synth_params p1 = small_world(5), p2 = small_world(5), p3 = small_world(6);
    gp_trace a, b, c;
    gp_fleet_file fa, fb, fc;
    gp_tenant_file ta, tb, tc;
    generate(&p1, &a, &fa, &ta);
    generate(&p2, &b, &fb, &tb);
    generate(&p3, &c, &fc, &tc);
    assert_int_equal(a.n_jobs, 300);
    assert_int_equal(a.n_jobs, b.n_jobs);
    assert_memory_equal(a.jobs, b.jobs, a.n_jobs * sizeof *a.jobs);
    assert_true(a.n_jobs != c.n_jobs || memcmp(a.jobs, c.jobs, a.n_jobs * sizeof *a.jobs) != 0);
    assert_int_equal(fa.n_nodes, 128);
    assert_int_equal(ta.n_tenants, 3 + 12 + 24); /* orgs, teams, 2 projects each */
    for (size_t j = 0; j < a.n_jobs; j++) {
        const gp_trace_job *tj = &a.jobs[j];
        assert_true(j == 0 || tj->submit >= a.jobs[j - 1].submit);
        assert_true(tj->submit >= 0 && tj->submit < 43200 + 60);
        assert_true(tj->duration >= 60);
        assert_true(tj->replicas * (tj->gpu_milli ? 1 : tj->gpus) <= 64);
        assert_true(tj->type_mask != 0);
    }
    gp_trace_free(&a);
    gp_trace_free(&b);
    gp_trace_free(&c);
    gp_fleet_file_free(&fa);
    gp_fleet_file_free(&fb);
    gp_fleet_file_free(&fc);
    gp_tenant_file_free(&ta);
    gp_tenant_file_free(&tb);
    gp_tenant_file_free(&tc);
}

static void small_world_runs(void **state)
{
    (void)state;
    gp_synth_params p = small_world(3);
    gp_trace t;
    gp_fleet_file f;
    gp_tenant_file tf;
    generate(&p, &t, &f, &tf);
    gp_sim_policy pol;
    assert_true(gp_sim_policy_parse("gpupool", &pol));
    gp_sim_options o = gp_sim_options_default();
    gp_sim_setup s = {.fleet = &f, .tenants = &tf, .trace = &t};
    gp_sim_result r;
    gp_error err;
    gp_err rc = gp_sim_run(&s, &pol, &o, &r, &err);
    if (rc)
        fail_msg("%s: %s", err.field, err.message);
    size_t done = 0;
    for (size_t j = 0; j < r.n_jobs; j++)
        done += r.jobs[j].outcome == GP_SIM_DONE;
    if (r.rejected)
        fail_msg("%zu jobs refused, first: %s", r.rejected, r.first_rejection);
    assert_int_equal(done, t.n_jobs); /* a lightly loaded world: everything finishes */
    assert_int_equal(r.n_groups, 12);  /* projects report under their team */
    gp_sim_result_free(&r);
    gp_trace_free(&t);
    gp_fleet_file_free(&f);
    gp_tenant_file_free(&tf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parameters),
        cmocka_unit_test(deterministic_world),
        cmocka_unit_test(small_world_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
