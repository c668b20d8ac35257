/* api_tenants.c - the tenancy tree: list, get, put, delete, apply, move.
 *
 * Who may change what: an admin changes any tenant; a tenant-admin of S
 * changes tenants strictly below S (S's own quota is its parent's
 * decision, so it gets 403 for S and 404 for anything outside S); nobody
 * else changes tenants.  In an apply, a tenant-admin's file may list S and
 * its ancestors (the file wants parents first) as long as they are
 * unchanged.  Reads: admin, operator, auditor see the whole
 * tree; tenant-admin and member see their scope's subtree only.
 *
 * apply and move are several engine events in one request.  They run in
 * one transaction; if a step is refused, the steps already made are undone
 * by their inverse events (set the old spec again, remove what was
 * created), which are logged like any other event so a replay goes
 * through the same states.  The caller gets the refused step's error and
 * the tree is as before.
 *
 * Example: apply of {research, research/nlp (guarantee 16 H100)} to a tree
 * that has research already with the same spec: research is "unchanged",
 * research/nlp "created".  Applying the same file again: both "unchanged",
 * no event logged -- apply is idempotent.
 */
#include "server/api.h"

#include "config/tenant_file.h"
#include "spec/json_input.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- views ---- */

static json_t *res_json(const gp_engine *e, const gp_res *r, bool skip_unlimited)
{
    json_t *gpu = json_object();
    for (int t = 0; t < gp_engine_gpu_type_count(e); t++) {
        if (skip_unlimited && r->v[t] == GP_UNLIMITED)
            continue;
        json_t *amount = r->v[t] % 1000 == 0 ? json_integer(r->v[t] / 1000) : json_real((double)r->v[t] / 1000.0);
        json_object_set_new(gpu, gp_engine_gpu_type_name(e, t), amount);
    }
    json_t *o = json_pack("{s:o}", "gpu", gpu);
    if (r->v[GP_DIM_CPU] != GP_UNLIMITED)
        json_object_set_new(o, "cpu_millis", json_integer(r->v[GP_DIM_CPU]));
    if (r->v[GP_DIM_MEM] != GP_UNLIMITED)
        json_object_set_new(o, "mem_mib", json_integer(r->v[GP_DIM_MEM]));
    return o;
}

/* A number JSON can hold; null for inf or NaN (json_real refuses them,
 * and a view that fails to build would drop the tenant from every list). */
static json_t *finite_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *tenant_view(const gp_engine *e, const gp_tenant_info *t)
{
    json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:s, s:i, s:i}", "path", t->path, "guarantee",
                          t->has_guarantee ? res_json(e, &t->guarantee, true) : json_null(), "limit",
                          res_json(e, &t->limit, true), "user_limit", res_json(e, &t->user_limit, true), "usage",
                          res_json(e, &t->usage, false), "guaranteed_usage", res_json(e, &t->guaranteed_usage, false),
                          "weight", finite_real(t->weight), "dominant_share", finite_real(t->dominant_share), "lend", t->lend, "trust",
                          gp_trust_name(t->untrusted ? GP_TRUST_UNTRUSTED : GP_TRUST_TRUSTED), "pending_jobs", t->pending_jobs, "running_jobs",
                          t->running_jobs);
    json_object_set_new(o, "parent",
                        t->parent == UINT32_MAX ? json_null() : json_string(gp_engine_tenant_path(e, t->parent)));
    json_t *limits = json_object(); /* effective: own or inherited, null = none */
    for (int k = GP_KIND_TRAINING; k <= GP_KIND_INTERACTIVE; k++)
        json_object_set_new(limits, gp_job_kind_name((gp_job_kind)k),
                            t->time_limit_s[k] > 0 ? json_integer(t->time_limit_s[k]) : json_null());
    json_object_set_new(o, "time_limit", limits);
    return o;
}

static void list_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    const gp_engine *e = srv->journal.engine;
    const char *only = op->arg; /* one path, or NULL for the tree */
    json_t *list = json_array();
    for (uint32_t i = 0; i < gp_engine_tenant_count(e); i++) {
        gp_tenant_info t;
        if (!gp_engine_tenant_get(e, i, &t) || !gp_principal_sees(op->who, t.path))
            continue;
        if (only && strcmp(only, t.path) != 0)
            continue;
        json_array_append_new(list, tenant_view(e, &t));
    }
    if (!only) {
        gp_op_reply(op, 200, json_pack("{s:o}", "tenants", list));
    } else if (json_array_size(list) == 1) {
        gp_op_reply(op, 200, json_incref(json_array_get(list, 0)));
        json_decref(list);
    } else {
        json_decref(list);
        gp_error err;
        gp_error_set(&err, GP_ERR_NOT_FOUND, "path", "no tenant %s", only);
        gp_op_fail(op, &err);
    }
}

