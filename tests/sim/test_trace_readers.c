/* test_trace_readers.c - openb and ITP readers, malformed rows, sorting.
 *
 * Semantics under test (sim/trace.h): columns found by header name; openb
 * pods become one replica of whole GPUs, an MPS share (num_gpu 1,
 * gpu_milli < 1000) or a CPU-only job, gpu_spec "A|B" a type mask;
 * durations from deletion - scheduled; ITP jobs over 8 GPUs become gangs;
 * a malformed row is reported "FILE:LINE: why", skipped and counted, or
 * fatal with strict; openb node lists become a fleet file the config
 * reader accepts.  The real files under data/ read without a bad row.
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
#include "sim/trace.h"

static char *write_temp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/gp_trace_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *openb_header =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n";

static void openb_pods(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             "%s"
             "p0,88000,327680,8,1000,,Burstable,Succeeded,100,1100,150\n"
             "p1,4000,15258,1,220,,BE,Running,50,400,60\n"
             "p2,16000,32768,1,1000,V100M16|V100M32,LS,Running,70,575,75\n"
             "p3,2000,4096,0,0,nan,LS,Running,80,90,\n",
             openb_header);
    char *path = write_temp(text);
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_openb(&t, path, NULL, &err), GP_OK);
    assert_int_equal(t.n_jobs, 4);
    assert_int_equal(t.rows, 4);
    assert_int_equal(t.malformed, 0);
    assert_string_equal(t.tenants[0], "openb");
    const gp_trace_job *j = t.jobs;
    assert_int_equal(j[0].gpus, 8);
    assert_int_equal(j[0].gpu_milli, 0);
    assert_int_equal(j[0].duration, 950);
    assert_int_equal(j[0].cpu_millis, 88000);
    assert_int_equal(j[1].gpus, 1);
    assert_int_equal(j[1].gpu_milli, 220);
    assert_int_equal(j[1].isolation, GP_ISO_MPS);
    assert_int_equal(j[2].type_mask, 3);
    assert_string_equal(t.types[0], "V100M16");
    assert_string_equal(t.types[1], "V100M32");
    assert_int_equal(j[2].kind, GP_KIND_INFERENCE);
    assert_int_equal(j[3].gpus, 0);
    assert_int_equal(j[3].duration, 10); /* never scheduled: from creation */
    assert_int_equal(gp_trace_job_milli(&j[0]), 8000);
    assert_int_equal(gp_trace_job_milli(&j[1]), 220);
    assert_int_equal(gp_trace_sort(&t, &err), GP_OK);
    assert_int_equal(t.jobs[0].submit, 50);
    assert_int_equal(t.jobs[0].id, 1);
    assert_int_equal(t.jobs[3].submit, 100);
    gp_trace_free(&t);
    remove(path);
}

/* Each malformed row is skipped and counted; the good ones are kept. */
static void openb_malformed_rows_skipped(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             "%s"
             "ok,1000,100,1,1000,,LS,Running,0,10,0\n"
             "cols,1000,100,1,1000,,LS,Running,0,10\n"
             "num,abc,100,1,1000,,LS,Running,0,10,0\n"
             "share,1000,100,2,500,,LS,Running,0,10,0\n"
             "time,1000,100,1,1000,,LS,Running,20,10,0\n"
             "range,1000,100,17,1000,,LS,Running,0,10,0\n"
             "frac,1000,100,1,1000,,LS,Running,0,10.5,0\n"
             "ok2,1000,100,1,1000,,LS,Running,0,10.0,0\n",
             openb_header);
    char *path = write_temp(text);
    FILE *warn = tmpfile();
    gp_trace_read_opts opts = {.strict = false, .warn = warn, .max_warnings = 3};
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_openb(&t, path, &opts, &err), GP_OK);
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.rows, 8);
    assert_int_equal(t.malformed, 6);
    rewind(warn);
    char line[512];
    assert_non_null(fgets(line, sizeof line, warn));
    char want[128];
    snprintf(want, sizeof want, "%s:3: ", path);
    assert_memory_equal(line, want, strlen(want));
    assert_non_null(strstr(line, "columns"));
    int lines = 1;
    while (fgets(line, sizeof line, warn))
        lines++;
    assert_int_equal(lines, 4); /* 3 reported, then one "more ... without a message" */
    fclose(warn);
    gp_trace_free(&t);
    remove(path);
}

static void openb_malformed_row_strict(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "%sok,1000,100,1,1000,,LS,Running,0,10,0\nbad,1000,100,x,1000,,LS,Running,0,10,0\n",
             openb_header);
    char *path = write_temp(text);
    gp_trace_read_opts opts = {.strict = true};
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_openb(&t, path, &opts, &err), GP_ERR_INVALID);
    char want[128];
    snprintf(want, sizeof want, "%s:3: num_gpu", path);
    assert_memory_equal(err.message, want, strlen(want));
    gp_trace_free(&t);
    remove(path);
}

static void openb_missing_column(void **state)
{
    (void)state;
    char *path = write_temp("name,cpu_milli\nx,1\n");
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_openb(&t, path, NULL, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, ":1: the header has no column memory_mib"));
    gp_trace_free(&t);
    remove(path);
}

