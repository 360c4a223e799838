/*
 * pki.c - the certificates and keys a ckube server needs, made at first
 * start and kept valid afterwards.
 *
 * Mirrors what kubeadm's certs phase makes for a control plane, in one
 * directory: a self-signed CA (ca.crt, ca.key, ten years), the serving
 * certificate (apiserver.crt/.key, one year; CN kube-apiserver; SANs
 * localhost, 127.0.0.1, ::1, kubernetes, kubernetes.default,
 * kubernetes.default.svc, kubernetes.default.svc.cluster.local, the listen
 * address and every --tls-san), the admin client certificate (admin.crt/.key,
 * CN kubernetes-admin, O system:masters) and the service-account signing key
 * (sa.key). Components get client certificates of their own through
 * ck_pki_client_cert(). Certificate keys are ECDSA P-256, whose handshakes
 * cost the server a fifth of RSA 2048's; the service-account key is RSA 2048
 * (RS256, Kubernetes' default), whose signatures verify four times faster
 * than ES256's, and a token is verified on every request that carries it
 * while it is signed once (docs/dependencies.md has the measurements). Keys
 * are written 0600 through a temporary file and rename(), so a crash never
 * leaves half a key.
 *
 * On every start ck_pki_ensure() re-reads what is there and keeps it when it
 * still holds: the key matches the certificate, the CA verifies it, it does
 * not expire within renew_before (30 days by default) and, for the serving
 * certificate, every SAN asked for is in it. Anything else is made again
 * (with a new key). The CA is only replaced once expired, since replacing it
 * invalidates every kubeconfig that embeds it. A user's own serving
 * certificate, key or client CA is checked (the pair must load together) and
 * used as is; with a user's client CA ckube cannot sign client certificates,
 * so it makes none.
 *
 * Every certificate and key is GnuTLS's x509 API's work; nothing here is
 * cryptography of ours.
 *
 * Threading: call from one thread at start-up; nothing is shared.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ckube/auth.h>

#include "ckube/internal/util.h"

#define DAY            (24LL * 3600)
#define CA_LIFETIME    (3650 * DAY)
#define LEAF_LIFETIME  (365 * DAY)
#define DEFAULT_RENEW  (30 * DAY)
#define BACKDATE       300 /* seconds: a client whose clock is a little behind still accepts it */
#define CA_COMMON_NAME "ckube-ca"

struct ctx {
    const struct ck_pki_options *o;
    long long now, renew;
    gnutls_x509_crt_t ca;
    gnutls_x509_privkey_t ca_key;
    int created;
};

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = ck__malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* ---- files ------------------------------------------------------------------ */

static int write_file(const char *path, const gnutls_datum_t *d, mode_t mode, struct ck_err *reterr)
{
    /* exclusive temporary file (no symlink followed), fsync, rename */
    int r = ck__write_file_atomic(path, d->data, d->size, mode);
    if (r < 0)
        return ck_err_set(reterr, CK_EIO, "writing %s: %s", path,
                          r == CK_ENOMEM ? "out of memory" : strerror(-r));
    return 0;
}

static int load_crt(const char *path, gnutls_x509_crt_t *ret)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_load_file(path, &d) < 0)
        return CK_ENOENT;
    int rc = gnutls_x509_crt_init(ret);
    if (rc == 0 && gnutls_x509_crt_import(*ret, &d, GNUTLS_X509_FMT_PEM) < 0) {
        gnutls_x509_crt_deinit(*ret);
        *ret = NULL;
        rc = -1;
    }
    gnutls_free(d.data);
    return rc < 0 ? CK_EINVAL : 0;
}

