/* gpu_types.c - one spelling per GPU type, declared types, and their API
 * (GET /v1/gpu-types, PUT and DELETE /v1/gpu-types/NAME): gpu_types.h.
 *
 * Example: nodes registered H100 and L40S, an admin declared H200:
 *   "h100"  -> "H100"
 *   "H1OO"  -> 400 gpu_types "no GPU type H1OO in the fleet (known: H100,
 *              L40S, H200); did you mean H100?"
 */
#include "server/gpu_types.h"

#include "server/api.h"
#include "server/log.h"
#include "util/nearest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The engine's spelling of name (any case), NULL when it has none. */
static const char *engine_spelling(const gp_engine *e, const char *name)
{
    for (int t = 0; t < gp_engine_gpu_type_count(e); t++)
        if (strcasecmp(gp_engine_gpu_type_name(e, t), name) == 0)
            return gp_engine_gpu_type_name(e, t);
    return NULL;
}

static int known_find(const gp_gpu_known *k, const char *name)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcasecmp(k->names[i], name) == 0)
            return (int)i;
    return -1;
}

gp_err gp_gpu_types_known(gp_server *srv, gp_gpu_known *out, gp_error *err)
{
    const gp_engine *e = srv->journal.engine;
    int64_t gpus[GP_MAX_GPU_TYPES];
    memset(out, 0, sizeof *out);
    gp_engine_gpus_by_type(e, gpus);
    for (int t = 0; t < gp_engine_gpu_type_count(e); t++)
        if (gpus[t] > 0) {
            snprintf(out->names[out->n], GP_NAME_MAX, "%s", gp_engine_gpu_type_name(e, t));
            out->gpus[out->n++] = gpus[t];
        }
    json_t *declared = NULL;
    gp_err rc = gp_store_gpu_types_declared(srv->store, &declared, err);
    size_t i;
    json_t *row;
    json_array_foreach(declared, i, row) {
        const char *name = json_string_value(json_object_get(row, "name"));
        int at = known_find(out, name);
        if (at < 0 && out->n < GP_MAX_GPU_TYPES) {
            const char *spelt = engine_spelling(e, name);
            at = (int)out->n++;
            snprintf(out->names[at], GP_NAME_MAX, "%s", spelt ? spelt : name);
        }
        if (at >= 0)
            out->declared[at] = true;
    }
    json_decref(declared);
    return rc;
}

/* The known type nearest to a mistyped one, in any case: model names
 * are short, so two edits (H1OO for H100) still say which was meant. */
static const char *nearest(const char *typed, const char *const *names, size_t n)
{
    const char *best = gp_suggest(typed, names, n);
    if (best)
        return best;
    size_t best_d = 3;
    char a[GP_NAME_MAX], b[GP_NAME_MAX];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < sizeof a; j++)
            if ((a[j] = (char)toupper((unsigned char)typed[j])) == '\0')
                break;
        for (size_t j = 0; j < sizeof b; j++)
            if ((b[j] = (char)toupper((unsigned char)names[i][j])) == '\0')
                break;
        a[sizeof a - 1] = b[sizeof b - 1] = '\0';
        size_t d = gp_edit_distance(a, b);
        if (d < best_d && d < strlen(a))
            best = names[i], best_d = d;
    }
    return best;
}

gp_err gp_gpu_type_canon(const gp_gpu_known *k, const char *field, char *name, gp_error *err)
{
    int at = known_find(k, name);
    if (at >= 0) {
        memmove(name, k->names[at], strlen(k->names[at]) + 1);
        return GP_OK;
    }
    const char *list[GP_MAX_GPU_TYPES] = {0};
    char known[GP_MAX_GPU_TYPES * (GP_NAME_MAX + 2)] = "";
    for (size_t i = 0; i < k->n; i++) {
        list[i] = k->names[i];
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", k->names[i]);
    }
    const char *near = nearest(name, list, k->n);
    return gp_error_set(err, GP_ERR_INVALID, field,
                        "no GPU type %s in the fleet%s%s%s (%s%s; an admin declares a type before its nodes arrive: "
                        "gpupool gpu-types declare NAME)",
                        name, near ? "; did you mean " : "", near ? near : "", near ? "?" : "",
                        k->n ? "known: " : "none known yet", known);
}

