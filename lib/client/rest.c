/*
 * rest.c - the REST client (client-go rest.RESTClient with its rate limiter and
 * transport, reduced to JSON).
 *
 * A request is: take a token from the client's bucket (rate limiter of ratelimit.c,
 * whose answer is how long to wait), borrow an idle easy handle from the pool (or make
 * one), perform, give the handle back. libcurl keeps each handle's connection open, so
 * a handle that goes back to the pool carries a kept-alive connection to the next call;
 * the pool never holds more handles than calls that ran at the same time. Answers are
 * collected into a buffer capped at MAX_BODY (a larger one fails, never grows memory
 * without bound), then decoded with jansson.
 *
 * Watches use their own handle (a stream can last for an hour and must not hold a
 * pooled connection): the write callback splits the chunked body into lines, decodes
 * each and calls the caller's function; the progress callback (libcurl calls it at
 * least once a second, also while idle) checks the stop flag.
 *
 * Errors: the body of a non-2xx answer is a Status (kube-api-contract); its code, reason
 * and message go to the caller's ck_err. Reasons are mapped to static strings, as
 * struct ck_err wants.
 *
 * Threading: the pool and the counters have one mutex; each request runs on the
 * caller's thread with a handle no other thread uses meanwhile.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/rest.h"
#include "internal.h"

#define MAX_BODY       (512u * 1024 * 1024) /* a list of 10,000 pods is ~30 MiB */
#define MAX_WATCH_LINE (64u * 1024 * 1024)
#define POOL_MAX       32

struct ck_rest {
    char *server; /* without a trailing '/' */
    char *auth_header;
    char *ca_file, *cert_file, *key_file;
    char *ca_data;
    char *cert_data, *key_data;
    bool insecure;
    char *user_agent;
    long timeout_ms;
    struct ck_rate_limiter *bucket; /* NULL: not limited */
    struct ck_clock *clock;

