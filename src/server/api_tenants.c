/* api_tenants.c - the tenancy tree: list, get, put, patch, delete, apply, move.
 *
 * Who may change what: an admin changes any tenant; a tenant-admin of S
 * changes tenants strictly below S (S's own quota is its parent's
 * decision, so it gets 403 for S and 404 for anything outside S), but
 * not their container policy (container, image_sources, volumes,
 * allow_userns, egress: 403 naming the field; api_containers.c); nobody else
 * changes tenants.  A change of a container policy cancels the queued
 * jobs it no longer allows and lists them ("cancelled_jobs").  In an
 * apply, a tenant-admin's file may list S and its ancestors as long as
 * they are unchanged.  Reads: admin, operator,
 * auditor see the whole tree; tenant-admin and member see their scope's
 * subtree only.
 *
 * PUT replaces a tenant's spec whole (fields left out take their
 * defaults); PATCH applies a JSON merge patch (json_patch.h) to the spec
 * the store holds and changes only the fields it names.  PATCH never
 * creates: a path that does not exist is 404 naming the nearest path the
 * caller can see ("no tenant ml/trian; did you mean ml/train?").
 *
 * apply and move are several engine events in one request.  They run in
 * one transaction; if a step is refused, the steps already made are undone
 * by their inverse events (set the old spec again, remove what was
 * created, create again what was removed), which are logged like any other
 * event so a replay goes through the same states.  The caller gets the
 * refused step's error and the tree is as before.  apply first works out
 * its plan (what is created, updated, unchanged and, with prune, deleted,
 * field by field), so a dry run answers the same plan and changes nothing.
 *
 * Example: apply of {research, research/nlp (guarantee 16 H100)} to a tree
 * that has research already with the same spec: research is "unchanged",
 * research/nlp "created", with changes [{path research/nlp, op create,
 * field null}, {path research/nlp, op create, field guarantee.gpu.H100,
 * from null, to 16}].  Applying the same file again: both "unchanged", no
 * event logged -- apply is idempotent.  With prune, a tenant research/old
 * in the store is deleted (children first); had it live jobs, the apply
 * would be refused (409) with nothing changed.
 */
#include "server/api.h"

#include "config/tenant_file.h"
#include "server/gpu_types.h"
#include "spec/json_input.h"
#include "spec/json_patch.h"
#include "util/nearest.h"

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

/* Effective job defaults or maximums (own or inherited), null = none. */
static json_t *job_limits_view(const gp_job_limits *l)
{
    const int64_t v[] = {l->cpu_millis, l->mem_mib, l->pids_max};
    const char *names[] = {"cpu_millis", "mem_mib", "pids_max"};
    json_t *o = json_object();
    for (int i = 0; i < 3; i++)
        json_object_set_new(o, names[i], v[i] > 0 ? json_integer(v[i]) : json_null());
    return o;
}

/* all: the store's tenants (path -> spec) for the container policy, NULL
 * to read the tenant's chain from the store. */
