/* bundle.c - the bundle's config.json (OCI runtime spec 1.0) for one
 * replica, from what the launcher resolved (container.h lists what a
 * container gets).  A worked example, job 7 replica 1 as uid 2000000007,
 * image dir:/srv/images/base, 4 GiB, 2 cores, GPU 0 of a sim node:
 *
 *   {"ociVersion": "1.0.2",
 *    "process": {"args": ["python3", "train.py"], "env": [...], "cwd": "/work/h100-1/job7-r1-...",
 *                "user": {"uid": 2000000007, "gid": 2000000007}, "noNewPrivileges": true,
 *                "capabilities": {"bounding": [], ...}, "rlimits": [{"type": "RLIMIT_NOFILE", ...}]},
 *    "root": {"path": "rootfs", "readonly": false},
 *    "hostname": the host's (its network: /etc/hosts and /etc/resolv.conf bound read-only too),
 *    "mounts": [proc, /dev, /dev/pts, /dev/shm size=2048m, /dev/mqueue, /sys ro, /sys/fs/cgroup ro,
 *               the working and checkpoint folders at their own paths, /dev/nvidia0 (the sim's file)],
 *    "linux": {"namespaces": [pid, mount, ipc, uts] (+ network with private_network),
 *              "cgroupsPath": "/gpupool/job7-r1-1795523111",
 *              "resources": {"memory": {"limit": 4294967296, "swap": 4294967296}, "pids": {"limit": 1024},
 *                            "cpu": {"quota": 200000, "period": 100000},
 *                            "devices": [{"allow": false, "access": "rwm"}, ... the allow rules]},
 *              "devices": [...], "maskedPaths": [...], "readonlyPaths": [...], "seccomp": {...}}}
 */
#define _GNU_SOURCE
#include "agent/container/container.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define GP__SHM_DEFAULT_MIB 64u

