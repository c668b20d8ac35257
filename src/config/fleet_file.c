/* fleet_file.c - the fleet file: nodes and pools, read with the spec codec.
 *
 * The format is in fleet_file.h and docs/fleet-file.md.  The skeleton
 * every file reader shares (config/yaml_file.h) loads the file with the
 * one YAML reader (spec/yaml_json.c), checks its top (`pools` and
 * `nodes`, nodes required) and walks the lists; each pool entry is decoded by gp_pool_parse and each node entry, less its
 * `count`, by gp_fleet_node_parse: the codec the event log uses, so a node
 * obeys one set of field rules and defaults wherever it is written (the
 * file only spells the GPU count `gpus`).  Codec errors come back with the
 * file, the line and the entry: "fleet.yaml:4: nodes[0]: gpus must be an
 * integer".  The engine checks the specs again when they are applied.
 *
 * What only the file has is checked here: `count` (an entry with `count: N` becomes N nodes NAME-0 .. NAME-(N-1)
 * with the same shape; not with gpu_uuids), unique node and pool names, and
 * that a node's pool is "default" or listed under `pools`.
 *
 * Storage: every string and array the specs point to is one allocation
 * recorded in a small list (gp__fleet_storage) that gp_fleet_file_free
 * walks; nothing is shared between nodes, so expansion by `count` is just
 * copying.
 */
#include "config/fleet_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml_file.h"
#include "spec/json_input.h"
#include "spec/spec_json.h"
#include "util/grow.h"
#include "util/hashmap.h"

typedef struct gp__fleet_storage {
    void **blocks;
    size_t n, cap;
} gp__fleet_storage;

/* Everything parsing one file needs. */
typedef struct fleet_reader {
    const gp_yaml_lines *lines;
    gp_error *err;
    gp_fleet_file *out;
    gp__fleet_storage *store;
    size_t cap_nodes, cap_pools;
    gp_strmap node_names;
    gp_node_request *node; /* the entry being read (large: one per reader) */
} fleet_reader;

/* Record an allocation in the file's storage; frees p and fails when the
 * list cannot grow. */
static void *keep(gp__fleet_storage *s, void *p)
{
    if (!p)
        return NULL;
    void **blocks = gp_grow(s->blocks, &s->cap, s->n + 1, sizeof *blocks);
    if (!blocks) {
        free(p);
        return NULL;
    }
    s->blocks = blocks;
    s->blocks[s->n++] = p;
    return p;
}

static char *keep_string(gp__fleet_storage *s, const char *text)
{
    size_t len = strlen(text) + 1;
    char *copy = malloc(len);
    if (copy)
        memcpy(copy, text, len);
    return keep(s, copy);
}

static gp_err nomem(fleet_reader *r)
{
    return gp_error_set(r->err, GP_ERR_NOMEM, "file", "%s: out of memory", r->lines->name);
}

/* ---- pools ---- */

static gp_err read_pool(void *reader, const gp_yaml_lines *lines, const json_t *item, const char *at, size_t index,
                        gp_error *err)
{
    fleet_reader *r = reader;
    gp_fleet_pool pool;
    (void)index;
    gp_err rc = gp_pool_parse(item, pool.name, &pool.spec, err);
    if (rc) {
        gp_yaml_locate(lines, at, err);
        return rc;
    }
    pool.owner_given = json_object_get(item, "owner") != NULL;
    for (size_t p = 0; p < r->out->n_pools; p++)
        if (strcmp(r->out->pools[p].name, pool.name) == 0) {
            char field[64];
            snprintf(field, sizeof field, "%s.name", at);
            return gp_yaml_fail(lines, field, err, field, "pool %s is defined twice", pool.name);
        }
    gp_fleet_pool *pools = gp_grow(r->out->pools, &r->cap_pools, r->out->n_pools + 1, sizeof *pools);
    if (!pools)
        return nomem(r);
    r->out->pools = pools;
    r->out->pools[r->out->n_pools++] = pool;
    return GP_OK;
}

