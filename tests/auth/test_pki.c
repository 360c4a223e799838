/*
 * test_pki.c - the PKI: first start creates the CA, serving, admin and
 * service-account files with private keys 0600; later starts reuse them
 * byte for byte; certificates near expiry, with a changed listen address,
 * with a loosened or broken file are made again while the CA stays; a
 * user's own certificate, key and client CA are checked and used; component
 * client certificates; and the client-certificate user (CN, O) of what the
 * PKI issues.
 */
#include "cktest.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ckube/auth.h>

#define NOW 1700000000LL
#define DAY (24LL * 3600)

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ckube-pki-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    fclose(f);
    if (ret_len)
        *ret_len = n;
    return buf;
}

static char *in_dir(const char *sub, const char *name)
{
    static char buf[64][256]; /* a ring: a test uses far fewer paths at once */
    static int i;
    i = (i + 1) % 64;
    snprintf(buf[i], sizeof(buf[i]), "%s%s/%s", dir, sub, name);
    return buf[i];
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 0777;
}

static gnutls_x509_crt_t crt_of(const char *path)
{
    gnutls_datum_t d = {NULL, 0};
    assert_int_equal(gnutls_load_file(path, &d), 0);
    gnutls_x509_crt_t crt;
    gnutls_x509_crt_init(&crt);
    assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
    gnutls_free(d.data);
    return crt;
}

static const char *const extra_sans[] = {"api.example.com", "192.0.2.7"};

static struct ck_pki_options opts_at(long long now, const char *listen)
{
    struct ck_pki_options o = {
        .dir = in_dir("", "pki"),
        .listen_address = listen,
        .sans = extra_sans,
        .n_sans = 2,
        .now = now,
    };
    return o;
}

