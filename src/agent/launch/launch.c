/* launch.c - fork/exec of one replica and its end (launch.h explains the
 * steps).  Everything that can fail for a reason worth a sentence is done
 * in the parent before fork (user, program, folder, logs, cgroup); the
 * child only runs async-signal-safe system calls and reports a failure
 * before exec through a close-on-exec pipe, so gp_launch fails loudly
 * instead of leaving a replica that died at once. */
#define _GNU_SOURCE
#include "agent/launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/launch/launch_env.h"

#define GP__PATH_DEFAULT "/usr/local/bin:/usr/bin:/bin"
#define GP__GROUPS_MAX 256
#define GP__NOTE_MAX 256

struct gp_proc {
    pid_t pid;
    int pidfd;
    gp_cgroup *cgroup;
    char note[GP__NOTE_MAX];
    int64_t deadline; /* -1: no kill pending */
    bool stopping;
    gp_stop_cause cause;
    bool tree_killed; /* the grace ran out */
    bool reaped;
    int status;
    bool ended;
    gp_proc_exit end;
    char runtime[GP_CONTAINER_PATH_MAX]; /* a container's: deleted with it; "" a bare exec */
    char container_id[GP_CONTAINER_ID_MAX];
};

/* What the child needs, all resolved in the parent. */
typedef struct gp__child_plan {
    const char *program;
    char *const *argv;
    char *const *envp;
    const char *workdir;
    bool switch_user;
    uid_t uid;
    gid_t gid;
    gid_t groups[GP__GROUPS_MAX];
    int ngroups;
    int stdin_fd, stdout_fd, stderr_fd, report_fd;
    const gp_cgroup *cgroup;
    bool private_tmp;     /* a mount namespace and /dev/shm of its own */
    char tmp[4096];       /* bound on /tmp and /var/tmp; "" none */
    bool var_tmp, shm;    /* the host has /var/tmp, /dev/shm */
    char shm_options[64]; /* "size=64m,mode=1777" */
} gp__child_plan;

/* The step that failed in the child, written with its errno to the pipe. */
typedef struct gp__child_failure {
    int step;
    int error;
} gp__child_failure;

enum {
    GP__STEP_SESSION,
    GP__STEP_CGROUP,
    GP__STEP_STDIO,
    GP__STEP_TMP,
    GP__STEP_NO_NEW_PRIVS,
    GP__STEP_USER,
    GP__STEP_WORKDIR,
    GP__STEP_EXEC
};
static const char *const gp__step_names[] = {"setsid", "joining the cgroup", "redirecting stdio",
                                             "mounting the private /tmp, /var/tmp and /dev/shm", "no_new_privs",
                                             "switching user", "chdir to the working directory", "exec"};

static void gp__note(gp_proc *p, const char *text)
{
    size_t used = strlen(p->note);
    snprintf(p->note + used, sizeof p->note - used, "%s%s", used ? "; " : "", text);
}

/* ---- in the child: async-signal-safe only ---- */

static _Noreturn void gp__child_fail(const gp__child_plan *plan, int step)
{
    gp__child_failure failure = {step, errno};
    ssize_t ignored = write(plan->report_fd, &failure, sizeof failure);
    (void)ignored;
    _exit(127);
}

/* Default dispositions and an empty mask: the agent's are not the job's. */
static void gp__child_signals(void)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        sigaction(sig, &dfl, NULL); /* SIGKILL, SIGSTOP and the reserved ones refuse; fine */
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Everything past stderr closes at exec; the report pipe stays open until then. */
static void gp__child_close_fds(const gp__child_plan *plan)
{
    if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0) {
        return;
    }
    long max = sysconf(_SC_OPEN_MAX);
    for (int fd = 3; fd < (max > 0 ? max : 1024); fd++) {
        if (fd != plan->report_fd) {
            close(fd);
        }
    }
}

/* Its own mount namespace: nothing propagates back to the host, its own
 * /tmp, /var/tmp and /dev/shm.  Gone with its last process. */
