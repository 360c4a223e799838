/*
 * test_customresource.c - tests for lib/api/customresource.c and
 * lib/api/kinds/customresourcedefinition.c: Kubernetes' version priority,
 * the kinds a definition describes (served versions only, preferred first,
 * names, scope, storage keys and version, columns, subresources), their
 * schemas layered over the built-in set (ObjectMeta resolves, decoding
 * prunes and defaults, validation uses the schema), and the definition's
 * own defaults and validation messages, defaulting on read, and
 * selectableFields (field labels and their checks).
 */
#include "cktest.h"

#include <stdio.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

/* A schema that keeps every field. */
#define OPEN_SCHEMA                                                                                \
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","                                        \
    "\"x-kubernetes-preserve-unknown-fields\":true}}"

static const char crontab_crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"crontabs.stable.example.com\"},"
    "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
    "\"names\":{\"plural\":\"crontabs\",\"singular\":\"crontab\",\"kind\":\"CronTab\","
    "\"shortNames\":[\"ct\"],\"categories\":[\"all\"]},"
    "\"versions\":["
    "{\"name\":\"v1beta1\",\"served\":true,\"storage\":false," OPEN_SCHEMA "},"
    "{\"name\":\"v1alpha1\",\"served\":false,\"storage\":false," OPEN_SCHEMA "},"
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"properties\":{"
    "\"cronSpec\":{\"type\":\"string\"},"
    "\"replicas\":{\"type\":\"integer\",\"maximum\":10,\"default\":1}},"
    "\"required\":[\"cronSpec\"]},"
    "\"status\":{\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"}}}}}},"
    "\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\","
    "\"statusReplicasPath\":\".status.replicas\"}},"
    "\"additionalPrinterColumns\":[{\"name\":\"Spec\",\"type\":\"string\","
    "\"jsonPath\":\".spec.cronSpec\"}]}]}}";

static void test_version_priority_is_kubernetes_order(void **state)
{
    (void)state;
    static const char *const ordered[] = {"v10",      "v2",      "v1",        "v11beta2",
                                          "v10beta3", "v3beta1", "v12alpha1", "v11alpha2",
                                          "foo1",     "foo10"};
    size_t n = sizeof(ordered) / sizeof(ordered[0]);
    for (size_t i = 0; i + 1 < n; i++) {
        assert_true(ck_crd_version_compare(ordered[i], ordered[i + 1]) < 0);
        assert_true(ck_crd_version_compare(ordered[i + 1], ordered[i]) > 0);
    }
    assert_int_equal(ck_crd_version_compare("v1", "v1"), 0);
}

