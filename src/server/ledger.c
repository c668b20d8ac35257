/* ledger.c - the usage ledger's records (see ledger.h; the chain is
 * store_ledger.c's).
 *
 * An "open" record says who held what from when: the interval's tenant,
 * job, class, topology, GPU type and milli-GPUs from the engine's decision;
 * the job's user from its row; where it runs (node, GPU UUIDs, the MIG
 * instance or the share of a shared GPU) from the engine's placement, read
 * while the job still holds it.  The "close" record repeats the open one's
 * fields (copied from the ledger, so it does not depend on a job the
 * engine may have forgotten) and adds end, why it closed, and the seq of
 * its open record.
 *
 * Why it closed is read from what the same event decided next for the job:
 *
 *     next decision for the job           closed
 *     USAGE_OPEN (a new interval)         reclassified (burstable <-> guaranteed)
 *     -> succeeded                        finished
 *     -> cancelled                        cancelled
 *     -> failed, reason "time_limit: ..." time_limit
 *     -> failed, otherwise                failed
 *     -> pending, event node_lost         node_lost
 *     -> pending, event gpu_health        gpu_failed
 *     -> pending, from preempting         preempted
 *     -> pending, from running            failed (restarted by its restart_policy)
 *
 * Example: job 7 (research/nlp, alice) is preempted at t=5400 after
 * running on one 1g.10gb slice from t=0: the tick that ends its grace
 * releases it (USAGE_CLOSE #1) and requeues it (preempting -> pending), so
 *     {"kind":"open","interval":1,"job":7,"milli_gpus":142,"share":"mig","start":0,...}
 *     {"kind":"close","interval":1,"closed":"preempted","end":5400,"open_seq":1,...}
 */
#include "server/ledger.h"

#include "eventlog/placement.h"
#include "server/log.h"

#include <stdio.h>
#include <string.h>

static const char *requeue_reason(const gp_event *ev, const gp_decision *d)
{
    if (ev->kind == GP_EV_NODE_LOST)
        return "node_lost";
    if (ev->kind == GP_EV_GPU_HEALTH)
        return "gpu_failed";
    return d->from == GP_JOB_PREEMPTING ? "preempted" : "failed";
}

const char *gp_ledger_close_reason(const gp_event *ev, const gp_decision *ds, size_t n, size_t i)
{
    for (size_t k = i + 1; k < n; k++) {
        const gp_decision *d = &ds[k];
        if (d->job_id != ds[i].job_id)
            continue;
        if (d->kind == GP_DEC_USAGE_OPEN)
            return "reclassified";
        if (d->kind != GP_DEC_TRANSITION)
            continue;
        if (d->to == GP_JOB_SUCCEEDED)
            return "finished";
        if (d->to == GP_JOB_CANCELLED)
            return "cancelled";
        if (d->to == GP_JOB_FAILED)
            return strncmp(d->reason, "time_limit", 10) == 0 ? "time_limit" : "failed";
        if (d->to == GP_JOB_PENDING)
            return requeue_reason(ev, d);
    }
    return "released"; /* no later decision for the job says why: not expected */
}

/* The fields the decision itself carries. */
static json_t *decision_fields(const gp_usage *u, const char *kind)
{
    return json_pack("{s:s, s:I, s:I, s:s, s:s, s:I, s:s, s:s, s:I}", "kind", kind, "interval",
                     (json_int_t)u->interval_id, "job", (json_int_t)u->job_id, "tenant", u->tenant, "gpu_type",
                     u->gpu_type, "milli_gpus", (json_int_t)u->milli_gpus, "class", gp_class_name(u->cls), "topology",
                     gp_topology_name(u->topology), "start", (json_int_t)u->start);
}

/* whole, or the first replica's share kind (mig, mps, timeslice). */
static const char *share_of(json_t *placement)
{
    json_t *slice = json_object_get(json_array_get(placement, 0), "slice");
    return slice ? json_string_value(json_object_get(slice, "kind")) : "whole";
}

