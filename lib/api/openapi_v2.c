/*
 * openapi_v2.c - the Swagger 2.0 document of /openapi/v2, made from the
 * OpenAPI v3 documents of discovery.c.
 *
 * kube-apiserver serves both versions from one set of definitions; ckube
 * has one source too, the v3 documents (which discovery.c builds from the
 * kind registry and the schemas), and this file only translates them: the
 * paths of every group version served now (kinds registered at run time
 * included) into one `paths`, their components.schemas into `definitions`.
 * The translation is Swagger's form of the same thing:
 * - `$ref: #/components/schemas/X` becomes `#/definitions/X`; an `allOf`
 *   holding one reference (how v3 puts a description beside a `$ref`)
 *   becomes the reference; `nullable` has no v2 form and is dropped.
 * - `x-kubernetes-int-or-string` gains `type: string, format:
 *   int-or-string`, as Kubernetes' v2 writes IntOrString.
 * - a parameter's `schema: {type}` becomes its `type`; a `requestBody`
 *   becomes a `body` parameter and `consumes`; the media types of a
 *   response become `produces` and its schema the response's `schema`.
 *   create and replace take the object they answer as their body.
 *
 * Memory: NULL when out of memory, never a document with parts missing.
 * Threading: pure function over the immutable kind registry and schemas.
 *
 * Tested in tests/api/test_openapi_v2.c and through the server in
 * tests/apiserver/test_wire.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define V3_REF "#/components/schemas/"
#define V2_REF "#/definitions/"

static json_t *convert_schema(const json_t *node, int depth);

/* "$ref" of a v3 schema node, rewritten to v2; NULL when out of memory. */
static json_t *convert_ref(const char *ref)
{
    if (strncmp(ref, V3_REF, strlen(V3_REF)) != 0)
        return json_string(ref);
    char buf[512];
    snprintf(buf, sizeof(buf), V2_REF "%s", ref + strlen(V3_REF));
    return json_string(buf);
}

/* The values of a map (properties) converted as schemas, its keys kept. */
static json_t *convert_map(const json_t *map, int depth)
{
    json_t *out = json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)map, key, value)
    {
        if (!out || json_object_set_new(out, key, convert_schema(value, depth + 1)) < 0)
            return json_decref(out), NULL;
    }
    return out;
}

static json_t *convert_schema(const json_t *node, int depth)
{
    if (depth > 64)
        return NULL;
    if (json_is_array(node)) {
        json_t *out = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(node, i, item)
        {
            if (!out || json_array_append_new(out, convert_schema(item, depth + 1)) < 0)
                return json_decref(out), NULL;
        }
        return out;
    }
    if (!json_is_object(node))
        return ck__json_copy(node);
    json_t *out = json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)node, key, value)
    {
        if (!out)
            return NULL;
        json_t *converted;
        const char *out_key = key; /* key itself must stay the iterator's: foreach reads it */
        const json_t *only = json_array_size(value) == 1 ? json_array_get(value, 0) : NULL;
        if (strcmp(key, "nullable") == 0)
            continue;
        if (strcmp(key, "$ref") == 0 && json_is_string(value)) {
            converted = convert_ref(json_string_value(value));
        } else if (strcmp(key, "allOf") == 0 && json_object_size(only) == 1 &&
                   json_is_string(json_object_get(only, "$ref"))) {
            out_key = "$ref";
            converted = convert_ref(json_string_value(json_object_get(only, "$ref")));
        } else if (strcmp(key, "properties") == 0 || strcmp(key, "patternProperties") == 0) {
            converted = convert_map(value, depth);
        } else if (strcmp(key, "default") == 0 || strcmp(key, "enum") == 0 ||
                   strcmp(key, "example") == 0 || strncmp(key, "x-", 2) == 0) {
            converted = ck__json_copy(value);
        } else {
            converted = convert_schema(value, depth + 1);
        }
        if (json_object_set_new(out, out_key, converted) < 0)
            return json_decref(out), NULL;
    }
    if (out && json_is_true(json_object_get(node, "x-kubernetes-int-or-string")) &&
        !json_object_get(node, "type") &&
        (json_object_set_new(out, "type", json_string("string")) < 0 ||
         json_object_set_new(out, "format", json_string("int-or-string")) < 0))
        return json_decref(out), NULL;
    return out;
}

/* The keys of a v3 "content" map, as a v2 consumes/produces list. */
static json_t *media_types(const json_t *content)
{
    json_t *out = json_array();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)content, key, value)
    {
        if (!out || json_array_append_new(out, json_string(key)) < 0)
            return json_decref(out), NULL;
    }
    return out;
}

/* The schema of the first media type of a v3 "content" map, converted; NULL when none. */
static json_t *content_schema(const json_t *content)
{
    void *it = json_object_iter((json_t *)content);
    const json_t *schema = it ? json_object_get(json_object_iter_value(it), "schema") : NULL;
    return schema ? convert_schema(schema, 0) : NULL;
}

static int add_body_parameter(json_t *params, json_t *schema)
{
    if (!schema)
        return -1;
    return json_array_append_new(params, json_pack("{s:s, s:s, s:b, s:o}", "name", "body", "in",
                                                   "body", "required", 1, "schema", schema));
}

