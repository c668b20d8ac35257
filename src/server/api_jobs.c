/* api_jobs.c - POST/GET /v1/jobs, GET/DELETE /v1/jobs/{id}.
 *
 * Who may do what:
 *   submit   admin (any tenant); tenant-admin and member inside their scope;
 *            jobs run as the token's user (only an admin may name another),
 *            a user jobs may run as and bound to the job's tenant or above
 *            (a user bound to nothing is bound to the job's tenant:
 *            users.h); cpu_millis, mem_mib and pids_max left 0 take the
 *            tenant's job defaults before the job is logged; its image
 *            and mounts are held to its tenant's container policy
 *            (api_containers.c);
 *            a member's job without a tenant goes to the member's tenant
 *   list     also a member's without ?tenant= lists its tenant (its scope)
 *   list/get admin, operator, auditor: all; others: their scope only, and
 *            a job outside it is answered 404, exactly like a missing one
 *   cancel   admin, operator: any; tenant-admin: inside its scope; member:
 *            its own jobs, any of its scope where the tenant's `cancel`
 *            is `tenant` (api_job_rights.c); another's: 403
 *   PATCH    api_job_patch.c
 *
 * Reads come from the store (committed rows); a live job's state, reason
 * and placement are then taken from the engine, which is never behind the
 * store (the engine thread answers reads after its commit).
 *
 * A job placed on a node without an agent (a --fleet node) is booked, not
 * run: every answer for such a job says so in "execution".
 */
#include "server/api.h"
#include "server/gpu_types.h"
#include "server/users.h"
#include "util/nearest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char EXECUTION_NOTE[] =
    "not executed: a node of this job has no node agent (gpupool-agent), only a --fleet entry; the GPUs are booked"
    " for the job, nothing runs there";

json_t *gp_api_job_view(json_t *row)
{
    json_t *view = json_object();
    json_t *spec = json_object_get(row, "spec");
    if (json_is_object(spec))
        json_object_update(view, spec);
    const char *keys[] = {"state",    "class",     "reason",  "submit_time", "bind_time",
                          "end_time", "placement", "history", "last_exit"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(row, keys[i]);
        if (v)
            json_object_set(view, keys[i], v);
    }
    return view;
}

static void add_execution_note(gp_server *srv, json_t *view)
{
    json_t *placement = json_object_get(view, "placement");
    size_t i;
    json_t *rep;
    bool agentless = false;
    json_array_foreach(placement, i, rep) {
        agentless = agentless || !gp_agents_has_agent(&srv->agents, json_string_value(json_object_get(rep, "node")));
    }
    if (agentless)
        json_object_set_new(view, "execution", json_string(EXECUTION_NOTE));
}

/* The node's heartbeat entry of that replica's pull, NULL none (borrowed
 * from view). */
static json_t *pull_of(json_t *view, uint64_t job, size_t replica)
{
    size_t i;
    json_t *run;
    json_array_foreach(json_object_get(view, "running"), i, run) {
        if ((uint64_t)json_integer_value(json_object_get(run, "job")) == job &&
            (size_t)json_integer_value(json_object_get(run, "replica")) == replica)
            return json_object_get(run, "pull");
    }
    return NULL;
}

/* A running job's image pulls, as its agents' last heartbeats said: each
 * placement entry pulling gets "pull", the job the first of them.  They
 * live in memory only (agents.h): an agent sends them again with every
 * heartbeat, so a restart loses one heartbeat's worth at most. */
static void add_pull(gp_server *srv, json_t *view)
{
    const char *state = json_string_value(json_object_get(view, "state"));
    uint64_t id = (uint64_t)json_integer_value(json_object_get(view, "id"));
    size_t i;
    json_t *rep;
    if (!state || strcmp(state, "running") != 0)
        return;
    json_array_foreach(json_object_get(view, "placement"), i, rep) {
        json_t *node = gp_agents_view(&srv->agents, json_string_value(json_object_get(rep, "node")));
        json_t *pull = pull_of(node, id, i);
        if (pull) {
            json_object_set(rep, "pull", pull);
            if (!json_object_get(view, "pull"))
                json_object_set(view, "pull", pull);
        }
        json_decref(node);
    }
}

bool gp_api_parse_job_id(gp_request *r, const char *text, uint64_t *id)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!text[0] || *end || errno || v == 0 || v > INT64_MAX || text[0] == '-' || text[0] == '+') {
        gp_api_error(r, 400, "invalid", "id", "a job id is a positive integer, got \"%.40s\"", text);
        return false;
    }
    *id = v;
    return true;
}

static bool tenant_visible(const gp_principal *who, const char *tenant)
{
    return tenant && gp_principal_sees(who, tenant);
}

/* ---- submit ---- */

