/* container_spec.c - a job's container, its tenant's policy, the check
 * between them (container_spec.h).
 *
 * Every string a caller sends here ends up on a node as a path the agent
 * binds or an image it pulls, so the checks are by construction: a path
 * is taken only in its one normal spelling, so "/data/../etc" or "/proc/"
 * cannot dress up as something else, and a source matches only up to a
 * boundary (see the header).
 */
#include "spec/container_spec.h"

#include "spec/json_input.h"
#include "spec/net_dest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- syntax ---- */

static bool printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* Absolute and normal: "/a/b", never "/a//b", "/a/./b", "/a/../b", "/a/". */
static bool path_normal(const char *p, size_t len)
{
    if (len == 0 || p[0] != '/')
        return false;
    if (len == 1)
        return true;
    if (p[len - 1] == '/')
        return false;
    for (size_t i = 0; i < len;) {
        size_t j = i + 1;
        while (j < len && p[j] != '/')
            j++;
        size_t part = j - i - 1;
        if (part == 0 || (part == 1 && p[i + 1] == '.') || (part == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
            return false;
        i = j;
    }
    return true;
}

/* p is root, or root's own path or under it. */
static bool under(const char *p, const char *root)
{
    size_t n = strlen(root);
    return strncmp(p, root, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* A host or container path that may be bound: normal, not "/", not the
 * kernel's file systems. */
static gp_err bind_path_check(const char *p, const char *field, gp_error *err)
{
    static const char *const KERNEL[] = {"/proc", "/sys", "/dev"};
    if (!printable(p) || !path_normal(p, strlen(p)))
        return gp_error_set(err, GP_ERR_INVALID, field,
                            "%s must be an absolute path in its normal form (no //, . or .. parts, no trailing /)",
                            field);
    if (strcmp(p, "/") == 0)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s may not be / itself", field);
    for (size_t i = 0; i < sizeof KERNEL / sizeof KERNEL[0]; i++)
        if (under(p, KERNEL[i]))
            return gp_error_set(err, GP_ERR_INVALID, field, "%s may not be on or under %s", field, KERNEL[i]);
    return GP_OK;
}

static bool tag_ok(const char *t, size_t n)
{
    if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", t[i]))
            return false;
    return true;
}

bool gp_registry_name_ok(const char *host)
{
    size_t n = strlen(host), name = strcspn(host, ":");
    if (n == 0 || n > 255 || name == 0 || host[0] == '.' || host[0] == '-')
        return false;
    for (size_t i = 0; i < name; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", host[i]))
            return false;
    if (name == n)
        return true;
    const char *port = host + name + 1;
    return port[0] && strlen(port) <= 5 && strspn(port, "0123456789") == strlen(port);
}

/* NAME: lowercase path parts [a-z0-9]+ joined by '/', separators . _ - inside a part. */
static bool repository_ok(const char *n, size_t len)
{
    if (len == 0 || len > 255)
        return false;
    bool sep_ok = false; /* a separator may follow a letter or digit */
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(sep_ok && strchr("._-/", c)))
            return false;
        sep_ok = alnum;
    }
    return sep_ok;
}

static bool digest_ok(const char *d)
{
    return strncmp(d, "sha256:", 7) == 0 && strlen(d + 7) == 64 && strspn(d + 7, "0123456789abcdef") == 64;
}

/* "HOST[:PORT]/NAME[:TAG][@sha256:HEX]", a tag or a digest required. */
static bool docker_ok(const char *r)
{
    const char *slash = strchr(r, '/');
    if (!slash)
        return false;
    char host[256];
    if ((size_t)(slash - r) >= sizeof host)
        return false;
    snprintf(host, sizeof host, "%.*s", (int)(slash - r), r);
    const char *name = slash + 1, *at = strchr(name, '@');
    size_t rest = at ? (size_t)(at - name) : strlen(name);
    const char *colon = memchr(name, ':', rest);
    size_t name_len = colon ? (size_t)(colon - name) : rest;
    if (!gp_registry_name_ok(host) || !repository_ok(name, name_len))
        return false;
    if (colon && !tag_ok(colon + 1, rest - name_len - 1))
        return false;
    if (at && !digest_ok(at + 1))
        return false;
    return colon || at;
}

gp_err gp_image_ref_check(const char *ref, const char *field, gp_error *err)
{
    size_t n = strlen(ref);
    bool ok = false;
    if (n <= GP_IMAGE_REF_MAX && printable(ref)) {
        if (strncmp(ref, "docker://", 9) == 0) {
            ok = docker_ok(ref + 9);
        } else if (strncmp(ref, "oci:", 4) == 0) {
            const char *path = ref + 4, *colon = strchr(path, ':');
            size_t len = colon ? (size_t)(colon - path) : strlen(path);
            ok = path_normal(path, len) && len > 1 && (!colon || tag_ok(colon + 1, strlen(colon + 1)));
        } else if (strncmp(ref, "dir:", 4) == 0) {
            ok = !strchr(ref + 4, ':') && path_normal(ref + 4, n - 4) && n > 5;
        }
    }
    if (ok)
        return GP_OK;
    return gp_error_set(err, GP_ERR_INVALID, field,
                        "%s must be docker://REGISTRY/NAME:TAG[@sha256:HEX], oci:/ABS/PATH[:TAG] or dir:/ABS/PATH"
                        " (absolute normal paths; got \"%.80s\")",
                        field, ref);
}

bool gp_image_registry(const char *ref, char *host, size_t cap)
{
    if (strncmp(ref, "docker://", 9) != 0 || !strchr(ref + 9, '/'))
        return false;
    snprintf(host, cap, "%.*s", (int)(strchr(ref + 9, '/') - (ref + 9)), ref + 9);
    return true;
}

/* ---- the job's keys ---- */

static const char *const JOB_KEYS[] = {"image", "mounts", "shm_mib", "read_only_root", "network"};

const char *const *gp_job_container_keys(size_t *n)
{
    *n = sizeof JOB_KEYS / sizeof JOB_KEYS[0];
    return JOB_KEYS;
}

bool gp_job_container_key(const char *key)
{
    for (size_t i = 0; i < sizeof JOB_KEYS / sizeof JOB_KEYS[0]; i++)
        if (strcmp(key, JOB_KEYS[i]) == 0)
            return true;
    return false;
}

static gp_err mounts_error(gp_error *err, size_t i, const char *what)
{
    return gp_error_set(err, GP_ERR_INVALID, "mounts", "mounts[%zu]: %s", i, what);
}

/* One entry of "mounts": {"volume", "target"[, "read_only"]}. */
static gp_err mount_parse(const json_t *m, size_t i, gp_error *err)
{
    if (!json_is_object(m))
        return mounts_error(err, i, "a mount is {\"volume\": NAME, \"target\": \"/path\", \"read_only\": BOOL}");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)m, key, v) {
        if (strcmp(key, "volume") != 0 && strcmp(key, "target") != 0 && strcmp(key, "read_only") != 0)
            return mounts_error(err, i, "unknown field (a mount has volume, target, read_only)");
    }
    const json_t *volume = json_object_get(m, "volume"), *target = json_object_get(m, "target");
    const json_t *ro = json_object_get(m, "read_only");
    if (!json_is_string(volume) || !json_string_length(volume) || json_string_length(volume) >= GP_NAME_MAX)
        return mounts_error(err, i, "volume must name one of the tenant's volumes");
    gp_error inner;
    if (!json_is_string(target) || json_string_length(target) > GP_MOUNT_TARGET_MAX ||
        bind_path_check(json_string_value(target), "target", &inner) != GP_OK)
        return mounts_error(err, i, json_is_string(target) && json_string_length(target) <= GP_MOUNT_TARGET_MAX
                                        ? inner.message
                                        : "target must be an absolute path");
    if (ro && !json_is_boolean(ro))
        return mounts_error(err, i, "read_only must be true or false");
    return GP_OK;
}

static gp_err mounts_parse(gp_job_container *c, const json_t *x, gp_error *err)
{
    if (!json_is_array(x) || json_array_size(x) > GP_JOB_MAX_MOUNTS)
        return gp_error_set(err, GP_ERR_INVALID, "mounts", "mounts must be an array of at most %d mounts",
                            GP_JOB_MAX_MOUNTS);
    size_t i, j;
    json_t *m;
    json_array_foreach(x, i, m) {
        gp_err rc = mount_parse(m, i, err);
        if (rc)
            return rc;
        for (j = 0; j < i; j++)
            if (json_equal(json_object_get(m, "target"), json_object_get(json_array_get(x, j), "target")))
                return gp_error_set(err, GP_ERR_INVALID, "mounts",
                                    "mounts[%zu]: its target is mounts[%zu]'s too: one mount per target", i, j);
    }
    json_decref(c->mounts);
    c->mounts = json_array_size(x) ? json_deep_copy(x) : NULL;
    return GP_OK;
}

gp_err gp_job_container_field(gp_job_container *c, const char *key, const json_t *x, gp_error *err)
{
    gp_err rc;
    if (strcmp(key, "image") == 0) {
        if (!json_is_string(x))
            return gp_error_set(err, GP_ERR_INVALID, key, "image must be a string (an image reference)");
        if ((rc = gp_image_ref_check(json_string_value(x), key, err)))
            return rc;
        free(c->image);
        c->image = strdup(json_string_value(x));
        return c->image ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, key, "out of memory");
    }
    if (strcmp(key, "mounts") == 0)
        return mounts_parse(c, x, err);
    if (strcmp(key, "shm_mib") == 0)
        return gp_json_int(x, key, 1, GP_SHM_MAX_MIB, &c->shm_mib, err);
    if (strcmp(key, "read_only_root") == 0)
        return gp_json_bool(x, key, &c->read_only_root, err);
    const char *net = json_string_value(x);
    if (!net || (strcmp(net, "host") != 0 && strcmp(net, "private") != 0))
        return gp_error_set(err, GP_ERR_INVALID, key, "network must be host or private");
    c->private_network = strcmp(net, "private") == 0;
    return GP_OK;
}

