/* replica_log.c - a replica's capped log file and its rotation
 * (replica_log.h explains the stream and LOG.base). */
#define _GNU_SOURCE
#include "agent/launch/replica_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GP__COPY_CHUNK (64 * 1024)

/* LOG.base's three numbers; false when absent or unreadable. */
static bool gp__read_base(const char *path, uint64_t *ino, int64_t *base, int64_t *dropped)
{
    char name[GP_REPLICA_LOG_PATH_MAX + 8], text[96];
    snprintf(name, sizeof name, "%s.base", path);
    int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    return sscanf(text, "%" SCNu64 " %" SCNd64 " %" SCNd64, ino, base, dropped) == 3;
}

/* LOG.base for the file with inode ino, replaced atomically. */
static bool gp__write_base(const gp_replica_log *log, uint64_t ino, int64_t base)
{
    char name[GP_REPLICA_LOG_PATH_MAX + 8], tmp[GP_REPLICA_LOG_PATH_MAX + 16], text[96];
    snprintf(name, sizeof name, "%s.base", log->path);
    snprintf(tmp, sizeof tmp, "%s.base.new", log->path);
    int len = snprintf(text, sizeof text, "%" PRIu64 " %" PRId64 " %" PRId64 "\n", ino, base, log->dropped);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0)
        return false;
    bool ok = write(fd, text, (size_t)len) == len;
    close(fd);
    return ok && rename(tmp, name) == 0;
}

gp_err gp_replica_log_open(gp_replica_log *log, const char *path, int64_t max_bytes, gp_error *err)
{
    memset(log, 0, sizeof *log);
    snprintf(log->path, sizeof log->path, "%s", path);
    log->max_bytes = max_bytes;
    log->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
    struct stat st;
    if (log->fd < 0 || fstat(log->fd, &st) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "log", "%s: %s", path, strerror(errno));
    uint64_t ino;
    if (!gp__read_base(path, &ino, &log->base, &log->dropped) || ino != (uint64_t)st.st_ino)
        log->base = log->dropped = 0;
    log->size = st.st_size;
    return GP_OK;
}

/* Copies LOG's bytes from offset to its end into fd. */
static bool gp__copy_tail(int from, int64_t offset, int64_t end, int to)
{
    static char buf[GP__COPY_CHUNK];
    while (offset < end) {
        ssize_t n = pread(from, buf, sizeof buf, offset);
        if (n <= 0 || write(to, buf, (size_t)n) != n)
            return false;
        offset += n;
    }
    return true;
}

/* The newest half stays, in a new file renamed over LOG. */
static bool gp__rotate(gp_replica_log *log)
{
    char tmp[GP_REPLICA_LOG_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.new", log->path);
    int old = open(log->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int fd = open(tmp, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
    int64_t keep = log->max_bytes / 2 < log->size ? log->max_bytes / 2 : log->size, drop = log->size - keep;
    struct stat st;
    bool ok = old >= 0 && fd >= 0 && gp__copy_tail(old, drop, log->size, fd) && fstat(fd, &st) == 0;
    if (old >= 0)
        close(old);
    log->dropped += ok ? drop : 0;
    if (!ok || !gp__write_base(log, (uint64_t)st.st_ino, log->base + drop) || rename(tmp, log->path) != 0) {
        log->dropped -= ok ? drop : 0;
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        return false;
    }
    close(log->fd);
    log->fd = fd;
    log->base += drop;
    log->size = keep;
    char line[160];
    int len = snprintf(line, sizeof line, "gpupool: dropped %" PRId64 " bytes of output (the log keeps its newest %" PRId64
                                          " MiB)\n", drop, log->max_bytes >> 20);
    return gp_replica_log_append(log, line, (size_t)len);
}

bool gp_replica_log_append(gp_replica_log *log, const void *buf, size_t len)
{
    if (log->max_bytes > 0 && log->size + (int64_t)len > log->max_bytes && log->size > 0 && !gp__rotate(log))
        return false;
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(log->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        log->size += n;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

void gp_replica_log_close(gp_replica_log *log)
{
    if (log->fd >= 0)
        close(log->fd);
    log->fd = -1;
}

int gp_replica_log_open_read(const char *path, int64_t *base)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    uint64_t ino;
    int64_t dropped;
    if (fd < 0 || fstat(fd, &st) != 0 || !gp__read_base(path, &ino, base, &dropped)) {
        *base = 0;
        return fd;
    }
    if (ino != (uint64_t)st.st_ino) {
        close(fd);
        errno = EAGAIN;
        return -1;
    }
    return fd;
}

int64_t gp_replica_log_dropped(const char *path)
{
    uint64_t ino;
    int64_t base, dropped;
    return gp__read_base(path, &ino, &base, &dropped) && dropped > 0 ? dropped : 0;
}
