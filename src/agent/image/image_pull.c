/* image_pull.c - one pull into the store (gp_image_store_pull): the
 * reference checked, skopeo asked for the manifest (its sizes are the
 * progress's total) and then to copy, the copy watched by statting the
 * blobs as they grow, the manifest digest unpacked once by umoci, the
 * image held, counted, and the store evicted down to its bound.
 *
 * The pull works in a private folder of the store, ROOT/tmp/pull-XXXXXX
 * (0700): skopeo's destination layout (its blobs go straight to the shared
 * layout's blobs folder, --dest-shared-blob-dir, its index stays here so
 * concurrent pulls never write one index.json), skopeo's HOME and XDG
 * folders (so it never reads the node's own registry credentials), the
 * 0600 auth file when the caller gave credentials, and the unpacked image,
 * which becomes ROOT/images/HEX by one rename.  The folder is removed at the
 * end; one a killed pull left is swept by the next eviction.
 *
 * Progress is measured, not read from skopeo: skopeo 1.9 prints no byte
 * counts when its output is not a terminal, but writes each blob to an
 * oci-put-blob* file of the destination layout and renames it into the
 * shared blobs folder when done.  done = the manifest's blobs present in
 * the blobs folder + the oci-put-blob* files' sizes.
 */
#define _GNU_SOURCE
#include "agent/image/image_internal.h"
#include "agent/launch/scratch.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#define GP__MAX_BLOBS 512
#define GP__OUT_MAX (1 << 20)

typedef struct gp__ref {
    bool docker;
    char source[GP_IMAGE_REF_MAX + 16]; /* skopeo's form: docker://... or oci:/path:tag */
    char repo[GP_IMAGE_REF_MAX + 1];        /* docker: REGISTRY/NAME without tag or digest */
    char host[256];                     /* docker: the registry as auth files key it */
} gp__ref;

typedef struct gp__pull {
    gp_image_store *s;
    const gp_image_pull_options *o;
    gp__ref ref;
    char dir[GP_IMAGE_PATH_MAX];        /* ROOT/tmp/pull-XXXXXX */
    char *env[12];
    char env_text[4][GP_IMAGE_PATH_MAX + 32];
    int64_t deadline_ms;
    char blobs[GP__MAX_BLOBS][65];      /* the manifest's config and layers, hex */
    int64_t blob_size[GP__MAX_BLOBS];
    size_t n_blobs;
    int64_t total, done;
    bool over_bound;
    char manifest_hex[65];              /* the served manifest's sha256, once known */
    int64_t free_at_unpack;             /* the file system's free bytes when umoci started */
    char *out, *errtext;                /* skopeo's stdout, stderr */
} gp__pull;

