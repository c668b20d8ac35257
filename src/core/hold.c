/* hold.c - changes to a pending job: hold, release, priority, time limit
 * (gp_engine_job_update).
 *
 * A hold is engine state, not a queue of its own: a held job stays in its
 * leaf's queue, and the pass (engine.c's consider) passes it over with the
 * wait GP_WAIT_HELD, before any admission check, as it passes over a job
 * in its restart back-off.  Claims a held job made for reclaim are given
 * up there, so its victims' GPUs are nobody's.  A release makes its wait
 * GP_WAIT_NEW; the next pass considers it again.  A new priority moves the
 * job to its place in the queue (priority desc, submit asc, id asc); a new
 * time limit is checked against its tenant's default as at submit.
 *
 * Only a pending job changes: an admitted or running job has been placed
 * under its old values.
 */
#include "core/internal.h"

#include <stdio.h>
#include <string.h>

/* The first field the update names: the one a refusal names. */
static const char *first_field(const gp_job_update *u)
{
    return u->has_hold ? "hold" : u->has_priority ? "priority" : u->has_time_limit ? "time_limit_s" : "id";
}

static gp_err update_check(const gp_engine *e, const gp__job *j, const gp_job_update *u, int64_t *limit,
                           gp_error *err)
{
    if (j->state != GP_JOB_PENDING)
        return gp_error_set(err, GP_ERR_CONFLICT, first_field(u), "job %llu is %s: only a pending job changes",
                            (unsigned long long)j->id, gp_job_state_name(j->state));
    if (u->has_hold && u->hold && (!u->by || !u->by[0] || strlen(u->by) >= GP_NAME_MAX))
        return gp_error_set(err, GP_ERR_INVALID, "by", "a hold names who holds the job (1..%d characters)",
                            GP_NAME_MAX - 1);
    if (u->has_priority && (u->priority < GP_PRIORITY_MIN || u->priority > GP_PRIORITY_MAX))
        return gp_error_set(err, GP_ERR_INVALID, "priority", "priority must be %d..%d", GP_PRIORITY_MIN,
                            GP_PRIORITY_MAX);
    *limit = j->limit;
    return u->has_time_limit ? gp__time_limit_resolve(e, j->kind, u->time_limit_s, j->tenant, limit, err) : GP_OK;
}

static void hold_set(gp__job *j, bool hold, const char *by)
{
    j->held = hold;
    snprintf(j->held_by, sizeof j->held_by, "%s", hold ? by : "");
    j->wait = (gp_wait){.code = hold ? GP_WAIT_HELD : GP_WAIT_NEW, .dim = -1, .tenant = GP__NONE};
}

gp_err gp_engine_job_update(gp_engine *e, uint64_t id, const gp_job_update *u, int64_t now, gp_error *err)
{
    if (now < e->now)
        return gp_error_set(err, GP_ERR_TIME, "now", "time went backwards: %lld < %lld", (long long)now,
                            (long long)e->now);
    uint32_t job = gp__job_lookup(e, id);
    if (job == GP__NONE)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)id);
    gp__job *j = &e->jobs[job];
    int64_t limit;
    gp_err rc = update_check(e, j, u, &limit, err);
    if (rc != GP_OK)
        return rc;
    e->now = now;
    if (u->has_priority && u->priority != j->priority) {
        gp__queue_remove(e, job);
        j->priority = u->priority;
        if (!gp__queue_insert(e, job))
            return gp_error_set(err, GP_ERR_NOMEM, "priority", "out of memory");
    }
    j->limit = limit;
    if (u->has_hold)
        hold_set(j, u->hold, u->by);
    e->changes++; /* no decision says so, but later passes see it */
    return GP_OK;
}