static gp_err quota_canon(const gp_gpu_known *k, gp_quota *q, const char *what, gp_error *err)
{
    for (int i = 0; q->set && i < q->n_gpu; i++) {
        char field[GP_ERROR_FIELD_MAX], typed[GP_NAME_MAX];
        snprintf(field, sizeof field, "%s.gpu.%s", what, q->gpu[i].type);
        snprintf(typed, sizeof typed, "%s", q->gpu[i].type);
        gp_err rc = gp_gpu_type_canon(k, field, q->gpu[i].type, err);
        if (rc)
            return rc;
        for (int j = 0; j < i; j++)
            if (strcmp(q->gpu[j].type, q->gpu[i].type) == 0)
                return gp_error_set(err, GP_ERR_INVALID, field, "%s.gpu names %s twice (as %s too); write it once",
                                    what, q->gpu[i].type, typed);
    }
    return GP_OK;
}

gp_err gp_gpu_types_spec_canon(gp_server *srv, gp_tenant_spec *spec, gp_error *err)
{
    gp_gpu_known k;
    gp_err rc = gp_gpu_types_known(srv, &k, err);
    if (rc == GP_OK)
        rc = quota_canon(&k, &spec->guarantee, "guarantee", err);
    if (rc == GP_OK)
        rc = quota_canon(&k, &spec->limit, "limit", err);
    if (rc == GP_OK)
        rc = quota_canon(&k, &spec->user_limit, "user_limit", err);
    return rc;
}

/* obj's keys in their known spelling (unknown ones as they are); two keys
 * of one type are refused. */
static gp_err rekey(const gp_gpu_known *k, json_t *obj, const char *field, gp_error *err)
{
    json_t *out = json_object();
    const char *key;
    json_t *v;
    gp_err rc = GP_OK;
    json_object_foreach(obj, key, v) {
        int at = known_find(k, key);
        const char *spelt = at >= 0 ? k->names[at] : key;
        if (json_object_get(out, spelt))
            rc = gp_error_set(err, GP_ERR_INVALID, field, "%s names %s twice (as %s too); write it once", field,
                              spelt, key);
        json_object_set(out, spelt, v);
    }
    if (rc == GP_OK) {
        json_object_clear(obj);
        json_object_update(obj, out);
    }
    json_decref(out);
    return rc;
}

gp_err gp_gpu_types_patch_canon(gp_server *srv, json_t *patch, gp_error *err)
{
    static const char *const quotas[] = {"guarantee", "limit", "user_limit"};
    gp_gpu_known k;
    gp_err rc = gp_gpu_types_known(srv, &k, err);
    for (size_t i = 0; rc == GP_OK && i < sizeof quotas / sizeof quotas[0]; i++) {
        json_t *gpu = json_object_get(json_object_get(patch, quotas[i]), "gpu");
        char field[GP_ERROR_FIELD_MAX];
        snprintf(field, sizeof field, "%s.gpu", quotas[i]);
        if (json_is_object(gpu))
            rc = rekey(&k, gpu, field, err);
    }
    return rc;
}

gp_err gp_gpu_types_job_canon(gp_server *srv, gp_job_request *req, gp_error *err)
{
    gp_gpu_known k;
    gp_err rc = gp_gpu_types_known(srv, &k, err);
    for (int i = 0; rc == GP_OK && i < req->spec.n_gpu_types; i++)
        rc = gp_gpu_type_canon(&k, "gpu_types", req->gpu_types[i], err);
    return rc;
}

gp_err gp_gpu_types_keys_canon(gp_server *srv, json_t *obj, const char *field, gp_error *err)
{
    gp_gpu_known k;
    gp_err rc = gp_gpu_types_known(srv, &k, err);
    return rc == GP_OK ? rekey(&k, obj, field, err) : rc;
}

void gp_gpu_types_reason(gp_server *srv, json_t *view)
{
    const gp_engine *e = srv->journal.engine;
    const json_t *types = json_object_get(view, "gpu_types");
    const char *state = json_string_value(json_object_get(view, "state"));
    if (!state || strcmp(state, "pending") != 0 || json_array_size(types) == 0)
        return;
    int64_t gpus[GP_MAX_GPU_TYPES];
    gp_engine_gpus_by_type(e, gpus);
    char names[GP_MAX_GPU_TYPES * (GP_NAME_MAX + 4)] = "";
    size_t i;
    json_t *name;
    json_array_foreach(types, i, name) {
        for (int t = 0; t < gp_engine_gpu_type_count(e); t++)
            if (strcasecmp(gp_engine_gpu_type_name(e, t), json_string_value(name)) == 0 && gpus[t] > 0)
                return;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " or " : "",
                 json_string_value(name));
    }
    char reason[GP_ERROR_MESSAGE_MAX];
    snprintf(reason, sizeof reason, "no node of GPU type %s has joined the fleet yet; the job waits for one", names);
    json_object_set_new(view, "reason", json_string(reason));
    json_object_set(view, "no_node_yet", (json_t *)types);
}

