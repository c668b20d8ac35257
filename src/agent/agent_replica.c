/* agent_replica.c - one replica's life on a node: started under its
 * supervisor (supervise.h), stopped through its stop file, its end read
 * from its exit file, its checkpoint handshake, and adopted again by a
 * restarted agent (agent_node.h; the files are in agent_state.h).
 *
 * Where a replica's things go, for job 7 replica 1 bound at 1795523111 on
 * node h100-1:
 *   STATE/h100-1/replicas/job7-r1-1795523111/   its state folder
 *   STATE/h100-1/logs/job7-r1-1795523111.log    stdout + stderr
 *   WORK/h100-1/job7-r1-1795523111               working folder (0700, the job's)
 *   STATE/h100-1/scratch/job7-r1-1795523111/tmp  its /tmp and /var/tmp
 *   CHECKPOINTS/job7                             GPUPOOL_CHECKPOINT_DIR (0700, the job's)
 * Who it runs as, when the agent is root: the job's user (the launcher
 * refuses uid 0 and uids below the larger of the assignment's uid_min and
 * --min-job-uid); a job naming none runs as its own uid = gid =
 * --job-uid-base + job id % --job-uid-span ("job7"), which no other job
 * of the node shares.  Without root: the agent's user.
 *
 * Its limits: the job's cpu_millis and mem_mib, else its GPUs' share of
 * the node's (like Slurm's DefCpuPerGPU and DefMemPerGPU): node CPU and
 * memory * its GPUs / the node's GPUs, a shared slice counting milli_gpus
 * of one GPU and a job of no GPU as one.  On a node of 8 GPUs, 128 cores
 * and 1 TiB, a 2-GPU job gets 32 cores and 256 GiB, an MPS slice of 250
 * milli-GPUs 4 cores and 32 GiB.  pids.max: the job's pids_max, else
 * --default-pids-max.
 */
#define _GNU_SOURCE
#include "agent/agent_node.h"

#include "agent/agent_mps.h"
#include "agent/agent_plan.h"
#include "agent/launch/launch_env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GP__UID_MIN_DEFAULT 1000

static int gp__pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static gp_replica *gp__replica_new(gp_node *n, uint64_t job, unsigned replica, int64_t bind_time)
{
    gp_replica *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->node = n;
    r->job = job;
    r->replica = replica;
    r->bind_time = bind_time;
    r->pidfd = -1;
    r->checkpoint_wd = -1;
    r->stop_deadline = INT64_MIN;
    r->stop_signal = SIGTERM; /* the partition fence's, until an assignment says (gp_replica_partition_terms) */
    r->grace_ms = -1;
    r->log_sent = -1; /* an adopted run: ask gpupoold how much it has */
    r->listed = true;  /* until an answer says otherwise: never forget a run gpupoold may still list */
    gp_state_replica_name(job, replica, bind_time, r->name, sizeof r->name);
    snprintf(r->dir, sizeof r->dir, "%s/replicas/%s", n->dir, r->name);
    snprintf(r->log_path, sizeof r->log_path, "%s/logs/%s.log", n->dir, r->name);
    snprintf(r->checkpoint_dir, sizeof r->checkpoint_dir, "%s/job%llu", n->opt->checkpoint_root,
             (unsigned long long)job);
    return r;
}

int gp_assignment_share(const gp_assignment *assignment)
{
    const gp_assignment_slice *slice = &assignment->slice;
    if (!assignment->has_slice || !slice->has_kind)
        return GP_PLAN_WHOLE_GPU;
    if (strcmp(slice->kind, "mig") != 0)
        return GP_PLAN_SHARED_GPU;
    return slice->mig_start >= 0 && slice->mig_start < 64 ? (int)slice->mig_start : 0;
}

static void gp__replica_gpus(gp_replica *r, const gp_assignment *assignment)
{
    r->share = gp_assignment_share(assignment);
    int kind = GP_SHARING_EXCLUSIVE;
    if (!gp_enum_value(GP_ENUM_SHARING, assignment->slice.kind, &kind))
        kind = GP_SHARING_EXCLUSIVE;
    r->slice = (gp_sharing)kind;
    r->milli_gpus = assignment->slice.milli_gpus;
    r->slice_mem_mib = assignment->slice.gpu_mem_mib;
    snprintf(r->tenant, sizeof r->tenant, "%s", assignment->tenant);
    snprintf(r->image, sizeof r->image, "%s", assignment->image);
    for (size_t i = 0; i < assignment->n_gpus; i++)
        snprintf(r->gpus[r->n_gpus++], GP_UUID_MAX, "%s", assignment->gpus[i]);
}

/* ---- the environment and launch.json ---- */

static void gp__job_env_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* The job's own variables as "NAME=value", NULL-terminated: its env, then
 * the values of the secrets it names (gpupoold sends them only in the
 * entry of a replica this node is to run).  Each string and the array are
 * the caller's to free (gp__job_env_free). */
