/*
 * authn.c - users, and the authenticators that need no keys: client
 * certificates and the static token file.
 *
 * Mirrors k8s.io/apiserver's user.DefaultInfo, the x509 authenticator's
 * CommonNameUserConversion (user from the subject's CN, groups from its O
 * values), the token-file authenticator (pkg/authentication/token/tokenfile:
 * a CSV of token,user,uid[,"g1,g2"] read with Go's encoding/csv, leading
 * spaces trimmed, at least three fields per record), the anonymous
 * authenticator, the authenticated-group adder, the bearer-token header
 * reader (pkg/authentication/request/bearertoken) and the union of them all
 * that kube-apiserver runs for each request (ck_auth_authenticate()).
 *
 * The CSV reader here is our own and follows encoding/csv's rules for what
 * this format needs: fields split on commas, a field that starts with a
 * quote runs to the closing quote ("" inside is one quote and commas and
 * newlines are kept), a quote inside an unquoted field or text after a
 * closing quote is an error, blank lines are skipped, \r\n ends a line.
 *
 * Threading: a parsed token table is immutable; users are owned by one
 * thread at a time.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ckube/auth.h>

#include "ckube/internal/util.h"

/* ---- users ---------------------------------------------------------------- */

struct ck_auth_user *ck_auth_user_new(const char *name, const char *uid)
{
    struct ck_auth_user *u = ck__calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    u->name = ck__strdup(name ? name : "");
    u->uid = ck__strdup(uid ? uid : "");
    if (!u->name || !u->uid)
        return ck_auth_user_free(u);
    return u;
}

bool ck_auth_user_in_group(const struct ck_auth_user *user, const char *group)
{
    for (size_t i = 0; user && i < user->n_groups; i++)
        if (strcmp(user->groups[i], group) == 0)
            return true;
    return false;
}

int ck_auth_user_add_group(struct ck_auth_user *user, const char *group)
{
    if (ck_auth_user_in_group(user, group))
        return 0;
    char *copy = ck__strdup(group);
    char **v = copy ? ck__realloc(user->groups, (user->n_groups + 1) * sizeof(*v)) : NULL;
    if (!v) {
        free(copy);
        return CK_ENOMEM;
    }
    v[user->n_groups++] = copy;
    user->groups = v;
    return 0;
}

int ck_auth_user_add_extra(struct ck_auth_user *user, const char *key, const char *value)
{
    if (!user->extra && !(user->extra = json_object()))
        return CK_ENOMEM;
    json_t *arr = json_object_get(user->extra, key);
    if (!arr) {
        arr = json_array();
        if (!arr || json_object_set_new(user->extra, key, arr))
            return CK_ENOMEM;
    }
    return json_array_append_new(arr, json_string(value)) ? CK_ENOMEM : 0;
}

struct ck_auth_user *ck_auth_user_copy(const struct ck_auth_user *user)
{
    struct ck_auth_user *c = ck_auth_user_new(user->name, user->uid);
    if (!c)
        return NULL;
    for (size_t i = 0; i < user->n_groups; i++)
        if (ck_auth_user_add_group(c, user->groups[i]))
            return ck_auth_user_free(c);
    if (user->extra && !(c->extra = ck__json_copy(user->extra)))
        return ck_auth_user_free(c);
    return c;
}

struct ck_auth_user *ck_auth_user_free(struct ck_auth_user *user)
{
    if (!user)
        return NULL;
    for (size_t i = 0; i < user->n_groups; i++)
        free(user->groups[i]);
    free(user->groups);
    free(user->name);
    free(user->uid);
    json_decref(user->extra);
    free(user);
    return NULL;
}

struct ck_auth_user *ck_auth_anonymous(void)
{
    struct ck_auth_user *u = ck_auth_user_new(CK_AUTH_ANONYMOUS_USER, "");
    if (u && ck_auth_user_add_group(u, CK_AUTH_UNAUTHENTICATED))
        return ck_auth_user_free(u);
    return u;
}

int ck_auth_mark_authenticated(struct ck_auth_user *user)
{
    if (ck_auth_user_in_group(user, CK_AUTH_AUTHENTICATED) ||
        ck_auth_user_in_group(user, CK_AUTH_UNAUTHENTICATED))
        return 0;
    return ck_auth_user_add_group(user, CK_AUTH_AUTHENTICATED);
}

/* ---- client certificates ------------------------------------------------- */

