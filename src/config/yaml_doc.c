/* yaml_doc.c - strict, typed reading of a YAML (or JSON) document.
 *
 * See yaml_doc.h.  libyaml's document API gives us every node with its
 * start mark (0-based line), which is all a good error message needs; the
 * file formats themselves live in fleet_file.c and tenant_file.c.
 */
#include "config/yaml_doc.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/tenant_file.h"

gp_err gp__yaml_fail(gp__yaml *y, const yaml_node_t *at, const char *field, const char *fmt, ...)
{
    char msg[GP_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gp_error_set(y->err, GP_ERR_INVALID, field, "%s:%d: %s", y->name, gp__yaml_line(at), msg);
}

int gp__yaml_line(const yaml_node_t *n)
{
    return n ? (int)n->start_mark.line + 1 : 1;
}

gp_err gp__yaml_load(gp__yaml *y, const char *text, size_t len, const char *name, gp_error *err)
{
    memset(y, 0, sizeof *y);
    y->name = name ? name : "<input>";
    y->err = err;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return gp_error_set(err, GP_ERR_NOMEM, "file", "%s: out of memory", y->name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    gp_err rc = GP_OK;
    if (!yaml_parser_load(&parser, &y->doc)) {
        const char *problem = parser.problem ? parser.problem : "syntax error";
        rc = gp_error_set(err, GP_ERR_INVALID, "file", "%s:%d: %s", y->name, (int)parser.problem_mark.line + 1,
                          problem);
    } else {
        y->loaded = true;
    }
    yaml_parser_delete(&parser);
    return rc;
}

void gp__yaml_free(gp__yaml *y)
{
    if (y->loaded)
        yaml_document_delete(&y->doc);
    y->loaded = false;
}

yaml_node_t *gp__yaml_root(gp__yaml *y)
{
    return y->loaded ? yaml_document_get_root_node(&y->doc) : NULL;
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return "a mapping";
    case YAML_SEQUENCE_NODE:
        return "a list";
    default:
        return "a scalar";
    }
}

gp_err gp__yaml_expect_mapping(gp__yaml *y, const yaml_node_t *n, const char *field)
{
    if (n->type != YAML_MAPPING_NODE)
        return gp__yaml_fail(y, n, field, "%s must be a mapping, not %s", field, node_kind(n));
    return GP_OK;
}

gp_err gp__yaml_expect_sequence(gp__yaml *y, const yaml_node_t *n, const char *field)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return gp__yaml_fail(y, n, field, "%s must be a list, not %s", field, node_kind(n));
    return GP_OK;
}