static char **gp__job_env(const gp_assignment *a)
{
    size_t n = a->n_env + a->n_secrets;
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        const gp_assignment_var *v = i < a->n_env ? &a->env[i] : &a->secrets[i - a->n_env];
        if (asprintf(&out[i], "%s=%s", v->name, v->value) < 0) { /* never a list cut short */
            out[i] = NULL;
            gp__job_env_free(out);
            return NULL;
        }
    }
    return out;
}

static gp_err gp__replica_env(const gp_replica *r, const gp_assignment *a, const char *visible, json_t **out,
                              gp_error *err)
{
    char **env = gp__job_env(a);
    gp_replica_desc desc = {
        .job_id = r->job, .tenant = a->tenant, .replica = r->replica, .replicas = a->replicas,
        .hosts = (const char *const *)a->peers, .visible_devices = visible, .checkpoint_dir = r->checkpoint_dir,
        .restart_count = a->restart_count,
    };
    gp_env e = {0};
    gp_err rc = GP_OK;
    if (!env)
        rc = gp_error_set(err, GP_ERR_NOMEM, "env", "out of memory");
    else if (a->n_peers != desc.replicas)
        rc = gp_error_set(err, GP_ERR_INVALID, "peers", "the assignment's peers do not name each replica");
    else
        rc = gp_env_for_replica(&e, (const char *const *)env, &desc, err);
    if (rc == GP_OK && r->slice == GP_SHARING_MPS && r->n_gpus > 0)
        rc = gp_mps_client_env(&e, r->node->dir, r->gpus[0], r->milli_gpus, gp_replica_share_mib(r->node, r), err);
    *out = json_array();
    for (size_t i = 0; rc == GP_OK && i < e.count; i++)
        json_array_append_new(*out, json_string(e.vars[i]));
    gp_env_free(&e);
    gp__job_env_free(env);
    return rc;
}

/* The job's user, NULL when it names none. */
static const char *gp__job_user(const gp_assignment *a)
{
    return a->user[0] ? a->user : NULL;
}

/* A job without a user, root agent: its own uid (0: none). */
static uid_t gp__job_uid(const gp_node *n, const gp_assignment *a, uint64_t job)
{
    if (gp__job_user(a) || geteuid() != 0)
        return 0;
    return (uid_t)(n->opt->job_uid_base + job % n->opt->job_uid_span);
}

/* The lowest uid a named user may have: the larger of gpupoold's and ours. */
static json_int_t gp__uid_min(const gp_node *n, const gp_assignment *a)
{
    json_int_t theirs = a->has_uid_min ? a->uid_min : GP__UID_MIN_DEFAULT;
    return theirs > (json_int_t)n->opt->min_job_uid ? theirs : (json_int_t)n->opt->min_job_uid;
}

/* The replica's share of the node's total (CPU millis or MiB) by its GPUs. */
static json_int_t gp__gpu_share(const gp_node *n, const gp_replica *r, int64_t total)
{
    int gpus = n->inventory.gpu_count;
    if (gpus <= 0 || total <= 0)
        return total > 0 ? total : 0;
    int64_t milli = r->milli_gpus > 0 ? r->milli_gpus : r->n_gpus > 0 ? (int64_t)r->n_gpus * 1000 : 1000;
    return (json_int_t)(total * milli / ((int64_t)gpus * 1000));
}

/* A limit the job set, else the default. */
static json_int_t gp__limit(int64_t v, json_int_t otherwise)
{
    return v > 0 ? v : otherwise;
}

/* The device nodes of the replica's GPUs (not with --no-isolate-devices). */
static json_t *gp__devices(gp_node *n, const gp_replica *r, const char *visible)
{
    json_t *out = json_array();
    if (!n->opt->isolate_devices)
        return out;
    const char *uuids[GP_MAX_GPUS_PER_NODE + 1];
    size_t nu = 0;
    for (size_t i = 0; i < r->n_gpus; i++)
        uuids[nu++] = r->gpus[i];
    if (r->mig_uuid[0])
        uuids[nu++] = visible;
    static gp_device_node nodes[GP_GPU_DEVICES_MAX];
    size_t nn = 0;
    gp_error err;
    if (gp_gpu_device_nodes(&n->gpu, uuids, nu, nodes, GP_GPU_DEVICES_MAX, &nn, &err) == GP_OK)
        for (size_t i = 0; i < nn; i++)
            json_array_append_new(out, json_string(nodes[i].path));
    return out;
}

/* WORK/NODE (or STATE/NODE/work): made 0711 so that the job's user reaches
 * its own folder in it (the launcher makes that one, the user's) and
 * lists no other. */
static gp_err gp__workdir(const gp_node *n, const gp_replica *r, char *out, size_t cap, gp_error *err)
{
    char parent[GP_STATE_PATH_MAX];
    if (n->opt->work_root[0])
        snprintf(parent, sizeof parent, "%s/%s", n->opt->work_root, n->name);
    else
        snprintf(parent, sizeof parent, "%s/work", n->dir);
    snprintf(out, cap, "%s/%s", parent, r->name); /* per run: an ending run removes its own, not its successor's */
    gp_err rc = gp_state_mkdirs(parent, 0711, err);
    if (rc == GP_OK)
        chmod(parent, 0711); /* made 0755 by an older agent */
    return rc;
}

