/*
 * test_schema.c - tests for lib/api/schema.c on a small schema set of its
 * own (a "Widget" kind shaped like a Deployment): decoding under Strict,
 * Warn and Ignore, type errors in Go's wording, duplicates, nulls, times,
 * preserved subtrees, defaulting and validation, and bad schema sets.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/api/internal.h"
#include "ckube/api.h"

#define REF(name) "{\"$ref\":\"#/components/schemas/" name "\"}"

static const char widget_schemas[] =
    "{"
    "\"io.k8s.apimachinery.pkg.apis.meta.v1.Time\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"test.Meta\":{\"type\":\"object\",\"properties\":{"
    "  \"name\":{\"type\":\"string\"},"
    "  \"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "  \"creationTimestamp\":" REF(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time") ","
                                                     "  \"eventTime\":" REF(
                                                         "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime") "}},"
                                                                                                           "\"test.Widget\":{\"type\":\"object\",\"required\":[\"spec\"],\"properties\":{"
                                                                                                           "  \"apiVersion\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},"
                                                                                                           "  \"metadata\":" REF("test.Meta") ","
                                                                                                                                              "  \"spec\":" REF("test.WidgetSpec") ","
                                                                                                                                                                                   "  \"status\":" REF(
                                                                                                                                                                                       "test.WidgetStatus") "}},"
                                                                                                                                                                                                            "\"test.WidgetSpec\":{\"type\":\"object\",\"required\":[\"parts\"],\"properties\":{"
                                                                                                                                                                                                            "  \"replicas\":{\"type\":\"integer\",\"format\":\"int32\",\"default\":1,\"minimum\":0},"
                                                                                                                                                                                                            "  \"policy\":{\"type\":\"string\",\"enum\":[\"Always\",\"Never\"],\"default\":\"Always\"},"
                                                                                                                                                                                                            "  \"parts\":{\"type\":\"array\",\"items\":" REF(
                                                                                                                                                                                                                "test.Part") "},"
                                                                                                                                                                                                                             "  \"strategy\":{\"allOf\":[" REF("test.Strategy") "],\"default\":{\"type\":\"Rolling\"}},"
                                                                                                                                                                                                                                                                                "  \"size\":{\"x-kubernetes-int-or-string\":true},"
                                                                                                                                                                                                                                                                                "  \"extra\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
                                                                                                                                                                                                                                                                                "  \"ratio\":{\"type\":\"number\"},"
                                                                                                                                                                                                                                                                                "  \"enabled\":{\"type\":\"boolean\"}}},"
                                                                                                                                                                                                                                                                                "\"test.Part\":{\"type\":\"object\",\"required\":[\"name\"],\"properties\":{"
                                                                                                                                                                                                                                                                                "  \"name\":{\"type\":\"string\"},"
                                                                                                                                                                                                                                                                                "  \"port\":{\"type\":\"integer\",\"format\":\"int32\",\"default\":80}}},"
                                                                                                                                                                                                                                                                                "\"test.Strategy\":{\"type\":\"object\",\"properties\":{"
                                                                                                                                                                                                                                                                                "  \"type\":{\"type\":\"string\"},"
                                                                                                                                                                                                                                                                                "  \"rolling\":{\"type\":\"object\",\"properties\":{"
                                                                                                                                                                                                                                                                                "    \"max\":{\"x-kubernetes-int-or-string\":true,\"default\":\"25%\"}}}}},"
                                                                                                                                                                                                                                                                                "\"test.WidgetStatus\":{\"type\":\"object\",\"x-ckube-always-emit\":[\"replicas\"],"
                                                                                                                                                                                                                                                                                "  \"properties\":{\"replicas\":{\"type\":\"integer\",\"format\":\"int32\"},"
                                                                                                                                                                                                                                                                                "  \"observed\":{\"type\":\"integer\",\"format\":\"int64\"}}}"
                                                                                                                                                                                                                                                                                "}";

static struct ck_schemas *widget_set;

static int load(void **state)
{
    const char *docs[] = {widget_schemas};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    if (ck_schemas_new(docs, 1, &set, &err) != 0) {
        fprintf(stderr, "load: %s\n", err.msg);
        return -1;
    }
    widget_set = set;
    *state = set;
    return 0;
}

static int unload(void **state)
{
    (void)state;
    widget_set = ck_schemas_free(widget_set);
    return 0;
}

static int use_set(void **state)
{
    *state = widget_set;
    return 0;
}

static json_t *decode_ok(struct ck_schemas *set, const char *body, enum ck_field_validation fv,
                         struct ck_warnings *w)
{
    json_t *obj = NULL;
    struct ck_err err = {0};
    if (ck_schema_decode(set, "test.Widget", body, strlen(body), fv, &obj, w, &err) != 0)
        fail_msg("decode %s: %s", body, err.msg);
    return obj;
}

static void decode_fails(struct ck_schemas *set, const char *body, enum ck_field_validation fv,
                         const char *want)
{
    json_t *obj = NULL;
    struct ck_err err = {0};
    struct ck_warnings w = {0};
    assert_int_equal(ck_schema_decode(set, "test.Widget", body, strlen(body), fv, &obj, &w, &err),
                     CK_EINVAL);
    assert_null(obj);
    if (!strstr(err.msg, want))
        fail_msg("%s: \"%s\" lacks \"%s\"", body, err.msg, want);
    ck_warnings_release(&w);
}

static void test_valid_body_is_kept_and_times_normalised(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj = decode_ok(*state,
                            "{\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
                            "\"creationTimestamp\":\"2025-01-02T04:04:05+01:00\","
                            "\"eventTime\":\"2025-01-02T03:04:05.5Z\",\"labels\":{\"a\":\"b\"}},"
                            "\"spec\":{\"parts\":[{\"name\":\"p\"}],\"size\":\"10%\","
                            "\"ratio\":0.5,\"enabled\":true}}",
                            CK_FIELD_VALIDATION_STRICT, &w);
    json_t *meta = json_object_get(obj, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "creationTimestamp")),
                        "2025-01-02T03:04:05Z");
    assert_string_equal(json_string_value(json_object_get(meta, "eventTime")),
                        "2025-01-02T03:04:05.500000Z");
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"), "a")),
                        "b");
    assert_int_equal(w.len, 0);
    json_decref(obj);
}

static const char unknown_body[] = "{\"spec\":{\"parts\":[{\"name\":\"p\",\"bar\":1}],\"foo\":2},"
                                   "\"metadata\":{\"labels\":{\"x\":\"y\"}}}";

static void test_unknown_fields_under_strict_fail_naming_every_field(void **state)
{
    decode_fails(
        *state, unknown_body, CK_FIELD_VALIDATION_STRICT,
        "strict decoding error: unknown field \"spec.parts[0].bar\", unknown field \"spec.foo\"");
}

static void test_unknown_fields_under_warn_are_dropped_with_warnings(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj = decode_ok(*state, unknown_body, CK_FIELD_VALIDATION_WARN, &w);
    json_t *spec = json_object_get(obj, "spec");
    assert_null(json_object_get(spec, "foo"));
    assert_null(json_object_get(json_array_get(json_object_get(spec, "parts"), 0), "bar"));
    assert_int_equal(w.len, 2);
    assert_string_equal(w.items[0], "unknown field \"spec.parts[0].bar\"");
    assert_string_equal(w.items[1], "unknown field \"spec.foo\"");
    ck_warnings_release(&w);
    json_decref(obj);
}

static void test_unknown_fields_under_ignore_vanish_silently(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj = decode_ok(*state, unknown_body, CK_FIELD_VALIDATION_IGNORE, &w);
    assert_null(json_object_get(json_object_get(obj, "spec"), "foo"));
    assert_int_equal(w.len, 0);
    json_decref(obj);
}

static void test_duplicate_fields(void **state)
{
    static const char body[] = "{\"spec\":{\"parts\":[],\"replicas\":1,\"replicas\":2}}";
    decode_fails(*state, body, CK_FIELD_VALIDATION_STRICT,
                 "strict decoding error: duplicate field \"replicas\"");
    struct ck_warnings w = {0};
    json_t *obj = decode_ok(*state, body, CK_FIELD_VALIDATION_WARN, &w);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(obj, "spec"), "replicas")),
                     2); /* the last one wins */
    assert_int_equal(w.len, 1);
    ck_warnings_release(&w);
    json_decref(obj);
}

