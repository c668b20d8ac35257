/* supervise.c - the replica's parent process (supervise.h). */
#define _GNU_SOURCE
#include "agent/image/image_store.h"
#include "agent/supervise/supervise.h"

#include "agent/supervise/agent_clock.h"
#include "agent/supervise/agent_state.h"
#include "agent/launch/cgroup.h"
#include "agent/launch/launch.h"
#include "agent/launch/replica_log.h"
#include "agent/launch/scratch.h"
#include "spec/assignment.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define GP__ARGS_MAX 512
#define GP__PIPE_BYTES (1024 * 1024)
#define GP__PUMP_CHUNK (64 * 1024)
#define GP__PUMP_ROUNDS 16 /* chunks per wake: stop orders are not kept waiting behind a flood */
#define GP__PROGRESS_EVERY_MS 500 /* DIR/pull is rewritten at most this often */

/* What the supervisor holds besides the replica: its output pipe's read
 * end, its log, the folders to remove at its end. */
typedef struct gp__supervisor {
    const char *dir;
    int output;          /* the pipe's read end, -1 once closed */
    gp_replica_log log;
    char workdir[GP_STATE_PATH_MAX], tmp_dir[GP_STATE_PATH_MAX], bundle[GP_STATE_PATH_MAX];
    bool keep_scratch;   /* --keep-scratch-s: the agent removes them later */
    gp_image_store *images; /* a pulled image's store, held for the container's id; NULL none */
    gp_image image;      /* the image it holds */
    char holder[GP_IMAGE_HOLDER_MAX];
    bool pull_failed;    /* the image could not be pulled: the end's reason is image_pull */
    const char *pull_ref;    /* the image being pulled (launch.json's), for DIR/pull */
    int64_t pull_started_ms; /* epoch ms the pull began, 0 none */
    int64_t pull_ms;         /* how long it took, 0 without one */
    int64_t progress_ms;     /* mono ms DIR/pull was last written */
    char node_dir[GP_STATE_PATH_MAX]; /* STATE/NODE: its partition file (agent_state.h) */
    bool fence_spared;       /* the job keeps running when partitioned */
    int fence_signal;        /* its stop signal */
    int64_t job_grace_ms;    /* its checkpoint grace, -1 not said */
    int64_t fence_checked_ms; /* mono ms the partition file was last read */
    bool fenced;
} gp__supervisor;

/* A NULL-terminated view of a JSON array of strings (into its strings). */
typedef struct gp__strings {
    const char *v[GP__ARGS_MAX + 1];
} gp__strings;

static bool gp__strings_of(json_t *array, gp__strings *out)
{
    size_t i, n = json_array_size(array);
    json_t *s;
    if (n > GP__ARGS_MAX)
        return false;
    json_array_foreach(array, i, s) {
        if (!json_is_string(s))
            return false;
        out->v[i] = json_string_value(s);
    }
    out->v[n] = NULL;
    return true;
}

static void gp__write_in(const char *dir, const char *name, const char *text)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gp_state_write(path, text, 0600, NULL);
}

static void gp__write_exit(const char *dir, const gp_proc_exit *e)
{
    char text[96];
    gp_state_exit_format(e, text, sizeof text);
    gp__write_in(dir, "exit", text);
}

/* The same view of the assignment's command (its strings). */
static bool gp__strings_of_list(char *const *v, size_t n, gp__strings *out)
{
    if (n > GP__ARGS_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        out->v[i] = v[i];
    out->v[n] = NULL;
    return true;
}

static unsigned gp__uint(json_t *l, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(l, key));
    return v > 0 && v <= UINT32_MAX ? (unsigned)v : 0;
}

/* The output pipe: the write end for the replica (> 2), the read end kept,
 * non-blocking. */
static gp_err gp__output_pipe(gp__supervisor *s, int *write_end, gp_error *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "log", "pipe: %s", strerror(errno));
    fcntl(fds[0], F_SETPIPE_SZ, GP__PIPE_BYTES); /* a bigger buffer if the host allows */
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    s->output = fds[0];
    *write_end = fds[1];
    return GP_OK;
}

/* launch.json's "container" (agent_replica.c) and the assignment's
 * container fields into c; false when there is none.  The binds point
 * into l (and a's mounts are already among them). */
