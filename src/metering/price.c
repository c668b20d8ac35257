/* price.c - the price table: exact decimals, versions, modes (price.h).
 *
 * A decimal is read digit by digit into units of 10^-6, so "2.50" is
 * 2500000 exactly and "2.5000001" (7 decimals) is refused rather than
 * rounded.  Printing is the one place a value is rounded: once, half to
 * even, at the 6th decimal (gp_money_format):
 *
 *     3.0000005 -> "3.000000"  (5 after an even digit stays)
 *     3.0000015 -> "3.000002"  (5 after an odd digit goes up)
 */
#include "metering/price.h"

#include "util/civil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gp_err gp_price_decimal_parse(const json_t *value, const char *field, int64_t max, int64_t *units, gp_error *err)
{
    const char *s = json_string_value(value);
    if (!s)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be a decimal string such as \"2.50\"", field);
    int64_t whole = 0, frac = 0;
    int digits = 0, decimals = -1;
    for (const char *p = s; *p; p++) {
        if (*p == '.' && decimals < 0 && digits > 0) {
            decimals = 0;
        } else if (*p >= '0' && *p <= '9') {
            if (decimals >= 0) {
                if (++decimals > 6)
                    return gp_error_set(err, GP_ERR_INVALID, field, "%s has more than 6 decimals: %s", field, s);
                frac = frac * 10 + (*p - '0');
            } else if (++digits > 13) {
                return gp_error_set(err, GP_ERR_INVALID, field, "%s is too large: %s", field, s);
            } else {
                whole = whole * 10 + (*p - '0');
            }
        } else {
            return gp_error_set(err, GP_ERR_INVALID, field, "%s must be a decimal >= 0 with at most 6 decimals, got \"%s\"",
                                field, s);
        }
    }
    if (digits == 0 || decimals == 0)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be a decimal >= 0 with at most 6 decimals, got \"%s\"",
                            field, s);
    for (int d = decimals < 0 ? 0 : decimals; d < 6; d++)
        frac *= 10;
    int64_t v = whole * GP_PRICE_UNIT + frac;
    if (v > max)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s is too large: %s (at most %lld)", field, s,
                            (long long)(max / GP_PRICE_UNIT));
    *units = v;
    return GP_OK;
}

static bool days_in_month_ok(int y, int m, int d)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int n = days[m - 1] + (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
    return d >= 1 && d <= n;
}

gp_err gp_price_time_parse(const json_t *value, const char *field, int64_t *out, gp_error *err)
{
    if (json_is_integer(value) && json_integer_value(value) >= 0) {
        *out = json_integer_value(value);
        return GP_OK;
    }
    const char *s = json_string_value(value);
    int y, mo, d, h, mi, se, n = 0;
    if (s && strlen(s) == 20 && sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &y, &mo, &d, &h, &mi, &se, &n) == 6 &&
        n == 20 && y >= 1970 && mo >= 1 && mo <= 12 && days_in_month_ok(y, mo, d) && h < 24 && mi < 60 && se < 60 &&
        h >= 0 && mi >= 0 && se >= 0) {
        *out = gp_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
        return GP_OK;
    }
    return gp_error_set(err, GP_ERR_INVALID, field,
                        "%s must be epoch seconds or an RFC 3339 UTC time such as \"2026-11-01T00:00:00Z\"", field);
}

gp_err gp_price_month_parse(const char *period, int64_t *from, int64_t *to, gp_error *err)
{
    int y, m, n = 0;
    if (!period || strlen(period) != 7 || sscanf(period, "%4d-%2d%n", &y, &m, &n) != 2 || n != 7 || y < 1970 ||
        m < 1 || m > 12)
        return gp_error_set(err, GP_ERR_INVALID, "period", "period must be a month YYYY-MM, got \"%s\"",
                            period ? period : "");
    *from = gp_days_from_civil(y, m, 1) * 86400;
    *to = gp_days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * 86400;
    return GP_OK;
}

