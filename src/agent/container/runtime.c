/* runtime.c - the OCI runtime: which one (crun where the host's cgroups
 * let it run, runc otherwise, or the operator's --oci-runtime), starting
 * a container detached and deleting it.
 *
 * crun 1.8 refuses the hybrid layout ("cgroups in hybrid mode not
 * supported") that our test machines have (cgroup.h's v1), so crun is
 * chosen only on a v2 or cgroup-less host; runc 1.1 runs on both.
 *
 * A start, for BUNDLE and ID:
 *   BUNDLE/config.json       written here (bundle.c made it)
 *   BUNDLE/upper, BUNDLE/work  the overlay's writable layer and its work folder
 *   BUNDLE/rootfs            the overlay: lowerdir=IMAGE, mounted in a
 *                            mount namespace of the runtime's own
 *   RUNTIME --log BUNDLE/runtime.log run --detach --pid-file BUNDLE/pid --bundle BUNDLE ID
 * The caller is made a child subreaper first, so when the runtime exits
 * the container's init becomes the caller's child.
 */
#define _GNU_SOURCE
#include "agent/container/container.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const GP__RUNTIME_DIRS[] = {"/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/bin",
                                               "/sbin", NULL};

static bool gp__find(const char *name, char *out, size_t cap)
{
    for (size_t i = 0; GP__RUNTIME_DIRS[i]; i++) {
        snprintf(out, cap, "%s/%s", GP__RUNTIME_DIRS[i], name);
        if (access(out, X_OK) == 0)
            return true;
    }
    return false;
}

gp_err gp_container_runtime_choose(const char *override, gp_cgroup_layout layout, char *out, size_t cap, char *why,
                                   size_t why_cap, gp_error *err)
{
    if (override && override[0]) {
        if (override[0] != '/' || access(override, X_OK) != 0)
            return gp_error_set(err, GP_ERR_NOT_FOUND, "oci_runtime", "%s: not an executable absolute path",
                                override);
        snprintf(out, cap, "%s", override);
        snprintf(why, why_cap, "OCI runtime %s (--oci-runtime)", out);
        return GP_OK;
    }
    bool hybrid = layout == GP_CGROUP_V1;
    if (!hybrid && gp__find("crun", out, cap)) {
        snprintf(why, why_cap, "OCI runtime %s (crun, cgroups %s)", out, gp_cgroup_layout_name(layout));
        return GP_OK;
    }
    if (gp__find("runc", out, cap)) {
        snprintf(why, why_cap, "OCI runtime %s (runc%s)", out,
                 hybrid ? ": crun refuses this host's hybrid cgroup layout" : ": crun is not installed");
        return GP_OK;
    }
    out[0] = '\0';
    return gp_error_set(err, GP_ERR_NOT_FOUND, "oci_runtime", "neither crun nor runc is installed");
}

/* mkdir that accepts an existing folder; mode as given (the upper
 * layer's root is the container's "/": 0755). */
