/* container_spec.h - what a job asks of its container, what its tenant
 * allows, and the check between them (issue 31; docs/api.md "Containers").
 *
 * A job may name an image and mounts (the spec's "image", "mounts",
 * "shm_mib", "read_only_root", "network"); its tenant's policy (the tenant
 * spec's "container", "image_sources", "volumes", "allow_userns") says
 * whether it must, which images it may, and which host folders it may
 * mount.  The codec here reads and writes both; spec_json.c hands it the
 * keys it owns.  The policy is inherited down the tree like trust:
 *
 *   container      the nearest tenant that sets it; none: "required" for
 *                  an untrusted tenant, else "optional".  An untrusted
 *                  tenant takes "optional" only from a tenant at or below
 *                  the top-most one of its path that sets trust untrusted
 *                  (an admin's choice for that untrusted subtree): an
 *                  "optional" set above it does not reach it
 *   image_sources  the nearest tenant that sets it (an empty list: no
 *                  image at all); at the top: any image
 *   volumes        every ancestor's and the tenant's own; a name set nearer
 *                  hides the same name further up
 *   allow_userns   the nearest tenant that sets it; at the top: false
 *   egress         every ancestor's and the tenant's own destinations
 *                  ("10.0.0.0/8:443", "192.0.2.7", "[2001:db8::/32]:5432":
 *                  spec/net_dest.h), where its jobs may connect besides
 *                  their own tenant's replicas on the node, their gang
 *                  peers and DNS (agent/launch/netfence.c); a subtree never
 *                  loses what an ancestor opened (an admin sets both)
 *   reach_from     every ancestor's and the tenant's own tenant subtrees
 *                  ("research" stands for research and research/...:
 *                  spec/net_dest.h), whose jobs may open connections to
 *                  its jobs (one way: it reaches them no better)
 *
 * Image references: "docker://HOST[:PORT]/NAME[:TAG][@sha256:HEX]" (a tag
 * or a digest is required), "oci:/ABS/PATH[:TAG]", "dir:/ABS/PATH".
 * A source is a prefix of a reference that ends at a boundary: after
 * "docker://reg:5000/team" the image must go on with '/', and a prefix
 * past the host with ':' or '@' too, so "docker://reg/team" allows
 * "docker://reg/team/torch:2" and not "docker://reg/team-evil/x" or
 * "docker://reg:5000/...".  Paths (image paths, volumes, mount targets)
 * are absolute and normal (no "." or ".." part, no "//", no trailing
 * '/'); a mount target is never "/", nor under /proc, /sys or /dev.
 *
 * Example: research sets volumes [{datasets, /srv/datasets, read-only}]
 * and image_sources ["docker://reg.example:5000/research/"]; research/nlp
 * is untrusted.  A job of research/nlp without an image: 400 "image"
 * (containers required); with "docker://docker.io/library/busybox:1":
 * 400 "image" (not an allowed source); with image
 * "docker://reg.example:5000/research/torch:2.3" and mounts [{datasets,
 * /data}]: accepted, and its node gets source /srv/datasets, target
 * /data, read_only true.
 *
 * Ownership: gp_job_container's image and mounts are heap (freed by
 * gp_job_container_free); a gp_container_effective points into the
 * policies it was made from (they must outlive it); writers return new
 * references or add to the caller's object.
 */
#ifndef GP_SPEC_CONTAINER_SPEC_H
#define GP_SPEC_CONTAINER_SPEC_H

#include "core/types.h"
#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_IMAGE_REF_MAX 1023     /* bytes of an image reference */
#define GP_MOUNT_TARGET_MAX 1023  /* bytes of a mount's target */
#define GP_JOB_MAX_MOUNTS 16
#define GP_SHM_MAX_MIB (INT64_C(1) << 30)

/* What a job asks of its container. */
typedef struct gp_job_container {
    char *image;          /* NULL: no container */
    json_t *mounts;       /* [{"volume", "target"[, "read_only"]}] as checked; NULL: none */
    int64_t shm_mib;      /* 0: the agent's default */
    bool read_only_root;
    bool private_network; /* network "private", else "host" */
} gp_job_container;

