/*
 * test_authn.c - users, the anonymous user, the authenticated-group adder
 * and the static token file (kube-apiserver's --token-auth-file CSV),
 * including the malformed lines that fail the whole file, and the chain
 * kube-apiserver runs per request (certificate, bearer token from the file
 * or a ServiceAccount JWT, anonymous) and bootstrap tokens against their
 * Secrets. Certificates the PKI makes are also
 * tested in test_pki.c.
 */
#include "cktest.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ckube/auth.h>

#include "ckube/internal/util.h"

static struct ck_auth_tokens *parse_ok(const char *text)
{
    struct ck_auth_tokens *t = NULL;
    struct ck_err err = {0};
    int rc = ck_auth_tokens_parse("tokens.csv", text, strlen(text), &t, &err);
    if (rc)
        fail_msg("parse failed: %s", err.msg);
    return t;
}

static void assert_groups(const struct ck_auth_user *u, const char *const *want, size_t n)
{
    assert_int_equal(u->n_groups, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(u->groups[i], want[i]);
}

static void test_token_file_users_uids_and_groups(void **state)
{
    (void)state;
    struct ck_auth_tokens *t = parse_ok("s3cret,jane,1001,\"dev,ops\"\n"
                                        "\n"
                                        "abc, bob ,1002\r\n"
                                        "\"quoted,tok\",\"eve \"\"e\"\"\",1003,solo,ignored\n"
                                        ",nobody,1004\n"
                                        "dup,first,1\n"
                                        "dup,second,2");
    assert_int_equal(ck_auth_tokens_count(t), 4);

    struct ck_auth_user *u = ck_auth_tokens_authenticate(t, "s3cret");
    assert_non_null(u);
    assert_string_equal(u->name, "jane");
    assert_string_equal(u->uid, "1001");
    static const char *const jane_groups[] = {"dev", "ops", "system:authenticated"};
    assert_groups(u, jane_groups, 3);
    ck_auth_user_free(u);

    /* encoding/csv trims leading spaces only */
    u = ck_auth_tokens_authenticate(t, "abc");
    assert_string_equal(u->name, "bob ");
    static const char *const bob_groups[] = {"system:authenticated"};
    assert_groups(u, bob_groups, 1);
    ck_auth_user_free(u);

    u = ck_auth_tokens_authenticate(t, "quoted,tok");
    assert_string_equal(u->name, "eve \"e\"");
    static const char *const eve_groups[] = {"solo", "system:authenticated"};
    assert_groups(u, eve_groups, 2);
    ck_auth_user_free(u);

    u = ck_auth_tokens_authenticate(t, "dup");
    assert_string_equal(u->name, "second");
    ck_auth_user_free(u);

    assert_null(ck_auth_tokens_authenticate(t, ""));
    assert_null(ck_auth_tokens_authenticate(t, "nope"));
    assert_null(ck_auth_tokens_authenticate(t, NULL));
    assert_null(ck_auth_tokens_free(t));
}

static void test_token_file_malformed_lines_fail_the_file(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"tok,user\n",
         "must have at least 3 columns (token, user name, user uid), found 2 (line 1)"},
        {"a,b,c\n\nonlyone\n", "found 1 (line 3)"},
        {"a,b\"c,d\n", "bare \" in non-quoted-field"},
        {"a,\"b,c\n", "extraneous or missing \" in quoted-field"},
        {"a,\"b\"c,d\n", "extraneous or missing \" in quoted-field"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_auth_tokens *t = NULL;
        struct ck_err err = {0};
        assert_int_equal(
            ck_auth_tokens_parse("f.csv", cases[i].text, strlen(cases[i].text), &t, &err),
            CK_EINVAL);
        assert_null(t);
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: %s", i, err.msg);
        assert_non_null(strstr(err.msg, "f.csv"));
    }
}

static void test_token_file_load(void **state)
{
    (void)state;
    char path[] = "/tmp/ckube-tokens-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("t1,alice,u1,\"system:masters\"\n", f);
    fclose(f);
    struct ck_auth_tokens *t = NULL;
    assert_int_equal(ck_auth_tokens_load(path, &t, NULL), 0);
    struct ck_auth_user *u = ck_auth_tokens_authenticate(t, "t1");
    assert_true(ck_auth_user_in_group(u, "system:masters"));
    ck_auth_user_free(u);
    ck_auth_tokens_free(t);
    unlink(path);
    struct ck_err err = {0};
    assert_int_equal(ck_auth_tokens_load(path, &t, &err), CK_EIO);
}