size_t gp__yaml_map_size(const yaml_node_t *map)
{
    return (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

static const char *scalar_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

gp_err gp__yaml_map_pair(gp__yaml *y, const yaml_node_t *map, size_t i, const char *where, const char **key,
                         yaml_node_t **value)
{
    yaml_node_pair_t *pair = map->data.mapping.pairs.start + i;
    yaml_node_t *k = yaml_document_get_node(&y->doc, pair->key);
    if (k->type != YAML_SCALAR_NODE)
        return gp__yaml_fail(y, k, where, "a key of %s must be a plain name, not %s", where, node_kind(k));
    for (size_t j = 0; j < i; j++) {
        yaml_node_t *prev = yaml_document_get_node(&y->doc, map->data.mapping.pairs.start[j].key);
        if (prev->type == YAML_SCALAR_NODE && strcmp(scalar_text(prev), scalar_text(k)) == 0)
            return gp__yaml_fail(y, k, scalar_text(k), "%s.%s is given twice (first on line %d)", where,
                                 scalar_text(k), gp__yaml_line(prev));
    }
    *key = scalar_text(k);
    *value = yaml_document_get_node(&y->doc, pair->value);
    return GP_OK;
}

size_t gp__yaml_seq_size(const yaml_node_t *seq)
{
    return (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

yaml_node_t *gp__yaml_seq_item(gp__yaml *y, const yaml_node_t *seq, size_t i)
{
    return yaml_document_get_node(&y->doc, seq->data.sequence.items.start[i]);
}

static bool is_plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static bool is_null(const yaml_node_t *n)
{
    if (!is_plain(n))
        return false;
    const char *s = scalar_text(n);
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

gp_err gp__yaml_string(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, char *buf,
                       size_t cap)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return gp__yaml_fail(y, n, field, "%s must be a string, not %s", what,
                             n->type == YAML_SCALAR_NODE ? "null" : node_kind(n));
    if (n->data.scalar.length >= cap)
        return gp__yaml_fail(y, n, field, "%s is longer than %zu characters", what, cap - 1);
    memcpy(buf, scalar_text(n), n->data.scalar.length + 1);
    return GP_OK;
}

/* The scalar's text when it is a plain (unquoted) scalar, else an error
 * saying a `kind` was expected. */
static gp_err plain_text(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, const char *kind,
                         const char **text)
{
    if (n->type != YAML_SCALAR_NODE)
        return gp__yaml_fail(y, n, field, "%s must be %s, not %s", what, kind, node_kind(n));
    if (!is_plain(n))
        return gp__yaml_fail(y, n, field, "%s must be %s, not a quoted string \"%s\"", what, kind, scalar_text(n));
    *text = scalar_text(n);
    return GP_OK;
}

gp_err gp__yaml_int(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, int64_t min,
                    int64_t max, int64_t *out)
{
    const char *s = NULL;
    gp_err rc = plain_text(y, n, field, what, "an integer", &s);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno == ERANGE)
        return gp__yaml_fail(y, n, field, "%s must be an integer, got \"%s\"", what, s);
    if (v < min || v > max)
        return gp__yaml_fail(y, n, field, "%s must be %lld..%lld, got %lld", what, (long long)min, (long long)max,
                             v);
    *out = v;
    return GP_OK;
}

gp_err gp__yaml_number(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, double min,
                       double max, double *out)
{
    const char *s = NULL;
    gp_err rc = plain_text(y, n, field, what, "a number", &s);
    if (rc)
        return rc;
    char *end;
    double v = strtod(s, &end);
    if (s[0] == '\0' || *end != '\0' || !isfinite(v))
        return gp__yaml_fail(y, n, field, "%s must be a number, got \"%s\"", what, s);
    if (v < min || v > max)
        return gp__yaml_fail(y, n, field, "%s must be %g..%g, got %s", what, min, max, s);
    *out = v;
    return GP_OK;
}

gp_err gp__yaml_bool(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what, bool *out)
{
    const char *s = NULL;
    gp_err rc = plain_text(y, n, field, what, "true or false", &s);
    if (rc)
        return rc;
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
        *out = true;
    else if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
        *out = false;
    else
        return gp__yaml_fail(y, n, field, "%s must be true or false, got \"%s\"", what, s);
    return GP_OK;
}

gp_err gp__yaml_enum(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what,
                     const char *const *names, int n_names, int *out)
{
    char buf[GP_NAME_MAX];
    gp_err rc = gp__yaml_string(y, n, field, what, buf, sizeof buf);
    if (rc)
        return rc;
    char allowed[GP_ERROR_MESSAGE_MAX / 2] = "";
    for (int i = 0; i < n_names; i++) {
        if (strcmp(buf, names[i]) == 0) {
            *out = i;
            return GP_OK;
        }
        size_t used = strlen(allowed);
        snprintf(allowed + used, sizeof allowed - used, "%s%s", i ? "|" : "", names[i]);
    }
    return gp__yaml_fail(y, n, field, "%s must be one of %s, got \"%s\"", what, allowed, buf);
}

gp_err gp__yaml_gpu_amount(gp__yaml *y, const yaml_node_t *n, const char *field, const char *what,
                           int64_t *milli)
{
    const char *s = NULL;
    gp_err rc = plain_text(y, n, field, what, "a GPU amount", &s);
    if (rc)
        return rc;
    if (!gp_gpu_amount_parse(s, milli))
        return gp__yaml_fail(y, n, field, "%s must be a number of GPUs 0..1e9 with at most 3 decimals, got \"%s\"",
                             what, s);
    return GP_OK;
}
