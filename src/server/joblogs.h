/* joblogs.h - the replicas' output as gpupoold keeps it: one file per
 * replica run, shipped by the node agents, read back by `gpupool logs`.
 *
 * Layout under --job-logs DIR (default: the SQLite file's path + ".logs"):
 *
 *   DIR/job<ID>/r<R>-<BIND_TIME>.log   the bytes of replica R of the run
 *                                      bound at BIND_TIME (stdout and stderr
 *                                      interleaved, as the agent wrote them)
 *   DIR/job<ID>/r<R>-<BIND_TIME>.eof   present once the agent said the run
 *                                      ended and everything was sent
 *
 * Appends are idempotent by offset: an agent sends {offset, data} and
 * learns the size the server now has; it resends from that size after any
 * failure.  Bytes the server has already (offset < size) are skipped, so a
 * resent chunk counts once; an offset past the size is a conflict (a gap
 * would lose bytes).  Example: the file holds 10 bytes; {offset 4, 8
 * bytes} -> bytes 6..7 of the chunk appended, size 12; {offset 20, ...} ->
 * GP_ERR_CONFLICT "offset 20 is past the 12 bytes gpupoold has".
 *
 * Who may write which run is the caller's check (api_logs.c: the store's
 * job_runs rows).  Readers long-poll with gp_joblogs_wait: every append
 * wakes them.
 *
 * Threads: any; one mutex around the files.  Ownership: gp_joblogs owns
 * its directory name; readers' buffers are the caller's.
 */
#ifndef GP_SERVER_JOBLOGS_H
#define GP_SERVER_JOBLOGS_H

#include "util/error.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_joblogs {
    char dir[4096];
    pthread_mutex_t lock;
    pthread_cond_t grew;
    uint64_t appends;   /* counts appends: a waiter wakes when it moved */
    bool stopping;
} gp_joblogs;

/* One replica run's log. */
typedef struct gp_joblog_run {
    uint64_t job;
    int replica;
    int64_t bind_time;
} gp_joblog_run;

/* Creates dir when missing. */
gp_err gp_joblogs_init(gp_joblogs *l, const char *dir, gp_error *err);
void gp_joblogs_free(gp_joblogs *l);

/* Appends data[0..n) written at `offset` of the run's log (see above) and
 * marks it ended when eof; *size: the bytes the server has afterwards. */
gp_err gp_joblogs_append(gp_joblogs *l, const gp_joblog_run *run, int64_t offset, const void *data, size_t n,
                         bool eof, int64_t *size, gp_error *err);
/* Up to cap bytes from offset into buf (*n of them); *size the log's size,
 * *eof whether it ended.  A run with no log yet has size 0.  An offset past
 * the size: GP_ERR_CONFLICT naming "offset". */
gp_err gp_joblogs_read(gp_joblogs *l, const gp_joblog_run *run, int64_t offset, char *buf, size_t cap, size_t *n,
                       int64_t *size, bool *eof, gp_error *err);
/* The number of appends so far (pass it to gp_joblogs_wait). */
uint64_t gp_joblogs_appends(gp_joblogs *l);
/* Blocks until an append after `seen`, wait_ms passed or gp_joblogs_stop. */
void gp_joblogs_wait(gp_joblogs *l, uint64_t seen, int64_t wait_ms);
void gp_joblogs_stop(gp_joblogs *l);

#endif
