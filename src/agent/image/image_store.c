/* image_store.c - the store's folders, locks, holds, the shared layout's
 * index, its counters, and LRU eviction (image_store.h has the layout).
 *
 * Locks, all flock(2), so a crashed holder (agent, pull child) releases
 * them by dying:
 *   ROOT/lock        shared by every pull (its copy and unpack) and every
 *                    hold; exclusive for eviction.  So eviction never
 *                    removes a blob a pull in progress has written but the
 *                    index does not list yet, and a hold is placed on an
 *                    image that exists and stays.
 *   ROOT/locks/index the read-modify-write of layout/index.json.
 *
 * Eviction, worked: bound 1 GiB; images A (600 MiB, last used 10:00, held
 * by replica r1), B (300 MiB, 10:05), C (400 MiB, 10:10, just pulled)
 * with 200 MiB of blobs shared.  1.5 GiB > 1 GiB: A is the oldest but
 * held, so B goes (its index entry, then its folder); 1.2 GiB, still over;
 * C is the one being pulled: kept; nothing else to take, so the pull of C
 * fails no_space and C is removed unless someone holds it.  `umoci gc` then
 * removes the blobs only B and C used.
 */
#define _GNU_SOURCE
#include "agent/image/image_internal.h"
#include "agent/launch/scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const FAILURE_NAMES[] = {"ready", "not_found", "unauthorized", "no_space", "bad_ref", "other"};

const char *gp_image_failure_name(gp_image_failure f)
{
    return f <= GP_IMAGE_OTHER ? FAILURE_NAMES[f] : "other";
}

void gp__image_path(const gp_image_store *s, char *out, const char *fmt, ...)
{
    int n = snprintf(out, GP_IMAGE_PATH_MAX, "%s/", s->root);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, GP_IMAGE_PATH_MAX - (size_t)n, fmt, ap);
    va_end(ap);
}

int gp__image_lock(const char *path, int op, int64_t deadline_ms)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, op | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || (deadline_ms && gp__image_now_ms() >= deadline_ms)) {
            int saved = errno == EWOULDBLOCK ? ETIMEDOUT : errno;
            close(fd);
            errno = saved;
            return -1;
        }
        usleep(20000);
    }
    return fd;
}

void gp__image_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}

bool gp__image_digest_valid(const char *digest, const char **hex)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 7 + 64)
        return false;
    for (const char *p = digest + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    if (hex)
        *hex = digest + 7;
    return true;
}

bool gp__image_holder_valid(const char *holder)
{
    size_t n = holder ? strlen(holder) : 0;
    if (n == 0 || n >= GP_IMAGE_HOLDER_MAX || holder[0] == '.')
        return false;
    return strspn(holder, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* A hold's digest and holder checked; *hex the digest's digits. */
static gp_err gp__hold_args(const char *digest, const char *holder, const char **hex, gp_error *err)
{
    if (!gp__image_digest_valid(digest, hex))
        return gp_error_set(err, GP_ERR_INVALID, "digest", "must be sha256: and 64 lowercase hex digits");
    if (!gp__image_holder_valid(holder))
        return gp_error_set(err, GP_ERR_INVALID, "holder", "must be 1..%d of [A-Za-z0-9._-], not starting with '.'",
                            GP_IMAGE_HOLDER_MAX - 1);
    return GP_OK;
}

gp_err gp_image_store_open(const char *root, int64_t max_bytes, gp_image_store **out, gp_error *err)
{
    static const char *const dirs[] = {"", "layout", "layout/blobs", "layout/blobs/sha256", "images", "holds", "tmp",
                                       "locks"};
    gp_image_store *s = calloc(1, sizeof *s);
    if (!s)
        return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    if (!root || root[0] != '/' || strlen(root) >= sizeof s->root) {
        free(s);
        return gp_error_set(err, GP_ERR_INVALID, "store", "must be an absolute path shorter than %zu bytes",
                            sizeof s->root);
    }
    strcpy(s->root, root);
    s->max_bytes = max_bytes;
    char path[GP_IMAGE_PATH_MAX];
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        gp__image_path(s, path, "%s", dirs[i]);
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            gp_error_set(err, GP_ERR_INVALID, "store", "%s: %s", path, strerror(errno));
            free(s);
            return err ? err->code : GP_ERR_INVALID;
        }
    }
    gp__image_path(s, path, "layout/oci-layout");
    FILE *f = access(path, F_OK) == 0 ? NULL : fopen(path, "w");
    if (f) {
        fputs("{\"imageLayoutVersion\":\"1.0.0\"}", f);
        fclose(f);
    }
    *out = s;
    return GP_OK;
}

void gp_image_store_close(gp_image_store *s)
{
    free(s);
}

