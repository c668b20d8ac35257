/* event.c - the event log's codec (see event.h).
 *
 * Encoding asks the spec codec for each spec's canonical JSON; decoding
 * hands the payload to the same codec's parsers, so a spec reads back
 * exactly as it was written (tests/eventlog proves decode(encode(x)) == x
 * for every kind).  Example: gp_job_cancel of job 7 at t=100 is logged as
 * ("cancel", 100, "{\"id\":7}") and decodes to {kind CANCEL, time 100,
 * job_id 7}.
 */
#include "eventlog/event.h"

#include "eventlog/booking_event.h"

#include "spec/json_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const KIND_NAMES[GP_EV_KINDS] = {
    "submit",    "cancel",     "tenant_set", "tenant_remove", "node_add", "node_lost",
    "node_drain", "pool_set", "tick",       "clock_resolution", "replica_exit", "checkpointed",
    "gpu_health", "job_update", "gpu_type_declare", "booking_add", "booking_cancel", "booking_change",
    "booking_allowance",
};

/* What a decoded event points into. */
struct gp__event_storage {
    gp_job_request job;
    gp_tenant_spec tenant;
    gp_node_request node;
    gp_pool_spec pool;
    gp_replica_exit exit;
    gp_job_update update;
    gp_booking_event_storage booking;
    char by[GP_NAME_MAX];
    char path[GP_PATH_MAX];
    char name[GP_NAME_MAX];
};

const char *gp_event_kind_name(gp_event_kind k)
{
    return k >= 0 && k < GP_EV_KINDS ? KIND_NAMES[k] : NULL;
}

gp_err gp_event_kind_parse(const char *name, gp_event_kind *out, gp_error *err)
{
    for (int k = 0; name && k < GP_EV_KINDS; k++)
        if (strcmp(name, KIND_NAMES[k]) == 0) {
            *out = (gp_event_kind)k;
            return GP_OK;
        }
    return gp_error_set(err, GP_ERR_INVALID, "kind", "unknown event kind %s", name ? name : "(none)");
}

bool gp_replica_exit_failed(const gp_replica_exit *x)
{
    return x->reason != GP_EXIT_REASON_EXITED || x->exit_code != 0 || x->signal != 0;
}

/* ---- encode ---- */

static json_t *replica_exit_payload(const gp_replica_exit *x)
{
    const char *reason = gp_exit_reason_name(x->reason);
    if (!reason)
        return NULL;
    json_t *o = json_pack("{s:I, s:i, s:I, s:s, s:i, s:i, s:s}", "id", (json_int_t)x->job_id, "replica",
                          x->replica, "bind_time", (json_int_t)x->bind_time, "node", x->node, "exit_code",
                          x->exit_code, "signal", x->signal, "reason", reason);
    if (o && x->reason == GP_EXIT_REASON_GPU_MEMORY) { /* only then: every other payload reads as before */
        json_object_set_new(o, "gpu_memory_mib", json_integer(x->gpu_memory_mib));
        json_object_set_new(o, "gpu_memory_share_mib", json_integer(x->gpu_memory_share_mib));
    }
    return o;
}

/* Only the fields the update changes, so a replay changes only those. */
static json_t *job_update_payload(uint64_t id, const gp_job_update *u)
{
    json_t *o = json_pack("{s:I}", "id", (json_int_t)id);
    if (o && u->has_hold) {
        json_object_set_new(o, "hold", json_boolean(u->hold));
        if (u->hold)
            json_object_set_new(o, "by", json_string(u->by ? u->by : ""));
    }
    if (o && u->has_priority)
        json_object_set_new(o, "priority", json_integer(u->priority));
    if (o && u->has_time_limit)
        json_object_set_new(o, "time_limit_s", json_integer(u->time_limit_s));
    return o;
}