/* Who it runs as: "user", or "job_uid" and "job_name" (a root agent and
 * a job naming no user), and the lowest uid allowed. */
static void gp__launch_identity(const gp_node *n, const gp_replica *r, const gp_assignment *a, json_t *launch)
{
    const char *user = gp__job_user(a);
    uid_t uid = gp__job_uid(n, a, r->job);
    json_object_set_new(launch, "user", user ? json_string(user) : json_null());
    if (uid > 0) {
        json_object_set_new(launch, "job_uid", json_integer((json_int_t)uid));
        json_object_set_new(launch, "job_name", json_sprintf("job%llu", (unsigned long long)r->job));
    }
    json_object_set_new(launch, "uid_min", json_integer(gp__uid_min(n, a)));
}

/* CPU, memory, pids, /dev/shm (the job's shm_mib, else half the memory,
 * as tmpfs's own default; charged to the memory limit) and the log's cap. */
static void gp__launch_limits(const gp_node *n, const gp_replica *r, const gp_assignment *a, json_t *launch)
{
    json_int_t mem = gp__limit(a->mem_mib, gp__gpu_share(n, r, n->inventory.mem_mib));
    json_object_set_new(launch, "cpu_millis",
                        json_integer(gp__limit(a->cpu_millis, gp__gpu_share(n, r, n->inventory.cpu_millis))));
    json_object_set_new(launch, "mem_mib", json_integer(mem));
    json_object_set_new(launch, "shm_mib", json_integer(a->shm_mib > 0 ? a->shm_mib : mem / 2));
    json_object_set_new(launch, "pids_max", json_integer(gp__limit(a->pids_max, n->opt->default_pids_max)));
    json_object_set_new(launch, "log_max_bytes", json_integer(n->opt->log_max_bytes));
}

/* A bind at the same path inside as outside. */
static json_t *gp__bind(const char *source, const char *target, bool read_only)
{
    return json_pack("{s:s, s:s, s:b}", "source", source, "target", target, "read_only", read_only);
}

/* Where the container's root comes from, into c: a dir: image's folder as
 * "rootfs"; a docker:// or oci: image as "image" with the node's image
 * store ("image_store": its folder, bound, insecure registries, timeout)
 * and the tenant's registry credential ("image_auth": launch.json is
 * root's, 0600, like the secrets in its env), which the supervisor pulls
 * before it starts the runtime (supervise.c). */
static gp_err gp__image_source(const gp_node *n, const gp_assignment *a, json_t *c, gp_error *err)
{
    char rootfs[GP_STATE_PATH_MAX];
    if (strncmp(a->image, "dir:", 4) == 0) {
        gp_err rc = gp_container_rootfs_of(a->image, rootfs, sizeof rootfs, err);
        if (rc == GP_OK)
            json_object_set_new(c, "rootfs", json_string(rootfs));
        return rc;
    }
    const gp_image_pull_options *o = &n->opt->image_pull;
    json_t *insecure = json_array();
    for (size_t i = 0; i < o->n_insecure; i++)
        json_array_append_new(insecure, json_string(o->insecure[i]));
    json_object_set_new(c, "image", json_string(a->image));
    json_object_set_new(c, "image_store",
                        json_pack("{s:s, s:I, s:o, s:i}", "root", n->opt->image_store, "max_bytes",
                                  (json_int_t)n->opt->image_store_bytes, "insecure", insecure, "timeout_s",
                                  o->timeout_s));
    if (a->image_auth_user && a->image_auth_password)
        json_object_set_new(c, "image_auth", json_pack("{s:s, s:s}", "username", a->image_auth_user, "password",
                                                       a->image_auth_password));
    return json_object_get(c, "image_store") ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "image", "out of memory");
}

/* launch.json's "container" for a replica with an image (NULL without):
 * the runtime, its id (gpupool-job7-r1-1795523111: unique per run), the
 * bundle (STATE/NODE/scratch/RUN, root's, removed with the run), the
 * rootfs, the binds (working and checkpoint folders at their own paths,
 * the MPS pipe folder, the assignment's mounts) and the GPUs' names for
 * CDI. */
