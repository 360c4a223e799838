/*
 * webhook_client.c - the API server as a client of webhooks: the admission webhooks
 * (admission/webhook.c) and the conversion webhooks of custom resources
 * (conversion.c) post a review to a WebhookClientConfig through here.
 *
 * Mirrors k8s.io/apiserver 1.32 pkg/util/webhook (client.go, the ClientManager's
 * HookClient: a url, or a service reached as <service>.<namespace>.svc, trusting the
 * caBundle) with pkg/util/proxy's service resolution, and keeps Kubernetes' words for a
 * failed call (`failed to call webhook: Post "...": ...`). The call is a POST of JSON over
 * HTTPS with libcurl, to the url, or for a service to the first ready address of the
 * service's EndpointSlices at the target port of the service port the config names
 * (default 443), with the TLS name <service>.<namespace>.svc; the caBundle (else the
 * system's CAs) is the only trust. The url gets `?timeout=<n>s`, the deadline the client
 * gives, and an answer beyond RESPONSE_MAX bytes is a failed call.
 *
 * The admission webhooks present the credentials of their plugin's kubeConfigFile
 * (pkg/util/webhook/authentication.go): the kubeconfig user named after the webhook's
 * host:port (<service>.<namespace>.svc:<port> for a service), or a "*." suffix of it,
 * or either without the port when it is 443, else the user "*", else the current
 * context's; a bearer token (token, tokenFile), a client certificate and key, or a
 * username and password. exec credentials are not supported.
 *
 * Threading: reads the store and calls out; no state of its own except libcurl's global
 * init (once), so it runs on any request thread at once (easy handles are per call).
 *
 * Tested through its callers: tests/apiserver/test_webhook.c, test_crd_conversion.c.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define RESPONSE_MAX (3 << 20) /* an answer beyond this is a failed call */

size_t ck__curl_body_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct ck__curl_body *b = arg;
    size_t n = size * nmemb;
    if (b->len + n > b->max) {
        b->too_big = true;
        return 0;
    }
    char *grown = realloc(b->data, b->len + n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, ptr, n);
    b->len += n;
    grown[b->len] = '\0';
    b->data = grown;
    return n;
}

static int collect(const json_t *obj, void *arg)
{
    return json_array_append((json_t *)arg, (json_t *)obj) < 0 ? CK_ENOMEM : 0;
}

void ck__curl_setup(void *curl, const char *protocols, struct curl_slist *headers,
                    struct ck__curl_body *answer, char *errbuf)
{
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ck__curl_body_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
}

static const json_t *labels_of(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "labels");
}