static int gp__child_private_tmp(const gp__child_plan *plan)
{
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
        return -1;
    if (plan->tmp[0] && mount(plan->tmp, "/tmp", NULL, MS_BIND, NULL) != 0)
        return -1;
    if (plan->tmp[0] && plan->var_tmp && mount("/tmp", "/var/tmp", NULL, MS_BIND, NULL) != 0) /* tmp may lie in /tmp */
        return -1;
    if (plan->shm && mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, plan->shm_options) != 0)
        return -1;
    return 0;
}

static _Noreturn void gp__child_run(const gp__child_plan *plan)
{
    gp__child_signals();
    if (setsid() < 0) {
        gp__child_fail(plan, GP__STEP_SESSION);
    }
    int e = plan->cgroup ? gp_cgroup_enter(plan->cgroup) : 0;
    if (e != 0) {
        errno = e;
        gp__child_fail(plan, GP__STEP_CGROUP);
    }
    if (dup2(plan->stdin_fd, 0) < 0 || dup2(plan->stdout_fd, 1) < 0 || dup2(plan->stderr_fd, 2) < 0) {
        gp__child_fail(plan, GP__STEP_STDIO);
    }
    if (plan->private_tmp && gp__child_private_tmp(plan) != 0) {
        gp__child_fail(plan, GP__STEP_TMP);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        gp__child_fail(plan, GP__STEP_NO_NEW_PRIVS);
    }
    umask(077);
    if (plan->switch_user && (setgroups((size_t)plan->ngroups, plan->groups) != 0 || setgid(plan->gid) != 0 ||
                              setuid(plan->uid) != 0)) {
        gp__child_fail(plan, GP__STEP_USER);
    }
    if (chdir(plan->workdir) != 0) {
        gp__child_fail(plan, GP__STEP_WORKDIR);
    }
    gp__child_close_fds(plan);
    execve(plan->program, plan->argv, plan->envp);
    gp__child_fail(plan, GP__STEP_EXEC);
}

/* ---- in the parent, before fork ---- */

static gp_err gp__identity_env(gp_env *env, const char *home, const char *name, const char *shell, gp_error *err)
{
    gp_err rc = gp_env_set_default(env, "HOME", home, err);
    if (rc == GP_OK) rc = gp_env_set_default(env, "USER", name, err);
    if (rc == GP_OK) rc = gp_env_set_default(env, "LOGNAME", name, err);
    if (rc == GP_OK) rc = gp_env_set_default(env, "SHELL", shell && shell[0] ? shell : "/bin/sh", err);
    if (rc == GP_OK) rc = gp_env_set_default(env, "PATH", GP__PATH_DEFAULT, err);
    return rc;
}

/* A job without a user, root agent: its own uid = gid, no groups, its
 * working folder as HOME. */
static gp_err gp__job_identity(const gp_launch_spec *spec, gp__child_plan *plan, gp_env *env, gp_error *err)
{
    plan->switch_user = true;
    plan->uid = spec->job_uid;
    plan->gid = (gid_t)spec->job_uid;
    plan->ngroups = 0;
    return gp__identity_env(env, spec->workdir, spec->job_name && spec->job_name[0] ? spec->job_name : "job", NULL,
                            err);
}

/* uid 0 and uids below spec->uid_min never run a job. */
static gp_err gp__user_allowed(const gp_launch_spec *spec, const struct passwd *pw, gp_error *err)
{
    if (pw->pw_uid == 0)
        return gp_error_set(err, GP_ERR_INVALID, "user", "refused: user %s is uid 0, jobs never run as root",
                            pw->pw_name);
    if (pw->pw_uid < spec->uid_min)
        return gp_error_set(err, GP_ERR_INVALID, "user",
                            "refused: user %s is uid %u, below the lowest uid jobs may run as (%u)", pw->pw_name,
                            (unsigned)pw->pw_uid, (unsigned)spec->uid_min);
    return GP_OK;
}

