/*
 * jwt.c - ServiceAccount tokens: JWTs signed and verified as kube-apiserver's
 * TokenRequest issues them.
 *
 * Mirrors Kubernetes' pkg/serviceaccount (jwt.go, claims.go): a compact JWS
 * whose header is {"alg","kid"} and whose payload carries the registered
 * claims iss, sub (system:serviceaccount:NS:NAME), aud (an array), exp, iat,
 * nbf, jti and the private "kubernetes.io" claim {namespace, serviceaccount
 * {name, uid}, pod {name, uid} when bound}. RS256 for an RSA key, ES256 for
 * a P-256 key; "kid" is the unpadded base64url SHA-256 of the public key's
 * PKIX DER, as kube-apiserver names its keys.
 *
 * Only the encoding is ours: base64url through lib/util's base64, JSON
 * through jansson, every signature and digest through GnuTLS (an ECDSA
 * signature travels as r||s in a JWS and as DER in GnuTLS; gnutls converts).
 * Verification refuses anything it did not expect before it trusts any of
 * it: exactly three unpadded base64url segments, a header whose alg is the
 * key's (never "none", never another algorithm), a valid signature, then
 * the claims: issuer, audience, time with go-jose's one-minute leeway, and
 * a kubernetes.io claim naming the same account as sub.
 *
 * Threading: a key is immutable after loading; GnuTLS allows concurrent
 * signing and verification with one key.
 */
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ckube/auth.h>

#include "ckube/internal/util.h"

#define MAX_TOKEN  65536 /* bytes; a TokenRequest's token is well under 2 KiB */
#define ES256_HALF 32

struct ck_auth_sa_key {
    gnutls_privkey_t priv; /* NULL for a verify-only key */
    gnutls_pubkey_t pub;
    bool ecdsa;
    char kid[48];
};

/* ---- base64url ------------------------------------------------------------ */

/* Unpadded base64url of len bytes; caller frees. */
static char *b64url_encode(const void *data, size_t len)
{
    char *s = ck_base64_encode(data, len);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    while (n && s[n - 1] == '=')
        s[--n] = '\0';
    for (char *p = s; *p; p++) {
        if (*p == '+')
            *p = '-';
        else if (*p == '/')
            *p = '_';
    }
    return s;
}

/* Decodes n bytes of unpadded base64url; refuses other characters. Caller frees. */
static char *b64url_decode(const char *text, size_t n, size_t *ret_len)
{
    if (n == 0 || n % 4 == 1)
        return NULL;
    char *copy = ck__malloc(n + 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_')) {
            free(copy);
            return NULL;
        }
        copy[i] = c;
    }
    copy[n] = '\0';
    char *out = ck_base64_decode(copy, ret_len);
    free(copy);
    return out;
}

/* ---- keys ------------------------------------------------------------------- */

struct ck_auth_sa_key *ck_auth_sa_key_free(struct ck_auth_sa_key *key)
{
    if (!key)
        return NULL;
    if (key->priv)
        gnutls_privkey_deinit(key->priv);
    if (key->pub)
        gnutls_pubkey_deinit(key->pub);
    free(key);
    return NULL;
}

static int finish_key(struct ck_auth_sa_key *k, struct ck_err *reterr)
{
    unsigned bits = 0;
    int alg = gnutls_pubkey_get_pk_algorithm(k->pub, &bits);
    if (alg == GNUTLS_PK_RSA) {
        if (bits < 2048)
            return ck_err_set(reterr, CK_EINVAL, "RSA service-account keys need 2048 bits");
    } else if (alg == GNUTLS_PK_ECDSA) {
        gnutls_ecc_curve_t curve;
        if (gnutls_pubkey_export_ecc_raw(k->pub, &curve, NULL, NULL) < 0 ||
            curve != GNUTLS_ECC_CURVE_SECP256R1)
            return ck_err_set(reterr, CK_EINVAL, "ECDSA service-account keys must be P-256");
        k->ecdsa = true;
    } else {
        return ck_err_set(reterr, CK_EINVAL, "service-account keys must be RSA or ECDSA P-256");
    }
    gnutls_datum_t der = {NULL, 0};
    unsigned char digest[32];
    if (gnutls_pubkey_export2(k->pub, GNUTLS_X509_FMT_DER, &der) < 0 ||
        gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, digest) < 0) {
        gnutls_free(der.data);
        return ck_err_set(reterr, CK_EINVAL, "cannot export the public key");
    }
    gnutls_free(der.data);
    char *kid = b64url_encode(digest, sizeof(digest));
    if (!kid)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    snprintf(k->kid, sizeof(k->kid), "%s", kid);
    free(kid);
    return 0;
}

