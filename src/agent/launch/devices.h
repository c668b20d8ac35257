/* devices.h - which device nodes a replica may open: the rules, their v1
 * text and the v2 eBPF program.
 *
 * A replica gets the usual harmless nodes (the table below, as container
 * runtimes give them) plus the nodes of its own GPUs, which the GPU
 * backend names by path (/dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm,
 * /dev/nvidia-caps/nvidia-cap1, ...); everything else is refused with
 * EPERM at open(2).
 *
 *   c 1:3 null, 1:5 zero, 1:7 full, 1:8 random, 1:9 urandom,
 *   c 5:0 tty, 5:2 ptmx, c 136:* the pseudo-terminals (/dev/pts/N)
 *
 * all read and write, never mknod.  Example: a replica on GPU 0 of a node
 * with nvidia0 (c 195:0) and nvidia1 (c 195:1) gets the table plus
 * "c 195:0 rw": it opens /dev/nvidia0, and /dev/nvidia1 fails with EPERM.
 *
 * v1 writes each rule as text to devices.allow ("c 195:0 rw") after
 * devices.deny "a".  v2 has no files for this: a BPF_PROG_TYPE_CGROUP_DEVICE
 * program decides, and gp_devices_bpf_program writes it, one block per
 * rule that returns 1 (allow) when type, access, major and minor match,
 * and a final "return 0" (deny):
 *
 *   r2 = ctx->access_type & 0xffff    type (1 block, 2 char)
 *   r3 = ctx->access_type >> 16       access (1 mknod, 2 read, 4 write)
 *   r4 = ctx->major; r5 = ctx->minor
 *   rule: if r2 != type goto next; r1 = r3; r1 &= ~access; if r1 != 0 goto next;
 *         if r4 != major goto next (unless any); if r5 != minor goto next (unless any);
 *         r0 = 1; exit
 *   next: ... r0 = 0; exit
 *
 * Ownership: nothing is allocated; callers pass the arrays.
 */
#ifndef GP_AGENT_DEVICES_H
#define GP_AGENT_DEVICES_H

#include <linux/bpf.h>
#include <stddef.h>

#include "util/error.h"

#define GP_DEVICE_ANY (-1L)
#define GP_DEVICE_READ 2u  /* = BPF_DEVCG_ACC_READ */
#define GP_DEVICE_WRITE 4u /* = BPF_DEVCG_ACC_WRITE */
#define GP_DEVICE_MKNOD 1u /* = BPF_DEVCG_ACC_MKNOD */

/* The harmless nodes every replica gets (the table above). */
#define GP_DEVICE_DEFAULT_COUNT 8u
/* At most this many rules per replica (defaults included). */
#define GP_DEVICE_RULES_MAX 64u
/* A program for GP_DEVICE_RULES_MAX rules fits in this many instructions. */
#define GP_DEVICE_BPF_INSNS_MAX (6u + 8u * GP_DEVICE_RULES_MAX + 2u)

typedef struct gp_device_rule {
    char type;       /* 'c' character, 'b' block */
    long major;      /* or GP_DEVICE_ANY */
    long minor;      /* or GP_DEVICE_ANY */
    unsigned access; /* GP_DEVICE_READ | GP_DEVICE_WRITE | GP_DEVICE_MKNOD */
} gp_device_rule;

/* The default table, then one "rw" rule per path (stat'd: a character or
 * block device node).  *n is the number of rules written.  GP_ERR_INVALID
 * (field "devices") for a path that is missing or not a device node, or
 * more than cap rules. */
gp_err gp_device_rules_for(const char *const *paths, gp_device_rule *rules, size_t cap, size_t *n, gp_error *err);

/* The v1 devices.allow text of a rule: "c 195:0 rw", "c 136:* rw".
 * Returns what snprintf returns. */
int gp_device_rule_text(const gp_device_rule *rule, char *buf, size_t len);

/* The v2 program for the rules (see above) into insns (cap entries);
 * returns the number of instructions, or 0 when cap is too small.  Pure. */
size_t gp_devices_bpf_program(const gp_device_rule *rules, size_t n, struct bpf_insn *insns, size_t cap);

/* Loads the program for the rules and attaches it to the cgroup folder
 * open as cgroup_fd (BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI, so programs
 * above still apply).  GP_ERR_CONFLICT with the verifier's or the
 * kernel's answer when refused. */
gp_err gp_devices_bpf_attach(int cgroup_fd, const gp_device_rule *rules, size_t n, gp_error *err);

#endif
