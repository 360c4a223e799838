/*
 * approver.c - the csrapproving controller's approver (kubernetes
 * pkg/controller/certificates/approver/sarapprove.go).
 *
 * A kubelet asks for its client certificate with a request for
 * kubernetes.io/kube-apiserver-client-kubelet whose subject is
 * O=system:nodes, CN=system:node:NAME, with client usages and no
 * subjectAltNames. Such a request, pending and not issued, is approved
 * when a SubjectAccessReview of its requester (spec.username, uid, groups,
 * extra) allows `create` on certificatesigningrequests/selfnodeclient (a
 * renewal: the CN is the requester's own name) or /nodeclient (a bootstrap
 * token's request for a new node). Roles system:certificates.k8s.io:
 * certificatesigningrequests:nodeclient and :selfnodeclient grant these.
 * The approval is the condition Approved (reason AutoApproved) written
 * through /approval, as a merge patch of the conditions carrying the
 * resourceVersion read (Kubernetes' UpdateApproval, with the same
 * optimistic concurrency).
 *
 * Threading: no state beyond the copied config; handle runs on any worker.
 *
 * Tested by tests/controllers/test_csr.c and tests/e2e/test_certificates.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/certificates.h"
#include "ckube/csrcontrollers.h"
#include "ckube/internal/util.h"

struct ck_csr_approver {
    struct ck_csr_approver_config config;
    const struct ck_resource *csr_res, *sar_res;
};

int ck_csr_approver_new(const struct ck_csr_approver_config *config, struct ck_csr_approver **ret,
                        struct ck_err *reterr)
{
    const struct ck_resource *csr_res =
        ck_controller_resource("certificates.k8s.io", "v1", "certificatesigningrequests");
    const struct ck_resource *sar_res =
        ck_controller_resource("authorization.k8s.io", "v1", "subjectaccessreviews");
    if (!csr_res || !sar_res)
        return ck_err_set(reterr, CK_ENOENT, "csrapproving: missing kinds");
    struct ck_csr_approver *a = ck__calloc(1, sizeof(*a));
    if (!a)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    a->config = *config;
    a->csr_res = csr_res;
    a->sar_res = sar_res;
    *ret = a;
    return 0;
}

struct ck_csr_approver *ck_csr_approver_free(struct ck_csr_approver *a)
{
    free(a);
    return NULL;
}

/* Asks whether csr's requester may create certificatesigningrequests/subresource. */
static int authorize(struct ck_csr_approver *a, const json_t *csr, const char *subresource,
                     bool *ret_allowed, struct ck_err *reterr)
{
    const json_t *spec = json_object_get(csr, "spec");
    json_t *sar = json_pack("{s:s, s:s, s:{s:{s:s, s:s, s:s, s:s, s:s}}}", "apiVersion",
                            "authorization.k8s.io/v1", "kind", "SubjectAccessReview", "spec",
                            "resourceAttributes", "group", "certificates.k8s.io", "resource",
                            "certificatesigningrequests", "verb", "create", "subresource",
                            subresource, "version", "*");
    json_t *sar_spec = sar ? json_object_get(sar, "spec") : NULL;
    static const char *const from_spec[][2] = {
        {"username", "user"}, {"uid", "uid"}, {"groups", "groups"}, {"extra", "extra"}};
    for (size_t i = 0; sar_spec && i < sizeof(from_spec) / sizeof(from_spec[0]); i++) {
        const json_t *v = json_object_get(spec, from_spec[i][0]);
        if (v && json_object_set_new(sar_spec, from_spec[i][1], json_deep_copy(v)) < 0)
            sar_spec = NULL;
    }
    if (!sar_spec) {
        json_decref(sar);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    int r;
    if (a->config.review) {
        r = a->config.review(a->config.review_arg, sar, ret_allowed, reterr);
    } else {
        json_t *answer = NULL;
        r = ck_ctl_create(&a->config.client, a->sar_res, "", sar, &answer, reterr);
        if (r == 0)
            *ret_allowed =
                json_is_true(json_object_get(json_object_get(answer, "status"), "allowed"));
        json_decref(answer);
    }
    json_decref(sar);
    return r;
}

/* Writes the Approved condition through /approval. */
static int approve(struct ck_csr_approver *a, const json_t *csr, const char *message,
                   struct ck_err *reterr)
{
    const json_t *had = json_object_get(json_object_get(csr, "status"), "conditions");
    json_t *conditions = json_is_array(had) ? json_deep_copy(had) : json_array();
    const char *rv = ck__meta_str(csr, "resourceVersion");
    json_t *patch = NULL;
    if (conditions &&
        json_array_append_new(conditions,
                              json_pack("{s:s, s:s, s:s, s:s}", "type", "Approved", "status",
                                        "True", "reason", "AutoApproved", "message", message)) == 0)
        patch = json_pack("{s:{s:s}, s:{s:O}}", "metadata", "resourceVersion", rv ? rv : "",
                          "status", "conditions", conditions);
    json_decref(conditions);
    if (!patch)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (!rv || !*rv)
        json_object_del(patch, "metadata");
    struct ck_err err = {0};
    int r = ck_ctl_patch(&a->config.client, a->csr_res, "", ck__meta_str(csr, "name"), "approval",
                         "application/merge-patch+json", patch, NULL, &err);
    if (r < 0)
        ck_err_set(reterr, r, "error updating approval for csr: %s", ck_err_message(&err));
    ck_err_release(&err);
    json_decref(patch);
    return r;
}

int ck_csr_approver_handle(struct ck_csr_approver *a, const json_t *csr, struct ck_err *reterr)
{
    const json_t *spec = json_object_get(csr, "spec");
    const char *cert =
        json_string_value(json_object_get(json_object_get(csr, "status"), "certificate"));
    const char *signer = json_string_value(json_object_get(spec, "signerName"));
    const char *name = ck__meta_str(csr, "name");
    if ((cert && *cert) || ck_csr_true_condition(csr, "Approved") ||
        ck_csr_true_condition(csr, "Denied") || !name)
        return 0;
    struct ck_csr *req = NULL;
    struct ck_err why = {0};
    int r = ck_csr_parse_request(csr, &req, &why);
    if (r < 0)
        return ck_err_set(reterr, r, "unable to parse csr \"%s\": %s", name, why.msg);
    /* isNodeClientCert, then isSelfNodeClientCert (the requester's own CN) first */
    bool node_client = signer && strcmp(signer, CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET) == 0 &&
                       ck_csr_check_kubelet_client(req, json_object_get(spec, "usages"), &why) == 0;
    const char *user = json_string_value(json_object_get(spec, "username"));
    bool self = node_client && user && strcmp(user, req->common_name) == 0;
    ck_csr_free(req);
    static const struct {
        const char *subresource, *message;
    } recognizers[] = {
        {"selfnodeclient", "Auto approving self kubelet client certificate after "
                           "SubjectAccessReview."},
        {"nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."},
    };
    char tried[64] = "";
    for (size_t i = 0; node_client && i < 2; i++) {
        if (i == 0 && !self)
            continue;
        bool allowed = false;
        if ((r = authorize(a, csr, recognizers[i].subresource, &allowed, reterr)) < 0)
            return r;
        if (allowed)
            return approve(a, csr, recognizers[i].message, reterr);
        size_t len = strlen(tried);
        snprintf(tried + len, sizeof(tried) - len, "%s%s", len ? " " : "",
                 recognizers[i].subresource);
    }
    if (*tried)
        return ck_err_set(reterr, CK_EPERM,
                          "recognized csr \"%s\" as [%s] but subject access review was not "
                          "approved",
                          name, tried);
    return 0;
}
