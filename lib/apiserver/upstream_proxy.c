/*
 * upstream_proxy.c - the API server relaying one client request to an upstream HTTP
 * server and its answer back: what pods/proxy, services/proxy and nodes/proxy do
 * (proxy.c), and what APIService aggregation will do with a Service's address, its
 * caBundle, a front-proxy client certificate and the X-Remote-* headers.
 *
 * Mirrors k8s.io/apimachinery 1.32 pkg/util/proxy (UpgradeAwareHandler with its
 * defaultProxyTransport: the client's query goes on, a bare proxy root is redirected to
 * its "/" form by the caller, X-Forwarded-Uri names the path the client asked for, a
 * redirect's Location to the upstream itself is rewritten under the proxy path, the CORS
 * headers of the answer are dropped, a failed round trip is 503 "error trying to reach
 * service: ...") and Go's httputil.ReverseProxy (hop-by-hop headers dropped both ways,
 * X-Forwarded-For extended with the client's address). The filters before it dropped
 * the client's credentials: Authorization and the Impersonate-* headers never leave.
 *
 * libcurl speaks HTTP; nothing here parses it: the answer's header fields come from
 * curl_easy_nextheader() and URLs go through curl's URL API. The answer is collected in
 * memory, up to UPSTREAM_BODY_MAX bytes within UPSTREAM_TIMEOUT seconds, then sent
 * (docs/limits.md); connection upgrades (WebSocket) are not relayed.
 *
 * Threading: one call per request, on the write worker server.c hands proxied requests
 * to (the exchange may take a minute), with its own easy handle; no state of its own.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define UPSTREAM_BODY_MAX ((size_t)16 << 20) /* an answer beyond this is a 503 */
#define UPSTREAM_TIMEOUT  60L                /* seconds for the whole exchange */
#define UPSTREAM_CONNECT  30L                /* seconds to connect, as Go's proxy dialer */

/* Hop-by-hop fields (RFC 9110 7.6.1, Go's httputil.ReverseProxy list). */
static const char *const hop_by_hop[] = {"Connection",
                                         "Proxy-Connection",
                                         "Keep-Alive",
                                         "Proxy-Authenticate",
                                         "Proxy-Authorization",
                                         "Te",
                                         "Trailer",
                                         "Transfer-Encoding",
                                         "Upgrade",
                                         NULL};

static bool in_list(const char *name, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcasecmp(name, list[i]) == 0)
            return true;
    return false;
}

bool ck__upstream_forwards_request_header(const char *name, bool front_proxy)
{
    /* curl frames the body itself; the credentials stay with the API server */
    static const char *const dropped[] = {"Content-Length",  "Expect",          "Authorization",
                                          "X-Forwarded-For", "X-Forwarded-Uri", NULL};
    /* the identity headers a front proxy sets are its own (SetAuthProxyHeaders) */
    static const char *const identity[] = {"X-Remote-User", "X-Remote-Group", NULL};
    if (front_proxy && (in_list(name, identity) ||
                        strncasecmp(name, "X-Remote-Extra-", strlen("X-Remote-Extra-")) == 0))
        return false;
    return !in_list(name, hop_by_hop) && !in_list(name, dropped) &&
           strncasecmp(name, "Impersonate-", strlen("Impersonate-")) != 0;
}

bool ck__upstream_forwards_response_header(const char *name)
{
    /* libmicrohttpd frames the answer; removeCORSHeaders drops the rest */
    static const char *const dropped[] = {"Content-Length",
                                          "Access-Control-Allow-Credentials",
                                          "Access-Control-Allow-Headers",
                                          "Access-Control-Allow-Methods",
                                          "Access-Control-Allow-Origin",
                                          NULL};
    return !in_list(name, hop_by_hop) && !in_list(name, dropped);
}

/* The part of u that p names, as a copy in buf ("" when it has none). */
static void url_part(CURLU *u, CURLUPart p, char *buf, size_t size)
{
    char *v = NULL;
    buf[0] = '\0';
    if (curl_url_get(u, p, &v, 0) == CURLUE_OK && v)
        snprintf(buf, size, "%s", v);
    curl_free(v);
}