static json_t *tenant_view(gp_server *srv, const json_t *all, const gp_tenant_info *t)
{
    const gp_engine *e = srv->journal.engine;
    json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:s, s:i, s:i}", "path", t->path, "guarantee",
                          t->has_guarantee ? res_json(e, &t->guarantee, true) : json_null(), "limit",
                          res_json(e, &t->limit, true), "user_limit", res_json(e, &t->user_limit, true), "usage",
                          res_json(e, &t->usage, false), "guaranteed_usage", res_json(e, &t->guaranteed_usage, false),
                          "weight", finite_real(t->weight), "dominant_share", finite_real(t->dominant_share), "lend", t->lend, "trust",
                          gp_trust_name(t->untrusted ? GP_TRUST_UNTRUSTED : GP_TRUST_TRUSTED), "pending_jobs", t->pending_jobs, "running_jobs",
                          t->running_jobs);
    json_object_set_new(o, "nodes", json_string(gp_nodes_policy_name(t->dedicated ? GP_NODES_DEDICATED : GP_NODES_SHARED)));
    json_object_set_new(o, "parent",
                        t->parent == UINT32_MAX ? json_null() : json_string(gp_engine_tenant_path(e, t->parent)));
    json_t *limits = json_object(); /* effective: own or inherited, null = none */
    for (int k = GP_KIND_TRAINING; k <= GP_KIND_INTERACTIVE; k++)
        json_object_set_new(limits, gp_job_kind_name((gp_job_kind)k),
                            t->time_limit_s[k] > 0 ? json_integer(t->time_limit_s[k]) : json_null());
    json_object_set_new(o, "time_limit", limits);
    json_object_set_new(o, "job_defaults", job_limits_view(&t->job_defaults));
    json_object_set_new(o, "job_max", job_limits_view(&t->job_max));
    json_object_set_new(o, "cancel", json_string(gp_api_tenant_cancel_setting(srv, t->path))); /* in force */
    gp_api_tenant_view_containers(srv, all, t->path, t->untrusted, o);
    return o;
}

/* 404 "no tenant ml/trian; did you mean ml/train?", the suggestion taken
 * from the paths the caller may see. */
static void fail_no_tenant(gp_server *srv, gp_op *op, const char *path, const char *field)
{
    const gp_engine *e = srv->journal.engine;
    size_t n = gp_engine_tenant_count(e), k = 0;
    const char **seen = calloc(n + 1, sizeof *seen);
    for (uint32_t i = 0; seen && i < n; i++) {
        const char *p = gp_engine_tenant_path(e, i);
        if (p[0] && gp_principal_sees(op->who, p))
            seen[k++] = p;
    }
    const char *near = gp_suggest(path, seen, k);
    gp_error err;
    gp_error_set(&err, GP_ERR_NOT_FOUND, field, "no tenant %s%s%s%s", path, near ? "; did you mean " : "",
                 near ? near : "", near ? "?" : "");
    gp_op_fail(op, &err);
    free(seen);
}

