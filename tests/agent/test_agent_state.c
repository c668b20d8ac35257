/* test_agent_state.c - the agent's files (agent/supervise/agent_state.h): each
 * written and read back, bad text refused, the epoch kept. */
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

#include "agent/supervise/agent_state.h"

static void an_exit_round_trips_and_a_bad_one_is_refused(void **state)
{
    (void)state;
    char text[96];
    gp_proc_exit e = {.reason = GP_EXIT_REASON_KILLED_AFTER_GRACE, .code = -1, .signal = 9}, back;
    gp_state_exit_format(&e, text, sizeof text);
    assert_string_equal(text, "killed_after_grace -1 9\n");
    assert_true(gp_state_exit_parse(text, &back));
    assert_int_equal(back.reason, e.reason);
    assert_int_equal(back.code, -1);
    assert_int_equal(back.signal, 9);
    e = (gp_proc_exit){.reason = GP_EXIT_REASON_GPU_MEMORY, .code = -1, .signal = 9};
    gp_state_exit_format(&e, text, sizeof text);
    assert_string_equal(text, "gpu_memory -1 9\n");
    assert_true(gp_state_exit_parse(text, &back));
    assert_int_equal(back.reason, GP_EXIT_REASON_GPU_MEMORY);
    assert_false(gp_state_exit_parse("crashed 1 0", &back));
    assert_false(gp_state_exit_parse("exited", &back));
}

static void a_stop_order_round_trips_with_its_cause(void **state)
{
    (void)state;
    char text[96];
    gp_stop_order s = {.signal = 15, .deadline_ms = 1795523142000, .cause = GP_STOP_TIME_LIMIT}, back;
    gp_state_stop_format(&s, text, sizeof text);
    assert_true(gp_state_stop_parse(text, &back));
    assert_int_equal(back.signal, 15);
    assert_int_equal(back.deadline_ms, 1795523142000);
    assert_int_equal(back.cause, GP_STOP_TIME_LIMIT);
    s.cause = GP_STOP_GPU_MEMORY;
    gp_state_stop_format(&s, text, sizeof text);
    assert_string_equal(text, "15 1795523142000 gpu_memory 0\n");
    assert_true(gp_state_stop_parse(text, &back));
    assert_int_equal(back.cause, GP_STOP_GPU_MEMORY);
    s.mono_deadline_ms = 86400123; /* the monotonic deadline rides along; an older agent's stop has none */
    gp_state_stop_format(&s, text, sizeof text);
    assert_true(gp_state_stop_parse(text, &back));
    assert_int_equal(back.mono_deadline_ms, 86400123);
    assert_int_equal(back.deadline_ms, 1795523142000);
    assert_true(gp_state_stop_parse("15 1795523142000 requested\n", &back));
    assert_int_equal(back.mono_deadline_ms, 0);
    assert_false(gp_state_stop_parse("0 5 requested", &back));
    assert_false(gp_state_stop_parse("15 5 whenever", &back));
}

static void a_replica_folder_name_round_trips_in_one_spelling(void **state)
{
    (void)state;
    char name[96];
    uint64_t job;
    unsigned replica;
    int64_t bind;
    gp_state_replica_name(7, 1, 1795523111, name, sizeof name);
    assert_string_equal(name, "job7-r1-1795523111");
    assert_true(gp_state_replica_parse(name, &job, &replica, &bind));
    assert_true(job == 7 && replica == 1 && bind == 1795523111);
    assert_false(gp_state_replica_parse("job07-r1-5", &job, &replica, &bind));
    assert_false(gp_state_replica_parse("job7-r1-5.tmp", &job, &replica, &bind));
}

static void the_epoch_is_kept_and_files_are_written_with_their_mode(void **state)
{
    (void)state;
    char dir[] = "/tmp/gp-agent-state-XXXXXX", path[256], text[64];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(gp_state_epoch_load(dir), 0);
    assert_int_equal(gp_state_epoch_store(dir, 12, NULL), GP_OK);
    assert_int_equal(gp_state_epoch_load(dir), 12);
    snprintf(path, sizeof path, "%s/credential", dir);
    assert_int_equal(gp_state_write(path, "gpt_x\n", 0600, NULL), GP_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_true(gp_state_read(path, text, sizeof text));
    assert_string_equal(text, "gpt_x\n");
    snprintf(path, sizeof path, "%s/a/b", dir);
    assert_int_equal(gp_state_mkdirs(path, 0700, NULL), GP_OK);
    snprintf(path, sizeof path, "%s/a/b/exit", dir);
    assert_int_equal(gp_state_write(path, "exited 0 0\n", 0600, NULL), GP_OK);
    snprintf(path, sizeof path, "%s/a/b", dir);
    gp_state_remove_dir(path);
    assert_int_not_equal(access(path, F_OK), 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The partition clock the agent writes and its supervisors read; a file
 * that is not one (grace past the fence, garbage, none) is no fence. */
static void the_partition_clock_round_trips_and_a_bad_one_is_no_fence(void **state)
{
    (void)state;
    char dir[] = "/tmp/gp-agent-state-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    gp_partition_clock c = {.after_ms = 30000, .grace_ms = 15000, .heard_boot_ms = 123456789}, back;
    assert_false(gp_state_partition_load(dir, &back));
    assert_int_equal(gp_state_partition_store(dir, &c, NULL), GP_OK);
    assert_true(gp_state_partition_load(dir, &back));
    assert_memory_equal(&c, &back, sizeof c);
    snprintf(path, sizeof path, "%s/partition", dir);
    const char *bad[] = {"30000 40000 5\n", "0 0 5\n", "x y z\n", "30000 15000\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gp_state_write(path, bad[i], 0600, NULL), GP_OK);
        assert_false(gp_state_partition_load(dir, &back));
        assert_int_equal(back.after_ms, 0);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void a_process_start_time_tells_a_live_process_from_a_gone_one(void **state)
{
    (void)state;
    uint64_t mine = gp_state_process_start_time(getpid());
    assert_true(mine > 0);
    assert_int_equal(gp_state_process_start_time(getpid()), mine);
    assert_int_equal(gp_state_process_start_time(999999999), 0);
    pid_t pid;
    uint64_t t;
    char text[64];
    gp_state_supervisor_format(4242, 777, text, sizeof text);
    assert_true(gp_state_supervisor_parse(text, &pid, &t));
    assert_true(pid == 4242 && t == 777);
    assert_false(gp_state_supervisor_parse("1 5", &pid, &t)); /* never init */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_exit_round_trips_and_a_bad_one_is_refused),
        cmocka_unit_test(a_stop_order_round_trips_with_its_cause),
        cmocka_unit_test(a_replica_folder_name_round_trips_in_one_spelling),
        cmocka_unit_test(the_epoch_is_kept_and_files_are_written_with_their_mode),
        cmocka_unit_test(a_process_start_time_tells_a_live_process_from_a_gone_one),
        cmocka_unit_test(the_partition_clock_round_trips_and_a_bad_one_is_no_fence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
