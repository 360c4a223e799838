/*
 * test_csr.c - the CertificateSigningRequest controllers' handlers on fakes
 * (lib/controllers/certificates/): the signer, the approver and the
 * cleaner's deadlines, with requests and a CA GnuTLS makes per test and the
 * writes recorded by the fake client. Cases after Kubernetes' signer_test.go,
 * sarapprove_test.go and cleaner_test.go: an approved request is issued a
 * certificate of the CA for its subject, usages and the shorter of the
 * signer's duration and expirationSeconds (never under ten minutes); one the
 * signer's rules refuse gets Failed; pending, denied, failed, issued and
 * foreign-signer requests are left alone; a kubelet client request is
 * approved through /approval when the review allows selfnodeclient or
 * nodeclient, and refused (to be retried) when it allows neither.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/csr_fixtures.h"
#include "ckube/certificates.h"
#include "ckube/csrcontrollers.h"

#define NOW 1800000000LL

struct fixture {
    struct ck_fake_client *fake;
    struct ck_csr_signer *signer;
    const struct ck_resource *csr_res;
    char *ca_crt, *ca_key;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct ck_err err = {0};
    assert_int_equal(ck_fake_client_new(&f->fake, &err), 0);
    fixture_ca(&f->ca_crt, &f->ca_key);
    struct ck_csr_signer_config config = {
        .ca_cert_pem = f->ca_crt, .ca_key_pem = f->ca_key, .duration = 7 * 24 * 3600, .now = NOW};
    ck_fake_client_iface(f->fake, &config.client);
    assert_int_equal(ck_csr_signer_new(&config, &f->signer, &err), 0);
    f->csr_res = ck_controller_resource("certificates.k8s.io", "v1", "certificatesigningrequests");
    assert_non_null(f->csr_res);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_csr_signer_free(f->signer);
    ck_fake_client_free(f->fake);
    free(f->ca_crt);
    free(f->ca_key);
    free(f);
    return 0;
}

/* A request for signer with usages, approved when approved, seeded on the fake server. */
static json_t *request(struct fixture *f, const char *cn, const char *const *orgs,
                       const char *signer, const char *usages, bool approved)
{
    char *pem = fixture_csr_pem(cn, orgs, NULL);
    json_t *csr = fixture_csr_object("r", pem, signer, usages);
    free(pem);
    if (approved)
        json_object_set_new(json_object_get(csr, "status"), "conditions",
                            json_loads("[{\"type\":\"Approved\",\"status\":\"True\"}]", 0, NULL));
    assert_int_equal(ck_fake_client_seed(f->fake, f->csr_res, csr), 0);
    return csr;
}

/* The status the signer wrote: the body of its one update-status. */
static const json_t *written_status(struct fixture *f)
{
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(f->fake, &n);
    assert_int_equal(n, 1);
    assert_string_equal(a[0].verb, "update-status");
    assert_string_equal(a[0].resource, "certificatesigningrequests");
    return json_object_get(a[0].body, "status");
}

/* The certificate of status (base64 of PEM), parsed. */
static gnutls_x509_crt_t issued(const json_t *status)
{
    const char *b64 = json_string_value(json_object_get(status, "certificate"));
    assert_non_null(b64);
    size_t len = 0;
    char *pem = ck_base64_decode(b64, &len);
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
    free(pem);
    return crt;
}

