/* api_users.c - GET /v1/users, PUT and DELETE /v1/users/{name}: the
 * tenant each job user is bound to (users.h says what a binding means).
 *
 * Bindings are made as tokens are minted and jobs submitted; these
 * endpoints are for what that cannot do: an admin moves a user to another
 * tenant (PUT, {"tenant": PATH}) or forgets it (DELETE, so the next token
 * or job binds it anew).  Reads: admin, operator and auditor see every
 * binding, others those inside their scope.
 *
 * Example: PUT /v1/users/alice {"tenant": "research/vision"} -> 200
 * {"name": "alice", "tenant": "research/vision", "bound": 1796000000,
 * "bound_by": "<admin token id>"}; from then on a research/nlp job as alice
 * is 400 user, and so is a token for alice scoped at research/nlp.
 */
#include "server/api.h"
#include "server/users.h"
#include "spec/json_input.h"

#include <stdio.h>
#include <string.h>

typedef struct user_arg {
    char name[GP_NAME_MAX];
    char tenant[GP_PATH_MAX];
} user_arg;

static json_t *binding_json(const gp_store_user *u)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "name", u->name, "tenant", u->tenant, "bound", (json_int_t)u->bound,
                     "bound_by", u->bound_by);
}

typedef struct user_list {
    const gp_principal *who;
    json_t *list;
} user_list;

static gp_err list_row(void *ctx, const gp_store_user *u, gp_error *err)
{
    (void)err;
    user_list *l = ctx;
    if (gp_principal_sees(l->who, u->tenant))
        json_array_append_new(l->list, binding_json(u));
    return GP_OK;
}

void gp_api_users_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    user_list l = {.who = &r->who, .list = json_array()};
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    if (!s || gp_store_users_scan(s, list_row, &l, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        json_decref(l.list);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    gp_api_reply(r, 200, json_pack("{s:o}", "users", l.list));
}

static void bind_run(gp_server *srv, gp_op *op, int64_t now)
{
    user_arg *a = op->arg;
    gp_error err;
    uint32_t index;
    gp_store_user u = {.name = a->name, .tenant = a->tenant, .bound = now, .bound_by = op->who->token_id};
    if (gp_engine_tenant_find(srv->journal.engine, a->tenant, &index, &err) != GP_OK ||
        gp_store_user_bind(srv->store, a->name, a->tenant, now, u.bound_by, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, binding_json(&u));
}

static void unbind_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    user_arg *a = op->arg;
    gp_error err;
    if (gp_store_user_unbind(srv->store, a->name, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, json_pack("{s:s}", "unbound", a->name));
}

/* The name from the path, admin only; false with the reply made. */
static bool user_target(gp_request *r, const char *name, const char *what, user_arg *a)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return false;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, what);
        return false;
    }
    if (strlen(name) >= sizeof a->name) {
        gp_api_error(r, 400, "invalid", "user", "a user name has at most %d characters", GP_NAME_MAX - 1);
        return false;
    }
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    return true;
}

void gp_api_user_bind(gp_request *r, const char *name)
{
    user_arg a;
    if (!user_target(r, name, "bind users to tenants", &a))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    gp_error err;
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach(body, key, v) {
        if (rc == GP_OK)
            rc = strcmp(key, "tenant") == 0 ? gp_json_string(v, key, GP_PATH_MAX - 1, a.tenant, sizeof a.tenant, &err)
                                            : gp_json_unknown_field("", key, &err);
    }
    json_decref(body);
    if (rc == GP_OK && !a.tenant[0])
        rc = gp_error_set(&err, GP_ERR_INVALID, "tenant", "a binding needs a tenant");
    if (rc == GP_OK)
        rc = gp_user_name_check(a.name, r->srv->cfg.min_job_uid, &err);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    if (!gp_api_tenant_path_ok(r, a.tenant, "tenant"))
        return;
    gp_op op = {.run = bind_run, .mutates = true, .arg = &a, .action = "user.bind"};
    snprintf(op.target, sizeof op.target, "user/%s", a.name);
    gp_api_run_op(r, &op);
}

void gp_api_user_unbind(gp_request *r, const char *name)
{
    user_arg a;
    if (!user_target(r, name, "unbind users", &a))
        return;
    gp_op op = {.run = unbind_run, .mutates = true, .arg = &a, .action = "user.unbind"};
    snprintf(op.target, sizeof op.target, "user/%s", a.name);
    gp_api_run_op(r, &op);
}
