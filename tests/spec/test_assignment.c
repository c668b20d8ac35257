/* test_assignment.c - a node agent's assignment decoded once
 * (spec/assignment.h): every field gpupoold sends (docs/api.md) read into
 * the struct, defaults for what is missing, written back and read again
 * to the same struct (launch.json), secrets and image_auth never written; the
 * container's fields (issue 31); and the
 * tables the agent, the event log and the CLI share: exit reasons
 * (util/exit_reason.h) and stop signals' numbers (core/names.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "spec/assignment.h"
#include "util/exit_reason.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const char *const FULL =
    "{\"job\": 7, \"replica\": 1, \"replicas\": 2, \"bind_time\": 1795523111,"
    " \"gpus\": [\"GPU-a\", \"GPU-b\"], \"peers\": [\"t4-2\", \"t4-1\"],"
    " \"slice\": {\"kind\": \"mig\", \"milli_gpus\": 142, \"mig_profile\": \"1g.10gb\", \"mig_start\": 4},"
    " \"action\": \"stop\", \"stop_reason\": \"time_limit\", \"kill_deadline\": 1795523142,"
    " \"kill_deadline_ms\": 1795523141412, \"restart_count\": 3, \"time_limit_s\": 3600, \"last_checkpoint\": null,"
    " \"name\": \"train\", \"tenant\": \"research/nlp\", \"user\": \"alice\", \"kind\": \"training\","
    " \"command\": [\"python3\", \"train.py\"], \"env\": {\"SEED\": \"7\", \"LR\": \"0.1\", \"BAD\": 3},"
    " \"secrets\": {\"HF_TOKEN\": \"hf_secret\"},"
    " \"cpu_millis\": 16000, \"mem_mib\": 65536, \"pids_max\": 4096, \"checkpoint_grace_s\": 30,"
    " \"stop_signal\": \"SIGUSR1\", \"uid_min\": 1000, \"trust\": \"untrusted\","
    " \"image\": \"docker://registry.example:5000/team/torch:2.3\","
    " \"image_auth\": {\"username\": \"robot\", \"password\": \"pw_secret\"},"
    " \"mounts\": [{\"source\": \"/srv/datasets\", \"target\": \"/data\", \"read_only\": true},"
    " {\"source\": 5, \"target\": \"/x\"}, {\"source\": \"/srv/scratch/nlp\", \"target\": \"/scratch\"}],"
    " \"shm_mib\": 8192, \"read_only_root\": true, \"network\": \"private\", \"allow_userns\": true,"
    " \"keep_running_when_partitioned\": true}";

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

static void every_field_gpupoold_sends_is_decoded(void **state)
{
    (void)state;
    json_t *o = parse(FULL);
    gp_assignment a;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    assert_int_equal(a.job, 7);
    assert_int_equal(a.replica, 1);
    assert_int_equal(a.replicas, 2);
    assert_int_equal(a.bind_time, 1795523111);
    assert_int_equal(a.n_gpus, 2);
    assert_string_equal(a.gpus[1], "GPU-b");
    assert_int_equal(a.n_peers, 2);
    assert_string_equal(a.peers[0], "t4-2");
    assert_true(a.has_slice);
    assert_string_equal(a.slice.kind, "mig");
    assert_string_equal(a.slice.mig_profile, "1g.10gb");
    assert_int_equal(a.slice.mig_start, 4);
    assert_int_equal(a.slice.milli_gpus, 142);
    assert_true(a.stop);
    assert_string_equal(a.stop_reason, "time_limit");
    assert_int_equal(a.kill_deadline_ms, 1795523141412);
    assert_int_equal(a.restart_count, 3);
    assert_true(a.has_time_limit);
    assert_int_equal(a.time_limit_s, 3600);
    assert_false(a.has_last_checkpoint);
    assert_string_equal(a.tenant, "research/nlp");
    assert_string_equal(a.user, "alice");
    assert_int_equal(a.n_command, 2);
    assert_string_equal(a.command[1], "train.py");
    assert_int_equal(a.n_env, 2); /* BAD is not a string: left out */
    assert_string_equal(a.env[0].name, "SEED");
    assert_string_equal(a.env[1].value, "0.1");
    assert_int_equal(a.n_secrets, 1);
    assert_string_equal(a.secrets[0].name, "HF_TOKEN");
    assert_string_equal(a.secrets[0].value, "hf_secret");
    assert_int_equal(a.cpu_millis, 16000);
    assert_int_equal(a.pids_max, 4096);
    assert_int_equal(a.stop_signal, GP_STOP_SIGUSR1);
    assert_int_equal(gp_stop_signal_number(a.stop_signal), SIGUSR1);
    assert_true(a.has_uid_min);
    assert_true(a.untrusted);
    gp_assignment_free(&a);
    json_decref(o);
}