static void test_signs_an_approved_client_request(void **state)
{
    struct fixture *f = *state;
    json_t *csr =
        request(f, "alice", (const char *const[]){"devs", NULL}, CK_SIGNER_KUBE_APISERVER_CLIENT,
                "[\"client auth\", \"digital signature\"]", true);
    struct ck_err err = {0};
    assert_int_equal(ck_csr_signer_handle(f->signer, csr, &err), 0);
    gnutls_x509_crt_t crt = issued(written_status(f));

    /* signed by the CA */
    gnutls_x509_crt_t ca;
    gnutls_datum_t d = {(unsigned char *)f->ca_crt, (unsigned)strlen(f->ca_crt)};
    assert_int_equal(gnutls_x509_crt_init(&ca), 0);
    assert_int_equal(gnutls_x509_crt_import(ca, &d, GNUTLS_X509_FMT_PEM), 0);
    unsigned verify = 1;
    assert_int_equal(gnutls_x509_crt_verify(crt, &ca, 1,
                                            GNUTLS_VERIFY_DISABLE_TIME_CHECKS |
                                                GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS,
                                            &verify),
                     0); /* NOW is a fixed time in the future */
    assert_int_equal(verify, 0);
    gnutls_x509_crt_deinit(ca);

    /* the request's subject, a week from five minutes ago, no CA, client auth */
    char buf[256];
    size_t size = sizeof(buf);
    assert_int_equal(
        gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, buf, &size), 0);
    assert_string_equal(buf, "alice");
    size = sizeof(buf);
    assert_int_equal(
        gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, 0, buf, &size), 0);
    assert_string_equal(buf, "devs");
    assert_int_equal((long long)gnutls_x509_crt_get_activation_time(crt), NOW - 300);
    assert_int_equal((long long)gnutls_x509_crt_get_expiration_time(crt), NOW + 7 * 24 * 3600);
    unsigned critical = 0;
    assert_int_equal(gnutls_x509_crt_get_basic_constraints(crt, &critical, NULL, NULL), 0);
    size = sizeof(buf);
    assert_int_equal(gnutls_x509_crt_get_key_purpose_oid(crt, 0, buf, &size, NULL), 0);
    assert_string_equal(buf, GNUTLS_KP_TLS_WWW_CLIENT);
    unsigned usage = 0;
    assert_true(gnutls_x509_crt_get_key_usage(crt, &usage, NULL) >= 0);
    assert_true(usage & GNUTLS_KEY_DIGITAL_SIGNATURE);
    gnutls_x509_crt_deinit(crt);
    json_decref(csr);
}

static void test_duration_follows_expiration_seconds(void **state)
{
    struct fixture *f = *state;
    static const struct {
        long long asked, want;
    } cases[] = {
        {3600, 3600},                      /* shorter than the signer's week */
        {30LL * 24 * 3600, 7 * 24 * 3600}, /* longer: the signer's */
        {0, 7 * 24 * 3600},                /* not asked */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_fake_client_clear_actions(f->fake);
        json_t *csr =
            request(f, "alice", NULL, CK_SIGNER_KUBE_APISERVER_CLIENT, "[\"client auth\"]", true);
        if (cases[i].asked)
            json_object_set_new(json_object_get(csr, "spec"), "expirationSeconds",
                                json_integer(cases[i].asked));
        struct ck_err err = {0};
        assert_int_equal(ck_csr_signer_handle(f->signer, csr, &err), 0);
        gnutls_x509_crt_t crt = issued(written_status(f));
        assert_int_equal((long long)gnutls_x509_crt_get_expiration_time(crt), NOW + cases[i].want);
        gnutls_x509_crt_deinit(crt);
        json_decref(csr);
    }
}

static void test_refused_requests_get_failed(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *cn, *signer, *usages, *why;
        bool node;
    } cases[] = {
        {"alice", CK_SIGNER_KUBE_APISERVER_CLIENT, "[\"server auth\"]",
         "invalid usage for client certificate: server auth", false},
        {"alice", CK_SIGNER_KUBE_APISERVER_CLIENT, "[\"digital signature\"]",
         "missing required usage for client certificate: client auth", false},
        {"alice", CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET, "[\"client auth\"]",
         "subject organization is not system:nodes", false},
        {"system:node:n1", CK_SIGNER_KUBELET_SERVING, "[\"digital signature\", \"server auth\"]",
         "DNS or IP subjectAltName is required", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_fake_client_clear_actions(f->fake);
        json_t *csr = request(f, cases[i].cn,
                              cases[i].node ? (const char *const[]){"system:nodes", NULL} : NULL,
                              cases[i].signer, cases[i].usages, true);
        struct ck_err err = {0};
        assert_int_equal(ck_csr_signer_handle(f->signer, csr, &err), 0);
        const json_t *status = written_status(f);
        assert_null(json_object_get(status, "certificate"));
        const json_t *failed = json_array_get(json_object_get(status, "conditions"), 1);
        assert_string_equal(json_string_value(json_object_get(failed, "type")), "Failed");
        assert_string_equal(json_string_value(json_object_get(failed, "reason")),
                            "SignerValidationFailure");
        assert_string_equal(json_string_value(json_object_get(failed, "message")), cases[i].why);
        json_decref(csr);
    }
}

