/* image_run.c - skopeo and umoci as children that never hang a pull: their
 * output captured, a tick to watch progress, and a deadline after which
 * their process group is killed (image_internal.h). */
#define _GNU_SOURCE
#include "agent/image/image_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t gp__image_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child: its own process group, stdin /dev/null, the pipes, exec. */
static _Noreturn void gp__run_child(char *const argv[], char *const envp[], int out_fd, int err_fd)
{
    setpgid(0, 0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0)
        dup2(null, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (envp)
        execvpe(argv[0], argv, envp);
    else
        execvp(argv[0], argv);
    _exit(127);
}

/* Appends what fd has to buf (len bytes used, cap); false at its end. */
static bool gp__drain(int fd, char *buf, size_t cap, size_t *len)
{
    char scratch[4096];
    ssize_t n = read(fd, scratch, sizeof scratch);
    if (n <= 0)
        return n < 0 && errno == EINTR;
    size_t room = buf && cap > *len + 1 ? cap - *len - 1 : 0;
    size_t take = (size_t)n < room ? (size_t)n : room;
    if (take) {
        memcpy(buf + *len, scratch, take);
        *len += take;
        buf[*len] = '\0';
    }
    return true;
}

static int gp__reap(pid_t pid, int killed)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (killed)
        return killed;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int gp__image_run(char *const argv[], char *const envp[], char *out, size_t out_cap, char *errbuf, size_t err_cap, int64_t deadline_ms,
                  bool (*tick)(void *ctx), void *ctx)
{
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0)
        gp__run_child(argv, envp, po[1], pe[1]);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return -1;
    }
    size_t out_len = 0, err_len = 0;
    if (out && out_cap)
        out[0] = '\0';
    if (errbuf && err_cap)
        errbuf[0] = '\0';
    struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
    int open_fds = 2, killed = 0;
    while (open_fds > 0) {
        if (deadline_ms && gp__image_now_ms() >= deadline_ms)
            killed = -2;
        else if (tick && !tick(ctx))
            killed = -3;
        if (killed) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, 200) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                !gp__drain(fds[i].fd, i ? errbuf : out, i ? err_cap : out_cap, i ? &err_len : &out_len)) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    return gp__reap(pid, killed);
}