void gp_api_tenants_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_op op = {.run = list_run, .arg = NULL};
    gp_api_run_op(r, &op);
}

void gp_api_tenant_get(gp_request *r, const char *path)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_tenant_path_ok(r, path, "path"))
        return;
    gp_op op = {.run = list_run, .arg = (void *)path};
    gp_api_run_op(r, &op);
}

/* ---- who may change a tenant ---- */

/* Replies and returns false when the caller may not change path. */
static bool may_change(gp_request *r, const char *path)
{
    const gp_principal *p = &r->who;
    if (p->role == GP_ROLE_ADMIN)
        return true;
    if (p->role == GP_ROLE_TENANT_ADMIN && gp_scope_covers(p->scope, path) && strcmp(p->scope, path) != 0)
        return true;
    if (p->role == GP_ROLE_TENANT_ADMIN && !gp_scope_covers(p->scope, path))
        gp_api_error(r, 404, "not_found", "path", "no tenant %s", path);
    else
        gp_api_forbidden(r, "change this tenant (its quota is its parent's decision)");
    return false;
}

/* ---- put and delete ---- */

typedef struct put_arg {
    const char *path;
    gp_tenant_spec spec;
} put_arg;

static void reply_tenant(gp_server *srv, gp_op *op, const char *path, int status)
{
    uint32_t index;
    gp_tenant_info t;
    const gp_engine *e = srv->journal.engine;
    if (gp_engine_tenant_find(e, path, &index, NULL) == GP_OK && gp_engine_tenant_get(e, index, &t))
        gp_op_reply(op, status, tenant_view(e, &t));
    else
        gp_op_reply(op, status, json_pack("{s:s}", "path", path));
}

static void put_run(gp_server *srv, gp_op *op, int64_t now)
{
    put_arg *a = op->arg;
    gp_error err;
    uint32_t index;
    bool existed = gp_engine_tenant_find(srv->journal.engine, a->path, &index, NULL) == GP_OK;
    if (gp_journal_tenant_set(&srv->journal, a->path, &a->spec, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    reply_tenant(srv, op, a->path, existed ? 200 : 201);
}

void gp_api_tenant_put(gp_request *r, const char *path)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_tenant_path_ok(r, path, "path") || !may_change(r, path))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    put_arg a = {.path = path};
    gp_error err;
    gp_err rc = gp_tenant_spec_parse(body, &a.spec, &err);
    json_decref(body);
    if (rc) {
        gp_api_fail(r, &err);
        return;
    }
    gp_op op = {.run = put_run, .mutates = true, .arg = &a, .action = "tenant.put"};
    snprintf(op.target, sizeof op.target, "tenant/%s", path);
    gp_api_run_op(r, &op);
}

static void delete_run(gp_server *srv, gp_op *op, int64_t now)
{
    gp_error err;
    if (gp_journal_tenant_remove(&srv->journal, op->arg, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, json_pack("{s:s}", "deleted", (const char *)op->arg));
}

void gp_api_tenant_delete(gp_request *r, const char *path)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_tenant_path_ok(r, path, "path") || !may_change(r, path))
        return;
    gp_op op = {.run = delete_run, .mutates = true, .arg = (void *)path, .action = "tenant.delete"};
    snprintf(op.target, sizeof op.target, "tenant/%s", path);
    gp_api_run_op(r, &op);
}

/* ---- undo log for multi-step changes ---- */

typedef struct undo_step {
    char path[GP_PATH_MAX];
    json_t *old_spec; /* NULL: the step created the tenant */
    bool removed;     /* the step removed the tenant (old_spec holds it) */
} undo_step;

/* Reverses steps[n-1..0]; errors are logged, not returned: the caller is
 * already failing, and each inverse returns the tree to a state it had. */
static void undo(gp_server *srv, undo_step *steps, size_t n, int64_t now)
{
    for (size_t i = n; i-- > 0;) {
        gp_error err;
        gp_err rc;
        if (!steps[i].old_spec) {
            rc = gp_journal_tenant_remove(&srv->journal, steps[i].path, now, &err);
        } else {
            gp_tenant_spec spec;
            rc = gp_tenant_spec_parse(steps[i].old_spec, &spec, &err);
            if (rc == GP_OK)
                rc = gp_journal_tenant_set(&srv->journal, steps[i].path, &spec, now, &err);
        }
        if (rc != GP_OK)
            gp_log(GP_LOG_ERROR, "undo_failed", "tenant=%s error=\"%s\"", steps[i].path, err.message);
    }
}

