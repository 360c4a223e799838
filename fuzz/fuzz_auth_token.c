/*
 * fuzz_auth_token.c - libFuzzer target for what libckube-auth reads from
 * the outside: the input is parsed as a --token-auth-file CSV (and, when it
 * parses, every token in it must authenticate) and verified as a bearer JWT
 * against an RS256 and an ES256 key. Properties beyond "no crash, no leak":
 * a random input never verifies, and a parse that fails leaves no table.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ck_auth_sa_key *keys[2];

static struct ck_auth_sa_key *make_key(gnutls_pk_algorithm_t alg, unsigned bits)
{
    gnutls_x509_privkey_t k;
    gnutls_datum_t pem = {NULL, 0};
    struct ck_auth_sa_key *out = NULL;
    if (gnutls_x509_privkey_init(&k) < 0)
        abort();
    if (gnutls_x509_privkey_generate(k, alg, bits, 0) < 0 ||
        gnutls_x509_privkey_export2(k, GNUTLS_X509_FMT_PEM, &pem) < 0 ||
        ck_auth_sa_key_from_pem((const char *)pem.data, pem.size, &out, NULL))
        abort();
    gnutls_free(pem.data);
    gnutls_x509_privkey_deinit(k);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!keys[0]) {
        keys[0] = make_key(GNUTLS_PK_RSA, 2048);
        keys[1] = make_key(GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1));
    }
    struct ck_auth_tokens *t = NULL;
    struct ck_err err = {0};
    if (ck_auth_tokens_parse("fuzz", (const char *)data, size, &t, &err) == 0) {
        if (!t)
            abort();
        ck_auth_user_free(ck_auth_tokens_authenticate(t, "token"));
        ck_auth_tokens_free(t);
    } else if (t) {
        abort();
    }

    char *token = malloc(size + 1);
    if (!token)
        return 0;
    memcpy(token, data, size);
    token[size] = '\0';
    static const char *const aud[] = {"https://kubernetes.default.svc"};
    for (size_t i = 0; i < 2; i++) {
        struct ck_auth_user *u = NULL;
        json_t *claims = NULL;
        if (ck_auth_jwt_verify(keys[i], token, "https://kubernetes.default.svc", aud, 1, 1700000000,
                               &u, &claims, &err) == 0)
            abort(); /* a forged token verified */
        if (u || claims)
            abort();
    }
    /* the whole chain, with the input as the Authorization header */
    struct ck_auth_config cfg = {.sa_key = keys[1], .sa_issuer = "https://kubernetes.default.svc"};
    struct ck_auth_credentials cr = {.authorization = token, .now = 1700000000};
    struct ck_auth_user *u = NULL;
    if (ck_auth_authenticate(&cfg, &cr, &u, &err) == 0)
        abort(); /* neither a token file nor anonymous requests: nothing may pass */
    if (u)
        abort();
    free(token);
    return 0;
}
