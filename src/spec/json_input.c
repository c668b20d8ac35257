/* json_input.c - strict reading of caller JSON (see json_input.h).
 *
 * Why not json_unpack with "!": its errors say "1 object item(s) left
 * unpacked" rather than which field, and it cannot express ranges.  The
 * API promises the field's name in every error, so each value is checked
 * here one by one.
 */
#include "spec/json_input.h"

#include "util/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int gp_json_depth(const char *text, size_t len)
{
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > deepest)
                deepest = depth;
            if (deepest > GP_JSON_MAX_DEPTH)
                return deepest;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return deepest;
}

gp_err gp_json_parse_body(const char *text, size_t len, json_t **out, gp_error *err)
{
    *out = NULL;
    if (len == 0)
        return gp_error_set(err, GP_ERR_INVALID, "body", "the request needs a JSON body");
    if (gp_json_depth(text, len) > GP_JSON_MAX_DEPTH)
        return gp_error_set(err, GP_ERR_INVALID, "body", "JSON nested deeper than %d levels", GP_JSON_MAX_DEPTH);
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!v)
        return gp_error_set(err, GP_ERR_INVALID, "body", "malformed JSON at line %d column %d: %s", jerr.line,
                            jerr.column, jerr.text);
    *out = v;
    return GP_OK;
}

void gp_json_field_name(char *out, size_t cap, const char *prefix, const char *key)
{
    if (prefix && prefix[0])
        snprintf(out, cap, "%s.%s", prefix, key);
    else
        snprintf(out, cap, "%s", key);
}

gp_err gp_json_object(const json_t *v, const char *field, gp_error *err)
{
    if (!json_is_object(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be an object", field);
    return GP_OK;
}

gp_err gp_json_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out, gp_error *err)
{
    if (!json_is_integer(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be an integer", field);
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be %lld..%lld, got %lld", field, (long long)min,
                            (long long)max, (long long)x);
    *out = x;
    return GP_OK;
}

gp_err gp_json_bool(const json_t *v, const char *field, bool *out, gp_error *err)
{
    if (!json_is_boolean(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be true or false", field);
    *out = json_is_true(v);
    return GP_OK;
}

gp_err gp_json_string(const json_t *v, const char *field, size_t max_len, char *out, size_t cap, gp_error *err)
{
    if (!json_is_string(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be a string", field);
    size_t len = json_string_length(v);
    if (len == 0 || len > max_len || len >= cap)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be 1..%zu characters", field,
                            max_len < cap - 1 ? max_len : cap - 1);
    if (!gp_text_printable(json_string_value(v), len))
        return gp_error_set(err, GP_ERR_INVALID, field,
                            "%s must be text without control characters (newline, tab, escape, NUL, ...)", field);
    memcpy(out, json_string_value(v), len);
    out[len] = '\0';
    return GP_OK;
}

gp_err gp_json_enum(const json_t *v, const char *field, const char *const *names, int n, int *out, gp_error *err)
{
    if (json_is_string(v))
        for (int i = 0; i < n; i++)
            if (names[i] && strcmp(json_string_value(v), names[i]) == 0) {
                *out = i;
                return GP_OK;
            }
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof list; i++) {
        if (!names[i])
            continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", names[i]);
        if (w > 0)
            used += (size_t)w;
    }
    return gp_error_set(err, GP_ERR_INVALID, field, "%s must be one of: %s", field, list);
}

gp_err gp_json_gpu_amount(const json_t *v, const char *field, int64_t *milli, gp_error *err)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || x > 1000000000)
            return gp_error_set(err, GP_ERR_INVALID, field, "%s must be 0..1e9 GPUs", field);
        *milli = (int64_t)x * 1000;
        return GP_OK;
    }
    if (!json_is_real(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be a number of GPUs", field);
    double x = json_real_value(v);
    if (!(x >= 0 && x <= 1e9))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be 0..1e9 GPUs", field);
    double m = x * 1000.0;
    double r = round(m);
    if (fabs(m - r) > 1e-6 * (r > 1 ? r : 1))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s has more than three decimals", field);
    *milli = (int64_t)r;
    return GP_OK;
}

gp_err gp_json_unknown_field(const char *prefix, const char *key, gp_error *err)
{
    char field[GP_ERROR_FIELD_MAX];
    gp_json_field_name(field, sizeof field, prefix, key);
    return gp_error_set(err, GP_ERR_INVALID, field, "unknown field %s", field);
}
