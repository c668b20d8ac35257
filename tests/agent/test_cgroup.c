/* test_cgroup.c - the cgroup layout of a host, the limits' values, the
 * device rules as v1 text and as the v2 eBPF program (run here by a tiny
 * interpreter of the instructions it uses, and loaded into the kernel
 * when root), and a v1 group's files.  Tests that need root or the v1
 * controllers skip where they are missing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/launch/cgroup.h"
#include "agent/launch/devices.h"

/* This project's test machines: v1 controllers, cgroup2 with hugetlb only. */
static const char hybrid_mountinfo[] =
    "22 1 0:21 / / rw,relatime - overlay overlay rw\n"
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "35 30 0:32 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "36 30 0:33 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/* A systemd host: cgroup2 at /sys/fs/cgroup, an optional field before "-". */
static const char unified_mountinfo[] =
    "25 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw\n"
    "33 25 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";

/* Older systemd: cpu and cpuacct mounted together. */
static const char joint_mountinfo[] =
    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";

static void a_hybrid_host_uses_the_v1_controllers(void **state)
{
    (void)state;
    gp_cgroup_host host;
    gp_cgroup_host_from_mounts(&host, hybrid_mountinfo, "hugetlb\n");
    assert_int_equal(host.layout, GP_CGROUP_V1);
    assert_string_equal(host.v1_mount[GP_CGROUP_MEMORY], "/sys/fs/cgroup/memory");
    assert_string_equal(host.v1_mount[GP_CGROUP_CPU], "/sys/fs/cgroup/cpu");
    assert_string_equal(host.v1_mount[GP_CGROUP_PIDS], "/sys/fs/cgroup/pids");
    assert_string_equal(host.v1_mount[GP_CGROUP_DEVICES], "/sys/fs/cgroup/devices");
    assert_string_equal(host.v1_mount[GP_CGROUP_FREEZER], "/sys/fs/cgroup/freezer");
    assert_string_equal(host.v2_mount, "/sys/fs/cgroup/unified");
    assert_string_equal(gp_cgroup_layout_name(host.layout), "v1");
}

static void a_unified_host_with_the_controllers_uses_v2(void **state)
{
    (void)state;
    gp_cgroup_host host;
    gp_cgroup_host_from_mounts(&host, unified_mountinfo, "cpuset cpu io memory hugetlb pids rdma misc\n");
    assert_int_equal(host.layout, GP_CGROUP_V2);
    assert_string_equal(host.v2_mount, "/sys/fs/cgroup");
    gp_cgroup_host_from_mounts(&host, unified_mountinfo, "cpuset cpu io hugetlb\n");
    assert_int_equal(host.layout, GP_CGROUP_NONE);
    gp_cgroup_host_from_mounts(&host, "", "");
    assert_int_equal(host.layout, GP_CGROUP_NONE);
}

static void a_joint_cpu_cpuacct_mount_serves_cpu_and_a_prefix_is_no_match(void **state)
{
    (void)state;
    gp_cgroup_host host;
    gp_cgroup_host_from_mounts(&host, joint_mountinfo, NULL);
    assert_int_equal(host.layout, GP_CGROUP_V1);
    assert_string_equal(host.v1_mount[GP_CGROUP_CPU], "/sys/fs/cgroup/cpu,cpuacct");
    gp_cgroup_host_from_mounts(&host, "31 30 0:28 / /x rw - cgroup cgroup rw,cpuacct\n", NULL);
    assert_string_equal(host.v1_mount[GP_CGROUP_CPU], "");
}

static void a_cgroup_parent_that_climbs_out_is_refused(void **state)
{
    (void)state;
    gp_cgroup_host host;
    gp_error err;
    const char *bad[] = {"../escape", "/abs", "a//b", "a/", "sp ace", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gp_cgroup_host_detect(&host, bad[i], &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "cgroup_parent");
    }
    assert_int_equal(gp_cgroup_host_detect(&host, "gpupool/replicas", &err), GP_OK);
    assert_string_equal(host.parent, "gpupool/replicas");
}