static bool gp__container_from(json_t *l, const gp_assignment *a, gp__supervisor *s, gp_container_spec *c)
{
    static gp_container_bind binds[GP__ARGS_MAX];
    static gp__strings gpus;
    json_t *o = json_object_get(l, "container"), *b;
    size_t i;
    if (!json_is_object(o))
        return false;
    *c = (gp_container_spec){
        .runtime = json_string_value(json_object_get(o, "runtime")),
        .id = json_string_value(json_object_get(o, "id")),
        .bundle = json_string_value(json_object_get(o, "bundle")),
        .rootfs = json_string_value(json_object_get(o, "rootfs")),
        .seccomp_profile = json_string_value(json_object_get(o, "seccomp_profile")),
        .read_only_root = a->read_only_root,
        .private_network = a->private_network,
        .allow_userns = a->allow_userns,
        .binds = binds,
    };
    json_array_foreach(json_object_get(o, "binds"), i, b) {
        if (c->n_binds < GP__ARGS_MAX)
            binds[c->n_binds++] = (gp_container_bind){json_string_value(json_object_get(b, "source")),
                                                      json_string_value(json_object_get(b, "target")),
                                                      json_is_true(json_object_get(b, "read_only"))};
    }
    if (gp__strings_of(json_object_get(o, "gpus"), &gpus))
        c->gpu_uuids = gpus.v;
    snprintf(s->bundle, sizeof s->bundle, "%s", c->bundle ? c->bundle : "");
    return true;
}

/* The fields a container needs, present. */
static bool gp__container_complete(const gp_container_spec *c)
{
    for (size_t i = 0; i < c->n_binds; i++)
        if (!c->binds[i].source || !c->binds[i].target)
            return false;
    return c->runtime && c->id && c->bundle && c->rootfs;
}

static void gp__remove_in(const char *dir, const char *name)
{
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

/* DIR/pull (agent_state.h): the image, its bytes so far and in all (0:
 * not known yet), since when (epoch s); the agent reads it while the
 * replica has not started. */
static void gp__write_pull(gp__supervisor *s, int64_t done, int64_t total)
{
    json_t *o = json_pack("{s:s, s:I, s:I, s:I}", "image", s->pull_ref, "done_bytes", (json_int_t)done,
                          "total_bytes", (json_int_t)total, "started_at", (json_int_t)(s->pull_started_ms / 1000));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text)
        gp__write_in(s->dir, "pull", text);
    free(text);
    json_decref(o);
    s->progress_ms = gp_agent_mono_ms();
}

/* The store's progress callback: DIR/pull at most every
 * GP__PROGRESS_EVERY_MS (the store calls every 200 ms of the copy). */
static void gp__pull_progress(void *ctx, int64_t done, int64_t total)
{
    gp__supervisor *s = ctx;
    if (gp_agent_mono_ms() - s->progress_ms >= GP__PROGRESS_EVERY_MS)
        gp__write_pull(s, done, total);
}

/* A docker:// or oci: image pulled into the node's store (launch.json's
 * "image_store", agent_replica.c) and held for the container's id until
 * the replica ends (gp__release_image); c->rootfs is then the store's
 * unpacked root.  The pull runs here, in the replica's own supervisor, so
 * the agent's loop never waits on a registry; it is bounded by the store's
 * timeout.  A failed pull is the replica's failed start (reason image_pull,
 * exit code 127): its log says "image pull failed (not_found): ...".
 * While it runs, DIR/pull says how far it is (gp__write_pull); it is
 * removed when the pull ends, and DIR/started then says how long it took. */
static gp_err gp__pull_image(json_t *container, gp__supervisor *s, gp_container_spec *c, gp_error *err)
{
    const char *ref = json_string_value(json_object_get(container, "image"));
    json_t *store = json_object_get(container, "image_store"), *auth = json_object_get(container, "image_auth");
    const char *root = json_string_value(json_object_get(store, "root"));
    if (!ref || !root || !c->id)
        return gp_error_set(err, GP_ERR_INVALID, "launch", "launch.json: the container has no rootfs nor image store");
    gp_image_pull_options o = {
        .username = json_string_value(json_object_get(auth, "username")),
        .password = json_string_value(json_object_get(auth, "password")),
        .timeout_s = (int)json_integer_value(json_object_get(store, "timeout_s")),
        .holder = c->id,
    };
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(store, "insecure"), i, h) {
        if (o.n_insecure < GP_IMAGE_INSECURE_MAX && json_is_string(h))
            o.insecure[o.n_insecure++] = json_string_value(h);
    }
    gp_err rc = gp_image_store_open(root, json_integer_value(json_object_get(store, "max_bytes")), &s->images, err);
    if (rc != GP_OK)
        return rc;
    char message[GP_ERROR_MESSAGE_MAX - 64];
    s->pull_ref = ref;
    s->pull_started_ms = gp_agent_real_ms();
    o.progress = gp__pull_progress;
    o.progress_ctx = s;
    gp__write_pull(s, 0, 0);
    gp_image_failure f = gp_image_store_pull(s->images, ref, &o, &s->image, message, sizeof message);
    s->pull_ms = gp_agent_real_ms() - s->pull_started_ms;
    gp__remove_in(s->dir, "pull");
    if (f != GP_IMAGE_READY) {
        gp_image_store_close(s->images);
        s->images = NULL;
        s->pull_failed = true;
        return gp_error_set(err, GP_ERR_CONFLICT, "image", "image pull failed (%s): %s", gp_image_failure_name(f),
                            message);
    }
    snprintf(s->holder, sizeof s->holder, "%s", c->id);
    c->rootfs = s->image.rootfs;
    return GP_OK;
}