static void test_type_errors_use_go_wording(void **state)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"spec\":{\"replicas\":\"three\"}}",
         "json: cannot unmarshal string into Go struct field WidgetSpec.spec.replicas of type int32"},
        {"{\"spec\":{\"replicas\":3000000000}}", "of type int32"},
        {"{\"spec\":{\"replicas\":1.5}}", "cannot unmarshal number"},
        {"{\"spec\":{\"enabled\":\"yes\"}}", "of type bool"},
        {"{\"spec\":{\"parts\":{}}}", "cannot unmarshal object into Go struct field"},
        {"{\"spec\":{\"parts\":[{\"name\":7}]}}", "Part.spec.parts[0].name of type string"},
        {"{\"spec\":{\"size\":true}}", "cannot unmarshal bool"},
        {"{\"metadata\":{\"labels\":{\"a\":1}}}", "metadata.labels[a]"},
        {"[1,2]", "json: cannot unmarshal array into Go value of type Widget"},
        {"{\"metadata\":{\"creationTimestamp\":\"yesterday\"}}", "parsing time \"yesterday\""},
        {"{\"spec\":", "json parse error"},
        {"{\"spec\":{}} trailing", "json parse error"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        decode_fails(*state, cases[i].body, CK_FIELD_VALIDATION_IGNORE, cases[i].want);
}

