/* tenant_file.c - the tenant file: the tenancy tree, read strictly.
 *
 * The format is in tenant_file.h and docs/fleet-file.md.  Each entry of
 * `tenants:` becomes one gp_tenant_spec.  Quotas are mappings
 * {gpu: {TYPE: GPUs}, cpu_millis, mem_mib}; GPU amounts are GPUs with up
 * to three decimals (gp_gpu_amount_parse), so "0.5" is 500 milli-GPUs and
 * "0.0005" is an error rather than a silent rounding.  A quota that is
 * given is `set`; cpu/mem not given stay GP_UNLIMITED (do not constrain).
 * `time_limit` maps job kinds to default time limits in seconds; kinds not
 * given take the parent's (0).
 *
 * The file checks what it can see on its own: types, ranges, duplicate
 * paths, and that no parent comes after its children (a parent the file
 * does not list may exist already: the engine checks that).  Whether the
 * guarantees fit each other and the fleet is the engine's rule, checked
 * when the file is applied (gp_tenant_file_apply names the tenant).
 */
#include "config/tenant_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/yaml_doc.h"
#include "util/file.h"

static const char *const trust_names[] = {"inherit", "trusted", "untrusted"};
static const char *const kind_names[] = {"training", "inference", "interactive"};

bool gp_gpu_amount_parse(const char *text, int64_t *milli)
{
    if (!text)
        return false;
    const char *p = text;
    int64_t whole = 0, frac = 0;
    int int_digits = 0, frac_digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, int_digits++) {
        whole = whole * 10 + (*p - '0');
        if (whole > 1000000000)
            return false;
    }
    if (int_digits == 0)
        return false;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, frac_digits++) {
            if (frac_digits == 3)
                return false;
            frac = frac * 10 + (*p - '0');
        }
        if (frac_digits == 0)
            return false;
    }
    if (*p != '\0')
        return false;
    for (int d = frac_digits; d < 3; d++)
        frac *= 10;
    int64_t v = whole * 1000 + frac;
    if (v > INT64_C(1000000000000))
        return false;
    *milli = v;
    return true;
}

static gp_err read_gpu_map(gp__yaml *y, yaml_node_t *map, const char *what, gp_quota *q)
{
    gp_err rc = gp__yaml_expect_mapping(y, map, "gpu");
    for (size_t i = 0; rc == GP_OK && i < gp__yaml_map_size(map); i++) {
        const char *type;
        yaml_node_t *v;
        if ((rc = gp__yaml_map_pair(y, map, i, what, &type, &v)))
            return rc;
        if (q->n_gpu == GP_MAX_GPU_TYPES)
            return gp__yaml_fail(y, v, "gpu", "%s lists more than %d GPU types", what, GP_MAX_GPU_TYPES);
        if (strlen(type) == 0 || strlen(type) >= GP_NAME_MAX)
            return gp__yaml_fail(y, v, "gpu", "%s has a GPU type name of 0 or %d+ characters", what, GP_NAME_MAX);
        char field_what[GP_PATH_MAX];
        snprintf(field_what, sizeof field_what, "%s.%s", what, type);
        snprintf(q->gpu[q->n_gpu].type, GP_NAME_MAX, "%s", type);
        rc = gp__yaml_gpu_amount(y, v, "gpu", field_what, &q->gpu[q->n_gpu].milli);
        q->n_gpu++;
    }
    return rc;
}