/* The user's ids, groups and passwd defaults into plan and env. */
static gp_err gp__resolve_user(const gp_launch_spec *spec, gp__child_plan *plan, gp_env *env, gp_proc *p,
                               gp_error *err)
{
    struct passwd pw, *found = NULL;
    char buf[4096];
    bool as_root = geteuid() == 0;
    const char *name = spec->user && spec->user[0] ? spec->user : NULL;
    if (as_root && !name && spec->job_uid > 0)
        return gp__job_identity(spec, plan, env, err);
    int e = name && as_root ? getpwnam_r(name, &pw, buf, sizeof buf, &found)
                            : getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found);
    if (!found) {
        return gp_error_set(err, GP_ERR_NOT_FOUND, "user", "no such user \"%s\"%s%s", name ? name : "(agent)",
                            e ? ": " : "", e ? strerror(e) : "");
    }
    if (name && !as_root && strcmp(name, pw.pw_name) != 0) {
        char text[GP__NOTE_MAX];
        snprintf(text, sizeof text, "running as the agent's user %s, not %s: the agent is not root", pw.pw_name, name);
        gp__note(p, text);
    }
    plan->switch_user = name && as_root;
    if (plan->switch_user && gp__user_allowed(spec, &pw, err) != GP_OK)
        return err->code;
    plan->uid = pw.pw_uid;
    plan->gid = pw.pw_gid;
    plan->ngroups = GP__GROUPS_MAX;
    if (plan->switch_user && getgrouplist(pw.pw_name, pw.pw_gid, plan->groups, &plan->ngroups) < 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "user", "%s is in more than %d groups", pw.pw_name, GP__GROUPS_MAX);
    }
    return gp__identity_env(env, pw.pw_dir, pw.pw_name, pw.pw_shell, err);
}

/* argv[0] itself when it holds a '/', else the first executable on PATH;
 * into path (len bytes). */
static gp_err gp__resolve_program(const char *argv0, const char *search, char *path, size_t len, gp_error *err)
{
    if (strchr(argv0, '/')) {
        snprintf(path, len, "%s", argv0);
        return GP_OK;
    }
    for (const char *dir = search; *dir;) {
        size_t dlen = strcspn(dir, ":");
        struct stat st;
        snprintf(path, len, "%.*s/%s", (int)dlen, dir, argv0);
        if (dlen > 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
            return GP_OK;
        }
        dir += dlen + (dir[dlen] == ':' ? 1 : 0);
    }
    return gp_error_set(err, GP_ERR_NOT_FOUND, "argv", "%s: not found on PATH %s", argv0, search);
}

/* mkdir -p of the parents (0755 when made). */
static gp_err gp__make_parents(const char *path, const char *field, gp_error *err)
{
    char part[4096];
    snprintf(part, sizeof part, "%s", path);
    for (char *p = part + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(part, 0755) != 0 && errno != EEXIST) {
                return gp_error_set(err, GP_ERR_CONFLICT, field, "mkdir %s: %s", part, strerror(errno));
            }
            *p = '/';
        }
    }
    return GP_OK;
}

/* The folder itself, not through a symbolic link: mode (past the umask)
 * and the job's when made or when the agent switches user (a folder the
 * caller gave that exists already keeps its mode otherwise). */
static gp_err gp__own_folder(const char *path, unsigned mode, const gp__child_plan *plan, const char *field,
                             gp_error *err)
{
    bool made = mkdir(path, 0700) == 0;
    if (!made && errno != EEXIST) {
        return gp_error_set(err, GP_ERR_CONFLICT, field, "mkdir %s: %s", path, strerror(errno));
    }
    if (!made && !plan->switch_user) {
        return GP_OK;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, field, "open %s: %s", path, strerror(errno));
    }
    int e = plan->switch_user && fchown(fd, plan->uid, plan->gid) != 0 ? errno : 0;
    if (e == 0 && fchmod(fd, mode) != 0) {
        e = errno;
    }
    close(fd);
    if (e != 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, field, "chown/chmod %s: %s", path, strerror(e));
    }
    return GP_OK;
}

