/* cgroup.c - the cgroup interface (cgroup.h): which layout the host has,
 * the file helpers both backends use, and the calls that dispatch to
 * cgroup_v1.c or cgroup_v2.c. */
#define _GNU_SOURCE
#include "agent/launch/cgroup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/file.h"

static const char *const gp__cgroup_ctrl_names[GP_CGROUP_CTRL_COUNT] = {"memory", "cpu", "pids", "devices",
                                                                          "freezer"};

/* The comma-separated list holds word exactly ("rw,cpu,cpuacct" has "cpu"). */
static bool gp__list_has(const char *list, size_t len, const char *word, char sep)
{
    size_t wlen = strlen(word);
    const char *end = list + len;
    for (const char *p = list; p < end;) {
        const char *stop = memchr(p, sep, (size_t)(end - p));
        if (!stop) {
            stop = end;
        }
        if ((size_t)(stop - p) == wlen && strncmp(p, word, wlen) == 0) {
            return true;
        }
        p = stop + 1;
    }
    return false;
}

/* One mountinfo line: "36 30 0:33 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory". */
static void gp__mount_line(gp_cgroup_host *host, const char *line, size_t len)
{
    char copy[1024];
    if (len >= sizeof copy) {
        return;
    }
    memcpy(copy, line, len);
    copy[len] = '\0';
    char *fields[6] = {0};
    char *save = NULL, *tok = strtok_r(copy, " ", &save);
    for (int i = 0; tok && i < 5; i++, tok = strtok_r(NULL, " ", &save)) {
        fields[i] = tok;
    }
    while (tok && strcmp(tok, "-") != 0) { /* optional fields end at "-" */
        tok = strtok_r(NULL, " ", &save);
    }
    char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
    char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
    char *options = source ? strtok_r(NULL, " ", &save) : NULL;
    if (!fields[4] || !options) {
        return;
    }
    if (strcmp(fstype, "cgroup2") == 0 && !host->v2_mount[0]) {
        snprintf(host->v2_mount, sizeof host->v2_mount, "%s", fields[4]);
    }
    for (int c = 0; strcmp(fstype, "cgroup") == 0 && c < GP_CGROUP_CTRL_COUNT; c++) {
        if (!host->v1_mount[c][0] && gp__list_has(options, strlen(options), gp__cgroup_ctrl_names[c], ',')) {
            snprintf(host->v1_mount[c], sizeof host->v1_mount[c], "%s", fields[4]);
        }
    }
}

/* v2 when its mount offers cpu, memory and pids; else v1 with memory. */
static void gp__cgroup_choose_layout(gp_cgroup_host *host, const char *v2_controllers)
{
    const char *ctl = v2_controllers ? v2_controllers : "";
    size_t len = strcspn(ctl, "\n");
    host->layout = GP_CGROUP_NONE;
    if (host->v2_mount[0] && gp__list_has(ctl, len, "cpu", ' ') && gp__list_has(ctl, len, "memory", ' ') &&
        gp__list_has(ctl, len, "pids", ' ')) {
        host->layout = GP_CGROUP_V2;
    } else if (host->v1_mount[GP_CGROUP_MEMORY][0]) {
        host->layout = GP_CGROUP_V1;
    }
}

void gp_cgroup_host_from_mounts(gp_cgroup_host *host, const char *mountinfo, const char *v2_controllers)
{
    host->v2_mount[0] = '\0';
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        host->v1_mount[c][0] = '\0';
    }
    for (const char *p = mountinfo; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        gp__mount_line(host, p, len);
        p += len + (nl ? 1 : 0);
    }
    gp__cgroup_choose_layout(host, v2_controllers);
}

/* A relative folder name: no "..", no empty part, no leading '/'. */
static bool gp__cgroup_relative_ok(const char *path, bool slashes)
{
    if (!path[0] || path[0] == '/' || strlen(path) > 200) {
        return false;
    }
    for (const char *p = path; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                     *p == '-' || *p == '_' || *p == '.';
        if (!plain && !(slashes && *p == '/')) {
            return false;
        }
        if (*p == '/' && (p[1] == '/' || p[1] == '\0')) {
            return false;
        }
    }
    return strstr(path, "..") == NULL;
}

