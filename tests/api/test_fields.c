/*
 * test_fields.c - tests for lib/api/fields.c: field selector terms and
 * operators, escapes, empty terms, syntax errors, unsupported field labels
 * and matching through a getter.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/api.h"

/* Renders metadata.name, spec.nodeName and status.phase of a pod-like object. */
static const char *get_field(const char *field, const json_t *obj, const void *ctx, char *buf,
                             size_t size)
{
    (void)ctx;
    (void)buf;
    (void)size;
    if (strcmp(field, "metadata.name") == 0)
        return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    if (strcmp(field, "spec.nodeName") == 0)
        return json_string_value(json_object_get(json_object_get(obj, "spec"), "nodeName"));
    if (strcmp(field, "status.phase") == 0)
        return json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
    return NULL;
}

static void test_matching_table(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *pod = json_loads("{\"metadata\":{\"name\":\"a,b=c\"},\"spec\":{\"nodeName\":\"n1\"},"
                             "\"status\":{\"phase\":\"Running\"}}",
                             0, &jerr);
    assert_non_null(pod);
    static const struct {
        const char *selector;
        bool match;
    } cases[] = {
        {"", true},
        {",", true},
        {"spec.nodeName=n1", true},
        {"spec.nodeName==n1", true},
        {"spec.nodeName!=n1", false},
        {"spec.nodeName=n2", false},
        {"spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded", true},
        {"status.phase=Running,spec.nodeName=", false},
        {"metadata.name=a\\,b\\=c", true},
        {"spec.nodeName=n1,", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_field_selector *s = NULL;
        struct ck_err err = {0};
        if (ck_field_selector_parse(cases[i].selector, &s, &err) != 0)
            fail_msg("parse \"%s\": %s", cases[i].selector, err.msg);
        if (ck_field_selector_matches(s, pod, get_field, NULL) != cases[i].match)
            fail_msg("\"%s\": want %s", cases[i].selector, cases[i].match ? "match" : "no match");
        ck_field_selector_free(s);
    }
    json_decref(pod);
}

static void test_absent_field_compares_as_empty(void **state)
{
    (void)state;
    json_t *pod = json_object();
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_field_selector_parse("spec.nodeName=", &s, &err), 0);
    assert_true(ck_field_selector_matches(s, pod, get_field, NULL));
    ck_field_selector_free(s);
    json_decref(pod);
}

static void test_syntax_errors(void **state)
{
    (void)state;
    static const struct {
        const char *selector;
        const char *says;
    } cases[] = {
        {"nodeName", "can't understand 'nodeName'"},
        {"a=b\\x", "invalid escape sequence"},
        {"a=b=c", "unescaped character"},
        {"a=b\\", "invalid escape sequence"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_field_selector *s = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck_field_selector_parse(cases[i].selector, &s, &err), CK_EINVAL);
        assert_null(s);
        if (!strstr(err.msg, cases[i].says))
            fail_msg("\"%s\": \"%s\" lacks \"%s\"", cases[i].selector, err.msg, cases[i].says);
    }
}

static void test_unsupported_fields_are_named(void **state)
{
    (void)state;
    static const char *const supported[] = {"metadata.name", "metadata.namespace", NULL};
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_field_selector_parse("metadata.name=x,spec.foo=y", &s, &err), 0);
    assert_int_equal(ck_field_selector_check_fields(s, supported, &err), CK_EINVAL);
    assert_string_equal(err.msg, "field label not supported: spec.foo");
    ck_field_selector_free(s);

    assert_int_equal(ck_field_selector_parse("metadata.namespace!=x", &s, &err), 0);
    assert_int_equal(ck_field_selector_check_fields(s, supported, &err), 0);
    ck_field_selector_free(s);
}

static void test_exact_value_for_name_lookups(void **state)
{
    (void)state;
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_field_selector_parse("metadata.name=web-1,status.phase!=x", &s, &err), 0);
    assert_string_equal(ck_field_selector_exact(s, "metadata.name"), "web-1");
    assert_null(ck_field_selector_exact(s, "status.phase")); /* != is not exact */
    assert_null(ck_field_selector_exact(s, "spec.nodeName"));
    assert_false(ck_field_selector_is_empty(s));
    ck_field_selector_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matching_table),
        cmocka_unit_test(test_absent_field_compares_as_empty),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_unsupported_fields_are_named),
        cmocka_unit_test(test_exact_value_for_name_lookups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
