/* yaml_json.h - a YAML (or JSON) document as json_t, with the line of
 * every value: the one YAML reader of gpupool.
 *
 * `gpupool submit -f` and `apply -f` (the CLI) and the fleet and tenant
 * files (src/config) read YAML through here; the spec codec (spec_json.h)
 * then decodes the json_t exactly as it decodes an API body, so a file and
 * a request obey one set of rules.  JSON is YAML's flow style, so a .json
 * file takes the same path.  A library of its own (gpyaml: libyaml,
 * jansson, util): the CLI links it and never the engine.
 *
 * Conversion: mappings become objects, sequences arrays.  A plain
 * (unquoted) scalar is null when it is empty, ~, null, Null or NULL; a
 * boolean when it is true/True/TRUE/yes/Yes/YES or false/False/FALSE/no/
 * No/NO (so `lend: no` in a file means what `--lend no` means on the
 * command line; quote it, "no", for the string); a number when it
 * is a JSON number literal (gp_json_number_or_string); else a string.  A
 * quoted scalar is always a string, so `gpus: "8"` reaches the codec as the
 * string "8" and is refused there, as in JSON.  A key given twice in one
 * mapping, a key that is not a scalar, an alias (*name) and nesting deeper
 * than GP_YAML_MAX_DEPTH are errors.
 *
 * Lines: the reader records, for each value, its path and its 1-based
 * line, e.g. "tenants[1].guarantee.gpu.H100" -> 7.  Errors from the codec
 * name a field relative to the object it decoded; gp_yaml_locate turns
 * that into "tenants.yaml:7: tenants[1]: ..." (the line of the path's
 * nearest recorded ancestor when the field itself is missing, e.g. a
 * required field).
 *
 * Ownership: gp_yaml_to_json returns a new reference in *out; `lines`
 * (optional) is caller-owned, filled here, released by gp_yaml_lines_free.
 */
#ifndef GP_SPEC_YAML_JSON_H
#define GP_SPEC_YAML_JSON_H

#include "util/error.h"

#include <jansson.h>
#include <stddef.h>

#define GP_YAML_MAX_DEPTH 32

typedef struct gp_yaml_lines {
    char name[128];            /* the text's name in messages: a file name, "body" */
    struct gp__yaml_path *at;  /* private: path -> line */
    size_t n, cap;
} gp_yaml_lines;

/* Parses text.  *out is NULL for an empty document.  Errors are
 * GP_ERR_INVALID "NAME:LINE: ..." with field "file" for a syntax error,
 * or the key for a duplicate key. */
gp_err gp_yaml_to_json(const char *text, size_t len, const char *name, json_t **out, gp_yaml_lines *lines,
                       gp_error *err);
void gp_yaml_lines_free(gp_yaml_lines *lines);

/* The line of the value at path, or of its nearest recorded ancestor; 1
 * when none is recorded. */
int gp_yaml_line(const gp_yaml_lines *lines, const char *path);

/* A codec error about the object at path `at` (err->field is relative to
 * it) as an error about the file: err->message becomes "NAME:LINE: AT:
 * MESSAGE" with LINE that of "AT.FIELD", and err->field "AT.FIELD", as the
 * batch API names an item's field ("tenants[1].guarantee.gpu.H100").  err
 * may be NULL. */
void gp_yaml_locate(const gp_yaml_lines *lines, const char *at, gp_error *err);

/* An error of the reader's own about the value at path: GP_ERR_INVALID,
 * field, message "NAME:LINE: ...". */
gp_err gp_yaml_fail(const gp_yaml_lines *lines, const char *path, gp_error *err, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The text as a JSON number when it is a JSON number literal ("8", "0.5",
 * "-1", "1e3"), else as a string: what the user wrote, for the server's
 * codec to accept or refuse by name.  A new reference. */
json_t *gp_json_number_or_string(const char *text);

#endif
