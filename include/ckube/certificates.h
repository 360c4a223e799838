/*
 * ckube/certificates.h - what the certificates.k8s.io API needs to read of
 * x509 requests and certificates (part of libckube-api).
 *
 * Mirrors Kubernetes' pkg/apis/certificates helpers (ParseCSR, the key usage
 * names, the well-known signers, ValidateKubeletClientCSR and
 * ValidateKubeletServingCSR) and the status checks of
 * pkg/apis/certificates/validation. Every parse and signature check is
 * GnuTLS's work.
 */
#ifndef CKUBE_CERTIFICATES_H
#define CKUBE_CERTIFICATES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ckube/util.h"

/* The signers Kubernetes knows (certificates/v1 well-known signer names). */
#define CK_SIGNER_KUBE_APISERVER_CLIENT         "kubernetes.io/kube-apiserver-client"
#define CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET "kubernetes.io/kube-apiserver-client-kubelet"
#define CK_SIGNER_KUBELET_SERVING               "kubernetes.io/kubelet-serving"
#define CK_SIGNER_LEGACY_UNKNOWN                "kubernetes.io/legacy-unknown"

/* What the signers and admission read of a PKCS#10 request. */
struct ck_csr {
    char *common_name;    /* "" when the subject has none */
    char **organizations; /* subject O values, in order */
    size_t n_organizations;
    size_t n_dns, n_ip, n_email, n_uri; /* subjectAltNames by type */
    void *der;                          /* the request itself, DER */
    size_t der_len;
};

/*
 * Parses pem as Kubernetes' ParseCSR does, then checks the request's own
 * signature (validation's CheckSignature): the first PEM block must be a
 * "CERTIFICATE REQUEST". 0 and *ret (free with ck_csr_free), or CK_EINVAL with
 * the reason in reterr->msg, or CK_ENOMEM.
 */
int ck_csr_parse(const void *pem, size_t len, struct ck_csr **ret, struct ck_err *reterr);

/* ck_csr_parse() of a CSR's spec.request (base64 of the PEM, as JSON carries bytes). */
int ck_csr_parse_request(const json_t *csr_obj, struct ck_csr **ret, struct ck_err *reterr);

struct ck_csr *ck_csr_free(struct ck_csr *csr);

/* Whether usage is one of the key usages certificates/v1 knows ("client auth", ...). */
bool ck_csr_usage_known(const char *usage);

/*
 * Validation's check of status.certificate: at least one PEM block, every
 * block a "CERTIFICATE" without headers holding a certificate GnuTLS parses.
 * 0, or CK_EINVAL with Kubernetes' reason in reterr->msg.
 */
int ck_certificate_pem_check(const void *pem, size_t len, struct ck_err *reterr);

/*
 * Kubernetes' ValidateKubeletClientCSR / ValidateKubeletServingCSR: 0 when
 * csr with usages (a JSON array of strings) is what a kubelet asks for, else
 * CK_EINVAL with the reason in reterr->msg.
 */
int ck_csr_check_kubelet_client(const struct ck_csr *csr, const json_t *usages,
                                struct ck_err *reterr);
int ck_csr_check_kubelet_serving(const struct ck_csr *csr, const json_t *usages,
                                 struct ck_err *reterr);

/*
 * The CSR's condition of type (Approved, Denied, Failed) whose status is
 * "True", or NULL (Kubernetes' HasTrueCondition).
 */
const json_t *ck_csr_true_condition(const json_t *csr_obj, const char *type);

#endif /* CKUBE_CERTIFICATES_H */