static gp_err gp__make_workdir(const char *workdir, const gp__child_plan *plan, gp_error *err)
{
    if (workdir[0] != '/') {
        return gp_error_set(err, GP_ERR_INVALID, "workdir", "must be an absolute path, got \"%s\"", workdir);
    }
    gp_err rc = gp__make_parents(workdir, "workdir", err);
    return rc == GP_OK ? gp__own_folder(workdir, 0700, plan, "workdir", err) : rc;
}

/* TMP_DIR (0700, the job's) and TMP_DIR/tmp (1777) for the private /tmp. */
static gp_err gp__make_tmp_dir(const char *tmp_dir, gp__child_plan *plan, gp_error *err)
{
    if (tmp_dir[0] != '/') {
        return gp_error_set(err, GP_ERR_INVALID, "tmp_dir", "a private /tmp needs an absolute folder");
    }
    snprintf(plan->tmp, sizeof plan->tmp, "%s/tmp", tmp_dir);
    gp_err rc = gp__make_parents(tmp_dir, "tmp_dir", err);
    if (rc == GP_OK) rc = gp__own_folder(tmp_dir, 0700, plan, "tmp_dir", err);
    gp__child_plan root_owned = {.switch_user = false};
    if (rc == GP_OK) rc = gp__own_folder(plan->tmp, 01777, &root_owned, "tmp_dir", err);
    return rc;
}

/* The mount namespace's plan: /dev/shm always, /tmp and /var/tmp with a tmp_dir. */
static gp_err gp__make_tmp(const gp_launch_spec *spec, gp__child_plan *plan, gp_proc *p, gp_error *err)
{
    if (!spec->private_tmp) {
        return GP_OK;
    }
    if (geteuid() != 0) {
        gp__note(p, "no private /tmp: the agent is not root");
        return GP_OK;
    }
    gp_err rc = spec->tmp_dir ? gp__make_tmp_dir(spec->tmp_dir, plan, err) : GP_OK;
    struct stat st;
    plan->private_tmp = rc == GP_OK;
    plan->var_tmp = stat("/var/tmp", &st) == 0 && S_ISDIR(st.st_mode);
    plan->shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode);
    if (spec->shm_mib)
        snprintf(plan->shm_options, sizeof plan->shm_options, "size=%um,mode=1777", spec->shm_mib);
    else
        snprintf(plan->shm_options, sizeof plan->shm_options, "mode=1777");
    return rc;
}

/* fd moved above 0, 1 and 2 (close-on-exec), so the child's dup2 onto
 * 0..2 cannot overwrite one it still needs (an agent started with its
 * stdio closed gets them from open). */
static int gp__above_stdio(int fd)
{
    if (fd < 0 || fd > 2) {
        return fd;
    }
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

static gp_err gp__open_log(const char *path, const char *field, int *fd, gp_error *err)
{
    if (!path || !path[0]) {
        return gp_error_set(err, GP_ERR_INVALID, field, "a log file path is needed");
    }
    *fd = gp__above_stdio(open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
    if (*fd < 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, field, "%s: %s", path, strerror(errno));
    }
    return GP_OK;
}

/* stdin, stdout and stderr of the child, all close-on-exec in the agent. */
static gp_err gp__open_stdio(const gp_launch_spec *spec, gp__child_plan *plan, gp_error *err)
{
    plan->stdin_fd = gp__above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (plan->stdin_fd < 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "stdin", "/dev/null: %s", strerror(errno));
    }
    if (spec->output_fd > 2) {
        plan->stdout_fd = fcntl(spec->output_fd, F_DUPFD_CLOEXEC, 3);
        plan->stderr_fd = plan->stdout_fd < 0 ? -1 : fcntl(plan->stdout_fd, F_DUPFD_CLOEXEC, 3);
        return plan->stderr_fd < 0 ? gp_error_set(err, GP_ERR_CONFLICT, "stdout", "dup: %s", strerror(errno)) : GP_OK;
    }
    gp_err rc = gp__open_log(spec->stdout_path, "stdout", &plan->stdout_fd, err);
    if (rc == GP_OK && spec->stderr_path && spec->stdout_path && strcmp(spec->stderr_path, spec->stdout_path) == 0) {
        plan->stderr_fd = fcntl(plan->stdout_fd, F_DUPFD_CLOEXEC, 3);
        if (plan->stderr_fd < 0) {
            rc = gp_error_set(err, GP_ERR_CONFLICT, "stderr", "dup: %s", strerror(errno));
        }
    } else if (rc == GP_OK) {
        rc = gp__open_log(spec->stderr_path, "stderr", &plan->stderr_fd, err);
    }
    return rc;
}