static int load_key(const char *path, gnutls_x509_privkey_t *ret)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_load_file(path, &d) < 0)
        return CK_ENOENT;
    int rc = gnutls_x509_privkey_init(ret);
    if (rc == 0 && gnutls_x509_privkey_import(*ret, &d, GNUTLS_X509_FMT_PEM) < 0) {
        gnutls_x509_privkey_deinit(*ret);
        *ret = NULL;
        rc = -1;
    }
    gnutls_free(d.data);
    if (rc == 0)
        chmod(path, 0600); /* a key someone loosened is tightened again */
    return rc < 0 ? CK_EINVAL : 0;
}

static int new_key_of(gnutls_x509_privkey_t *ret, gnutls_pk_algorithm_t alg, unsigned bits)
{
    if (gnutls_x509_privkey_init(ret) < 0)
        return CK_ENOMEM;
    if (gnutls_x509_privkey_generate(*ret, alg, bits, 0) < 0) {
        gnutls_x509_privkey_deinit(*ret);
        return CK_EIO;
    }
    return 0;
}

static int new_key(gnutls_x509_privkey_t *ret)
{
    return new_key_of(ret, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
}

static int save_key(gnutls_x509_privkey_t key, const char *path, struct ck_err *reterr)
{
    gnutls_datum_t out = {NULL, 0};
    if (gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &out) < 0)
        return ck_err_set(reterr, CK_EIO, "exporting a key failed");
    int rc = write_file(path, &out, 0600, reterr);
    gnutls_free(out.data);
    return rc;
}

static int save_crt(gnutls_x509_crt_t crt, const char *path, struct ck_err *reterr)
{
    gnutls_datum_t out = {NULL, 0};
    if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &out) < 0)
        return ck_err_set(reterr, CK_EIO, "exporting a certificate failed");
    int rc = write_file(path, &out, 0644, reterr);
    gnutls_free(out.data);
    return rc;
}

/* ---- certificates ------------------------------------------------------------- */

static bool key_matches(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
    unsigned char a[64], b[64];
    size_t la = sizeof(a), lb = sizeof(b);
    return gnutls_x509_crt_get_key_id(crt, 0, a, &la) == 0 &&
           gnutls_x509_privkey_get_key_id(key, 0, b, &lb) == 0 && la == lb && memcmp(a, b, la) == 0;
}

static bool is_ip(const char *s, unsigned char *buf, unsigned *len)
{
    if (inet_pton(AF_INET, s, buf) == 1) {
        *len = 4;
        return true;
    }
    if (inet_pton(AF_INET6, s, buf) == 1) {
        *len = 16;
        return true;
    }
    return false;
}

static bool has_san(gnutls_x509_crt_t crt, const char *san)
{
    unsigned char ip[16];
    unsigned len;
    if (is_ip(san, ip, &len))
        return gnutls_x509_crt_check_ip(crt, ip, len, 0) != 0;
    return gnutls_x509_crt_check_hostname2(crt, san, GNUTLS_VERIFY_DO_NOT_ALLOW_WILDCARDS) != 0;
}

/* The SANs the serving certificate must carry, NULL-terminated; caller frees the array. */
static const char **serving_sans(const struct ck_pki_options *o)
{
    static const char *const fixed[] = {"localhost",
                                        "127.0.0.1",
                                        "::1",
                                        "kubernetes",
                                        "kubernetes.default",
                                        "kubernetes.default.svc",
                                        "kubernetes.default.svc.cluster.local"};
    size_t nf = sizeof(fixed) / sizeof(fixed[0]);
    const char **v = ck__calloc(nf + o->n_sans + 2, sizeof(*v));
    if (!v)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nf; i++)
        v[n++] = fixed[i];
    /* an unspecified address (all interfaces) names no host: --tls-san names those */
    const char *l = o->listen_address;
    if (l && *l && strcmp(l, "0.0.0.0") != 0 && strcmp(l, "::") != 0)
        v[n++] = l;
    for (size_t i = 0; i < o->n_sans; i++)
        if (o->sans[i] && *o->sans[i])
            v[n++] = o->sans[i];
    return v;
}

