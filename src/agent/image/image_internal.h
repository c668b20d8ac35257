/* image_internal.h - what the image store's files share and nobody else
 * sees: the store's struct, its locks, the shared layout's index, and the
 * runner of skopeo and umoci (image_run.c).
 *
 * Ownership: as image_store.h; buffers are the caller's.
 */
#ifndef GP_AGENT_IMAGE_INTERNAL_H
#define GP_AGENT_IMAGE_INTERNAL_H

#include "agent/image/image_store.h"

#include <jansson.h>

struct gp_image_store {
    char root[GP_IMAGE_PATH_MAX - 200]; /* room for the paths below it */
    int64_t max_bytes;
};

/* ROOT/rel into out (GP_IMAGE_PATH_MAX). */
void gp__image_path(const gp_image_store *s, char *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Milliseconds on the monotonic clock. */
int64_t gp__image_now_ms(void);

/* flock(op) on the file at path (created 0600), waiting until deadline_ms
 * (monotonic; 0: forever).  The fd holding the lock, or -1 (errno). */
int gp__image_lock(const char *path, int op, int64_t deadline_ms);
void gp__image_unlock(int fd);

/* "sha256:" and 64 lowercase hex digits; *hex points at the digits. */
bool gp__image_digest_valid(const char *digest, const char **hex);

/* A replica id as a hold's file name: 1..127 of [A-Za-z0-9._-], no leading '.'. */
bool gp__image_holder_valid(const char *holder);

/* Adds (idempotent) or removes the manifest's entry, tagged with its hex,
 * in layout/index.json, under locks/index. */
bool gp__image_index_add(gp_image_store *s, json_t *descriptor, const char *hex);
bool gp__image_index_remove(gp_image_store *s, const char *hex);

/* Adds one to counters.json's field ("hits", "misses", "warm"). */
void gp__image_count(gp_image_store *s, const char *field);

/* Evicts as gp_image_store_prune, never the image keep_hex (may be NULL);
 * the caller holds the store's lock exclusively.  True when the store is
 * within bound_bytes after it. */
bool gp__image_evict(gp_image_store *s, int64_t bound_bytes, const char *keep_hex, size_t *removed);

/* The image of folder images/hex into *im; false when it is not one. */
bool gp__image_load(gp_image_store *s, const char *hex, gp_image *im);

/* umoci gc of the shared layout: the blobs no index entry reaches go; the
 * caller holds the store's lock exclusively. */
void gp__image_blobs_gc(gp_image_store *s);

/* The size of a folder tree, each entry rounded up to 4 KiB: st_size, not
 * st_blocks, which a file system's preallocation makes vary; 0 when absent. */
int64_t gp__image_tree_bytes(const char *path);

/* Runs argv (argv[0] found on PATH) in envp (NULL: ours) with stdin /dev/null, capturing stdout
 * and stderr (up to cap-1 bytes each, NUL terminated; out may be NULL),
 * until it exits or deadline_ms (monotonic) passes, when its process group
 * is killed.  tick(ctx) is called about every 200 ms while it runs; a tick
 * returning false kills it too.  Returns its exit status, -1 when it could
 * not start, -2 when killed at the deadline, -3 when a tick stopped it. */
int gp__image_run(char *const argv[], char *const envp[], char *out, size_t out_cap, char *errbuf, size_t err_cap, int64_t deadline_ms,
                  bool (*tick)(void *ctx), void *ctx);

#endif
