/* use.h - allocated vs used: what each job drove, from the agents'
 * heartbeats (docs/metering.md, "Allocated vs used").
 *
 * Every heartbeat lists the node's running replicas with each GPU's (or
 * MIG slice's) sm_active_pct and memory_used_mib.  For each such GPU the
 * job is credited sm_active_pct/100 x the seconds since the node's
 * previous heartbeat (capped at --node-lost-after: a silence is not use)
 * as "busy GPU-seconds"; its driven GPU-seconds are that times the
 * milli-GPUs it holds on each GPU / 1000 (store_use.c, in SQL).  Per job
 * it also keeps the peak SM % and peak memory of one GPU, and for every
 * SM level L (1..100 %) since when every sample has been below L, so
 * "below 10 % for 30 minutes" is answered for any threshold.
 *
 * Example: job 7 holds one H100 (1000 milli); beats at t=0, 10, 20 say
 * 5 %, 5 %, 60 %.  Busy = 0.05x10 + 0.6x10 = 6.5 GPU-s (driven 6.5);
 * peak 60 %; below 10 % since t=0 until the beat at t=20 resets it.
 *
 * Durability: kept in memory (a small locked map) and flushed to the
 * store's job_use table at most every GP_USE_FLUSH_MS, inside the engine
 * thread's batch transaction; reloaded at start.  A crash loses at most
 * the samples of the last flush interval (and a restart does not credit
 * the gap: the first heartbeat of a node after it counts no seconds).
 *
 * Threads: heartbeats (API threads) and the engine thread's flush and
 * reports all take `lock`.  Ownership: gp_use owns everything in it.
 */
#ifndef GP_SERVER_USE_H
#define GP_SERVER_USE_H

#include "store/store.h"
#include "util/hashmap.h"

#include <jansson.h>
#include <pthread.h>

/* Flush interval; a job silent this long is dropped from memory (its
 * store row keeps its counters, and a later beat reloads nothing: it
 * starts a fresh entry, which is fine for a job that ended). */
enum { GP_USE_FLUSH_MS = 5000, GP_USE_FORGET_S = 3600 };

typedef struct gp__use_job gp__use_job;

typedef struct gp_use {
    pthread_mutex_t lock;
    int64_t cap_s;             /* --node-lost-after: the most one beat credits */
    gp_u64map job_index;       /* job id -> index into jobs */
    gp__use_job *jobs;
    size_t n_jobs, cap_jobs;
    gp_strmap node_index;      /* node -> index into node_last_ms */
    int64_t *node_last_ms;
    size_t n_nodes, cap_nodes;
    int64_t last_flush_ms;
} gp_use;

void gp_use_init(gp_use *u, int64_t cap_s);
void gp_use_free(gp_use *u);
/* Start-up: the counters the store has. */
gp_err gp_use_load(gp_use *u, gp_store *store, gp_error *err);
/* A heartbeat of node at now_ms with its "running" array (validated by
 * the caller; entries without telemetry add nothing). */
void gp_use_beat(gp_use *u, const char *node, const json_t *running, int64_t now_ms);
/* Engine thread, inside the batch transaction: writes the changed
 * counters when GP_USE_FLUSH_MS passed since the last flush (or force). */
gp_err gp_use_flush(gp_use *u, gp_store *store, int64_t now_ms, bool force, gp_error *err);

/* Calls fn for every job's counters, under the lock (fn must not call
 * back into u). */
void gp_use_each(gp_use *u, void (*fn)(void *ctx, const gp_store_job_use *c), void *ctx);

#endif
