/* test_gpu_sim.c - the sim GPU backend through the GPU interface (src/agent).
 *
 * Semantics under test:
 *  - a node file gives the inventory: names expanded by count, UUIDs
 *    derived from node name and index (stable, distinct) unless given,
 *    NVLink domains, blocks, sharing modes; the inventory's "node" object
 *    decodes with the API's node codec;
 *  - device nodes are the files of the device dir (stat'ed: stand-in files,
 *    or char devices with their major and minor when root can mknod), with
 *    nvidiactl, nvidia-uvm and a MIG instance's nvidia-caps files;
 *  - telemetry is a function of the seed and the calls made, and follows
 *    whether a process is on the GPU;
 *  - faults in the fault file become health events exactly once; faults
 *    already there at open count in the state only; a bad line is reported
 *    with its line and skipped;
 *  - MIG instances obey the profile placement rules;
 *  - bad node files and bad calls fail naming the field.
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
#include <signal.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/gpu/gpu.h"
#include "agent/gpu/gpu_json.h"
#include "agent/gpu/gpu_sim.h"
#include "spec/spec_json.h"

/* ---- a temporary folder per test ---- */

typedef struct fixture {
    char dir[64];
    char node_file[128];
    char fault_file[160];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/gp-agent-test-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->node_file, sizeof f->node_file, "%s/nodes.yaml", f->dir);
    snprintf(f->fault_file, sizeof f->fault_file, "%s.faults", f->node_file);
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

static void write_file(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

static void append_file(const char *path, const char *text)
{
    FILE *out = fopen(path, "a");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

static void open_node(const fixture *f, const char *node, uint64_t seed, gp_gpu *g)
{
    gp_error err;
    gp_gpu_options o = {.node_file = f->node_file, .node = node, .seed = seed};
    if (gp_gpu_open("sim", &o, g, &err) != GP_OK)
        fail_msg("open %s: %s (field %s)", node ? node : "(only)", err.message, err.field);
}

/* Opens the node and reads its inventory. */
static void open_inventory(const fixture *f, const char *node, uint64_t seed, gp_gpu *g, gp_node_inventory *inv)
{
    gp_error err;
    open_node(f, node, seed, g);
    if (gp_gpu_inventory(g, inv, &err) != GP_OK)
        fail_msg("inventory: %s", err.message);
}

static const char FLEET[] = "nodes:\n"
                            "  - name: h100-a\n"
                            "    count: 2\n"
                            "    block: blk-a\n"
                            "    gpu_type: H100\n"
                            "    gpus: 8\n"
                            "    nvlink_domains: 2\n"
                            "    gpu_mem_mib: 81920\n"
                            "  - name: mig-node\n"
                            "    gpu_type: H100\n"
                            "    gpus: 2\n"
                            "    gpu_mem_mib: 81920\n"
                            "    gpu_sharing: [mig, exclusive]\n"
                            "  - name: l40s\n"
                            "    gpu_type: L40S\n"
                            "    gpus: 2\n"
                            "    gpu_uuids: [GPU-given-0, GPU-given-1]\n"
                            "    sharing: timeslice\n";

/* ---- inventory ---- */

static void inventory_uuids_are_derived_from_node_and_index(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu a, again, b;
    gp_node_inventory ia, iagain, ib;
    open_inventory(f, "h100-a-0", 1, &a, &ia);
    open_inventory(f, "h100-a-0", 99, &again, &iagain);
    open_inventory(f, "h100-a-1", 1, &b, &ib);
    assert_int_equal(ia.gpu_count, 8);
    for (int g = 0; g < 8; g++) {
        assert_string_equal(ia.gpus[g].uuid, iagain.gpus[g].uuid); /* not the seed: the name and index */
        assert_int_equal(strlen(ia.gpus[g].uuid), 40);
        assert_memory_equal(ia.gpus[g].uuid, "GPU-", 4);
        for (int h = 0; h < 8; h++) {
            assert_string_not_equal(ia.gpus[g].uuid, ib.gpus[h].uuid);
            if (h != g)
                assert_string_not_equal(ia.gpus[g].uuid, ia.gpus[h].uuid);
        }
        assert_int_equal(ia.gpus[g].nvlink_domain, g / 4);
        assert_string_equal(ia.gpus[g].block, "blk-a");
        assert_int_equal(ia.gpus[g].sharing, GP_SHARING_EXCLUSIVE);
        assert_string_equal(ia.gpus[g].device_path, ""); /* no device_dir */
    }
    assert_string_equal(ia.model, "H100");
    gp_gpu_close(&a);
    gp_gpu_close(&again);
    gp_gpu_close(&b);
}

static void inventory_keeps_given_uuids_and_sharing_modes(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_node_inventory inv;
    open_inventory(f, "l40s", 0, &g, &inv);
    assert_string_equal(inv.gpus[1].uuid, "GPU-given-1");
    assert_int_equal(inv.gpus[1].sharing, GP_SHARING_TIMESLICE);
    gp_gpu_close(&g);
    open_inventory(f, "mig-node", 0, &g, &inv);
    assert_int_equal(inv.gpus[0].sharing, GP_SHARING_MIG);
    assert_int_equal(inv.gpus[1].sharing, GP_SHARING_EXCLUSIVE);
    gp_gpu_close(&g);
}

static void inventory_json_node_decodes_with_the_node_codec(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_node_inventory inv;
    gp_error err;
    open_inventory(f, "mig-node", 0, &g, &inv);
    json_t *o = gp_inventory_to_json(&inv);
    assert_non_null(o);
    static gp_node_request r;
    if (gp_node_request_parse(json_object_get(o, "node"), &r, &err) != GP_OK)
        fail_msg("%s (field %s)", err.message, err.field);
    assert_string_equal(r.name, "mig-node");
    assert_int_equal(r.spec.gpu_count, 2);
    assert_int_equal(r.spec.gpu_mem_mib, 81920);
    assert_string_equal(r.uuids[1], inv.gpus[1].uuid);
    assert_int_equal(r.gpu_sharing[0], GP_SHARING_MIG);
    json_t *gpus = json_object_get(o, "gpus");
    assert_int_equal(json_array_size(gpus), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(gpus, 1), "sharing")), "exclusive");
    assert_true(json_is_null(json_object_get(json_array_get(gpus, 1), "device")));
    json_decref(o);
    gp_gpu_close(&g);
}

