/*
 * test_jwt.c - ServiceAccount tokens: signing and verifying with RSA (RS256)
 * and P-256 (ES256) keys, the claims TokenRequest puts in them, and every
 * way a token must be refused: expired (beyond the one-minute leeway), not
 * yet valid, another audience, another issuer, a tampered payload, another
 * key's signature, alg "none" or another algorithm, and garbage.
 */
#include "cktest.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ckube/auth.h>

#define ISSUER "https://kubernetes.default.svc.cluster.local"
#define NOW    1700000000LL

static char *key_pem(gnutls_pk_algorithm_t alg, unsigned bits)
{
    gnutls_x509_privkey_t k;
    assert_int_equal(gnutls_x509_privkey_init(&k), 0);
    assert_int_equal(gnutls_x509_privkey_generate(k, alg, bits, 0), 0);
    gnutls_datum_t out = {NULL, 0};
    assert_int_equal(gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &out), 0);
    char *pem = strndup((const char *)out.data, out.size);
    gnutls_free(out.data);
    gnutls_x509_privkey_deinit(k);
    return pem;
}

struct keys {
    struct ck_auth_sa_key *rsa, *ec, *other;
};

static int setup(void **state)
{
    static struct keys k;
    char *rsa = key_pem(GNUTLS_PK_RSA, 2048);
    char *ec = key_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
    char *other = key_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
    assert_int_equal(ck_auth_sa_key_from_pem(rsa, strlen(rsa), &k.rsa, NULL), 0);
    assert_int_equal(ck_auth_sa_key_from_pem(ec, strlen(ec), &k.ec, NULL), 0);
    assert_int_equal(ck_auth_sa_key_from_pem(other, strlen(other), &k.other, NULL), 0);
    free(rsa);
    free(ec);
    free(other);
    *state = &k;
    return 0;
}

static int teardown(void **state)
{
    struct keys *k = *state;
    ck_auth_sa_key_free(k->rsa);
    ck_auth_sa_key_free(k->ec);
    ck_auth_sa_key_free(k->other);
    return 0;
}

static const char *const api_aud[] = {"https://kubernetes.default.svc.cluster.local"};

static char *issue(const struct ck_auth_sa_key *key, const char *pod)
{
    struct ck_auth_token_request req = {
        .issuer = ISSUER,
        .namespace = "default",
        .sa_name = "robot",
        .sa_uid = "9f1c0d6e-0000-4000-8000-000000000001",
        .audiences = api_aud,
        .n_audiences = 1,
        .now = NOW,
        .expiration_seconds = 3600,
        .pod_name = pod,
        .pod_uid = pod ? "5e3b7a10-0000-4000-8000-000000000002" : NULL,
    };
    char *token = NULL;
    struct ck_err err = {0};
    if (ck_auth_jwt_sign(key, &req, &token, &err))
        fail_msg("sign: %s", err.msg);
    return token;
}

static int verify_at(const struct ck_auth_sa_key *key, const char *token, long long now,
                     struct ck_auth_user **ret_user, struct ck_err *err)
{
    return ck_auth_jwt_verify(key, token, ISSUER, api_aud, 1, now, ret_user, NULL, err);
}

static void test_round_trip_gives_the_service_account_user(void **state)
{
    struct keys *k = *state;
    assert_string_equal(ck_auth_sa_key_alg(k->rsa), "RS256");
    assert_string_equal(ck_auth_sa_key_alg(k->ec), "ES256");
    assert_int_equal(strlen(ck_auth_sa_key_id(k->ec)), 43); /* 32 bytes, unpadded base64url */
    const struct ck_auth_sa_key *keys[] = {k->rsa, k->ec};
    for (size_t i = 0; i < 2; i++) {
        char *token = issue(keys[i], "web-0");
        struct ck_auth_user *u = NULL;
        json_t *claims = NULL;
        struct ck_err err = {0};
        int rc =
            ck_auth_jwt_verify(keys[i], token, ISSUER, api_aud, 1, NOW + 10, &u, &claims, &err);
        if (rc)
            fail_msg("verify: %s", err.msg);
        assert_string_equal(u->name, "system:serviceaccount:default:robot");
        assert_string_equal(u->uid, "9f1c0d6e-0000-4000-8000-000000000001");
        assert_int_equal(u->n_groups, 3);
        assert_string_equal(u->groups[0], "system:serviceaccounts");
        assert_string_equal(u->groups[1], "system:serviceaccounts:default");
        assert_string_equal(u->groups[2], "system:authenticated");
        assert_string_equal(
            json_string_value(json_array_get(
                json_object_get(u->extra, "authentication.kubernetes.io/pod-name"), 0)),
            "web-0");
        const char *cred = json_string_value(json_array_get(
            json_object_get(u->extra, "authentication.kubernetes.io/credential-id"), 0));
        assert_non_null(cred);
        assert_int_equal(strncmp(cred, "JTI=", 4), 0);
        /* the claims TokenRequest issues */
        assert_int_equal(json_integer_value(json_object_get(claims, "exp")), NOW + 3600);
        assert_int_equal(json_integer_value(json_object_get(claims, "iat")), NOW);
        assert_int_equal(json_integer_value(json_object_get(claims, "nbf")), NOW);
        assert_string_equal(json_string_value(json_object_get(claims, "iss")), ISSUER);
        assert_true(json_is_array(json_object_get(claims, "aud")));
        json_t *k8s = json_object_get(claims, "kubernetes.io");
        assert_string_equal(json_string_value(json_object_get(k8s, "namespace")), "default");
        assert_string_equal(json_string_value(json_object_get(json_object_get(k8s, "pod"), "uid")),
                            "5e3b7a10-0000-4000-8000-000000000002");
        json_decref(claims);
        ck_auth_user_free(u);
        free(token);
    }
    /* an unbound token has no pod claim and no pod extra */
    char *token = issue(k->ec, NULL);
    struct ck_auth_user *u = NULL;
    assert_int_equal(verify_at(k->ec, token, NOW, &u, NULL), 0);
    assert_null(json_object_get(u->extra, "authentication.kubernetes.io/pod-name"));
    ck_auth_user_free(u);
    free(token);
}

