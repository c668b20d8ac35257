/* spec_json.h - jobs, tenants, nodes and pools as JSON, both ways.
 *
 * One codec per engine spec.  The parsers are what the API uses on caller
 * bodies (strict: unknown fields, wrong types and out-of-range values are
 * GP_ERR_INVALID naming the field) and what a restart uses on the event
 * log, so an event replays exactly as it was accepted.  The writers produce
 * the canonical form the event log and the store keep (every field,
 * defaults filled in, keys sorted by GP_JSON_CANONICAL).
 *
 * Job defaults (docs/api.md): kind training, replicas 1, gpus 1, no
 * gpu_types (any), cpu_millis 0, mem_mib 0, topology any, isolation
 * exclusive (or what `share` implies), priority 0, checkpoint_grace_s 30,
 * expected_runtime_s 0 (unknown), time_limit_s 0 (the tenant's default for
 * the kind), pids_max 0 (the tenant's default, else the node agent's),
 * command [], env {}; no container (the keys image, mounts, shm_mib,
 * read_only_root, network and a tenant's container, image_sources,
 * volumes, allow_userns are container_spec.h's).  A tenant's "time_limit" is an object of
 * kind -> seconds; kinds not listed take the parent's.  Its "job_defaults"
 * and "job_max" are objects of cpu_millis, mem_mib, pids_max; fields not
 * listed take the parent's (core/job_limits.c).  Logs written before
 * time limits existed lack both fields and read as 0: no limit of their own.
 *
 * Enum values are spelled as core/names.c spells them; GPU amounts are
 * exact decimals with up to three places (json_input.h).  Errors name the
 * field relative to the body ("guarantee.gpu.H100"); the config readers add
 * the file and line.
 *
 * Ownership: a gp_job_request / gp_node_request owns the strings its spec
 * points to; *_free releases them (the struct itself is the caller's).
 * Writers return new references.
 */
#ifndef GP_SPEC_SPEC_JSON_H
#define GP_SPEC_SPEC_JSON_H

#include "core/engine.h"
#include "spec/container_spec.h"

#include <jansson.h>

#define GP_JSON_CANONICAL (JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(12))

/* Bounds on what a job carries besides its spec. */
#define GP_JOB_MAX_ARGS 256
#define GP_JOB_MAX_ARG_LEN 4096
#define GP_JOB_MAX_ENV 128
#define GP_JOB_MAX_ENV_LEN 4096

typedef struct gp_job_request {
    gp_job_spec spec;
    char name[GP_NAME_MAX];
    char tenant[GP_PATH_MAX];
    char user[GP_NAME_MAX];
    char booking[GP_BOOKING_NAME_MAX + 8]; /* "booking": the tenant's booking it runs on, "" none */
    char gpu_types[GP_MAX_GPU_TYPES][GP_NAME_MAX];
    json_t *command; /* array of strings */
    json_t *env;     /* object of strings */
    json_t *env_from_secret; /* {"ENV_NAME": "secret-name"}: the tenant's (or an ancestor's) secrets; NULL none */
    gp_job_container container; /* image, mounts, ...: container_spec.h */
    uint64_t array_id;   /* "array_id": the array it is a member of (its first member's id), 0 = none */
    int64_t array_index; /* "array_index": its place in that array, 0.. */
    bool keep_running_when_partitioned; /* "keep_running_when_partitioned": its replicas on a node cut off
                                           from gpupoold run on (a requeued copy may run beside them) */
    bool wait_for_fleet; /* "wait_for_fleet": accept it even if no node or block of the fleet could ever hold
                            it (gp_engine_job_fits); how it was submitted, not part of the job: not written */
} gp_job_request;

/* allow_id: accept "id", "array_id" and "array_index" (the event log);
 * callers may not choose ids, nor make a job a member of an array. */
gp_err gp_job_request_parse(const json_t *body, bool allow_id, gp_job_request *out, gp_error *err);
json_t *gp_job_request_to_json(const gp_job_request *r);
/* A secret's name: 1..128 of [A-Za-z0-9_.-], not starting with '.'. */
bool gp_secret_name_ok(const char *name);
void gp_job_request_free(gp_job_request *r);

gp_err gp_tenant_spec_parse(const json_t *body, gp_tenant_spec *out, gp_error *err);
json_t *gp_tenant_spec_to_json(const gp_tenant_spec *s);

typedef struct gp_node_request {
    gp_node_spec spec;
    char name[GP_NAME_MAX], zone[GP_NAME_MAX], block[GP_NAME_MAX], gpu_type[GP_NAME_MAX], pool[GP_NAME_MAX];
    char uuids[GP_MAX_GPUS_PER_NODE][GP_UUID_MAX];
    const char *uuid_ptrs[GP_MAX_GPUS_PER_NODE];
    gp_sharing gpu_sharing[GP_MAX_GPUS_PER_NODE];
} gp_node_request;

/* A node: name, gpu_type and gpu_count required; zone, block and pool
 * default to "default", nvlink_domains to 1 (it must divide gpu_count),
 * sharing to exclusive; gpu_uuids and gpu_sharing, when given, list one
 * entry per GPU. */
gp_err gp_node_request_parse(const json_t *body, gp_node_request *out, gp_error *err);
/* The same node as the fleet file writes it (docs/fleet-file.md): the same
 * fields, defaults and rules, but the GPU count is spelled `gpus`.  File-only
 * fields (`count`) are the reader's and must be taken out first. */
gp_err gp_fleet_node_parse(const json_t *body, gp_node_request *out, gp_error *err);
json_t *gp_node_spec_to_json(const gp_node_spec *s);

/* A pool: name required, score (default "default"), timeslice_replicas
 * 0..8 (0 = 4), seed >= 0. */
gp_err gp_pool_parse(const json_t *body, char name[GP_NAME_MAX], gp_pool_spec *out, gp_error *err);
json_t *gp_pool_to_json(const char *name, const gp_pool_spec *s);
/* A pool's owner: a tenant path with or without its leading '/', or null
 * or "" (no owner: ""); field "owner" on error. */
gp_err gp_pool_owner_parse(const json_t *v, char owner[GP_PATH_MAX], gp_error *err);

#endif