    pthread_mutex_t lock;
    CURL *pool[POOL_MAX];
    size_t npool;
    struct ck_rest_stats stats;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- errors ----------------------------------------------------------------- */

static const char *const known_reasons[] = {
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Invalid",
    "Gone",
    "Expired",
    "BadRequest",
    "MethodNotAllowed",
    "Forbidden",
    "Unauthorized",
    "TooManyRequests",
    "InternalError",
    "Timeout",
    "ServerTimeout",
    "NotAcceptable",
    "UnsupportedMediaType",
    "RequestEntityTooLarge",
    "ServiceUnavailable",
    NULL,
};

static const char *static_reason(const char *reason)
{
    if (!reason || !*reason)
        return "Unknown";
    for (size_t i = 0; known_reasons[i]; i++)
        if (strcmp(reason, known_reasons[i]) == 0)
            return known_reasons[i];
    return "Unknown";
}

static int code_for(long http, const char *reason)
{
    switch (http) {
    case 400:
    case 422:
        return CK_EINVAL;
    case 401:
    case 403:
        return CK_EPERM;
    case 404:
        return CK_ENOENT;
    case 409:
        return reason && strcmp(reason, "AlreadyExists") == 0 ? CK_EEXIST : CK_ECONFLICT;
    case 410:
        return CK_ECOMPACTED;
    default:
        return CK_EIO;
    }
}

int ck_rest_status_error(const json_t *status, struct ck_err *reterr)
{
    long http = (long)json_integer_value(json_object_get(status, "code"));
    const char *reason = static_reason(json_string_value(json_object_get(status, "reason")));
    const char *message = json_string_value(json_object_get(status, "message"));
    int code = code_for(http, reason);
    ck_err_set(reterr, code, "%s", message ? message : "the server gave no message");
    if (reterr) {
        reterr->http_status = (int)http;
        reterr->reason = reason;
    }
    return code;
}

/* An answer that is not a Status: say what we got. */
static int http_error(long http, const char *body, size_t len, struct ck_err *reterr)
{
    json_t *doc = len ? json_loadb(body, len, 0, NULL) : NULL;
    int r;
    if (json_is_object(doc) && json_object_get(doc, "kind") &&
        strcmp(json_string_value(json_object_get(doc, "kind")) ?: "", "Status") == 0) {
        if (!json_object_get(doc, "code"))
            json_object_set_new(doc, "code", json_integer(http));
        r = ck_rest_status_error(doc, reterr);
    } else {
        r = ck_err_set(reterr, code_for(http, NULL), "the server answered %ld: %.*s", http,
                       (int)(len > 160 ? 160 : len), body ? body : "");
        if (reterr) {
            reterr->http_status = (int)http;
            reterr->reason = "Unknown";
        }
    }
    json_decref(doc);
    return r;
}

/* ---- the client ------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? ck__strdup(s) : NULL;
}

int ck_rest_new(const struct ck_rest_config *config, struct ck_rest **ret_client,
                struct ck_err *reterr)
{
    if (!config || !config->server || !*config->server)
        return ck_err_set(reterr, CK_EINVAL, "no server URL");
    if (strncmp(config->server, "http://", 7) != 0 && strncmp(config->server, "https://", 8) != 0)
        return ck_err_set(reterr, CK_EINVAL, "server URL %s: want http:// or https://",
                          config->server);
    pthread_once(&curl_once, curl_init_once);
    struct ck_rest *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    pthread_mutex_init(&c->lock, NULL);
    c->server = ck__strdup(config->server);
    if (c->server) {
        size_t n = strlen(c->server);
        while (n > 0 && c->server[n - 1] == '/')
            c->server[--n] = '\0';
    }
    char ua[64];
    snprintf(ua, sizeof(ua), "ckube/%s", ck_version()->git_version);
    c->user_agent = ck__strdup(config->user_agent ? config->user_agent : ua);
    c->ca_file = dup_or_null(config->ca_file);
    c->ca_data = dup_or_null(config->ca_data);
    c->cert_file = dup_or_null(config->cert_file);
    c->key_file = dup_or_null(config->key_file);
    c->cert_data = dup_or_null(config->cert_data);
    c->key_data = dup_or_null(config->key_data);
    c->insecure = config->insecure_skip_tls_verify;
    c->timeout_ms = config->timeout > 0 ? (long)(config->timeout / CK_MSEC) : 60000;
    c->clock = config->clock;
    bool failed = !c->server || !c->user_agent || (config->ca_file && !c->ca_file) ||
                  (config->ca_data && !c->ca_data) || (config->cert_file && !c->cert_file) ||
                  (config->key_file && !c->key_file) || (config->cert_data && !c->cert_data) ||
                  (config->key_data && !c->key_data);
    if (config->token && *config->token) {
        size_t n = strlen(config->token) + 32;
        c->auth_header = ck__malloc(n);
        if (c->auth_header)
            snprintf(c->auth_header, n, "Authorization: Bearer %s", config->token);
        failed = failed || !c->auth_header;
    }
    if (config->qps >= 0) {
        double qps = config->qps > 0 ? config->qps : CK_REST_DEFAULT_QPS;
        int burst = config->burst > 0 ? config->burst : CK_REST_DEFAULT_BURST;
        c->bucket = ck_rl_bucket_new(config->clock, qps, burst);
        failed = failed || !c->bucket;
    }
    if (failed) {
        ck_rest_free(c);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    *ret_client = c;
    return 0;
}

int ck_rest_new_from_kubeconfig(const struct ck_kubeconfig *kc, double qps, int burst,
                                struct ck_rest **ret_client, struct ck_err *reterr)
{
    struct ck_rest_config config = {
        .server = kc->server,
        .token = kc->token,
        .ca_file = kc->ca_file,
        .ca_data = kc->ca_data,
        .cert_file = kc->client_cert_file,
        .key_file = kc->client_key_file,
        .cert_data = kc->client_cert_data,
        .key_data = kc->client_key_data,
        .insecure_skip_tls_verify = kc->insecure_skip_tls_verify,
        .qps = qps,
        .burst = burst,
    };
    return ck_rest_new(&config, ret_client, reterr);
}

struct ck_rest *ck_rest_free(struct ck_rest *c)
{
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    ck_rl_free(c->bucket);
    pthread_mutex_destroy(&c->lock);
    free(c->server);
    free(c->auth_header);
    free(c->ca_file);
    free(c->ca_data);
    free(c->cert_file);
    free(c->key_file);
    free(c->cert_data);
    free(c->key_data);
    free(c->user_agent);
    free(c);
    return NULL;
}

const char *ck_rest_server(const struct ck_rest *c)
{
    return c->server;
}

int ck_rest_ca_pem(const struct ck_rest *c, char **ret_pem, struct ck_err *reterr)
{
    if (c->ca_data) {
        char *pem = strdup(c->ca_data);
        if (!pem)
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        *ret_pem = pem;
        return 0;
    }
    if (!c->ca_file)
        return ck_err_set(reterr, CK_ENOENT, "the client has no certificate authority");
    char *pem = NULL;
    size_t len = 0;
    int r = ck__read_file(c->ca_file, 1024 * 1024, &pem, &len);
    if (r == CK_ENOMEM)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r < 0)
        return ck_err_set(reterr, CK_EIO, "cannot read %s", c->ca_file);
    *ret_pem = pem;
    return 0;
}

void ck_rest_stats(struct ck_rest *c, struct ck_rest_stats *ret)
{
    pthread_mutex_lock(&c->lock);
    *ret = c->stats;
    pthread_mutex_unlock(&c->lock);
}

/* Waits for a token of the bucket (client-go's tokenBucketRateLimiter.Wait). */
static void throttle(struct ck_rest *c)
{
    if (!c->bucket)
        return;
    int64_t wait = ck_rl_when(c->bucket, "");
    if (wait <= 0)
        return;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    int64_t deadline = ck_clock_now(c->clock) + wait;
    pthread_mutex_lock(&mu);
    while (ck_clock_wait(c->clock, &cond, &mu, deadline) == 0)
        ;
    pthread_mutex_unlock(&mu);
    pthread_mutex_lock(&c->lock);
    c->stats.throttled += wait;
    pthread_mutex_unlock(&c->lock);
}

static CURL *handle_get(struct ck_rest *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->npool > 0)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->lock);
    if (h) {
        curl_easy_reset(h); /* options go, the connection stays */
        return h;
    }
    return curl_easy_init();
}

