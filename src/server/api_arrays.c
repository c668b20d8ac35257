/* api_arrays.c - /v1/arrays/{id}: a job array as one handle (Slurm's 13_[0-19]).
 *
 * A job array is what POST /v1/jobs:batch {"job": JOB, "array": N} made
 * (api_jobs_batch.c): N members with consecutive ids, the first member's
 * id being the array's id; each member's row keeps array_id and
 * array_index (store schema 12, and the spec the event log holds).
 *
 *   GET    /v1/arrays/13[?index=SET]  its members: id, index, state, reason
 *   PATCH  /v1/arrays/13[?index=SET]  hold, release or update the members
 *                                     named (body as PATCH /v1/jobs/{id})
 *   DELETE /v1/arrays/13[?index=SET]  cancel the members named
 *
 * SET is an index set, "0-19" or "1,3,5-7" (util/index_set.h); without
 * it every member is named.  Each member is judged exactly as the
 * one-job endpoints judge it (api_job_rights.c: scope, then a member's
 * own jobs, to cancel also its tenant's where the tenant's cancel is
 * `tenant`), and the whole request is one op, all or none:
 *
 *   no array 13 in the caller's scope         404 field "id", nothing changed
 *   an index the array does not have          404 field "index" naming them
 *   a member the caller may not act on        403 naming it, nothing changed
 *   a member that cannot take the change      skipped, listed with its state
 *     (cancel: ended; PATCH: not pending)     (none left to change: 409)
 *
 * then every member left changes in the op's one store transaction: 202
 * (DELETE) or 200 (PATCH) {"array_id": 13, "changed": [{"id",
 * "array_index", "state", "reason"}, ...], "skipped": [{"id",
 * "array_index", "state"}, ...]}.
 *
 * Example: array 13 of 20 (ids 13..32), members 0-4 running, 5-19
 * pending, alice's, her tenant's cancel `own`:
 *   bob (member) DELETE /v1/arrays/13            -> 403, nothing cancelled
 *   alice PATCH /v1/arrays/13?index=3-6 {"hold": true}
 *                                                 -> 200, changed 13_5, 13_6
 *                                                    (held), skipped 13_3,
 *                                                    13_4 (running)
 *   alice DELETE /v1/arrays/13?index=18-25       -> 404 index "array 13 has
 *                                                    members 0-19; not 20-25"
 */
#include "server/api.h"
#include "util/index_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct array_arg {
    uint64_t id;
    bool cancel;             /* DELETE; else PATCH with u */
    bool all;                /* no ?index: every member */
    gp_index_set index;
    gp_job_update u;
    char by[GP_NAME_MAX];
    uint64_t *todo;          /* the members to change, found on the engine thread */
    size_t n_todo;
    json_t *skipped;         /* [{"id", "array_index", "state"}] */
} array_arg;

static uint32_t member_index(const json_t *m)
{
    return (uint32_t)json_integer_value(json_object_get(m, "array_index"));
}

static uint64_t member_id(const json_t *m)
{
    return (uint64_t)json_integer_value(json_object_get(m, "id"));
}

/* Does who see every member's tenant?  (They are copies of one job: one
 * tenant.)  False for an empty list too: no such array. */
static bool members_visible(const gp_principal *who, const json_t *members)
{
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m) {
        const char *tenant = json_string_value(json_object_get(m, "tenant"));
        if (!tenant || !gp_principal_sees(who, tenant))
            return false;
    }
    return json_array_size(members) > 0;
}

/* The indexes named that the array does not have (members 0..size-1)
 * into missing; false when there are some. */
static bool indexes_present(const array_arg *a, size_t size, gp_index_set *missing)
{
    memset(missing, 0, sizeof *missing);
    for (int k = 0; !a->all && k < a->index.n; k++)
        if (a->index.r[k].hi >= size)
            gp_index_set_add(missing, a->index.r[k].lo > size ? a->index.r[k].lo : (uint32_t)size,
                             a->index.r[k].hi);
    return missing->n == 0;
}

