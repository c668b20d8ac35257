/* api_bill.c - prices and bills: GET/PUT /v1/prices, PUT
 * /v1/prices/modes/{org}, GET /v1/bill (docs/api.md, docs/metering.md).
 *
 * Prices: anybody with a token reads the table; an admin adds a version
 * (PUT /v1/prices {"effective", "currency"?, "gpu_types", "premium"}).
 * The body is checked on the API thread (metering/price.h: 400 naming the
 * field); the engine thread then refuses, 409, a version whose effective
 * time is already taken, one in the past unless ?backdate=true (a bill
 * already sent would change), and a currency other than the table's.  An
 * admin sets an org's mode (a top-level tenant: 404 when there is none).
 * Each change is audited (prices.set, prices.mode).
 *
 * Bills are read on a reader connection, never the engine thread: the
 * price table and the period's ledger rows (typed columns) go through
 * metering/bill.h.  as_of is now.  A tenant-admin or member sees its
 * scope's subtree only (?tenant= must be inside it, else 404) and no
 * fleet section; admin, operator and auditor see every tenant and the
 * fleet (?hourly=1 adds its hours).  ?format=csv answers the CSV.
 *
 * Example: GET /v1/bill?period=2026-11&tenant=research/nlp with a member
 * token of research/nlp -> {"period": "2026-11", ..., "tenants":
 * [{"tenant": "research/nlp", "lines": [...], ...}]}.
 */
#include "server/api.h"
#include "server/gpu_types.h"

#include "metering/bill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- prices ---- */

void gp_api_prices_get(gp_request *r)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    gp_error err;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *out = NULL;
    if (!s || gp_store_prices_get(s, &out, &err) != GP_OK) {
        gp_readers_give(&r->srv->readers, s);
        gp_api_fail(r, &err);
        return;
    }
    gp_readers_give(&r->srv->readers, s);
    gp_api_reply(r, 200, out);
}

typedef struct price_arg {
    int64_t effective;
    char currency[16];
    bool backdate;
    json_t *version; /* canonical: effective as epoch seconds */
} price_arg;