int ck__service_target(struct ck__registry *reg, const json_t *svc, char *url, size_t url_size,
                       char *resolve, size_t resolve_size, struct ck__webhook_why *why)
{
    resolve[0] = '\0';
    const char *ns = json_string_value(json_object_get(svc, "namespace"));
    const char *name = json_string_value(json_object_get(svc, "name"));
    const char *path = json_string_value(json_object_get(svc, "path"));
    json_int_t port = json_is_integer(json_object_get(svc, "port"))
                          ? json_integer_value(json_object_get(svc, "port"))
                          : 443;
    if (!ns || !name) {
        snprintf(why->text, sizeof(why->text), "webhook has no service name");
        return CK_EINVAL;
    }
    const struct ck_kind *sk = ck_kind_lookup("", "v1", "services");
    const struct ck_kind *ek = ck_kind_lookup("discovery.k8s.io", "v1", "endpointslices");
    json_t *service = NULL;
    struct ck_err err = {0};
    if (!sk || !ek || ck__admission_get(reg, sk, ns, name, &service, &err) < 0) {
        snprintf(why->text, sizeof(why->text), "service \"%s/%s\" not found", ns, name);
        ck_err_release(&err);
        return CK_EINVAL;
    }
    /* the service port the webhook names, and its name for the slices' ports */
    const char *port_name = NULL;
    bool found = false;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(json_object_get(service, "spec"), "ports"), i, p)
    {
        if (json_integer_value(json_object_get(p, "port")) == port) {
            port_name = json_string_value(json_object_get(p, "name"));
            found = true;
            break;
        }
    }
    char name_copy[64];
    snprintf(name_copy, sizeof(name_copy), "%s", port_name ? port_name : "");
    json_decref(service);
    if (!found) {
        snprintf(why->text, sizeof(why->text), "service \"%s/%s\" has no port %lld", ns, name,
                 (long long)port);
        return CK_EINVAL;
    }
    json_t *slices = json_array();
    if (!slices || ck__admission_list(reg, ek, ns, collect, slices, &err) < 0) {
        ck_err_release(&err);
        json_decref(slices);
        snprintf(why->text, sizeof(why->text), "cannot list the endpoints of \"%s/%s\"", ns, name);
        return CK_EINVAL;
    }
    const char *addr = NULL;
    long long target = 0;
    const json_t *slice;
    json_array_foreach(slices, i, slice)
    {
        const json_t *labels = labels_of(slice);
        const char *owner =
            json_string_value(json_object_get(labels, "kubernetes.io/service-name"));
        if (!owner || strcmp(owner, name) != 0)
            continue;
        size_t j;
        const json_t *sp;
        target = 0;
        json_array_foreach(json_object_get(slice, "ports"), j, sp)
        {
            const char *pn = json_string_value(json_object_get(sp, "name"));
            if (strcmp(pn ? pn : "", name_copy) == 0)
                target = json_integer_value(json_object_get(sp, "port"));
        }
        if (!target)
            continue;
        const json_t *ep;
        json_array_foreach(json_object_get(slice, "endpoints"), j, ep)
        {
            const json_t *ready = json_object_get(json_object_get(ep, "conditions"), "ready");
            const char *first =
                json_string_value(json_array_get(json_object_get(ep, "addresses"), 0));
            if (first && !json_is_false(ready)) {
                addr = first;
                break;
            }
        }
        if (addr)
            break;
    }
    if (!addr) {
        json_decref(slices);
        snprintf(why->text, sizeof(why->text), "service \"%s/%s\" has no ready endpoint", ns, name);
        return CK_EINVAL;
    }
    snprintf(url, url_size, "https://%s.%s.svc:%lld%s", name, ns, target, path ? path : "");
    bool v6 = strchr(addr, ':') != NULL;
    snprintf(resolve, resolve_size, "%s.%s.svc:%lld:%s%s%s", name, ns, target, v6 ? "[" : "", addr,
             v6 ? "]" : "");
    json_decref(slices);
    return 0;
}

/*
 * The base URL to post to (no query), and for a service the name and address to
 * connect to instead (curl's --resolve entry). 0, or CK_EINVAL with why filled.
 */
static int resolve_target(struct ck__registry *reg, const json_t *cc, char *url, size_t url_size,
                          char *resolve, size_t resolve_size, struct ck__webhook_why *why)
{
    const char *u = json_string_value(json_object_get(cc, "url"));
    if (u) {
        resolve[0] = '\0';
        snprintf(url, url_size, "%s", u);
        return 0;
    }
    return ck__service_target(reg, json_object_get(cc, "service"), url, url_size, resolve,
                              resolve_size, why);
}

/* ---- credentials (pkg/util/webhook/authentication.go) -------------------------------- */

/* The user of kubeconfig's users named name, or NULL. */
static const json_t *user_named(const json_t *kubeconfig, const char *name)
{
    return json_object_get(ck__json_find(json_object_get(kubeconfig, "users"), "name", name),
                           "user");
}

/* The user named target, else "*." and each shorter suffix of target's dotted steps. */
static const json_t *user_by_name_or_suffix(const json_t *kubeconfig, const char *target)
{
    const json_t *u = user_named(kubeconfig, target);
    for (const char *dot = strchr(target, '.'); !u && dot; dot = strchr(dot + 1, '.')) {
        char nick[600];
        snprintf(nick, sizeof(nick), "*%s", dot);
        u = user_named(kubeconfig, nick);
    }
    return u;
}

/*
 * defaultAuthenticationInfoResolver.clientConfig: the user whose credentials a call to
 * target (host:port) presents: by exact name, by a star-prefixed suffix ("*.svc:443"),
 * both again without the port when it is 443, then "*", then the current context's
 * user; NULL: none (anonymous).
 */
static const json_t *user_for(const json_t *kubeconfig, const char *target)
{
    const json_t *u = user_by_name_or_suffix(kubeconfig, target);
    const char *colon = strrchr(target, ':');
    if (!u && colon && strcmp(colon, ":443") == 0) {
        char host[520];
        int n = (int)(colon - target);
        if (target[0] == '[' && n >= 2 && target[n - 1] == ']')
            snprintf(host, sizeof(host), "%.*s", n - 2, target + 1);
        else
            snprintf(host, sizeof(host), "%.*s", n, target);
        u = user_by_name_or_suffix(kubeconfig, host);
    }
    if (!u)
        u = user_named(kubeconfig, "*");
    const char *current = json_string_value(json_object_get(kubeconfig, "current-context"));
    const json_t *context =
        current ? ck__json_find(json_object_get(kubeconfig, "contexts"), "name", current) : NULL;
    const char *user =
        json_string_value(json_object_get(json_object_get(context, "context"), "user"));
    if (!u && user && *user)
        u = user_named(kubeconfig, user);
    return u;
}