void gp_job_container_to_json(const gp_job_container *c, json_t *o)
{
    if (c->image)
        json_object_set_new(o, "image", json_string(c->image));
    if (c->mounts)
        json_object_set(o, "mounts", c->mounts);
    if (c->shm_mib)
        json_object_set_new(o, "shm_mib", json_integer(c->shm_mib));
    if (c->read_only_root)
        json_object_set_new(o, "read_only_root", json_true());
    if (c->private_network)
        json_object_set_new(o, "network", json_string("private"));
}

void gp_job_container_free(gp_job_container *c)
{
    free(c->image);
    json_decref(c->mounts);
    *c = (gp_job_container){0};
}

/* ---- the tenant's keys ---- */

static const char *const POLICY_KEYS[] = {"container", "image_sources", "volumes", "allow_userns", "egress",
                                          "reach_from"};

bool gp_container_policy_key(const char *key)
{
    for (size_t i = 0; i < sizeof POLICY_KEYS / sizeof POLICY_KEYS[0]; i++)
        if (strcmp(key, POLICY_KEYS[i]) == 0)
            return true;
    return false;
}

/* A source: "docker://HOST[:PORT]" and more, "dir:/ABS", "oci:/ABS" (a
 * trailing '/' allowed: it is a prefix). */
static bool source_ok(const char *s)
{
    size_t n = strlen(s);
    if (!printable(s))
        return false;
    if (strncmp(s, "docker://", 9) == 0) {
        char host[256];
        snprintf(host, sizeof host, "%.*s", (int)strcspn(s + 9, "/"), s + 9);
        return gp_registry_name_ok(host) && !strstr(s + 9, "//");
    }
    size_t skip = strncmp(s, "dir:", 4) == 0 || strncmp(s, "oci:", 4) == 0 ? 4 : 0;
    size_t len = n - skip - (n - skip > 1 && s[n - 1] == '/');
    return skip && !strchr(s + skip, ':') && path_normal(s + skip, len);
}