static void gp__close_stdio(gp__child_plan *plan)
{
    int *fds[] = {&plan->stdin_fd, &plan->stdout_fd, &plan->stderr_fd};
    for (size_t i = 0; i < 3; i++) {
        if (*fds[i] >= 0) {
            close(*fds[i]);
        }
        *fds[i] = -1;
    }
}

/* The replica's cgroup with its limits and devices, or a note without. */
static gp_err gp__make_cgroup(const gp_launch_spec *spec, gp_proc *p, gp_error *err)
{
    bool none = !spec->cgroups || spec->cgroups->layout == GP_CGROUP_NONE;
    if (spec->untrusted && (none || !spec->isolate_devices)) {
        return gp_error_set(err, GP_ERR_CONFLICT, "devices",
                            "refused: the tenant is untrusted and this agent does not isolate devices (%s)",
                            none ? "no cgroups" : "--no-isolate-devices");
    }
    if (none) {
        gp__note(p, spec->isolate_devices ? "no cgroups on this host: devices not isolated, no CPU, memory or pids limits"
                                          : "no cgroups on this host: no CPU, memory or pids limits");
        return GP_OK;
    }
    gp_err rc = gp_cgroup_create(spec->cgroups, spec->cgroup_name, &spec->limits, &p->cgroup, err);
    /* a container's runtime writes the same rules itself, after it made
     * the nodes in the container's /dev and before the job runs */
    if (rc == GP_OK && spec->isolate_devices && !spec->container) {
        gp_device_rule rules[GP_DEVICE_RULES_MAX];
        size_t n = 0;
        rc = gp_device_rules_for(spec->device_paths, rules, GP_DEVICE_RULES_MAX, &n, err);
        if (rc == GP_OK) {
            rc = gp_cgroup_limit_devices(p->cgroup, rules, n, err);
        }
    }
    return rc;
}

/* Forks; the parent waits for exec (the report pipe closes) or a failure report. */
static gp_err gp__fork_exec(gp__child_plan *plan, gp_proc *p, gp_error *err)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        return gp_error_set(err, GP_ERR_CONFLICT, "launch", "pipe: %s", strerror(errno));
    }
    report[1] = gp__above_stdio(report[1]);
    plan->report_fd = report[1];
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        gp__child_run(plan);
    }
    close(report[1]);
    if (pid < 0) {
        close(report[0]);
        return gp_error_set(err, GP_ERR_CONFLICT, "launch", "fork: %s", strerror(errno));
    }
    gp__child_failure failure;
    ssize_t n;
    do {
        n = read(report[0], &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof failure) {
        waitpid(pid, NULL, 0);
        gp_err code = failure.step == GP__STEP_EXEC && failure.error == ENOENT ? GP_ERR_NOT_FOUND : GP_ERR_CONFLICT;
        return gp_error_set(err, code, failure.step == GP__STEP_WORKDIR ? "workdir" : "launch", "%s: %s",
                            gp__step_names[failure.step], strerror(failure.error));
    }
    p->pid = pid;
    p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    return GP_OK;
}

/* The container's process as the launcher resolved it, its config and
 * its start; the runtime is given the replica's own cgroup. */
