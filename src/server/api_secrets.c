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
 * Registry credentials are secrets too, of the same tenants, sealed the
 * same way and found the same way (nearest ancestor first), under the
 * name "registry:HOST" (a name no job can give: ':' is not in a secret's
 * name, so none reaches an environment):
 *
 *   PUT    /v1/registries/{host}?tenant=PATH {"username", "password"}
 *   DELETE /v1/registries/{host}?tenant=PATH
 *   GET    /v1/registries?tenant=PATH     registry, username, who, when
 *
 * audited as registry.set and registry.delete.  Only the run entry of an
 * assignment whose image is on that registry carries it, as image_auth.
 *
 * Example: research's tenant-admin sets "hf" on research; a job of
 * research/nlp with {"HF_TOKEN": "hf"} gets HF_TOKEN in its environment on
 * the node that runs it; a job of product/ads naming "hf" is refused at
 * submit, as is a member of research/nlp setting a secret (403).
 */
#include "server/api.h"

#include "spec/container_spec.h"
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
    if (gp_principal_holds(&r->who, GP_ROLE_TENANT_ADMIN, tenant, false))
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

/* The body, an object of none but `keys` (NULL-terminated): *body (the
 * caller decrefs it, NULL when it is no object: replied), rc the first
 * unknown field. */
static gp_err body_of(gp_request *r, const char *const *keys, json_t **body, gp_error *err)
{
    if (!(*body = gp_api_body_object(r)))
        return GP_ERR_INVALID;
    const char *key;
    json_t *v;
    json_object_foreach(*body, key, v) {
        size_t k = 0;
        while (keys[k] && strcmp(key, keys[k]) != 0)
            k++;
        if (!keys[k])
            return gp_json_unknown_field("", key, err);
    }
    return GP_OK;
}