static gp_err sources_parse(gp_container_policy *p, const json_t *x, gp_error *err)
{
    if (!json_is_array(x) || json_array_size(x) > GP_MAX_IMAGE_SOURCES)
        return gp_error_set(err, GP_ERR_INVALID, "image_sources",
                            "image_sources must be an array of at most %d prefixes", GP_MAX_IMAGE_SOURCES);
    size_t i;
    json_t *v;
    json_array_foreach(x, i, v) {
        if (!json_is_string(v) || json_string_length(v) >= GP_IMAGE_SOURCE_MAX || !source_ok(json_string_value(v)))
            return gp_error_set(err, GP_ERR_INVALID, "image_sources",
                                "image_sources[%zu] must be a prefix docker://REGISTRY[/...], dir:/ABS/PATH or"
                                " oci:/ABS/PATH (at most %d bytes)",
                                i, GP_IMAGE_SOURCE_MAX - 1);
        snprintf(p->image_sources[i], GP_IMAGE_SOURCE_MAX, "%s", json_string_value(v));
    }
    p->n_image_sources = (int)json_array_size(x);
    p->image_sources_set = true;
    return GP_OK;
}

static bool volume_name_ok(const char *n)
{
    size_t len = strlen(n);
    return len > 0 && len < GP_NAME_MAX && n[0] != '.' &&
           strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == len;
}

