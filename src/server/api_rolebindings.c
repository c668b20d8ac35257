/* api_rolebindings.c - what a person signed in through OIDC may do: role
 * bindings (POST/GET/DELETE /v1/rolebindings), the principal a verified
 * provider token becomes (the union of its user's and groups' bindings),
 * GET /v1/auth (how to sign in) and the OIDC part of GET /v1/whoami.
 *
 * A binding: {"group": "ml-admins" | "user": "alice", "role": "admin" |
 * "tenant-admin" | "member", "scope": "research/nlp"} (an admin binding has
 * no scope: the root).  An admin creates and deletes any; a tenant-admin
 * only inside its own subtree, and never admin.  Each change is audited
 * (rolebinding.create, rolebinding.delete) like every change; admins,
 * operators and auditors read every binding, a tenant-admin those inside
 * its subtree.
 *
 * Example: alice's token says groups ["ml-admins"]; bindings (1, group
 * ml-admins, tenant-admin, research) and (2, user alice, member,
 * product/ads) -> grants [tenant-admin research (binding 1), member
 * product/ads (binding 2)].  Remove alice from ml-admins at the provider
 * and her next token holds only the member grant.
 */
#include "server/api.h"

#include "spec/json_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the principal of a verified token ---- */

typedef struct grant_scan {
    const gp_oidc_identity *id;
    gp_principal *who;
} grant_scan;

static bool names_caller(const gp_store_rolebinding *b, const gp_oidc_identity *id)
{
    if (strcmp(b->kind, "user") == 0)
        return strcmp(b->subject, id->user) == 0;
    for (int i = 0; i < id->n_groups; i++)
        if (strcmp(b->kind, "group") == 0 && strcmp(b->subject, id->groups[i]) == 0)
            return true;
    return false;
}

static gp_err grant_one(void *ctx, const gp_store_rolebinding *b, gp_error *err)
{
    (void)err;
    grant_scan *g = ctx;
    gp_role role;
    if (!names_caller(b, g->id) || !gp_role_parse(b->role, &role) || g->who->n_grants >= GP_GRANTS_MAX)
        return GP_OK;
    gp_grant *out = &g->who->grants[g->who->n_grants++];
    out->role = role;
    snprintf(out->scope, sizeof out->scope, "%s", b->scope);
    out->binding = b->id;
    snprintf(out->from, sizeof out->from, "%s:%s", b->kind, b->subject);
    return GP_OK;
}

/* A user name a job may run as: the characters of a Unix name (users.h
 * checks the rest at submit). */
static bool plain_name(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '_' || *s == '-' || *s == '@'))
            return false;
    return true;
}

gp_oidc_result gp_api_oidc_principal(gp_server *srv, const gp_oidc_identity *id, gp_principal *who, gp_error *err)
{
    memset(who, 0, sizeof *who);
    snprintf(who->token_id, sizeof who->token_id, "%.16s", id->token_hash);
    snprintf(who->name, sizeof who->name, "%s", id->user);
    if (plain_name(id->user))
        snprintf(who->user, sizeof who->user, "%s", id->user);
    who->expires = id->expires;
    who->oidc = true;
    who->second_factor = id->second_factor;
    who->issuer = id->issuer;
    for (int i = 0; i < id->n_groups && i < GP_PRINCIPAL_GROUPS_MAX; i++)
        snprintf(who->groups[who->n_groups++], GP_NAME_MAX, "%s", id->groups[i]);
    gp_store *s = gp_readers_take(&srv->readers, err);
    grant_scan g = {.id = id, .who = who};
    gp_err rc = s ? gp_store_rolebindings_scan(s, 0, grant_one, &g, err) : GP_ERR_NOMEM;
    gp_readers_give(&srv->readers, s);
    if (rc != GP_OK)
        return GP_OIDC_ISSUER_UNREACHABLE; /* the caller answers 503 for a store it cannot read */
    gp_principal_grants_done(who);
    return who->n_grants ? GP_OIDC_OK : GP_OIDC_NO_BINDING;
}

/* ---- the bindings ---- */

static json_t *binding_json(const gp_store_rolebinding *b)
{
    return json_pack("{s:I, s:s, s:s, s:s, s:I, s:s}", "id", (json_int_t)b->id, b->kind, b->subject, "role",
                     b->role, "scope", b->scope, "created", (json_int_t)b->created, "created_by", b->created_by);
}

/* May who create or delete a binding of role at scope? */
static bool may_bind(const gp_principal *who, const char *role, const char *scope)
{
    if (who->role == GP_ROLE_ADMIN)
        return true;
    return strcmp(role, "admin") != 0 && gp_principal_holds(who, GP_ROLE_TENANT_ADMIN, scope, false);
}

