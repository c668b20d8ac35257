/* test_fgd_small.c - the FGD experiment end to end on a reduced trace.
 *
 * data/alibaba-openb/reduced_*.csv: 24 openb nodes (120 GPUs) and 408 pods
 * (every 20th of the default pod list).  Semantics under test: for every
 * policy and seed, every pod of the inflated list is accounted for
 * (placed and still running, since there are no departures, or failed at
 * arrival; none refused), the binned allocation curve never decreases,
 * allocation never exceeds the arrived load nor 100 %, and the driver's
 * medians and curves are filled; --whole-gpus-only drops the share and
 * CPU-only pods before inflating.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/fgd_experiment.h"
#include "sim/inflate.h"

#define DATA GP_SOURCE_DIR "/data/alibaba-openb/"

typedef struct fixture {
    gp_fleet_file fleet;
    gp_trace pods;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    gp_error err;
    char *yaml;
    gp_trace_read_opts strict = {.strict = true};
    assert_int_equal(gp_trace_openb_fleet_yaml(DATA "reduced_node_list.csv", &strict, &yaml, NULL, &err), GP_OK);
    assert_int_equal(gp_fleet_file_parse(yaml, strlen(yaml), "reduced", &f->fleet, &err), GP_OK);
    free(yaml);
    gp_trace_init(&f->pods);
    assert_int_equal(gp_trace_read_openb(&f->pods, DATA "reduced_pod_list.csv", &strict, &err), GP_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gp_fleet_file_free(&f->fleet);
    gp_trace_free(&f->pods);
    free(f);
    return 0;
}

static void every_pod_accounted_for(void **state)
{
    fixture *f = *state;
    const char *names[] = {"gpupool", "fgd", "bestfit", "random"};
    gp_trace inflated;
    gp_trace_init(&inflated);
    gp_error err;
    assert_int_equal(gp_trace_inflate(&f->pods, 1.3, 120000, 42, &inflated, &err), GP_OK);
    gp_sim_options o = gp_sim_options_default();
    o.fail_unplaced = true;
    o.record_arrivals = true;
    o.checkpoint_interval_s = 0;
    o.seed = 42;
    gp_sim_setup s = {.fleet = &f->fleet, .tenants = NULL, .trace = &inflated};
    for (size_t p = 0; p < 4; p++) {
        gp_sim_policy pol;
        assert_true(gp_sim_policy_parse(names[p], &pol));
        gp_sim_result r;
        assert_int_equal(gp_sim_run(&s, &pol, &o, &r, &err), GP_OK);
        size_t placed = 0, failed = 0;
        for (size_t j = 0; j < r.n_jobs; j++) {
            const gp_sim_job_result *jr = &r.jobs[j];
            if (jr->outcome == GP_SIM_FAILED)
                failed++;
            else if (jr->outcome == GP_SIM_UNFINISHED && jr->first_start == inflated.jobs[j].submit)
                placed++;
            else
                fail_msg("%s: pod %zu neither placed at arrival nor failed (outcome %d: %s)", names[p], j,
                         jr->outcome, r.first_rejection);
        }
        assert_int_equal(placed + failed, inflated.n_jobs);
        assert_true(placed > 0);
        assert_int_equal(r.n_arrivals, inflated.n_jobs);
        for (size_t k = 0; k < r.n_arrivals; k++) {
            assert_true(r.arrival_allocated[k] <= r.arrival_arrived[k]);
            assert_true(r.arrival_allocated[k] <= r.capacity_milli);
        }
        gp_sim_result_free(&r);
    }
    gp_trace_free(&inflated);
}

static void curves_monotone(void **state)
{
    fixture *f = *state;
    const uint64_t seeds[2] = {42, 43};
    gp_sim_policy pol[3];
    assert_true(gp_sim_policy_parse("gpupool", &pol[0]));
    assert_true(gp_sim_policy_parse("fgd", &pol[1]));
    assert_true(gp_sim_policy_parse("packing", &pol[2]));
    gp_fgd_config cfg = {.ratio = 1.3, .seeds = seeds, .n_seeds = 2, .policies = pol, .n_policies = 3};
    gp_fgd_run *runs;
    size_t n;
    gp_error err;
    assert_int_equal(gp_fgd_run_all(&f->fleet, &f->pods, &cfg, &runs, &n, NULL, &err), GP_OK);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        if (!runs[i].monotone)
            fail_msg("%s seed %llu: allocation curve decreases", pol[runs[i].policy].name,
                     (unsigned long long)runs[i].seed);
        assert_int_equal(runs[i].rejected, 0);
        assert_true(runs[i].alloc_100 > 0 && runs[i].alloc_100 <= 100);
        assert_true(runs[i].alloc_130 >= runs[i].alloc_100);
        assert_true(runs[i].have[10]);
    }
    double m = gp_fgd_median(runs, n, 1, false);
    assert_true(m > 0 && m <= 100);
    free(runs);
}

static void whole_gpus_only_drops_shares(void **state)
{
    fixture *f = *state;
    const uint64_t seeds[1] = {1};
    gp_sim_policy pol;
    assert_true(gp_sim_policy_parse("bestfit", &pol));
    gp_fgd_config cfg = {.ratio = 1.0, .seeds = seeds, .n_seeds = 1, .policies = &pol, .n_policies = 1,
                         .whole_gpus_only = true};
    gp_fgd_run *runs;
    size_t n;
    gp_error err;
    assert_int_equal(gp_fgd_run_all(&f->fleet, &f->pods, &cfg, &runs, &n, NULL, &err), GP_OK);
    assert_int_equal(n, 1);
    assert_true(runs[0].pods > 0);
    assert_true(runs[0].monotone);
    free(runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pod_accounted_for),
        cmocka_unit_test(curves_monotone),
        cmocka_unit_test(whole_gpus_only_drops_shares),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