static void undo_free(undo_step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(steps[i].old_spec);
    free(steps);
}

/* ---- apply ---- */

typedef struct apply_arg {
    gp_tenant_file file;
} apply_arg;

static void apply_run(gp_server *srv, gp_op *op, int64_t now)
{
    apply_arg *a = op->arg;
    gp_error err;
    json_t *current = NULL;
    if (gp_store_tenants_get(srv->store, &current, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    undo_step *steps = calloc(a->file.n_tenants + 1, sizeof *steps);
    json_t *created = json_array(), *updated = json_array(), *unchanged = json_array();
    size_t n = 0;
    bool forbidden = false; /* a tenant-admin's file changes its own scope or above */
    gp_err rc = steps ? GP_OK : gp_error_set(&err, GP_ERR_NOMEM, "body", "out of memory");
    for (size_t i = 0; rc == GP_OK && i < a->file.n_tenants; i++) {
        const gp_tenant_entry *t = &a->file.tenants[i];
        json_t *want = gp_tenant_spec_to_json(&t->spec);
        json_t *have = json_object_get(current, t->path);
        if (have && json_equal(have, want)) {
            json_array_append_new(unchanged, json_string(t->path));
            json_decref(want);
            continue;
        }
        json_decref(want);
        const gp_principal *who = op->who;
        forbidden = who->role == GP_ROLE_TENANT_ADMIN &&
                    !(gp_scope_covers(who->scope, t->path) && strcmp(who->scope, t->path) != 0);
        if (forbidden)
            rc = gp_error_set(&err, GP_ERR_INVALID, "path", "only tenants below %s may change", who->scope);
        else
            rc = gp_journal_tenant_set(&srv->journal, t->path, &t->spec, now, &err);
        if (rc != GP_OK) {
            char field[GP_ERROR_FIELD_MAX];
            snprintf(field, sizeof field, "tenants[%zu].%s", i, err.field);
            char msg[GP_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s: %s (nothing was applied)", t->path, err.message);
            gp_error_set(&err, err.code, field, "%s", msg);
            break;
        }
        snprintf(steps[n].path, sizeof steps[n].path, "%s", t->path);
        steps[n].old_spec = have ? json_incref(have) : NULL;
        n++;
        json_array_append_new(have ? updated : created, json_string(t->path));
    }
    if (rc != GP_OK) {
        if (steps)
            undo(srv, steps, n, now);
        gp_op_fail(op, &err);
        if (forbidden)
            op->status = 403;
        json_decref(created);
        json_decref(updated);
        json_decref(unchanged);
    } else {
        gp_op_reply(op, 200, json_pack("{s:o, s:o, s:o}", "created", created, "updated", updated, "unchanged", unchanged));
    }
    if (steps)
        undo_free(steps, n);
    json_decref(current);
}

void gp_api_tenants_apply(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_TENANT_ADMIN) {
        gp_api_forbidden(r, "change tenants");
        return;
    }
    if (r->body_len == 0) {
        gp_api_error(r, 400, "invalid", "body", "apply needs a tenant file (YAML or JSON) as the body");
        return;
    }
    apply_arg a;
    gp_error err;
    if (gp_tenant_file_parse(r->body, r->body_len, "body", &a.file, &err) != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    /* A tenant-admin's file names its scope's ancestors (the file format
     * wants parents first); they may appear as long as they do not change,
     * which the engine thread checks.  Tenants elsewhere do not exist for it. */
    for (size_t i = 0; r->who.role == GP_ROLE_TENANT_ADMIN && i < a.file.n_tenants; i++) {
        const char *p = a.file.tenants[i].path;
        if (!gp_scope_covers(r->who.scope, p) && !gp_scope_covers(p, r->who.scope)) {
            gp_api_error(r, 404, "not_found", "path", "no tenant %s", p);
            gp_tenant_file_free(&a.file);
            return;
        }
    }
    gp_op op = {.run = apply_run, .mutates = true, .arg = &a, .action = "tenant.apply"};
    snprintf(op.target, sizeof op.target, "tenants/%zu", a.file.n_tenants);
    gp_api_run_op(r, &op);
    gp_tenant_file_free(&a.file);
}

/* ---- move ---- */

typedef struct move_arg {
    char from[GP_PATH_MAX], to[GP_PATH_MAX];
} move_arg;

static gp_err move_check(gp_server *srv, const move_arg *a, json_t *subtree, gp_error *err)
{
    const gp_engine *e = srv->journal.engine;
    uint32_t index;
    if (gp_engine_tenant_find(e, a->from, &index, NULL) != GP_OK)
        return gp_error_set(err, GP_ERR_NOT_FOUND, "from", "no tenant %s", a->from);
    if (gp_engine_tenant_find(e, a->to, &index, NULL) == GP_OK)
        return gp_error_set(err, GP_ERR_EXISTS, "to", "tenant %s exists already", a->to);
    if (gp_scope_covers(a->from, a->to))
        return gp_error_set(err, GP_ERR_INVALID, "to", "a tenant cannot move below itself");
    for (uint32_t i = 0; i < gp_engine_tenant_count(e); i++) {
        gp_tenant_info t;
        if (!gp_engine_tenant_get(e, i, &t) || !gp_scope_covers(a->from, t.path))
            continue;
        if (t.pending_jobs + t.running_jobs > 0)
            return gp_error_set(err, GP_ERR_CONFLICT, "from", "%s has live jobs; a tenant moves only when idle", t.path);
        json_array_append_new(subtree, json_string(t.path));
    }
    return GP_OK;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static void move_run(gp_server *srv, gp_op *op, int64_t now)
{
    move_arg *a = op->arg;
    gp_error err;
    json_t *subtree = json_array(), *current = NULL;
    gp_err rc = move_check(srv, a, subtree, &err);
    if (rc == GP_OK)
        rc = gp_store_tenants_get(srv->store, &current, &err);
    size_t n = json_array_size(subtree), done = 0;
    json_t **paths = calloc(n + 1, sizeof *paths);
    undo_step *steps = calloc(2 * n + 1, sizeof *steps);
    if (rc == GP_OK && (!paths || !steps))
        rc = gp_error_set(&err, GP_ERR_NOMEM, "from", "out of memory");
    for (size_t i = 0; rc == GP_OK && i < n; i++)
        paths[i] = json_array_get(subtree, i);
    if (rc == GP_OK)
        qsort(paths, n, sizeof *paths, by_path); /* parents before children */
    for (size_t i = n; rc == GP_OK && i-- > 0;) { /* remove, children first */
        const char *p = json_string_value(paths[i]);
        rc = gp_journal_tenant_remove(&srv->journal, p, now, &err);
        if (rc == GP_OK) {
            snprintf(steps[done].path, sizeof steps[done].path, "%s", p);
            steps[done++].old_spec = json_incref(json_object_get(current, p));
        }
    }
    for (size_t i = 0; rc == GP_OK && i < n; i++) { /* create at the new place, parents first */
        const char *p = json_string_value(paths[i]);
        char to[GP_PATH_MAX * 2];
        gp_tenant_spec spec;
        snprintf(to, sizeof to, "%s%s", a->to, p + strlen(a->from));
        rc = gp_tenant_spec_parse(json_object_get(current, p), &spec, &err);
        if (rc == GP_OK)
            rc = gp_journal_tenant_set(&srv->journal, to, &spec, now, &err);
        if (rc == GP_OK)
            snprintf(steps[done++].path, sizeof steps[0].path, "%s", to);
    }
    if (rc == GP_OK) {
        gp_op_reply(op, 200, json_pack("{s:s, s:s, s:I}", "from", a->from, "to", a->to, "tenants", (json_int_t)n));
    } else {
        if (steps)
            undo(srv, steps, done, now);
        gp_op_fail(op, &err);
    }
    if (steps)
        undo_free(steps, done);
    free(paths);
    json_decref(subtree);
    json_decref(current);
}

void gp_api_tenants_move(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    move_arg a = {{0}, {0}};
    gp_error err;
    gp_err rc = GP_OK;
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        if (rc)
            break;
        if (strcmp(key, "from") == 0)
            rc = gp_json_string(v, key, GP_PATH_MAX - 1, a.from, sizeof a.from, &err);
        else if (strcmp(key, "to") == 0)
            rc = gp_json_string(v, key, GP_PATH_MAX - 1, a.to, sizeof a.to, &err);
        else
            rc = gp_json_unknown_field("", key, &err);
    }
    json_decref(body);
    if (rc == GP_OK && (!a.from[0] || !a.to[0]))
        rc = gp_error_set(&err, GP_ERR_INVALID, a.from[0] ? "to" : "from", "move needs from and to");
    if (rc) {
        gp_api_fail(r, &err);
        return;
    }
    if (!gp_api_tenant_path_ok(r, a.from, "from") || !gp_api_tenant_path_ok(r, a.to, "to") || !may_change(r, a.from) ||
        !may_change(r, a.to))
        return;
    gp_op op = {.run = move_run, .mutates = true, .arg = &a, .action = "tenant.move"};
    snprintf(op.target, sizeof op.target, "tenant/%s", a.from);
    gp_api_run_op(r, &op);
}
