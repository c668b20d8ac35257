/* api_pools.c - the pools of the fleet and who owns them: GET /v1/pools
 * (every role: a pool, its owner, nodes, GPUs and what outsiders borrow
 * there) and PUT /v1/pools/{name} {"owner": "/org/team" | null} (admins
 * only: an owned pool takes only its owner's subtree's jobs, and others'
 * only while the owner lends; core/dedicated.c).
 *
 * A change goes through the journal as a pool_set event with the pool's
 * other settings as they are, so it is in the event log (both store
 * backends) before the reply, replayed at every start, and audited
 * ("pool.own", target pool/NAME).  The fleet file's `owner`, when it says
 * one, is applied again at each start (fleet_sync.c); otherwise the owner
 * set here stays.  Here the owner must be an existing tenant (400 naming
 * "owner"); the fleet file may name one not made yet, which keeps the
 * pool closed to every job until it is.
 */
#include "server/api.h"

#include "server/server.h"
#include "spec/json_input.h"
#include "spec/spec_json.h"

#include <stdio.h>
#include <string.h>

static json_t *pool_view(const gp_pool_info *p)
{
    json_t *o = json_pack("{s:s, s:i, s:i, s:i}", "name", p->name, "nodes", p->nodes, "gpus", p->gpus,
                          "gpus_borrowed", p->gpus_borrowed);
    if (p->spec.owner[0]) {
        char owner[GP_PATH_MAX + 1];
        snprintf(owner, sizeof owner, "/%s", p->spec.owner);
        json_object_set_new(o, "owner", json_string(owner));
        json_object_set_new(o, "owner_exists", json_boolean(p->owned));
        json_object_set_new(o, "lent", json_boolean(p->lent));
    }
    return o;
}

static void pools_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    const gp_engine *e = srv->journal.engine;
    json_t *list = json_array();
    for (uint32_t i = 0; i < gp_engine_pool_count(e); i++) {
        gp_pool_info p;
        if (gp_engine_pool_get(e, i, &p))
            json_array_append_new(list, pool_view(&p));
    }
    gp_op_reply(op, 200, json_pack("{s:o}", "pools", list));
}

void gp_api_pools_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_op op = {.run = pools_run};
    gp_api_run_op(r, &op);
}

typedef struct own_arg {
    const char *name;
    char owner[GP_PATH_MAX];
} own_arg;

static void own_run(gp_server *srv, gp_op *op, int64_t now)
{
    own_arg *a = op->arg;
    gp_engine *e = srv->journal.engine;
    gp_pool_info p;
    gp_error err;
    if (!gp_engine_pool_get(e, gp_engine_pool_find(e, a->name), &p)) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "name", "no pool %s (pools are named by the fleet file or a node)",
                     a->name);
        gp_op_fail(op, &err);
        return;
    }
    uint32_t tenant;
    if (a->owner[0] && gp_engine_tenant_find(e, a->owner, &tenant, &err) != GP_OK) {
        gp_error_set(&err, GP_ERR_INVALID, "owner", "no tenant /%s", a->owner);
        gp_op_fail(op, &err);
        return;
    }
    memcpy(p.spec.owner, a->owner, sizeof p.spec.owner);
    if (gp_journal_pool_set(&srv->journal, a->name, &p.spec, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_pool_info after;
    gp_engine_pool_get(e, gp_engine_pool_find(e, a->name), &after);
    gp_op_reply(op, 200, pool_view(&after));
}

/* The body: {"owner": PATH | null | ""}, nothing else. */
static gp_err own_parse(json_t *body, own_arg *a, gp_error *err)
{
    json_t *owner = json_object_get(body, "owner");
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (strcmp(key, "owner") != 0)
            return gp_json_unknown_field("", key, err);
    }
    if (!owner)
        return gp_error_set(err, GP_ERR_INVALID, "owner", "owner is required (null: no owner)");
    return gp_pool_owner_parse(owner, a->owner, err);
}

void gp_api_pool_put(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, "own pools to tenants");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    own_arg a = {.name = name};
    gp_error err;
    gp_err rc = own_parse(body, &a, &err);
    json_decref(body);
    if (rc) {
        gp_api_fail(r, &err);
        return;
    }
    gp_op op = {.run = own_run, .mutates = true, .arg = &a};
    snprintf(op.action, sizeof op.action, "pool.own");
    snprintf(op.target, sizeof op.target, "pool/%s", name);
    gp_api_run_op(r, &op);
}
