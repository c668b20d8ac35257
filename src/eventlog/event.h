/* event.h - the event log's codec: every logged engine event, both ways.
 *
 * gpupoold logs each engine event it accepted as (kind, time, payload):
 * the kind names the engine call, the payload is its arguments as
 * canonical JSON text (keys sorted, compact).  This file is the one place
 * that writes and reads those payloads; the daemon's store, the replay
 * tool and the fuzzers share it.
 *
 *   kind              payload (version 1)
 *   submit            the job as gp_job_request_to_json writes it, "id" included
 *   cancel            {"id": 7}
 *   tenant_set        {"path": "research/nlp", "spec": <gp_tenant_spec_to_json>}
 *   tenant_remove     {"path": "research/nlp"}
 *   node_add          <gp_node_spec_to_json>
 *   node_lost         {"name": "h100-a-0"}
 *   node_drain        {"name": "h100-a-0", "drain": true}
 *   pool_set          <gp_pool_to_json> (the pool's name inside)
 *   tick              {}
 *   clock_resolution  {"seconds": 1}
 *
 * Versions: a payload is read with the version it was written with.  This
 * build writes GP_EVENT_VERSION and reads 1..GP_EVENT_VERSION; logs
 * written by gpupoold before the codec existed are version 1 (the format
 * did not change).  docs/event-log.md keeps the list.
 *
 * Decoding is strict (unknown or missing fields, wrong types, values out
 * of range: GP_ERR_INVALID naming the field, the message naming the kind),
 * so a damaged log fails on the event that is damaged instead of
 * replaying something else.
 *
 * Ownership: an event made by the caller points at the caller's specs
 * (nothing to free).  gp_event_decode fills the event with pointers into
 * storage it allocates; gp_event_free releases it.  gp_event_encode
 * returns malloc'd text the caller frees.
 */
#ifndef GP_EVENTLOG_EVENT_H
#define GP_EVENTLOG_EVENT_H

#include "core/engine.h"
#include "spec/spec_json.h"

#include <jansson.h>

/* The payload format this build writes. */
#define GP_EVENT_VERSION 1

/* Payload text flags: canonical (compact, sorted keys) and with every
 * double written in full (%.17g), so a tenant's weight decodes to the very
 * double the engine was given. */
#define GP_EVENT_JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS)

typedef enum gp_event_kind {
    GP_EV_SUBMIT = 0,
    GP_EV_CANCEL,
    GP_EV_TENANT_SET,
    GP_EV_TENANT_REMOVE,
    GP_EV_NODE_ADD,
    GP_EV_NODE_LOST,
    GP_EV_NODE_DRAIN,
    GP_EV_POOL_SET,
    GP_EV_TICK,
    GP_EV_CLOCK_RESOLUTION,
    GP_EV_KINDS
} gp_event_kind;

typedef struct gp__event_storage gp__event_storage;

/* One event; only the fields of its kind are read. */
typedef struct gp_event {
    gp_event_kind kind;
    int64_t time;
    gp_job_request *job;          /* submit (job->spec.id set) */
    uint64_t job_id;              /* cancel */
    const char *path;             /* tenant_set, tenant_remove */
    const gp_tenant_spec *tenant; /* tenant_set */
    const gp_node_spec *node;     /* node_add */
    const char *name;             /* node_lost, node_drain: the node; pool_set: the pool */
    bool drain;                   /* node_drain */
    const gp_pool_spec *pool;     /* pool_set */
    int64_t seconds;              /* clock_resolution */
    gp__event_storage *storage;   /* what gp_event_decode allocated; NULL for caller-made events */
} gp_event;

/* "submit", "cancel", ... as the log spells them; NULL for a bad kind. */
const char *gp_event_kind_name(gp_event_kind k);
/* GP_OK and *out, or GP_ERR_INVALID (field "kind") for an unknown name. */
gp_err gp_event_kind_parse(const char *name, gp_event_kind *out, gp_error *err);

/* The payload as JSON (a new reference; NULL when out of memory). */
json_t *gp_event_payload(const gp_event *ev);
/* The payload as text, GP_EVENT_JSON_FLAGS (malloc'd; NULL when out of memory). */
char *gp_event_encode(const gp_event *ev);

/* Reads an event of `kind` written with `version`.  On error *out holds
 * nothing to free. */
gp_err gp_event_decode_json(const char *kind, int version, const json_t *payload, int64_t time, gp_event *out,
                            gp_error *err);
gp_err gp_event_decode(const char *kind, int version, const char *payload, int64_t time, gp_event *out,
                       gp_error *err);
void gp_event_free(gp_event *ev);

#endif