/* {"name", "path"[, "read_only" (default true)]}. */
static gp_err volume_parse(gp_volume *v, const json_t *x, size_t i, gp_error *err)
{
    char field[GP_ERROR_FIELD_MAX];
    snprintf(field, sizeof field, "volumes[%zu]", i);
    if (!json_is_object(x))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be {\"name\", \"path\", \"read_only\"}", field);
    const char *key;
    json_t *f;
    v->read_only = true;
    json_object_foreach((json_t *)x, key, f) {
        char name[GP_ERROR_FIELD_MAX];
        gp_json_field_name(name, sizeof name, field, key);
        gp_err rc = GP_OK;
        if (strcmp(key, "name") == 0 && (!json_is_string(f) || !volume_name_ok(json_string_value(f))))
            rc = gp_error_set(err, GP_ERR_INVALID, name, "%s is 1..%d of letters, digits, _ . - (not starting with .)",
                              name, GP_NAME_MAX - 1);
        else if (strcmp(key, "name") == 0)
            snprintf(v->name, sizeof v->name, "%s", json_string_value(f));
        else if (strcmp(key, "path") == 0 && (!json_is_string(f) || json_string_length(f) >= GP_HOST_PATH_MAX))
            rc = gp_error_set(err, GP_ERR_INVALID, name, "%s must be a host path of at most %d bytes", name,
                              GP_HOST_PATH_MAX - 1);
        else if (strcmp(key, "path") == 0 && (rc = bind_path_check(json_string_value(f), name, err)) == GP_OK)
            snprintf(v->path, sizeof v->path, "%s", json_string_value(f));
        else if (strcmp(key, "read_only") == 0)
            rc = gp_json_bool(f, name, &v->read_only, err);
        else if (strcmp(key, "name") != 0 && strcmp(key, "path") != 0)
            rc = gp_json_unknown_field(field, key, err);
        if (rc)
            return rc;
    }
    if (!v->name[0] || !v->path[0])
        return gp_error_set(err, GP_ERR_INVALID, field, "%s needs a name and a path", field);
    return GP_OK;
}

static gp_err volumes_parse(gp_container_policy *p, const json_t *x, gp_error *err)
{
    if (!json_is_array(x) || json_array_size(x) > GP_MAX_VOLUMES)
        return gp_error_set(err, GP_ERR_INVALID, "volumes", "volumes must be an array of at most %d volumes",
                            GP_MAX_VOLUMES);
    size_t i;
    json_t *v;
    p->n_volumes = 0;
    json_array_foreach(x, i, v) {
        gp_volume *vol = &p->volumes[i];
        *vol = (gp_volume){0};
        gp_err rc = volume_parse(vol, v, i, err);
        if (rc)
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->volumes[j].name, vol->name) == 0)
                return gp_error_set(err, GP_ERR_INVALID, "volumes", "volumes[%zu]: volume %s is named twice", i,
                                    vol->name);
        p->n_volumes = (int)i + 1;
    }
    return GP_OK;
}

