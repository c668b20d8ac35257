/* fleet_file.c - the fleet file: nodes and pools, read strictly.
 *
 * The format is in fleet_file.h and docs/fleet-file.md.  Reading happens in
 * two steps: libyaml builds a document (yaml_doc.c), then this file walks
 * it entry by entry, checks every field's type and range, and fills
 * gp_node_spec / gp_pool_spec.  A node entry with `count: N` becomes N
 * nodes NAME-0 .. NAME-(N-1) with the same shape.  The engine checks the
 * specs again when they are applied; checking here too is what lets an
 * error point at the file's line.
 *
 * Defaults: zone "default", block "default" (a flat cluster is one
 * block), nvlink_domains 1, gpu_mem_mib, cpu_millis and mem_mib 0, sharing
 * exclusive, pool "default".  A node may name a pool only if it is "default"
 * or listed under `pools`.
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

#include "config/yaml_doc.h"
#include "util/file.h"
#include "util/hashmap.h"

typedef struct gp__fleet_storage {
    void **blocks;
    size_t n, cap;
} gp__fleet_storage;

/* Everything parsing one file needs. */
typedef struct fleet_reader {
    gp__yaml y;
    gp_fleet_file *out;
    gp__fleet_storage *store;
    size_t cap_nodes, cap_pools;
    gp_strmap node_names;
} fleet_reader;

static const char *const score_names[] = {"default", "bestfit", "fgd", "random",
                                          "dotprod", "clustering", "packing", "spread"};
static const char *const sharing_names[] = {"exclusive", "mig", "mps", "timeslice"};

/* Record an allocation in the file's storage; frees p and fails when the
 * list cannot grow. */
static void *keep(gp__fleet_storage *s, void *p)
{
    if (!p)
        return NULL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        void **grown = realloc(s->blocks, cap * sizeof *grown);
        if (!grown) {
            free(p);
            return NULL;
        }
        s->blocks = grown;
        s->cap = cap;
    }
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
    return gp_error_set(r->y.err, GP_ERR_NOMEM, "file", "%s: out of memory", r->y.name);
}

/* ---- pools ---- */

static gp_err read_pool_field(fleet_reader *r, gp_fleet_pool *pool, const char *key, yaml_node_t *v,
                              size_t index)
{
    char what[96];
    snprintf(what, sizeof what, "pools[%zu].%s", index, key);
    int64_t n = 0;
    int choice = 0;
    gp_err rc;
    if (strcmp(key, "name") == 0)
        return gp__yaml_string(&r->y, v, key, what, pool->name, sizeof pool->name);
    if (strcmp(key, "score") == 0) {
        rc = gp__yaml_enum(&r->y, v, key, what, score_names, 8, &choice);
        pool->spec.score = (gp_score)choice;
        return rc;
    }
    if (strcmp(key, "timeslice_replicas") == 0) {
        rc = gp__yaml_int(&r->y, v, key, what, 1, 8, &n);
        pool->spec.timeslice_replicas = (int)n;
        return rc;
    }
    if (strcmp(key, "seed") == 0) {
        rc = gp__yaml_int(&r->y, v, key, what, 0, INT64_MAX, &n);
        pool->spec.seed = (uint64_t)n;
        return rc;
    }
    return gp__yaml_fail(&r->y, v, key, "unknown field %s (pools take name, score, timeslice_replicas, seed)",
                         what);
}

static gp_err read_pool(fleet_reader *r, yaml_node_t *item, size_t index)
{
    gp_err rc = gp__yaml_expect_mapping(&r->y, item, "pools");
    if (rc)
        return rc;
    gp_fleet_pool pool;
    memset(&pool, 0, sizeof pool);
    for (size_t i = 0; i < gp__yaml_map_size(item); i++) {
        const char *key;
        yaml_node_t *v;
        if ((rc = gp__yaml_map_pair(&r->y, item, i, "pools", &key, &v)) ||
            (rc = read_pool_field(r, &pool, key, v, index)))
            return rc;
    }
    if (pool.name[0] == '\0')
        return gp__yaml_fail(&r->y, item, "name", "pools[%zu].name is required", index);
    for (size_t p = 0; p < r->out->n_pools; p++)
        if (strcmp(r->out->pools[p].name, pool.name) == 0)
            return gp__yaml_fail(&r->y, item, "name", "pool %s is defined twice", pool.name);
    if (r->out->n_pools == r->cap_pools) {
        size_t cap = r->cap_pools ? r->cap_pools * 2 : 4;
        gp_fleet_pool *grown = realloc(r->out->pools, cap * sizeof *grown);
        if (!grown)
            return nomem(r);
        r->out->pools = grown;
        r->cap_pools = cap;
    }
    r->out->pools[r->out->n_pools++] = pool;
    return GP_OK;
}

