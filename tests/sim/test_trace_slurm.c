/* test_trace_slurm.c - the Slurm reader: sacct rows, scontrol nodes, the observed run.
 *
 * Semantics under test (sim/trace.h, trace_slurm.c, observed.h): sacct
 * fields found by header in any order; TRES forms gres/gpu=N and
 * gres/gpu:TYPE=N over node=K replicas; Slurm's time forms (1-02:03:04,
 * M:S, UNLIMITED) and timestamps; States with a reason ("CANCELLED by
 * 123"); jobs cancelled while pending skipped and counted, not malformed;
 * TIMEOUT jobs keep their limit; bad rows skipped with their line numbers,
 * never a crash; scontrol nodes become a fleet file the config reader
 * accepts; accounts map to the tenant file's leaves; the observed run
 * measures what Slurm did.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/fleet_file.h"
#include "config/tenant_file.h"
#include "sim/metrics.h"
#include "sim/observed.h"
#include "sim/slurm_compare.h"
#include "sim/trace.h"

static char *write_temp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/gp_slurm_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void read_text(const char *text, gp_trace *t, const gp_trace_read_opts *opts)
{
    gp_trace_init(t);
    gp_error err;
    char *path = write_temp(text);
    assert_int_equal(gp_trace_read_slurm(t, path, opts, &err), GP_OK);
    remove(path);
}

static void durations_in_slurm_forms(void **state)
{
    (void)state;
    int64_t s;
    assert_true(gp_trace_slurm_duration("1-02:03:04", &s));
    assert_int_equal(s, 86400 + 2 * 3600 + 3 * 60 + 4);
    assert_true(gp_trace_slurm_duration("02:03:04", &s));
    assert_int_equal(s, 7384);
    assert_true(gp_trace_slurm_duration("05:06", &s)); /* M:S */
    assert_int_equal(s, 306);
    assert_true(gp_trace_slurm_duration("30", &s)); /* minutes */
    assert_int_equal(s, 1800);
    assert_true(gp_trace_slurm_duration("2-12", &s)); /* D-H */
    assert_int_equal(s, 2 * 86400 + 12 * 3600);
    assert_true(gp_trace_slurm_duration("UNLIMITED", &s));
    assert_int_equal(s, -1);
    assert_false(gp_trace_slurm_duration("Unknown", &s));
    assert_false(gp_trace_slurm_duration("", &s));
    assert_false(gp_trace_slurm_duration("1:2:3:4", &s));
    assert_false(gp_trace_slurm_duration("-5", &s));
    assert_false(gp_trace_slurm_duration("99999999999:00", &s));
    assert_false(gp_trace_slurm_duration("999999999-00:00:00", &s)); /* 2.7 million years: a misreading */
    assert_true(gp_trace_slurm_timestamp("1970-01-02T00:00:01", &s));
    assert_int_equal(s, 86401);
    assert_true(gp_trace_slurm_timestamp("2026-12-08T01:33:20", &s));
    assert_int_equal(s, 1796693600);
    assert_false(gp_trace_slurm_timestamp("Unknown", &s));
    assert_false(gp_trace_slurm_timestamp("None", &s));
    assert_false(gp_trace_slurm_timestamp("2026-13-08T01:33:20", &s));
}

