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
 *   replica_exit      {"id": 7, "replica": 0, "bind_time": 1795517790, "node": "h100-a-0",
 *                      "exit_code": 0, "signal": 0, "reason": "exited"}   (a node agent's report;
 *                      reason gpu_memory adds "gpu_memory_mib" and "gpu_memory_share_mib")
 *   checkpointed      {"id": 7}
 *   gpu_health        {"name": "h100-a-0", "gpu": 3, "healthy": false}
 *   job_update        {"id": 7, "hold": true, "by": "alice", "priority": 5, "time_limit_s": 7200}
 *                     (a pending job's change: "id" and at least one other; "by" with hold true only)
 *   gpu_type_declare  {"name": "H200"}   (an admin declared a GPU type before its nodes arrive)
 *   booking_add       {"name": "pretrain", "tenant": "research/nlp", "made_by": "alice", "gpu_types": ["H100"],
 *                      "replicas": 32, "gpus": 8, "topology": "block", "start": 1795517790,
 *                      "end": 1795690590, "lend": -1, "no_show_s": 0, "recurrence": "none", "until": 0}
 *                     (every key, as gp_booking_spec holds it; made_by and mig_profile only when set)
 *   booking_cancel    {"name": "pretrain"}   (a booking, or a series: every occurrence not final)
 *   booking_change    {"name": "pretrain", "start": ..., "end": ..., "lend": true}   ("name" and at least one)
 *   booking_allowance {"org": "research", "gpu_hours_per_week": 2000}
 *
 * Versions: a payload is read with the version it was written with.  This
 * build writes GP_EVENT_VERSION and reads 1..GP_EVENT_VERSION; logs
 * written by gpupoold before the codec existed are version 1 (the format
 * did not change).  The three kinds before job_update came with node agents,
 * job_update with hold and update of pending jobs, gpu_type_declare with
 * declared GPU types, the four booking_ kinds with advance booking; they are
 * new kinds, not a new version of old ones, so every version-1 payload
 * still reads as before (a build without them refuses the kind by name).
 * docs/event-log.md keeps the list.
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
#include "util/exit_reason.h"

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
    GP_EV_REPLICA_EXIT,
    GP_EV_CHECKPOINTED,
    GP_EV_GPU_HEALTH,
    GP_EV_JOB_UPDATE,
    GP_EV_GPU_TYPE_DECLARE,
    GP_EV_BOOKING_ADD,
    GP_EV_BOOKING_CANCEL,
    GP_EV_BOOKING_CHANGE,
    GP_EV_BOOKING_ALLOWANCE,
    GP_EV_KINDS
} gp_event_kind;

typedef struct gp__event_storage gp__event_storage;

/* One replica's end (replica_exit).  bind_time names the run: a report
 * about an earlier run of a requeued job is recognised as stale. */
typedef struct gp_replica_exit {
    uint64_t job_id;
    int replica;
    int64_t bind_time;
    char node[GP_NAME_MAX];
    int exit_code;                     /* 0..255 */
    int signal;                        /* 0 = none, else 1..64 */
    gp_exit_reason reason;
    int64_t gpu_memory_mib;            /* gpu_memory: what its processes used (MiB), 0 otherwise */
    int64_t gpu_memory_share_mib;      /* gpu_memory: its share (MiB), 0 otherwise */
} gp_replica_exit;

/* Did the replica end in failure (anything but exit code 0 by itself)? */
bool gp_replica_exit_failed(const gp_replica_exit *x);
/* Reads a replica_exit payload (strict, as every decoder here). */
gp_err gp_replica_exit_parse(const json_t *payload, gp_replica_exit *out, gp_error *err);

/* One event; only the fields of its kind are read. */
typedef struct gp_event {
    gp_event_kind kind;
    int64_t time;
    gp_job_request *job;          /* submit (job->spec.id set) */
    uint64_t job_id;              /* cancel, checkpointed, job_update */
    const gp_job_update *update;  /* job_update */
    const char *path;             /* tenant_set, tenant_remove */
    const gp_tenant_spec *tenant; /* tenant_set */
    const gp_node_spec *node;     /* node_add */
    const char *name;             /* node_lost, node_drain, gpu_health: the node; pool_set: the pool;
                                     gpu_type_declare: the type; booking_cancel, booking_change: the
                                     booking; booking_allowance: the org */
    bool drain;                   /* node_drain */
    int gpu_index;                /* gpu_health */
    bool healthy;                 /* gpu_health */
    const gp_replica_exit *exit;  /* replica_exit */
    const gp_pool_spec *pool;     /* pool_set */
    int64_t seconds;              /* clock_resolution; booking_allowance: GPU-hours per week */
    const gp_booking_spec *booking;          /* booking_add */
    const gp_booking_change *booking_change; /* booking_change (ev->name: the booking) */
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
