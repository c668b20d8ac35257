/* agent_mps.c - the MPS control daemons and their clients' environment
 * (agent_mps.h). */
#define _GNU_SOURCE
#include "agent/agent_mps.h"

#include "agent/agent_share.h"
#include "agent/supervise/agent_state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GP__CONTROL_WAIT_MS 10000

void gp_mps_dirs(const char *node_dir, const char *uuid, char *pipe, char *log, size_t cap)
{
    const char *dash = strrchr(uuid, '-');
    const char *key = dash ? dash + 1 : uuid;
    snprintf(pipe, cap, "%s/mps/%.12s/pipe", node_dir, key);
    snprintf(log, cap, "%s/mps/%.12s/log", node_dir, key);
}

/* MPS's sockets in pipe_dir fit a socket path (see GP_MPS_PIPE_MAX). */
static gp_err gp__pipe_fits(const char *pipe_dir, gp_error *err)
{
    size_t len = strlen(pipe_dir);
    if (len <= GP_MPS_PIPE_MAX)
        return GP_OK;
    return gp_error_set(err, GP_ERR_CONFLICT, "mps_control",
                        "the MPS pipe folder %s is %zu bytes; the sockets MPS makes in it allow at most %d: "
                        "use a shorter --state-dir",
                        pipe_dir, len, GP_MPS_PIPE_MAX);
}

/* Connects a socket of `type` to addr: 0, or the errno. */
static int gp__connect(const struct sockaddr_un *addr, int type)
{
    int fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int rc = connect(fd, (const struct sockaddr *)addr, sizeof *addr) == 0 ? 0 : errno;
    close(fd);
    return rc;
}

bool gp_mps_answers(const char *pipe_dir)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path, sizeof addr.sun_path, "%s/control", pipe_dir);
    if (n < 0 || (size_t)n >= sizeof addr.sun_path)
        return false;
    /* The daemon's socket is a SOCK_SEQPACKET one (driver 580 on the H100,
     * /proc/net/unix); a stream socket is tried when that type is refused
     * (EPROTOTYPE), in case another driver differs.  A listener whose
     * backlog is full (EAGAIN) is there; a socket file left by a daemon
     * that died refuses (ECONNREFUSED). */
    static const int types[] = {SOCK_SEQPACKET, SOCK_STREAM};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int rc = gp__connect(&addr, types[i]);
        if (rc != EPROTOTYPE)
            return rc == 0 || rc == EAGAIN;
    }
    return false;
}

/* `-d` may return before the daemon listens (the real one listened 0.1 ms
 * later on the H100): wait until it answers, up to the limit. */
static gp_err gp__wait_answer(const char *pipe_dir, gp_error *err)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0; !gp_mps_answers(pipe_dir); waited += 10) {
        if (waited >= GP__CONTROL_WAIT_MS)
            return gp_error_set(err, GP_ERR_CONFLICT, "mps_control",
                                "the daemon started but %s/control did not answer within %d s", pipe_dir,
                                GP__CONTROL_WAIT_MS / 1000);
        nanosleep(&tick, NULL);
    }
    return GP_OK;
}

/* In the child: the daemon's environment, stdin from `in`, output to the log folder. */
static void gp__child(const char *uuid, const char *pipe, const char *log, int in)
{
    char out[GP_STATE_PATH_MAX];
    snprintf(out, sizeof out, "%s/agent-control.log", log);
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0640);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    dup2(in, 0);
    close_range(3, ~0u, 0); /* none of the agent's sockets lives on in a daemon */
    setenv("CUDA_VISIBLE_DEVICES", uuid, 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", log, 1);
}