/* Whether key is one of the job spec's container keys. */
bool gp_job_container_key(const char *key);
/* Those keys (static storage), *n of them: for "did you mean". */
const char *const *gp_job_container_keys(size_t *n);
/* Reads one of those keys into c (errors name the field: "image", "mounts", ...). */
gp_err gp_job_container_field(gp_job_container *c, const char *key, const json_t *x, gp_error *err);
/* Adds c's keys to a job's JSON (defaults left out). */
void gp_job_container_to_json(const gp_job_container *c, json_t *o);
void gp_job_container_free(gp_job_container *c);

/* A reference's syntax (above); errors name `field`. */
gp_err gp_image_ref_check(const char *ref, const char *field, gp_error *err);
/* The registry of a docker:// reference ("reg.example:5000") into host;
 * false for other transports. */
bool gp_image_registry(const char *ref, char *host, size_t cap);
/* A registry's name as a credential names it: HOST or HOST:PORT. */
bool gp_registry_name_ok(const char *host);

/* The same for a tenant spec's policy keys ("container", "image_sources",
 * "volumes", "allow_userns", "egress", "reach_from"). */
bool gp_container_policy_key(const char *key);
gp_err gp_container_policy_field(gp_container_policy *p, const char *key, const json_t *x, gp_error *err);
void gp_container_policy_to_json(const gp_container_policy *p, json_t *o);

/* A tenant's policy once inherited (above). */
typedef struct gp_container_effective {
    bool required;
    bool untrusted;
    bool any_image;                          /* no tenant of the chain sets image_sources: docker:// only */
    const gp_container_policy *sources;      /* the nearest that does (else NULL) */
    const gp_volume *volumes[GP_MAX_VOLUMES * 8]; /* nearest first; at most this many */
    size_t n_volumes;
    bool allow_userns;
    const char *egress[GP_MAX_EGRESS * 8];   /* every tenant's of the chain, nearest first, once each */
    size_t n_egress;
    const char *reach_from[GP_MAX_REACH_FROM * 8]; /* every tenant's of the chain, nearest first, once each */
    size_t n_reach_from;
} gp_container_effective;

/* chain: the policies of the tenant's path, top first (n of them);
 * untrusted: the tenant's trust; untrusted_from: the index in chain of the
 * top-most tenant that sets trust untrusted (n when none does: then no
 * container rule of the chain reaches an untrusted tenant). */
void gp_container_effective_make(const gp_container_policy *const *chain, size_t n, bool untrusted,
                                 size_t untrusted_from, gp_container_effective *out);
/* The visible volume `name`, NULL when none. */
const gp_volume *gp_container_volume(const gp_container_effective *e, const char *name);
/* May a job of `tenant` with c run under e?  400 "image" (containers
 * required, or the image is not under an allowed source) or "mounts" (a
 * volume the tenant does not see, or read-write on a read-only volume). */
gp_err gp_container_admit(const gp_container_effective *e, const char *tenant, const gp_job_container *c,
                          gp_error *err);
/* A job spec's "mounts" resolved to what its node binds: [{"source",
 * "target", "read_only"}] (a new reference); an entry whose volume is no
 * longer visible is left out and counted in *dropped. */
json_t *gp_container_mounts_resolve(const gp_container_effective *e, const json_t *mounts, size_t *dropped);
/* The policy as a tenant view shows it: "container", "image_sources"
 * (null = any), "volumes", "allow_userns", "egress", "reach_from" added to o. */
void gp_container_effective_to_json(const gp_container_effective *e, json_t *o);
/* e's egress as an assignment carries it: ["10.0.0.0/8:443", ...] (a new reference). */
json_t *gp_container_egress_json(const gp_container_effective *e);
/* e's reach_from as an assignment carries it: ["research", ...] (a new reference). */
json_t *gp_container_reach_from_json(const gp_container_effective *e);

#endif
