/*
 * test_certificates_admission.c - tests for lib/apiserver/admission/certificates.c:
 * CertificateApproval, CertificateSigning and CertificateSubjectRestriction called as
 * the chain calls them, with an RBAC policy compiled from ClusterRoles and bindings
 * (a signer by name, a domain's wildcard, neither) and requests GnuTLS makes.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"
#include "api/csr_fixtures.h"
#include "ckube/auth.h"
#include "ckube/certificates.h"

struct fixture {
    struct ck__registry reg;
    struct ck_auth_user *approver, *signer, *nobody;
    const struct ck_kind *kind;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    json_t *roles =
        json_loads("[{\"metadata\":{\"name\":\"approve-client\"},\"rules\":[{\"apiGroups\":"
                   "[\"certificates.k8s.io\"],\"resources\":[\"signers\"],\"verbs\":[\"approve\"],"
                   "\"resourceNames\":[\"kubernetes.io/kube-apiserver-client\"]}]},"
                   "{\"metadata\":{\"name\":\"sign-example\"},\"rules\":[{\"apiGroups\":"
                   "[\"certificates.k8s.io\"],\"resources\":[\"signers\"],\"verbs\":[\"sign\"],"
                   "\"resourceNames\":[\"example.com/*\"]}]}]",
                   0, NULL);
    json_t *bindings = json_loads(
        "[{\"metadata\":{\"name\":\"a\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
        "\"kind\":\"ClusterRole\",\"name\":\"approve-client\"},\"subjects\":[{\"kind\":\"User\","
        "\"name\":\"approver\"}]},"
        "{\"metadata\":{\"name\":\"s\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
        "\"kind\":\"ClusterRole\",\"name\":\"sign-example\"},\"subjects\":[{\"kind\":\"User\","
        "\"name\":\"signer\"}]}]",
        0, NULL);
    struct ck_rbac_policy *policy = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_rbac_policy_new(NULL, roles, NULL, bindings, &policy, &err), 0);
    json_decref(roles);
    json_decref(bindings);
    f->reg.authorizer = ck_rbac_authorizer_new(policy);
    f->approver = ck_auth_user_new("approver", NULL);
    f->signer = ck_auth_user_new("signer", NULL);
    f->nobody = ck_auth_user_new("nobody", NULL);
    f->kind = ck_kind_lookup("certificates.k8s.io", "v1", "certificatesigningrequests");
    assert_non_null(f->kind);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_rbac_authorizer_free(f->reg.authorizer);
    ck_auth_user_free(f->approver);
    ck_auth_user_free(f->signer);
    ck_auth_user_free(f->nobody);
    free(f);
    return 0;
}

static json_t *request(const char *signer, const char *const *orgs)
{
    char *pem = fixture_csr_pem("someone", orgs, NULL);
    json_t *obj = fixture_csr_object("r", pem, signer, "[\"client auth\"]");
    free(pem);
    return obj;
}

/* Runs plugin's validating step on a write of subresource by user; the error message, or "". */
static int run(struct fixture *f, const struct ck__admission_plugin *plugin,
               enum ck__admission_op op, const char *subresource, json_t *obj, const json_t *old,
               const struct ck_auth_user *user, struct ck_err *err)
{
    struct ck__admission_attrs a = {.op = op,
                                    .kind = f->kind,
                                    .subresource = subresource,
                                    .namespace = "",
                                    .name = "r",
                                    .obj = obj,
                                    .old = old,
                                    .user = user};
    memset(err, 0, sizeof(*err));
    return plugin->validate(&f->reg, &a, err);
}

static void test_approval_needs_approve_on_the_signer(void **state)
{
    struct fixture *f = *state;
    const struct ck__admission_plugin *p = &ck__admission_certificate_approval;
    json_t *client = request(CK_SIGNER_KUBE_APISERVER_CLIENT, NULL);
    json_t *kubelet = request(CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET, NULL);
    struct ck_err err;
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "approval", client, client, f->approver, &err),
                     0);
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "approval", client, client, f->nobody, &err),
                     CK_EPERM);
    assert_int_equal(err.http_status, 403);
    assert_non_null(strstr(err.msg, "certificatesigningrequests.certificates.k8s.io \"r\" is "
                                    "forbidden: user not permitted to approve requests with "
                                    "signerName \"kubernetes.io/kube-apiserver-client\""));
    /* a signer by name is that signer only */
    assert_int_equal(
        run(f, p, CK__ADMISSION_UPDATE, "approval", kubelet, kubelet, f->approver, &err), CK_EPERM);
    /* the object itself and its status are not approvals; the server's own writes pass */
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, NULL, client, client, f->nobody, &err), 0);
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "status", client, client, f->nobody, &err), 0);
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "approval", client, client, NULL, &err), 0);
    json_decref(client);
    json_decref(kubelet);
}

static void test_signing_needs_sign_when_the_certificate_changes(void **state)
{
    struct fixture *f = *state;
    const struct ck__admission_plugin *p = &ck__admission_certificate_signing;
    json_t *old = request("example.com/team", NULL);
    json_t *signed_ = json_deep_copy(old);
    json_object_set_new(json_object_get(signed_, "status"), "certificate", json_string("eA=="));
    json_t *conditions = json_deep_copy(old);
    json_object_set_new(json_object_get(conditions, "status"), "conditions",
                        json_loads("[{\"type\":\"Failed\",\"status\":\"True\"}]", 0, NULL));
    struct ck_err err;
    /* the domain's wildcard grants every signer of it */
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "status", signed_, old, f->signer, &err), 0);
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "status", signed_, old, f->approver, &err),
                     CK_EPERM);
    assert_non_null(strstr(
        err.msg, "user not permitted to sign requests with signerName \"example.com/team\""));
    /* a status write that leaves the certificate alone needs nothing */
    assert_int_equal(run(f, p, CK__ADMISSION_UPDATE, "status", conditions, old, f->nobody, &err),
                     0);
    json_decref(old);
    json_decref(signed_);
    json_decref(conditions);
}

static void test_subject_restriction(void **state)
{
    struct fixture *f = *state;
    const struct ck__admission_plugin *p = &ck__admission_certificate_subject_restriction;
    json_t *masters = request(CK_SIGNER_KUBE_APISERVER_CLIENT,
                              (const char *const[]){"devs", "system:masters", NULL});
    json_t *devs = request(CK_SIGNER_KUBE_APISERVER_CLIENT, (const char *const[]){"devs", NULL});
    json_t *other = request("example.com/team", (const char *const[]){"system:masters", NULL});
    struct ck_err err;
    assert_int_equal(run(f, p, CK__ADMISSION_CREATE, NULL, masters, NULL, f->approver, &err),
                     CK_EPERM);
    assert_non_null(strstr(err.msg, "use of kubernetes.io/kube-apiserver-client signer with "
                                    "system:masters group is not allowed"));
    /* even the server's own and a cluster admin's creates */
    assert_int_equal(run(f, p, CK__ADMISSION_CREATE, NULL, masters, NULL, NULL, &err), CK_EPERM);
    assert_int_equal(run(f, p, CK__ADMISSION_CREATE, NULL, devs, NULL, f->nobody, &err), 0);
    /* another signer decides for itself */
    assert_int_equal(run(f, p, CK__ADMISSION_CREATE, NULL, other, NULL, f->nobody, &err), 0);
    json_decref(masters);
    json_decref(devs);
    json_decref(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_approval_needs_approve_on_the_signer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signing_needs_sign_when_the_certificate_changes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_subject_restriction, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
