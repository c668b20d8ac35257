/* api_bookings.c - advance bookings through the API (issue 34;
 * docs/booking.md has the rules, docs/api.md the endpoints):
 *
 *   POST   /v1/bookings               book (201 with the placement; 409 with
 *                                     "suggested_start" when it cannot be honoured)
 *   GET    /v1/bookings[?tenant=&from=&to=]   the calendar the caller sees,
 *                                     and the allowances of its orgs
 *   GET    /v1/bookings/{name}        one booking
 *   PATCH  /v1/bookings/{name}        {"end"|"start"|"lend"}: shorten, or extend
 *                                     while still feasible
 *   DELETE /v1/bookings/{name}        cancel (a series: every occurrence not over)
 *   PUT    /v1/booking-allowances/{org}  {"gpu_hours_per_week": N | null} (admin)
 *
 * Who may book, scoped like jobs: an admin for any tenant; a tenant-admin
 * inside its subtree; a member for the tenants of its scope only where the
 * tenant's `booking` setting (its own or the nearest ancestor's; default
 * `admins`) is `members`, and it changes or cancels only the bookings it
 * made.  Operators and auditors read, never book.  A booking outside the
 * caller's scope is 404, as if it did not exist.
 *
 * Every change is an engine event through the journal (the event log is
 * the store of engine inputs, so it is durable before the answer and a
 * restart replays it) and an audit row: booking.create, booking.change,
 * booking.cancel (target booking/NAME), booking.allowance (target org/ORG).
 * Bad input is 400 naming the field, checked here before the engine
 * thread is asked, or by the engine (names, windows, shapes).
 */
#include "server/api.h"
#include "server/booking_json.h"
#include "spec/json_input.h"

#include <stdio.h>
#include <string.h>

/* ---- who may ---- */

/* The nearest `booking` set on the path from tenant to the top; ADMINS when none. */
static gp_booking_policy booking_policy(gp_server *srv, const char *tenant)
{
    return gp_api_tenant_inherited(srv, tenant, GP_ENUM_BOOKING, "booking") == GP_BOOKING_MEMBERS ? GP_BOOKING_MEMBERS
                                                                                                 : GP_BOOKING_ADMINS;
}

/* Who the booking says made it: the token's user, else the token's name. */
static const char *caller_name(const gp_principal *who)
{
    return who->user[0] ? who->user : who->name;
}

static void op_forbidden(gp_op *op, const char *field, const char *message)
{
    gp_op_reply(op, 403, json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "forbidden", "field", field, "message",
                                   message));
    snprintf(op->error_text, sizeof op->error_text, "forbidden: %s", message);
}

/* May op's caller book for tenant (made_by NULL), or change a booking of
 * tenant that made_by made?  Answers the op (404 or 403) when not. */
static bool may_book(gp_server *srv, gp_op *op, const char *tenant, const char *made_by)
{
    const gp_principal *who = op->who;
    if (!gp_principal_sees(who, tenant)) {
        gp_error err;
        gp_error_set(&err, GP_ERR_NOT_FOUND, made_by ? "name" : "tenant", "no %s", made_by ? "such booking" : "tenant");
        gp_op_fail(op, &err);
        return false;
    }
    if (who->role == GP_ROLE_ADMIN || who->role == GP_ROLE_TENANT_ADMIN)
        return true;
    if (who->role != GP_ROLE_MEMBER) {
        op_forbidden(op, "tenant", "operators and auditors read bookings; they do not book");
        return false;
    }
    if (booking_policy(srv, tenant) != GP_BOOKING_MEMBERS) {
        op_forbidden(op, "tenant", "this tenant's bookings are made by its tenant-admins (its booking setting is"
                                   " admins)");
        return false;
    }
    if (made_by && strcmp(made_by, caller_name(who)) != 0) {
        op_forbidden(op, "name", "a member changes only the bookings it made");
        return false;
    }
    return true;
}

/* ---- book ---- */

typedef struct book_arg {
    gp_booking_body body;
    gp_booking_result result;
} book_arg;

/* 409 with the engine's reason and, when it found one, the earliest start
 * of the same shape that it would honour. */
static void fail_refused(gp_op *op, const gp_error *err, const gp_booking_result *res)
{
    gp_op_fail(op, err);
    if (err->code == GP_ERR_CONFLICT && res->suggested_start >= 0 && strcmp(err->field, "name") != 0)
        json_object_set_new(op->reply, "suggested_start", json_integer(res->suggested_start));
}

/* The answer: the booking, or for a series every occurrence. */
static json_t *book_view(const gp_engine *e, const gp_booking_body *b)
{
    gp_booking_info info;
    if (b->spec.recurrence == GP_RECUR_NONE)
        return gp_engine_booking_get(e, b->name, &info, NULL) == GP_OK ? gp_booking_view(e, &info) : json_object();
    json_t *list = json_array();
    for (size_t i = 0; i < gp_engine_booking_count(e); i++) {
        if (gp_engine_booking_at(e, i, &info) && strcmp(info.series, b->name) == 0)
            json_array_append_new(list, gp_booking_view(e, &info));
    }
    return json_pack("{s:s, s:o}", "series", b->name, "occurrences", list);
}

