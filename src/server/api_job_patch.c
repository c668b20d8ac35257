/* api_job_patch.c - PATCH /v1/jobs/{id}: hold, release and update a
 * pending job.
 *
 * Body: any of {"hold": true|false, "priority": N, "time_limit_s": N}
 * (time_limit_s also as a duration with a unit, "2h": util/duration.h).
 * The change is one job_update event (eventlog/event.h): logged and in
 * the store before the answer, replayed like every other job change.
 * Refused, nothing changed: 400 naming a bad or unknown field, 409 naming
 * the first field given when the job is no longer pending.
 *
 * Who may: admin, operator: any job; tenant-admin: jobs in its scope;
 * member: its own jobs only (another member's job in its tenant: 403);
 * auditor: none (403).  A job outside the caller's scope is 404, as GET
 * answers it.  A hold names the token's user (else its role) as who
 * holds the job: `gpupool why` says "held by alice".
 */
#include "server/api.h"
#include "spec/json_input.h"
#include "util/duration.h"

#include <stdio.h>
#include <string.h>

typedef struct patch_arg {
    uint64_t id;
    gp_job_update u;
    char by[GP_NAME_MAX];
} patch_arg;

static gp_err parse_time_limit(const json_t *v, int64_t *out, gp_error *err)
{
    if (json_is_string(v) && gp_duration_parse(json_string_value(v), out) && *out <= GP_TIME_LIMIT_MAX_S)
        return GP_OK;
    if (json_is_string(v))
        return gp_error_set(err, GP_ERR_INVALID, "time_limit_s",
                            "time_limit_s must be seconds or a duration such as 90m or 2h, got \"%.40s\"",
                            json_string_value(v));
    return gp_json_int(v, "time_limit_s", 0, GP_TIME_LIMIT_MAX_S, out, err);
}

gp_err gp_api_job_update_parse(const json_t *body, gp_job_update *u, gp_error *err)
{
    const char *key;
    json_t *v;
    int64_t priority = 0;
    gp_err rc = GP_OK;
    json_object_foreach((json_t *)body, key, v) {
        if (rc != GP_OK)
            break;
        if (strcmp(key, "hold") == 0) {
            u->has_hold = true;
            rc = gp_json_bool(v, "hold", &u->hold, err);
        } else if (strcmp(key, "priority") == 0) {
            u->has_priority = true;
            rc = gp_json_int(v, "priority", GP_PRIORITY_MIN, GP_PRIORITY_MAX, &priority, err);
        } else if (strcmp(key, "time_limit_s") == 0) {
            u->has_time_limit = true;
            rc = parse_time_limit(v, &u->time_limit_s, err);
        } else {
            rc = gp_error_set(err, GP_ERR_INVALID, key, "a pending job changes only hold, priority and time_limit_s;"
                              " %.40s is not one of them", key);
        }
    }
    u->priority = (int)priority;
    if (rc == GP_OK && !u->has_hold && !u->has_priority && !u->has_time_limit)
        rc = gp_error_set(err, GP_ERR_INVALID, "hold", "the body names nothing to change (hold, priority, time_limit_s)");
    return rc;
}

static void patch_run(gp_server *srv, gp_op *op, int64_t now)
{
    patch_arg *a = op->arg;
    gp_error err;
    gp_job_info info;
    const gp_engine *e = srv->journal.engine;
    json_t *row = NULL;
    if (gp_engine_job_info(e, a->id, &info, NULL) != GP_OK) { /* ended (or never was): say which */
        gp_store_job_get(srv->store, a->id, &row, NULL);
        const char *tenant = json_string_value(json_object_get(row, "tenant"));
        if (tenant && gp_principal_sees(op->who, tenant))
            gp_error_set(&err, GP_ERR_CONFLICT, a->u.has_hold ? "hold" : a->u.has_priority ? "priority" : "time_limit_s",
                         "job %llu is %s: only a pending job changes", (unsigned long long)a->id,
                         json_string_value(json_object_get(row, "state")));
        else
            gp_error_set(&err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)a->id);
        json_decref(row);
        gp_op_fail(op, &err);
        return;
    }
    if (!gp_principal_sees(op->who, gp_engine_tenant_path(e, info.tenant))) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)a->id);
        gp_op_fail(op, &err);
        return;
    }
    if (!gp_api_job_may_act(srv, op->who, gp_engine_tenant_path(e, info.tenant), gp_engine_job_user(e, a->id),
                            false)) {
        gp_api_op_forbidden(op, a->id, "a member changes only its own jobs");
        return;
    }
    if (gp_journal_job_update(&srv->journal, a->id, &a->u, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    op->status = 200;
}

static void patch_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    patch_arg *a = op->arg;
    json_t *row = NULL;
    gp_store_job_get(srv->store, a->id, &row, NULL);
    json_t *view = row ? gp_api_job_view(row) : json_pack("{s:I}", "id", (json_int_t)a->id);
    json_decref(row);
    gp_journal_job_live(&srv->journal, a->id, view);
    gp_op_reply(op, 200, view);
}

void gp_api_job_patch(gp_request *r, const char *text)
{
    static const char *const allowed[] = {NULL};
    patch_arg a = {0};
    if (!gp_api_query_only(r, allowed) || !gp_api_parse_job_id(r, text, &a.id))
        return;
    if (r->who.role == GP_ROLE_AUDITOR) {
        gp_api_forbidden(r, "change jobs");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    gp_error err;
    gp_err rc = gp_api_job_update_parse(body, &a.u, &err);
    json_decref(body);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    snprintf(a.by, sizeof a.by, "%s", r->who.user[0] ? r->who.user : gp_role_name(r->who.role));
    a.u.by = a.by;
    gp_op op = {.run = patch_run, .finish = patch_finish, .mutates = true, .arg = &a, .action = "job.update"};
    snprintf(op.target, sizeof op.target, "job/%llu", (unsigned long long)a.id);
    gp_api_run_op(r, &op);
}
