/* store_prices.c - the price table's versions and each org's billing mode
 * (store.h; schema 7).
 *
 * A version is one row per effective time, its JSON kept as given after
 * validation (metering/price.h reads it back); rows are only inserted, so
 * the prices a past bill used stay as they were.  Modes are one row per
 * org, replaced by a change.
 *
 * Example: two PUT /v1/prices, the second effective mid-month:
 *     prices(1793491200, "USD", {"effective":1793491200,"gpu_types":{"H100":"2.50"},...})
 *     prices(1794787200, "USD", {"effective":1794787200,"gpu_types":{"H100":"3.00"},...})
 */
#include "store/sqlite_internal.h"

#include <stdio.h>
#include <string.h>

gp_err gp_store_price_add(gp_store *s, int64_t effective, const char *currency, const char *version_json,
                          int64_t created, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO prices(effective, currency, version_json, created) VALUES(?1, ?2, ?3, ?4)",
                           -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "price add", err);
    sqlite3_bind_int64(st, 1, effective);
    sqlite3_bind_text(st, 2, currency, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, version_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, created);
    int step = sqlite3_step(st);
    gp_err rc = GP_OK;
    if (step == SQLITE_CONSTRAINT)
        rc = gp_error_set(err, GP_ERR_EXISTS, "effective", "a price version is effective at %lld already",
                          (long long)effective);
    else if (step != SQLITE_DONE)
        rc = gp__store_fail(s, "price add", err);
    sqlite3_finalize(st);
    return rc;
}

gp_err gp_store_price_latest(gp_store *s, int64_t *effective, char *currency, size_t cap, gp_error *err)
{
    sqlite3_stmt *st;
    *effective = -1;
    currency[0] = '\0';
    if (sqlite3_prepare_v2(s->db, "SELECT effective, currency FROM prices ORDER BY effective DESC LIMIT 1", -1, &st,
                           NULL) != SQLITE_OK)
        return gp__store_fail(s, "prices", err);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *effective = sqlite3_column_int64(st, 0);
        snprintf(currency, cap, "%s", (const char *)sqlite3_column_text(st, 1));
    }
    gp_err rc = step == SQLITE_ROW || step == SQLITE_DONE ? GP_OK : gp__store_fail(s, "prices", err);
    sqlite3_finalize(st);
    return rc;
}

gp_err gp_store_bill_mode_set(gp_store *s, const char *org, const char *mode, int64_t time, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO bill_modes(org, mode, updated) VALUES(?1, ?2, ?3) ON CONFLICT(org)"
                           " DO UPDATE SET mode = excluded.mode, updated = excluded.updated",
                           -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "bill mode", err);
    sqlite3_bind_text(st, 1, org, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, mode, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, time);
    gp_err rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : gp__store_fail(s, "bill mode", err);
    sqlite3_finalize(st);
    return rc;
}

static gp_err rows(gp_store *s, const char *sql, json_t *into, bool keyed, gp_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gp__store_fail(s, "prices", err);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(st, 0);
        if (keyed)
            json_object_set_new(into, a, json_string((const char *)sqlite3_column_text(st, 1)));
        else
            json_array_append_new(into, json_loads(a, 0, NULL));
    }
    gp_err rc = step == SQLITE_DONE ? GP_OK : gp__store_fail(s, "prices", err);
    sqlite3_finalize(st);
    return rc;
}

gp_err gp_store_prices_get(gp_store *s, json_t **out, gp_error *err)
{
    *out = NULL;
    int64_t latest;
    char currency[16];
    gp_err rc = gp_store_price_latest(s, &latest, currency, sizeof currency, err);
    json_t *table = json_pack("{s:s, s:[], s:{}}", "currency", currency[0] ? currency : "USD", "versions", "modes");
    if (rc == GP_OK)
        rc = rows(s, "SELECT version_json FROM prices ORDER BY effective", json_object_get(table, "versions"), false,
                  err);
    if (rc == GP_OK)
        rc = rows(s, "SELECT org, mode FROM bill_modes ORDER BY org", json_object_get(table, "modes"), true, err);
    if (rc)
        json_decref(table);
    else
        *out = table;
    return rc;
}
