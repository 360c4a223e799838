/*
 * bootstrap.c - the agent's TLS bootstrapping: its client certificate asked
 * of the cluster with a bootstrap credential (kubelet's
 * --bootstrap-kubeconfig).
 *
 * Mirrors kubelet's pkg/kubelet/certificate/bootstrap (LoadClientCert) and
 * client-go's util/certificate/csr (RequestCertificate,
 * WaitForCertificate): when the agent's kubeconfig does not exist yet, or its
 * certificate has expired, a key is made (ECDSA P-256, kept in
 * CERT-DIR/kubelet-client.key.tmp across restarts), a request for
 * CN=system:node:NAME, O=system:nodes, usages digital signature and client
 * auth is sent to kubernetes.io/kube-apiserver-client-kubelet as the
 * bootstrap kubeconfig's user (a bootstrap token), named after the key
 * (node-csr-<key id>, so a restarted agent finds its own request), and the
 * agent waits for the certificate csrapproving and csrsigning give it. The
 * certificate and key go to CERT-DIR/kubelet-client-current.pem (mode
 * 0600), and the kubeconfig is written with the bootstrap kubeconfig's
 * server and CA and that file as its credentials. A request Denied or
 * Failed ends the wait with an error.
 *
 * The key, the request and the check of the certificate are GnuTLS's; the
 * kubeconfig is written with jansson.
 *
 * Threading: runs on the agent's main thread before anything else starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"
#include "ckube/rest.h"

#define KEY_FILE  "kubelet-client.key.tmp"
#define CERT_FILE "kubelet-client-current.pem"
#define CSR_PATH  "/apis/certificates.k8s.io/v1/certificatesigningrequests"

/* Writes len bytes to path with mode, through a temporary file and rename(). */
static int write_file(const char *path, const void *data, size_t len, mode_t mode,
                      struct ck_err *reterr)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.partial", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return ck_err_set(reterr, CK_EIO, "cannot write %s: %s", tmp, strerror(errno));
    ssize_t n = write(fd, data, len);
    int bad = n < 0 || (size_t)n != len || fsync(fd) < 0;
    close(fd);
    if (bad || rename(tmp, path) < 0) {
        unlink(tmp);
        return ck_err_set(reterr, CK_EIO, "cannot write %s", path);
    }
    return 0;
}

/* Whether the kubeconfig at path exists and its client certificate is still valid. */
static bool usable_kubeconfig(const char *path, long long now)
{
    struct ck_kubeconfig *kc = NULL;
    struct ck_err err = {0};
    if (ck_kubeconfig_load(path, NULL, &kc, &err) < 0)
        return false;
    gnutls_datum_t d = {NULL, 0};
    bool ok = false;
    if (kc->client_cert_data) {
        d.data = (unsigned char *)kc->client_cert_data;
        d.size = (unsigned)strlen(kc->client_cert_data);
    } else if (!kc->client_cert_file || gnutls_load_file(kc->client_cert_file, &d) < 0) {
        d.data = NULL;
    }
    gnutls_x509_crt_t crt;
    if (d.data && gnutls_x509_crt_init(&crt) == 0) {
        ok = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) == 0 &&
             (long long)gnutls_x509_crt_get_expiration_time(crt) > now;
        gnutls_x509_crt_deinit(crt);
    }
    if (d.data && !kc->client_cert_data)
        gnutls_free(d.data);
    /* a token or no credentials: nothing to renew, use it as it is */
    if (!kc->client_cert_data && !kc->client_cert_file)
        ok = true;
    ck_kubeconfig_free(kc);
    return ok;
}

/* The agent's key: the one kept in path, else a new one saved there. */
static int load_or_make_key(const char *path, gnutls_x509_privkey_t *ret, struct ck_err *reterr)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_x509_privkey_init(ret) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (gnutls_load_file(path, &d) == 0) {
        int rc = gnutls_x509_privkey_import(*ret, &d, GNUTLS_X509_FMT_PEM);
        gnutls_free(d.data);
        if (rc == 0)
            return 0;
    }
    gnutls_datum_t out = {NULL, 0};
    if (gnutls_x509_privkey_generate(*ret, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0 ||
        gnutls_x509_privkey_export2(*ret, GNUTLS_X509_FMT_PEM, &out) < 0) {
        gnutls_x509_privkey_deinit(*ret);
        return ck_err_set(reterr, CK_EIO, "cannot make the agent's key");
    }
    int r = write_file(path, out.data, out.size, 0600, reterr);
    gnutls_free(out.data);
    if (r < 0)
        gnutls_x509_privkey_deinit(*ret);
    return r;
}