/* ---- nodes ---- */

/* Per-GPU arrays (uuids, sharing modes) of one expanded node, copied. */
static gp_err copy_gpu_lists(fleet_reader *r, gp_node_spec *s)
{
    const gp_node_spec *from = &r->node->spec;
    if (from->gpu_uuids) {
        const char **uuids = keep(r->store, calloc((size_t)s->gpu_count, sizeof *uuids));
        if (!uuids)
            return nomem(r);
        for (int g = 0; g < s->gpu_count; g++)
            if (!(uuids[g] = keep_string(r->store, from->gpu_uuids[g])))
                return nomem(r);
        s->gpu_uuids = uuids;
    }
    if (from->gpu_sharing) {
        gp_sharing *modes = keep(r->store, calloc((size_t)s->gpu_count, sizeof *modes));
        if (!modes)
            return nomem(r);
        memcpy(modes, from->gpu_sharing, (size_t)s->gpu_count * sizeof *modes);
        s->gpu_sharing = modes;
    }
    return GP_OK;
}

static gp_err push_node(fleet_reader *r, const char *name, const char *at, size_t index)
{
    uint32_t seen;
    char field[64];
    snprintf(field, sizeof field, "%s.name", at);
    if (gp_strmap_get(&r->node_names, name, &seen))
        return gp_yaml_fail(r->lines, field, r->err, field, "node %s is defined twice (nodes[%u] has it already)",
                            name, seen);
    if (!gp_strmap_put(&r->node_names, name, (uint32_t)index))
        return nomem(r);
    gp_node_spec *nodes = gp_grow(r->out->nodes, &r->cap_nodes, r->out->n_nodes + 1, sizeof *nodes);
    if (!nodes)
        return nomem(r);
    r->out->nodes = nodes;
    const gp_node_spec *from = &r->node->spec;
    gp_node_spec s = *from;
    s.gpu_uuids = NULL;
    s.gpu_sharing = NULL;
    s.name = keep_string(r->store, name);
    s.zone = keep_string(r->store, from->zone);
    s.block = keep_string(r->store, from->block);
    s.gpu_type = keep_string(r->store, from->gpu_type);
    s.pool = keep_string(r->store, from->pool);
    if (!s.name || !s.zone || !s.block || !s.gpu_type || !s.pool)
        return nomem(r);
    gp_err rc = copy_gpu_lists(r, &s);
    if (rc)
        return rc;
    r->out->nodes[r->out->n_nodes++] = s;
    return GP_OK;
}

/* `count` (the file's own field): 0 when not given. */
static gp_err read_count(fleet_reader *r, const json_t *item, const char *at, int64_t *count)
{
    const json_t *v = json_object_get(item, "count");
    *count = 0;
    if (!v)
        return GP_OK;
    gp_err rc = gp_json_int(v, "count", 1, 100000, count, r->err);
    if (rc == GP_OK && r->node->spec.gpu_uuids && *count > 1)
        rc = gp_error_set(r->err, GP_ERR_INVALID, "gpu_uuids", "gpu_uuids cannot be given with count > 1");
    if (rc)
        gp_yaml_locate(r->lines, at, r->err);
    return rc;
}

/* The node's pool must be "default" or listed under `pools`. */
static gp_err check_pool(fleet_reader *r, const char *at)
{
    const char *pool = r->node->spec.pool;
    bool known = strcmp(pool, "default") == 0;
    for (size_t p = 0; !known && p < r->out->n_pools; p++)
        known = strcmp(r->out->pools[p].name, pool) == 0;
    if (known)
        return GP_OK;
    char field[64];
    snprintf(field, sizeof field, "%s.pool", at);
    return gp_yaml_fail(r->lines, field, r->err, field, "%s is %s, which is not listed under pools", field, pool);
}

