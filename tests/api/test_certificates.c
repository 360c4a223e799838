/*
 * test_certificates.c - tests for lib/api/certificates.c (reading x509
 * requests and certificates) and lib/api/kinds/certificatesigningrequest.c
 * (the CertificateSigningRequest strategy, validation and columns), on
 * requests GnuTLS makes for each test.
 */
#include "cktest.h"

#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#include "api/csr_fixtures.h"
#include "ckube/api.h"
#include "ckube/certificates.h"

#define CLIENT    CK_SIGNER_KUBE_APISERVER_CLIENT
#define NOW       1800000000LL
#define NODE_ORGS ((const char *const[]){"system:nodes", NULL})

static const struct ck_kind *csr_kind(void)
{
    const struct ck_kind *k =
        ck_kind_lookup("certificates.k8s.io", "v1", "certificatesigningrequests");
    assert_non_null(k);
    return k;
}

static json_t *good(void)
{
    char *pem = fixture_csr_pem("alice", (const char *const[]){"devs", NULL}, NULL);
    json_t *obj = fixture_csr_object("alice", pem, CLIENT, "[\"client auth\"]");
    free(pem);
    return obj;
}

/* The errors validate gives obj (against old), one string each, joined by newlines. */
static char *errors_of(json_t *obj, const json_t *old)
{
    struct ck_field_errors errs = {0};
    csr_kind()->validate(obj, old, &errs);
    size_t size = 1;
    char *all = calloc(1, size);
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        size += strlen(s) + 1;
        all = realloc(all, size);
        strcat(all, s);
        strcat(all, "\n");
        free(s);
    }
    ck_field_errors_release(&errs);
    return all;
}

static void expect_error(json_t *obj, const json_t *old, const char *want)
{
    char *all = errors_of(obj, old);
    if (!want && *all)
        fail_msg("unexpected errors: %s", all);
    if (want && !strstr(all, want))
        fail_msg("no error containing \"%s\" in: %s", want, all);
    free(all);
}

/* ---- certificates.c --------------------------------------------------------------- */

static void test_parse_reads_subject_and_names(void **state)
{
    (void)state;
    char *pem = fixture_csr_pem("system:node:n1", NODE_ORGS,
                                (const char *const[]){"n1.example.com", "n1", NULL});
    struct ck_csr *csr = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_csr_parse(pem, strlen(pem), &csr, &err), 0);
    assert_string_equal(csr->common_name, "system:node:n1");
    assert_int_equal(csr->n_organizations, 1);
    assert_string_equal(csr->organizations[0], "system:nodes");
    assert_int_equal(csr->n_dns, 2);
    assert_int_equal(csr->n_ip + csr->n_email + csr->n_uri, 0);
    assert_true(csr->der_len > 0);
    ck_csr_free(csr);
    free(pem);
}

static void test_parse_refuses_what_is_no_signed_request(void **state)
{
    (void)state;
    struct ck_csr *csr = NULL;
    struct ck_err err = {0};
    const char *cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert_int_equal(ck_csr_parse(cert, strlen(cert), &csr, &err), CK_EINVAL);
    assert_string_equal(err.msg, "PEM block type must be CERTIFICATE REQUEST");
    assert_int_equal(ck_csr_parse("hello", 5, &csr, &err), CK_EINVAL);
    assert_null(csr);

    /* the label certtool and GnuTLS write: Go's ParseCSR refuses it too */
    char *pem = fixture_csr_pem("alice", NULL, NULL);
    char *renamed = malloc(strlen(pem) + 16);
    const char *begin = strstr(pem, "CERTIFICATE REQUEST");
    sprintf(renamed, "%.*sNEW %s", (int)(begin - pem), pem, begin);
    assert_int_equal(ck_csr_parse(renamed, strlen(renamed), &csr, &err), CK_EINVAL);
    assert_string_equal(err.msg, "PEM block type must be CERTIFICATE REQUEST");
    free(renamed);

    /* a request whose signature does not hold: its last signature byte changed */
    gnutls_datum_t in = {(unsigned char *)pem, (unsigned)strlen(pem)}, der, out;
    assert_int_equal(gnutls_pem_base64_decode2("CERTIFICATE REQUEST", &in, &der), 0);
    der.data[der.size - 1] ^= 0x01;
    assert_int_equal(gnutls_pem_base64_encode2("CERTIFICATE REQUEST", &der, &out), 0);
    memset(&err, 0, sizeof(err));
    assert_int_equal(ck_csr_parse(out.data, out.size, &csr, &err), CK_EINVAL);
    assert_null(csr);
    gnutls_free(der.data);
    gnutls_free(out.data);
    free(pem);
}

