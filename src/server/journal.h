/* journal.h - the only way gpupoold changes its engine.
 *
 * Every engine event goes through a gp_journal_* call, which (1) gives the
 * event to the engine through the event log's apply step (eventlog/
 * replayer.h: the rules a replay follows too), and only if the engine
 * accepted it (2) appends it to the store's event log with its `now`, its
 * canonical payload (eventlog/event.h) and the count and digest of its
 * decisions (eventlog/decisions.h), and (3) writes what the engine decided
 * into the materialized tables (job rows and history, usage intervals,
 * tenants) -- all inside the caller's open store transaction.  So the log
 * is exactly the sequence of accepted engine calls, and replaying it into
 * a fresh engine (gp_journal_open, or gpupool-replay anywhere) rebuilds
 * the state the tables describe and the same decisions; the open checks
 * the tables and says how many events decided differently.
 *
 * Ticks that emitted no decision are not logged: such a pass changed no
 * job, GPU or tenant (it only recomputed wait reasons and dropped its
 * reservations), so leaving it out replays to the same state.
 *
 * Jobs that reach a final state are written to the store and forgotten by
 * the engine (in live runs and in replay alike), so the engine holds only
 * live jobs however long the daemon runs.
 *
 * Threads: one thread (the engine thread) owns a journal.
 * Ownership: the journal owns its replayer and engine; the store is the
 * caller's.
 */
#ifndef GP_SERVER_JOURNAL_H
#define GP_SERVER_JOURNAL_H

#include "eventlog/replayer.h"
#include "eventlog/snapshot.h"
#include "store/store.h"

/* Sees every event the engine accepted, live and in the start-up replay,
 * with its decisions still pending (agents.h). */
typedef void (*gp_journal_observer)(void *ctx, const gp_engine *e, const gp_event *ev);

/* What the daemon does beside the engine at start and on every event. */
typedef struct gp_journal_hooks {
    gp_journal_observer observe;  /* NULL = none */
    /* The engine was restored from a snapshot, before the log's tail is
     * replayed: saved is the object the daemon kept with it (NULL when
     * none; server/snapshots.h). */
    void (*restored)(void *ctx, const gp_engine *e, const json_t *saved);
    /* A start from a snapshot did not hold: forget what restored and
     * observe learned, a full replay follows. */
    void (*reset)(void *ctx);
    void *ctx;
} gp_journal_hooks;

typedef struct gp_journal {
    gp_replayer replayer;  /* the engine and the apply rules; replayer.next_job_id is the next id */
    gp_engine *engine;     /* replayer.engine, for the API's reads */
    gp_store *store;       /* the writer connection */
    bool broken;           /* a store write failed after the engine accepted an event: the
                              engine is ahead of the store; the caller must not commit */
    int64_t events_replayed;
    int64_t events_differing; /* at open: events whose decisions differ from the recorded ones */
    int64_t first_differing;  /* the seq of the first of them, 0 when none */
    bool last_logged;         /* the last accepted event went into the log (false: it changed nothing) */
    int64_t snapshot_seq;     /* at open: the snapshot the start used (its last event), 0 = a full replay */
    int64_t last_seq;         /* the last event replayed into the engine (open, gp_journal_follow) */
    int64_t events_logged;    /* events this process appended to the log (live), committed or not */
    gp_journal_hooks hooks;
} gp_journal;

/* Creates the engine, replays the store's event log into it and checks the
 * result against the materialized tables and the engine's invariants.
 * Events whose decisions differ from the recorded ones are counted
 * (events_differing) and logged, not refused: the tables decide.
 * With snapshots in the store (eventlog/snapshot.h) the newest that loads
 * is restored and only the log after it replayed; one that does not load
 * (corrupt, truncated, another build's) or whose result fails the check is
 * logged (event=snapshot_invalid seq=... stage=load|check) and the next
 * older one tried, then a full replay.  hooks may be NULL. */
gp_err gp_journal_open(gp_journal *j, gp_store *store, const gp_engine_config *cfg, const gp_journal_hooks *hooks,
                       gp_error *err);
void gp_journal_close(gp_journal *j);
/* A follower (server/lease.h): replays the events other replicas logged
 * after last_seq, writing nothing; with check, then checks the engine
 * against the tables as the open does (a takeover, before it leads). */
