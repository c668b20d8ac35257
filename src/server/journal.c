/* journal.c - engine events with their durable record (see journal.h).
 *
 * The shape of every call is the same:
 *
 *     apply the event (eventlog/replayer.h)  --refused-->  the engine's error, nothing written
 *         | accepted
 *     if it belongs in the log: append (kind, now, canonical payload,
 *         version, decision count and digest); its own rows (job, tenant)
 *     for each decision: history rows, usage intervals and their ledger
 *         records (ledger.h); after a tenant change or a node add, the
 *         guarantee or capacity records that changed (gp_ledger_sync)
 *     for each job the decisions touched: rewrite its row from the engine
 *     settle: forget the jobs that reached a final state, clear decisions
 *
 * The engine gets the caller's spec itself and the log its canonical
 * encoding; tests/eventlog proves that decoding that encoding gives the
 * same spec back, so the live run and a replay feed the engine the same
 * values.
 *
 * Example: POST /v1/jobs (1 x 8 H100) at t=100 on an idle fleet, then the
 * batch's tick at t=100:
 *     submit   -> log "submit" {id 7,...} (1 decision); job row 7 pending;
 *                 history pending->pending "submitted to research/nlp"
 *     tick     -> decisions BIND 7, TRANSITION pending->admitted,
 *                 admitted->running, USAGE_OPEN #3 -> log "tick" {} (4
 *                 decisions and their digest); two history rows; usage
 *                 row 3 open; job row 7 running with its placement.
 */
#include "server/journal.h"

#include "eventlog/placement.h"
#include "server/ledger.h"
#include "server/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_final(gp_job_state s)
{
    return s == GP_JOB_SUCCEEDED || s == GP_JOB_FAILED || s == GP_JOB_CANCELLED;
}

int64_t gp_journal_now(const gp_journal *j, int64_t wall)
{
    int64_t e = gp_engine_now(j->engine);
    return wall > e ? wall : e;
}

/* ---- the job row ---- */

/* An amount as the API spells it: GPUs (kept in milli-GPUs) as a whole
 * number when whole, else with their decimals; millicores and MiB as they are. */
static json_t *amount_json(int64_t v, bool gpus)
{
    if (!gpus || v % 1000 == 0)
        return json_integer(gpus ? v / 1000 : v);
    return json_real((double)v / 1000.0);
}

/* What a pending job waits for, as data (`gpupool why` builds on it): the
 * code, and where they apply the tenant, the resource, the amounts, the
 * other job and the time -- the same facts gp_engine_why puts in words. */
static json_t *wait_json(const gp_engine *e, const gp_wait *w)
{
    json_t *o = json_pack("{s:s}", "code", gp_wait_code_name(w->code));
    const char *tenant = w->tenant != UINT32_MAX ? gp_engine_tenant_path(e, w->tenant) : "";
    if (tenant[0])
        json_object_set_new(o, "tenant", json_string(tenant));
    const char *type = w->dim >= 0 && w->dim < GP_MAX_GPU_TYPES ? gp_engine_gpu_type_name(e, w->dim) : NULL;
    const char *dim = w->dim == GP_DIM_CPU ? "cpu_millis" : w->dim == GP_DIM_MEM ? "mem_mib" : type;
    if (dim)
        json_object_set_new(o, "resource", json_string(dim));
    if (w->code == GP_WAIT_LIMIT || w->code == GP_WAIT_USER_LIMIT) {
        json_object_set_new(o, "usage", amount_json(w->a, type != NULL));
        json_object_set_new(o, "demand", amount_json(w->b, type != NULL));
        json_object_set_new(o, "limit", amount_json(w->c, type != NULL));
    }
    if (w->job)
        json_object_set_new(o, "job", json_integer((json_int_t)w->job));
    if (w->code == GP_WAIT_DEDICATED) { /* free GPUs on nodes it may not share; whose dedication keeps it out */
        json_object_set_new(o, "free", json_integer(w->a));
        json_object_set_new(o, "demand", json_integer(w->b));
        json_object_set_new(o, "by", json_string(w->c == 2 ? "pool" : w->c == 1 ? "own" : "other"));
        if (w->c == 2)
            json_object_set_new(o, "pool", json_string(gp_engine_pool_name(e, w->pool)));
    }
    if (w->code == GP_WAIT_TOPOLOGY) { /* GPUs the largest empty domain of its kind holds, and those it asks */
        json_object_set_new(o, "largest", json_integer(w->a));
        json_object_set_new(o, "needed", json_integer(w->b));
    }
    if (w->code == GP_WAIT_BACKOFF) {
        json_object_set_new(o, "restarts", json_integer(w->a));
        json_object_set_new(o, "max_restarts", json_integer(w->b));
    }
    if (w->code == GP_WAIT_RESERVATION || w->code == GP_WAIT_RESERVED || w->code == GP_WAIT_RECLAIM ||
        w->code == GP_WAIT_BACKOFF)
        json_object_set_new(o, "time", w->time > 0 && w->time < INT64_MAX / 2 ? json_integer(w->time) : json_null());
    return o;
}

