/* tenant_file.c - the tenant file: the tenancy tree, read with the spec codec.
 *
 * The format is in tenant_file.h and docs/fleet-file.md.  The skeleton
 * every file reader shares (config/yaml_file.h) loads the file with the
 * one YAML reader (spec/yaml_json.c), checks its top and walks `tenants:`;
 * each entry of `tenants:` minus its `path` is then a tenant body exactly
 * as PUT /v1/tenants/{path} takes it, decoded by gp_tenant_spec_parse, so
 * the file and the API share every field rule (GPU amounts as exact
 * decimals, "0.0005" an error rather than a silent rounding; cpu/mem not
 * given do not constrain; time_limit per job kind, which the file alone
 * may write as durations: "2d", "8:00:00").  Codec errors come back
 * with the file, the line and the entry: "tenants.yaml:7: tenants[1]:
 * guarantee.gpu.H100 must be ...".
 *
 * What only the file has is checked here: `path` and duplicate paths
 * (the entries may come in any order).
 * Whether the guarantees fit each other and the fleet is the engine's rule,
 * checked when the file is applied (gp_tenant_file_apply names the tenant).
 */
#include "config/tenant_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml_file.h"
#include "spec/json_input.h"
#include "spec/spec_json.h"
#include "util/duration.h"

/* Paths are unique.  Their order is free: gpupoold's apply sets the
 * entries in an order the tree allows (parents it creates first) and
 * judges the tree as it is after the whole file; a parent absent from the
 * file may exist already (the engine says "parent tenant X does not
 * exist" when it does not). */
static gp_err check_unique(const gp_yaml_lines *lines, const gp_tenant_file *f, const gp_tenant_entry *t,
                           const char *at, gp_error *err)
{
    char field[64];
    snprintf(field, sizeof field, "%s.path", at);
    for (size_t i = 0; i < f->n_tenants; i++)
        if (strcmp(f->tenants[i].path, t->path) == 0)
            return gp_yaml_fail(lines, field, err, field, "tenant %s is listed twice", t->path);
    return GP_OK;
}

/* body without its null members (a null clears a field in an apply; the
 * codec reads the rest). */
static json_t *without_nulls(const json_t *body)
{
    json_t *copy = json_copy((json_t *)body);
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(copy, tmp, key, v) {
        if (json_is_null(v))
            json_object_del(copy, key);
    }
    return copy;
}

/* A file may write the time limits of `time_limit` as durations
 * ("training: 2d", "interactive: 8:00:00"; util/duration.h): as seconds
 * here, so the codec (and the API, which takes seconds) sees integers. */
static gp_err time_limit_durations(json_t *body, gp_error *err)
{
    const char *kind;
    json_t *x;
    json_object_foreach(json_object_get(body, "time_limit"), kind, x) {
        int64_t seconds;
        if (!json_is_string(x))
            continue;
        char field[GP_ERROR_FIELD_MAX];
        gp_json_field_name(field, sizeof field, "time_limit", kind);
        if (!gp_duration_parse_seconds(json_string_value(x), &seconds))
            return gp_error_set(err, GP_ERR_INVALID, field, "%s must be %s, got \"%.40s\"", field,
                                GP_DURATION_SECONDS_FORMS, json_string_value(x));
        json_object_set_new(json_object_get(body, "time_limit"), kind, json_integer(seconds));
    }
    return GP_OK;
}

/* One entry: `path` is the file's, the rest is a tenant body. */
static gp_err read_tenant(void *reader, const gp_yaml_lines *lines, const json_t *item, const char *at, size_t index,
                          gp_error *err)
{
    static const char *const own[] = {"path", NULL};
    gp_tenant_file *f = reader;
    (void)index;
    gp_tenant_entry *t = &f->tenants[f->n_tenants];
    memset(t, 0, sizeof *t);
    const json_t *path = json_object_get(item, "path");
    gp_err rc = path ? gp_json_string(path, "path", sizeof t->path - 1, t->path, sizeof t->path, err)
                     : gp_error_set(err, GP_ERR_INVALID, "path", "path is required");
    json_t *body = gp_yaml_file_body(item, own);
    if (!body)
        rc = gp_error_set(err, GP_ERR_NOMEM, "", "out of memory");
    if (rc == GP_OK)
        rc = time_limit_durations(body, err); /* into seconds in body: the fields an apply sets too */
    json_t *set = body && rc == GP_OK ? without_nulls(body) : NULL;
    if (rc == GP_OK)
        rc = set ? gp_tenant_spec_parse(set, &t->spec, err) : gp_error_set(err, GP_ERR_NOMEM, "", "out of memory");
    json_decref(set);
    if (rc) {
        json_decref(body);
        gp_yaml_locate(lines, at, err);
        return rc;
    }
    if ((rc = check_unique(lines, f, t, at, err))) {
        json_decref(body);
        return rc;
    }
    t->fields = body;
    f->n_tenants++;
    return GP_OK;
}

static gp_err read_tenants(void *out, const gp_yaml_lines *lines, const json_t *root, gp_error *err)
{
    gp_tenant_file *f = out;
    size_t n = json_array_size(json_object_get(root, "tenants"));
    f->tenants = calloc(n ? n : 1, sizeof *f->tenants);
    if (!f->tenants)
        return gp_error_set(err, GP_ERR_NOMEM, "file", "%s: out of memory", lines->name);
    return gp_yaml_file_each(lines, root, "tenants", read_tenant, f, err);
}

static void release_tenants(void *out)
{
    gp_tenant_file_free(out);
}

static const gp_yaml_file_kind tenant_kind = {
    .what = "tenant file",
    .size = sizeof(gp_tenant_file),
    .keys = {"tenants"},
    .list = "tenants",
    .holds = "a tenants list",
    .read = read_tenants,
    .release = release_tenants,
};

gp_err gp_tenant_file_parse(const char *text, size_t len, const char *name, gp_tenant_file *out, gp_error *err)
{
    return gp_yaml_file_parse(&tenant_kind, text, len, name, out, err);
}

gp_err gp_tenant_file_load(const char *path, gp_tenant_file *out, gp_error *err)
{
    return gp_yaml_file_load(&tenant_kind, path, out, err);
}

void gp_tenant_file_free(gp_tenant_file *f)
{
    for (size_t i = 0; f->tenants && i < f->n_tenants; i++)
        json_decref(f->tenants[i].fields);
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