static void test_first_start_creates_everything_private_keys_0600(void **state)
{
    (void)state;
    struct ck_pki_options o = opts_at(NOW, "10.0.0.5");
    struct ck_pki p;
    struct ck_err err = {0};
    int rc = ck_pki_ensure(&o, &p, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(p.created, 7);
    assert_int_equal(mode_of(o.dir), 0700);
    assert_int_equal(mode_of(p.server_key), 0600);
    assert_int_equal(mode_of(p.admin_key), 0600);
    assert_int_equal(mode_of(p.sa_key), 0600);
    assert_int_equal(mode_of(in_dir("/pki", "ca.key")), 0600);
    assert_int_equal(mode_of(p.server_cert), 0644);
    assert_string_equal(p.ca_cert, in_dir("/pki", "ca.crt"));
    assert_string_equal(p.client_ca, p.ca_cert);

    /* the serving certificate: signed by the CA, every SAN, server auth */
    gnutls_x509_crt_t ca = crt_of(p.ca_cert), srv = crt_of(p.server_cert);
    unsigned status = 1;
    assert_int_equal(
        gnutls_x509_crt_verify(srv, &ca, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS, &status), 0);
    assert_int_equal(status, 0);
    static const char *const names[] = {"localhost", "kubernetes", "kubernetes.default.svc",
                                        "api.example.com"};
    for (size_t i = 0; i < 4; i++)
        assert_true(gnutls_x509_crt_check_hostname(srv, names[i]));
    assert_false(gnutls_x509_crt_check_hostname(srv, "evil.example.com"));
    static const unsigned char lo4[] = {127, 0, 0, 1}, listen[] = {10, 0, 0, 5},
                               extra[] = {192, 0, 2, 7};
    static const unsigned char lo6[16] = {[15] = 1};
    assert_true(gnutls_x509_crt_check_ip(srv, lo4, 4, 0));
    assert_true(gnutls_x509_crt_check_ip(srv, lo6, 16, 0));
    assert_true(gnutls_x509_crt_check_ip(srv, listen, 4, 0));
    assert_true(gnutls_x509_crt_check_ip(srv, extra, 4, 0));
    assert_int_equal(gnutls_x509_crt_get_expiration_time(srv), NOW + 365 * DAY);
    assert_int_equal(gnutls_x509_crt_get_expiration_time(ca), NOW + 3650 * DAY);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(srv);

    /* the admin certificate authenticates as kubernetes-admin in system:masters */
    size_t len = 0;
    char *pem = slurp(p.admin_cert, &len);
    struct ck_auth_user *u = NULL;
    assert_int_equal(ck_auth_user_from_cert(pem, len, true, &u, NULL), 0);
    assert_string_equal(u->name, "kubernetes-admin");
    assert_int_equal(u->n_groups, 2);
    assert_string_equal(u->groups[0], "system:masters");
    assert_string_equal(u->groups[1], "system:authenticated");
    ck_auth_user_free(u);
    free(pem);

    /* the service-account key signs tokens */
    struct ck_auth_sa_key *sa = NULL;
    assert_int_equal(ck_auth_sa_key_load(p.sa_key, &sa, NULL), 0);
    assert_string_equal(ck_auth_sa_key_alg(sa), "RS256");
    ck_auth_sa_key_free(sa);
    ck_pki_release(&p);
}

static void test_later_starts_reuse_byte_for_byte(void **state)
{
    (void)state;
    struct ck_pki_options o = opts_at(NOW + 100 * DAY, "10.0.0.5");
    char *before = slurp(in_dir("/pki", "apiserver.crt"), NULL);
    char *ca_before = slurp(in_dir("/pki", "ca.crt"), NULL);
    struct ck_pki p;
    assert_int_equal(ck_pki_ensure(&o, &p, NULL), 0);
    assert_int_equal(p.created, 0);
    char *after = slurp(p.server_cert, NULL);
    assert_string_equal(before, after);
    free(before);
    free(after);
    free(ca_before);
    ck_pki_release(&p);
}

static void test_near_expiry_and_changes_renew_leaves_not_the_ca(void **state)
{
    (void)state;
    char *ca_before = slurp(in_dir("/pki", "ca.crt"), NULL);
    char *admin_before = slurp(in_dir("/pki", "admin.crt"), NULL);
    /* a new listen address: only the serving certificate changes */
    struct ck_pki_options o = opts_at(NOW + 100 * DAY, "10.0.0.6");
    struct ck_pki p;
    assert_int_equal(ck_pki_ensure(&o, &p, NULL), 0);
    assert_int_equal(p.created, 2);
    gnutls_x509_crt_t srv = crt_of(p.server_cert);
    static const unsigned char ip[] = {10, 0, 0, 6};
    assert_true(gnutls_x509_crt_check_ip(srv, ip, 4, 0));
    gnutls_x509_crt_deinit(srv);
    char *admin_now = slurp(p.admin_cert, NULL);
    assert_string_equal(admin_before, admin_now);
    free(admin_now);
    ck_pki_release(&p);

    /* 340 days after the first start the admin certificate is within 30 days of expiry;
     * the serving one, made again at day 100, is not */
    char *srv_before = slurp(in_dir("/pki", "apiserver.crt"), NULL);
    o = opts_at(NOW + 340 * DAY, "10.0.0.6");
    assert_int_equal(ck_pki_ensure(&o, &p, NULL), 0);
    assert_int_equal(p.created, 2);
    gnutls_x509_crt_t adm = crt_of(p.admin_cert);
    assert_int_equal(gnutls_x509_crt_get_expiration_time(adm), NOW + 340 * DAY + 365 * DAY);
    gnutls_x509_crt_deinit(adm);
    char *srv_now = slurp(p.server_cert, NULL);
    assert_string_equal(srv_before, srv_now);
    char *ca_now = slurp(p.ca_cert, NULL);
    assert_string_equal(ca_before, ca_now);
    free(ca_now);
    free(srv_now);
    free(srv_before);
    ck_pki_release(&p);

    /* a loosened key is tightened; a broken certificate is made again */
    chmod(in_dir("/pki", "admin.key"), 0644);
    FILE *f = fopen(in_dir("/pki", "apiserver.crt"), "w");
    fputs("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n", f);
    fclose(f);
    assert_int_equal(ck_pki_ensure(&o, &p, NULL), 0);
    assert_int_equal(p.created, 2);
    assert_int_equal(mode_of(p.admin_key), 0600);
    ck_pki_release(&p);
    free(ca_before);
    free(admin_before);
}

static void test_component_client_certificates(void **state)
{
    (void)state;
    struct ck_pki_options o = opts_at(NOW, NULL);
    static const char *const none[] = {NULL};
    assert_int_equal(ck_pki_client_cert(&o, "scheduler", "system:kube-scheduler", none, 0, NULL),
                     0);
    static const char *const nodes[] = {"system:nodes"};
    assert_int_equal(ck_pki_client_cert(&o, "node-n1", "system:node:n1", nodes, 1, NULL), 0);
    assert_int_equal(mode_of(in_dir("/pki", "node-n1.key")), 0600);
    size_t len = 0;
    char *pem = slurp(in_dir("/pki", "node-n1.crt"), &len);
    struct ck_auth_user *u = NULL;
    assert_int_equal(ck_auth_user_from_cert(pem, len, true, &u, NULL), 0);
    assert_string_equal(u->name, "system:node:n1");
    assert_true(ck_auth_user_in_group(u, "system:nodes"));
    ck_auth_user_free(u);
    free(pem);
    struct ck_pki_options empty = {.dir = in_dir("", "nothing-here")};
    struct ck_err err = {0};
    assert_int_equal(ck_pki_client_cert(&empty, "x", "x", none, 0, &err), CK_ENOENT);
}

static void assert_common_name(gnutls_x509_crt_t crt, const char *want)
{
    char cn[64];
    size_t size = sizeof(cn);
    assert_int_equal(
        gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size), 0);
    assert_string_equal(cn, want);
}