int ck_auth_sa_key_from_pem(const char *pem, size_t len, struct ck_auth_sa_key **ret_key,
                            struct ck_err *reterr)
{
    struct ck_auth_sa_key *k = ck__calloc(1, sizeof(*k));
    if (!k || gnutls_pubkey_init(&k->pub) < 0) {
        ck_auth_sa_key_free(k);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    gnutls_datum_t d = {(unsigned char *)(uintptr_t)pem, (unsigned)len};
    int rc;
    if (gnutls_privkey_init(&k->priv) < 0) {
        rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto fail;
    }
    if (gnutls_privkey_import_x509_raw(k->priv, &d, GNUTLS_X509_FMT_PEM, NULL, 0) == 0) {
        if (gnutls_pubkey_import_privkey(k->pub, k->priv, 0, 0) < 0) {
            rc = ck_err_set(reterr, CK_EINVAL, "cannot derive the public key");
            goto fail;
        }
    } else {
        /* a public key alone verifies (kube-apiserver's --service-account-key-file) */
        gnutls_privkey_deinit(k->priv);
        k->priv = NULL;
        if (gnutls_pubkey_import(k->pub, &d, GNUTLS_X509_FMT_PEM) < 0) {
            rc = ck_err_set(reterr, CK_EINVAL, "no PEM private or public key found");
            goto fail;
        }
    }
    if ((rc = finish_key(k, reterr)))
        goto fail;
    *ret_key = k;
    return 0;
fail:
    ck_auth_sa_key_free(k);
    return rc;
}

int ck_auth_sa_key_load(const char *path, struct ck_auth_sa_key **ret_key, struct ck_err *reterr)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_load_file(path, &d) < 0)
        return ck_err_set(reterr, CK_EIO, "reading service-account key %s failed", path);
    int rc = ck_auth_sa_key_from_pem((const char *)d.data, d.size, ret_key, reterr);
    gnutls_free(d.data);
    return rc;
}

const char *ck_auth_sa_key_alg(const struct ck_auth_sa_key *key)
{
    return key->ecdsa ? "ES256" : "RS256";
}

const char *ck_auth_sa_key_id(const struct ck_auth_sa_key *key)
{
    return key->kid;
}

/* ---- signing ---------------------------------------------------------------- */

/* Copies a big-endian integer into exactly n bytes, left-padded; false when too long. */
static bool fixed_width(const gnutls_datum_t *v, unsigned char *out, size_t n)
{
    size_t len = v->size;
    const unsigned char *p = v->data;
    while (len > n && *p == 0) {
        p++;
        len--;
    }
    if (len > n)
        return false;
    memset(out, 0, n - len);
    memcpy(out + n - len, p, len);
    return true;
}