static gp_err gp__start_container(const gp_launch_spec *spec, const gp__child_plan *plan, gp_env *env, gp_proc *p,
                                  gp_error *err)
{
    if (geteuid() != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "container", "a container needs a root agent");
    if (!plan->switch_user || plan->uid == 0)
        return gp_error_set(err, GP_ERR_INVALID, "container", "refused: a container never runs its job as root");
    char cgroups_path[2 * GP_CGROUP_PATH_MAX + 2];
    if (p->cgroup)
        snprintf(cgroups_path, sizeof cgroups_path, "/%s/%s", spec->cgroups->parent, spec->cgroup_name);
    gp_container_process proc = {.argv = spec->argv, .envp = env->vars, .cwd = spec->workdir, .uid = plan->uid,
                                 .gid = plan->gid, .groups = plan->groups, .ngroups = plan->ngroups};
    gp_container_limits limits = {.cgroups_path = p->cgroup ? cgroups_path : NULL, .limits = spec->limits,
                                  .shm_mib = spec->shm_mib, .device_paths = spec->device_paths};
    json_t *config = NULL;
    gp_err rc = gp_container_config(spec->container, &proc, &limits, &config, err);
    if (rc == GP_OK)
        rc = gp_container_start(spec->container, config, plan->stdin_fd, plan->stdout_fd, plan->stderr_fd, &p->pid,
                                err);
    json_decref(config);
    if (rc != GP_OK)
        return rc;
    snprintf(p->runtime, sizeof p->runtime, "%s", spec->container->runtime);
    snprintf(p->container_id, sizeof p->container_id, "%s", spec->container->id);
    p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    return GP_OK;
}

static gp_err gp__launch_prepared(const gp_launch_spec *spec, gp__child_plan *plan, gp_env *env, gp_proc *p,
                                  gp_error *err)
{
    char program[4096];
    gp_err rc = GP_OK;
    for (size_t i = 0; spec->envp && spec->envp[i] && rc == GP_OK; i++) {
        rc = gp_env_put(env, spec->envp[i], err);
    }
    if (rc == GP_OK) rc = gp__resolve_user(spec, plan, env, p, err);
    bool bare = !spec->container;
    if (rc == GP_OK && bare)
        rc = gp__resolve_program(spec->argv[0], gp_env_get(env, "PATH"), program, sizeof program, err);
    if (rc == GP_OK) rc = gp__make_workdir(spec->workdir, plan, err);
    if (rc == GP_OK && bare) rc = gp__make_tmp(spec, plan, p, err); /* a container has its own */
    if (rc == GP_OK) rc = gp__open_stdio(spec, plan, err);
    if (rc == GP_OK) rc = gp__make_cgroup(spec, p, err);
    if (rc == GP_OK && !bare)
        return gp__start_container(spec, plan, env, p, err);
    if (rc == GP_OK) {
        plan->program = program;
        plan->argv = spec->argv;
        plan->envp = env->vars;
        plan->workdir = spec->workdir;
        plan->cgroup = p->cgroup;
        rc = gp__fork_exec(plan, p, err);
    }
    return rc;
}

