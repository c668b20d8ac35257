/* journal.c - engine events with their durable record (see journal.h).
 *
 * The shape of every call is the same:
 *
 *     engine event  --refused-->  return the engine's error, nothing written
 *         | accepted
 *     append the event (kind, now, canonical JSON payload) to the log
 *     for each decision: history rows, usage intervals
 *     for each job the decisions touched: rewrite its row from the engine
 *     forget the jobs that reached a final state
 *
 * Specs are applied to the engine in the form they are logged: a tenant
 * or node spec is written as canonical JSON and parsed back before the
 * engine sees it, so the live run and a replay feed the engine the very
 * same bytes (two parsers -- the API's and the YAML files' -- cannot
 * disagree on a default).
 *
 * Example: POST /v1/jobs (1 x 8 H100) at t=100 on an idle fleet, then the
 * batch's tick at t=100:
 *     submit   -> log "submit" {id 7,...}; job row 7 pending; history
 *                 pending->pending "submitted to research/nlp"
 *     tick     -> decisions BIND 7, TRANSITION pending->admitted,
 *                 admitted->running, USAGE_OPEN #3 -> log "tick" {};
 *                 two history rows; usage row 3 open; job row 7 running
 *                 with its placement.
 */
#include "server/journal.h"
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

/* ---- the event log ---- */

static gp_err log_event(gp_journal *j, int64_t now, const char *kind, json_t *payload, gp_error *err)
{
    if (j->replaying) {
        json_decref(payload);
        return GP_OK;
    }
    char *text = json_dumps(payload, GP_JSON_CANONICAL);
    json_decref(payload);
    if (!text)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    gp_err rc = gp_store_event_append(j->store, now, kind, text, err);
    free(text);
    j->broken = j->broken || rc != GP_OK;
    return rc;
}

/* ---- placement and the job row ---- */

/* A shared replica's share: kind and milli-GPUs, and for MIG the instance. */
static json_t *slice_json(const gp_slice *sl)
{
    json_t *o = json_pack("{s:s, s:i}", "kind", gp_isolation_name(sl->kind), "milli_gpus", sl->milli);
    if (sl->kind == GP_ISO_MIG) {
        json_object_set_new(o, "mig_profile", json_string(sl->mig_profile));
        json_object_set_new(o, "mig_start", json_integer(sl->mig_start));
    }
    return o;
}

/* One replica: its node and GPUs, each GPU once.  An exclusive replica
 * lists its whole GPUs; a shared one (MIG, MPS, time-slice) the one GPU it
 * has a share of, and the share. */
static json_t *replica_json(const gp_engine *e, const gp_job_info *info, int r, const uint32_t *gpus, size_t n,
                            const gp_slice *slices, size_t ns)
{
    json_t *list = json_array();
    uint32_t first = ns > 0 ? slices[r].gpu : gpus[(size_t)r * info->gpus];
    gp_gpu_info gi = {0};
    gp_node_info ni = {0};
    if (ns > 0) {
        if (gp_engine_gpu_get(e, first, &gi))
            json_array_append_new(list, json_string(gi.uuid));
    } else {
        for (int g = 0; g < info->gpus && n > 0; g++)
            if (gp_engine_gpu_get(e, gpus[(size_t)r * info->gpus + g], &gi))
                json_array_append_new(list, json_string(gi.uuid));
    }
    gp_engine_gpu_get(e, first, &gi);
    gp_engine_node_get(e, gi.node, &ni);
    json_t *rep = json_pack("{s:s, s:o}", "node", ni.name, "gpus", list);
    if (ns > 0)
        json_object_set_new(rep, "slice", slice_json(&slices[r]));
    return rep;
}

static json_t *placement_json(const gp_engine *e, uint64_t id, const gp_job_info *info)
{
    size_t cap = (size_t)info->replicas * (size_t)info->gpus;
    uint32_t *gpus = malloc((cap ? cap : 1) * sizeof *gpus);
    gp_slice *slices = calloc((size_t)info->replicas, sizeof *slices);
    size_t n = gpus ? gp_engine_job_gpus(e, id, gpus, cap) : 0;
    size_t ns = slices ? gp_engine_job_slices(e, id, slices, (size_t)info->replicas) : 0;
    json_t *out = n > 0 || ns > 0 ? json_array() : json_null();
    for (int r = 0; r < info->replicas && (n > 0 || ns > 0); r++)
        json_array_append_new(out, replica_json(e, info, r, gpus, n, slices, ns));
    free(gpus);
    free(slices);
    return out;
}

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
    if (w->code == GP_WAIT_RESERVATION || w->code == GP_WAIT_RESERVED || w->code == GP_WAIT_RECLAIM)
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
    json_object_set_new(view, "effective_time_limit_s",
                        info.time_limit_s > 0 ? json_integer(info.time_limit_s) : json_null());
    json_object_set_new(view, "placement", placement_json(j->engine, id, &info));
    if (info.state == GP_JOB_PENDING)
        json_object_set_new(view, "wait", wait_json(j->engine, &info.wait));
    return true;
}