/* Writes o to path by a temporary file and a rename. */
static bool gp__write_json(const char *path, json_t *o)
{
    char tmp[GP_IMAGE_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(o, tmp, JSON_COMPACT) != 0)
        return false;
    return rename(tmp, path) == 0;
}

/* layout/index.json (an empty index when absent or unreadable). */
static json_t *gp__index_load(const char *path)
{
    json_t *index = json_load_file(path, 0, NULL);
    if (json_is_array(json_object_get(index, "manifests")))
        return index;
    json_decref(index);
    return json_pack("{s:i, s:[]}", "schemaVersion", 2, "manifests");
}

static const char *gp__entry_name(json_t *entry)
{
    return json_string_value(json_object_get(json_object_get(entry, "annotations"), "org.opencontainers.image.ref.name"));
}

/* Loads the index and applies the change (add descriptor, or remove hex's
 * entry; NULL hex: drop every entry whose image is not in images/, what
 * a pull that died between the index and the rename left) under locks/index. */
static bool gp__index_change(gp_image_store *s, json_t *descriptor, const char *hex)
{
    char path[GP_IMAGE_PATH_MAX], lock[GP_IMAGE_PATH_MAX];
    gp__image_path(s, lock, "locks/index");
    gp__image_path(s, path, "layout/index.json");
    int fd = gp__image_lock(lock, LOCK_EX, 0);
    if (fd < 0)
        return false;
    json_t *index = gp__index_load(path), *manifests = json_object_get(index, "manifests"), *m;
    bool changed = false;
    for (size_t i = json_array_size(manifests); i-- > 0;) {
        m = json_array_get(manifests, i);
        const char *name = gp__entry_name(m);
        char ready[GP_IMAGE_PATH_MAX];
        gp__image_path(s, ready, "images/%s", name ? name : "");
        bool drop = hex ? !descriptor && name && strcmp(name, hex) == 0 : !name || access(ready, F_OK) != 0;
        if (hex && descriptor && name && strcmp(name, hex) == 0)
            descriptor = NULL; /* there already */
        if (drop)
            json_array_remove(manifests, i);
        changed |= drop;
    }
    if (descriptor)
        changed = json_array_append(manifests, descriptor) == 0;
    bool ok = !changed || gp__write_json(path, index);
    json_decref(index);
    gp__image_unlock(fd);
    return ok;
}

bool gp__image_index_add(gp_image_store *s, json_t *descriptor, const char *hex)
{
    return gp__index_change(s, descriptor, hex);
}

bool gp__image_index_remove(gp_image_store *s, const char *hex)
{
    return gp__index_change(s, NULL, hex);
}

/* Every entry whose image is not unpacked leaves the index (eviction only:
 * a pull in progress has entries of its own until its rename). */
static void gp__index_drop_orphans(gp_image_store *s)
{
    gp__index_change(s, NULL, NULL);
}

void gp__image_count(gp_image_store *s, const char *field)
{
    char path[GP_IMAGE_PATH_MAX], lock[GP_IMAGE_PATH_MAX];
    gp__image_path(s, lock, "locks/counters");
    gp__image_path(s, path, "counters.json");
    int fd = gp__image_lock(lock, LOCK_EX, 0);
    json_t *c = json_load_file(path, 0, NULL);
    if (!json_is_object(c)) {
        json_decref(c);
        c = json_object();
    }
    json_object_set_new(c, field, json_integer(json_integer_value(json_object_get(c, field)) + 1));
    gp__write_json(path, c);
    json_decref(c);
    gp__image_unlock(fd);
}

gp_err gp_image_store_counters(gp_image_store *s, gp_image_counters *out, gp_error *err)
{
    char path[GP_IMAGE_PATH_MAX];
    gp__image_path(s, path, "counters.json");
    json_t *c = json_load_file(path, 0, NULL);
    if (!c && access(path, F_OK) == 0)
        return gp_error_set(err, GP_ERR_INVALID, "store", "%s: not JSON", path);
    out->hits = json_integer_value(json_object_get(c, "hits"));
    out->misses = json_integer_value(json_object_get(c, "misses"));
    out->warm = json_integer_value(json_object_get(c, "warm"));
    json_decref(c);
    return GP_OK;
}

gp_err gp_image_store_hold(gp_image_store *s, const char *digest, const char *holder, gp_error *err)
{
    const char *hex;
    gp_err bad = gp__hold_args(digest, holder, &hex, err);
    if (bad != GP_OK)
        return bad;
    char lock[GP_IMAGE_PATH_MAX], path[GP_IMAGE_PATH_MAX];
    gp__image_path(s, lock, "lock");
    int fd = gp__image_lock(lock, LOCK_SH, 0);
    gp__image_path(s, path, "images/%s/image.json", hex);
    gp_err rc = GP_OK;
    if (fd < 0 || access(path, F_OK) != 0) {
        rc = gp_error_set(err, GP_ERR_NOT_FOUND, "digest", "%s is not in the image store", digest);
    } else {
        utimensat(AT_FDCWD, path, NULL, 0);
        gp__image_path(s, path, "holds/%s", hex);
        mkdir(path, 0700);
        gp__image_path(s, path, "holds/%s/%s", hex, holder);
        int h = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (h < 0 || fsync(h) != 0)
            rc = gp_error_set(err, GP_ERR_INVALID, "holder", "%s: %s", path, strerror(errno));
        if (h >= 0)
            close(h);
    }
    gp__image_unlock(fd);
    return rc;
}