/* The request for the node's client certificate, PEM labelled CERTIFICATE REQUEST. */
static int make_request(gnutls_x509_privkey_t key, const char *node, gnutls_datum_t *ret_pem,
                        struct ck_err *reterr)
{
    char cn[300];
    snprintf(cn, sizeof(cn), "system:node:%s", node);
    static const char org[] = "system:nodes";
    gnutls_x509_crq_t crq;
    gnutls_datum_t der = {NULL, 0};
    if (gnutls_x509_crq_init(&crq) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int bad = gnutls_x509_crq_set_version(crq, 1) < 0 || gnutls_x509_crq_set_key(crq, key) < 0 ||
              gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, org,
                                            sizeof(org) - 1) < 0 ||
              gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                            (unsigned)strlen(cn)) < 0 ||
              gnutls_x509_crq_sign2(crq, key, GNUTLS_DIG_SHA256, 0) < 0 ||
              gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_DER, &der) < 0 ||
              /* Kubernetes takes only this label (GnuTLS's PEM says NEW CERTIFICATE REQUEST) */
              gnutls_pem_base64_encode2("CERTIFICATE REQUEST", &der, ret_pem) < 0;
    gnutls_free(der.data);
    gnutls_x509_crq_deinit(crq);
    return bad ? ck_err_set(reterr, CK_EIO, "cannot make the certificate request") : 0;
}

/* The request's name: node-csr- and the key's id, so that a restart finds it again. */
static int request_name(gnutls_x509_privkey_t key, char *buf, size_t size)
{
    unsigned char id[64];
    size_t len = sizeof(id);
    if (gnutls_x509_privkey_get_key_id(key, 0, id, &len) < 0)
        return CK_EIO;
    int n = snprintf(buf, size, "node-csr-");
    for (size_t i = 0; i < len && (size_t)n + 3 < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%02x", id[i]);
    return 0;
}

static bool has_condition(const json_t *csr, const char *type, const char **ret_message)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(csr, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0) {
            *ret_message = json_string_value(json_object_get(c, "message"));
            return true;
        }
    }
    return false;
}

/* Creates the request (or finds the one made before) and waits for its certificate. */
static int request_certificate(struct ck_rest *client, const char *name, const gnutls_datum_t *pem,
                               long long timeout, char **ret_cert_pem, struct ck_err *reterr)
{
    char *b64 = ck_base64_encode(pem->data, pem->size);
    json_t *csr = b64 ? json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:[s, s]}}", "apiVersion",
                                  "certificates.k8s.io/v1", "kind", "CertificateSigningRequest",
                                  "metadata", "name", name, "spec", "request", b64, "signerName",
                                  "kubernetes.io/kube-apiserver-client-kubelet", "usages",
                                  "digital signature", "client auth")
                      : NULL;
    free(b64);
    if (!csr)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_err err = {0};
    int r = ck_rest_do(client, "POST", CSR_PATH, csr, NULL, NULL, &err);
    json_decref(csr);
    if (r < 0 && r != CK_EEXIST) {
        r = ck_err_set(reterr, r, "creating certificate signing request %s: %s", name,
                       ck_err_message(&err));
        ck_err_release(&err);
        return r;
    }
    ck_err_release(&err);
    CK_LOGS(0, "Waiting for the client certificate", "csr", name);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", CSR_PATH, name);
    long long deadline = (long long)time(NULL) + timeout;
    for (;;) {
        json_t *got = NULL;
        struct ck_err gerr = {0};
        r = ck_rest_do(client, "GET", path, NULL, NULL, &got, &gerr);
        ck_err_release(&gerr);
        const char *why = NULL;
        const char *cert =
            json_string_value(json_object_get(json_object_get(got, "status"), "certificate"));
        if (r == 0 && cert && *cert) {
            size_t len = 0;
            *ret_cert_pem = ck_base64_decode(cert, &len);
            json_decref(got);
            return *ret_cert_pem ? 0
                                 : ck_err_set(reterr, CK_EINVAL, "the certificate is no base64");
        }
        if (r == 0 && (has_condition(got, "Denied", &why) || has_condition(got, "Failed", &why))) {
            r = ck_err_set(reterr, CK_EPERM, "certificate signing request %s was refused: %s", name,
                           why ? why : "");
            json_decref(got);
            return r;
        }
        json_decref(got);
        if ((long long)time(NULL) >= deadline)
            return ck_err_set(reterr, CK_EIO,
                              "timed out waiting for certificate signing request %s", name);
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
}

