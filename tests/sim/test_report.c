/* test_report.c - metrics, the summary line, report.json and the CSV files.
 *
 * The run is the static-partitioning scenario of test_baselines.c (waits
 * 0, 100, 0; ends 100, 200, 60; 4 GPUs in use over the arrival window
 * 0..10 of an 8-GPU fleet), so every figure is known by hand:
 * mean wait 33.3 s, p50 0, p99 100 (nearest rank), mean JCT 116.7 s,
 * allocation 50 %, 2 jobs within guarantee with a p99 wait of 0.
 * The summary line and report.json must parse as JSON (jansson).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "sim/metrics.h"
#include "sim/report.h"

typedef struct fixture {
    gp_fleet_file fleet;
    gp_tenant_file tenants;
    gp_trace trace;
    gp_sim_options opt;
    gp_sim_result result;
} fixture;

static void add_job(gp_trace *t, const char *tenant, int64_t submit, int64_t duration)
{
    gp_trace_job j;
    memset(&j, 0, sizeof j);
    assert_true(gp_trace_tenant(t, tenant, &j.tenant));
    j.submit = submit;
    j.duration = duration;
    j.replicas = 1;
    j.gpus = 4;
    assert_int_equal(gp_trace_add(t, &j, NULL), GP_OK);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *fleet = "nodes: [{name: n, gpu_type: H100, gpus: 8}]\n";
    const char *tenants = "tenants:\n  - {path: a, guarantee: {gpu: {H100: 4}}}\n"
                          "  - {path: b, guarantee: {gpu: {H100: 4}}}\n";
    gp_error err;
    assert_int_equal(gp_fleet_file_parse(fleet, strlen(fleet), "f", &f->fleet, &err), GP_OK);
    assert_int_equal(gp_tenant_file_parse(tenants, strlen(tenants), "t", &f->tenants, &err), GP_OK);
    gp_trace_init(&f->trace);
    add_job(&f->trace, "b", 0, 100);
    add_job(&f->trace, "b", 0, 100);
    add_job(&f->trace, "a", 10, 50);
    gp_sim_policy p;
    assert_true(gp_sim_policy_parse("static", &p));
    f->opt = gp_sim_options_default();
    f->opt.sample_interval_s = 5;
    gp_sim_setup s = {.fleet = &f->fleet, .tenants = &f->tenants, .trace = &f->trace};
    assert_int_equal(gp_sim_run(&s, &p, &f->opt, &f->result, &err), GP_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gp_sim_result_free(&f->result);
    gp_fleet_file_free(&f->fleet);
    gp_tenant_file_free(&f->tenants);
    gp_trace_free(&f->trace);
    free(f);
    return 0;
}

static void overall_metrics(void **state)
{
    fixture *f = *state;
    gp_sim_metrics m;
    assert_int_equal(gp_sim_metrics_compute(&f->result, &f->trace, GP_SIM_ALL_GROUPS, &m, NULL), GP_OK);
    assert_int_equal(m.jobs, 3);
    assert_int_equal(m.done, 3);
    assert_float_equal(m.mean_wait_s, 100.0 / 3, 1e-9);
    assert_float_equal(m.p50_wait_s, 0, 1e-9);
    assert_float_equal(m.p99_wait_s, 100, 1e-9);
    assert_float_equal(m.mean_jct_s, 350.0 / 3, 1e-9);
    assert_float_equal(m.allocation_pct, 50, 1e-9);
    assert_int_equal(m.within_jobs, 2);
    assert_float_equal(m.within_p99_wait_s, 0, 1e-9);
    assert_float_equal(m.guarantee_gpus, 8, 1e-9);
}

static void group_metrics(void **state)
{
    fixture *f = *state;
    const gp_sim_result *r = &f->result;
    size_t b = strcmp(r->groups[0], "b") == 0 ? 0 : 1;
    gp_sim_metrics m;
    assert_int_equal(gp_sim_metrics_compute(r, &f->trace, b, &m, NULL), GP_OK);
    assert_int_equal(m.jobs, 2);
    assert_float_equal(m.mean_wait_s, 50, 1e-9);
    assert_float_equal(m.guarantee_gpus, 4, 1e-9);
    assert_float_equal(m.mean_usage_gpus, 4, 1e-9); /* b used 4 GPUs over the window */
    assert_float_equal(m.allocation_pct, 0, 1e-9);
}