static void list_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    const gp_engine *e = srv->journal.engine;
    const char *only = op->arg; /* one path, or NULL for the tree */
    json_t *list = json_array(), *all = NULL;
    if (gp_store_tenants_get(srv->store, &all, NULL) != GP_OK)
        all = NULL; /* each view reads its own chain */
    for (uint32_t i = 0; i < gp_engine_tenant_count(e); i++) {
        gp_tenant_info t;
        if (!gp_engine_tenant_get(e, i, &t) || !gp_principal_sees(op->who, t.path))
            continue;
        if (only && strcmp(only, t.path) != 0)
            continue;
        json_array_append_new(list, tenant_view(srv, all, &t));
    }
    json_decref(all);
    if (!only) {
        gp_op_reply(op, 200, json_pack("{s:o}", "tenants", list));
    } else if (json_array_size(list) == 1) {
        gp_op_reply(op, 200, json_incref(json_array_get(list, 0)));
        json_decref(list);
    } else {
        json_decref(list);
        fail_no_tenant(srv, op, only, "path");
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

/* Is path in or above one of who's tenant-admin scopes (a tenant-admin's
 * apply file may name its scope's ancestors, unchanged)? */
static bool tenant_admin_near(const gp_principal *who, const char *path)
{
    for (int i = 0; i < who->n_grants; i++)
        if (who->grants[i].role == GP_ROLE_TENANT_ADMIN &&
            (gp_scope_covers(who->grants[i].scope, path) || gp_scope_covers(path, who->grants[i].scope)))
            return true;
    return false;
}

/* Replies and returns false when the caller may not change path. */
static bool may_change(gp_request *r, const char *path)
{
    const gp_principal *p = &r->who;
    if (gp_principal_holds(p, GP_ROLE_TENANT_ADMIN, path, true))
        return true;
    if (p->role == GP_ROLE_TENANT_ADMIN && !gp_principal_sees(p, path))
        gp_api_error(r, 404, "not_found", "path", "no tenant %s", path);
    else
        gp_api_forbidden(r, "change this tenant (its quota is its parent's decision)");
    return false;
}

/* ---- what changed ---- */

/* Appends to changes what turning tenant path's canonical spec from into
 * to changes: one {"path", "op", "field", "from", "to"} per field that
 * differs (gp_json_field_diff); a created or deleted tenant gets first one
 * entry with field null, and a deleted one nothing more. */
static void add_changes(json_t *changes, const char *path, const char *op, const json_t *from, const json_t *to)
{
    if (strcmp(op, "update") != 0)
        json_array_append_new(changes,
                              json_pack("{s:s, s:s, s:n, s:n, s:n}", "path", path, "op", op, "field", "from", "to"));
    if (strcmp(op, "delete") == 0)
        return;
    json_t *diff = gp_json_field_diff(from, to);
    size_t i;
    json_t *d;
    json_array_foreach(diff, i, d) {
        json_object_set_new(d, "path", json_string(path));
        json_object_set_new(d, "op", json_string(op));
        json_array_append(changes, d);
    }
    json_decref(diff);
}

/* ---- put, patch and delete ---- */

typedef struct put_arg {
    const char *path;
    gp_tenant_spec spec;
    bool create_only; /* If-None-Match: * */
} put_arg;

static void reply_tenant(gp_server *srv, gp_op *op, const char *path, int status)
{
    uint32_t index;
    gp_tenant_info t;
    const gp_engine *e = srv->journal.engine;
    if (gp_engine_tenant_find(e, path, &index, NULL) == GP_OK && gp_engine_tenant_get(e, index, &t))
        gp_op_reply(op, status, tenant_view(srv, NULL, &t));
    else
        gp_op_reply(op, status, json_pack("{s:s}", "path", path));
}

/* A change of path's spec from have to want (canonical), once the engine
 * took it: the queued jobs its container policy no longer allows are
 * cancelled (api_containers.c) and listed in the reply. */
static gp_err policy_followup(gp_server *srv, gp_op *op, const char *path, const json_t *have, const json_t *want,
                              int64_t now, gp_error *err)
{
    if (!gp_api_container_policy_changed(have, want))
        return GP_OK;
    json_t *cancelled = json_array();
    gp_err rc = gp_api_container_refuse_queued(srv, path, now, cancelled, err);
    if (rc == GP_OK && json_array_size(cancelled) && op->reply)
        json_object_set(op->reply, "cancelled_jobs", cancelled);
    json_decref(cancelled);
    return rc;
}

/* 403 when who may not make this change of the container policy (err says which key). */
static bool policy_refused(gp_op *op, const json_t *have, const json_t *want, gp_error *err)
{
    if (gp_api_container_policy_may_change(op->who, have, want, err) &&
        gp_api_cancel_policy_may_change(op->who, have, want, err))
        return false;
    gp_op_fail(op, err);
    op->status = 403;
    return true;
}

static void put_run(gp_server *srv, gp_op *op, int64_t now)
{
    put_arg *a = op->arg;
    gp_error err;
    uint32_t index;
    bool existed = gp_engine_tenant_find(srv->journal.engine, a->path, &index, NULL) == GP_OK;
    gp_err rc = gp_gpu_types_spec_canon(srv, &a->spec, &err);
    json_t *have = NULL, *want = gp_tenant_spec_to_json(&a->spec);
    if (rc == GP_OK)
        rc = gp_store_tenant_get(srv->store, a->path, &have, &err);
    if (rc == GP_OK && existed && a->create_only)
        rc = gp_error_set(&err, GP_ERR_EXISTS, "path",
                          "tenant %s exists already; change it with PATCH (gpupool quota set)", a->path);
    if (rc == GP_OK && policy_refused(op, have, want, &err))
        rc = GP_ERR_INVALID;
    else if (rc == GP_OK)
        rc = gp_journal_tenant_set(&srv->journal, a->path, &a->spec, now, &err);
    if (rc == GP_OK) {
        reply_tenant(srv, op, a->path, existed ? 200 : 201);
        rc = policy_followup(srv, op, a->path, have, want, now, &err);
    }
    if (rc != GP_OK && op->status != 403)
        gp_op_fail(op, &err);
    json_decref(have);
    json_decref(want);
}

/* If-None-Match: * makes a PUT create only; no other value is meaningful
 * (tenants have no entity tags).  Replies 400 and returns false otherwise. */
static bool create_only(gp_request *r, bool *out)
{
    const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    *out = v != NULL;
    if (!v || strcmp(v, "*") == 0)
        return true;
    gp_api_error(r, 400, "invalid", "If-None-Match", "If-None-Match takes only * (create, never replace)");
    return false;
}

void gp_api_tenant_put(gp_request *r, const char *path)
{
    static const char *const allowed[] = {NULL};
    put_arg a = {.path = path};
    if (!gp_api_query_only(r, allowed) || !gp_api_tenant_path_ok(r, path, "path") || !may_change(r, path) ||
        !create_only(r, &a.create_only))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
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

typedef struct patch_arg {
    const char *path;
    json_t *patch;
} patch_arg;

/* The merge patch applied to the stored canonical spec, decoded by the
 * codec; *want is the result in canonical form (a new reference). */
static gp_err patched_spec(gp_server *srv, const json_t *have, const json_t *patch, gp_tenant_spec *spec,
                           json_t **want, gp_error *err)
{
    json_t *merged = gp_json_merge_patch(have, patch);
    gp_err rc = merged ? gp_tenant_spec_parse(merged, spec, err)
                       : gp_error_set(err, GP_ERR_NOMEM, "body", "out of memory");
    if (rc == GP_OK)
        rc = gp_gpu_types_spec_canon(srv, spec, err);
    json_decref(merged);
    *want = rc == GP_OK ? gp_tenant_spec_to_json(spec) : NULL;
    return rc;
}

static void patch_run(gp_server *srv, gp_op *op, int64_t now)
{
    patch_arg *a = op->arg;
    gp_error err;
    json_t *current = NULL, *want = NULL, *changes = json_array();
    gp_tenant_spec spec;
    gp_err rc = gp_store_tenants_get(srv->store, &current, &err);
    const json_t *have = json_object_get(current, a->path);
    if (rc == GP_OK && !have) { /* PATCH never creates */
        fail_no_tenant(srv, op, a->path, "path");
        json_decref(changes);
        json_decref(current);
        return;
    }
    if (rc == GP_OK)
        rc = gp_gpu_types_patch_canon(srv, a->patch, &err);
    if (rc == GP_OK)
        rc = patched_spec(srv, have, a->patch, &spec, &want, &err);
    if (rc == GP_OK)
        add_changes(changes, a->path, "update", have, want);
    if (rc == GP_OK && policy_refused(op, have, want, &err))
        rc = GP_ERR_INVALID;
    else if (rc == GP_OK && json_array_size(changes) > 0) /* nothing changed: no event */
        rc = gp_journal_tenant_set(&srv->journal, a->path, &spec, now, &err);
    if (rc == GP_OK) {
        reply_tenant(srv, op, a->path, 200);
        json_object_set(op->reply, "changes", changes);
        rc = policy_followup(srv, op, a->path, have, want, now, &err);
    }
    if (rc != GP_OK && op->status != 403)
        gp_op_fail(op, &err);
    json_decref(changes);
    json_decref(want);
    json_decref(current);
}

void gp_api_tenant_patch(gp_request *r, const char *path)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_tenant_path_ok(r, path, "path") || !may_change(r, path))
        return;
    patch_arg a = {.path = path, .patch = gp_api_body_object(r)};
    if (!a.patch)
        return;
    gp_op op = {.run = patch_run, .mutates = true, .arg = &a, .action = "tenant.patch"};
    snprintf(op.target, sizeof op.target, "tenant/%s", path);
    gp_api_run_op(r, &op);
    json_decref(a.patch);
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
    bool dry_run, prune;
} apply_arg;

