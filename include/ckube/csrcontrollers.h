/*
 * ckube/csrcontrollers.h - the CertificateSigningRequest controllers of
 * kube-controller-manager (kubernetes pkg/controller/certificates):
 *
 * - csrsigning (signer/signer.go): signs approved requests for
 *   kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet and
 *   kubelet-serving with the cluster CA (--cluster-signing-cert-file,
 *   --cluster-signing-key-file), for --cluster-signing-duration or the
 *   request's shorter expirationSeconds (never under ten minutes); a request
 *   a signer's rules refuse gets the Failed condition instead.
 * - csrapproving (approver/sarapprove.go): approves a kubelet's client
 *   request (O=system:nodes, CN=system:node:NAME, client usages, no SANs)
 *   when a SubjectAccessReview says its requester may create
 *   certificatesigningrequests/selfnodeclient (CN is its own name) or
 *   /nodeclient.
 * - csrcleaner (cleaner/cleaner.go): deletes requests that are done with:
 *   issued, denied or failed an hour ago, pending for a day, or whose
 *   certificate has expired.
 *
 * Each handler takes one CSR as the cache holds it (never changed) and
 * writes through a client interface, so tests run them on the fake client.
 */
#ifndef CKUBE_CSRCONTROLLERS_H
#define CKUBE_CSRCONTROLLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "ckube/controllers.h"
#include "ckube/manager.h"

/* kube-controller-manager's --cluster-signing-duration default: one year. */
#define CK_CSR_SIGNING_DURATION_DEFAULT (365LL * 24 * 3600)

struct ck_csr_signer_config {
    struct ck_ctl_client client; /* certificatesigningrequests/status updates (copied) */
    const char *ca_cert_pem;     /* the CA certificate and key, PEM (copied) */
    const char *ca_key_pem;
    long long duration; /* seconds; 0: CK_CSR_SIGNING_DURATION_DEFAULT */
    long long now;      /* seconds since the epoch to sign at; 0: the clock (tests fix it) */
};

struct ck_csr_signer;

/* 0 and *ret, CK_EINVAL when the CA does not load (reterr says why), or CK_ENOMEM. */
int ck_csr_signer_new(const struct ck_csr_signer_config *config, struct ck_csr_signer **ret,
                      struct ck_err *reterr);
struct ck_csr_signer *ck_csr_signer_free(struct ck_csr_signer *s);

/*
 * Kubernetes' signer.handle for every signer this controller runs: nothing
 * unless csr is Approved, not Failed, not issued and for one of the three
 * signers; then either a certificate in status.certificate or, when the
 * signer's rules refuse the request, a Failed condition (reason
 * SignerValidationFailure), written through /status. 0, or a negative code
 * to retry.
 */
int ck_csr_signer_handle(struct ck_csr_signer *s, const json_t *csr, struct ck_err *reterr);

struct ck_csr_approver_config {
    struct ck_ctl_client client; /* /approval patches and subjectaccessreviews (copied) */
    /*
     * Answers a SubjectAccessReview (the object to create); NULL: create it
     * through client and read status.allowed. 0 with *ret_allowed, or a
     * negative code.
     */
    int (*review)(void *arg, const json_t *sar, bool *ret_allowed, struct ck_err *reterr);
    void *review_arg;
};

struct ck_csr_approver;

int ck_csr_approver_new(const struct ck_csr_approver_config *config, struct ck_csr_approver **ret,
                        struct ck_err *reterr);
struct ck_csr_approver *ck_csr_approver_free(struct ck_csr_approver *a);

/*
 * Kubernetes' sarApprover.handle: a pending, unissued kubelet client
 * request is approved (condition Approved, reason AutoApproved) when the
 * review of selfnodeclient (for a CN that is the requester's own name) or
 * nodeclient allows it. 0 when done (approved or not recognised),
 * CK_EPERM when recognised but no review allowed it (retried, as
 * Kubernetes' IgnorableError is), another negative code on failure.
 */
int ck_csr_approver_handle(struct ck_csr_approver *a, const json_t *csr, struct ck_err *reterr);

/*
 * Kubernetes' cleaner: whether csr is due for deletion at now (seconds):
 * approved and issued, denied or failed over an hour ago (the condition's
 * lastUpdateTime), pending over a day (creation), or issued with an expired
 * certificate.
 */
bool ck_csr_cleaner_due(const json_t *csr, long long now);

/*
 * The controller manager's rows. csrsigning needs
 * ctx->cluster_signing_cert_file and _key_file; without them it is not
 * started (kube-controller-manager skips it the same way).
 */
int ck_csrsigning_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr);
int ck_csrapproving_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                  struct ck_err *reterr);
int ck_csrcleaner_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                struct ck_err *reterr);
int ck_csr_manager_run(void *state, int workers, struct ck_err *reterr);
void ck_csr_manager_stop(void *state);

#endif /* CKUBE_CSRCONTROLLERS_H */