static void half_a_core_is_half_of_every_period(void **state)
{
    (void)state;
    unsigned long quota, period;
    gp_cgroup_cpu_quota(500, &quota, &period);
    assert_int_equal(period, 100000);
    assert_int_equal(quota, 50000);
    gp_cgroup_cpu_quota(16000, &quota, &period);
    assert_int_equal(quota, 1600000);
}

static void device_rules_read_as_v1_text(void **state)
{
    (void)state;
    char text[64];
    gp_device_rule gpu = {'c', 195, 0, GP_DEVICE_READ | GP_DEVICE_WRITE};
    gp_device_rule pts = {'c', 136, GP_DEVICE_ANY, GP_DEVICE_READ | GP_DEVICE_WRITE};
    gp_device_rule disk = {'b', 8, 0, GP_DEVICE_READ | GP_DEVICE_MKNOD};
    gp_device_rule_text(&gpu, text, sizeof text);
    assert_string_equal(text, "c 195:0 rw");
    gp_device_rule_text(&pts, text, sizeof text);
    assert_string_equal(text, "c 136:* rw");
    gp_device_rule_text(&disk, text, sizeof text);
    assert_string_equal(text, "b 8:0 rm");
}

static void the_defaults_come_first_and_a_path_adds_its_node(void **state)
{
    (void)state;
    gp_device_rule rules[GP_DEVICE_RULES_MAX];
    size_t n = 0;
    const char *paths[] = {"/dev/null", NULL};
    assert_int_equal(gp_device_rules_for(paths, rules, GP_DEVICE_RULES_MAX, &n, NULL), GP_OK);
    assert_int_equal(n, GP_DEVICE_DEFAULT_COUNT + 1);
    assert_int_equal(rules[n - 1].type, 'c');
    assert_int_equal(rules[n - 1].major, 1);
    assert_int_equal(rules[n - 1].minor, 3);
    gp_error err;
    const char *not_device[] = {"/etc/passwd", NULL};
    assert_int_equal(gp_device_rules_for(not_device, rules, GP_DEVICE_RULES_MAX, &n, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "devices");
    const char *missing[] = {"/dev/no-such-gpu", NULL};
    assert_int_equal(gp_device_rules_for(missing, rules, GP_DEVICE_RULES_MAX, &n, &err), GP_ERR_INVALID);
    assert_non_null(strstr(err.message, "/dev/no-such-gpu"));
}

/* Runs the device program on one access the way the kernel would: r1
 * points at {access_type, major, minor}; returns r0.  Knows only the
 * instructions gp_devices_bpf_program writes. */
static int64_t run_device_program(const struct bpf_insn *insns, size_t count, int type, int access, uint32_t major,
                                  uint32_t minor)
{
    uint32_t ctx[3] = {(uint32_t)((access << 16) | type), major, minor};
    uint64_t r[11] = {0};
    for (size_t pc = 0; pc < count; pc++) {
        const struct bpf_insn *in = &insns[pc];
        uint64_t imm = (uint64_t)(int64_t)in->imm;
        switch (in->code) {
        case BPF_LDX | BPF_MEM | BPF_W:
            assert_int_equal(in->src_reg, BPF_REG_1);
            r[in->dst_reg] = ctx[in->off / 4];
            break;
        case BPF_ALU64 | BPF_AND | BPF_K: r[in->dst_reg] &= imm; break;
        case BPF_ALU64 | BPF_RSH | BPF_K: r[in->dst_reg] >>= imm; break;
        case BPF_ALU64 | BPF_MOV | BPF_K: r[in->dst_reg] = imm; break;
        case BPF_ALU64 | BPF_MOV | BPF_X: r[in->dst_reg] = r[in->src_reg]; break;
        case BPF_JMP | BPF_JNE | BPF_K:
            if (r[in->dst_reg] != imm) {
                pc += (size_t)in->off;
            }
            break;
        case BPF_JMP | BPF_EXIT: return (int64_t)r[0];
        default: fail_msg("instruction %zu: unexpected code 0x%x", pc, in->code);
        }
    }
    fail_msg("the program ran off its end");
    return -1;
}

static void the_v2_program_allows_only_the_listed_devices(void **state)
{
    (void)state;
    gp_device_rule rules[] = {
        {'c', 1, 3, GP_DEVICE_READ | GP_DEVICE_WRITE},
        {'c', 136, GP_DEVICE_ANY, GP_DEVICE_READ | GP_DEVICE_WRITE},
        {'c', 195, 0, GP_DEVICE_READ | GP_DEVICE_WRITE},
    };
    struct bpf_insn insns[GP_DEVICE_BPF_INSNS_MAX];
    size_t count = gp_devices_bpf_program(rules, 3, insns, GP_DEVICE_BPF_INSNS_MAX);
    assert_true(count > 0);
    const int chr = BPF_DEVCG_DEV_CHAR, blk = BPF_DEVCG_DEV_BLOCK;
    const int rd = BPF_DEVCG_ACC_READ, wr = BPF_DEVCG_ACC_WRITE, mk = BPF_DEVCG_ACC_MKNOD;
    assert_int_equal(run_device_program(insns, count, chr, rd | wr, 195, 0), 1);
    assert_int_equal(run_device_program(insns, count, chr, rd, 195, 1), 0);       /* another GPU */
    assert_int_equal(run_device_program(insns, count, chr, rd, 195, 255), 0);     /* nvidiactl not listed */
    assert_int_equal(run_device_program(insns, count, chr, mk, 195, 0), 0);       /* no mknod */
    assert_int_equal(run_device_program(insns, count, blk, rd, 195, 0), 0);       /* a block device */
    assert_int_equal(run_device_program(insns, count, chr, wr, 1, 3), 1);         /* /dev/null */
    assert_int_equal(run_device_program(insns, count, chr, rd | wr, 136, 7), 1);  /* /dev/pts/7 */
    assert_int_equal(run_device_program(insns, count, chr, rd, 1, 4), 0);
}

static void no_rules_deny_everything_and_too_small_a_buffer_is_refused(void **state)
{
    (void)state;
    struct bpf_insn insns[GP_DEVICE_BPF_INSNS_MAX];
    size_t count = gp_devices_bpf_program(NULL, 0, insns, GP_DEVICE_BPF_INSNS_MAX);
    assert_int_equal(run_device_program(insns, count, BPF_DEVCG_DEV_CHAR, BPF_DEVCG_ACC_READ, 1, 3), 0);
    gp_device_rule one = {'c', 1, 3, GP_DEVICE_READ};
    assert_int_equal(gp_devices_bpf_program(&one, 1, insns, count), 0);
}

static void the_kernel_accepts_the_v2_program(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        skip();
    }
    gp_cgroup_host host;
    assert_int_equal(gp_cgroup_host_detect(&host, NULL, NULL), GP_OK);
    if (!host.v2_mount[0]) {
        skip();
    }
    gp_device_rule rules[GP_DEVICE_RULES_MAX];
    size_t n = 0;
    const char *paths[] = {"/dev/null", NULL};
    assert_int_equal(gp_device_rules_for(paths, rules, GP_DEVICE_RULES_MAX, &n, NULL), GP_OK);
    char dir[GP_CGROUP_PATH_MAX];
    snprintf(dir, sizeof dir, "%s/gpupool-test-bpf-%d", host.v2_mount, (int)getpid());
    assert_int_equal(mkdir(dir, 0755), 0);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    gp_error err;
    gp_err rc = gp_devices_bpf_attach(fd, rules, n, &err);
    close(fd);
    assert_int_equal(rmdir(dir), 0);
    if (rc != GP_OK) {
        fail_msg("%s", err.message);
    }
}

