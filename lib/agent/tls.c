/*
 * tls.c - the certificates of the agent's HTTPS endpoint (logs and exec).
 *
 * The serving pair is the one given by --tls-cert-file/--tls-private-key-file, or else,
 * as the kubelet does without them, one the agent signs itself: <root-dir>/pki/
 * agent.crt and agent.key (ECDSA P-256, CN "<node>@<unix time>", the node name and
 * address as SANs, one year), written once and reused while it has more than a day
 * left. Client certificates are checked against --client-ca-file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <arpa/inet.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_PEM   (1024 * 1024)
#define LIFETIME  (365LL * 24 * 3600)
#define RENEW_DAY (24LL * 3600)

static int read_pem(const char *path, char **ret, struct ck_err *reterr)
{
    size_t len;
    int r = ck__read_file(path, MAX_PEM, ret, &len);
    if (r < 0)
        return ck_err_set(reterr, CK_EIO, "cannot read %s: %s", path,
                          r == CK__E2BIG ? "too large" : strerror(-r));
    return 0;
}

/* Whether the certificate at path loads and is valid for more than a day. */
static bool still_good(const char *path)
{
    char *pem = NULL;
    size_t len;
    if (ck__read_file(path, MAX_PEM, &pem, &len) < 0)
        return false;
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    bool ok = false;
    if (gnutls_x509_crt_init(&crt) >= 0) {
        ok = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) >= 0 &&
             gnutls_x509_crt_get_expiration_time(crt) > time(NULL) + RENEW_DAY;
        gnutls_x509_crt_deinit(crt);
    }
    free(pem);
    return ok;
}

static int write_datum(const char *path, const gnutls_datum_t *d, struct ck_err *reterr)
{
    FILE *f = fopen(path, "we");
    if (!f || fwrite(d->data, 1, d->size, f) != d->size) {
        int e = errno;
        if (f)
            fclose(f);
        return ck_err_set(reterr, CK_EIO, "cannot write %s: %s", path, strerror(e));
    }
    if (fclose(f) != 0)
        return ck_err_set(reterr, CK_EIO, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* Signs a serving certificate for node/address with a new key into crt_path, key_path. */
static int self_sign(const char *node, const char *address, const char *crt_path,
                     const char *key_path, struct ck_err *reterr)
{
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t key_pem = {0}, crt_pem = {0};
    char cn[300];
    unsigned char serial[16], ip[16];
    time_t now = time(NULL);
    snprintf(cn, sizeof(cn), "%s@%lld", node, (long long)now);
    int bad = gnutls_x509_privkey_init(&key) < 0 ||
              gnutls_x509_privkey_generate(
                  key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0 ||
              gnutls_x509_crt_init(&crt) < 0 || gnutls_rnd(GNUTLS_RND_NONCE, serial, 16) < 0;
    serial[0] &= 0x7f; /* a positive serial */
    bad = bad || gnutls_x509_crt_set_version(crt, 3) < 0 || gnutls_x509_crt_set_key(crt, key) < 0 ||
          gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)) < 0 ||
          gnutls_x509_crt_set_activation_time(crt, now - 3600) < 0 ||
          gnutls_x509_crt_set_expiration_time(crt, (time_t)(now + LIFETIME)) < 0 ||
          gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                        (unsigned)strlen(cn)) < 0 ||
          gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, node,
                                               (unsigned)strlen(node), GNUTLS_FSAN_APPEND) < 0 ||
          gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE) < 0 ||
          gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0) < 0 ||
          gnutls_x509_crt_set_basic_constraints(crt, 0, -1) < 0;
    if (!bad && inet_pton(AF_INET, address, ip) == 1)
        bad = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
                                                   GNUTLS_FSAN_APPEND) < 0;
    bad = bad || gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0 ||
          gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &key_pem) < 0 ||
          gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &crt_pem) < 0;
    int r = bad ? ck_err_set(reterr, CK_EIO, "cannot make a serving certificate for %s", node) : 0;
    if (!r) {
        mode_t old = umask(077);
        r = write_datum(key_path, &key_pem, reterr);
        umask(old);
    }
    if (!r)
        r = write_datum(crt_path, &crt_pem, reterr);
    gnutls_free(key_pem.data);
    gnutls_free(crt_pem.data);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return r;
}

int ck__agent_tls_load(const struct ck_agent_config *config, const char *root_dir,
                       const char *address, struct ck__agent_tls *ret, struct ck_err *reterr)
{
    char crt[4200], key[4200], dir[4096];
    const char *crt_path = config->tls_cert_file, *key_path = config->tls_private_key_file;
    int r = 0;
    if (!crt_path != !key_path)
        return ck_err_set(reterr, CK_EINVAL,
                          "--tls-cert-file and --tls-private-key-file go together");
    if (!crt_path) {
        snprintf(dir, sizeof(dir), "%s/pki", root_dir);
        snprintf(crt, sizeof(crt), "%s/agent.crt", dir);
        snprintf(key, sizeof(key), "%s/agent.key", dir);
        crt_path = crt;
        key_path = key;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return ck_err_set(reterr, CK_EIO, "cannot create %s: %s", dir, strerror(errno));
        if (!still_good(crt) && (r = self_sign(config->node_name, address, crt, key, reterr)) < 0)
            return r;
    }
    if ((r = read_pem(crt_path, &ret->cert, reterr)) < 0 ||
        (r = read_pem(key_path, &ret->key, reterr)) < 0 ||
        (config->client_ca_file &&
         (r = read_pem(config->client_ca_file, &ret->client_ca, reterr)) < 0))
        return r;
    return 0;
}

void ck__agent_tls_release(struct ck__agent_tls *p)
{
    free(p->cert);
    free(p->key);
    free(p->client_ca);
    *p = (struct ck__agent_tls){0};
}

int ck__agent_tls_check_client(struct MHD_Connection *conn, bool required)
{
    if (!required)
        return 0;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = info ? (gnutls_session_t)info->tls_session : NULL;
    unsigned n = 0, status = 0;
    if (!session || !gnutls_certificate_get_peers(session, &n) || n == 0)
        return CK_EPERM;
    if (gnutls_certificate_verify_peers2(session, &status) != 0 || status != 0)
        return CK_EPERM;
    return 0;
}
