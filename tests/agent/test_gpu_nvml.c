/* test_gpu_nvml.c - the nvml GPU backend against the stub NVML library
 * (tests/agent/nvml_stub.c, loaded with dlopen as the driver would be).
 *
 * Semantics under test:
 *  - the inventory: UUIDs, memory, PCI bus ids, minors and device paths as
 *    NVML gives them; the model from NVML's name as the fleet spells it;
 *    GPUs joined by NVLink share a domain, links that do not fit equal
 *    consecutive domains count as none; the node's name, zone, block and
 *    pool from the options;
 *  - MIG: instances created at the placement asked for (or the lowest free
 *    one), listed with profile, placement, ids and UUID by a second open;
 *    a start the profile may not use, taken slices, an unknown profile, a
 *    GPU not in MIG mode and a refused permission fail naming the field;
 *    destroying an instance a process runs on conflicts;
 *  - telemetry lists compute processes with memory, their MIG instance,
 *    and SM % where NVML has a sample (-1 where not);
 *  - XIDs come from the event set, each once; a lost GPU gives one LOST
 *    event and reads lost and unhealthy;
 *  - health readings and reasons, NOT_SUPPORTED readings at -1;
 *  - device nodes, with MIG access-file minors from a temp /proc tree;
 *  - no driver, a failed init and a GPU failing at open: one clear error.
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/gpu/gpu.h"

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/gp-nvml-test-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    setenv("GPUPOOL_NVML_STUB", f->dir, 1);
    *state = f;
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    fixture *f = *state;
    nftw(f->dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void write_at(const fixture *f, const char *name, const char *mode, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *out = fopen(path, mode);
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

static void write_file(const fixture *f, const char *name, const char *text)
{
    write_at(f, name, "w", text);
}

static void open_nvml(const fixture *f, gp_gpu *g)
{
    (void)f;
    gp_gpu_options o = {.node = "gpu-node-1", .nvml_library = GP_NVML_STUB, .zone = "z1", .block = "b1",
                        .pool = "p1"};
    gp_error err;
    gp_err rc = gp_gpu_open("nvml", &o, g, &err);
    if (rc)
        fail_msg("open: %s (field %s)", err.message, err.field);
}

static const char TWO_H100[] = "[{\"uuid\": \"GPU-aaaaaaaa-0000-4000-8000-000000000000\", \"minor\": 0},"
                               " {\"uuid\": \"GPU-bbbbbbbb-0000-4000-8000-000000000001\", \"minor\": 3,"
                               "  \"pci_bus_id\": \"00000000:9A:00.0\", \"cpus\": [0, 1, 2, 3, 64, 65, 127, 200]}]";

static const char MIG_H100[] = "[{\"uuid\": \"GPU-cccccccc-0000-4000-8000-000000000000\", \"mig_mode\": 1},"
                               " {\"uuid\": \"GPU-dddddddd-0000-4000-8000-000000000001\"}]";

/* ---- inventory ---- */