static const char REF_CHARS[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/:@";

/* docker://HOST/NAME[:TAG][@sha256:HEX]: repo and host filled. */
static bool gp__docker_ref(const char *rest, gp__ref *r)
{
    size_t n = strlen(rest);
    if (n == 0 || strspn(rest, REF_CHARS) != n || rest[0] == '/' || rest[0] == '-' || strstr(rest, "//"))
        return false;
    const char *at = strchr(rest, '@');
    if (at && (strchr(at + 1, '@') || !gp__image_digest_valid(at + 1, NULL)))
        return false;
    size_t repo_len = at ? (size_t)(at - rest) : n;
    snprintf(r->repo, sizeof r->repo, "%.*s", (int)repo_len, rest);
    char *colon = strrchr(r->repo, ':'), *slash = strrchr(r->repo, '/');
    if (colon && (!slash || colon > slash))
        *colon = '\0';
    const char *first_slash = strchr(r->repo, '/');
    size_t host_len = first_slash ? (size_t)(first_slash - r->repo) : 0;
    bool registry = host_len && (memchr(r->repo, '.', host_len) || memchr(r->repo, ':', host_len) ||
                                 (host_len == 9 && strncmp(r->repo, "localhost", 9) == 0));
    snprintf(r->host, sizeof r->host, "%.*s", registry ? (int)host_len : 9, registry ? r->repo : "docker.io");
    snprintf(r->source, sizeof r->source, "docker://%s", rest);
    return r->repo[0] && r->repo[strlen(r->repo) - 1] != '/';
}

/* oci:/ABS/PATH[:TAG]: no "..", no ':' in the path. */
static bool gp__oci_ref(const char *rest, gp__ref *r)
{
    const char *colon = strchr(rest, ':');
    size_t path_len = colon ? (size_t)(colon - rest) : strlen(rest);
    if (rest[0] != '/' || path_len < 2 || strstr(rest, "/../") || strstr(rest, "/./"))
        return false;
    for (const char *p = rest; *p; p++)
        if (iscntrl((unsigned char)*p))
            return false;
    const char *tag = colon ? colon + 1 : NULL;
    if (tag && (!tag[0] || strspn(tag, REF_CHARS) != strlen(tag) || strchr(tag, ':') || strchr(tag, '/')))
        return false;
    snprintf(r->source, sizeof r->source, "oci:%s", rest);
    return true;
}

static bool gp__ref_parse(const char *ref, gp__ref *r)
{
    memset(r, 0, sizeof *r);
    if (!ref || strlen(ref) > GP_IMAGE_REF_MAX)
        return false;
    if (strncmp(ref, "docker://", 9) == 0)
        return (r->docker = true) && gp__docker_ref(ref + 9, r);
    if (strncmp(ref, "oci:", 4) == 0)
        return gp__oci_ref(ref + 4, r);
    return false;
}

/* The reason skopeo's or umoci's error text gives. */
static gp_image_failure gp__classify(const char *text)
{
    static const struct {
        const char *needle;
        gp_image_failure reason;
    } table[] = {
        {"no space left", GP_IMAGE_NO_SPACE},       {"unauthorized", GP_IMAGE_UNAUTHORIZED},
        {"authentication required", GP_IMAGE_UNAUTHORIZED}, {"access to the resource is denied", GP_IMAGE_UNAUTHORIZED},
        {"manifest unknown", GP_IMAGE_NOT_FOUND},   {"name unknown", GP_IMAGE_NOT_FOUND},
        {"not found", GP_IMAGE_NOT_FOUND},          {"no such file or directory", GP_IMAGE_NOT_FOUND},
        {"invalid reference format", GP_IMAGE_BAD_REF},
    };
    for (size_t i = 0; text && i < sizeof table / sizeof *table; i++)
        if (strcasestr(text, table[i].needle))
            return table[i].reason;
    return GP_IMAGE_OTHER;
}

/* The last line of a tool's error text, its msg="..." when it has one. */
static void gp__last_line(const char *text, char *out, size_t cap)
{
    size_t n = text ? strlen(text) : 0;
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    size_t start = n;
    while (start && text[start - 1] != '\n')
        start--;
    const char *msg = n ? strstr(text + start, "msg=\"") : NULL;
    if (msg && msg < text + n) {
        start = (size_t)(msg + 5 - text);
        if (n > start && text[n - 1] == '"')
            n--;
    }
    size_t o = 0;
    for (size_t i = start; i < n && o + 1 < cap; i++)
        if (!(text[i] == '\\' && i + 1 < n && text[i + 1] == '"'))
            out[o++] = text[i]; /* skopeo's \" back to " */
    if (cap)
        out[o] = '\0';
}

static gp_image_failure gp__fail(char *message, size_t cap, gp_image_failure reason, const char *fmt, const char *arg)
{
    snprintf(message, cap, fmt, arg);
    return reason;
}

/* HOME and the XDG folders in the pull's own folder; proxies kept. */
static bool gp__pull_env(gp__pull *p)
{
    static const char *const vars[] = {"HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"};
    size_t n = 0;
    char home[GP_IMAGE_PATH_MAX];
    snprintf(home, sizeof home, "%s/home", p->dir);
    if (mkdir(home, 0700) != 0)
        return false;
    for (size_t i = 0; i < 3; i++) {
        snprintf(p->env_text[i], sizeof p->env_text[i], "%s=%s", vars[i], home);
        p->env[n++] = p->env_text[i];
    }
    snprintf(p->env_text[3], sizeof p->env_text[3], "TMPDIR=%s", p->dir);
    p->env[n++] = p->env_text[3];
    p->env[n++] = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
    for (char **e = environ; *e && n < sizeof p->env / sizeof *p->env - 1; e++)
        if (strncasecmp(*e, "https_proxy=", 12) == 0 || strncasecmp(*e, "http_proxy=", 11) == 0 ||
            strncasecmp(*e, "no_proxy=", 9) == 0)
            p->env[n++] = *e;
    p->env[n] = NULL;
    return true;
}

/* The 0600 auth file skopeo reads the credentials from (never argv). */
static bool gp__auth_file(gp__pull *p, char *path, size_t cap)
{
    const gp_image_pull_options *o = p->o;
    snprintf(path, cap, "%s/auth.json", p->dir);
    size_t len = strlen(o->username) + 1 + strlen(o->password);
    char *pair = malloc(len + 1);
    if (!pair)
        return false;
    snprintf(pair, len + 1, "%s:%s", o->username, o->password);
    gnutls_datum_t in = {(unsigned char *)pair, (unsigned)len}, b64 = {NULL, 0};
    int rc = gnutls_base64_encode2(&in, &b64);
    explicit_bzero(pair, len);
    free(pair);
    if (rc != 0)
        return false;
    json_t *doc = json_pack("{s:{s:{s:s%}}}", "auths", p->ref.host, "auth", (const char *)b64.data, (size_t)b64.size);
    gnutls_free(b64.data);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = doc && fd >= 0 && json_dumpfd(doc, fd, JSON_COMPACT) == 0;
    json_decref(doc);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* skopeo SUBCOMMAND with the credential and TLS flags, then extra args. */
static int gp__skopeo(gp__pull *p, const char *auth, bool copy, const char *a1, const char *a2, bool (*tick)(void *),
                      char *out)
{
    char *argv[16];
    size_t n = 0;
    char authflag[GP_IMAGE_PATH_MAX + 32];
    argv[n++] = "skopeo";
    argv[n++] = copy ? "copy" : "inspect";
    if (!copy)
        argv[n++] = "--raw";
    if (p->ref.docker && auth) {
        snprintf(authflag, sizeof authflag, "--%sauthfile=%s", copy ? "src-" : "", auth);
        argv[n++] = authflag;
    } else if (p->ref.docker) {
        argv[n++] = copy ? "--src-no-creds" : "--no-creds";
    }
    bool insecure = false;
    for (size_t i = 0; p->ref.docker && i < p->o->n_insecure; i++)
        insecure |= strcmp(p->o->insecure[i], p->ref.host) == 0;
    if (insecure)
        argv[n++] = copy ? "--src-tls-verify=false" : "--tls-verify=false";
    char blobs[GP_IMAGE_PATH_MAX];
    if (copy) {
        gp__image_path(p->s, blobs, "layout/blobs");
        argv[n++] = "--dest-shared-blob-dir";
        argv[n++] = blobs;
    }
    argv[n++] = (char *)a1;
    if (a2)
        argv[n++] = (char *)a2;
    argv[n] = NULL;
    return gp__image_run(argv, p->env, out, out ? GP__OUT_MAX : 0, p->errtext, 8192, p->deadline_ms, tick, p);
}

static const char *gp__goarch(void)
{
    static struct utsname u;
    uname(&u);
    if (strcmp(u.machine, "x86_64") == 0)
        return "amd64";
    if (strcmp(u.machine, "aarch64") == 0)
        return "arm64";
    return u.machine;
}

/* The digits of text's sha256: skopeo inspect --raw prints the manifest's
 * bytes as served, so this is its digest. */
static void gp__sha256_hex(const char *text, char hex[65])
{
    unsigned char d[32];
    hex[0] = '\0';
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, text, strlen(text), d) != 0)
        return;
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* The manifest's blobs and sizes (config and layers), for the progress. */
static void gp__manifest_blobs(gp__pull *p, json_t *m)
{
    json_t *layers = json_object_get(m, "layers"), *l;
    size_t i;
    json_t *all = json_array();
    json_array_append(all, json_object_get(m, "config"));
    json_array_extend(all, layers);
    json_array_foreach(all, i, l)
    {
        const char *hex, *digest = json_string_value(json_object_get(l, "digest"));
        if (p->n_blobs < GP__MAX_BLOBS && gp__image_digest_valid(digest, &hex)) {
            strcpy(p->blobs[p->n_blobs], hex);
            p->blob_size[p->n_blobs++] = json_integer_value(json_object_get(l, "size"));
            p->total += json_integer_value(json_object_get(l, "size"));
        }
    }
    json_decref(all);
}

static gp_image_failure gp__inspect(gp__pull *p, const char *auth, char *message, size_t cap);

/* A list (or index): this platform's manifest, asked for by digest. */
static gp_image_failure gp__inspect_list(gp__pull *p, json_t *list, const char *auth, char *message, size_t cap)
{
    json_t *m;
    size_t i;
    json_array_foreach(json_object_get(list, "manifests"), i, m)
    {
        json_t *platform = json_object_get(m, "platform");
        const char *os = json_string_value(json_object_get(platform, "os"));
        const char *arch = json_string_value(json_object_get(platform, "architecture"));
        const char *digest = json_string_value(json_object_get(m, "digest"));
        if (os && arch && strcmp(os, "linux") == 0 && strcmp(arch, gp__goarch()) == 0 &&
            gp__image_digest_valid(digest, NULL) && p->ref.docker) {
            snprintf(p->ref.source, sizeof p->ref.source, "docker://%s@%s", p->ref.repo, digest);
            return gp__inspect(p, auth, message, cap);
        }
    }
    return GP_IMAGE_READY; /* no total: an OCI layout's index, or no entry for us (skopeo says) */
}

/* skopeo inspect --raw: the failure when the registry refuses, else the total. */
static gp_image_failure gp__inspect(gp__pull *p, const char *auth, char *message, size_t cap)
{
    int rc = gp__skopeo(p, auth, false, p->ref.source, NULL, NULL, p->out);
    if (rc != 0) {
        gp__last_line(p->errtext, message, cap);
        if (rc == -2)
            return gp__fail(message, cap, GP_IMAGE_OTHER, "timed out asking for the manifest of %s", p->ref.source);
        return rc == -1 ? gp__fail(message, cap, GP_IMAGE_OTHER, "cannot run skopeo for %s", p->ref.source)
                        : gp__classify(p->errtext);
    }
    json_t *m = json_loads(p->out, 0, NULL);
    gp_image_failure f = GP_IMAGE_READY;
    if (json_is_array(json_object_get(m, "manifests"))) {
        f = gp__inspect_list(p, m, auth, message, cap);
    } else {
        gp__manifest_blobs(p, m);
        gp__sha256_hex(p->out, p->manifest_hex);
    }
    json_decref(m);
    return f;
}

static void gp__progress(gp__pull *p)
{
    if (p->o->progress)
        p->o->progress(p->o->progress_ctx, p->done, p->total);
}

/* Every 200 ms of the copy: the bytes so far, from the files. */
static bool gp__copy_tick(void *ctx)
{
    gp__pull *p = ctx;
    int64_t done = 0;
    char path[GP_IMAGE_PATH_MAX];
    struct stat st;
    for (size_t i = 0; i < p->n_blobs; i++) {
        gp__image_path(p->s, path, "layout/blobs/sha256/%s", p->blobs[i]);
        done += stat(path, &st) == 0 ? st.st_size : 0;
    }
    snprintf(path, sizeof path, "%s/layout", p->dir);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "oci-put-blob", 12) == 0 && fstatat(dirfd(d), e->d_name, &st, 0) == 0)
            done += st.st_size;
    }
    if (d)
        closedir(d);
    p->done = done;
    gp__progress(p); /* every tick, changed or not: a caller that keeps one value in so many ms gets the last */
    p->over_bound = p->s->max_bytes && done > p->s->max_bytes;
    return !p->over_bound;
}

