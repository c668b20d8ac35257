/* test_launch.c - real replicas (agent/launch/launch.h): environment, working
 * folder, user, log files, descriptors, signals, the whole tree's kill,
 * exit reasons; as root with v1 controllers, the memory, pids and device
 * limits; with a cgroup2 mount, the eBPF device program.  Tests that need
 * root or cgroups skip where they are missing.  Every temp folder and
 * cgroup is removed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "agent/launch/launch.h"
#include "agent/launch/launch_env.h"
#include "util/file.h"

typedef struct fixture {
    char dir[64];       /* the test's temp folder, 0755 */
    char workdir[128];  /* dir/work/r0, created by the launch */
    char out[128], err[128];
    gp_env env;
    gp_cgroup_host v1; /* layout none unless root with v1 controllers */
} fixture;

static const char *const hosts[] = {"node-a"};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void cgroup_parent_name(char *buf, size_t len)
{
    snprintf(buf, len, "gpupool-test-launch-%d", (int)getpid());
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/gp-launch-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    chmod(f->dir, 0755);
    snprintf(f->workdir, sizeof f->workdir, "%s/work/r0", f->dir);
    snprintf(f->out, sizeof f->out, "%s/r0.out", f->dir);
    snprintf(f->err, sizeof f->err, "%s/r0.err", f->dir);
    const char *job_env[] = {"LR=0.001", NULL};
    gp_replica_desc d = {.job_id = 42, .tenant = "research/nlp", .replica = 0, .replicas = 1, .hosts = hosts,
                         .visible_devices = "GPU-aaa", .checkpoint_dir = "/ckpt/42"};
    assert_int_equal(gp_env_for_replica(&f->env, job_env, &d, NULL), GP_OK);
    char parent[64];
    cgroup_parent_name(parent, sizeof parent);
    assert_int_equal(gp_cgroup_host_detect(&f->v1, parent, NULL), GP_OK);
    if (geteuid() != 0 || f->v1.layout != GP_CGROUP_V1) {
        f->v1.layout = GP_CGROUP_NONE;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    nftw(f->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    gp_env_free(&f->env);
    free(f);
    return 0;
}

/* Removes this test's cgroup parents (v1 and v2) once every group is gone. */
static int remove_cgroup_parents(void **state)
{
    (void)state;
    gp_cgroup_host host;
    char parent[64], path[GP_CGROUP_PATH_MAX + 64];
    cgroup_parent_name(parent, sizeof parent);
    if (gp_cgroup_host_detect(&host, parent, NULL) != GP_OK) {
        return 0;
    }
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        snprintf(path, sizeof path, "%s/%s", host.v1_mount[c], parent);
        if (host.v1_mount[c][0]) {
            rmdir(path);
        }
    }
    snprintf(path, sizeof path, "%s/%s", host.v2_mount, parent);
    if (host.v2_mount[0]) {
        rmdir(path);
    }
    return 0;
}

static gp_launch_spec spec_for(fixture *f, char *const *argv)
{
    return (gp_launch_spec){.argv = argv,
                            .envp = f->env.vars,
                            .workdir = f->workdir,
                            .stdout_path = f->out,
                            .stderr_path = f->err,
                            .cgroup_name = "job42-r0"};
}

/* Waits (poll on the pidfd, bounded) until the replica has ended. */
static gp_proc_exit wait_end(gp_proc *p, int64_t now)
{
    gp_proc_exit end;
    for (int i = 0; i < 600; i++) {
        if (gp_proc_poll(p, now, &end)) {
            return end;
        }
        struct pollfd pfd = {gp_proc_fd(p), POLLIN, 0};
        poll(&pfd, 1, 100);
    }
    fail_msg("the replica did not end");
    return end;
}

static gp_proc_exit run(fixture *f, gp_launch_spec *spec)
{
    gp_proc *p = NULL;
    gp_error err;
    if (gp_launch(spec, &p, &err) != GP_OK) {
        fail_msg("launch: %s (%s)", err.message, err.field);
    }
    (void)f;
    gp_proc_exit end = wait_end(p, 0);
    gp_proc_free(p);
    return end;
}

static char *read_text(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    if (gp_file_read_all(path, &text, &len, NULL) != GP_OK) {
        fail_msg("cannot read %s", path);
    }
    return text;
}

/* Waits (bounded) until path holds want. */
static void wait_for_text(const char *path, const char *want)
{
    for (int i = 0; i < 1000; i++) {
        char *text = NULL;
        size_t len = 0;
        bool found = gp_file_read_all(path, &text, &len, NULL) == GP_OK && strstr(text, want);
        free(text);
        if (found) {
            return;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fail_msg("%s never held \"%s\"", path, want);
}

static void assert_file_has(const char *path, const char *want)
{
    char *text = read_text(path);
    if (!strstr(text, want)) {
        fail_msg("%s lacks \"%s\":\n%s", path, want, text);
    }
    free(text);
}

static void assert_file_lacks(const char *path, const char *unwanted)
{
    char *text = read_text(path);
    if (strstr(text, unwanted)) {
        fail_msg("%s holds \"%s\":\n%s", path, unwanted, text);
    }
    free(text);
}

/* The process is absent or a zombie left for init. */
static bool process_gone(long pid)
{
    char stat_path[64], *stat = NULL;
    size_t len = 0;
    snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", pid);
    if (gp_file_read_all(stat_path, &stat, &len, NULL) != GP_OK) {
        return true;
    }
    char *state = strrchr(stat, ')');
    bool zombie = state && state[2] == 'Z';
    free(stat);
    return zombie;
}

/* Every pid listed in path (one a line) is gone.  A SIGKILL'd process
 * outside a cgroup dies a moment after the kill: wait for it, bounded. */
static void assert_all_gone(const char *path)
{
    char *text = read_text(path);
    int listed = 0;
    for (char *p = text; *p;) {
        char *end = NULL;
        long pid = strtol(p, &end, 10);
        if (end == p) {
            break;
        }
        listed++;
        for (int i = 0; i < 500 && !process_gone(pid); i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (!process_gone(pid)) {
            fail_msg("process %ld is still alive", pid);
        }
        p = end;
    }
    assert_true(listed > 0);
    free(text);
}

static void a_replica_runs_with_its_environment_in_its_own_working_folder(void **state)
{
    fixture *f = *state;
    setenv("GP_AGENT_ONLY", "secret", 1);
    char *argv[] = {"sh", "-c", "env > env.txt; pwd > pwd.txt", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.reason, GP_EXIT_REASON_EXITED);
    assert_int_equal(end.code, 0);
    char path[256];
    snprintf(path, sizeof path, "%s/env.txt", f->workdir);
    const char *want[] = {"\nGPUPOOL_JOB_ID=42\n", "\nMASTER_PORT=20042\n", "\nWORLD_SIZE=1\n",
                          "\nCUDA_VISIBLE_DEVICES=GPU-aaa\n", "LR=0.001\n", "\nHOME=", "\nPATH="};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_file_has(path, want[i]);
    }
    assert_file_lacks(path, "GP_AGENT_ONLY");
    snprintf(path, sizeof path, "%s/pwd.txt", f->workdir);
    char line[160];
    snprintf(line, sizeof line, "%s\n", f->workdir);
    char *pwd = read_text(path);
    assert_string_equal(pwd, line);
    free(pwd);
    unsetenv("GP_AGENT_ONLY");
}

static void stdout_and_stderr_are_appended_to_the_replicas_log_files(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sh", "-c", "echo out; echo err >&2", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    run(f, &spec);
    run(f, &spec);
    char *out = read_text(f->out), *err = read_text(f->err);
    assert_string_equal(out, "out\nout\n");
    assert_string_equal(err, "err\nerr\n");
    free(out), free(err);
    struct stat st;
    assert_int_equal(stat(f->out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
}

static void no_descriptor_of_the_agent_reaches_the_replica(void **state)
{
    fixture *f = *state;
    int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC, on purpose */
    assert_int_equal(dup2(leak, 77), 77);
    char *argv[] = {"ls", "/proc/self/fd", NULL}; /* ls's own folder descriptor is 3 */
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc_exit end = run(f, &spec);
    close(77), close(leak);
    assert_int_equal(end.code, 0);
    char *out = read_text(f->out);
    assert_string_equal(out, "0\n1\n2\n3\n");
    free(out);
}

static void an_exit_code_and_a_fatal_signal_are_reported_as_such(void **state)
{
    fixture *f = *state;
    char *exit3[] = {"sh", "-c", "exit 3", NULL};
    gp_launch_spec spec = spec_for(f, exit3);
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.reason, GP_EXIT_REASON_EXITED);
    assert_int_equal(end.code, 3);
    assert_int_equal(end.signal, 0);
    char *usr1[] = {"sh", "-c", "kill -USR1 $$", NULL};
    spec = spec_for(f, usr1);
    end = run(f, &spec);
    assert_int_equal(end.reason, GP_EXIT_REASON_SIGNALLED);
    assert_int_equal(end.signal, SIGUSR1);
    assert_int_equal(end.code, -1);
    assert_string_equal(gp_exit_reason_name(end.reason), "signalled");
}

static void a_replica_that_ignores_its_signal_is_killed_when_the_grace_ends(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; sleep 100 & wait", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc *p = NULL;
    assert_int_equal(gp_launch(&spec, &p, NULL), GP_OK);
    wait_for_text(f->out, "ready");
    gp_proc_stop(p, SIGTERM, 1000, 5000, GP_STOP_REQUESTED);
    assert_int_equal(gp_proc_deadline(p), 6000);
    gp_proc_exit end;
    assert_false(gp_proc_poll(p, 5999, &end)); /* TERM is ignored: still running */
    end = wait_end(p, 6000);
    assert_int_equal(end.reason, GP_EXIT_REASON_KILLED_AFTER_GRACE);
    assert_int_equal(end.signal, SIGKILL);
    assert_string_equal(gp_exit_reason_name(end.reason), "killed_after_grace");
    gp_proc_free(p);
}

/* Issue 32: a replica that said its checkpoint was done in its grace is
 * then killed by the agent as planned (gp__end_graces): it ends as
 * checkpointed, never killed_after_grace; a time-limit grace cut short
 * that way stays time_limit. */
static void a_kill_after_a_checkpoint_in_the_grace_reports_checkpointed(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; sleep 100 & wait", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_stop_cause first[] = {GP_STOP_REQUESTED, GP_STOP_TIME_LIMIT};
    gp_exit_reason want[] = {GP_EXIT_REASON_CHECKPOINTED, GP_EXIT_REASON_TIME_LIMIT};
    for (size_t i = 0; i < 2; i++) {
        gp_proc *p = NULL;
        (void)unlink(f->out); /* "ready" again */
        assert_int_equal(gp_launch(&spec, &p, NULL), GP_OK);
        wait_for_text(f->out, "ready");
        gp_proc_stop(p, SIGTERM, 1000, 5000, first[i]);
        gp_proc_stop(p, SIGKILL, 2000, 0, GP_STOP_CHECKPOINTED);
        gp_proc_exit end = wait_end(p, 2000);
        assert_int_equal(end.reason, want[i]);
        assert_int_equal(end.signal, SIGKILL);
        gp_proc_free(p);
    }
    assert_string_equal(gp_exit_reason_name(GP_EXIT_REASON_CHECKPOINTED), "checkpointed");
}

static void a_replica_that_ends_on_its_signal_within_the_grace_is_signalled(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sleep", "100", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc *p = NULL;
    assert_int_equal(gp_launch(&spec, &p, NULL), GP_OK);
    gp_proc_stop(p, SIGINT, 0, 60000, GP_STOP_REQUESTED);
    gp_proc_exit end = wait_end(p, 0);
    assert_int_equal(end.reason, GP_EXIT_REASON_SIGNALLED);
    assert_int_equal(end.signal, SIGINT);
    assert_int_equal(gp_proc_deadline(p), -1);
    gp_proc_free(p);
}

static void a_stop_for_the_time_limit_reports_time_limit(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sleep", "100", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc *p = NULL;
    assert_int_equal(gp_launch(&spec, &p, NULL), GP_OK);
    gp_proc_stop(p, SIGTERM, 0, 60000, GP_STOP_REQUESTED);
    gp_proc_stop(p, SIGTERM, 10, 0, GP_STOP_TIME_LIMIT);
    assert_int_equal(gp_proc_deadline(p), 10);
    gp_proc_exit end = wait_end(p, 10);
    assert_int_equal(end.reason, GP_EXIT_REASON_TIME_LIMIT);
    assert_string_equal(gp_exit_reason_name(end.reason), "time_limit");
    gp_proc_free(p);
}

static void a_kill_for_gpu_memory_reports_gpu_memory_even_in_a_time_limit_grace(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; sleep 100 & wait", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc *p = NULL;
    assert_int_equal(gp_launch(&spec, &p, NULL), GP_OK);
    wait_for_text(f->out, "ready");
    gp_proc_stop(p, SIGTERM, 0, 60000, GP_STOP_TIME_LIMIT);
    gp_proc_stop(p, SIGKILL, 10, 0, GP_STOP_GPU_MEMORY);
    gp_proc_stop(p, SIGTERM, 20, 0, GP_STOP_TIME_LIMIT); /* a later stop does not undo the agent's kill */
    gp_proc_exit end = wait_end(p, 20);
    assert_int_equal(end.reason, GP_EXIT_REASON_GPU_MEMORY);
    assert_int_equal(end.signal, SIGKILL);
    assert_string_equal(gp_exit_reason_name(end.reason), "gpu_memory");
    gp_proc_free(p);
}

/* The grandchildren the shell started die with it (process group; with
 * cgroups, the cgroup). */
static void run_tree_and_kill(fixture *f, const gp_cgroup_host *cgroups, const char *script)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.cgroups = cgroups;
    gp_proc *p = NULL;
    gp_error err;
    if (gp_launch(&spec, &p, &err) != GP_OK) {
        fail_msg("launch: %s", err.message);
    }
    char pids[256];
    snprintf(pids, sizeof pids, "%s/pids", f->workdir);
    wait_for_text(f->out, "ready");
    gp_proc_stop(p, SIGTERM, 0, 0, GP_STOP_REQUESTED);
    gp_proc_exit end = wait_end(p, 0); /* TERM is ignored by all: the grace of 0 ends in the kill */
    assert_int_equal(end.reason, GP_EXIT_REASON_KILLED_AFTER_GRACE);
    gp_proc_free(p);
    assert_all_gone(pids);
}

static void a_stopped_replicas_whole_process_tree_is_gone(void **state)
{
    fixture *f = *state;
    run_tree_and_kill(f, NULL,
                      "trap '' TERM; sleep 300 & echo $! > pids; sleep 300 & echo $! >> pids; echo ready; wait");
}

static void a_grandchild_that_left_the_process_group_dies_with_the_cgroup(void **state)
{
    fixture *f = *state;
    if (f->v1.layout == GP_CGROUP_NONE) {
        skip();
    }
    run_tree_and_kill(f, &f->v1, "trap '' TERM; setsid sleep 300 & echo $! > pids; echo ready; wait");
}

static void as_root_a_replica_runs_as_the_jobs_user_in_a_folder_it_owns(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        skip();
    }
    char *argv[] = {"sh", "-c", "id -u; id -g; echo $USER $HOME; touch mine", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.user = "nobody";
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.code, 0);
    char *out = read_text(f->out);
    assert_string_equal(out, "65534\n65534\nnobody /nonexistent\n");
    free(out);
    struct stat st;
    assert_int_equal(stat(f->workdir, &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_mode & 0777, 0700);
}

/* Refused before anything runs: root, and a system user below uid_min. */
static void as_root_a_user_of_uid_0_or_below_the_floor_is_refused(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        skip();
    }
    char *argv[] = {"true", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc *p = NULL;
    gp_error err;
    spec.user = "root";
    assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "user");
    assert_non_null(strstr(err.message, "uid 0"));
    spec.user = "daemon"; /* uid 1 on Debian */
    spec.uid_min = 1000;
    assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, "below the lowest uid"));
    assert_int_not_equal(access(f->out, F_OK), 0); /* nothing started, not even its log */
}

