/* api_secrets.c - tenants' secrets (docs/api.md, "Secrets").
 *
 *   PUT    /v1/secrets/{name}?tenant=PATH   {"value": "..."}: set or replace
 *   DELETE /v1/secrets/{name}?tenant=PATH
 *   GET    /v1/secrets?tenant=PATH          names, sizes, who set them, when
 *
 * A secret belongs to a tenant.  Its tenant's tenant-admins (a scope
 * covering it) and admins set and delete it, audited (secret.set,
 * secret.delete; the audit names the secret, never its value); whoever
 * sees the tenant lists the names.  Nothing ever answers a value: the API
 * thread seals it (secret_box.h) before the engine thread stores it, and
 * only an agent's assignment carries it, in the entry of a replica its node
 * is to run (gp_api_assignment_secrets).
 *
 * A job names secrets by name, {"env_from_secret": {"HF_TOKEN": "hf"}}:
 * "hf" of the job's tenant, else of its parent, up to the top -- the
 * nearest wins, and nothing outside that chain is reachable.  A submit
 * naming one that chain lacks is 400 env_from_secret.HF_TOKEN.
 *
 * Example: research's tenant-admin sets "hf" on research; a job of
 * research/nlp with {"HF_TOKEN": "hf"} gets HF_TOKEN in its environment on
 * the node that runs it; a job of product/ads naming "hf" is refused at
 * submit, as is a member of research/nlp setting a secret (403).
 */
#include "server/api.h"

#include "spec/json_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- finding a job's secret ---- */

/* The secret `name` of tenant or its nearest ancestor that has one:
 * *sealed (the caller frees it, NULL when none) and its owner in owner. */
static gp_err secret_find(gp_store *s, const char *tenant, const char *name, char owner[GP_PATH_MAX],
                          char **sealed, gp_error *err)
{
    snprintf(owner, GP_PATH_MAX, "%s", tenant);
    for (;;) {
        gp_err rc = gp_store_secret_get(s, owner, name, sealed, err);
        char *slash = strrchr(owner, '/');
        if (rc != GP_OK || *sealed || !slash)
            return rc;
        *slash = '\0';
    }
}

gp_err gp_api_job_secrets_check(const gp_request *r, const gp_job_request *req, gp_error *err)
{
    if (!req->env_from_secret)
        return GP_OK;
    gp_store *s = gp_readers_take(&r->srv->readers, err);
    if (!s)
        return err->code;
    gp_err rc = GP_OK;
    const char *env;
    json_t *name;
    json_object_foreach(req->env_from_secret, env, name) {
        char owner[GP_PATH_MAX], *sealed = NULL;
        rc = secret_find(s, req->tenant, json_string_value(name), owner, &sealed, err);
        bool found = sealed != NULL;
        free(sealed);
        if (rc == GP_OK && !found) {
            char field[GP_ERROR_FIELD_MAX];
            gp_json_field_name(field, sizeof field, "env_from_secret", env);
            rc = gp_error_set(err, GP_ERR_INVALID, field,
                              "no secret %s in tenant %s or its ancestors (a job names only its own tenant's"
                              " secrets and its ancestors'; gpupool secret list TENANT)",
                              json_string_value(name), req->tenant);
        }
        if (rc != GP_OK)
            break;
    }
    gp_readers_give(&r->srv->readers, s);
    return rc;
}

void gp_api_assignment_secrets(gp_server *srv, gp_store *s, json_t *entry, const json_t *spec)
{
    json_t *wanted = json_object_get(spec, "env_from_secret");
    const char *tenant = json_string_value(json_object_get(spec, "tenant"));
    if (!json_object_size(wanted) || !tenant)
        return;
    json_t *out = json_object();
    const char *env;
    json_t *name;
    json_object_foreach(wanted, env, name) {
        char owner[GP_PATH_MAX], *sealed = NULL, *value = NULL;
        size_t len;
        gp_error err;
        char q[300];
        gp_err rc = secret_find(s, tenant, json_string_value(name), owner, &sealed, &err);
        if (rc == GP_OK && !sealed)
            rc = gp_error_set(&err, GP_ERR_NOT_FOUND, "secret", "deleted since the submit");
        if (rc == GP_OK)
            rc = gp_secret_open(&srv->secret_key, owner, json_string_value(name), sealed, &value, &len, &err);
        if (rc == GP_OK)
            json_object_set_new(out, env, json_stringn(value, len));
        else
            gp_log(GP_LOG_WARN, "secret_missing", "job=%lld env=%s secret=%s tenant=%s why=%s",
                   (long long)json_integer_value(json_object_get(entry, "job")), env, json_string_value(name),
                   tenant, gp_log_quote(err.message, q, sizeof q));
        free(sealed);
        free(value);
    }
    json_object_set_new(entry, "secrets", out);
}

/* ---- who may ---- */

/* The tenant of ?tenant=, checked: NULL with the reply made. */
static const char *query_tenant(gp_request *r)
{
    const char *tenant = gp_api_query(r, "tenant");
    if (!tenant) {
        gp_api_error(r, 400, "invalid", "tenant", "a secret belongs to a tenant: ?tenant=PATH");
        return NULL;
    }
    if (!gp_api_tenant_path_ok(r, tenant, "tenant"))
        return NULL;
    if (!gp_principal_sees(&r->who, tenant)) {
        gp_api_error(r, 404, "not_found", "tenant", "no tenant %.200s", tenant);
        return NULL;
    }
    return tenant;
}