static gp_image_failure gp__copy(gp__pull *p, const char *auth, char *message, size_t cap)
{
    char dest[GP_IMAGE_PATH_MAX + 16];
    snprintf(dest, sizeof dest, "oci:%s/layout:pull", p->dir);
    gp__progress(p);
    int rc = gp__skopeo(p, auth, true, p->ref.source, dest, gp__copy_tick, NULL);
    if (rc == 0) {
        gp__copy_tick(p);
        return GP_IMAGE_READY;
    }
    if (rc == -3)
        return gp__fail(message, cap, GP_IMAGE_NO_SPACE, "%s is larger than the image store's bound", p->ref.source);
    if (rc == -2)
        return gp__fail(message, cap, GP_IMAGE_OTHER, "timed out copying %s", p->ref.source);
    gp__last_line(p->errtext, message, cap);
    return gp__classify(p->errtext);
}

/* The copied manifest's descriptor, from the pull's own index.json. */
static json_t *gp__copied_descriptor(gp__pull *p, const char **hex)
{
    char path[GP_IMAGE_PATH_MAX];
    snprintf(path, sizeof path, "%s/layout/index.json", p->dir);
    json_t *index = json_load_file(path, 0, NULL);
    json_t *d = json_array_get(json_object_get(index, "manifests"), 0);
    json_t *copy = d ? json_deep_copy(d) : NULL;
    json_decref(index);
    if (!copy || !gp__image_digest_valid(json_string_value(json_object_get(copy, "digest")), hex)) {
        json_decref(copy);
        return NULL;
    }
    json_object_set_new(copy, "annotations", json_pack("{s:s}", "org.opencontainers.image.ref.name", *hex));
    return copy;
}