/* A still-good certificate: its key, issued by our CA, far from expiry, every SAN present. */
static bool reusable(struct ctx *c, const char *crt_path, const char *key_path, const char **sans)
{
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
    if (load_crt(crt_path, &crt))
        return false;
    if (load_key(key_path, &key)) {
        gnutls_x509_crt_deinit(crt);
        return false;
    }
    unsigned status = 0;
    bool ok =
        key_matches(crt, key) &&
        gnutls_x509_crt_verify(crt, &c->ca, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS, &status) == 0 &&
        status == 0 && (long long)gnutls_x509_crt_get_expiration_time(crt) - c->now > c->renew;
    for (size_t i = 0; ok && sans && sans[i]; i++)
        ok = has_san(crt, sans[i]);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    return ok;
}

static int set_serial(gnutls_x509_crt_t crt)
{
    unsigned char serial[16];
    if (gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial)) < 0)
        return CK_EIO;
    serial[0] &= 0x7f; /* positive */
    serial[0] |= 0x01; /* and of full length */
    return gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)) < 0 ? CK_EIO : 0;
}

/* A new certificate for key: subject CN (and O...), valid from now for lifetime. */
static int new_crt(struct ctx *c, gnutls_x509_privkey_t key, const char *cn,
                   const char *const *orgs, size_t n_orgs, long long lifetime,
                   gnutls_x509_crt_t *ret)
{
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0)
        return CK_ENOMEM;
    int bad = gnutls_x509_crt_set_version(crt, 3) < 0 || gnutls_x509_crt_set_key(crt, key) < 0 ||
              set_serial(crt) ||
              gnutls_x509_crt_set_activation_time(crt, (time_t)(c->now - BACKDATE)) < 0 ||
              gnutls_x509_crt_set_expiration_time(crt, (time_t)(c->now + lifetime)) < 0 ||
              gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                            (unsigned)strlen(cn)) < 0;
    for (size_t i = 0; !bad && i < n_orgs; i++)
        bad = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, orgs[i],
                                            (unsigned)strlen(orgs[i])) < 0;
    if (!bad) {
        unsigned char id[64];
        size_t len = sizeof(id);
        bad = gnutls_x509_privkey_get_key_id(key, 0, id, &len) < 0 ||
              gnutls_x509_crt_set_subject_key_id(crt, id, len) < 0;
    }
    if (bad) {
        gnutls_x509_crt_deinit(crt);
        return CK_EIO;
    }
    *ret = crt;
    return 0;
}

static int make_ca(struct ctx *c, const char *cn, const char *crt_path, const char *key_path,
                   struct ck_err *reterr)
{
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    if (new_key(&key))
        return ck_err_set(reterr, CK_EIO, "generating the CA key failed");
    if (new_crt(c, key, cn, NULL, 0, CA_LIFETIME, &crt)) {
        gnutls_x509_privkey_deinit(key);
        return ck_err_set(reterr, CK_EIO, "making the CA certificate failed");
    }
    int rc =
        gnutls_x509_crt_set_basic_constraints(crt, 1, -1) < 0 ||
                gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
                                                       GNUTLS_KEY_DIGITAL_SIGNATURE) < 0 ||
                gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0
            ? CK_EIO
            : 0;
    if (!rc && !(rc = save_key(key, key_path, reterr)))
        rc = save_crt(crt, crt_path, reterr);
    else if (rc)
        rc = ck_err_set(reterr, rc, "signing the CA certificate failed");
    if (rc) {
        gnutls_x509_crt_deinit(crt);
        gnutls_x509_privkey_deinit(key);
        return rc;
    }
    c->ca = crt;
    c->ca_key = key;
    c->created += 2;
    return 0;
}