static void as_root_a_job_without_a_user_runs_as_its_own_uid_with_no_groups(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        skip();
    }
    char *argv[] = {"sh", "-c", "id -u; id -g; id -G; echo $USER $LOGNAME; [ \"$HOME\" = \"$PWD\" ] && echo home", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.job_uid = 2000000042;
    spec.job_name = "job42";
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.code, 0);
    char *out = read_text(f->out);
    assert_string_equal(out, "2000000042\n2000000042\n2000000042\njob42 job42\nhome\n");
    free(out);
    struct stat st;
    assert_int_equal(stat(f->workdir, &st), 0);
    assert_int_equal(st.st_uid, 2000000042);
    assert_int_equal(st.st_mode & 0777, 0700);
}

static void a_replica_has_no_new_privs_and_umask_077(void **state)
{
    fixture *f = *state;
    char *argv[] = {"sh", "-c", "grep NoNewPrivs /proc/self/status; umask", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.code, 0);
    assert_file_has(f->out, "NoNewPrivs:\t1");
    assert_file_has(f->out, "0077");
}

/* What the replica writes in /tmp, /var/tmp and /dev/shm stays in its
 * own folder and tmpfs: the host's are untouched. */
static void as_root_a_replica_has_its_own_tmp_var_tmp_and_dev_shm(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        skip();
    }
    char outside[64] = "/run/gp-launch-tmp-XXXXXX"; /* its folders must not lie in the /tmp it hides */
    assert_non_null(mkdtemp(outside));
    chmod(outside, 0755);
    char tmp_dir[128], workdir[128], script[512], planted[160];
    snprintf(tmp_dir, sizeof tmp_dir, "%s/scratch/r0", outside);
    snprintf(workdir, sizeof workdir, "%s/work", outside);
    snprintf(script, sizeof script,
             "echo a > /tmp/gp-planted-%d && echo b > /var/tmp/gp-planted-%d && echo c > /dev/shm/gp-planted-%d && "
             "ls /tmp",
             (int)getpid(), (int)getpid(), (int)getpid());
    char *argv[] = {"sh", "-c", script, NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.job_uid = 2000000042;
    spec.workdir = workdir;
    spec.private_tmp = true;
    spec.tmp_dir = tmp_dir;
    spec.shm_mib = 16;
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.code, 0);
    const char *hosts_dirs[] = {"/tmp", "/var/tmp", "/dev/shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(planted, sizeof planted, "%s/gp-planted-%d", hosts_dirs[i], (int)getpid());
        assert_int_not_equal(access(planted, F_OK), 0);
    }
    snprintf(planted, sizeof planted, "%s/tmp/gp-planted-%d", tmp_dir, (int)getpid());
    assert_int_equal(access(planted, F_OK), 0);
    struct stat st;
    assert_int_equal(stat(tmp_dir, &st), 0);
    assert_int_equal(st.st_uid, 2000000042);
    assert_int_equal(st.st_mode & 0777, 0700);
    nftw(outside, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void without_root_a_replica_runs_as_the_agents_user_and_the_note_says_so(void **state)
{
    fixture *f = *state;
    if (geteuid() == 0) {
        skip();
    }
    char *argv[] = {"true", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.user = "root";
    gp_proc *p = NULL;
    assert_int_equal(gp_launch(&spec, &p, NULL), GP_OK);
    assert_non_null(strstr(gp_proc_note(p), "the agent is not root"));
    wait_end(p, 0);
    gp_proc_free(p);
}

/* Without a tmp_dir (the agent's folders lie in /tmp): /dev/shm is its
 * own, /tmp the host's. */
static void as_root_without_a_tmp_dir_only_dev_shm_is_its_own(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        skip();
    }
    char script[256], planted[96];
    snprintf(script, sizeof script, "echo a > /dev/shm/gp-shm-%d && echo b > %s/by-job", (int)getpid(), f->dir);
    char *argv[] = {"sh", "-c", script, NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.private_tmp = true;
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.code, 0);
    snprintf(planted, sizeof planted, "/dev/shm/gp-shm-%d", (int)getpid());
    assert_int_not_equal(access(planted, F_OK), 0);
    snprintf(planted, sizeof planted, "%s/by-job", f->dir); /* f->dir lies in the host's /tmp */
    assert_int_equal(access(planted, F_OK), 0);
}

static void a_launch_that_cannot_start_says_why_and_leaves_nothing(void **state)
{
    fixture *f = *state;
    gp_error err;
    gp_proc *p = NULL;
    char *missing[] = {"no-such-program-gp", NULL};
    gp_launch_spec spec = spec_for(f, missing);
    assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "argv");
    char *not_exec[] = {"/etc/passwd", NULL};
    spec = spec_for(f, not_exec);
    spec.cgroups = &f->v1;
    assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "exec"));
    char group[GP_CGROUP_PATH_MAX + 64];
    snprintf(group, sizeof group, "%s/%s/job42-r0", f->v1.v1_mount[GP_CGROUP_MEMORY], f->v1.parent);
    assert_int_not_equal(access(group, F_OK), 0);
    char *ok[] = {"true", NULL};
    spec = spec_for(f, ok);
    spec.workdir = "relative/dir";
    assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "workdir");
    spec = spec_for(f, ok);
    spec.isolate_devices = true; /* no cgroups: an untrusted tenant's replica is refused */
    spec.untrusted = true;
    assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "devices");
    assert_non_null(strstr(err.message, "untrusted"));
    if (geteuid() == 0) {
        spec = spec_for(f, ok);
        spec.user = "no-such-user-gp";
        assert_int_equal(gp_launch(&spec, &p, &err), GP_ERR_NOT_FOUND);
        assert_string_equal(err.field, "user");
    }
}