static gp_err gp__launch_container(gp_node *n, const gp_replica *r, const gp_assignment *a, const char *workdir,
                                   const char *visible, json_t **out, gp_error *err)
{
    char bundle[GP_STATE_PATH_MAX];
    *out = NULL;
    if (!a->image[0])
        return GP_OK;
    if (!n->opt->runtime[0])
        return gp_error_set(err, GP_ERR_CONFLICT, "image", "this node has no OCI runtime (runc or crun)");
    snprintf(bundle, sizeof bundle, "%s/scratch/%s", n->dir, r->name);
    json_t *binds = json_pack("[o, o]", gp__bind(workdir, workdir, false),
                              gp__bind(r->checkpoint_dir, r->checkpoint_dir, false));
    if (r->slice == GP_SHARING_MPS && r->n_gpus > 0) {
        char pipe[GP_STATE_PATH_MAX], log[GP_STATE_PATH_MAX];
        gp_mps_dirs(n->dir, r->gpus[0], pipe, log, sizeof pipe);
        json_array_append_new(binds, gp__bind(pipe, pipe, false));
    }
    for (size_t i = 0; i < a->n_mounts; i++)
        json_array_append_new(binds, gp__bind(a->mounts[i].source, a->mounts[i].target, a->mounts[i].read_only));
    json_t *gpus = json_array();
    for (const char *u = visible; *u;) {
        size_t len = strcspn(u, ",");
        json_array_append_new(gpus, json_stringn(u, len));
        u += len + (u[len] == ',');
    }
    *out = json_pack("{s:s, s:s+, s:s, s:o, s:o}", "runtime", n->opt->runtime, "id", "gpupool-", r->name, "bundle",
                     bundle, "binds", binds, "gpus", gpus);
    if (!*out)
        return gp_error_set(err, GP_ERR_NOMEM, "image", "out of memory");
    if (n->opt->seccomp_profile)
        json_object_set_new(*out, "seccomp_profile", json_string(n->opt->seccomp_profile));
    gp_err rc = gp__image_source(n, a, *out, err);
    if (rc != GP_OK) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

static json_t *gp__launch_json(gp_node *n, gp_replica *r, const gp_assignment *a, json_t *env, const char *visible,
                               const char *workdir)
{
    const gp_agent_options *o = n->opt;
    char tmp_dir[GP_STATE_PATH_MAX];
    snprintf(tmp_dir, sizeof tmp_dir, "%s/scratch/%s", n->dir, r->name);
    if (!a->has_command) {
        json_decref(env);
        return NULL;
    }
    json_t *launch = json_pack(
        "{s:o, s:s, s:s, s:o, s:s, s:b, s:o, s:o, s:s, s:o, s:b}", "env", env, "workdir", workdir,
        "log", r->log_path, "cgroup_parent",
        o->no_cgroups ? json_null() : json_string(o->cgroup_parent ? o->cgroup_parent : "gpupool"), "cgroup_name",
        r->name, "isolate_devices", o->isolate_devices, "devices", gp__devices(n, r, visible), "assignment",
        gp_assignment_to_json(a),
        "visible", visible, "tmp_dir", o->private_tmp && !a->image[0] ? json_string(tmp_dir) : json_null(), "keep_scratch",
        o->keep_scratch_s > 0);
    if (launch) {
        json_object_set_new(launch, "private_tmp", json_boolean(geteuid() == 0)); /* /dev/shm at least */
        gp__launch_identity(n, r, a, launch);
        gp__launch_limits(n, r, a, launch);
    }
    return launch;
}

/* ---- starting ---- */

/* The GPU index of uuid in the inventory, or -1. */
static int gp__gpu_index(const gp_node *n, const char *uuid)
{
    for (int g = 0; g < n->inventory.gpu_count; g++)
        if (strcmp(n->inventory.gpus[g].uuid, uuid) == 0)
            return g;
    return -1;
}

/* A MIG slice: the instance at (gpu, start), made when missing. */
static gp_err gp__mig_slice(gp_node *n, gp_replica *r, const gp_assignment_slice *slice, gp_error *err)
{
    const char *profile = slice->mig_profile;
    int start = (int)slice->mig_start;
    int g = r->n_gpus ? gp__gpu_index(n, r->gpus[0]) : -1;
    if (g < 0 || !profile[0])
        return gp_error_set(err, GP_ERR_INVALID, "slice", "a MIG slice on a GPU this node does not have");
    gp_mig_instance m;
    gp_err rc = gp_gpu_mig_create(&n->gpu, g, profile, start, &m, err);
    if (rc != GP_OK && gp_gpu_inventory(&n->gpu, &n->inventory, NULL) == GP_OK) {
        for (int i = 0; i < n->inventory.gpus[g].n_mig; i++) { /* made by an earlier agent */
            const gp_mig_instance *have = &n->inventory.gpus[g].mig[i];
            if (have->start == start && strcmp(have->profile, profile) == 0) {
                m = *have;
                rc = GP_OK;
            }
        }
    }
    if (rc == GP_OK)
        snprintf(r->mig_uuid, sizeof r->mig_uuid, "%s", m.uuid);
    return rc;
}

static void gp__join(char *out, size_t cap, const gp_replica *r)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < r->n_gpus && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "," : "", r->gpus[i]);
}

/* The checkpoint folder: 0700 and the job's uid's when the agent is root
 * (its root is 0711: a job reaches its own, lists none).  A `.done` older
 * than this run is an earlier run's (killed before the agent saw it): it
 * must not end this run's first grace. */
