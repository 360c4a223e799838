/*
 * tls_handshake.c - full TLS handshakes with GnuTLS and with OpenSSL from the
 * same PEM files, measured the same way (the method of bench/auth's
 * bench_auth tls): a server thread and a client each on its end of N
 * socketpairs, default priorities, no resumption, certificate verified by
 * the client against itself as CA.
 *
 *   tls_handshake CERT KEY [RUNS]
 *   tls_handshake --gnutls-made DIR [RUNS]
 *
 * The second form first writes DIR/tls.crt and DIR/tls.key the way ckube's
 * PKI (lib/auth/pki.c) makes them, with GnuTLS (an ECDSA P-256 key and a
 * self-signed certificate, PEM), and measures with those: both libraries
 * must load the other's files. Prints, per library, the protocol and key exchange negotiated, the
 * median over RUNS runs of the server thread's CPU per handshake and of the wall time per handshake
 * with both ends on this machine.
 */
#define _GNU_SOURCE
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { N = 200, MAX_RUNS = 15 };

static const char *cert, *key;
static int fds[N][2];

static double ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- GnuTLS ---- */

static gnutls_certificate_credentials_t g_srv, g_cli;
static char g_desc[128];

static void *g_serve(void *arg)
{
    double t0 = ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < N; i++) {
        gnutls_session_t s;
        gnutls_init(&s, GNUTLS_SERVER);
        gnutls_set_default_priority(s);
        gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, g_srv);
        gnutls_transport_set_int(s, fds[i][0]);
        int rc;
        do
            rc = gnutls_handshake(s);
        while (rc < 0 && !gnutls_error_is_fatal(rc));
        if (rc < 0)
            abort();
        gnutls_deinit(s);
    }
    *(double *)arg = ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return NULL;
}

static void g_client(int i)
{
    gnutls_session_t s;
    gnutls_init(&s, GNUTLS_CLIENT);
    gnutls_set_default_priority(s);
    gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, g_cli);
    gnutls_session_set_verify_cert(s, NULL, 0);
    gnutls_transport_set_int(s, fds[i][1]);
    int rc;
    do
        rc = gnutls_handshake(s);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    if (rc < 0) {
        fprintf(stderr, "GnuTLS handshake: %s\n", gnutls_strerror(rc));
        exit(1);
    }
    char *d = gnutls_session_get_desc(s);
    snprintf(g_desc, sizeof g_desc, "%s", d);
    gnutls_free(d);
    gnutls_deinit(s);
}

/* ---- OpenSSL ---- */

static SSL_CTX *o_srv, *o_cli;
static char o_desc[128];

static void *o_serve(void *arg)
{
    double t0 = ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < N; i++) {
        SSL *s = SSL_new(o_srv);
        SSL_set_fd(s, fds[i][0]);
        if (SSL_accept(s) != 1)
            abort();
        SSL_free(s);
    }
    *(double *)arg = ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return NULL;
}

static void o_client(int i)
{
    SSL *s = SSL_new(o_cli);
    SSL_set_fd(s, fds[i][1]);
    if (SSL_connect(s) != 1) {
        fprintf(stderr, "OpenSSL handshake failed\n");
        exit(1);
    }
    snprintf(o_desc, sizeof o_desc, "(%s)-(%s)-(%s)", SSL_get_version(s),
             SSL_group_to_name(s, SSL_get_negotiated_group(s)), SSL_get_cipher_name(s));
    SSL_free(s);
}

static void run(const char *name, void *(*serve)(void *), void (*client)(int), int runs)
{
    double server_us[MAX_RUNS], wall_us[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < N; i++)
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds[i]))
                abort();
        double cpu = 0, w0 = ns(CLOCK_MONOTONIC);
        pthread_t t;
        pthread_create(&t, NULL, serve, &cpu);
        for (int i = 0; i < N; i++)
            client(i);
        pthread_join(t, NULL);
        wall_us[r] = (ns(CLOCK_MONOTONIC) - w0) / N / 1e3;
        server_us[r] = cpu / N / 1e3;
        for (int i = 0; i < N; i++) {
            close(fds[i][0]);
            close(fds[i][1]);
        }
    }
    qsort(server_us, (size_t)runs, sizeof(double), cmp_d);
    qsort(wall_us, (size_t)runs, sizeof(double), cmp_d);
    printf("%-8s server CPU %6.1f us/handshake, wall (both ends) %6.1f us (%.0f/s)\n", name,
           server_us[runs / 2], wall_us[runs / 2], 1e6 / wall_us[runs / 2]);
}

