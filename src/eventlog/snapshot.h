/* snapshot.h - a replayer's whole state, sealed with a checksum: what a
 * restart loads instead of replaying the event log from its start.
 *
 * A sealed snapshot covers the log up to and including event `seq`: the
 * engine (core's gp_engine_snapshot_write) and what the apply step keeps
 * beside it (the next job id, the pools' last settings, the replica exits
 * of running gangs), plus an opaque JSON object of the caller's own (the
 * daemon's agent stops).  Start = newest valid snapshot + the events after
 * its seq, then the usual check against the job table.
 *
 *     "gpupool-snapshot"  16 bytes
 *     version             uint32  1
 *     reserved            uint32  0
 *     seq                 int64   the last event it covers
 *     engine_len          uint64
 *     extras_len          uint64
 *     sha256              32 bytes over everything after this header
 *     engine              engine_len bytes (core/snapshot.c's format)
 *     extras              extras_len bytes of JSON: {"next_job_id", "pools",
 *                         "exits", "daemon"}
 *
 * Numbers are in host byte order: a snapshot is read back by the build and
 * machine kind that wrote it (the engine part refuses any other layout), a
 * cache of the log, never the truth.
 *
 * Even the copy stalls an engine thread for a second at 100,000 live jobs,
 * so the daemon does not copy: gp_replayer_snapshot_fork forks a child
 * (copy-on-write, as Redis's BGSAVE), which takes the parts from its frozen
 * image of the replayer and writes them down a pipe; the engine thread
 * pays only the fork (page tables: milliseconds), and another thread reads
 * the parts (gp_snapshot_child_collect), seals them (gp_snapshot_seal) and
 * stores them.  The child runs only the pure core's copy, jansson and
 * write(2) -- no lock another thread may have held at the fork, no log, no
 * store -- then _exit()s.
 *
 * Ownership: every buffer returned is the caller's (free()); json results
 * are new references.
 */
#ifndef GP_EVENTLOG_SNAPSHOT_H
#define GP_EVENTLOG_SNAPSHOT_H

#include "eventlog/replayer.h"

#include <sys/types.h>

#define GP_SNAPSHOT_VERSION 1

/* The unsealed parts, taken between events (no decisions pending). */
typedef struct gp_snapshot_parts {
    int64_t seq;
    unsigned char *engine;
    size_t engine_len;
    char *extras;              /* JSON text */
} gp_snapshot_parts;

/* The replayer's state after event seq; daemon (may be NULL) rides along. */
gp_err gp_replayer_snapshot_take(const gp_replayer *r, int64_t seq, const json_t *daemon, gp_snapshot_parts *out,
                                 gp_error *err);
void gp_snapshot_parts_free(gp_snapshot_parts *p);

/* A child taking the parts after event seq (as gp_replayer_snapshot_take,
 * daemon included) while the caller goes on; call from the thread that
 * owns r, between events.  The caller must collect it (one child at a
 * time per caller; the pipe and the process are its until then). */
typedef struct gp_snapshot_child {
    pid_t pid;
    int fd;                    /* the pipe's reading end */
} gp_snapshot_child;

/* Refused with GP_ERR_NOMEM when no pipe or process could be made. */
gp_err gp_replayer_snapshot_fork(const gp_replayer *r, int64_t seq, const json_t *daemon, gp_snapshot_child *out,
                                 gp_error *err);
/* Reads the child's parts into *out and reaps it (any thread; blocks until
 * the child is done).  Refused with GP_ERR_CONFLICT when the child failed
 * (the message says how: the engine refused, e.g. decisions pending, or a
 * short write) and GP_ERR_NOMEM when out of memory; *out is then empty. */
gp_err gp_snapshot_child_collect(gp_snapshot_child *c, gp_snapshot_parts *out, gp_error *err);

/* The parts into one checksummed buffer. */
gp_err gp_snapshot_seal(const gp_snapshot_parts *p, unsigned char **out, size_t *len, gp_error *err);

/* A sealed buffer into an empty replayer r (as gp_replayer_init leaves
 * it, engine included: it is replaced), *seq the last event it covers and
 * *daemon the caller's object (NULL when none).  Refused with GP_ERR_INVALID:
 * not a snapshot, another version, truncated, a checksum that does not
 * match ("checksum"), or the engine part's own refusals (core/engine.h);
 * then r is in no known state: free it and init it again for a full
 * replay. */
gp_err gp_replayer_snapshot_restore(gp_replayer *r, const unsigned char *buf, size_t len, const gp_engine_config *cfg,
                                    int64_t *seq, json_t **daemon, gp_error *err);

#endif