static void test_kubelet_request_rules(void **state)
{
    (void)state;
    char *client = fixture_csr_pem("system:node:n1", NODE_ORGS, NULL);
    char *serving = fixture_csr_pem("system:node:n1", NODE_ORGS, (const char *const[]){"n1", NULL});
    char *other = fixture_csr_pem("system:node:n1", (const char *const[]){"devs", NULL}, NULL);
    char *not_node = fixture_csr_pem("alice", NODE_ORGS, NULL);
    struct ck_csr *c = NULL, *s = NULL, *o = NULL, *n = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_csr_parse(client, strlen(client), &c, &err), 0);
    assert_int_equal(ck_csr_parse(serving, strlen(serving), &s, &err), 0);
    assert_int_equal(ck_csr_parse(other, strlen(other), &o, &err), 0);
    assert_int_equal(ck_csr_parse(not_node, strlen(not_node), &n, &err), 0);
    json_t *client_usages = json_loads("[\"digital signature\", \"client auth\"]", 0, NULL);
    json_t *rsa_usages =
        json_loads("[\"key encipherment\", \"digital signature\", \"client auth\"]", 0, NULL);
    json_t *serving_usages = json_loads("[\"digital signature\", \"server auth\"]", 0, NULL);
    assert_int_equal(ck_csr_check_kubelet_client(c, client_usages, &err), 0);
    assert_int_equal(ck_csr_check_kubelet_client(c, rsa_usages, &err), 0);
    assert_int_equal(ck_csr_check_kubelet_client(c, serving_usages, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "usages did not match"));
    assert_int_equal(ck_csr_check_kubelet_client(s, client_usages, &err), CK_EINVAL);
    assert_string_equal(err.msg, "DNS subjectAltNames are not allowed");
    assert_int_equal(ck_csr_check_kubelet_client(o, client_usages, &err), CK_EINVAL);
    assert_string_equal(err.msg, "subject organization is not system:nodes");
    assert_int_equal(ck_csr_check_kubelet_client(n, client_usages, &err), CK_EINVAL);
    assert_string_equal(err.msg, "subject common name does not begin with system:node:");
    assert_int_equal(ck_csr_check_kubelet_serving(s, serving_usages, &err), 0);
    assert_int_equal(ck_csr_check_kubelet_serving(c, serving_usages, &err), CK_EINVAL);
    assert_string_equal(err.msg, "DNS or IP subjectAltName is required");
    json_decref(client_usages);
    json_decref(rsa_usages);
    json_decref(serving_usages);
    ck_csr_free(c);
    ck_csr_free(s);
    ck_csr_free(o);
    ck_csr_free(n);
    free(client);
    free(serving);
    free(other);
    free(not_node);
}

static void test_certificate_pem_check(void **state)
{
    (void)state;
    char *crt = NULL, *key = NULL;
    fixture_ca(&crt, &key);
    struct ck_err err = {0};
    assert_int_equal(ck_certificate_pem_check(crt, strlen(crt), &err), 0);
    assert_int_equal(ck_certificate_pem_check("", 0, &err), CK_EINVAL);
    assert_string_equal(err.msg, "must contain at least one CERTIFICATE PEM block");
    assert_int_equal(ck_certificate_pem_check(key, strlen(key), &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "only CERTIFICATE PEM blocks are allowed"));
    free(crt);
    free(key);
}

/* ---- the kind ------------------------------------------------------------------- */