static void inventory_lists_gpus_as_nvml_gives_them(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", TWO_H100);
    gp_gpu g;
    static gp_node_inventory inv;
    gp_error err;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_inventory(&g, &inv, &err), GP_OK);
    assert_string_equal(inv.backend, "nvml");
    assert_string_equal(inv.driver_version, "580.159.04-stub");
    assert_string_equal(inv.name, "gpu-node-1");
    assert_string_equal(inv.model, "H100");
    assert_string_equal(inv.zone, "z1");
    assert_string_equal(inv.block, "b1");
    assert_string_equal(inv.pool, "p1");
    assert_true(inv.cpu_millis >= 1000 && inv.mem_mib > 0);
    assert_int_equal(inv.gpu_count, 2);
    assert_string_equal(inv.gpus[0].uuid, "GPU-aaaaaaaa-0000-4000-8000-000000000000");
    assert_string_equal(inv.gpus[1].uuid, "GPU-bbbbbbbb-0000-4000-8000-000000000001");
    assert_int_equal(inv.gpus[1].memory_mib, 81559);
    assert_int_equal(inv.gpus[1].minor, 3);
    assert_string_equal(inv.gpus[1].device_path, "/dev/nvidia3");
    assert_string_equal(inv.gpus[1].pci_bus_id, "00000000:9A:00.0");
    assert_string_equal(inv.gpus[1].block, "b1");
    assert_string_equal(inv.gpus[1].cpu_affinity, "0-3,64-65,127,200"); /* nvmlDeviceGetCpuAffinity's mask */
    assert_string_equal(inv.gpus[0].cpu_affinity, "");                  /* NOT_SUPPORTED: unknown */
    assert_int_equal(inv.gpus[0].sharing, GP_SHARING_EXCLUSIVE);
    assert_int_equal(inv.gpus[0].n_mig, 0);
    /* no NVLink (NOT_SUPPORTED, as on a PCIe H100): each GPU its own domain */
    assert_int_equal(inv.nvlink_domains, 2);
    assert_int_equal(inv.gpus[1].nvlink_domain, 1);
    gp_gpu_close(&g);
}

static void model_is_the_fleet_type_named_in_the_gpu_name(void **state)
{
    fixture *f = *state;
    static const char *const cases[][2] = {
        {"NVIDIA A100-SXM4-80GB", "A100"}, {"NVIDIA H200", "H200"},        {"NVIDIA L40S", "L40S"},
        {"NVIDIA L4", "L4"},               {"Tesla T4", "T4"},             {"NVIDIA GH200 480GB", "GH200"},
        {"NVIDIA H100 PCIe", "H100"},      {"NVIDIA RTX A4000", "RTX-A4000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[128];
        snprintf(text, sizeof text, "[{\"name\": \"%s\"}]", cases[i][0]);
        write_file(f, "gpus.json", text);
        gp_gpu g;
        static gp_node_inventory inv;
        open_nvml(f, &g);
        assert_int_equal(gp_gpu_inventory(&g, &inv, NULL), GP_OK);
        assert_string_equal(inv.model, cases[i][1]);
        gp_gpu_close(&g);
    }
}

static void nvlinked_gpus_share_a_domain(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json",
               "[{\"nvlink_peers\": [1, 1]}, {\"nvlink_peers\": [0, 0]}, {\"nvlink_peers\": [3]}, {\"nvlink_peers\": [2]}]");
    gp_gpu g;
    static gp_node_inventory inv;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_inventory(&g, &inv, NULL), GP_OK);
    assert_int_equal(inv.nvlink_domains, 2);
    int want[] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++)
        assert_int_equal(inv.gpus[i].nvlink_domain, want[i]);
    gp_gpu_close(&g);
    /* 0-2 and 1-3 linked: not consecutive domains, counted as none */
    write_file(f, "gpus.json",
               "[{\"nvlink_peers\": [2]}, {\"nvlink_peers\": [3]}, {\"nvlink_peers\": [0]}, {\"nvlink_peers\": [1]}]");
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_inventory(&g, &inv, NULL), GP_OK);
    assert_int_equal(inv.nvlink_domains, 4);
    assert_int_equal(inv.gpus[2].nvlink_domain, 2);
    gp_gpu_close(&g);
}

/* ---- MIG ---- */

