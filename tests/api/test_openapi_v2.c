/*
 * test_openapi_v2.c - tests for lib/api/openapi_v2.c: the Swagger 2.0
 * document is the v3 documents translated (every v3 path and schema is
 * there, references point into definitions and all resolve, no v3-only
 * keyword is left, IntOrString has its v2 form, parameters and bodies have
 * Swagger's shape), and it follows kinds registered at run time.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

static struct ck_schemas *schemas;

static int setup(void **state)
{
    (void)state;
    struct ck_err err = {0};
    return ck_api_builtin_schemas(&schemas, &err);
}

static int teardown(void **state)
{
    (void)state;
    schemas = ck_schemas_free(schemas);
    return 0;
}

/* Walks node: fails on a v3-only keyword or a $ref that is not in definitions. */
static void check_refs(const json_t *node, const json_t *definitions)
{
    if (json_is_array(node)) {
        size_t i;
        json_t *item;
        json_array_foreach(node, i, item) check_refs(item, definitions);
        return;
    }
    if (!json_is_object(node))
        return;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)node, key, value)
    {
        if (strcmp(key, "nullable") == 0 || strcmp(key, "requestBody") == 0 ||
            strcmp(key, "components") == 0)
            fail_msg("v3 keyword %s left in the v2 document", key);
        if (strcmp(key, "$ref") == 0 && json_is_string(value)) {
            const char *ref = json_string_value(value);
            if (strncmp(ref, "#/definitions/", 14) != 0 || !json_object_get(definitions, ref + 14))
                fail_msg("dangling reference %s", ref);
        } else if (strcmp(key, "enum") != 0 && strcmp(key, "default") != 0) {
            check_refs(value, definitions);
        }
    }
}

static void test_every_v3_path_and_schema_is_translated(void **state)
{
    (void)state;
    json_t *v2 = ck_openapi_v2(schemas);
    assert_non_null(v2);
    assert_string_equal(json_string_value(json_object_get(v2, "swagger")), "2.0");
    json_t *paths = json_object_get(v2, "paths");
    json_t *definitions = json_object_get(v2, "definitions");
    check_refs(v2, definitions);

    static const char *const gvs[][2] = {
        {"", "v1"}, {"apps", "v1"}, {"rbac.authorization.k8s.io", "v1"}};
    for (size_t g = 0; g < sizeof(gvs) / sizeof(gvs[0]); g++) {
        json_t *v3 = ck_openapi_document(schemas, gvs[g][0], gvs[g][1]);
        assert_non_null(v3);
        const char *key;
        json_t *value;
        json_object_foreach(json_object_get(v3, "paths"), key, value)
        {
            if (!json_object_get(paths, key))
                fail_msg("v3 path %s missing from v2", key);
        }
        json_object_foreach(json_object_get(json_object_get(v3, "components"), "schemas"), key,
                            value)
        {
            if (!json_object_get(definitions, key))
                fail_msg("v3 schema %s missing from v2", key);
        }
        json_decref(v3);
    }

    json_t *ios = json_object_get(definitions, "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
    assert_string_equal(json_string_value(json_object_get(ios, "type")), "string");
    assert_string_equal(json_string_value(json_object_get(ios, "format")), "int-or-string");

    json_t *create =
        json_object_get(json_object_get(paths, "/api/v1/namespaces/{namespace}/pods"), "post");
    json_t *params = json_object_get(create, "parameters");
    json_t *body = json_array_get(params, json_array_size(params) - 1);
    assert_string_equal(json_string_value(json_object_get(body, "in")), "body");
    assert_string_equal(json_string_value(json_object_get(json_object_get(body, "schema"), "$ref")),
                        "#/definitions/io.k8s.api.core.v1.Pod");
    json_t *first = json_array_get(params, 0);
    assert_string_equal(json_string_value(json_object_get(first, "type")), "string");
    assert_null(json_object_get(first, "schema"));
    json_t *produces = json_object_get(create, "produces");
    assert_string_equal(json_string_value(json_array_get(produces, 0)), "application/json");
    assert_string_equal(json_string_value(json_array_get(produces, 1)), "application/yaml");
    json_decref(v2);
}

static const struct ck_kind gadget_kind = {
    .group = "test.ckube.io",
    .version = "v1",
    .kind = "Frobber",
    .list_kind = "FrobberList",
    .resource = "gadgets",
    .singular = "gadget",
    .namespaced = true,
    .schema = "io.ckube.example.v1.Frobber",
};

static void test_follows_kinds_registered_at_run_time(void **state)
{
    (void)state;
    const char *path = "/apis/test.ckube.io/v1/namespaces/{namespace}/gadgets";
    json_t *before = ck_openapi_v2(schemas);
    assert_null(json_object_get(json_object_get(before, "paths"), path));
    json_decref(before);
    struct ck_err err = {0};
    assert_int_equal(ck_kind_register(&gadget_kind, &err), 0);
    json_t *after = ck_openapi_v2(schemas);
    assert_non_null(json_object_get(json_object_get(after, "paths"), path));
    json_decref(after);
    assert_int_equal(ck_kind_unregister(&gadget_kind, &err), 0);
    json_t *again = ck_openapi_v2(schemas);
    assert_null(json_object_get(json_object_get(again, "paths"), path));
    json_decref(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_v3_path_and_schema_is_translated),
        cmocka_unit_test(test_follows_kinds_registered_at_run_time),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