static void a_replica_over_its_memory_limit_ends_as_oom(void **state)
{
    fixture *f = *state;
    if (f->v1.layout == GP_CGROUP_NONE) {
        skip();
    }
    char *argv[] = {"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1", NULL}; /* a 256 MiB buffer */
    gp_launch_spec spec = spec_for(f, argv);
    spec.cgroups = &f->v1;
    spec.limits.mem_mib = 32;
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.reason, GP_EXIT_REASON_OOM);
    assert_int_equal(end.signal, SIGKILL);
    assert_string_equal(gp_exit_reason_name(end.reason), "oom");
}

static void a_replica_under_its_memory_limit_is_not_oom(void **state)
{
    fixture *f = *state;
    if (f->v1.layout == GP_CGROUP_NONE) {
        skip();
    }
    char *argv[] = {"dd", "if=/dev/zero", "of=/dev/null", "bs=4M", "count=4", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.cgroups = &f->v1;
    spec.limits.mem_mib = 64;
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.reason, GP_EXIT_REASON_EXITED);
    assert_int_equal(end.code, 0);
}

static void a_replica_cannot_fork_past_its_pids_limit(void **state)
{
    fixture *f = *state;
    if (f->v1.layout == GP_CGROUP_NONE || !f->v1.v1_mount[GP_CGROUP_PIDS][0]) {
        skip();
    }
    char *argv[] = {"sh", "-c", "for i in 1 2 3 4 5 6; do sleep 300 & done; echo started; wait", NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.cgroups = &f->v1;
    spec.limits.pids_max = 3;
    gp_proc_exit end = run(f, &spec);
    assert_int_equal(end.reason, GP_EXIT_REASON_EXITED);
    assert_int_not_equal(end.code, 0);
    assert_file_has(f->err, "Cannot fork");
    assert_file_lacks(f->out, "started");
}

/* Stand-in GPUs nvidia0 (c 195:0) and nvidia1 (c 195:1); the replica may
 * open nvidia0 only.  No driver answers 195, so an allowed open fails
 * with ENXIO ("No such device or address") and a refused one with EPERM. */
static void only_the_replicas_own_gpu_opens(fixture *f, const gp_cgroup_host *cgroups)
{
    char gpu0[160], gpu1[160];
    snprintf(gpu0, sizeof gpu0, "%s/nvidia0", f->dir);
    snprintf(gpu1, sizeof gpu1, "%s/nvidia1", f->dir);
    assert_int_equal(mknod(gpu0, S_IFCHR | 0666, makedev(195, 0)), 0);
    assert_int_equal(mknod(gpu1, S_IFCHR | 0666, makedev(195, 1)), 0);
    char script[512];
    snprintf(script, sizeof script, "cat %s; cat %s; echo x > /dev/null && echo null-ok", gpu0, gpu1);
    char *argv[] = {"sh", "-c", script, NULL};
    const char *allowed[] = {gpu0, NULL};
    gp_launch_spec spec = spec_for(f, argv);
    spec.cgroups = cgroups;
    spec.isolate_devices = true;
    spec.device_paths = allowed;
    run(f, &spec);
    char want[200];
    snprintf(want, sizeof want, "%s: Operation not permitted", gpu1);
    assert_file_has(f->err, want);
    snprintf(want, sizeof want, "%s: No such device or address", gpu0);
    assert_file_has(f->err, want);
    assert_file_has(f->out, "null-ok");
}

static void with_v1_devices_a_replica_opens_only_its_own_gpu(void **state)
{
    fixture *f = *state;
    if (f->v1.layout == GP_CGROUP_NONE || !f->v1.v1_mount[GP_CGROUP_DEVICES][0]) {
        skip();
    }
    only_the_replicas_own_gpu_opens(f, &f->v1);
}

/* The v2 path on a cgroup2 mount without controllers: no limits, but the
 * device program and cgroup.kill work there as on a pure v2 host. */
static void with_the_v2_device_program_a_replica_opens_only_its_own_gpu(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0 || !f->v1.v2_mount[0]) {
        skip();
    }
    gp_cgroup_host v2 = f->v1;
    v2.layout = GP_CGROUP_V2;
    only_the_replicas_own_gpu_opens(f, &v2);
}