gp_err gp_cgroup_host_detect(gp_cgroup_host *host, const char *parent, gp_error *err)
{
    const char *rel = parent ? parent : GP_CGROUP_PARENT_DEFAULT;
    if (!gp__cgroup_relative_ok(rel, true)) {
        return gp_error_set(err, GP_ERR_INVALID, "cgroup_parent",
                            "must be a relative folder of letters, digits, '-', '_', '.' and '/', got \"%s\"", rel);
    }
    char *mounts = NULL;
    size_t len = 0;
    gp_err rc = gp_file_read_all("/proc/self/mountinfo", &mounts, &len, err);
    if (rc != GP_OK) {
        return rc;
    }
    gp_cgroup_host_from_mounts(host, mounts, "");
    free(mounts);
    char controllers[256] = "";
    if (host->v2_mount[0] && gp__cgroup_read(host->v2_mount, "cgroup.controllers", controllers, sizeof controllers) == 0) {
        gp__cgroup_choose_layout(host, controllers);
    }
    snprintf(host->parent, sizeof host->parent, "%s", rel);
    return GP_OK;
}

const char *gp_cgroup_layout_name(gp_cgroup_layout layout)
{
    switch (layout) {
    case GP_CGROUP_V1:
        return "v1";
    case GP_CGROUP_V2:
        return "v2";
    case GP_CGROUP_NONE:
        break;
    }
    return "none";
}

void gp_cgroup_cpu_quota(unsigned cpu_millis, unsigned long *quota_us, unsigned long *period_us)
{
    *period_us = 100000;
    *quota_us = (unsigned long)cpu_millis * 100;
}

int gp__cgroup_write(const char *dir, const char *file, const char *text)
{
    char path[GP_CGROUP_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    size_t len = strlen(text);
    int rc = write(fd, text, len) == (ssize_t)len ? 0 : errno;
    close(fd);
    return rc;
}

int gp__cgroup_read(const char *dir, const char *file, char *buf, size_t len)
{
    char path[GP_CGROUP_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    ssize_t n = read(fd, buf, len - 1);
    int rc = n < 0 ? errno : 0;
    buf[n < 0 ? 0 : n] = '\0';
    close(fd);
    return rc;
}

unsigned long gp__cgroup_read_key(const char *dir, const char *file, const char *key)
{
    char text[4096];
    if (gp__cgroup_read(dir, file, text, sizeof text) != 0) {
        return 0;
    }
    size_t klen = strlen(key);
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            return strtoul(line + klen + 1, NULL, 10);
        }
    }
    return 0;
}

int gp__cgroup_mkdirs(const char *path)
{
    char part[GP_CGROUP_PATH_MAX];
    snprintf(part, sizeof part, "%s", path);
    for (char *p = part + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char was = *p;
            *p = '\0';
            if (mkdir(part, 0755) != 0 && errno != EEXIST) {
                return errno;
            }
            *p = was;
            if (was == '\0') {
                return 0;
            }
        }
    }
}

size_t gp__cgroup_kill_listed(const char *dir)
{
    char text[8192];
    if (gp__cgroup_read(dir, "cgroup.procs", text, sizeof text) != 0) {
        return 0;
    }
    size_t listed = 0;
    for (char *p = text; *p;) {
        char *end = NULL;
        long pid = strtol(p, &end, 10);
        if (end == p) {
            break;
        }
        if (pid > 0) {
            kill((pid_t)pid, SIGKILL);
            listed++;
        }
        p = end;
    }
    return listed;
}

void gp__cgroup_nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

