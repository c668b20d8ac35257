/* api_jobs_batch.c - POST /v1/jobs:batch: many jobs in one request, all or none.
 *
 * A batch is {"jobs": [JOB, ...]} (each JOB as POST /v1/jobs takes it) or
 * {"job": JOB, "array": N}: N copies of JOB, copy i carrying
 * env.GPUPOOL_ARRAY_INDEX = "i" and env.GPUPOOL_ARRAY_SIZE = "N" (Slurm's
 * job arrays).  At most GP_JOBS_BATCH_MAX jobs; the body limit still holds
 * (an array sends its job once).
 *
 * All or none, in two steps:
 *   1. API thread: every item is checked as POST /v1/jobs checks a job
 *      (fields, tenant path and scope, user).  The first bad item refuses
 *      the batch, naming it: field "jobs[3].gpus", message "jobs[3]: ..."
 *      ("job.gpus" for an array: its copies differ only in the index).
 *   2. engine thread, one op: every item's user is checked against the
 *      tenant it is bound to (users.h), its job defaults are filled in and
 *      it is checked against its tenant's container policy
 *      (api_containers.c) and against the live engine (gp_engine_job_check: the
 *      engine's own submit rules, nothing changed; gp_engine_job_fits: refused
 *      when no node or block could ever hold it, unless the item has
 *      "wait_for_fleet": true) before any is
 *      submitted, so this file restates none of them.  Only then are the items submitted, in order (consecutive ids), in
 *      the engine thread's one store transaction and one scheduling pass.
 * Should the engine still refuse an item after that (out of memory), the
 * items before it are in the engine already: the op marks the journal
 * broken, so the transaction never commits and gpupoold restarts from its
 * durable log (loop.h), which holds none of the batch.
 *
 * Example: {"job": {"tenant": "research/nlp", "command": ["train.sh"]}, "array": 3}
 * -> 201 {"ids": [12, 13, 14], "jobs": [...]}, the jobs' env
 *    {"GPUPOOL_ARRAY_INDEX": "0", "GPUPOOL_ARRAY_SIZE": "3"}, then "1", then "2".
 *    With "array": 3 and "gpus": 40 instead: 400, field "job.gpus", no job.
 */
#include "server/api.h"
#include "server/gpu_types.h"
#include "server/users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_JOBS_BATCH_MAX 10000

typedef struct gp_batch {
    gp_job_request *reqs;
    size_t n;
    bool array; /* items are copies of one job: errors name "job", not "jobs[i]" */
} gp_batch;

/* "jobs[3]" or "job": how errors name item i. */
static void item_name(const gp_batch *b, size_t i, char *out, size_t cap)
{
    if (b->array)
        snprintf(out, cap, "job");
    else
        snprintf(out, cap, "jobs[%zu]", i);
}

/* err's field and message, prefixed with the item's name. */
static void name_error(gp_error *err, const char *item)
{
    char field[GP_ERROR_FIELD_MAX], message[GP_ERROR_MESSAGE_MAX];
    snprintf(field, sizeof field, "%s%s%s", item, err->field[0] ? "." : "", err->field);
    snprintf(message, sizeof message, "%s: %s (no job of the batch was submitted)", item, err->message);
    gp_error_set(err, err->code, field, "%s", message);
}

/* The same for an error reply already made by a gp_api_* check. */
static void name_reply(gp_request *r, const char *item)
{
    json_t *e = json_object_get(r->reply, "error");
    gp_error err = {.code = GP_ERR_INVALID};
    snprintf(err.field, sizeof err.field, "%s", json_string_value(json_object_get(e, "field")));
    snprintf(err.message, sizeof err.message, "%s", json_string_value(json_object_get(e, "message")));
    name_error(&err, item);
    json_object_set_new(e, "field", json_string(err.field));
    json_object_set_new(e, "message", json_string(err.message));
}

/* ---- step 1: the API thread ---- */

/* Copy i of an array's job: its env gains the index and the size. */
static json_t *array_copy(const json_t *job, size_t i, size_t n, gp_error *err)
{
    json_t *env = json_object_get(job, "env");
    if (env && !json_is_object(env)) {
        gp_error_set(err, GP_ERR_INVALID, "env", "env must be an object of strings");
        return NULL;
    }
    if (json_object_get(env, "GPUPOOL_ARRAY_INDEX") || json_object_get(env, "GPUPOOL_ARRAY_SIZE")) {
        gp_error_set(err, GP_ERR_INVALID, "env",
                     "gpupoold sets GPUPOOL_ARRAY_INDEX and GPUPOOL_ARRAY_SIZE in an array");
        return NULL;
    }
    json_t *copy = json_copy((json_t *)job); /* shallow: only env is new */
    json_t *own_env = env ? json_deep_copy(env) : json_object();
    char text[24];
    snprintf(text, sizeof text, "%zu", i);
    json_object_set_new(own_env, "GPUPOOL_ARRAY_INDEX", json_string(text));
    snprintf(text, sizeof text, "%zu", n);
    json_object_set_new(own_env, "GPUPOOL_ARRAY_SIZE", json_string(text));
    json_object_set_new(copy, "env", own_env);
    return copy;
}