/*
 * The host:port the credentials are chosen for: the url's host and port (443 when it
 * has none), or <service>.<namespace>.svc:<service port>. 0, or CK_EINVAL.
 */
static int auth_target(const json_t *cc, char *target, size_t size)
{
    const char *u = json_string_value(json_object_get(cc, "url"));
    if (!u) {
        const json_t *svc = json_object_get(cc, "service");
        const json_t *port = json_object_get(svc, "port");
        snprintf(target, size, "%s.%s.svc:%lld",
                 json_string_value(json_object_get(svc, "name")) ?: "",
                 json_string_value(json_object_get(svc, "namespace")) ?: "",
                 json_is_integer(port) ? (long long)json_integer_value(port) : 443LL);
        return 0;
    }
    CURLU *h = curl_url();
    char *host = NULL, *port = NULL;
    int r = h && curl_url_set(h, CURLUPART_URL, u, 0) == CURLUE_OK &&
                    curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK
                ? 0
                : CK_EINVAL;
    if (r == 0 && curl_url_get(h, CURLUPART_PORT, &port, 0) != CURLUE_OK)
        port = NULL;
    if (r == 0)
        snprintf(target, size, "%s:%s", host, port ? port : "443");
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(h);
    return r;
}

/* What a call presents, kept until it is made. */
struct credentials {
    char *token;      /* from tokenFile */
    char *cert, *key; /* client-certificate-data, client-key-data, decoded */
    size_t cert_len, key_len;
};

static void credentials_release(struct credentials *c)
{
    free(c->token);
    free(c->cert);
    free(c->key);
}

/*
 * restConfigFromKubeconfig: sets on curl the credentials of the user chosen for the
 * webhook (a bearer token, from token or tokenFile; a client certificate and key, as
 * files or data; a username and password). 0, or CK_EINVAL with why filled (Kubernetes'
 * "could not get REST client: ...").
 */
static int present(CURL *curl, const json_t *kubeconfig, const json_t *cc,
                   struct curl_slist **headers, struct credentials *c, struct ck__webhook_why *why)
{
    char target[600];
    if (!kubeconfig || auth_target(cc, target, sizeof(target)) < 0)
        return 0;
    const json_t *user = user_for(kubeconfig, target);
    if (!user)
        return 0;
    const char *token = json_string_value(json_object_get(user, "token"));
    const char *token_file = json_string_value(json_object_get(user, "tokenFile"));
    if ((!token || !*token) && token_file && *token_file) {
        size_t len = 0;
        int r = ck__read_file(token_file, 1 << 20, &c->token, &len);
        if (r < 0) {
            snprintf(why->text, sizeof(why->text), "could not get REST client: open %s: %s",
                     token_file, strerror(-r));
            return CK_EINVAL;
        }
        while (len && strchr(" \t\r\n", c->token[len - 1]))
            c->token[--len] = '\0';
        token = c->token;
    }
    if (json_object_get(user, "auth-provider")) {
        snprintf(why->text, sizeof(why->text),
                 "could not get REST client: auth provider not "
                 "supported");
        return CK_EINVAL;
    }
    if (json_object_get(user, "exec")) {
        snprintf(why->text, sizeof(why->text),
                 "could not get REST client: exec credentials are not supported by ckube");
        return CK_EINVAL;
    }
    if (token && *token) {
        char header[4200];
        snprintf(header, sizeof(header), "Authorization: Bearer %s", token);
        *headers = curl_slist_append(*headers, header);
    }
    const char *cert_file = json_string_value(json_object_get(user, "client-certificate"));
    const char *key_file = json_string_value(json_object_get(user, "client-key"));
    const char *cert64 = json_string_value(json_object_get(user, "client-certificate-data"));
    const char *key64 = json_string_value(json_object_get(user, "client-key-data"));
    if (cert64 && *cert64 && !(c->cert = ck_base64_decode(cert64, &c->cert_len))) {
        snprintf(why->text, sizeof(why->text),
                 "could not get REST client: client-certificate-data "
                 "is not base64");
        return CK_EINVAL;
    }
    if (key64 && *key64 && !(c->key = ck_base64_decode(key64, &c->key_len))) {
        snprintf(why->text, sizeof(why->text),
                 "could not get REST client: client-key-data is not base64");
        return CK_EINVAL;
    }
    if (c->cert || (cert_file && *cert_file)) {
        struct curl_blob cert = {.data = c->cert, .len = c->cert_len, .flags = CURL_BLOB_COPY};
        struct curl_blob key = {.data = c->key, .len = c->key_len, .flags = CURL_BLOB_COPY};
        if (c->cert)
            curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
        else
            curl_easy_setopt(curl, CURLOPT_SSLCERT, cert_file);
        curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
        if (c->key)
            curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
        else if (key_file && *key_file)
            curl_easy_setopt(curl, CURLOPT_SSLKEY, key_file);
    }
    const char *username = json_string_value(json_object_get(user, "username"));
    const char *password = json_string_value(json_object_get(user, "password"));
    if ((username && *username) || (password && *password)) {
        curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(curl, CURLOPT_USERNAME, username ? username : "");
        curl_easy_setopt(curl, CURLOPT_PASSWORD, password ? password : "");
    }
    return 0;
}

