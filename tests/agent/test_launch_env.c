/* test_launch_env.c - a replica's environment (agent/launch/launch_env.h): the
 * agent's variables, their values, and the job's variables beside them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "agent/launch/launch_env.h"

static const char *const two_hosts[] = {"node-a", "node-b"};

static gp_replica_desc second_of_two(void)
{
    return (gp_replica_desc){.job_id = 42,
                             .tenant = "research/nlp",
                             .replica = 1,
                             .replicas = 2,
                             .hosts = two_hosts,
                             .visible_devices = "GPU-aaa,GPU-bbb",
                             .checkpoint_dir = "/var/lib/gpupool/ckpt/42",
                             .restart_count = 3};
}

static void a_replica_sees_the_gang_and_torchrun_variables(void **state)
{
    (void)state;
    gp_env env = {0};
    gp_replica_desc d = second_of_two();
    assert_int_equal(gp_env_for_replica(&env, NULL, &d, NULL), GP_OK);
    const char *want[][2] = {
        {"CUDA_VISIBLE_DEVICES", "GPU-aaa,GPU-bbb"}, {"GPUPOOL_JOB_ID", "42"},
        {"GPUPOOL_TENANT", "research/nlp"},         {"GPUPOOL_REPLICA", "1"},
        {"GPUPOOL_REPLICAS", "2"},                   {"GPUPOOL_PEERS", "node-a,node-b"},
        {"GPUPOOL_CHECKPOINT_DIR", "/var/lib/gpupool/ckpt/42"},
        {"GPUPOOL_RESTART_COUNT", "3"},              {"MASTER_ADDR", "node-a"},
        {"MASTER_PORT", "20042"},                    {"NNODES", "2"},
        {"NODE_RANK", "1"},                          {"WORLD_SIZE", "2"},
        {"RANK", "1"},                               {"LOCAL_RANK", "0"},
    };
    size_t n = sizeof want / sizeof want[0];
    for (size_t i = 0; i < n; i++) {
        const char *got = gp_env_get(&env, want[i][0]);
        if (!got || strcmp(got, want[i][1]) != 0) {
            fail_msg("%s = %s, want %s", want[i][0], got ? got : "(unset)", want[i][1]);
        }
    }
    assert_int_equal(env.count, n);
    assert_null(env.vars[env.count]);
    gp_env_free(&env);
}

static void the_master_port_is_the_same_for_every_replica_and_distinct_for_nearby_jobs(void **state)
{
    (void)state;
    assert_int_equal(gp_master_port(42), 20042);
    assert_int_equal(gp_master_port(10042), 20042);
    assert_int_equal(gp_master_port(9999), 29999);
    for (uint64_t id = 1; id < 10000; id++) {
        assert_int_not_equal(gp_master_port(id), gp_master_port(id + 1));
        assert_true(gp_master_port(id) < 32768);
    }
}

static void the_jobs_variables_are_kept_and_the_agents_win_a_clash(void **state)
{
    (void)state;
    const char *job_env[] = {"LR=0.001", "CUDA_VISIBLE_DEVICES=0,1,2,3", "GPUPOOL_JOB_ID=7", "EMPTY=", NULL};
    gp_env env = {0};
    gp_replica_desc d = second_of_two();
    assert_int_equal(gp_env_for_replica(&env, job_env, &d, NULL), GP_OK);
    assert_string_equal(gp_env_get(&env, "LR"), "0.001");
    assert_string_equal(gp_env_get(&env, "EMPTY"), "");
    assert_string_equal(gp_env_get(&env, "CUDA_VISIBLE_DEVICES"), "GPU-aaa,GPU-bbb");
    assert_string_equal(gp_env_get(&env, "GPUPOOL_JOB_ID"), "42");
    assert_int_equal(env.count, 17); /* the agent's 15 and the job's LR and EMPTY */
    gp_env_free(&env);
}

static void a_bad_job_variable_is_refused_and_nothing_is_kept(void **state)
{
    (void)state;
    const char *bad[][2] = {{"NOEQUALS", NULL}, {"=value", NULL}};
    for (size_t i = 0; i < 2; i++) {
        gp_env env = {0};
        gp_error err;
        gp_replica_desc d = second_of_two();
        assert_int_equal(gp_env_for_replica(&env, bad[i], &d, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "env");
        assert_int_equal(env.count, 0);
        assert_null(env.vars);
    }
}

static void a_replica_outside_the_gang_or_without_hosts_is_refused(void **state)
{
    (void)state;
    gp_env env = {0};
    gp_error err;
    gp_replica_desc d = second_of_two();
    d.replica = 2;
    assert_int_equal(gp_env_for_replica(&env, NULL, &d, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "replica");
    d = second_of_two();
    const char *comma[] = {"node-a", "node-b,node-c"};
    d.hosts = comma;
    assert_int_equal(gp_env_for_replica(&env, NULL, &d, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "hosts");
    d.hosts = NULL;
    assert_int_equal(gp_env_for_replica(&env, NULL, &d, &err), GP_ERR_INVALID);
    assert_int_equal(env.count, 0);
}

static void setting_a_variable_twice_replaces_it_and_a_default_does_not(void **state)
{
    (void)state;
    gp_env env = {0};
    assert_int_equal(gp_env_set(&env, "PATH", "/opt/bin", NULL), GP_OK);
    assert_int_equal(gp_env_set_default(&env, "PATH", "/usr/bin", NULL), GP_OK);
    assert_string_equal(gp_env_get(&env, "PATH"), "/opt/bin");
    assert_int_equal(gp_env_set(&env, "PATH", "/bin", NULL), GP_OK);
    assert_string_equal(gp_env_get(&env, "PATH"), "/bin");
    assert_null(gp_env_get(&env, "PAT"));
    assert_int_equal(env.count, 1);
    assert_int_equal(gp_env_set(&env, "A=B", "x", NULL), GP_ERR_INVALID);
    gp_env_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_replica_sees_the_gang_and_torchrun_variables),
        cmocka_unit_test(the_master_port_is_the_same_for_every_replica_and_distinct_for_nearby_jobs),
        cmocka_unit_test(the_jobs_variables_are_kept_and_the_agents_win_a_clash),
        cmocka_unit_test(a_bad_job_variable_is_refused_and_nothing_is_kept),
        cmocka_unit_test(a_replica_outside_the_gang_or_without_hosts_is_refused),
        cmocka_unit_test(setting_a_variable_twice_replaces_it_and_a_default_does_not),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