/* One item, checked as gp_api_jobs_submit checks a job; false with the
 * reply made (naming the item) when it is refused. */
static bool item_take(gp_request *r, const json_t *item, const char *name, gp_job_request *req)
{
    gp_error err;
    gp_err rc = gp_job_request_parse(item, false, req, &err);
    if (rc == GP_OK && !gp_api_tenant_path_ok(r, req->tenant, "tenant")) {
        name_reply(r, name);
        return false;
    }
    if (rc == GP_OK)
        rc = gp_api_job_for_caller(r, req, &err);
    if (rc != GP_OK) {
        name_error(&err, name);
        gp_api_fail(r, &err);
        return false;
    }
    return true;
}

/* The items of the body: {"jobs": [...]} or {"job": {...}, "array": N}.
 * Sets *n and b->array; NULL with the reply made when the shape is wrong. */
static json_t *batch_items(gp_request *r, const json_t *body, gp_batch *b)
{
    json_t *jobs = json_object_get(body, "jobs"), *job = json_object_get(body, "job");
    json_t *array = json_object_get(body, "array");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        if (strcmp(key, "jobs") != 0 && strcmp(key, "job") != 0 && strcmp(key, "array") != 0) {
            gp_api_error(r, 400, "invalid", key, "unknown field %.60s; a batch is {\"jobs\": [...]} or "
                         "{\"job\": {...}, \"array\": N}", key);
            return NULL;
        }
    }
    if (jobs && !job && !array && json_is_array(jobs)) {
        b->n = json_array_size(jobs);
        b->array = false;
    } else if (job && array && !jobs && json_is_integer(array)) {
        b->n = json_integer_value(array) < 0 ? 0 : (size_t)json_integer_value(array);
        b->array = true;
    } else {
        gp_api_error(r, 400, "invalid", jobs ? "jobs" : array ? "array" : "body",
                     "a batch is {\"jobs\": [JOB, ...]} or {\"job\": JOB, \"array\": N}");
        return NULL;
    }
    if (b->n < 1 || b->n > GP_JOBS_BATCH_MAX) {
        gp_api_error(r, 400, "invalid", b->array ? "array" : "jobs", "a batch holds 1..%d jobs, got %lld",
                     GP_JOBS_BATCH_MAX, b->array ? (long long)json_integer_value(array) : (long long)b->n);
        return NULL;
    }
    return b->array ? job : jobs;
}

/* Parses and checks every item into b->reqs; false with the reply made. */
static bool batch_take(gp_request *r, const json_t *items, gp_batch *b)
{
    b->reqs = calloc(b->n, sizeof *b->reqs);
    if (!b->reqs) {
        gp_api_error(r, 503, "unavailable", "body", "out of memory for %zu jobs", b->n);
        return false;
    }
    for (size_t i = 0; i < b->n; i++) {
        char name[32];
        gp_error err;
        item_name(b, i, name, sizeof name);
        json_t *item = b->array ? array_copy(items, i, b->n, &err) : json_incref(json_array_get(items, i));
        if (!item) {
            name_error(&err, name);
            gp_api_fail(r, &err);
            return false;
        }
        bool ok = gp_api_job_default_tenant(r, item, &err) == GP_OK;
        if (!ok) {
            name_error(&err, name);
            gp_api_fail(r, &err);
        }
        ok = ok && item_take(r, item, name, &b->reqs[i]);
        json_decref(item);
        if (!ok)
            return false;
    }
    return true;
}

static void batch_free(gp_batch *b)
{
    for (size_t i = 0; b->reqs && i < b->n; i++)
        gp_job_request_free(&b->reqs[i]);
    free(b->reqs);
}

/* ---- step 2: the engine thread ---- */

/* Would the live engine take every item, its job defaults filled in (as
 * POST /v1/jobs fills them)?  *bad = the first it would not.  Items get
 * the ids gp_journal_submit will give them, in order. */
static gp_err batch_check(gp_server *srv, gp_batch *b, size_t *bad, gp_error *err)
{
    const gp_journal *j = &srv->journal;
    for (size_t i = 0; i < b->n; i++) {
        *bad = i;
        gp_err rc = gp_gpu_types_job_canon(srv, &b->reqs[i], err);
        if (rc == GP_OK)
            rc = gp_engine_job_defaults(j->engine, &b->reqs[i].spec, err);
        gp_job_spec s = b->reqs[i].spec;
        s.id = j->replayer.next_job_id + i;
        if (rc == GP_OK && b->array && i > 0) /* an array's copies differ only in env */
            rc = gp_engine_job_check(j->engine, &s, err);
        else if (rc == GP_OK)
            rc = gp_api_job_engine_check(srv, &b->reqs[i], s.id, err);
        if (rc != GP_OK)
            return rc;
    }
    return GP_OK;
}