gp_err gp_image_store_release(gp_image_store *s, const char *digest, const char *holder, gp_error *err)
{
    const char *hex;
    gp_err bad = gp__hold_args(digest, holder, &hex, err);
    if (bad != GP_OK)
        return bad;
    char path[GP_IMAGE_PATH_MAX];
    gp__image_path(s, path, "images/%s/image.json", hex);
    utimensat(AT_FDCWD, path, NULL, 0); /* released now: its last use */
    gp__image_path(s, path, "holds/%s/%s", hex, holder);
    if (unlink(path) != 0 && errno != ENOENT)
        return gp_error_set(err, GP_ERR_INVALID, "holder", "%s: %s", path, strerror(errno));
    gp__image_path(s, path, "holds/%s", hex);
    rmdir(path); /* when it was the last */
    return GP_OK;
}

gp_err gp_image_store_release_holder(gp_image_store *s, const char *holder, size_t *released, gp_error *err)
{
    char path[GP_IMAGE_PATH_MAX], digest[GP_IMAGE_DIGEST_MAX];
    *released = 0;
    if (!gp__image_holder_valid(holder))
        return gp_error_set(err, GP_ERR_INVALID, "holder", "must be 1..%d of [A-Za-z0-9._-], not starting with '.'",
                            GP_IMAGE_HOLDER_MAX - 1);
    gp__image_path(s, path, "holds");
    DIR *d = opendir(path);
    gp_err rc = GP_OK;
    for (struct dirent *e; rc == GP_OK && d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strlen(e->d_name) != 64)
            continue;
        gp__image_path(s, path, "holds/%s/%s", e->d_name, holder);
        if (access(path, F_OK) != 0)
            continue;
        snprintf(digest, sizeof digest, "sha256:%s", e->d_name);
        rc = gp_image_store_release(s, digest, holder, err);
        *released += rc == GP_OK;
    }
    if (d)
        closedir(d);
    return rc;
}

/* The number of holders of image hex. */
static int gp__holders(gp_image_store *s, const char *hex)
{
    char path[GP_IMAGE_PATH_MAX];
    gp__image_path(s, path, "holds/%s", hex);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int64_t tree_total;

static int gp__tree_add(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path, (void)flag, (void)ftw;
    tree_total += ((int64_t)st->st_size + 4095) / 4096 * 4096;
    return 0;
}

int64_t gp__image_tree_bytes(const char *path)
{
    tree_total = 0;
    nftw(path, gp__tree_add, 32, FTW_PHYS);
    return tree_total;
}

/* One image from its folder images/hex; false when it is not one. */
bool gp__image_load(gp_image_store *s, const char *hex, gp_image *im)
{
    char path[GP_IMAGE_PATH_MAX];
    memset(im, 0, sizeof *im);
    gp__image_path(s, im->config_path, "images/%s/image.json", hex);
    struct stat st;
    json_t *o = stat(im->config_path, &st) == 0 ? json_load_file(im->config_path, 0, NULL) : NULL;
    if (!o)
        return false;
    snprintf(im->digest, sizeof im->digest, "sha256:%s", hex);
    gp__image_path(s, path, "images/%s/rootfs", hex);
    snprintf(im->rootfs, sizeof im->rootfs, "%s", path);
    snprintf(im->ref, sizeof im->ref, "%s", json_string_value(json_object_get(o, "ref")) ?: "");
    im->bytes = json_integer_value(json_object_get(o, "bytes"));
    im->last_use_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    im->holders = gp__holders(s, hex);
    json_decref(o);
    return true;
}

static int gp__by_last_use(const void *a, const void *b)
{
    const gp_image *x = a, *y = b;
    return (x->last_use_ms > y->last_use_ms) - (x->last_use_ms < y->last_use_ms);
}

/* The images, least recently used first, and the blobs' bytes. */
static gp_err gp__images(gp_image_store *s, gp_image **images, size_t *n, int64_t *used, gp_error *err)
{
    char path[GP_IMAGE_PATH_MAX];
    gp__image_path(s, path, "images");
    DIR *d = opendir(path);
    if (!d)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "store", "%s: %s", path, strerror(errno));
    gp_image *list = NULL;
    size_t count = 0, cap = 0;
    gp__image_path(s, path, "layout/blobs");
    *used = gp__image_tree_bytes(path);
    for (struct dirent *e; (e = readdir(d));) {
        char digest[GP_IMAGE_DIGEST_MAX];
        snprintf(digest, sizeof digest, "sha256:%.64s", e->d_name);
        if (strlen(e->d_name) != 64 || !gp__image_digest_valid(digest, NULL))
            continue;
        if (count == cap) {
            gp_image *grown = realloc(list, (cap = cap ? 2 * cap : 8) * sizeof *list);
            if (!grown) {
                free(list);
                closedir(d);
                return gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
            }
            list = grown;
        }
        if (gp__image_load(s, e->d_name, &list[count])) {
            *used += list[count].bytes;
            count++;
        }
    }
    closedir(d);
    if (count)
        qsort(list, count, sizeof *list, gp__by_last_use);
    *images = list;
    *n = count;
    return GP_OK;
}