static void gp__checkpoint_dir(const gp_node *n, const gp_replica *r, const gp_assignment *a)
{
    gp_state_mkdirs(r->checkpoint_dir, 0700, NULL);
    char done[GP_STATE_PATH_MAX];
    struct stat st;
    snprintf(done, sizeof done, "%s/.done", r->checkpoint_dir);
    if (stat(done, &st) == 0 && st.st_mtime < r->bind_time)
        unlink(done);
    const char *user = gp__job_user(a);
    struct passwd *pw = user && geteuid() == 0 ? getpwnam(user) : NULL;
    uid_t uid = pw ? pw->pw_uid : gp__job_uid(n, a, r->job);
    gid_t gid = pw ? pw->pw_gid : (gid_t)uid;
    int fd = open(r->checkpoint_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    if ((uid > 0 && fchown(fd, uid, gid) != 0) || fchmod(fd, 0700) != 0)
        gp_agent_log(n, "job=%llu replica=%u checkpoint folder %s: %s", (unsigned long long)r->job, r->replica,
                     r->checkpoint_dir, strerror(errno));
    close(fd);
}

/* The loop wakes when the supervisor exits. */
static void gp__watch(gp_node *n, gp_replica *r)
{
    gp_error err;
    r->watch = (gp_http_fd){.fd = r->pidfd, .tag = r};
    if (r->pidfd >= 0 && gp_http_watch(n->http, &r->watch, &err) != GP_OK)
        gp_agent_log(n, "job=%llu replica=%u cannot watch its supervisor: %s", (unsigned long long)r->job,
                     r->replica, err.message);
}

/* Forks `gpupool-supervise DIR` (the small binary: a faster start), else
 * `gpupool-agent supervise DIR`; SIGUSR1 blocked, stdio /dev/null. */
static pid_t gp__spawn_supervisor(const gp_node *n, const gp_replica *r)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; null >= 0 && fd < 3; fd++)
        dup2(null, fd);
    char *small[] = {"gpupool-supervise", (char *)r->dir, NULL};
    char *argv[] = {"gpupool-agent", "supervise", (char *)r->dir, NULL};
    if (n->opt->supervise_exe[0])
        execv(n->opt->supervise_exe, small);
    execv(n->opt->self_exe, argv);
    _exit(127);
}

static gp_err gp__spawn(gp_node *n, gp_replica *r, json_t *launch, gp_error *err)
{
    char path[GP_STATE_PATH_MAX], text[64];
    snprintf(path, sizeof path, "%s/launch.json", r->dir);
    char *dump = json_dumps(launch, JSON_COMPACT);
    gp_err rc = dump ? gp_state_write(path, dump, 0600, err) : gp_error_set(err, GP_ERR_NOMEM, "launch", "no memory");
    free(dump);
    if (rc != GP_OK)
        return rc;
    r->supervisor = gp__spawn_supervisor(n, r);
    if (r->supervisor < 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "launch", "fork: %s", strerror(errno));
    r->pidfd = gp__pidfd_open(r->supervisor);
    gp__watch(n, r);
    snprintf(path, sizeof path, "%s/supervisor", r->dir);
    gp_state_supervisor_format(r->supervisor, gp_state_process_start_time(r->supervisor), text, sizeof text);
    return gp_state_write(path, text, 0600, err);
}

static json_t *gp__report(const char *what, const gp_replica *r)
{
    return json_pack("{s:s, s:I, s:i, s:I}", "what", what, "job", (json_int_t)r->job, "replica", (int)r->replica,
                     "bind_time", (json_int_t)r->bind_time);
}

static gp_err gp__prepare_and_spawn(gp_node *n, gp_replica *r, const gp_assignment *a, gp_error *err)
{
    const gp_assignment_slice *slice = &a->slice;
    bool mig = a->has_slice && strcmp(slice->kind, "mig") == 0;
    if (a->untrusted && !a->image[0] && !n->opt->containers_optional)
        return gp_error_set(err, GP_ERR_CONFLICT, "image",
                            "refused: the tenant is untrusted and this agent runs its replicas only in containers "
                            "(--containers required), but the job names no image");
    gp_err rc = gp_state_mkdirs(r->dir, 0700, err);
    char logs[GP_STATE_PATH_MAX], visible[GP_MAX_GPUS_PER_NODE * GP_UUID_MAX];
    snprintf(logs, sizeof logs, "%s/logs", n->dir);
    if (rc == GP_OK)
        rc = gp_state_mkdirs(logs, 0700, err);
    snprintf(logs, sizeof logs, "%s/scratch", n->dir); /* the private /tmp folders: reached, not listed */
    if (rc == GP_OK)
        rc = gp_state_mkdirs(logs, 0711, err);
    snprintf(logs, sizeof logs, "%s/logs", n->dir);
    if (rc == GP_OK && mig)
        rc = gp__mig_slice(n, r, slice, err);
    if (rc == GP_OK && r->slice == GP_SHARING_MPS && r->n_gpus > 0)
        rc = gp_mps_start(n->opt->mps_control, n->dir, r->gpus[0], err); /* adopts one that answers */
    if (r->mig_uuid[0])
        snprintf(visible, sizeof visible, "%s", r->mig_uuid);
    else
        gp__join(visible, sizeof visible, r);
    json_t *env = NULL;
    if (rc == GP_OK)
        rc = gp__replica_env(r, a, visible, &env, err);
    if (rc != GP_OK) {
        json_decref(env);
        return rc;
    }
    char workdir[GP_STATE_PATH_MAX];
    rc = gp__workdir(n, r, workdir, sizeof workdir, err);
    if (rc != GP_OK) {
        json_decref(env);
        return rc;
    }
    gp__checkpoint_dir(n, r, a);
    json_t *container = NULL;
    rc = gp__launch_container(n, r, a, workdir, visible, &container, err);
    if (rc != GP_OK) {
        json_decref(env);
        return rc;
    }
    json_t *launch = gp__launch_json(n, r, a, env, visible, workdir);
    if (launch && container)
        json_object_set_new(launch, "container", container);
    else
        json_decref(container);
    rc = launch ? gp_node_fence_start(n, r, a, launch, err) /* its network rules load before it runs */
                : gp_error_set(err, GP_ERR_INVALID, "command", "no command");
    if (rc == GP_OK)
        rc = gp__spawn(n, r, launch, err);
    json_decref(launch);
    return rc;
}