/* ["10.0.0.0/8:443", "192.0.2.7", ...]: each as the node's fence reads it (net_dest.h). */
static gp_err egress_parse(gp_container_policy *p, const json_t *x, gp_error *err)
{
    if (!json_is_array(x) || json_array_size(x) > GP_MAX_EGRESS)
        return gp_error_set(err, GP_ERR_INVALID, "egress", "egress must be an array of at most %d destinations",
                            GP_MAX_EGRESS);
    size_t i;
    json_t *v;
    json_array_foreach(x, i, v) {
        gp_netfence_dest d;
        gp_error why;
        const char *text = json_string_value(v);
        if (!text || strlen(text) >= GP_EGRESS_MAX)
            return gp_error_set(err, GP_ERR_INVALID, "egress", "egress[%zu] must be a string of at most %d bytes", i,
                                GP_EGRESS_MAX - 1);
        if (gp_netfence_dest_parse(text, &d, &why) != GP_OK)
            return gp_error_set(err, GP_ERR_INVALID, "egress", "egress[%zu]: %s", i, why.message);
        snprintf(p->egress[i], GP_EGRESS_MAX, "%s", text);
    }
    p->n_egress = (int)json_array_size(x);
    return GP_OK;
}

/* ["research", "vision/serving", ...]: tenant subtrees, each as the node's fence reads it (net_dest.h). */
static gp_err reach_from_parse(gp_container_policy *p, const json_t *x, gp_error *err)
{
    if (!json_is_array(x) || json_array_size(x) > GP_MAX_REACH_FROM)
        return gp_error_set(err, GP_ERR_INVALID, "reach_from",
                            "reach_from must be an array of at most %d tenant paths", GP_MAX_REACH_FROM);
    size_t i;
    json_t *v;
    json_array_foreach(x, i, v) {
        gp_error why;
        if (!json_is_string(v))
            return gp_error_set(err, GP_ERR_INVALID, "reach_from", "reach_from[%zu] must be a tenant path", i);
        if (gp_reach_entry_check(json_string_value(v), GP_PATH_MAX, &why) != GP_OK)
            return gp_error_set(err, GP_ERR_INVALID, "reach_from", "reach_from[%zu]: %s", i, why.message);
        snprintf(p->reach_from[i], GP_PATH_MAX, "%s", json_string_value(v));
    }
    p->n_reach_from = (int)json_array_size(x);
    return GP_OK;
}

gp_err gp_container_policy_field(gp_container_policy *p, const char *key, const json_t *x, gp_error *err)
{
    if (strcmp(key, "container") == 0) {
        const char *v = json_string_value(x);
        if (!v || (strcmp(v, "required") != 0 && strcmp(v, "optional") != 0))
            return gp_error_set(err, GP_ERR_INVALID, key, "container must be required or optional");
        p->rule = strcmp(v, "required") == 0 ? GP_CONTAINER_REQUIRED : GP_CONTAINER_OPTIONAL;
        return GP_OK;
    }
    if (strcmp(key, "image_sources") == 0)
        return sources_parse(p, x, err);
    if (strcmp(key, "volumes") == 0)
        return volumes_parse(p, x, err);
    if (strcmp(key, "egress") == 0)
        return egress_parse(p, x, err);
    if (strcmp(key, "reach_from") == 0)
        return reach_from_parse(p, x, err);
    p->allow_userns_set = true;
    return gp_json_bool(x, key, &p->allow_userns, err);
}

static json_t *volume_json(const gp_volume *v)
{
    return json_pack("{s:s, s:s, s:b}", "name", v->name, "path", v->path, "read_only", v->read_only);
}