/* Loads the CA, making one (named cn) when there is none or it has expired. */
static int ensure_ca(struct ctx *c, const char *cn, const char *crt_path, const char *key_path,
                     struct ck_err *reterr)
{
    gnutls_x509_crt_t crt;
    gnutls_x509_privkey_t key;
    int rc = load_crt(crt_path, &crt);
    if (rc == 0) {
        if (load_key(key_path, &key) == 0) {
            if (key_matches(crt, key) &&
                (long long)gnutls_x509_crt_get_expiration_time(crt) > c->now) {
                c->ca = crt;
                c->ca_key = key;
                return 0;
            }
            gnutls_x509_privkey_deinit(key);
        }
        gnutls_x509_crt_deinit(crt);
    }
    return make_ca(c, cn, crt_path, key_path, reterr);
}

static int sign_leaf(struct ctx *c, gnutls_x509_crt_t crt)
{
    unsigned char id[64];
    size_t len = sizeof(id);
    if (gnutls_x509_crt_get_subject_key_id(c->ca, id, &len, NULL) == 0 &&
        gnutls_x509_crt_set_authority_key_id(crt, id, len) < 0)
        return CK_EIO;
    return gnutls_x509_crt_sign2(crt, c->ca, c->ca_key, GNUTLS_DIG_SHA256, 0) < 0 ? CK_EIO : 0;
}

/* Makes (or keeps) a leaf: a client certificate when sans is NULL, else a serving one. */
static int ensure_leaf(struct ctx *c, const char *crt_path, const char *key_path, const char *cn,
                       const char *const *orgs, size_t n_orgs, const char **sans,
                       struct ck_err *reterr)
{
    if (reusable(c, crt_path, key_path, sans))
        return 0;
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    if (new_key(&key))
        return ck_err_set(reterr, CK_EIO, "generating a key for %s failed", cn);
    if (new_crt(c, key, cn, orgs, n_orgs, LEAF_LIFETIME, &crt)) {
        gnutls_x509_privkey_deinit(key);
        return ck_err_set(reterr, CK_EIO, "making the certificate of %s failed", cn);
    }
    int bad = gnutls_x509_crt_set_basic_constraints(crt, 0, -1) < 0 ||
              gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
                                                     GNUTLS_KEY_KEY_ENCIPHERMENT) < 0 ||
              gnutls_x509_crt_set_key_purpose_oid(
                  crt, sans ? GNUTLS_KP_TLS_WWW_SERVER : GNUTLS_KP_TLS_WWW_CLIENT, 0) < 0;
    for (size_t i = 0; !bad && sans && sans[i]; i++) {
        unsigned char ip[16];
        unsigned len;
        if (is_ip(sans[i], ip, &len))
            bad = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, len,
                                                       GNUTLS_FSAN_APPEND) < 0;
        else
            bad = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, sans[i],
                                                       (unsigned)strlen(sans[i]),
                                                       GNUTLS_FSAN_APPEND) < 0;
    }
    int rc = bad || sign_leaf(c, crt) ? ck_err_set(reterr, CK_EIO, "signing %s failed", cn) : 0;
    if (!rc && !(rc = save_key(key, key_path, reterr)))
        rc = save_crt(crt, crt_path, reterr);
    if (!rc)
        c->created += 2;
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    return rc;
}

/* The service-account key: made once, never renewed (tokens in use would die with it). */
static int ensure_sa_key(struct ctx *c, const char *path, struct ck_err *reterr)
{
    gnutls_x509_privkey_t key;
    if (load_key(path, &key) == 0) {
        gnutls_x509_privkey_deinit(key);
        return 0;
    }
    if (new_key_of(&key, GNUTLS_PK_RSA, 2048))
        return ck_err_set(reterr, CK_EIO, "generating the service-account key failed");
    int rc = save_key(key, path, reterr);
    gnutls_x509_privkey_deinit(key);
    if (!rc)
        c->created++;
    return rc;
}

static int check_own_pair(const char *cert, const char *key, struct ck_err *reterr)
{
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int rc = gnutls_certificate_set_x509_key_file(cred, cert, key, GNUTLS_X509_FMT_PEM);
    gnutls_certificate_free_credentials(cred);
    if (rc < 0)
        return ck_err_set(reterr, CK_EINVAL,
                          "--tls-cert-file %s with --tls-private-key-file %s: %s", cert, key,
                          gnutls_strerror(rc));
    return 0;
}