gp_err gp_api_job_for_caller(const gp_request *r, gp_job_request *req, gp_error *err)
{
    if (!tenant_visible(&r->who, req->tenant))
        return gp_error_set(err, GP_ERR_NOT_FOUND, "tenant", "no tenant %s", req->tenant);
    if (r->who.role != GP_ROLE_ADMIN && req->user[0] && strcmp(req->user, r->who.user) != 0)
        return gp_error_set(err, GP_ERR_INVALID, "user", "jobs run as the token's user (%s); only an admin names another",
                            r->who.user[0] ? r->who.user : "none");
    if (r->who.role != GP_ROLE_ADMIN && r->who.user[0]) {
        snprintf(req->user, sizeof req->user, "%s", r->who.user);
        req->spec.user = req->user;
    }
    gp_err rc = req->user[0] ? gp_user_name_check(req->user, r->srv->cfg.min_job_uid, err) : GP_OK;
    return rc == GP_OK ? gp_api_job_secrets_check(r, req, err) : rc;
}

gp_err gp_api_job_default_tenant(const gp_request *r, json_t *job, gp_error *err)
{
    if (!json_is_object(job) || json_object_get(job, "tenant") || gp_principal_sees_all(&r->who))
        return GP_OK;
    const char *one = gp_principal_one_scope(&r->who);
    if (!one && r->who.n_grants > 1)
        return gp_error_set(err, GP_ERR_INVALID, "tenant",
                            "%s holds roles in several tenants (%s, %s%s): name one with tenant", r->who.name,
                            r->who.grants[0].scope, r->who.grants[1].scope, r->who.n_grants > 2 ? ", ..." : "");
    if (one && r->who.role == GP_ROLE_MEMBER)
        json_object_set_new(job, "tenant", json_string(one));
    return GP_OK;
}

/* The engine's own refusal first (an unknown tenant, a share an untrusted
 * tenant may not have), then the fleet's shape (a job no node or block
 * could ever hold, unless it asked to wait for nodes), then the tenant's
 * container policy. */
gp_err gp_api_job_engine_check(gp_server *srv, const gp_job_request *req, uint64_t id, gp_error *err)
{
    gp_job_spec probe = req->spec;
    probe.id = id;
    gp_err rc = gp_engine_job_check(srv->journal.engine, &probe, err);
    if (rc == GP_OK && !req->wait_for_fleet)
        rc = gp_engine_job_fits(srv->journal.engine, &probe, err);
    return rc == GP_OK ? gp_api_job_container_check(srv, req, err) : rc;
}

/* A submit to a tenant that does not exist: "; did you mean P?" after the
 * engine's "no tenant X", P the nearest tenant the caller sees. */
static void tenant_near(const gp_server *srv, const gp_principal *who, const char *typed, gp_error *err)
{
    const gp_engine *e = srv->journal.engine;
    size_t n = 0, count = gp_engine_tenant_count(e);
    const char **paths = calloc(count + 1, sizeof *paths);
    for (size_t i = 0; paths && i < count; i++) {
        const char *p = gp_engine_tenant_path(e, (uint32_t)i);
        if (p[0] && gp_principal_sees(who, p))
            paths[n++] = p;
    }
    const char *near = paths ? gp_suggest(typed, paths, n) : NULL;
    if (near) {
        char msg[GP_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s; did you mean %s?", err->message, near);
        gp_error_set(err, err->code, err->field, "%s", msg);
    }
    free(paths);
}

static void submit_run(gp_server *srv, gp_op *op, int64_t now)
{
    gp_job_request *req = op->arg;
    gp_error err;
    bool unbound = false;
    if ((req->user[0] && gp_user_tenant_check(srv->store, req->user, req->tenant, NULL, &unbound, &err) != GP_OK) ||
        gp_gpu_types_job_canon(srv, req, &err) != GP_OK || /* one spelling; a quota does not make a type known */
        gp_engine_job_defaults(srv->journal.engine, &req->spec, &err) != GP_OK ||
        gp_api_job_engine_check(srv, req, srv->journal.replayer.next_job_id, &err) != GP_OK ||
        gp_journal_submit(&srv->journal, req, now, &err) != GP_OK) { /* the engine checks the GPU types */
        if (err.code == GP_ERR_NOT_FOUND && strcmp(err.field, "tenant") == 0)
            tenant_near(srv, op->who, req->tenant, &err);
        gp_op_fail(op, &err);
        return;
    }
    if (unbound && gp_store_user_bind(srv->store, req->user, req->tenant, now, op->who->token_id, &err) != GP_OK)
        srv->journal.broken = true; /* the job is in the engine: only the durable log can take it back */
    snprintf(op->target, sizeof op->target, "job/%llu", (unsigned long long)req->spec.id);
    op->status = 201;
    atomic_fetch_add(&srv->submits, 1);
}

static void submit_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    gp_job_request *req = op->arg;
    json_t *view = gp_job_request_to_json(req);
    gp_journal_job_live(&srv->journal, req->spec.id, view);
    add_execution_note(srv, view);
    gp_op_reply(op, 201, view);
}