static gp_err open_record(gp_store *s, const gp_engine *e, const gp_usage *u, gp_error *err)
{
    char user[GP_NAME_MAX];
    gp_err rc = gp_store_job_user(s, u->job_id, user, sizeof user, err);
    if (rc)
        return rc;
    gp_job_info info;
    json_t *placement = gp_engine_job_info(e, u->job_id, &info, NULL) == GP_OK
                            ? gp_placement_json(e, u->job_id, &info) : json_null();
    json_t *rec = decision_fields(u, "open");
    json_object_set_new(rec, "user", user[0] ? json_string(user) : json_null());
    json_object_set_new(rec, "share", json_is_array(placement) ? json_string(share_of(placement)) : json_null());
    json_object_set_new(rec, "placement", placement);
    rc = gp_store_ledger_append(s, rec, err);
    json_decref(rec);
    return rc;
}

/* The close record: the open one's fields (or the decision's alone when
 * the interval opened before the ledger existed) plus end and why. */
static gp_err close_record(gp_store *s, const gp_usage *u, const char *why, gp_error *err)
{
    json_t *open = NULL;
    gp_err rc = gp_store_ledger_open_get(s, u->interval_id, &open, err);
    if (rc)
        return rc;
    json_t *rec = decision_fields(u, "close");
    json_object_set_new(rec, "open_seq", open ? json_incref(json_object_get(open, "seq")) : json_null());
    static const char *const copied[] = {"user", "share", "placement"};
    for (size_t k = 0; k < sizeof copied / sizeof copied[0]; k++) {
        json_t *v = open ? json_object_get(open, copied[k]) : NULL;
        json_object_set_new(rec, copied[k], v ? json_incref(v) : json_null());
    }
    json_object_set_new(rec, "end", json_integer(u->end));
    json_object_set_new(rec, "closed", json_string(why));
    rc = gp_store_ledger_append(s, rec, err);
    json_decref(rec);
    json_decref(open);
    return rc;
}

gp_err gp_ledger_write(gp_store *s, const gp_engine *e, const gp_event *ev, const gp_decision *ds, size_t n,
                       size_t i, gp_error *err)
{
    const gp_decision *d = &ds[i];
    if (d->kind == GP_DEC_USAGE_OPEN)
        return open_record(s, e, &d->usage, err);
    return close_record(s, &d->usage, gp_ledger_close_reason(ev, ds, n, i), err);
}

/* ---- the daemon's view: head log, last verification ---- */

void gp_ledger_state_init(gp_ledger_state *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    l->verify_ok = -1;
}

void gp_ledger_head_log(gp_ledger_state *l, gp_store *writer, int64_t now_ms)
{
    if (l->head_due_ms != 0 && now_ms < l->head_due_ms)
        return;
    l->head_due_ms = now_ms + GP_LEDGER_HEAD_LOG_MS;
    gp_error err;
    int64_t seq;
    char hash[65];
    if (gp_store_ledger_head(writer, &seq, hash, &err) != GP_OK) {
        char q[300];
        gp_log(GP_LOG_WARN, "ledger_head", "error=%s", gp_log_quote(err.message, q, sizeof q));
        return;
    }
    pthread_mutex_lock(&l->lock);
    l->head_seq = seq;
    memcpy(l->head_hash, hash, sizeof hash);
    pthread_mutex_unlock(&l->lock);
    gp_log(GP_LOG_INFO, "ledger_head", "seq=%lld hash=%s", (long long)seq, hash);
}

void gp_ledger_verified(gp_ledger_state *l, const gp_store_ledger_check *c, int64_t at)
{
    pthread_mutex_lock(&l->lock);
    l->verify_ok = c->first_bad == 0;
    l->first_bad = c->first_bad;
    l->verified_at = at;
    pthread_mutex_unlock(&l->lock);
    if (c->first_bad != 0) {
        char q[300];
        gp_log(GP_LOG_ERROR, "ledger_verify", "ok=false first_bad=%lld why=%s", (long long)c->first_bad,
               gp_log_quote(c->why, q, sizeof q));
    }
}