static void with_v2_a_grandchild_that_left_the_process_group_dies_with_the_cgroup(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0 || !f->v1.v2_mount[0]) {
        skip();
    }
    gp_cgroup_host v2 = f->v1;
    v2.layout = GP_CGROUP_V2;
    run_tree_and_kill(f, &v2, "trap '' TERM; setsid sleep 300 & echo $! > pids; echo ready; wait");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_replica_runs_with_its_environment_in_its_own_working_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(stdout_and_stderr_are_appended_to_the_replicas_log_files, setup, teardown),
        cmocka_unit_test_setup_teardown(no_descriptor_of_the_agent_reaches_the_replica, setup, teardown),
        cmocka_unit_test_setup_teardown(an_exit_code_and_a_fatal_signal_are_reported_as_such, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replica_that_ignores_its_signal_is_killed_when_the_grace_ends, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_kill_after_a_checkpoint_in_the_grace_reports_checkpointed, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replica_that_ends_on_its_signal_within_the_grace_is_signalled, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_stop_for_the_time_limit_reports_time_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(a_kill_for_gpu_memory_reports_gpu_memory_even_in_a_time_limit_grace, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_stopped_replicas_whole_process_tree_is_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_grandchild_that_left_the_process_group_dies_with_the_cgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(as_root_a_replica_runs_as_the_jobs_user_in_a_folder_it_owns, setup, teardown),
        cmocka_unit_test_setup_teardown(without_root_a_replica_runs_as_the_agents_user_and_the_note_says_so, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(as_root_a_user_of_uid_0_or_below_the_floor_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(as_root_a_job_without_a_user_runs_as_its_own_uid_with_no_groups, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_replica_has_no_new_privs_and_umask_077, setup, teardown),
        cmocka_unit_test_setup_teardown(as_root_a_replica_has_its_own_tmp_var_tmp_and_dev_shm, setup, teardown),
        cmocka_unit_test_setup_teardown(as_root_without_a_tmp_dir_only_dev_shm_is_its_own, setup, teardown),
        cmocka_unit_test_setup_teardown(a_launch_that_cannot_start_says_why_and_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replica_over_its_memory_limit_ends_as_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replica_under_its_memory_limit_is_not_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(a_replica_cannot_fork_past_its_pids_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(with_v1_devices_a_replica_opens_only_its_own_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(with_the_v2_device_program_a_replica_opens_only_its_own_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(with_v2_a_grandchild_that_left_the_process_group_dies_with_the_cgroup, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, remove_cgroup_parents);
}
