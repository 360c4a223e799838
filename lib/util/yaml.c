/*
 * yaml.c - YAML (and so JSON) documents into jansson values, through libyaml.
 *
 * One generic conversion for what reaches ckube as YAML: kubeconfig files
 * (lib/client/kubeconfig.c) and server-side apply bodies
 * (application/apply-patch+yaml, lib/apiserver/patch.c). Mappings become
 * objects, sequences arrays; plain scalars are read by YAML 1.2's core
 * schema (true/false, null and ~, numbers), every other scalar is a string.
 * Only the first document is read; nesting stops at 64 levels.
 *
 * Threading: no state; reentrant. Tests: tests/client/test_kubeconfig.c
 * (the conversion's cases) and the apply tests; fuzz/fuzz_kubeconfig.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

/* A plain scalar YAML 1.2's core schema reads as a boolean, null or number. */
static json_t *plain_scalar(const char *s, size_t len)
{
    if ((len == 4 && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))))
        return json_true();
    if ((len == 5 && (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))))
        return json_false();
    if (len == 0 || (len == 1 && s[0] == '~') || (len == 4 && !strcmp(s, "null")))
        return json_null();
    json_t *num = json_loadb(s, len, JSON_DECODE_ANY, NULL);
    if (json_is_number(num))
        return num;
    json_decref(num);
    return json_stringn(s, len);
}

static json_t *node_to_json(yaml_document_t *doc, yaml_node_t *node, int depth)
{
    if (!node || depth > 64)
        return NULL;
    switch (node->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)node->data.scalar.value;
        size_t len = node->data.scalar.length;
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            return plain_scalar(s, len);
        return json_stringn(s, len);
    }
    case YAML_SEQUENCE_NODE: {
        json_t *arr = json_array();
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             arr && it < node->data.sequence.items.top; it++) {
            json_t *v = node_to_json(doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!v || json_array_append_new(arr, v) < 0) {
                json_decref(arr);
                return NULL;
            }
        }
        return arr;
    }
    case YAML_MAPPING_NODE: {
        json_t *obj = json_object();
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
             obj && p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                json_decref(obj);
                return NULL;
            }
            json_t *v = node_to_json(doc, yaml_document_get_node(doc, p->value), depth + 1);
            char *key = v ? ck__malloc(k->data.scalar.length + 1) : NULL;
            if (key) {
                memcpy(key, k->data.scalar.value, k->data.scalar.length);
                key[k->data.scalar.length] = '\0';
            }
            if (!key || json_object_set_new(obj, key, v) < 0) {
                free(key);
                json_decref(v);
                json_decref(obj);
                return NULL;
            }
            free(key);
        }
        return obj;
    }
    default:
        return NULL;
    }
}

int ck_yaml_to_json(const char *text, size_t len, json_t **ret_json, struct ck_err *reterr)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int r = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        r = ck_err_set(reterr, CK_EINVAL, "YAML line %zu: %s", parser.problem_mark.line + 1,
                       parser.problem ? parser.problem : "cannot parse");
        yaml_parser_delete(&parser);
        return r;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    json_t *json = root ? node_to_json(&doc, root, 0) : NULL;
    if (!json)
        r = ck_err_set(reterr, CK_EINVAL, "YAML: empty document, non-scalar key or too deep");
    else
        *ret_json = json;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return r;
}
