/* joblogs.c - replica logs on disk (see joblogs.h for the layout and the
 * offset rule). */
#include "server/joblogs.h"

#include "server/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static gp_err make_dir(const char *path, gp_error *err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return gp_error_set(err, GP_ERR_INVALID, "job_logs", "cannot create %s: %s", path, strerror(errno));
    return GP_OK;
}

gp_err gp_joblogs_init(gp_joblogs *l, const char *dir, gp_error *err)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->grew, &attr);
    pthread_condattr_destroy(&attr);
    if (snprintf(l->dir, sizeof l->dir, "%s", dir) >= (int)sizeof l->dir)
        return gp_error_set(err, GP_ERR_INVALID, "job_logs", "the job logs directory name is too long");
    return make_dir(l->dir, err);
}

void gp_joblogs_free(gp_joblogs *l)
{
    pthread_cond_destroy(&l->grew);
    pthread_mutex_destroy(&l->lock);
}

/* DIR/job<ID>/r<R>-<BIND>.<ext> (ext NULL: the job's directory). */
static void run_path(const gp_joblogs *l, const gp_joblog_run *run, const char *ext, char *out, size_t cap)
{
    if (!ext)
        snprintf(out, cap, "%s/job%llu", l->dir, (unsigned long long)run->job);
    else
        snprintf(out, cap, "%s/job%llu/r%d-%lld.%s", l->dir, (unsigned long long)run->job, run->replica,
                 (long long)run->bind_time, ext);
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static gp_err offset_past(int64_t offset, int64_t size, gp_error *err)
{
    return gp_error_set(err, GP_ERR_CONFLICT, "offset", "offset %lld is past the %lld bytes gpupoold has; resend from %lld",
                        (long long)offset, (long long)size, (long long)size);
}

/* Writes the part of data that lies past `size` at the end of the log. */
static gp_err append_tail(const char *path, int64_t size, int64_t offset, const char *data, size_t n, gp_error *err)
{
    size_t skip = (size_t)(size - offset);
    if (skip >= n)
        return GP_OK;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "job_logs", "cannot open %s: %s", path, strerror(errno));
    const char *p = data + skip;
    size_t left = n - skip;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return gp_error_set(err, GP_ERR_INVALID, "job_logs", "cannot write %s: %s", path, strerror(errno));
        }
        p += w;
        left -= (size_t)w;
    }
    close(fd);
    return GP_OK;
}

static gp_err mark_eof(const char *path, gp_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "job_logs", "cannot create %s: %s", path, strerror(errno));
    close(fd);
    return GP_OK;
}

gp_err gp_joblogs_append(gp_joblogs *l, const gp_joblog_run *run, int64_t offset, const void *data, size_t n,
                         bool eof, int64_t *size, gp_error *err)
{
    char dir[4200], log[4300], end[4300];
    run_path(l, run, NULL, dir, sizeof dir);
    run_path(l, run, "log", log, sizeof log);
    run_path(l, run, "eof", end, sizeof end);
    pthread_mutex_lock(&l->lock);
    gp_err rc = make_dir(dir, err);
    *size = file_size(log);
    if (rc == GP_OK && offset > *size)
        rc = offset_past(offset, *size, err);
    if (rc == GP_OK)
        rc = append_tail(log, *size, offset, data, n, err);
    if (rc == GP_OK && eof)
        rc = mark_eof(end, err);
    *size = file_size(log);
    l->appends++;
    pthread_cond_broadcast(&l->grew);
    pthread_mutex_unlock(&l->lock);
    return rc;
}

gp_err gp_joblogs_read(gp_joblogs *l, const gp_joblog_run *run, int64_t offset, char *buf, size_t cap, size_t *n,
                       int64_t *size, bool *eof, gp_error *err)
{
    char log[4300], end[4300];
    run_path(l, run, "log", log, sizeof log);
    run_path(l, run, "eof", end, sizeof end);
    *n = 0;
    pthread_mutex_lock(&l->lock);
    *size = file_size(log);
    *eof = file_exists(end);
    gp_err rc = offset > *size ? offset_past(offset, *size, err) : GP_OK;
    int fd = rc == GP_OK && offset < *size ? open(log, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        ssize_t got = pread(fd, buf, cap, (off_t)offset);
        if (got < 0)
            rc = gp_error_set(err, GP_ERR_INVALID, "job_logs", "cannot read %s: %s", log, strerror(errno));
        else
            *n = (size_t)got;
        close(fd);
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

uint64_t gp_joblogs_appends(gp_joblogs *l)
{
    pthread_mutex_lock(&l->lock);
    uint64_t n = l->appends;
    pthread_mutex_unlock(&l->lock);
    return n;
}

void gp_joblogs_wait(gp_joblogs *l, uint64_t seen, int64_t wait_ms)
{
    struct timespec deadline = gp_deadline_after(CLOCK_MONOTONIC, wait_ms);
    pthread_mutex_lock(&l->lock);
    while (l->appends == seen && !l->stopping)
        if (pthread_cond_timedwait(&l->grew, &l->lock, &deadline) != 0)
            break;
    pthread_mutex_unlock(&l->lock);
}

void gp_joblogs_stop(gp_joblogs *l)
{
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_broadcast(&l->grew);
    pthread_mutex_unlock(&l->lock);
}