/* The idx-th value of the subject attribute oid, or NULL past the last. */
static char *subject_value(gnutls_x509_crt_t crt, const char *oid, unsigned idx)
{
    size_t size = 0;
    if (gnutls_x509_crt_get_dn_by_oid(crt, oid, idx, 0, NULL, &size) !=
        GNUTLS_E_SHORT_MEMORY_BUFFER)
        return NULL;
    char *buf = ck__malloc(size + 1);
    if (!buf)
        return NULL;
    if (gnutls_x509_crt_get_dn_by_oid(crt, oid, idx, 0, buf, &size) < 0) {
        free(buf);
        return NULL;
    }
    buf[size] = '\0';
    return buf;
}

int ck_auth_user_from_cert(const void *data, size_t len, bool pem, struct ck_auth_user **ret_user,
                           struct ck_err *reterr)
{
    gnutls_x509_crt_t crt;
    if (gnutls_x509_crt_init(&crt) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    gnutls_datum_t d = {(unsigned char *)(uintptr_t)data, (unsigned)len};
    int rc = gnutls_x509_crt_import(crt, &d, pem ? GNUTLS_X509_FMT_PEM : GNUTLS_X509_FMT_DER);
    if (rc < 0) {
        gnutls_x509_crt_deinit(crt);
        return ck_err_set(reterr, CK_EINVAL, "client certificate: %s", gnutls_strerror(rc));
    }
    char *cn = subject_value(crt, GNUTLS_OID_X520_COMMON_NAME, 0);
    if (!cn || !*cn) {
        free(cn);
        gnutls_x509_crt_deinit(crt);
        return ck_err_set(reterr, CK_EINVAL, "common name is required");
    }
    struct ck_auth_user *u = ck_auth_user_new(cn, "");
    free(cn);
    for (unsigned i = 0; u; i++) {
        char *o = subject_value(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, i);
        if (!o)
            break;
        if (ck_auth_user_add_group(u, o))
            u = ck_auth_user_free(u);
        free(o);
    }
    gnutls_x509_crt_deinit(crt);
    if (!u || ck_auth_mark_authenticated(u)) {
        ck_auth_user_free(u);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    *ret_user = u;
    return 0;
}

/* ---- the token file ------------------------------------------------------- */

struct token_entry {
    char *name, *uid;
    char **groups;
    size_t n_groups;
};

struct ck_auth_tokens {
    struct ck__strmap map; /* token -> struct token_entry */
};

static void entry_release(struct token_entry *e)
{
    free(e->name);
    free(e->uid);
    for (size_t i = 0; i < e->n_groups; i++)
        free(e->groups[i]);
    free(e->groups);
    memset(e, 0, sizeof(*e));
}

struct ck_auth_tokens *ck_auth_tokens_free(struct ck_auth_tokens *tokens)
{
    if (!tokens)
        return NULL;
    size_t b;
    for (struct ck__strmap_entry *e = ck__strmap_next(&tokens->map, NULL, &b); e;
         e = ck__strmap_next(&tokens->map, e, &b))
        entry_release(e->value);
    ck__strmap_release(&tokens->map);
    free(tokens);
    return NULL;
}

size_t ck_auth_tokens_count(const struct ck_auth_tokens *tokens)
{
    return tokens ? tokens->map.len : 0;
}

#define MAX_FIELDS 8

struct csv {
    const char *p, *end;
    size_t line;        /* the line c->p is on */
    size_t record_line; /* the line the last record started on */
    char *fields[MAX_FIELDS];
    size_t n;
};

static void csv_clear(struct csv *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->fields[i]);
    c->n = 0;
}

/* Appends one byte to a growing field. */
static int put(char **buf, size_t *len, size_t *cap, char ch)
{
    if (*len + 1 >= *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        char *n = ck__realloc(*buf, ncap);
        if (!n)
            return CK_ENOMEM;
        *buf = n;
        *cap = ncap;
    }
    (*buf)[(*len)++] = ch;
    (*buf)[*len] = '\0';
    return 0;
}

/*
 * Reads one record into c->fields. Returns 1 for a record, 0 at the end,
 * CK_EINVAL (with the reason in *why) or CK_ENOMEM.
 */
static int csv_record(struct csv *c, const char **why)
{
    csv_clear(c);
    for (;;) { /* skip blank lines */
        if (c->p >= c->end)
            return 0;
        if (*c->p == '\n' || (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')) {
            c->p += *c->p == '\r' ? 2 : 1;
            c->line++;
            continue;
        }
        break;
    }
    c->record_line = c->line;
    for (;;) {
        char *buf = NULL;
        size_t len = 0, cap = 0;
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
            c->p++;
        if (!(buf = ck__strdup("")))
            return CK_ENOMEM;
        cap = 1;
        if (c->p < c->end && *c->p == '"') {
            c->p++;
            for (;;) {
                if (c->p >= c->end) {
                    free(buf);
                    *why = "extraneous or missing \" in quoted-field";
                    return CK_EINVAL;
                }
                char ch = *c->p++;
                if (ch == '"') {
                    if (c->p < c->end && *c->p == '"') {
                        c->p++;
                    } else {
                        break;
                    }
                } else if (ch == '\n') {
                    c->line++;
                }
                if (put(&buf, &len, &cap, ch)) {
                    free(buf);
                    return CK_ENOMEM;
                }
            }
            if (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
                !(*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')) {
                free(buf);
                *why = "extraneous or missing \" in quoted-field";
                return CK_EINVAL;
            }
        } else {
            while (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
                   !(*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')) {
                if (*c->p == '"') {
                    free(buf);
                    *why = "bare \" in non-quoted-field";
                    return CK_EINVAL;
                }
                if (put(&buf, &len, &cap, *c->p++)) {
                    free(buf);
                    return CK_ENOMEM;
                }
            }
        }
        if (c->n == MAX_FIELDS) {
            free(buf); /* fields past the fourth are ignored, as kube-apiserver does */
        } else {
            c->fields[c->n++] = buf;
        }
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end)
            c->p += *c->p == '\r' ? 2 : 1;
        c->line++;
        return 1;
    }
}

static int split_groups(struct token_entry *e, const char *text)
{
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        char **v = ck__realloc(e->groups, (e->n_groups + 1) * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        e->groups = v;
        if (!(v[e->n_groups] = ck__malloc(l + 1)))
            return CK_ENOMEM;
        memcpy(v[e->n_groups], p, l);
        v[e->n_groups++][l] = '\0';
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int ck_auth_tokens_parse(const char *name, const char *text, size_t len,
                         struct ck_auth_tokens **ret_tokens, struct ck_err *reterr)
{
    struct ck_auth_tokens *t = ck__calloc(1, sizeof(*t));
    if (!t)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct csv c = {.p = text, .end = text + len, .line = 1};
    int rc;
    for (;;) {
        const char *why = NULL;
        rc = csv_record(&c, &why);
        if (rc == 0)
            break;
        if (rc == CK_EINVAL) {
            rc = ck_err_set(reterr, rc, "token file '%s': record on line %zu: %s", name, c.line,
                            why);
            goto fail;
        }
        if (rc < 0)
            goto nomem;
        if (c.n < 3) {
            rc = ck_err_set(reterr, CK_EINVAL,
                            "token file '%s' must have at least 3 columns (token, user name, "
                            "user uid), found %zu (line %zu)",
                            name, c.n, c.record_line);
            goto fail;
        }
        if (!*c.fields[0])
            continue; /* kube-apiserver warns about an empty token and skips it */
        struct ck__strmap_entry *e = ck__strmap_find(&t->map, c.fields[0]);
        if (e)
            entry_release(e->value); /* a duplicate: the last line wins */
        else if (!(e = ck__strmap_insert(&t->map, c.fields[0], sizeof(struct token_entry))))
            goto nomem;
        struct token_entry *te = e->value;
        te->name = c.fields[1];
        te->uid = c.fields[2];
        c.fields[1] = c.fields[2] = NULL;
        if (c.n >= 4 && split_groups(te, c.fields[3]))
            goto nomem;
    }
    csv_clear(&c);
    *ret_tokens = t;
    return 0;
nomem:
    rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
fail:
    csv_clear(&c);
    ck_auth_tokens_free(t);
    return rc;
}

/* A token file bigger than this is a mistake, not a list of users. */
#define MAX_TOKEN_FILE (64u << 20)

int ck_auth_tokens_load(const char *path, struct ck_auth_tokens **ret_tokens, struct ck_err *reterr)
{
    char *text = NULL;
    size_t len = 0;
    int rc = ck__read_file(path, MAX_TOKEN_FILE, &text, &len);
    if (rc == CK_ENOMEM)
        return ck_err_set(reterr, rc, "out of memory");
    if (rc == CK__E2BIG)
        return ck_err_set(reterr, CK_EINVAL, "token file '%s' is larger than 64 MiB", path);
    if (rc)
        return ck_err_set(reterr, CK_EIO, "reading token file '%s' failed: %s", path,
                          strerror(-rc));
    rc = ck_auth_tokens_parse(path, text, len, ret_tokens, reterr);
    free(text);
    return rc;
}

struct ck_auth_user *ck_auth_tokens_authenticate(const struct ck_auth_tokens *tokens,
                                                 const char *token)
{
    if (!tokens || !token || !*token)
        return NULL;
    struct ck__strmap_entry *e = ck__strmap_find(&tokens->map, token);
    if (!e)
        return NULL;
    const struct token_entry *te = e->value;
    struct ck_auth_user *u = ck_auth_user_new(te->name, te->uid);
    for (size_t i = 0; u && i < te->n_groups; i++)
        if (ck_auth_user_add_group(u, te->groups[i]))
            u = ck_auth_user_free(u);
    if (u && ck_auth_mark_authenticated(u))
        u = ck_auth_user_free(u);
    return u;
}

/* ---- the chain ---------------------------------------------------------------- */

/*
 * The token of an `Authorization: Bearer T` header, in buf; NULL when the
 * header is absent, of another scheme or without a token (not an error:
 * the request simply carries no bearer token).
 */
static const char *bearer_token(const char *header, char *buf, size_t size)
{
    if (!header)
        return NULL;
    while (*header == ' ' || *header == '\t')
        header++;
    if (strncasecmp(header, "bearer ", 7) != 0)
        return NULL;
    const char *t = header + 7;
    size_t n = strcspn(t, " \t\r\n");
    if (n == 0 || n >= size)
        return n == 0 ? NULL : "";
    memcpy(buf, t, n);
    buf[n] = '\0';
    return buf;
}

/* ---- bootstrap tokens ---------------------------------------------------------- */

#define BOOTSTRAP_GROUP "system:bootstrappers"

static bool lower_alnum(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

bool ck_auth_is_bootstrap_token(const char *token)
{
    return token && strlen(token) == 23 && token[6] == '.' && lower_alnum(token, 6) &&
           lower_alnum(token + 7, 16);
}

/* data[key] of a Secret, base64-decoded (caller frees), or NULL. */
static char *secret_data(const json_t *secret, const char *key)
{
    const char *b64 = json_string_value(json_object_get(json_object_get(secret, "data"), key));
    size_t len = 0;
    return b64 ? ck_base64_decode(b64, &len) : NULL;
}

/* Constant-time comparison of two strings (subtle.ConstantTimeCompare). */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

/* An extra group: system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]. */
static bool valid_extra_group(const char *g, size_t n)
{
    size_t prefix = sizeof(BOOTSTRAP_GROUP ":") - 1;
    if (n <= prefix || n > prefix + 256 || strncmp(g, BOOTSTRAP_GROUP ":", prefix) != 0)
        return false;
    for (size_t i = prefix; i < n; i++) {
        char c = g[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  (i + 1 < n && (c == ':' || c == '-'));
        if (!ok)
            return false;
    }
    return true;
}

struct ck_auth_user *ck_auth_bootstrap_token_user(const json_t *secret, const char *token,
                                                  long long now, struct ck_err *reterr)
{
    const json_t *meta = json_object_get(secret, "metadata");
    const char *type = json_string_value(json_object_get(secret, "type"));
    if (!ck_auth_is_bootstrap_token(token)) {
        ck_err_set(reterr, CK_EPERM, "not a bootstrap token");
        return NULL;
    }
    if (json_object_get(meta, "deletionTimestamp")) {
        ck_err_set(reterr, CK_EPERM, "bootstrap token secret is deleted and awaiting removal");
        return NULL;
    }
    if (!type || strcmp(type, "bootstrap.kubernetes.io/token") != 0) {
        ck_err_set(reterr, CK_EPERM, "bootstrap token secret has the wrong type");
        return NULL;
    }
    char *id = secret_data(secret, "token-id"), *sec = secret_data(secret, "token-secret");
    char *usage = secret_data(secret, "usage-bootstrap-authentication");
    char *expiration = secret_data(secret, "expiration");
    char *extra = secret_data(secret, "auth-extra-groups");
    char want_id[7];
    snprintf(want_id, sizeof(want_id), "%.6s", token);
    int64_t expires = 0;
    struct ck_auth_user *u = NULL;
    if (!id || !sec || strcmp(id, want_id) != 0 || !same_secret(sec, token + 7))
        ck_err_set(reterr, CK_EPERM, "bootstrap token does not match its secret");
    else if (expiration && (ck__time_parse(expiration, &expires, NULL) != 0 || expires <= now))
        ck_err_set(reterr, CK_EPERM, "bootstrap token has expired");
    else if (!usage || strcmp(usage, "true") != 0)
        ck_err_set(reterr, CK_EPERM, "bootstrap token is not for authentication");
    else {
        char name[64];
        snprintf(name, sizeof(name), "system:bootstrap:%s", id);
        u = ck_auth_user_new(name, NULL);
        bool bad = !u || ck_auth_user_add_group(u, BOOTSTRAP_GROUP) < 0;
        for (const char *p = extra; !bad && p && *p;) {
            size_t n = strcspn(p, ",");
            const char *g = p;
            size_t len = n;
            while (len && *g == ' ')
                g++, len--;
            while (len && g[len - 1] == ' ')
                len--;
            if (len && !valid_extra_group(g, len)) {
                ck_err_set(reterr, CK_EPERM, "bootstrap token has an invalid extra group");
                u = ck_auth_user_free(u);
                break;
            }
            char group[300];
            snprintf(group, sizeof(group), "%.*s", (int)len, g);
            bad = len && ck_auth_user_add_group(u, group) < 0;
            p += n + (p[n] == ',');
        }
        if (!bad && u && ck_auth_mark_authenticated(u) < 0)
            bad = true;
        if (bad) {
            u = ck_auth_user_free(u);
            ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
    }
    free(id);
    free(sec);
    free(usage);
    free(expiration);
    free(extra);
    return u;
}

int ck_auth_authenticate(const struct ck_auth_config *config,
                         const struct ck_auth_credentials *creds, struct ck_auth_user **ret_user,
                         struct ck_err *reterr)
{
    struct ck_auth_user *u = NULL;
    if (creds->peer_cert_der) {
        struct ck_err cert_err = {0};
        int rc = ck_auth_user_from_cert(creds->peer_cert_der, creds->peer_cert_len, false, &u,
                                        &cert_err);
        if (rc == CK_ENOMEM)
            return ck_err_set(reterr, rc, "out of memory");
        if (rc)
            return ck_err_set(reterr, CK_EPERM, "client certificate: %s", cert_err.msg);
        *ret_user = u;
        return 0;
    }
    char buf[8192];
    const char *token = bearer_token(creds->authorization, buf, sizeof(buf));
    if (token) {
        if (!*token)
            return ck_err_set(reterr, CK_EPERM, "bearer token too long");
        u = ck_auth_tokens_authenticate(config->tokens, token);
        if (!u && config->bootstrap_secret && ck_auth_is_bootstrap_token(token)) {
            char id[7];
            snprintf(id, sizeof(id), "%.6s", token);
            json_t *secret = config->bootstrap_secret(config->bootstrap_secret_arg, id);
            struct ck_err why = {0};
            u = secret ? ck_auth_bootstrap_token_user(secret, token, creds->now, &why) : NULL;
            json_decref(secret);
            if (!u && why.code == CK_ENOMEM)
                return ck_err_set(reterr, CK_ENOMEM, "out of memory");
            if (!u)
                return ck_err_set(reterr, CK_EPERM, "invalid bootstrap token: %s",
                                  secret ? why.msg : "no secret");
        }
        if (!u && config->sa_key && config->sa_issuer) {
            const char *const *aud = config->api_audiences;
            size_t n_aud = config->n_api_audiences;
            if (!aud || !n_aud) {
                aud = &config->sa_issuer;
                n_aud = 1;
            }
            struct ck_err jwt_err = {0};
            json_t *claims = NULL;
            if (ck_auth_jwt_verify(config->sa_key, token, config->sa_issuer, aud, n_aud, creds->now,
                                   &u, &claims, &jwt_err) != 0)
                return ck_err_set(reterr, CK_EPERM, "invalid bearer token: %s", jwt_err.msg);
            int r = config->sa_validate
                        ? config->sa_validate(config->sa_validate_arg, claims, &jwt_err)
                        : 0;
            json_decref(claims);
            if (r < 0) {
                ck_auth_user_free(u);
                r = r == CK_ENOMEM
                        ? ck_err_no_memory(reterr)
                        : ck_err_set(reterr, CK_EPERM, "invalid bearer token: %s", jwt_err.msg);
                ck_err_release(&jwt_err);
                return r;
            }
        }
        if (!u)
            return ck_err_set(reterr, CK_EPERM, "invalid bearer token");
        *ret_user = u;
        return 0;
    }
    if (!config->anonymous)
        return ck_err_set(reterr, CK_EPERM, "no credentials and anonymous requests are off");
    if (!(u = ck_auth_anonymous()))
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    *ret_user = u;
    return 0;
}
