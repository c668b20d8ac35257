/* yaml_json.c - YAML to json_t with a line map (see yaml_json.h).
 *
 * libyaml's document API gives every node with its start mark (0-based
 * line); the walk below converts node by node, records each value's path
 * and line, and refuses what JSON could not say: duplicate keys, non-scalar
 * keys, and aliases (a node reached twice: an alias would also let a small
 * file expand exponentially).
 */
#include "spec/yaml_json.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct gp__yaml_path {
    char *path;
    int line;
};

/* One walk over one document. */
typedef struct reader {
    yaml_document_t *doc;
    gp_yaml_lines *lines;
    gp_yaml_lines own; /* used when the caller passes no line map: messages still need the name */
    bool *seen;        /* by node index: reached once already */
    gp_error *err;
} reader;

static int node_line(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

static bool remember(gp_yaml_lines *l, const char *path, int line)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct gp__yaml_path *grown = realloc(l->at, cap * sizeof *grown);
        if (!grown)
            return false;
        l->at = grown;
        l->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return false;
    l->at[l->n].path = copy;
    l->at[l->n].line = line;
    l->n++;
    return true;
}

void gp_yaml_lines_free(gp_yaml_lines *lines)
{
    for (size_t i = 0; lines && i < lines->n; i++)
        free(lines->at[i].path);
    if (lines) {
        free(lines->at);
        lines->at = NULL;
        lines->n = lines->cap = 0;
    }
}

int gp_yaml_line(const gp_yaml_lines *lines, const char *path)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    for (;;) {
        for (size_t i = 0; lines && i < lines->n; i++)
            if (strcmp(lines->at[i].path, p) == 0)
                return lines->at[i].line;
        char *dot = strrchr(p, '.'), *bracket = strrchr(p, '[');
        char *cut = dot > bracket ? dot : bracket;
        if (!cut)
            return 1;
        *cut = '\0';
    }
}

static void vfail(const gp_yaml_lines *l, int line, gp_error *err, const char *field, const char *fmt, va_list ap)
{
    char msg[GP_ERROR_MESSAGE_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    gp_error_set(err, GP_ERR_INVALID, field, "%s:%d: %s", l->name, line, msg);
}

gp_err gp_yaml_fail(const gp_yaml_lines *lines, const char *path, gp_error *err, const char *field,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(lines, gp_yaml_line(lines, path), err, field, fmt, ap);
    va_end(ap);
    return GP_ERR_INVALID;
}

void gp_yaml_locate(const gp_yaml_lines *lines, const char *at, gp_error *err)
{
    if (!err)
        return;
    char path[512], msg[GP_ERROR_MESSAGE_MAX];
    snprintf(path, sizeof path, "%s%s%s", at, at[0] && err->field[0] ? "." : "", err->field);
    snprintf(msg, sizeof msg, "%s:%d: %s%s%s", lines->name, gp_yaml_line(lines, path), at, at[0] ? ": " : "",
             err->message);
    memcpy(err->message, msg, sizeof msg);
    snprintf(err->field, sizeof err->field, "%s", path);
}

json_t *gp_json_number_or_string(const char *text)
{
    size_t len = strlen(text);
    if (len > 0 && !isspace((unsigned char)text[0]) && !isspace((unsigned char)text[len - 1])) {
        json_t *v = json_loadb(text, len, JSON_DECODE_ANY, NULL);
        if (json_is_number(v))
            return v;
        json_decref(v);
    }
    return json_string(text);
}

static bool one_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(s, *names) == 0)
            return true;
    return false;
}

static json_t *scalar(const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    /* yes/no as the CLI's --lend yes|no takes them (YAML 1.1's spelling) */
    static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO", NULL};
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(v, n->data.scalar.length);
    if (one_of(v, nulls))
        return json_null();
    if (one_of(v, trues))
        return json_true();
    if (one_of(v, falses))
        return json_false();
    return gp_json_number_or_string(v);
}

/* The reader's own error at node n. */
static json_t *fail_at(reader *r, const yaml_node_t *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static json_t *fail_at(reader *r, const yaml_node_t *n, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r->lines, node_line(n), r->err, field, fmt, ap);
    va_end(ap);
    return NULL;
}

static json_t *convert(reader *r, yaml_node_t *n, const char *path, int depth);

