/* yaml_doc.h - strict, typed reading of a YAML (or JSON) document.
 *
 * The fleet and tenant files are small trees of mappings, sequences and
 * scalars.  libyaml parses both YAML and JSON (JSON is YAML's flow style)
 * into a document whose nodes remember their line; this helper walks that
 * document and turns every mistake into one gp_error whose message starts
 * with "FILE:LINE: " and whose field is the key as the file spells it.
 *
 * Strict typing: numbers and booleans must be plain (unquoted) scalars, so
 * `gpus: "8"` is an error, not a silent conversion; strings may be quoted or
 * not but never null.  Duplicate keys in a mapping are errors.
 *
 * Private to src/config (gp__ prefix).  Ownership: gp__yaml_load fills a
 * caller-owned gp__yaml; gp__yaml_free releases the document.  Node and
 * string pointers handed out stay valid until then.
 */
#ifndef GP_CONFIG_YAML_DOC_H
#define GP_CONFIG_YAML_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "util/error.h"

typedef struct gp__yaml {
    yaml_document_t doc;
    bool loaded;
    const char *name; /* file name for messages */
    gp_error *err;
} gp__yaml;

/* Parse text; an empty document becomes an empty mapping's absence
 * (gp__yaml_root returns NULL). */
gp_err gp__yaml_load(gp__yaml *y, const char *text, size_t len, const char *name, gp_error *err);
void gp__yaml_free(gp__yaml *y);
yaml_node_t *gp__yaml_root(gp__yaml *y);

/* Fill the error: "NAME:LINE: message", field as given. */
gp_err gp__yaml_fail(gp__yaml *y, const yaml_node_t *at, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

int gp__yaml_line(const yaml_node_t *n);

gp_err gp__yaml_expect_mapping(gp__yaml *y, const yaml_node_t *n, const char *field);
gp_err gp__yaml_expect_sequence(gp__yaml *y, const yaml_node_t *n, const char *field);

/* Mapping iteration: number of pairs, and the i-th key (a scalar, checked)
 * and value.  The key check also refuses a key seen earlier in the map. */
size_t gp__yaml_map_size(const yaml_node_t *map);
gp_err gp__yaml_map_pair(gp__yaml *y, const yaml_node_t *map, size_t i, const char *where, const char **key,
                         yaml_node_t **value);

size_t gp__yaml_seq_size(const yaml_node_t *seq);
yaml_node_t *gp__yaml_seq_item(gp__yaml *y, const yaml_node_t *seq, size_t i);

/* Typed scalars.  `what` names the field in messages (e.g. "nodes[3].gpus"),
 * `field` is the key that goes into err->field. */
gp_err gp__yaml_string(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, char *buf,
                       size_t cap);
gp_err gp__yaml_int(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, int64_t min,
                    int64_t max, int64_t *out);
gp_err gp__yaml_number(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, double min,
                       double max, double *out);
gp_err gp__yaml_bool(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, bool *out);
/* One of names[0..n_names-1]; *out gets its index. */
gp_err gp__yaml_enum(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what,
                     const char *const *names, int n_names, int *out);
/* GPUs with up to three decimals, as milli-GPUs (gp_gpu_amount_parse). */
gp_err gp__yaml_gpu_amount(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what,
                           int64_t *milli);

#endif