static gp_err update_row(gp_journal *j, uint64_t id, const gp_job_info *info, int64_t now, gp_error *err)
{
    char reason[512];
    gp_engine_why(j->engine, id, reason, sizeof reason);
    json_t *placement = placement_json(j->engine, id, info);
    char *ptext = json_is_null(placement) ? NULL : json_dumps(placement, GP_JSON_CANONICAL);
    json_decref(placement);
    gp_store_job row = {
        .id = id,
        .state = gp_job_state_name(info->state),
        .cls = info->cls == GP_CLASS_NONE ? NULL : gp_class_name(info->cls),
        .reason = reason,
        .bind_time = info->bind_time,
        .end_time = is_final(info->state) ? now : -1,
        .updated = now,
        .placement_json = ptext,
    };
    gp_err rc = gp_store_job_update(j->store, &row, err);
    free(ptext);
    return rc;
}

/* ---- decisions ---- */

static void touch(gp_journal *j, uint64_t id)
{
    for (size_t i = 0; i < j->n_touched; i++)
        if (j->touched[i] == id)
            return;
    if (j->n_touched == j->cap_touched) {
        size_t cap = j->cap_touched ? 2 * j->cap_touched : 64;
        uint64_t *t = realloc(j->touched, cap * sizeof *t);
        if (!t)
            return; /* the row is rewritten by its next decision; replay is unaffected */
        j->touched = t;
        j->cap_touched = cap;
    }
    j->touched[j->n_touched++] = id;
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
        if (d->by_job == 0) /* not a reclaim: the reason says why (e.g. its tenant became untrusted) */
            snprintf(text, sizeof text, "%s; grace %llds; %lld GPU-s lost", d->reason, (long long)d->grace_s,
                     (long long)d->work_lost_gpu_s);
        else
            snprintf(text, sizeof text, "%s; by job %llu of %s, guarantee of %s; grace %llds; %lld GPU-s lost",
                     d->reason, (unsigned long long)d->by_job, d->by_tenant, d->guarantee_of, (long long)d->grace_s,
                     (long long)d->work_lost_gpu_s);
        return gp_store_history_add(j->store, d->job_id, d->time, "preempt", NULL, NULL, text, err);
    case GP_DEC_STOP:
        snprintf(text, sizeof text, "%s (grace %llds)", d->reason, (long long)d->grace_s);
        return gp_store_history_add(j->store, d->job_id, d->time, "stop", NULL, NULL, text, err);
    case GP_DEC_USAGE_OPEN: {
        gp_store_usage u = {.interval_id = d->usage.interval_id,
                            .job_id = d->usage.job_id,
                            .tenant = d->usage.tenant,
                            .gpu_type = d->usage.gpu_type,
                            .cls = gp_class_name(d->usage.cls),
                            .topology = gp_topology_name(d->usage.topology),
                            .milli_gpus = d->usage.milli_gpus,
                            .start = d->usage.start,
                            .end = -1};
        return gp_store_usage_open(j->store, &u, err);
    }
    case GP_DEC_USAGE_CLOSE:
        return gp_store_usage_close(j->store, d->usage.interval_id, d->usage.end, err);
    default:
        return GP_OK; /* BIND is read back with the row; DRAINED, RECONFIGURE: no table (yet) */
    }
}

/* Writes what the last event decided and forgets finished jobs. */
static gp_err after_event(gp_journal *j, int64_t now, gp_error *err)
{
    size_t n;
    const gp_decision *ds = gp_engine_decisions(j->engine, &n);
    gp_err rc = GP_OK;
    j->n_touched = 0;
    for (size_t i = 0; i < n && rc == GP_OK; i++) {
        if (ds[i].job_id != 0)
            touch(j, ds[i].job_id);
        if (!j->replaying)
            rc = materialize(j, &ds[i], err);
    }
    for (size_t i = 0; i < j->n_touched && rc == GP_OK; i++) {
        gp_job_info info;
        if (gp_engine_job_info(j->engine, j->touched[i], &info, NULL) != GP_OK)
            continue;
        if (!j->replaying)
            rc = update_row(j, j->touched[i], &info, now, err);
        if (rc == GP_OK && is_final(info.state))
            gp_engine_job_forget(j->engine, j->touched[i], NULL);
    }
    gp_engine_decisions_clear(j->engine);
    j->broken = j->broken || rc != GP_OK;
    return rc;
}