static void one_node_file_opens_as_many_nodes(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, "nodes:\n  - {name: n, count: 50, gpu_type: H100, gpus: 8}\n");
    gp_node_file file;
    gp_error err;
    assert_int_equal(gp_node_file_load(f->node_file, &file, &err), GP_OK);
    assert_int_equal(file.n_nodes, 50);
    gp_gpu nodes[50];
    gp_node_inventory first, inv;
    for (size_t i = 0; i < 50; i++)
        assert_int_equal(gp_gpu_sim_open_node(&file, i, f->node_file, NULL, 7, &nodes[i], &err), GP_OK);
    gp_node_file_free(&file);
    assert_int_equal(gp_gpu_inventory(&nodes[0], &first, &err), GP_OK);
    for (size_t i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "n-%zu", i);
        assert_int_equal(gp_gpu_inventory(&nodes[i], &inv, &err), GP_OK);
        assert_string_equal(inv.name, name);
        if (i > 0)
            assert_string_not_equal(inv.gpus[0].uuid, first.gpus[0].uuid);
        gp_gpu_close(&nodes[i]);
    }
}

/* ---- device nodes ---- */

static void device_fleet(const fixture *f)
{
    char text[512], path[256];
    snprintf(text, sizeof text,
             "nodes:\n  - {name: d, gpu_type: H100, gpus: 2, gpu_mem_mib: 81920, gpu_sharing: [exclusive, mig],"
             " device_dir: %s/dev}\n",
             f->dir);
    write_file(f->node_file, text);
    snprintf(path, sizeof path, "%s/dev", f->dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/dev/nvidia-caps", f->dir);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void stand_in(const fixture *f, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/dev/%s", f->dir, name);
    write_file(path, "");
}

