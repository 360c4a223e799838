/*
 * requestheader.c - the request-header authenticator (--requestheader-*
 * flags): a front proxy presents a client certificate that verifies
 * against --requestheader-client-ca-file (and whose common name is in
 * --requestheader-allowed-names, when that list is not empty) and names
 * the user it acts for in headers. Follows Kubernetes 1.32's
 * staging/src/k8s.io/apiserver/pkg/authentication/request/headerrequest/requestheader.go
 * (the headers) and request/x509/x509.go's NewDynamicCAVerifier (the CA and
 * name check), configured as pkg/server/options/authentication.go's
 * RequestHeaderAuthenticationOptions: the authenticator exists only with
 * the CA file and at least one username header (kube-apiserver has no
 * default headers; kubeadm passes X-Remote-User, X-Remote-Group and
 * X-Remote-Extra-).
 *
 * Also the data of kube-system/extension-apiserver-authentication, as
 * pkg/controlplane/controller/clusterauthenticationtrust writes it.
 */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <microhttpd.h> /* MHD_http_unescape only */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "internal.h"
#include "requestheader.h"

#define MAX_CA_PEM (1u * 1024 * 1024)

struct ck__requestheader {
    char *ca_pem;
    gnutls_x509_trust_list_t trust;
    json_t *usernames, *groups, *extra_prefixes, *allowed_names; /* arrays of strings */
};

/* The comma-separated list (pflag's StringSlice) as a new array; NULL: out of memory. */
static json_t *split_list(const char *list)
{
    json_t *out = json_array();
    if (!out || !list || !list[0])
        return out;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* headerrequest's trimHeaders trims each name; an empty one is an error there,
           which ck__requestheader_new reports */
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (json_array_append_new(out, json_stringn(p, len)) < 0) {
            json_decref(out);
            return NULL;
        }
        if (!end)
            return out;
        p = end + 1;
    }
}

static bool has_empty(const json_t *list)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        if (json_string_length(v) == 0)
            return true;
    }
    return false;
}

int ck__requestheader_new(const struct ck_apiserver_config *config, struct ck__requestheader **ret,
                          struct ck_err *reterr)
{
    *ret = NULL;
    const char *usernames = config->requestheader_username_headers;
    if (!config->requestheader_client_ca_file || !usernames || !usernames[0])
        return 0; /* ToAuthenticationRequestHeaderConfig: no authenticator */
    struct ck__requestheader *rh = ck__calloc(1, sizeof(*rh));
    if (!rh)
        return ck_err_no_memory(reterr);
    rh->usernames = split_list(usernames);
    rh->groups = split_list(config->requestheader_group_headers);
    rh->extra_prefixes = split_list(config->requestheader_extra_headers_prefix);
    rh->allowed_names = split_list(config->requestheader_allowed_names);
    int r = 0;
    if (!rh->usernames || !rh->groups || !rh->extra_prefixes || !rh->allowed_names) {
        r = ck_err_no_memory(reterr);
        goto fail;
    }
    const json_t *lists[] = {rh->usernames, rh->groups, rh->extra_prefixes};
    for (size_t i = 0; i < 3; i++) {
        if (has_empty(lists[i])) {
            r = ck_err_set(reterr, CK_EINVAL, "empty header %s", "\"\"");
            goto fail;
        }
    }
    size_t len = 0;
    const char *ca = config->requestheader_client_ca_file;
    int rr = ck__read_file(ca, MAX_CA_PEM, &rh->ca_pem, &len);
    if (rr < 0) {
        r = ck_err_set(reterr, CK_EIO, "error reading %s: %s", ca,
                       rr == CK__E2BIG ? "too large" : strerror(-rr));
        goto fail;
    }
    gnutls_datum_t pem = {(unsigned char *)rh->ca_pem, (unsigned)len};
    if (gnutls_x509_trust_list_init(&rh->trust, 0) < 0) {
        r = ck_err_no_memory(reterr);
        goto fail;
    }
    if (gnutls_x509_trust_list_add_trust_mem(rh->trust, &pem, NULL, GNUTLS_X509_FMT_PEM, 0, 0) <=
        0) {
        r = ck_err_set(reterr, CK_EINVAL, "error loading certs from  %s: no certificate", ca);
        goto fail;
    }
    *ret = rh;
    return 0;
fail:
    ck__requestheader_free(rh);
    return r;
}

void ck__requestheader_free(struct ck__requestheader *rh)
{
    if (!rh)
        return;
    if (rh->trust)
        gnutls_x509_trust_list_deinit(rh->trust, 1);
    free(rh->ca_pem);
    json_decref(rh->usernames);
    json_decref(rh->groups);
    json_decref(rh->extra_prefixes);
    json_decref(rh->allowed_names);
    free(rh);
}

const char *ck__requestheader_ca_pem(const struct ck__requestheader *rh)
{
    return rh ? rh->ca_pem : NULL;
}