/* ---- the migration of stores written before issue 32 ---- */

static json_t *milli_json(int64_t milli)
{
    return milli % 1000 == 0 ? json_integer(milli / 1000) : json_real((double)milli / 1000.0);
}

/* One quota's gpu object in the engine's spellings; a type spelt twice
 * takes the engine's amount (in force).  True when it changed. */
static bool quota_migrate(const gp_engine *e, json_t *gpu, const gp_res *in_force)
{
    json_t *out = json_object();
    const char *key;
    json_t *v;
    bool changed = false;
    json_object_foreach(gpu, key, v) {
        const char *spelt = engine_spelling(e, key);
        if (!spelt)
            spelt = key;
        changed = changed || strcmp(spelt, key) != 0;
        if (json_object_get(out, spelt)) {
            for (int t = 0; t < gp_engine_gpu_type_count(e); t++)
                if (strcmp(gp_engine_gpu_type_name(e, t), spelt) == 0)
                    json_object_set_new(out, spelt, milli_json(in_force->v[t]));
        } else {
            json_object_set(out, spelt, v);
        }
    }
    if (changed) {
        json_object_clear(gpu);
        json_object_update(gpu, out);
    }
    json_decref(out);
    return changed;
}

static gp_err tenant_migrate(gp_server *srv, const char *path, json_t *spec, int64_t now, gp_error *err)
{
    const gp_engine *e = srv->journal.engine;
    uint32_t index;
    gp_tenant_info t;
    if (gp_engine_tenant_find(e, path, &index, NULL) != GP_OK || !gp_engine_tenant_get(e, index, &t))
        return GP_OK;
    const char *quotas[] = {"guarantee", "limit", "user_limit"};
    const gp_res *in_force[] = {&t.guarantee, &t.limit, &t.user_limit};
    bool changed = false;
    for (int i = 0; i < 3; i++) {
        json_t *gpu = json_object_get(json_object_get(spec, quotas[i]), "gpu");
        if (json_is_object(gpu) && quota_migrate(e, gpu, in_force[i]))
            changed = true;
    }
    if (!changed)
        return GP_OK;
    char *text = json_dumps(spec, GP_JSON_CANONICAL);
    gp_err rc = text ? gp_store_tenant_put(srv->store, path, text, now, err)
                     : gp_error_set(err, GP_ERR_NOMEM, "store", "out of memory");
    if (rc == GP_OK)
        gp_log(GP_LOG_INFO, "gpu_type_spelling_merged", "tenant=%s spec=%s", path, text);
    free(text);
    return rc;
}

/* Types declared in the store (before the engine learnt declarations)
 * that the engine does not know: logged now, as a declaration would be. */
static gp_err declared_teach(gp_server *srv, int64_t wall, gp_error *err)
{
    json_t *declared = NULL;
    gp_err rc = gp_store_gpu_types_declared(srv->store, &declared, err);
    int64_t now = gp_journal_now(&srv->journal, wall);
    size_t i;
    json_t *row;
    json_array_foreach(declared, i, row) {
        const char *name = json_string_value(json_object_get(row, "name"));
        if (rc == GP_OK && name && !engine_spelling(srv->journal.engine, name) &&
            gp_engine_gpu_type_count(srv->journal.engine) < GP_MAX_GPU_TYPES)
            rc = gp_journal_gpu_type_declare(&srv->journal, name, now, err);
    }
    json_decref(declared);
    return rc;
}

/* In one transaction (a fenced leader writes only in one). */
gp_err gp_gpu_types_migrate(gp_server *srv, int64_t now, gp_error *err)
{
    json_t *all = NULL;
    gp_err rc = gp_store_begin(srv->store, err);
    if (rc == GP_OK)
        rc = declared_teach(srv, now, err);
    if (rc == GP_OK)
        rc = gp_store_tenants_get(srv->store, &all, err);
    const char *path;
    json_t *spec;
    json_object_foreach(all, path, spec) {
        if (rc == GP_OK && json_is_object(spec))
            rc = tenant_migrate(srv, path, spec, now, err);
    }
    json_decref(all);
    if (rc == GP_OK)
        return gp_store_commit(srv->store, err);
    gp_store_rollback(srv->store);
    return rc;
}