static void test_nulls_decode_as_absent(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj = decode_ok(*state,
                            "{\"status\":null,\"metadata\":{\"labels\":null,"
                            "\"creationTimestamp\":null},\"spec\":{\"parts\":[null]}}",
                            CK_FIELD_VALIDATION_STRICT, &w);
    assert_null(json_object_get(obj, "status"));
    assert_null(json_object_get(json_object_get(obj, "metadata"), "labels"));
    assert_null(json_object_get(json_object_get(obj, "metadata"), "creationTimestamp"));
    json_t *part = json_array_get(json_object_get(json_object_get(obj, "spec"), "parts"), 0);
    assert_true(json_is_object(part)); /* a null element becomes the zero value */
    json_decref(obj);
}

static void test_preserved_subtree_keeps_anything(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj =
        decode_ok(*state, "{\"spec\":{\"parts\":[],\"extra\":{\"any\":{\"x\":[1,null]}}}}",
                  CK_FIELD_VALIDATION_STRICT, &w);
    json_t *extra = json_object_get(json_object_get(obj, "spec"), "extra");
    assert_non_null(json_object_get(json_object_get(extra, "any"), "x"));
    json_decref(obj);
}

static void test_defaults_fill_absent_fields_recursively(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj =
        decode_ok(*state,
                  "{\"spec\":{\"parts\":[{\"name\":\"a\"},{\"name\":\"b\",\"port\":8080}],"
                  "\"policy\":\"Never\"},\"status\":{}}",
                  CK_FIELD_VALIDATION_STRICT, &w);
    ck_schema_default(*state, "test.Widget", obj);
    json_t *spec = json_object_get(obj, "spec");
    assert_int_equal(json_integer_value(json_object_get(spec, "replicas")), 1);
    assert_string_equal(json_string_value(json_object_get(spec, "policy")), "Never"); /* kept */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "strategy"), "type")), "Rolling");
    json_t *parts = json_object_get(spec, "parts");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 0), "port")), 80);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(parts, 1), "port")), 8080);
    /* always-emit fields appear with their zero value inside an existing object */
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(obj, "status"), "replicas")), 0);
    assert_true(json_is_integer(json_object_get(json_object_get(obj, "status"), "replicas")));
    json_decref(obj);

    /* defaults inside a defaulted object, and none for absent parents */
    obj = decode_ok(*state, "{\"spec\":{\"parts\":[],\"strategy\":{\"rolling\":{}}}}",
                    CK_FIELD_VALIDATION_STRICT, &w);
    ck_schema_default(*state, "test.Widget", obj);
    json_t *strategy = json_object_get(json_object_get(obj, "spec"), "strategy");
    assert_null(json_object_get(strategy, "type")); /* given, so not replaced by the default */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(strategy, "rolling"), "max")), "25%");
    assert_null(json_object_get(obj, "status"));
    json_decref(obj);
}