bool gp_journal_job_live(const gp_journal *j, uint64_t id, json_t *view)
{
    gp_job_info info;
    if (gp_engine_job_info(j->engine, id, &info, NULL) != GP_OK)
        return false;
    char reason[512];
    gp_engine_why(j->engine, id, reason, sizeof reason);
    json_object_set_new(view, "state", json_string(gp_job_state_name(info.state)));
    json_object_set_new(view, "class", info.cls == GP_CLASS_NONE ? json_null() : json_string(gp_class_name(info.cls)));
    json_object_set_new(view, "reason", json_string(reason));
    json_object_set_new(view, "submit_time", json_integer(info.submit_time));
    json_object_set_new(view, "bind_time", info.bind_time < 0 ? json_null() : json_integer(info.bind_time));
    json_object_set_new(view, "preemptions", json_integer(info.preemptions));
    json_object_set_new(view, "requeues", json_integer(info.requeues));
    json_object_set_new(view, "restarts", json_integer(info.restarts));
    json_object_set_new(view, "effective_time_limit_s",
                        info.time_limit_s > 0 ? json_integer(info.time_limit_s) : json_null());
    json_object_set_new(view, "placement", gp_placement_json(j->engine, id, &info));
    if (info.state == GP_JOB_PENDING) {
        json_object_set_new(view, "wait", wait_json(j->engine, &info.wait));
        json_object_set_new(view, "held", json_boolean(info.wait.code == GP_WAIT_HELD));
    }
    return true;
}

void gp_journal_job_blockers(const gp_journal *j, uint64_t id, json_t *view)
{
    gp_wait w[16];
    size_t n = gp_engine_blockers(j->engine, id, w, sizeof w / sizeof w[0]);
    if (n == 0)
        return;
    json_t *a = json_array();
    for (size_t i = 0; i < n && i < sizeof w / sizeof w[0]; i++)
        json_array_append_new(a, wait_json(j->engine, &w[i]));
    json_object_set_new(view, "blockers", a);
}

/* The job's placement (eventlog/placement.h) as the engine holds it after
 * the event being written, built once for the event: memo (the caller's
 * object, keyed by job id) keeps it for the event's other writers (the
 * ledger's open record, the row).  Borrowed from memo. */
static json_t *placement_of(const gp_journal *j, json_t *memo, uint64_t id, const gp_job_info *info)
{
    char key[24];
    snprintf(key, sizeof key, "%llu", (unsigned long long)id);
    json_t *placement = json_object_get(memo, key);
    if (!placement) {
        placement = info ? gp_placement_json(j->engine, id, info) : json_null();
        json_object_set_new(memo, key, placement);
    }
    return placement;
}

/* What the engine says of a job, as its row: state, class, reason
 * (into reason[512]), times and placement (*ptext: the caller frees it). */
static gp_store_job engine_row(gp_journal *j, uint64_t id, const gp_job_info *info, const json_t *placement,
                               int64_t now, char *reason, char **ptext)
{
    gp_engine_why(j->engine, id, reason, 512);
    *ptext = json_is_null(placement) ? NULL : json_dumps(placement, GP_JSON_CANONICAL);
    return (gp_store_job){
        .id = id,
        .state = gp_job_state_name(info->state),
        .cls = info->cls == GP_CLASS_NONE ? NULL : gp_class_name(info->cls),
        .reason = reason,
        .bind_time = info->bind_time,
        .end_time = is_final(info->state) ? now : -1,
        .updated = now,
        .placement_json = *ptext,
    };
}

