/* exits.h - which replicas of a running gang have ended, and what that
 * means for the job: the rule that turns node agents' replica_exit reports
 * into engine events, shared by the daemon and every replay.
 *
 * A node agent reports each replica's end on its own; the engine knows only
 * whole jobs (gp_engine_job_finished).  The rule, per run (a job's
 * bind_time names the run, so an exit of an earlier run is stale):
 *   - the job is preempting (preempted, cancelled, past its time limit):
 *     once every replica has ended -> STOPPED (ends its grace early: the
 *     engine requeues a victim, cancels a cancelled job, fails a job past
 *     its limit, and the reclaimer binds at the next pass) -- except a job
 *     past its time limit whose replicas all exited 0 within the grace:
 *     its work is done -> SUCCEEDED (docs/scheduling.md, Time limits);
 *   - the job is running: a replica that failed (exit code != 0, a signal,
 *     oom, ...) -> FAILED at once, the gang whole (its other replicas are
 *     no longer assigned and their agents stop them); every replica ended
 *     with exit code 0 -> SUCCEEDED;
 *   - anything else (a replica already counted, a stale run, a job that is
 *     no longer live or not placed) changes nothing and is not logged, so
 *     a report sent twice counts once.
 *
 * Example: job 7, 2 replicas, bound at t=100.  replica_exit {7, 0, 100,
 * exit 0} -> recorded, the job runs on; {7, 0, 100, exit 0} again ->
 * nothing; {7, 1, 100, exit 0} -> SUCCEEDED.  Had replica 1 exited 3
 * instead -> FAILED.  Past its time limit (STOP "time_limit", preempting),
 * the same two exits 0 -> SUCCEEDED; one exit 3 -> STOPPED, so FAILED.
 *
 * Ownership: gp_exits owns its records; gp_exits_free releases them.
 */
#ifndef GP_EVENTLOG_EXITS_H
#define GP_EVENTLOG_EXITS_H

#include "eventlog/event.h"

typedef struct gp__exit_record gp__exit_record;

typedef struct gp_exits {
    gp__exit_record *records; /* one per live run with at least one replica ended */
    size_t n, cap;
} gp_exits;

/* Applies one report to engine e.  *logged: false when it changed nothing
 * (see above).  On error nothing changed. */
gp_err gp_exits_apply(gp_exits *x, gp_engine *e, const gp_replica_exit *report, int64_t now, bool *logged,
                      gp_error *err);
/* Forgets the record of job id when the engine no longer runs it. */
void gp_exits_settle(gp_exits *x, const gp_engine *e, uint64_t id);
void gp_exits_free(gp_exits *x);
/* The records as JSON (a snapshot keeps them: eventlog/snapshot.h), a new
 * reference, and back into an empty x. */
json_t *gp_exits_to_json(const gp_exits *x);
gp_err gp_exits_from_json(gp_exits *x, const json_t *records, gp_error *err);

#endif