static void test_kinds_of_a_definition(void **state)
{
    (void)state;
    struct ck_schemas *base = NULL;
    assert_int_equal(ck_api_builtin_schemas(&base, NULL), 0);
    json_t *crd = load(crontab_crd);
    struct ck_crd_kinds *kinds = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_crd_kinds_new(crd, base, &kinds, &err), 0);
    /* served versions only, the preferred (GA) first */
    assert_int_equal(ck_crd_kinds_count(kinds), 2);
    const struct ck_kind *v1 = ck_crd_kinds_get(kinds, 0);
    const struct ck_kind *beta = ck_crd_kinds_get(kinds, 1);
    assert_null(ck_crd_kinds_get(kinds, 2));
    assert_string_equal(v1->version, "v1");
    assert_string_equal(beta->version, "v1beta1");
    assert_string_equal(v1->group, "stable.example.com");
    assert_string_equal(v1->kind, "CronTab");
    assert_string_equal(v1->list_kind, "CronTabList");
    assert_string_equal(v1->resource, "crontabs");
    assert_string_equal(v1->singular, "crontab");
    assert_string_equal(v1->short_names[0], "ct");
    assert_null(v1->short_names[1]);
    assert_string_equal(v1->categories[0], "all");
    assert_true(v1->namespaced);
    assert_true(v1->has_generation);
    assert_string_equal(v1->schema, "com.example.stable.v1.CronTab");
    /* every version shares the storage of the storage version */
    assert_string_equal(v1->storage_resource, "stable.example.com/crontabs");
    assert_string_equal(beta->storage_resource, "stable.example.com/crontabs");
    assert_string_equal(beta->storage_api_version, "stable.example.com/v1");
    /* columns: Name, then the printer columns; a version without them gets Age */
    assert_int_equal(v1->n_columns, 2);
    assert_string_equal(v1->columns[0].name, "Name");
    assert_string_equal(v1->columns[1].name, "Spec");
    assert_string_equal(v1->columns[1].json_path, ".spec.cronSpec");
    assert_int_equal(beta->n_columns, 2);
    assert_string_equal(beta->columns[1].name, "Age");
    assert_true(beta->columns[1].age);
    /* subresources as declared */
    const struct ck_subresource *scale = ck_kind_subresource_part(v1, CK_SUBRESOURCE_SCALE);
    assert_non_null(ck_kind_subresource(v1, "status"));
    assert_non_null(scale);
    assert_string_equal(scale->spec_replicas_path, ".spec.replicas");
    assert_string_equal(scale->status_replicas_path, ".status.replicas");
    assert_null(scale->label_selector_path);
    assert_int_equal(beta->n_subresources, 0);

    /* the schema: layered over the built-in set, ObjectMeta resolves */
    const struct ck_schemas *set = ck_kind_schemas(v1, base);
    assert_ptr_not_equal(set, base);
    assert_ptr_equal(ck_kind_schemas(ck_kind_lookup("", "v1", "pods"), base), base);
    assert_ptr_equal(ck_schemas_parent(set), base);
    assert_non_null(ck_schemas_get(set, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    assert_non_null(ck_schemas_get(set, "com.example.stable.v1.CronTabList"));
    assert_false(ck_schema_is_strategic(set, v1->schema));
    static const char body[] = "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                               "\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"y\"}},"
                               "\"spec\":{\"cronSpec\":\"* * * * *\",\"unknown\":1}}";
    json_t *obj = NULL;
    assert_int_equal(ck_schema_decode(set, v1->schema, body, strlen(body),
                                      CK_FIELD_VALIDATION_IGNORE, &obj, NULL, &err),
                     0);
    assert_null(json_object_get(json_object_get(obj, "spec"), "unknown")); /* pruned */
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(obj, "metadata"), "labels"), "x")),
                        "y");
    assert_int_equal(ck_schema_default(set, v1->schema, obj), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(obj, "spec"), "replicas")),
                     1);
    json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(11));
    json_object_del(json_object_get(obj, "spec"), "cronSpec");
    struct ck_field_errors errs = {0};
    ck_schema_validate(set, v1->schema, obj, &errs);
    assert_int_equal(errs.len, 2); /* replicas above the maximum, cronSpec required */
    ck_field_errors_release(&errs);
    json_decref(obj);

    ck_crd_kinds_free(kinds);
    json_decref(crd);
    ck_schemas_free(base);
}

static void test_definition_without_names_is_refused(void **state)
{
    (void)state;
    json_t *crd = load("{\"spec\":{\"group\":\"a.b\",\"scope\":\"Cluster\"}}");
    struct ck_crd_kinds *kinds = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_crd_kinds_new(crd, NULL, &kinds, &err), CK_EINVAL);
    assert_null(kinds);
    ck_err_release(&err);
    json_decref(crd);
}

/* The field errors of the definition kind's validation, one string each, joined by "|". */
static void validation_of(const char *text, char *out, size_t size)
{
    const struct ck_kind *kind =
        ck_kind_lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    assert_non_null(kind);
    json_t *crd = load(text);
    assert_int_equal(ck_kind_default(kind, crd), 0);
    struct ck_field_errors errs = {0};
    ck_meta_validate(kind, crd, NULL, &errs);
    out[0] = '\0';
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s%s", used ? "|" : "", s);
        free(s);
    }
    ck_field_errors_release(&errs);
    json_decref(crd);
}

static void test_schema_errors_name_spec_validation_when_versions_share_it(void **state)
{
    (void)state;
    char got[4096];
#define WIDGETS_WITH(v1, v2)                                                                       \
    "{\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","        \
    "\"scope\":\"Cluster\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"                \
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"                             \
    "\"schema\":{\"openAPIV3Schema\":" v1 "}},{\"name\":\"v2\",\"served\":true,"                   \
    "\"storage\":false,\"schema\":{\"openAPIV3Schema\":" v2 "}}]}}"
#define BAD_RULE "{\"type\":\"object\",\"x-kubernetes-validations\":[{\"rule\":\"frob(self)\"}]}"
    /* the same schema: Kubernetes' internal form holds it once, as spec.validation */
    validation_of(WIDGETS_WITH(BAD_RULE, BAD_RULE), got, sizeof(got));
    assert_non_null(strstr(got, "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: "
                                "Invalid value: apiextensions.ValidationRule{Rule:\"frob(self)\""));
    assert_null(strstr(got, "spec.versions["));
    /* different schemas: each version's */
    validation_of(WIDGETS_WITH(BAD_RULE, "{\"type\":\"object\"}"), got, sizeof(got));
    assert_non_null(strstr(got, "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-"
                                "validations[0].rule: Invalid value: "));
    assert_null(strstr(got, "spec.validation"));
#undef WIDGETS_WITH
#undef BAD_RULE
}

