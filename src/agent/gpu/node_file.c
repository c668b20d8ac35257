/* node_file.c - the sim backend's node file (format in node_file.h and
 * docs/agent.md).
 *
 * The YAML file skeleton (config/yaml_file.h: load, check the top, walk the
 * list) and the one YAML reader under it turn the file into json_t with a
 * line map; each entry, less the simulator's own fields (`count`,
 * `device_dir`), is decoded by gp_fleet_node_parse, the codec the fleet
 * file and the event log use, so a node obeys one set of field rules
 * wherever it is written.  Codec errors come back with the file, the line
 * and the entry.  Only what the node file alone has is checked here.
 */
#include "agent/gpu/node_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml_file.h"
#include "spec/json_input.h"
#include "spec/spec_json.h"
#include "util/grow.h"
#include "util/hashmap.h"

typedef struct node_reader {
    const gp_yaml_lines *lines;
    gp_error *err;
    gp_node_file *out;
    size_t cap;
    gp_strmap names;
    gp_node_request *request; /* the entry being decoded (large: one per reader) */
} node_reader;

static gp_err nomem(node_reader *r)
{
    return gp_error_set(r->err, GP_ERR_NOMEM, "node_file", "%s: out of memory", r->lines->name);
}

/* The entry's fields as the codec decoded them, plus device_dir. */
static void fill_node(const gp_node_request *q, const char *device_dir, gp_sim_node *n)
{
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", q->name);
    snprintf(n->zone, sizeof n->zone, "%s", q->zone);
    snprintf(n->block, sizeof n->block, "%s", q->block);
    snprintf(n->gpu_type, sizeof n->gpu_type, "%s", q->gpu_type);
    snprintf(n->pool, sizeof n->pool, "%s", q->pool);
    snprintf(n->device_dir, sizeof n->device_dir, "%s", device_dir);
    n->gpu_count = q->spec.gpu_count;
    n->nvlink_domains = q->spec.nvlink_domains;
    n->gpu_mem_mib = q->spec.gpu_mem_mib;
    n->cpu_millis = q->spec.cpu_millis;
    n->mem_mib = q->spec.mem_mib;
    for (int g = 0; g < n->gpu_count; g++) {
        n->sharing[g] = q->spec.gpu_sharing ? q->spec.gpu_sharing[g] : q->spec.sharing;
        if (q->spec.gpu_uuids)
            snprintf(n->uuids[g], sizeof n->uuids[g], "%s", q->spec.gpu_uuids[g]);
    }
}

static gp_err push_node(node_reader *r, const gp_sim_node *n, const char *at)
{
    uint32_t seen;
    if (gp_strmap_get(&r->names, n->name, &seen)) {
        char field[64];
        snprintf(field, sizeof field, "%s.name", at);
        return gp_yaml_fail(r->lines, field, r->err, field, "node %s is defined twice", n->name);
    }
    if (!gp_strmap_put(&r->names, n->name, (uint32_t)r->out->n_nodes))
        return nomem(r);
    gp_sim_node *grown = gp_grow(r->out->nodes, &r->cap, r->out->n_nodes + 1, sizeof *grown);
    if (!grown)
        return nomem(r);
    r->out->nodes = grown;
    r->out->nodes[r->out->n_nodes++] = *n;
    return GP_OK;
}

/* The simulator's own fields: count (0 = not given) and device_dir. */
static gp_err read_sim_fields(node_reader *r, const json_t *item, int64_t *count, char *device_dir)
{
    const json_t *v = json_object_get(item, "count");
    gp_err rc = GP_OK;
    *count = 0;
    device_dir[0] = '\0';
    if (v)
        rc = gp_json_int(v, "count", 1, 100000, count, r->err);
    if (rc == GP_OK && *count > 1 && r->request->spec.gpu_uuids)
        rc = gp_error_set(r->err, GP_ERR_INVALID, "gpu_uuids", "gpu_uuids cannot be given with count > 1");
    if (rc == GP_OK && (v = json_object_get(item, "device_dir")))
        rc = gp_json_string(v, "device_dir", GP_GPU_PATH_MAX - 64, device_dir, GP_GPU_PATH_MAX, r->err);
    return rc;
}