static void price_set_run(gp_server *srv, gp_op *op, int64_t now)
{
    price_arg *a = op->arg;
    gp_error err;
    int64_t latest;
    char currency[16];
    gp_err rc = gp_store_price_latest(srv->store, &latest, currency, sizeof currency, &err);
    if (rc == GP_OK) /* one spelling per GPU type, as the ledger's rows have it */
        rc = gp_gpu_types_keys_canon(srv, json_object_get(a->version, "gpu_types"), "gpu_types", &err);
    if (!a->currency[0])
        snprintf(a->currency, sizeof a->currency, "%s", currency[0] ? currency : "USD");
    if (rc == GP_OK && currency[0] && strcmp(currency, a->currency) != 0)
        rc = gp_error_set(&err, GP_ERR_CONFLICT, "currency", "the price table is in %s, not %s", currency, a->currency);
    else if (rc == GP_OK && a->effective < now && !a->backdate)
        rc = gp_error_set(&err, GP_ERR_CONFLICT, "effective",
                          "effective %lld is in the past (now %lld): bills already computed would change; add"
                          " ?backdate=true to mean it",
                          (long long)a->effective, (long long)now);
    char *text = rc == GP_OK ? json_dumps(a->version, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (rc == GP_OK)
        rc = text ? gp_store_price_add(srv->store, a->effective, a->currency, text, now, &err)
                  : gp_error_set(&err, GP_ERR_NOMEM, "prices", "out of memory");
    free(text);
    if (rc != GP_OK) {
        gp_op_fail(op, &err); /* a taken effective time: 409 */
        return;
    }
    json_t *reply = json_deep_copy(a->version);
    json_object_set_new(reply, "currency", json_string(a->currency));
    gp_op_reply(op, 201, reply);
}

/* The version as kept: effective in epoch seconds, the prices as given. */
static json_t *canonical_version(json_t *body, int64_t effective)
{
    json_t *premium = json_object_get(body, "premium");
    return json_pack("{s:I, s:O, s:o}", "effective", (json_int_t)effective, "gpu_types",
                     json_object_get(body, "gpu_types"), "premium", premium ? json_incref(premium) : json_object());
}

void gp_api_prices_put(gp_request *r)
{
    static const char *const allowed[] = {"backdate", NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, "set prices");
        return;
    }
    const char *backdate = gp_api_query(r, "backdate");
    if (backdate && strcmp(backdate, "true") != 0 && strcmp(backdate, "false") != 0) {
        gp_api_error(r, 400, "invalid", "backdate", "backdate must be true or false");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    gp_price_version v;
    gp_error err;
    const char *currency = json_string_value(json_object_get(body, "currency"));
    json_t *c = json_object_get(body, "currency");
    if (c && (!currency || strlen(currency) != 3)) {
        gp_api_error(r, 400, "invalid", "currency", "currency must be a 3-letter code such as \"USD\"");
        json_decref(body);
        return;
    }
    if (gp_price_version_parse(body, &v, &err) != GP_OK) {
        gp_api_fail(r, &err);
        json_decref(body);
        return;
    }
    price_arg a = {.effective = v.effective, .backdate = backdate && strcmp(backdate, "true") == 0};
    gp_price_version_free(&v);
    snprintf(a.currency, sizeof a.currency, "%s", currency ? currency : "");
    a.version = canonical_version(body, a.effective);
    gp_op op = {.run = price_set_run, .mutates = true, .arg = &a, .action = "prices.set"};
    snprintf(op.target, sizeof op.target, "prices/%lld", (long long)a.effective);
    gp_api_run_op(r, &op);
    json_decref(a.version);
    json_decref(body);
}

typedef struct mode_arg {
    const char *org, *mode;
} mode_arg;

static void mode_set_run(gp_server *srv, gp_op *op, int64_t now)
{
    mode_arg *a = op->arg;
    gp_error err;
    uint32_t index;
    if (strchr(a->org, '/') || gp_engine_tenant_find(srv->journal.engine, a->org, &index, NULL) != GP_OK) {
        gp_error_set(&err, GP_ERR_NOT_FOUND, "org", "no org %s (a top-level tenant)", a->org);
        gp_op_fail(op, &err);
        return;
    }
    if (gp_store_bill_mode_set(srv->store, a->org, a->mode, now, &err) != GP_OK) {
        gp_op_fail(op, &err);
        return;
    }
    gp_op_reply(op, 200, json_pack("{s:s, s:s}", "org", a->org, "mode", a->mode));
}

void gp_api_prices_mode_put(gp_request *r, const char *org)
{
    static const char *const allowed[] = {NULL};
    if (!gp_api_query_only(r, allowed) || !gp_api_tenant_path_ok(r, org, "org"))
        return;
    if (r->who.role != GP_ROLE_ADMIN) {
        gp_api_forbidden(r, "set billing modes");
        return;
    }
    json_t *body = gp_api_body_object(r);
    if (!body)
        return;
    const char *mode = json_string_value(json_object_get(body, "mode"));
    if (!mode || (strcmp(mode, "chargeback") != 0 && strcmp(mode, "showback") != 0) || json_object_size(body) != 1) {
        gp_api_error(r, 400, "invalid", "mode", "the body must be {\"mode\": \"chargeback\" or \"showback\"}");
        json_decref(body);
        return;
    }
    mode_arg a = {.org = org, .mode = mode};
    gp_op op = {.run = mode_set_run, .mutates = true, .arg = &a, .action = "prices.mode"};
    snprintf(op.target, sizeof op.target, "org/%s", org);
    gp_api_run_op(r, &op);
    json_decref(body);
}

/* ---- bills ---- */

static gp_err feed(void *ctx, const gp_bill_record *rec, gp_error *err)
{
    return gp_bill_add(ctx, rec, err);
}

/* The period's rows of the reader connection ctx. */
static gp_err store_source(void *ctx, gp_bill *b, int64_t from, int64_t as_of, gp_error *err)
{
    return gp_store_bill_records(ctx, from, as_of, feed, b, err);
}

/* The bill from the reader's committed state: JSON, or CSV text in *csv. */
static gp_err bill_compute(gp_store *s, const gp_bill_query *q, bool want_csv, json_t **out, char **csv,
                           gp_error *err)
{
    json_t *prices = NULL;
    gp_err rc = gp_store_prices_get(s, &prices, err);
    if (rc == GP_OK)
        rc = gp_bill_run(prices, q, store_source, s, out, want_csv ? csv : NULL, err);
    json_decref(prices);
    return rc;
}

/* The query's flags: "1"/"true" or "0"/"false"; replies 400 otherwise. */
static bool query_flag(gp_request *r, const char *key, bool *out)
{
    const char *v = gp_api_query(r, key);
    *out = v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
    if (!v || *out || strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        return true;
    gp_api_error(r, 400, "invalid", key, "%s must be 1 or 0", key);
    return false;
}

void gp_api_bill(gp_request *r)
{
    static const char *const allowed[] = {"period", "tenant", "hourly", "format", NULL};
    if (!gp_api_query_only(r, allowed))
        return;
    const char *tenant = gp_api_query(r, "tenant"), *format = gp_api_query(r, "format");
    gp_bill_query q = {.period = gp_api_query(r, "period"), .as_of = gp_wall_ms() / 1000};
    int64_t from, to;
    gp_error err;
    if (!q.period || gp_price_month_parse(q.period, &from, &to, &err) != GP_OK) {
        gp_api_error(r, 400, "invalid", "period", "period must be a month YYYY-MM, e.g. period=2026-11");
        return;
    }
    if ((tenant && !gp_api_tenant_path_ok(r, tenant, "tenant")) || !query_flag(r, "hourly", &q.hourly))
        return;
    if (format && strcmp(format, "json") != 0 && strcmp(format, "csv") != 0) {
        gp_api_error(r, 400, "invalid", "format", "format must be json or csv");
        return;
    }
    if (tenant && !gp_principal_sees(&r->who, tenant)) {
        gp_api_error(r, 404, "not_found", "tenant", "no tenant %s", tenant);
        return;
    }
    q.fleet = gp_principal_sees_all(&r->who);
    q.tenant = tenant ? tenant : q.fleet ? NULL : gp_principal_one_scope(&r->who);
    if (!q.fleet && !q.tenant) {
        gp_api_error(r, 400, "invalid", "tenant", "%s holds roles in several tenants: name one with tenant",
                     r->who.name);
        return;
    }
    bool csv = format && strcmp(format, "csv") == 0;
    gp_store *s = gp_readers_take(&r->srv->readers, &err);
    json_t *out = NULL;
    char *text = NULL;
    gp_err rc = s ? bill_compute(s, &q, csv, &out, &text, &err) : err.code;
    gp_readers_give(&r->srv->readers, s);
    if (rc != GP_OK) {
        gp_api_fail(r, &err);
        return;
    }
    if (csv) {
        r->text_reply = text;
        r->content_type = "text/csv; charset=utf-8";
        r->status = 200;
        return;
    }
    gp_api_reply(r, 200, out);
}