static int sign(const struct ck_auth_sa_key *key, const char *input, size_t len, char **ret_b64)
{
    gnutls_datum_t data = {(unsigned char *)(uintptr_t)input, (unsigned)len}, sig = {NULL, 0};
    if (gnutls_privkey_sign_data(key->priv, GNUTLS_DIG_SHA256, 0, &data, &sig) < 0)
        return CK_EIO;
    int rc = 0;
    if (key->ecdsa) {
        gnutls_datum_t r = {NULL, 0}, s = {NULL, 0};
        unsigned char raw[2 * ES256_HALF];
        if (gnutls_decode_rs_value(&sig, &r, &s) < 0 || !fixed_width(&r, raw, ES256_HALF) ||
            !fixed_width(&s, raw + ES256_HALF, ES256_HALF))
            rc = CK_EIO;
        else if (!(*ret_b64 = b64url_encode(raw, sizeof(raw))))
            rc = CK_ENOMEM;
        gnutls_free(r.data);
        gnutls_free(s.data);
    } else if (!(*ret_b64 = b64url_encode(sig.data, sig.size))) {
        rc = CK_ENOMEM;
    }
    gnutls_free(sig.data);
    return rc;
}

/* A random version-4 UUID. */
static int uuid4(char out[37])
{
    unsigned char b[16];
    if (gnutls_rnd(GNUTLS_RND_NONCE, b, sizeof(b)) < 0)
        return CK_EIO;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}

static char *b64url_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    char *out = text ? b64url_encode(text, strlen(text)) : NULL;
    free(text);
    return out;
}