/* A quota mapping under `field` (guarantee, limit, user_limit). */
static gp_err read_quota(gp__yaml *y, yaml_node_t *map, const char *field, size_t index, gp_quota *q)
{
    gp_err rc = gp__yaml_expect_mapping(y, map, field);
    if (rc)
        return rc;
    memset(q, 0, sizeof *q);
    q->set = true;
    q->cpu_millis = GP_UNLIMITED;
    q->mem_mib = GP_UNLIMITED;
    for (size_t i = 0; i < gp__yaml_map_size(map); i++) {
        const char *key;
        yaml_node_t *v;
        char what[96];
        if ((rc = gp__yaml_map_pair(y, map, i, field, &key, &v)))
            return rc;
        snprintf(what, sizeof what, "tenants[%zu].%s.%s", index, field, key);
        if (strcmp(key, "gpu") == 0)
            rc = read_gpu_map(y, v, what, q);
        else if (strcmp(key, "cpu_millis") == 0)
            rc = gp__yaml_int(y, v, key, what, 0, INT64_MAX - 1, &q->cpu_millis);
        else if (strcmp(key, "mem_mib") == 0)
            rc = gp__yaml_int(y, v, key, what, 0, INT64_MAX - 1, &q->mem_mib);
        else
            rc = gp__yaml_fail(y, v, key, "unknown field %s (a quota has gpu, cpu_millis, mem_mib)", what);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* time_limit: {KIND: seconds}, the default (and maximum) per job kind. */
static gp_err read_time_limits(gp__yaml *y, yaml_node_t *map, size_t index, gp_tenant_spec *spec)
{
    gp_err rc = gp__yaml_expect_mapping(y, map, "time_limit");
    for (size_t i = 0; rc == GP_OK && i < gp__yaml_map_size(map); i++) {
        const char *key;
        yaml_node_t *v;
        char what[96];
        if ((rc = gp__yaml_map_pair(y, map, i, "time_limit", &key, &v)))
            return rc;
        snprintf(what, sizeof what, "tenants[%zu].time_limit.%s", index, key);
        int kind = 0;
        while (kind < 3 && strcmp(key, kind_names[kind]) != 0)
            kind++;
        if (kind == 3)
            return gp__yaml_fail(y, v, "time_limit",
                                 "unknown field %s (time_limit has training, inference, interactive)", what);
        rc = gp__yaml_int(y, v, "time_limit", what, 1, GP_TIME_LIMIT_MAX_S, &spec->time_limit_s[kind]);
    }
    return rc;
}

static gp_err read_tenant_field(gp__yaml *y, gp_tenant_entry *t, const char *key, yaml_node_t *v, size_t index)
{
    char what[96];
    snprintf(what, sizeof what, "tenants[%zu].%s", index, key);
    gp_err rc;
    if (strcmp(key, "path") == 0)
        return gp__yaml_string(y, v, key, what, t->path, sizeof t->path);
    if (strcmp(key, "guarantee") == 0)
        return read_quota(y, v, key, index, &t->spec.guarantee);
    if (strcmp(key, "limit") == 0)
        return read_quota(y, v, key, index, &t->spec.limit);
    if (strcmp(key, "user_limit") == 0)
        return read_quota(y, v, key, index, &t->spec.user_limit);
    if (strcmp(key, "weight") == 0)
        return gp__yaml_number(y, v, key, what, GP_WEIGHT_MIN, GP_WEIGHT_MAX, &t->spec.weight);
    if (strcmp(key, "lend") == 0) {
        bool lend = false;
        rc = gp__yaml_bool(y, v, key, what, &lend);
        t->spec.lend = lend ? 1 : 0;
        return rc;
    }
    if (strcmp(key, "trust") == 0) {
        int choice = 0;
        rc = gp__yaml_enum(y, v, key, what, trust_names, 3, &choice);
        t->spec.trust = (gp_trust)choice;
        return rc;
    }
    if (strcmp(key, "time_limit") == 0)
        return read_time_limits(y, v, index, &t->spec);
    return gp__yaml_fail(y, v, key,
                         "unknown field %s (tenants take path, guarantee, limit, user_limit, weight, lend, trust, "
                         "time_limit)",
                         what);
}

/* Paths are unique, and no ancestor comes after one of its descendants:
 * entries are applied in file order.  A parent absent from the file is
 * not the file's to judge (it may exist already; the engine says
 * "parent tenant X does not exist" when it does not). */
static gp_err check_tree_order(gp__yaml *y, const gp_tenant_file *f, const gp_tenant_entry *t, yaml_node_t *at)
{
    size_t len = strlen(t->path);
    for (size_t i = 0; i < f->n_tenants; i++) {
        const char *other = f->tenants[i].path;
        if (strcmp(other, t->path) == 0)
            return gp__yaml_fail(y, at, "path", "tenant %s is listed twice", t->path);
        if (strncmp(other, t->path, len) == 0 && other[len] == '/')
            return gp__yaml_fail(y, at, "path", "tenant %s comes after its child %s (parents first)", t->path,
                                 other);
    }
    return GP_OK;
}

static gp_err read_tenant(gp__yaml *y, gp_tenant_file *f, yaml_node_t *item, size_t index)
{
    gp_err rc = gp__yaml_expect_mapping(y, item, "tenants");
    if (rc)
        return rc;
    gp_tenant_entry *t = &f->tenants[f->n_tenants];
    memset(t, 0, sizeof *t);
    t->spec.lend = -1;
    t->spec.trust = GP_TRUST_INHERIT;
    for (size_t i = 0; i < gp__yaml_map_size(item); i++) {
        const char *key;
        yaml_node_t *v;
        if ((rc = gp__yaml_map_pair(y, item, i, "tenants", &key, &v)) || (rc = read_tenant_field(y, t, key, v, index)))
            return rc;
    }
    if (t->path[0] == '\0')
        return gp__yaml_fail(y, item, "path", "tenants[%zu].path is required", index);
    if ((rc = check_tree_order(y, f, t, item)))
        return rc;
    f->n_tenants++;
    return GP_OK;
}

static gp_err read_tenants(gp__yaml *y, gp_tenant_file *f)
{
    yaml_node_t *root = gp__yaml_root(y);
    if (!root)
        return gp_error_set(y->err, GP_ERR_INVALID, "tenants", "%s:1: the tenant file is empty", y->name);
    gp_err rc = gp__yaml_expect_mapping(y, root, "tenant file");
    yaml_node_t *list = NULL;
    for (size_t i = 0; rc == GP_OK && i < gp__yaml_map_size(root); i++) {
        const char *key;
        yaml_node_t *v;
        if ((rc = gp__yaml_map_pair(y, root, i, "tenant file", &key, &v)))
            return rc;
        if (strcmp(key, "tenants") != 0)
            return gp__yaml_fail(y, v, key, "unknown field %s (a tenant file has tenants)", key);
        list = v;
    }
    if (rc)
        return rc;
    if (!list)
        return gp__yaml_fail(y, root, "tenants", "the tenant file has no tenants list");
    if ((rc = gp__yaml_expect_sequence(y, list, "tenants")))
        return rc;
    size_t n = gp__yaml_seq_size(list);
    f->tenants = calloc(n ? n : 1, sizeof *f->tenants);
    if (!f->tenants)
        return gp_error_set(y->err, GP_ERR_NOMEM, "file", "%s: out of memory", y->name);
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        rc = read_tenant(y, f, gp__yaml_seq_item(y, list, i), i);
    return rc;
}

gp_err gp_tenant_file_parse(const char *text, size_t len, const char *name, gp_tenant_file *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    gp__yaml y;
    gp_err rc = gp__yaml_load(&y, text, len, name, err);
    if (rc == GP_OK)
        rc = read_tenants(&y, out);
    gp__yaml_free(&y);
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
