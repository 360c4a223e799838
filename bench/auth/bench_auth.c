/*
 * bench_auth.c - libckube-auth speed: the RBAC decision with 1,000
 * RoleBindings (the target: under 1 us), and the measurements
 * behind the crypto choices in docs/dependencies.md: key generation (ECDSA
 * P-256 against RSA 2048), ServiceAccount token signing and verification
 * (ES256 against RS256) and full TLS handshakes through GnuTLS with either
 * kind of certificate.
 *
 * Every figure is the median of RUNS runs, in CPU time of the measuring
 * thread (time spent preempted on a busy machine is left out); the TLS
 * figures give the server thread's CPU per handshake, which is what a
 * server pays, and the wall time per handshake of client and server
 * together on one socketpair.
 *
 * Usage: bench_auth [rbac|crypto|tls] (default: all). Not run by `make test`.
 */
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../benchtime.h"
#include <unistd.h>

#include <ckube/auth.h>

#define RUNS      7
#define BINDINGS  1000
#define DECISIONS 1000000L

/* ---- RBAC -------------------------------------------------------------------- */

static json_t *rolebinding(const char *ns, const char *name, const char *role, const char *kind,
                           const char *subject)
{
    return json_pack("{s:{s:s,s:s},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "metadata", "name", name,
                     "namespace", ns, "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind",
                     "ClusterRole", "name", role, "subjects", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", kind, "name", subject);
}

static struct ck_auth_user *user(const char *name)
{
    struct ck_auth_user *u = ck_auth_user_new(name, "");
    ck_auth_user_add_group(u, "system:authenticated");
    return u;
}

static void decide(const char *what, const struct ck_rbac_policy *p,
                   const struct ck_rbac_request *q, enum ck_rbac_decision want)
{
    double per[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_cpu_ns();
        for (long i = 0; i < DECISIONS; i++)
            if (ck_rbac_authorize(p, q, NULL, 0) != want)
                abort();
        per[r] = (bench_cpu_ns() - t0) / DECISIONS;
    }
    printf("  %-58s %7.1f ns/decision\n", what, bench_median(per, RUNS));
}

static void bench_rbac(void)
{
    json_t *crs = NULL, *crbs = NULL;
    if (ck_rbac_bootstrap(&crs, &crbs, NULL))
        abort();
    /* 1,000 users, each bound to view or edit in a namespace of their own; plus one
     * user bound 1,000 times (in every namespace), the worst case for a denial */
    json_t *rbs = json_array();
    char ns[32], name[32], subject[32];
    for (int i = 0; i < BINDINGS; i++) {
        snprintf(ns, sizeof(ns), "ns-%d", i);
        snprintf(name, sizeof(name), "rb-%d", i);
        snprintf(subject, sizeof(subject), "user-%d", i);
        json_array_append_new(rbs, rolebinding(ns, name, i % 2 ? "edit" : "view", "User", subject));
    }
    json_t *many = json_array();
    for (int i = 0; i < BINDINGS; i++) {
        snprintf(ns, sizeof(ns), "ns-%d", i);
        snprintf(name, sizeof(name), "busy-%d", i);
        json_array_append_new(many, rolebinding(ns, name, "view", "User", "busy"));
    }
    json_array_extend(many, rbs);
    double build[RUNS];
    struct ck_rbac_policy *p = NULL, *worst = NULL;
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_cpu_ns();
        if (ck_rbac_policy_new(NULL, crs, rbs, crbs, &p, NULL))
            abort();
        build[r] = (bench_cpu_ns() - t0) / 1e6;
        if (r < RUNS - 1)
            p = ck_rbac_policy_unref(p);
    }
    if (ck_rbac_policy_new(NULL, crs, many, crbs, &worst, NULL))
        abort();
    printf("RBAC: bootstrap policy (%zu ClusterRoles, %zu ClusterRoleBindings) + %d RoleBindings\n",
           json_array_size(crs), json_array_size(crbs), BINDINGS);
    printf("  %-58s %7.2f ms\n", "compile the policy (aggregation included)",
           bench_median(build, RUNS));

    struct ck_auth_user *u500 = user("user-500"), *admin = user("kubernetes-admin"),
                        *busy = user("busy"), *anon = ck_auth_anonymous();
    ck_auth_user_add_group(admin, "system:masters");
    struct ck_rbac_request q = {.user = u500,
                                .verb = "list",
                                .is_resource_request = true,
                                .api_group = "",
                                .resource = "pods",
                                .namespace = "ns-500"};
    decide("allow: list pods in own namespace (view)", p, &q, CK_RBAC_ALLOW);
    q.verb = "get";
    q.api_group = "apps";
    q.resource = "deployments";
    q.subresource = "scale";
    q.name = "web";
    decide("allow: get deployments/scale (view's 20th rule)", p, &q, CK_RBAC_ALLOW);
    q.namespace = "ns-501";
    decide("deny: same in another namespace (RBAC's 403 path)", p, &q, CK_RBAC_NO_OPINION);
    q.user = admin;
    decide("allow: cluster-admin through system:masters", p, &q, CK_RBAC_ALLOW);
    struct ck_rbac_request health = {.user = anon, .verb = "get", .path = "/healthz"};
    decide("allow: anonymous GET /healthz (public-info-viewer)", p, &health, CK_RBAC_ALLOW);
    q.user = busy;
    q.namespace = "ns-999";
    decide("allow: user with 1,000 bindings, its 1,000th namespace", worst, &q, CK_RBAC_ALLOW);
    q.namespace = "elsewhere";
    decide("deny: user with 1,000 bindings, no binding applies", worst, &q, CK_RBAC_NO_OPINION);

    /* what a request pays in the server: take the current policy, decide, drop it */
    struct ck_rbac_authorizer *a = ck_rbac_authorizer_new(ck_rbac_policy_ref(p));
    q.user = u500;
    q.namespace = "ns-500";
    double per[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = bench_cpu_ns();
        for (long i = 0; i < DECISIONS; i++) {
            struct ck_rbac_policy *cur = ck_rbac_authorizer_current(a);
            if (ck_rbac_authorize(cur, &q, NULL, 0) != CK_RBAC_ALLOW)
                abort();
            ck_rbac_policy_unref(cur);
        }
        per[r] = (bench_cpu_ns() - t0) / DECISIONS;
    }
    printf("  %-58s %7.1f ns/decision\n",
           "allow: deployments/scale via authorizer_current() + unref", bench_median(per, RUNS));
    ck_rbac_authorizer_free(a);

    ck_auth_user_free(u500);
    ck_auth_user_free(admin);
    ck_auth_user_free(busy);
    ck_auth_user_free(anon);
    ck_rbac_policy_unref(p);
    ck_rbac_policy_unref(worst);
    json_decref(crs);
    json_decref(crbs);
    json_decref(rbs);
    json_decref(many);
}