static gp_err update_row(gp_journal *j, uint64_t id, const gp_job_info *info, json_t *memo, int64_t now,
                         gp_error *err)
{
    char reason[512], *ptext;
    gp_store_job row = engine_row(j, id, info, placement_of(j, memo, id, info), now, reason, &ptext);
    gp_err rc = gp_store_job_update(j->store, &row, err);
    free(ptext);
    return rc;
}

/* A submitted job's row, as the engine holds it after the submit (so the
 * submit's own decisions need no second write of it: write_decisions). */
static gp_err insert_row(gp_journal *j, const gp_job_request *req, const char *spec_text, int64_t now,
                         gp_error *err)
{
    const gp_job_spec *s = &req->spec;
    gp_job_info info;
    if (gp_engine_job_info(j->engine, s->id, &info, NULL) != GP_OK)
        return gp_error_set(err, GP_ERR_INVALID, "store", "job %llu: not in the engine after its submit",
                            (unsigned long long)s->id);
    char reason[512], *ptext;
    json_t *placement = gp_placement_json(j->engine, s->id, &info);
    gp_store_job row = engine_row(j, s->id, &info, placement, now, reason, &ptext);
    json_decref(placement);
    row.tenant = s->tenant;
    row.user = s->user;
    row.name = s->name;
    row.submit_time = now;
    row.spec_json = spec_text;
    row.array_id = req->array_id;
    row.array_index = req->array_index;
    gp_err rc = gp_store_job_insert(j->store, &row, err);
    free(ptext);
    return rc;
}

/* ---- decisions ---- */

/* A bind: where each replica of this run is (the job_runs rows), the
 * engine's node of each replica (no placement JSON for a node name). */
static gp_err runs_write(gp_journal *j, uint64_t id, gp_error *err)
{
    gp_job_info info;
    if (gp_engine_job_info(j->engine, id, &info, NULL) != GP_OK || info.bind_time < 0)
        return GP_OK;
    gp_err rc = GP_OK;
    const char *node;
    for (int r = 0; rc == GP_OK && (node = gp_engine_job_node(j->engine, id, r)) != NULL; r++)
        rc = gp_store_run_add(j->store, id, info.bind_time, r, node, err);
    return rc;
}

/* The job's allocated-vs-used row (store_use.c): the milli-GPUs on each
 * of the GPUs its replicas report telemetry for. */
static gp_err use_open(gp_journal *j, const gp_usage *u, gp_error *err)
{
    gp_job_info info;
    int64_t entries = 1;
    if (gp_engine_job_info(j->engine, u->job_id, &info, NULL) == GP_OK && info.replicas * info.gpus > 0)
        entries = (int64_t)info.replicas * info.gpus;
    return gp_store_job_use_open(j->store, u->job_id, u->tenant, u->gpu_type, u->milli_gpus / entries, err);
}

