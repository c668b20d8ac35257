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
 * Sealing (the SHA-256) costs more than the engine copy, so the daemon
 * takes the parts in its engine thread (gp_replayer_snapshot_take) and
 * seals and stores them in another (gp_snapshot_seal).
 *
 * Ownership: every buffer returned is the caller's (free()); json results
 * are new references.
 */
#ifndef GP_EVENTLOG_SNAPSHOT_H
#define GP_EVENTLOG_SNAPSHOT_H

#include "eventlog/replayer.h"

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