static void test_definition_validation_messages(void **state)
{
    (void)state;
    char got[4096];
    validation_of(crontab_crd, got, sizeof(got));
    assert_string_equal(got, "");

    validation_of("{\"metadata\":{\"name\":\"wrong.example.com\"},\"spec\":{\"group\":\"example\","
                  "\"scope\":\"Global\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
                  "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
                  "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}},"
                  "{\"name\":\"v1\",\"served\":true,\"storage\":true,"
                  "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}",
                  got, sizeof(got));
    assert_non_null(strstr(got, "metadata.name: Invalid value: \"wrong.example.com\": must be "
                                "spec.names.plural+\".\"+spec.group"));
    assert_non_null(strstr(got, "spec.group: Invalid value: \"example\": should be a domain "
                                "with at least one dot"));
    assert_non_null(strstr(got, "spec.scope: Unsupported value: \"Global\": supported values: "
                                "\"Cluster\", \"Namespaced\""));
    assert_non_null(
        strstr(got, "spec.versions: Invalid value: must contain unique version names") ||
        strstr(got, "must contain unique version names"));
    assert_non_null(strstr(got, "must have exactly one version marked as storage version"));

    validation_of("{\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":"
                  "\"example.com\",\"scope\":\"Cluster\",\"names\":{\"plural\":\"widgets\","
                  "\"kind\":\"Widget\",\"listKind\":\"Widget\",\"shortNames\":[\"W\"]},"
                  "\"versions\":[{\"name\":\"V1\",\"served\":true,\"storage\":true,"
                  "\"subresources\":{\"scale\":{\"specReplicasPath\":\"spec.replicas\","
                  "\"statusReplicasPath\":\".spec.replicas\"}}}]}}",
                  got, sizeof(got));
    assert_non_null(strstr(got, "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label"));
    assert_non_null(strstr(got, "spec.versions[0].schema.openAPIV3Schema: Required value"));
    assert_non_null(strstr(got, "spec.versions[0].subresources.scale.specReplicasPath: Invalid "
                                "value: \"spec.replicas\": must be a simple json path starting "
                                "with ."));
    assert_non_null(strstr(got, "spec.versions[0].subresources.scale.statusReplicasPath: Invalid "
                                "value: \".spec.replicas\": should be a json path under .status"));
    assert_non_null(strstr(got, "spec.names.listKind: Invalid value: \"Widget\": kind and "
                                "listKind may not be the same"));
    assert_non_null(strstr(got, "spec.names.shortNames[0]: Invalid value: \"W\""));

    /* what ckube's routes cannot hold */
    validation_of(
        "{\"metadata\":{\"name\":\"widgets.a123456789a123456789a123456789a123456789a12345678"
        "9.example.example.com\"},\"spec\":{\"group\":\"a123456789a123456789a123456789a1234567"
        "89a123456789.example.example.com\",\"scope\":\"Cluster\",\"names\":{\"plural\":"
        "\"widgets\",\"kind\":\"Widget\"},\"versions\":[{\"name\":"
        "\"v1alpha1abcdefghijklmnopqrstuvwxyz\",\"served\":true,\"storage\":true," OPEN_SCHEMA
        "}]}}",
        got, sizeof(got));
    assert_non_null(strstr(got, "spec.group: Too long: may not be more than 63 bytes"));
    assert_non_null(strstr(got, "spec.versions[0].name: Too long: may not be more than 31 bytes"));

    /* a version still stored may not leave spec.versions */
    validation_of("{\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":"
                  "\"example.com\",\"scope\":\"Cluster\",\"names\":{\"plural\":\"widgets\","
                  "\"kind\":\"Widget\"},\"versions\":[{\"name\":\"v2\",\"served\":true,"
                  "\"storage\":true," OPEN_SCHEMA "}]},\"status\":{\"storedVersions\":[\"v1\","
                  "\"v2\"]}}",
                  got, sizeof(got));
    assert_string_equal(got, "status.storedVersions[0]: Invalid value: \"v1\": must appear in "
                             "spec.versions");
}