/* The image's own environment (its config's Env: PATH, CUDA_HOME, ...)
 * under the job's: each NAME=value the job's env does not set is added to
 * env (launch.json's list, which the launch reads next). */
static void gp__image_env(const char *config_path, json_t *env)
{
    json_t *image = json_load_file(config_path, 0, NULL), *v;
    size_t i, j;
    json_array_foreach(json_object_get(json_object_get(image, "config"), "Env"), i, v) {
        const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
        bool set = !eq;
        json_t *mine;
        json_array_foreach(env, j, mine) {
            const char *m = json_string_value(mine);
            set = set || (m && strncmp(m, kv, (size_t)(eq - kv) + 1) == 0);
        }
        if (!set)
            json_array_append(env, v);
    }
    json_decref(image);
}

/* The pulled image's hold goes with the replica. */
static void gp__release_image(gp__supervisor *s)
{
    gp_error err;
    if (!s->images)
        return;
    gp_image_store_release(s->images, s->image.digest, s->holder, &err);
    gp_image_store_close(s->images);
    s->images = NULL;
}

/* Starts the replica that launch.json describes: a, its assignment
 * (the command, the tenant's trust), l, the launch fields. */
static gp_err gp__launch_from(json_t *l, const gp_assignment *a, gp__supervisor *s, gp_cgroup_host *host,
                              gp_proc **out, gp_error *err)
{
    static gp__strings argv, env, devices;
    static gp_container_spec container;
    bool contained = gp__container_from(l, a, s, &container);
    if (contained && !container.rootfs) {
        gp_err pulled = gp__pull_image(json_object_get(l, "container"), s, &container, err);
        if (pulled != GP_OK)
            return pulled;
        gp__image_env(s->image.config_path, json_object_get(l, "env"));
    }
    if (contained && !gp__container_complete(&container))
        return gp_error_set(err, GP_ERR_INVALID, "launch", "launch.json: the container lacks a field");
    if (!a->has_command || !gp__strings_of_list(a->command, a->n_command, &argv))
        return gp_error_set(err, GP_ERR_INVALID, "launch", "launch.json: the assignment has no command");
    if (!gp__strings_of(json_object_get(l, "env"), &env) || !gp__strings_of(json_object_get(l, "devices"), &devices))
        return gp_error_set(err, GP_ERR_INVALID, "launch", "launch.json: env and devices must be strings");
    const char *parent = json_string_value(json_object_get(l, "cgroup_parent"));
    host->layout = GP_CGROUP_NONE;
    if (parent && gp_cgroup_host_detect(host, parent, err) != GP_OK)
        return err->code;
    const char *workdir = json_string_value(json_object_get(l, "workdir"));
    const char *tmp_dir = json_string_value(json_object_get(l, "tmp_dir"));
    snprintf(s->workdir, sizeof s->workdir, "%s", workdir ? workdir : "");
    snprintf(s->tmp_dir, sizeof s->tmp_dir, "%s", tmp_dir ? tmp_dir : "");
    s->keep_scratch = json_is_true(json_object_get(l, "keep_scratch"));
    int output = -1;
    gp_err rc = gp__output_pipe(s, &output, err);
    if (rc != GP_OK)
        return rc;
    gp_launch_spec spec = {
        .argv = (char *const *)argv.v,
        .envp = (char *const *)env.v,
        .user = json_string_value(json_object_get(l, "user")),
        .job_uid = (uid_t)gp__uint(l, "job_uid"),
        .job_name = json_string_value(json_object_get(l, "job_name")),
        .uid_min = (uid_t)gp__uint(l, "uid_min"),
        .workdir = workdir,
        .output_fd = output,
        .private_tmp = json_is_true(json_object_get(l, "private_tmp")),
        .tmp_dir = tmp_dir,
        .shm_mib = gp__uint(l, "shm_mib"),
        .cgroups = host,
        .cgroup_name = json_string_value(json_object_get(l, "cgroup_name")),
        .limits = {.cpu_millis = gp__uint(l, "cpu_millis"), .mem_mib = gp__uint(l, "mem_mib"),
                   .pids_max = gp__uint(l, "pids_max")},
        .isolate_devices = json_is_true(json_object_get(l, "isolate_devices")),
        .untrusted = a->untrusted,
        .device_paths = devices.v,
        .container = contained ? &container : NULL,
    };
    rc = gp_launch(&spec, out, err);
    close(output);
    return rc;
}