/* Fields in an unusual order; both TRES forms; a gang; a reasoned State. */
static void rows_by_header_any_order(void **state)
{
    (void)state;
    gp_trace t;
    read_text("State|ReqTRES|Elapsed|Start|Submit|Account|JobID|AllocTRES|Timelimit|End\n"
              "COMPLETED|billing=2,cpu=2,mem=8G,node=1,gres/gpu=8|00:10:00|2026-12-01T00:00:05|"
              "2026-12-01T00:00:00|vision|10|cpu=2,gres/gpu=8,gres/gpu:h100=8,node=1|UNLIMITED|2026-12-01T00:10:05\n"
              "CANCELLED by 123|cpu=4,mem=16384,node=2,gres/gpu=16,gres/gpu:a100=16|01:00:00|2026-12-01T00:01:00|"
              "2026-12-01T00:00:30|nlp|11|gres/gpu:a100=16|1-00:00:00|2026-12-01T01:01:00\n"
              "COMPLETED|cpu=1,mem=1G|00:00:30|2026-12-01T00:02:00|2026-12-01T00:02:00|nlp|12|cpu=1|5|2026-12-01T00:02:30\n",
              &t, NULL);
    assert_int_equal(t.rows, 3);
    assert_int_equal(t.n_jobs, 3);
    assert_int_equal(t.malformed, 0);
    const gp_trace_job *j = t.jobs;
    assert_string_equal(t.tenants[j[0].tenant], "vision");
    assert_int_equal(j[0].submit, 0);
    assert_int_equal(j[0].duration, 600);
    assert_int_equal(j[0].replicas, 1);
    assert_int_equal(j[0].gpus, 8);
    assert_int_equal(j[0].type_mask, 0); /* gres/gpu=8: any type */
    assert_int_equal(j[0].cpu_millis, 2000);
    assert_int_equal(j[0].mem_mib, 8192);
    assert_true(j[0].observed);
    assert_int_equal(j[0].observed_start, 5);
    assert_int_equal(j[0].observed_end, 605);
    assert_string_equal(t.types[j[0].observed_type], "h100"); /* from AllocTRES */
    assert_string_equal(t.tenants[j[1].tenant], "nlp");
    assert_int_equal(j[1].replicas, 2); /* a gang of 2 x 8 a100 */
    assert_int_equal(j[1].gpus, 8);
    assert_int_equal(j[1].cpu_millis, 2000);
    assert_int_equal(j[1].mem_mib, 8192);
    assert_string_equal(t.types[__builtin_ctz(j[1].type_mask)], "a100");
    assert_int_equal(j[1].submit, 30);
    assert_int_equal(j[1].observed_start, 60);
    assert_int_equal(j[2].gpus, 0); /* a CPU job */
    assert_int_equal(j[2].duration, 30);
    gp_trace_free(&t);
}

static const char *sacct_header = "JobID|Account|User|Partition|QOS|Submit|Start|End|Elapsed|Timelimit|State|ReqTRES|"
                                  "AllocTRES|NodeList\n";

/* Cancelled while pending, still running: skipped and counted apart;
 * TIMEOUT keeps its limit; steps are not jobs. */
static void never_ran_and_timeouts(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s"
             "1|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|00:02:00|TIMEOUT|"
             "gres/gpu=1,node=1|gres/gpu=1|h1\n"
             "1.batch|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00||"
             "COMPLETED|||h1\n"
             "2|a|u|gpu|normal|2026-12-01T00:00:10|None|2026-12-01T00:00:20|00:00:00|UNLIMITED|CANCELLED by 0|"
             "gres/gpu=1,node=1||None assigned\n"
             "3|a|u|gpu|normal|2026-12-01T00:00:10|Unknown|Unknown|00:00:00|UNLIMITED|PENDING|gres/gpu=1,node=1||\n"
             "4|a|u|gpu|normal|2026-12-01T00:00:10|2026-12-01T00:00:11|Unknown|00:01:00|UNLIMITED|RUNNING|"
             "gres/gpu=1,node=1||h1\n"
             "6|a|u_a|gpu|normal|2026-12-08T01:34:25|2026-12-08T01:34:25|2026-12-08T01:34:25|00:00:00|"
             "Partition_Limit|CANCELLED by 0|billing=2,cpu=2,gres/gpu:h100=1,gres/gpu=1,mem=8G,node=1||None assigned\n"
             "5|b|u|gpu|normal|2026-12-01T00:00:20|2026-12-01T00:00:30|2026-12-01T00:00:40|00:00:10|UNLIMITED|"
             "PREEMPTED|gres/gpu:h100=2,node=1|gres/gpu:h100=2|h1\n",
             sacct_header);
    gp_trace t;
    gp_trace_read_opts ro = {.time_scale = 60};
    read_text(text, &t, &ro);
    assert_int_equal(t.rows, 6);
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.not_run, 4);
    assert_int_equal(t.malformed, 0);
    assert_int_equal(t.jobs[0].duration, 120 * 60); /* TIMEOUT: its limit, scaled */
    assert_int_equal(t.jobs[1].submit, 20 * 60);
    assert_true(t.jobs[1].observed_preempted);
    gp_trace_free(&t);
}

/* sacct lists by job id: a later row may have been submitted earlier.
 * Times count from the earliest Submit, never below 0 (the engine's clock
 * only goes forward). */