json_t *gp_event_payload(const gp_event *ev)
{
    switch (ev->kind) {
    case GP_EV_SUBMIT: return gp_job_request_to_json(ev->job);
    case GP_EV_CANCEL: return json_pack("{s:I}", "id", (json_int_t)ev->job_id);
    case GP_EV_TENANT_SET: return json_pack("{s:s, s:o}", "path", ev->path, "spec", gp_tenant_spec_to_json(ev->tenant));
    case GP_EV_TENANT_REMOVE: return json_pack("{s:s}", "path", ev->path);
    case GP_EV_NODE_ADD: return gp_node_spec_to_json(ev->node);
    case GP_EV_NODE_LOST:
    case GP_EV_GPU_TYPE_DECLARE: return json_pack("{s:s}", "name", ev->name);
    case GP_EV_NODE_DRAIN: return json_pack("{s:s, s:b}", "name", ev->name, "drain", ev->drain);
    case GP_EV_POOL_SET: return gp_pool_to_json(ev->name, ev->pool);
    case GP_EV_TICK: return json_object();
    case GP_EV_CLOCK_RESOLUTION: return json_pack("{s:I}", "seconds", (json_int_t)ev->seconds);
    case GP_EV_REPLICA_EXIT: return replica_exit_payload(ev->exit);
    case GP_EV_CHECKPOINTED: return json_pack("{s:I}", "id", (json_int_t)ev->job_id);
    case GP_EV_GPU_HEALTH:
        return json_pack("{s:s, s:i, s:b}", "name", ev->name, "gpu", ev->gpu_index, "healthy", ev->healthy);
    case GP_EV_JOB_UPDATE: return job_update_payload(ev->job_id, ev->update);
    case GP_EV_BOOKING_ADD:
    case GP_EV_BOOKING_CANCEL:
    case GP_EV_BOOKING_CHANGE:
    case GP_EV_BOOKING_ALLOWANCE: return gp_booking_event_payload(ev);
    default: return NULL;
    }
}

char *gp_event_encode(const gp_event *ev)
{
    json_t *p = gp_event_payload(ev);
    char *text = p ? json_dumps(p, GP_EVENT_JSON_FLAGS) : NULL;
    json_decref(p);
    return text;
}

/* ---- decode ---- */

/* The payload is an object whose keys are all among `keys`. */
gp_err gp__event_only_keys(const json_t *p, const char *const *keys, int n, gp_error *err)
{
    gp_err rc = gp_json_object(p, "payload", err);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)p, key, v) {
        int k = 0;
        while (k < n && strcmp(key, keys[k]) != 0)
            k++;
        if (rc == GP_OK && k == n)
            rc = gp_json_unknown_field("payload", key, err);
    }
    return rc;
}

/* Reads the payload's fields of a small event: each key must be one of
 * `keys`, and all of them must be present. */
gp_err gp__event_expect_keys(const json_t *p, const char *const *keys, int n, gp_error *err)
{
    gp_err rc = gp__event_only_keys(p, keys, n, err);
    for (int k = 0; rc == GP_OK && k < n; k++)
        if (!json_object_get(p, keys[k]))
            rc = gp_error_set(err, GP_ERR_INVALID, keys[k], "payload.%s is required", keys[k]);
    return rc;
}