/* The multigpu lists have only five columns: row order, no departures. */
static void openb_five_columns(void **state)
{
    (void)state;
    char *path = write_temp("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                            "a,12000,16384,1,1000\n"
                            "b,6000,12288,1,460\n");
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    assert_int_equal(gp_trace_read_openb(&t, path, NULL, &err), GP_OK);
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.jobs[0].submit, 1);
    assert_int_equal(t.jobs[1].submit, 2);
    assert_int_equal(t.jobs[1].duration, -1);
    assert_int_equal(t.jobs[1].gpu_milli, 460);
    assert_int_equal(t.jobs[0].type_mask, 0);
    gp_trace_free(&t);
    remove(path);
}

static void openb_nodes_to_fleet(void **state)
{
    (void)state;
    char *path = write_temp("sn,cpu_milli,memory_mib,gpu,model\n"
                            "n0,64000,262144,2,P100\n"
                            "cpu,32000,262144,0,nan\n"
                            "n1,96000,393216,8,G2\n"
                            "bad,96000,393216,eight,G2\n");
    char *yaml;
    size_t cpu_nodes = 0;
    gp_error err;
    gp_trace_read_opts opts = {.strict = false};
    assert_int_equal(gp_trace_openb_fleet_yaml(path, &opts, &yaml, &cpu_nodes, &err), GP_OK);
    assert_int_equal(cpu_nodes, 1);
    gp_fleet_file f;
    assert_int_equal(gp_fleet_file_parse(yaml, strlen(yaml), "gen", &f, &err), GP_OK);
    assert_int_equal(f.n_nodes, 2);
    assert_string_equal(f.nodes[1].name, "n1");
    assert_string_equal(f.nodes[1].gpu_type, "G2");
    assert_int_equal(f.nodes[1].gpu_count, 8);
    assert_int_equal(f.nodes[1].cpu_millis, 96000);
    assert_int_equal(f.nodes[1].sharing, GP_SHARING_MPS);
    gp_fleet_file_free(&f);
    free(yaml);
    opts.strict = true;
    assert_int_equal(gp_trace_openb_fleet_yaml(path, &opts, &yaml, NULL, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, ":5: gpu must be"));
    remove(path);
}

static void itp_jobs_and_gangs(void **state)
{
    (void)state;
    char *path = write_temp("job_id,submission_time,duration,num_gpu\n"
                            "a,100,3890,4\n"
                            "b,50,10,64\n"
                            "c,60,10,12\n"
                            "d,70,10,0\n"
                            "e,-5,10,1\n"
                            "f,80,x,1\n"
                            "g,90,10\n");
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    gp_trace_read_opts opts = {.strict = false};
    assert_int_equal(gp_trace_read_itp(&t, path, &opts, &err), GP_OK);
    assert_int_equal(t.n_jobs, 3);
    assert_int_equal(t.malformed, 4);
    assert_string_equal(t.tenants[0] + 4, strrchr(path, '/') + 1); /* itp/<file name> */
    assert_int_equal(t.jobs[0].replicas, 1);
    assert_int_equal(t.jobs[0].gpus, 4);
    assert_int_equal(t.jobs[0].duration, 3890);
    assert_int_equal(t.jobs[1].replicas, 8);
    assert_int_equal(t.jobs[1].gpus, 8);
    assert_int_equal(t.jobs[2].replicas, 2);
    assert_int_equal(t.jobs[2].gpus, 6);
    opts.tenant = "team-x";
    gp_trace u;
    gp_trace_init(&u);
    assert_int_equal(gp_trace_read_itp(&u, path, &opts, &err), GP_OK);
    assert_string_equal(u.tenants[0], "team-x");
    gp_trace_free(&u);
    gp_trace_free(&t);
    remove(path);
}

static void real_files_read_cleanly(void **state)
{
    (void)state;
    gp_trace t;
    gp_trace_init(&t);
    gp_error err;
    gp_trace_read_opts strict = {.strict = true};
    assert_int_equal(gp_trace_read_openb(&t, GP_SOURCE_DIR "/data/alibaba-openb/openb_pod_list_default.csv", &strict,
                                         &err),
                     GP_OK);
    assert_int_equal(t.n_jobs, 8152);
    assert_int_equal(gp_trace_read_itp(&t, GP_SOURCE_DIR "/data/microsoft-itp/cluster01.csv", &strict, &err), GP_OK);
    assert_int_equal(t.n_jobs, 8152 + 1595);
    assert_int_equal(t.n_tenants, 2);
    assert_string_equal(t.tenants[1], "itp/cluster01");
    char *yaml;
    assert_int_equal(gp_trace_openb_fleet_yaml(GP_SOURCE_DIR "/data/alibaba-openb/openb_node_list_gpu_node.csv",
                                               &strict, &yaml, NULL, &err),
                     GP_OK);
    gp_fleet_file f;
    assert_int_equal(gp_fleet_file_parse(yaml, strlen(yaml), "gen", &f, &err), GP_OK);
    assert_int_equal(f.n_nodes, 1213);
    int64_t gpus = 0;
    for (size_t n = 0; n < f.n_nodes; n++)
        gpus += f.nodes[n].gpu_count;
    assert_int_equal(gpus, 6212);
    gp_fleet_file_free(&f);
    free(yaml);
    gp_trace_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(openb_pods),          cmocka_unit_test(openb_malformed_rows_skipped),
        cmocka_unit_test(openb_malformed_row_strict), cmocka_unit_test(openb_missing_column),
        cmocka_unit_test(openb_five_columns),  cmocka_unit_test(openb_nodes_to_fleet),
        cmocka_unit_test(itp_jobs_and_gangs),
        cmocka_unit_test(real_files_read_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