int ck__cert_chain_verifies(gnutls_x509_trust_list_t trust, const gnutls_datum_t *chain, unsigned n,
                            char *cn, size_t cn_size)
{
    if (!trust || n == 0)
        return 0;
    if (n > 16)
        n = 16;
    gnutls_x509_crt_t crts[16];
    unsigned loaded = 0;
    int ok = 1;
    for (; loaded < n; loaded++) {
        if (gnutls_x509_crt_init(&crts[loaded]) < 0) {
            ok = 0;
            break;
        }
        if (gnutls_x509_crt_import(crts[loaded], &chain[loaded], GNUTLS_X509_FMT_DER) < 0) {
            loaded++;
            ok = 0;
            break;
        }
    }
    unsigned status = 0;
    if (ok)
        ok = gnutls_x509_trust_list_verify_crt(trust, crts, loaded, 0, &status, NULL) == 0 &&
             status == 0;
    if (ok && cn && cn_size) {
        size_t size = cn_size;
        cn[0] = '\0';
        if (gnutls_x509_crt_get_dn_by_oid(crts[0], GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &size) <
            0)
            cn[0] = '\0';
    }
    for (unsigned i = 0; i < loaded; i++)
        gnutls_x509_crt_deinit(crts[i]);
    return ok;
}

enum ck__proxy_cert ck__requestheader_check(const struct ck__requestheader *rh,
                                            const gnutls_datum_t *chain, unsigned n)
{
    char cn[256];
    if (!rh || !ck__cert_chain_verifies(rh->trust, chain, n, cn, sizeof(cn)))
        return CK__PROXY_CERT_NO;
    if (json_array_size(rh->allowed_names) == 0)
        return CK__PROXY_CERT_YES;
    size_t i;
    const json_t *v;
    json_array_foreach(rh->allowed_names, i, v)
    {
        if (strcmp(json_string_value(v), cn) == 0)
            return CK__PROXY_CERT_YES;
    }
    CK_LOGV(2, "x509: subject with cn=%s is not in the allowed list", cn);
    return CK__PROXY_CERT_REFUSED;
}

static bool prefixed(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

int ck__requestheader_user(const struct ck__requestheader *rh, const struct ck__header *headers,
                           size_t n, struct ck_auth_user **ret)
{
    *ret = NULL;
    /* the first username header (in the flag's order) with a value; a header's first value */
    const char *name = NULL;
    size_t i;
    const json_t *h;
    json_array_foreach(rh->usernames, i, h)
    {
        size_t j = 0;
        while (j < n && strcasecmp(headers[j].name, json_string_value(h)) != 0)
            j++;
        if (j < n && headers[j].value[0]) { /* http.Header.Get: the first value only */
            name = headers[j].value;
            break;
        }
    }
    if (!name)
        return 0; /* not this authenticator's request */
    struct ck_auth_user *u = ck_auth_user_new(name, NULL);
    if (!u)
        return CK_ENOMEM;
    int r = 0;
    /* every non-empty value of every group header, header by header */
    json_array_foreach(rh->groups, i, h)
    {
        for (size_t j = 0; j < n && r == 0; j++) {
            if (strcasecmp(headers[j].name, json_string_value(h)) == 0 && headers[j].value[0])
                r = ck_auth_user_add_group(u, headers[j].value);
        }
    }
    /* extra: the rest of a prefixed header's name, lower-cased and %-decoded, every value */
    json_array_foreach(rh->extra_prefixes, i, h)
    {
        const char *prefix = json_string_value(h);
        for (size_t j = 0; j < n && r == 0; j++) {
            if (!prefixed(headers[j].name, prefix))
                continue;
            char *key = ck__strdup(headers[j].name + strlen(prefix));
            if (!key) {
                r = CK_ENOMEM;
                break;
            }
            for (char *p = key; *p; p++)
                *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            MHD_http_unescape(key);
            r = ck_auth_user_add_extra(u, key, headers[j].value);
            free(key);
        }
    }
    if (r == 0) /* the authenticator's AuthenticatedGroupAdder */
        r = ck_auth_mark_authenticated(u);
    if (r < 0) {
        ck_auth_user_free(u);
        return r;
    }
    *ret = u;
    return 0;
}

/* The list as Go's json.Marshal of a []string writes it. */
static int set_list(json_t *data, const char *key, const json_t *list)
{
    char *text = json_dumps(list, JSON_COMPACT);
    int r = text && json_object_set_new(data, key, json_string(text)) == 0 ? 0 : CK_ENOMEM;
    free(text);
    return r;
}

json_t *ck__requestheader_configmap_data(const struct ck__requestheader *rh, const char *client_ca)
{
    json_t *data = json_object();
    if (!data)
        return NULL;
    int r = 0;
    if (client_ca && client_ca[0])
        r = json_object_set_new(data, "client-ca-file", json_string(client_ca));
    if (r == 0 && rh && rh->ca_pem[0]) {
        json_t *uids = json_array();
        r = set_list(data, "requestheader-username-headers", rh->usernames);
        /* Kubernetes 1.32 writes the uid headers too: ckube has none (the feature is alpha) */
        if (r == 0)
            r = uids ? set_list(data, "requestheader-uid-headers", uids) : CK_ENOMEM;
        json_decref(uids);
        if (r == 0)
            r = set_list(data, "requestheader-group-headers", rh->groups);
        if (r == 0)
            r = set_list(data, "requestheader-extra-headers-prefix", rh->extra_prefixes);
        if (r == 0)
            r = json_object_set_new(data, "requestheader-client-ca-file", json_string(rh->ca_pem));
        if (r == 0)
            r = set_list(data, "requestheader-allowed-names", rh->allowed_names);
    }
    if (r != 0) {
        json_decref(data);
        return NULL;
    }
    return data;
}
