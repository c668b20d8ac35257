/* test_agent_metrics.c - the agent's /metrics text (agent/agent_metrics.h):
 * dcgm-exporter's names and labels, unknown values left out, MIG labels,
 * one HELP/TYPE per metric over every node, quoted label values, a bad
 * --metrics-listen refused.  tests/integration/test_agent_metrics.py
 * scrapes a running agent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_metrics.h"

static gp_metrics_row row(int gpu, const char *uuid, const char *tenant, const char *job)
{
    gp_metrics_row r = {.gpu = gpu, .gi_id = -1, .util_pct = 40, .fb_used_mib = 1000, .fb_free_mib = 15384,
                        .power_w = 70, .temp_c = 50, .xid = 0, .sm_active_pct = 40};
    snprintf(r.uuid, sizeof r.uuid, "%s", uuid);
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    snprintf(r.job, sizeof r.job, "%s", job);
    return r;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void a_running_gpu_carries_dcgm_names_labels_and_its_tenant_and_job(void **state)
{
    (void)state;
    gp_metrics_row r = row(1, "GPU-b", "ml/vision", "7");
    snprintf(r.pci_bus_id, sizeof r.pci_bus_id, "00000000:18:00.0");
    gp_metrics_node n = {.name = "t4-0", .model = "T4", .n_rows = 1, .rows = &r};
    char *text = gp_agent_metrics_render(&n, 1, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",pci_bus_id=\"00000000:18:00.0\","
                                 "device=\"nvidia1\",modelName=\"T4\",Hostname=\"t4-0\",node=\"t4-0\","
                                 "tenant=\"ml/vision\",job=\"7\"} 40\n"));
    assert_non_null(strstr(text, "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"));
    assert_non_null(strstr(text, "} 15384\n"));
    assert_non_null(strstr(text, "DCGM_FI_PROF_SM_ACTIVE{"));
    assert_non_null(strstr(text, "} 0.4\n"));
    assert_non_null(strstr(text, "DCGM_FI_DEV_XID_ERRORS{"));
    free(text);
}

static void unknown_values_are_left_out_never_written_as_minus_one(void **state)
{
    (void)state;
    gp_metrics_row r = row(0, "GPU-a", "", "");
    r.util_pct = r.power_w = r.temp_c = r.sm_active_pct = -1;
    r.fb_used_mib = r.fb_free_mib = -1;
    r.xid = 79;
    gp_metrics_node n = {.name = "h", .model = "H100", .n_rows = 1, .rows = &r};
    char *text = gp_agent_metrics_render(&n, 1, NULL);
    assert_non_null(text);
    assert_null(strstr(text, " -1\n"));
    assert_null(strstr(text, "DCGM_FI_DEV_GPU_UTIL{"));
    assert_null(strstr(text, "DCGM_FI_DEV_POWER_USAGE{"));
    assert_non_null(strstr(text, "tenant=\"\",job=\"\"} 79\n"));
    assert_int_equal(count(text, "\n" "DCGM_"), 1);
    free(text);
}

static void a_mig_instance_has_its_profile_and_gpu_instance_id(void **state)
{
    (void)state;
    gp_metrics_row r = row(0, "GPU-a", "nlp", "9");
    r.gi_id = 2;
    snprintf(r.mig_profile, sizeof r.mig_profile, "3g.40gb");
    gp_metrics_node n = {.name = "a100", .model = "A100", .n_rows = 1, .rows = &r};
    char *text = gp_agent_metrics_render(&n, 1, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "Hostname=\"a100\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",node=\"a100\""));
    free(text);
}

static void each_metric_is_described_once_over_every_node_and_labels_are_quoted(void **state)
{
    (void)state;
    gp_metrics_row a = row(0, "GPU-a", "odd\"name\\x", "1"), b = row(0, "GPU-b", "", "");
    gp_metrics_node n[2] = {{.name = "n1", .model = "T4", .n_rows = 1, .rows = &a},
                            {.name = "n2", .model = "T4", .n_rows = 1, .rows = &b}};
    char *text = gp_agent_metrics_render(n, 2, NULL);
    assert_non_null(text);
    assert_int_equal(count(text, "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"), 1);
    assert_int_equal(count(text, "DCGM_FI_DEV_GPU_TEMP{"), 2);
    const char *first = strstr(text, "DCGM_FI_DEV_GPU_TEMP{"), *help = strstr(text, "# HELP DCGM_FI_DEV_XID_ERRORS");
    assert_true(first < help && strstr(first + 1, "DCGM_FI_DEV_GPU_TEMP{") < help);
    assert_non_null(strstr(text, "tenant=\"odd\\\"name\\\\x\""));
    free(text);
}

static void start_times_are_two_histograms_with_and_without_a_pull(void **state)
{
    (void)state;
    gp_start_histogram starts[2] = {{.count = 1, .sum = 0.02}, {.count = 2, .sum = 3.5}};
    for (int b = 0; b < GP_AGENT_START_BUCKETS; b++) {
        starts[0].buckets[b] = 1;       /* 0.02 s: in every bucket */
        starts[1].buckets[b] = (b >= 3) + (b >= 6); /* 0.5 s and 3 s */
    }
    gp_metrics_node n = {.name = "n1", .model = "T4"};
    char *text = gp_agent_metrics_render(&n, 1, starts);
    assert_non_null(text);
    assert_int_equal(count(text, "# TYPE gpupool_agent_replica_start_seconds histogram"), 1);
    const char *lines[] = {"_bucket{image_pull=\"false\",le=\"0.05\"} 1\n", "_bucket{image_pull=\"true\",le=\"0.5\"} 1\n",
                           "_bucket{image_pull=\"true\",le=\"5\"} 2\n", "_bucket{image_pull=\"true\",le=\"+Inf\"} 2\n",
                           "_sum{image_pull=\"true\"} 3.500\n", "_count{image_pull=\"false\"} 1\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char line[160];
        snprintf(line, sizeof line, "gpupool_agent_replica_start_seconds%s", lines[i]);
        assert_non_null(strstr(text, line));
    }
    free(text);
    text = gp_agent_metrics_render(&n, 1, NULL);
    assert_null(strstr(text, "gpupool_agent_replica_start_seconds"));
    free(text);
}