static gp_err decode_small(const json_t *p, gp_event *ev, gp__event_storage *st, gp_error *err)
{
    static const char *const ID[] = {"id"}, *const PATH[] = {"path"}, *const NAME[] = {"name"},
                             *const DRAIN[] = {"name", "drain"}, *const SECONDS[] = {"seconds"};
    int64_t n = 0;
    gp_err rc;
    switch (ev->kind) {
    case GP_EV_CANCEL:
    case GP_EV_CHECKPOINTED:
        if ((rc = gp__event_expect_keys(p, ID, 1, err)) || (rc = gp_json_int(json_object_get(p, "id"), "id", 1, INT64_MAX, &n, err)))
            return rc;
        ev->job_id = (uint64_t)n;
        return GP_OK;
    case GP_EV_TENANT_REMOVE:
        if ((rc = gp__event_expect_keys(p, PATH, 1, err)))
            return rc;
        ev->path = st->path;
        return gp_json_string(json_object_get(p, "path"), "path", GP_PATH_MAX - 1, st->path, GP_PATH_MAX, err);
    case GP_EV_NODE_LOST:
    case GP_EV_GPU_TYPE_DECLARE:
    case GP_EV_NODE_DRAIN:
        if ((rc = gp__event_expect_keys(p, ev->kind == GP_EV_NODE_DRAIN ? DRAIN : NAME, ev->kind == GP_EV_NODE_DRAIN ? 2 : 1, err)))
            return rc;
        ev->name = st->name;
        if (ev->kind == GP_EV_NODE_DRAIN && (rc = gp_json_bool(json_object_get(p, "drain"), "drain", &ev->drain, err)))
            return rc;
        return gp_json_string(json_object_get(p, "name"), "name", GP_NAME_MAX - 1, st->name, GP_NAME_MAX, err);
    case GP_EV_TICK:
        return gp__event_expect_keys(p, NULL, 0, err);
    case GP_EV_CLOCK_RESOLUTION:
        if ((rc = gp__event_expect_keys(p, SECONDS, 1, err)) ||
            (rc = gp_json_int(json_object_get(p, "seconds"), "seconds", 0, INT64_MAX, &n, err)))
            return rc;
        ev->seconds = n;
        return GP_OK;
    default:
        return gp_error_set(err, GP_ERR_INVALID, "kind", "not a small event");
    }
}

static gp_err decode_tenant_set(const json_t *p, gp_event *ev, gp__event_storage *st, gp_error *err)
{
    static const char *const KEYS[] = {"path", "spec"};
    gp_err rc = gp__event_expect_keys(p, KEYS, 2, err);
    if (rc == GP_OK)
        rc = gp_json_string(json_object_get(p, "path"), "path", GP_PATH_MAX - 1, st->path, GP_PATH_MAX, err);
    if (rc == GP_OK)
        rc = gp_tenant_spec_parse(json_object_get(p, "spec"), &st->tenant, err);
    ev->path = st->path;
    ev->tenant = &st->tenant;
    return rc;
}

static gp_err decode_gpu_health(const json_t *p, gp_event *ev, gp__event_storage *st, gp_error *err)
{
    static const char *const KEYS[] = {"name", "gpu", "healthy"};
    int64_t gpu = 0;
    gp_err rc = gp__event_expect_keys(p, KEYS, 3, err);
    if (rc == GP_OK)
        rc = gp_json_string(json_object_get(p, "name"), "name", GP_NAME_MAX - 1, st->name, GP_NAME_MAX, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "gpu"), "gpu", 0, GP_MAX_GPUS_PER_NODE - 1, &gpu, err);
    if (rc == GP_OK)
        rc = gp_json_bool(json_object_get(p, "healthy"), "healthy", &ev->healthy, err);
    ev->name = st->name;
    ev->gpu_index = (int)gpu;
    return rc;
}

/* gpu_memory's two numbers: required with that reason, refused with another. */
static gp_err gpu_memory_fields(const json_t *p, gp_replica_exit *x, gp_error *err)
{
    static const char *const KEYS[] = {"gpu_memory_mib", "gpu_memory_share_mib"};
    int64_t *values[] = {&x->gpu_memory_mib, &x->gpu_memory_share_mib};
    gp_err rc = GP_OK;
    for (int k = 0; rc == GP_OK && k < 2; k++) {
        const json_t *v = json_object_get(p, KEYS[k]);
        if (x->reason != GP_EXIT_REASON_GPU_MEMORY && v)
            rc = gp_error_set(err, GP_ERR_INVALID, KEYS[k], "payload.%s is only for reason gpu_memory", KEYS[k]);
        else if (x->reason == GP_EXIT_REASON_GPU_MEMORY)
            rc = gp_json_int(v, KEYS[k], 0, INT64_C(1) << 40, values[k], err);
    }
    return rc;
}