/* Copies what the replica wrote into its log: until the pipe is empty, at
 * most GP__PUMP_ROUNDS chunks (all with drain); closes it at its end. */
static void gp__pump(gp__supervisor *s, bool drain)
{
    static char buf[GP__PUMP_CHUNK];
    for (int round = 0; s->output >= 0 && (drain || round < GP__PUMP_ROUNDS); round++) {
        ssize_t n = read(s->output, buf, sizeof buf);
        if (n > 0) {
            gp_replica_log_append(&s->log, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || errno != EAGAIN) {
            close(s->output);
            s->output = -1;
        }
        return;
    }
}

/* The working folder and private /tmp go with the replica, unless the
 * agent keeps them a while (then their time stamp says when it ended);
 * a container's bundle (its writable layer) always goes. */
static void gp__remove_scratch(gp__supervisor *s)
{
    gp__release_image(s);
    const char *dirs[] = {s->workdir, s->tmp_dir, s->bundle};
    for (size_t i = 0; i < 3; i++) {
        if (!dirs[i][0])
            continue;
        if (s->keep_scratch && dirs[i] != s->bundle) /* a container's writable layer never outlives it */
            utimensat(AT_FDCWD, dirs[i], NULL, AT_SYMLINK_NOFOLLOW);
        else
            gp_scratch_remove(dirs[i]);
    }
}

/* Reads DIR/stop and applies it. */
static void gp__apply_stop(const char *dir, gp_proc *p)
{
    char path[GP_STATE_PATH_MAX], text[128];
    gp_stop_order s;
    snprintf(path, sizeof path, "%s/stop", dir);
    if (!gp_state_read(path, text, sizeof text) || !gp_state_stop_parse(text, &s))
        return;
    int64_t grace = s.mono_deadline_ms > 0 ? s.mono_deadline_ms - gp_agent_mono_ms() : s.deadline_ms - gp_agent_real_ms();
    gp_proc_stop(p, s.signal, gp_agent_mono_ms(), grace > 0 ? grace : 0, s.cause);
}

static void gp__drain_signals(int sfd, const char *dir, gp_proc *p)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo == SIGUSR1)
            gp__apply_stop(dir, p);
}

/* The partition fence when no agent applies it (killed, not restarted):
 * once a second the node's partition file; past its fence interval the
 * replica gets its stop signal and the shorter of its grace and the
 * fence's, as the agent would give it (agent_partition.c).  The file's
 * time never runs ahead of the agent's own, so this never fences later
 * than the agent; with the agent alive both stop it, the earlier
 * deadline holds. */
static void gp__partition_check(gp__supervisor *s, gp_proc *p)
{
    int64_t now = gp_agent_mono_ms();
    if (s->fenced || s->fence_spared || now - s->fence_checked_ms < 1000)
        return;
    s->fence_checked_ms = now;
    gp_partition_clock c;
    if (!gp_state_partition_load(s->node_dir, &c) || gp_agent_boot_ms() - c.heard_boot_ms <= c.after_ms)
        return;
    int64_t grace = s->job_grace_ms >= 0 && s->job_grace_ms < c.grace_ms ? s->job_grace_ms : c.grace_ms;
    gp_proc_stop(p, grace > 0 ? s->fence_signal : SIGKILL, now, grace, GP_STOP_REQUESTED);
    gp__write_in(s->dir, "fenced", "\n"); /* the agent keeps its node silent for it (agent_partition.c) */
    s->fenced = true;
}

/* What the fence needs of the assignment, and where the node's folder is
 * (DIR is STATE/NODE/replicas/NAME). */
static void gp__partition_terms(gp__supervisor *s, const gp_assignment *a)
{
    s->fence_spared = a->keep_running_when_partitioned;
    s->fence_signal = gp_stop_signal_number(a->stop_signal);
    s->job_grace_ms = a->has_checkpoint_grace ? a->checkpoint_grace_s * 1000 : -1;
    snprintf(s->node_dir, sizeof s->node_dir, "%s/../..", s->dir);
}

