/* agent_state.c - the agent's files on disk (agent_state.h). */
#define _GNU_SOURCE
#include "agent/supervise/agent_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gp_err gp__io_error(gp_error *err, const char *what, const char *path)
{
    return gp_error_set(err, GP_ERR_CONFLICT, "state_dir", "%s %s: %s", what, path, strerror(errno));
}

static void gp__fsync_dir_of(const char *path)
{
    char dir[GP_STATE_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        *slash = '\0';
    int fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

gp_err gp_state_write(const char *path, const char *text, unsigned mode, gp_error *err)
{
    char tmp[GP_STATE_PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return gp_error_set(err, GP_ERR_INVALID, "state_dir", "path too long: %s", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return gp__io_error(err, "cannot create", tmp);
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            close(fd);
            unlink(tmp);
            return gp__io_error(err, "cannot write", tmp);
        }
        done += (size_t)w;
    }
    fchmod(fd, mode);
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return gp__io_error(err, "cannot store", path);
    }
    gp__fsync_dir_of(path);
    return GP_OK;
}

bool gp_state_read(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return false;
    buf[n] = '\0';
    return true;
}

gp_err gp_state_mkdirs(const char *path, unsigned mode, gp_error *err)
{
    char buf[GP_STATE_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return gp_error_set(err, GP_ERR_INVALID, "state_dir", "path too long: %s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return gp__io_error(err, "cannot make", buf);
        *p = c;
        if (!c)
            return GP_OK;
    }
}

void gp_state_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[GP_STATE_PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

int64_t gp_state_epoch_load(const char *node_dir)
{
    char path[GP_STATE_PATH_MAX], text[64];
    snprintf(path, sizeof path, "%s/epoch", node_dir);
    long long v = 0;
    if (gp_state_read(path, text, sizeof text) && sscanf(text, "%lld", &v) == 1 && v > 0)
        return v;
    return 0;
}

gp_err gp_state_epoch_store(const char *node_dir, int64_t epoch, gp_error *err)
{
    char path[GP_STATE_PATH_MAX], text[64];
    snprintf(path, sizeof path, "%s/epoch", node_dir);
    snprintf(text, sizeof text, "%" PRId64 "\n", epoch);
    return gp_state_write(path, text, 0600, err);
}

bool gp_state_partition_load(const char *node_dir, gp_partition_clock *out)
{
    char path[GP_STATE_PATH_MAX], text[96];
    long long after = 0, grace = 0, heard = 0;
    *out = (gp_partition_clock){0};
    snprintf(path, sizeof path, "%s/partition", node_dir);
    if (!gp_state_read(path, text, sizeof text) || sscanf(text, "%lld %lld %lld", &after, &grace, &heard) != 3 ||
        after <= 0 || grace < 0 || grace > after)
        return false;
    *out = (gp_partition_clock){.after_ms = after, .grace_ms = grace, .heard_boot_ms = heard};
    return true;
}

gp_err gp_state_partition_store(const char *node_dir, const gp_partition_clock *c, gp_error *err)
{
    char path[GP_STATE_PATH_MAX], text[96];
    snprintf(path, sizeof path, "%s/partition", node_dir);
    snprintf(text, sizeof text, "%" PRId64 " %" PRId64 " %" PRId64 "\n", c->after_ms, c->grace_ms, c->heard_boot_ms);
    return gp_state_write(path, text, 0600, err);
}

void gp_state_replica_name(uint64_t job, unsigned replica, int64_t bind_time, char *out, size_t cap)
{
    snprintf(out, cap, "job%" PRIu64 "-r%u-%" PRId64, job, replica, bind_time);
}

bool gp_state_replica_parse(const char *name, uint64_t *job, unsigned *replica, int64_t *bind_time)
{
    unsigned long long j;
    long long b;
    int used = 0;
    if (sscanf(name, "job%llu-r%u-%lld%n", &j, replica, &b, &used) != 3 || name[used] != '\0')
        return false;
    char again[96];
    gp_state_replica_name(j, *replica, b, again, sizeof again);
    if (strcmp(again, name) != 0)
        return false; /* not the one spelling: "job07-r1-5" */
    *job = j;
    *bind_time = b;
    return true;
}

void gp_state_exit_format(const gp_proc_exit *e, char *out, size_t cap)
{
    snprintf(out, cap, "%s %d %d\n", gp_exit_reason_name(e->reason), e->code, e->signal);
}

bool gp_state_exit_parse(const char *text, gp_proc_exit *e)
{
    char reason[32];
    if (sscanf(text, "%31s %d %d", reason, &e->code, &e->signal) != 3)
        return false;
    return gp_exit_reason_parse(reason, &e->reason);
}

void gp_state_stop_format(const gp_stop_order *s, char *out, size_t cap)
{
    snprintf(out, cap, "%d %" PRId64 " %s %" PRId64 "\n", s->signal, s->deadline_ms,
             s->cause == GP_STOP_TIME_LIMIT     ? "time_limit"
             : s->cause == GP_STOP_GPU_MEMORY   ? "gpu_memory"
             : s->cause == GP_STOP_CHECKPOINTED ? "checkpointed"
                                                : "requested",
             s->mono_deadline_ms);
}

bool gp_state_stop_parse(const char *text, gp_stop_order *s)
{
    char cause[32];
    long long deadline, mono = 0;
    int got = sscanf(text, "%d %lld %31s %lld", &s->signal, &deadline, cause, &mono);
    if (got < 3 || s->signal < 1 || s->signal > 64)
        return false;
    s->deadline_ms = deadline;
    s->mono_deadline_ms = mono;
    if (strcmp(cause, "time_limit") == 0)
        s->cause = GP_STOP_TIME_LIMIT;
    else if (strcmp(cause, "gpu_memory") == 0)
        s->cause = GP_STOP_GPU_MEMORY;
    else if (strcmp(cause, "checkpointed") == 0)
        s->cause = GP_STOP_CHECKPOINTED;
    else if (strcmp(cause, "requested") == 0)
        s->cause = GP_STOP_REQUESTED;
    else
        return false;
    return true;
}

void gp_state_supervisor_format(pid_t pid, uint64_t start_time, char *out, size_t cap)
{
    snprintf(out, cap, "%d %" PRIu64 "\n", (int)pid, start_time);
}

bool gp_state_supervisor_parse(const char *text, pid_t *pid, uint64_t *start_time)
{
    int p;
    unsigned long long t;
    if (sscanf(text, "%d %llu", &p, &t) != 2 || p <= 1)
        return false;
    *pid = p;
    *start_time = t;
    return true;
}

uint64_t gp_state_process_start_time(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!gp_state_read(path, text, sizeof text))
        return 0;
    const char *p = strrchr(text, ')'); /* the command may hold spaces and ')' */
    if (!p)
        return 0;
    /* a space precedes each field after the command: field 3 is after the
     * first, start time (field 22) after the twentieth */
    for (int space = 0; space < 20 && p; space++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}
