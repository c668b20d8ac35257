/* container.h - a replica run by an OCI runtime (runc or crun) instead of
 * a bare exec: the bundle's config.json (bundle.c), the seccomp filter
 * from the container default profile (seccomp.c), the GPU edits from CDI
 * specs or the device nodes (cdi.c), the runtime's choice, the rootfs as
 * an overlay and the runtime's run and delete (runtime.c).
 *
 * What a replica with an image gets (docs/agent.md "Containers"):
 *   - namespaces pid, mount, ipc, uts always, network with
 *     private_network (else the host's); no user namespace of its own
 *     (the job runs as its non-root uid with no capabilities; see below);
 *   - the process: argv, env, cwd, uid/gid and groups as the launcher
 *     resolved them, no_new_privs, no capability at all (bounding,
 *     effective, permitted, inheritable, ambient empty: the job's user is
 *     never root, so a capability would only be a way to become more),
 *     RLIMIT_NOFILE as the supervisor has it (what a bare replica inherits);
 *   - the masked and read-only /proc and /sys paths `runc spec` writes;
 *   - the host's name, /etc/hosts and /etc/resolv.conf (read-only) on the
 *     host's network (its peers are node names); the container id as its
 *     name on a private one;
 *   - mounts: proc, a tmpfs /dev, devpts, /dev/shm of shm_mib, mqueue,
 *     sysfs and the cgroup read-only, then the binds (its working folder,
 *     its checkpoint folder at the GPUPOOL_CHECKPOINT_DIR path, the MPS
 *     pipe folder, the assignment's mounts), then the GPU edits;
 *   - linux.resources: memory (swap included), cpu quota, pids and the
 *     device allow-list, the same values the launcher's own cgroup has
 *     (cgroup.h): the runtime is given that very group (cgroupsPath
 *     "/gpupool/job7-r1-1795523111", the same string on v1 and v2), so
 *     OOM counting, the freezer kill and telemetry by pid stay as they are;
 *   - seccomp: /usr/share/containers/seccomp.json resolved for this
 *     architecture and the empty capability set, new user namespaces
 *     refused (clone and unshare with CLONE_NEWUSER, clone3 ENOSYS so libc
 *     falls back to clone) unless allow_userns.
 *
 * The rootfs: the image's folder is the read-only lower layer of an
 * overlay whose upper layer is BUNDLE/upper (thrown away with the
 * bundle); read_only_root makes the overlay's root read-only for the job.
 * The overlay is mounted in a mount namespace of the runtime's own (the
 * child that execs it), so it vanishes with the container's last
 * process, whatever happens to the agent or the supervisor.
 *
 * Ownership: nothing here keeps memory between calls; json_t results are
 * new references for the caller; the spec's strings are only read.
 */
#ifndef GP_AGENT_CONTAINER_H
#define GP_AGENT_CONTAINER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/launch/cgroup.h"
#include "util/error.h"

#define GP_CONTAINER_PATH_MAX 4096
#define GP_CONTAINER_SECCOMP_PROFILE "/usr/share/containers/seccomp.json"
#define GP_CONTAINER_ID_MAX 128

/* A host folder or file bound into the container. */
typedef struct gp_container_bind {
    const char *source; /* absolute, on the host */
    const char *target; /* absolute, in the container */
    bool read_only;
} gp_container_bind;

typedef struct gp_container_spec {
    const char *runtime;         /* absolute path of runc or crun */
    const char *id;              /* unique per run: "gpupool-job7-r1-1795523111" */
    const char *bundle;          /* the run's bundle folder (made 0700, root's; removed by the caller) */
    const char *rootfs;          /* the image's unpacked root: the overlay's lower layer */
    bool read_only_root;
    bool private_network;
    bool allow_userns;           /* the job may make user namespaces */
    const gp_container_bind *binds;
    size_t n_binds;
    const char *const *gpu_uuids; /* the assigned GPUs or MIG instances (CDI device names), NULL-terminated */
    const char *seccomp_profile; /* NULL: GP_CONTAINER_SECCOMP_PROFILE */
    const char *const *cdi_dirs; /* NULL: /etc/cdi and /var/run/cdi */
} gp_container_spec;

/* What the launcher resolved for the process. */
typedef struct gp_container_process {
    char *const *argv;
    char *const *envp;
    const char *cwd;
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    int ngroups;
} gp_container_process;