/* What an apply will do, worked out before anything changes. */
typedef struct apply_plan {
    json_t *current;                                    /* the store's tenants: path -> canonical spec */
    json_t *created, *updated, *unchanged, *deleted;    /* paths; deleted in the order of removal */
    json_t *changes;                                    /* add_changes entries */
    bool *sets;                                         /* per file entry: it changes */
    bool forbidden;                                     /* a tenant-admin's file changes its scope or above */
} apply_plan;

static void plan_free(apply_plan *p)
{
    json_decref(p->current);
    json_decref(p->created);
    json_decref(p->updated);
    json_decref(p->unchanged);
    json_decref(p->deleted);
    json_decref(p->changes);
    free(p->sets);
}

/* Rewrites err as file entry i's: "tenants[i].FIELD", "PATH: MESSAGE (nothing was applied)". */
static gp_err entry_error(gp_error *err, size_t i, const char *path)
{
    char field[GP_ERROR_FIELD_MAX], msg[GP_ERROR_MESSAGE_MAX];
    snprintf(field, sizeof field, "tenants[%zu].%s", i, err->field);
    snprintf(msg, sizeof msg, "%s: %s (nothing was applied)", path, err->message);
    return gp_error_set(err, err->code, field, "%s", msg);
}

/* The parent of file entry i exists in the store or is in the file (at
 * any place: carry_out sets the entries in an order the tree allows). */