/* Found: 404 (field id, or index with the members it lacks); else true. */
static bool array_found(const gp_principal *who, const array_arg *a, const json_t *members, gp_error *err)
{
    gp_index_set missing;
    char have[32], lack[256];
    size_t size = json_array_size(members);
    if (!members_visible(who, members)) {
        gp_error_set(err, GP_ERR_NOT_FOUND, "id", "no array %llu", (unsigned long long)a->id);
        return false;
    }
    if (indexes_present(a, size, &missing))
        return true;
    snprintf(have, sizeof have, size > 1 ? "0-%zu" : "0", size - 1);
    gp_error_set(err, GP_ERR_NOT_FOUND, "index", "array %llu has members %s; not %s", (unsigned long long)a->id,
                 have, gp_index_set_format(&missing, lack, sizeof lack));
    return false;
}

/* May the member take the change (live; for PATCH pending)?  *state: its
 * state now, the engine's when it is live, else its row's. */
static bool member_changes(const gp_engine *e, const array_arg *a, const json_t *m, const char **state)
{
    gp_job_info info;
    *state = json_string_value(json_object_get(m, "state"));
    if (gp_engine_job_info(e, member_id(m), &info, NULL) != GP_OK)
        return false;
    *state = gp_job_state_name(info.state);
    return a->cancel || info.state == GP_JOB_PENDING;
}

/* Sorts the members named into a->todo and a->skipped; false with the
 * op answered (403) at the first member the caller may not act on. */
static bool members_sort(gp_server *srv, gp_op *op, array_arg *a, const json_t *members)
{
    const gp_engine *e = srv->journal.engine;
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m) {
        const char *state;
        uint64_t id = member_id(m);
        if (!a->all && !gp_index_set_has(&a->index, member_index(m)))
            continue;
        if (!member_changes(e, a, m, &state)) {
            json_array_append_new(a->skipped, json_pack("{s:I, s:i, s:s}", "id", (json_int_t)id, "array_index",
                                                        (int)member_index(m), "state", state ? state : "?"));
            continue;
        }
        if (!gp_api_job_may_act(srv, op->who, json_string_value(json_object_get(m, "tenant")),
                                gp_engine_job_user(e, id), a->cancel)) {
            gp_api_op_forbidden(op, id, a->cancel ? "a member cancels only its own jobs, unless its tenant's cancel"
                                                    " is tenant"
                                                  : "a member changes only its own jobs");
            return false;
        }
        a->todo[a->n_todo++] = id;
    }
    return true;
}

/* The field a refusal of the whole change names: PATCH's first field, as one job's PATCH does. */
static const char *change_field(const array_arg *a)
{
    return a->cancel ? "id" : a->u.has_hold ? "hold" : a->u.has_priority ? "priority" : "time_limit_s";
}

/* Changes every member in a->todo; a failure after the first leaves the
 * engine ahead of the store: only the durable log can take it back. */
static gp_err members_change(gp_server *srv, const array_arg *a, int64_t now, gp_error *err)
{
    for (size_t i = 0; i < a->n_todo; i++) {
        gp_err rc = a->cancel ? gp_journal_cancel(&srv->journal, a->todo[i], now, err)
                              : gp_journal_job_update(&srv->journal, a->todo[i], &a->u, now, err);
        if (rc != GP_OK) {
            srv->journal.broken = srv->journal.broken || i > 0;
            return rc;
        }
    }
    return GP_OK;
}

static void array_run(gp_server *srv, gp_op *op, int64_t now)
{
    array_arg *a = op->arg;
    gp_error err;
    json_t *members = NULL;
    if (gp_store_array_members(srv->store, a->id, &members, &err) != GP_OK || !array_found(op->who, a, members, &err)) {
        gp_op_fail(op, &err);
        json_decref(members);
        return;
    }
    a->todo = calloc(json_array_size(members), sizeof *a->todo);
    a->skipped = json_array();
    bool sorted = a->todo && members_sort(srv, op, a, members); /* false: answered 403, or no memory */
    json_decref(members);
    if (!a->todo) {
        gp_error_set(&err, GP_ERR_NOMEM, "id", "out of memory");
        gp_op_fail(op, &err);
    } else if (!sorted) {
        a->n_todo = 0; /* nothing changes */
    } else if (a->n_todo == 0) {
        gp_error_set(&err, GP_ERR_CONFLICT, change_field(a), "array %llu: no member named is %s (%zu skipped)",
                     (unsigned long long)a->id, a->cancel ? "live" : "pending", json_array_size(a->skipped));
        gp_op_fail(op, &err);
    } else if (members_change(srv, a, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
    } else {
        op->status = a->cancel ? 202 : 200;
    }
}

/* The changed members as they are now: the engine's state and reason for
 * those still live (a hold's "held by alice"), their rows' for the rest. */
static void array_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    array_arg *a = op->arg;
    json_t *members = NULL, *changed = json_array();
    gp_store_array_members(srv->store, a->id, &members, NULL);
    size_t i, k = 0;
    json_t *m;
    json_array_foreach(members, i, m) {
        if (k == a->n_todo || member_id(m) != a->todo[k])
            continue;
        k++;
        json_t *live = json_object();
        bool is_live = gp_journal_job_live(&srv->journal, member_id(m), live);
        json_t *out = json_pack("{s:I, s:i}", "id", (json_int_t)member_id(m), "array_index", (int)member_index(m));
        json_object_set(out, "state", json_object_get(is_live ? live : m, "state"));
        json_object_set(out, "reason", json_object_get(is_live ? live : m, "reason"));
        json_array_append_new(changed, out);
        json_decref(live);
    }
    json_decref(members);
    gp_op_reply(op, a->cancel ? 202 : 200, json_pack("{s:I, s:o, s:O}", "array_id", (json_int_t)a->id, "changed",
                                                     changed, "skipped", a->skipped));
}