static void times_from_earliest_submit(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             "%s"
             "7|a|u|gpu|normal|2026-12-01T00:10:00|2026-12-01T00:10:00|2026-12-01T00:11:00|00:01:00|UNLIMITED|"
             "COMPLETED|gres/gpu=1,node=1|gres/gpu=1|h1\n"
             "6|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:30|2026-12-01T00:01:00|00:00:30|UNLIMITED|"
             "COMPLETED|gres/gpu=1,node=1|gres/gpu=1|h1\n",
             sacct_header);
    gp_trace t;
    gp_trace_read_opts ro = {.time_scale = 2};
    read_text(text, &t, &ro);
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.jobs[0].submit, 1200);
    assert_int_equal(t.jobs[0].observed_start, 1200);
    assert_int_equal(t.jobs[1].submit, 0);
    assert_int_equal(t.jobs[1].observed_start, 60);
    assert_int_equal(t.jobs[1].observed_end, 120);
    gp_trace_free(&t);
}

/* Every kind of bad row is skipped with its line, the read goes on. */
static void bad_rows_skipped_with_lines(void **state)
{
    (void)state;
    char text[4096];
    snprintf(text, sizeof text,
             "%s"
             "1|a|u|gpu|normal|yesterday|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|gres/gpu=1||h1\n"
             "2|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|2 min|1|COMPLETED|"
             "gres/gpu=1||h1\n"
             "3|a|u|gpu\n"
             "4|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|"
             "gres/gpu=3,node=2||h1\n"
             "5|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|"
             "gres/gpu=lots||h1\n"
             "6||u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|"
             "gres/gpu=1||h1\n"
             "10|caf\xc3\xa9\"x|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|"
             "COMPLETED|gres/gpu=1||h1\n"
             "7|a|u|gpu|normal|2026-12-01T00:10:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|"
             "gres/gpu=1||h1\n"
             "9|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|"
             "gres/gpu=1,mem=999999999P||h1\n"
             "8|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:02:00|00:02:00|1|COMPLETED|"
             "gres/gpu=1||h1\n",
             sacct_header);
    char *path = write_temp(text);
    char warnings[4096] = "";
    FILE *warn = fmemopen(warnings, sizeof warnings, "w");
    gp_trace_read_opts ro = {.warn = warn, .max_warnings = 20};
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_slurm(&t, path, &ro, &err), GP_OK);
    fclose(warn);
    assert_int_equal(t.rows, 10);
    assert_int_equal(t.n_jobs, 1);
    assert_int_equal(t.malformed, 9);
    assert_int_equal(t.first_malformed[0], 2);
    assert_int_equal(t.first_malformed[3], 5);
    assert_non_null(strstr(warnings, ":2: Submit \"yesterday\""));
    assert_non_null(strstr(warnings, ":5: ReqTRES asks 3 GPUs on 2 nodes"));
    assert_non_null(strstr(warnings, ":9: times out of order"));
    assert_non_null(strstr(warnings, ":10: ReqTRES item \"mem=999999999P\""));
    assert_non_null(strstr(warnings, ":8: Account \"caf"));
    gp_trace_free(&t);
    gp_trace_init(&t);
    ro = (gp_trace_read_opts){.strict = true};
    assert_int_equal(gp_trace_read_slurm(&t, path, &ro, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, ":2: Submit"));
    gp_trace_free(&t);
    remove(path);
}

static void header_without_a_required_field(void **state)
{
    (void)state;
    char *path = write_temp("JobID|Account|Submit|Start|Elapsed|State\n1|a|x|y|z|COMPLETED\n");
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_slurm(&t, path, NULL, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, "no field ReqTRES"));
    gp_trace_free(&t);
    remove(path);
}