/* May every item run as its user (users.h)?  A user bound to nothing is
 * bound by the first item naming it (binds[i]), and the items after it
 * are held to that item's tenant as if it were bound already.  The copies
 * of an array are one job: only the first is looked at. */
static gp_err batch_users(gp_store *store, const gp_batch *b, bool *binds, size_t *bad, gp_error *err)
{
    gp_strmap first = {0};
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < (b->array ? 1 : b->n); i++) {
        const gp_job_request *q = &b->reqs[i];
        uint32_t earlier;
        bool unbound = false;
        *bad = i;
        if (!q->user[0] || (rc = gp_user_tenant_check(store, q->user, q->tenant, NULL, &unbound, err)) || !unbound)
            continue;
        if (gp_strmap_get(&first, q->user, &earlier)) {
            if (!gp_scope_covers(b->reqs[earlier].tenant, q->tenant))
                rc = gp_error_set(err, GP_ERR_INVALID, "user", "user %s is bound to %s by an earlier job of the batch",
                                  q->user, b->reqs[earlier].tenant);
        } else if (!gp_strmap_put(&first, q->user, (uint32_t)i)) {
            rc = gp_error_set(err, GP_ERR_NOMEM, "user", "out of memory");
        } else {
            binds[i] = true;
        }
    }
    gp_strmap_free(&first);
    return rc;
}

static void batch_run(gp_server *srv, gp_op *op, int64_t now)
{
    gp_batch *b = op->arg;
    gp_error err;
    char name[32];
    size_t bad = b->n;
    bool *binds = calloc(b->n, sizeof *binds);
    if (!binds || batch_users(srv->store, b, binds, &bad, &err) != GP_OK ||
        batch_check(srv, b, &bad, &err) != GP_OK) {
        if (!binds)
            gp_error_set(&err, GP_ERR_NOMEM, "jobs", "out of memory");
        item_name(b, bad < b->n ? bad : 0, name, sizeof name);
        name_error(&err, name);
        gp_op_fail(op, &err);
        free(binds);
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        if (gp_journal_submit(&srv->journal, &b->reqs[i], now, &err) != GP_OK) {
            /* items 0..i-1 are in the engine: only the durable log can take them back */
            srv->journal.broken = srv->journal.broken || i > 0;
            item_name(b, i, name, sizeof name);
            name_error(&err, name);
            gp_op_fail(op, &err);
            free(binds);
            return;
        }
    }
    for (size_t i = 0; i < b->n; i++) /* the jobs are in the engine: only the durable log can take them back */
        if (binds[i] && gp_store_user_bind(srv->store, b->reqs[i].user, b->reqs[i].tenant, now, op->who->token_id,
                                           &err) != GP_OK)
            srv->journal.broken = true;
    free(binds);
    snprintf(op->target, sizeof op->target, "job/%llu..%llu", (unsigned long long)b->reqs[0].spec.id,
             (unsigned long long)b->reqs[b->n - 1].spec.id);
    op->status = 201;
    atomic_fetch_add(&srv->submits, b->n);
}

/* 201 {"ids": [...], "jobs": [...]}: each job as POST /v1/jobs answers
 * it (after the batch's scheduling pass), without the execution note. */
static void batch_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    gp_batch *b = op->arg;
    json_t *ids = json_array(), *jobs = json_array();
    for (size_t i = 0; i < b->n; i++) {
        json_t *view = gp_job_request_to_json(&b->reqs[i]);
        gp_journal_job_live(&srv->journal, b->reqs[i].spec.id, view);
        json_array_append_new(ids, json_integer((json_int_t)b->reqs[i].spec.id));
        json_array_append_new(jobs, view);
    }
    gp_op_reply(op, 201, json_pack("{s:o, s:o}", "ids", ids, "jobs", jobs));
}

void gp_api_jobs_batch(gp_request *r)
{
    if (!gp_api_may_submit(r))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    gp_batch b = {0};
    const json_t *items = batch_items(r, body, &b);
    bool ok = items && batch_take(r, items, &b);
    json_decref(body);
    if (ok) {
        gp_op op = {.run = batch_run, .finish = batch_finish, .mutates = true, .arg = &b, .action = "job.submit"};
        snprintf(op.target, sizeof op.target, "jobs:batch/%zu", b.n);
        gp_api_run_op(r, &op);
    }
    batch_free(&b);
}