/* Waits for the replica's end, copying its output and applying stop
 * orders; writes DIR/exit, removes its folders. */
static int gp__wait(gp__supervisor *s, gp_proc *p, int sfd)
{
    gp_proc_exit end;
    gp__apply_stop(s->dir, p); /* a stop written before we listened */
    while (!gp_proc_poll(p, gp_agent_mono_ms(), &end)) {
        struct pollfd fds[3] = {{.fd = sfd, .events = POLLIN}, {.fd = s->output, .events = POLLIN},
                                {.fd = gp_proc_fd(p), .events = POLLIN}};
        int64_t deadline = gp_proc_deadline(p);
        int timeout = 1000;
        if (deadline >= 0) {
            int64_t left = deadline - gp_agent_mono_ms();
            timeout = left < 0 ? 0 : left < 1000 ? (int)left : 1000;
        }
        gp__partition_check(s, p);
        if (poll(fds, fds[2].fd >= 0 ? 3 : 2, timeout) <= 0)
            continue;
        if (fds[0].revents & POLLIN)
            gp__drain_signals(sfd, s->dir, p);
        if (fds[1].revents)
            gp__pump(s, false);
    }
    gp__pump(s, true);
    gp_replica_log_close(&s->log);
    gp__write_exit(s->dir, &end);
    gp_proc_free(p);
    gp__remove_scratch(s);
    return 0;
}

/* A launch that failed: the reason in DIR/error and in the log (the job's
 * owner reads it there), exit 127. */
static int gp__failed(gp__supervisor *s, gp_proc *p, const char *why)
{
    char text[GP_ERROR_MESSAGE_MAX + 64];
    snprintf(text, sizeof text, "%s\n", why);
    gp__write_in(s->dir, "error", text);
    snprintf(text, sizeof text, "gpupool: the replica was not started: %s\n", why);
    if (s->log.fd >= 0)
        gp_replica_log_append(&s->log, text, strlen(text));
    gp_replica_log_close(&s->log);
    gp_proc_free(p);
    gp_exit_reason reason = s->pull_failed ? GP_EXIT_REASON_IMAGE_PULL : GP_EXIT_REASON_EXITED;
    gp__write_exit(s->dir, &(gp_proc_exit){.reason = reason, .code = 127, .signal = 0});
    gp__remove_scratch(s);
    return 1;
}

int gp_supervise_main(const char *dir)
{
    close_range(3, ~0u, 0); /* nothing of the agent's (its sockets) lives on in us */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    setsid(); /* no terminal's signals: the agent's Ctrl-C is not the replica's */
    static gp__supervisor s;
    s = (gp__supervisor){.dir = dir, .output = -1, .log = {.fd = -1}};
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/launch.json", dir);
    json_error_t jerr;
    json_t *l = json_load_file(path, 0, &jerr);
    gp_error err;
    gp_error_clear(&err);
    gp_proc *p = NULL;
    static gp_cgroup_host host;
    const char *log = json_string_value(json_object_get(l, "log"));
    gp_err rc = !l    ? gp_error_set(&err, GP_ERR_INVALID, "launch", "%s: %s", path, jerr.text)
                : !log ? gp_error_set(&err, GP_ERR_INVALID, "log", "launch.json names no log")
                       : gp_replica_log_open(&s.log, log, json_integer_value(json_object_get(l, "log_max_bytes")), &err);
    gp_assignment a = {0};
    if (rc == GP_OK)
        rc = gp_assignment_parse(json_object_get(l, "assignment"), &a, &err);
    if (rc == GP_OK)
        rc = gp__launch_from(l, &a, &s, &host, &p, &err);
    gp__partition_terms(&s, &a);
    gp_assignment_free(&a);
    json_decref(l);
    if (rc != GP_OK || sfd < 0)
        return gp__failed(&s, p, sfd < 0 ? strerror(errno) : err.message);
    char text[64];
    snprintf(text, sizeof text, "%lld %lld\n", (long long)gp_agent_real_ms(), (long long)s.pull_ms);
    gp__write_in(dir, "started", text); /* before pid: a reader that sees pid sees this */
    snprintf(text, sizeof text, "%d\n", (int)gp_proc_pid(p));
    gp__write_in(dir, "pid", text);
    if (gp_proc_note(p)[0]) {
        snprintf(path, sizeof path, "%s", gp_proc_note(p));
        gp__write_in(dir, "note", path);
    }
    return gp__wait(&s, p, sfd);
}