static void nodes_to_fleet(void **state)
{
    (void)state;
    char *path = write_temp(
        "NodeName=h1 Arch=x86_64 CPUTot=64 AvailableFeatures=h100,ib Gres=gpu:h100:8(S:0-1) RealMemory=512000 "
        "State=IDLE\n"
        "NodeName=a1 CPUTot=32 AvailableFeatures=(null) Gres=gpu:4 RealMemory=256000 State=DOWN+DRAIN\n"
        "NodeName=c1 CPUTot=32 Gres=(null) RealMemory=1000 State=IDLE\n"
        "NodeName=x1 CPUTot=32 Gres=gpu:h100:4,gpu:a100:4 RealMemory=1000 State=IDLE\n"
        "Arch=x86_64 CPUTot=2\n");
    char *yaml = NULL;
    size_t cpu_nodes = 0;
    gp_error err;
    gp_trace_read_opts ro = {0};
    assert_int_equal(gp_trace_slurm_fleet_yaml(path, &ro, &yaml, &cpu_nodes, &err), GP_OK);
    assert_int_equal(cpu_nodes, 1);
    gp_fleet_file fleet;
    assert_int_equal(gp_fleet_file_parse(yaml, strlen(yaml), "nodes", &fleet, &err), GP_OK);
    assert_int_equal(fleet.n_nodes, 2);
    assert_string_equal(fleet.nodes[0].gpu_type, "h100");
    assert_int_equal(fleet.nodes[0].gpu_count, 8);
    assert_int_equal(fleet.nodes[0].cpu_millis, 64000);
    assert_int_equal(fleet.nodes[0].mem_mib, 512000);
    assert_string_equal(fleet.nodes[1].gpu_type, "gpu");
    gp_fleet_file_free(&fleet);
    free(yaml);
    remove(path);
}

static void accounts_map_to_tenant_leaves(void **state)
{
    (void)state;
    gp_trace t;
    gp_trace_init(&t);
    uint16_t i;
    assert_true(gp_trace_tenant(&t, "vision", &i));
    assert_true(gp_trace_tenant(&t, "infra", &i));
    assert_true(gp_trace_tenant(&t, "twice", &i));
    const char *yaml = "tenants:\n  - {path: research}\n  - {path: research/vision, guarantee: {gpu: {h100: 8}}}\n"
                       "  - {path: a}\n  - {path: a/twice}\n  - {path: b}\n  - {path: b/twice}\n";
    gp_tenant_file tf;
    gp_error err;
    assert_int_equal(gp_tenant_file_parse(yaml, strlen(yaml), "tenants", &tf, &err), GP_OK);
    assert_int_equal(gp_trace_slurm_map_accounts(&t, &tf), 1);
    assert_string_equal(t.tenants[0], "research/vision");
    assert_string_equal(t.tenants[1], "infra");
    assert_string_equal(t.tenants[2], "twice"); /* ambiguous: kept */
    char *generated;
    assert_int_equal(gp_trace_slurm_tenants_yaml(&t, &generated, &err), GP_OK);
    gp_tenant_file_free(&tf);
    gp_trace_free(&t);
    /* without a tenant file: one tenant per account, weight 1 */
    gp_trace_init(&t);
    assert_true(gp_trace_tenant(&t, "vision", &i));
    free(generated);
    assert_int_equal(gp_trace_slurm_tenants_yaml(&t, &generated, &err), GP_OK);
    assert_int_equal(gp_tenant_file_parse(generated, strlen(generated), "generated", &tf, &err), GP_OK);
    assert_int_equal(tf.n_tenants, 1);
    assert_string_equal(tf.tenants[0].path, "vision");
    free(generated);
    gp_tenant_file_free(&tf);
    gp_trace_free(&t);
}

/* The world of the observed-run tests: rows after the sacct header, one
 * node of 8 h100, tenants_yaml or none; samples every step seconds. */
typedef struct observed_world {
    gp_trace t;
    gp_fleet_file fleet;
    gp_tenant_file tf;
    bool have_tf;
    gp_sim_result r;
} observed_world;

static void observe(observed_world *w, const char *rows, const char *tenants_yaml, int64_t step)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", sacct_header, rows);
    read_text(text, &w->t, NULL);
    gp_error err;
    assert_int_equal(gp_trace_sort(&w->t, &err), GP_OK);
    const char *fy = "nodes:\n  - {name: h1, gpu_type: h100, gpus: 8}\n";
    assert_int_equal(gp_fleet_file_parse(fy, strlen(fy), "fleet", &w->fleet, &err), GP_OK);
    w->have_tf = tenants_yaml != NULL;
    if (w->have_tf)
        assert_int_equal(gp_tenant_file_parse(tenants_yaml, strlen(tenants_yaml), "tenants", &w->tf, &err), GP_OK);
    gp_sim_setup setup = {.fleet = &w->fleet, .tenants = w->have_tf ? &w->tf : NULL, .trace = &w->t};
    gp_sim_options opt = gp_sim_options_default();
    opt.sample_interval_s = step;
    assert_int_equal(gp_sim_observed(&setup, &opt, "slurm", &w->r, &err), GP_OK);
}

