/* cgroup.h - one control group per replica: CPU, memory and pids limits,
 * the device allow-list, the final kill of the whole tree, OOM kills.
 *
 * Two layouts, one interface (the backends are cgroup_v1.c and
 * cgroup_v2.c, as libuv keeps its platforms apart):
 *
 *   v2 (unified; the GPU machine): /sys/fs/cgroup/gpupool/job42-r0 with
 *      cpu.max "50000 100000", memory.max, memory.swap.max 0, pids.max,
 *      an eBPF device program (devices.h), cgroup.kill, memory.events.
 *   v1 (hybrid; the test machines): one folder per controller,
 *      /sys/fs/cgroup/{memory,cpu,pids,devices,freezer}/gpupool/job42-r0,
 *      with memory.limit_in_bytes (and memsw), cpu.cfs_quota_us /
 *      cpu.cfs_period_us, pids.max, devices.deny "a" + devices.allow, and
 *      the freezer for the final kill (freeze, SIGKILL every task, thaw).
 *
 * v2 is chosen when a cgroup2 mount offers cpu, memory and pids in its
 * cgroup.controllers; otherwise v1 when the memory controller is mounted;
 * otherwise none (the launcher runs without limits and says so).
 *
 * CPU: cpu_millis 500 is half a core: quota 50000 us per 100000 us period.
 * Memory: mem_mib 256 is 268435456 bytes, swap included (v1 memsw, v2
 * memory.swap.max 0), so going over is an OOM kill, not swapping.
 *
 * The parent folder (host->parent, "gpupool" by default, relative to each
 * mount) is created when missing; on v2 the cpu, memory and pids
 * controllers are enabled in the subtree_control of every level above the
 * replica's group.
 *
 * Ownership: gp_cgroup_create allocates a gp_cgroup that gp_cgroup_destroy
 * kills, removes and frees.  A gp_cgroup_host is a plain caller-owned
 * struct.
 */
#ifndef GP_AGENT_CGROUP_H
#define GP_AGENT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/launch/devices.h"
#include "util/error.h"

#define GP_CGROUP_PATH_MAX 512
#define GP_CGROUP_PARENT_DEFAULT "gpupool"

typedef enum gp_cgroup_layout { GP_CGROUP_NONE = 0, GP_CGROUP_V1, GP_CGROUP_V2 } gp_cgroup_layout;

/* The v1 controllers the launcher uses; memory is required, the others
 * are used when mounted. */
typedef enum gp_cgroup_ctrl {
    GP_CGROUP_MEMORY = 0,
    GP_CGROUP_CPU,
    GP_CGROUP_PIDS,
    GP_CGROUP_DEVICES,
    GP_CGROUP_FREEZER,
    GP_CGROUP_CTRL_COUNT
} gp_cgroup_ctrl;

typedef struct gp_cgroup_host {
    gp_cgroup_layout layout;
    char v2_mount[GP_CGROUP_PATH_MAX];                       /* v2: "/sys/fs/cgroup" */
    char v1_mount[GP_CGROUP_CTRL_COUNT][GP_CGROUP_PATH_MAX]; /* v1: "" when not mounted */
    char parent[GP_CGROUP_PATH_MAX];                         /* relative: "gpupool" */
} gp_cgroup_host;

typedef struct gp_cgroup_limits {
    unsigned cpu_millis; /* 1000 = one core; 0 = no limit */
    unsigned mem_mib;    /* 0 = no limit */
    unsigned pids_max;   /* 0 = no limit */
} gp_cgroup_limits;

typedef struct gp_cgroup gp_cgroup;

/* The layout of a host from the text of /proc/self/mountinfo and of the
 * cgroup2 mount's cgroup.controllers ("" or NULL when unknown); parent is
 * left as it was.  Pure: reads nothing. */
void gp_cgroup_host_from_mounts(gp_cgroup_host *host, const char *mountinfo, const char *v2_controllers);

/* The running host's layout, with parent (NULL: "gpupool"; relative, no
 * "..").  GP_ERR_INVALID for a bad parent (field "cgroup_parent"); a host
 * with no usable cgroups is GP_OK with layout GP_CGROUP_NONE. */
gp_err gp_cgroup_host_detect(gp_cgroup_host *host, const char *parent, gp_error *err);

/* "none", "v1", "v2". */
const char *gp_cgroup_layout_name(gp_cgroup_layout layout);

/* CPU quota and period in microseconds for cpu_millis (> 0). */
void gp_cgroup_cpu_quota(unsigned cpu_millis, unsigned long *quota_us, unsigned long *period_us);

/* Creates host->parent/name with the limits.  GP_ERR_INVALID for a bad
 * name (field "cgroup"), GP_ERR_EXISTS when the group exists, GP_ERR_CONFLICT
 * when the host has no cgroups or a controller file refuses a write (the
 * message names the file and the errno); nothing is left behind. */
gp_err gp_cgroup_create(const gp_cgroup_host *host, const char *name, const gp_cgroup_limits *limits,
                        gp_cgroup **out, gp_error *err);

/* Only the devices the rules list may be opened (or created) from inside:
 * v1 devices.deny "a" then one devices.allow per rule; v2 an eBPF program.
 * GP_ERR_CONFLICT when the host refuses (no devices controller, the
 * program was rejected: the message says why). */
gp_err gp_cgroup_limit_devices(gp_cgroup *cg, const gp_device_rule *rules, size_t n, gp_error *err);

/* Called in the forked child before exec: moves the calling process into
 * the group (every v1 controller).  Async-signal-safe: writes to files
 * opened by gp_cgroup_create.  0 or an errno. */
int gp_cgroup_enter(const gp_cgroup *cg);

/* SIGKILLs every process in the group, grandchildren included, and waits
 * (a few seconds at most) until none is left: v2 cgroup.kill, v1 the
 * freezer walk.  true when the group is empty. */
bool gp_cgroup_kill(gp_cgroup *cg);

/* The kernel OOM-killed a process of the group (memory.events oom_kill on
 * v2, memory.oom_control oom_kill on v1). */
bool gp_cgroup_oom_killed(const gp_cgroup *cg);

/* The group's folder for a controller (v2: the one folder for all), or
 * NULL when that v1 controller is not mounted.  Owned by cg. */
const char *gp_cgroup_dir(const gp_cgroup *cg, gp_cgroup_ctrl ctrl);

/* Kills what is left, removes the folders and frees cg (NULL is fine).
 * GP_ERR_CONFLICT when a folder could not be removed (named; cg is still
 * freed). */
gp_err gp_cgroup_destroy(gp_cgroup *cg, gp_error *err);

#endif