static void test_anonymous_and_authenticated_groups(void **state)
{
    (void)state;
    struct ck_auth_user *a = ck_auth_anonymous();
    assert_string_equal(a->name, "system:anonymous");
    static const char *const anon[] = {"system:unauthenticated"};
    assert_groups(a, anon, 1);
    /* the adder leaves the anonymous user alone */
    assert_int_equal(ck_auth_mark_authenticated(a), 0);
    assert_groups(a, anon, 1);
    ck_auth_user_free(a);

    struct ck_auth_user *u = ck_auth_user_new("jane", NULL);
    assert_int_equal(ck_auth_user_add_group(u, "dev"), 0);
    assert_int_equal(ck_auth_user_add_group(u, "dev"), 0);
    assert_int_equal(ck_auth_mark_authenticated(u), 0);
    assert_int_equal(ck_auth_mark_authenticated(u), 0);
    static const char *const groups[] = {"dev", "system:authenticated"};
    assert_groups(u, groups, 2);
    assert_int_equal(ck_auth_user_add_extra(u, "k", "v1"), 0);
    assert_int_equal(ck_auth_user_add_extra(u, "k", "v2"), 0);
    struct ck_auth_user *c = ck_auth_user_copy(u);
    assert_string_equal(c->uid, "");
    assert_groups(c, groups, 2);
    assert_int_equal(json_array_size(json_object_get(c->extra, "k")), 2);
    ck_auth_user_free(u);
    ck_auth_user_free(c);
    assert_null(ck_auth_user_free(NULL));
}

static void test_cert_garbage_is_refused(void **state)
{
    (void)state;
    struct ck_auth_user *u = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_auth_user_from_cert("garbage", 7, false, &u, &err), CK_EINVAL);
    assert_int_equal(ck_auth_user_from_cert("garbage", 7, true, &u, &err), CK_EINVAL);
    assert_null(u);
}

static void test_token_file_allocation_failure_is_clean(void **state)
{
    (void)state;
    static const char text[] = "s3cret,jane,1001,\"dev,ops\"\nabc,bob,1002\ndup,a,1\ndup,b,2\n";
    int rc = CK_ENOMEM;
    unsigned long n;
    for (n = 1; rc == CK_ENOMEM; n++) {
        struct ck_auth_tokens *t = NULL;
        ck__alloc_fail_at(n, true);
        rc = ck_auth_tokens_parse("f", text, strlen(text), &t, NULL);
        struct ck_auth_user *u = rc == 0 ? ck_auth_tokens_authenticate(t, "s3cret") : NULL;
        ck__alloc_fail_at(0, false);
        if (rc == 0) {
            assert_int_equal(ck_auth_tokens_count(t), 3);
            ck_auth_user_free(u);
            ck_auth_tokens_free(t);
        } else {
            assert_int_equal(rc, CK_ENOMEM);
            assert_null(t);
        }
    }
    assert_true(n > 10);
}

/* ---- the chain ----------------------------------------------------------------- */

static gnutls_x509_privkey_t ec_key(void)
{
    gnutls_x509_privkey_t k;
    gnutls_x509_privkey_init(&k);
    assert_int_equal(gnutls_x509_privkey_generate(
                         k, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
                     0);
    return k;
}

/* A self-signed certificate's DER with subject CN=cn (and O=org when given). */
static gnutls_datum_t cert_der(const char *cn, const char *org)
{
    gnutls_x509_privkey_t k = ec_key();
    gnutls_x509_crt_t crt;
    gnutls_x509_crt_init(&crt);
    static const unsigned char serial[] = {1};
    gnutls_x509_crt_set_version(crt, 3);
    gnutls_x509_crt_set_key(crt, k);
    gnutls_x509_crt_set_serial(crt, serial, 1);
    gnutls_x509_crt_set_activation_time(crt, 1700000000);
    gnutls_x509_crt_set_expiration_time(crt, 1900000000);
    if (cn)
        gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                      (unsigned)strlen(cn));
    if (org)
        gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, org,
                                      (unsigned)strlen(org));
    assert_int_equal(gnutls_x509_crt_sign2(crt, crt, k, GNUTLS_DIG_SHA256, 0), 0);
    gnutls_datum_t der = {NULL, 0};
    assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der), 0);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(k);
    return der;
}

/* A stand-in for the server's lookup of the account a token names. */
struct validation {
    bool refuse;
    int calls;
    char sa_uid[64];
};