bool gp_api_may_submit(gp_request *r)
{
    if (r->who.role != GP_ROLE_OPERATOR && r->who.role != GP_ROLE_AUDITOR)
        return true;
    gp_api_forbidden(r, "submit jobs");
    return false;
}

void gp_api_jobs_submit(gp_request *r)
{
    if (!gp_api_may_submit(r))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    gp_job_request req;
    gp_error err;
    if (gp_api_job_default_tenant(r, body, &err) != GP_OK) {
        json_decref(body);
        gp_api_fail(r, &err);
        return;
    }
    gp_err rc = gp_job_request_parse(body, false, &req, &err);
    json_decref(body);
    if (rc == GP_OK && !gp_api_tenant_path_ok(r, req.tenant, "tenant"))
        rc = GP_ERR_INVALID;
    else if (rc == GP_OK)
        rc = gp_api_job_for_caller(r, &req, &err);
    if (rc != GP_OK) {
        if (!r->reply)
            gp_api_fail(r, &err);
        gp_job_request_free(&req);
        return;
    }
    gp_op op = {.run = submit_run, .finish = submit_finish, .mutates = true, .arg = &req, .action = "job.submit"};
    snprintf(op.target, sizeof op.target, "tenant/%s", req.tenant);
    gp_api_run_op(r, &op);
    gp_job_request_free(&req);
}

/* ---- list and get ---- */

static bool is_live(const json_t *view)
{
    int state = 0;
    return gp_enum_value(GP_ENUM_JOB_STATE, json_string_value(json_object_get(view, "state")), &state) &&
           state <= GP_JOB_PREEMPTING;
}

/* Replaces the stored state, reason and placement of live jobs by the
 * engine's (the store keeps the reason of the last decision; the engine
 * knows why a job waits right now).  arg: a JSON array of views. */
static void live_run(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    size_t i;
    json_t *view;
    json_array_foreach((json_t *)op->arg, i, view) {
        if (is_live(view)) {
            gp_journal_job_live(&srv->journal, (uint64_t)json_integer_value(json_object_get(view, "id")), view);
            gp_gpu_types_reason(srv, view); /* a declared type's nodes not here yet */
        }
    }
    op->status = 200;
}

/* live_run, and a pending job's every blocker: one job's view (GET
 * /v1/jobs/{id}; a list would pay it for every pending job). */
static void live_one_run(gp_server *srv, gp_op *op, int64_t now)
{
    live_run(srv, op, now);
    json_t *view = json_array_get((json_t *)op->arg, 0);
    gp_journal_job_blockers(&srv->journal, (uint64_t)json_integer_value(json_object_get(view, "id")), view);
}

static void overlay_live(gp_request *r, json_t *views, gp_op_fn run)
{
    gp_op op = {.run = run, .arg = views};
    op.who = &r->who;
    op.request_id = r->request_id;
    gp_loop_run(&r->srv->loop, &op);
    json_decref(op.reply);
}

