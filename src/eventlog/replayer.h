/* replayer.h - one engine fed from the event log: the apply step that the
 * daemon's live run and every replay share.
 *
 * gp_replayer_apply gives one event to the engine with the rules the log
 * was written under:
 *   - submit: the job keeps its id; the next free id moves past it;
 *   - pool_set is applied and logged only when the pool's settings differ
 *     from the last ones applied; clock_resolution only when it differs
 *     from the engine's; a tick only counts as logged when it changed
 *     something a later event can see (gp_engine_changes);
 *   - replay only: a tenant_set that asks for "trusted" below an untrusted
 *     ancestor (logs from before trust was a floor) is applied as
 *     "inherit", the only reading the floor permits (trust_floor_applied);
 *   - replica_exit: a node agent's report of one replica's end, counted
 *     per gang (exits.h), finishes the job once the gang has ended or a
 *     replica failed; a report that counts nothing is not logged;
 *   - checkpointed and gpu_health go to the engine as they are.
 * The event's decisions are then in the engine (gp_engine_decisions) for
 * the caller to record; gp_replayer_settle forgets the jobs that reached a
 * final state and clears the decisions, so the engine holds only live jobs.
 *
 *     daemon:  apply -> (logged?) append + digest -> materialize -> settle
 *     replay:  decode -> apply -> compare digest -> settle
 *
 * gp_replayer_digest sums up the pending decisions as a count and a
 * SHA-256 (decisions.h), the record a replay compares against.
 *
 * Ownership: the replayer owns its engine; gp_replayer_free frees both.
 * Threads: one thread owns a replayer.
 */
#ifndef GP_EVENTLOG_REPLAYER_H
#define GP_EVENTLOG_REPLAYER_H

#include "eventlog/event.h"
#include "eventlog/exits.h"

typedef enum gp_apply_mode { GP_APPLY_LIVE = 0, GP_APPLY_REPLAY } gp_apply_mode;

typedef struct gp_replayer {
    gp_engine *engine;
    uint64_t next_job_id;      /* the id the next live submit gets */
    json_t *pools;             /* pool name -> its settings as last applied */
    gp_exits exits;            /* replicas of running gangs that have ended */
    uint64_t *touched;         /* jobs the pending decisions name, each once, first seen first */
    size_t n_touched, cap_touched;
    bool trust_floor_applied;  /* the last apply read "trusted" as "inherit" (replay only) */
    size_t rows_checked;       /* job rows gp_replayer_check_job has seen */
    gp_booking_result booking_result; /* the last booking_add's answer (its suggested start after a refusal) */
} gp_replayer;

gp_err gp_replayer_init(gp_replayer *r, const gp_engine_config *cfg, gp_error *err);
void gp_replayer_free(gp_replayer *r);

/* Applies ev.  *logged: whether the event belongs in the log (false: the
 * engine was not changed, see above).  On error nothing changed. */
gp_err gp_replayer_apply(gp_replayer *r, const gp_event *ev, gp_apply_mode mode, bool *logged, gp_error *err);

/* Count and SHA-256 (lowercase hex) of the pending decisions. */
gp_err gp_replayer_digest(const gp_replayer *r, int64_t *count, char hex[65], gp_error *err);

/* Forgets the touched jobs that reached a final state; clears decisions. */
void gp_replayer_settle(gp_replayer *r);

/* ---- checking a replayed engine against a store's job table ---- */

/* A live job row (state, placement as gp_placement_json text or NULL)
 * agrees with the replayer's engine (`replayer` is a gp_replayer *; the
 * shape of the store's job-row callback, gp_store_job_fn): else
 * GP_ERR_CONFLICT naming the job.  Counts the rows it saw. */
gp_err gp_replayer_check_job(void *replayer, uint64_t id, const char *state, const char *placement_json,
                             gp_error *err);
/* The engine holds exactly the rows checked and its invariants hold. */
gp_err gp_replayer_check_totals(const gp_replayer *r, gp_error *err);

#endif