static gp_err read_node(void *reader, const gp_yaml_lines *lines, const json_t *item, const char *at, size_t index,
                        gp_error *err)
{
    (void)index;
    node_reader *r = reader; /* r->lines and r->err are lines and err */
    static const char *const own[] = {"count", "device_dir", NULL};
    json_t *body = gp_yaml_file_body(item, own);
    if (!body)
        return nomem(r);
    gp_err rc = gp_fleet_node_parse(body, r->request, err);
    json_decref(body);
    int64_t count = 0;
    char device_dir[GP_GPU_PATH_MAX];
    if (rc == GP_OK)
        rc = read_sim_fields(r, item, &count, device_dir);
    if (rc) {
        gp_yaml_locate(lines, at, err);
        return rc;
    }
    gp_sim_node node;
    fill_node(r->request, device_dir, &node);
    if (count == 0)
        return push_node(r, &node, at);
    for (int64_t k = 0; rc == GP_OK && k < count; k++) {
        int len = snprintf(node.name, sizeof node.name, "%s-%lld", r->request->name, (long long)k);
        if (len >= (int)sizeof node.name) {
            char field[64];
            snprintf(field, sizeof field, "%s.name", at);
            return gp_yaml_fail(r->lines, field, r->err, field, "node name %s-%lld is longer than %d characters",
                                r->request->name, (long long)k, GP_NAME_MAX - 1);
        }
        rc = push_node(r, &node, at);
    }
    return rc;
}

/* The checked top: a nodes list of at least one node, each read in turn. */
static gp_err read_nodes(void *out, const gp_yaml_lines *lines, const json_t *root, gp_error *err)
{
    const json_t *list = json_object_get(root, "nodes");
    if (!json_is_array(list) || json_array_size(list) == 0)
        return gp_yaml_fail(lines, "nodes", err, "nodes", "nodes must be a list of at least one node");
    node_reader r = {.lines = lines, .err = err, .out = out, .request = malloc(sizeof *r.request)};
    gp_err rc = r.request ? gp_yaml_file_each(lines, root, "nodes", read_node, &r, err)
                          : gp_error_set(err, GP_ERR_NOMEM, "node_file", "out of memory");
    gp_strmap_free(&r.names);
    free(r.request);
    return rc;
}

static void release_nodes(void *out)
{
    gp_node_file_free(out);
}

static const gp_yaml_file_kind node_kind = {
    .what = "node file", .size = sizeof(gp_node_file), .keys = {"nodes"}, .list = "nodes",
    .holds = "a nodes list", .read = read_nodes, .release = release_nodes,
};

gp_err gp_node_file_parse(const char *text, size_t len, const char *name, gp_node_file *out, gp_error *err)
{
    return gp_yaml_file_parse(&node_kind, text, len, name, out, err);
}

gp_err gp_node_file_load(const char *path, gp_node_file *out, gp_error *err)
{
    gp_err rc = gp_yaml_file_load(&node_kind, path, out, err);
    if (rc == GP_ERR_NOT_FOUND && err) /* an unopenable node file is named as the option that gave it */
        snprintf(err->field, sizeof err->field, "node_file");
    return rc;
}

void gp_node_file_free(gp_node_file *f)
{
    free(f->nodes);
    memset(f, 0, sizeof *f);
}

gp_err gp_node_file_find(const gp_node_file *f, const char *name, size_t *index, gp_error *err)
{
    if (!name) {
        if (f->n_nodes == 1) {
            *index = 0;
            return GP_OK;
        }
        return gp_error_set(err, GP_ERR_INVALID, "node", "the node file lists %zu nodes (%s, ...): name one",
                            f->n_nodes, f->nodes[0].name);
    }
    for (size_t i = 0; i < f->n_nodes; i++)
        if (strcmp(f->nodes[i].name, name) == 0) {
            *index = i;
            return GP_OK;
        }
    return gp_error_set(err, GP_ERR_NOT_FOUND, "node", "node %s is not in the node file", name);
}