gp_err gp_replica_exit_parse(const json_t *p, gp_replica_exit *x, gp_error *err)
{
    static const char *const KEYS[] = {"id", "replica", "bind_time", "node", "exit_code", "signal", "reason"};
    int64_t id = 0, replica = 0, bind_time = 0, code = 0, sig = 0;
    char reason[32];
    json_t *base = json_is_object(p) ? json_copy((json_t *)p) : NULL; /* the keys every reason has */
    json_object_del(base, "gpu_memory_mib");
    json_object_del(base, "gpu_memory_share_mib");
    x->gpu_memory_mib = x->gpu_memory_share_mib = 0;
    gp_err rc = gp__event_expect_keys(base ? base : p, KEYS, 7, err);
    json_decref(base);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "id"), "id", 1, INT64_MAX, &id, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "replica"), "replica", 0, GP_MAX_REPLICAS - 1, &replica, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "bind_time"), "bind_time", 0, INT64_MAX, &bind_time, err);
    if (rc == GP_OK)
        rc = gp_json_string(json_object_get(p, "node"), "node", GP_NAME_MAX - 1, x->node, sizeof x->node, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "exit_code"), "exit_code", 0, 255, &code, err);
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "signal"), "signal", 0, 64, &sig, err);
    if (rc == GP_OK)
        rc = gp_json_string(json_object_get(p, "reason"), "reason", sizeof reason - 1, reason, sizeof reason, err);
    if (rc == GP_OK && !gp_exit_reason_parse(reason, &x->reason)) {
        char names[128];
        gp_exit_reason_list(names, sizeof names);
        rc = gp_error_set(err, GP_ERR_INVALID, "reason", "reason must be %s, got %s", names, reason);
    }
    if (rc == GP_OK)
        rc = gpu_memory_fields(p, x, err);
    x->job_id = (uint64_t)id;
    x->replica = (int)replica;
    x->bind_time = bind_time;
    x->exit_code = (int)code;
    x->signal = (int)sig;
    return rc;
}

static gp_err decode_job_update(const json_t *p, gp_event *ev, gp__event_storage *st, gp_error *err)
{
    static const char *const KEYS[] = {"id", "hold", "by", "priority", "time_limit_s"};
    gp_job_update *u = &st->update;
    int64_t id = 0, priority = 0;
    gp_err rc = gp__event_only_keys(p, KEYS, 5, err); /* "id" and the fields it changes, nothing else */
    if (rc == GP_OK)
        rc = gp_json_int(json_object_get(p, "id"), "id", 1, INT64_MAX, &id, err);
    u->has_hold = json_object_get(p, "hold") != NULL;
    if (rc == GP_OK && u->has_hold)
        rc = gp_json_bool(json_object_get(p, "hold"), "hold", &u->hold, err);
    if (rc == GP_OK && (u->has_hold && u->hold) != (json_object_get(p, "by") != NULL))
        rc = gp_error_set(err, GP_ERR_INVALID, "by", "payload.by comes with hold true, and only then");
    if (rc == GP_OK && u->has_hold && u->hold)
        rc = gp_json_string(json_object_get(p, "by"), "by", GP_NAME_MAX - 1, st->by, sizeof st->by, err);
    u->by = st->by;
    u->has_priority = json_object_get(p, "priority") != NULL;
    if (rc == GP_OK && u->has_priority)
        rc = gp_json_int(json_object_get(p, "priority"), "priority", GP_PRIORITY_MIN, GP_PRIORITY_MAX, &priority, err);
    u->priority = (int)priority;
    u->has_time_limit = json_object_get(p, "time_limit_s") != NULL;
    if (rc == GP_OK && u->has_time_limit)
        rc = gp_json_int(json_object_get(p, "time_limit_s"), "time_limit_s", 0, GP_TIME_LIMIT_MAX_S, &u->time_limit_s,
                         err);
    if (rc == GP_OK && !u->has_hold && !u->has_priority && !u->has_time_limit)
        rc = gp_error_set(err, GP_ERR_INVALID, "payload", "payload changes nothing");
    ev->job_id = (uint64_t)id;
    ev->update = u;
    return rc;
}