/* A v1 group under a parent of this test's own; the limits' files. */
static void a_v1_group_gets_its_limits_and_goes_away(void **state)
{
    (void)state;
    gp_cgroup_host host;
    char parent[64];
    snprintf(parent, sizeof parent, "gpupool-test-%d", (int)getpid());
    assert_int_equal(gp_cgroup_host_detect(&host, parent, NULL), GP_OK);
    if (geteuid() != 0 || host.layout != GP_CGROUP_V1 || !host.v1_mount[GP_CGROUP_CPU][0] ||
        !host.v1_mount[GP_CGROUP_PIDS][0]) {
        skip();
    }
    gp_cgroup_limits limits = {.cpu_millis = 1500, .mem_mib = 64, .pids_max = 32};
    gp_cgroup *cg = NULL;
    gp_error err;
    assert_int_equal(gp_cgroup_create(&host, "job42-r0", &limits, &cg, &err), GP_OK);
    char path[GP_CGROUP_PATH_MAX + 64], text[64] = "";
    struct {
        gp_cgroup_ctrl ctrl;
        const char *file, *want;
    } files[] = {{GP_CGROUP_CPU, "cpu.cfs_quota_us", "150000\n"},
                 {GP_CGROUP_CPU, "cpu.cfs_period_us", "100000\n"},
                 {GP_CGROUP_MEMORY, "memory.limit_in_bytes", "67108864\n"},
                 {GP_CGROUP_PIDS, "pids.max", "32\n"}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", gp_cgroup_dir(cg, files[i].ctrl), files[i].file);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(text, sizeof text, f));
        fclose(f);
        assert_string_equal(text, files[i].want);
    }
    gp_cgroup *twice = NULL;
    assert_int_equal(gp_cgroup_create(&host, "job42-r0", &limits, &twice, &err), GP_ERR_EXISTS);
    snprintf(path, sizeof path, "%s", gp_cgroup_dir(cg, GP_CGROUP_MEMORY));
    assert_int_equal(gp_cgroup_destroy(cg, NULL), GP_OK);
    assert_int_not_equal(access(path, F_OK), 0);
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        snprintf(path, sizeof path, "%s/%s", host.v1_mount[c], parent);
        if (host.v1_mount[c][0]) {
            assert_int_equal(rmdir(path), 0);
        }
    }
}