static const char *const GP__MASKED[] = {"/proc/acpi",     "/proc/asound",        "/proc/kcore",       "/proc/keys",
                                         "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                                         "/proc/sched_debug",   "/sys/firmware",    "/proc/scsi",        NULL};
static const char *const GP__READONLY[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
                                           NULL};

/* On the host's network a job resolves names as the host does (its
 * peers are node names), read-only. */
static const char *const GP__HOST_NAMING[] = {"/etc/hosts", "/etc/resolv.conf"};

gp_err gp_container_rootfs_of(const char *image, char *out, size_t cap, gp_error *err)
{
    struct stat st;
    if (!image || strncmp(image, "dir:", 4) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "image",
                            "%s: not a dir: image (docker:// and oci: come from the image store)",
                            image ? image : "(none)");
    const char *path = image + 4;
    if (path[0] != '/' || strpbrk(path, ",:\\") || strstr(path, "/../"))
        return gp_error_set(err, GP_ERR_INVALID, "image", "dir: needs an absolute folder without , : or \\, got %s",
                            path);
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return gp_error_set(err, GP_ERR_INVALID, "image", "%s is not a folder", path);
    if ((size_t)snprintf(out, cap, "%s", path) >= cap)
        return gp_error_set(err, GP_ERR_INVALID, "image", "the path is too long");
    return GP_OK;
}

static json_t *gp__strings(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *gp__process(const gp_container_process *p)
{
    json_t *groups = json_array();
    for (int i = 0; i < p->ngroups; i++)
        json_array_append_new(groups, json_integer(p->groups[i]));
    json_t *none = json_array();
    struct rlimit nofile = {1024, 1024};
    getrlimit(RLIMIT_NOFILE, &nofile); /* what a bare replica inherits */
    return json_pack("{s:b, s:o, s:o, s:s, s:{s:I, s:I, s:o}, s:b, s:{s:o, s:O, s:O, s:O, s:O}, s:[{s:s, s:I, s:I}]}",
                     "terminal", 0, "args", gp__strings((const char *const *)p->argv), "env",
                     gp__strings((const char *const *)p->envp), "cwd", p->cwd, "user", "uid", (json_int_t)p->uid,
                     "gid", (json_int_t)p->gid, "additionalGids", groups, "noNewPrivileges", 1, "capabilities",
                     "bounding", none, "effective", none, "permitted", none, "inheritable", none, "ambient", none,
                     "rlimits", "type", "RLIMIT_NOFILE", "hard", (json_int_t)nofile.rlim_max, "soft",
                     (json_int_t)nofile.rlim_cur);
}

static json_t *gp__mount(const char *dest, const char *type, const char *source, json_t *options)
{
    return json_pack("{s:s, s:s, s:s, s:o}", "destination", dest, "type", type, "source", source, "options", options);
}

/* The runtime's usual mounts, /dev/shm of shm_mib, then the binds. */
static json_t *gp__mounts(const gp_container_spec *c, unsigned shm_mib)
{
    char shm[64];
    snprintf(shm, sizeof shm, "size=%um", shm_mib ? shm_mib : GP__SHM_DEFAULT_MIB);
    json_t *m = json_array();
    json_array_append_new(m, gp__mount("/proc", "proc", "proc", json_pack("[s, s, s]", "nosuid", "noexec", "nodev")));
    json_array_append_new(m, gp__mount("/dev", "tmpfs", "tmpfs",
                                       json_pack("[s, s, s, s]", "nosuid", "strictatime", "mode=755", "size=65536k")));
    json_array_append_new(m, gp__mount("/dev/pts", "devpts", "devpts",
                                       json_pack("[s, s, s, s, s, s]", "nosuid", "noexec", "newinstance",
                                                 "ptmxmode=0666", "mode=0620", "gid=5")));
    json_array_append_new(m, gp__mount("/dev/shm", "tmpfs", "shm",
                                       json_pack("[s, s, s, s, s]", "nosuid", "noexec", "nodev", "mode=1777", shm)));
    json_array_append_new(m, gp__mount("/dev/mqueue", "mqueue", "mqueue", json_pack("[s, s, s]", "nosuid", "noexec",
                                                                                     "nodev")));
    json_array_append_new(m, gp__mount("/sys", "sysfs", "sysfs", json_pack("[s, s, s, s]", "nosuid", "noexec", "nodev",
                                                                           "ro")));
    json_array_append_new(m, gp__mount("/sys/fs/cgroup", "cgroup", "cgroup",
                                       json_pack("[s, s, s, s, s]", "nosuid", "noexec", "nodev", "relatime", "ro")));
    for (size_t i = 0; !c->private_network && i < sizeof GP__HOST_NAMING / sizeof GP__HOST_NAMING[0]; i++)
        if (access(GP__HOST_NAMING[i], R_OK) == 0)
            json_array_append_new(m, gp__mount(GP__HOST_NAMING[i], "bind", GP__HOST_NAMING[i],
                                               json_pack("[s, s, s, s]", "rbind", "ro", "nosuid", "nodev")));
    for (size_t i = 0; i < c->n_binds; i++)
        json_array_append_new(m, gp__mount(c->binds[i].target, "bind", c->binds[i].source,
                                           json_pack("[s, s, s, s]", "rbind", c->binds[i].read_only ? "ro" : "rw",
                                                     "nosuid", "nodev")));
    return m;
}

static json_t *gp__namespaces(bool private_network)
{
    json_t *ns = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}]", "type", "pid", "type", "mount", "type", "ipc", "type",
                           "uts");
    if (private_network)
        json_array_append_new(ns, json_pack("{s:s}", "type", "network"));
    return ns;
}

/* memory (swap included: the same total, no swapping), cpu, pids, and
 * "deny everything" before the device rules cdi.c adds. */
static json_t *gp__resources(const gp_cgroup_limits *l)
{
    json_t *r = json_pack("{s:[{s:b, s:s}]}", "devices", "allow", 0, "access", "rwm");
    if (l->mem_mib) {
        json_int_t bytes = (json_int_t)l->mem_mib * 1048576;
        json_object_set_new(r, "memory", json_pack("{s:I, s:I}", "limit", bytes, "swap", bytes));
    }
    if (l->pids_max)
        json_object_set_new(r, "pids", json_pack("{s:I}", "limit", (json_int_t)l->pids_max));
    if (l->cpu_millis) {
        unsigned long quota, period;
        gp_cgroup_cpu_quota(l->cpu_millis, &quota, &period);
        json_object_set_new(r, "cpu", json_pack("{s:I, s:I}", "quota", (json_int_t)quota, "period",
                                                (json_int_t)period));
    }
    return r;
}