/*
 * Defaulting skips what a reference leads to only when no default is below it: one
 * two references down, one inside a schema that refers to itself, and one reached
 * from a layered set through its parent's schemas are all applied.
 */
static void test_defaults_behind_references_and_cycles(void **state)
{
    (void)state;
    const char *nested[] = {
        "{\"Outer\":{\"type\":\"object\",\"properties\":{"
        "\"mid\":{\"description\":\"d\",\"$ref\":\"#/components/schemas/Mid\"},"
        "\"plain\":{\"$ref\":\"#/components/schemas/Plain\"}}},"
        "\"Mid\":{\"type\":\"object\",\"properties\":{"
        "\"self\":{\"$ref\":\"#/components/schemas/Mid\"},"
        "\"item\":{\"allOf\":[{\"$ref\":\"#/components/schemas/Item\"}]}}},"
        "\"Plain\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\"}}},"
        "\"Item\":{\"type\":\"object\",\"properties\":{"
        "\"size\":{\"type\":\"integer\",\"default\":7}}}}"};
    const char *layer[] = {"{\"L\":{\"type\":\"object\",\"properties\":{"
                           "\"outer\":{\"$ref\":\"#/components/schemas/Outer\"}}}}"};
    struct ck_schemas *base = NULL, *layered = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_schemas_new(nested, 1, &base, &err), 0);
    assert_int_equal(ck_schemas_new_layered(base, layer, 1, &layered, &err), 0);
    json_t *o = json_loads("{\"mid\":{\"item\":{},\"self\":{\"item\":{}}},\"plain\":{}}", 0, NULL);
    json_t *l = json_pack("{s:o}", "outer", json_deep_copy(o)); /* defaulted apart */
    assert_int_equal(ck_schema_default(base, "Outer", o), 0);
    json_t *mid = json_object_get(o, "mid");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(mid, "item"), "size")), 7);
    json_t *self_item = json_object_get(json_object_get(mid, "self"), "item");
    assert_int_equal(json_integer_value(json_object_get(self_item, "size")), 7);
    assert_null(json_object_get(json_object_get(o, "plain"), "size")); /* no default there */
    json_decref(o);

    assert_int_equal(ck_schema_default(layered, "L", l), 0);
    mid = json_object_get(json_object_get(l, "outer"), "mid");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(mid, "item"), "size")), 7);
    json_decref(l);
    ck_schemas_free(layered);
    ck_schemas_free(base);
}

/*
 * Where a reference leads is found once per set, when the set is made (its map by
 * node address): a set made after another was freed, likely at the same addresses,
 * with the same names but other defaults, gets its own answers, never the freed
 * set's nodes.
 */
static void test_a_new_set_at_a_freed_ones_addresses_resolves_anew(void **state)
{
    (void)state;
    for (long long round = 0; round < 6; round++) {
        char doc[512];
        snprintf(doc, sizeof(doc),
                 "{\"Holder\":{\"type\":\"object\",\"properties\":{"
                 "\"x\":{\"$ref\":\"#/components/schemas/Item\"}}},"
                 "\"Item\":{\"type\":\"object\",\"properties\":{"
                 "\"size\":{\"type\":\"integer\",\"default\":%lld}}}}",
                 round % 2 ? 2LL : 1LL);
        const char *docs[] = {doc};
        struct ck_schemas *set = NULL;
        assert_int_equal(ck_schemas_new(docs, 1, &set, NULL), 0);
        json_t *o = json_loads("{\"x\":{}}", 0, NULL);
        assert_int_equal(ck_schema_default(set, "Holder", o), 0);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "x"), "size")),
                         round % 2 ? 2LL : 1LL);
        json_decref(o);
        ck_schemas_free(set);
    }
}

