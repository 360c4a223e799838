/*
 * certificates.c - the three admission plugins of CertificateSigningRequests:
 * CertificateApproval, CertificateSigning and CertificateSubjectRestriction.
 *
 * Mirrors plugin/pkg/admission/certificates/{approval,signing,subjectrestriction}
 * and certificates.IsAuthorizedForSignerName of Kubernetes 1.32:
 *
 * - CertificateApproval: a write of certificatesigningrequests/approval needs
 *   the verb `approve` on resource `signers` (group certificates.k8s.io) named
 *   the new object's spec.signerName, or its domain wildcard ("kubernetes.io/ *"
 *   without the space);
 * - CertificateSigning: a write of /status that changes status.certificate
 *   needs `sign` on the signer, the same way;
 * - CertificateSubjectRestriction: a create of a request for
 *   kubernetes.io/kube-apiserver-client whose subject has O=system:masters is
 *   refused (a certificate that would make its holder a cluster admin).
 *
 * The checks ask RBAC (the server's authorizer) about the request's user; the
 * server's own writes and a server without authorization (plain HTTP) pass.
 *
 * Threading: reads the current RBAC policy, which is refcounted and immutable.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "ckube/auth.h"
#include "ckube/certificates.h"

/* A write of a CertificateSigningRequest or of one of its subresources. */
static bool is_csr(const struct ck__admission_attrs *a)
{
    return a->kind && a->kind->role == CK_KIND_ROLE_CERTIFICATE_SIGNING_REQUEST;
}

static const char *signer_of(const json_t *obj)
{
    const char *s = json_string_value(json_object_get(json_object_get(obj, "spec"), "signerName"));
    return s ? s : "";
}

/* RBAC's answer for verb on signers/name. */
static bool allowed(const struct ck_rbac_policy *policy, const struct ck_auth_user *user,
                    const char *verb, const char *name)
{
    struct ck_rbac_request req = {.user = user,
                                  .verb = verb,
                                  .is_resource_request = true,
                                  .api_group = "certificates.k8s.io",
                                  .resource = "signers",
                                  .name = name};
    return ck_rbac_authorize(policy, &req, NULL, 0) == CK_RBAC_ALLOW;
}

/* Kubernetes' IsAuthorizedForSignerName: the signer itself, else its domain's wildcard. */
static bool authorized_for_signer(struct ck__registry *reg, const struct ck_auth_user *user,
                                  const char *verb, const char *signer)
{
    if (!user || !reg->authorizer)
        return true;
    struct ck_rbac_policy *policy = ck_rbac_authorizer_current(reg->authorizer);
    bool ok = false;
    if (policy) {
        char wildcard[600];
        snprintf(wildcard, sizeof(wildcard), "%.*s/*", (int)strcspn(signer, "/"), signer);
        ok = allowed(policy, user, verb, signer) || allowed(policy, user, verb, wildcard);
    }
    ck_rbac_policy_unref(policy);
    return ok;
}

static int approval(struct ck__registry *reg, const struct ck__admission_attrs *a,
                    struct ck_err *reterr)
{
    if (!is_csr(a) || !a->subresource || strcmp(a->subresource, "approval") != 0 || !a->obj)
        return 0;
    /* the new object's signer: a change of signer and an approval at once is checked */
    const char *signer = signer_of(a->obj);
    if (authorized_for_signer(reg, a->user, "approve", signer))
        return 0;
    return ck__admission_forbidden(
        a, reterr, "user not permitted to approve requests with signerName \"%s\"", signer);
}

static int signing(struct ck__registry *reg, const struct ck__admission_attrs *a,
                   struct ck_err *reterr)
{
    if (!is_csr(a) || !a->subresource || strcmp(a->subresource, "status") != 0 || !a->obj ||
        a->op != CK__ADMISSION_UPDATE)
        return 0;
    const json_t *now = json_object_get(json_object_get(a->obj, "status"), "certificate");
    const json_t *was = json_object_get(json_object_get(a->old, "status"), "certificate");
    const char *n = json_string_value(now), *w = json_string_value(was);
    if (strcmp(n ? n : "", w ? w : "") == 0)
        return 0; /* the certificate is not changing */
    const char *signer = signer_of(a->old);
    if (authorized_for_signer(reg, a->user, "sign", signer))
        return 0;
    return ck__admission_forbidden(
        a, reterr, "user not permitted to sign requests with signerName \"%s\"", signer);
}

static int subject_restriction(struct ck__registry *reg, const struct ck__admission_attrs *a,
                               struct ck_err *reterr)
{
    (void)reg;
    if (!is_csr(a) || a->op != CK__ADMISSION_CREATE || (a->subresource && *a->subresource) ||
        strcmp(signer_of(a->obj), CK_SIGNER_KUBE_APISERVER_CLIENT) != 0)
        return 0;
    struct ck_csr *csr = NULL;
    struct ck_err why = {0};
    int r = ck_csr_parse_request(a->obj, &csr, &why);
    if (r == CK_ENOMEM)
        return ck_err_no_memory(reterr);
    if (r < 0) /* Kubernetes answers an internal error: validation has refused it already */
        return ck_err_internal(reterr, "failed to parse CSR: %s", why.msg);
    bool masters = false;
    for (size_t i = 0; i < csr->n_organizations; i++)
        masters = masters || strcmp(csr->organizations[i], "system:masters") == 0;
    ck_csr_free(csr);
    if (!masters)
        return 0;
    return ck__admission_forbidden(a, reterr,
                                   "use of %s signer with system:masters group is not allowed",
                                   CK_SIGNER_KUBE_APISERVER_CLIENT);
}

const struct ck__admission_plugin ck__admission_certificate_approval = {
    .name = "CertificateApproval", .validate = approval};
const struct ck__admission_plugin ck__admission_certificate_signing = {.name = "CertificateSigning",
                                                                       .validate = signing};
const struct ck__admission_plugin ck__admission_certificate_subject_restriction = {
    .name = "CertificateSubjectRestriction", .validate = subject_restriction};
