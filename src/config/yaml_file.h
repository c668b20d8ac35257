/* yaml_file.h - the skeleton every YAML file reader shares: load, parse,
 * check the top, walk a list, free on failure.  Written once here for the
 * fleet and tenant files (src/config) and the agent's node file
 * (agent/node_file.c), which each repeated it.
 *
 * It lives in src/config, not beside the YAML reader in src/spec, because
 * it is about files (their name, their top-level keys, their lists), and
 * in a library of its own (gpyamlfile: gpyaml and util only) so that the
 * agent links it without the config readers.
 *
 * A kind of file is a table: what it is called, the keys its top-level
 * mapping may have, the list it must have, and how to read and release
 * its result.  Example (tenant_file.c):
 *
 *   static const gp_yaml_file_kind tenant_kind = {
 *       .what = "tenant file", .size = sizeof(gp_tenant_file),
 *       .keys = {"tenants"}, .list = "tenants", .holds = "a tenants list",
 *       .read = read_tenants, .release = release_tenants,
 *   };
 *   gp_yaml_file_load(&tenant_kind, "tenants.yaml", &file, &err);
 *
 * The skeleton's own messages (field in parentheses):
 *   empty document          "tenants.yaml:1: the tenant file is empty" (tenants)
 *   top not a mapping       "tenants.yaml:1: a tenant file is a mapping with a tenants list" (tenants)
 *   an unknown top key      "tenants.yaml:3: unknown field x (a tenant file has tenants)" (x)
 *   the list missing        "tenants.yaml:1: the tenant file has no tenants list" (tenants)
 *   the list not a list     "tenants.yaml:2: tenants must be a list" (tenants)
 *   an entry not a mapping  "tenants.yaml:4: tenants[1] must be a mapping" (tenants[1])
 *
 * Ownership: `out` is caller-owned storage of kind->size bytes; the
 * skeleton zeroes it, kind->read fills it (allocating as it likes), and on
 * a failed read kind->release frees what it left, so a failed load or
 * parse leaves nothing to free.  On success the caller frees it with the
 * file's own free function.  gp_yaml_file_body returns a new reference.
 */
#ifndef GP_CONFIG_YAML_FILE_H
#define GP_CONFIG_YAML_FILE_H

#include <jansson.h>
#include <stddef.h>

#include "spec/yaml_json.h"
#include "util/error.h"

#define GP_YAML_FILE_KEYS 4

typedef struct gp_yaml_file_kind {
    const char *what;                    /* "fleet file": in messages */
    size_t size;                         /* of the result `out` */
    const char *keys[GP_YAML_FILE_KEYS]; /* the top-level keys allowed, NULL after the last */
    const char *list;                    /* the one that must be there */
    const char *holds;                   /* "a fleet file is a mapping with HOLDS" */
    /* Reads a checked top (a mapping with only `keys`, `list` among them)
     * into out. */
    gp_err (*read)(void *out, const gp_yaml_lines *lines, const json_t *root, gp_error *err);
    /* Frees what a failed read left in out. */
    void (*release)(void *out);
} gp_yaml_file_kind;

/* text (named `name` in messages) as a file of that kind, into out. */
gp_err gp_yaml_file_parse(const gp_yaml_file_kind *kind, const char *text, size_t len, const char *name, void *out,
                          gp_error *err);
/* The same, from the file at path (util/file.h's errors when unreadable). */
gp_err gp_yaml_file_load(const gp_yaml_file_kind *kind, const char *path, void *out, gp_error *err);

/* Reads one entry, a mapping, at path `at` ("nodes[3]", its index 3). */
typedef gp_err (*gp_yaml_entry_read)(void *reader, const gp_yaml_lines *lines, const json_t *entry, const char *at,
                                     size_t index, gp_error *err);

/* Every entry of the list root[field], in order, stopping at the first
 * error: the list must be a list and each entry a mapping. */
gp_err gp_yaml_file_each(const gp_yaml_lines *lines, const json_t *root, const char *field, gp_yaml_entry_read read,
                         void *reader, gp_error *err);

/* A copy of entry less the file's own fields (`own`, NULL after the last),
 * for the spec codec to decode as an API body; NULL when out of memory. */
json_t *gp_yaml_file_body(const json_t *entry, const char *const *own);

#endif
