/* yaml_json.c - YAML to JSON with libyaml's document API (see yaml_json.h). */
#include "cli/yaml_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum { MAX_DEPTH = 32 };

static json_t *scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_string(v);
    if (strcmp(v, "true") == 0)
        return json_true();
    if (strcmp(v, "false") == 0)
        return json_false();
    if (strcmp(v, "null") == 0 || strcmp(v, "~") == 0 || v[0] == '\0')
        return json_null();
    char *end;
    long long i = strtoll(v, &end, 10);
    if (*end == '\0')
        return json_integer(i);
    double d = strtod(v, &end);
    if (*end == '\0')
        return json_real(d);
    return json_string(v);
}

static json_t *convert(yaml_document_t *doc, yaml_node_t *n, int depth)
{
    if (!n || depth > MAX_DEPTH)
        return NULL;
    if (n->type == YAML_SCALAR_NODE)
        return scalar(n);
    if (n->type == YAML_SEQUENCE_NODE) {
        json_t *a = json_array();
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
            json_t *v = convert(doc, yaml_document_get_node(doc, *i), depth + 1);
            if (!v) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, v);
        }
        return a;
    }
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        json_t *v = convert(doc, yaml_document_get_node(doc, p->value), depth + 1);
        if (!k || k->type != YAML_SCALAR_NODE || !v) {
            json_decref(v);
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, (const char *)k->data.scalar.value, v);
    }
    return o;
}

json_t *gp_yaml_to_json(const char *text, size_t len, char *err, size_t err_cap)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    json_t *out = NULL;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, err_cap, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, err_cap, "line %zu: %s", parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "cannot parse");
        yaml_parser_delete(&parser);
        return NULL;
    }
    out = convert(&doc, yaml_document_get_root_node(&doc), 0);
    if (!out)
        snprintf(err, err_cap, "empty document, a non-scalar key or nesting deeper than %d", MAX_DEPTH);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return out;
}