static void write_datum(const char *path, gnutls_datum_t *d)
{
    FILE *f = fopen(path, "w");
    if (!f || fwrite(d->data, 1, d->size, f) != d->size || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    gnutls_free(d->data);
}

/* an ECDSA P-256 key and a self-signed certificate for 127.0.0.1, as pki.c makes them */
static void gnutls_make(const char *dir, char *crt_path, char *key_path, size_t n)
{
    gnutls_x509_privkey_t k;
    gnutls_x509_crt_t c;
    gnutls_datum_t d;
    unsigned char serial[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ip[4] = {127, 0, 0, 1};
    gnutls_x509_privkey_init(&k);
    if (gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0)
        exit(1);
    gnutls_x509_crt_init(&c);
    gnutls_x509_crt_set_version(c, 3);
    gnutls_x509_crt_set_key(c, k);
    gnutls_x509_crt_set_serial(c, serial, sizeof serial);
    gnutls_x509_crt_set_activation_time(c, time(NULL) - 60);
    gnutls_x509_crt_set_expiration_time(c, time(NULL) + 86400);
    gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, "127.0.0.1", 9);
    gnutls_x509_crt_set_subject_alt_name(c, GNUTLS_SAN_IPADDRESS, ip, sizeof ip, GNUTLS_FSAN_SET);
    gnutls_x509_crt_set_basic_constraints(c, 1, -1);
    if (gnutls_x509_crt_sign2(c, c, k, GNUTLS_DIG_SHA256, 0) < 0)
        exit(1);
    snprintf(crt_path, n, "%s/tls.crt", dir);
    snprintf(key_path, n, "%s/tls.key", dir);
    gnutls_x509_crt_export2(c, GNUTLS_X509_FMT_PEM, &d);
    write_datum(crt_path, &d);
    gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &d);
    write_datum(key_path, &d);
    gnutls_x509_crt_deinit(c);
    gnutls_x509_privkey_deinit(k);
}

int main(int argc, char **argv)
{
    static char made_crt[4096], made_key[4096];
    if (argc < 3) {
        fprintf(stderr, "usage: %s CERT KEY [RUNS]\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "--gnutls-made") == 0) {
        gnutls_make(argv[2], made_crt, made_key, sizeof made_crt);
        argv[1] = made_crt;
        argv[2] = made_key;
    }
    cert = argv[1];
    key = argv[2];
    int runs = argc > 3 ? atoi(argv[3]) : 7;
    if (runs < 1 || runs > MAX_RUNS)
        runs = 7;

    gnutls_certificate_allocate_credentials(&g_srv);
    if (gnutls_certificate_set_x509_key_file(g_srv, cert, key, GNUTLS_X509_FMT_PEM) < 0) {
        fprintf(stderr, "GnuTLS cannot load %s / %s\n", cert, key);
        return 1;
    }
    gnutls_certificate_allocate_credentials(&g_cli);
    gnutls_certificate_set_x509_trust_file(g_cli, cert, GNUTLS_X509_FMT_PEM);

    o_srv = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_options(o_srv, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(o_srv, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(o_srv, 0);
    if (SSL_CTX_use_certificate_chain_file(o_srv, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(o_srv, key, SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "OpenSSL cannot load %s / %s\n", cert, key);
        return 1;
    }
    o_cli = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(o_cli, cert, NULL);
    SSL_CTX_set_verify(o_cli, SSL_VERIFY_PEER, NULL);

    printf(
        "GnuTLS %s, %s; %d handshakes a run, medians of %d runs; certificate and key made by %s\n",
        gnutls_check_version(NULL), OpenSSL_version(OPENSSL_VERSION), N, runs,
        made_crt[0] ? "GnuTLS" : "another tool");
    run("GnuTLS", g_serve, g_client, runs);
    printf("         negotiated: %s\n", g_desc);
    run("OpenSSL", o_serve, o_client, runs);
    printf("         negotiated: %s\n", o_desc);
    return 0;
}