static void test_definition_defaults(void **state)
{
    (void)state;
    const struct ck_kind *kind =
        ck_kind_lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    json_t *crd = load("{\"spec\":{\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
                       "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}");
    assert_int_equal(ck_kind_default(kind, crd), 0);
    json_t *names = json_object_get(json_object_get(crd, "spec"), "names");
    assert_string_equal(json_string_value(json_object_get(names, "singular")), "widget");
    assert_string_equal(json_string_value(json_object_get(names, "listKind")), "WidgetList");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(crd, "spec"), "conversion"), "strategy")),
        "None");
    json_decref(crd);
}

/* Defaults on read: only the versions whose schema has defaults; the stored bytes get them. */
static void test_defaults_applied_on_read(void **state)
{
    (void)state;
    struct ck_schemas *base = NULL;
    assert_int_equal(ck_api_builtin_schemas(&base, NULL), 0);
    json_t *crd = load(crontab_crd);
    struct ck_crd_kinds *kinds = NULL;
    assert_int_equal(ck_crd_kinds_new(crd, base, &kinds, NULL), 0);
    const struct ck_kind *v1 = ck_crd_kinds_get(kinds, 0);
    const struct ck_kind *beta = ck_crd_kinds_get(kinds, 1);
    assert_true(v1->defaults_on_read);
    assert_false(beta->defaults_on_read);

    /* stored before spec.replicas had a default */
    static const char stored[] =
        "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
        "\"metadata\":{\"name\":\"a\"},\"spec\":{\"cronSpec\":\"* * * * */5\"}}";
    size_t len = 0;
    bool failed = false;
    char *out = ck_crd_default_stored(v1, stored, strlen(stored), &len, &failed);
    assert_false(failed);
    assert_non_null(out);
    assert_int_equal(len, strlen(out));
    assert_string_equal(out, "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                             "\"metadata\":{\"name\":\"a\"},"
                             "\"spec\":{\"cronSpec\":\"* * * * */5\",\"replicas\":1}}");
    free(out);
    /* a value set is kept: nothing added, so the stored bytes serve as they are */
    static const char set[] = "{\"spec\":{\"cronSpec\":\"x\",\"replicas\":3}}";
    assert_null(ck_crd_default_stored(v1, set, strlen(set), &len, &failed));
    assert_false(failed);
    /* a null the schema does not allow takes the default */
    static const char null_replicas[] = "{\"spec\":{\"cronSpec\":\"x\",\"replicas\":null}}";
    out = ck_crd_default_stored(v1, null_replicas, strlen(null_replicas), &len, &failed);
    assert_non_null(out);
    assert_string_equal(out, "{\"spec\":{\"cronSpec\":\"x\",\"replicas\":1}}");
    free(out);
    /* nothing to do: no defaults in the version, not an object, not a custom resource */
    assert_null(ck_crd_default_stored(beta, stored, strlen(stored), &len, &failed));
    assert_null(ck_crd_default_stored(v1, "[1]", 3, &len, &failed));
    assert_null(ck_crd_default_stored(NULL, stored, strlen(stored), &len, &failed));
    assert_false(failed);

    json_t *obj = load("{\"spec\":{\"cronSpec\":\"x\"}}");
    assert_int_equal(ck_crd_default_read(v1, obj), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(obj, "spec"), "replicas")),
                     1);
    json_decref(obj);
    obj = load("{\"spec\":{}}");
    assert_int_equal(ck_crd_default_read(beta, obj), 0);
    assert_null(json_object_get(json_object_get(obj, "spec"), "replicas"));
    json_decref(obj);

    ck_crd_kinds_free(kinds);
    json_decref(crd);
    ck_schemas_free(base);
}