/* Set and delete: admins, and tenant-admins whose scope covers tenant. */
static bool may_change(gp_request *r, const char *tenant)
{
    if (r->who.role == GP_ROLE_ADMIN ||
        (r->who.role == GP_ROLE_TENANT_ADMIN && gp_scope_covers(r->who.scope, tenant)))
        return true;
    gp_api_forbidden(r, "set or delete secrets (a tenant-admin of the tenant or an admin does)");
    return false;
}

static bool name_ok(gp_request *r, const char *name)
{
    if (gp_secret_name_ok(name))
        return true;
    gp_api_error(r, 400, "invalid", "name", "a secret's name is 1..128 of letters, digits, _ . - (not starting"
                 " with .)");
    return false;
}

/* ---- set, delete ---- */

typedef struct secret_arg {
    const char *tenant, *name;
    char *sealed; /* set: the sealed value */
    int64_t bytes;
} secret_arg;

static bool tenant_exists(gp_server *srv, gp_op *op, const char *tenant)
{
    uint32_t index;
    gp_error err;
    if (gp_engine_tenant_find(srv->journal.engine, tenant, &index, NULL) == GP_OK)
        return true;
    gp_error_set(&err, GP_ERR_NOT_FOUND, "tenant", "no tenant %s", tenant);
    gp_op_fail(op, &err);
    return false;
}

static void set_run(gp_server *srv, gp_op *op, int64_t now)
{
    secret_arg *a = op->arg;
    gp_error err;
    if (!tenant_exists(srv, op, a->tenant))
        return;
    gp_store_secret sec = {.tenant = a->tenant, .name = a->name, .sealed = a->sealed, .bytes = a->bytes,
                           .set_by = op->who->token_id, .updated = now};
    if (gp_store_secret_put(srv->store, &sec, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200,
                json_pack("{s:s, s:s, s:I, s:s, s:I}", "tenant", a->tenant, "name", a->name, "bytes",
                          (json_int_t)a->bytes, "set_by", sec.set_by, "updated", (json_int_t)now));
}

/* {"value": "..."}, sealed for tenant's name into a->sealed. */
static gp_err set_body(gp_request *r, secret_arg *a, gp_error *err)
{
    json_t *body = gp_api_body_object(r);
    if (!body)
        return GP_ERR_INVALID;
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach(body, key, v) {
        if (rc == GP_OK && strcmp(key, "value") != 0)
            rc = gp_json_unknown_field("", key, err);
    }
    json_t *value = json_object_get(body, "value");
    if (rc == GP_OK && !json_is_string(value))
        rc = gp_error_set(err, GP_ERR_INVALID, "value", "value must be a string (the secret)");
    a->bytes = (int64_t)json_string_length(value);
    if (rc == GP_OK)
        rc = gp_secret_seal(&r->srv->secret_key, a->tenant, a->name, json_string_value(value),
                            json_string_length(value), &a->sealed, err);
    json_decref(body);
    return rc;
}

static void secret_set(gp_request *r, const char *name)
{
    secret_arg a = {.name = name, .tenant = query_tenant(r)};
    if (!a.tenant || !may_change(r, a.tenant) || !name_ok(r, name))
        return;
    gp_error err;
    if (set_body(r, &a, &err) != GP_OK) {
        if (!r->reply)
            gp_api_fail(r, &err);
        free(a.sealed);
        return;
    }
    gp_op op = {.run = set_run, .mutates = true, .arg = &a, .action = "secret.set"};
    snprintf(op.target, sizeof op.target, "secret/%s/%s", a.tenant, name);
    gp_api_run_op(r, &op);
    free(a.sealed);
}

static void delete_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    secret_arg *a = op->arg;
    gp_error err;
    if (!tenant_exists(srv, op, a->tenant))
        return;
    if (gp_store_secret_delete(srv->store, a->tenant, a->name, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, json_pack("{s:s, s:s, s:b}", "tenant", a->tenant, "name", a->name, "deleted", 1));
}

static void secret_delete(gp_request *r, const char *name)
{
    secret_arg a = {.name = name, .tenant = query_tenant(r)};
    if (!a.tenant || !may_change(r, a.tenant) || !name_ok(r, name))
        return;
    gp_op op = {.run = delete_run, .mutates = true, .arg = &a, .action = "secret.delete"};
    snprintf(op.target, sizeof op.target, "secret/%s/%s", a.tenant, name);
    gp_api_run_op(r, &op);
}

void gp_api_secret(gp_request *r, const char *name)
{
    static const char *const allowed[] = {"tenant", NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (strcmp(r->method, "PUT") == 0)
        secret_set(r, name);
    else
        secret_delete(r, name);
}

/* ---- list ---- */

void gp_api_secrets_list(gp_request *r)
{
    static const char *const allowed[] = {"tenant", NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    const char *tenant = query_tenant(r);
    if (!tenant)
        return;
    gp_error err;
    json_t *list = NULL;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    if (!s) {
        gp_api_fail(r, &err);
        return;
    }
    if (gp_api_tenant_known(r, s, tenant, "tenant")) { /* else it replied 404 */
        if (gp_store_secrets_list(s, tenant, &list, &err) == GP_OK)
            gp_api_reply(r, 200, json_pack("{s:s, s:o}", "tenant", tenant, "secrets", list));
        else
            gp_api_fail(r, &err);
    }
    gp_readers_give(&r->srv->readers, s);
}