static gp_err materialize(gp_journal *j, const gp_decision *d, gp_error *err)
{
    char text[1024];
    switch (d->kind) {
    case GP_DEC_TRANSITION:
        if (d->from == d->to) /* the engine's submit record: not a change of state */
            return gp_store_history_add(j->store, d->job_id, d->time, "submit", NULL, NULL, d->reason, err);
        return gp_store_history_add(j->store, d->job_id, d->time, "transition", gp_job_state_name(d->from),
                                    gp_job_state_name(d->to), d->reason, err);
    case GP_DEC_PREEMPT:
        /* the reason already names who reclaims, for which job and whose guarantee (reclaim.c) */
        snprintf(text, sizeof text, "%s; grace %llds; %lld GPU-s lost", d->reason, (long long)d->grace_s,
                 (long long)d->work_lost_gpu_s);
        if (gp_store_history_add(j->store, d->job_id, d->time, "preempt", NULL, NULL, text, err) != GP_OK)
            return err ? err->code : GP_ERR_INVALID;
        return gp_store_job_use_lost(j->store, d->job_id, d->work_lost_gpu_s, err);
    case GP_DEC_STOP:
        snprintf(text, sizeof text, "%s (grace %llds)", d->reason, (long long)d->grace_s);
        return gp_store_history_add(j->store, d->job_id, d->time, "stop", NULL, NULL, text, err);
    case GP_DEC_USAGE_OPEN: {
        if (d->usage.dedicated_idle) /* no job's use: the ledger alone keeps it (ledger_write) */
            return GP_OK;
        gp_store_usage u = {.interval_id = d->usage.interval_id,
                            .job_id = d->usage.job_id,
                            .tenant = d->usage.tenant,
                            .gpu_type = d->usage.gpu_type,
                            .cls = gp_class_name(d->usage.cls),
                            .topology = gp_topology_name(d->usage.topology),
                            .milli_gpus = d->usage.milli_gpus,
                            .start = d->usage.start,
                            .end = -1};
        if (gp_store_usage_open(j->store, &u, err) != GP_OK)
            return err ? err->code : GP_ERR_INVALID;
        return use_open(j, &d->usage, err);
    }
    case GP_DEC_USAGE_CLOSE:
        if (d->usage.dedicated_idle)
            return GP_OK;
        return gp_store_usage_close(j->store, d->usage.interval_id, d->usage.end, err);
    case GP_DEC_BIND:
        return runs_write(j, d->job_id, err); /* the placement itself is read back with the row */
    default:
        return GP_OK; /* DRAINED, RECONFIGURE: no table (yet) */
    }
}

/* The ledger's record of decision ds[i], a USAGE_OPEN with the job's
 * placement (placement_of). */
static gp_err ledger_write(gp_journal *j, const gp_event *ev, const gp_decision *ds, size_t n, size_t i, json_t *memo,
                           gp_error *err)
{
    json_t *placement = NULL;
    gp_job_info info;
    if (ds[i].kind == GP_DEC_USAGE_OPEN) {
        bool live = gp_engine_job_info(j->engine, ds[i].usage.job_id, &info, NULL) == GP_OK;
        placement = placement_of(j, memo, ds[i].usage.job_id, live ? &info : NULL);
    }
    return gp_ledger_write(j->store, j->engine, ev, ds, n, i, placement, err);
}

/* Writes what the last event decided: history, usage and the ledger, the
 * touched rows.  Each job's placement JSON is built once (placement_of). */
/* A booking's state change or note (a release for no-show, a
 * substitution, a shortage): said in gpupoold's log and on the ledger. */
static gp_err booking_changed(gp_journal *j, const gp_decision *d, int64_t now, gp_error *err)
{
    char reason[GP_REASON_MAX + 8];
    gp_log(GP_LOG_INFO, "booking", "name=%s from=%s to=%s reason=%s", d->booking,
           gp_booking_state_name((gp_booking_state)d->booking_from), gp_booking_state_name((gp_booking_state)d->booking_to),
           gp_log_quote(d->reason, reason, sizeof reason));
    return gp_ledger_booking(j->store, j->engine, d, now, err);
}

static gp_err write_decisions(gp_journal *j, const gp_event *ev, gp_error *err)
{
    size_t n;
    const gp_decision *ds = gp_engine_decisions(j->engine, &n);
    gp_err rc = GP_OK;
    json_t *memo = json_object();
    for (size_t i = 0; i < n && rc == GP_OK; i++) {
        rc = materialize(j, &ds[i], err);
        if (rc == GP_OK && (ds[i].kind == GP_DEC_USAGE_OPEN || ds[i].kind == GP_DEC_USAGE_CLOSE))
            rc = ledger_write(j, ev, ds, n, i, memo, err);
        else if (rc == GP_OK && ds[i].kind == GP_DEC_BOOKING)
            rc = booking_changed(j, &ds[i], ev->time, err);
    }
    uint64_t inserted = ev->kind == GP_EV_SUBMIT ? ev->job->spec.id : 0; /* its row is the engine's already */
    for (size_t i = 0; i < j->replayer.n_touched && rc == GP_OK; i++) {
        gp_job_info info;
        if (j->replayer.touched[i] != inserted && gp_engine_job_info(j->engine, j->replayer.touched[i], &info, NULL) == GP_OK)
            rc = update_row(j, j->replayer.touched[i], &info, memo, ev->time, err);
    }
    json_decref(memo);
    return rc;
}

