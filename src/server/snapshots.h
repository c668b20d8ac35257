/* snapshots.h - gpupoold writes engine snapshots every N events or M
 * seconds, without stalling its engine thread.
 *
 * After a commit the engine thread asks gp_snapshots_after_commit whether
 * one is due: N events logged since the last one, or M seconds passed and
 * at least one event.  If so (and the writer is not still busy with the
 * previous one: then it waits for the next commit) it forks a child that
 * copies the state from its copy-on-write image and writes it down a pipe
 * (gp_replayer_snapshot_fork); the writer thread reads it, seals it
 * (SHA-256) and stores it on its own connection in 1 MiB parts (store.h),
 * so the engine thread pays only the fork: a few milliseconds of page
 * tables at 100,000 live jobs, where copying the state took over a second.
 * The log says each one: event=snapshot seq=... child=PID stall_us=...
 * (the engine thread's part), then event=snapshot_written seq=...
 * bytes=... write_ms=... (the writer's: the child's copy, seal, store).
 *
 * Example: --snapshot-every-events 10000: the commit that logs event
 * 10,000 (or the first after it) takes a snapshot covering the log up to
 * it; a restart then loads it and replays only what came after.
 *
 * A big state is not written that often: the next snapshot waits for at
 * least one event per GP_SNAPSHOT_BYTES_PER_EVENT bytes of the last one,
 * because replaying one event costs about as much as loading that many
 * bytes of snapshot (bench/RESULTS.md: 5.1 us an event in a full replay of
 * 1,976,317 events; a 34.7 MB snapshot loaded in about 1.3 s, 38 ns a byte).
 * So the tail a restart replays costs no more than the snapshot it loads,
 * and a fleet whose snapshot is 16 MB (50,000 GPUs, 16,000 live jobs)
 * writes one every 127,799 events instead of every 10,000: at 2,000
 * submits a second (three events each) one every 21 s, not every 1.7 s,
 * each 1.4-1.9 s of writer time and a fork that stalls the engine thread
 * for 30-100 ms (bench/RESULTS.md, issue 16 section 1d).
 *
 * Threads: gp_snapshots_after_commit from the engine thread only; the
 * writer is the module's own thread.
 * Ownership: the module owns its connection and the child in flight
 * (the writer reaps it; gpupoold must not ignore SIGCHLD).
 */
#ifndef GP_SERVER_SNAPSHOTS_H
#define GP_SERVER_SNAPSHOTS_H

#include "eventlog/snapshot.h"
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct gp_snapshots {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool started, stopping;
    gp_store *store;            /* the writer thread's connection */
    gp_snapshot_child child;    /* the child in flight (under lock) */
    int64_t child_seq;          /* the last event its snapshot covers */
    bool busy;                  /* a child forked, its snapshot not yet stored */
    int64_t every_events;       /* 0 = never */
    int64_t every_ms;
    /* engine thread */
    int64_t last_seq;           /* the last event the newest snapshot covers */
    int64_t last_ms;            /* monotonic ms of the newest snapshot */
    int64_t seq_read;           /* the log's last seq at the last after_commit, -1 before it */
    int64_t logged_read;        /* the events logged then */
    atomic_uint_least64_t written;
    atomic_uint_least64_t last_bytes; /* the newest stored snapshot's size (writer thread); 0: none yet */
} gp_snapshots;

/* Starts the writer (no thread when every_events is 0); covered: the seq
 * the start's snapshot covered (0 when none). */
gp_err gp_snapshots_start(gp_snapshots *sn, const char *store_url, int64_t every_events, int64_t every_s,
                          int64_t covered, gp_error *err);
/* daemon: what the caller saves beside the replayer (a new reference,
 * consumed; may be NULL), asked for only when a snapshot is due.  Call it
 * only while the engine holds exactly what is committed (no transaction
 * begun after it): the snapshot is labelled with the log's last seq.
 * logged: the events this process appended so far (gp_journal's
 * events_logged), which gp_snapshots_maybe_due counts from. */
void gp_snapshots_after_commit(gp_snapshots *sn, gp_store *store, const gp_replayer *r, int64_t logged,
                               json_t *(*daemon)(void *ctx), void *ctx);
/* Whether gp_snapshots_after_commit might take one now, without asking
 * the database: the events logged since its last call, counted on top of
 * the seq it read then (never fewer than the log holds, as nothing else
 * writes it), or the timer; true before the first call; false while the
 * writer is still busy with the previous one.  A false answer
 * lets the engine thread go on with the next batch while a commit is in
 * flight (server/loop.c). */
bool gp_snapshots_maybe_due(gp_snapshots *sn, int64_t logged);
/* Events between two snapshots: every_events, or one per
 * GP_SNAPSHOT_BYTES_PER_EVENT bytes of the last snapshot if that is more.
 * Example: (10000, 16358355) -> 127,799; (10000, 0) -> 10,000. */
enum { GP_SNAPSHOT_BYTES_PER_EVENT = 128 };
int64_t gp_snapshots_events_between(int64_t every_events, uint64_t last_bytes);
/* Waits for the snapshot in flight, stops the writer. */
void gp_snapshots_stop(gp_snapshots *sn);

#endif