static void device_nodes_are_stated_from_the_device_dir(void **state)
{
    fixture *f = *state;
    device_fleet(f);
    stand_in(f, "nvidia0");
    stand_in(f, "nvidia1");
    stand_in(f, "nvidiactl");
    gp_gpu g;
    gp_node_inventory inv;
    gp_device_node dev[GP_GPU_DEVICES_MAX];
    size_t n = 99;
    gp_error err;
    open_inventory(f, NULL, 0, &g, &inv);
    char want[256];
    snprintf(want, sizeof want, "%s/dev/nvidia1", f->dir);
    assert_string_equal(inv.gpus[1].device_path, want);
    const char *uuids[] = {inv.gpus[1].uuid};
    /* nvidia-uvm is missing: named */
    assert_int_equal(gp_gpu_device_nodes(&g, uuids, 1, dev, GP_GPU_DEVICES_MAX, &n, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "device_dir");
    assert_non_null(strstr(err.message, "nvidia-uvm"));
    stand_in(f, "nvidia-uvm");
    assert_int_equal(gp_gpu_device_nodes(&g, uuids, 1, dev, GP_GPU_DEVICES_MAX, &n, &err), GP_OK);
    assert_int_equal(n, 3);
    assert_string_equal(dev[0].path, want);
    assert_false(dev[0].is_char);
    assert_non_null(strstr(dev[1].path, "/nvidiactl"));
    assert_non_null(strstr(dev[2].path, "/nvidia-uvm"));
    const char *stranger[] = {"GPU-not-here"};
    assert_int_equal(gp_gpu_device_nodes(&g, stranger, 1, dev, GP_GPU_DEVICES_MAX, &n, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "uuid");
    gp_gpu_close(&g);
}

static void device_nodes_of_a_mig_instance_include_its_caps(void **state)
{
    fixture *f = *state;
    device_fleet(f);
    stand_in(f, "nvidia1");
    stand_in(f, "nvidiactl");
    stand_in(f, "nvidia-uvm");
    gp_gpu g;
    gp_mig_instance a, b;
    gp_device_node dev[GP_GPU_DEVICES_MAX];
    size_t n;
    gp_error err;
    open_node(f, NULL, 0, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 1, "3g.40gb", 0, &a, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_create(&g, 1, "3g.40gb", 4, &b, &err), GP_OK);
    /* GPU 1: gi 1 -> cap 3 + 135 + 9 = 147, ci 148; gi 2 -> 156, 157 */
    assert_int_equal(a.gi_id, 1);
    assert_int_equal(b.gi_id, 2);
    stand_in(f, "nvidia-caps/nvidia-cap147");
    stand_in(f, "nvidia-caps/nvidia-cap148");
    stand_in(f, "nvidia-caps/nvidia-cap156");
    stand_in(f, "nvidia-caps/nvidia-cap157");
    const char *uuids[] = {a.uuid, b.uuid};
    assert_int_equal(gp_gpu_device_nodes(&g, uuids, 2, dev, GP_GPU_DEVICES_MAX, &n, &err), GP_OK);
    assert_int_equal(n, 7); /* nvidia1 once, four caps, ctl, uvm */
    assert_non_null(strstr(dev[0].path, "/nvidia1"));
    assert_non_null(strstr(dev[1].path, "nvidia-caps/nvidia-cap147"));
    assert_non_null(strstr(dev[2].path, "nvidia-caps/nvidia-cap148"));
    assert_non_null(strstr(dev[4].path, "nvidia-caps/nvidia-cap157"));
    gp_gpu_close(&g);
}

static void device_nodes_of_char_devices_carry_major_and_minor(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        print_message("not root: mknod of stand-in char devices skipped\n");
        skip();
    }
    device_fleet(f);
    const struct {
        const char *name;
        unsigned major, minor;
    } devs[] = {{"nvidia0", 195, 0}, {"nvidia1", 195, 1}, {"nvidiactl", 195, 255}, {"nvidia-uvm", 511, 0}};
    for (size_t i = 0; i < 4; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/dev/%s", f->dir, devs[i].name);
        assert_int_equal(mknod(path, S_IFCHR | 0600, makedev(devs[i].major, devs[i].minor)), 0);
    }
    gp_gpu g;
    gp_node_inventory inv;
    gp_device_node dev[GP_GPU_DEVICES_MAX];
    size_t n;
    gp_error err;
    open_inventory(f, NULL, 0, &g, &inv);
    const char *uuids[] = {inv.gpus[0].uuid};
    assert_int_equal(gp_gpu_device_nodes(&g, uuids, 1, dev, GP_GPU_DEVICES_MAX, &n, &err), GP_OK);
    assert_int_equal(n, 3);
    assert_true(dev[0].is_char);
    assert_int_equal(dev[0].major, 195);
    assert_int_equal(dev[0].minor, 0);
    assert_int_equal(dev[1].minor, 255);
    assert_int_equal(dev[2].major, 511);
    gp_gpu_close(&g);
}

/* ---- telemetry ---- */

static void run_script(const fixture *f, uint64_t seed, gp_telemetry *out)
{
    gp_gpu g;
    gp_node_inventory inv;
    gp_error err;
    open_inventory(f, "h100-a-0", seed, &g, &inv);
    assert_int_equal(gp_gpu_set_busy(&g, inv.gpus[3].uuid, 42, true, 10000, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 11500, &out[0], &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 60000, &out[1], &err), GP_OK);
    gp_gpu_close(&g);
}

static void telemetry_is_a_function_of_seed_and_calls(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    static gp_telemetry a[2], b[2], c[2];
    run_script(f, 5, a);
    run_script(f, 5, b);
    run_script(f, 6, c);
    assert_memory_equal(a, b, sizeof a);
    bool differs = false;
    for (int g = 0; g < 8; g++)
        differs = differs || a[1].gpus[g].power_w != c[1].gpus[g].power_w ||
                  a[1].gpus[g].memory_used_mib != c[1].gpus[g].memory_used_mib ||
                  a[1].gpus[g].temperature_c != c[1].gpus[g].temperature_c;
    assert_true(differs);
}

static void telemetry_follows_whether_a_process_runs(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_node_inventory inv;
    static gp_telemetry idle, rising, busy, ended;
    gp_error err;
    open_inventory(f, "h100-a-0", 3, &g, &inv);
    assert_int_equal(gp_gpu_telemetry(&g, 10000, &idle, &err), GP_OK);
    assert_int_equal(gp_gpu_set_busy(&g, inv.gpus[2].uuid, 4242, true, 10000, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 11500, &rising, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 20000, &busy, &err), GP_OK);
    assert_int_equal(gp_gpu_set_busy(&g, inv.gpus[2].uuid, 4242, false, 20000, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 30000, &ended, &err), GP_OK);

    assert_in_range(idle.gpus[2].sm_active_pct, 0, 1);
    assert_int_equal(idle.gpus[2].memory_used_mib, 0);
    assert_in_range(rising.gpus[2].sm_active_pct, 30, 60); /* half way up a 3 s ramp */
    assert_in_range(busy.gpus[2].sm_active_pct, 80, 96);
    assert_in_range(busy.gpus[2].memory_used_mib, 81920 * 3 / 10, 81920 * 8 / 10);
    assert_true(busy.gpus[2].power_w > idle.gpus[2].power_w + 400);
    assert_true(busy.gpus[2].temperature_c > idle.gpus[2].temperature_c + 30);
    assert_in_range(busy.gpus[5].sm_active_pct, 0, 1); /* the others stay idle */
    assert_int_equal(busy.n_processes, 1);
    assert_int_equal(busy.processes[0].pid, 4242);
    assert_string_equal(busy.processes[0].uuid, inv.gpus[2].uuid);
    assert_int_equal(busy.processes[0].memory_used_mib, busy.gpus[2].memory_used_mib);
    assert_in_range(ended.gpus[2].sm_active_pct, 0, 1);
    assert_int_equal(ended.gpus[2].memory_used_mib, 0);
    assert_int_equal(ended.n_processes, 0);
    assert_int_equal(gp_gpu_set_busy(&g, "GPU-nope", 1, true, 30000, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "uuid");
    assert_int_equal(gp_gpu_set_busy(&g, inv.gpus[2].uuid, 0, true, 30000, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "pid");
    gp_gpu_close(&g);
}

static void telemetry_of_a_mig_gpu_follows_its_busy_instances(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_mig_instance small, big;
    static gp_telemetry one, both;
    gp_error err;
    open_node(f, "mig-node", 0, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", -1, &small, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "3g.40gb", -1, &big, &err), GP_OK);
    assert_int_equal(gp_gpu_set_busy(&g, small.uuid, 10, true, 0, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 10000, &one, &err), GP_OK);
    assert_int_equal(gp_gpu_set_busy(&g, big.uuid, 11, true, 10000, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 20000, &both, &err), GP_OK);
    assert_in_range(one.gpus[0].sm_active_pct, 82 / 7, 96 / 7 + 1);       /* 1 of 7 slices */
    assert_in_range(both.gpus[0].sm_active_pct, 82 * 4 / 7, 96 * 4 / 7 + 1); /* 4 of 7 */
    assert_int_equal(both.n_processes, 2);
    gp_gpu_close(&g);
}

/* ---- faults ---- */

static void fault(const fixture *f, const char *node, gp_gpu_event_kind kind, int gpu, int64_t n)
{
    gp_node_file file;
    size_t index;
    gp_error err;
    assert_int_equal(gp_node_file_load(f->node_file, &file, &err), GP_OK);
    assert_int_equal(gp_node_file_find(&file, node, &index, &err), GP_OK);
    gp_gpu_event ev = {.kind = kind, .gpu = gpu, .xid = (int)n, .ecc_uncorrected = kind == GP_GPU_EVENT_ECC ? n : 0};
    if (gp_gpu_sim_fault_append(&file.nodes[index], f->fault_file, &ev, &err) != GP_OK)
        fail_msg("%s (field %s)", err.message, err.field);
    gp_node_file_free(&file);
}

static void faults_become_health_events_once_each(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_gpu_event ev[8];
    size_t n = 99;
    gp_error err;
    static gp_telemetry t;
    open_node(f, "h100-a-0", 0, &g);
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 8, &n, &err), GP_OK);
    assert_int_equal(n, 0);
    fault(f, "h100-a-0", GP_GPU_EVENT_XID, 3, 79);
    fault(f, "h100-a-1", GP_GPU_EVENT_XID, 4, 48); /* another node's */
    fault(f, "h100-a-0", GP_GPU_EVENT_ECC, 2, 1);
    fault(f, "h100-a-0", GP_GPU_EVENT_LOST, 0, 0);
    assert_int_equal(gp_gpu_poll_events(&g, 2000, 0, ev, 8, &n, &err), GP_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_XID);
    assert_int_equal(ev[0].gpu, 3);
    assert_int_equal(ev[0].xid, 79);
    assert_int_equal(ev[0].at_ms, 2000);
    assert_int_equal(ev[1].kind, GP_GPU_EVENT_ECC);
    assert_int_equal(ev[1].gpu, 2);
    assert_int_equal(ev[1].ecc_uncorrected, 1);
    assert_int_equal(ev[2].kind, GP_GPU_EVENT_LOST);
    assert_int_equal(ev[2].gpu, 0);
    gp_node_inventory inv;
    assert_int_equal(gp_gpu_inventory(&g, &inv, &err), GP_OK);
    assert_string_equal(ev[2].uuid, inv.gpus[0].uuid);
    assert_int_equal(gp_gpu_poll_events(&g, 3000, 0, ev, 8, &n, &err), GP_OK);
    assert_int_equal(n, 0); /* once each */
    assert_int_equal(gp_gpu_telemetry(&g, 3000, &t, &err), GP_OK);
    assert_int_equal(t.gpus[2].ecc_uncorrected, 1);
    assert_true(t.gpus[0].lost);
    assert_int_equal(t.gpus[0].sm_active_pct, -1);
    assert_false(t.gpus[1].lost);
    gp_gpu_close(&g);
}

static void health_fails_on_lost_or_ecc_until_a_reset(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_gpu_event ev[8];
    gp_gpu_health h;
    size_t n = 0;
    gp_error err;
    open_node(f, "h100-a-0", 0, &g);
    assert_int_equal(gp_gpu_check(&g, 2, 1000, &h, &err), GP_OK);
    assert_true(h.healthy);
    assert_string_equal(h.reason, "");
    fault(f, "h100-a-0", GP_GPU_EVENT_ECC, 2, 3);
    fault(f, "h100-a-0", GP_GPU_EVENT_LOST, 5, 0);
    fault(f, "h100-a-0", GP_GPU_EVENT_XID, 1, 13); /* an XID alone: the agent's table judges it */
    assert_int_equal(gp_gpu_poll_events(&g, 2000, 0, ev, 8, &n, &err), GP_OK);
    assert_int_equal(gp_gpu_check(&g, 2, 2000, &h, &err), GP_OK);
    assert_false(h.healthy);
    assert_int_equal(h.ecc_uncorrected, 3);
    assert_string_equal(h.reason, "3 uncorrected ECC errors (volatile)");
    assert_int_equal(gp_gpu_check(&g, 5, 2000, &h, &err), GP_OK);
    assert_false(h.healthy);
    assert_string_equal(h.reason, "fell off the bus");
    assert_int_equal(gp_gpu_check(&g, 1, 2000, &h, &err), GP_OK);
    assert_true(h.healthy);
    fault(f, "h100-a-0", GP_GPU_EVENT_RESET, 2, 0);
    fault(f, "h100-a-0", GP_GPU_EVENT_RESET, 5, 0);
    assert_int_equal(gp_gpu_poll_events(&g, 3000, 0, ev, 8, &n, &err), GP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_RESET);
    assert_int_equal(gp_gpu_check(&g, 2, 3000, &h, &err), GP_OK);
    assert_true(h.healthy);
    assert_int_equal(gp_gpu_check(&g, 5, 3000, &h, &err), GP_OK);
    assert_true(h.healthy);
    static gp_telemetry t;
    assert_int_equal(gp_gpu_telemetry(&g, 3000, &t, &err), GP_OK);
    assert_int_equal(t.gpus[2].ecc_uncorrected, 3); /* the total stays */
    assert_false(t.gpus[5].lost);
    assert_int_equal(gp_gpu_check(&g, 8, 3000, &h, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu");
    gp_gpu_close(&g);
}

static void faults_written_before_open_count_but_are_not_events(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    fault(f, "h100-a-0", GP_GPU_EVENT_ECC, 1, 5);
    fault(f, "h100-a-0", GP_GPU_EVENT_LOST, 6, 0);
    gp_gpu g;
    gp_gpu_event ev[4];
    size_t n = 99;
    gp_error err;
    static gp_telemetry t;
    open_node(f, "h100-a-0", 0, &g);
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 4, &n, &err), GP_OK);
    assert_int_equal(n, 0);
    assert_int_equal(gp_gpu_telemetry(&g, 1000, &t, &err), GP_OK);
    assert_int_equal(t.gpus[1].ecc_uncorrected, 5);
    assert_true(t.gpus[6].lost);
    gp_gpu_close(&g);
}

static void more_events_than_fit_come_with_the_next_poll(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_gpu_event ev[2];
    size_t n;
    gp_error err;
    open_node(f, "h100-a-0", 0, &g);
    for (int x = 1; x <= 3; x++)
        fault(f, "h100-a-0", GP_GPU_EVENT_XID, x, 30 + x);
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 2, &n, &err), GP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ev[1].xid, 32);
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 2, &n, &err), GP_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].xid, 33);
    gp_gpu_close(&g);
}