/* ---- jobs ---- */

static gp_err insert_row(gp_journal *j, const gp_job_request *req, const char *spec_text, int64_t now,
                         gp_error *err)
{
    const gp_job_spec *s = &req->spec;
    gp_store_job row = {.id = s->id,
                        .tenant = s->tenant,
                        .user = s->user,
                        .name = s->name,
                        .state = "pending",
                        .reason = "submitted",
                        .submit_time = now,
                        .bind_time = -1,
                        .end_time = -1,
                        .updated = now,
                        .spec_json = spec_text};
    return gp_store_job_insert(j->store, &row, err);
}

gp_err gp_journal_submit(gp_journal *j, gp_job_request *req, int64_t now, gp_error *err)
{
    if (!j->replaying)
        req->spec.id = j->next_job_id;
    gp_err rc = gp_engine_job_submit(j->engine, &req->spec, now, err);
    if (rc)
        return rc;
    if (req->spec.id >= j->next_job_id)
        j->next_job_id = req->spec.id + 1;
    if (j->replaying)
        return after_event(j, now, err);
    json_t *spec = gp_job_request_to_json(req);
    char *text = json_dumps(spec, GP_JSON_CANONICAL);
    json_decref(spec);
    if (!text)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    rc = gp_store_event_append(j->store, now, "submit", text, err);
    if (rc == GP_OK)
        rc = insert_row(j, req, text, now, err);
    free(text);
    if (rc == GP_OK)
        rc = gp_store_meta_set(j->store, "next_job_id", (int64_t)j->next_job_id, err);
    j->broken = j->broken || rc != GP_OK;
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

gp_err gp_journal_cancel(gp_journal *j, uint64_t id, int64_t now, gp_error *err)
{
    gp_err rc = gp_engine_job_cancel(j->engine, id, now, err);
    if (rc == GP_OK)
        rc = log_event(j, now, "cancel", json_pack("{s:I}", "id", (json_int_t)id), err);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

/* ---- tenants ---- */

gp_err gp_journal_tenant_set(gp_journal *j, const char *path, const gp_tenant_spec *spec, int64_t now,
                             gp_error *err)
{
    json_t *canon = gp_tenant_spec_to_json(spec);
    gp_tenant_spec applied;
    gp_err rc = gp_tenant_spec_parse(canon, &applied, err);
    if (rc == GP_OK)
        rc = gp_engine_tenant_set(j->engine, path, &applied, now, err);
    char *text = rc == GP_OK ? json_dumps(canon, GP_JSON_CANONICAL) : NULL;
    if (rc == GP_OK && !j->replaying) {
        rc = gp_store_tenant_put(j->store, path, text, now, err);
        j->broken = j->broken || rc != GP_OK;
    }
    free(text);
    if (rc == GP_OK)
        rc = log_event(j, now, "tenant_set", json_pack("{s:s, s:O}", "path", path, "spec", canon), err);
    json_decref(canon);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

gp_err gp_journal_tenant_remove(gp_journal *j, const char *path, int64_t now, gp_error *err)
{
    gp_err rc = gp_engine_tenant_remove(j->engine, path, now, err);
    if (rc == GP_OK && !j->replaying) {
        rc = gp_store_tenant_delete(j->store, path, err);
        j->broken = j->broken || rc != GP_OK;
    }
    if (rc == GP_OK)
        rc = log_event(j, now, "tenant_remove", json_pack("{s:s}", "path", path), err);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

/* ---- fleet ---- */

gp_err gp_journal_node_add(gp_journal *j, const gp_node_spec *spec, int64_t now, gp_error *err)
{
    json_t *canon = gp_node_spec_to_json(spec);
    gp_node_request *applied = malloc(sizeof *applied);
    gp_err rc = !canon || !applied ? gp_error_set(err, GP_ERR_INVALID, "node", "node spec cannot be written")
                                   : gp_node_request_parse(canon, applied, err);
    if (rc == GP_OK)
        rc = gp_engine_node_add(j->engine, &applied->spec, now, err);
    free(applied);
    if (rc == GP_OK)
        rc = log_event(j, now, "node_add", json_incref(canon), err);
    json_decref(canon);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

gp_err gp_journal_node_lost(gp_journal *j, const char *node, int64_t now, gp_error *err)
{
    gp_err rc = gp_engine_node_lost(j->engine, node, now, err);
    if (rc == GP_OK)
        rc = log_event(j, now, "node_lost", json_pack("{s:s}", "name", node), err);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

gp_err gp_journal_node_drain(gp_journal *j, const char *node, bool drain, int64_t now, gp_error *err)
{
    gp_err rc = gp_engine_node_drain(j->engine, node, drain, now, err);
    if (rc == GP_OK)
        rc = log_event(j, now, "node_drain", json_pack("{s:s, s:b}", "name", node, "drain", drain), err);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

gp_err gp_journal_pool_set(gp_journal *j, const char *pool, const gp_pool_spec *spec, int64_t now, gp_error *err)
{
    json_t *canon = gp_pool_to_json(pool, spec);
    json_t *last = json_object_get(j->pools, pool);
    if (last && json_equal(last, canon)) {
        json_decref(canon);
        return GP_OK;
    }
    char name[GP_NAME_MAX];
    gp_pool_spec applied;
    gp_err rc = gp_pool_parse(canon, name, &applied, err);
    if (rc == GP_OK)
        rc = gp_engine_pool_set(j->engine, name, &applied, err);
    if (rc == GP_OK) {
        json_object_set(j->pools, pool, canon);
        rc = log_event(j, now, "pool_set", json_incref(canon), err);
    }
    json_decref(canon);
    return rc;
}

gp_err gp_journal_tick(gp_journal *j, int64_t now, gp_error *err)
{
    uint64_t before = gp_engine_changes(j->engine);
    gp_err rc = gp_engine_tick(j->engine, now, err);
    if (rc)
        return rc;
    /* a tick that changed nothing a later event can see is left out of the
     * log: replaying without it reaches the same state */
    if (gp_engine_changes(j->engine) != before)
        rc = log_event(j, now, "tick", json_object(), err);
    if (rc == GP_OK)
        rc = after_event(j, now, err);
    return rc;
}

gp_err gp_journal_clock_resolution(gp_journal *j, int64_t seconds, int64_t now, gp_error *err)
{
    if (gp_engine_clock_resolution(j->engine) == seconds)
        return GP_OK;
    gp_err rc = gp_engine_clock_resolution_set(j->engine, seconds, now, err);
    if (rc == GP_OK)
        rc = log_event(j, now, "clock_resolution", json_pack("{s:I}", "seconds", (json_int_t)seconds), err);
    return rc;
}

/* ---- replay and the restart check ---- */

/* Logs written before trust became a floor may hold an explicit "trusted"
 * below an untrusted ancestor, which the engine now refuses.  Such a child
 * was never allowed to be more trusted than its parent, so it replays as
 * "inherit" (untrusted), the only reading the floor permits; the restart
 * check then says whether any placement depended on the old reading. */
static gp_err replay_tenant_set(gp_journal *j, const char *path, gp_tenant_spec *spec, int64_t time, gp_error *err)
{
    gp_err rc = gp_journal_tenant_set(j, path, spec, time, err);
    if (rc == GP_ERR_INVALID && spec->trust == GP_TRUST_TRUSTED && err && strcmp(err->field, "trust") == 0) {
        char quoted[GP_PATH_MAX + 8];
        gp_log(GP_LOG_WARN, "replay_trust_floor", "tenant=%s note=\"trusted below an untrusted ancestor; replayed as inherit\"",
               gp_log_quote(path, quoted, sizeof quoted));
        spec->trust = GP_TRUST_INHERIT;
        rc = gp_journal_tenant_set(j, path, spec, time, err);
    }
    return rc;
}

static gp_err replay_one(void *ctx, int64_t seq, int64_t time, const char *kind, const char *payload,
                         gp_error *err)
{
    gp_journal *j = ctx;
    json_error_t jerr;
    json_t *p = json_loads(payload, 0, &jerr);
    gp_err rc = GP_OK;
    if (!p)
        return gp_error_set(err, GP_ERR_INVALID, "store", "event %lld (%s) is not JSON: %s", (long long)seq, kind,
                            jerr.text);
    if (strcmp(kind, "submit") == 0) {
        gp_job_request req;
        rc = gp_job_request_parse(p, true, &req, err);
        if (rc == GP_OK)
            rc = gp_journal_submit(j, &req, time, err);
        gp_job_request_free(&req);
    } else if (strcmp(kind, "cancel") == 0) {
        rc = gp_journal_cancel(j, (uint64_t)json_integer_value(json_object_get(p, "id")), time, err);
    } else if (strcmp(kind, "tenant_set") == 0) {
        gp_tenant_spec spec;
        rc = gp_tenant_spec_parse(json_object_get(p, "spec"), &spec, err);
        if (rc == GP_OK)
            rc = replay_tenant_set(j, json_string_value(json_object_get(p, "path")), &spec, time, err);
    } else if (strcmp(kind, "tenant_remove") == 0) {
        rc = gp_journal_tenant_remove(j, json_string_value(json_object_get(p, "path")), time, err);
    } else if (strcmp(kind, "node_add") == 0) {
        gp_node_request *req = malloc(sizeof *req);
        rc = req ? gp_node_request_parse(p, req, err) : gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
        if (rc == GP_OK)
            rc = gp_journal_node_add(j, &req->spec, time, err);
        free(req);
    } else if (strcmp(kind, "node_lost") == 0) {
        rc = gp_journal_node_lost(j, json_string_value(json_object_get(p, "name")), time, err);
    } else if (strcmp(kind, "node_drain") == 0) {
        rc = gp_journal_node_drain(j, json_string_value(json_object_get(p, "name")),
                                   json_is_true(json_object_get(p, "drain")), time, err);
    } else if (strcmp(kind, "pool_set") == 0) {
        char name[GP_NAME_MAX];
        gp_pool_spec spec;
        rc = gp_pool_parse(p, name, &spec, err);
        if (rc == GP_OK)
            rc = gp_journal_pool_set(j, name, &spec, time, err);
    } else if (strcmp(kind, "clock_resolution") == 0) {
        rc = gp_journal_clock_resolution(j, json_integer_value(json_object_get(p, "seconds")), time, err);
    } else if (strcmp(kind, "tick") == 0) {
        rc = gp_journal_tick(j, time, err);
    } else {
        rc = gp_error_set(err, GP_ERR_INVALID, "store", "event %lld has unknown kind %s", (long long)seq, kind);
    }
    json_decref(p);
    if (rc != GP_OK && err) {
        char msg[GP_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "replay of event %lld (%s) failed: %s", (long long)seq, kind, err->message);
        memcpy(err->message, msg, sizeof msg);
    }
    j->events_replayed++;
    return rc;
}

typedef struct verify_ctx {
    gp_journal *j;
    size_t rows;
} verify_ctx;

static gp_err verify_row(void *ctx, uint64_t id, const char *state, const char *stored_placement, gp_error *err)
{
    verify_ctx *v = ctx;
    gp_job_info info;
    v->rows++;
    if (gp_engine_job_info(v->j->engine, id, &info, NULL) != GP_OK)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "job %llu is %s in the store but not in the replayed engine",
                            (unsigned long long)id, state);
    if (strcmp(state, gp_job_state_name(info.state)) != 0)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "job %llu is %s in the store, %s after replay",
                            (unsigned long long)id, state, gp_job_state_name(info.state));
    json_t *placement = placement_json(v->j->engine, id, &info);
    char *text = json_is_null(placement) ? NULL : json_dumps(placement, GP_JSON_CANONICAL);
    json_decref(placement);
    bool same = (!text && !stored_placement) || (text && stored_placement && strcmp(text, stored_placement) == 0);
    free(text);
    if (!same)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "job %llu has another placement after replay",
                            (unsigned long long)id);
    return GP_OK;
}

static gp_err verify(gp_journal *j, gp_error *err)
{
    verify_ctx v = {.j = j, .rows = 0};
    gp_err rc = gp_store_live_jobs_scan(j->store, verify_row, &v, err);
    if (rc)
        return rc;
    gp_engine_stats stats;
    gp_engine_stats_get(j->engine, &stats);
    if (stats.jobs != v.rows)
        return gp_error_set(err, GP_ERR_CONFLICT, "store", "the store has %zu live jobs, the replayed engine %zu",
                            v.rows, stats.jobs);
    return gp_engine_check_invariants(j->engine, err);
}

gp_err gp_journal_open(gp_journal *j, gp_store *store, const gp_engine_config *cfg, gp_error *err)
{
    memset(j, 0, sizeof *j);
    j->store = store;
    j->engine = gp_engine_new(cfg);
    j->pools = json_object();
    if (!j->engine || !j->pools)
        return gp_error_set(err, GP_ERR_NOMEM, "engine", "out of memory");
    j->next_job_id = 1;
    j->replaying = true;
    gp_err rc = gp_store_events_scan(store, replay_one, j, err);
    j->replaying = false;
    if (rc)
        return rc;
    int64_t stored_next = gp_store_meta_get(store, "next_job_id", 1);
    if ((uint64_t)stored_next > j->next_job_id)
        j->next_job_id = (uint64_t)stored_next;
    return verify(j, err);
}

void gp_journal_close(gp_journal *j)
{
    gp_engine_free(j->engine);
    json_decref(j->pools);
    free(j->touched);
    memset(j, 0, sizeof *j);
}