static bool parent_known(const apply_plan *p, const gp_tenant_file *f, size_t i, char *parent, size_t cap)
{
    const char *path = f->tenants[i].path, *slash = strrchr(path, '/');
    if (!slash)
        return true;
    snprintf(parent, cap, "%.*s", (int)(slash - path), path);
    if (json_object_get(p->current, parent))
        return true;
    for (size_t j = 0; j < f->n_tenants; j++)
        if (strcmp(f->tenants[j].path, parent) == 0)
            return true;
    return false;
}

/* What entry i makes of the stored spec have (NULL: a new tenant): the
 * fields it names replace the stored ones whole, a null clears one, and a
 * field it leaves out keeps its value (an apply never drops what it does
 * not name).  A new reference. */
static json_t *entry_merged(const json_t *have, const json_t *fields)
{
    json_t *merged = have ? json_deep_copy(have) : json_object();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)fields, key, v) {
        if (json_is_null(v))
            json_object_del(merged, key);
        else
            json_object_set_new(merged, key, json_deep_copy(v));
    }
    return merged;
}

/* Each entry's spec as it will be after the apply: the stored spec with
 * the entry's fields on it, its GPU types in their one spelling. */
static gp_err plan_specs(gp_server *srv, gp_tenant_file *f, const apply_plan *p, gp_error *err)
{
    for (size_t i = 0; i < f->n_tenants; i++) {
        gp_tenant_entry *t = &f->tenants[i];
        json_t *merged = entry_merged(json_object_get(p->current, t->path), t->fields);
        gp_err rc = merged ? gp_tenant_spec_parse(merged, &t->spec, err)
                           : gp_error_set(err, GP_ERR_NOMEM, "body", "out of memory");
        json_decref(merged);
        if (rc == GP_OK)
            rc = gp_gpu_types_spec_canon(srv, &t->spec, err);
        if (rc != GP_OK)
            return entry_error(err, i, t->path);
    }
    return GP_OK;
}