static void fgd_curve(void **state)
{
    (void)state;
    int64_t arrived[4] = {500, 900, 1500, 2000}, allocated[4] = {500, 900, 1000, 1000};
    gp_sim_result r;
    memset(&r, 0, sizeof r);
    r.capacity_milli = 1000;
    r.arrival_arrived = arrived;
    r.arrival_allocated = allocated;
    r.n_arrivals = 4;
    double curve[GP_SIM_CURVE_BINS];
    bool have[GP_SIM_CURVE_BINS];
    gp_sim_alloc_curve(&r, curve, have);
    assert_true(have[50] && have[90]);
    assert_false(have[100]);
    assert_float_equal(curve[90], 90, 1e-9);
    assert_float_equal(gp_sim_curve_at(curve, have, 100), 90, 1e-9); /* last bin below */
    assert_float_equal(gp_sim_curve_at(curve, have, 30), -1, 1e-9);
    double v[4] = {3, 1, 2, 10};
    assert_float_equal(gp_sim_median(v, 4), 2.5, 1e-9);
}

static void summary_is_json(void **state)
{
    fixture *f = *state;
    gp_sim_run_set rs = {.trace_desc = "test \"trace\"", .seed = 7, .trace = &f->trace, .options = &f->opt,
                         .results = &f->result, .n_results = 1};
    FILE *out = tmpfile();
    assert_int_equal(gp_sim_report_summary(out, &rs, NULL), GP_OK);
    rewind(out);
    char line[8192];
    assert_non_null(fgets(line, sizeof line, out));
    assert_null(fgets(line + strlen(line), (int)(sizeof line - strlen(line)), out)); /* one line */
    fclose(out);
    json_error_t jerr;
    json_t *root = json_loads(line, 0, &jerr);
    if (!root)
        fail_msg("summary is not JSON: %s: %s", jerr.text, line);
    assert_string_equal(json_string_value(json_object_get(root, "trace")), "test \"trace\"");
    json_t *run = json_array_get(json_object_get(root, "runs"), 0);
    assert_string_equal(json_string_value(json_object_get(run, "policy")), "static");
    assert_float_equal(json_number_value(json_object_get(run, "allocation_pct")), 50, 1e-3);
    assert_int_equal(json_integer_value(json_object_get(run, "jobs")), 3);
    json_decref(root);
}

static void report_files(void **state)
{
    fixture *f = *state;
    char dir[] = "/tmp/gp_report_test_XXXXXX";
    assert_non_null(mkdtemp(dir));
    gp_sim_run_set rs = {.trace_desc = "t", .seed = 1, .trace = &f->trace, .options = &f->opt,
                         .results = &f->result, .n_results = 1};
    gp_error err;
    assert_int_equal(gp_sim_report_write(dir, &rs, &err), GP_OK);
    const char *files[] = {"report.json",        "summary.csv",        "timeseries-static.csv", "waits-static.csv", "usage-static.csv",
                           "groups-static.csv",  "alloc_vs_load.csv",     "alloc_vs_load.gp", "wait_cdf.gp",
                           "fragmentation.gp",   "team_usage-static.gp", "share-static.csv", "share_days-static.csv"};
    char path[256];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        struct stat st;
        if (stat(path, &st) != 0 || st.st_size == 0)
            fail_msg("%s is missing or empty", files[i]);
    }
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        fail_msg("report.json: %s (line %d)", jerr.text, jerr.line);
    json_t *run = json_array_get(json_object_get(root, "runs"), 0);
    json_t *groups = json_object_get(run, "groups");
    assert_int_equal(json_array_size(groups), 2);
    assert_non_null(json_object_get(run, "share_jain_day_mean")); /* share.h, finish_time.h */
    assert_non_null(json_object_get(run, "ftf_p95"));
    assert_non_null(json_object_get(json_array_get(groups, 0), "share_ratio"));
    json_decref(root);
    snprintf(path, sizeof path, "%s/waits-static.csv", dir);
    FILE *w = fopen(path, "r");
    char line[128];
    int rows = 0;
    while (fgets(line, sizeof line, w))
        rows++;
    fclose(w);
    assert_int_equal(rows, 4); /* header + 3 jobs */
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overall_metrics), cmocka_unit_test(group_metrics), cmocka_unit_test(fgd_curve),
        cmocka_unit_test(summary_is_json), cmocka_unit_test(report_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
