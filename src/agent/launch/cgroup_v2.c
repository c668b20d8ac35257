/* cgroup_v2.c - the cgroup backend for unified hosts: one folder per
 * replica with cpu.max, memory.max (swap 0) and pids.max; the controllers
 * a limit needs are enabled in subtree_control from the mount down to the
 * parent; devices through an eBPF program (devices.c); the final kill is
 * cgroup.kill (kernel 5.14; older kernels: SIGKILL to each listed pid
 * until empty), waited for through cgroup.events "populated 0". */
#define _GNU_SOURCE
#include "agent/launch/cgroup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kill waits at most this many rounds (10 ms apart) for the group to empty. */
#define GP__V2_KILL_ROUNDS 300

static gp_err gp__v2_write(const char *dir, const char *file, const char *text, gp_error *err)
{
    int e = gp__cgroup_write(dir, file, text);
    if (e != 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "writing \"%s\" to %s/%s: %s", text, dir, file,
                            strerror(e));
    }
    return GP_OK;
}

/* "+cpu +memory +pids" (those the limits need) in subtree_control of the
 * mount and of every folder of parent, so the replica's group has them. */
static gp_err gp__v2_enable(const gp_cgroup_host *host, const gp_cgroup_limits *limits, gp_error *err)
{
    char controllers[64] = "";
    snprintf(controllers, sizeof controllers, "%s%s%s", limits->cpu_millis ? "+cpu " : "",
             limits->mem_mib ? "+memory " : "", limits->pids_max ? "+pids" : "");
    if (!controllers[0]) {
        return GP_OK;
    }
    char level[GP_CGROUP_PATH_MAX];
    snprintf(level, sizeof level, "%s", host->v2_mount);
    gp_err rc = gp__v2_write(level, "cgroup.subtree_control", controllers, err);
    for (const char *p = host->parent; rc == GP_OK && *p;) {
        size_t part = strcspn(p, "/");
        size_t used = strlen(level);
        snprintf(level + used, sizeof level - used, "/%.*s", (int)part, p);
        rc = gp__v2_write(level, "cgroup.subtree_control", controllers, err);
        p += part + (p[part] == '/' ? 1 : 0);
    }
    return rc;
}

static gp_err gp__v2_limits(const char *dir, const gp_cgroup_limits *limits, gp_error *err)
{
    char text[64];
    gp_err rc = GP_OK;
    if (limits->cpu_millis) {
        unsigned long quota, period;
        gp_cgroup_cpu_quota(limits->cpu_millis, &quota, &period);
        snprintf(text, sizeof text, "%lu %lu", quota, period);
        rc = gp__v2_write(dir, "cpu.max", text, err);
    }
    if (rc == GP_OK && limits->mem_mib) {
        snprintf(text, sizeof text, "%llu", (unsigned long long)limits->mem_mib * 1048576ull);
        rc = gp__v2_write(dir, "memory.max", text, err);
        int e = rc == GP_OK ? gp__cgroup_write(dir, "memory.swap.max", "0") : 0;
        if (e != 0 && e != ENOENT) { /* no file: the kernel does not account swap */
            rc = gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "writing 0 to %s/memory.swap.max: %s", dir, strerror(e));
        }
    }
    if (rc == GP_OK && limits->pids_max) {
        snprintf(text, sizeof text, "%u", limits->pids_max);
        rc = gp__v2_write(dir, "pids.max", text, err);
    }
    return rc;
}

gp_err gp__cgroup_v2_create(gp_cgroup *cg, const gp_cgroup_host *host, const char *name,
                            const gp_cgroup_limits *limits, gp_error *err)
{
    char parent[GP_CGROUP_PATH_MAX], dir[GP_CGROUP_PATH_MAX];
    snprintf(parent, sizeof parent, "%s/%s", host->v2_mount, host->parent);
    snprintf(dir, sizeof dir, "%s/%s", parent, name);
    int e = gp__cgroup_mkdirs(parent);
    if (e != 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "mkdir %s: %s", parent, strerror(e));
    }
    gp_err rc = gp__v2_enable(host, limits, err);
    if (rc != GP_OK) {
        return rc;
    }
    if (mkdir(dir, 0755) != 0) {
        e = errno;
        return gp_error_set(err, e == EEXIST ? GP_ERR_EXISTS : GP_ERR_CONFLICT, "cgroup", "mkdir %s: %s", dir,
                            strerror(e));
    }
    snprintf(cg->dir[GP_CGROUP_MEMORY], sizeof cg->dir[GP_CGROUP_MEMORY], "%s", dir);
    return gp__v2_limits(dir, limits, err);
}

gp_err gp__cgroup_v2_limit_devices(gp_cgroup *cg, const gp_device_rule *rules, size_t n, gp_error *err)
{
    int fd = open(cg->dir[GP_CGROUP_MEMORY], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "%s: %s", cg->dir[GP_CGROUP_MEMORY], strerror(errno));
    }
    gp_err rc = gp_devices_bpf_attach(fd, rules, n, err);
    close(fd);
    return rc;
}

bool gp__cgroup_v2_kill(gp_cgroup *cg)
{
    const char *dir = cg->dir[GP_CGROUP_MEMORY];
    if (!dir[0]) {
        return true;
    }
    bool has_kill = gp__cgroup_write(dir, "cgroup.kill", "1") == 0;
    for (int round = 0; round < GP__V2_KILL_ROUNDS; round++) {
        char events[256];
        if (gp__cgroup_read(dir, "cgroup.events", events, sizeof events) != 0 || strstr(events, "populated 0")) {
            return true;
        }
        if (!has_kill) {
            gp__cgroup_kill_listed(dir);
        }
        gp__cgroup_nap(10);
    }
    return false;
}

bool gp__cgroup_v2_oom_killed(const gp_cgroup *cg)
{
    return cg->dir[GP_CGROUP_MEMORY][0] && gp__cgroup_read_key(cg->dir[GP_CGROUP_MEMORY], "memory.events", "oom_kill") > 0;
}
