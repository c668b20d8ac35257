/* gpu_types.h - one spelling per GPU type at gpupoold's doors, and the
 * types an admin declares before their nodes arrive.
 *
 * A type is known when a registered node has it or an admin declared it
 * (PUT /v1/gpu-types/NAME, kept in the store's gpu_types table).  A name
 * matches a known type without regard to case and is rewritten to its one
 * spelling (the engine's, i.e. the first registered; else the declared
 * one): "h100" in a quota, a job's gpu_types or a price is stored, diffed
 * and shown as the fleet's "H100".  A name that matches no known type is
 * refused like a job's (GP_ERR_INVALID naming the field, listing the known
 * types, "did you mean" when one is near).  A quota's limit does not make
 * a type known.  A declaration is also an engine event (gpu_type_declare,
 * logged), so a job may name the type at once: with no node of it yet, it
 * is refused as one no node could hold (422 never_fits "gpu_types") unless
 * it asks to wait for the fleet, and then it waits for the first node.
 *
 * All functions run on the engine thread (they read the engine and the
 * store).  Nothing here allocates what the caller must free, except where
 * said.
 */
#ifndef GP_SERVER_GPU_TYPES_H
#define GP_SERVER_GPU_TYPES_H

#include "server/server.h"
#include "spec/spec_json.h"

/* The known types, each in its one spelling. */
typedef struct gp_gpu_known {
    char names[GP_MAX_GPU_TYPES][GP_NAME_MAX];
    int64_t gpus[GP_MAX_GPU_TYPES]; /* registered GPUs of the type (0: declared only) */
    bool declared[GP_MAX_GPU_TYPES];
    size_t n;
} gp_gpu_known;

gp_err gp_gpu_types_known(gp_server *srv, gp_gpu_known *out, gp_error *err);
/* Rewrites name (GP_NAME_MAX bytes) to its known spelling; field names
 * the input in the error. */
gp_err gp_gpu_type_canon(const gp_gpu_known *k, const char *field, char *name, gp_error *err);
/* Every type of a tenant spec's guarantee, limit and user_limit; one
 * quota that names a type twice (H100 and h100) is refused. */
gp_err gp_gpu_types_spec_canon(gp_server *srv, gp_tenant_spec *spec, gp_error *err);
/* A merge patch's quota keys in their known spelling, so {"limit": {"gpu":
 * {"h100": 10}}} replaces the stored H100 (unknown names stay as sent for
 * the spec check to refuse; a null, removing a limit, needs no known type). */
gp_err gp_gpu_types_patch_canon(gp_server *srv, json_t *patch, gp_error *err);
/* A job's gpu_types. */
gp_err gp_gpu_types_job_canon(gp_server *srv, gp_job_request *req, gp_error *err);
/* An object {TYPE: value} (a price table's gpu_types) with its keys in
 * their known spelling; a type not known yet stays as written (a price
 * may come before the nodes); two keys of one type are refused (field). */
gp_err gp_gpu_types_keys_canon(gp_server *srv, json_t *obj, const char *field, gp_error *err);
/* A pending job's view (its "state", "gpu_types", "reason") whose every
 * type has no registered GPU: the reason says no node of it has joined
 * yet, rather than the engine's "no schedulable GPU", and "no_node_yet"
 * lists those types (for `gpupool why`'s advice). */
void gp_gpu_types_reason(gp_server *srv, json_t *view);
/* At the lead's start: types declared in the store that the engine does
 * not know (declared before declarations were engine events) are logged
 * as declared; tenant specs in the store that spell one type two ways
 * ({"H100": 20, "h100": 10}, written before issue 32) or in another case
 * get one key in the engine's spelling, holding the amount the engine has
 * in force (the entry written last). */
gp_err gp_gpu_types_migrate(gp_server *srv, int64_t now, gp_error *err);

#endif