/* libcurl's global state, made once before the first call from any thread. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ck__webhook_post(struct ck__registry *reg, const json_t *cc, long timeout,
                     const json_t *request, const char *what, const json_t *kubeconfig,
                     json_t **ret_answer, struct ck__webhook_why *why)
{
    struct credentials creds = {0};
    *ret_answer = NULL;
    char base[1024], resolve[512], url[1100], errbuf[CURL_ERROR_SIZE] = "";
    if (resolve_target(reg, cc, base, sizeof(base), resolve, sizeof(resolve), why) < 0)
        return CK_EINVAL;
    /* the client tells the server its deadline, as client-go's request.Timeout does */
    snprintf(url, sizeof(url), "%s%stimeout=%lds", base, strchr(base, '?') ? "&" : "?", timeout);
    char *body = json_dumps(request, JSON_COMPACT);
    const char *ca64 = json_string_value(json_object_get(cc, "caBundle"));
    size_t ca_len = 0;
    char *ca = ca64 && *ca64 ? ck_base64_decode(ca64, &ca_len) : NULL;
    pthread_once(&curl_once, curl_init_once);
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = NULL, *resolves = NULL;
    struct ck__curl_body answer = {.max = RESPONSE_MAX};
    int r = CK_EINVAL;
    if (!body || !curl || (ca64 && *ca64 && !ca)) {
        snprintf(why->text, sizeof(why->text), "%s",
                 ca64 && *ca64 && !ca ? "caBundle is not base64" : "out of memory");
        goto out;
    }
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json, */*");
    if (present(curl, kubeconfig, cc, &headers, &creds, why) < 0)
        goto out;
    ck__curl_setup(curl, "https", headers, &answer, errbuf);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout * 1000L);
    if (ca) {
        struct curl_blob blob = {.data = ca, .len = ca_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (*resolve) {
        resolves = curl_slist_append(NULL, resolve);
        curl_easy_setopt(curl, CURLOPT_RESOLVE, resolves);
    }
    CURLcode cr = curl_easy_perform(curl);
    if (cr != CURLE_OK) {
        snprintf(why->text, sizeof(why->text), "failed to call webhook: Post \"%s\": %s", url,
                 answer.too_big ? "response body too large"
                 : *errbuf      ? errbuf
                                : curl_easy_strerror(cr));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        snprintf(why->text, sizeof(why->text),
                 "failed to call webhook: an error on the server (\"%.200s\") has prevented the "
                 "request from succeeding",
                 answer.data ? answer.data : "");
        goto out;
    }
    json_error_t jerr;
    *ret_answer = answer.data ? json_loadb(answer.data, answer.len, 0, &jerr) : NULL;
    if (!json_is_object(*ret_answer)) {
        json_decref(*ret_answer);
        *ret_answer = NULL;
        snprintf(why->text, sizeof(why->text),
                 "received invalid webhook response: the response is not an %s", what);
        goto out;
    }
    r = 0;
out:
    curl_slist_free_all(resolves);
    curl_slist_free_all(headers);
    if (curl)
        curl_easy_cleanup(curl);
    credentials_release(&creds);
    free(answer.data);
    free(ca);
    free(body);
    return r;
}