/* ---- nodes ---- */

/* One node entry as read, before `count` expansion. */
typedef struct node_entry {
    char name[GP_NAME_MAX];
    char zone[GP_NAME_MAX];
    char block[GP_NAME_MAX];
    char gpu_type[GP_NAME_MAX];
    char pool[GP_NAME_MAX];
    int64_t count;
    bool has_count;
    gp_node_spec spec;  /* numbers and sharing; strings filled at expansion */
    yaml_node_t *uuids; /* list node or NULL */
    yaml_node_t *gpu_sharing;
    yaml_node_t *at;
} node_entry;

static gp_err read_node_field(fleet_reader *r, node_entry *ne, const char *key, yaml_node_t *v, size_t index)
{
    char what[96];
    snprintf(what, sizeof what, "nodes[%zu].%s", index, key);
    int64_t n = 0;
    int choice = 0;
    gp_err rc;
    gp_node_spec *s = &ne->spec;
    if (strcmp(key, "name") == 0)
        return gp__yaml_string(&r->y, v, key, what, ne->name, sizeof ne->name);
    if (strcmp(key, "zone") == 0)
        return gp__yaml_string(&r->y, v, key, what, ne->zone, sizeof ne->zone);
    if (strcmp(key, "block") == 0)
        return gp__yaml_string(&r->y, v, key, what, ne->block, sizeof ne->block);
    if (strcmp(key, "gpu_type") == 0)
        return gp__yaml_string(&r->y, v, key, what, ne->gpu_type, sizeof ne->gpu_type);
    if (strcmp(key, "pool") == 0)
        return gp__yaml_string(&r->y, v, key, what, ne->pool, sizeof ne->pool);
    if (strcmp(key, "count") == 0) {
        ne->has_count = true;
        return gp__yaml_int(&r->y, v, key, what, 1, 100000, &ne->count);
    }
    if (strcmp(key, "gpus") == 0) {
        rc = gp__yaml_int(&r->y, v, key, what, 1, GP_MAX_GPUS_PER_NODE, &n);
        s->gpu_count = (int)n;
        return rc;
    }
    if (strcmp(key, "nvlink_domains") == 0) {
        rc = gp__yaml_int(&r->y, v, key, what, 1, GP_MAX_GPUS_PER_NODE, &n);
        s->nvlink_domains = (int)n;
        return rc;
    }
    if (strcmp(key, "gpu_mem_mib") == 0)
        return gp__yaml_int(&r->y, v, key, what, 0, INT64_C(1) << 40, &s->gpu_mem_mib);
    if (strcmp(key, "cpu_millis") == 0)
        return gp__yaml_int(&r->y, v, key, what, 0, INT64_C(1) << 40, &s->cpu_millis);
    if (strcmp(key, "mem_mib") == 0)
        return gp__yaml_int(&r->y, v, key, what, 0, INT64_C(1) << 40, &s->mem_mib);
    if (strcmp(key, "sharing") == 0) {
        rc = gp__yaml_enum(&r->y, v, key, what, sharing_names, 4, &choice);
        s->sharing = (gp_sharing)choice;
        return rc;
    }
    if (strcmp(key, "gpu_uuids") == 0) {
        ne->uuids = v;
        return gp__yaml_expect_sequence(&r->y, v, key);
    }
    if (strcmp(key, "gpu_sharing") == 0) {
        ne->gpu_sharing = v;
        return gp__yaml_expect_sequence(&r->y, v, key);
    }
    return gp__yaml_fail(&r->y, v, key,
                         "unknown field %s (nodes take name, count, zone, block, gpu_type, gpus, nvlink_domains, "
                         "gpu_mem_mib, cpu_millis, mem_mib, sharing, gpu_sharing, gpu_uuids, pool)",
                         what);
}