static void mig_create_honours_the_placement_and_a_second_open_lists_it(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", MIG_H100);
    gp_gpu g, again;
    gp_mig_instance a, b;
    static gp_node_inventory inv;
    gp_error err;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "3g.40gb", 4, &a, &err), GP_OK);
    assert_int_equal(a.start, 4);
    assert_int_equal(a.size, 4);
    assert_string_equal(a.profile, "3g.40gb");
    assert_int_equal(a.memory_mib, 40448);
    assert_true(strncmp(a.uuid, "MIG-", 4) == 0);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", -1, &b, &err), GP_OK);
    assert_int_equal(b.start, 0); /* the lowest free start */
    assert_int_not_equal(a.gi_id, b.gi_id);
    open_nvml(f, &again);
    assert_int_equal(gp_gpu_inventory(&again, &inv, &err), GP_OK);
    assert_int_equal(inv.gpus[0].sharing, GP_SHARING_MIG);
    assert_int_equal(inv.gpus[0].n_mig, 2);
    assert_string_equal(inv.gpus[0].mig[0].uuid, b.uuid); /* ordered by start */
    assert_string_equal(inv.gpus[0].mig[1].uuid, a.uuid);
    assert_string_equal(inv.gpus[0].mig[1].profile, "3g.40gb");
    assert_int_equal(inv.gpus[0].mig[1].gi_id, a.gi_id);
    assert_int_equal(inv.gpus[1].sharing, GP_SHARING_EXCLUSIVE);
    gp_gpu_close(&again);
    gp_gpu_close(&g);
}

