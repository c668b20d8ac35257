/* image_store.h - the node's content-addressed image store: images pulled
 * with skopeo into one shared OCI layout, each manifest digest unpacked
 * once with umoci, bounded by size with LRU eviction that never removes an
 * image a replica holds.
 *
 * On disk (the store's root, 0700, root's):
 *   layout/                 the ONE shared OCI layout: oci-layout, index.json
 *                           (one entry per image in the store, tagged with its
 *                           digest's hex) and blobs/sha256/ shared by digest
 *   images/HEX/rootfs       the unpacked root filesystem of manifest sha256:HEX
 *   images/HEX/image.json   {"digest", "ref", "bytes", "config": {Env, Entrypoint,
 *                           Cmd, WorkingDir, User}}; its mtime is the last use
 *   holds/HEX/HOLDER        one empty file per replica that uses the image: a
 *                           hold outlives the agent (an adopted replica keeps it)
 *   served/SERVED           -> ../images/HEX when skopeo stored a Docker manifest
 *                           converted to OCI (another digest than the one served)
 *   counters.json           {"hits", "misses", "warm"}: pulls that found the
 *                           image unpacked, that unpacked it, and hint pulls
 *   tmp/                    pulls and unpacks in progress; an image appears in
 *                           images/ by one rename, so a half-unpacked folder is
 *                           never taken for a ready one
 *   lock, locks/            flock(2) files: `lock` is shared by pulls and holds,
 *                           exclusive for eviction; locks/ref-* serialises pulls
 *                           of one reference, locks/HEX unpacks of one digest
 *
 * Ownership: gp_image_store_open allocates the store; the caller frees it
 * with gp_image_store_close.  Every other structure here is the caller's
 * (stack or static); strings passed in are borrowed for the call only.
 * Credentials in gp_image_pull_options are never logged, never put on a
 * command line (skopeo reads them from a 0600 auth file in a private
 * folder of tmp/, removed when the pull ends).
 */
#ifndef GP_AGENT_IMAGE_STORE_H
#define GP_AGENT_IMAGE_STORE_H

#include "spec/container_spec.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define GP_IMAGE_PATH_MAX 4096
/* GP_IMAGE_REF_MAX: the longest reference gpupoold accepts, in bytes (spec/container_spec.h) */
#define GP_IMAGE_DIGEST_MAX 72   /* "sha256:" and 64 hex digits, NUL */
#define GP_IMAGE_HOLDER_MAX 128  /* a replica id: [A-Za-z0-9._-] */
#define GP_IMAGE_INSECURE_MAX 8
#define GP_IMAGE_PULL_TIMEOUT_S 900

typedef struct gp_image_store gp_image_store;

/* Why a pull failed: the "reason" of its final line. */
typedef enum gp_image_failure {
    GP_IMAGE_READY = 0,
    GP_IMAGE_NOT_FOUND,    /* no such repository, tag, digest or layout */
    GP_IMAGE_UNAUTHORIZED, /* the registry refused the credentials (or their absence) */
    GP_IMAGE_NO_SPACE,     /* larger than the store's bound, an unpack past it, or the disk is full */
    GP_IMAGE_BAD_REF,      /* not docker://..., oci:/ABS/PATH[:TAG] */
    GP_IMAGE_OTHER         /* timeout, network, tools missing, ... (the message says) */
} gp_image_failure;

/* "not_found", "unauthorized", "no_space", "bad_ref", "other" ("ready" for 0). */
const char *gp_image_failure_name(gp_image_failure f);

typedef struct gp_image_pull_options {
    const char *username, *password; /* NULL: anonymous (never the node's own auth files) */
    const char *insecure[GP_IMAGE_INSECURE_MAX]; /* registries reached without TLS verification */
    size_t n_insecure;
    int timeout_s;        /* the whole pull, waits included; 0: GP_IMAGE_PULL_TIMEOUT_S */
    const char *holder;   /* non-NULL: hold the image for this replica before it is reported ready */
    bool warm;            /* a hint's pre-pull: counted as warm, not as a hit or miss */
    /* Called every 200 ms of the copy with the bytes so far (from the blobs
     * folder as it grows), whether they grew or not; may be NULL. */
    void (*progress)(void *ctx, int64_t done_bytes, int64_t total_bytes);
    void *progress_ctx;
} gp_image_pull_options;

/* A ready image. */
typedef struct gp_image {
    char digest[GP_IMAGE_DIGEST_MAX]; /* "sha256:HEX" of the manifest */
    char rootfs[GP_IMAGE_PATH_MAX];   /* ROOT/images/HEX/rootfs: share read-only */
    char config_path[GP_IMAGE_PATH_MAX]; /* ROOT/images/HEX/image.json */
    char ref[GP_IMAGE_REF_MAX + 1];       /* the reference it was first pulled by */
    int64_t bytes;                    /* unpacked size on disk */
    int64_t last_use_ms;              /* ms since the epoch: image.json's mtime */
    int holders;                      /* replicas holding it now */
    bool hit;                         /* a pull: it was unpacked already */
} gp_image;