/* What the launcher's cgroup holds, repeated for the runtime. */
typedef struct gp_container_limits {
    const char *cgroups_path;          /* "/gpupool/job7-r1-..." or NULL: the runtime's own */
    gp_cgroup_limits limits;
    unsigned shm_mib;                  /* 0: 64 MiB, the runtime's default */
    const char *const *device_paths;   /* the GPU nodes (or the sim's stand-in files), NULL-terminated */
} gp_container_limits;

/* The folder of a dir: image for the rootfs: "dir:/abs" is /abs (a
 * folder).  Any other image is GP_ERR_CONFLICT (field "image"): docker://
 * and oci: images come from the image store, which the replica's
 * supervisor pulls them into (supervise.c). */
gp_err gp_container_rootfs_of(const char *image, char *out, size_t cap, gp_error *err);

/* config.json for the bundle.  GP_ERR_INVALID (field "mounts" for a bind
 * that is not absolute, holds "..", or goes on /, /proc, /sys or /dev;
 * "devices", "seccomp") for what cannot be expressed; *out a new object. */
gp_err gp_container_config(const gp_container_spec *c, const gp_container_process *p, const gp_container_limits *l,
                           json_t **out, gp_error *err);

/* The OCI seccomp section for a Docker-format profile (its JSON), the
 * architecture ("amd64", "arm64", ...; see gp_seccomp_native_arch), the
 * capabilities held (NULL-terminated names, NULL none) and whether new
 * user namespaces are allowed.  GP_ERR_INVALID (field "seccomp") for a
 * profile without defaultAction or syscalls.  *out a new object. */
gp_err gp_seccomp_resolve(const json_t *profile, const char *arch, const char *const *caps, bool allow_userns,
                          json_t **out, gp_error *err);
/* This build's architecture in the profile's words ("amd64"). */
const char *gp_seccomp_native_arch(void);

/* The GPU edits into config: CDI specs from dirs (NULL: /etc/cdi and
 * /var/run/cdi) whose devices are named by a uuid; when none names them,
 * the same edits from the device paths (device nodes, or plain stand-in
 * files bound at /dev/NAME) and the NVIDIA driver's libraries and tools
 * bound read-only when a real NVIDIA node is among them.  *used_cdi says
 * which.  GP_ERR_INVALID (field "devices") for a path that is neither. */
gp_err gp_cdi_apply(json_t *config, const char *const *dirs, const char *const *uuids,
                    const char *const *device_paths, bool *used_cdi, gp_error *err);

/* The folders the driver's libraries are looked for in: the usual
 * library folders, then those ld_conf (NULL: /etc/ld.so.conf) names,
 * directly or through its include lines (two levels).  Fills out (cap
 * entries, the caller's) and returns how many. */
size_t gp_cdi_library_folders(const char *ld_conf, char (*out)[GP_CONTAINER_PATH_MAX], size_t cap);

/* The driver's edits into config: its libraries in folders bound
 * read-only at their paths (a folder outside the usual ones also on the
 * container's LD_LIBRARY_PATH) and nvidia-smi (at /usr/bin too when it is
 * elsewhere). */
void gp_cdi_driver_edits(json_t *config, const char (*folders)[GP_CONTAINER_PATH_MAX], size_t n);

/* The runtime to use: override when given (must be executable), else
 * crun when it is installed and the host's cgroups are not the hybrid
 * layout it refuses, else runc.  out gets its path, why a sentence for the
 * agent's log.  GP_ERR_NOT_FOUND when there is none. */
gp_err gp_container_runtime_choose(const char *override, gp_cgroup_layout layout, char *out, size_t cap, char *why,
                                   size_t why_cap, gp_error *err);

/* Writes BUNDLE/config.json, makes the overlay's folders and runs the
 * container detached with stdio on the three descriptors; the calling
 * process becomes a child subreaper, so the container's init (whose
 * host pid is *pid) is its child once the runtime has exited: waitpid
 * and a pidfd work on it as on a forked child.  GP_ERR_CONFLICT with the
 * runtime's own error when it refuses. */
gp_err gp_container_start(const gp_container_spec *c, const json_t *config, int stdin_fd, int stdout_fd,
                          int stderr_fd, pid_t *pid, gp_error *err);

/* `RUNTIME delete --force ID`: the runtime's state and what is left of
 * the container.  true when the runtime said so (false also for an ID it
 * never knew: harmless). */
bool gp_container_delete(const char *runtime, const char *id);

#endif