/* {"value": "..."}, sealed for tenant's name into a->sealed. */
static gp_err set_body(gp_request *r, secret_arg *a, gp_error *err)
{
    static const char *const keys[] = {"value", NULL};
    json_t *body;
    gp_err rc = body_of(r, keys, &body, err);
    if (!body)
        return rc;
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

#define REGISTRY_PREFIX "registry:"

/* Keeps the rows of list that are (registries) or are not registry
 * credentials; returns list. */
static json_t *only_registries(json_t *list, bool registries)
{
    for (size_t i = json_array_size(list); i-- > 0;) {
        const char *name = json_string_value(json_object_get(json_array_get(list, i), "name"));
        if ((strncmp(name, REGISTRY_PREFIX, strlen(REGISTRY_PREFIX)) == 0) != registries)
            json_array_remove(list, i);
    }
    return list;
}

/* GET ...?tenant=PATH: the tenant's rows, its registry credentials or its
 * other secrets; NULL with the reply made.  *s: the reader, held (the
 * caller gives it back) so a credential's row can be opened. */
static json_t *listed_rows(gp_request *r, const char **tenant, bool registries, gp_store **s)
{
    static const char *const allowed[] = {"tenant", NULL};
    gp_error err;
    json_t *list = NULL;
    *s = NULL;
    if (!gp_api_query_only(r, allowed) || !(*tenant = query_tenant(r)))
        return NULL;
    if (!(*s = gp_readers_take(&r->srv->readers, &err)))
        gp_api_fail(r, &err);
    else if (gp_api_tenant_known(r, *s, *tenant, "tenant") && /* else it replied 404 */
             gp_store_secrets_list(*s, *tenant, &list, &err) != GP_OK)
        gp_api_fail(r, &err);
    return only_registries(list, registries);
}

void gp_api_secrets_list(gp_request *r)
{
    const char *tenant;
    gp_store *s;
    json_t *list = listed_rows(r, &tenant, false, &s);
    if (list)
        gp_api_reply(r, 200, json_pack("{s:s, s:o}", "tenant", tenant, "secrets", list));
    gp_readers_give(&r->srv->readers, s);
}

/* ---- registry credentials ---- */

static bool registry_ok(gp_request *r, const char *host)
{
    if (gp_registry_name_ok(host))
        return true;
    gp_api_error(r, 400, "invalid", "registry", "a registry is HOST or HOST:PORT (as in docker://HOST:PORT/NAME)");
    return false;
}

/* The credential {"username", "password"} sealed under `name`: *out (a new
 * reference) or NULL. */
static gp_err credential_open(gp_server *srv, const char *owner, const char *name, const char *sealed, json_t **out,
                              gp_error *err)
{
    char *text = NULL;
    size_t len;
    *out = NULL;
    gp_err rc = gp_secret_open(&srv->secret_key, owner, name, sealed, &text, &len, err);
    if (rc == GP_OK && !(*out = json_loadb(text, len, 0, NULL)))
        rc = gp_error_set(err, GP_ERR_INVALID, "secret", "not a credential");
    free(text);
    return rc;
}

void gp_api_assignment_image_auth(gp_server *srv, gp_store *s, json_t *entry, const char *tenant, const char *image)
{
    char host[256], name[300], owner[GP_PATH_MAX], *sealed = NULL;
    if (!gp_image_registry(image, host, sizeof host))
        return;
    snprintf(name, sizeof name, REGISTRY_PREFIX "%s", host);
    gp_error err;
    json_t *credential = NULL;
    gp_err rc = secret_find(s, tenant, name, owner, &sealed, &err);
    if (rc == GP_OK && sealed)
        rc = credential_open(srv, owner, name, sealed, &credential, &err);
    if (credential)
        json_object_set_new(entry, "image_auth", credential);
    else if (rc != GP_OK)
        gp_log(GP_LOG_WARN, "registry_credential_unread", "tenant=%s registry=%s why=\"%s\"", tenant, host,
               err.message);
    free(sealed);
}

bool gp_api_registry_credential_held(gp_store *s, const char *tenant, const char *image)
{
    char host[256], name[300], owner[GP_PATH_MAX], *sealed = NULL;
    if (!gp_image_registry(image, host, sizeof host))
        return false;
    snprintf(name, sizeof name, REGISTRY_PREFIX "%s", host);
    gp_error err;
    gp_err rc = secret_find(s, tenant, name, owner, &sealed, &err);
    bool held = rc != GP_OK || sealed; /* unread: taken as held, the safe side */
    free(sealed);
    return held;
}

/* {"username", "password"}: sealed as one JSON text into a->sealed. */
static gp_err registry_body(gp_request *r, secret_arg *a, gp_error *err)
{
    static const char *const keys[] = {"username", "password", NULL};
    json_t *body;
    gp_err rc = body_of(r, keys, &body, err);
    if (!body)
        return rc;
    const json_t *user = json_object_get(body, "username"), *password = json_object_get(body, "password");
    if (rc == GP_OK && (!json_is_string(user) || !json_string_length(user) || json_string_length(user) > 255))
        rc = gp_error_set(err, GP_ERR_INVALID, "username", "username must be a string of 1..255 bytes");
    if (rc == GP_OK && (!json_is_string(password) || !json_string_length(password)))
        rc = gp_error_set(err, GP_ERR_INVALID, "password", "password must be a non-empty string");
    char *text = rc == GP_OK ? json_dumps(body, JSON_COMPACT) : NULL;
    if (rc == GP_OK && !text)
        rc = gp_error_set(err, GP_ERR_NOMEM, "body", "out of memory");
    if (rc == GP_OK)
        rc = gp_secret_seal(&r->srv->secret_key, a->tenant, a->name, text, strlen(text), &a->sealed, err);
    a->bytes = text ? (int64_t)strlen(text) : 0;
    free(text);
    json_decref(body);
    return rc;
}

static void registry_set(gp_request *r, secret_arg *a, const char *host)
{
    gp_error err;
    if (registry_body(r, a, &err) != GP_OK) {
        if (!r->reply)
            gp_api_fail(r, &err);
        return;
    }
    gp_op op = {.run = set_run, .mutates = true, .arg = a, .action = "registry.set"};
    snprintf(op.target, sizeof op.target, "registry/%s/%s", a->tenant, host);
    gp_api_run_op(r, &op);
    if (r->status == 200) { /* set_run's answer names the row: here, the registry */
        json_object_del(r->reply, "name");
        json_object_del(r->reply, "bytes");
        json_object_set_new(r->reply, "registry", json_string(host));
    }
}

void gp_api_registry(gp_request *r, const char *host)
{
    static const char *const allowed[] = {"tenant", NULL};
    char name[300];
    snprintf(name, sizeof name, REGISTRY_PREFIX "%s", host);
    secret_arg a = {.name = name};
    if (!gp_api_query_only(r, allowed) || !(a.tenant = query_tenant(r)) || !may_change(r, a.tenant) ||
        !registry_ok(r, host))
        return;
    if (strcmp(r->method, "PUT") == 0) {
        registry_set(r, &a, host);
        free(a.sealed);
        return;
    }
    gp_op op = {.run = delete_run, .mutates = true, .arg = &a, .action = "registry.delete"};
    snprintf(op.target, sizeof op.target, "registry/%s/%s", a.tenant, host);
    gp_api_run_op(r, &op);
}

/* A credential row as a listing shows it: its registry and username
 * (opened from the sealed row), never its password. */
static json_t *registry_row(gp_server *srv, gp_store *s, const char *tenant, const json_t *row)
{
    const char *name = json_string_value(json_object_get(row, "name"));
    char *sealed = NULL;
    json_t *credential = NULL;
    gp_error err;
    if (gp_store_secret_get(s, tenant, name, &sealed, &err) == GP_OK && sealed)
        credential_open(srv, tenant, name, sealed, &credential, &err);
    free(sealed);
    json_t *out = json_pack("{s:s, s:O, s:O, s:O}", "registry", name + strlen(REGISTRY_PREFIX), "username",
                            credential ? json_object_get(credential, "username") : json_null(), "set_by",
                            json_object_get(row, "set_by"), "updated", json_object_get(row, "updated"));
    json_decref(credential);
    return out;
}

void gp_api_registries_list(gp_request *r)
{
    const char *tenant;
    gp_store *s;
    json_t *list = listed_rows(r, &tenant, true, &s), *out = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(list, i, row) {
        json_array_append_new(out, registry_row(r->srv, s, tenant, row));
    }
    gp_readers_give(&r->srv->readers, s);
    if (list)
        gp_api_reply(r, 200, json_pack("{s:s, s:o}", "tenant", tenant, "registries", out));
    else
        json_decref(out);
    json_decref(list);
}
