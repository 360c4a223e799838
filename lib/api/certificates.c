/*
 * certificates.c - reading x509 certificate requests and certificates for
 * the certificates.k8s.io API: the kind's validation, the signers, the
 * approver and the admission plugins all read requests through here.
 *
 * Mirrors Kubernetes' pkg/apis/certificates/helpers.go (ParseCSR,
 * ValidateKubeletClientCSR, ValidateKubeletServingCSR, HasTrueCondition)
 * and validateCertificate of pkg/apis/certificates/validation. A request is
 * the first PEM block of its bytes, which must be a "CERTIFICATE REQUEST"
 * (Go's pem.Decode followed by the type check); decoding the block,
 * parsing the DER and checking the request's own signature are GnuTLS's
 * work. Only the PEM labels are looked at here, to find the first block.
 *
 * Threading: no state; every function may run on any thread.
 *
 * Tested by tests/api/test_certificates.c.
 */
#define _GNU_SOURCE /* memmem */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/certificates.h"
#include "ckube/internal/util.h"

static const char begin_marker[] = "-----BEGIN ";

/*
 * The label of the first PEM block in data[0..len) ("CERTIFICATE REQUEST"),
 * copied into buf; false when there is no block. *ret_at is where it starts.
 */
static bool first_label(const char *data, size_t len, char *buf, size_t size, size_t *ret_at)
{
    size_t n = sizeof(begin_marker) - 1;
    for (size_t i = 0; i + n <= len; i++) {
        if (memcmp(data + i, begin_marker, n) != 0 || (i > 0 && data[i - 1] != '\n'))
            continue;
        size_t start = i + n, end = start;
        while (end < len && data[end] != '-' && data[end] != '\n')
            end++;
        if (end + 5 > len || memcmp(data + end, "-----", 5) != 0 || end - start >= size)
            continue;
        memcpy(buf, data + start, end - start);
        buf[end - start] = '\0';
        *ret_at = i;
        return true;
    }
    return false;
}

/* Decodes the PEM block labelled label at data[at..len) into DER (gnutls_free it). */
static int decode_block(const char *data, size_t len, size_t at, const char *label,
                        gnutls_datum_t *ret_der)
{
    gnutls_datum_t in = {(unsigned char *)data + at, (unsigned)(len - at)};
    return gnutls_pem_base64_decode2(label, &in, ret_der) < 0 ? CK_EINVAL : 0;
}

struct ck_csr *ck_csr_free(struct ck_csr *csr)
{
    if (!csr)
        return NULL;
    free(csr->common_name);
    for (size_t i = 0; i < csr->n_organizations; i++)
        free(csr->organizations[i]);
    free(csr->organizations);
    free(csr->der);
    free(csr);
    return NULL;
}

/* A DN attribute of crq by oid and index: 0 with *ret (caller frees), CK_ENOENT, CK_ENOMEM. */
static int dn_value(gnutls_x509_crq_t crq, const char *oid, unsigned index, char **ret)
{
    size_t size = 0;
    int rc = gnutls_x509_crq_get_dn_by_oid(crq, oid, index, 0, NULL, &size);
    if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
        return CK_ENOENT;
    if (rc != GNUTLS_E_SHORT_MEMORY_BUFFER && rc < 0)
        return CK_EINVAL;
    char *buf = ck__malloc(size + 1);
    if (!buf)
        return CK_ENOMEM;
    if (gnutls_x509_crq_get_dn_by_oid(crq, oid, index, 0, buf, &size) < 0) {
        free(buf);
        return CK_EINVAL;
    }
    buf[size] = '\0';
    *ret = buf;
    return 0;
}

/* Reads the subject and the subjectAltNames of crq into csr. */
static int read_request(gnutls_x509_crq_t crq, struct ck_csr *csr)
{
    int r = dn_value(crq, GNUTLS_OID_X520_COMMON_NAME, 0, &csr->common_name);
    if (r == CK_ENOENT)
        r = (csr->common_name = ck__strdup("")) ? 0 : CK_ENOMEM;
    for (unsigned i = 0; r == 0; i++) {
        char *org = NULL;
        r = dn_value(crq, GNUTLS_OID_X520_ORGANIZATION_NAME, i, &org);
        if (r == CK_ENOENT) {
            r = 0;
            break;
        }
        if (r < 0)
            break;
        char **grown = realloc(csr->organizations, (i + 1) * sizeof(*grown));
        if (!grown) {
            free(org);
            return CK_ENOMEM;
        }
        csr->organizations = grown;
        csr->organizations[csr->n_organizations++] = org;
    }
    for (unsigned seq = 0; r == 0; seq++) {
        char buf[1024];
        size_t size = sizeof(buf);
        unsigned type = 0, critical = 0;
        int rc = gnutls_x509_crq_get_subject_alt_name(crq, seq, buf, &size, &type, &critical);
        if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (rc < 0 && rc != GNUTLS_E_SHORT_MEMORY_BUFFER)
            return CK_EINVAL;
        switch (rc == GNUTLS_E_SHORT_MEMORY_BUFFER ? type : (unsigned)rc) {
        case GNUTLS_SAN_DNSNAME:
            csr->n_dns++;
            break;
        case GNUTLS_SAN_IPADDRESS:
            csr->n_ip++;
            break;
        case GNUTLS_SAN_RFC822NAME:
            csr->n_email++;
            break;
        case GNUTLS_SAN_URI:
            csr->n_uri++;
            break;
        default:
            break;
        }
    }
    return r;
}