static void test_time_is_checked_with_leeway(void **state)
{
    struct keys *k = *state;
    char *token = issue(k->ec, NULL);
    struct ck_auth_user *u = NULL;
    struct ck_err err = {0};
    assert_int_equal(verify_at(k->ec, token, NOW + 3600 + 60, &u, &err), 0);
    ck_auth_user_free(u);
    u = NULL;
    assert_int_equal(verify_at(k->ec, token, NOW + 3600 + 61, &u, &err), CK_EINVAL);
    assert_string_equal(err.msg, "service account token has expired");
    assert_int_equal(verify_at(k->ec, token, NOW - 61, &u, &err), CK_EINVAL);
    assert_string_equal(err.msg, "service account token is not valid yet");
    assert_int_equal(verify_at(k->ec, token, NOW - 60, &u, &err), 0);
    ck_auth_user_free(u);
    free(token);
}

static void test_wrong_audience_or_issuer_is_refused(void **state)
{
    struct keys *k = *state;
    char *token = issue(k->rsa, NULL);
    struct ck_auth_user *u = NULL;
    struct ck_err err = {0};
    static const char *const other[] = {"vault", "https://other"};
    assert_int_equal(ck_auth_jwt_verify(k->rsa, token, ISSUER, other, 2, NOW, &u, NULL, &err),
                     CK_EINVAL);
    assert_non_null(strstr(err.msg, "audiences"));
    static const char *const some[] = {"vault", ISSUER};
    assert_int_equal(ck_auth_jwt_verify(k->rsa, token, ISSUER, some, 2, NOW, &u, NULL, &err), 0);
    u = ck_auth_user_free(u);
    assert_int_equal(
        ck_auth_jwt_verify(k->rsa, token, "https://elsewhere", api_aud, 1, NOW, &u, NULL, &err),
        CK_EINVAL);
    assert_non_null(strstr(err.msg, "issuer"));
    assert_null(u);
    free(token);
}