static void observed_world_free(observed_world *w)
{
    gp_sim_result_free(&w->r);
    if (w->have_tf)
        gp_tenant_file_free(&w->tf);
    gp_fleet_file_free(&w->fleet);
    gp_trace_free(&w->t);
}

/* The observed run: waits are Start - Submit, a preempted job's run is lost. */
static void observed_run_measures_slurm(void **state)
{
    (void)state;
    observed_world w;
    observe(&w,
            "1|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:01:40|00:01:40|UNLIMITED|"
            "COMPLETED|gres/gpu=8,node=1|gres/gpu:h100=8|h1\n"
            "2|b|u|gpu|normal|2026-12-01T00:00:10|2026-12-01T00:01:40|2026-12-01T00:02:40|00:01:00|UNLIMITED|"
            "PREEMPTED|gres/gpu=4,node=1|gres/gpu:h100=4|h1\n",
            NULL, 0);
    assert_int_equal(w.r.jobs[0].wait_s, 0);
    assert_int_equal(w.r.jobs[1].wait_s, 90);
    assert_int_equal(w.r.jobs[1].preemptions, 1);
    assert_int_equal(w.r.jobs[1].lost_gpu_s, 240);
    gp_sim_metrics m;
    gp_error err;
    assert_int_equal(gp_sim_metrics_compute(&w.r, &w.t, GP_SIM_ALL_GROUPS, &m, &err), GP_OK);
    assert_float_equal(m.allocation_pct, 100.0, 1e-9); /* 8 of 8 over [0, 10] */
    assert_int_equal(m.preemptions, 1);
    observed_world_free(&w);
}

/* Attainment: a (guarantee 4) waits 50 s of its 100 s for b's job on a
 * fleet of 8: it got half of what its guarantee promised. */
static void attainment_of_a_waiting_guarantee(void **state)
{
    (void)state;
    observed_world w;
    observe(&w,
            "1|b|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:50|00:00:50|UNLIMITED|"
            "COMPLETED|gres/gpu=8,node=1|gres/gpu:h100=8|h1\n"
            "2|a|u|gpu|normal|2026-12-01T00:00:00|2026-12-01T00:00:50|2026-12-01T00:01:40|00:00:50|UNLIMITED|"
            "COMPLETED|gres/gpu=4,node=1|gres/gpu:h100=4|h1\n"
            "3|b|u|gpu|normal|2026-12-01T00:01:40|2026-12-01T00:01:40|2026-12-01T00:01:41|00:00:01|UNLIMITED|"
            "COMPLETED|gres/gpu=1,node=1|gres/gpu:h100=1|h1\n",
            "tenants:\n  - {path: a, guarantee: {gpu: {h100: 4}}}\n  - {path: b}\n", 10);
    double promised[4], attained[4];
    gp_error err;
    assert_true(w.r.n_groups <= 4);
    assert_int_equal(gp_sim_attainment_sums(&w.r, &w.t, promised, attained, &err), GP_OK);
    size_t a = strcmp(w.r.groups[0], "a") == 0 ? 0 : 1;
    assert_string_equal(w.r.groups[a], "a");
    assert_float_equal(attained[a] / promised[a], 0.5, 1e-9);
    assert_float_equal(promised[1 - a], 0, 0); /* b has no guarantee: promised nothing */
    observed_world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_in_slurm_forms),
        cmocka_unit_test(rows_by_header_any_order),
        cmocka_unit_test(never_ran_and_timeouts),
        cmocka_unit_test(times_from_earliest_submit),
        cmocka_unit_test(bad_rows_skipped_with_lines),
        cmocka_unit_test(header_without_a_required_field),
        cmocka_unit_test(nodes_to_fleet),
        cmocka_unit_test(accounts_map_to_tenant_leaves),
        cmocka_unit_test(observed_run_measures_slurm),
        cmocka_unit_test(attainment_of_a_waiting_guarantee),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
