/*
 * test_status.c - tests for lib/apiserver/status.c, the one builder of
 * Kubernetes Status objects: the failure form for every StatusReason (its
 * code on the wire), details and causes, 422 Invalid from field errors in
 * Kubernetes' wording, the Success forms of a delete and a binding, the
 * watch form without empty details, an error that never got a reason (500,
 * never code 0), the static out-of-memory body, and the builder failing
 * cleanly at every allocation.
 */
#include "cktest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/internal/util.h"

/* Renders err and parses the result (which must be JSON); caller decrefs. */
static json_t *render(const struct ck_err *err, bool omit_empty_details)
{
    size_t len = 0;
    char *text = ck__status_json(err, omit_empty_details, &len);
    assert_non_null(text);
    assert_int_equal(len, strlen(text));
    json_error_t jerr;
    json_t *status = json_loads(text, 0, &jerr);
    if (!status)
        fail_msg("not JSON: %s", text);
    free(text);
    return status;
}

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static void expect_failure_status(const json_t *s, long code, const char *reason,
                                  const char *message)
{
    assert_string_equal(str(s, "kind"), "Status");
    assert_string_equal(str(s, "apiVersion"), "v1");
    assert_true(json_is_object(json_object_get(s, "metadata")));
    assert_int_equal(json_object_size(json_object_get(s, "metadata")), 0);
    assert_string_equal(str(s, "status"), "Failure");
    assert_string_equal(str(s, "reason"), reason);
    assert_string_equal(str(s, "message"), message);
    assert_int_equal(json_integer_value(json_object_get(s, "code")), code);
}

static void test_every_reason_renders_its_code(void **state)
{
    (void)state;
    static const char *const reasons[] = {
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "MethodNotAllowed",
        "NotAcceptable",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Expired",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "Invalid",
        "TooManyRequests",
        "InternalError",
        "ServerTimeout",
        "StoreReadError",
        "Unknown",
        "ServiceUnavailable",
        "Timeout",
    };
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        struct ck_err err = {0};
        ck_err_status(&err, reasons[i], "it failed");
        json_t *s = render(&err, false);
        expect_failure_status(s, ck_err_reason_http(reasons[i]), reasons[i], "it failed");
        assert_true(json_is_object(json_object_get(s, "details")));
        json_decref(s);
        ck_err_release(&err);
    }
}

static void test_key_order_is_kubernetes(void **state)
{
    (void)state;
    struct ck_err err = {0};
    ck_err_not_found(&err, "apps", "deployments", "web");
    char *text = ck__status_json(&err, false, NULL);
    assert_string_equal(
        text, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
              "\"message\":\"deployments.apps \\\"web\\\" not found\",\"reason\":\"NotFound\","
              "\"details\":{\"name\":\"web\",\"group\":\"apps\",\"kind\":\"deployments\"},"
              "\"code\":404}");
    free(text);
    ck_err_release(&err);
}

static void test_core_group_is_left_out_of_details(void **state)
{
    (void)state;
    struct ck_err err = {0};
    ck_err_not_found(&err, "", "pods", "p");
    json_t *s = render(&err, false);
    json_t *details = json_object_get(s, "details");
    assert_string_equal(str(details, "name"), "p");
    assert_null(json_object_get(details, "group"));
    assert_string_equal(str(details, "kind"), "pods");
    json_decref(s);
    ck_err_release(&err);
}

static void test_error_without_reason_is_internal(void **state)
{
    (void)state;
    struct ck_err err = {0};
    ck_err_set(&err, CK_EIO, "the disk is gone"); /* a library error, no HTTP code */
    json_t *s = render(&err, false);
    expect_failure_status(s, 500, "InternalError", "the disk is gone");
    json_decref(s);
}

static void test_long_message_is_rendered_whole(void **state)
{
    (void)state;
    char big[2000];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct ck_err err = {0};
    ck_err_status(&err, "BadRequest", "%s", big);
    json_t *s = render(&err, false);
    assert_string_equal(str(s, "message"), big);
    json_decref(s);
    ck_err_release(&err);
}

static void test_invalid_has_one_cause_per_field_error(void **state)
{
    (void)state;
    const struct ck_kind *kind = ck_kind_lookup("apps", "v1", "deployments");
    assert_non_null(kind);
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.replicas", "-1", false,
                        "must be greater than or equal to 0");
    struct ck_err err = {0};
    assert_int_equal(ck__err_invalid_object(&err, kind, "web", &errs), CK_EINVAL);
    json_t *s = render(&err, false);
    expect_failure_status(s, 422, "Invalid",
                          "Deployment.apps \"web\" is invalid: [spec.selector: Required value, "
                          "spec.replicas: Invalid value: -1: must be greater than or equal to 0]");
    json_t *details = json_object_get(s, "details");
    assert_string_equal(str(details, "name"), "web");
    assert_string_equal(str(details, "group"), "apps");
    assert_string_equal(str(details, "kind"), "Deployment");
    json_t *causes = json_object_get(details, "causes");
    assert_int_equal(json_array_size(causes), 2);
    json_t *c0 = json_array_get(causes, 0), *c1 = json_array_get(causes, 1);
    assert_string_equal(str(c0, "reason"), "FieldValueRequired");
    assert_string_equal(str(c0, "message"), "Required value");
    assert_string_equal(str(c0, "field"), "spec.selector");
    assert_string_equal(str(c1, "reason"), "FieldValueInvalid");
    assert_string_equal(str(c1, "message"),
                        "Invalid value: -1: must be greater than or equal to 0");
    assert_string_equal(str(c1, "field"), "spec.replicas");
    json_decref(s);
    ck_err_release(&err);

    /* one error: no brackets */
    struct ck_field_errors one = {0};
    ck_field_errors_add(&one, CK_FIELD_FORBIDDEN, "sendInitialEvents", NULL, false, "no");
    ck__err_invalid(&err, "meta.k8s.io", "ListOptions", "", &one);
    s = render(&err, false);
    expect_failure_status(s, 422, "Invalid",
                          "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: "
                          "Forbidden: no");
    json_decref(s);
    ck_err_release(&err);
    ck_field_errors_release(&one);
    ck_field_errors_release(&errs);
}

