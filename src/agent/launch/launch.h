/* launch.h - start one replica, stop it, and learn how it ended.
 *
 * gp_launch forks and execs the replica:
 *   - in its own session and process group (setsid), so a signal reaches
 *     the whole tree it starts;
 *   - in its own cgroup (cgroup.h) when the caller gives a host with
 *     cgroups: limits from the spec, devices limited to the default table
 *     plus the spec's device nodes (devices.h); the child joins the group
 *     before exec, so nothing it starts escapes;
 *   - as the job's identity when the agent runs as root: spec->user
 *     (setgroups to the user's groups, setgid, setuid), refused when it
 *     resolves to uid 0 or a uid below spec->uid_min; or, without a user,
 *     spec->job_uid (uid = gid, no supplementary groups, HOME its working
 *     folder, USER and LOGNAME spec->job_name).  Without root, the agent's
 *     own user (the note says so);
 *   - with no_new_privs (no setuid binary, file capability or exec
 *     transition gives it more than it has) and umask 077;
 *   - in spec->workdir (created when missing; 0700 and owned by the job's
 *     uid whenever the agent is root);
 *   - as root with spec->private_tmp: in a mount namespace of its own, "/"
 *     made a slave (nothing it mounts reaches the host), a tmpfs of
 *     spec->shm_mib on /dev/shm (charged to the replica's memory cgroup)
 *     and, with spec->tmp_dir, tmp_dir/tmp bound on /tmp and on /var/tmp
 *     (each skipped when the host lacks it); tmp_dir is created 0700 and
 *     the uid's, tmp in it 1777 (scratch.h removes them).  With a tmp_dir,
 *     every folder the replica needs (workdir, its checkpoint folder) must
 *     lie outside /tmp and /var/tmp, which it hides (the agent checks);
 *   - stdin /dev/null; stdout and stderr into spec->output_fd (> 2, the
 *     supervisor's pipe, replica_log.h) or else appended to the log files
 *     (created 0640, not through a symbolic link);
 *   - with exactly spec->envp (gp_env_for_replica builds it) plus HOME,
 *     USER, LOGNAME, SHELL (from the user's passwd entry) and PATH
 *     (/usr/local/bin:/usr/bin:/bin) when envp lacks them;
 *   - with no descriptor of the agent's open (everything past 2 is closed
 *     at exec).
 * With spec->container (an image) the same replica runs in an OCI
 * container instead of a bare exec (container/container.h): the user,
 * working folder, stdio, cgroup and devices are resolved as above, the
 * program is looked up in the image, and the runtime is given the
 * replica's own cgroup; its init's host pid is gp_proc_pid (the caller
 * becomes a child subreaper to be its parent), and gp_proc_poll /
 * gp_proc_free delete the container with the runtime at the end.  A
 * container never runs as uid 0 and needs a root agent (field
 * "container").
 * A replica of an untrusted tenant (spec->untrusted) is refused (field
 * "devices") unless its devices are isolated: isolate_devices on a host
 * with cgroups.
 * A failure before exec (no such user, program or folder, a limit
 * refused) is an error from gp_launch itself, nothing is left running.
 *
 * Ends, without threads (from an event loop): gp_proc_fd is a pidfd that
 * polls readable when the main process exits; gp_proc_poll reaps it.
 *
 *   gp_proc_stop(p, SIGTERM, now, 30000, GP_STOP_REQUESTED);
 *   ... poll() on gp_proc_fd(p), waking by gp_proc_deadline(p) ...
 *   if (gp_proc_poll(p, now, &end)) report(end.reason, end.code, end.signal);
 *
 * The stop signals the process group; at the deadline gp_proc_poll kills
 * the whole tree (cgroup.kill, the v1 freezer walk, or SIGKILL to the
 * process group without a cgroup).  When the main process is gone, what
 * is left of the tree is killed, and the end's reason is, first match:
 *   oom                the kernel OOM-killed a process of the replica
 *   time_limit         the stop was for the job's time limit
 *   gpu_memory         the agent killed it for using more GPU memory than
 *                      its MPS or time-slice share (agent_share.h)
 *   checkpointed       the job said its checkpoint was done in its grace and
 *                      the agent then killed it, as planned
 *   killed_after_grace the grace ran out and the tree was killed
 *   exited             exit(code)
 *   signalled          a signal ended it (signal)
 *
 * Ownership: gp_launch allocates a gp_proc (which owns the replica's
 * cgroup); gp_proc_free kills what is left, reaps, removes the cgroup and
 * frees it.  The spec's strings are only read during gp_launch.
 */