/* ---- crypto ------------------------------------------------------------------ */

static gnutls_x509_privkey_t gen(gnutls_pk_algorithm_t alg, unsigned bits)
{
    gnutls_x509_privkey_t k;
    gnutls_x509_privkey_init(&k);
    if (gnutls_x509_privkey_generate(k, alg, bits, 0) < 0)
        abort();
    return k;
}

static char *pem_of(gnutls_x509_privkey_t k)
{
    gnutls_datum_t out = {NULL, 0};
    gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &out);
    char *s = strndup((const char *)out.data, out.size);
    gnutls_free(out.data);
    return s;
}

static const unsigned P256 = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1);

static void bench_keys_and_tokens(void)
{
    static const struct {
        const char *name;
        gnutls_pk_algorithm_t alg;
        unsigned bits;
    } kinds[] = {{"ECDSA P-256 / ES256", GNUTLS_PK_ECDSA, 0},
                 {"RSA 2048 / RS256", GNUTLS_PK_RSA, 2048}};
    printf("Keys and ServiceAccount tokens (GnuTLS %s)\n", gnutls_check_version(NULL));
    for (size_t k = 0; k < 2; k++) {
        unsigned bits = kinds[k].bits ? kinds[k].bits : P256;
        double g[RUNS];
        for (int r = 0; r < RUNS; r++) {
            double t0 = bench_cpu_ns();
            gnutls_x509_privkey_t key = gen(kinds[k].alg, bits);
            g[r] = (bench_cpu_ns() - t0) / 1e6;
            gnutls_x509_privkey_deinit(key);
        }
        gnutls_x509_privkey_t key = gen(kinds[k].alg, bits);
        char *pem = pem_of(key);
        struct ck_auth_sa_key *sa = NULL;
        if (ck_auth_sa_key_from_pem(pem, strlen(pem), &sa, NULL))
            abort();
        static const char *const aud[] = {"https://kubernetes.default.svc"};
        struct ck_auth_token_request req = {.issuer = "https://kubernetes.default.svc",
                                            .namespace = "default",
                                            .sa_name = "robot",
                                            .sa_uid = "u",
                                            .audiences = aud,
                                            .n_audiences = 1,
                                            .now = 1700000000,
                                            .expiration_seconds = 3600,
                                            .pod_name = "web-0",
                                            .pod_uid = "p"};
        enum { N = 200 };
        double s[RUNS], v[RUNS];
        char *token = NULL;
        for (int r = 0; r < RUNS; r++) {
            double t0 = bench_cpu_ns();
            for (int i = 0; i < N; i++) {
                free(token);
                if (ck_auth_jwt_sign(sa, &req, &token, NULL))
                    abort();
            }
            s[r] = (bench_cpu_ns() - t0) / N / 1e3;
            t0 = bench_cpu_ns();
            for (int i = 0; i < N; i++) {
                struct ck_auth_user *u = NULL;
                if (ck_auth_jwt_verify(sa, token, req.issuer, aud, 1, req.now, &u, NULL, NULL))
                    abort();
                ck_auth_user_free(u);
            }
            v[r] = (bench_cpu_ns() - t0) / N / 1e3;
        }
        printf("  %-20s keygen %8.2f ms   token sign %7.1f us   verify %7.1f us   (%zu bytes)\n",
               kinds[k].name, bench_median(g, RUNS), bench_median(s, RUNS), bench_median(v, RUNS),
               strlen(token));
        free(token);
        free(pem);
        ck_auth_sa_key_free(sa);
        gnutls_x509_privkey_deinit(key);
    }
}