static void test_leaves_what_is_not_to_sign(void **state)
{
    struct fixture *f = *state;
    static const char *const conditions[] = {
        "[]",
        "[{\"type\":\"Denied\",\"status\":\"True\"}]",
        "[{\"type\":\"Approved\",\"status\":\"True\"},{\"type\":\"Failed\",\"status\":\"True\"}]",
        "[{\"type\":\"Approved\",\"status\":\"True\"}]", /* with a certificate */
        "[{\"type\":\"Approved\",\"status\":\"True\"}]", /* another signer */
        "[{\"type\":\"Approved\",\"status\":\"True\"}]", /* legacy-unknown, never signed */
    };
    for (size_t i = 0; i < sizeof(conditions) / sizeof(conditions[0]); i++) {
        json_t *csr =
            request(f, "alice", NULL, CK_SIGNER_KUBE_APISERVER_CLIENT, "[\"client auth\"]", false);
        json_t *status = json_object_get(csr, "status");
        json_object_set_new(status, "conditions", json_loads(conditions[i], 0, NULL));
        if (i == 3)
            json_object_set_new(status, "certificate", json_string("eA=="));
        if (i == 4)
            json_object_set_new(json_object_get(csr, "spec"), "signerName",
                                json_string("example.com/other"));
        if (i == 5)
            json_object_set_new(json_object_get(csr, "spec"), "signerName",
                                json_string(CK_SIGNER_LEGACY_UNKNOWN));
        struct ck_err err = {0};
        assert_int_equal(ck_csr_signer_handle(f->signer, csr, &err), 0);
        json_decref(csr);
    }
    size_t n = 0;
    ck_fake_client_actions(f->fake, &n);
    assert_int_equal(n, 0);
}

static void test_a_bad_ca_is_refused(void **state)
{
    struct fixture *f = *state;
    struct ck_csr_signer *s = NULL;
    struct ck_err err = {0};
    struct ck_csr_signer_config config = {.ca_cert_pem = f->ca_crt, .ca_key_pem = "nope"};
    ck_fake_client_iface(f->fake, &config.client);
    assert_int_equal(ck_csr_signer_new(&config, &s, &err), CK_EINVAL);
    assert_string_equal(err.msg, "csrsigning: the CA key does not load");
    assert_null(s);
}

/* ---- the approver ------------------------------------------------------------------ */

struct review {
    const char *allow; /* the subresource the review allows, or NULL */
    int calls;
    char asked[2][32];
    char user[64];
};

static int fake_review(void *arg, const json_t *sar, bool *ret_allowed, struct ck_err *reterr)
{
    (void)reterr;
    struct review *r = arg;
    const json_t *spec = json_object_get(sar, "spec");
    const json_t *attrs = json_object_get(spec, "resourceAttributes");
    const char *sub = json_string_value(json_object_get(attrs, "subresource"));
    assert_string_equal(json_string_value(json_object_get(attrs, "verb")), "create");
    assert_string_equal(json_string_value(json_object_get(attrs, "resource")),
                        "certificatesigningrequests");
    const char *user = json_string_value(json_object_get(spec, "user"));
    snprintf(r->user, sizeof(r->user), "%s", user ? user : "");
    if (r->calls < 2)
        snprintf(r->asked[r->calls], sizeof(r->asked[0]), "%s", sub);
    r->calls++;
    *ret_allowed = r->allow && strcmp(r->allow, sub) == 0;
    return 0;
}

