/* replica_log.h - a replica's log file, capped: its supervisor copies the
 * replica's output pipe into it, the agent reads it at stream offsets to
 * ship it to gpupoold (agent_logs.c).
 *
 * Why a pipe: a replica writing straight into the file could fill the
 * node's disk; through the supervisor (supervise.c) every byte is counted
 * and the file never passes the cap.  The copy is read(2)/write(2) of
 * 64 KiB at a time from a 1 MiB pipe, far faster than a job prints.
 *
 * The stream: every byte ever appended to LOG (STATE/NODE/logs/RUN.log),
 * the replica's and the supervisor's own lines, numbered from 0.  LOG
 * holds the stream's bytes [base, base + size).  When an append would take
 * LOG past max_bytes, the older half goes: a new file with LOG's newest
 * max_bytes/2 bytes replaces it (rename), base moves past what went, and
 * the line "gpupool: dropped N bytes of output (the log keeps its newest
 * M MiB)" is appended to the stream.  For a cap of 64 MiB and a job that
 * prints 100 MiB: LOG rotates at 64 MiB (base 32 MiB), again at 96 MiB
 * (base 64 MiB) and ends with bytes 64..100 MiB and the two lines.
 *
 * LOG.base ("INODE BASE DROPPED\n") says the base of the LOG file with
 * that inode; it is written before the new file is renamed over LOG, so a
 * reader that finds another inode in LOG is mid-rotation and tries later.
 * No LOG.base: base 0.
 *
 * Ownership: a gp_replica_log is a caller-owned struct; open/close own
 * its descriptor.
 */
#ifndef GP_AGENT_REPLICA_LOG_H
#define GP_AGENT_REPLICA_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define GP_REPLICA_LOG_PATH_MAX 4096

typedef struct gp_replica_log {
    char path[GP_REPLICA_LOG_PATH_MAX];
    int fd;            /* LOG, appended */
    int64_t base;      /* the stream offset of LOG's first byte */
    int64_t size;      /* LOG's bytes */
    int64_t max_bytes; /* the cap; 0: none */
    int64_t dropped;   /* bytes dropped so far */
} gp_replica_log;

/* Opens (creates 0640, not through a symbolic link) LOG for appending.
 * GP_ERR_CONFLICT with the errno when it cannot. */
gp_err gp_replica_log_open(gp_replica_log *log, const char *path, int64_t max_bytes, gp_error *err);
/* Appends len bytes, rotating first when they would pass the cap.
 * false when the disk refused (the bytes are lost). */
bool gp_replica_log_append(gp_replica_log *log, const void *buf, size_t len);
void gp_replica_log_close(gp_replica_log *log);

/* The reader: LOG opened read-only (O_CLOEXEC) with its stream base in
 * *base, or -1 (errno ENOENT: no log yet; EAGAIN: mid-rotation). */
int gp_replica_log_open_read(const char *path, int64_t *base);
/* The bytes the cap has dropped from LOG so far (LOG.base), 0 when none. */
int64_t gp_replica_log_dropped(const char *path);

#endif