int ck__upstream_location(const char *location, const char *upstream, const char *request_host,
                          const char *prefix, char *buf, size_t size)
{
    CURLU *u = curl_url();
    char base[512];
    snprintf(base, sizeof(base), "http://%s/", upstream);
    int r = CK_ENOMEM;
    if (!u || curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK)
        goto out;
    bool absolute = strstr(location, "://") != NULL || strncmp(location, "//", 2) == 0;
    char host[300] = "", port[16] = "", path[2048], query[2048];
    if (curl_url_set(u, CURLUPART_URL, location, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
        r = CK_EINVAL;
        goto out;
    }
    if (absolute) {
        char hostport[320];
        url_part(u, CURLUPART_HOST, host, sizeof(host));
        url_part(u, CURLUPART_PORT, port, sizeof(port));
        snprintf(hostport, sizeof(hostport), "%s%s%s", host, *port ? ":" : "", port);
        if (strcmp(hostport, upstream) != 0 && strcmp(hostport, request_host) != 0 &&
            strcmp(host, upstream) != 0) {
            r = CK_EINVAL; /* another host's: left as it is */
            goto out;
        }
    } else if (location[0] != '/') {
        r = CK_EINVAL; /* relative to the page: right under the proxy path already */
        goto out;
    }
    url_part(u, CURLUPART_PATH, path, sizeof(path));
    url_part(u, CURLUPART_QUERY, query, sizeof(query));
    bool prefixed = strncmp(path, prefix, strlen(prefix)) == 0;
    int n = snprintf(buf, size, "%s%s%s%s", prefixed ? "" : prefix, path, *query ? "?" : "", query);
    r = n > 0 && (size_t)n < size ? 0 : CK_EINVAL;
out:
    curl_url_cleanup(u);
    return r;
}

/* ---- the exchange ------------------------------------------------------- */

struct request_headers {
    const struct ck__upstream *u;
    struct curl_slist *list;
    bool failed, accept, content_type;
    const char *forwarded_for; /* the client's own X-Forwarded-For */
};

static void add_header(struct request_headers *h, const char *line)
{
    struct curl_slist *l = curl_slist_append(h->list, line);
    if (!l)
        h->failed = true;
    else
        h->list = l;
}

static bool copy_header(void *cls, const char *key, const char *value)
{
    struct request_headers *h = cls;
    if (strcasecmp(key, "X-Forwarded-For") == 0)
        h->forwarded_for = value;
    if (!ck__upstream_forwards_request_header(key, h->u->front_proxy) ||
        (h->u->front_proxy && strcasecmp(key, "Host") == 0))
        return true;
    h->accept |= strcasecmp(key, "Accept") == 0;
    h->content_type |= strcasecmp(key, "Content-Type") == 0;
    size_t len = strlen(key) + strlen(value ? value : "") + 3;
    char *line = malloc(len);
    if (!line) {
        h->failed = true;
        return false;
    }
    /* "Name;" is curl's way to send a field with an empty value */
    if (value && *value)
        snprintf(line, len, "%s: %s", key, value);
    else
        snprintf(line, len, "%s;", key);
    add_header(h, line);
    free(line);
    return true;
}

static struct curl_slist *request_header_list(struct ck__req *req, const struct ck__upstream *u,
                                              const char *path, bool with_body)
{
    struct request_headers h = {.u = u};
    ck__req_headers(req, copy_header, &h);
    char line[1200], addr[64];
    unsigned port;
    ck__req_peer_address(req, addr, sizeof(addr), &port); /* "" when unknown */
    if (*addr) {
        snprintf(line, sizeof(line), "X-Forwarded-For: %s%s%s",
                 h.forwarded_for ? h.forwarded_for : "", h.forwarded_for ? ", " : "", addr);
        add_header(&h, line);
    }
    /* the path the client asked for: the proxy path and the upstream's */
    snprintf(line, sizeof(line), "X-Forwarded-Uri: %s%s", u->prefix ? u->prefix : "", path);
    add_header(&h, line);
    for (size_t i = 0; u->headers && u->headers[i]; i++)
        add_header(&h, u->headers[i]);
    /* what curl would add on its own and the client did not send */
    if (!h.accept)
        add_header(&h, "Accept:");
    if (with_body && !h.content_type)
        add_header(&h, "Content-Type:");
    add_header(&h, "Expect:");
    if (h.failed) {
        curl_slist_free_all(h.list);
        return NULL;
    }
    return h.list;
}

static void set_trust(struct ck_apiserver *ctx, CURL *curl, const struct ck__upstream *u)
{
    switch (u->trust) {
    case CK__UPSTREAM_KUBELET:
        ck__kubelet_curl_tls(ctx, curl);
        break;
    case CK__UPSTREAM_CA_BUNDLE:
        if (u->ca_pem) { /* else the system's CAs */
            struct curl_blob blob = {
                .data = (void *)u->ca_pem, .len = u->ca_len, .flags = CURL_BLOB_COPY};
            curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
        }
        break;
    case CK__UPSTREAM_NO_VERIFY:
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
        break;
    }
    if (u->trust != CK__UPSTREAM_KUBELET && u->cert_file) {
        curl_easy_setopt(curl, CURLOPT_SSLCERT, u->cert_file);
        curl_easy_setopt(curl, CURLOPT_SSLKEY, u->key_file);
    }
}

/* An answer's fields as they are relayed: the values this file made are its own. */
struct response_headers {
    struct ck__header *h;
    char **owned;
    size_t n;
};

static void response_headers_free(struct response_headers *rh)
{
    for (size_t i = 0; i < rh->n; i++)
        free(rh->owned[i]);
    free(rh->owned);
    free(rh->h);
}

/* The answer's fields (the last response's), Location rewritten. CK_ENOMEM or 0. */
static int response_headers(CURL *curl, struct ck__req *req, const struct ck__upstream *u,
                            const char *upstream, struct response_headers *rh)
{
    const char *request_host = ck__req_header(req, "Host");
    struct curl_header *prev = NULL, *hdr;
    size_t room = 1;
    while ((hdr = curl_easy_nextheader(curl, CURLH_HEADER, -1, prev))) {
        prev = hdr;
        room++;
    }
    rh->h = ck__calloc(room, sizeof(*rh->h));
    rh->owned = ck__calloc(room, sizeof(*rh->owned));
    if (!rh->h || !rh->owned)
        return CK_ENOMEM;
    prev = NULL;
    while ((hdr = curl_easy_nextheader(curl, CURLH_HEADER, -1, prev))) {
        prev = hdr;
        if (!ck__upstream_forwards_response_header(hdr->name))
            continue;
        char rewritten[2048];
        const char *value = hdr->value;
        if (strcasecmp(hdr->name, "Location") == 0 && u->prefix &&
            ck__upstream_location(value, upstream, request_host ? request_host : "", u->prefix,
                                  rewritten, sizeof(rewritten)) == 0) {
            if (!(rh->owned[rh->n] = ck__strdup(rewritten)))
                return CK_ENOMEM;
            value = rh->owned[rh->n];
        }
        rh->h[rh->n++] = (struct ck__header){hdr->name, value};
    }
    return 0;
}

/* libcurl's global state, made once before the first call from any thread. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

enum ck__res ck__upstream_serve(struct ck_apiserver *ctx, struct ck__req *req, const char *method,
                                const char *body, size_t len, const struct ck__upstream *u)
{
    pthread_once(&curl_once, curl_init_once);
    char url[4096], errbuf[CURL_ERROR_SIZE] = "", upstream[320] = "", path[2048] = "";
    int n = snprintf(url, sizeof(url), "%s%s%s", u->url, u->query && *u->query ? "?" : "",
                     u->query && *u->query ? u->query : "");
    if (n < 0 || (size_t)n >= sizeof(url))
        return ck__fail_with(req, "BadRequest", "the proxied URL is too long");
    CURLU *parsed = curl_url();
    if (!parsed || curl_url_set(parsed, CURLUPART_URL, url, 0) != CURLUE_OK) {
        curl_url_cleanup(parsed);
        return ck__fail_with(req, "BadRequest", "the proxied URL is not valid");
    }
    {
        char host[300], port[16];
        url_part(parsed, CURLUPART_HOST, host, sizeof(host));
        url_part(parsed, CURLUPART_PORT, port, sizeof(port));
        url_part(parsed, CURLUPART_PATH, path, sizeof(path));
        snprintf(upstream, sizeof(upstream), "%s%s%s", host, *port ? ":" : "", port);
    }
    bool head = strcmp(method, "HEAD") == 0;
    bool with_body = len > 0 || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
                     strcmp(method, "PATCH") == 0;
    CURL *curl = curl_easy_init();
    struct curl_slist *headers = curl ? request_header_list(req, u, path, with_body) : NULL;
    struct curl_slist *resolves = u->resolve ? curl_slist_append(NULL, u->resolve) : NULL;
    struct ck__curl_body answer = {.max = UPSTREAM_BODY_MAX};
    enum ck__res ret;
    if (!curl || !headers || (u->resolve && !resolves)) {
        ret = ck__fail_no_memory(req);
        goto out;
    }
    ck__curl_setup(curl, "http,https", headers, &answer, errbuf);
    curl_easy_setopt(curl, CURLOPT_CURLU, parsed);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, UPSTREAM_CONNECT);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, UPSTREAM_TIMEOUT);
    if (resolves)
        curl_easy_setopt(curl, CURLOPT_RESOLVE, resolves);
    set_trust(ctx, curl, u);
    if (head) {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (with_body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode cr = curl_easy_perform(curl);
    if (cr != CURLE_OK) {
        char msg[CURL_ERROR_SIZE + 600];
        snprintf(msg, sizeof(msg), "error trying to reach service: %s",
                 answer.too_big ? "the answer is larger than the proxy's limit"
                 : *errbuf      ? errbuf
                                : curl_easy_strerror(cr));
        CK_LOGV(2, "Proxy to %s failed: %s", upstream, msg);
        ret = ck__fail_with(req, "ServiceUnavailable", msg);
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    struct response_headers rh = {0};
    if (response_headers(curl, req, u, upstream, &rh) < 0) {
        response_headers_free(&rh);
        ret = ck__fail_no_memory(req);
        goto out;
    }
    ret = ck__respond(req, (unsigned)status, rh.h, rh.n, answer.data, answer.len);
    answer.data = NULL; /* the answer's */
    response_headers_free(&rh);
out:
    curl_slist_free_all(resolves);
    curl_slist_free_all(headers);
    if (curl)
        curl_easy_cleanup(curl);
    curl_url_cleanup(parsed);
    free(answer.data);
    return ret;
}