void gp_container_policy_to_json(const gp_container_policy *p, json_t *o)
{
    if (p->rule != GP_CONTAINER_INHERIT)
        json_object_set_new(o, "container", json_string(p->rule == GP_CONTAINER_REQUIRED ? "required" : "optional"));
    if (p->image_sources_set) {
        json_t *a = json_array();
        for (int i = 0; i < p->n_image_sources; i++)
            json_array_append_new(a, json_string(p->image_sources[i]));
        json_object_set_new(o, "image_sources", a);
    }
    if (p->n_volumes) {
        json_t *a = json_array();
        for (int i = 0; i < p->n_volumes; i++)
            json_array_append_new(a, volume_json(&p->volumes[i]));
        json_object_set_new(o, "volumes", a);
    }
    if (p->allow_userns_set)
        json_object_set_new(o, "allow_userns", json_boolean(p->allow_userns));
    if (p->n_egress) {
        json_t *a = json_array();
        for (int i = 0; i < p->n_egress; i++)
            json_array_append_new(a, json_string(p->egress[i]));
        json_object_set_new(o, "egress", a);
    }
    if (p->n_reach_from) {
        json_t *a = json_array();
        for (int i = 0; i < p->n_reach_from; i++)
            json_array_append_new(a, json_string(p->reach_from[i]));
        json_object_set_new(o, "reach_from", a);
    }
}

/* ---- inherited, and the check ---- */

/* text added to list (of *n, at most cap) unless it is there already. */
static void once_add(const char **list, size_t *n, size_t cap, const char *text)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(list[i], text) == 0)
            return;
    if (*n < cap)
        list[(*n)++] = text;
}

void gp_container_effective_make(const gp_container_policy *const *chain, size_t n, bool untrusted,
                                 size_t untrusted_from, gp_container_effective *out)
{
    *out = (gp_container_effective){.untrusted = untrusted, .any_image = true};
    gp_container_rule rule = GP_CONTAINER_INHERIT;
    bool userns_found = false;
    for (size_t i = n; i-- > 0;) { /* nearest first */
        const gp_container_policy *p = chain[i];
        if (rule == GP_CONTAINER_INHERIT && (!untrusted || i >= untrusted_from))
            rule = p->rule;
        if (out->any_image && p->image_sources_set) {
            out->any_image = false;
            out->sources = p;
        }
        if (!userns_found && p->allow_userns_set) {
            userns_found = true;
            out->allow_userns = p->allow_userns;
        }
        for (int v = 0; v < p->n_volumes; v++)
            if (!gp_container_volume(out, p->volumes[v].name) &&
                out->n_volumes < sizeof out->volumes / sizeof out->volumes[0])
                out->volumes[out->n_volumes++] = &p->volumes[v];
        for (int d = 0; d < p->n_egress; d++)
            once_add(out->egress, &out->n_egress, sizeof out->egress / sizeof out->egress[0], p->egress[d]);
        for (int t = 0; t < p->n_reach_from; t++)
            once_add(out->reach_from, &out->n_reach_from, sizeof out->reach_from / sizeof out->reach_from[0],
                     p->reach_from[t]);
    }
    out->required = rule == GP_CONTAINER_REQUIRED || (rule == GP_CONTAINER_INHERIT && untrusted);
}

const gp_volume *gp_container_volume(const gp_container_effective *e, const char *name)
{
    for (size_t i = 0; i < e->n_volumes; i++)
        if (strcmp(e->volumes[i]->name, name) == 0)
            return e->volumes[i];
    return NULL;
}

/* image starts with source, up to a boundary (the header). */
static bool image_under(const char *image, const char *source)
{
    size_t n = strlen(source);
    if (strncmp(image, source, n) != 0)
        return false;
    char next = image[n];
    if (source[n - 1] == '/' || next == '/' || next == '\0')
        return true;
    bool docker = strncmp(source, "docker://", 9) == 0;
    bool past_host = docker ? strchr(source + 9, '/') != NULL : true;
    return past_host && (next == ':' || next == '@');
}

