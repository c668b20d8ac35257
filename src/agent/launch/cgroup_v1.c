/* cgroup_v1.c - the cgroup backend for hybrid hosts: one folder per v1
 * controller (memory, cpu, pids, devices, freezer), limits written to
 * each, the device allow-list as devices.allow text, and the final kill
 * through the freezer: freeze, SIGKILL every task listed, thaw, until
 * none is left (nothing can fork away while frozen). */
#include "agent/launch/cgroup_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The kill gives up after this many rounds (10 ms apart). */
#define GP__V1_KILL_ROUNDS 300

static const char *const gp__v1_names[GP_CGROUP_CTRL_COUNT] = {"memory", "cpu", "pids", "devices", "freezer"};

static gp_err gp__v1_write(const gp_cgroup *cg, gp_cgroup_ctrl c, const char *file, const char *text, gp_error *err)
{
    int e = gp__cgroup_write(cg->dir[c], file, text);
    if (e != 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "writing \"%s\" to %s/%s: %s", text, cg->dir[c], file,
                            strerror(e));
    }
    return GP_OK;
}

static gp_err gp__v1_need(const gp_cgroup *cg, gp_cgroup_ctrl c, gp_error *err)
{
    if (!cg->dir[c][0]) {
        return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "the v1 %s controller is not mounted", gp__v1_names[c]);
    }
    return GP_OK;
}

static gp_err gp__v1_limits(gp_cgroup *cg, const gp_cgroup_limits *limits, gp_error *err)
{
    char text[64];
    gp_err rc = GP_OK;
    if (limits->mem_mib) {
        snprintf(text, sizeof text, "%llu", (unsigned long long)limits->mem_mib * 1048576ull);
        rc = gp__v1_write(cg, GP_CGROUP_MEMORY, "memory.limit_in_bytes", text, err);
        /* memory + swap: absent when the kernel does not account swap */
        if (rc == GP_OK && gp__cgroup_write(cg->dir[GP_CGROUP_MEMORY], "memory.memsw.limit_in_bytes", text) == EINVAL) {
            rc = gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "memory.memsw.limit_in_bytes refused %s", text);
        }
    }
    if (rc == GP_OK && limits->cpu_millis) {
        unsigned long quota, period;
        gp_cgroup_cpu_quota(limits->cpu_millis, &quota, &period);
        rc = gp__v1_need(cg, GP_CGROUP_CPU, err);
        snprintf(text, sizeof text, "%lu", period);
        if (rc == GP_OK) rc = gp__v1_write(cg, GP_CGROUP_CPU, "cpu.cfs_period_us", text, err);
        snprintf(text, sizeof text, "%lu", quota);
        if (rc == GP_OK) rc = gp__v1_write(cg, GP_CGROUP_CPU, "cpu.cfs_quota_us", text, err);
    }
    if (rc == GP_OK && limits->pids_max) {
        snprintf(text, sizeof text, "%u", limits->pids_max);
        rc = gp__v1_need(cg, GP_CGROUP_PIDS, err);
        if (rc == GP_OK) rc = gp__v1_write(cg, GP_CGROUP_PIDS, "pids.max", text, err);
    }
    return rc;
}

gp_err gp__cgroup_v1_create(gp_cgroup *cg, const gp_cgroup_host *host, const char *name,
                            const gp_cgroup_limits *limits, gp_error *err)
{
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        if (!host->v1_mount[c][0]) {
            continue;
        }
        char parent[GP_CGROUP_PATH_MAX], dir[GP_CGROUP_PATH_MAX];
        snprintf(parent, sizeof parent, "%s/%s", host->v1_mount[c], host->parent);
        snprintf(dir, sizeof dir, "%s/%s", parent, name);
        int e = gp__cgroup_mkdirs(parent);
        if (e == 0 && mkdir(dir, 0755) != 0) {
            e = errno;
        }
        if (e == EEXIST) {
            return gp_error_set(err, GP_ERR_EXISTS, "cgroup", "%s exists already", dir);
        }
        if (e != 0) {
            return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "mkdir %s: %s", dir, strerror(e));
        }
        snprintf(cg->dir[c], sizeof cg->dir[c], "%s", dir);
    }
    return gp__v1_limits(cg, limits, err);
}

gp_err gp__cgroup_v1_limit_devices(gp_cgroup *cg, const gp_device_rule *rules, size_t n, gp_error *err)
{
    gp_err rc = gp__v1_need(cg, GP_CGROUP_DEVICES, err);
    if (rc == GP_OK) {
        rc = gp__v1_write(cg, GP_CGROUP_DEVICES, "devices.deny", "a", err);
    }
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        char text[64];
        gp_device_rule_text(&rules[i], text, sizeof text);
        rc = gp__v1_write(cg, GP_CGROUP_DEVICES, "devices.allow", text, err);
    }
    return rc;
}

/* Freezes the group and waits (briefly) until the kernel says FROZEN. */
static void gp__v1_freeze(const char *freezer)
{
    if (gp__cgroup_write(freezer, "freezer.state", "FROZEN") != 0) {
        return;
    }
    char state[32] = "";
    for (int i = 0; i < 100; i++) {
        if (gp__cgroup_read(freezer, "freezer.state", state, sizeof state) != 0 || strncmp(state, "FROZEN", 6) == 0) {
            return;
        }
        gp__cgroup_nap(1);
    }
}

bool gp__cgroup_v1_kill(gp_cgroup *cg)
{
    const char *freezer = cg->dir[GP_CGROUP_FREEZER][0] ? cg->dir[GP_CGROUP_FREEZER] : NULL;
    const char *listed = freezer ? freezer : cg->dir[GP_CGROUP_MEMORY];
    if (!listed[0]) {
        return true;
    }
    for (int round = 0; round < GP__V1_KILL_ROUNDS; round++) {
        if (freezer) {
            gp__v1_freeze(freezer);
        }
        size_t count = gp__cgroup_kill_listed(listed);
        if (freezer) {
            gp__cgroup_write(freezer, "freezer.state", "THAWED");
        }
        if (count == 0) {
            return true;
        }
        gp__cgroup_nap(10);
    }
    return false;
}

bool gp__cgroup_v1_oom_killed(const gp_cgroup *cg)
{
    return cg->dir[GP_CGROUP_MEMORY][0] &&
           gp__cgroup_read_key(cg->dir[GP_CGROUP_MEMORY], "memory.oom_control", "oom_kill") > 0;
}