void gp_api_jobs_list(gp_request *r)
{
    static const char *const allowed[] = {"tenant", "state", "user", "before", "limit", "from", "to", NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_store_job_filter f = {.limit = 100};
    int64_t before = 0, limit = 100;
    f.tenant = gp_api_query(r, "tenant");
    f.state = gp_api_query(r, "state");
    if (!f.tenant && r->who.role == GP_ROLE_MEMBER)
        f.tenant = gp_principal_one_scope(&r->who); /* several: the caller's scopes (gp_api_scopes) */
    f.user = gp_api_query(r, "user");
    if (f.tenant && !gp_api_tenant_path_ok(r, f.tenant, "tenant"))
        return;
    if (f.state && strcmp(f.state, "live") != 0) {
        int state = 0;
        if (!gp_enum_value(GP_ENUM_JOB_STATE, f.state, &state)) {
            char states[160];
            gp_enum_list(GP_ENUM_JOB_STATE, states, sizeof states);
            gp_api_error(r, 400, "invalid", "state", "state must be live (pending to preempting) or one of %s; got %.40s",
                         states, f.state);
            return;
        }
    }
    if (!gp_api_query_int(r, "before", 1, INT64_MAX, &before) || !gp_api_query_int(r, "limit", 1, 1000, &limit) ||
        !gp_api_query_int(r, "from", 1, INT64_MAX, &f.from) || !gp_api_query_int(r, "to", 1, INT64_MAX, &f.to))
        return;
    if (f.from && f.to && f.to <= f.from) {
        gp_api_error(r, 400, "invalid", "to", "to must be after from");
        return;
    }
    f.before = (uint64_t)before;
    f.limit = (int)limit;
    f.scopes = gp_api_scopes(r, &f.n_scopes);
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *out = NULL;
    if (!s || gp_store_jobs_list(s, &f, &out, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    /* an empty listing of a tenant that does not exist is a typo, not "no
     * jobs" (a removed tenant's old jobs still list) */
    bool unknown = f.tenant && json_array_size(json_object_get(out, "jobs")) == 0 &&
                   !gp_api_tenant_known(r, s, f.tenant, "tenant");
    gp_readers_give(&r->srv->readers, s);
    if (unknown) {
        json_decref(out);
        return;
    }
    json_t *jobs = json_array();
    size_t i;
    json_t *row;
    bool any_live = false;
    json_array_foreach(json_object_get(out, "jobs"), i, row) {
        json_array_append_new(jobs, gp_api_job_view(row));
        any_live = any_live || is_live(row);
    }
    if (any_live)
        overlay_live(r, jobs, live_run);
    json_array_foreach(jobs, i, row) {
        add_execution_note(r->srv, row);
        add_pull(r->srv, row);
    }
    json_object_set_new(out, "jobs", jobs);
    gp_api_reply(r, 200, out);
}

void gp_api_job_get(gp_request *r, const char *text)
{
    static const char *const allowed[] = {NULL};
    uint64_t id;
    if (!gp_api_query_only(r, allowed) || !gp_api_parse_job_id(r, text, &id))
        return;
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *row = NULL;
    if (!s || gp_store_job_get(s, id, &row, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    if (!row || !tenant_visible(&r->who, json_string_value(json_object_get(row, "tenant")))) {
        json_decref(row);
        gp_api_error(r, 404, "not_found", "id", "no job %llu", (unsigned long long)id);
        return;
    }
    json_t *views = json_pack("[o]", gp_api_job_view(row));
    json_decref(row);
    if (is_live(json_array_get(views, 0)))
        overlay_live(r, views, live_one_run);
    json_t *view = json_incref(json_array_get(views, 0));
    json_decref(views);
    add_execution_note(r->srv, view);
    add_pull(r->srv, view);
    gp_api_reply(r, 200, view);
}

/* ---- cancel ---- */

static void cancel_run(gp_server *srv, gp_op *op, int64_t now)
{
    uint64_t id = *(uint64_t *)op->arg;
    gp_error err;
    gp_job_info info;
    const gp_engine *e = srv->journal.engine;
    if (gp_engine_job_info(e, id, &info, NULL) == GP_OK) {
        if (!tenant_visible(op->who, gp_engine_tenant_path(e, info.tenant))) {
            gp_error_set(&err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)id);
            gp_op_fail(op, &err);
            return;
        }
        if (!gp_api_job_may_act(srv, op->who, gp_engine_tenant_path(e, info.tenant), gp_engine_job_user(e, id), true)) {
            gp_api_op_forbidden(op, id, "a member cancels only its own jobs, unless its tenant's cancel is tenant");
            return;
        }
        if (gp_journal_cancel(&srv->journal, id, now, &err) != GP_OK) {
            gp_op_fail(op, &err);
            return;
        }
        op->status = 202;
        return;
    }
    json_t *row = NULL;
    gp_store_job_get(srv->store, id, &row, NULL);
    if (!row || !tenant_visible(op->who, json_string_value(json_object_get(row, "tenant"))))
        gp_error_set(&err, GP_ERR_NOT_FOUND, "id", "no job %llu", (unsigned long long)id);
    else
        gp_error_set(&err, GP_ERR_CONFLICT, "id", "job %llu is already %s", (unsigned long long)id,
                     json_string_value(json_object_get(row, "state")));
    json_decref(row);
    gp_op_fail(op, &err);
}

static void cancel_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    uint64_t id = *(uint64_t *)op->arg;
    json_t *row = NULL;
    gp_store_job_get(srv->store, id, &row, NULL);
    json_t *view = row ? gp_api_job_view(row) : json_pack("{s:I}", "id", (json_int_t)id);
    json_decref(row);
    gp_journal_job_live(&srv->journal, id, view);
    gp_op_reply(op, 202, view);
}

void gp_api_job_cancel(gp_request *r, const char *text)
{
    static const char *const allowed[] = {NULL};
    uint64_t id;
    if (!gp_api_query_only(r, allowed) || !gp_api_parse_job_id(r, text, &id))
        return;
    if (r->who.role == GP_ROLE_AUDITOR) {
        gp_api_forbidden(r, "cancel jobs");
        return;
    }
    gp_op op = {.run = cancel_run, .finish = cancel_finish, .mutates = true, .arg = &id, .action = "job.cancel"};
    snprintf(op.target, sizeof op.target, "job/%llu", (unsigned long long)id);
    gp_api_run_op(r, &op);
}