/* The backend's telemetry follows what runs: a MIG replica keeps its
 * instance busy (its compute share), any other its GPUs. */
static void gp__set_busy(gp_node *n, const gp_replica *r, bool busy)
{
    if (r->mig_uuid[0]) {
        gp_gpu_set_busy(&n->gpu, r->mig_uuid, r->supervisor, busy, gp_agent_real_ms(), NULL);
        return;
    }
    for (size_t i = 0; i < r->n_gpus; i++)
        gp_gpu_set_busy(&n->gpu, r->gpus[i], r->supervisor, busy, gp_agent_real_ms(), NULL);
}

/* The reason a run never started, in its log as the supervisor writes
 * its own (the job's owner reads it there: gpupool logs). */
static void gp__log_refusal(const gp_replica *r, const char *why)
{
    char logs[GP_STATE_PATH_MAX];
    snprintf(logs, sizeof logs, "%s/logs", r->node->dir);
    gp_state_mkdirs(logs, 0700, NULL);
    int fd = open(r->log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (fd < 0)
        return;
    dprintf(fd, "gpupool: the replica was not started: %s\n", why);
    close(fd);
}

gp_err gp_replica_start(gp_node *n, const gp_assignment *a, gp_replica **out, gp_error *err)
{
    gp_replica *r = gp__replica_new(n, a->job, a->replica, a->bind_time);
    if (!r)
        return gp_error_set(err, GP_ERR_NOMEM, "replica", "out of memory");
    gp__replica_gpus(r, a);
    gp_replica_partition_terms(r, a);
    r->log_sent = 0; /* a new run: gpupoold has none of it */
    r->ordered_ms = gp_agent_real_ms();
    gp_err rc = gp__prepare_and_spawn(n, r, a, err);
    if (rc != GP_OK && r->supervisor <= 0) {
        /* nothing runs: an exit the job's state shows (127, like a shell) */
        gp_node_fence_end(n, r);
        char text[GP_ERROR_MESSAGE_MAX + 8];
        snprintf(text, sizeof text, "%s\n", err->message);
        gp_state_mkdirs(r->dir, 0700, NULL);
        char path[GP_STATE_PATH_MAX];
        snprintf(path, sizeof path, "%s/error", r->dir);
        gp_state_write(path, text, 0600, NULL);
        gp__log_refusal(r, err->message);
        r->ended = true;
        r->exit = (gp_proc_exit){.reason = GP_EXIT_REASON_EXITED, .code = 127, .signal = 0};
        snprintf(path, sizeof path, "%s/exit", r->dir);
        gp_state_exit_format(&r->exit, text, sizeof text);
        gp_state_write(path, text, 0600, NULL);
    } else {
        gp__set_busy(n, r, true); /* `started` goes once it exec'd (gp_replica_check_started) */
    }
    *out = r;
    return rc;
}

/* ---- stopping and ending ---- */

void gp_replica_stop_within(gp_node *n, gp_replica *r, int signal, int64_t grace_ms, gp_stop_cause cause)
{
    char path[GP_STATE_PATH_MAX], text[128];
    gp_stop_order s = {.signal = signal,
                       .deadline_ms = gp_agent_real_ms() + grace_ms,
                       .cause = cause,
                       .mono_deadline_ms = gp_agent_mono_ms() + grace_ms};
    snprintf(path, sizeof path, "%s/stop", r->dir);
    gp_state_stop_format(&s, text, sizeof text);
    gp_error err;
    if (gp_state_write(path, text, 0600, &err) != GP_OK) {
        /* The supervisor cannot be told (a full state folder): the signal
         * goes straight to the replica's session, and the kill comes when
         * gpupoold drops the replica (its grace's end) by this same path. */
        pid_t pid = gp_replica_pid(r);
        gp_agent_log(n, "job=%llu replica=%u cannot write the stop order: %s; signal %d sent to its processes",
                     (unsigned long long)r->job, r->replica, err.message, signal);
        if (pid > 1)
            kill(-pid, signal);
    }
    if (r->pidfd >= 0 && syscall(SYS_pidfd_send_signal, r->pidfd, SIGUSR1, NULL, 0) != 0)
        gp_agent_log(n, "job=%llu replica=%u supervisor gone: %s", (unsigned long long)r->job, r->replica,
                     strerror(errno));
}

pid_t gp_replica_pid(const gp_replica *r)
{
    char path[GP_STATE_PATH_MAX], text[32];
    snprintf(path, sizeof path, "%s/pid", r->dir);
    return gp_state_read(path, text, sizeof text) ? (pid_t)atoi(text) : 0;
}

/* What an ended replica's container leaves: the container itself when its
 * supervisor died (deleted with its runtime), and any image hold under its
 * id in the node's store, which a supervisor killed before its end never
 * released (the store's LRU could never evict that image).  A hold the
 * supervisor did release is simply not found; a replica folder outlives
 * the agent, so a restart that collects the run releases it too. */
static void gp__container_leftovers(gp_node *n, const gp_replica *r, bool supervisor_died)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/launch.json", r->dir);
    json_t *launch = json_load_file(path, 0, NULL);
    json_t *c = json_object_get(launch, "container");
    const char *runtime = json_string_value(json_object_get(c, "runtime")), *id = json_string_value(json_object_get(c, "id"));
    const char *root = json_string_value(json_object_get(json_object_get(c, "image_store"), "root"));
    if (supervisor_died && runtime && id)
        gp_container_delete(runtime, id);
    gp_image_store *store = NULL;
    gp_error err;
    size_t released = 0;
    if (id && root && access(root, F_OK) == 0 && gp_image_store_open(root, 0, &store, &err) == GP_OK &&
        gp_image_store_release_holder(store, id, &released, &err) == GP_OK && released)
        gp_agent_log(n, "job=%llu replica=%u image holds released=%zu (its supervisor left them)",
                     (unsigned long long)r->job, r->replica, released);
    gp_image_store_close(store);
    json_decref(launch);
}