static void the_containers_fields_are_decoded(void **state)
{
    (void)state;
    json_t *o = parse(FULL);
    gp_assignment a;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    assert_string_equal(a.image, "docker://registry.example:5000/team/torch:2.3");
    assert_string_equal(a.image_auth_user, "robot");
    assert_string_equal(a.image_auth_password, "pw_secret");
    assert_int_equal(a.n_mounts, 2); /* a source that is not a string: left out */
    assert_string_equal(a.mounts[0].source, "/srv/datasets");
    assert_string_equal(a.mounts[0].target, "/data");
    assert_true(a.mounts[0].read_only);
    assert_string_equal(a.mounts[1].target, "/scratch");
    assert_false(a.mounts[1].read_only);
    assert_int_equal(a.shm_mib, 8192);
    assert_true(a.read_only_root);
    assert_true(a.private_network);
    assert_true(a.allow_userns);
    gp_assignment_free(&a);
    json_decref(o);
}

static void a_bare_process_has_no_container_fields(void **state)
{
    (void)state;
    json_t *o = parse("{\"job\": 4, \"network\": \"host\", \"image_auth\": {\"username\": \"u\"}}");
    gp_assignment a;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    assert_string_equal(a.image, "");
    assert_null(a.image_auth_user); /* no password: no credential */
    assert_null(a.image_auth_password);
    assert_int_equal(a.n_mounts, 0);
    assert_int_equal(a.shm_mib, 0);
    assert_false(a.read_only_root);
    assert_false(a.private_network);
    assert_false(a.allow_userns);
    json_t *written = gp_assignment_to_json(&a);
    const char *keys[] = {"image", "image_auth", "mounts", "shm_mib", "read_only_root", "network", "allow_userns"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_null(json_object_get(written, keys[i]));
    json_decref(written);
    gp_assignment_free(&a);
    json_decref(o);
}

static void what_is_missing_reads_as_the_agent_always_read_it(void **state)
{
    (void)state;
    json_t *o = parse("{\"job\": 4, \"gpus\": [\"GPU-a\", 5], \"kill_deadline\": 12, \"stop_signal\": \"SIGKILL\","
                      " \"trust\": \"trusted\"}");
    gp_assignment a;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    assert_int_equal(a.n_gpus, 1);
    assert_false(a.has_slice);
    assert_false(a.stop);
    assert_int_equal(a.kill_deadline_ms, 12000); /* a gpupoold before kill_deadline_ms */
    assert_int_equal(a.stop_signal, GP_STOP_SIGTERM); /* not a stop signal: SIGTERM */
    assert_false(a.has_uid_min);
    assert_false(a.has_command);
    assert_false(a.untrusted);
    assert_false(a.keep_running_when_partitioned); /* the partition fence stops it */
    assert_string_equal(a.user, "");
    gp_assignment_free(&a);
    json_decref(o);
}

/* launch.json: written from the struct, read back to the same struct. */
static void written_and_read_back_it_is_the_same(void **state)
{
    (void)state;
    json_t *o = parse(FULL);
    gp_assignment a, b;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    json_t *written = gp_assignment_to_json(&a);
    assert_non_null(written);
    assert_int_equal(gp_assignment_parse(written, &b, NULL), GP_OK);
    json_t *again = gp_assignment_to_json(&b);
    assert_true(json_equal(written, again));
    assert_int_equal(b.kill_deadline_ms, a.kill_deadline_ms);
    assert_int_equal(b.stop_signal, a.stop_signal);
    assert_int_equal(b.untrusted, a.untrusted);
    assert_int_equal(b.n_env, a.n_env);
    assert_int_equal(b.slice.mig_start, a.slice.mig_start);
    assert_string_equal(b.image, a.image);
    assert_int_equal(b.n_mounts, a.n_mounts);
    assert_string_equal(b.mounts[1].source, a.mounts[1].source);
    assert_int_equal(b.mounts[0].read_only, a.mounts[0].read_only);
    assert_int_equal(b.shm_mib, a.shm_mib);
    assert_true(b.read_only_root && b.private_network && b.allow_userns);
    assert_true(a.keep_running_when_partitioned && b.keep_running_when_partitioned); /* adopted runs keep it */
    json_decref(again);
    json_decref(written);
    gp_assignment_free(&b);
    gp_assignment_free(&a);
    json_decref(o);
}

/* The tenant's egress destinations (the network fence's) are read and
 * written back; none is no key. */
static void egress_is_read_and_written_back(void **state)
{
    (void)state;
    json_t *o = parse("{\"job\": 7, \"egress\": [\"10.0.0.0/8\", \"192.0.2.7:443\"]}");
    gp_assignment a, b, none;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    assert_int_equal(a.n_egress, 2);
    assert_string_equal(a.egress[1], "192.0.2.7:443");
    json_t *written = gp_assignment_to_json(&a);
    assert_int_equal(gp_assignment_parse(written, &b, NULL), GP_OK);
    assert_int_equal(b.n_egress, 2);
    assert_string_equal(b.egress[0], "10.0.0.0/8");
    json_t *empty = parse("{\"job\": 8}");
    assert_int_equal(gp_assignment_parse(empty, &none, NULL), GP_OK);
    json_t *written_none = gp_assignment_to_json(&none);
    assert_null(json_object_get(written_none, "egress"));
    json_decref(written_none);
    json_decref(empty);
    json_decref(written);
    gp_assignment_free(&none);
    gp_assignment_free(&b);
    gp_assignment_free(&a);
    json_decref(o);
}

/* reach_from and the nodes it concerns, read and written back (an
 * adopted replica's fence is rebuilt from launch.json's copy). */
static void reach_from_and_its_nodes_are_read_and_written_back(void **state)
{
    (void)state;
    json_t *o = parse("{\"job\": 7, \"reach_from\": [\"research\", \"ops/mon\"], \"reach_from_nodes\": [\"h1\"],"
                      " \"reach_to_nodes\": [\"h2\", \"h3\"]}");
    gp_assignment a, b;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    assert_int_equal(a.n_reach_from, 2);
    assert_string_equal(a.reach_from[1], "ops/mon");
    assert_int_equal(a.n_reach_from_nodes, 1);
    assert_string_equal(a.reach_to_nodes[1], "h3");
    json_t *written = gp_assignment_to_json(&a);
    assert_int_equal(gp_assignment_parse(written, &b, NULL), GP_OK);
    assert_int_equal(b.n_reach_from, 2);
    assert_string_equal(b.reach_from_nodes[0], "h1");
    assert_int_equal(b.n_reach_to_nodes, 2);
    json_decref(written);
    gp_assignment_free(&b);
    gp_assignment_free(&a);
    json_decref(o);
}

static void secrets_and_image_auth_are_never_written(void **state)
{
    (void)state;
    json_t *o = parse(FULL);
    gp_assignment a;
    assert_int_equal(gp_assignment_parse(o, &a, NULL), GP_OK);
    json_t *written = gp_assignment_to_json(&a);
    char *text = json_dumps(written, 0);
    assert_null(strstr(text, "hf_secret"));
    assert_null(strstr(text, "HF_TOKEN"));
    assert_null(strstr(text, "pw_secret"));
    assert_null(strstr(text, "robot"));
    assert_null(strstr(text, "image_auth"));
    free(text);
    json_decref(written);
    gp_assignment_free(&a);
    json_decref(o);
}

static void a_poll_answers_list_is_decoded_whole(void **state)
{
    (void)state;
    json_t *list = parse("[{\"job\": 1, \"action\": \"run\"}, {\"job\": 2, \"action\": \"stop\"}]");
    gp_assignment *a = NULL;
    size_t n = 0;
    assert_int_equal(gp_assignments_parse(list, &a, &n, NULL), GP_OK);
    assert_int_equal(n, 2);
    assert_false(a[0].stop);
    assert_true(a[1].stop);
    gp_assignments_free(a, n);
    json_decref(list);
}

static void exit_reasons_have_one_name_each_both_ways(void **state)
{
    (void)state;
    for (int r = 0; r < GP_EXIT_REASONS; r++) {
        gp_exit_reason back = GP_EXIT_REASONS;
        assert_true(gp_exit_reason_parse(gp_exit_reason_name((gp_exit_reason)r), &back));
        assert_int_equal(back, r);
    }
    assert_null(gp_exit_reason_name(GP_EXIT_REASONS));
    gp_exit_reason untouched = GP_EXIT_REASON_OOM;
    assert_false(gp_exit_reason_parse("crashed", &untouched));
    assert_int_equal(untouched, GP_EXIT_REASON_OOM);
    char list[128];
    gp_exit_reason_list(list, sizeof list);
    assert_string_equal(list, "exited, signalled, oom, killed_after_grace, time_limit, gpu_memory, image_pull or checkpointed");
}

static void each_stop_signal_sends_the_signal_it_names(void **state)
{
    (void)state;
    static const int WANT[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    assert_int_equal(gp_enum_count(GP_ENUM_STOP_SIGNAL), (int)(sizeof WANT / sizeof WANT[0]));
    for (int s = 0; s < gp_enum_count(GP_ENUM_STOP_SIGNAL); s++)
        assert_int_equal(gp_stop_signal_number((gp_stop_signal)s), WANT[s]);
    assert_int_equal(gp_stop_signal_number((gp_stop_signal)99), SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_field_gpupoold_sends_is_decoded),
        cmocka_unit_test(the_containers_fields_are_decoded),
        cmocka_unit_test(a_bare_process_has_no_container_fields),
        cmocka_unit_test(what_is_missing_reads_as_the_agent_always_read_it),
        cmocka_unit_test(written_and_read_back_it_is_the_same),
        cmocka_unit_test(egress_is_read_and_written_back),
        cmocka_unit_test(reach_from_and_its_nodes_are_read_and_written_back),
        cmocka_unit_test(secrets_and_image_auth_are_never_written),
        cmocka_unit_test(a_poll_answers_list_is_decoded_whole),
        cmocka_unit_test(exit_reasons_have_one_name_each_both_ways),
        cmocka_unit_test(each_stop_signal_sends_the_signal_it_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
