/* devices.c - the device rules of a replica, as v1 text and as a v2 eBPF
 * program (devices.h explains both), and the program's loading. */
#define _GNU_SOURCE
#include "agent/launch/devices.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const gp_device_rule gp__device_defaults[GP_DEVICE_DEFAULT_COUNT] = {
    {'c', 1, 3, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* null */
    {'c', 1, 5, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* zero */
    {'c', 1, 7, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* full */
    {'c', 1, 8, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* random */
    {'c', 1, 9, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* urandom */
    {'c', 5, 0, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* tty */
    {'c', 5, 2, GP_DEVICE_READ | GP_DEVICE_WRITE},   /* ptmx */
    {'c', 136, GP_DEVICE_ANY, GP_DEVICE_READ | GP_DEVICE_WRITE}, /* pts */
};

gp_err gp_device_rules_for(const char *const *paths, gp_device_rule *rules, size_t cap, size_t *n, gp_error *err)
{
    if (cap < GP_DEVICE_DEFAULT_COUNT) {
        return gp_error_set(err, GP_ERR_INVALID, "devices", "room for %zu rules, the defaults alone are %u", cap,
                            GP_DEVICE_DEFAULT_COUNT);
    }
    size_t count = 0;
    for (size_t i = 0; i < GP_DEVICE_DEFAULT_COUNT; i++) {
        rules[count++] = gp__device_defaults[i];
    }
    for (size_t i = 0; paths && paths[i]; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            return gp_error_set(err, GP_ERR_INVALID, "devices", "%s: %s", paths[i], strerror(errno));
        }
        if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) {
            return gp_error_set(err, GP_ERR_INVALID, "devices", "%s is not a device node", paths[i]);
        }
        if (count >= cap) {
            return gp_error_set(err, GP_ERR_INVALID, "devices", "more than %zu device rules", cap);
        }
        rules[count++] = (gp_device_rule){S_ISCHR(st.st_mode) ? 'c' : 'b', (long)major(st.st_rdev),
                                          (long)minor(st.st_rdev), GP_DEVICE_READ | GP_DEVICE_WRITE};
    }
    *n = count;
    return GP_OK;
}

/* "195" or "*" into buf. */
static void gp__device_number_text(long number, char *buf, size_t len)
{
    if (number == GP_DEVICE_ANY) {
        snprintf(buf, len, "*");
    } else {
        snprintf(buf, len, "%ld", number);
    }
}

int gp_device_rule_text(const gp_device_rule *rule, char *buf, size_t len)
{
    char major_text[24], minor_text[24];
    gp__device_number_text(rule->major, major_text, sizeof major_text);
    gp__device_number_text(rule->minor, minor_text, sizeof minor_text);
    return snprintf(buf, len, "%c %s:%s %s%s%s", rule->type, major_text, minor_text,
                    rule->access & GP_DEVICE_READ ? "r" : "", rule->access & GP_DEVICE_WRITE ? "w" : "",
                    rule->access & GP_DEVICE_MKNOD ? "m" : "");
}

static struct bpf_insn gp__insn(unsigned char code, unsigned char dst, unsigned char src, short off, int imm)
{
    return (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* One rule's block (at most 8 instructions, devices.h); a failed test
 * jumps past the block's exit, to the next rule. */
static size_t gp__bpf_rule(const gp_device_rule *rule, struct bpf_insn *at)
{
    int type = rule->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
    size_t k = 0;
    at[k++] = gp__insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0, type);
    at[k++] = gp__insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_3, 0, 0);
    at[k++] = gp__insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_1, 0, 0, (int)~rule->access);
    at[k++] = gp__insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_1, 0, 0, 0);
    if (rule->major != GP_DEVICE_ANY) {
        at[k++] = gp__insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 0, (int)rule->major);
    }
    if (rule->minor != GP_DEVICE_ANY) {
        at[k++] = gp__insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 0, (int)rule->minor);
    }
    at[k++] = gp__insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    at[k++] = gp__insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    for (size_t i = 0; i < k; i++) { /* off counts from the next instruction */
        if (BPF_CLASS(at[i].code) == BPF_JMP && BPF_OP(at[i].code) == BPF_JNE) {
            at[i].off = (short)(k - i - 1);
        }
    }
    return k;
}

size_t gp_devices_bpf_program(const gp_device_rule *rules, size_t n, struct bpf_insn *insns, size_t cap)
{
    if (cap < 6 + 8 * n + 2) {
        return 0;
    }
    size_t k = 0;
    insns[k++] = gp__insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0); /* access_type */
    insns[k++] = gp__insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    insns[k++] = gp__insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 0, 0);
    insns[k++] = gp__insn(BPF_ALU64 | BPF_RSH | BPF_K, BPF_REG_3, 0, 0, 16);
    insns[k++] = gp__insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 4, 0); /* major */
    insns[k++] = gp__insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_5, BPF_REG_1, 8, 0); /* minor */
    for (size_t i = 0; i < n; i++) {
        k += gp__bpf_rule(&rules[i], &insns[k]);
    }
    insns[k++] = gp__insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    insns[k++] = gp__insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    return k;
}

static long gp__bpf(int cmd, union bpf_attr *attr)
{
    return syscall(SYS_bpf, cmd, attr, sizeof *attr);
}

/* BPF_PROG_LOAD of a device program; log NULL for none.  The fd or -1. */
static int gp__bpf_load(const struct bpf_insn *insns, size_t count, char *log, size_t log_size)
{
    union bpf_attr load;
    memset(&load, 0, sizeof load);
    load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    load.insns = (unsigned long)insns;
    load.insn_cnt = (unsigned)count;
    load.license = (unsigned long)"GPL";
    if (log) {
        load.log_buf = (unsigned long)log;
        load.log_size = (unsigned)log_size;
        load.log_level = 1;
    }
    return (int)gp__bpf(BPF_PROG_LOAD, &load);
}

gp_err gp_devices_bpf_attach(int cgroup_fd, const gp_device_rule *rules, size_t n, gp_error *err)
{
    struct bpf_insn insns[GP_DEVICE_BPF_INSNS_MAX];
    size_t count = gp_devices_bpf_program(rules, n, insns, GP_DEVICE_BPF_INSNS_MAX);
    if (count == 0) {
        return gp_error_set(err, GP_ERR_INVALID, "devices", "more than %u device rules", GP_DEVICE_RULES_MAX);
    }
    int prog = gp__bpf_load(insns, count, NULL, 0);
    if (prog < 0) {
        int saved = errno;
        char log[2048] = ""; /* load again, with the verifier's log, to say why */
        int again = gp__bpf_load(insns, count, log, sizeof log);
        if (again >= 0) {
            close(again);
        }
        return gp_error_set(err, GP_ERR_CONFLICT, "devices", "the kernel refused the device program: %s %.160s",
                            strerror(saved), log);
    }
    union bpf_attr attach;
    memset(&attach, 0, sizeof attach);
    attach.target_fd = (unsigned)cgroup_fd;
    attach.attach_bpf_fd = (unsigned)prog;
    attach.attach_type = BPF_CGROUP_DEVICE;
    attach.attach_flags = BPF_F_ALLOW_MULTI;
    long rc = gp__bpf(BPF_PROG_ATTACH, &attach);
    int saved = errno;
    close(prog); /* the attachment keeps the program; it goes with the cgroup */
    if (rc != 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "devices", "attaching the device program: %s", strerror(saved));
    }
    return GP_OK;
}