typedef struct binding_list {
    const gp_principal *who;
    json_t *list;
} binding_list;

static gp_err list_one(void *ctx, const gp_store_rolebinding *b, gp_error *err)
{
    (void)err;
    binding_list *l = ctx;
    if (gp_principal_sees_all(l->who) || may_bind(l->who, b->role, b->scope))
        json_array_append_new(l->list, binding_json(b));
    return GP_OK;
}

void gp_api_rolebindings_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (!gp_principal_sees_all(&r->who) && r->who.role != GP_ROLE_TENANT_ADMIN) {
        gp_api_forbidden(r, "read role bindings");
        return;
    }
    gp_error err;
    binding_list l = {.who = &r->who, .list = json_array()};
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    gp_err rc = s ? gp_store_rolebindings_scan(s, 0, list_one, &l, &err) : GP_ERR_NOMEM;
    gp_readers_give(&r->srv->readers, s);
    if (rc != GP_OK) {
        json_decref(l.list);
        gp_api_fail(r, &err);
        return;
    }
    gp_api_reply(r, 200, json_pack("{s:o}", "rolebindings", l.list));
}

typedef struct binding_arg {
    char kind[8];
    char subject[GP_NAME_MAX];
    char role[16];
    char scope[GP_PATH_MAX];
    int64_t id;
} binding_arg;

static void create_run(gp_server *srv, gp_op *op, int64_t now)
{
    binding_arg *a = op->arg;
    gp_error err;
    uint32_t index;
    gp_store_rolebinding b = {.kind = a->kind, .subject = a->subject, .role = a->role, .scope = a->scope,
                              .created = now, .created_by = op->who->oidc ? op->who->name : op->who->token_id};
    if (a->scope[0] && gp_engine_tenant_find(srv->journal.engine, a->scope, &index, NULL) != GP_OK) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "scope", "no tenant %s", a->scope);
        gp_op_fail(op, &err);
        return;
    }
    if (gp_store_rolebinding_add(srv->store, &b, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 201, binding_json(&b));
}

/* The body's fields into a (GP_ERR_INVALID naming the field). */
static gp_err binding_body(const json_t *body, binding_arg *a, gp_error *err)
{
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach((json_t *)body, key, v) {
        if (rc != GP_OK)
            break;
        if (strcmp(key, "user") == 0 || strcmp(key, "group") == 0) {
            if (a->kind[0])
                return gp_error_set(err, GP_ERR_INVALID, key, "a binding names a user or a group, not both");
            snprintf(a->kind, sizeof a->kind, "%s", key);
            rc = gp_json_string(v, key, GP_NAME_MAX - 1, a->subject, sizeof a->subject, err);
        } else if (strcmp(key, "role") == 0)
            rc = gp_json_string(v, key, sizeof a->role - 1, a->role, sizeof a->role, err);
        else if (strcmp(key, "scope") == 0)
            rc = gp_json_string(v, key, GP_PATH_MAX - 1, a->scope, sizeof a->scope, err);
        else
            rc = gp_json_unknown_field("", key, err);
    }
    if (rc == GP_OK && (!a->kind[0] || !a->subject[0]))
        rc = gp_error_set(err, GP_ERR_INVALID, "group", "a binding needs a user or a group");
    else if (rc == GP_OK && strcmp(a->role, "admin") != 0 && strcmp(a->role, "tenant-admin") != 0 &&
             strcmp(a->role, "member") != 0)
        rc = gp_error_set(err, GP_ERR_INVALID, "role", "role must be admin, tenant-admin or member");
    else if (rc == GP_OK && strcmp(a->role, "admin") == 0 && a->scope[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "scope", "an admin binding has no scope (admin holds the root)");
    else if (rc == GP_OK && strcmp(a->role, "admin") != 0 && !a->scope[0])
        rc = gp_error_set(err, GP_ERR_INVALID, "scope", "a %s binding needs a scope (a tenant path)", a->role);
    return rc;
}

void gp_api_rolebindings_create(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_TENANT_ADMIN) {
        gp_api_forbidden(r, "create role bindings");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    binding_arg a;
    memset(&a, 0, sizeof a);
    gp_error err;
    gp_err rc = binding_body(body, &a, &err);
    json_decref(body);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    if (a.scope[0] && !gp_api_tenant_path_ok(r, a.scope, "scope"))
        return;
    if (!may_bind(&r->who, a.role, a.scope)) {
        gp_api_forbidden(r, "bind this role at this scope (a tenant-admin binds inside its own subtree, never admin)");
        return;
    }
    gp_op op = {.run = create_run, .mutates = true, .arg = &a, .action = "rolebinding.create"};
    snprintf(op.target, sizeof op.target, "rolebinding/%s:%s %s %s", a.kind, a.subject, a.role,
             a.scope[0] ? a.scope : "/");
    gp_api_run_op(r, &op);
}

static gp_err found_one(void *ctx, const gp_store_rolebinding *b, gp_error *err)
{
    (void)err;
    binding_arg *a = ctx;
    snprintf(a->kind, sizeof a->kind, "%s", b->kind);
    snprintf(a->subject, sizeof a->subject, "%s", b->subject);
    snprintf(a->role, sizeof a->role, "%s", b->role);
    snprintf(a->scope, sizeof a->scope, "%s", b->scope);
    return GP_OK;
}

static void delete_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    binding_arg *a = op->arg;
    gp_error err;
    gp_err rc = gp_store_rolebindings_scan(srv->store, a->id, found_one, a, &err);
    if (rc == GP_OK && (!a->role[0] || !may_bind(op->who, a->role, a->scope)))
        rc = gp_error_set(&err, GP_ERR_NOT_FOUND, "id", "no role binding %lld", (long long)a->id);
    if (rc == GP_OK)
        rc = gp_store_rolebinding_delete(srv->store, a->id, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    snprintf(op->target, sizeof op->target, "rolebinding/%lld %s:%s %s %s", (long long)a->id, a->kind, a->subject,
             a->role, a->scope[0] ? a->scope : "/");
    gp_op_reply(op, 200, json_pack("{s:I}", "deleted", (json_int_t)a->id));
}

void gp_api_rolebinding_delete(gp_request *r, const char *id)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_TENANT_ADMIN) {
        gp_api_forbidden(r, "delete role bindings");
        return;
    }
    binding_arg a;
    memset(&a, 0, sizeof a);
    char *end;
    a.id = strtoll(id, &end, 10);
    if (*end || a.id <= 0) {
        gp_api_error(r, 400, "invalid", "id", "a role binding id is a positive integer");
        return;
    }
    gp_op op = {.run = delete_run, .mutates = true, .arg = &a, .action = "rolebinding.delete"};
    snprintf(op.target, sizeof op.target, "rolebinding/%lld", (long long)a.id);
    gp_api_run_op(r, &op);
}