static void a_bad_fault_line_is_named_and_skipped(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_gpu_event ev[4];
    size_t n;
    gp_error err;
    open_node(f, "l40s", 0, &g);
    append_file(f->fault_file, "{\"gpu\": 1, \"xid\": 13}\n{\"gpu\": 9, \"xid\": 79}\n{\"gpu\": 0, \"lost\": true}\n");
    append_file(f->fault_file, "{\"gpu\": 0, \"xid\"");
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 4, &n, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu");
    char where[200];
    snprintf(where, sizeof where, "%s:2: ", f->fault_file);
    assert_non_null(strstr(err.message, where));
    assert_int_equal(n, 1); /* the line before it was delivered */
    assert_int_equal(ev[0].xid, 13);
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 4, &n, &err), GP_OK);
    assert_int_equal(n, 1); /* the lost GPU; the half-written line waits */
    assert_int_equal(ev[0].kind, GP_GPU_EVENT_LOST);
    append_file(f->fault_file, ": 43}\n{\"gpu\": 1, \"oops\": 1}\n");
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 4, &n, &err), GP_ERR_INVALID);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].xid, 43);
    assert_string_equal(err.field, "oops");
    gp_gpu_close(&g);
}

static void a_fault_is_checked_before_it_is_written(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_node_file file;
    gp_error err;
    assert_int_equal(gp_node_file_load(f->node_file, &file, &err), GP_OK);
    gp_gpu_event out_of_range = {.kind = GP_GPU_EVENT_XID, .gpu = 8, .xid = 79};
    gp_gpu_event no_errors = {.kind = GP_GPU_EVENT_ECC, .gpu = 1};
    assert_int_equal(gp_gpu_sim_fault_append(&file.nodes[0], f->fault_file, &out_of_range, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu");
    assert_int_equal(gp_gpu_sim_fault_append(&file.nodes[0], f->fault_file, &no_errors, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "ecc_uncorrected");
    struct stat st;
    assert_int_not_equal(stat(f->fault_file, &st), 0); /* nothing written */
    gp_node_file_free(&file);
}

/* The telemetry's process pid, or NULL. */
static const gp_gpu_process *process_of(const gp_telemetry *t, int pid)
{
    for (int i = 0; i < t->n_processes; i++)
        if (t->processes[i].pid == pid)
            return &t->processes[i];
    return NULL;
}

static void a_memory_line_lists_its_process_until_zero_or_gone(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_node_file file;
    gp_error err;
    gp_gpu g;
    gp_gpu_event ev[4];
    size_t n = 99;
    static gp_telemetry t;
    assert_int_equal(gp_node_file_load(f->node_file, &file, &err), GP_OK);
    open_node(f, file.nodes[0].name, 0, &g);
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    int me = (int)getpid();
    assert_int_equal(gp_gpu_sim_memory_append(&file.nodes[0], f->fault_file, 1, me, 9000, NULL, &err), GP_OK);
    assert_int_equal(gp_gpu_sim_memory_append(&file.nodes[0], f->fault_file, 1, (int)child, 500, "MIG-x", &err),
                     GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 1000, &t, &err), GP_OK);
    assert_null(process_of(&t, me)); /* taken up by the next poll, as every line */
    assert_int_equal(gp_gpu_poll_events(&g, 1000, 0, ev, 4, &n, &err), GP_OK);
    assert_int_equal(n, 0); /* state, not events */
    assert_int_equal(gp_gpu_telemetry(&g, 1000, &t, &err), GP_OK);
    const gp_gpu_process *p = process_of(&t, me);
    assert_non_null(p);
    assert_int_equal(p->memory_used_mib, 9000);
    assert_string_equal(p->uuid, t.gpus[1].uuid);
    assert_string_equal(process_of(&t, (int)child)->uuid, "MIG-x");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(gp_gpu_sim_memory_append(&file.nodes[0], f->fault_file, 1, me, 0, NULL, &err), GP_OK);
    assert_int_equal(gp_gpu_poll_events(&g, 2000, 0, ev, 4, &n, &err), GP_OK);
    assert_int_equal(gp_gpu_telemetry(&g, 2000, &t, &err), GP_OK);
    assert_null(process_of(&t, me));            /* 0 MiB: no longer listed */
    assert_null(process_of(&t, (int)child));    /* gone */
    assert_int_equal(gp_gpu_sim_memory_append(&file.nodes[0], f->fault_file, 1, 0, 5, NULL, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "pid");
    append_file(f->fault_file, "{\"gpu\": 1, \"pid\": 7, \"memory_mib\": 5, \"xid\": 79}\n");
    assert_int_equal(gp_gpu_poll_events(&g, 3000, 0, ev, 4, &n, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "pid");
    gp_gpu_close(&g);
    gp_node_file_free(&file);
}

/* ---- MIG ---- */

static void mig_instances_honour_profile_placement(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_mig_instance three, four, one, again;
    gp_node_inventory inv;
    gp_error err;
    open_node(f, "mig-node", 0, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "3g.40gb", 4, &three, &err), GP_OK);
    assert_memory_equal(three.uuid, "MIG-", 4);
    assert_int_equal(three.memory_mib, 40960);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "2g.20gb", 3, &one, &err), GP_ERR_INVALID); /* starts 0, 2, 4 */
    assert_string_equal(err.field, "start");
    assert_int_equal(gp_gpu_mig_create(&g, 0, "2g.20gb", 4, &one, &err), GP_ERR_CONFLICT); /* slices 4-7 taken */
    assert_string_equal(err.field, "start");
    assert_int_equal(gp_gpu_mig_create(&g, 0, "7g.80gb", -1, &one, &err), GP_ERR_CONFLICT);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "4g.40gb", -1, &four, &err), GP_OK);
    assert_int_equal(four.start, 0);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", -1, &one, &err), GP_ERR_CONFLICT); /* full */
    assert_int_equal(gp_gpu_inventory(&g, &inv, &err), GP_OK);
    assert_int_equal(inv.gpus[0].n_mig, 2);
    assert_string_equal(inv.gpus[0].mig[0].uuid, four.uuid); /* ordered by start */
    assert_string_equal(inv.gpus[0].mig[1].uuid, three.uuid);

    assert_int_equal(gp_gpu_set_busy(&g, four.uuid, 77, true, 0, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_destroy(&g, four.uuid, &err), GP_ERR_CONFLICT); /* in use */
    assert_int_equal(gp_gpu_set_busy(&g, four.uuid, 77, false, 0, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_destroy(&g, four.uuid, &err), GP_OK);
    assert_int_equal(gp_gpu_mig_destroy(&g, four.uuid, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "uuid");
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", -1, &one, &err), GP_OK);
    assert_int_equal(one.start, 0);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", -1, &again, &err), GP_OK);
    assert_int_equal(again.start, 1);
    assert_string_not_equal(one.uuid, again.uuid);
    gp_mig_instance two;
    assert_int_equal(gp_gpu_mig_destroy(&g, again.uuid, &err), GP_OK); /* slices 1-3 free */
    assert_int_equal(gp_gpu_mig_create(&g, 0, "2g.20gb", -1, &two, &err), GP_OK);
    assert_int_equal(two.start, 2); /* 2g starts at 0, 2 or 4: not at the free slice 1 */
    gp_gpu_close(&g);
}

static void mig_refuses_an_impossible_profile_or_gpu(void **state)
{
    fixture *f = *state;
    write_file(f->node_file, FLEET);
    gp_gpu g;
    gp_mig_instance mi;
    gp_error err;
    open_node(f, "mig-node", 0, &g);
    assert_int_equal(gp_gpu_mig_create(&g, 0, "5g.50gb", -1, &mi, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "profile");
    assert_non_null(strstr(err.message, "3g.40gb"));
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.5gb", -1, &mi, &err), GP_ERR_INVALID); /* A100-40GB's */
    assert_string_equal(err.field, "profile");
    assert_int_equal(gp_gpu_mig_create(&g, 1, "1g.10gb", -1, &mi, &err), GP_ERR_CONFLICT); /* exclusive GPU */
    assert_string_equal(err.field, "gpu");
    assert_int_equal(gp_gpu_mig_create(&g, 2, "1g.10gb", -1, &mi, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "gpu");
    assert_int_equal(gp_gpu_mig_create(&g, 0, "1g.10gb", 7, &mi, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "start");
    gp_gpu_close(&g);
}

/* ---- bad node files ---- */

static void open_fails(const fixture *f, const char *text, const char *node, gp_err code, const char *field,
                       const char *in_message)
{
    write_file(f->node_file, text);
    gp_gpu g;
    gp_error err;
    gp_gpu_options o = {.node_file = f->node_file, .node = node};
    gp_err rc = gp_gpu_open("sim", &o, &g, &err);
    if (rc != code || strcmp(err.field, field) != 0 || !strstr(err.message, in_message))
        fail_msg("%s: got %d field %s: %s", text, rc, err.field, err.message);
    assert_null(g.ops);
}

static void bad_node_files_fail_naming_the_field(void **state)
{
    fixture *f = *state;
    open_fails(f, "nodes:\n  - name: a\n    gpu_type: H100\n    gpus: \"8\"\n", NULL, GP_ERR_INVALID, "nodes[0].gpus",
               "nodes.yaml:4: nodes[0]: gpus must be an integer");
    open_fails(f, "nodes:\n  - {name: a, gpu_type: H100, gpus: 8, device_dri: /dev}\n", NULL, GP_ERR_INVALID,
               "nodes[0].device_dri", "device_dri");
    open_fails(f, "nodes:\n  - {name: a, gpu_type: H100, gpus: 8, device_dir: 5}\n", NULL, GP_ERR_INVALID,
               "nodes[0].device_dir", "device_dir");
    open_fails(f, "nodes:\n  - {name: a, gpu_type: H100, gpus: 8}\n  - {name: a, gpu_type: H100, gpus: 8}\n", "a",
               GP_ERR_INVALID, "nodes[1].name", "defined twice");
    open_fails(f, "nodes: []\n", NULL, GP_ERR_INVALID, "nodes", "at least one node");
    open_fails(f, "node: []\n", NULL, GP_ERR_INVALID, "node", "unknown field");
    open_fails(f, "nodes:\n  - {name: a, gpu_type: L40S, gpus: 2, gpu_mem_mib: 46068, sharing: mig}\n", NULL,
               GP_ERR_INVALID, "sharing", "no MIG profiles");
    open_fails(f, "nodes:\n  - {name: a, gpu_type: H100, gpus: 8}\n", "b", GP_ERR_NOT_FOUND, "node", "b");
    open_fails(f, "nodes:\n  - {name: a, count: 2, gpu_type: H100, gpus: 8}\n", NULL, GP_ERR_INVALID, "node",
               "name one");
    gp_gpu g;
    gp_error err;
    gp_gpu_options missing = {.node_file = "/nonexistent/nodes.yaml"};
    assert_int_equal(gp_gpu_open("sim", &missing, &g, &err), GP_ERR_NOT_FOUND);
    assert_string_equal(err.field, "node_file");
    assert_int_equal(gp_gpu_open("cuda", &missing, &g, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "backend");
}

static void a_bad_fault_file_fails_the_open_naming_its_line(void **state)
{
    fixture *f = *state;
    write_file(f->fault_file, "{\"gpu\": 0, \"xid\": 79}\n{\"gpu\": 0, \"xid\": 79, \"lost\": true}\n");
    open_fails(f, "nodes:\n  - {name: a, gpu_type: H100, gpus: 8}\n", NULL, GP_ERR_INVALID, "xid", ".faults:2: ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(inventory_uuids_are_derived_from_node_and_index, setup, teardown),
        cmocka_unit_test_setup_teardown(inventory_keeps_given_uuids_and_sharing_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(inventory_json_node_decodes_with_the_node_codec, setup, teardown),
        cmocka_unit_test_setup_teardown(one_node_file_opens_as_many_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(device_nodes_are_stated_from_the_device_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(device_nodes_of_a_mig_instance_include_its_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(device_nodes_of_char_devices_carry_major_and_minor, setup, teardown),
        cmocka_unit_test_setup_teardown(telemetry_is_a_function_of_seed_and_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(telemetry_follows_whether_a_process_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(telemetry_of_a_mig_gpu_follows_its_busy_instances, setup, teardown),
        cmocka_unit_test_setup_teardown(health_fails_on_lost_or_ecc_until_a_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(faults_become_health_events_once_each, setup, teardown),
        cmocka_unit_test_setup_teardown(faults_written_before_open_count_but_are_not_events, setup, teardown),
        cmocka_unit_test_setup_teardown(more_events_than_fit_come_with_the_next_poll, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_fault_line_is_named_and_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(a_fault_is_checked_before_it_is_written, setup, teardown),
        cmocka_unit_test_setup_teardown(a_memory_line_lists_its_process_until_zero_or_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_instances_honour_profile_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(mig_refuses_an_impossible_profile_or_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_node_files_fail_naming_the_field, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_fault_file_fails_the_open_naming_its_line, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