static void test_success_of_a_delete_names_the_object(void **state)
{
    (void)state;
    struct ck_err ok = {0};
    ck_err_set_details(&ok, "apps", "deployments", "web");
    snprintf(ok.uid, sizeof(ok.uid), "%s", "1234-5678");
    char *text = ck__status_json(&ok, false, NULL);
    assert_string_equal(
        text, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\","
              "\"details\":{\"name\":\"web\",\"group\":\"apps\",\"kind\":\"deployments\","
              "\"uid\":\"1234-5678\"}}");
    free(text);
}

static void test_success_of_a_binding_has_its_code(void **state)
{
    (void)state;
    struct ck_err created = {.http_status = 201};
    char *text = ck__status_json(&created, true, NULL);
    assert_string_equal(text, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                              "\"status\":\"Success\",\"code\":201}");
    free(text);
}

static void test_watch_form_omits_empty_details(void **state)
{
    (void)state;
    struct ck_err err = {0};
    ck_err_status(&err, "Expired", "too old resource version: 5");
    char *text = ck__status_json(&err, true, NULL);
    assert_string_equal(
        text, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
              "\"message\":\"too old resource version: 5\",\"reason\":\"Expired\",\"code\":410}");
    free(text);
    /* details that say something stay */
    ck_err_not_found(&err, "", "pods", "p");
    json_t *s = render(&err, true);
    assert_string_equal(str(json_object_get(s, "details"), "name"), "p");
    json_decref(s);
    ck_err_release(&err);
}

static void test_no_memory_body_is_a_500_status(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *s = json_loads(ck__status_no_memory, 0, &jerr);
    assert_non_null(s);
    expect_failure_status(s, 500, "InternalError", "Internal error occurred: out of memory");
    json_decref(s);
    /* and it is what the builder says for that error */
    struct ck_err err = {0};
    ck_err_no_memory(&err);
    char *text = ck__status_json(&err, false, NULL);
    assert_string_equal(text, ck__status_no_memory);
    free(text);
}

static void test_builder_fails_cleanly_at_every_allocation(void **state)
{
    (void)state;
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.replicas", "-1", false, "too small");
    struct ck_err err = {0};
    ck__err_invalid(&err, "apps", "Deployment", "web", &errs);
    ck_field_errors_release(&errs);
    char *want = ck__status_json(&err, false, NULL);
    assert_non_null(want);
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, false);
        char *text = ck__status_json(&err, false, NULL);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (text) /* whole, or nothing */
            assert_string_equal(text, want);
        free(text);
        if (made < n)
            break;
    }
    free(want);
    ck_err_release(&err);
}

static void test_invalid_is_well_formed_at_every_allocation_failure(void **state)
{
    (void)state;
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_REQUIRED, "spec.selector", NULL, false, NULL);
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.replicas", "-1", false, "too small");
    for (unsigned long n = 1;; n++) {
        struct ck_err err = {0};
        ck__alloc_fail_at(n, false);
        int r = ck__err_invalid(&err, "apps", "Deployment", "web", &errs);
        unsigned long made = ck__alloc_fail_at(0, false);
        /* what could not be allocated is left out; the error stays a 422 */
        assert_int_equal(r, CK_EINVAL);
        assert_int_equal(err.http_status, 422);
        assert_string_equal(err.reason, "Invalid");
        assert_int_equal(strncmp(ck_err_message(&err), "Deployment.apps \"web\" is invalid: ", 34),
                         0);
        assert_true(err.n_causes <= 2);
        ck_err_release(&err);
        if (made < n)
            break;
    }
    ck_field_errors_release(&errs);
}

int main(void)
{
    /* jansson allocates through the hook, so the builder's own failures are tried */
    json_set_alloc_funcs(ck__malloc, free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_reason_renders_its_code),
        cmocka_unit_test(test_key_order_is_kubernetes),
        cmocka_unit_test(test_core_group_is_left_out_of_details),
        cmocka_unit_test(test_error_without_reason_is_internal),
        cmocka_unit_test(test_long_message_is_rendered_whole),
        cmocka_unit_test(test_invalid_has_one_cause_per_field_error),
        cmocka_unit_test(test_success_of_a_delete_names_the_object),
        cmocka_unit_test(test_success_of_a_binding_has_its_code),
        cmocka_unit_test(test_watch_form_omits_empty_details),
        cmocka_unit_test(test_no_memory_body_is_a_500_status),
        cmocka_unit_test(test_builder_fails_cleanly_at_every_allocation),
        cmocka_unit_test(test_invalid_is_well_formed_at_every_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
