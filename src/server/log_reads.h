/* log_reads.h - which reads of another user's job logs were audited
 * lately, so that a reader following a log (a long-poll every few
 * seconds) adds one audit row per ten minutes, not one per poll.
 *
 * A read of job J's replica R by token T is audited (api_logs.c: an audit
 * row "job.logs.read", written and committed before the bytes are sent)
 * unless (T, J, R) was audited less than GP_LOG_READS_EVERY_S ago.  The
 * table remembers the GP_LOG_READS_KEPT (256) newest audited reads; an
 * older one forgotten is audited again at its next read (a row more,
 * never one less).  Own logs (the job runs as the token's user) are not
 * audited.
 *
 * Example: alice's admin token follows bob's job 7 replica 0 from 10:00 to
 * 10:25, polling every 30 s: rows at 10:00, 10:10 and 10:20.
 *
 * Threads: any (one mutex).  Ownership: fixed arrays, nothing allocated.
 */
#ifndef GP_SERVER_LOG_READS_H
#define GP_SERVER_LOG_READS_H

#include "server/auth.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum { GP_LOG_READS_KEPT = 256, GP_LOG_READS_EVERY_S = 600 };

typedef struct gp_log_read {
    char token_id[GP_TOKEN_ID_LEN + 1];
    uint64_t job;
    int replica;
    int64_t audited; /* epoch seconds */
} gp_log_read;

typedef struct gp_log_reads {
    pthread_mutex_t lock;
    gp_log_read kept[GP_LOG_READS_KEPT];
    int n;
} gp_log_reads;

void gp_log_reads_init(gp_log_reads *l);
void gp_log_reads_destroy(gp_log_reads *l);
/* Does this read need an audit row now? */
bool gp_log_reads_due(gp_log_reads *l, const char *token_id, uint64_t job, int replica, int64_t now);
/* Its audit row is committed (the oldest kept read makes room). */
void gp_log_reads_done(gp_log_reads *l, const char *token_id, uint64_t job, int replica, int64_t now);

#endif
