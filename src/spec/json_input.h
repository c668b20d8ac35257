/* json_input.h - strict reading of caller JSON, field by field.
 *
 * Every value a caller sends goes through one of these checks, which
 * either store the value or fail with GP_ERR_INVALID, a sentence, and the
 * field's dotted name as the caller spelled it ("share.mps", "env.PATH",
 * "guarantee.gpu.H100").  Parsers walk an object's keys themselves and call
 * gp_json_unknown_field for a key they do not know: unknown fields are
 * errors, never silently dropped.
 *
 * Ownership: nothing here allocates; strings are copied into caller
 * buffers.
 */
#ifndef GP_SPEC_JSON_INPUT_H
#define GP_SPEC_JSON_INPUT_H

#include "core/types.h"
#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits on any request body, before and while parsing. */
#define GP_JSON_MAX_DEPTH 16

/* Deepest nesting of objects and arrays in text (strings skipped), without
 * parsing; stops counting past GP_JSON_MAX_DEPTH + 1. */
int gp_json_depth(const char *text, size_t len);

/* Parses a request body: at most GP_JSON_MAX_DEPTH deep, one JSON value,
 * valid UTF-8, no NUL in strings.  Errors name the field "body". */
gp_err gp_json_parse_body(const char *text, size_t len, json_t **out, gp_error *err);

gp_err gp_json_object(const json_t *v, const char *field, gp_error *err);
gp_err gp_json_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out, gp_error *err);
gp_err gp_json_bool(const json_t *v, const char *field, bool *out, gp_error *err);
/* A string of 1..max_len bytes (max_len < cap) without control characters
 * (util/text.h: names, paths, types are one line of text) copied into out. */
gp_err gp_json_string(const json_t *v, const char *field, size_t max_len, char *out, size_t cap, gp_error *err);
/* One of the names of `which` (core/names.c); *out = its value.  The error
 * lists the accepted names. */
gp_err gp_json_enum(const json_t *v, const char *field, gp_enum which, int *out, gp_error *err);
/* A GPU amount in GPUs, 0..1e9 with at most three decimals, to milli-GPUs,
 * exactly: an integer, or a real whose "%.3f" text reads back as the same
 * double (so 2.675, 0.1, 1e-3 are exact decimals and 0.0005 is not); the
 * milli-GPUs are then read from that text (gp_gpu_amount_parse), never by
 * multiplying a double.  -0 is 0. */
gp_err gp_json_gpu_amount(const json_t *v, const char *field, int64_t *milli, gp_error *err);
/* A GPU amount as decimal text ("16", "0.5", "2.125") to milli-GPUs; false
 * unless it is digits with an optional point and 1..3 decimals, 0..1e9. */
bool gp_gpu_amount_parse(const char *text, int64_t *milli);
gp_err gp_json_unknown_field(const char *prefix, const char *key, gp_error *err);
/* The same, adding "; did you mean NAME?" when one of known[0..n) is near
 * key (util/nearest.h): "unknown field guarantees; did you mean guarantee?". */
gp_err gp_json_unknown_field_near(const char *prefix, const char *key, const char *const *known, size_t n,
                                  gp_error *err);
/* Another scheduler's name for one of ours: Slurm's gpus_per_node is a
 * job's gpus, Kubernetes' nodeSelector... (matched without regard to case,
 * "-" as "_"). */
typedef struct gp_json_alias {
    const char *theirs, *ours;
} gp_json_alias;
/* gp_json_unknown_field_near, and when no known name is near, the one an
 * alias maps key to: "unknown field gpus_per_node; did you mean gpus?". */
gp_err gp_json_unknown_field_hint(const char *prefix, const char *key, const char *const *known, size_t n,
                                  const gp_json_alias *aliases, size_t n_aliases, gp_error *err);

/* "prefix.key" (or "key" when prefix is empty) into out. */
void gp_json_field_name(char *out, size_t cap, const char *prefix, const char *key);

#endif