static void a_bad_group_name_is_refused(void **state)
{
    (void)state;
    gp_cgroup_host host;
    gp_cgroup_host_from_mounts(&host, hybrid_mountinfo, "");
    snprintf(host.parent, sizeof host.parent, "gpupool");
    gp_cgroup_limits none = {0};
    gp_cgroup *cg = NULL;
    gp_error err;
    assert_int_equal(gp_cgroup_create(&host, "../job", &none, &cg, &err), GP_ERR_INVALID);
    assert_string_equal(err.field, "cgroup");
    assert_int_equal(gp_cgroup_create(&host, "a/b", &none, &cg, &err), GP_ERR_INVALID);
    host.layout = GP_CGROUP_NONE;
    assert_int_equal(gp_cgroup_create(&host, "job", &none, &cg, &err), GP_ERR_CONFLICT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_hybrid_host_uses_the_v1_controllers),
        cmocka_unit_test(a_unified_host_with_the_controllers_uses_v2),
        cmocka_unit_test(a_joint_cpu_cpuacct_mount_serves_cpu_and_a_prefix_is_no_match),
        cmocka_unit_test(a_cgroup_parent_that_climbs_out_is_refused),
        cmocka_unit_test(half_a_core_is_half_of_every_period),
        cmocka_unit_test(device_rules_read_as_v1_text),
        cmocka_unit_test(the_defaults_come_first_and_a_path_adds_its_node),
        cmocka_unit_test(the_v2_program_allows_only_the_listed_devices),
        cmocka_unit_test(no_rules_deny_everything_and_too_small_a_buffer_is_refused),
        cmocka_unit_test(the_kernel_accepts_the_v2_program),
        cmocka_unit_test(a_v1_group_gets_its_limits_and_goes_away),
        cmocka_unit_test(a_bad_group_name_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