static gp_err gp__folder(const char *bundle, const char *name, mode_t mode, gp_error *err)
{
    char path[GP_CONTAINER_PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", bundle, name[0] ? "/" : "", name);
    if ((mkdir(path, mode) != 0 && errno != EEXIST) || chmod(path, mode) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "container", "mkdir %s: %s", path, strerror(errno));
    return GP_OK;
}

static gp_err gp__write_config(const gp_container_spec *c, const json_t *config, gp_error *err)
{
    char path[GP_CONTAINER_PATH_MAX];
    gp_err rc = gp__folder(c->bundle, "", 0700, err);
    if (rc == GP_OK) rc = gp__folder(c->bundle, "upper", 0755, err);
    if (rc == GP_OK) rc = gp__folder(c->bundle, "work", 0700, err);
    if (rc == GP_OK) rc = gp__folder(c->bundle, "rootfs", 0755, err);
    snprintf(path, sizeof path, "%s/config.json", c->bundle);
    if (rc == GP_OK && json_dump_file(config, path, JSON_COMPACT) != 0)
        rc = gp_error_set(err, GP_ERR_CONFLICT, "container", "cannot write %s", path);
    return rc;
}

/* The child: its own mount namespace with the overlay, stdio, exec. */
static _Noreturn void gp__run_runtime(const gp_container_spec *c, const char *overlay, int fds[3])
{
    char rootfs[GP_CONTAINER_PATH_MAX], log[GP_CONTAINER_PATH_MAX], pid[GP_CONTAINER_PATH_MAX];
    snprintf(rootfs, sizeof rootfs, "%s/rootfs", c->bundle);
    snprintf(log, sizeof log, "%s/runtime.log", c->bundle);
    snprintf(pid, sizeof pid, "%s/pid", c->bundle);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 ||
        mount("overlay", rootfs, "overlay", MS_NODEV, overlay) != 0)
        _exit(125);
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            _exit(125);
    close_range(3, ~0u, CLOSE_RANGE_CLOEXEC); /* nothing of the supervisor's reaches the runtime or the job */
    char *argv[] = {(char *)c->runtime, "--log", log, "run", "--detach", "--pid-file", pid, "--bundle",
                    (char *)c->bundle, (char *)c->id, NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    execve(c->runtime, argv, envp);
    _exit(127);
}

/* The last line of the runtime's log, for a refusal's message. */
static void gp__runtime_error(const char *bundle, char *out, size_t cap)
{
    char path[GP_CONTAINER_PATH_MAX], line[1024];
    snprintf(path, sizeof path, "%s/runtime.log", bundle);
    snprintf(out, cap, "no message");
    FILE *f = fopen(path, "re");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            snprintf(out, cap, "%s", line);
    }
    if (f)
        fclose(f);
}

static gp_err gp__read_pid(const char *bundle, pid_t *pid, gp_error *err)
{
    char path[GP_CONTAINER_PATH_MAX];
    snprintf(path, sizeof path, "%s/pid", bundle);
    FILE *f = fopen(path, "re");
    long v = 0;
    bool ok = f && fscanf(f, "%ld", &v) == 1 && v > 0;
    if (f)
        fclose(f);
    if (!ok)
        return gp_error_set(err, GP_ERR_CONFLICT, "container", "the runtime wrote no pid to %s", path);
    *pid = (pid_t)v;
    return GP_OK;
}

gp_err gp_container_start(const gp_container_spec *c, const json_t *config, int stdin_fd, int stdout_fd,
                          int stderr_fd, pid_t *pid, gp_error *err)
{
    char overlay[3 * GP_CONTAINER_PATH_MAX];
    snprintf(overlay, sizeof overlay, "lowerdir=%s,upperdir=%s/upper,workdir=%s/work", c->rootfs, c->bundle,
             c->bundle);
    gp_err rc = gp__write_config(c, config, err);
    if (rc != GP_OK)
        return rc;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "container", "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
    int fds[3] = {stdin_fd, stdout_fd, stderr_fd};
    pid_t child = fork();
    if (child == 0)
        gp__run_runtime(c, overlay, fds);
    if (child < 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "container", "fork: %s", strerror(errno));
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return gp__read_pid(c->bundle, pid, err);
    char why[1024];
    gp__runtime_error(c->bundle, why, sizeof why);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 125)
        snprintf(why, sizeof why, "mounting the overlay of %s on %s/rootfs failed", c->rootfs, c->bundle);
    gp_container_delete(c->runtime, c->id);
    return gp_error_set(err, GP_ERR_CONFLICT, "container", "%s refused the container: %s", c->runtime, why);
}

bool gp_container_delete(const char *runtime, const char *id)
{
    pid_t child = fork();
    if (child == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; null >= 0 && fd < 3; fd++)
            dup2(null, fd);
        char *argv[] = {(char *)runtime, "delete", "--force", (char *)id, NULL};
        char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        execve(runtime, argv, envp);
        _exit(127);
    }
    int status = 0;
    while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