static void test_good_request_validates(void **state)
{
    (void)state;
    json_t *obj = good();
    expect_error(obj, NULL, NULL);
    json_decref(obj);
}

static void test_validation_in_kubernetes_words(void **state)
{
    (void)state;
    static const struct {
        const char *path, *value_json, *want;
    } cases[] = {
        {"request", "\"aGVsbG8K\"",
         "spec.request: Invalid value: <request data>: PEM block type must be CERTIFICATE REQUEST"},
        {"usages", "[]", "spec.usages: Required value: usages must be provided"},
        {"usages", "[\"client auth\", \"bogus\"]", "spec.usages[1]: Unsupported value: \"bogus\""},
        {"usages", "[\"client auth\", \"client auth\"]",
         "spec.usages[1]: Duplicate value: \"client auth\""},
        {"signerName", "\"\"", "spec.signerName: Required value: signerName must be provided"},
        {"signerName", "\"example.com\"",
         "spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and "
         "path of the form 'example.com/signer-name'"},
        {"signerName", "\"a/b/c\"", "must be a fully qualified domain and path"},
        {"signerName", "\"example/signer\"",
         "spec.signerName: Invalid value: \"example\": should be a domain with at least two "
         "segments separated by dots"},
        {"signerName", "\"Example.com/signer\"",
         "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a "
         "lowercase RFC 1123 label"},
        {"signerName", "\"kubernetes.io/legacy-unknown\"",
         "the legacy signerName is not allowed via this API version"},
        {"expirationSeconds", "599",
         "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 "
         "seconds (10 minutes)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *obj = good();
        json_object_set_new(json_object_get(obj, "spec"), cases[i].path,
                            json_loads(cases[i].value_json, JSON_DECODE_ANY, NULL));
        expect_error(obj, NULL, cases[i].want);
        json_decref(obj);
    }
    json_t *obj = good();
    json_object_set_new(json_object_get(obj, "spec"), "expirationSeconds", json_integer(600));
    json_object_set_new(json_object_get(obj, "spec"), "signerName",
                        json_string("example.com/team.signer"));
    expect_error(obj, NULL, NULL);
    json_decref(obj);
}

static void test_condition_rules(void **state)
{
    (void)state;
    static const struct {
        const char *conditions, *want;
    } cases[] = {
        {"[{\"type\":\"Approved\",\"status\":\"False\"}]",
         "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""},
        {"[{\"type\":\"Approved\",\"status\":\"True\"},{\"type\":\"Denied\",\"status\":\"True\"}]",
         "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions "
         "are mutually exclusive"},
        {"[{\"type\":\"Failed\",\"status\":\"True\"},{\"type\":\"Failed\",\"status\":\"True\"}]",
         "status.conditions[1].type: Duplicate value: \"Failed\""},
        {"[{\"type\":\"\",\"status\":\"True\"}]", "status.conditions[0].type: Required value"},
        {"[{\"type\":\"Custom\",\"status\":\"Maybe\"}]",
         "status.conditions[0].status: Unsupported value: \"Maybe\""},
        {"[{\"type\":\"Custom\",\"status\":\"Unknown\"}]", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *obj = good();
        json_object_set_new(json_object_get(obj, "status"), "conditions",
                            json_loads(cases[i].conditions, 0, NULL));
        expect_error(obj, NULL, cases[i].want);
        json_decref(obj);
    }
}

static void test_updates_keep_conditions_and_certificate(void **state)
{
    (void)state;
    char *crt = NULL, *key = NULL;
    fixture_ca(&crt, &key);
    char *b64 = ck_base64_encode(crt, strlen(crt));
    json_t *old = good();
    json_object_set_new(json_object_get(old, "status"), "conditions",
                        json_loads("[{\"type\":\"Approved\",\"status\":\"True\"}]", 0, NULL));
    json_object_set_new(json_object_get(old, "status"), "certificate", json_string(b64));
    json_t *removed = json_deep_copy(old);
    json_object_set_new(json_object_get(removed, "status"), "conditions", json_array());
    expect_error(removed, old,
                 "status.conditions: Forbidden: updates may not remove a condition "
                 "of type \"Approved\"");
    json_t *changed = json_deep_copy(old);
    json_object_set_new(json_object_get(changed, "status"), "certificate", json_string("Zm9vCg=="));
    expect_error(changed, old,
                 "status.certificate: Forbidden: updates may not modify existing "
                 "certificate content");
    expect_error(changed, old,
                 "status.certificate: Invalid value: <certificate data>: must "
                 "contain at least one CERTIFICATE PEM block");
    json_t *same = json_deep_copy(old);
    expect_error(same, old, NULL);
    json_decref(same);
    json_decref(removed);
    json_decref(changed);
    json_decref(old);
    free(b64);
    free(crt);
    free(key);
}

static void test_create_takes_the_requesting_user(void **state)
{
    (void)state;
    const struct ck_kind *k = csr_kind();
    json_t *obj = good();
    json_t *spec = json_object_get(obj, "spec");
    json_object_set_new(spec, "username", json_string("mallory"));
    json_object_set_new(spec, "groups", json_loads("[\"system:masters\"]", 0, NULL));
    json_object_set_new(json_object_get(obj, "status"), "conditions",
                        json_loads("[{\"type\":\"Approved\",\"status\":\"True\"}]", 0, NULL));
    struct ck_err err = {0};
    assert_int_equal(ck_meta_prepare_create(k, obj, NULL, NOW, &err), 0);
    assert_null(json_object_get(spec, "username"));
    assert_null(json_object_get(spec, "groups"));
    assert_int_equal(json_object_size(json_object_get(obj, "status")), 0);
    json_t *user = json_loads("{\"username\":\"alice\",\"uid\":\"u1\",\"groups\":[\"devs\","
                              "\"system:authenticated\"],\"extra\":{\"scopes\":[\"a\"]}}",
                              0, NULL);
    assert_int_equal(k->prepare_for_create_by(obj, user), 0);
    assert_string_equal(json_string_value(json_object_get(spec, "username")), "alice");
    assert_string_equal(json_string_value(json_object_get(spec, "uid")), "u1");
    assert_int_equal(json_array_size(json_object_get(spec, "groups")), 2);
    assert_non_null(json_object_get(json_object_get(spec, "extra"), "scopes"));
    json_decref(user);
    json_decref(obj);
}

static void test_update_keeps_the_spec(void **state)
{
    (void)state;
    const struct ck_kind *k = csr_kind();
    json_t *old = good();
    json_t *obj = good();
    json_object_set_new(json_object_get(obj, "spec"), "signerName", json_string("example.com/x"));
    assert_int_equal(k->prepare_for_update(obj, old), 0);
    assert_true(json_equal(json_object_get(obj, "spec"), json_object_get(old, "spec")));
    json_decref(old);
    json_decref(obj);
}

static void test_status_keeps_approval_and_stamps(void **state)
{
    (void)state;
    const struct ck_subresource *status = ck_kind_subresource(csr_kind(), "status");
    assert_non_null(status);
    assert_non_null(status->prepare);
    json_t *old = good();
    json_object_set_new(json_object_get(old, "status"), "conditions",
                        json_loads("[{\"type\":\"Denied\",\"status\":\"True\",\"reason\":\"no\","
                                   "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]",
                                   0, NULL));
    json_t *next = json_deep_copy(old);
    json_object_set_new(json_object_get(next, "status"), "conditions",
                        json_loads("[{\"type\":\"Approved\",\"status\":\"True\"},"
                                   "{\"type\":\"Failed\",\"status\":\"True\"}]",
                                   0, NULL));
    assert_int_equal(status->prepare(next, old), 0);
    const json_t *conditions = json_object_get(json_object_get(next, "status"), "conditions");
    assert_int_equal(json_array_size(conditions), 2); /* Failed, then the old Denied */
    const json_t *failed = json_array_get(conditions, 0), *denied = json_array_get(conditions, 1);
    assert_string_equal(json_string_value(json_object_get(failed, "type")), "Failed");
    assert_non_null(json_object_get(failed, "lastUpdateTime"));
    assert_non_null(json_object_get(failed, "lastTransitionTime"));
    assert_string_equal(json_string_value(json_object_get(denied, "type")), "Denied");
    assert_string_equal(json_string_value(json_object_get(denied, "lastTransitionTime")),
                        "2026-01-01T00:00:00Z");
    json_decref(old);
    json_decref(next);
}

static void test_approval_changes_conditions_only(void **state)
{
    (void)state;
    const struct ck_subresource *approval = ck_kind_subresource(csr_kind(), "approval");
    assert_non_null(approval);
    assert_int_equal(approval->part, CK_SUBRESOURCE_CUSTOM);
    json_t *old = good();
    json_t *body = good();
    json_object_set_new(json_object_get(body, "spec"), "signerName", json_string("example.com/x"));
    json_object_set_new(json_object_get(body, "status"), "certificate", json_string("Zm9v"));
    json_object_set_new(json_object_get(body, "status"), "conditions",
                        json_loads("[{\"type\":\"Approved\",\"status\":\"True\"}]", 0, NULL));
    struct ck_field_errors errs = {0};
    struct ck_err err = {0};
    json_t *next = approval->update("alice", body, old, &errs, &err);
    assert_non_null(next);
    assert_true(json_equal(json_object_get(next, "spec"), json_object_get(old, "spec")));
    assert_null(json_object_get(json_object_get(next, "status"), "certificate"));
    const json_t *c =
        json_array_get(json_object_get(json_object_get(next, "status"), "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "Approved");
    assert_non_null(json_object_get(c, "lastUpdateTime"));
    json_decref(next);
    json_decref(body);
    json_decref(old);
}

static void test_columns(void **state)
{
    (void)state;
    static const struct {
        const char *conditions;
        bool issued;
        const char *want;
    } cases[] = {
        {"[]", false, "Pending"},
        {"[{\"type\":\"Approved\",\"status\":\"True\"}]", true, "Approved,Issued"},
        {"[{\"type\":\"Approved\",\"status\":\"True\"},{\"type\":\"Failed\",\"status\":\"True\"}]",
         false, "Approved,Failed"},
        {"[{\"type\":\"Denied\",\"status\":\"True\"}]", false, "Denied"},
    };
    const struct ck_kind *k = csr_kind();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *obj = good();
        json_object_set_new(json_object_get(obj, "status"), "conditions",
                            json_loads(cases[i].conditions, 0, NULL));
        if (cases[i].issued)
            json_object_set_new(json_object_get(obj, "status"), "certificate", json_string("eA=="));
        json_object_set_new(json_object_get(obj, "spec"), "expirationSeconds", json_integer(3600));
        json_object_set_new(json_object_get(obj, "spec"), "username", json_string("alice"));
        json_t *row = json_array();
        assert_int_equal(ck_table_row_cells(k, obj, NOW, row), 0);
        assert_int_equal(json_array_size(row), 6);
        assert_string_equal(json_string_value(json_array_get(row, 2)), CLIENT);
        assert_string_equal(json_string_value(json_array_get(row, 3)), "alice");
        assert_string_equal(json_string_value(json_array_get(row, 4)), "60m");
        assert_string_equal(json_string_value(json_array_get(row, 5)), cases[i].want);
        json_decref(row);
        json_decref(obj);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_reads_subject_and_names),
        cmocka_unit_test(test_parse_refuses_what_is_no_signed_request),
        cmocka_unit_test(test_kubelet_request_rules),
        cmocka_unit_test(test_certificate_pem_check),
        cmocka_unit_test(test_good_request_validates),
        cmocka_unit_test(test_validation_in_kubernetes_words),
        cmocka_unit_test(test_condition_rules),
        cmocka_unit_test(test_updates_keep_conditions_and_certificate),
        cmocka_unit_test(test_create_takes_the_requesting_user),
        cmocka_unit_test(test_update_keeps_the_spec),
        cmocka_unit_test(test_status_keeps_approval_and_stamps),
        cmocka_unit_test(test_approval_changes_conditions_only),
        cmocka_unit_test(test_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