int ck_csr_parse(const void *pem, size_t len, struct ck_csr **ret, struct ck_err *reterr)
{
    char label[64];
    size_t at = 0;
    if (!first_label(pem, len, label, sizeof(label), &at) ||
        strcmp(label, "CERTIFICATE REQUEST") != 0)
        return ck_err_set(reterr, CK_EINVAL, "PEM block type must be CERTIFICATE REQUEST");
    gnutls_datum_t der = {NULL, 0};
    if (decode_block(pem, len, at, label, &der) < 0)
        return ck_err_set(reterr, CK_EINVAL, "PEM block type must be CERTIFICATE REQUEST");
    struct ck_csr *csr = ck__calloc(1, sizeof(*csr));
    gnutls_x509_crq_t crq = NULL;
    int r = 0;
    if (!csr || gnutls_x509_crq_init(&crq) < 0) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    int rc = gnutls_x509_crq_import(crq, &der, GNUTLS_X509_FMT_DER);
    if (rc < 0) {
        r = ck_err_set(reterr, CK_EINVAL, "x509: malformed certificate request: %s",
                       gnutls_strerror(rc));
        goto out;
    }
    if ((rc = gnutls_x509_crq_verify(crq, 0)) < 0) {
        r = ck_err_set(reterr, CK_EINVAL, "x509: signature verification failure: %s",
                       gnutls_strerror(rc));
        goto out;
    }
    if ((r = read_request(crq, csr)) < 0) {
        r = r == CK_ENOMEM ? ck_err_set(reterr, r, "out of memory")
                           : ck_err_set(reterr, r, "x509: malformed certificate request subject");
        goto out;
    }
    csr->der = ck__malloc(der.size ? der.size : 1);
    if (!csr->der) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    memcpy(csr->der, der.data, der.size);
    csr->der_len = der.size;
    *ret = csr;
    csr = NULL;
out:
    if (crq)
        gnutls_x509_crq_deinit(crq);
    gnutls_free(der.data);
    ck_csr_free(csr);
    return r;
}

int ck_csr_parse_request(const json_t *csr_obj, struct ck_csr **ret, struct ck_err *reterr)
{
    const json_t *spec = json_object_get(csr_obj, "spec");
    const char *b64 = json_string_value(json_object_get(spec, "request"));
    size_t len = 0;
    char *pem = ck_base64_decode(b64 ? b64 : "", &len);
    if (!pem)
        return ck_err_set(reterr, CK_EINVAL, "PEM block type must be CERTIFICATE REQUEST");
    int r = ck_csr_parse(pem, len, ret, reterr);
    free(pem);
    return r;
}

static const char *const known_usages[] = {
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
};

bool ck_csr_usage_known(const char *usage)
{
    for (size_t i = 0; usage && i < sizeof(known_usages) / sizeof(known_usages[0]); i++)
        if (strcmp(usage, known_usages[i]) == 0)
            return true;
    return false;
}

int ck_certificate_pem_check(const void *pem, size_t len, struct ck_err *reterr)
{
    const char *data = pem;
    size_t blocks = 0, at = 0;
    char label[64];
    while (len > 0 && first_label(data, len, label, sizeof(label), &at)) {
        if (strcmp(label, "CERTIFICATE") != 0)
            return ck_err_set(reterr, CK_EINVAL,
                              "only CERTIFICATE PEM blocks are allowed, found \"%s\"", label);
        /* a header line ("Proc-Type: ...") right after the BEGIN line */
        const char *line = memchr(data + at, '\n', len - at);
        const char *eol = line ? memchr(line + 1, '\n', (size_t)(data + len - line - 1)) : NULL;
        if (eol && memchr(line + 1, ':', (size_t)(eol - line - 1)))
            return ck_err_set(reterr, CK_EINVAL, "no PEM block headers are permitted");
        gnutls_datum_t der = {NULL, 0};
        if (decode_block(data, len, at, label, &der) < 0)
            break; /* Go's pem.Decode stops at a block it cannot read */
        gnutls_x509_crt_t crt;
        int rc = gnutls_x509_crt_init(&crt);
        if (rc == 0) {
            rc = gnutls_x509_crt_import(crt, &der, GNUTLS_X509_FMT_DER);
            gnutls_x509_crt_deinit(crt);
        }
        gnutls_free(der.data);
        if (rc < 0)
            return ck_err_set(reterr, CK_EINVAL, "x509: malformed certificate: %s",
                              gnutls_strerror(rc));
        blocks++;
        static const char end_marker[] = "-----END ";
        const char *end = memmem(data + at, len - at, end_marker, sizeof(end_marker) - 1);
        const char *next = end ? memchr(end, '\n', (size_t)(data + len - end)) : NULL;
        if (!next)
            break;
        len -= (size_t)(next + 1 - data);
        data = next + 1;
    }
    if (blocks == 0)
        return ck_err_set(reterr, CK_EINVAL, "must contain at least one CERTIFICATE PEM block");
    return 0;
}

