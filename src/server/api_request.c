/* api_request.c - the helpers API handlers use to read a request and
 * answer it.
 *
 * It owns the reply conventions of docs/api.md: a JSON reply with its
 * status (gp_api_reply), errors as {"error": {code, message, field}} with
 * the status a gp_err maps to (gp_api_error, gp_api_fail, gp_api_forbidden);
 * reading query parameters (unknown ones refused, integers in range), a
 * JSON object body, a tenant path; running an op on the engine thread
 * (gp_api_run_op); and the scopes a caller may see.
 *
 * Example: GET /v1/jobs?limit=0 with gp_api_query_int(r, "limit", 1, 1000,
 * &n) replies 400 {"error": {"code": "invalid", "field": "limit",
 * "message": "limit must be an integer 1..1000"}} and returns false.
 */
#include "server/api.h"

#include "spec/json_input.h"
#include "util/nearest.h"
#include "util/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- replies ---- */

void gp_api_reply(gp_request *r, int status, json_t *reply)
{
    json_decref(r->reply);
    r->status = status;
    r->reply = reply;
}

void gp_api_error(gp_request *r, int status, const char *code, const char *field, const char *fmt, ...)
{
    char msg[512], name[GP_ERROR_FIELD_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(name, sizeof name, "%s", field ? field : "");
    gp_utf8_scrub(msg); /* a message quoting bad input stays a JSON string */
    gp_utf8_scrub(name);
    gp_api_reply(r, status, json_pack("{s:{s:s, s:s, s:s}}", "error", "code", code, "message", msg, "field", name));
}

void gp_api_fail(gp_request *r, const gp_error *err)
{
    gp_api_error(r, gp_status_of(err->code), gp_err_name(err->code), err->field, "%s", err->message);
}

void gp_api_forbidden(gp_request *r, const char *what)
{
    gp_api_error(r, 403, "forbidden", "", "role %s may not %s", gp_role_name(r->who.role), what);
}

/* ---- request helpers ---- */

const char *gp_api_query(gp_request *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

typedef struct query_check {
    const char *const *allowed;
    const char *bad;
} query_check;

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    (void)value;
    query_check *q = cls;
    for (const char *const *a = q->allowed; *a; a++)
        if (strcmp(*a, key) == 0)
            return MHD_YES;
    q->bad = key;
    return MHD_NO;
}

bool gp_api_query_only(gp_request *r, const char *const *allowed)
{
    query_check q = {.allowed = allowed, .bad = NULL};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_arg, &q);
    if (!q.bad)
        return true;
    char field[GP_ERROR_FIELD_MAX];
    snprintf(field, sizeof field, "%s", q.bad);
    gp_api_error(r, 400, "invalid", field, "unknown query parameter %s", field);
    return false;
}

bool gp_api_query_int(gp_request *r, const char *key, int64_t min, int64_t max, int64_t *out)
{
    const char *v = gp_api_query(r, key);
    if (!v)
        return true;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!v[0] || *end || errno || x < min || x > max) {
        gp_api_error(r, 400, "invalid", key, "%s must be an integer %lld..%lld", key, (long long)min,
                     (long long)max);
        return false;
    }
    *out = x;
    return true;
}

json_t *gp_api_body_object(gp_request *r)
{
    gp_error err;
    json_t *v;
    if (gp_json_parse_body(r->body, r->body_len, &v, &err) != GP_OK) {
        gp_api_fail(r, &err);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        gp_api_error(r, 400, "invalid", "body", "the body must be a JSON object");
        return NULL;
    }
    return v;
}

json_t *gp_api_body_list(gp_request *r, const char *key, size_t max, json_t **list)
{
    json_t *body = gp_api_body_object(r);
    if (!body)
        return NULL;
    *list = json_object_get(body, key);
    if (json_object_size(body) != 1 || !json_is_array(*list) || json_array_size(*list) > max) {
        json_decref(body);
        gp_api_error(r, 400, "invalid", key, "the body is {\"%s\": [...]} with at most %zu %s", key, max, key);
        return NULL;
    }
    return body;
}

bool gp_api_tenant_path_ok(gp_request *r, const char *path, const char *field)
{
    size_t len = path ? strlen(path) : 0;
    int depth = 1;
    bool ok = len > 0 && len < GP_PATH_MAX;
    for (size_t i = 0, seg = 0; ok && i <= len; i++) {
        char c = path[i];
        if (c == '/' || c == '\0') {
            ok = seg > 0 && seg < GP_NAME_MAX && path[i - seg] != '.';
            depth += c == '/';
            seg = 0;
            continue;
        }
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
             c == '.';
        seg++;
    }
    if (ok && depth <= GP_MAX_TENANT_DEPTH)
        return true;
    gp_api_error(r, 400, "invalid", field,
                 "%s must be 1..%d names of [A-Za-z0-9._-] (not starting with '.') joined by '/'", field,
                 GP_MAX_TENANT_DEPTH);
    return false;
}

bool gp_api_tenant_known(gp_request *r, gp_store *s, const char *path, const char *field)
{
    json_t *all = NULL;
    gp_error err;
    if (gp_store_tenants_get(s, &all, &err) != GP_OK) {
        gp_api_fail(r, &err);
        return false;
    }
    bool known = json_object_get(all, path) != NULL;
    if (!known) {
        size_t n = 0;
        const char **seen = calloc(json_object_size(all) + 1, sizeof *seen);
        const char *key;
        json_t *v;
        json_object_foreach(all, key, v) {
            if (seen && gp_principal_sees(&r->who, key))
                seen[n++] = key;
        }
        const char *near = seen ? gp_suggest(path, seen, n) : NULL;
        gp_api_error(r, 404, "not_found", field, "no tenant %s%s%s%s", path, near ? "; did you mean " : "",
                     near ? near : "", near ? "?" : "");
        free(seen);
    }
    json_decref(all);
    return known;
}

void gp_api_run_op(gp_request *r, gp_op *op)
{
    op->who = &r->who;
    op->request_id = r->request_id;
    gp_loop_run(&r->srv->loop, op);
    r->audited = op->mutates;
    gp_api_reply(r, op->status ? op->status : 500, op->reply);
    op->reply = NULL;
}

const char *const *gp_api_scopes(gp_request *r, int *n)
{
    if (gp_principal_sees_all(&r->who)) {
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < r->who.n_grants; i++)
        r->scopes[i] = r->who.grants[i].scope;
    *n = r->who.n_grants;
    return r->scopes;
}