static gp_err decode_payload(const json_t *p, gp_event *ev, gp__event_storage *st, gp_error *err)
{
    gp_err rc;
    switch (ev->kind) {
    case GP_EV_SUBMIT:
        rc = gp_json_object(p, "payload", err);
        if (rc == GP_OK)
            rc = gp_job_request_parse(p, true, &st->job, err);
        if (rc == GP_OK && st->job.spec.id == 0)
            rc = gp_error_set(err, GP_ERR_INVALID, "id", "payload.id is required");
        ev->job = &st->job;
        return rc;
    case GP_EV_TENANT_SET: return decode_tenant_set(p, ev, st, err);
    case GP_EV_JOB_UPDATE: return decode_job_update(p, ev, st, err);
    case GP_EV_NODE_ADD:
        ev->node = &st->node.spec;
        return gp_node_request_parse(p, &st->node, err);
    case GP_EV_POOL_SET:
        ev->name = st->name;
        ev->pool = &st->pool;
        return gp_pool_parse(p, st->name, &st->pool, err);
    case GP_EV_REPLICA_EXIT:
        ev->exit = &st->exit;
        return gp_replica_exit_parse(p, &st->exit, err);
    case GP_EV_GPU_HEALTH: return decode_gpu_health(p, ev, st, err);
    case GP_EV_BOOKING_ADD:
    case GP_EV_BOOKING_CANCEL:
    case GP_EV_BOOKING_CHANGE:
    case GP_EV_BOOKING_ALLOWANCE: return gp_booking_event_decode(p, ev, &st->booking, err);
    default: return decode_small(p, ev, st, err);
    }
}

/* Prefixes the error with what was being read: "event submit: ...". */
static gp_err decode_failed(const char *kind, gp_err rc, gp_error *err)
{
    if (err) {
        char msg[GP_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s event: %s", kind, err->message);
        memcpy(err->message, msg, sizeof msg);
    }
    return rc;
}

gp_err gp_event_decode_json(const char *kind, int version, const json_t *payload, int64_t time, gp_event *out,
                            gp_error *err)
{
    memset(out, 0, sizeof *out);
    out->time = time;
    gp_err rc = gp_event_kind_parse(kind, &out->kind, err);
    if (rc)
        return rc;
    if (version < 1 || version > GP_EVENT_VERSION)
        return gp_error_set(err, GP_ERR_INVALID, "version", "event payload version %d is not one this build reads (1..%d)",
                            version, GP_EVENT_VERSION);
    out->storage = calloc(1, sizeof *out->storage);
    if (!out->storage)
        return gp_error_set(err, GP_ERR_NOMEM, "payload", "out of memory");
    rc = decode_payload(payload, out, out->storage, err);
    if (rc != GP_OK) {
        gp_event_free(out);
        return decode_failed(kind, rc, err);
    }
    return GP_OK;
}

gp_err gp_event_decode(const char *kind, int version, const char *payload, int64_t time, gp_event *out,
                       gp_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *p = payload ? json_loads(payload, JSON_DECODE_ANY, &jerr) : NULL;
    if (!p)
        return gp_error_set(err, GP_ERR_INVALID, "payload", "%s event: payload is not JSON: %s", kind ? kind : "?",
                            payload ? jerr.text : "missing");
    gp_err rc = gp_event_decode_json(kind, version, p, time, out, err);
    json_decref(p);
    return rc;
}

void gp_event_free(gp_event *ev)
{
    if (ev->storage)
        gp_job_request_free(&ev->storage->job);
    free(ev->storage);
    memset(ev, 0, sizeof *ev);
}