gp_err gp_cgroup_create(const gp_cgroup_host *host, const char *name, const gp_cgroup_limits *limits,
                        gp_cgroup **out, gp_error *err)
{
    if (!name || !gp__cgroup_relative_ok(name, false)) {
        return gp_error_set(err, GP_ERR_INVALID, "cgroup", "a cgroup name is letters, digits, '-', '_' and '.', got \"%s\"",
                            name ? name : "");
    }
    if (host->layout == GP_CGROUP_NONE) {
        return gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "this host has no usable cgroups");
    }
    gp_cgroup *cg = calloc(1, sizeof *cg);
    if (!cg) {
        return gp_error_set(err, GP_ERR_NOMEM, "cgroup", "out of memory");
    }
    cg->layout = host->layout;
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        cg->procs_fd[c] = -1;
    }
    gp_err rc = host->layout == GP_CGROUP_V2 ? gp__cgroup_v2_create(cg, host, name, limits, err)
                                             : gp__cgroup_v1_create(cg, host, name, limits, err);
    for (int c = 0; rc == GP_OK && c < GP_CGROUP_CTRL_COUNT; c++) {
        char path[GP_CGROUP_PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/cgroup.procs", cg->dir[c]);
        if (cg->dir[c][0] && (cg->procs_fd[c] = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
            rc = gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "%s: %s", path, strerror(errno));
        }
    }
    if (rc != GP_OK) {
        gp_cgroup_destroy(cg, NULL);
        return rc;
    }
    *out = cg;
    return GP_OK;
}

gp_err gp_cgroup_limit_devices(gp_cgroup *cg, const gp_device_rule *rules, size_t n, gp_error *err)
{
    return cg->layout == GP_CGROUP_V2 ? gp__cgroup_v2_limit_devices(cg, rules, n, err)
                                      : gp__cgroup_v1_limit_devices(cg, rules, n, err);
}

/* pid as decimal text into buf (async-signal-safe, no stdio). */
static size_t gp__pid_text(long pid, char *buf)
{
    char rev[24];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid > 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] = rev[n - 1 - i];
    }
    return n;
}

int gp_cgroup_enter(const gp_cgroup *cg)
{
    char text[24];
    size_t len = gp__pid_text((long)getpid(), text);
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        if (cg->procs_fd[c] >= 0 && write(cg->procs_fd[c], text, len) != (ssize_t)len) {
            return errno;
        }
    }
    return 0;
}

bool gp_cgroup_kill(gp_cgroup *cg)
{
    return cg->layout == GP_CGROUP_V2 ? gp__cgroup_v2_kill(cg) : gp__cgroup_v1_kill(cg);
}

bool gp_cgroup_oom_killed(const gp_cgroup *cg)
{
    return cg->layout == GP_CGROUP_V2 ? gp__cgroup_v2_oom_killed(cg) : gp__cgroup_v1_oom_killed(cg);
}

const char *gp_cgroup_dir(const gp_cgroup *cg, gp_cgroup_ctrl ctrl)
{
    const char *dir = cg->dir[cg->layout == GP_CGROUP_V2 ? GP_CGROUP_MEMORY : ctrl];
    return dir[0] ? dir : NULL;
}

/* rmdir, retried while the kernel still counts exiting tasks (EBUSY). */
static int gp__cgroup_rmdir(const char *dir)
{
    for (int tries = 0; tries < 200; tries++) {
        if (rmdir(dir) == 0 || errno == ENOENT) {
            return 0;
        }
        if (errno != EBUSY) {
            return errno;
        }
        gp__cgroup_nap(10);
    }
    return EBUSY;
}

gp_err gp_cgroup_destroy(gp_cgroup *cg, gp_error *err)
{
    if (!cg) {
        return GP_OK;
    }
    gp_err rc = GP_OK;
    gp_cgroup_kill(cg);
    for (int c = 0; c < GP_CGROUP_CTRL_COUNT; c++) {
        if (cg->procs_fd[c] >= 0) {
            close(cg->procs_fd[c]);
        }
        int e = cg->dir[c][0] ? gp__cgroup_rmdir(cg->dir[c]) : 0;
        if (e != 0 && rc == GP_OK) {
            rc = gp_error_set(err, GP_ERR_CONFLICT, "cgroup", "rmdir %s: %s", cg->dir[c], strerror(e));
        }
    }
    free(cg);
    return rc;
}