static void book_run(gp_server *srv, gp_op *op, int64_t now)
{
    book_arg *a = op->arg;
    gp_error err;
    if (!may_book(srv, op, a->body.tenant, NULL))
        return;
    snprintf(a->body.made_by, sizeof a->body.made_by, "%s", caller_name(op->who));
    if (gp_journal_booking_add(&srv->journal, &a->body.spec, now, &a->result, &err) != GP_OK) {
        fail_refused(op, &err, &a->result);
        return;
    }
    op->status = 201;
}

static void book_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    book_arg *a = op->arg;
    gp_op_reply(op, 201, book_view(srv->journal.engine, &a->body));
}

void gp_api_bookings_create(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    book_arg a;
    gp_error err;
    gp_err rc = gp_booking_body_parse(body, &a.body, &err);
    json_decref(body);
    if (rc == GP_OK && !a.body.tenant[0] && r->who.role == GP_ROLE_MEMBER)
        snprintf(a.body.tenant, sizeof a.body.tenant, "%s", r->who.scope);
    if (rc == GP_OK && !a.body.tenant[0])
        rc = gp_error_set(&err, GP_ERR_INVALID, "tenant", "tenant is required");
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    if (!gp_api_tenant_path_ok(r, a.body.tenant, "tenant"))
        return;
    memset(&a.result, 0, sizeof a.result);
    a.result.suggested_start = -1;
    gp_op op = {.run = book_run, .finish = book_finish, .mutates = true, .arg = &a, .action = "booking.create"};
    snprintf(op.target, sizeof op.target, "booking/%s", a.body.name);
    gp_api_run_op(r, &op);
}

/* ---- the calendar ---- */

typedef struct list_arg {
    const char *tenant;  /* NULL: every tenant the caller sees */
    int64_t from, to;    /* bookings overlapping [from, to) */
} list_arg;

static bool listed(const gp_op *op, const list_arg *a, const char *tenant, const gp_booking_info *b)
{
    return gp_principal_sees(op->who, tenant) && (!a->tenant || gp_scope_covers(a->tenant, tenant)) &&
           b->end > a->from && b->start < a->to;
}

/* The allowances of the orgs (top-level tenants) the caller sees something of. */
static json_t *allowances_view(const gp_engine *e, const gp_principal *who, int64_t now)
{
    json_t *list = json_array();
    for (uint32_t i = 0; i < gp_engine_tenant_count(e); i++) {
        const char *path = gp_engine_tenant_path(e, i);
        gp_booking_allowance al;
        if (!path[0] || strchr(path, '/'))
            continue;
        bool sees = gp_principal_sees_all(who) || gp_scope_covers(path, who->scope);
        if (sees && gp_engine_booking_allowance_get(e, path, now, &al, NULL) == GP_OK && al.gpu_hours_per_week != 0)
            json_array_append_new(list, gp_booking_allowance_view(path, &al));
    }
    return list;
}

static void list_run(gp_server *srv, gp_op *op, int64_t now)
{
    list_arg *a = op->arg;
    const gp_engine *e = srv->journal.engine;
    json_t *list = json_array();
    for (size_t i = 0; i < gp_engine_booking_count(e); i++) {
        gp_booking_info b;
        if (gp_engine_booking_at(e, i, &b) && listed(op, a, gp_engine_tenant_path(e, b.tenant), &b))
            json_array_append_new(list, gp_booking_view(e, &b));
    }
    gp_op_reply(op, 200, json_pack("{s:o, s:o}", "bookings", list, "allowances", allowances_view(e, op->who, now)));
}

void gp_api_bookings_list(gp_request *r)
{
    static const char *const allowed[] = {"tenant", "from", "to", NULL};
    list_arg a = {.tenant = gp_api_query(r, "tenant"), .from = 0, .to = INT64_MAX};
    if (!gp_api_query_only(r, allowed) || !gp_api_query_int(r, "from", 0, INT64_C(1) << 40, &a.from) ||
        !gp_api_query_int(r, "to", 0, INT64_C(1) << 40, &a.to))
        return;
    if (a.tenant && !gp_api_tenant_path_ok(r, a.tenant, "tenant"))
        return;
    if (a.tenant && !gp_principal_sees(&r->who, a.tenant) && !gp_scope_covers(a.tenant, r->who.scope)) {
        gp_api_error(r, 404, "not_found", "tenant", "no tenant %s", a.tenant);
        return;
    }
    gp_op op = {.run = list_run, .arg = &a};
    gp_api_run_op(r, &op);
}