/* selectableFields: field labels of the kind, values as Kubernetes gives them, and the checks. */
static void test_selectable_fields(void **state)
{
    (void)state;
    struct ck_schemas *base = NULL;
    assert_int_equal(ck_api_builtin_schemas(&base, NULL), 0);
    json_t *crd = load(crontab_crd);
    json_t *v1 = json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 2);
    json_object_set_new(
        v1, "selectableFields",
        json_pack("[{s:s}, {s:s}]", "jsonPath", ".spec.cronSpec", "jsonPath", ".spec.replicas"));
    struct ck_field_errors errs = {0};
    ck_crd_selectable_fields_check(v1, "spec.versions[2]", &errs);
    assert_int_equal(errs.len, 0);

    struct ck_crd_kinds *kinds = NULL;
    assert_int_equal(ck_crd_kinds_new(crd, base, &kinds, NULL), 0);
    const struct ck_kind *kind = ck_crd_kinds_get(kinds, 0);
    assert_int_equal(kind->n_field_labels, 2);
    assert_string_equal(kind->field_labels[0].label, "spec.cronSpec");
    json_t *obj = load("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"replicas\":3}}");
    char buf[32];
    assert_string_equal(ck_kind_field_value(kind, "spec.replicas", obj, buf, sizeof(buf)), "3");
    assert_string_equal(ck_kind_field_value(kind, "spec.cronSpec", obj, buf, sizeof(buf)), "");
    json_object_set_new(json_object_get(obj, "spec"), "cronSpec", json_string("* * * * *"));
    assert_string_equal(ck_kind_field_value(kind, "spec.cronSpec", obj, buf, sizeof(buf)),
                        "* * * * *");
    json_decref(obj);
    /* another version without selectableFields offers none */
    assert_int_equal(ck_crd_kinds_get(kinds, 1)->n_field_labels, 0);
    ck_crd_kinds_free(kinds);

    json_object_set_new(v1, "selectableFields",
                        json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}, {}]", "jsonPath",
                                  ".spec.nope", "jsonPath", ".metadata.name", "jsonPath", ".spec",
                                  "jsonPath", ".spec.replicas", "jsonPath", ".spec.replicas"));
    ck_crd_selectable_fields_check(v1, "spec.versions[2]", &errs);
    static const char *const want[] = {
        "spec.versions[2].selectableFields[0].jsonPath: Invalid value: \".spec.nope\": is an "
        "invalid path: does not refer to a valid field",
        "spec.versions[2].selectableFields[1].jsonPath: Invalid value: \".metadata.name\": must "
        "not point to fields in metadata",
        "spec.versions[2].selectableFields[2].jsonPath: Invalid value: \".spec\": must point to a "
        "field of type string, boolean or integer. Enum string fields and strings with formats "
        "are allowed.",
        "spec.versions[2].selectableFields[4].jsonPath: Duplicate value: \".spec.replicas\"",
        "spec.versions[2].selectableFields[5].jsonPath: Required value",
    };
    assert_int_equal(errs.len, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < errs.len; i++) {
        char *text = ck_field_error_string(&errs.items[i]);
        assert_string_equal(text, want[i]);
        free(text);
    }
    ck_field_errors_release(&errs);

    json_t *many = json_array();
    static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
    json_t *props = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(v1, "schema"), "openAPIV3Schema"),
                            "properties"),
            "spec"),
        "properties");
    for (size_t i = 0; i < 9; i++) {
        json_object_set_new(props, names[i], json_pack("{s:s}", "type", "string"));
        char path[16];
        snprintf(path, sizeof(path), ".spec.%s", names[i]);
        json_array_append_new(many, json_pack("{s:s}", "jsonPath", path));
    }
    json_object_set_new(v1, "selectableFields", many);
    ck_crd_selectable_fields_check(v1, "spec.versions[2]", &errs);
    assert_int_equal(errs.len, 1);
    char *text = ck_field_error_string(&errs.items[0]);
    assert_string_equal(text, "spec.versions[2].selectableFields: Too many: 9: must have at most 8 "
                              "items");
    free(text);
    ck_field_errors_release(&errs);
    json_decref(crd);
    ck_schemas_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_priority_is_kubernetes_order),
        cmocka_unit_test(test_kinds_of_a_definition),
        cmocka_unit_test(test_defaults_applied_on_read),
        cmocka_unit_test(test_selectable_fields),
        cmocka_unit_test(test_definition_without_names_is_refused),
        cmocka_unit_test(test_definition_validation_messages),
        cmocka_unit_test(test_schema_errors_name_spec_validation_when_versions_share_it),
        cmocka_unit_test(test_definition_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
