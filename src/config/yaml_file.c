/* yaml_file.c - the skeleton of a YAML file reader (see yaml_file.h). */
#include "config/yaml_file.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/nearest.h"

static bool known_key(const gp_yaml_file_kind *kind, const char *key)
{
    for (size_t k = 0; k < GP_YAML_FILE_KEYS && kind->keys[k]; k++)
        if (strcmp(kind->keys[k], key) == 0)
            return true;
    return false;
}

static size_t known_count(const gp_yaml_file_kind *kind)
{
    size_t n = 0;
    while (n < GP_YAML_FILE_KEYS && kind->keys[n])
        n++;
    return n;
}

/* The allowed keys as words: "tenants", "pools and nodes". */
static const char *keys_in_words(const gp_yaml_file_kind *kind, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < GP_YAML_FILE_KEYS && kind->keys[k] && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", k ? " and " : "", kind->keys[k]);
    return buf;
}

/* The top: a mapping of the allowed keys only, with the list. */
static gp_err check_root(const gp_yaml_file_kind *kind, const gp_yaml_lines *lines, const json_t *root,
                         gp_error *err)
{
    if (!root)
        return gp_error_set(err, GP_ERR_INVALID, kind->list, "%s:1: the %s is empty", lines->name, kind->what);
    if (!json_is_object(root))
        return gp_yaml_fail(lines, "", err, kind->list, "a %s is a mapping with %s", kind->what, kind->holds);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        char words[128];
        const char *near = gp_suggest(key, kind->keys, known_count(kind));
        if (!known_key(kind, key))
            return gp_yaml_fail(lines, key, err, key, "unknown field %s%s%s%s (a %s has %s)", key,
                                near ? "; did you mean " : "", near ? near : "", near ? "?" : "", kind->what,
                                keys_in_words(kind, words, sizeof words));
    }
    if (!json_object_get(root, kind->list))
        return gp_yaml_fail(lines, "", err, kind->list, "the %s has no %s list", kind->what, kind->list);
    return GP_OK;
}

gp_err gp_yaml_file_parse(const gp_yaml_file_kind *kind, const char *text, size_t len, const char *name, void *out,
                          gp_error *err)
{
    memset(out, 0, kind->size);
    gp_yaml_lines lines;
    json_t *root = NULL;
    gp_err rc = gp_yaml_to_json(text, len, name, &root, &lines, err);
    if (rc == GP_OK)
        rc = check_root(kind, &lines, root, err);
    if (rc == GP_OK && (rc = kind->read(out, &lines, root, err)) != GP_OK)
        kind->release(out);
    json_decref(root);
    gp_yaml_lines_free(&lines);
    return rc;
}

gp_err gp_yaml_file_load(const gp_yaml_file_kind *kind, const char *path, void *out, gp_error *err)
{
    char *text;
    size_t len;
    memset(out, 0, kind->size);
    gp_err rc = gp_file_read_all(path, &text, &len, err);
    if (rc)
        return rc;
    rc = gp_yaml_file_parse(kind, text, len, path, out, err);
    free(text);
    return rc;
}

gp_err gp_yaml_file_each(const gp_yaml_lines *lines, const json_t *root, const char *field, gp_yaml_entry_read read,
                         void *reader, gp_error *err)
{
    const json_t *list = json_object_get(root, field);
    if (!json_is_array(list))
        return gp_yaml_fail(lines, field, err, field, "%s must be a list", field);
    gp_err rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < json_array_size(list); i++) {
        char at[64];
        snprintf(at, sizeof at, "%s[%zu]", field, i);
        const json_t *entry = json_array_get(list, i);
        rc = json_is_object(entry) ? read(reader, lines, entry, at, i, err)
                                   : gp_yaml_fail(lines, at, err, at, "%s must be a mapping", at);
    }
    return rc;
}

json_t *gp_yaml_file_body(const json_t *entry, const char *const *own)
{
    json_t *body = json_copy((json_t *)entry);
    for (size_t k = 0; body && own[k]; k++)
        json_object_del(body, own[k]);
    return body;
}
