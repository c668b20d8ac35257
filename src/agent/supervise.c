/* supervise.c - the replica's parent process (supervise.h). */
#define _GNU_SOURCE
#include "agent/supervise.h"

#include "agent/agent_clock.h"
#include "agent/agent_state.h"
#include "agent/cgroup.h"
#include "agent/launch.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define GP__ARGS_MAX 512

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

/* Starts the replica that launch.json describes. */
static gp_err gp__launch_from(json_t *l, gp_cgroup_host *host, gp_proc **out, gp_error *err)
{
    static gp__strings argv, env, devices;
    if (!gp__strings_of(json_object_get(l, "argv"), &argv) || !gp__strings_of(json_object_get(l, "env"), &env) ||
        !gp__strings_of(json_object_get(l, "devices"), &devices))
        return gp_error_set(err, GP_ERR_INVALID, "launch", "launch.json: argv, env and devices must be strings");
    const char *parent = json_string_value(json_object_get(l, "cgroup_parent"));
    host->layout = GP_CGROUP_NONE;
    if (parent && gp_cgroup_host_detect(host, parent, err) != GP_OK)
        return err->code;
    const char *log = json_string_value(json_object_get(l, "log"));
    gp_launch_spec spec = {
        .argv = (char *const *)argv.v,
        .envp = (char *const *)env.v,
        .user = json_string_value(json_object_get(l, "user")),
        .workdir = json_string_value(json_object_get(l, "workdir")),
        .stdout_path = log,
        .stderr_path = log,
        .cgroups = host,
        .cgroup_name = json_string_value(json_object_get(l, "cgroup_name")),
        .limits = {.cpu_millis = (unsigned)json_integer_value(json_object_get(l, "cpu_millis")),
                   .mem_mib = (unsigned)json_integer_value(json_object_get(l, "mem_mib"))},
        .isolate_devices = json_is_true(json_object_get(l, "isolate_devices")),
        .device_paths = devices.v,
    };
    return gp_launch(&spec, out, err);
}

/* Reads DIR/stop and applies it. */
static void gp__apply_stop(const char *dir, gp_proc *p)
{
    char path[GP_STATE_PATH_MAX], text[128];
    gp_stop_order s;
    snprintf(path, sizeof path, "%s/stop", dir);
    if (!gp_state_read(path, text, sizeof text) || !gp_state_stop_parse(text, &s))
        return;
    int64_t grace = s.deadline_ms - gp_agent_real_ms();
    gp_proc_stop(p, s.signal, gp_agent_mono_ms(), grace > 0 ? grace : 0, s.cause);
}

static void gp__drain_signals(int sfd, const char *dir, gp_proc *p)
{
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo == SIGUSR1)
            gp__apply_stop(dir, p);
}

/* Waits for the replica's end, applying stop orders; writes DIR/exit. */
static int gp__wait(const char *dir, gp_proc *p, int sfd)
{
    gp_proc_exit end;
    gp__apply_stop(dir, p); /* a stop written before we listened */
    while (!gp_proc_poll(p, gp_agent_mono_ms(), &end)) {
        struct pollfd fds[2] = {{.fd = sfd, .events = POLLIN}, {.fd = gp_proc_fd(p), .events = POLLIN}};
        int64_t deadline = gp_proc_deadline(p);
        int timeout = 1000;
        if (deadline >= 0) {
            int64_t left = deadline - gp_agent_mono_ms();
            timeout = left < 0 ? 0 : left < 1000 ? (int)left : 1000;
        }
        if (poll(fds, fds[1].fd >= 0 ? 2 : 1, timeout) > 0 && (fds[0].revents & POLLIN))
            gp__drain_signals(sfd, dir, p);
    }
    gp__write_exit(dir, &end);
    gp_proc_free(p);
    return 0;
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
    char path[GP_STATE_PATH_MAX];
    snprintf(path, sizeof path, "%s/launch.json", dir);
    json_error_t jerr;
    json_t *l = json_load_file(path, 0, &jerr);
    gp_error err;
    gp_error_clear(&err);
    gp_proc *p = NULL;
    static gp_cgroup_host host;
    gp_err rc = l ? gp__launch_from(l, &host, &p, &err)
                  : gp_error_set(&err, GP_ERR_INVALID, "launch", "%s: %s", path, jerr.text);
    json_decref(l);
    if (rc != GP_OK || sfd < 0) {
        char text[GP_ERROR_MESSAGE_MAX + 8];
        snprintf(text, sizeof text, "%s\n", sfd < 0 ? strerror(errno) : err.message);
        gp__write_in(dir, "error", text);
        gp_proc_free(p);
        gp__write_exit(dir, &(gp_proc_exit){.reason = GP_EXIT_EXITED, .code = 127, .signal = 0});
        return 1;
    }
    char text[64];
    snprintf(text, sizeof text, "%d\n", (int)gp_proc_pid(p));
    gp__write_in(dir, "pid", text);
    if (gp_proc_note(p)[0]) {
        snprintf(path, sizeof path, "%s", gp_proc_note(p));
        gp__write_in(dir, "note", path);
    }
    return gp__wait(dir, p, sfd);
}