gp_err gp_journal_follow(gp_journal *j, bool check, gp_error *err);

/* Each needs an open store transaction.  On error nothing changed -- unless
 * j->broken is set afterwards: then the engine took the event but the store
 * could not record it, and the only safe move is to roll back and rebuild
 * the engine from the log (gpupoold exits and restarts). */
gp_err gp_journal_submit(gp_journal *j, gp_job_request *req, int64_t now, gp_error *err); /* sets req->spec.id */
gp_err gp_journal_cancel(gp_journal *j, uint64_t id, int64_t now, gp_error *err);
/* u->by names who asks (its history line says so; the engine keeps it for a hold). */
gp_err gp_journal_job_update(gp_journal *j, uint64_t id, const gp_job_update *u, int64_t now, gp_error *err);
gp_err gp_journal_tenant_set(gp_journal *j, const char *path, const gp_tenant_spec *spec, int64_t now,
                             gp_error *err);
gp_err gp_journal_tenant_remove(gp_journal *j, const char *path, int64_t now, gp_error *err);
gp_err gp_journal_node_add(gp_journal *j, const gp_node_spec *spec, int64_t now, gp_error *err);
gp_err gp_journal_node_lost(gp_journal *j, const char *node, int64_t now, gp_error *err);
gp_err gp_journal_node_drain(gp_journal *j, const char *node, bool drain, int64_t now, gp_error *err);
/* Logged only when the pool's settings differ from the last logged ones. */
gp_err gp_journal_pool_set(gp_journal *j, const char *pool, const gp_pool_spec *spec, int64_t now,
                           gp_error *err);
gp_err gp_journal_tick(gp_journal *j, int64_t now, gp_error *err);
/* A node agent's reports (eventlog/exits.h: a replica_exit that counts
 * nothing is not logged; one that is gets a history row "exit" with what
 * the agent said, e.g. "replica 1 on n2: exit code 3 (exited)"). */
gp_err gp_journal_replica_exit(gp_journal *j, const gp_replica_exit *x, int64_t now, gp_error *err);
gp_err gp_journal_checkpointed(gp_journal *j, uint64_t id, int64_t now, gp_error *err);
gp_err gp_journal_gpu_health(gp_journal *j, const char *node, int gpu_index, bool healthy, int64_t now,
                             gp_error *err);
/* A declared GPU type (gpu_types.c) the engine learns, logged so that a
 * replay knows it before the jobs that name it. */
gp_err gp_journal_gpu_type_declare(gp_journal *j, const char *name, int64_t now, gp_error *err);
/* Bookings (core/booking.h).  A refused booking changes nothing and is not
 * logged: the error says why, and result (booking_add's, may not be NULL)
 * holds the suggested start. */
gp_err gp_journal_booking_add(gp_journal *j, const gp_booking_spec *spec, int64_t now, gp_booking_result *result,
                              gp_error *err);
gp_err gp_journal_booking_cancel(gp_journal *j, const char *name, int64_t now, gp_error *err);
gp_err gp_journal_booking_change(gp_journal *j, const char *name, const gp_booking_change *c, int64_t now,
                                 gp_error *err);
/* gpu_hours_per_week: 0 none beyond guarantees, -1 unbounded. */
gp_err gp_journal_booking_allowance(gp_journal *j, const char *org, int64_t gpu_hours_per_week, int64_t now,
                                    gp_error *err);
/* Logged only when it differs from the engine's (gpupoold sets 1 s at start:
 * engine time is whole seconds of wall-clock time). */
gp_err gp_journal_clock_resolution(gp_journal *j, int64_t seconds, int64_t now, gp_error *err);

/* The clock the next event may use: max(wall, engine's now). */
int64_t gp_journal_now(const gp_journal *j, int64_t wall);

/* A live job's state, class, reason and placement as the API shows them
 * (added to `view`); false when the engine no longer holds the job. */
bool gp_journal_job_live(const gp_journal *j, uint64_t id, json_t *view);
/* A pending job's every blocker (gp_engine_blockers), each shaped as its
 * `wait`, as `blockers` in `view`; nothing for a job not pending. */
void gp_journal_job_blockers(const gp_journal *j, uint64_t id, json_t *view);

#endif