void gp_replica_collect_exit(gp_node *n, gp_replica *r)
{
    char path[GP_STATE_PATH_MAX], text[128];
    bool reported = r->start_reported, supervisor_died = false;
    gp_replica_check_started(n, r); /* a run shorter than the loop's look */
    r->exit_held = r->start_reported && !reported;
    snprintf(path, sizeof path, "%s/exit", r->dir);
    if (!gp_state_read(path, text, sizeof text) || !gp_state_exit_parse(text, &r->exit)) {
        /* its supervisor died (killed, or the host rebooted): what it left is killed too */
        pid_t pid = gp_replica_pid(r);
        if (pid > 1)
            kill(-pid, SIGKILL);
        supervisor_died = true;
        r->exit = (gp_proc_exit){.reason = GP_EXIT_REASON_SIGNALLED, .code = -1, .signal = SIGKILL};
    }
    gp__container_leftovers(n, r, supervisor_died);
    if (r->pidfd >= 0) {
        gp_http_unwatch(n->http, &r->watch);
        close(r->pidfd);
    }
    r->pidfd = -1;
    if (n->ckpt_watch)
        gp_ckpt_watch_remove(n->ckpt_watch, r->checkpoint_wd);
    r->checkpoint_wd = -1;
    r->ended = true;
    gp_node_fence_end(n, r); /* its network rules go with it */
    gp__set_busy(n, r, false);
    if (r->mig_uuid[0])
        gp_gpu_mig_destroy(&n->gpu, r->mig_uuid, NULL);
    char why[GP_ERROR_MESSAGE_MAX + 8] = "";
    snprintf(path, sizeof path, "%s/error", r->dir);
    if (gp_state_read(path, why, sizeof why))
        why[strcspn(why, "\n")] = '\0';
    gp_agent_log(n, "job=%llu replica=%u exited reason=%s code=%d signal=%d%s%s", (unsigned long long)r->job,
                 r->replica, gp_exit_reason_name(r->exit.reason), r->exit.code, r->exit.signal,
                 why[0] ? " error=" : "", why);
}

/* "replica 0 ... started: 3.4 s from bind" in the agent's log, and the
 * report's timing fields: from bind (gpupoold's bind second, so up to 1 s
 * more than it took) and the pull's part. */
static void gp__start_timing(gp_node *n, const gp_replica *r, int64_t exec_ms, int64_t pull_ms, json_t *rep)
{
    int64_t from_bind = exec_ms - r->bind_time * 1000;
    from_bind = from_bind < 0 ? 0 : from_bind;
    pull_ms = pull_ms < 0 ? 0 : pull_ms > from_bind ? from_bind : pull_ms;
    json_object_set_new(rep, "from_bind_ms", json_integer((json_int_t)from_bind));
    if (pull_ms > 0 || (r->image[0] && strncmp(r->image, "dir:", 4) != 0)) {
        json_object_set_new(rep, "pull_ms", json_integer((json_int_t)pull_ms));
        json_object_set_new(rep, "image", json_string(r->image));
    }
    if (r->ordered_ms > 0) /* this agent's part, on its own clock */
        gp_agent_metrics_observe_start(n->metrics, (double)(exec_ms - r->ordered_ms) / 1000.0,
                                       json_object_get(rep, "image") != NULL);
    gp_agent_log(n, "job=%llu replica=%u started from_bind_ms=%lld pull_ms=%lld", (unsigned long long)r->job,
                 r->replica, (long long)from_bind, (long long)pull_ms);
}