static int validate_claims(void *arg, const json_t *claims, struct ck_err *reterr)
{
    struct validation *v = arg;
    v->calls++;
    const json_t *sa = json_object_get(json_object_get(claims, "kubernetes.io"), "serviceaccount");
    snprintf(v->sa_uid, sizeof(v->sa_uid), "%s", json_string_value(json_object_get(sa, "uid")));
    if (v->refuse)
        return ck_err_set(reterr, CK_EPERM, "service account UID (u2) does not match claim (%s)",
                          v->sa_uid);
    return 0;
}

static void test_request_chain_as_kube_apiserver_runs_it(void **state)
{
    (void)state;
    struct ck_auth_tokens *tokens = parse_ok("s3cret,jane,1001,dev\n");
    gnutls_x509_privkey_t k = ec_key();
    gnutls_datum_t pem = {NULL, 0};
    gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &pem);
    struct ck_auth_sa_key *sa = NULL;
    assert_int_equal(ck_auth_sa_key_from_pem((const char *)pem.data, pem.size, &sa, NULL), 0);
    gnutls_free(pem.data);
    gnutls_x509_privkey_deinit(k);
    static const char *const aud[] = {"https://kubernetes.default.svc"};
    struct ck_auth_token_request req = {.issuer = "https://kubernetes.default.svc",
                                        .namespace = "ci",
                                        .sa_name = "robot",
                                        .sa_uid = "u1",
                                        .audiences = aud,
                                        .n_audiences = 1,
                                        .now = 1700000000,
                                        .expiration_seconds = 600};
    char *jwt = NULL;
    assert_int_equal(ck_auth_jwt_sign(sa, &req, &jwt, NULL), 0);
    char header[2048];

    struct ck_auth_config cfg = {.tokens = tokens,
                                 .sa_key = sa,
                                 .sa_issuer = "https://kubernetes.default.svc",
                                 .anonymous = true};
    struct ck_auth_credentials cr = {.now = 1700000100};
    struct ck_auth_user *u = NULL;
    struct ck_err err = {0};

    /* no credentials: anonymous, or 401 when anonymous requests are off */
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    assert_string_equal(u->name, "system:anonymous");
    u = ck_auth_user_free(u);
    cfg.anonymous = false;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);
    assert_null(u);

    /* the token file; the scheme in any case; other schemes are no credentials */
    cr.authorization = "Bearer s3cret";
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    assert_string_equal(u->name, "jane");
    assert_true(ck_auth_user_in_group(u, "system:authenticated"));
    u = ck_auth_user_free(u);
    cr.authorization = "bearer s3cret";
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    u = ck_auth_user_free(u);
    cr.authorization = "Basic amFuZTpzM2NyZXQ=";
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);

    /* a ServiceAccount token, until it expires; the issuer is the default audience */
    snprintf(header, sizeof(header), "Bearer %s", jwt);
    cr.authorization = header;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    assert_string_equal(u->name, "system:serviceaccount:ci:robot");
    u = ck_auth_user_free(u);
    cr.now = 1700000000 + 600 + 61;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);
    assert_non_null(strstr(err.msg, "expired"));
    static const char *const other[] = {"vault"};
    cfg.api_audiences = other;
    cfg.n_api_audiences = 1;
    cr.now = 1700000100;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);
    cfg.api_audiences = NULL;
    cfg.n_api_audiences = 0;

    /* the server's check that the account still exists: called with the claims, may refuse */
    struct validation v = {.refuse = false};
    cfg.sa_validate = validate_claims;
    cfg.sa_validate_arg = &v;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    assert_int_equal(v.calls, 1);
    assert_string_equal(v.sa_uid, "u1");
    u = ck_auth_user_free(u);
    v.refuse = true;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);
    assert_null(u);
    assert_non_null(
        strstr(ck_err_message(&err), "service account UID (u2) does not match claim (u1)"));
    ck_err_release(&err);
    cr.authorization = "Bearer s3cret"; /* the token file's users: no call (still 2) */
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    assert_int_equal(v.calls, 2);
    u = ck_auth_user_free(u);
    cr.authorization = header;
    cfg.sa_validate = NULL;

    /* a garbage token is a 401 even when anonymous requests are allowed */
    cfg.anonymous = true;
    cr.authorization = "Bearer garbage";
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);
    assert_null(u);

    /* a verified client certificate comes first */
    gnutls_datum_t der = cert_der("alice", "devs");
    cr.peer_cert_der = der.data;
    cr.peer_cert_len = der.size;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), 0);
    assert_string_equal(u->name, "alice");
    assert_true(ck_auth_user_in_group(u, "devs"));
    u = ck_auth_user_free(u);
    gnutls_free(der.data);
    der = cert_der(NULL, "devs");
    cr.peer_cert_der = der.data;
    cr.peer_cert_len = der.size;
    assert_int_equal(ck_auth_authenticate(&cfg, &cr, &u, &err), CK_EPERM);
    assert_non_null(strstr(err.msg, "common name"));
    gnutls_free(der.data);

    free(jwt);
    ck_auth_sa_key_free(sa);
    ck_auth_tokens_free(tokens);
}