gp_err gp_launch(const gp_launch_spec *spec, gp_proc **out, gp_error *err)
{
    if (!spec->argv || !spec->argv[0] || !spec->argv[0][0]) {
        return gp_error_set(err, GP_ERR_INVALID, "argv", "a program to run is needed");
    }
    if (!spec->workdir) {
        return gp_error_set(err, GP_ERR_INVALID, "workdir", "a working directory is needed");
    }
    gp_proc *p = calloc(1, sizeof *p);
    if (!p) {
        return gp_error_set(err, GP_ERR_NOMEM, "launch", "out of memory");
    }
    p->pidfd = -1;
    p->deadline = -1;
    gp__child_plan plan = {.stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
    gp_env env = {0};
    gp_err rc = gp__launch_prepared(spec, &plan, &env, p, err);
    gp__close_stdio(&plan);
    gp_env_free(&env);
    if (rc != GP_OK) {
        gp_cgroup_destroy(p->cgroup, NULL);
        free(p);
        return rc;
    }
    *out = p;
    return GP_OK;
}

pid_t gp_proc_pid(const gp_proc *p)
{
    return p->pid;
}

int gp_proc_fd(const gp_proc *p)
{
    return p->pidfd;
}

const char *gp_proc_note(const gp_proc *p)
{
    return p->note;
}

void gp_proc_stop(gp_proc *p, int sig, int64_t now_ms, int64_t grace_ms, gp_stop_cause cause)
{
    if (p->ended) {
        return;
    }
    int64_t deadline = now_ms + (grace_ms > 0 ? grace_ms : 0);
    if (p->deadline < 0 || deadline < p->deadline) {
        p->deadline = deadline;
    }
    if (!p->stopping || cause == GP_STOP_GPU_MEMORY || (cause == GP_STOP_TIME_LIMIT && p->cause != GP_STOP_GPU_MEMORY) ||
        (cause == GP_STOP_CHECKPOINTED && p->cause == GP_STOP_REQUESTED)) {
        p->cause = cause;
    }
    p->stopping = true;
    kill(-p->pid, sig);
}

int64_t gp_proc_deadline(const gp_proc *p)
{
    return p->ended || p->tree_killed ? -1 : p->deadline;
}

/* SIGKILL to everything of the replica: the cgroup, and the process group. */
static void gp__kill_tree(gp_proc *p)
{
    kill(-p->pid, SIGKILL);
    if (p->cgroup) {
        gp_cgroup_kill(p->cgroup);
    }
}

static gp_proc_exit gp__classify(const gp_proc *p, bool oom)
{
    gp_proc_exit end = {GP_EXIT_REASON_EXITED, -1, 0};
    if (WIFEXITED(p->status)) {
        end.code = WEXITSTATUS(p->status);
    } else if (WIFSIGNALED(p->status)) {
        end.signal = WTERMSIG(p->status);
        end.reason = GP_EXIT_REASON_SIGNALLED;
    }
    if (oom) {
        end.reason = GP_EXIT_REASON_OOM;
    } else if (p->stopping && p->cause == GP_STOP_GPU_MEMORY) {
        end.reason = GP_EXIT_REASON_GPU_MEMORY;
    } else if (p->stopping && p->cause == GP_STOP_TIME_LIMIT) {
        end.reason = GP_EXIT_REASON_TIME_LIMIT;
    } else if (p->stopping && p->cause == GP_STOP_CHECKPOINTED) {
        end.reason = GP_EXIT_REASON_CHECKPOINTED;
    } else if (p->tree_killed) {
        end.reason = GP_EXIT_REASON_KILLED_AFTER_GRACE;
    }
    return end;
}

/* The main process is reaped: kill the rest, read the OOM count, remove the cgroup. */
static void gp__finish(gp_proc *p)
{
    gp__kill_tree(p);
    bool oom = p->cgroup && gp_cgroup_oom_killed(p->cgroup);
    p->end = gp__classify(p, oom);
    if (p->runtime[0])
        gp_container_delete(p->runtime, p->container_id); /* its state; the cgroup folders too */
    gp_error err;
    if (gp_cgroup_destroy(p->cgroup, &err) != GP_OK) {
        gp__note(p, err.message);
    }
    p->cgroup = NULL;
    if (p->pidfd >= 0) {
        close(p->pidfd);
        p->pidfd = -1;
    }
    p->ended = true;
}

bool gp_proc_poll(gp_proc *p, int64_t now_ms, gp_proc_exit *out)
{
    if (!p->ended && !p->reaped && waitpid(p->pid, &p->status, WNOHANG) == p->pid) {
        p->reaped = true;
    }
    if (!p->ended && !p->reaped && !p->tree_killed && p->deadline >= 0 && now_ms >= p->deadline) {
        p->tree_killed = true;
        gp__kill_tree(p);
        if (waitpid(p->pid, &p->status, WNOHANG) == p->pid) {
            p->reaped = true;
        }
    }
    if (!p->ended && p->reaped) {
        gp__finish(p);
    }
    if (p->ended) {
        *out = p->end;
    }
    return p->ended;
}

void gp_proc_free(gp_proc *p)
{
    if (!p) {
        return;
    }
    if (!p->ended) {
        if (!p->reaped) {
            gp__kill_tree(p);
            waitpid(p->pid, &p->status, 0);
            p->reaped = true;
        }
        gp__finish(p);
    }
    free(p);
}