/* Whether the array of strings usages holds exactly the n names of want (as sets). */
static bool usages_equal(const json_t *usages, const char *const *want, size_t n)
{
    size_t i, matched = 0;
    const json_t *u;
    json_array_foreach(usages, i, u)
    {
        const char *s = json_string_value(u);
        bool found = false;
        for (size_t j = 0; s && j < n; j++)
            found = found || strcmp(s, want[j]) == 0;
        if (!found)
            return false;
    }
    /* every wanted one present (duplicates in usages count once) */
    for (size_t j = 0; j < n; j++) {
        json_array_foreach(usages, i, u)
        {
            const char *s = json_string_value(u);
            if (s && strcmp(s, want[j]) == 0) {
                matched++;
                break;
            }
        }
    }
    return matched == n;
}

static bool only_system_nodes(const struct ck_csr *csr)
{
    return csr->n_organizations == 1 && strcmp(csr->organizations[0], "system:nodes") == 0;
}

static bool node_common_name(const struct ck_csr *csr)
{
    return strncmp(csr->common_name, "system:node:", 12) == 0;
}

int ck_csr_check_kubelet_client(const struct ck_csr *csr, const json_t *usages,
                                struct ck_err *reterr)
{
    static const char *const with_rsa[] = {"client auth", "digital signature", "key encipherment"};
    static const char *const no_rsa[] = {"client auth", "digital signature"};
    if (!only_system_nodes(csr))
        return ck_err_set(reterr, CK_EINVAL, "subject organization is not system:nodes");
    if (csr->n_dns)
        return ck_err_set(reterr, CK_EINVAL, "DNS subjectAltNames are not allowed");
    if (csr->n_email)
        return ck_err_set(reterr, CK_EINVAL, "Email subjectAltNames are not allowed");
    if (csr->n_ip)
        return ck_err_set(reterr, CK_EINVAL, "IP subjectAltNames are not allowed");
    if (csr->n_uri)
        return ck_err_set(reterr, CK_EINVAL, "URI subjectAltNames are not allowed");
    if (!node_common_name(csr))
        return ck_err_set(reterr, CK_EINVAL,
                          "subject common name does not begin with system:node:");
    if (!usages_equal(usages, with_rsa, 3) && !usages_equal(usages, no_rsa, 2))
        return ck_err_set(reterr, CK_EINVAL,
                          "usages did not match [client auth digital signature key encipherment]");
    return 0;
}

int ck_csr_check_kubelet_serving(const struct ck_csr *csr, const json_t *usages,
                                 struct ck_err *reterr)
{
    static const char *const with_rsa[] = {"digital signature", "key encipherment", "server auth"};
    static const char *const no_rsa[] = {"digital signature", "server auth"};
    if (!only_system_nodes(csr))
        return ck_err_set(reterr, CK_EINVAL, "subject organization is not system:nodes");
    if (csr->n_dns == 0 && csr->n_ip == 0)
        return ck_err_set(reterr, CK_EINVAL, "DNS or IP subjectAltName is required");
    if (csr->n_email)
        return ck_err_set(reterr, CK_EINVAL, "Email subjectAltNames are not allowed");
    if (csr->n_uri)
        return ck_err_set(reterr, CK_EINVAL, "URI subjectAltNames are not allowed");
    if (!usages_equal(usages, with_rsa, 3) && !usages_equal(usages, no_rsa, 2))
        return ck_err_set(reterr, CK_EINVAL,
                          "usages did not match [digital signature key encipherment server auth]");
    if (!node_common_name(csr))
        return ck_err_set(reterr, CK_EINVAL,
                          "subject common name does not begin with system:node:");
    return 0;
}

const json_t *ck_csr_true_condition(const json_t *csr_obj, const char *type)
{
    const json_t *conditions = json_object_get(json_object_get(csr_obj, "status"), "conditions");
    size_t i;
    const json_t *c;
    json_array_foreach(conditions, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
            return c;
    }
    return NULL;
}