/* One v3 operation as Swagger's; NULL when out of memory. */
static json_t *convert_operation(const char *method, const json_t *op)
{
    json_t *out = json_object();
    json_t *params = json_array();
    json_t *responses = json_object();
    bool ok = out && params && responses;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)op, key, value)
    {
        if (ok && strcmp(key, "parameters") != 0 && strcmp(key, "requestBody") != 0 &&
            strcmp(key, "responses") != 0)
            ok = json_object_set_new(out, key, ck__json_copy(value)) == 0;
    }
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(op, "parameters"), i, p)
    {
        json_t *flat = ok ? ck__json_copy(p) : NULL;
        json_t *type = json_object_get(json_object_get(p, "schema"), "type");
        ok = flat && json_object_del(flat, "schema") == 0 &&
             (!type || json_object_set(flat, "type", type) == 0) &&
             json_array_append_new(params, flat) == 0;
        if (!ok)
            json_decref(flat);
    }
    const json_t *body = json_object_get(json_object_get(op, "requestBody"), "content");
    json_t *first_response = NULL;
    json_object_foreach(json_object_get(op, "responses"), key, value)
    {
        const json_t *content = json_object_get(value, "content");
        json_t *r = json_pack("{s:s}", "description",
                              json_string_value(json_object_get(value, "description"))
                                  ? json_string_value(json_object_get(value, "description"))
                                  : "");
        json_t *schema = content_schema(content);
        ok = ok && r && (!schema || json_object_set_new(r, "schema", schema) == 0) &&
             json_object_set_new(responses, key, r) == 0;
        if (ok && !first_response) {
            first_response = r;
            ok = !content || json_object_set_new(out, "produces", media_types(content)) == 0;
        }
    }
    if (ok && body)
        ok = json_object_set_new(out, "consumes", media_types(body)) == 0 &&
             add_body_parameter(params, content_schema(body)) == 0;
    else if (ok && first_response && (!strcmp(method, "post") || !strcmp(method, "put")))
        ok = json_object_set_new(out, "consumes", json_pack("[s]", "*/*")) == 0 &&
             add_body_parameter(params, ck__json_copy(json_object_get(first_response, "schema"))) ==
                 0;
    /* json_object_set_new() takes the value also when it fails */
    ok = ok && json_object_set_new(out, "parameters", json_incref(params)) == 0;
    ok = ok && json_object_set_new(out, "responses", json_incref(responses)) == 0;
    json_decref(params);
    json_decref(responses);
    if (!ok)
        out = (json_decref(out), NULL);
    return out;
}

/* Adds the paths and schemas of one v3 document to the v2 paths and definitions. */
static int merge_document(const json_t *v3, json_t *paths, json_t *definitions)
{
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(v3, "paths"), path, item)
    {
        json_t *v2_item = json_object();
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op)
        {
            if (!v2_item || json_object_set_new(v2_item, method, convert_operation(method, op)) < 0)
                return json_decref(v2_item), -1;
        }
        if (json_object_set_new(paths, path, v2_item) < 0)
            return -1;
    }
    const char *name;
    json_t *schema;
    json_object_foreach(json_object_get(json_object_get(v3, "components"), "schemas"), name, schema)
    {
        if (!json_object_get(definitions, name) &&
            json_object_set_new(definitions, name, convert_schema(schema, 0)) < 0)
            return -1;
    }
    return 0;
}

/*
 * The last document built, for the registry snapshot and schema set it was
 * built from (as discovery.c caches the v3 index): with 1,000
 * CustomResourceDefinitions the document is megabytes and takes most of a
 * second to build. Callers get a copy.
 */
static struct ck__doc_cache v2_cache = CK__DOC_CACHE_INIT;

static json_t *build_v2(const struct ck_schemas *set);

json_t *ck_openapi_v2(const struct ck_schemas *set)
{
    return ck__doc_cache_copy(&v2_cache, set, build_v2);
}

static json_t *build_v2(const struct ck_schemas *set)
{
    json_t *paths = json_object();
    json_t *definitions = json_object();
    json_t *info = NULL;
    int failed = !paths || !definitions;
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n && !failed; i++) {
        bool seen = false; /* one document per group version, at its first kind */
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(kinds[j]->group, kinds[i]->group) == 0 &&
                   strcmp(kinds[j]->version, kinds[i]->version) == 0;
        if (seen)
            continue;
        json_t *v3 = ck_openapi_document(set, kinds[i]->group, kinds[i]->version);
        failed = !v3 || merge_document(v3, paths, definitions) < 0;
        if (!failed && !info)
            failed = !(info = ck__json_copy(json_object_get(v3, "info")));
        json_decref(v3);
    }
    if (failed) {
        json_decref(paths);
        json_decref(definitions);
        json_decref(info);
        return NULL;
    }
    return json_pack("{s:s, s:o, s:o, s:o}", "swagger", "2.0", "info", info ? info : json_object(),
                     "paths", paths, "definitions", definitions);
}