static gp_err plan_sets(const gp_principal *who, const gp_tenant_file *f, apply_plan *p, gp_error *err)
{
    for (size_t i = 0; i < f->n_tenants; i++) {
        const gp_tenant_entry *t = &f->tenants[i];
        json_t *want = gp_tenant_spec_to_json(&t->spec);
        const json_t *have = json_object_get(p->current, t->path);
        char parent[GP_PATH_MAX];
        gp_err rc = GP_OK;
        if (have && json_equal(have, want)) {
            json_array_append_new(p->unchanged, json_string(t->path));
            json_decref(want);
            continue;
        }
        p->forbidden = !gp_principal_holds(who, GP_ROLE_TENANT_ADMIN, t->path, true);
        if (p->forbidden)
            rc = gp_error_set(err, GP_ERR_INVALID, "path", "only tenants below %s may change", who->scope);
        else if ((p->forbidden = !gp_api_container_policy_may_change(who, have, want, err) ||
                                 !gp_api_cancel_policy_may_change(who, have, want, err)))
            rc = err->code;
        else if (!parent_known(p, f, i, parent, sizeof parent))
            rc = gp_error_set(err, GP_ERR_NOT_FOUND, "path", "parent tenant %s does not exist", parent);
        if (rc == GP_OK) {
            add_changes(p->changes, t->path, have ? "update" : "create", have, want);
            json_array_append_new(have ? p->updated : p->created, json_string(t->path));
            p->sets[i] = true;
        }
        json_decref(want);
        if (rc != GP_OK)
            return entry_error(err, i, t->path);
    }
    return GP_OK;
}

/* May --prune remove path?  In the caller's reach (an admin: every tenant;
 * a tenant-admin: those strictly below its scope), not in the file, and
 * not an ancestor of a tenant in the file (that one stays, so must its
 * parents). */
static bool prunable(const gp_principal *who, const gp_tenant_file *f, const char *path)
{
    if (!gp_principal_holds(who, GP_ROLE_TENANT_ADMIN, path, true))
        return false;
    for (size_t i = 0; i < f->n_tenants; i++)
        if (gp_scope_covers(path, f->tenants[i].path))
            return false;
    return true;
}

static int children_first(const void *a, const void *b)
{
    return strcmp(*(const char *const *)b, *(const char *const *)a); /* "a/b" sorts after "a": reversed */
}

/* The tenants --prune removes, children before parents; refused (nothing
 * changed) when one of them has live jobs. */
static gp_err plan_prunes(const gp_engine *e, const gp_principal *who, const gp_tenant_file *f, apply_plan *p,
                          gp_error *err)
{
    const char **paths = calloc(json_object_size(p->current) + 1, sizeof *paths), *path;
    size_t n = 0;
    json_t *spec;
    if (!paths)
        return gp_error_set(err, GP_ERR_NOMEM, "prune", "out of memory");
    json_object_foreach(p->current, path, spec) {
        if (prunable(who, f, path))
            paths[n++] = path;
    }
    qsort(paths, n, sizeof *paths, children_first);
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        uint32_t index;
        gp_tenant_info t;
        if (gp_engine_tenant_find(e, paths[i], &index, NULL) == GP_OK && gp_engine_tenant_get(e, index, &t) &&
            t.pending_jobs + t.running_jobs > 0)
            rc = gp_error_set(err, GP_ERR_CONFLICT, "prune",
                              "prune would delete %s, which has live jobs (%d pending, %d running); cancel them or "
                              "list %s in the file (nothing was applied)",
                              paths[i], t.pending_jobs, t.running_jobs, paths[i]);
        json_array_append_new(p->deleted, json_string(paths[i]));
        add_changes(p->changes, paths[i], "delete", json_object_get(p->current, paths[i]), NULL);
    }
    free(paths);
    return rc;
}

static void record_step(undo_step *steps, size_t *done, const char *path, const json_t *old_spec, bool removed)
{
    snprintf(steps[*done].path, sizeof steps[*done].path, "%s", path);
    steps[*done].old_spec = old_spec ? json_incref((json_t *)old_spec) : NULL;
    steps[*done].removed = removed;
    (*done)++;
}

