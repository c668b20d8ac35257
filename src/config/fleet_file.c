/* fleet_file.c - the fleet file: nodes and pools, read with the spec codec.
 *
 * The format is in fleet_file.h and docs/fleet-file.md.  The one YAML
 * reader (spec/yaml_json.c) turns the file into json_t with a line map;
 * each pool entry is decoded by gp_pool_parse and each node entry, less its
 * `count`, by gp_fleet_node_parse: the codec the event log uses, so a node
 * obeys one set of field rules and defaults wherever it is written (the
 * file only spells the GPU count `gpus`).  Codec errors come back with the
 * file, the line and the entry: "fleet.yaml:4: nodes[0]: gpus must be an
 * integer".  The engine checks the specs again when they are applied.
 *
 * What only the file has is checked here: the `pools` and `nodes` lists,
 * `count` (an entry with `count: N` becomes N nodes NAME-0 .. NAME-(N-1)
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

#include "spec/json_input.h"
#include "spec/spec_json.h"
#include "spec/yaml_json.h"
#include "util/file.h"
#include "util/grow.h"
#include "util/hashmap.h"

typedef struct gp__fleet_storage {
    void **blocks;
    size_t n, cap;
} gp__fleet_storage;

/* Everything parsing one file needs. */
typedef struct fleet_reader {
    gp_yaml_lines lines;
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
    return gp_error_set(r->err, GP_ERR_NOMEM, "file", "%s: out of memory", r->lines.name);
}

/* Fails unless item is a mapping. */
static gp_err expect_mapping(fleet_reader *r, const json_t *item, const char *at)
{
    if (json_is_object(item))
        return GP_OK;
    return gp_yaml_fail(&r->lines, at, r->err, at, "%s must be a mapping", at);
}

/* ---- pools ---- */

static gp_err read_pool(fleet_reader *r, const json_t *item, const char *at)
{
    gp_fleet_pool pool;
    gp_err rc = expect_mapping(r, item, at);
    if (rc == GP_OK && (rc = gp_pool_parse(item, pool.name, &pool.spec, r->err)))
        gp_yaml_locate(&r->lines, at, r->err);
    if (rc)
        return rc;
    for (size_t p = 0; p < r->out->n_pools; p++)
        if (strcmp(r->out->pools[p].name, pool.name) == 0) {
            char field[64];
            snprintf(field, sizeof field, "%s.name", at);
            return gp_yaml_fail(&r->lines, field, r->err, field, "pool %s is defined twice", pool.name);
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
        return gp_yaml_fail(&r->lines, field, r->err, field, "node %s is defined twice (nodes[%u] has it already)",
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
        gp_yaml_locate(&r->lines, at, r->err);
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
    return gp_yaml_fail(&r->lines, field, r->err, field, "%s is %s, which is not listed under pools", field, pool);
}

static gp_err read_node(fleet_reader *r, const json_t *item, const char *at, size_t index)
{
    gp_err rc = expect_mapping(r, item, at);
    if (rc)
        return rc;
    json_t *body = json_copy((json_t *)item);
    if (!body)
        return nomem(r);
    json_object_del(body, "count");
    rc = gp_fleet_node_parse(body, r->node, r->err);
    json_decref(body);
    if (rc) {
        gp_yaml_locate(&r->lines, at, r->err);
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
            return gp_yaml_fail(&r->lines, field, r->err, field, "node name %s is longer than %d characters", name,
                                GP_NAME_MAX - 1);
        if ((rc = push_node(r, name, at, index)))
            return rc;
    }
    return GP_OK;
}

/* ---- the file ---- */

static gp_err read_list(fleet_reader *r, const json_t *root, const char *field,
                        gp_err (*read_item)(fleet_reader *, const json_t *, const char *, size_t))
{
    const json_t *list = json_object_get(root, field);
    if (!json_is_array(list))
        return gp_yaml_fail(&r->lines, field, r->err, field, "%s must be a list", field);
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < json_array_size(list); i++) {
        char at[32];
        snprintf(at, sizeof at, "%s[%zu]", field, i);
        rc = read_item(r, json_array_get(list, i), at, i);
    }
    return rc;
}

static gp_err read_pool_item(fleet_reader *r, const json_t *item, const char *at, size_t index)
{
    (void)index;
    return read_pool(r, item, at);
}

static gp_err read_fleet(fleet_reader *r, const json_t *root)
{
    if (!root)
        return gp_error_set(r->err, GP_ERR_INVALID, "nodes", "%s:1: the fleet file is empty", r->lines.name);
    if (!json_is_object(root))
        return gp_yaml_fail(&r->lines, "", r->err, "nodes", "a fleet file is a mapping with pools and nodes");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        if (strcmp(key, "pools") != 0 && strcmp(key, "nodes") != 0)
            return gp_yaml_fail(&r->lines, key, r->err, key, "unknown field %s (a fleet file has pools and nodes)",
                                key);
    }
    if (!json_object_get(root, "nodes"))
        return gp_yaml_fail(&r->lines, "", r->err, "nodes", "the fleet file has no nodes list");
    /* pools first: nodes refer to them */
    gp_err rc = json_object_get(root, "pools") ? read_list(r, root, "pools", read_pool_item) : GP_OK;
    return rc ? rc : read_list(r, root, "nodes", read_node);
}

gp_err gp_fleet_file_parse(const char *text, size_t len, const char *name, gp_fleet_file *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    fleet_reader r;
    memset(&r, 0, sizeof r);
    r.out = out;
    r.err = err;
    r.store = calloc(1, sizeof *r.store);
    r.node = malloc(sizeof *r.node);
    out->storage = r.store;
    json_t *root = NULL;
    gp_err rc = !r.store || !r.node ? gp_error_set(err, GP_ERR_NOMEM, "file", "out of memory")
                                    : gp_yaml_to_json(text, len, name, &root, &r.lines, err);
    if (rc == GP_OK)
        rc = read_fleet(&r, root);
    json_decref(root);
    gp_yaml_lines_free(&r.lines);
    gp_strmap_free(&r.node_names);
    free(r.node);
    if (rc)
        gp_fleet_file_free(out);
    return rc;
}

gp_err gp_fleet_file_load(const char *path, gp_fleet_file *out, gp_error *err)
{
    char *text;
    size_t len;
    memset(out, 0, sizeof *out);
    gp_err rc = gp_file_read_all(path, &text, &len, err);
    if (rc)
        return rc;
    rc = gp_fleet_file_parse(text, len, path, out, err);
    free(text);
    return rc;
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