static json_t *convert_sequence(reader *r, yaml_node_t *n, const char *path, int depth)
{
    json_t *a = json_array();
    size_t i = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start; a && it < n->data.sequence.items.top; it++, i++) {
        char child[512];
        snprintf(child, sizeof child, "%s[%zu]", path, i);
        json_t *v = convert(r, yaml_document_get_node(r->doc, *it), child, depth + 1);
        if (!v || json_array_append_new(a, v) != 0) {
            json_decref(a);
            return v ? fail_at(r, n, "file", "out of memory") : NULL;
        }
    }
    return a ? a : fail_at(r, n, "file", "out of memory");
}

static json_t *convert_mapping(reader *r, yaml_node_t *n, const char *path, int depth)
{
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; o && p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(r->doc, p->key);
        json_t *v = NULL;
        char child[512];
        const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : NULL;
        if (key)
            snprintf(child, sizeof child, "%s%s%s", path, path[0] ? "." : "", key);
        if (!key)
            fail_at(r, k, path[0] ? path : "file", "a key of %s must be a plain name, not a list or mapping",
                    path[0] ? path : "the document");
        else if (json_object_get(o, key))
            fail_at(r, k, child, "%s is given twice (first on line %d)", child, gp_yaml_line(r->lines, child));
        else if ((v = convert(r, yaml_document_get_node(r->doc, p->value), child, depth + 1)) &&
                 json_object_set_new(o, key, v) != 0)
            fail_at(r, k, key, "%s: out of memory", child);
        else if (v)
            continue;
        json_decref(o);
        return NULL;
    }
    return o ? o : fail_at(r, n, "file", "out of memory");
}

static json_t *convert(reader *r, yaml_node_t *n, const char *path, int depth)
{
    size_t index = (size_t)(n - r->doc->nodes.start);
    if (r->seen[index])
        return fail_at(r, n, "file", "%s: aliases (*name) are not supported; write the value out",
                       path[0] ? path : "document");
    r->seen[index] = true;
    if (depth > GP_YAML_MAX_DEPTH)
        return fail_at(r, n, "file", "nested deeper than %d levels", GP_YAML_MAX_DEPTH);
    if (!remember(r->lines, path, node_line(n)))
        return fail_at(r, n, "file", "out of memory");
    if (n->type == YAML_SEQUENCE_NODE)
        return convert_sequence(r, n, path, depth);
    if (n->type == YAML_MAPPING_NODE)
        return convert_mapping(r, n, path, depth);
    json_t *v = scalar(n);
    return v ? v : fail_at(r, n, path[0] ? path : "file", "%s: cannot be read as text", path);
}

static gp_err convert_document(reader *r, json_t **out)
{
    yaml_node_t *root = yaml_document_get_root_node(r->doc);
    if (!root)
        return GP_OK;
    size_t n_nodes = (size_t)(r->doc->nodes.top - r->doc->nodes.start);
    r->seen = calloc(n_nodes, sizeof *r->seen);
    if (!r->seen)
        return gp_error_set(r->err, GP_ERR_NOMEM, "file", "%s: out of memory", r->lines->name);
    *out = convert(r, root, "", 0);
    free(r->seen);
    return *out ? GP_OK : GP_ERR_INVALID;
}

gp_err gp_yaml_to_json(const char *text, size_t len, const char *name, json_t **out, gp_yaml_lines *lines,
                       gp_error *err)
{
    *out = NULL;
    reader r = {.err = err};
    r.lines = lines ? lines : &r.own;
    memset(r.lines, 0, sizeof *r.lines);
    snprintf(r.lines->name, sizeof r.lines->name, "%s", name ? name : "<input>");
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return gp_error_set(err, GP_ERR_NOMEM, "file", "%s: out of memory", r.lines->name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    gp_err rc = GP_OK;
    if (!yaml_parser_load(&parser, &doc)) {
        rc = gp_error_set(err, GP_ERR_INVALID, "file", "%s:%d: %s", r.lines->name, (int)parser.problem_mark.line + 1,
                          parser.problem ? parser.problem : "syntax error");
    } else {
        r.doc = &doc;
        rc = convert_document(&r, out);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    gp_yaml_lines_free(&r.own);
    return rc;
}