/* ---- how to sign in, and who signed in ---- */

void gp_api_auth_info(gp_request *r)
{
    const gp_oidc_config *c = &r->srv->oidc.cfg;
    json_t *list = json_array();
    for (int i = 0; i < c->n_issuers; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:[s, s, s, s]}", "issuer", c->issuer[i], "client_id",
                                              c->client_id ? c->client_id : c->audience[i], "audience",
                                              c->audience[i], "scopes", "openid", "profile", "groups",
                                              "offline_access"));
    gp_api_reply(r, 200, json_pack("{s:o}", "oidc", list));
}

void gp_api_whoami_oidc(const gp_request *r, json_t *reply)
{
    const gp_principal *w = &r->who;
    json_t *groups = json_array(), *grants = json_array();
    for (int i = 0; i < w->n_groups; i++)
        json_array_append_new(groups, json_string(w->groups[i]));
    for (int i = 0; i < w->n_grants; i++)
        json_array_append_new(grants, json_pack("{s:s, s:s, s:I, s:s}", "role", gp_role_name(w->grants[i].role),
                                                "scope", w->grants[i].scope, "binding",
                                                (json_int_t)w->grants[i].binding, "from", w->grants[i].from));
    json_object_set_new(reply, "oidc", json_true());
    json_object_set_new(reply, "issuer", json_string(r->srv->oidc.cfg.issuer[w->issuer]));
    json_object_set_new(reply, "groups", groups);
    json_object_set_new(reply, "grants", grants);
    json_object_set_new(reply, "second_factor", json_boolean(w->second_factor));
}

static void sign_in_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)srv;
    (void)now;
    gp_op_reply(op, 200, json_object());
}

void gp_api_oidc_sign_in(gp_request *r)
{
    const gp_principal *w = &r->who;
    gp_op op = {.run = sign_in_run, .mutates = true, .who = w, .request_id = r->request_id, .action = "oidc.signin"};
    int n = snprintf(op.target, sizeof op.target, "user/%s second_factor=%s groups=", w->name,
                     w->second_factor ? "yes" : "no");
    for (int i = 0; i < w->n_groups && n > 0 && (size_t)n < sizeof op.target; i++)
        n += snprintf(op.target + n, sizeof op.target - (size_t)n, "%s%s", i ? "," : "", w->groups[i]);
    gp_loop_run(&r->srv->loop, &op);
    json_decref(op.reply);
}