/* With no image_sources on the tenant's chain, any registry image; a dir:
 * or oci: image is a path on the node (dir:/ would make the host's root
 * the job's), which only an admin's explicit source opens. */
static bool image_allowed(const gp_container_effective *e, const char *image)
{
    if (e->any_image)
        return strncmp(image, "docker://", 9) == 0;
    for (int i = 0; i < e->sources->n_image_sources; i++)
        if (image_under(image, e->sources->image_sources[i]))
            return true;
    return false;
}

gp_err gp_container_admit(const gp_container_effective *e, const char *tenant, const gp_job_container *c,
                          gp_error *err)
{
    if (!c->image && e->required)
        return gp_error_set(err, GP_ERR_INVALID, "image",
                            "tenant %s requires containers (%s): give the job an image (--image REF)", tenant,
                            e->untrusted ? "it is untrusted" : "its policy says container: required");
    if (c->image && !image_allowed(e, c->image))
        return gp_error_set(err, GP_ERR_INVALID, "image",
                            "image %.200s is not under an image source tenant %s allows (gpupool tenants %s;"
                            " dir: and oci: images need an admin's image_sources)",
                            c->image, tenant, tenant);
    if (c->mounts && !c->image)
        return gp_error_set(err, GP_ERR_INVALID, "mounts", "mounts need an image: a bare process mounts nothing");
    size_t i;
    json_t *m;
    json_array_foreach(c->mounts, i, m) {
        const char *name = json_string_value(json_object_get(m, "volume"));
        const gp_volume *v = gp_container_volume(e, name);
        if (!v)
            return gp_error_set(err, GP_ERR_INVALID, "mounts", "mounts[%zu]: tenant %s has no volume %s", i, tenant,
                                name);
        if (v->read_only && json_is_false(json_object_get(m, "read_only")))
            return gp_error_set(err, GP_ERR_INVALID, "mounts", "mounts[%zu]: volume %s is read-only", i, name);
    }
    return GP_OK;
}

json_t *gp_container_mounts_resolve(const gp_container_effective *e, const json_t *mounts, size_t *dropped)
{
    json_t *out = json_array();
    size_t i;
    json_t *m;
    *dropped = 0;
    json_array_foreach(mounts, i, m) {
        const gp_volume *v = gp_container_volume(e, json_string_value(json_object_get(m, "volume")));
        if (!v) {
            (*dropped)++;
            continue;
        }
        bool read_only = v->read_only || json_is_true(json_object_get(m, "read_only"));
        json_array_append_new(out, json_pack("{s:s, s:O, s:b}", "source", v->path, "target",
                                             json_object_get(m, "target"), "read_only", read_only));
    }
    return out;
}

void gp_container_effective_to_json(const gp_container_effective *e, json_t *o)
{
    json_object_set_new(o, "container", json_string(e->required ? "required" : "optional"));
    json_t *sources = json_null();
    if (!e->any_image) {
        sources = json_array();
        for (int i = 0; i < e->sources->n_image_sources; i++)
            json_array_append_new(sources, json_string(e->sources->image_sources[i]));
    }
    json_object_set_new(o, "image_sources", sources);
    json_t *volumes = json_array();
    for (size_t i = 0; i < e->n_volumes; i++)
        json_array_append_new(volumes, volume_json(e->volumes[i]));
    json_object_set_new(o, "volumes", volumes);
    json_object_set_new(o, "allow_userns", json_boolean(e->allow_userns));
    json_object_set_new(o, "egress", gp_container_egress_json(e));
    json_object_set_new(o, "reach_from", gp_container_reach_from_json(e));
}

static json_t *strings_json(const char *const *list, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(list[i]));
    return a;
}

json_t *gp_container_egress_json(const gp_container_effective *e)
{
    return strings_json(e->egress, e->n_egress);
}

json_t *gp_container_reach_from_json(const gp_container_effective *e)
{
    return strings_json(e->reach_from, e->n_reach_from);
}