void gp_replica_check_started(gp_node *n, gp_replica *r)
{
    char path[GP_STATE_PATH_MAX], text[64];
    long long exec_ms, pull_ms;
    if (r->start_reported || r->ended)
        return;
    snprintf(path, sizeof path, "%s/started", r->dir);
    if (!gp_state_read(path, text, sizeof text) || sscanf(text, "%lld %lld", &exec_ms, &pull_ms) != 2)
        return;
    json_t *rep = gp__report("started", r);
    pid_t pid = gp_replica_pid(r);
    if (pid > 0)
        json_object_set_new(rep, "pid", json_integer(pid));
    gp__start_timing(n, r, exec_ms, pull_ms, rep);
    gp_node_queue_report(n, rep);
    r->start_reported = true;
}

json_t *gp_replica_pull(const gp_replica *r)
{
    char path[GP_STATE_PATH_MAX];
    if (r->start_reported || r->ended)
        return NULL;
    snprintf(path, sizeof path, "%s/pull", r->dir);
    json_t *o = json_load_file(path, 0, NULL);
    const char *image = json_string_value(json_object_get(o, "image"));
    if (!image || strlen(image) > GP_IMAGE_REF_MAX || !json_is_integer(json_object_get(o, "done_bytes")) ||
        !json_is_integer(json_object_get(o, "total_bytes")) || !json_is_integer(json_object_get(o, "started_at"))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

void gp_replica_check_checkpoint(gp_node *n, gp_replica *r)
{
    char path[GP_STATE_PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/.done", r->checkpoint_dir);
    if (stat(path, &st) != 0 || unlink(path) != 0)
        return;
    json_t *rep = gp__report("checkpointed", r);
    json_object_set_new(rep, "time", json_integer((json_int_t)st.st_mtime));
    gp_node_queue_report(n, rep);
    gp_agent_log(n, "job=%llu replica=%u checkpointed", (unsigned long long)r->job, r->replica);
}

void gp_replica_free(gp_replica *r)
{
    if (r && r->pidfd >= 0)
        close(r->pidfd);
    free(r);
}

/* ---- adopting after an agent restart ---- */

/* The replica folder's run: live (its supervisor adopted) or ended. */
static gp_replica *gp__adopt(gp_node *n, const char *name)
{
    uint64_t job;
    unsigned replica;
    int64_t bind;
    if (!gp_state_replica_parse(name, &job, &replica, &bind))
        return NULL;
    gp_replica *r = gp__replica_new(n, job, replica, bind);
    char path[GP_STATE_PATH_MAX], text[256];
    snprintf(path, sizeof path, "%s/log_skipped", r->dir);
    if (gp_state_read(path, text, sizeof text))
        r->log_skipped = atoll(text);
    snprintf(path, sizeof path, "%s/launch.json", r->dir);
    json_t *launch = json_load_file(path, 0, NULL);
    gp_assignment a;
    if (gp_assignment_parse(json_object_get(launch, "assignment"), &a, NULL) == GP_OK) {
        gp__replica_gpus(r, &a);
        gp_replica_partition_terms(r, &a);
        gp_assignment_free(&a);
    }
    const char *visible = json_string_value(json_object_get(launch, "visible"));
    if (visible && strncmp(visible, "MIG-", 4) == 0)
        snprintf(r->mig_uuid, sizeof r->mig_uuid, "%s", visible);
    json_decref(launch);
    snprintf(path, sizeof path, "%s/supervisor", r->dir);
    uint64_t started = 0;
    if (gp_state_read(path, text, sizeof text) && gp_state_supervisor_parse(text, &r->supervisor, &started)) {
        int fd = gp__pidfd_open(r->supervisor);
        if (fd >= 0 && gp_state_process_start_time(r->supervisor) == started)
            r->pidfd = fd;
        else if (fd >= 0)
            close(fd);
    }
    snprintf(path, sizeof path, "%s/exit", r->dir);
    gp__watch(n, r);
    if (r->pidfd < 0 || access(path, F_OK) == 0)
        gp_replica_collect_exit(n, r);
    else
        gp_agent_log(n, "job=%llu replica=%u adopted supervisor=%d", (unsigned long long)job, replica,
                     (int)r->supervisor);
    if (!r->ended)
        gp_node_fence_adopt(n, r); /* loaded by gp_node_fence_sync once every run is adopted */
    return r;
}

void gp_replica_adopt_all(gp_node *n)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/replicas", n->dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        gp_replica *r = e->d_name[0] == 'j' ? gp__adopt(n, e->d_name) : NULL;
        if (!r)
            continue;
        if (!gp_node_add_replica(n, r)) {
            gp_replica_free(r);
            break;
        }
    }
    if (d)
        closedir(d);
}
