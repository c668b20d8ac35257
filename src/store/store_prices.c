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
#include "store/store_internal.h"

#include <stdio.h>
#include <string.h>

gp_err gp_store_price_add(gp_store *s, int64_t effective, const char *currency, const char *version_json,
                          int64_t created, gp_error *err)
{
    /* an existing version is kept (rows are only inserted): no row changed
     * says the time is taken */
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO prices(effective, currency, version_json, created)"
                                       " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(effective) DO NOTHING",
                                       0, "price add", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_int64(st, 1, effective);
    gp_db_bind_text(st, 2, currency);
    gp_db_bind_text(st, 3, version_json);
    gp_db_bind_int64(st, 4, created);
    gp_err rc = gp__store_exec_once(st, "price add", err);
    if (rc == GP_OK && gp_db_changes(s->conn) == 0)
        rc = gp_error_set(err, GP_ERR_EXISTS, "effective", "a price version is effective at %lld already",
                          (long long)effective);
    return rc;
}

gp_err gp_store_price_latest(gp_store *s, int64_t *effective, char *currency, size_t cap, gp_error *err)
{
    *effective = -1;
    currency[0] = '\0';
    gp_db_stmt *st = gp__store_prepare(s, "SELECT effective, currency FROM prices ORDER BY effective DESC LIMIT 1",
                                       0, "prices", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step = gp_db_step(st, err);
    if (step == GP_DB_ROW) {
        *effective = gp_db_column_int64(st, 0);
        snprintf(currency, cap, "%s", gp_db_column_text(st, 1));
    }
    gp_err rc = step != GP_DB_ERROR ? GP_OK : gp__store_failed(err, "prices");
    gp_db_finalize(st);
    return rc;
}

gp_err gp_store_bill_mode_set(gp_store *s, const char *org, const char *mode, int64_t time, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s,
                                       "INSERT INTO bill_modes(org, mode, updated) VALUES(?1, ?2, ?3) ON CONFLICT(org)"
                                       " DO UPDATE SET mode = excluded.mode, updated = excluded.updated",
                                       0, "bill mode", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    gp_db_bind_text(st, 1, org);
    gp_db_bind_text(st, 2, mode);
    gp_db_bind_int64(st, 3, time);
    return gp__store_exec_once(st, "bill mode", err);
}

static gp_err rows(gp_store *s, const char *sql, json_t *into, bool keyed, gp_error *err)
{
    gp_db_stmt *st = gp__store_prepare(s, sql, 0, "prices", err);
    if (!st)
        return err ? err->code : GP_ERR_INVALID;
    int step;
    while ((step = gp_db_step(st, err)) == GP_DB_ROW) {
        const char *a = gp_db_column_text(st, 0);
        if (keyed)
            json_object_set_new(into, a, json_string(gp_db_column_text(st, 1)));
        else
            json_array_append_new(into, json_loads(a, 0, NULL));
    }
    gp_err rc = step == GP_DB_DONE ? GP_OK : gp__store_failed(err, "prices");
    gp_db_finalize(st);
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