/*
 * A node of the set resolves from what was found when the set was made; a node built
 * for one request (not the set's) is followed each time, so one built later at the
 * same address with another reference resolves to that one.
 */
static void test_nodes_of_the_set_and_built_ones_resolve(void **state)
{
    (void)state;
    const char *docs[] = {"{\"A\":{\"type\":\"object\"},\"B\":{\"type\":\"string\"},"
                          "\"Holder\":{\"type\":\"object\",\"properties\":{"
                          "\"a\":{\"allOf\":[{\"$ref\":\"#/components/schemas/A\"}]}}}}"};
    struct ck_schemas *set = NULL;
    assert_int_equal(ck_schemas_new(docs, 1, &set, NULL), 0);
    const json_t *holder = ck_schemas_get(set, "Holder");
    const json_t *a_prop = json_object_get(json_object_get(holder, "properties"), "a");
    assert_true(ck__schema_owns(set, holder));
    assert_true(ck__schema_owns(set, a_prop));
    assert_ptr_equal(ck__schema_resolve(set, a_prop), ck_schemas_get(set, "A"));
    assert_ptr_equal(ck__schema_resolve(set, holder), holder);
    for (int round = 0; round < 6; round++) {
        const char *name = round % 2 ? "B" : "A";
        json_t *built = json_pack("{s:s+}", "$ref", "#/components/schemas/", name);
        assert_false(ck__schema_owns(set, built));
        assert_ptr_equal(ck__schema_resolve(set, built), ck_schemas_get(set, name));
        json_decref(built);
    }
    ck_schemas_free(set);
}

/*
 * A field emitted with its zero value gets the defaults and always-emit fields
 * of its own schema at once, so defaulting is idempotent; a nullable one (a
 * metav1.Time) is emitted as null, as Go marshals a zero Time, so what the
 * server stores decodes again. (Both found by the request_body fuzz target: a
 * Node created without status got status {} and only on its next update
 * status.daemonEndpoints and status.nodeInfo; an Event created without
 * timestamps got "firstTimestamp":"", which no client can decode.)
 */
static void test_always_emitted_fields_decode_again_and_are_defaulted(void **state)
{
    (void)state;
    static const char doc[] =
        "{\"t.Time\":{\"type\":\"string\",\"format\":\"date-time\",\"nullable\":true},"
        "\"t.Outer\":{\"type\":\"object\",\"x-ckube-always-emit\":[\"inner\",\"when\"],"
        "\"properties\":{\"inner\":" REF("t.Inner") ",\"when\":" REF(
            "t.Time") "}},"
                      "\"t.Inner\":{\"type\":\"object\",\"x-ckube-always-emit\":[\"count\"],"
                      "\"properties\":{\"count\":{\"type\":\"integer\"},"
                      "\"mode\":{\"type\":\"string\",\"default\":\"A\"}}}}";
    const char *docs[] = {doc};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_schemas_new(docs, 1, &set, &err), 0);
    json_t *obj = json_object();
    ck_schema_default(set, "t.Outer", obj);
    json_t *inner = json_object_get(obj, "inner");
    assert_true(json_is_integer(json_object_get(inner, "count")));
    assert_string_equal(json_string_value(json_object_get(inner, "mode")), "A");
    assert_true(json_is_null(json_object_get(obj, "when")));
    char *text = json_dumps(obj, JSON_COMPACT);
    json_t *again = NULL;
    assert_int_equal(ck_schema_decode(set, "t.Outer", text, strlen(text),
                                      CK_FIELD_VALIDATION_STRICT, &again, NULL, &err),
                     0);
    ck_schema_default(set, "t.Outer", again);
    assert_true(json_equal(again, obj));
    json_decref(again);
    free(text);
    json_decref(obj);
    ck_schemas_free(set);
}

