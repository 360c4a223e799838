/*
 * csr_fixtures.h - x509 requests and a CA for the certificates tests, made
 * with GnuTLS (tests/api/test_certificates.c, tests/controllers/test_csr.c).
 *
 * Header-only (static functions): each test links GnuTLS itself.
 */
#ifndef CKUBE_TESTS_CSR_FIXTURES_H
#define CKUBE_TESTS_CSR_FIXTURES_H

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/util.h"

/* A fresh ECDSA P-256 key. */
static inline gnutls_x509_privkey_t fixture_key(void)
{
    gnutls_x509_privkey_t key = NULL;
    if (gnutls_x509_privkey_init(&key) < 0 ||
        gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0)
        abort();
    return key;
}

/*
 * A PEM certificate request with subject CN=cn and O=orgs (NULL-terminated,
 * may be NULL) and the DNS names dns (NULL-terminated, may be NULL). Caller
 * frees.
 */
static inline char *fixture_csr_pem(const char *cn, const char *const *orgs, const char *const *dns)
{
    gnutls_x509_privkey_t key = fixture_key();
    gnutls_x509_crq_t crq;
    gnutls_datum_t out = {NULL, 0};
    if (gnutls_x509_crq_init(&crq) < 0 || gnutls_x509_crq_set_version(crq, 1) < 0 ||
        gnutls_x509_crq_set_key(crq, key) < 0)
        abort();
    if (cn && gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                            (unsigned)strlen(cn)) < 0)
        abort();
    for (size_t i = 0; orgs && orgs[i]; i++)
        if (gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, orgs[i],
                                          (unsigned)strlen(orgs[i])) < 0)
            abort();
    for (size_t i = 0; dns && dns[i]; i++)
        if (gnutls_x509_crq_set_subject_alt_name(crq, GNUTLS_SAN_DNSNAME, dns[i],
                                                 (unsigned)strlen(dns[i]), GNUTLS_FSAN_APPEND) < 0)
            abort();
    if (gnutls_x509_crq_sign2(crq, key, GNUTLS_DIG_SHA256, 0) < 0 ||
        gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_PEM, &out) < 0)
        abort();
    /* GnuTLS labels it "NEW CERTIFICATE REQUEST", which Kubernetes refuses: relabel */
    gnutls_datum_t der = {NULL, 0};
    if (gnutls_pem_base64_decode2("NEW CERTIFICATE REQUEST", &out, &der) < 0 &&
        gnutls_pem_base64_decode2("CERTIFICATE REQUEST", &out, &der) < 0)
        abort();
    gnutls_free(out.data);
    if (gnutls_pem_base64_encode2("CERTIFICATE REQUEST", &der, &out) < 0)
        abort();
    gnutls_free(der.data);
    char *pem = malloc(out.size + 1);
    memcpy(pem, out.data, out.size);
    pem[out.size] = '\0';
    gnutls_free(out.data);
    gnutls_x509_crq_deinit(crq);
    gnutls_x509_privkey_deinit(key);
    return pem;
}

/* A CertificateSigningRequest for pem (base64 of it as spec.request), signer and usages. */
static inline json_t *fixture_csr_object(const char *name, const char *pem, const char *signer,
                                         const char *usages_json)
{
    char *b64 = ck_base64_encode(pem, strlen(pem));
    json_t *usages = json_loads(usages_json, 0, NULL);
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:o}, s:{}}", "apiVersion",
                            "certificates.k8s.io/v1", "kind", "CertificateSigningRequest",
                            "metadata", "name", name, "resourceVersion", "7", "spec", "request",
                            b64, "signerName", signer, "usages", usages, "status");
    free(b64);
    if (!obj)
        abort();
    return obj;
}

/* A self-signed CA: its certificate and key in PEM (caller frees both). */
static inline void fixture_ca(char **ret_crt, char **ret_key)
{
    gnutls_x509_privkey_t key = fixture_key();
    gnutls_x509_crt_t crt;
    unsigned char serial[] = {1};
    const char *cn = "test-ca";
    time_t now = time(NULL);
    gnutls_datum_t c = {NULL, 0}, k = {NULL, 0};
    if (gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_crt_set_version(crt, 3) < 0 ||
        gnutls_x509_crt_set_key(crt, key) < 0 || gnutls_x509_crt_set_serial(crt, serial, 1) < 0 ||
        gnutls_x509_crt_set_activation_time(crt, now - 60) < 0 ||
        gnutls_x509_crt_set_expiration_time(crt, now + 10L * 365 * 24 * 3600) < 0 ||
        gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                      (unsigned)strlen(cn)) < 0 ||
        gnutls_x509_crt_set_basic_constraints(crt, 1, -1) < 0 ||
        gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN) < 0 ||
        gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0 ||
        gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c) < 0 ||
        gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &k) < 0)
        abort();
    *ret_crt = strndup((const char *)c.data, c.size);
    *ret_key = strndup((const char *)k.data, k.size);
    gnutls_free(c.data);
    gnutls_free(k.data);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
}

#endif /* CKUBE_TESTS_CSR_FIXTURES_H */