gp_err gp_image_store_list(gp_image_store *s, gp_image **images, size_t *n, int64_t *used_bytes, gp_error *err)
{
    return gp__images(s, images, n, used_bytes, err);
}

/* Out of the index first, then out of images/ by one rename, then removed. */
static bool gp__image_remove(gp_image_store *s, const char *hex)
{
    char from[GP_IMAGE_PATH_MAX], to[GP_IMAGE_PATH_MAX];
    if (!gp__image_index_remove(s, hex))
        return false;
    gp__image_path(s, from, "images/%s", hex);
    gp__image_path(s, to, "tmp/evicted-%s", hex);
    gp_scratch_remove(to);
    return rename(from, to) == 0 && gp_scratch_remove(to);
}

/* What crashed pulls and unpacks left in tmp/, and the lock files of
 * references and digests (a pull takes those only under the store's lock,
 * shared: none is held while eviction holds it). */
static void gp__tmp_sweep(gp_image_store *s)
{
    static const char *const folders[] = {"tmp", "locks"};
    char path[GP_IMAGE_PATH_MAX], digest[GP_IMAGE_DIGEST_MAX];
    for (size_t i = 0; i < 2; i++) {
        gp__image_path(s, path, "%s", folders[i]);
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            snprintf(digest, sizeof digest, "sha256:%.64s", e->d_name);
            bool stale = i == 0 ? strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0
                                : strncmp(e->d_name, "ref-", 4) == 0 || gp__image_digest_valid(digest, NULL);
            gp__image_path(s, path, "%s/%s", folders[i], e->d_name);
            if (stale)
                gp_scratch_remove(path);
        }
        if (d)
            closedir(d);
    }
}

void gp__image_blobs_gc(gp_image_store *s)
{
    char layout[GP_IMAGE_PATH_MAX];
    gp__image_path(s, layout, "layout");
    char *const argv[] = {"umoci", "gc", "--layout", layout, NULL};
    gp__image_run(argv, NULL, NULL, 0, NULL, 0, gp__image_now_ms() + 300000, NULL, NULL);
}

bool gp__image_evict(gp_image_store *s, int64_t bound_bytes, const char *keep_hex, size_t *removed)
{
    gp_image *images = NULL;
    size_t n = 0, gone = 0;
    int64_t used = 0;
    gp__tmp_sweep(s);
    if (gp__images(s, &images, &n, &used, NULL) != GP_OK)
        return false;
    for (size_t i = 0; i < n && (bound_bytes == 0 || used > bound_bytes); i++) {
        const char *hex = images[i].digest + 7;
        if (images[i].holders > 0 || (keep_hex && strcmp(hex, keep_hex) == 0))
            continue;
        if (gp__image_remove(s, hex)) {
            used -= images[i].bytes;
            gone++;
        }
    }
    free(images);
    if (gone || bound_bytes == 0) {
        gp__index_drop_orphans(s);
        gp__image_blobs_gc(s);
        gp__images(s, &images, &n, &used, NULL);
        free(images);
    }
    if (removed)
        *removed = gone;
    return bound_bytes == 0 || used <= bound_bytes;
}

gp_err gp_image_store_prune(gp_image_store *s, int64_t bound_bytes, size_t *removed, gp_error *err)
{
    char lock[GP_IMAGE_PATH_MAX];
    gp__image_path(s, lock, "lock");
    int fd = gp__image_lock(lock, LOCK_EX, 0);
    if (fd < 0)
        return gp_error_set(err, GP_ERR_INVALID, "store", "%s: %s", lock, strerror(errno));
    bool within = gp__image_evict(s, bound_bytes, NULL, removed);
    gp__image_unlock(fd);
    if (!within)
        return gp_error_set(err, GP_ERR_CONFLICT, "bound", "the images held by replicas alone exceed the bound");
    return GP_OK;
}