/* Sets the changed entries in an order the tree allows, whatever the
 * file's: each pass sets what the engine takes now and leaves the refused
 * ones for the next, so a parent and its children shrink (children first)
 * or grow (parent first) in one apply, and a child may come before the
 * parent it creates.  Each step is checked against the whole tree, so the
 * tree after the apply holds every rule.  A pass that sets nothing ends
 * it with its first refusal (a store failure ends it at once). */
static gp_err set_all(gp_server *srv, const gp_tenant_file *f, const apply_plan *p, int64_t now, undo_step *steps,
                      size_t *done, gp_error *err)
{
    bool *left = calloc(f->n_tenants + 1, sizeof *left);
    size_t n_left = 0;
    for (size_t i = 0; left && i < f->n_tenants; i++)
        n_left += left[i] = p->sets[i];
    gp_err rc = left ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "body", "out of memory");
    while (rc == GP_OK && n_left > 0) {
        size_t taken = 0;
        gp_err refused = GP_OK;
        for (size_t i = 0; !srv->journal.broken && i < f->n_tenants; i++) {
            const gp_tenant_entry *t = &f->tenants[i];
            gp_error e;
            if (!left[i])
                continue;
            gp_err r = gp_journal_tenant_set(&srv->journal, t->path, &t->spec, now, &e);
            if (r == GP_OK) {
                record_step(steps, done, t->path, json_object_get(p->current, t->path), false);
                left[i] = false, taken++, n_left--;
            } else if (refused == GP_OK || srv->journal.broken) {
                refused = r, *err = e;
                entry_error(err, i, t->path);
            }
        }
        if (taken == 0 || srv->journal.broken)
            rc = refused;
    }
    free(left);
    return rc;
}

/* Carries the plan out: the sets (set_all), then the removals (children
 * first).  A refused step undoes the ones before it. */
static gp_err carry_out(gp_server *srv, const gp_tenant_file *f, const apply_plan *p, int64_t now, json_t *cancelled,
                        gp_error *err)
{
    size_t n_del = json_array_size(p->deleted), done = 0;
    undo_step *steps = calloc(f->n_tenants + n_del + 1, sizeof *steps);
    gp_err rc = steps ? GP_OK : gp_error_set(err, GP_ERR_NOMEM, "body", "out of memory");
    if (rc == GP_OK)
        rc = set_all(srv, f, p, now, steps, &done, err);
    for (size_t i = 0; rc == GP_OK && i < n_del; i++) {
        const char *path = json_string_value(json_array_get(p->deleted, i));
        rc = gp_journal_tenant_remove(&srv->journal, path, now, err);
        if (rc != GP_OK)
            gp_error_set(err, err->code, "prune", "prune: %s: %s (nothing was applied)", path, err->message);
        else
            record_step(steps, &done, path, json_object_get(p->current, path), true);
    }
    if (rc != GP_OK && steps)
        undo(srv, steps, done, now);
    if (steps)
        undo_free(steps, done);
    for (size_t i = 0; rc == GP_OK && i < f->n_tenants; i++) { /* all taken: queued jobs the policy now refuses */
        json_t *want = p->sets[i] ? gp_tenant_spec_to_json(&f->tenants[i].spec) : NULL;
        if (want && gp_api_container_policy_changed(json_object_get(p->current, f->tenants[i].path), want))
            rc = gp_api_container_refuse_queued(srv, f->tenants[i].path, now, cancelled, err);
        json_decref(want);
    }
    return rc;
}

static const char DRY_RUN_NOT_CHECKED[] =
    "a dry run checks the file, the caller's scope, the GPU types, that parents exist and that pruned tenants "
    "are idle; the engine's rules (guarantees within the parent's and the fleet's, tenant names and depth, "
    "trust) are checked only when the file is applied";

