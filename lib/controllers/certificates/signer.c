/*
 * signer.c - the csrsigning controller's signer (kubernetes
 * pkg/controller/certificates/signer/signer.go and authority/).
 *
 * One signer serves the three signers Kubernetes runs as separate
 * controllers over the same CA: kubernetes.io/kube-apiserver-client (usages
 * client auth, and optionally digital signature and key encipherment),
 * kubernetes.io/kube-apiserver-client-kubelet and kubernetes.io/kubelet-serving
 * (the kubelet request rules of ck_csr_check_kubelet_client and _serving).
 * kubernetes.io/legacy-unknown, which Kubernetes signs for requests made
 * through v1beta1, is never signed: v1 refuses such requests and ckube
 * serves no v1beta1.
 *
 * An approved request gets a certificate with the request's subject and
 * subjectAltNames and public key, the key usages and extended key usages its
 * spec.usages name, no CA rights, valid from five minutes ago (a client
 * whose clock is behind still accepts it) for --cluster-signing-duration or
 * the request's expirationSeconds when shorter (at least ten minutes), never
 * beyond the CA's own expiry. A request the signer's rules refuse gets a
 * Failed condition with reason SignerValidationFailure instead. Both are
 * written through /status; the CertificateSigning admission plugin checks
 * that the writer may `sign` for the signer.
 *
 * Every certificate operation is GnuTLS's.
 *
 * Threading: the CA is read-only after creation; handle runs on any worker.
 *
 * Tested by tests/controllers/test_csr.c and tests/e2e/test_certificates.sh.
 */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/api.h"
#include "ckube/certificates.h"
#include "ckube/csrcontrollers.h"
#include "ckube/internal/util.h"

#define BACKDATE     300 /* seconds */
#define MIN_DURATION 600 /* seconds: twice the backdate */
#define N_USAGES     (sizeof(usage_map) / sizeof(usage_map[0]))

struct ck_csr_signer {
    struct ck_ctl_client client;
    const struct ck_resource *csr_res;
    gnutls_x509_crt_t ca;
    gnutls_x509_privkey_t ca_key;
    long long duration, now;
};

struct ck_csr_signer *ck_csr_signer_free(struct ck_csr_signer *s)
{
    if (!s)
        return NULL;
    if (s->ca)
        gnutls_x509_crt_deinit(s->ca);
    if (s->ca_key)
        gnutls_x509_privkey_deinit(s->ca_key);
    free(s);
    return NULL;
}

