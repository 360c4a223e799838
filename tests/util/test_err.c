/*
 * test_err.c - tests for lib/util/err.c: ck_err_set() on an uninitialised
 * error, the StatusReason table (HTTP code and CK_E* code of each reason),
 * the API setters' wording and details, messages longer than the inline
 * buffer, causes, release, and that every setter still fills a well-formed
 * error when allocation fails.
 */
#include "cktest.h"

#include <stdio.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

static void test_set_fills_an_uninitialised_error(void **state)
{
    (void)state;
    struct ck_err err;
    memset(&err, 0xa5, sizeof(err)); /* garbage, as on a fresh stack */
    assert_int_equal(ck_err_set(&err, CK_EIO, "disk %s", "gone"), CK_EIO);
    assert_int_equal(err.code, CK_EIO);
    assert_string_equal(err.msg, "disk gone");
    assert_int_equal(err.http_status, 0);
    assert_null(err.reason);
    assert_null(err.long_msg);
    assert_null(err.causes);
    assert_int_equal(err.n_causes, 0);
    assert_string_equal(err.name, "");
    assert_null(err.group);
    assert_null(err.kind);
    assert_string_equal(ck_err_message(&err), "disk gone");
    assert_int_equal(ck_err_set(NULL, CK_EINVAL, "ignored"), CK_EINVAL);
}

static void test_every_reason_has_its_code(void **state)
{
    (void)state;
    static const struct {
        const char *reason;
        int http, code;
    } cases[] = {
        {"BadRequest", 400, CK_EINVAL},
        {"Unauthorized", 401, CK_EPERM},
        {"Forbidden", 403, CK_EPERM},
        {"NotFound", 404, CK_ENOENT},
        {"MethodNotAllowed", 405, CK_EINVAL},
        {"NotAcceptable", 406, CK_EINVAL},
        {"AlreadyExists", 409, CK_EEXIST},
        {"Conflict", 409, CK_ECONFLICT},
        {"Gone", 410, CK_ECOMPACTED},
        {"Expired", 410, CK_ECOMPACTED},
        {"RequestEntityTooLarge", 413, CK_EINVAL},
        {"UnsupportedMediaType", 415, CK_EINVAL},
        {"Invalid", 422, CK_EINVAL},
        {"TooManyRequests", 429, CK_EIO},
        {"InternalError", 500, CK_EIO},
        {"ServerTimeout", 500, CK_EIO},
        {"StoreReadError", 500, CK_EIO},
        {"Unknown", 500, CK_EIO},
        {"ServiceUnavailable", 503, CK_EIO},
        {"Timeout", 504, CK_EIO},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(ck_err_reason_http(cases[i].reason), cases[i].http);
        assert_int_equal(ck_err_reason_code(cases[i].reason), cases[i].code);
        struct ck_err err = {0};
        assert_int_equal(ck_err_status(&err, cases[i].reason, "m"), cases[i].code);
        assert_int_equal(err.http_status, cases[i].http);
        assert_string_equal(err.reason, cases[i].reason);
        assert_string_equal(err.msg, "m");
        ck_err_release(&err);
    }
    /* what is not a reason answers as an internal error */
    assert_int_equal(ck_err_reason_http("NoSuchReason"), 500);
    assert_int_equal(ck_err_reason_code(NULL), CK_EIO);
}

static void test_reason_is_the_static_string(void **state)
{
    (void)state;
    char reason[] = "NotFound"; /* a caller's buffer: the error must not keep it */
    struct ck_err err = {0};
    ck_err_status(&err, reason, "x");
    assert_ptr_not_equal(err.reason, reason);
    reason[0] = 'X';
    assert_string_equal(err.reason, "NotFound");
    ck_err_release(&err);
}

static void test_object_errors_word_and_detail(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_int_equal(ck_err_not_found(&err, "", "pods", "web-1"), CK_ENOENT);
    assert_string_equal(err.msg, "pods \"web-1\" not found");
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.name, "web-1");
    assert_string_equal(err.group, "");
    assert_string_equal(err.kind, "pods");

    assert_int_equal(ck_err_already_exists(&err, "apps", "deployments", "web"), CK_EEXIST);
    assert_string_equal(err.msg, "deployments.apps \"web\" already exists");
    assert_string_equal(err.reason, "AlreadyExists");
    assert_int_equal(err.http_status, 409);
    assert_string_equal(err.group, "apps");

    assert_int_equal(ck_err_conflict(&err, "apps", "replicasets", "rs", "the object changed"),
                     CK_ECONFLICT);
    assert_string_equal(
        err.msg, "Operation cannot be fulfilled on replicasets.apps \"rs\": the object changed");
    assert_string_equal(err.reason, "Conflict");
    assert_string_equal(err.kind, "replicasets");

    assert_int_equal(ck_err_internal(&err, "disk %d", 3), CK_EIO);
    assert_string_equal(err.msg, "Internal error occurred: disk 3");
    assert_int_equal(err.http_status, 500);
    assert_string_equal(err.name, ""); /* a new error has no details */
    assert_null(err.group);

    assert_int_equal(ck_err_no_memory(&err), CK_ENOMEM);
    assert_int_equal(err.code, CK_ENOMEM);
    assert_string_equal(err.msg, "Internal error occurred: out of memory");
    assert_string_equal(err.reason, "InternalError");
    ck_err_release(&err);
}