/* A bootstrap token Secret with the data members given as name=value pairs (base64ed). */
static json_t *bootstrap_secret(const char *type, const char *const *pairs)
{
    json_t *data = json_object();
    for (size_t i = 0; pairs[i]; i += 2) {
        char *b64 = ck_base64_encode(pairs[i + 1], strlen(pairs[i + 1]));
        json_object_set_new(data, pairs[i], json_string(b64));
        free(b64);
    }
    return json_pack("{s:{s:s, s:s}, s:s, s:o}", "metadata", "name", "bootstrap-token-abcdef",
                     "namespace", "kube-system", "type", type, "data", data);
}

static void test_bootstrap_tokens(void **state)
{
    (void)state;
    static const char *const good[] = {"token-id",
                                       "abcdef",
                                       "token-secret",
                                       "0123456789abcdef",
                                       "usage-bootstrap-authentication",
                                       "true",
                                       "expiration",
                                       "2030-01-01T00:00:00Z",
                                       "auth-extra-groups",
                                       "system:bootstrappers:a, system:bootstrappers:b",
                                       NULL};
    const long long now = 1800000000LL; /* 2027 */
    const char *token = "abcdef.0123456789abcdef";
    assert_true(ck_auth_is_bootstrap_token(token));
    assert_false(ck_auth_is_bootstrap_token("abcdef.0123456789abcde"));
    assert_false(ck_auth_is_bootstrap_token("ABCDEF.0123456789abcdef"));
    assert_false(ck_auth_is_bootstrap_token("abcdef-0123456789abcdef"));

    json_t *secret = bootstrap_secret("bootstrap.kubernetes.io/token", good);
    struct ck_err err = {0};
    struct ck_auth_user *u = ck_auth_bootstrap_token_user(secret, token, now, &err);
    assert_non_null(u);
    assert_string_equal(u->name, "system:bootstrap:abcdef");
    assert_int_equal(u->n_groups, 4);
    assert_string_equal(u->groups[0], "system:bootstrappers");
    assert_string_equal(u->groups[1], "system:bootstrappers:a");
    assert_string_equal(u->groups[2], "system:bootstrappers:b");
    assert_string_equal(u->groups[3], "system:authenticated");
    ck_auth_user_free(u);
    /* another secret part, expired, the wrong type */
    assert_null(ck_auth_bootstrap_token_user(secret, "abcdef.0123456789abcdee", now, &err));
    assert_string_equal(err.msg, "bootstrap token does not match its secret");
    assert_null(ck_auth_bootstrap_token_user(secret, token, 1900000000LL, &err));
    assert_string_equal(err.msg, "bootstrap token has expired");
    json_decref(secret);
    secret = bootstrap_secret("Opaque", good);
    assert_null(ck_auth_bootstrap_token_user(secret, token, now, &err));
    json_decref(secret);

    /* not for authentication; an extra group outside system:bootstrappers: */
    static const char *const signing_only[] = {"token-id", "abcdef", "token-secret",
                                               "0123456789abcdef", NULL};
    secret = bootstrap_secret("bootstrap.kubernetes.io/token", signing_only);
    assert_null(ck_auth_bootstrap_token_user(secret, token, now, &err));
    assert_string_equal(err.msg, "bootstrap token is not for authentication");
    json_decref(secret);
    static const char *const masters[] = {"token-id",
                                          "abcdef",
                                          "token-secret",
                                          "0123456789abcdef",
                                          "usage-bootstrap-authentication",
                                          "true",
                                          "auth-extra-groups",
                                          "system:masters",
                                          NULL};
    secret = bootstrap_secret("bootstrap.kubernetes.io/token", masters);
    assert_null(ck_auth_bootstrap_token_user(secret, token, now, &err));
    assert_string_equal(err.msg, "bootstrap token has an invalid extra group");
    json_decref(secret);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_file_users_uids_and_groups),
        cmocka_unit_test(test_token_file_malformed_lines_fail_the_file),
        cmocka_unit_test(test_token_file_load),
        cmocka_unit_test(test_anonymous_and_authenticated_groups),
        cmocka_unit_test(test_cert_garbage_is_refused),
        cmocka_unit_test(test_token_file_allocation_failure_is_clean),
        cmocka_unit_test(test_request_chain_as_kube_apiserver_runs_it),
        cmocka_unit_test(test_bootstrap_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