/* ---- one event, end to end ---- */

/* A replica's end as its agent reported it, in the job's history. */
static gp_err exit_history(gp_journal *j, const gp_replica_exit *x, int64_t time, gp_error *err)
{
    char text[GP_NAME_MAX + 224];
    if (x->reason == GP_EXIT_REASON_CHECKPOINTED)
        snprintf(text, sizeof text, "replica %d on %s: stopped after its checkpoint, as planned (%s)", x->replica,
                 x->node, gp_exit_reason_name(x->reason));
    else if (x->signal)
        snprintf(text, sizeof text, "replica %d on %s: killed by signal %d (%s)", x->replica, x->node, x->signal,
                 gp_exit_reason_name(x->reason));
    else
        snprintf(text, sizeof text, "replica %d on %s: exit code %d (%s)", x->replica, x->node, x->exit_code,
                 gp_exit_reason_name(x->reason));
    size_t used = strlen(text);
    if (x->reason == GP_EXIT_REASON_GPU_MEMORY)
        snprintf(text + used, sizeof text - used, ": its processes used %lld MiB of GPU memory, its share is %lld MiB",
                 (long long)x->gpu_memory_mib, (long long)x->gpu_memory_share_mib);
    return gp_store_history_add(j->store, x->job_id, time, "exit", NULL, NULL, text, err);
}

/* A pending job's update: its stored spec takes the new priority and time
 * limit (a hold is the engine's, shown by gp_journal_job_live), and its
 * history says what changed and who changed it. */
static gp_err update_rows(gp_journal *j, uint64_t id, const gp_job_update *u, const char *who, int64_t time,
                          gp_error *err)
{
    json_t *row = NULL;
    gp_err rc = gp_store_job_get(j->store, id, &row, err);
    json_t *spec = json_object_get(row, "spec");
    if (rc == GP_OK && json_is_object(spec) && (u->has_priority || u->has_time_limit)) {
        if (u->has_priority)
            json_object_set_new(spec, "priority", json_integer(u->priority));
        if (u->has_time_limit)
            json_object_set_new(spec, "time_limit_s", json_integer(u->time_limit_s));
        char *text = json_dumps(spec, GP_JSON_CANONICAL);
        rc = text ? gp_store_job_spec_set(j->store, id, text, err)
                  : gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
        free(text);
    }
    json_decref(row);
    char text[GP_NAME_MAX + 128];
    int n = snprintf(text, sizeof text, "%s", u->has_hold ? (u->hold ? "held" : "released") : "updated");
    if (u->has_priority)
        n += snprintf(text + n, sizeof text - (size_t)n, "%spriority %d", n ? ", " : "", u->priority);
    if (u->has_time_limit)
        n += snprintf(text + n, sizeof text - (size_t)n, ", time_limit_s %lld", (long long)u->time_limit_s);
    snprintf(text + n, sizeof text - (size_t)n, " by %s", who && who[0] ? who : "(none)");
    return rc == GP_OK ? gp_store_history_add(j->store, id, time, "update", NULL, NULL, text, err) : rc;
}

/* The event's own rows: the job, the tenant, the next id. */
static gp_err write_own_rows(gp_journal *j, const gp_event *ev, const char *payload, gp_error *err)
{
    gp_err rc = GP_OK;
    if (ev->kind == GP_EV_SUBMIT) {
        rc = insert_row(j, ev->job, payload, ev->time, err);
        if (rc == GP_OK)
            rc = gp_store_meta_set(j->store, "next_job_id", (int64_t)j->replayer.next_job_id, err);
    } else if (ev->kind == GP_EV_TENANT_SET) {
        json_t *spec = gp_tenant_spec_to_json(ev->tenant);
        char *text = spec ? json_dumps(spec, GP_JSON_CANONICAL) : NULL;
        json_decref(spec);
        rc = text ? gp_store_tenant_put(j->store, ev->path, text, ev->time, err)
                  : gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
        free(text);
    } else if (ev->kind == GP_EV_TENANT_REMOVE) {
        rc = gp_store_tenant_delete(j->store, ev->path, err);
    } else if (ev->kind == GP_EV_REPLICA_EXIT) {
        rc = exit_history(j, ev->exit, ev->time, err);
    } else if (ev->kind == GP_EV_JOB_UPDATE) {
        rc = update_rows(j, ev->job_id, ev->update, ev->update->by, ev->time, err);
    }
    return rc;
}