static void apply_run(gp_server *srv, gp_op *op, int64_t now)
{
    apply_arg *a = op->arg;
    gp_error err;
    apply_plan p = {.created = json_array(),
                    .updated = json_array(),
                    .unchanged = json_array(),
                    .deleted = json_array(),
                    .changes = json_array(),
                    .sets = calloc(a->file.n_tenants + 1, sizeof *p.sets)};
    gp_err rc = gp_store_tenants_get(srv->store, &p.current, &err);
    if (rc == GP_OK && (!p.created || !p.updated || !p.unchanged || !p.deleted || !p.changes || !p.sets))
        rc = gp_error_set(&err, GP_ERR_NOMEM, "body", "out of memory");
    if (rc == GP_OK)
        rc = plan_specs(srv, &a->file, &p, &err);
    if (rc == GP_OK)
        rc = plan_sets(op->who, &a->file, &p, &err);
    if (rc == GP_OK && a->prune)
        rc = plan_prunes(srv->journal.engine, op->who, &a->file, &p, &err);
    json_t *cancelled = json_array();
    if (rc == GP_OK && !a->dry_run)
        rc = carry_out(srv, &a->file, &p, now, cancelled, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        if (p.forbidden)
            op->status = 403;
    } else {
        json_t *reply = json_pack("{s:O, s:O, s:O, s:O, s:O, s:b}", "created", p.created, "updated", p.updated,
                                  "unchanged", p.unchanged, "deleted", p.deleted, "changes", p.changes, "dry_run",
                                  a->dry_run);
        if (a->dry_run)
            json_object_set_new(reply, "not_checked", json_string(DRY_RUN_NOT_CHECKED));
        if (json_array_size(cancelled))
            json_object_set(reply, "cancelled_jobs", cancelled);
        gp_op_reply(op, 200, reply);
    }
    json_decref(cancelled);
    plan_free(&p);
}

/* A true|false query parameter (absent: false).  Replies 400 and returns
 * false when it is something else. */
static bool query_flag(gp_request *r, const char *key, bool *out)
{
    const char *v = gp_api_query(r, key);
    *out = v && strcmp(v, "true") == 0;
    if (!v || *out || strcmp(v, "false") == 0)
        return true;
    gp_api_error(r, 400, "invalid", key, "%s must be true or false", key);
    return false;
}

void gp_api_tenants_apply(gp_request *r)
{
    static const char *const allowed[] = {"dry_run", "prune", NULL};
    apply_arg a;
    if (!gp_api_query_only(r, allowed) || !query_flag(r, "dry_run", &a.dry_run) || !query_flag(r, "prune", &a.prune))
        return;
    if (r->who.role != GP_ROLE_ADMIN && r->who.role != GP_ROLE_TENANT_ADMIN) {
        gp_api_forbidden(r, "change tenants");
        return;
    }
    if (r->body_len == 0) {
        gp_api_error(r, 400, "invalid", "body", "apply needs a tenant file (YAML or JSON) as the body");
        return;
    }
    gp_error err;
    if (gp_tenant_file_parse(r->body, r->body_len, "body", &a.file, &err) != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    /* A tenant-admin's file may name its scope's ancestors; they may appear
     * as long as they do not change, which the engine thread checks.
     * Tenants elsewhere do not exist for it. */
    for (size_t i = 0; r->who.role == GP_ROLE_TENANT_ADMIN && i < a.file.n_tenants; i++) {
        const char *p = a.file.tenants[i].path;
        if (!tenant_admin_near(&r->who, p)) {
            gp_api_error(r, 404, "not_found", "path", "no tenant %s", p);
            gp_tenant_file_free(&a.file);
            return;
        }
    }
    /* A dry run is a read: it runs after the batch's commit, writes
     * nothing and leaves no audit row (as no read does). */
    gp_op op = {.run = apply_run, .mutates = !a.dry_run, .arg = &a, .action = "tenant.apply"};
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