/* ---- the API: GET /v1/gpu-types, PUT and DELETE /v1/gpu-types/NAME ---- */

static void list_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    gp_gpu_known k;
    gp_error err;
    json_t *declared = NULL;
    if (gp_gpu_types_known(srv, &k, &err) != GP_OK ||
        gp_store_gpu_types_declared(srv->store, &declared, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    json_t *list = json_array();
    for (size_t i = 0; i < k.n; i++) {
        json_t *o = json_pack("{s:s, s:I, s:b}", "name", k.names[i], "gpus", (json_int_t)k.gpus[i], "declared",
                              k.declared[i]);
        size_t j;
        json_t *row;
        json_array_foreach(declared, j, row) {
            if (strcasecmp(json_string_value(json_object_get(row, "name")), k.names[i]) == 0) {
                json_object_set(o, "declared_at", json_object_get(row, "declared"));
                json_object_set(o, "declared_by", json_object_get(row, "declared_by"));
            }
        }
        json_array_append_new(list, o);
    }
    json_decref(declared);
    gp_op_reply(op, 200, json_pack("{s:o}", "gpu_types", list));
}

void gp_api_gpu_types_list(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_op op = {.run = list_run};
    gp_api_run_op(r, &op);
}

static void declare_run(gp_server *srv, gp_op *op, int64_t now)
{
    const char *name = op->arg;
    gp_gpu_known k;
    gp_error err;
    gp_err rc = gp_gpu_types_known(srv, &k, &err);
    int at = rc == GP_OK ? known_find(&k, name) : -1;
    const gp_engine *e = srv->journal.engine;
    if (rc == GP_OK && at < 0 && (k.n == GP_MAX_GPU_TYPES || (!engine_spelling(e, name) &&
                                                                gp_engine_gpu_type_count(e) == GP_MAX_GPU_TYPES)))
        rc = gp_error_set(&err, GP_ERR_CONFLICT, "name", "a fleet holds at most %d GPU types", GP_MAX_GPU_TYPES);
    else if (rc == GP_OK && !(at >= 0 && k.declared[at]))
        rc = gp_store_gpu_type_declare(srv->store, at >= 0 ? k.names[at] : name, now, op->who->token_id, &err);
    if (rc == GP_OK && !engine_spelling(e, name)) /* the engine learns it: jobs may name it */
        rc = gp_journal_gpu_type_declare(&srv->journal, at >= 0 ? k.names[at] : name, now, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, at >= 0 && k.declared[at] ? 200 : 201,
                json_pack("{s:s, s:b}", "name", at >= 0 ? k.names[at] : name, "declared", true));
}

static void undeclare_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    gp_gpu_known k;
    gp_error err;
    bool found = false;
    gp_err rc = gp_gpu_types_known(srv, &k, &err);
    int at = rc == GP_OK ? known_find(&k, op->arg) : -1;
    if (rc == GP_OK && at >= 0 && k.declared[at])
        rc = gp_store_gpu_type_undeclare(srv->store, k.names[at], &found, &err);
    if (rc == GP_OK && !found)
        rc = gp_error_set(&err, GP_ERR_NOT_FOUND, "name", "GPU type %s is not declared", (const char *)op->arg);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, json_pack("{s:s, s:b, s:I}", "name", k.names[at], "declared", false, "gpus",
                                   (json_int_t)k.gpus[at]));
}

/* A type's name: 1..GP_NAME_MAX-1 of [A-Za-z0-9._-]. */
static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= GP_NAME_MAX)
        return false;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

void gp_api_gpu_type(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, "declare GPU types");
        return;
    }
    if (!name_ok(name)) {
        gp_api_error(r, 400, "invalid", "name", "a GPU type is 1..%d of A-Z a-z 0-9 . _ -", GP_NAME_MAX - 1);
        return;
    }
    bool put = strcmp(r->method, "PUT") == 0;
    gp_op op = {.run = put ? declare_run : undeclare_run, .mutates = true, .arg = (void *)name};
    snprintf(op.action, sizeof op.action, "%s", put ? "gpu_type.declare" : "gpu_type.undeclare");
    snprintf(op.target, sizeof op.target, "gpu_type/%s", name);
    gp_api_run_op(r, &op);
}