static void test_long_message_is_kept_whole(void **state)
{
    (void)state;
    char big[1000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct ck_err err = {0};
    ck_err_status(&err, "Invalid", "bad: %s", big);
    assert_non_null(err.long_msg);
    assert_int_equal(strlen(ck_err_message(&err)), 5 + strlen(big));
    assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1); /* cut to fit */
    assert_memory_equal(err.msg, ck_err_message(&err), sizeof(err.msg) - 1);
    ck_err_release(&err);
    assert_null(err.long_msg);
    assert_int_equal(err.code, 0);
    assert_string_equal(ck_err_message(&err), "");

    /* without memory, the message is cut to msg and the error is still whole */
    ck__alloc_fail_at(1, true);
    ck_err_internal(&err, "%s", big);
    ck__alloc_fail_at(0, false);
    assert_null(err.long_msg);
    assert_int_equal(err.http_status, 500);
    assert_int_equal(strncmp(err.msg, "Internal error occurred: xxx", 28), 0);
    ck_err_release(&err);

    /* ck_err_set_long: the same without a status; a short one has no long_msg */
    assert_int_equal(ck_err_set_long(&err, CK_EINVAL, big), CK_EINVAL);
    assert_string_equal(ck_err_message(&err), big);
    assert_int_equal(err.http_status, 0);
    ck_err_release(&err);
    assert_int_equal(ck_err_set_long(&err, CK_EINVAL, "short"), CK_EINVAL);
    assert_null(err.long_msg);
    assert_string_equal(ck_err_message(&err), "short");
}

static void test_causes_are_copied_and_released(void **state)
{
    (void)state;
    struct ck_err err = {0};
    ck_err_status(&err, "Invalid", "bad");
    char field[] = "spec.replicas";
    assert_int_equal(ck_err_add_cause(&err, "FieldValueInvalid", "must be >= 0", field), 0);
    assert_int_equal(ck_err_add_cause(&err, "FieldValueRequired", NULL, NULL), 0);
    field[0] = 'X';
    assert_int_equal(err.n_causes, 2);
    assert_string_equal(err.causes[0].type, "FieldValueInvalid");
    assert_string_equal(err.causes[0].message, "must be >= 0");
    assert_string_equal(err.causes[0].field, "spec.replicas");
    assert_string_equal(err.causes[1].message, "");
    assert_string_equal(err.causes[1].field, "");

    /* a cause that cannot be allocated is left out; the others stay */
    for (unsigned long n = 1; n <= 3; n++) {
        ck__alloc_fail_at(n, false);
        int r = ck_err_add_cause(&err, "FieldValueInvalid", "m", "f");
        ck__alloc_fail_at(0, false);
        assert_int_equal(r, CK_ENOMEM);
        assert_int_equal(err.n_causes, 2);
    }

    /* a new error drops the old one's causes (ASan checks they are freed) */
    ck_err_not_found(&err, "", "pods", "p");
    assert_int_equal(err.n_causes, 0);
    assert_null(err.causes);
    ck_err_release(&err);
    ck_err_release(NULL);
    assert_int_equal(ck_err_add_cause(NULL, "t", "m", "f"), 0);
}

static void test_details_name_is_cut_to_fit(void **state)
{
    (void)state;
    char name[400];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    struct ck_err err = {0};
    ck_err_set_details(&err, "apps", "deployments", name);
    assert_int_equal(strlen(err.name), sizeof(err.name) - 1);
    ck_err_set_details(&err, NULL, NULL, NULL);
    assert_string_equal(err.name, "");
    ck_err_set_details(NULL, "g", "k", "n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_fills_an_uninitialised_error),
        cmocka_unit_test(test_every_reason_has_its_code),
        cmocka_unit_test(test_reason_is_the_static_string),
        cmocka_unit_test(test_object_errors_word_and_detail),
        cmocka_unit_test(test_long_message_is_kept_whole),
        cmocka_unit_test(test_causes_are_copied_and_released),
        cmocka_unit_test(test_details_name_is_cut_to_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