static int check_own_ca(const char *path, struct ck_err *reterr)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_load_file(path, &d) < 0)
        return ck_err_set(reterr, CK_EIO, "--client-ca-file %s cannot be read", path);
    gnutls_x509_crt_t *list = NULL;
    unsigned n = 0;
    int rc = gnutls_x509_crt_list_import2(&list, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    gnutls_free(d.data);
    for (unsigned i = 0; rc >= 0 && i < n; i++)
        gnutls_x509_crt_deinit(list[i]);
    gnutls_free(list);
    if (rc < 0 || n == 0)
        return ck_err_set(reterr, CK_EINVAL, "--client-ca-file %s holds no certificate", path);
    return 0;
}

void ck_pki_release(struct ck_pki *pki)
{
    free(pki->ca_cert);
    free(pki->client_ca);
    free(pki->server_cert);
    free(pki->server_key);
    free(pki->admin_cert);
    free(pki->admin_key);
    free(pki->sa_key);
    memset(pki, 0, sizeof(*pki));
}

static int open_ctx(struct ctx *c, const struct ck_pki_options *o, struct ck_err *reterr)
{
    memset(c, 0, sizeof(*c));
    c->o = o;
    c->now = o->now ? o->now : (long long)time(NULL);
    c->renew = o->renew_before ? o->renew_before : DEFAULT_RENEW;
    if (!o->dir || !*o->dir)
        return ck_err_set(reterr, CK_EINVAL, "the PKI needs a directory");
    if (mkdir(o->dir, 0700) != 0 && errno != EEXIST)
        return ck_err_set(reterr, CK_EIO, "creating %s: %s", o->dir, strerror(errno));
    return 0;
}

static void close_ctx(struct ctx *c)
{
    if (c->ca)
        gnutls_x509_crt_deinit(c->ca);
    if (c->ca_key)
        gnutls_x509_privkey_deinit(c->ca_key);
}

int ck_pki_ensure(const struct ck_pki_options *opts, struct ck_pki *ret, struct ck_err *reterr)
{
    struct ctx c;
    struct ck_pki p = {0};
    const char **sans = NULL;
    int rc = open_ctx(&c, opts, reterr);
    if (rc)
        return rc;
    bool own_serving = opts->tls_cert_file || opts->tls_private_key_file;
    if (own_serving && !(opts->tls_cert_file && opts->tls_private_key_file)) {
        rc =
            ck_err_set(reterr, CK_EINVAL, "--tls-cert-file and --tls-private-key-file go together");
        goto out;
    }
    char *ca_crt = join(opts->dir, CK_PKI_CA_CERT), *ca_key = join(opts->dir, CK_PKI_CA_KEY);
    p.sa_key = join(opts->dir, CK_PKI_SA_KEY);
    bool need_ca = !own_serving || !opts->client_ca_file;
    if (!ca_crt || !ca_key || !p.sa_key ||
        (need_ca && (rc = ensure_ca(&c, CA_COMMON_NAME, ca_crt, ca_key, reterr)))) {
        rc = rc ? rc : ck_err_set(reterr, CK_ENOMEM, "out of memory");
        free(ca_crt);
        free(ca_key);
        goto out;
    }
    free(ca_key);
    if (own_serving) {
        if ((rc = check_own_pair(opts->tls_cert_file, opts->tls_private_key_file, reterr))) {
            free(ca_crt);
            goto out;
        }
        p.server_cert = ck__strdup(opts->tls_cert_file);
        p.server_key = ck__strdup(opts->tls_private_key_file);
    } else {
        p.ca_cert = ck__strdup(ca_crt);
        p.server_cert = join(opts->dir, CK_PKI_SERVER_CERT);
        p.server_key = join(opts->dir, CK_PKI_SERVER_KEY);
        sans = serving_sans(opts);
        if (!p.server_cert || !p.server_key || !sans) {
            free(ca_crt);
            rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = ensure_leaf(&c, p.server_cert, p.server_key, "kube-apiserver", NULL, 0, sans,
                              reterr))) {
            free(ca_crt);
            goto out;
        }
    }
    if (opts->client_ca_file) {
        free(ca_crt);
        if ((rc = check_own_ca(opts->client_ca_file, reterr)))
            goto out;
        p.client_ca = ck__strdup(opts->client_ca_file);
    } else {
        p.client_ca = ca_crt;
        p.admin_cert = join(opts->dir, CK_PKI_ADMIN_CERT);
        p.admin_key = join(opts->dir, CK_PKI_ADMIN_KEY);
        static const char *const masters[] = {CK_AUTH_MASTERS};
        if (!p.admin_cert || !p.admin_key) {
            rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out;
        }
        if ((rc = ensure_leaf(&c, p.admin_cert, p.admin_key, "kubernetes-admin", masters, 1, NULL,
                              reterr)))
            goto out;
    }
    if ((rc = ensure_sa_key(&c, p.sa_key, reterr)))
        goto out;
    p.created = c.created;
    *ret = p;