/* ---- one booking ---- */

typedef struct one_arg {
    const char *name;
    const char *method;
    gp_booking_change change;
} one_arg;

/* The booking op's caller may see, else answered 404 and false. */
static bool visible_booking(gp_server *srv, gp_op *op, const char *name, gp_booking_info *b)
{
    const gp_engine *e = srv->journal.engine;
    gp_error err;
    if (gp_engine_booking_get(e, name, b, &err) == GP_OK && gp_principal_sees(op->who, gp_engine_tenant_path(e, b->tenant)))
        return true;
    gp_error_set(&err, GP_ERR_NOT_FOUND, "name", "no booking %s", name);
    gp_op_fail(op, &err);
    return false;
}

static void one_run(gp_server *srv, gp_op *op, int64_t now)
{
    one_arg *a = op->arg;
    gp_booking_info b;
    gp_error err;
    if (!visible_booking(srv, op, a->name, &b))
        return;
    bool get = strcmp(a->method, "GET") == 0, cancel = strcmp(a->method, "DELETE") == 0;
    if (!get && !may_book(srv, op, gp_engine_tenant_path(srv->journal.engine, b.tenant), b.made_by))
        return;
    gp_err rc = get      ? GP_OK
                : cancel ? gp_journal_booking_cancel(&srv->journal, a->name, now, &err)
                         : gp_journal_booking_change(&srv->journal, a->name, &a->change, now, &err);
    if (rc != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_engine_booking_get(srv->journal.engine, a->name, &b, NULL);
    gp_op_reply(op, 200, gp_booking_view(srv->journal.engine, &b));
}

/* An answer after the pass the change caused (the booking's state as it left it). */
static void one_finish(gp_server *srv, gp_op *op, int64_t now)
{
    (void)now;
    one_arg *a = op->arg;
    gp_booking_info b;
    if (op->status == 200 && gp_engine_booking_get(srv->journal.engine, a->name, &b, NULL) == GP_OK)
        gp_op_reply(op, 200, gp_booking_view(srv->journal.engine, &b));
}

void gp_api_booking(gp_request *r, const char *name)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    one_arg a = {.name = name, .method = r->method};
    gp_op op = {.run = one_run, .arg = &a};
    if (strcmp(r->method, "PATCH") == 0) {
        json_t *body = gp_api_body_object(r);
        if (!body)
            return;
        gp_error err;
        gp_err rc = gp_booking_change_parse(body, &a.change, &err);
        json_decref(body);
        if (rc != GP_OK) {
            gp_api_fail(r, &err);
            return;
        }
    }
    if (strcmp(r->method, "GET") != 0) {
        op.mutates = true;
        op.finish = one_finish;
        snprintf(op.action, sizeof op.action, "%s", strcmp(r->method, "DELETE") == 0 ? "booking.cancel"
                                                                                     : "booking.change");
        snprintf(op.target, sizeof op.target, "booking/%s", name);
    }
    gp_api_run_op(r, &op);
}

/* ---- the org allowance ---- */

typedef struct allowance_arg {
    const char *org;
    int64_t gpu_hours_per_week;
} allowance_arg;

static void allowance_run(gp_server *srv, gp_op *op, int64_t now)
{
    allowance_arg *a = op->arg;
    gp_error err;
    gp_booking_allowance al;
    if (gp_journal_booking_allowance(&srv->journal, a->org, a->gpu_hours_per_week, now, &err) != GP_OK ||
        gp_engine_booking_allowance_get(srv->journal.engine, a->org, now, &al, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, gp_booking_allowance_view(a->org, &al));
}

/* {"gpu_hours_per_week": N (0 none beyond guarantees) | null (unbounded)}. */
static gp_err allowance_parse(const json_t *body, allowance_arg *a, gp_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        if (strcmp(key, "gpu_hours_per_week") != 0)
            return gp_json_unknown_field("", key, err);
    }
    const json_t *hours = json_object_get(body, "gpu_hours_per_week");
    if (!hours)
        return gp_error_set(err, GP_ERR_INVALID, "gpu_hours_per_week",
                            "gpu_hours_per_week is required (0: none beyond guarantees, null: unbounded)");
    a->gpu_hours_per_week = -1;
    return json_is_null(hours) ? GP_OK
                               : gp_json_int(hours, "gpu_hours_per_week", 0, INT64_C(1) << 40,
                                             &a->gpu_hours_per_week, err);
}

void gp_api_booking_allowance_put(gp_request *r, const char *org)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, "set booking allowances");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    allowance_arg a = {.org = org};
    gp_error err;
    gp_err rc = allowance_parse(body, &a, &err);
    json_decref(body);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    gp_op op = {.run = allowance_run, .mutates = true, .arg = &a, .action = "booking.allowance"};
    snprintf(op.target, sizeof op.target, "org/%s", org);
    gp_api_run_op(r, &op);
}