static gp_err append(gp_journal *j, const gp_event *ev, gp_error *err)
{
    char *payload = gp_event_encode(ev);
    gp_store_event row = {.time = ev->time, .kind = gp_event_kind_name(ev->kind), .payload = payload,
                          .version = GP_EVENT_VERSION};
    char digest[65];
    gp_err rc = payload ? gp_replayer_digest(&j->replayer, &row.decisions, digest, err)
                        : gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    row.digest = digest;
    if (rc == GP_OK)
        rc = gp_store_event_append(j->store, &row, err);
    if (rc == GP_OK)
        j->events_logged++;
    if (rc == GP_OK)
        rc = write_own_rows(j, ev, payload, err);
    free(payload);
    return rc;
}

static gp_err journal_event(gp_journal *j, const gp_event *ev, gp_error *err)
{
    bool logged;
    gp_err rc = gp_replayer_apply(&j->replayer, ev, GP_APPLY_LIVE, &logged, err);
    if (rc)
        return rc;
    if (j->hooks.observe)
        j->hooks.observe(j->hooks.ctx, j->engine, ev);
    j->last_logged = logged;
    if (logged)
        rc = append(j, ev, err);
    if (rc == GP_OK)
        rc = write_decisions(j, ev, err);
    bool tenants = ev->kind == GP_EV_TENANT_SET || ev->kind == GP_EV_TENANT_REMOVE;
    if (rc == GP_OK && (tenants || ev->kind == GP_EV_NODE_ADD))
        rc = gp_ledger_sync(j->store, j->engine, tenants, !tenants, ev->time, err);
    gp_replayer_settle(&j->replayer);
    j->broken = j->broken || rc != GP_OK;
    return rc;
}