/* The agent's kubeconfig: the bootstrap one's server and CA, the new certificate file. */
static int write_kubeconfig(const char *path, const struct ck_kubeconfig *boot,
                            const char *cert_path, struct ck_err *reterr)
{
    json_t *cluster = json_pack("{s:s}", "server", boot->server);
    char *ca = boot->ca_data ? ck_base64_encode(boot->ca_data, strlen(boot->ca_data)) : NULL;
    if (cluster && ca)
        json_object_set_new(cluster, "certificate-authority-data", json_string(ca));
    else if (cluster && boot->ca_file)
        json_object_set_new(cluster, "certificate-authority", json_string(boot->ca_file));
    free(ca);
    json_t *config =
        cluster ? json_pack("{s:s, s:s, s:[{s:s, s:o}], s:[{s:s, s:{s:s, s:s}}], "
                            "s:[{s:s, s:{s:s, s:s}}], s:s}",
                            "apiVersion", "v1", "kind", "Config", "clusters", "name", "default",
                            "cluster", cluster, "users", "name", "default-auth", "user",
                            "client-certificate", cert_path, "client-key", cert_path, "contexts",
                            "name", "default", "context", "cluster", "default", "user",
                            "default-auth", "current-context", "default")
                : NULL;
    char *text = config ? json_dumps(config, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(config);
    if (!text)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = write_file(path, text, strlen(text), 0600, reterr);
    free(text);
    return r;
}

int ck_agent_bootstrap(const struct ck_agent_bootstrap *b, struct ck_err *reterr)
{
    if (usable_kubeconfig(b->kubeconfig, (long long)time(NULL)))
        return 0;
    CK_LOGS(0, "No usable kubeconfig; bootstrapping a client certificate", "kubeconfig",
            b->kubeconfig, "bootstrapKubeconfig", b->bootstrap_kubeconfig);
    if (mkdir(b->cert_dir, 0700) < 0 && errno != EEXIST)
        return ck_err_set(reterr, CK_EIO, "cannot make %s: %s", b->cert_dir, strerror(errno));
    struct ck_kubeconfig *boot = NULL;
    int r = ck_kubeconfig_load(b->bootstrap_kubeconfig, NULL, &boot, reterr);
    if (r < 0)
        return r;
    char key_path[4096], cert_path[4096], name[200];
    snprintf(key_path, sizeof(key_path), "%s/%s", b->cert_dir, KEY_FILE);
    snprintf(cert_path, sizeof(cert_path), "%s/%s", b->cert_dir, CERT_FILE);
    gnutls_x509_privkey_t key = NULL;
    gnutls_datum_t csr = {NULL, 0}, key_pem = {NULL, 0};
    struct ck_rest *client = NULL;
    char *cert = NULL;
    if ((r = load_or_make_key(key_path, &key, reterr)) < 0)
        goto out;
    if ((r = make_request(key, b->node_name, &csr, reterr)) < 0)
        goto out;
    if (request_name(key, name, sizeof(name)) < 0) {
        r = ck_err_set(reterr, CK_EIO, "cannot name the certificate request");
        goto out;
    }
    if ((r = ck_rest_new_from_kubeconfig(boot, -1, 0, &client, reterr)) < 0)
        goto out;
    r = request_certificate(client, name, &csr, b->timeout > 0 ? b->timeout : 3600, &cert, reterr);
    if (r < 0)
        goto out;
    if (gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &key_pem) < 0) {
        r = ck_err_set(reterr, CK_EIO, "cannot export the agent's key");
        goto out;
    }
    /* certificate and key in one file, as kubelet-client-current.pem holds them */
    size_t cert_len = strlen(cert);
    char *both = ck__malloc(cert_len + key_pem.size + 1);
    if (!both) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    memcpy(both, cert, cert_len);
    memcpy(both + cert_len, key_pem.data, key_pem.size);
    r = write_file(cert_path, both, cert_len + key_pem.size, 0600, reterr);
    free(both);
    if (r == 0)
        r = write_kubeconfig(b->kubeconfig, boot, cert_path, reterr);
    if (r == 0) {
        unlink(key_path); /* its copy is in the current pair now */
        CK_LOGS(0, "Client certificate issued", "csr", name, "kubeconfig", b->kubeconfig);
    }
out:
    free(cert);
    if (key_pem.data) {
        memset(key_pem.data, 0, key_pem.size);
        gnutls_free(key_pem.data);
    }
    gnutls_free(csr.data);
    if (key)
        gnutls_x509_privkey_deinit(key);
    ck_rest_free(client);
    ck_kubeconfig_free(boot);
    return r;
}