int ck_csr_signer_new(const struct ck_csr_signer_config *config, struct ck_csr_signer **ret,
                      struct ck_err *reterr)
{
    const struct ck_resource *res =
        ck_controller_resource("certificates.k8s.io", "v1", "certificatesigningrequests");
    if (!res)
        return ck_err_set(reterr, CK_ENOENT, "csrsigning: no certificatesigningrequests kind");
    struct ck_csr_signer *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    s->client = config->client;
    s->csr_res = res;
    s->duration = config->duration > 0 ? config->duration : CK_CSR_SIGNING_DURATION_DEFAULT;
    s->now = config->now;
    gnutls_datum_t crt = {(unsigned char *)config->ca_cert_pem,
                          config->ca_cert_pem ? (unsigned)strlen(config->ca_cert_pem) : 0};
    gnutls_datum_t key = {(unsigned char *)config->ca_key_pem,
                          config->ca_key_pem ? (unsigned)strlen(config->ca_key_pem) : 0};
    if (gnutls_x509_crt_init(&s->ca) < 0 || gnutls_x509_privkey_init(&s->ca_key) < 0) {
        ck_csr_signer_free(s);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (!crt.size || gnutls_x509_crt_import(s->ca, &crt, GNUTLS_X509_FMT_PEM) < 0) {
        ck_csr_signer_free(s);
        return ck_err_set(reterr, CK_EINVAL, "csrsigning: the CA certificate does not load");
    }
    if (!key.size || gnutls_x509_privkey_import(s->ca_key, &key, GNUTLS_X509_FMT_PEM) < 0) {
        ck_csr_signer_free(s);
        return ck_err_set(reterr, CK_EINVAL, "csrsigning: the CA key does not load");
    }
    *ret = s;
    return 0;
}

/* The signers this controller runs. */
static bool served(const char *signer)
{
    return signer && (strcmp(signer, CK_SIGNER_KUBE_APISERVER_CLIENT) == 0 ||
                      strcmp(signer, CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET) == 0 ||
                      strcmp(signer, CK_SIGNER_KUBELET_SERVING) == 0);
}

/* Kubernetes' validAPIServerClientUsages. */
static int check_client_usages(const json_t *usages, struct ck_err *reterr)
{
    bool client_auth = false;
    size_t i;
    const json_t *u;
    json_array_foreach(usages, i, u)
    {
        const char *s = json_string_value(u);
        if (s && strcmp(s, "client auth") == 0)
            client_auth = true;
        else if (!s || (strcmp(s, "digital signature") != 0 && strcmp(s, "key encipherment") != 0))
            return ck_err_set(reterr, CK_EINVAL, "invalid usage for client certificate: %s",
                              s ? s : "");
    }
    if (!client_auth)
        return ck_err_set(reterr, CK_EINVAL,
                          "missing required usage for client certificate: client auth");
    return 0;
}

/* The signer's rules (getCSRVerificationFuncForSignerName). */
static int recognise(const char *signer, const struct ck_csr *req, const json_t *usages,
                     struct ck_err *reterr)
{
    if (strcmp(signer, CK_SIGNER_KUBELET_SERVING) == 0)
        return ck_csr_check_kubelet_serving(req, usages, reterr);
    if (strcmp(signer, CK_SIGNER_KUBE_APISERVER_CLIENT_KUBELET) == 0)
        return ck_csr_check_kubelet_client(req, usages, reterr);
    return check_client_usages(usages, reterr);
}

static const struct {
    const char *usage;
    unsigned key_usage;  /* GNUTLS_KEY_*, or 0 */
    const char *ext_oid; /* extended key usage, or NULL */
} usage_map[] = {
    {"signing", GNUTLS_KEY_DIGITAL_SIGNATURE, NULL},
    {"digital signature", GNUTLS_KEY_DIGITAL_SIGNATURE, NULL},
    {"content commitment", GNUTLS_KEY_NON_REPUDIATION, NULL},
    {"key encipherment", GNUTLS_KEY_KEY_ENCIPHERMENT, NULL},
    {"key agreement", GNUTLS_KEY_KEY_AGREEMENT, NULL},
    {"data encipherment", GNUTLS_KEY_DATA_ENCIPHERMENT, NULL},
    {"cert sign", GNUTLS_KEY_KEY_CERT_SIGN, NULL},
    {"crl sign", GNUTLS_KEY_CRL_SIGN, NULL},
    {"encipher only", GNUTLS_KEY_ENCIPHER_ONLY, NULL},
    {"decipher only", GNUTLS_KEY_DECIPHER_ONLY, NULL},
    {"any", 0, GNUTLS_KP_ANY},
    {"server auth", 0, GNUTLS_KP_TLS_WWW_SERVER},
    {"client auth", 0, GNUTLS_KP_TLS_WWW_CLIENT},
    {"code signing", 0, GNUTLS_KP_CODE_SIGNING},
    {"email protection", 0, GNUTLS_KP_EMAIL_PROTECTION},
    {"s/mime", 0, GNUTLS_KP_EMAIL_PROTECTION},
    {"ipsec end system", 0, "1.3.6.1.5.5.7.3.5"},
    {"ipsec tunnel", 0, "1.3.6.1.5.5.7.3.6"},
    {"ipsec user", 0, "1.3.6.1.5.5.7.3.7"},
    {"timestamping", 0, GNUTLS_KP_TIME_STAMPING},
    {"ocsp signing", 0, GNUTLS_KP_OCSP_SIGNING},
    {"microsoft sgc", 0, "1.3.6.1.4.1.311.10.3.3"},
    {"netscape sgc", 0, "2.16.840.1.113730.4.1"},
};

/* Key usages and extended key usages of usages on crt (keyUsagesFromStrings). */
static int set_usages(gnutls_x509_crt_t crt, const json_t *usages)
{
    unsigned key_usage = 0;
    size_t i;
    const json_t *u;
    const char *added[N_USAGES];
    size_t n_added = 0;
    json_array_foreach(usages, i, u)
    {
        const char *s = json_string_value(u);
        for (size_t j = 0; s && j < N_USAGES; j++) {
            if (strcmp(s, usage_map[j].usage) != 0)
                continue;
            key_usage |= usage_map[j].key_usage;
            bool seen = false;
            for (size_t k = 0; k < n_added; k++)
                seen =
                    seen || (usage_map[j].ext_oid && strcmp(added[k], usage_map[j].ext_oid) == 0);
            if (usage_map[j].ext_oid && !seen) {
                if (gnutls_x509_crt_set_key_purpose_oid(crt, usage_map[j].ext_oid, 0) < 0)
                    return CK_EIO;
                added[n_added++] = usage_map[j].ext_oid;
            }
        }
    }
    if (key_usage && gnutls_x509_crt_set_key_usage(crt, key_usage) < 0)
        return CK_EIO;
    return 0;
}

/* The validity the certificate gets (signer.duration), in seconds. */
static long long duration_of(const struct ck_csr_signer *s, const json_t *csr)
{
    const json_t *asked = json_object_get(json_object_get(csr, "spec"), "expirationSeconds");
    if (!json_is_integer(asked))
        return s->duration;
    long long d = (long long)json_integer_value(asked);
    return d > s->duration ? s->duration : d < MIN_DURATION ? MIN_DURATION : d;
}

/* Signs req: 0 and the certificate's PEM in *ret_pem (gnutls_free), or a negative code. */
static int sign(const struct ck_csr_signer *s, const struct ck_csr *req, const json_t *csr,
                gnutls_datum_t *ret_pem, struct ck_err *reterr)
{
    gnutls_x509_crq_t crq = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t der = {req->der, (unsigned)req->der_len};
    long long now = s->now ? s->now : (long long)time(NULL);
    long long not_after = now + duration_of(s, csr);
    long long ca_expiry = (long long)gnutls_x509_crt_get_expiration_time(s->ca);
    if (ca_expiry > 0 && not_after > ca_expiry)
        not_after = ca_expiry;
    unsigned char serial[16], id[64];
    size_t id_len = sizeof(id);
    int r = 0;
    if (gnutls_x509_crq_init(&crq) < 0 || gnutls_x509_crt_init(&crt) < 0) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    int bad = gnutls_x509_crq_import(crq, &der, GNUTLS_X509_FMT_DER) < 0 ||
              gnutls_x509_crt_set_crq(crt, crq) < 0 || gnutls_x509_crt_set_version(crt, 3) < 0 ||
              gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial)) < 0;
    if (!bad) {
        serial[0] &= 0x7f; /* positive */
        serial[0] |= 0x01;
        bad = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)) < 0 ||
              gnutls_x509_crt_set_activation_time(crt, (time_t)(now - BACKDATE)) < 0 ||
              gnutls_x509_crt_set_expiration_time(crt, (time_t)not_after) < 0 ||
              gnutls_x509_crt_set_basic_constraints(crt, 0, -1) < 0 ||
              set_usages(crt, json_object_get(json_object_get(csr, "spec"), "usages")) < 0;
    }
    /* the request's subjectAltNames, and nothing else of its extensions */
    if (!bad && req->n_dns + req->n_ip + req->n_email + req->n_uri > 0)
        bad = gnutls_x509_crt_set_crq_extension_by_oid(crt, crq, "2.5.29.17", 0) < 0;
    if (!bad && gnutls_x509_crt_get_subject_key_id(s->ca, id, &id_len, NULL) == 0)
        bad = gnutls_x509_crt_set_authority_key_id(crt, id, id_len) < 0;
    if (!bad)
        bad = gnutls_x509_crt_sign2(crt, s->ca, s->ca_key, GNUTLS_DIG_SHA256, 0) < 0 ||
              gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, ret_pem) < 0;
    if (bad)
        r = ck_err_set(reterr, CK_EIO, "error auto signing csr: signing the certificate failed");