gp_err gp_journal_submit(gp_journal *j, gp_job_request *req, int64_t now, gp_error *err)
{
    req->spec.id = j->replayer.next_job_id;
    gp_event ev = {.kind = GP_EV_SUBMIT, .time = now, .job = req};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_cancel(gp_journal *j, uint64_t id, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_CANCEL, .time = now, .job_id = id};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_job_update(gp_journal *j, uint64_t id, const gp_job_update *u, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_JOB_UPDATE, .time = now, .job_id = id, .update = u};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_tenant_set(gp_journal *j, const char *path, const gp_tenant_spec *spec, int64_t now,
                             gp_error *err)
{
    gp_event ev = {.kind = GP_EV_TENANT_SET, .time = now, .path = path, .tenant = spec};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_tenant_remove(gp_journal *j, const char *path, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_TENANT_REMOVE, .time = now, .path = path};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_node_add(gp_journal *j, const gp_node_spec *spec, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_NODE_ADD, .time = now, .node = spec};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_node_lost(gp_journal *j, const char *node, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_NODE_LOST, .time = now, .name = node};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_node_drain(gp_journal *j, const char *node, bool drain, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_NODE_DRAIN, .time = now, .name = node, .drain = drain};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_pool_set(gp_journal *j, const char *pool, const gp_pool_spec *spec, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_POOL_SET, .time = now, .name = pool, .pool = spec};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_tick(gp_journal *j, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_TICK, .time = now};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_replica_exit(gp_journal *j, const gp_replica_exit *x, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_REPLICA_EXIT, .time = now, .exit = x};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_checkpointed(gp_journal *j, uint64_t id, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_CHECKPOINTED, .time = now, .job_id = id};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_gpu_health(gp_journal *j, const char *node, int gpu_index, bool healthy, int64_t now,
                             gp_error *err)
{
    gp_event ev = {.kind = GP_EV_GPU_HEALTH, .time = now, .name = node, .gpu_index = gpu_index, .healthy = healthy};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_gpu_type_declare(gp_journal *j, const char *name, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_GPU_TYPE_DECLARE, .time = now, .name = name};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_booking_add(gp_journal *j, const gp_booking_spec *spec, int64_t now, gp_booking_result *result,
                              gp_error *err)
{
    gp_event ev = {.kind = GP_EV_BOOKING_ADD, .time = now, .booking = spec};
    j->replayer.booking_result = (gp_booking_result){.suggested_start = -1};
    gp_err rc = journal_event(j, &ev, err);
    *result = j->replayer.booking_result;
    return rc;
}

gp_err gp_journal_booking_cancel(gp_journal *j, const char *name, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_BOOKING_CANCEL, .time = now, .name = name};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_booking_change(gp_journal *j, const char *name, const gp_booking_change *c, int64_t now,
                                 gp_error *err)
{
    gp_event ev = {.kind = GP_EV_BOOKING_CHANGE, .time = now, .name = name, .booking_change = c};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_booking_allowance(gp_journal *j, const char *org, int64_t gpu_hours_per_week, int64_t now,
                                    gp_error *err)
{
    gp_event ev = {.kind = GP_EV_BOOKING_ALLOWANCE, .time = now, .name = org, .seconds = gpu_hours_per_week};
    return journal_event(j, &ev, err);
}

gp_err gp_journal_clock_resolution(gp_journal *j, int64_t seconds, int64_t now, gp_error *err)
{
    gp_event ev = {.kind = GP_EV_CLOCK_RESOLUTION, .time = now, .seconds = seconds};
    return journal_event(j, &ev, err);
}

/* ---- replay and the restart check ---- */

/* Counts an event whose decisions differ from the recorded ones. */
static gp_err compare_decisions(gp_journal *j, const gp_store_event *row, gp_error *err)
{
    int64_t count;
    char digest[65];
    gp_err rc = gp_replayer_digest(&j->replayer, &count, digest, err);
    if (rc == GP_OK && (count != row->decisions || strcmp(digest, row->digest) != 0)) {
        if (j->events_differing++ == 0)
            j->first_differing = row->seq;
    }
    return rc;
}

static gp_err replay_one(void *ctx, const gp_store_event *row, gp_error *err)
{
    gp_journal *j = ctx;
    gp_event ev;
    bool logged;
    gp_err rc = gp_event_decode(row->kind, row->version, row->payload, row->time, &ev, err);
    if (rc == GP_OK)
        rc = gp_replayer_apply(&j->replayer, &ev, GP_APPLY_REPLAY, &logged, err);
    if (rc == GP_OK && j->hooks.observe)
        j->hooks.observe(j->hooks.ctx, j->engine, &ev);
    if (rc == GP_OK && j->replayer.trust_floor_applied) {
        char quoted[GP_PATH_MAX + 8];
        gp_log(GP_LOG_WARN, "replay_trust_floor", "tenant=%s note=\"trusted below an untrusted ancestor; replayed as inherit\"",
               gp_log_quote(ev.path, quoted, sizeof quoted));
    }
    if (rc == GP_OK && row->digest)
        rc = compare_decisions(j, row, err);
    gp_replayer_settle(&j->replayer);
    gp_event_free(&ev);
    if (rc == GP_OK)
        j->last_seq = row->seq;
    if (rc != GP_OK && err) {
        char msg[GP_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "replay of event %lld (%s) failed: %s", (long long)row->seq, row->kind, err->message);
        memcpy(err->message, msg, sizeof msg);
    }
    j->events_replayed++;
    return rc;
}

static gp_err verify(gp_journal *j, gp_error *err)
{
    j->replayer.rows_checked = 0; /* a follower's takeover checks again */
    gp_err rc = gp_store_live_jobs_scan(j->store, gp_replayer_check_job, &j->replayer, err);
    return rc ? rc : gp_replayer_check_totals(&j->replayer, err);
}

/* The events after `after` into the engine, then the check. */
static gp_err replay_tail(gp_journal *j, int64_t after, gp_error *err)
{
    gp_err rc = gp_store_events_scan_after(j->store, after, replay_one, j, err);
    if (rc)
        return rc;
    if (j->events_differing > 0)
        gp_log(GP_LOG_WARN, "replay_differs", "events=%lld first_seq=%lld note=\"decisions differ from the recorded"
               " ones; gpupool-replay shows how\"", (long long)j->events_differing, (long long)j->first_differing);
    int64_t stored_next = gp_store_meta_get(j->store, "next_job_id", 1);
    if ((uint64_t)stored_next > j->replayer.next_job_id)
        j->replayer.next_job_id = (uint64_t)stored_next;
    return verify(j, err);
}

gp_err gp_journal_follow(gp_journal *j, bool check, gp_error *err)
{
    return check ? replay_tail(j, j->last_seq, err)
                 : gp_store_events_scan_after(j->store, j->last_seq, replay_one, j, err);
}

/* A fresh replayer for another try (after a snapshot that did not hold). */
static gp_err journal_reset(gp_journal *j, const gp_engine_config *cfg, gp_error *err)
{
    gp_replayer_free(&j->replayer);
    j->events_replayed = j->events_differing = j->first_differing = j->last_seq = 0;
    if (j->hooks.reset)
        j->hooks.reset(j->hooks.ctx);
    gp_err rc = gp_replayer_init(&j->replayer, cfg, err);
    j->engine = j->replayer.engine;
    return rc;
}

static void snapshot_invalid(int64_t seq, const char *why, const gp_error *err)
{
    char quoted[GP_ERROR_MESSAGE_MAX + 8];
    gp_log(GP_LOG_WARN, "snapshot_invalid", "seq=%lld stage=%s error=%s", (long long)seq, why,
           gp_log_quote(err->message, quoted, sizeof quoted));
}

/* The snapshot of event seq and the log after it; GP_OK when they hold
 * (the engine agrees with the job table), else said in the log. */
static gp_err start_from_snapshot(gp_journal *j, const gp_engine_config *cfg, int64_t seq, gp_error *err)
{
    unsigned char *bytes;
    size_t len;
    int64_t covered;
    json_t *saved = NULL;
    gp_err rc = gp_store_snapshot_get(j->store, seq, &bytes, &len, err);
    if (rc == GP_OK)
        rc = gp_replayer_snapshot_restore(&j->replayer, bytes, len, cfg, &covered, &saved, err);
    if (rc == GP_OK && covered != seq)
        rc = gp_error_set(err, GP_ERR_INVALID, "seq", "snapshot row %lld holds a snapshot of event %lld",
                          (long long)seq, (long long)covered);
    free(bytes);
    j->engine = j->replayer.engine;
    if (rc) {
        snapshot_invalid(seq, "load", err);
        json_decref(saved);
        return rc;
    }
    if (j->hooks.restored)
        j->hooks.restored(j->hooks.ctx, j->engine, saved);
    json_decref(saved);
    j->last_seq = seq;
    rc = replay_tail(j, seq, err);
    if (rc)
        snapshot_invalid(seq, "check", err);
    return rc;
}

gp_err gp_journal_open(gp_journal *j, gp_store *store, const gp_engine_config *cfg, const gp_journal_hooks *hooks,
                       gp_error *err)
{
    memset(j, 0, sizeof *j);
    j->store = store;
    if (hooks)
        j->hooks = *hooks;
    gp_err rc = gp_replayer_init(&j->replayer, cfg, err);
    if (rc)
        return rc;
    j->engine = j->replayer.engine;
    int64_t seqs[8];
    size_t n = 0;
    rc = gp_store_snapshots_list(store, seqs, 8, &n, err);
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        gp_error tried;
        if (start_from_snapshot(j, cfg, seqs[i], &tried) == GP_OK) {
            j->snapshot_seq = seqs[i];
            return GP_OK;
        }
        rc = journal_reset(j, cfg, err);
    }
    return rc ? rc : replay_tail(j, 0, err);
}

void gp_journal_close(gp_journal *j)
{
    gp_replayer_free(&j->replayer);
    memset(j, 0, sizeof *j);
}