static gp_err check_node_entry(fleet_reader *r, node_entry *ne, size_t index)
{
    static const char *const required[] = {"name", "gpu_type", "gpus"};
    const bool missing[] = {ne->name[0] == '\0', ne->gpu_type[0] == '\0', ne->spec.gpu_count == 0};
    for (int i = 0; i < 3; i++)
        if (missing[i])
            return gp__yaml_fail(&r->y, ne->at, required[i], "nodes[%zu].%s is required", index, required[i]);
    if (ne->spec.gpu_count % ne->spec.nvlink_domains != 0)
        return gp__yaml_fail(&r->y, ne->at, "nvlink_domains", "nodes[%zu].nvlink_domains (%d) must divide gpus (%d)",
                             index, ne->spec.nvlink_domains, ne->spec.gpu_count);
    if (ne->uuids && ne->has_count && ne->count > 1)
        return gp__yaml_fail(&r->y, ne->uuids, "gpu_uuids", "nodes[%zu].gpu_uuids cannot be given with count > 1",
                             index);
    const yaml_node_t *lists[] = {ne->uuids, ne->gpu_sharing};
    const char *list_names[] = {"gpu_uuids", "gpu_sharing"};
    for (int i = 0; i < 2; i++)
        if (lists[i] && gp__yaml_seq_size(lists[i]) != (size_t)ne->spec.gpu_count)
            return gp__yaml_fail(&r->y, lists[i], list_names[i], "nodes[%zu].%s has %zu entries, gpus is %d", index,
                                 list_names[i], gp__yaml_seq_size(lists[i]), ne->spec.gpu_count);
    if (strcmp(ne->pool, "default") != 0) {
        bool known = false;
        for (size_t p = 0; p < r->out->n_pools; p++)
            known = known || strcmp(r->out->pools[p].name, ne->pool) == 0;
        if (!known)
            return gp__yaml_fail(&r->y, ne->at, "pool", "nodes[%zu].pool %s is not listed under pools", index,
                                 ne->pool);
    }
    return GP_OK;
}

/* Per-GPU arrays (uuids, sharing modes) for one expanded node. */
static gp_err fill_gpu_lists(fleet_reader *r, const node_entry *ne, gp_node_spec *s, size_t index)
{
    if (ne->uuids) {
        const char **uuids = keep(r->store, calloc((size_t)s->gpu_count, sizeof *uuids));
        if (!uuids)
            return nomem(r);
        for (int g = 0; g < s->gpu_count; g++) {
            char buf[GP_UUID_MAX], what[96];
            snprintf(what, sizeof what, "nodes[%zu].gpu_uuids[%d]", index, g);
            gp_err rc = gp__yaml_string(&r->y, gp__yaml_seq_item(&r->y, ne->uuids, (size_t)g), "gpu_uuids", what,
                                        buf, sizeof buf);
            if (rc)
                return rc;
            if (!(uuids[g] = keep_string(r->store, buf)))
                return nomem(r);
        }
        s->gpu_uuids = uuids;
    }
    if (ne->gpu_sharing) {
        gp_sharing *modes = keep(r->store, calloc((size_t)s->gpu_count, sizeof *modes));
        if (!modes)
            return nomem(r);
        for (int g = 0; g < s->gpu_count; g++) {
            char what[96];
            int choice = 0;
            snprintf(what, sizeof what, "nodes[%zu].gpu_sharing[%d]", index, g);
            gp_err rc = gp__yaml_enum(&r->y, gp__yaml_seq_item(&r->y, ne->gpu_sharing, (size_t)g), "gpu_sharing",
                                      what, sharing_names, 4, &choice);
            if (rc)
                return rc;
            modes[g] = (gp_sharing)choice;
        }
        s->gpu_sharing = modes;
    }
    return GP_OK;
}

static gp_err push_node(fleet_reader *r, const node_entry *ne, const char *name, size_t index)
{
    uint32_t seen;
    if (gp_strmap_get(&r->node_names, name, &seen))
        return gp__yaml_fail(&r->y, ne->at, "name", "node %s is defined twice (nodes[%u] has it already)", name,
                             seen);
    if (!gp_strmap_put(&r->node_names, name, (uint32_t)index))
        return nomem(r);
    if (r->out->n_nodes == r->cap_nodes) {
        size_t cap = r->cap_nodes ? r->cap_nodes * 2 : 16;
        gp_node_spec *grown = realloc(r->out->nodes, cap * sizeof *grown);
        if (!grown)
            return nomem(r);
        r->out->nodes = grown;
        r->cap_nodes = cap;
    }
    gp_node_spec s = ne->spec;
    s.name = keep_string(r->store, name);
    s.zone = keep_string(r->store, ne->zone);
    s.block = keep_string(r->store, ne->block);
    s.gpu_type = keep_string(r->store, ne->gpu_type);
    s.pool = keep_string(r->store, ne->pool);
    if (!s.name || !s.zone || !s.block || !s.gpu_type || !s.pool)
        return nomem(r);
    gp_err rc = fill_gpu_lists(r, ne, &s, index);
    if (rc)
        return rc;
    r->out->nodes[r->out->n_nodes++] = s;
    return GP_OK;
}

