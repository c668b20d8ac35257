/* json_patch.c - JSON merge patch (RFC 7396) and a field-level diff (see
 * json_patch.h).  Both recurse on objects only; spec documents are a few
 * levels deep, so the recursion is shallow.
 */
#include "spec/json_patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *gp_json_merge_patch(const json_t *target, const json_t *patch)
{
    if (!json_is_object(patch))
        return json_deep_copy(patch);
    json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)patch, key, value) {
        if (!out)
            return NULL;
        if (json_is_null(value)) {
            json_object_del(out, key);
            continue;
        }
        json_t *merged = gp_json_merge_patch(json_object_get(out, key), value);
        if (!merged || json_object_set_new(out, key, merged) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Adds every leaf of doc to leaves as "prefix.key" -> value. */
static void flatten(const json_t *doc, const char *prefix, json_t *leaves)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)doc, key, value) {
        size_t n = strlen(prefix) + strlen(key) + 2;
        char *name = malloc(n);
        if (!name)
            return;
        snprintf(name, n, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        if (json_is_object(value) && json_object_size(value) > 0)
            flatten(value, name, leaves);
        else
            json_object_set(leaves, name, value);
        free(name);
    }
}

static int by_field(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The union of both objects' keys, sorted; names point into the objects. */
static const char **sorted_keys(const json_t *a, const json_t *b, size_t *n)
{
    const char **names = malloc((json_object_size(a) + json_object_size(b) + 1) * sizeof *names);
    const char *key;
    json_t *value;
    *n = 0;
    if (!names)
        return NULL;
    json_object_foreach((json_t *)a, key, value)
        names[(*n)++] = key;
    json_object_foreach((json_t *)b, key, value)
        if (!json_object_get(a, key))
            names[(*n)++] = key;
    qsort(names, *n, sizeof *names, by_field);
    return names;
}

json_t *gp_json_field_diff(const json_t *from, const json_t *to)
{
    json_t *old = json_object(), *new = json_object(), *out = json_array();
    size_t n = 0;
    const char **names = NULL;
    if (old && new && out) {
        flatten(from, "", old);
        flatten(to, "", new);
        names = sorted_keys(old, new, &n);
    }
    if (!names) {
        json_decref(out);
        out = NULL;
    }
    for (size_t i = 0; names && i < n; i++) {
        json_t *a = json_object_get(old, names[i]), *b = json_object_get(new, names[i]);
        if (a && b && json_equal(a, b))
            continue;
        json_array_append_new(out, json_pack("{s:s, s:O, s:O}", "field", names[i], "from", a ? a : json_null(), "to",
                                             b ? b : json_null()));
    }
    free(names);
    json_decref(old);
    json_decref(new);
    return out;
}