static void test_approver(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *cn, *username, *allow;
        int calls, result;
        bool approved;
    } cases[] = {
        /* a renewal: selfnodeclient first */
        {"system:node:n1", "system:node:n1", "selfnodeclient", 1, 0, true},
        /* a bootstrap: only nodeclient is asked */
        {"system:node:n1", "system:bootstrap:abc", "nodeclient", 1, 0, true},
        /* a renewal the review refuses as self but allows as nodeclient */
        {"system:node:n1", "system:node:n1", "nodeclient", 2, 0, true},
        /* neither: refused, to be retried */
        {"system:node:n1", "system:bootstrap:abc", NULL, 1, CK_EPERM, false},
        /* not a node's request: no review at all */
        {"alice", "alice", "nodeclient", 0, 0, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_fake_client_clear_actions(f->fake);
        bool node = strncmp(cases[i].cn, "system:node:", 12) == 0;
        json_t *csr = request(f, cases[i].cn,
                              node ? (const char *const[]){"system:nodes", NULL}
                                   : (const char *const[]){"devs", NULL},
                              CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET,
                              "[\"digital signature\", \"client auth\"]", false);
        json_object_set_new(json_object_get(csr, "spec"), "username",
                            json_string(cases[i].username));
        struct review r = {.allow = cases[i].allow};
        struct ck_csr_approver_config config = {.review = fake_review, .review_arg = &r};
        ck_fake_client_iface(f->fake, &config.client);
        struct ck_csr_approver *a = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck_csr_approver_new(&config, &a, &err), 0);
        assert_int_equal(ck_csr_approver_handle(a, csr, &err), cases[i].result);
        assert_int_equal(r.calls, cases[i].calls);
        if (r.calls)
            assert_string_equal(r.user, cases[i].username);
        size_t n = 0;
        const struct ck_fake_action *act = ck_fake_client_actions(f->fake, &n);
        assert_int_equal(n, cases[i].approved ? 1 : 0);
        if (cases[i].approved) {
            assert_string_equal(act[0].verb, "patch");
            const json_t *c = json_array_get(
                json_object_get(json_object_get(act[0].body, "status"), "conditions"), 0);
            assert_string_equal(json_string_value(json_object_get(c, "type")), "Approved");
            assert_string_equal(json_string_value(json_object_get(c, "reason")), "AutoApproved");
            assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(act[0].body, "metadata"), "resourceVersion")),
                                "7");
        }
        ck_csr_approver_free(a);
        json_decref(csr);
    }
}

/* ---- the cleaner -------------------------------------------------------------------- */

static void test_cleaner_deadlines(void **state)
{
    (void)state;
    static const struct {
        const char *created, *conditions;
        long long now;
        bool due;
    } cases[] = {
        /* pending: a day after creation */
        {"2027-01-01T00:00:00Z", "[]", 1798761600LL + 23 * 3600, false},
        {"2027-01-01T00:00:00Z", "[]", 1798761600LL + 25 * 3600, true},
        /* denied or failed: an hour after the condition's last update */
        {"2027-01-01T00:00:00Z",
         "[{\"type\":\"Denied\",\"status\":\"True\",\"lastUpdateTime\":\"2027-01-01T00:00:00Z\"}]",
         1798761600LL + 1800, false},
        {"2027-01-01T00:00:00Z",
         "[{\"type\":\"Denied\",\"status\":\"True\",\"lastUpdateTime\":\"2027-01-01T00:00:00Z\"}]",
         1798761600LL + 3700, true},
        {"2027-01-01T00:00:00Z",
         "[{\"type\":\"Approved\",\"status\":\"True\",\"lastUpdateTime\":\"2027-01-01T00:00:00Z\"},"
         "{\"type\":\"Failed\",\"status\":\"True\",\"lastUpdateTime\":\"2027-01-01T00:00:00Z\"}]",
         1798761600LL + 3700, true},
        /* approved but not issued: left to the signer */
        {"2027-01-01T00:00:00Z",
         "[{\"type\":\"Approved\",\"status\":\"True\",\"lastUpdateTime\":\"2027-01-01T00:00:00Z\"}]",
         1798761600LL + 30 * 24 * 3600, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *csr = json_pack("{s:{s:s, s:s}, s:{s:o}}", "metadata", "name", "r",
                                "creationTimestamp", cases[i].created, "status", "conditions",
                                json_loads(cases[i].conditions, 0, NULL));
        assert_int_equal(ck_csr_cleaner_due(csr, cases[i].now), cases[i].due);
        json_decref(csr);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_signs_an_approved_client_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duration_follows_expiration_seconds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_requests_get_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leaves_what_is_not_to_sign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_bad_ca_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_approver, setup, teardown),
        cmocka_unit_test(test_cleaner_deadlines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