/* Waits for CMD, killing it after GP__CONTROL_WAIT_MS. */
static gp_err gp__wait(pid_t pid, const char *what, gp_error *err)
{
    int status = 0;
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited += 10) {
        if (waited >= GP__CONTROL_WAIT_MS) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return gp_error_set(err, GP_ERR_CONFLICT, "mps_control", "%s: still running after %d s: killed", what,
                                GP__CONTROL_WAIT_MS / 1000);
        }
        nanosleep(&tick, NULL);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return GP_OK;
    return gp_error_set(err, GP_ERR_CONFLICT, "mps_control", "%s: exit status %d", what,
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* Runs `control [arg]` for GPU uuid with `input` on its stdin. */
static gp_err gp__run(const char *control, const char *node_dir, const char *uuid, const char *arg,
                      const char *input, gp_error *err)
{
    char pipe_dir[GP_STATE_PATH_MAX], log_dir[GP_STATE_PATH_MAX], what[GP_STATE_PATH_MAX + 16];
    gp_mps_dirs(node_dir, uuid, pipe_dir, log_dir, sizeof pipe_dir);
    snprintf(what, sizeof what, "%s%s%s", control, arg ? " " : "", arg ? arg : "");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "mps_control", "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        gp__child(uuid, pipe_dir, log_dir, fds[0]);
        char *argv[] = {(char *)control, (char *)arg, NULL};
        execvp(control, argv);
        _exit(127);
    }
    close(fds[0]);
    if (pid > 0 && input && write(fds[1], input, strlen(input)) < 0)
        input = NULL; /* CMD closed its stdin: its exit status tells */
    close(fds[1]);
    if (pid < 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "mps_control", "fork: %s", strerror(errno));
    return gp__wait(pid, what, err);
}

gp_err gp_mps_start(const char *control, const char *node_dir, const char *uuid, gp_error *err)
{
    char pipe_dir[GP_STATE_PATH_MAX], log_dir[GP_STATE_PATH_MAX];
    gp_mps_dirs(node_dir, uuid, pipe_dir, log_dir, sizeof pipe_dir);
    gp_err rc = gp__pipe_fits(pipe_dir, err);
    if (rc == GP_OK)
        rc = gp_state_mkdirs(pipe_dir, 0755, err); /* the job's user reaches the pipe */
    if (rc == GP_OK)
        rc = gp_state_mkdirs(log_dir, 0755, err);
    if (rc != GP_OK || gp_mps_answers(pipe_dir))
        return rc;
    rc = gp__run(control ? control : GP_MPS_CONTROL_DEFAULT, node_dir, uuid, "-d", NULL, err);
    return rc == GP_OK ? gp__wait_answer(pipe_dir, err) : rc;
}

gp_err gp_mps_quit(const char *control, const char *node_dir, const char *uuid, gp_error *err)
{
    char pipe_dir[GP_STATE_PATH_MAX], log_dir[GP_STATE_PATH_MAX];
    gp_mps_dirs(node_dir, uuid, pipe_dir, log_dir, sizeof pipe_dir);
    if (!gp_mps_answers(pipe_dir))
        return GP_OK;
    return gp__run(control ? control : GP_MPS_CONTROL_DEFAULT, node_dir, uuid, NULL, "quit\n", err);
}

int gp_mps_thread_percentage(int milli_gpus)
{
    int pct = (milli_gpus + 9) / 10;
    return pct < 1 ? 1 : pct > 100 ? 100 : pct;
}

gp_err gp_mps_client_env(gp_env *env, const char *node_dir, const char *uuid, int milli_gpus, int64_t share_mib,
                         gp_error *err)
{
    char pipe_dir[GP_STATE_PATH_MAX], log_dir[GP_STATE_PATH_MAX], pct[16], limit[40];
    gp_mps_dirs(node_dir, uuid, pipe_dir, log_dir, sizeof pipe_dir);
    snprintf(pct, sizeof pct, "%d", gp_mps_thread_percentage(milli_gpus));
    snprintf(limit, sizeof limit, "0=%lldM", (long long)share_mib);
    gp_err rc = gp__pipe_fits(pipe_dir, err); /* a client finding no daemon runs without MPS, unlimited */
    if (rc == GP_OK)
        rc = gp_env_set(env, "CUDA_MPS_PIPE_DIRECTORY", pipe_dir, err);
    if (rc == GP_OK)
        rc = gp_env_set(env, "CUDA_MPS_LOG_DIRECTORY", log_dir, err);
    if (rc == GP_OK)
        rc = gp_env_set(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct, err);
    if (rc == GP_OK)
        rc = gp_env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", limit, err);
    return rc;
}