out:
    free(sans);
    if (rc)
        ck_pki_release(&p);
    close_ctx(&c);
    return rc;
}

/*
 * A client certificate (names in opts->dir) signed by the CA at ca_crt/ca_key: a CA
 * made (CN ca_cn) when missing or expired when ca_cn is not NULL, else one that must be.
 */
static int signed_client(const struct ck_pki_options *opts, const char *ca_crt_name,
                         const char *ca_key_name, const char *ca_cn, const char *crt_name,
                         const char *key_name, const char *cn, const char *const *orgs,
                         size_t n_orgs, struct ck_err *reterr)
{
    struct ctx c;
    int rc = open_ctx(&c, opts, reterr);
    if (rc)
        return rc;
    char *ca_crt = join(opts->dir, ca_crt_name), *ca_key = join(opts->dir, ca_key_name);
    char *crt = join(opts->dir, crt_name), *key = join(opts->dir, key_name);
    if (!ca_crt || !ca_key || !crt || !key) {
        rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    } else if (ca_cn) {
        rc = ensure_ca(&c, ca_cn, ca_crt, ca_key, reterr);
    } else if (load_crt(ca_crt, &c.ca) || load_key(ca_key, &c.ca_key)) {
        rc = ck_err_set(reterr, CK_ENOENT, "no CA in %s: run ck_pki_ensure() first", opts->dir);
    }
    if (rc == 0)
        rc = ensure_leaf(&c, crt, key, cn, orgs, n_orgs, NULL, reterr);
    free(ca_crt);
    free(ca_key);
    free(crt);
    free(key);
    close_ctx(&c);
    return rc;
}

int ck_pki_client_cert(const struct ck_pki_options *opts, const char *file_base, const char *cn,
                       const char *const *orgs, size_t n_orgs, struct ck_err *reterr)
{
    char crt[256], key[256];
    snprintf(crt, sizeof(crt), "%s.crt", file_base);
    snprintf(key, sizeof(key), "%s.key", file_base);
    return signed_client(opts, CK_PKI_CA_CERT, CK_PKI_CA_KEY, NULL, crt, key, cn, orgs, n_orgs,
                         reterr);
}

int ck_pki_front_proxy(const struct ck_pki_options *opts, struct ck_err *reterr)
{
    return signed_client(opts, CK_PKI_FRONT_PROXY_CA_CERT, CK_PKI_FRONT_PROXY_CA_KEY,
                         "front-proxy-ca", CK_PKI_FRONT_PROXY_CLIENT_CERT,
                         CK_PKI_FRONT_PROXY_CLIENT_KEY, "front-proxy-client", NULL, 0, reterr);
}