#ifndef GP_AGENT_LAUNCH_H
#define GP_AGENT_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/container/container.h"
#include "agent/launch/cgroup.h"
#include "util/error.h"
#include "util/exit_reason.h"

typedef struct gp_launch_spec {
    char *const *argv;         /* NULL-terminated; argv[0] without '/' is looked up on envp's PATH */
    char *const *envp;         /* "NAME=value", NULL-terminated (gp_env.vars) */
    const char *user;          /* the job's user; NULL: job_uid, else the agent's user */
    uid_t job_uid;             /* a job without a user, root agent: its own uid (= gid); 0 none */
    const char *job_name;      /* USER and LOGNAME for job_uid: "job42" */
    uid_t uid_min;             /* a named user below this uid is refused (uid 0 always is) */
    const char *workdir;       /* absolute */
    const char *stdout_path;   /* appended; may equal stderr_path */
    const char *stderr_path;
    int output_fd;             /* > 2: stdout and stderr go there instead of the paths; 0: the paths */
    bool private_tmp;          /* root only: its own /dev/shm (and /tmp, /var/tmp with tmp_dir) */
    const char *tmp_dir;       /* absolute: made, its tmp/ bound on /tmp and /var/tmp; NULL: the host's */
    unsigned shm_mib;          /* the /dev/shm tmpfs's size; 0: the kernel's (half the memory) */
    const gp_cgroup_host *cgroups; /* NULL or layout none: no cgroup, no limits */
    const char *cgroup_name;   /* the replica's group under cgroups->parent: "job42-r0" */
    gp_cgroup_limits limits;
    bool isolate_devices;      /* needs cgroups: only the default table and device_paths open */
    bool untrusted;            /* its tenant is untrusted: refused unless the devices are isolated */
    const char *const *device_paths; /* the GPU nodes allowed, NULL-terminated; NULL for none */
    const gp_container_spec *container; /* NULL: a bare exec; else through its runtime (the binds, image, ...) */
} gp_launch_spec;

/* Why a stop was sent: gpupoold asked, the job's time limit, or its GPU
 * memory over its share (the agent's own kill). */
/* CHECKPOINTED: the kill that ends a grace once the job said its checkpoint was done. */
typedef enum gp_stop_cause {
    GP_STOP_REQUESTED = 0,
    GP_STOP_TIME_LIMIT,
    GP_STOP_GPU_MEMORY,
    GP_STOP_CHECKPOINTED
} gp_stop_cause;

typedef struct gp_proc_exit {
    gp_exit_reason reason;
    int code;   /* exit status when the main process exited, else -1 */
    int signal; /* the signal that ended it, else 0 */
} gp_proc_exit;

typedef struct gp_proc gp_proc;

/* Starts the replica.  GP_ERR_INVALID (field "argv", "workdir", "user",
 * "devices", "cgroup", ...) for a bad spec, GP_ERR_NOT_FOUND for a missing
 * user or program, GP_ERR_CONFLICT when the system refuses (the message
 * names the step and the errno). */
gp_err gp_launch(const gp_launch_spec *spec, gp_proc **out, gp_error *err);

pid_t gp_proc_pid(const gp_proc *p);
/* A pidfd, readable once the main process has exited; -1 on kernels
 * without pidfd_open (then call gp_proc_poll on SIGCHLD). */
int gp_proc_fd(const gp_proc *p);
/* What the launch could not do as asked ("running as the agent's user
 * gpu, not alice: the agent is not root"; "no cgroups on this host"), or "". */
const char *gp_proc_note(const gp_proc *p);
/* Signals the process group with sig and kills the whole tree at
 * now_ms + grace_ms (0: at the next gp_proc_poll).  A second stop keeps the
 * earlier deadline; a time-limit or GPU-memory cause sticks (GPU memory
 * wins: it is the agent's own kill).  Times are the caller's
 * monotonic milliseconds. */
void gp_proc_stop(gp_proc *p, int sig, int64_t now_ms, int64_t grace_ms, gp_stop_cause cause);
/* When gp_proc_poll must next be called for a pending kill, or -1. */
int64_t gp_proc_deadline(const gp_proc *p);
/* Reaps without blocking; kills the tree when the deadline has passed.
 * true once the replica has ended: *out is filled, the tree is gone and
 * the cgroup removed (again true, same *out, on later calls). */
bool gp_proc_poll(gp_proc *p, int64_t now_ms, gp_proc_exit *out);
/* Kills what is left, reaps, removes the cgroup, frees p (NULL is fine). */
void gp_proc_free(gp_proc *p);

#endif