static gp_err read_node(fleet_reader *r, yaml_node_t *item, size_t index)
{
    gp_err rc = gp__yaml_expect_mapping(&r->y, item, "nodes");
    if (rc)
        return rc;
    node_entry ne;
    memset(&ne, 0, sizeof ne);
    strcpy(ne.zone, "default");
    strcpy(ne.block, "default");
    strcpy(ne.pool, "default");
    ne.count = 1;
    ne.spec.nvlink_domains = 1;
    ne.spec.sharing = GP_SHARING_EXCLUSIVE;
    ne.at = item;
    for (size_t i = 0; i < gp__yaml_map_size(item); i++) {
        const char *key;
        yaml_node_t *v;
        if ((rc = gp__yaml_map_pair(&r->y, item, i, "nodes", &key, &v)) || (rc = read_node_field(r, &ne, key, v, index)))
            return rc;
    }
    if ((rc = check_node_entry(r, &ne, index)))
        return rc;
    if (!ne.has_count)
        return push_node(r, &ne, ne.name, index);
    for (int64_t k = 0; k < ne.count; k++) {
        char name[GP_NAME_MAX + 16];
        snprintf(name, sizeof name, "%s-%lld", ne.name, (long long)k);
        if (strlen(name) >= GP_NAME_MAX)
            return gp__yaml_fail(&r->y, item, "name", "node name %s is longer than %d characters", name,
                                 GP_NAME_MAX - 1);
        if ((rc = push_node(r, &ne, name, index)))
            return rc;
    }
    return GP_OK;
}

/* ---- the file ---- */

static gp_err read_list(fleet_reader *r, yaml_node_t *list, const char *field,
                        gp_err (*read_item)(fleet_reader *, yaml_node_t *, size_t))
{
    gp_err rc = gp__yaml_expect_sequence(&r->y, list, field);
    for (size_t i = 0; rc == GP_OK && i < gp__yaml_seq_size(list); i++)
        rc = read_item(r, gp__yaml_seq_item(&r->y, list, i), i);
    return rc;
}

static gp_err read_fleet(fleet_reader *r)
{
    yaml_node_t *root = gp__yaml_root(&r->y);
    if (!root)
        return gp_error_set(r->y.err, GP_ERR_INVALID, "nodes", "%s:1: the fleet file is empty", r->y.name);
    gp_err rc = gp__yaml_expect_mapping(&r->y, root, "fleet file");
    if (rc)
        return rc;
    yaml_node_t *pools = NULL, *nodes = NULL;
    for (size_t i = 0; i < gp__yaml_map_size(root); i++) {
        const char *key;
        yaml_node_t *v;
        if ((rc = gp__yaml_map_pair(&r->y, root, i, "fleet file", &key, &v)))
            return rc;
        if (strcmp(key, "pools") == 0)
            pools = v;
        else if (strcmp(key, "nodes") == 0)
            nodes = v;
        else
            return gp__yaml_fail(&r->y, v, key, "unknown field %s (a fleet file has pools and nodes)", key);
    }
    if (!nodes)
        return gp__yaml_fail(&r->y, root, "nodes", "the fleet file has no nodes list");
    /* pools first: nodes refer to them */
    if (pools && (rc = read_list(r, pools, "pools", read_pool)))
        return rc;
    return read_list(r, nodes, "nodes", read_node);
}

gp_err gp_fleet_file_parse(const char *text, size_t len, const char *name, gp_fleet_file *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    fleet_reader r;
    memset(&r, 0, sizeof r);
    r.out = out;
    r.store = calloc(1, sizeof *r.store);
    if (!r.store)
        return gp_error_set(err, GP_ERR_NOMEM, "file", "out of memory");
    out->storage = r.store;
    gp_err rc = gp__yaml_load(&r.y, text, len, name, err);
    if (rc == GP_OK)
        rc = read_fleet(&r);
    gp__yaml_free(&r.y);
    gp_strmap_free(&r.node_names);
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