out:
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (crq)
        gnutls_x509_crq_deinit(crq);
    return r;
}

int ck_csr_signer_handle(struct ck_csr_signer *s, const json_t *csr, struct ck_err *reterr)
{
    const json_t *spec = json_object_get(csr, "spec");
    const char *signer = json_string_value(json_object_get(spec, "signerName"));
    const char *cert =
        json_string_value(json_object_get(json_object_get(csr, "status"), "certificate"));
    const char *name = ck__meta_str(csr, "name");
    if (!ck_csr_true_condition(csr, "Approved") || ck_csr_true_condition(csr, "Failed") ||
        (cert && *cert) || !served(signer) || !name)
        return 0;
    struct ck_csr *req = NULL;
    struct ck_err why = {0};
    int r = ck_csr_parse_request(csr, &req, &why);
    if (r < 0)
        return ck_err_set(reterr, r, "unable to parse csr \"%s\": %s", name, why.msg);
    json_t *next = json_deep_copy(csr);
    json_t *status = next ? json_object_get(next, "status") : NULL;
    if (next && !json_is_object(status)) {
        status = json_object();
        if (json_object_set_new(next, "status", status) < 0)
            status = NULL;
    }
    if (!status) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    if (recognise(signer, req, json_object_get(spec, "usages"), &why) < 0) {
        json_t *conditions = json_object_get(status, "conditions");
        if (!json_is_array(conditions)) {
            conditions = json_array();
            json_object_set_new(status, "conditions", conditions);
        }
        char now[64];
        ck_rfc3339(s->now ? s->now : (long long)time(NULL), now, sizeof(now));
        if (json_array_append_new(conditions,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Failed", "status",
                                            "True", "reason", "SignerValidationFailure", "message",
                                            why.msg, "lastUpdateTime", now)) < 0) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out;
        }
        struct ck_err err = {0};
        r = ck_ctl_update_status(&s->client, s->csr_res, "", next, NULL, &err);
        if (r == CK_ENOENT)
            r = 0;
        else if (r < 0)
            ck_err_set(reterr, r, "error adding failure condition for csr: %s",
                       ck_err_message(&err));
        ck_err_release(&err);
        goto out;
    }
    gnutls_datum_t pem = {NULL, 0};
    if ((r = sign(s, req, csr, &pem, reterr)) < 0)
        goto out;
    char *b64 = ck_base64_encode(pem.data, pem.size);
    gnutls_free(pem.data);
    if (!b64 || json_object_set_new(status, "certificate", json_string(b64)) < 0) {
        free(b64);
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    free(b64);
    struct ck_err err = {0};
    r = ck_ctl_update_status(&s->client, s->csr_res, "", next, NULL, &err);
    if (r < 0)
        ck_err_set(reterr, r, "error updating signature for csr: %s", ck_err_message(&err));
    ck_err_release(&err);
out:
    json_decref(next);
    ck_csr_free(req);
    return r;
}