/* kubeadm's front proxy: a CA of its own, its client certificate, both kept on later calls. */
static void test_front_proxy(void **state)
{
    (void)state;
    struct ck_pki_options o = opts_at(NOW, NULL);
    struct ck_pki pki = {0};
    assert_int_equal(ck_pki_ensure(&o, &pki, NULL), 0);
    ck_pki_release(&pki);
    assert_int_equal(ck_pki_front_proxy(&o, NULL), 0);
    assert_int_equal(mode_of(in_dir("/pki", CK_PKI_FRONT_PROXY_CA_KEY)), 0600);
    assert_int_equal(mode_of(in_dir("/pki", CK_PKI_FRONT_PROXY_CLIENT_KEY)), 0600);
    gnutls_x509_crt_t fp_ca = crt_of(in_dir("/pki", CK_PKI_FRONT_PROXY_CA_CERT));
    gnutls_x509_crt_t ca = crt_of(in_dir("/pki", CK_PKI_CA_CERT));
    gnutls_x509_crt_t client = crt_of(in_dir("/pki", CK_PKI_FRONT_PROXY_CLIENT_CERT));
    unsigned status = 0;
    assert_int_equal(
        gnutls_x509_crt_verify(client, &fp_ca, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS, &status), 0);
    assert_int_equal(status, 0);
    /* not the client CA's: the proxy's certificate is no client identity */
    assert_int_equal(
        gnutls_x509_crt_verify(client, &ca, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS, &status), 0);
    assert_int_not_equal(status, 0);
    assert_common_name(client, "front-proxy-client");
    assert_common_name(fp_ca, "front-proxy-ca");
    gnutls_x509_crt_deinit(fp_ca);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(client);
    char *before = slurp(in_dir("/pki", CK_PKI_FRONT_PROXY_CLIENT_CERT), NULL);
    assert_int_equal(ck_pki_front_proxy(&o, NULL), 0);
    char *after = slurp(in_dir("/pki", CK_PKI_FRONT_PROXY_CLIENT_CERT), NULL);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_own_files_are_checked_and_used(void **state)
{
    (void)state;
    struct ck_pki_options o = opts_at(NOW, NULL);
    o.dir = in_dir("", "own");
    o.tls_cert_file = in_dir("/pki", "apiserver.crt");
    o.tls_private_key_file = in_dir("/pki", "apiserver.key");
    o.client_ca_file = in_dir("/pki", "ca.crt");
    struct ck_pki p;
    struct ck_err err = {0};
    int rc = ck_pki_ensure(&o, &p, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_string_equal(p.server_cert, o.tls_cert_file);
    assert_string_equal(p.client_ca, o.client_ca_file);
    assert_null(p.admin_cert); /* no CA key to sign it with */
    assert_null(p.ca_cert);
    assert_int_equal(p.created, 1); /* the service-account key only */
    ck_pki_release(&p);

    o.tls_private_key_file = in_dir("/pki", "admin.key"); /* not the certificate's key */
    assert_int_equal(ck_pki_ensure(&o, &p, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "--tls-cert-file"));
    o.tls_private_key_file = NULL;
    assert_int_equal(ck_pki_ensure(&o, &p, &err), CK_EINVAL);
    o.tls_private_key_file = in_dir("/pki", "apiserver.key");
    o.client_ca_file = in_dir("/pki", "missing.crt");
    assert_int_equal(ck_pki_ensure(&o, &p, &err), CK_EIO);
}

/* ---- a real handshake with what the PKI made -------------------------------- */

struct server {
    int fd;
    gnutls_certificate_credentials_t cred;
    int rc;
    struct ck_auth_user *user;
};

static void *serve_one(void *arg)
{
    struct server *s = arg;
    gnutls_session_t sess;
    gnutls_init(&sess, GNUTLS_SERVER);
    gnutls_set_default_priority(sess);
    gnutls_credentials_set(sess, GNUTLS_CRD_CERTIFICATE, s->cred);
    gnutls_certificate_server_set_request(sess, GNUTLS_CERT_REQUIRE);
    gnutls_transport_set_int(sess, s->fd);
    do
        s->rc = gnutls_handshake(sess);
    while (s->rc < 0 && !gnutls_error_is_fatal(s->rc));
    if (s->rc == 0) {
        unsigned status = 1, n = 0;
        s->rc = gnutls_certificate_verify_peers2(sess, &status);
        const gnutls_datum_t *chain = gnutls_certificate_get_peers(sess, &n);
        if (s->rc == 0 && status == 0 && n > 0)
            s->rc = ck_auth_user_from_cert(chain[0].data, chain[0].size, false, &s->user, NULL);
        else
            s->rc = -1;
    }
    gnutls_deinit(sess);
    return NULL;
}

static int client_handshake(const struct ck_pki *p, const char *host, int fd)
{
    gnutls_certificate_credentials_t cred;
    gnutls_certificate_allocate_credentials(&cred);
    gnutls_certificate_set_x509_trust_file(cred, p->ca_cert, GNUTLS_X509_FMT_PEM);
    gnutls_certificate_set_x509_key_file(cred, p->admin_cert, p->admin_key, GNUTLS_X509_FMT_PEM);
    gnutls_session_t sess;
    gnutls_init(&sess, GNUTLS_CLIENT);
    gnutls_set_default_priority(sess);
    gnutls_credentials_set(sess, GNUTLS_CRD_CERTIFICATE, cred);
    gnutls_session_set_verify_cert(sess, host, 0);
    gnutls_transport_set_int(sess, fd);
    int rc;
    do
        rc = gnutls_handshake(sess);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    gnutls_deinit(sess);
    gnutls_certificate_free_credentials(cred);
    return rc;
}

/* One handshake against a server with the PKI's serving pair and client CA. */
static int handshake(const struct ck_pki *p, const char *host, struct ck_auth_user **ret_user)
{
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    struct server s = {.fd = fds[0]};
    gnutls_certificate_allocate_credentials(&s.cred);
    assert_true(gnutls_certificate_set_x509_key_file(s.cred, p->server_cert, p->server_key,
                                                     GNUTLS_X509_FMT_PEM) >= 0);
    assert_true(gnutls_certificate_set_x509_trust_file(s.cred, p->client_ca, GNUTLS_X509_FMT_PEM) >
                0);
    pthread_t t;
    pthread_create(&t, NULL, serve_one, &s);
    int rc = client_handshake(p, host, fds[1]);
    close(fds[1]); /* a client that gave up must not leave the server waiting */
    pthread_join(t, NULL);
    close(fds[0]);
    gnutls_certificate_free_credentials(s.cred);
    if (rc == 0 && s.rc != 0)
        rc = s.rc;
    *ret_user = s.user;
    return rc;
}

static void test_tls_handshake_with_the_generated_pki(void **state)
{
    (void)state;
    struct ck_pki_options o = opts_at((long long)time(NULL), "10.0.0.5");
    o.dir = in_dir("", "live");
    struct ck_pki p;
    assert_int_equal(ck_pki_ensure(&o, &p, NULL), 0);
    struct ck_auth_user *u = NULL;
    static const char *const hosts[] = {
        "localhost", "127.0.0.1", "::1", "10.0.0.5", "kubernetes.default.svc", "api.example.com"};
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        int rc = handshake(&p, hosts[i], &u);
        if (rc)
            fail_msg("%s: %s", hosts[i], gnutls_strerror(rc));
        /* the server sees the admin's certificate as kubernetes-admin in system:masters */
        assert_string_equal(u->name, "kubernetes-admin");
        assert_true(ck_auth_user_in_group(u, "system:masters"));
        u = ck_auth_user_free(u);
    }
    /* a name the certificate does not carry fails the client's verification */
    assert_true(handshake(&p, "evil.example.com", &u) < 0);
    ck_auth_user_free(u);
    ck_pki_release(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_start_creates_everything_private_keys_0600),
        cmocka_unit_test(test_later_starts_reuse_byte_for_byte),
        cmocka_unit_test(test_near_expiry_and_changes_renew_leaves_not_the_ca),
        cmocka_unit_test(test_component_client_certificates),
        cmocka_unit_test(test_front_proxy),
        cmocka_unit_test(test_own_files_are_checked_and_used),
        cmocka_unit_test(test_tls_handshake_with_the_generated_pki),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
