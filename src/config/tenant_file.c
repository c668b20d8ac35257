/* tenant_file.c - the tenant file: the tenancy tree, read with the spec codec.
 *
 * The format is in tenant_file.h and docs/fleet-file.md.  The one YAML
 * reader (spec/yaml_json.c) turns the file into json_t with a line map;
 * each entry of `tenants:` minus its `path` is then a tenant body exactly
 * as PUT /v1/tenants/{path} takes it, decoded by gp_tenant_spec_parse, so
 * the file and the API share every field rule (GPU amounts as exact
 * decimals, "0.0005" an error rather than a silent rounding; cpu/mem not
 * given do not constrain; time_limit per job kind).  Codec errors come back
 * with the file, the line and the entry: "tenants.yaml:7: tenants[1]:
 * guarantee.gpu.H100 must be ...".
 *
 * What only the file has is checked here: the `tenants` list, `path`,
 * duplicate paths, and that no parent comes after its children (a parent
 * the file does not list may exist already: the engine checks that).
 * Whether the guarantees fit each other and the fleet is the engine's rule,
 * checked when the file is applied (gp_tenant_file_apply names the tenant).
 */
#include "config/tenant_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/json_input.h"
#include "spec/spec_json.h"
#include "spec/yaml_json.h"
#include "util/file.h"

/* Paths are unique, and no ancestor comes after one of its descendants:
 * entries are applied in file order.  A parent absent from the file is
 * not the file's to judge (it may exist already; the engine says
 * "parent tenant X does not exist" when it does not). */
static gp_err check_tree_order(const gp_yaml_lines *lines, const gp_tenant_file *f, const gp_tenant_entry *t,
                               const char *at, gp_error *err)
{
    size_t len = strlen(t->path);
    char field[64];
    snprintf(field, sizeof field, "%s.path", at);
    for (size_t i = 0; i < f->n_tenants; i++) {
        const char *other = f->tenants[i].path;
        if (strcmp(other, t->path) == 0)
            return gp_yaml_fail(lines, field, err, field, "tenant %s is listed twice", t->path);
        if (strncmp(other, t->path, len) == 0 && other[len] == '/')
            return gp_yaml_fail(lines, field, err, field, "tenant %s comes after its child %s (parents first)",
                                t->path, other);
    }
    return GP_OK;
}

/* One entry: `path` is the file's, the rest is a tenant body. */
static gp_err read_tenant(const gp_yaml_lines *lines, gp_tenant_file *f, const json_t *item, size_t index,
                          gp_error *err)
{
    char at[32];
    snprintf(at, sizeof at, "tenants[%zu]", index);
    if (!json_is_object(item))
        return gp_yaml_fail(lines, at, err, at, "%s must be a mapping", at);
    gp_tenant_entry *t = &f->tenants[f->n_tenants];
    memset(t, 0, sizeof *t);
    const json_t *path = json_object_get(item, "path");
    gp_err rc = path ? gp_json_string(path, "path", sizeof t->path - 1, t->path, sizeof t->path, err)
                     : gp_error_set(err, GP_ERR_INVALID, "path", "path is required");
    json_t *body = json_copy((json_t *)item);
    if (!body)
        rc = gp_error_set(err, GP_ERR_NOMEM, "", "out of memory");
    if (rc == GP_OK) {
        json_object_del(body, "path");
        rc = gp_tenant_spec_parse(body, &t->spec, err);
    }
    json_decref(body);
    if (rc) {
        gp_yaml_locate(lines, at, err);
        return rc;
    }
    if ((rc = check_tree_order(lines, f, t, at, err)))
        return rc;
    f->n_tenants++;
    return GP_OK;
}

static gp_err read_tenants(const gp_yaml_lines *lines, const json_t *root, gp_tenant_file *f, gp_error *err)
{
    if (!root)
        return gp_error_set(err, GP_ERR_INVALID, "tenants", "%s:1: the tenant file is empty", lines->name);
    if (!json_is_object(root))
        return gp_yaml_fail(lines, "", err, "tenants", "a tenant file is a mapping with a tenants list");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        if (strcmp(key, "tenants") != 0)
            return gp_yaml_fail(lines, key, err, key, "unknown field %s (a tenant file has tenants)", key);
    }
    const json_t *list = json_object_get(root, "tenants");
    if (!list)
        return gp_yaml_fail(lines, "", err, "tenants", "the tenant file has no tenants list");
    if (!json_is_array(list))
        return gp_yaml_fail(lines, "tenants", err, "tenants", "tenants must be a list");
    size_t n = json_array_size(list);
    f->tenants = calloc(n ? n : 1, sizeof *f->tenants);
    if (!f->tenants)
        return gp_error_set(err, GP_ERR_NOMEM, "file", "%s: out of memory", lines->name);
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        rc = read_tenant(lines, f, json_array_get(list, i), i, err);
    return rc;
}

gp_err gp_tenant_file_parse(const char *text, size_t len, const char *name, gp_tenant_file *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    gp_yaml_lines lines;
    json_t *root = NULL;
    gp_err rc = gp_yaml_to_json(text, len, name, &root, &lines, err);
    if (rc == GP_OK)
        rc = read_tenants(&lines, root, out, err);
    json_decref(root);
    gp_yaml_lines_free(&lines);
    if (rc)
        gp_tenant_file_free(out);
    return rc;
}

gp_err gp_tenant_file_load(const char *path, gp_tenant_file *out, gp_error *err)
{
    char *text;
    size_t len;
    memset(out, 0, sizeof *out);
    gp_err rc = gp_file_read_all(path, &text, &len, err);
    if (rc)
        return rc;
    rc = gp_tenant_file_parse(text, len, path, out, err);
    free(text);
    return rc;
}

void gp_tenant_file_free(gp_tenant_file *f)
{
    free(f->tenants);
    memset(f, 0, sizeof *f);
}

gp_err gp_tenant_file_apply(const gp_tenant_file *f, gp_engine *e, int64_t now, gp_error *err)
{
    for (size_t i = 0; i < f->n_tenants; i++) {
        gp_err rc = gp_engine_tenant_set(e, f->tenants[i].path, &f->tenants[i].spec, now, err);
        if (rc && err) {
            char msg[GP_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "tenant %s: %s", f->tenants[i].path, err->message);
            snprintf(err->message, sizeof err->message, "%s", msg);
        }
        if (rc)
            return rc;
    }
    return GP_OK;
}