static void mig_create_refuses_bad_starts_profiles_and_gpus(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", MIG_H100);
    gp_gpu g;
    gp_mig_instance mi;
    gp_error err;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "2g.20gb", 3, &mi, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "start");
    assert_int_equal(gp_gpu_mig_create(&g, 0, "5g.50gb", -1, &mi, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "profile");
    assert_non_null(strstr(err.message, "3g.40gb"));
    assert_int_equal(gp_gpu_mig_create(&g, 0, "4g.40gb", 0, &mi, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", 2, &mi, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "start");
    assert_int_equal(gp_gpu_mig_create(&g, 0, "7g.80gb", -1, &mi, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "start");
    assert_int_equal(gp_gpu_mig_create(&g, 1, "1g.10gb", -1, &mi, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "gpu");
    assert_non_null(strstr(err.message, "not in MIG mode"));
    assert_int_equal(gp_gpu_mig_create(&g, 2, "1g.10gb", -1, &mi, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu");
    gp_gpu_close(&g);
}

static void mig_create_without_permission_says_so(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", MIG_H100);
    write_file(f, "errors", "nvmlDeviceCreateGpuInstanceWithPlacement NVML_ERROR_NO_PERMISSION\n");
    gp_gpu g;
    gp_mig_instance mi;
    static gp_node_inventory inv;
    gp_error err;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", -1, &mi, &err), GP_ERR_CONFLICT);
    assert_non_null(strstr(err.message, "Insufficient Permissions"));
    assert_int_equal(gp_gpu_inventory(&g, &inv, NULL), GP_OK);
    assert_int_equal(inv.gpus[0].n_mig, 0);
    gp_gpu_close(&g);
}

static void mig_destroy_conflicts_while_a_process_runs_on_it(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", MIG_H100);
    gp_gpu g;
    gp_mig_instance mi;
    static gp_node_inventory inv;
    gp_error err;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "2g.20gb", 2, &mi, &err), GP_OK);
    char line[64];
    snprintf(line, sizeof line, "0 777 1024 50 %d\n", mi.gi_id);
    write_file(f, "processes", line);
    assert_int_equal(gp_gpu_mig_destroy(&g, mi.uuid, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "uuid");
    write_file(f, "processes", "");
    assert_int_equal(gp_gpu_mig_destroy(&g, mi.uuid, &err), GP_OK);
    assert_int_equal(gp_gpu_inventory(&g, &inv, NULL), GP_OK);
    assert_int_equal(inv.gpus[0].n_mig, 0);
    assert_int_equal(gp_gpu_mig_destroy(&g, mi.uuid, &err), GP_ERR_NOT_FOUND);
    assert_int_equal(gp_gpu_mig_destroy(&g, "GPU-cccccccc-0000-4000-8000-000000000000", &err), GP_ERR_NOT_FOUND);
    gp_gpu_close(&g);
}

/* ---- telemetry ---- */

static void telemetry_lists_processes_with_memory_and_sm(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", MIG_H100);
    gp_gpu g;
    gp_mig_instance mi;
    static gp_telemetry t;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", 5, &mi, NULL), GP_OK);
    char text[128];
    snprintf(text, sizeof text, "1 4242 2048 61\n1 4343 512\n0 5151 900 30 %d\n", mi.gi_id);
    write_file(f, "processes", text);
    assert_int_equal(gp_gpu_telemetry(&g, 1000, &t, NULL), GP_OK);
    assert_int_equal(t.n_gpus, 2);
    assert_int_equal(t.gpus[1].sm_active_pct, 61);
    assert_int_equal(t.gpus[1].memory_used_mib, 2560);
    assert_int_equal(t.gpus[1].power_w, 78);
    assert_false(t.gpus[1].lost);
    assert_int_equal(t.n_processes, 3);
    assert_int_equal(t.processes[0].pid, 5151);
    assert_string_equal(t.processes[0].uuid, mi.uuid); /* its MIG instance */
    assert_int_equal(t.processes[0].sm_active_pct, 30);
    assert_int_equal(t.processes[1].pid, 4242);
    assert_string_equal(t.processes[1].uuid, "GPU-dddddddd-0000-4000-8000-000000000001");
    assert_int_equal(t.processes[1].memory_used_mib, 2048);
    assert_int_equal(t.processes[1].sm_active_pct, 61);
    assert_int_equal(t.processes[2].pid, 4343);
    assert_int_equal(t.processes[2].sm_active_pct, -1); /* no sample */
    gp_gpu_close(&g);
}

static void an_unsupported_process_list_is_empty_and_a_missing_sample_unknown(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", TWO_H100);
    write_file(f, "processes", "0 99 100\n");
    write_file(f, "errors", "nvmlDeviceGetComputeRunningProcesses_v3 NVML_ERROR_NOT_SUPPORTED\n");
    gp_gpu g;
    static gp_telemetry t;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_telemetry(&g, 0, &t, NULL), GP_OK);
    /* NOT_SUPPORTED: no list, not an error */
    assert_int_equal(t.n_processes, 0);
    write_file(f, "errors", "");
    assert_int_equal(gp_gpu_telemetry(&g, 0, &t, NULL), GP_OK);
    assert_int_equal(t.n_processes, 1);
    assert_int_equal(t.processes[0].memory_used_mib, 100);
    assert_int_equal(t.processes[0].sm_active_pct, -1);
    gp_gpu_close(&g);
}

/* ---- events and lost GPUs ---- */

static void xid_and_ecc_events_arrive_once_each(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", TWO_H100);
    write_file(f, "events", "1 79\n0 13\n");
    gp_gpu g;
    gp_gpu_event ev[4];
    size_t n = 9;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_poll_events(&g, 5000, 0, ev, 4, &n, NULL), GP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_XID);
    assert_int_equal(ev[0].gpu, 1);
    assert_int_equal(ev[0].xid, 79);
    assert_string_equal(ev[0].uuid, "GPU-bbbbbbbb-0000-4000-8000-000000000001");
    assert_int_equal(ev[0].at_ms, 5000);
    assert_int_equal(ev[1].xid, 13);
    assert_int_equal(gp_gpu_poll_events(&g, 6000, 0, ev, 4, &n, NULL), GP_OK);
    assert_int_equal(n, 0);
    write_at(f, "events", "a", "0 48\n");
    assert_int_equal(gp_gpu_poll_events(&g, 7000, 0, ev, 1, &n, NULL), GP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].xid, 48);
    /* ECC events: a double-bit error is one uncorrected, a single-bit one one corrected */
    write_at(f, "events", "a", "1 ecc_double\n0 ecc_single\n");
    assert_int_equal(gp_gpu_poll_events(&g, 8000, 0, ev, 4, &n, NULL), GP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_ECC);
    assert_int_equal(ev[0].gpu, 1);
    assert_int_equal(ev[0].ecc_uncorrected, 1);
    assert_int_equal(ev[0].ecc_corrected, 0);
    assert_int_equal(ev[1].kind, GP_GPU_EVENT_ECC);
    assert_int_equal(ev[1].gpu, 0);
    assert_int_equal(ev[1].ecc_corrected, 1);
    assert_int_equal(ev[1].ecc_uncorrected, 0);
    gp_gpu_close(&g);
}

static void a_lost_gpu_gives_one_lost_event_and_reads_lost(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", TWO_H100);
    gp_gpu g;
    gp_gpu_event ev[4];
    size_t n = 0;
    static gp_telemetry t;
    gp_gpu_health h;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_check(&g, 1, 0, &h, NULL), GP_OK);
    assert_true(h.healthy);
    write_file(f, "health", "1 lost 1\n");
    assert_int_equal(gp_gpu_poll_events(&g, 0, 0, ev, 4, &n, NULL), GP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_LOST);
    assert_int_equal(ev[0].gpu, 1);
    assert_int_equal(gp_gpu_poll_events(&g, 0, 0, ev, 4, &n, NULL), GP_OK);
    assert_int_equal(n, 0);
    assert_int_equal(gp_gpu_telemetry(&g, 0, &t, NULL), GP_OK);
    assert_true(t.gpus[1].lost);
    assert_int_equal(t.gpus[1].sm_active_pct, -1);
    assert_false(t.gpus[0].lost);
    assert_int_equal(gp_gpu_check(&g, 1, 0, &h, NULL), GP_OK);
    assert_false(h.healthy);
    assert_string_equal(h.reason, "fell off the bus");
    gp_gpu_close(&g);
}

static void gpu_is_lost_from_any_call_is_one_lost_event(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", TWO_H100);
    gp_gpu g;
    gp_gpu_event ev[4];
    size_t n = 0;
    static gp_telemetry t;
    open_nvml(f, &g);
    write_file(f, "errors", "nvmlDeviceGetUtilizationRates NVML_ERROR_GPU_IS_LOST 0\n");
    assert_int_equal(gp_gpu_telemetry(&g, 0, &t, NULL), GP_OK);
    assert_true(t.gpus[0].lost);
    assert_int_equal(gp_gpu_poll_events(&g, 0, 0, ev, 4, &n, NULL), GP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_LOST);
    assert_int_equal(ev[0].gpu, 0);
    gp_gpu_close(&g);
}

/* ---- health ---- */

static void health_reads_ecc_remapping_retirement_and_recovery(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", TWO_H100);
    gp_gpu g;
    gp_gpu_health h;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_check(&g, 0, 0, &h, NULL), GP_OK);
    assert_true(h.healthy);
    assert_string_equal(h.reason, "");
    assert_int_equal(h.ecc_uncorrected, 0);
    assert_int_equal(h.remap_pending, 0);
    assert_int_equal(h.remap_failed, 0);
    assert_int_equal(h.retired_pages_pending, 0);
    assert_int_equal(h.recovery_action, 0);
    static const char *const cases[][2] = {
        {"0 ecc_volatile_uncorrected 2\n", "2 uncorrected ECC errors (volatile)"},
        {"0 remap_pending 1\n", "row remapping pending (a reset applies it)"},
        {"0 remap_failed 1\n0 remap_pending 1\n", "row remapping failed"},
        {"0 retired_pending 1\n", "page retirement pending (a reset applies it)"},
        {"0 recovery_action 2\n0 ecc_volatile_uncorrected 1\n", "recovery action: reboot the node"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_file(f, "health", cases[i][0]);
        assert_int_equal(gp_gpu_check(&g, 0, 0, &h, NULL), GP_OK);
        assert_false(h.healthy);
        assert_string_equal(h.reason, cases[i][1]);
    }
    write_file(f, "health", ""); /* mended */
    assert_int_equal(gp_gpu_check(&g, 0, 0, &h, NULL), GP_OK);
    assert_true(h.healthy);
    gp_error err;
    assert_int_equal(gp_gpu_check(&g, 2, 0, &h, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu");
    gp_gpu_close(&g);
}

static void not_supported_readings_are_unknown_not_failures(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", "[{\"recovery_action\": -1}]");
    write_file(f, "errors",
               "nvmlDeviceGetRemappedRows NVML_ERROR_NOT_SUPPORTED\n"
               "nvmlDeviceGetRetiredPagesPendingStatus NVML_ERROR_NOT_SUPPORTED\n"
               "nvmlDeviceGetTotalEccErrors NVML_ERROR_NOT_SUPPORTED\n"
               "nvmlDeviceGetPowerUsage NVML_ERROR_NOT_SUPPORTED\n");
    gp_gpu g;
    gp_gpu_health h;
    static gp_telemetry t;
    open_nvml(f, &g);
    assert_int_equal(gp_gpu_check(&g, 0, 0, &h, NULL), GP_OK);
    assert_true(h.healthy);
    assert_int_equal(h.ecc_uncorrected, -1);
    assert_int_equal(h.remap_pending, -1);
    assert_int_equal(h.remap_failed, -1);
    assert_int_equal(h.retired_pages_pending, -1);
    assert_int_equal(h.recovery_action, -1);
    assert_int_equal(gp_gpu_telemetry(&g, 0, &t, NULL), GP_OK);
    assert_int_equal(t.gpus[0].power_w, -1);
    assert_int_equal(t.gpus[0].ecc_uncorrected, -1);
    assert_int_equal(t.gpus[0].temperature_c, 31);
    gp_gpu_close(&g);
}

/* ---- device nodes ---- */

static void make_tree(const fixture *f, const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, rel);
    for (char *p = path + strlen(f->dir) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
}

static void touch(const fixture *f, const char *rel, const char *text)
{
    make_tree(f, rel);
    write_file(f, rel, text);
}

static void device_nodes_include_the_mig_access_files(void **state)
{
    fixture *f = *state;
    write_file(f, "gpus.json", MIG_H100);
    char dev[128], proc[128], want[256];
    snprintf(dev, sizeof dev, "%s/dev", f->dir);
    snprintf(proc, sizeof proc, "%s/proc", f->dir);
    gp_gpu_options o = {.node = "n", .nvml_library = GP_NVML_STUB, .device_dir = dev, .proc_dir = proc};
    gp_gpu g;
    gp_mig_instance mi;
    gp_device_node nodes[GP_GPU_DEVICES_MAX];
    size_t n = 0;
    gp_error err;
    assert_int_equal(gp_gpu_open("nvml", &o, &g, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "3g.40gb", 0, &mi, &err), GP_OK);
    touch(f, "dev/nvidia0", "");
    touch(f, "dev/nvidia1", "");
    touch(f, "dev/nvidiactl", "");
    touch(f, "dev/nvidia-uvm", "");
    touch(f, "dev/nvidia-caps/nvidia-cap21", "");
    touch(f, "dev/nvidia-caps/nvidia-cap22", "");
    char rel[128];
    snprintf(rel, sizeof rel, "proc/driver/nvidia/capabilities/gpu0/mig/gi%d/access", mi.gi_id);
    touch(f, rel, "DeviceFileMinor: 21\nDeviceFileMode: 292\n");
    snprintf(rel, sizeof rel, "proc/driver/nvidia/capabilities/gpu0/mig/gi%d/ci%d/access", mi.gi_id, mi.ci_id);
    touch(f, rel, "DeviceFileMinor: 22\n");
    const char *uuids[] = {mi.uuid};
    assert_int_equal(gp_gpu_device_nodes(&g, uuids, 1, nodes, GP_GPU_DEVICES_MAX, &n, &err), GP_OK);
    assert_int_equal(n, 5);
    const char *names[] = {"nvidia0", "nvidia-caps/nvidia-cap21", "nvidia-caps/nvidia-cap22", "nvidiactl", "nvidia-uvm"};
    for (size_t i = 0; i < 5; i++) {
        snprintf(want, sizeof want, "%s/%s", dev, names[i]);
        assert_string_equal(nodes[i].path, want);
        assert_false(nodes[i].is_char); /* stand-in files */
    }
    touch(f, "dev/nvidia-uvm-tools", "");
    const char *gpu1[] = {"GPU-dddddddd-0000-4000-8000-000000000001"};
    assert_int_equal(gp_gpu_device_nodes(&g, gpu1, 1, nodes, GP_GPU_DEVICES_MAX, &n, &err), GP_OK);
    assert_int_equal(n, 4);
    snprintf(want, sizeof want, "%s/nvidia1", dev);
    assert_string_equal(nodes[0].path, want);
    const char *unknown[] = {"GPU-00000000-0000-0000-0000-000000000000"};
    assert_int_equal(gp_gpu_device_nodes(&g, unknown, 1, nodes, GP_GPU_DEVICES_MAX, &n, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "uuid");
    snprintf(want, sizeof want, "%s/nvidia1", dev);
    remove(want);
    assert_int_equal(gp_gpu_device_nodes(&g, gpu1, 1, nodes, GP_GPU_DEVICES_MAX, &n, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "device_dir");
    gp_gpu_close(&g);
}

/* ---- no driver ---- */

static void no_driver_is_one_clear_error(void **state)
{
    (void)state;
    gp_gpu_options o = {.nvml_library = "/nonexistent/libnvidia-ml.so.1"};
    gp_gpu g;
    gp_error err;
    assert_int_equal(gp_gpu_open("nvml", &o, &g, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "nvml_library");
    assert_true(strncmp(err.message, "no NVIDIA driver: /nonexistent/libnvidia-ml.so.1: cannot open", 61) == 0);
    assert_null(strchr(err.message, '\n'));
    assert_null(g.ops);
}

static void a_failed_init_or_gpu_fails_the_open_naming_it(void **state)
{
    fixture *f = *state;
    gp_gpu_options o = {.nvml_library = GP_NVML_STUB};
    gp_gpu g;
    gp_error err;
    /* no gpus.json: the stub's driver is "not loaded" */
    assert_int_equal(gp_gpu_open("nvml", &o, &g, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.message, "no NVIDIA driver: nvmlInit_v2: Driver Not Loaded (NVML error 9)");
    write_file(f, "gpus.json", TWO_H100);
    write_file(f, "errors", "nvmlDeviceGetHandleByIndex_v2 NVML_ERROR_GPU_IS_LOST 1\n");
    assert_int_equal(gp_gpu_open("nvml", &o, &g, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "gpu");
    assert_string_equal(err.message, "GPU 1: nvmlDeviceGetHandleByIndex_v2: GPU is lost (NVML error 15)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(inventory_lists_gpus_as_nvml_gives_them, setup, teardown),
        cmocka_unit_test_setup_teardown(model_is_the_fleet_type_named_in_the_gpu_name, setup, teardown),
        cmocka_unit_test_setup_teardown(nvlinked_gpus_share_a_domain, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_create_honours_the_placement_and_a_second_open_lists_it, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_create_refuses_bad_starts_profiles_and_gpus, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_create_without_permission_says_so, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_destroy_conflicts_while_a_process_runs_on_it, setup, teardown),
        cmocka_unit_test_setup_teardown(telemetry_lists_processes_with_memory_and_sm, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unsupported_process_list_is_empty_and_a_missing_sample_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(xid_and_ecc_events_arrive_once_each, setup, teardown),
        cmocka_unit_test_setup_teardown(a_lost_gpu_gives_one_lost_event_and_reads_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(gpu_is_lost_from_any_call_is_one_lost_event, setup, teardown),
        cmocka_unit_test_setup_teardown(health_reads_ecc_remapping_retirement_and_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(not_supported_readings_are_unknown_not_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(device_nodes_include_the_mig_access_files, setup, teardown),
        cmocka_unit_test_setup_teardown(no_driver_is_one_clear_error, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failed_init_or_gpu_fails_the_open_naming_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