/* A blob of the shared layout, parsed. */
static json_t *gp__blob_json(gp_image_store *s, const char *digest)
{
    const char *hex;
    char path[GP_IMAGE_PATH_MAX];
    if (!gp__image_digest_valid(digest, &hex))
        return NULL;
    gp__image_path(s, path, "layout/blobs/sha256/%s", hex);
    return json_load_file(path, 0, NULL);
}

/* image.json: the digest, the reference, the size and the image config's
 * fields a container needs. */
static bool gp__write_image_json(gp__pull *p, const char *hex, const char *folder)
{
    char digest[GP_IMAGE_DIGEST_MAX], path[GP_IMAGE_PATH_MAX];
    snprintf(digest, sizeof digest, "sha256:%s", hex);
    json_t *manifest = gp__blob_json(p->s, digest);
    json_t *blob = gp__blob_json(p->s, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest")));
    json_t *config = json_object(), *from = json_object_get(blob, "config");
    static const char *const keys[] = {"Env", "Entrypoint", "Cmd", "WorkingDir", "User"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (json_object_get(from, keys[i]))
            json_object_set(config, keys[i], json_object_get(from, keys[i]));
    snprintf(path, sizeof path, "%s/rootfs", folder);
    json_t *o = json_pack("{s:s, s:s, s:I, s:o}", "digest", digest, "ref", p->ref.source, "bytes",
                          (json_int_t)gp__image_tree_bytes(path), "config", config);
    snprintf(path, sizeof path, "%s/image.json", folder);
    bool ok = manifest && blob && o && json_dump_file(o, path, JSON_COMPACT) == 0;
    json_decref(manifest);
    json_decref(blob);
    json_decref(o);
    return ok;
}

/* The file system's free bytes under the store, -1 unknown. */
static int64_t gp__free_bytes(const char *path)
{
    struct statvfs v;
    return statvfs(path, &v) == 0 ? (int64_t)v.f_bavail * (int64_t)v.f_frsize : -1;
}

/* Every 200 ms of umoci: the unpack has written no more than the store's
 * bound (a layer that decompresses far past its size, a gzip bomb, is
 * stopped here rather than filling the disk).  The file system's free
 * space is the cheap look; it also falls with every other writer on the
 * disk (other replicas, other pulls), so only when it fell past the bound
 * is the unpack's own tree measured, and that decides. */
static bool gp__unpack_tick(void *ctx)
{
    gp__pull *p = ctx;
    int64_t now = gp__free_bytes(p->dir);
    if (!p->s->max_bytes || p->free_at_unpack < 0 || now < 0 || p->free_at_unpack - now <= p->s->max_bytes)
        return true;
    char image[GP_IMAGE_PATH_MAX];
    snprintf(image, sizeof image, "%s/image", p->dir);
    return gp__image_tree_bytes(image) <= p->s->max_bytes;
}

/* umoci unpacks ROOT/layout:HEX into the pull's folder, which becomes
 * ROOT/images/HEX by one rename once it is whole and on disk. */
static gp_image_failure gp__unpack(gp__pull *p, const char *hex, char *message, size_t cap)
{
    char image[GP_IMAGE_PATH_MAX], rootfs[GP_IMAGE_PATH_MAX], source[GP_IMAGE_PATH_MAX + 80], final[GP_IMAGE_PATH_MAX];
    snprintf(image, sizeof image, "%s/image", p->dir);
    snprintf(rootfs, sizeof rootfs, "%s/rootfs", image);
    gp__image_path(p->s, source, "layout:%s", hex);
    if (mkdir(image, 0700) != 0)
        return gp__fail(message, cap, GP_IMAGE_OTHER, "cannot make %s", image);
    char *argv[] = {"umoci", "raw", "unpack", "--image", source, rootfs, NULL, NULL};
    if (geteuid() != 0) {
        argv[6] = rootfs;
        argv[5] = "--rootless";
    }
    p->free_at_unpack = gp__free_bytes(p->dir);
    int rc = gp__image_run(argv, NULL, NULL, 0, p->errtext, 8192, p->deadline_ms, gp__unpack_tick, p);
    if (rc == -3)
        return gp__fail(message, cap, GP_IMAGE_NO_SPACE, "unpacking %s outgrew the image store's bound",
                        p->ref.source);
    if (rc == -2)
        return gp__fail(message, cap, GP_IMAGE_OTHER, "timed out unpacking %s", p->ref.source);
    if (rc != 0) {
        gp__last_line(p->errtext, message, cap);
        gp_image_failure f = gp__classify(p->errtext);
        return f == GP_IMAGE_NO_SPACE ? f : GP_IMAGE_OTHER;
    }
    if (!gp__write_image_json(p, hex, image))
        return gp__fail(message, cap, GP_IMAGE_OTHER, "cannot write the image config of %s", p->ref.source);
    int fd = open(image, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
    gp__image_path(p->s, final, "images/%s", hex);
    if (rename(image, final) != 0)
        return gp__fail(message, cap, GP_IMAGE_OTHER, "cannot move the unpacked image to %s", final);
    return GP_IMAGE_READY;
}

/* The copied digest (p->manifest_hex) in images/: there already (a hit),
 * or, under locks/HEX while a second pull of it waits, added to the shared
 * index (umoci unpacks by its tag there) and unpacked; out of the index
 * again when the unpack fails, so `umoci gc` may take its blobs. */
static gp_image_failure gp__ensure_unpacked(gp__pull *p, json_t *descriptor, bool *hit, char *message, size_t cap)
{
    const char *hex = p->manifest_hex;
    char ready[GP_IMAGE_PATH_MAX], lock[GP_IMAGE_PATH_MAX];
    gp__image_path(p->s, ready, "images/%s", hex);
    *hit = access(ready, F_OK) == 0;
    if (*hit)
        return GP_IMAGE_READY;
    gp__image_path(p->s, lock, "locks/%s", hex);
    int fd = gp__image_lock(lock, LOCK_EX, p->deadline_ms);
    if (fd < 0)
        return gp__fail(message, cap, GP_IMAGE_OTHER, "timed out waiting for another unpack of %s", p->ref.source);
    *hit = access(ready, F_OK) == 0;
    gp_image_failure f = GP_IMAGE_READY;
    if (!*hit && !gp__image_index_add(p->s, descriptor, hex))
        f = gp__fail(message, cap, GP_IMAGE_OTHER, "cannot add %s to the layout's index", p->ref.source);
    else if (!*hit && (f = gp__unpack(p, hex, message, cap)) != GP_IMAGE_READY)
        gp__image_index_remove(p->s, hex);
    gp__image_unlock(fd);
    return f;
}

/* FNV-1a of the reference: the name of its lock. */
static uint64_t gp__ref_hash(const char *ref)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *ref; ref++)
        h = (h ^ (unsigned char)*ref) * 1099511628211ULL;
    return h;
}

/* served/SERVED -> ../images/HEX when skopeo stored another digest. */
static void gp__remember_served(gp__pull *p, const char *hex)
{
    char link[GP_IMAGE_PATH_MAX], target[100];
    if (!p->manifest_hex[0] || strcmp(p->manifest_hex, hex) == 0)
        return;
    gp__image_path(p->s, link, "served");
    mkdir(link, 0700);
    gp__image_path(p->s, link, "served/%s", p->manifest_hex);
    snprintf(target, sizeof target, "../images/%s", hex);
    unlink(link);
    if (symlink(target, link) != 0)
        return; /* only a later hit's shortcut lost */
}

/* The manifest the registry just served to these credentials is unpacked
 * already (under its digest, or converted under another): no copy needed;
 * p->manifest_hex becomes the stored digest. */
static bool gp__already_unpacked(gp__pull *p)
{
    char path[GP_IMAGE_PATH_MAX], target[100];
    if (!p->manifest_hex[0])
        return false;
    gp__image_path(p->s, path, "images/%s", p->manifest_hex);
    if (access(path, F_OK) == 0)
        return true;
    gp__image_path(p->s, path, "served/%s", p->manifest_hex);
    ssize_t n = readlink(path, target, sizeof target - 1);
    char digest[GP_IMAGE_DIGEST_MAX];
    if (n != 10 + 64 || strncmp(target, "../images/", 10) != 0 || access(path, F_OK) != 0)
        return false; /* not one, or its image evicted since */
    target[n] = '\0';
    snprintf(digest, sizeof digest, "sha256:%s", target + 10);
    if (!gp__image_digest_valid(digest, NULL))
        return false;
    snprintf(p->manifest_hex, sizeof p->manifest_hex, "%s", target + 10);
    return true;
}

/* Copy, then unpack once; p->manifest_hex becomes the
 * stored manifest's digits (skopeo converts a Docker manifest to OCI: a
 * digest of its own, remembered as served/SERVED -> ../images/HEX). */
static gp_image_failure gp__fetch(gp__pull *p, const char *auth, bool *hit, char *message, size_t cap)
{
    gp_image_failure f = gp__copy(p, auth, message, cap);
    const char *hex = NULL;
    json_t *descriptor = f == GP_IMAGE_READY ? gp__copied_descriptor(p, &hex) : NULL;
    if (f == GP_IMAGE_READY && !descriptor)
        f = gp__fail(message, cap, GP_IMAGE_OTHER, "skopeo copied no manifest of %s", p->ref.source);
    if (f == GP_IMAGE_READY) {
        gp__remember_served(p, hex);
        snprintf(p->manifest_hex, sizeof p->manifest_hex, "%s", hex);
        f = gp__ensure_unpacked(p, descriptor, hit, message, cap);
    }
    json_decref(descriptor);
    return f;
}

/* Under the store's shared lock and the reference's: ask, copy, unpack, hold. */
static gp_image_failure gp__pull_locked(gp__pull *p, gp_image *image, char *message, size_t cap)
{
    char auth[GP_IMAGE_PATH_MAX];
    bool creds = p->o->username && p->o->password && p->ref.docker;
    if (!gp__pull_env(p) || (creds && !gp__auth_file(p, auth, sizeof auth)))
        return gp__fail(message, cap, GP_IMAGE_OTHER, "cannot prepare the pull's folder %s", p->dir);
    gp_image_failure f = gp__inspect(p, creds ? auth : NULL, message, cap);
    if (f == GP_IMAGE_READY && p->s->max_bytes && p->total > p->s->max_bytes)
        f = gp__fail(message, cap, GP_IMAGE_NO_SPACE, "%s is larger than the image store's bound", p->ref.source);
    if (f == GP_IMAGE_READY && gp__already_unpacked(p))
        image->hit = true;
    else if (f == GP_IMAGE_READY)
        f = gp__fetch(p, creds ? auth : NULL, &image->hit, message, cap);
    if (f == GP_IMAGE_READY) {
        snprintf(image->digest, sizeof image->digest, "sha256:%s", p->manifest_hex);
        gp_error err;
        if (p->o->holder && gp_image_store_hold(p->s, image->digest, p->o->holder, &err) != GP_OK)
            f = gp__fail(message, cap, GP_IMAGE_OTHER, "cannot hold the image: %s", err.message);
    }
    return f;
}

/* After the pull: down to the bound, unless another pull runs (it will). */
static gp_image_failure gp__fit(gp__pull *p, gp_image *image, char *message, size_t cap)
{
    char lock[GP_IMAGE_PATH_MAX];
    gp__image_path(p->s, lock, "lock");
    int fd = p->s->max_bytes ? gp__image_lock(lock, LOCK_EX, gp__image_now_ms()) : -1;
    if (fd < 0 || gp__image_evict(p->s, p->s->max_bytes, image->digest + 7, NULL)) {
        gp__image_unlock(fd);
        return GP_IMAGE_READY;
    }
    if (p->o->holder)
        gp_image_store_release(p->s, image->digest, p->o->holder, NULL);
    char held[GP_IMAGE_PATH_MAX];
    gp__image_path(p->s, held, "holds/%s", image->digest + 7);
    if (access(held, F_OK) != 0) {
        gp__image_index_remove(p->s, image->digest + 7);
        gp__image_path(p->s, held, "images/%s", image->digest + 7);
        gp_scratch_remove(held);
        gp__image_blobs_gc(p->s);
    }
    gp__image_unlock(fd);
    return gp__fail(message, cap, GP_IMAGE_NO_SPACE, "%s does not fit the image store's bound beside the images in use",
                    p->ref.source);
}

static gp_image_failure gp__pull_run(gp__pull *p, const char *ref, gp_image *image, char *message, size_t cap)
{
    char lock[GP_IMAGE_PATH_MAX], reflock[GP_IMAGE_PATH_MAX];
    gp__image_path(p->s, lock, "lock");
    gp__image_path(p->s, reflock, "locks/ref-%016llx", (unsigned long long)gp__ref_hash(ref));
    int store_fd = gp__image_lock(lock, LOCK_SH, p->deadline_ms);
    int ref_fd = store_fd < 0 ? -1 : gp__image_lock(reflock, LOCK_EX, p->deadline_ms);
    gp_image_failure f = GP_IMAGE_READY;
    gp__image_path(p->s, p->dir, "tmp/pull-XXXXXX");
    bool made = ref_fd >= 0 && mkdtemp(p->dir);
    if (ref_fd < 0)
        f = gp__fail(message, cap, GP_IMAGE_OTHER, "timed out waiting for the image store's lock (%s)", ref);
    else if (!made)
        f = gp__fail(message, cap, GP_IMAGE_NO_SPACE, "cannot make a folder in the image store for %s", ref);
    else
        f = gp__pull_locked(p, image, message, cap);
    if (made)
        gp_scratch_remove(p->dir);
    gp__image_unlock(ref_fd);
    gp__image_unlock(store_fd);
    return f;
}

bool gp_image_store_pulling(gp_image_store *s, const char *ref)
{
    char reflock[GP_IMAGE_PATH_MAX];
    gp__image_path(s, reflock, "locks/ref-%016llx", (unsigned long long)gp__ref_hash(ref));
    int fd = gp__image_lock(reflock, LOCK_EX, gp__image_now_ms());
    gp__image_unlock(fd);
    return fd < 0;
}

gp_image_failure gp_image_store_pull(gp_image_store *s, const char *ref, const gp_image_pull_options *o,
                                     gp_image *image, char *message, size_t cap)
{
    static const gp_image_pull_options none;
    gp__pull *p = calloc(1, sizeof *p);
    memset(image, 0, sizeof *image);
    message[0] = '\0';
    if (!p)
        return gp__fail(message, cap, GP_IMAGE_OTHER, "out of memory pulling %s", ref);
    p->s = s;
    p->o = o ? o : &none;
    p->deadline_ms = gp__image_now_ms() + 1000LL * (p->o->timeout_s > 0 ? p->o->timeout_s : GP_IMAGE_PULL_TIMEOUT_S);
    p->out = malloc(GP__OUT_MAX);
    p->errtext = malloc(8192);
    gp_image_failure f = GP_IMAGE_OTHER;
    if (!gp__ref_parse(ref, &p->ref))
        f = gp__fail(message, cap, GP_IMAGE_BAD_REF, "%s", "must be docker://REGISTRY/NAME[:TAG][@sha256:HEX] or oci:/ABS/PATH[:TAG]");
    else if (p->o->holder && !gp__image_holder_valid(p->o->holder))
        f = gp__fail(message, cap, GP_IMAGE_OTHER, "%s", "the holder must be a replica id: 1..127 of [A-Za-z0-9._-]");
    else if (!p->out || !p->errtext)
        f = gp__fail(message, cap, GP_IMAGE_OTHER, "out of memory pulling %s", ref);
    else
        f = gp__pull_run(p, ref, image, message, cap);
    bool hit = image->hit;
    if (f == GP_IMAGE_READY)
        f = gp__fit(p, image, message, cap);
    if (f == GP_IMAGE_READY) {
        gp__image_count(s, p->o->warm ? "warm" : hit ? "hits" : "misses");
        char hex[65];
        snprintf(hex, sizeof hex, "%s", image->digest + 7);
        gp__image_load(s, hex, image);
        image->hit = hit;
    }
    free(p->out);
    free(p->errtext);
    free(p);
    return f;
}