static gp_err gp__seccomp(const gp_container_spec *c, json_t **out, gp_error *err)
{
    const char *path = c->seccomp_profile ? c->seccomp_profile : GP_CONTAINER_SECCOMP_PROFILE;
    json_error_t jerr;
    json_t *profile = json_load_file(path, 0, &jerr);
    if (!profile)
        return gp_error_set(err, GP_ERR_INVALID, "seccomp", "%s: %s", path, jerr.text);
    gp_err rc = gp_seccomp_resolve(profile, gp_seccomp_native_arch(), NULL, c->allow_userns, out, err);
    json_decref(profile);
    return rc;
}

static json_t *gp__linux(const gp_container_spec *c, const gp_container_limits *l, json_t *seccomp)
{
    json_t *linux_ = json_pack("{s:o, s:o, s:o, s:o, s:o}", "namespaces", gp__namespaces(c->private_network),
                               "resources", gp__resources(&l->limits), "maskedPaths", gp__strings(GP__MASKED),
                               "readonlyPaths", gp__strings(GP__READONLY), "seccomp", seccomp);
    if (linux_ && l->cgroups_path)
        json_object_set_new(linux_, "cgroupsPath", json_string(l->cgroups_path));
    return linux_;
}

/* A bind's paths: absolute, no "..", not onto the container's own /proc,
 * /sys or /dev (its runtime mounts). */
static gp_err gp__check_binds(const gp_container_spec *c, gp_error *err)
{
    static const char *const RESERVED[] = {"/", "/proc", "/sys", "/dev"};
    for (size_t i = 0; i < c->n_binds; i++) {
        const char *paths[] = {c->binds[i].source, c->binds[i].target};
        for (size_t k = 0; k < 2; k++) {
            size_t len = strlen(paths[k]);
            if (paths[k][0] != '/' || strstr(paths[k], "/../") || (len >= 3 && strcmp(paths[k] + len - 3, "/..") == 0))
                return gp_error_set(err, GP_ERR_INVALID, "mounts", "%s: not an absolute path without ..", paths[k]);
        }
        for (size_t r = 0; r < sizeof RESERVED / sizeof RESERVED[0]; r++) {
            size_t len = strlen(RESERVED[r]);
            const char *t = c->binds[i].target;
            if (strcmp(t, RESERVED[r]) == 0 || (len > 1 && strncmp(t, RESERVED[r], len) == 0 && t[len] == '/'))
                return gp_error_set(err, GP_ERR_INVALID, "mounts", "%s: not a place a mount may go", t);
        }
    }
    return GP_OK;
}

gp_err gp_container_config(const gp_container_spec *c, const gp_container_process *p, const gp_container_limits *l,
                           json_t **out, gp_error *err)
{
    json_t *seccomp = NULL;
    *out = NULL;
    gp_err rc = gp__check_binds(c, err);
    if (rc != GP_OK)
        return rc;
    rc = gp__seccomp(c, &seccomp, err);
    if (rc != GP_OK)
        return rc;
    struct utsname host;
    const char *hostname = c->id ? c->id : "gpupool";
    if (!c->private_network && uname(&host) == 0)
        hostname = host.nodename; /* as on the host's network: NCCL and rendezvous by host name */
    json_t *config = json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:o}", "ociVersion", "1.0.2", "process",
                               gp__process(p), "root", "path", "rootfs", "readonly", c->read_only_root, "hostname",
                               hostname, "mounts", gp__mounts(c, l->shm_mib), "linux", gp__linux(c, l, seccomp));
    if (!config)
        return gp_error_set(err, GP_ERR_NOMEM, "container", "out of memory");
    bool used_cdi = false;
    rc = gp_cdi_apply(config, c->cdi_dirs, c->gpu_uuids, l->device_paths, &used_cdi, err);
    if (rc != GP_OK) {
        json_decref(config);
        return rc;
    }
    *out = config;
    return GP_OK;
}