/* ?index= into a (absent: every member); false with 400 naming it. */
static bool take_index(gp_request *r, array_arg *a)
{
    const char *text = gp_api_query(r, "index");
    char why[160];
    a->all = text == NULL;
    if (a->all || gp_index_set_parse(text, &a->index, why, sizeof why))
        return true;
    gp_api_error(r, 400, "invalid", "index", "index \"%.40s\": %s (members are named like 0-19 or 1,3,5-7)", text,
                 why);
    return false;
}

/* GET: the members named, from a reader connection. */
static void array_get(gp_request *r, array_arg *a)
{
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *members = NULL;
    if (!s || gp_store_array_members(s, a->id, &members, &err) != GP_OK || !array_found(&r->who, a, members, &err)) {
        gp_readers_give(&r->srv->readers, s);
        json_decref(members);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    json_t *named = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(members, i, m) {
        if (a->all || gp_index_set_has(&a->index, member_index(m)))
            json_array_append_new(named, json_pack("{s:O, s:O, s:O, s:O}", "id", json_object_get(m, "id"),
                                                   "array_index", json_object_get(m, "array_index"), "state",
                                                   json_object_get(m, "state"), "reason", json_object_get(m, "reason")));
    }
    gp_api_reply(r, 200, json_pack("{s:I, s:I, s:o}", "array_id", (json_int_t)a->id, "size",
                                   (json_int_t)json_array_size(members), "members", named));
    json_decref(members);
}

/* PATCH's body into a->u; false with 400. */
static bool take_update(gp_request *r, array_arg *a)
{
    json_t *body = gp_api_body_object(r);
    if (!body)
        return false;
    gp_error err;
    gp_err rc = gp_api_job_update_parse(body, &a->u, &err);
    json_decref(body);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return false;
    }
    snprintf(a->by, sizeof a->by, "%s", r->who.user[0] ? r->who.user : gp_role_name(r->who.role));
    a->u.by = a->by;
    return true;
}

void gp_api_array(gp_request *r, const char *text)
{
    static const char *const allowed[] = {"index", NULL};
    array_arg a = {0};
    if (!gp_api_query_only(r, allowed) || !gp_api_parse_job_id(r, text, &a.id) || !take_index(r, &a))
        return;
    if (strcmp(r->method, "GET") == 0) {
        array_get(r, &a);
        return;
    }
    a.cancel = strcmp(r->method, "DELETE") == 0;
    if (r->who.role == GP_ROLE_AUDITOR) {
        gp_api_forbidden(r, a.cancel ? "cancel jobs" : "change jobs");
        return;
    }
    if (!a.cancel && !take_update(r, &a))
        return;
    gp_op op = {.run = array_run, .finish = array_finish, .mutates = true, .arg = &a,
                .action = "job.cancel"};
    if (!a.cancel)
        snprintf(op.action, sizeof op.action, "job.update");
    char set[128];
    snprintf(op.target, sizeof op.target, "array/%llu%s%s%s", (unsigned long long)a.id, a.all ? "" : "_[",
             a.all ? "" : gp_index_set_format(&a.index, set, sizeof set), a.all ? "" : "]");
    gp_api_run_op(r, &op);
    free(a.todo);
    json_decref(a.skipped);
}