/* ---- TLS handshakes ----------------------------------------------------------- */

struct tls_side {
    gnutls_certificate_credentials_t cred;
    int (*fds)[2];
    int n;
    double cpu;
};

static gnutls_x509_crt_t self_signed(gnutls_x509_privkey_t key)
{
    gnutls_x509_crt_t crt;
    gnutls_x509_crt_init(&crt);
    unsigned char serial[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    gnutls_x509_crt_set_version(crt, 3);
    gnutls_x509_crt_set_key(crt, key);
    gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
    gnutls_x509_crt_set_activation_time(crt, time(NULL) - 60);
    gnutls_x509_crt_set_expiration_time(crt, time(NULL) + 86400);
    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "localhost", 9);
    gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9, GNUTLS_FSAN_SET);
    gnutls_x509_crt_set_basic_constraints(crt, 1, -1);
    if (gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0)
        abort();
    return crt;
}

static void *serve(void *arg)
{
    struct tls_side *s = arg;
    double t0 = bench_cpu_ns();
    for (int i = 0; i < s->n; i++) {
        gnutls_session_t sess;
        gnutls_init(&sess, GNUTLS_SERVER);
        gnutls_set_default_priority(sess);
        gnutls_credentials_set(sess, GNUTLS_CRD_CERTIFICATE, s->cred);
        gnutls_transport_set_int(sess, s->fds[i][0]);
        int rc;
        do
            rc = gnutls_handshake(sess);
        while (rc < 0 && !gnutls_error_is_fatal(rc));
        if (rc < 0)
            abort();
        gnutls_deinit(sess);
    }
    s->cpu = bench_cpu_ns() - t0;
    return NULL;
}