/* The token with its payload segment replaced by base64url(json). */
static char *with_payload(const char *token, const char *json)
{
    const char *d1 = strchr(token, '.'), *d2 = strrchr(token, '.');
    char *b64 = ck_base64_encode(json, strlen(json));
    for (char *p = b64; *p; p++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p == '=' ? '\0' : *p;
    size_t n = (size_t)(d1 - token) + strlen(b64) + strlen(d2) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%.*s.%s%s", (int)(d1 - token), token, b64, d2);
    free(b64);
    return out;
}

static void test_tampering_and_other_keys_are_refused(void **state)
{
    struct keys *k = *state;
    char *token = issue(k->ec, NULL);
    struct ck_auth_user *u = NULL;
    struct ck_err err = {0};
    char *forged = with_payload(
        token,
        "{\"aud\":[\"https://kubernetes.default.svc.cluster.local\"],\"exp\":1900000000,"
        "\"iss\":\"https://kubernetes.default.svc.cluster.local\",\"kubernetes.io\":{"
        "\"namespace\":\"kube-system\",\"serviceaccount\":{\"name\":\"admin\",\"uid\":\"x\"}},"
        "\"sub\":\"system:serviceaccount:kube-system:admin\"}");
    assert_int_equal(verify_at(k->ec, forged, NOW, &u, &err), CK_EINVAL);
    assert_string_equal(err.msg, "token signature is invalid");
    free(forged);
    /* flip one character of the payload */
    char *flipped = strdup(token);
    char *p = strchr(flipped, '.') + 5;
    *p = *p == 'A' ? 'B' : 'A';
    assert_int_equal(verify_at(k->ec, flipped, NOW, &u, &err), CK_EINVAL);
    free(flipped);
    /* another key of the same kind, and a key of another algorithm */
    assert_int_equal(verify_at(k->other, token, NOW, &u, &err), CK_EINVAL);
    assert_string_equal(err.msg, "token signature is invalid");
    assert_int_equal(verify_at(k->rsa, token, NOW, &u, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "alg is not RS256"));
    assert_null(u);
    free(token);
}

static void test_garbage_is_refused(void **state)
{
    struct keys *k = *state;
    char *good = issue(k->ec, NULL);
    const char *sig = strrchr(good, '.') + 1;
    char none[4096], hs[4096], padded[4096], extra[4096];
    /* {"alg":"none"} and {"alg":"HS256"} headers over the good payload */
    snprintf(none, sizeof(none), "eyJhbGciOiJub25lIn0%s", strchr(good, '.'));
    snprintf(hs, sizeof(hs), "eyJhbGciOiJIUzI1NiJ9%s", strchr(good, '.'));
    snprintf(padded, sizeof(padded), "%s=", good);
    snprintf(extra, sizeof(extra), "%s.%s", good, sig);
    const char *cases[] = {
        "",
        "a",
        "a.b",
        "a.b.c",
        "..",
        "...",
        "!!!.???.###",
        "eyJhbGciOiJFUzI1NiJ9..",
        "eyJhbGciOiJFUzI1NiJ9.e30.",
        "eyJhbGciOiJFUzI1NiJ9.e30.AAAA",
        "W10.W10.W10", /* [] headers and claims */
        none,
        hs,
        padded,
        extra,
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_auth_user *u = NULL;
        struct ck_err err = {0};
        if (verify_at(k->ec, cases[i], NOW, &u, &err) != CK_EINVAL)
            fail_msg("case %zu accepted", i);
        assert_null(u);
        assert_true(err.msg[0] != '\0');
    }
    assert_int_equal(verify_at(k->ec, NULL, NOW, NULL, NULL), CK_EINVAL);
    free(good);
}

static void test_public_keys_verify_but_do_not_sign(void **state)
{
    struct keys *k = *state;
    (void)k;
    char *pem = key_pem(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
    struct ck_auth_sa_key *priv = NULL, *pub = NULL;
    assert_int_equal(ck_auth_sa_key_from_pem(pem, strlen(pem), &priv, NULL), 0);
    /* export the public half as PEM through GnuTLS */
    gnutls_x509_privkey_t xk;
    gnutls_x509_privkey_init(&xk);
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    assert_int_equal(gnutls_x509_privkey_import(xk, &d, GNUTLS_X509_FMT_PEM), 0);
    gnutls_pubkey_t pk;
    gnutls_pubkey_init(&pk);
    gnutls_privkey_t ak;
    gnutls_privkey_init(&ak);
    gnutls_privkey_import_x509(ak, xk, 0);
    gnutls_pubkey_import_privkey(pk, ak, 0, 0);
    gnutls_datum_t out = {NULL, 0};
    assert_int_equal(gnutls_pubkey_export2(pk, GNUTLS_X509_FMT_PEM, &out), 0);
    assert_int_equal(ck_auth_sa_key_from_pem((const char *)out.data, out.size, &pub, NULL), 0);
    assert_string_equal(ck_auth_sa_key_id(pub), ck_auth_sa_key_id(priv));
    char *token = issue(priv, NULL);
    struct ck_auth_user *u = NULL;
    assert_int_equal(verify_at(pub, token, NOW, &u, NULL), 0);
    ck_auth_user_free(u);
    char *none = NULL;
    struct ck_auth_token_request req = {.issuer = ISSUER,
                                        .namespace = "a",
                                        .sa_name = "b",
                                        .audiences = api_aud,
                                        .n_audiences = 1,
                                        .now = NOW,
                                        .expiration_seconds = 600};
    assert_int_equal(ck_auth_jwt_sign(pub, &req, &none, NULL), CK_EINVAL);
    assert_null(none);
    struct ck_auth_sa_key *bad = NULL;
    assert_int_equal(ck_auth_sa_key_from_pem("nope", 4, &bad, NULL), CK_EINVAL);
    free(token);
    gnutls_free(out.data);
    gnutls_pubkey_deinit(pk);
    gnutls_privkey_deinit(ak);
    gnutls_x509_privkey_deinit(xk);
    ck_auth_sa_key_free(priv);
    ck_auth_sa_key_free(pub);
    free(pem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_gives_the_service_account_user),
        cmocka_unit_test(test_time_is_checked_with_leeway),
        cmocka_unit_test(test_wrong_audience_or_issuer_is_refused),
        cmocka_unit_test(test_tampering_and_other_keys_are_refused),
        cmocka_unit_test(test_garbage_is_refused),
        cmocka_unit_test(test_public_keys_verify_but_do_not_sign),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
