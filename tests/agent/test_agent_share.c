/* test_agent_share.c - GPU memory shares (agent/agent_share.h): processes
 * mapped to replicas by cgroup and by ancestry in a /proc tree of the
 * test's own, sums per replica on its GPU, caps; the MPS client
 * environment (agent/agent_mps.h); dcgm-exporter's job map
 * (agent/agent_dcgm.h). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_dcgm.h"
#include "agent/agent_mps.h"
#include "agent/agent_share.h"
#include "agent/supervise/agent_state.h"

typedef struct fixture {
    char root[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->root, sizeof f->root, "/tmp/gp-share-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->root);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *o = fopen(path, "w");
    assert_non_null(o);
    fputs(text, o);
    fclose(o);
}

/* ROOT/PID/stat (parent ppid, a command with a space and a ')') and ROOT/PID/cgroup. */
static void fake_process(const fixture *f, int pid, int ppid, const char *cgroup)
{
    char path[256], text[256];
    snprintf(path, sizeof path, "%s/%d", f->root, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%d/stat", f->root, pid);
    snprintf(text, sizeof text, "%d (py thon) x) S %d %d %d 0 -1\n", pid, ppid, pid, pid);
    write_file(path, text);
    snprintf(path, sizeof path, "%s/%d/cgroup", f->root, pid);
    write_file(path, cgroup);
}

static gp_gpu_process proc(int pid, const char *uuid, int64_t mib)
{
    gp_gpu_process p = {.pid = pid, .memory_used_mib = mib, .sm_active_pct = -1};
    snprintf(p.uuid, sizeof p.uuid, "%s", uuid);
    return p;
}

static void a_process_belongs_to_the_replica_whose_cgroup_it_is_in(void **state)
{
    fixture *f = *state;
    fake_process(f, 500, 1, "12:memory:/gpupool/job7-r0-100\n0::/gpupool/job7-r0-100/sub\n");
    fake_process(f, 600, 1, "0::/gpupool/job7-r0-1000\n"); /* a name that only starts like it */
    gp_share_replica r[] = {{.cgroup = "job8-r0-100", .pid = 0}, {.cgroup = "job7-r0-100", .pid = 0}};
    assert_int_equal(gp_share_owner(f->root, 500, r, 2), 1);
    assert_int_equal(gp_share_owner(f->root, 600, r, 2), -1);
}

static void without_a_cgroup_a_process_belongs_to_the_replica_among_its_ancestors(void **state)
{
    fixture *f = *state;
    fake_process(f, 4242, 4200, "0::/\n");  /* the replica's main process */
    fake_process(f, 4250, 4242, "0::/\n");  /* its child */
    fake_process(f, 4260, 4250, "0::/\n");  /* its grandchild */
    fake_process(f, 5100, 1, "0::/\n");     /* nobody's */
    gp_share_replica r[] = {{.pid = 9999}, {.pid = 4242}};
    assert_int_equal(gp_share_owner(f->root, 4242, r, 2), 1);
    assert_int_equal(gp_share_owner(f->root, 4260, r, 2), 1);
    assert_int_equal(gp_share_owner(f->root, 5100, r, 2), -1);
    assert_int_equal(gp_share_owner(f->root, 31337, r, 2), -1); /* gone */
}

static void the_sum_counts_a_replicas_processes_on_its_gpu_and_the_cap_finds_who_is_over(void **state)
{
    fixture *f = *state;
    fake_process(f, 4242, 1, "0::/\n");
    fake_process(f, 4250, 4242, "0::/\n");
    fake_process(f, 5100, 1, "0::/\n");
    static gp_telemetry t;
    t.processes[t.n_processes++] = proc(4242, "GPU-a", 30000);
    t.processes[t.n_processes++] = proc(4250, "GPU-a", 12000);
    t.processes[t.n_processes++] = proc(4250, "GPU-b", 50000); /* another GPU: not this cap's */
    t.processes[t.n_processes++] = proc(5100, "GPU-a", 9000);
    t.processes[t.n_processes++] = proc(5100, "GPU-a", -1);    /* unknown: counts 0 */
    int64_t h100 = 81559;
    gp_share_replica r[] = {
        {.pid = 4242, .uuid = "GPU-a", .cap_mib = gp_share_memory_mib(500, h100)},
        {.pid = 5100, .uuid = "GPU-a", .cap_mib = gp_share_memory_mib(250, h100)},
    };
    assert_int_equal(r[0].cap_mib, 40779);
    assert_int_equal(r[1].cap_mib, 20389);
    gp_share_sum(f->root, &t, r, 2);
    assert_int_equal(r[0].used_mib, 42000);
    assert_int_equal(r[1].used_mib, 9000);
    assert_true(gp_share_over(&r[0]));
    assert_false(gp_share_over(&r[1]));
    r[1].used_mib = r[1].cap_mib; /* at the share is not over it */
    assert_false(gp_share_over(&r[1]));
    gp_share_replica whole = {.cap_mib = GP_SHARE_NO_CAP, .used_mib = 80000};
    assert_false(gp_share_over(&whole));
}

static void an_mps_client_gets_its_thread_percentage_and_pinned_limit(void **state)
{
    (void)state;
    gp_env e = {0};
    assert_int_equal(gp_mps_client_env(&e, "/var/lib/gpupool/h100-1", "GPU-a", 250, gp_share_memory_mib(250, 81559), NULL), GP_OK);
    assert_string_equal(gp_env_get(&e, "CUDA_MPS_PIPE_DIRECTORY"), "/var/lib/gpupool/h100-1/mps/a/pipe");
    assert_string_equal(gp_env_get(&e, "CUDA_MPS_LOG_DIRECTORY"), "/var/lib/gpupool/h100-1/mps/a/log");
    assert_string_equal(gp_env_get(&e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
    assert_string_equal(gp_env_get(&e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20389M");
    gp_env_free(&e);
    assert_int_equal(gp_mps_thread_percentage(333), 34); /* rounded up */
    assert_int_equal(gp_mps_thread_percentage(1), 1);
    assert_int_equal(gp_mps_thread_percentage(1000), 100);
}

/* The stand-in nvidia-cuda-mps-control (GP_MPS_STAND_IN, tests/support/
 * mps_control_stand_in.py): a SOCK_SEQPACKET socket PIPE/control as the
 * real daemon's, which its daemon listens on 0.2 s after -d returns (so
 * the start's wait is tested); it records its start and each command in
 * LOG/control.log and ends at quit. */
static void wait_until_gone(const char *pipe_dir)
{
    for (int i = 0; i < 500 && gp_mps_answers(pipe_dir); i++)
        usleep(10000);
}

static void a_gpus_daemon_starts_once_answers_and_quits(void **state)
{
    fixture *f = *state;
    const char *control = GP_MPS_STAND_IN;
    char pipe[GP_STATE_PATH_MAX], log[GP_STATE_PATH_MAX], text[256], want[GP_STATE_PATH_MAX + 32];
    gp_mps_dirs(f->root, "GPU-a", pipe, log, sizeof pipe);
    assert_false(gp_mps_answers(pipe));
    gp_error err = {0};
    assert_int_equal(gp_mps_start(control, f->root, "GPU-a", &err), GP_OK); /* waited until it answers */
    assert_true(gp_mps_answers(pipe));
    assert_int_equal(gp_mps_start(control, f->root, "GPU-a", &err), GP_OK); /* answers: adopted, not again */
    assert_int_equal(gp_mps_quit(control, f->root, "GPU-a", &err), GP_OK);
    wait_until_gone(pipe);
    assert_false(gp_mps_answers(pipe));
    char path[GP_STATE_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/control.log", log);
    assert_true(gp_state_read(path, text, sizeof text));
    snprintf(want, sizeof want, "start GPU-a %s\nquit\n", pipe);
    assert_string_equal(text, want);
    assert_int_equal(gp_mps_quit(control, f->root, "GPU-a", &err), GP_OK); /* none: nothing to do */
}

/* MPS makes sockets in its pipe folder (control_privileged the longest
 * name), and a socket's path holds 107 bytes: on the H100 a daemon with a
 * 91-byte pipe folder named after the whole UUID died at start.  The
 * folder is named after the UUID's last group, and one still too long is
 * refused before any daemon starts or any client is told of it. */
static void the_pipe_folder_is_short_and_one_too_long_is_refused(void **state)
{
    fixture *f = *state;
    const char *uuid = "GPU-6643670c-0bbc-0df0-4a6f-c79480238824";
    char pipe[GP_STATE_PATH_MAX], log[GP_STATE_PATH_MAX];
    gp_mps_dirs("/tmp/gpupool-gpu-8ehz2s5j/agent/gpu-0-mps", uuid, pipe, log, sizeof pipe);
    assert_string_equal(pipe, "/tmp/gpupool-gpu-8ehz2s5j/agent/gpu-0-mps/mps/c79480238824/pipe");
    assert_string_equal(log, "/tmp/gpupool-gpu-8ehz2s5j/agent/gpu-0-mps/mps/c79480238824/log");

    char node_dir[GP_STATE_PATH_MAX], control[GP_STATE_PATH_MAX + 16], ran[GP_STATE_PATH_MAX + 16];
    snprintf(node_dir, sizeof node_dir, "%s/a-state-folder-long-enough-that-mps-sockets-would-not-fit/n1", f->root);
    gp_mps_dirs(node_dir, uuid, pipe, log, sizeof pipe);
    assert_true(strlen(pipe) > GP_MPS_PIPE_MAX);
    snprintf(ran, sizeof ran, "%s/ran", f->root);
    snprintf(control, sizeof control, "%s/mps-control", f->root);
    char script[GP_STATE_PATH_MAX + 64];
    snprintf(script, sizeof script, "#!/bin/sh\ntouch %s\n", ran);
    write_file(control, script);
    chmod(control, 0755);
    gp_error err = {0};
    assert_int_equal(gp_mps_start(control, node_dir, uuid, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "mps_control");
    assert_non_null(strstr(err.message, "shorter --state-dir"));
    assert_int_equal(access(ran, F_OK), -1); /* the command never ran */
    gp_env e = {0};
    assert_int_equal(gp_mps_client_env(&e, node_dir, uuid, 500, 40779, &err), GP_ERR_CONFLICT);
    assert_null(gp_env_get(&e, "CUDA_MPS_PIPE_DIRECTORY"));
    gp_env_free(&e);
}

static void a_control_command_that_fails_is_an_error_naming_it(void **state)
{
    fixture *f = *state;
    gp_error err = {0};
    assert_int_equal(gp_mps_start("/nonexistent/mps-control", f->root, "GPU-a", &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "mps_control");
    assert_non_null(strstr(err.message, "exit status 127"));
}

static void assert_map_file(const char *dir, const char *name, const char *want)
{
    char path[192], text[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_true(gp_state_read(path, text, sizeof text));
    assert_string_equal(text, want);
}

static void the_dcgm_job_map_lists_each_gpus_jobs_and_empties_the_rest(void **state)
{
    fixture *f = *state;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/dcgm", f->root);
    gp_dcgm_use uses[] = {{.gpu = 0, .gi = -1, .job = 7}, {.gpu = 0, .gi = -1, .job = 8},
                          {.gpu = 0, .gi = -1, .job = 7}, {.gpu = 2, .gi = 1, .job = 9}};
    assert_int_equal(gp_dcgm_job_map_write(dir, 3, uses, 4, NULL), GP_OK);
    assert_map_file(dir, "0", "7\n8\n");
    assert_map_file(dir, "1", "");
    assert_map_file(dir, "2.1", "9\n");
    assert_int_equal(gp_dcgm_job_map_write(dir, 3, uses, 1, NULL), GP_OK); /* jobs 8 and 9 ended */
    assert_map_file(dir, "0", "7\n");
    assert_map_file(dir, "2.1", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_process_belongs_to_the_replica_whose_cgroup_it_is_in, setup, teardown),
        cmocka_unit_test_setup_teardown(without_a_cgroup_a_process_belongs_to_the_replica_among_its_ancestors, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_sum_counts_a_replicas_processes_on_its_gpu_and_the_cap_finds_who_is_over,
                                        setup, teardown),
        cmocka_unit_test(an_mps_client_gets_its_thread_percentage_and_pinned_limit),
        cmocka_unit_test_setup_teardown(a_gpus_daemon_starts_once_answers_and_quits, setup, teardown),
        cmocka_unit_test_setup_teardown(the_pipe_folder_is_short_and_one_too_long_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_control_command_that_fails_is_an_error_naming_it, setup, teardown),
        cmocka_unit_test_setup_teardown(the_dcgm_job_map_lists_each_gpus_jobs_and_empties_the_rest, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
