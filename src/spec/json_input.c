/* json_input.c - strict reading of caller JSON (see json_input.h).
 *
 * Why not json_unpack with "!": its errors say "1 object item(s) left
 * unpacked" rather than which field, and it cannot express ranges.  The
 * API promises the field's name in every error, so each value is checked
 * here one by one.
 */
#include "spec/json_input.h"

#include "util/nearest.h"
#include "util/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
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

/* What a caller gave instead of the expected value, for messages: the
 * string "8" (a quoted number in a YAML file arrives so), 1.5, true, an
 * array. */
static const char *given(const json_t *v, char *buf, size_t cap)
{
    if (json_is_string(v))
        snprintf(buf, cap, "the string \"%.40s\"%s", json_string_value(v), json_string_length(v) > 40 ? "..." : "");
    else if (json_is_real(v))
        snprintf(buf, cap, "%.17g", json_real_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, cap, "%s", json_is_boolean(v) ? (json_is_true(v) ? "true" : "false")
                                 : json_is_array(v)  ? "an array"
                                 : json_is_object(v) ? "an object"
                                                     : "null");
    return buf;
}

gp_err gp_json_object(const json_t *v, const char *field, gp_error *err)
{
    if (!json_is_object(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be an object", field);
    return GP_OK;
}

gp_err gp_json_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out, gp_error *err)
{
    char buf[64];
    if (!json_is_integer(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be an integer, got %s", field,
                            given(v, buf, sizeof buf));
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be %lld..%lld, got %lld", field, (long long)min,
                            (long long)max, (long long)x);
    *out = x;
    return GP_OK;
}

gp_err gp_json_bool(const json_t *v, const char *field, bool *out, gp_error *err)
{
    char buf[64];
    if (!json_is_boolean(v))
        return gp_error_set(err, GP_ERR_INVALID, field, "%s must be true or false, got %s", field,
                            given(v, buf, sizeof buf));
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

/* The enum's name nearest to typed (util/nearest.h), else the only one
 * typed is a prefix of ("train" -> "training"), else NULL. */
static const char *enum_near(gp_enum which, const char *typed)
{
    const char *names[32];
    int n = gp_enum_count(which) < 32 ? gp_enum_count(which) : 32;
    for (int i = 0; i < n; i++)
        names[i] = gp_enum_name(which, i);
    const char *near = gp_suggest(typed, names, (size_t)n), *prefixed = NULL;
    for (int i = 0; !near && typed[0] && i < n; i++)
        if (strncmp(names[i], typed, strlen(typed)) == 0)
            prefixed = prefixed ? "" : names[i]; /* "" : more than one */
    return near ? near : prefixed && prefixed[0] ? prefixed : NULL;
}

gp_err gp_json_enum(const json_t *v, const char *field, gp_enum which, int *out, gp_error *err)
{
    if (json_is_string(v) && gp_enum_value(which, json_string_value(v), out))
        return GP_OK;
    char list[256];
    gp_enum_list(which, list, sizeof list);
    const char *near = json_is_string(v) ? enum_near(which, json_string_value(v)) : NULL;
    return gp_error_set(err, GP_ERR_INVALID, field, "%s must be one of: %s%s%s%s", field, list,
                        near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
}

bool gp_gpu_amount_parse(const char *text, int64_t *milli)
{
    if (!text)
        return false;
    const char *p = text;
    int64_t whole = 0, frac = 0;
    int int_digits = 0, frac_digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, int_digits++) {
        whole = whole * 10 + (*p - '0');
        if (whole > 1000000000)
            return false;
    }
    if (int_digits == 0)
        return false;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, frac_digits++) {
            if (frac_digits == 3)
                return false;
            frac = frac * 10 + (*p - '0');
        }
        if (frac_digits == 0)
            return false;
    }
    if (*p != '\0')
        return false;
    for (int d = frac_digits; d < 3; d++)
        frac *= 10;
    int64_t v = whole * 1000 + frac;
    if (v > INT64_C(1000000000000))
        return false;
    *milli = v;
    return true;
}

/* A real that is an exact decimal with at most three places, as that
 * decimal's text; false otherwise. */
static bool real_as_decimal(double x, char *text, size_t cap)
{
    if (x == 0)
        x = 0; /* -0 reads as 0 */
    snprintf(text, cap, "%.3f", x);
    return strtod(text, NULL) == x;
}

gp_err gp_json_gpu_amount(const json_t *v, const char *field, int64_t *milli, gp_error *err)
{
    char text[64];
    bool ok = false;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        ok = x >= 0 && x <= 1000000000;
        if (ok)
            *milli = (int64_t)x * 1000;
    } else if (json_is_real(v)) {
        double x = json_real_value(v);
        ok = x >= 0 && x <= 1e9 && real_as_decimal(x, text, sizeof text) && gp_gpu_amount_parse(text, milli);
    }
    if (!ok)
        return gp_error_set(err, GP_ERR_INVALID, field,
                            "%s must be a number of GPUs 0..1e9 with at most 3 decimals, got %s", field,
                            given(v, text, sizeof text));
    return GP_OK;
}

gp_err gp_json_unknown_field(const char *prefix, const char *key, gp_error *err)
{
    char field[GP_ERROR_FIELD_MAX];
    gp_json_field_name(field, sizeof field, prefix, key);
    return gp_error_set(err, GP_ERR_INVALID, field, "unknown field %s", field);
}

/* key and name equal without regard to case, "-" and "_" alike. */
static bool alias_matches(const char *key, const char *name)
{
    for (; *key && *name; key++, name++) {
        char a = *key == '-' ? '_' : (char)tolower((unsigned char)*key);
        char b = *name == '-' ? '_' : (char)tolower((unsigned char)*name);
        if (a != b)
            return false;
    }
    return *key == *name;
}

gp_err gp_json_unknown_field_near(const char *prefix, const char *key, const char *const *known, size_t n,
                                  gp_error *err)
{
    return gp_json_unknown_field_hint(prefix, key, known, n, NULL, 0, err);
}

gp_err gp_json_unknown_field_hint(const char *prefix, const char *key, const char *const *known, size_t n,
                                  const gp_json_alias *aliases, size_t n_aliases, gp_error *err)
{
    const char *near = gp_suggest(key, known, n);
    for (size_t i = 0; !near && i < n_aliases; i++)
        if (alias_matches(key, aliases[i].theirs))
            near = aliases[i].ours;
    if (!near)
        return gp_json_unknown_field(prefix, key, err);
    char field[GP_ERROR_FIELD_MAX];
    gp_json_field_name(field, sizeof field, prefix, key);
    return gp_error_set(err, GP_ERR_INVALID, field, "unknown field %s; did you mean %s?", field, near);
}