static void handle_put(struct ck_rest *c, CURL *h)
{
    pthread_mutex_lock(&c->lock);
    if (c->npool < POOL_MAX) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (h)
        curl_easy_cleanup(h);
}

/* Counts a finished request and whether it opened a connection. */
static void count_request(struct ck_rest *c, CURL *h)
{
    long connects = 0;
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    pthread_mutex_lock(&c->lock);
    c->stats.requests++;
    c->stats.connections += (uint64_t)connects;
    pthread_mutex_unlock(&c->lock);
}

/* Options every request shares. Returns the header list (free it after the request). */
static struct curl_slist *setup(struct ck_rest *c, CURL *h, const char *method, const char *url,
                                const char *content_type, const char *accept)
{
    struct curl_slist *headers = NULL, *next;
    char type[128], accept_line[256];
    snprintf(type, sizeof(type), "Content-Type: %s",
             content_type ? content_type : "application/json");
    snprintf(accept_line, sizeof(accept_line), "Accept: %s", accept ? accept : "application/json");
    const char *lines[] = {accept_line, type, c->auth_header};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]) && lines[i]; i++) {
        next = curl_slist_append(headers, lines[i]);
        if (!next) {
            curl_slist_free_all(headers);
            return NULL;
        }
        headers = next;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (c->ca_data) {
        struct curl_blob blob = {
            .data = c->ca_data, .len = strlen(c->ca_data), .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (c->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
    if (c->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
    if (c->cert_data) {
        struct curl_blob blob = {
            .data = c->cert_data, .len = strlen(c->cert_data), .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &blob);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (c->key_data) {
        struct curl_blob blob = {
            .data = c->key_data, .len = strlen(c->key_data), .flags = CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &blob);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return headers;
}

int ck_rest_do(struct ck_rest *c, const char *method, const char *path, const json_t *body,
               const char *content_type, json_t **ret_body, struct ck_err *reterr)
{
    return ck_rest_do_accept(c, method, path, body, content_type, NULL, ret_body, reterr);
}

int ck_rest_do_accept(struct ck_rest *c, const char *method, const char *path, const json_t *body,
                      const char *content_type, const char *accept, json_t **ret_body,
                      struct ck_err *reterr)
{
    char *url = NULL, *text = NULL;
    size_t url_len = strlen(c->server) + strlen(path) + 1;
    url = ck__malloc(url_len);
    if (body)
        text = ck__json_dumps(body, JSON_COMPACT, NULL);
    if (!url || (body && !text)) {
        free(url);
        free(text);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    snprintf(url, url_len, "%s%s", c->server, path);
    throttle(c);
    CURL *h = handle_get(c);
    struct curl_slist *headers = h ? setup(c, h, method, url, content_type, accept) : NULL;
    if (!headers) {
        if (h)
            curl_easy_cleanup(h);
        free(url);
        free(text);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    struct ck__buf out = {.max = MAX_BODY};
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ck__buf_curl_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    if (text) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
    }
    CURLcode rc = curl_easy_perform(h);
    count_request(c, h);
    long http = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
    curl_slist_free_all(headers);
    int r = 0;
    if (rc != CURLE_OK) {
        r = ck_err_set(reterr, rc == CURLE_WRITE_ERROR ? CK_ENOMEM : CK_EIO, "%s %s: %s", method,
                       path, curl_easy_strerror(rc));
        curl_easy_cleanup(h); /* the connection is in an unknown state */
        h = NULL;
    } else if (http < 200 || http > 299) {
        r = http_error(http, out.p, out.len, reterr);
    } else if (ret_body) {
        *ret_body = NULL;
        if (out.len) {
            json_error_t jerr;
            json_t *doc = json_loadb(out.p, out.len, 0, &jerr);
            if (!doc)
                r = ck_err_set(reterr, CK_EIO, "%s %s: the answer is not JSON: %s", method, path,
                               jerr.text);
            *ret_body = doc;
        }
    }
    if (h)
        handle_put(c, h);
    ck__buf_release(&out);
    free(url);
    free(text);
    return r;
}

/* ---- paths ------------------------------------------------------------------ */

/* A path segment we put in a URL verbatim: no escaping needed, none attempted. */
static bool plain_segment(const char *s)
{
    for (; *s; s++)
        if (*s == '/' || *s == '?' || *s == '#' || *s == '%' || (unsigned char)*s <= ' ' ||
            *s == 0x7f)
            return false;
    return true;
}

int ck_rest_path(const struct ck_resource *res, const char *namespace, const char *name,
                 const char *subresource, const char *query, char *buf, size_t size)
{
    const char *parts[] = {namespace, name, subresource};
    for (size_t i = 0; i < 3; i++)
        if (parts[i] && !plain_segment(parts[i]))
            return -1;
    size_t n = 0;
    int w = res->group[0] ? snprintf(buf, size, "/apis/%s/%s", res->group, res->version)
                          : snprintf(buf, size, "/api/%s", res->version);
#define APPEND(...)                                                                                \
    do {                                                                                           \
        if (w < 0 || (size_t)w >= size - n)                                                        \
            return -1;                                                                             \
        n += (size_t)w;                                                                            \
        w = snprintf(buf + n, size - n, __VA_ARGS__);                                              \
    } while (0)
    if (res->namespaced && namespace && *namespace)
        APPEND("/namespaces/%s", namespace);
    APPEND("/%s", res->resource);
    if (name)
        APPEND("/%s", name);
    if (name && subresource)
        APPEND("/%s", subresource);
    if (query && *query)
        APPEND("?%s", query);
    APPEND("%s", "");
#undef APPEND
    return (int)n;
}

/* The path or a CK_EINVAL naming the part that cannot go in a URL. */
static int make_path(const struct ck_resource *res, const char *namespace, const char *name,
                     const char *subresource, const char *query, char *buf, size_t size,
                     struct ck_err *reterr)
{
    if (ck_rest_path(res, namespace, name, subresource, query, buf, size) < 0)
        return ck_err_set(reterr, CK_EINVAL, "%s %s/%s: not a valid path", res->resource,
                          namespace ? namespace : "", name ? name : "");
    return 0;
}

int ck_rest_get(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                const char *name, json_t **ret_obj, struct ck_err *reterr)
{
    char path[1024];
    int r = make_path(res, namespace, name, NULL, NULL, path, sizeof(path), reterr);
    return r < 0 ? r : ck_rest_do(c, "GET", path, NULL, NULL, ret_obj, reterr);
}

/* Appends "&key=value" (value URL-escaped) to the query in q. */
static int query_add(CURL *esc, char *q, size_t size, const char *key, const char *value)
{
    if (!value || !*value)
        return 0;
    char *e = curl_easy_escape(esc, value, 0);
    if (!e)
        return CK_ENOMEM;
    size_t n = strlen(q);
    int w = snprintf(q + n, size - n, "%s%s=%s", n ? "&" : "", key, e);
    curl_free(e);
    return w < 0 || (size_t)w >= size - n ? CK_EINVAL : 0;
}

static int list_query(const struct ck_list_options *o, bool watch, char *q, size_t size)
{
    q[0] = '\0';
    if (!o)
        return watch ? query_add(NULL, q, size, "watch", "true") : 0;
    CURL *esc = curl_easy_init();
    if (!esc)
        return CK_ENOMEM;
    char limit[32] = "", timeout[32] = "";
    if (o->limit > 0)
        snprintf(limit, sizeof(limit), "%lld", (long long)o->limit);
    if (o->timeout_seconds > 0)
        snprintf(timeout, sizeof(timeout), "%d", o->timeout_seconds);
    const char *pairs[][2] = {
        {"watch", watch ? "true" : NULL},
        {"labelSelector", o->label_selector},
        {"fieldSelector", o->field_selector},
        {"resourceVersion", o->resource_version},
        {"resourceVersionMatch", o->resource_version_match},
        {"limit", limit},
        {"continue", o->continue_token},
        {"timeoutSeconds", timeout},
        {"allowWatchBookmarks", o->allow_watch_bookmarks ? "true" : NULL},
    };
    int r = 0;
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]) && r == 0; i++)
        r = query_add(esc, q, size, pairs[i][0], pairs[i][1]);
    curl_easy_cleanup(esc);
    return r;
}

int ck_rest_get_query(struct ck_rest *c, const char *path, const char *const (*pairs)[2], size_t n,
                      json_t **ret_body, struct ck_err *reterr)
{
    char query[2048], full[4096];
    query[0] = '\0';
    CURL *esc = curl_easy_init();
    int r = esc ? 0 : CK_ENOMEM;
    for (size_t i = 0; i < n && r == 0; i++)
        r = query_add(esc, query, sizeof(query), pairs[i][0], pairs[i][1]);
    if (esc)
        curl_easy_cleanup(esc);
    if (r == CK_ENOMEM)
        return ck_err_set(reterr, r, "out of memory");
    int w = snprintf(full, sizeof(full), "%s%s%s", path, query[0] ? "?" : "", query);
    if (r < 0 || w < 0 || (size_t)w >= sizeof(full))
        return ck_err_set(reterr, CK_EINVAL, "%s: query too long", path);
    return ck_rest_do(c, "GET", full, NULL, NULL, ret_body, reterr);
}

int ck_rest_list(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                 const struct ck_list_options *opts, json_t **ret_list, struct ck_err *reterr)
{
    return ck_rest_list_accept(c, res, namespace, opts, NULL, ret_list, reterr);
}

int ck_rest_list_accept(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                        const struct ck_list_options *opts, const char *accept, json_t **ret_list,
                        struct ck_err *reterr)
{
    char query[2048], path[3072];
    if (list_query(opts, false, query, sizeof(query)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "list options too long");
    int r = make_path(res, namespace, NULL, NULL, query, path, sizeof(path), reterr);
    return r < 0 ? r : ck_rest_do_accept(c, "GET", path, NULL, NULL, accept, ret_list, reterr);
}

int ck_rest_create(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                   const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    char path[1024];
    int r = make_path(res, namespace, NULL, NULL, NULL, path, sizeof(path), reterr);
    return r < 0 ? r : ck_rest_do(c, "POST", path, obj, NULL, ret_obj, reterr);
}

static int put_object(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                      const json_t *obj, const char *subresource, json_t **ret_obj,
                      struct ck_err *reterr)
{
    const char *name = ck__meta_str(obj, "name");
    if (!name)
        return ck_err_set(reterr, CK_EINVAL, "the object has no metadata.name");
    char path[1024];
    int r = make_path(res, namespace, name, subresource, NULL, path, sizeof(path), reterr);
    return r < 0 ? r : ck_rest_do(c, "PUT", path, obj, NULL, ret_obj, reterr);
}

int ck_rest_update(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                   const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return put_object(c, res, namespace, obj, NULL, ret_obj, reterr);
}

int ck_rest_update_status(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                          const json_t *obj, json_t **ret_obj, struct ck_err *reterr)
{
    return put_object(c, res, namespace, obj, "status", ret_obj, reterr);
}

int ck_rest_patch(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                  const char *name, const char *subresource, const char *patch_type,
                  const json_t *patch, json_t **ret_obj, struct ck_err *reterr)
{
    char path[1024];
    int r = make_path(res, namespace, name, subresource, NULL, path, sizeof(path), reterr);
    return r < 0 ? r
                 : ck_rest_do(c, "PATCH", path, patch, patch_type ? patch_type : CK_PATCH_MERGE,
                              ret_obj, reterr);
}

int ck_rest_delete(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                   const char *name, const json_t *options, json_t **ret_obj, struct ck_err *reterr)
{
    char path[1024];
    int r = make_path(res, namespace, name, NULL, NULL, path, sizeof(path), reterr);
    return r < 0 ? r : ck_rest_do(c, "DELETE", path, options, NULL, ret_obj, reterr);
}

int ck_rest_get_scale(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                      const char *name, json_t **ret_scale, struct ck_err *reterr)
{
    char path[1024];
    int r = make_path(res, namespace, name, "scale", NULL, path, sizeof(path), reterr);
    return r < 0 ? r : ck_rest_do(c, "GET", path, NULL, NULL, ret_scale, reterr);
}

int ck_rest_update_scale(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                         const char *name, int64_t replicas, json_t **ret_scale,
                         struct ck_err *reterr)
{
    char path[1024];
    int r = make_path(res, namespace, name, "scale", NULL, path, sizeof(path), reterr);
    if (r < 0)
        return r;
    json_t *scale = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:I}}", "kind", "Scale", "apiVersion",
                              "autoscaling/v1", "metadata", "name", name, "namespace",
                              namespace ? namespace : "", "spec", "replicas", (json_int_t)replicas);
    if (!scale)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    r = ck_rest_do(c, "PUT", path, scale, NULL, ret_scale, reterr);
    json_decref(scale);
    return r;
}

/* ---- discovery --------------------------------------------------------------- */

int ck_rest_discover_resource(struct ck_rest *c, const char *api_version, const char *kind,
                              struct ck_api_resource *ret, struct ck_err *reterr)
{
    /* "version" or "group/version", each part a non-empty plain path segment */
    char group_part[sizeof(ret->group)] = "";
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    if (slash && (size_t)(slash - api_version) < sizeof(group_part))
        snprintf(group_part, sizeof(group_part), "%.*s", (int)(slash - api_version), api_version);
    const char *version_part = slash ? slash + 1 : api_version;
    if (!kind || !version_part || !*version_part || !plain_segment(version_part) ||
        (slash && (!*group_part || strlen(group_part) != (size_t)(slash - api_version) ||
                   !plain_segment(group_part))))
        return ck_err_set(reterr, CK_EINVAL, "malformed apiVersion \"%s\"",
                          api_version ? api_version : "");
    char path[512];
    int n = slash ? snprintf(path, sizeof(path), "/apis/%s", api_version)
                  : snprintf(path, sizeof(path), "/api/%s", api_version);
    if (n < 0 || (size_t)n >= sizeof(path))
        return ck_err_set(reterr, CK_EINVAL, "apiVersion too long");
    json_t *list = NULL;
    int r = ck_rest_do(c, "GET", path, NULL, NULL, &list, reterr);
    if (r == CK_ENOENT)
        return ck_err_set(reterr, CK_ENOENT, "the server does not serve %s", api_version);
    if (r < 0)
        return r;
    size_t i;
    json_t *entry;
    const char *name = NULL;
    bool namespaced = false;
    json_array_foreach(json_object_get(list, "resources"), i, entry)
    {
        const char *k = json_string_value(json_object_get(entry, "kind"));
        const char *e = json_string_value(json_object_get(entry, "name"));
        if (k && e && strcmp(k, kind) == 0 && !strchr(e, '/')) {
            name = e;
            namespaced = json_is_true(json_object_get(entry, "namespaced"));
            break;
        }
    }
    if (!name)
        r = ck_err_set(reterr, CK_ENOENT, "the server serves no kind %s in %s", kind, api_version);
    else if (strlen(version_part) >= sizeof(ret->version) ||
             strlen(name) >= sizeof(ret->resource) || !plain_segment(name))
        r = ck_err_set(reterr, CK_EINVAL, "resource %s of %s: name too long or not plain", name,
                       api_version);
    if (r == 0) {
        snprintf(ret->group, sizeof(ret->group), "%s", group_part);
        snprintf(ret->version, sizeof(ret->version), "%s", version_part);
        snprintf(ret->resource, sizeof(ret->resource), "%s", name);
        ret->res = (struct ck_resource){ret->group, ret->version, ret->resource, namespaced};
    }
    json_decref(list);
    return r;
}

/* ---- watch ------------------------------------------------------------------ */

struct watch_state {
    struct ck__buf line; /* the partial line */
    ck_watch_func fn;
    void *arg;
    const atomic_bool *stop;
    int fn_result;  /* what fn returned to stop the stream */
    bool bad_event; /* a line that is not a watch event */
    long http;
    CURL *h;
    struct ck__buf error_body; /* a non-200 answer */
};

/* Decodes one complete line and hands it to fn. Returns false to end the stream. */
static bool deliver(void *arg, const char *line, size_t len)
{
    struct watch_state *w = arg;
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (!len)
        return true;
    json_t *ev = json_loadb(line, len, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    char type_copy[16];
    if (!type || strlen(type) >= sizeof(type_copy) || !json_is_object(obj)) {
        json_decref(ev);
        w->bad_event = true;
        return false;
    }
    /* detach the object, so the function gets the only reference */
    snprintf(type_copy, sizeof(type_copy), "%s", type);
    json_incref(obj);
    json_decref(ev);
    w->fn_result = w->fn(type_copy, obj, w->arg);
    return w->fn_result == 0;
}

static size_t watch_write(char *data, size_t size, size_t nmemb, void *userp)
{
    struct watch_state *w = userp;
    size_t n = size * nmemb;
    if (!w->http)
        curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->http);
    if (w->http != 200)
        return ck__buf_curl_write(data, size, nmemb, &w->error_body);
    return ck__buf_lines(&w->line, data, n, deliver, w) ? n : 0;
}

static int watch_progress(void *userp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                          curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    struct watch_state *w = userp;
    return w->stop && atomic_load(w->stop) ? 1 : 0;
}

int ck_rest_watch(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                  const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                  const atomic_bool *stop, struct ck_err *reterr)
{
    return ck_rest_watch_accept(c, res, namespace, opts, NULL, fn, arg, stop, reterr);
}

int ck_rest_watch_accept(struct ck_rest *c, const struct ck_resource *res, const char *namespace,
                         const struct ck_list_options *opts, const char *accept, ck_watch_func fn,
                         void *arg, const atomic_bool *stop, struct ck_err *reterr)
{
    char query[2048], path[3072];
    if (list_query(opts, true, query, sizeof(query)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "watch options too long");
    int r = make_path(res, namespace, NULL, NULL, query, path, sizeof(path), reterr);
    if (r < 0)
        return r;
    size_t url_len = strlen(c->server) + strlen(path) + 1;
    char *url = ck__malloc(url_len);
    if (!url)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    snprintf(url, url_len, "%s%s", c->server, path);
    throttle(c);
    CURL *h = curl_easy_init();
    struct curl_slist *headers = h ? setup(c, h, "GET", url, NULL, accept) : NULL;
    if (!headers) {
        if (h)
            curl_easy_cleanup(h);
        free(url);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    struct watch_state w = {
        .line = {.max = MAX_WATCH_LINE},
        .error_body = {.max = 1024 * 1024},
        .fn = fn,
        .arg = arg,
        .stop = stop,
        .h = h,
    };
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    /* a dead peer is noticed by TCP keep-alive; the server ends idle streams itself */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
    CURLcode rc = curl_easy_perform(h);
    count_request(c, h);
    if (!w.http)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &w.http);
    if (w.http && w.http != 200)
        r = http_error(w.http, w.error_body.p, w.error_body.len, reterr);
    else if (w.fn_result)
        r = w.fn_result;
    else if (w.bad_event)
        r = ck_err_set(reterr, CK_EIO, "watch %s: the server sent a line that is no event",
                       res->resource);
    else if (rc == CURLE_ABORTED_BY_CALLBACK)
        r = ck_err_set(reterr, CK_ESHUTDOWN, "watch %s: stopped", res->resource);
    else if (rc != CURLE_OK)
        r = ck_err_set(reterr, CK_EIO, "watch %s: %s", res->resource, curl_easy_strerror(rc));
    else if (w.line.len && deliver(&w, w.line.p, w.line.len) == false)
        r = w.fn_result ? w.fn_result : CK_EIO;
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    ck__buf_release(&w.line);
    ck__buf_release(&w.error_body);
    free(url);
    return r;
}