static void a_bad_listen_address_is_refused_naming_the_option(void **state)
{
    (void)state;
    gp_agent_metrics *m = NULL;
    gp_error err;
    assert_int_equal(gp_agent_metrics_start("9400", NULL, 1, &m, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "metrics-listen");
    assert_null(m);
    assert_int_equal(gp_agent_metrics_start("nowhere:9400", NULL, 1, &m, &err), GP_ERR_INVALID);
    assert_null(m);
}

static void a_tcp_listener_needs_a_token_a_unix_socket_does_not(void **state)
{
    (void)state;
    gp_error err;
    gp_agent_metrics *m = NULL;
    assert_int_equal(gp_agent_metrics_check("127.0.0.1:9400", NULL, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "metrics-token-file");
    assert_int_equal(gp_agent_metrics_start(":0", NULL, 1, &m, &err), GP_ERR_INVALID);
    assert_null(m);
    assert_int_equal(gp_agent_metrics_check(":9400", "/etc/gpupool/metrics.token", &err), GP_OK);
    assert_int_equal(gp_agent_metrics_check("unix:/run/gpupool/metrics.sock", NULL, &err), GP_OK);
    assert_int_equal(gp_agent_metrics_check("unix:relative.sock", NULL, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "metrics-listen");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_running_gpu_carries_dcgm_names_labels_and_its_tenant_and_job),
        cmocka_unit_test(a_tcp_listener_needs_a_token_a_unix_socket_does_not),
        cmocka_unit_test(unknown_values_are_left_out_never_written_as_minus_one),
        cmocka_unit_test(a_mig_instance_has_its_profile_and_gpu_instance_id),
        cmocka_unit_test(each_metric_is_described_once_over_every_node_and_labels_are_quoted),
        cmocka_unit_test(a_bad_listen_address_is_refused_naming_the_option),
        cmocka_unit_test(start_times_are_two_histograms_with_and_without_a_pull),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
