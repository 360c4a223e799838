/*
 * test_validation.c - tests for lib/api/validation.c and field_errors.c:
 * Kubernetes' name, qualified-name and label-value rules, their messages,
 * and how field errors render.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void test_dns1123_label(void **state)
{
    (void)state;
    static const char *const good[] = {"a", "web-1", "0abc", "a-b-c9"};
    static const char *const bad[] = {"", "-a", "a-", "A", "a.b", "a_b", "a b"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(ck_validate_dns1123_label(good[i], "metadata.name", NULL));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ck_field_errors errs = {0};
        if (ck_validate_dns1123_label(bad[i], "metadata.name", &errs))
            fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(errs.len, 1);
        assert_non_null(strstr(errs.items[0].detail, "a lowercase RFC 1123 label must consist"));
        ck_field_errors_release(&errs);
    }
    char *long_name = repeat('a', 64);
    struct ck_field_errors errs = {0};
    assert_false(ck_validate_dns1123_label(long_name, "metadata.name", &errs));
    assert_string_equal(errs.items[0].detail, "must be no more than 63 characters");
    ck_field_errors_release(&errs);
    free(long_name);
}

static void test_dns1123_subdomain(void **state)
{
    (void)state;
    assert_true(ck_validate_dns1123_subdomain("example.com", "f", NULL));
    assert_true(ck_validate_dns1123_subdomain("web-7d4b9c-x2k4q", "f", NULL));
    assert_false(ck_validate_dns1123_subdomain("a..b", "f", NULL));
    assert_false(ck_validate_dns1123_subdomain(".a", "f", NULL));
    assert_false(ck_validate_dns1123_subdomain("Web", "f", NULL));
    char *s = repeat('a', 253);
    assert_true(ck_validate_dns1123_subdomain(s, "f", NULL));
    free(s);
    s = repeat('a', 254);
    assert_false(ck_validate_dns1123_subdomain(s, "f", NULL));
    free(s);
}

static void test_qualified_names(void **state)
{
    (void)state;
    static const char *const good[] = {"app", "App_1.x", "example.com/role",
                                       "kubernetes.io/hostname", "a/b"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!ck_validate_qualified_name(good[i], "k", NULL))
            fail_msg("\"%s\" rejected", good[i]);
    static const struct {
        const char *name, *says;
    } bad[] = {
        {"", "name part must be non-empty"},
        {"/a", "prefix part must be non-empty"},
        {"a/", "name part must be non-empty"},
        {"a/b/c", "a qualified name must consist"},
        {"Example.com/a", "prefix part a lowercase RFC 1123 subdomain"},
        {"-a", "name part must consist of alphanumeric characters"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ck_field_errors errs = {0};
        if (ck_validate_qualified_name(bad[i].name, "k", &errs))
            fail_msg("\"%s\" accepted", bad[i].name);
        assert_true(errs.len >= 1);
        if (!strstr(errs.items[0].detail, bad[i].says))
            fail_msg("\"%s\": \"%s\" lacks \"%s\"", bad[i].name, errs.items[0].detail, bad[i].says);
        ck_field_errors_release(&errs);
    }
}

static void test_label_values(void **state)
{
    (void)state;
    assert_true(ck_validate_label_value("", "v", NULL));
    assert_true(ck_validate_label_value("web_1.x-y", "v", NULL));
    assert_false(ck_validate_label_value("-x", "v", NULL));
    assert_false(ck_validate_label_value("a b", "v", NULL));
    assert_false(ck_validate_label_value("a/b", "v", NULL));
}

static void test_error_strings_read_like_kubernetes(void **state)
{
    (void)state;
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.replicas", "-1", false,
                        "must be greater than or equal to 0");
    ck_field_errors_add(&errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "metadata.name", "Web\"1", true, "bad");
    ck_field_errors_add(&errs, CK_FIELD_FORBIDDEN, "metadata.finalizers", NULL, false,
                        "no new finalizers can be added if the object is being deleted");
    static const char *const want[] = {
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        "spec.selector: Required value",
        "metadata.name: Invalid value: \"Web\\\"1\": bad",
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted",
    };
    assert_int_equal(errs.len, 4);
    for (size_t i = 0; i < 4; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        assert_string_equal(s, want[i]);
        free(s);
    }
    assert_string_equal(ck_field_error_reason(errs.items[1].type), "FieldValueRequired");
    ck_field_errors_release(&errs);
    assert_int_equal(errs.len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns1123_label),
        cmocka_unit_test(test_dns1123_subdomain),
        cmocka_unit_test(test_qualified_names),
        cmocka_unit_test(test_label_values),
        cmocka_unit_test(test_error_strings_read_like_kubernetes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