static gp_err read_node(void *reader, const gp_yaml_lines *lines, const json_t *item, const char *at, size_t index,
                        gp_error *err)
{
    static const char *const own[] = {"count", NULL};
    fleet_reader *r = reader;
    json_t *body = gp_yaml_file_body(item, own);
    if (!body)
        return nomem(r);
    gp_err rc = gp_fleet_node_parse(body, r->node, err);
    json_decref(body);
    if (rc) {
        gp_yaml_locate(lines, at, err);
        return rc;
    }
    int64_t count = 0;
    if ((rc = read_count(r, item, at, &count)) || (rc = check_pool(r, at)))
        return rc;
    if (count == 0)
        return push_node(r, r->node->name, at, index);
    for (int64_t k = 0; k < count; k++) {
        char name[GP_NAME_MAX + 16], field[64];
        snprintf(name, sizeof name, "%s-%lld", r->node->name, (long long)k);
        snprintf(field, sizeof field, "%s.name", at);
        if (strlen(name) >= GP_NAME_MAX)
            return gp_yaml_fail(r->lines, field, r->err, field, "node name %s is longer than %d characters", name,
                                GP_NAME_MAX - 1);
        if ((rc = push_node(r, name, at, index)))
            return rc;
    }
    return GP_OK;
}

/* ---- the file ---- */

static gp_err read_fleet(void *out, const gp_yaml_lines *lines, const json_t *root, gp_error *err)
{
    fleet_reader r = {.lines = lines, .err = err, .out = out};
    r.store = calloc(1, sizeof *r.store);
    r.node = malloc(sizeof *r.node);
    r.out->storage = r.store;
    gp_err rc = r.store && r.node ? GP_OK : nomem(&r);
    /* pools first: nodes refer to them */
    if (rc == GP_OK && json_object_get(root, "pools"))
        rc = gp_yaml_file_each(lines, root, "pools", read_pool, &r, err);
    if (rc == GP_OK)
        rc = gp_yaml_file_each(lines, root, "nodes", read_node, &r, err);
    gp_strmap_free(&r.node_names);
    free(r.node);
    return rc;
}

static void release_fleet(void *out)
{
    gp_fleet_file_free(out);
}

static const gp_yaml_file_kind fleet_kind = {
    .what = "fleet file",
    .size = sizeof(gp_fleet_file),
    .keys = {"pools", "nodes"},
    .list = "nodes",
    .holds = "pools and nodes",
    .read = read_fleet,
    .release = release_fleet,
};

gp_err gp_fleet_file_parse(const char *text, size_t len, const char *name, gp_fleet_file *out, gp_error *err)
{
    return gp_yaml_file_parse(&fleet_kind, text, len, name, out, err);
}

gp_err gp_fleet_file_load(const char *path, gp_fleet_file *out, gp_error *err)
{
    return gp_yaml_file_load(&fleet_kind, path, out, err);
}

void gp_fleet_file_free(gp_fleet_file *f)
{
    gp__fleet_storage *s = f->storage;
    for (size_t i = 0; s && i < s->n; i++)
        free(s->blocks[i]);
    if (s)
        free(s->blocks);
    free(s);
    free(f->nodes);
    free(f->pools);
    memset(f, 0, sizeof *f);
}

gp_err gp_fleet_file_apply(const gp_fleet_file *f, gp_engine *e, int64_t now, gp_error *err)
{
    for (size_t p = 0; p < f->n_pools; p++) {
        gp_err rc = gp_engine_pool_set(e, f->pools[p].name, &f->pools[p].spec, err);
        if (rc)
            return rc;
    }
    for (size_t n = 0; n < f->n_nodes; n++) {
        gp_err rc = gp_engine_node_add(e, &f->nodes[n], now, err);
        if (rc && err) {
            char msg[GP_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "node %s: %s", f->nodes[n].name, err->message);
            snprintf(err->message, sizeof err->message, "%s", msg);
        }
        if (rc)
            return rc;
    }
    return GP_OK;
}