static gp_err parse_types(const json_t *types, gp_price_version *out, gp_error *err)
{
    if (!json_is_object(types))
        return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "gpu_types must be an object {MODEL: \"PRICE\"}");
    out->types = calloc(json_object_size(types) + 1, sizeof *out->types);
    if (!out->types)
        return gp_error_set(err, GP_ERR_NOMEM, "gpu_types", "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)types, key, v) {
        char field[GP_PRICE_NAME_MAX + 16];
        snprintf(field, sizeof field, "gpu_types.%s", key);
        if (key[0] == '\0' || strlen(key) >= GP_PRICE_NAME_MAX)
            return gp_error_set(err, GP_ERR_INVALID, "gpu_types", "a GPU model name must be 1..%d bytes",
                                GP_PRICE_NAME_MAX - 1);
        gp_price_entry *e = &out->types[out->n_types];
        gp_err rc = gp_price_decimal_parse(v, field, GP_PRICE_MAX, &e->units, err);
        if (rc)
            return rc;
        snprintf(e->name, sizeof e->name, "%s", key);
        out->n_types++;
    }
    return GP_OK;
}

static gp_err parse_premium(const json_t *premium, gp_price_version *out, gp_error *err)
{
    out->nvlink_u = out->block_u = GP_PRICE_UNIT;
    if (!premium)
        return GP_OK;
    if (!json_is_object(premium))
        return gp_error_set(err, GP_ERR_INVALID, "premium", "premium must be an object {\"nvlink\"|\"block\": \"FACTOR\"}");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)premium, key, v) {
        char field[GP_PRICE_NAME_MAX + 16];
        snprintf(field, sizeof field, "premium.%.*s", GP_PRICE_NAME_MAX, key);
        int64_t *slot = strcmp(key, "nvlink") == 0 ? &out->nvlink_u : strcmp(key, "block") == 0 ? &out->block_u : NULL;
        if (!slot)
            return gp_error_set(err, GP_ERR_INVALID, field, "unknown topology %s; premiums are for nvlink and block",
                                key);
        gp_err rc = gp_price_decimal_parse(v, field, GP_PREMIUM_MAX, slot, err);
        if (rc)
            return rc;
    }
    return GP_OK;
}

gp_err gp_price_version_parse(const json_t *v, gp_price_version *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(v))
        return gp_error_set(err, GP_ERR_INVALID, "version", "a price version must be an object");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        if (strcmp(key, "effective") != 0 && strcmp(key, "gpu_types") != 0 && strcmp(key, "premium") != 0 &&
            strcmp(key, "currency") != 0)
            return gp_error_set(err, GP_ERR_INVALID, key, "unknown field %s", key);
    }
    json_t *effective = json_object_get(v, "effective");
    gp_err rc = effective ? gp_price_time_parse(effective, "effective", &out->effective, err)
                          : gp_error_set(err, GP_ERR_INVALID, "effective", "effective is required");
    if (rc == GP_OK)
        rc = parse_types(json_object_get(v, "gpu_types"), out, err);
    if (rc == GP_OK)
        rc = parse_premium(json_object_get(v, "premium"), out, err);
    if (rc)
        gp_price_version_free(out);
    return rc;
}

void gp_price_version_free(gp_price_version *v)
{
    free(v->types);
    v->types = NULL;
    v->n_types = 0;
}

static int by_effective(const void *a, const void *b)
{
    const gp_price_version *x = a, *y = b;
    return (x->effective > y->effective) - (x->effective < y->effective);
}

static gp_err parse_modes(const json_t *modes, gp_price_table *out, gp_error *err)
{
    if (!modes)
        return GP_OK;
    if (!json_is_object(modes))
        return gp_error_set(err, GP_ERR_INVALID, "modes", "modes must be an object {ORG: \"chargeback\"|\"showback\"}");
    out->modes = calloc(json_object_size(modes) + 1, sizeof *out->modes);
    if (!out->modes)
        return gp_error_set(err, GP_ERR_NOMEM, "modes", "out of memory");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)modes, key, v) {
        const char *mode = json_string_value(v);
        if (!mode || (strcmp(mode, "chargeback") != 0 && strcmp(mode, "showback") != 0))
            return gp_error_set(err, GP_ERR_INVALID, "modes", "the mode of %s must be chargeback or showback", key);
        gp_org_mode *m = &out->modes[out->n_modes++];
        snprintf(m->org, sizeof m->org, "%s", key);
        m->chargeback = mode[0] == 'c';
    }
    return GP_OK;
}