int ck_auth_jwt_sign(const struct ck_auth_sa_key *key, const struct ck_auth_token_request *req,
                     char **ret_token, struct ck_err *reterr)
{
    if (!key->priv)
        return ck_err_set(reterr, CK_EINVAL, "a public key cannot sign");
    if (!req->issuer || !req->namespace || !req->sa_name || !req->n_audiences ||
        req->expiration_seconds <= 0)
        return ck_err_set(reterr, CK_EINVAL,
                          "a token needs an issuer, a service account, an audience and a lifetime");
    char jti[37], sub[512];
    if (req->jti)
        snprintf(jti, sizeof(jti), "%s", req->jti);
    else if (uuid4(jti))
        return ck_err_set(reterr, CK_EIO, "no random numbers");
    snprintf(sub, sizeof(sub), "%s%s:%s", CK_AUTH_SERVICEACCOUNT_USER, req->namespace,
             req->sa_name);
    json_t *aud = json_array();
    for (size_t i = 0; aud && i < req->n_audiences; i++)
        json_array_append_new(aud, json_string(req->audiences[i]));
    json_t *k8s = json_pack("{s:s,s:{s:s,s:s}}", "namespace", req->namespace, "serviceaccount",
                            "name", req->sa_name, "uid", req->sa_uid ? req->sa_uid : "");
    if (k8s && req->pod_name)
        json_object_set_new(
            k8s, "pod",
            json_pack("{s:s,s:s}", "name", req->pod_name, "uid", req->pod_uid ? req->pod_uid : ""));
    json_t *claims = json_pack("{s:o,s:I,s:I,s:s,s:s,s:o,s:I,s:s}", "aud", aud, "exp",
                               (json_int_t)(req->now + req->expiration_seconds), "iat",
                               (json_int_t)req->now, "iss", req->issuer, "jti", jti,
                               "kubernetes.io", k8s, "nbf", (json_int_t)req->now, "sub", sub);
    json_t *header = json_pack("{s:s,s:s}", "alg", ck_auth_sa_key_alg(key), "kid", key->kid);
    char *h = b64url_json(header), *p = b64url_json(claims), *s = NULL, *input = NULL;
    json_decref(header);
    json_decref(claims);
    int rc = 0;
    size_t hl = h ? strlen(h) : 0, pl = p ? strlen(p) : 0;
    if (!h || !p || !(input = ck__malloc(hl + pl + 2))) {
        rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    memcpy(input, h, hl);
    input[hl] = '.';
    memcpy(input + hl + 1, p, pl + 1);
    if ((rc = sign(key, input, hl + pl + 1, &s))) {
        rc = ck_err_set(reterr, rc, "signing the token failed");
        goto out;
    }
    size_t sl = strlen(s);
    char *token = ck__realloc(input, hl + pl + sl + 3);
    if (!token) {
        rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    input = NULL;
    token[hl + pl + 1] = '.';
    memcpy(token + hl + pl + 2, s, sl + 1);
    *ret_token = token;
out:
    free(h);
    free(p);
    free(s);
    free(input);
    return rc;
}

/* ---- verification ---------------------------------------------------------- */

static bool check_signature(const struct ck_auth_sa_key *key, const char *token, size_t signed_len,
                            const char *sig_b64, size_t sig_len)
{
    size_t n = 0;
    char *sig = b64url_decode(sig_b64, sig_len, &n);
    if (!sig)
        return false;
    gnutls_datum_t data = {(unsigned char *)(uintptr_t)token, (unsigned)signed_len};
    bool ok = false;
    if (key->ecdsa) {
        if (n == 2 * ES256_HALF) {
            gnutls_datum_t r = {(unsigned char *)sig, ES256_HALF};
            gnutls_datum_t s = {(unsigned char *)sig + ES256_HALF, ES256_HALF};
            gnutls_datum_t der = {NULL, 0};
            if (gnutls_encode_rs_value(&der, &r, &s) == 0)
                ok = gnutls_pubkey_verify_data2(key->pub, GNUTLS_SIGN_ECDSA_SHA256, 0, &data,
                                                &der) >= 0;
            gnutls_free(der.data);
        }
    } else {
        gnutls_datum_t s = {(unsigned char *)sig, (unsigned)n};
        ok = gnutls_pubkey_verify_data2(key->pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &s) >= 0;
    }
    free(sig);
    return ok;
}

static json_t *decode_json(const char *b64, size_t len)
{
    size_t n = 0;
    char *text = b64url_decode(b64, len, &n);
    if (!text)
        return NULL;
    json_t *v = json_loadb(text, n, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    if (v && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static bool audience_ok(const json_t *aud, const char *const *audiences, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (json_is_string(aud) && strcmp(json_string_value(aud), audiences[i]) == 0)
            return true;
        size_t k;
        const json_t *a;
        json_array_foreach(aud, k,
                           a) if (json_is_string(a) &&
                                  strcmp(json_string_value(a), audiences[i]) == 0) return true;
    }
    return false;
}

static const char *claim_str(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(obj, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

static int user_of(const json_t *claims, struct ck_auth_user **ret_user, struct ck_err *reterr)
{
    const json_t *k8s = json_object_get(claims, "kubernetes.io");
    const char *ns = claim_str(k8s, "namespace", NULL);
    const char *name = claim_str(json_object_get(k8s, "serviceaccount"), "name", NULL);
    const char *uid = claim_str(json_object_get(k8s, "serviceaccount"), "uid", NULL);
    const char *sub = json_string_value(json_object_get(claims, "sub"));
    if (!ns || !*ns || !name || !*name || !sub)
        return ck_err_set(reterr, CK_EINVAL, "service account claims are missing");
    char want[512], group[512];
    snprintf(want, sizeof(want), "%s%s:%s", CK_AUTH_SERVICEACCOUNT_USER, ns, name);
    if (strcmp(sub, want) != 0)
        return ck_err_set(reterr, CK_EINVAL, "sub does not name the token's service account");
    struct ck_auth_user *u = ck_auth_user_new(want, uid ? uid : "");
    snprintf(group, sizeof(group), "%s:%s", CK_AUTH_SERVICEACCOUNTS, ns);
    int rc = !u || ck_auth_user_add_group(u, CK_AUTH_SERVICEACCOUNTS) ||
             ck_auth_user_add_group(u, group) || ck_auth_mark_authenticated(u);
    const json_t *pod = json_object_get(k8s, "pod");
    if (!rc && pod) {
        const char *pn = claim_str(pod, "name", NULL), *pu = claim_str(pod, "uid", NULL);
        rc = ck_auth_user_add_extra(u, "authentication.kubernetes.io/pod-name", pn ? pn : "") ||
             ck_auth_user_add_extra(u, "authentication.kubernetes.io/pod-uid", pu ? pu : "");
    }
    const char *jti = json_string_value(json_object_get(claims, "jti"));
    if (!rc && jti && *jti) {
        char cred[128];
        snprintf(cred, sizeof(cred), "JTI=%s", jti);
        rc = ck_auth_user_add_extra(u, "authentication.kubernetes.io/credential-id", cred);
    }
    if (rc) {
        ck_auth_user_free(u);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    *ret_user = u;
    return 0;
}

/* The claim's NumericDate (an integer; JSON numbers with a fraction are truncated). */
static bool numeric_date(const json_t *claims, const char *name, long long *ret)
{
    const json_t *v = json_object_get(claims, name);
    if (!v)
        return false;
    if (json_is_integer(v))
        *ret = (long long)json_integer_value(v);
    else if (json_is_real(v))
        *ret = (long long)json_real_value(v);
    else
        return false;
    return true;
}

int ck_auth_jwt_verify(const struct ck_auth_sa_key *key, const char *token, const char *issuer,
                       const char *const *audiences, size_t n_audiences, long long now,
                       struct ck_auth_user **ret_user, json_t **ret_claims, struct ck_err *reterr)
{
    size_t len = token ? strnlen(token, MAX_TOKEN + 1) : 0;
    if (len == 0 || len > MAX_TOKEN)
        return ck_err_set(reterr, CK_EINVAL, "token is empty or too long");
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
    if (!dot1 || !dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)))
        return ck_err_set(reterr, CK_EINVAL, "token is not a compact JWS");
    json_t *header = decode_json(token, (size_t)(dot1 - token));
    const char *alg = json_string_value(json_object_get(header, "alg"));
    bool alg_ok =
        alg && strcmp(alg, ck_auth_sa_key_alg(key)) == 0 && !json_object_get(header, "crit");
    json_decref(header);
    if (!alg_ok)
        return ck_err_set(reterr, CK_EINVAL, "token header is malformed or its alg is not %s",
                          ck_auth_sa_key_alg(key));
    if (!check_signature(key, token, (size_t)(dot2 - token), dot2 + 1,
                         len - (size_t)(dot2 + 1 - token)))
        return ck_err_set(reterr, CK_EINVAL, "token signature is invalid");
    json_t *claims = decode_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!claims)
        return ck_err_set(reterr, CK_EINVAL, "token claims are malformed");
    int rc;
    long long exp = 0, nbf = 0, iat = 0;
    const char *iss = json_string_value(json_object_get(claims, "iss"));
    if (!iss || !issuer || strcmp(iss, issuer) != 0) {
        rc = ck_err_set(reterr, CK_EINVAL, "token issuer \"%s\" is not \"%s\"", iss ? iss : "",
                        issuer ? issuer : "");
    } else if (!audience_ok(json_object_get(claims, "aud"), audiences, n_audiences)) {
        rc = ck_err_set(reterr, CK_EINVAL, "token audiences are invalid for the target audiences");
    } else if (!numeric_date(claims, "exp", &exp)) {
        rc = ck_err_set(reterr, CK_EINVAL, "token has no expiry");
    } else if (now - CK_AUTH_JWT_LEEWAY > exp) {
        rc = ck_err_set(reterr, CK_EINVAL, "service account token has expired");
    } else if (numeric_date(claims, "nbf", &nbf) && now + CK_AUTH_JWT_LEEWAY < nbf) {
        rc = ck_err_set(reterr, CK_EINVAL, "service account token is not valid yet");
    } else if (numeric_date(claims, "iat", &iat) && now + CK_AUTH_JWT_LEEWAY < iat) {
        rc = ck_err_set(reterr, CK_EINVAL, "service account token is issued in the future");
    } else {
        rc = user_of(claims, ret_user, reterr);
    }
    if (rc == 0 && ret_claims)
        *ret_claims = claims;
    else
        json_decref(claims);
    return rc;
}