typedef struct gp_image_counters {
    int64_t hits, misses, warm;
} gp_image_counters;

/* Opens (creating the folders, 0700) the store at root; max_bytes 0 means
 * unbounded.  On success *out is the caller's, freed by gp_image_store_close. */
gp_err gp_image_store_open(const char *root, int64_t max_bytes, gp_image_store **out, gp_error *err);
void gp_image_store_close(gp_image_store *s);

/* Pulls ref (docker://REGISTRY/NAME:TAG[@sha256:HEX] or oci:/ABS/PATH[:TAG])
 * into the store and fills *image.  The registry is always asked for the
 * manifest (with the caller's credentials), so a tenant never gets from the
 * cache an image its credentials would not fetch; when the manifest served
 * is unpacked already nothing is copied (a hit: one skopeo inspect), else
 * blobs present are not fetched again and a digest is unpacked once.  Then evicts
 * least recently used, unheld images down to the bound.  Returns
 * GP_IMAGE_READY or the failure, with a sentence in message (cap bytes). */
gp_image_failure gp_image_store_pull(gp_image_store *s, const char *ref, const gp_image_pull_options *o,
                                     gp_image *image, char *message, size_t cap);

/* holder (a replica id) uses the image digest ("sha256:HEX"): eviction
 * keeps it until every holder released it.  GP_ERR_NOT_FOUND when the image
 * is not in the store, GP_ERR_INVALID for a bad digest or holder.  Holding
 * twice is one hold; releasing what is not held is GP_OK. */
gp_err gp_image_store_hold(gp_image_store *s, const char *digest, const char *holder, gp_error *err);
gp_err gp_image_store_release(gp_image_store *s, const char *digest, const char *holder, gp_error *err);
/* Every hold of holder, whatever the image: what the agent calls when a
 * replica ended without its supervisor releasing (killed, OOM, a reboot).
 * *released counts them; GP_ERR_INVALID for a bad holder. */
gp_err gp_image_store_release_holder(gp_image_store *s, const char *holder, size_t *released, gp_error *err);

/* The images, least recently used first: *images is a malloc'd array of *n
 * the caller frees (NULL when empty).  *used_bytes: images and blobs. */
gp_err gp_image_store_list(gp_image_store *s, gp_image **images, size_t *n, int64_t *used_bytes, gp_error *err);

/* Evicts unheld images, least recently used first, until the store is
 * within bound_bytes (0: every unheld image), then removes the blobs no
 * image uses (umoci gc) and what crashed pulls left in tmp/.  Waits for
 * pulls in progress.  *removed (may be NULL) counts the images removed. */
gp_err gp_image_store_prune(gp_image_store *s, int64_t bound_bytes, size_t *removed, gp_error *err);

/* The hit and miss counters, persisted in the store (pulls are processes of
 * their own): hits / (hits + misses) is the hit rate of replicas' pulls. */
gp_err gp_image_store_counters(gp_image_store *s, gp_image_counters *out, gp_error *err);

/* Whether a pull of ref runs now (it holds the reference's lock). */
bool gp_image_store_pulling(gp_image_store *s, const char *ref);

/* The agent's way to pull: starts `AGENT image pull --store ROOT --max-gib
 * (the store's bound) --pull-timeout-s [--insecure-registry H]... [--hold
 * HOLDER] [--creds-stdin] REF` (agent_exe NULL: /proc/self/exe); the
 * credentials, when o has them, are written to its stdin as JSON and the
 * pipe closed.  *pid is the caller's to reap; *out_fd (its stdout, one JSON
 * line per step, close-on-exec) the caller's to read and close. */
gp_err gp_image_pull_spawn(gp_image_store *s, const char *agent_exe, const char *ref, const gp_image_pull_options *o,
                           pid_t *pid, int *out_fd, gp_error *err);

typedef enum gp_image_phase { GP_IMAGE_PHASE_PULLING, GP_IMAGE_PHASE_READY, GP_IMAGE_PHASE_FAILED } gp_image_phase;

/* One line of a pull child, parsed. */
typedef struct gp_image_pull_line {
    gp_image_phase phase;
    int64_t done_bytes, total_bytes;  /* pulling (total 0: not known) */
    char digest[GP_IMAGE_DIGEST_MAX]; /* ready */
    char rootfs[GP_IMAGE_PATH_MAX];   /* ready: its image.json (the config) is beside it */
    bool hit;                         /* ready */
    gp_image_failure reason;          /* failed */
    char message[512];                /* failed */
} gp_image_pull_line;

/* GP_ERR_INVALID (field "phase" or "digest") for a line that is not one. */
gp_err gp_image_pull_line_parse(const char *line, gp_image_pull_line *out, gp_error *err);

/* `gpupool-agent image pull|list|prune|release ...`: argv[0] is "image".  Exit
 * status 0 ready or done, 1 failed, 2 bad command line. */
int gp_image_main(int argc, char **argv);

#endif