static void test_validation_reports_every_field_error(void **state)
{
    struct ck_warnings w = {0};
    json_t *obj = decode_ok(*state,
                            "{\"spec\":{\"replicas\":-1,\"policy\":\"Sometimes\","
                            "\"parts\":[{\"name\":\"a\"},{\"port\":1}]}}",
                            CK_FIELD_VALIDATION_STRICT, &w);
    struct ck_field_errors errs = {0};
    ck_schema_validate(*state, "test.Widget", obj, &errs);
    static const char *const want[] = {
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.policy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\"",
        "spec.parts[1].name: Required value",
    };
    assert_int_equal(errs.len, 3);
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        bool found = false;
        for (size_t j = 0; j < 3; j++)
            found = found || strcmp(s, want[j]) == 0;
        if (!found)
            fail_msg("unexpected error: %s", s);
        free(s);
    }
    ck_field_errors_release(&errs);
    json_decref(obj);

    obj = decode_ok(*state, "{}", CK_FIELD_VALIDATION_STRICT, &w);
    ck_schema_validate(*state, "test.Widget", obj, &errs);
    assert_int_equal(errs.len, 1);
    assert_string_equal(errs.items[0].field, "spec");
    ck_field_errors_release(&errs);
    json_decref(obj);
}

static void test_bad_schema_sets_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *doc, *want;
    } cases[] = {
        {"{\"a\":{\"properties\":{\"b\":{\"$ref\":\"#/components/schemas/missing\"}}}}",
         "unresolved $ref"},
        {"{\"a\":", "schema document 0"},
        {"[]", "not an object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *docs[] = {cases[i].doc};
        struct ck_schemas *set = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck_schemas_new(docs, 1, &set, &err), CK_EINVAL);
        assert_null(set);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("\"%s\" lacks \"%s\"", err.msg, cases[i].want);
    }
    const char *twice[] = {"{\"a\":{}}", "{\"a\":{}}"};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_schemas_new(twice, 2, &set, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "defined twice"));
}

static void test_field_validation_values(void **state)
{
    (void)state;
    enum ck_field_validation fv;
    assert_int_equal(ck_field_validation_parse("Strict", &fv), 0);
    assert_int_equal(fv, CK_FIELD_VALIDATION_STRICT);
    assert_int_equal(ck_field_validation_parse(NULL, &fv), 0);
    assert_int_equal(fv, CK_FIELD_VALIDATION_WARN);
    assert_int_equal(ck_field_validation_parse("Ignore", &fv), 0);
    assert_int_equal(fv, CK_FIELD_VALIDATION_IGNORE);
    assert_int_equal(ck_field_validation_parse("strict", &fv), CK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_valid_body_is_kept_and_times_normalised, use_set),
        cmocka_unit_test_setup(test_unknown_fields_under_strict_fail_naming_every_field, use_set),
        cmocka_unit_test_setup(test_unknown_fields_under_warn_are_dropped_with_warnings, use_set),
        cmocka_unit_test_setup(test_unknown_fields_under_ignore_vanish_silently, use_set),
        cmocka_unit_test_setup(test_duplicate_fields, use_set),
        cmocka_unit_test_setup(test_type_errors_use_go_wording, use_set),
        cmocka_unit_test_setup(test_nulls_decode_as_absent, use_set),
        cmocka_unit_test_setup(test_preserved_subtree_keeps_anything, use_set),
        cmocka_unit_test_setup(test_defaults_fill_absent_fields_recursively, use_set),
        cmocka_unit_test_setup(test_always_emitted_fields_decode_again_and_are_defaulted, use_set),
        cmocka_unit_test(test_defaults_behind_references_and_cycles),
        cmocka_unit_test_setup(test_validation_reports_every_field_error, use_set),
        cmocka_unit_test_setup(test_bad_schema_sets_are_refused, use_set),
        cmocka_unit_test_setup(test_field_validation_values, use_set),
        cmocka_unit_test(test_a_new_set_at_a_freed_ones_addresses_resolves_anew),
        cmocka_unit_test(test_nodes_of_the_set_and_built_ones_resolve),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