gp_err gp_price_table_parse(const json_t *table, gp_price_table *out, gp_error *err)
{
    memset(out, 0, sizeof *out);
    const char *currency = json_string_value(json_object_get(table, "currency"));
    json_t *versions = json_object_get(table, "versions");
    if (!json_is_object(table) || !json_is_array(versions))
        return gp_error_set(err, GP_ERR_INVALID, "versions", "a price table is {\"currency\", \"versions\": [...], \"modes\"}");
    snprintf(out->currency, sizeof out->currency, "%s", currency ? currency : "USD");
    out->versions = calloc(json_array_size(versions) + 1, sizeof *out->versions);
    if (!out->versions)
        return gp_error_set(err, GP_ERR_NOMEM, "versions", "out of memory");
    gp_err rc = GP_OK;
    size_t i;
    json_t *v;
    json_array_foreach(versions, i, v) {
        if (rc == GP_OK && (rc = gp_price_version_parse(v, &out->versions[i], err)) == GP_OK)
            out->n_versions++;
    }
    qsort(out->versions, out->n_versions, sizeof *out->versions, by_effective);
    for (i = 1; rc == GP_OK && i < out->n_versions; i++)
        if (out->versions[i].effective == out->versions[i - 1].effective)
            rc = gp_error_set(err, GP_ERR_INVALID, "versions", "two versions are effective at %lld",
                              (long long)out->versions[i].effective);
    if (rc == GP_OK)
        rc = parse_modes(json_object_get(table, "modes"), out, err);
    if (rc)
        gp_price_table_free(out);
    return rc;
}

void gp_price_table_free(gp_price_table *t)
{
    for (size_t i = 0; i < t->n_versions; i++)
        gp_price_version_free(&t->versions[i]);
    free(t->versions);
    free(t->modes);
    memset(t, 0, sizeof *t);
}

int64_t gp_price_of(const gp_price_version *v, const char *model)
{
    for (size_t i = 0; i < v->n_types; i++)
        if (strcmp(v->types[i].name, model) == 0)
            return v->types[i].units;
    return -1;
}

int64_t gp_price_premium(const gp_price_version *v, const char *topology)
{
    if (strcmp(topology, "nvlink") == 0)
        return v->nvlink_u;
    if (strcmp(topology, "block") == 0)
        return v->block_u;
    return GP_PRICE_UNIT;
}

int gp_price_version_at(const gp_price_table *t, int64_t t_s)
{
    int at = -1;
    for (size_t i = 0; i < t->n_versions && t->versions[i].effective <= t_s; i++)
        at = (int)i;
    return at;
}

bool gp_price_chargeback(const gp_price_table *t, const char *org)
{
    for (size_t i = 0; i < t->n_modes; i++)
        if (strcmp(t->modes[i].org, org) == 0)
            return t->modes[i].chargeback;
    return false;
}

const char *gp_money_format(gp_i128 value, gp_i128 den, char *buf)
{
    bool negative = value < 0;
    gp_i128 v = negative ? -value : value;
    gp_i128 q = v / den, r = v % den;
    if (2 * r > den || (2 * r == den && q % 2 == 1))
        q++;
    /* q = micro-units: split into whole and 6 decimals (q < 10^38: at most 32 whole digits) */
    char digits[48];
    int n = 0;
    gp_i128 whole = q / GP_PRICE_UNIT;
    do {
        digits[n++] = (char)('0' + (int)(whole % 10));
        whole /= 10;
    } while (whole > 0);
    char *p = buf;
    if (negative && q != 0)
        *p++ = '-';
    while (n > 0)
        *p++ = digits[--n];
    snprintf(p, 9, ".%06d", (int)(q % GP_PRICE_UNIT));
    return buf;
}