static void bench_tls(void)
{
    static const struct {
        const char *name;
        gnutls_pk_algorithm_t alg;
        unsigned bits;
    } kinds[] = {{"ECDSA P-256", GNUTLS_PK_ECDSA, 0}, {"RSA 2048", GNUTLS_PK_RSA, 2048}};
    enum { N = 200 };
    printf("Full TLS handshakes (GnuTLS default priority, no resumption), %d per run\n", N);
    for (size_t k = 0; k < 2; k++) {
        gnutls_x509_privkey_t key = gen(kinds[k].alg, kinds[k].bits ? kinds[k].bits : P256);
        gnutls_x509_crt_t crt = self_signed(key);
        struct tls_side srv = {.n = N};
        gnutls_certificate_allocate_credentials(&srv.cred);
        gnutls_certificate_set_x509_key(srv.cred, &crt, 1, key);
        gnutls_certificate_credentials_t cli;
        gnutls_certificate_allocate_credentials(&cli);
        gnutls_certificate_set_x509_trust(cli, &crt, 1);
        double server_us[RUNS], wall_us[RUNS];
        const char *version = "";
        for (int r = 0; r < RUNS; r++) {
            int(*fds)[2] = calloc(N, sizeof(*fds));
            for (int i = 0; i < N; i++)
                if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds[i]))
                    abort();
            srv.fds = fds;
            pthread_t t;
            double w0 = bench_wall_ns();
            pthread_create(&t, NULL, serve, &srv);
            for (int i = 0; i < N; i++) {
                gnutls_session_t sess;
                gnutls_init(&sess, GNUTLS_CLIENT);
                gnutls_set_default_priority(sess);
                gnutls_credentials_set(sess, GNUTLS_CRD_CERTIFICATE, cli);
                gnutls_server_name_set(sess, GNUTLS_NAME_DNS, "localhost", 9);
                gnutls_session_set_verify_cert(sess, "localhost", 0);
                gnutls_transport_set_int(sess, fds[i][1]);
                int rc;
                do
                    rc = gnutls_handshake(sess);
                while (rc < 0 && !gnutls_error_is_fatal(rc));
                if (rc < 0) {
                    fprintf(stderr, "handshake: %s\n", gnutls_strerror(rc));
                    abort();
                }
                version = gnutls_protocol_get_name(gnutls_protocol_get_version(sess));
                gnutls_deinit(sess);
            }
            pthread_join(t, NULL);
            wall_us[r] = (bench_wall_ns() - w0) / N / 1e3;
            server_us[r] = srv.cpu / N / 1e3;
            for (int i = 0; i < N; i++) {
                close(fds[i][0]);
                close(fds[i][1]);
            }
            free(fds);
        }
        printf("  %-12s %s: server CPU %7.1f us/handshake, wall (both ends) %7.1f us "
               "(%.0f/s)\n",
               kinds[k].name, version, bench_median(server_us, RUNS), bench_median(wall_us, RUNS),
               1e6 / bench_median(wall_us, RUNS));
        gnutls_certificate_free_credentials(srv.cred);
        gnutls_certificate_free_credentials(cli);
        gnutls_x509_crt_deinit(crt);
        gnutls_x509_privkey_deinit(key);
    }
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    bool all = strcmp(what, "all") == 0;
    if (all || strcmp(what, "rbac") == 0)
        bench_rbac();
    if (all || strcmp(what, "crypto") == 0)
        bench_keys_and_tokens();
    if (all || strcmp(what, "tls") == 0)
        bench_tls();
    return 0;
}
