/*
 * server.c - the HTTP front of the API server: listening, routing, health.
 *
 * libmicrohttpd runs the connections on a pool of polling threads (epoll,
 * with suspend/resume for the watch streams); each connection stays on one
 * thread. A handler blocks its thread while the store commits, so the pool
 * is what lets concurrent writes share one commit (the store's group
 * commit). We bind the listen socket ourselves so that "address in use" and
 * (plain HTTP only) "not a loopback address" are clear errors before any
 * thread starts, and hand the socket to MHD.
 *
 * With TLS (the default of `ckube server`) MHD speaks it through GnuTLS with
 * the serving certificate and key, TLS 1.2 or later, and asks for a client
 * certificate without requiring one; every request is authenticated and
 * authorized (authn_authz.c) before it is routed.
 *
 * Requests are answered on the access handler's second call, never the first:
 * queuing on the first call makes MHD close kept-alive connections.
 *
 * Discovery (/api, /apis, /api/v1, /apis/apps/v1) is the legacy form, built
 * from the kind registry; kubectl resolves every resource name through it.
 *
 * Health follows k8s.io/apiserver/pkg/server/healthz: each endpoint runs a
 * list of named checks; success is "ok" (or, with ?verbose, one "[+]name ok"
 * line per check and "<endpoint> check passed"); any failure answers 500 with
 * the per-check lines, and ?exclude=name skips a check. /readyz also has the
 * "shutdown" check, which fails once shutdown has begun.
 *
 * Resource paths go to handlers.c (and watch.c); request bodies are
 * collected here, capped at 3 MiB as in Kubernetes (413 beyond).
 *
 * Threading: handlers run on MHD's pool threads, several at once, and share
 * only the immutable registry and the thread-safe store; `shutting_down` is
 * the only state shared with the owner's thread, and it is atomic. A ticker thread wakes
 * once a second for the watch streams (deadlines, bookmarks, vanished
 * clients).
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "ckube/store.h"
#include "internal.h"

#define MAX_BODY_BYTES  (3u * 1024 * 1024) /* Kubernetes' request body limit */
#define HANDLER_THREADS 16u                /* requests in progress at once */
/* Open connections, watches included (kube-apiserver has no such limit). */
#define MAX_CONNECTIONS 10000u
/* GnuTLS priorities: its defaults, TLS 1.2 and 1.3 only. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* What one request collected before it is answered. */
struct request {
    char *body;
    size_t len;
    bool too_large;
    bool no_memory;                   /* the body could not be kept: answer 500 */
    double start;                     /* monotonic seconds at the first call */
    struct ck__request_labels labels; /* for the metrics, set when routed */
    char *path;                       /* for the access log, at -v 2 only */
    struct ck_auth_user *user;        /* who sent it (NULL without TLS) */
};

/*
 * The request of every connection whose struct request could not be
 * allocated: its body is read and dropped, it is answered 500, and it is
 * neither counted nor logged. Never written, so all threads may share it.
 */
static struct request unrecorded_request;

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A health check: returns true when healthy, else false with a reason. */
struct health_check {
    const char *name;
    bool (*run)(struct ck_apiserver *server, const char **ret_reason);
};

static bool check_ping(struct ck_apiserver *server, const char **ret_reason)
{
    (void)server;
    (void)ret_reason;
    return true;
}

static bool check_shutdown(struct ck_apiserver *server, const char **ret_reason)
{
    if (atomic_load(&server->shutting_down)) {
        *ret_reason = "process is shutting down";
        return false;
    }
    return true;
}

static bool check_store(struct ck_apiserver *server, const char **ret_reason)
{
    struct ck_err err = {0};
    if (ck_store_revisions(server->store, NULL, NULL, &err) < 0) {
        *ret_reason = "the store does not answer";
        return false;
    }
    return true;
}

static const struct health_check livez_checks[] = {{"ping", check_ping}, {"store", check_store}};
static const struct health_check readyz_checks[] = {
    {"ping", check_ping}, {"store", check_store}, {"shutdown", check_shutdown}};

static enum MHD_Result queue_body(struct MHD_Connection *conn, unsigned int status,
                                  const char *content_type, const char *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache, private");
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* True when the comma-separated or repeated ?exclude= values name the check. */
static bool excluded(struct MHD_Connection *conn, const char *check)
{
    const char *value = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "exclude");
    if (!value)
        return false;
    size_t n = strlen(check);
    for (const char *p = value; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, check, n) == 0)
            return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

struct arg_search {
    const char *wanted;
    bool found;
};

static enum MHD_Result note_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    (void)value;
    struct arg_search *search = cls;
    if (strcmp(key, search->wanted) == 0)
        search->found = true;
    return MHD_YES;
}

/* True when the query has the argument, with or without a value (`?verbose`). */
static bool has_query_arg(struct MHD_Connection *conn, const char *name)
{
    struct arg_search search = {name, false};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, note_key, &search);
    return search.found;
}

static enum MHD_Result serve_health(struct ck_apiserver *server, struct MHD_Connection *conn,
                                    const char *endpoint, const struct health_check *checks,
                                    size_t n_checks)
{
    bool verbose = has_query_arg(conn, "verbose");
    char body[2048];
    size_t len = 0;
    bool healthy = true;

    for (size_t i = 0; i < n_checks; i++) {
        const char *reason = "";
        const char *name = checks[i].name;
        int n;
        if (excluded(conn, name))
            n = snprintf(body + len, sizeof(body) - len, "[+]%s excluded: ok\n", name);
        else if (checks[i].run(server, &reason))
            n = snprintf(body + len, sizeof(body) - len, "[+]%s ok\n", name);
        else {
            healthy = false;
            n = snprintf(body + len, sizeof(body) - len, "[-]%s failed: reason withheld\n", name);
            CK_LOGV(2, "%s check %s failed: %s", endpoint, name, reason);
        }
        if (n > 0 && (size_t)n < sizeof(body) - len)
            len += (size_t)n;
    }
    int n = snprintf(body + len, sizeof(body) - len, "%s check %s\n", endpoint,
                     healthy ? "passed" : "failed");
    if (n > 0 && (size_t)n < sizeof(body) - len)
        len += (size_t)n;

    const char *text_plain = "text/plain; charset=utf-8";
    if (healthy && !verbose)
        return queue_body(conn, MHD_HTTP_OK, text_plain, "ok", 2);
    return queue_body(conn, healthy ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR, text_plain,
                      body, len);
}

static enum MHD_Result serve_version(struct MHD_Connection *conn)
{
    char *body = ck_version_json(true);
    if (!body)
        return ck__fail_no_memory(conn);
    enum MHD_Result ret = ck__send_json(conn, MHD_HTTP_OK, body);
    free(body);
    return ret;
}

/* Answers value (taken), or 500 when it is NULL or cannot be rendered: out of memory. */
static enum MHD_Result queue_json_value(struct MHD_Connection *conn, json_t *value)
{
    char *body = ck__json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL);
    json_decref(value);
    if (!body)
        return ck__fail_no_memory(conn);
    enum MHD_Result ret = ck__send_json(conn, MHD_HTTP_OK, body);
    free(body);
    return ret;
}

/* True when some kind is served in group/version. */
static bool serves_group_version(const char *group, const char *version)
{
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(kinds[i]->group, group) == 0 && strcmp(kinds[i]->version, version) == 0)
            return true;
    return false;
}

/* A discovery document: 404 for a group/version nobody serves, 500 when it cannot be built. */
static enum MHD_Result queue_resources(struct MHD_Connection *conn, const char *group,
                                       const char *version)
{
    if (!serves_group_version(group, version))
        return ck__fail_with(conn, "NotFound", "the server could not find the requested resource");
    return queue_json_value(conn, ck_discovery_resources(group, version));
}

/*
 * Legacy discovery: /api, /apis, /api/<v>, /apis/<g>/<v>. Returns false when
 * url is not a discovery path (so the caller keeps routing).
 */
static bool serve_discovery(struct ck_apiserver *server, struct MHD_Connection *conn,
                            const char *url, enum MHD_Result *ret)
{
    char group[64], version[32], extra;
    if (strcmp(url, "/api") == 0 || strcmp(url, "/api/") == 0) {
        const char *address = strstr(server->url, "://");
        *ret = queue_json_value(conn, ck_discovery_api_versions(address ? address + 3 : ""));
    } else if (strcmp(url, "/apis") == 0 || strcmp(url, "/apis/") == 0) {
        *ret = queue_json_value(conn, ck_discovery_api_groups());
    } else if (sscanf(url, "/api/%31[^/]%c", version, &extra) == 1) {
        *ret = queue_resources(conn, "", version);
    } else if (sscanf(url, "/apis/%63[^/]/%31[^/]%c", group, version, &extra) == 2) {
        *ret = queue_resources(conn, group, version);
    } else {
        return false;
    }
    return true;
}

/* /openapi/v3 (the index) and /openapi/v3/<api|apis/G>/<V> (a document). */
static enum MHD_Result serve_openapi(struct ck_apiserver *server, struct MHD_Connection *conn,
                                     const char *rest)
{
    char group[64] = "", version[32];
    char extra;
    if (*rest == '\0' || strcmp(rest, "/") == 0)
        return queue_json_value(conn, ck_openapi_index(server->schemas));
    if (sscanf(rest, "/api/%31[^/]%c", version, &extra) == 1 ||
        sscanf(rest, "/apis/%63[^/]/%31[^/]%c", group, version, &extra) == 2) {
        /* served, a document that cannot be built is a 500 */
        if (serves_group_version(group, version))
            return queue_json_value(conn, ck_openapi_document(server->schemas, group, version));
    }
    return ck__fail_with(conn, "NotFound", "the server could not find the requested resource");
}

static enum MHD_Result serve_metrics(struct ck_apiserver *server, struct MHD_Connection *conn)
{
    size_t len = 0;
    char *gates = ck_fg_metrics_text(server->feature_gates);
    char *text = ck__metrics_render(server->metrics, server->store, gates, &len);
    free(gates);
    if (!text)
        return ck__fail_no_memory(conn);
    enum MHD_Result ret =
        queue_body(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
    return ret;
}

static enum MHD_Result route(struct ck_apiserver *server, struct MHD_Connection *conn,
                             struct request *req, const char *method, const char *url)
{
    const char *body = req->body;
    size_t body_len = req->len;
    bool readonly = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    ck__request_labels_set(&req->labels, method, NULL, false, false);
    bool answered = false;
    enum MHD_Result auth_ret = ck__auth_request(server, conn, method, url, &req->user, &answered);
    if (answered)
        return auth_ret;
    enum MHD_Result discovery_ret;
    if (readonly && serve_discovery(server, conn, url, &discovery_ret))
        return discovery_ret;
    if (readonly && strncmp(url, "/openapi/v3", 11) == 0)
        return serve_openapi(server, conn, url + 11);

    if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0 || strcmp(url, "/readyz") == 0 ||
        strcmp(url, "/version") == 0 || strcmp(url, "/metrics") == 0) {
        if (!readonly)
            return ck__fail_with(conn, "MethodNotAllowed",
                                 "the server does not allow this method on the requested resource");
        if (strcmp(url, "/version") == 0)
            return serve_version(conn);
        if (strcmp(url, "/metrics") == 0)
            return serve_metrics(server, conn);
        if (strcmp(url, "/readyz") == 0)
            return serve_health(server, conn, "readyz", readyz_checks,
                                sizeof(readyz_checks) / sizeof(readyz_checks[0]));
        return serve_health(server, conn, url + 1, livez_checks,
                            sizeof(livez_checks) / sizeof(livez_checks[0]));
    }
    struct ck__target target;
    if (ck__route(url, &target) == 0) {
        ck__request_labels_set(&req->labels, method, &target,
                               readonly && ck__query_bool(conn, "watch"),
                               ck__query(conn, "dryRun") != NULL);
        if (readonly)
            return ck__serve_resource(server, conn, method, &target, body, body_len);
        struct ck_err err = {0};
        const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
        if (ck__auth_check_write(server, req->user, &target, method, type, body, body_len, &err) <
            0)
            return ck__fail(conn, &err);
        enum MHD_Result ret = ck__serve_resource(server, conn, method, &target, body, body_len);
        enum ck_kind_role role = target.kind->role;
        if (role == CK_KIND_ROLE_RBAC_ROLE || role == CK_KIND_ROLE_RBAC_CLUSTER_ROLE ||
            role == CK_KIND_ROLE_RBAC_ROLE_BINDING ||
            role == CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING)
            ck__auth_rbac_changed(server);
        return ret;
    }
    return ck__fail_with(conn, "NotFound", "the server could not find the requested resource");
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **req_cls)
{
    (void)version;
    struct request *req = *req_cls;
    if (!req) {
        req = ck__calloc(1, sizeof(*req));
        /* no memory for the request: read it and answer 500 (see unrecorded_request) */
        *req_cls = req ? req : &unrecorded_request;
        if (!req)
            return MHD_YES;
        req->start = monotonic_seconds();
        if (ck_log_v(2))
            req->path = ck__strdup(url);
        return MHD_YES;
    }
    if (req == &unrecorded_request) {
        if (*upload_data_size == 0)
            return ck__fail_no_memory(conn);
        *upload_data_size = 0; /* dropped */
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->too_large || req->no_memory)
            return MHD_YES; /* keep reading to answer 413 (500) cleanly */
        if (req->len + n > MAX_BODY_BYTES) {
            req->too_large = true;
            free(req->body);
            req->body = NULL;
            req->len = 0;
            return MHD_YES;
        }
        char *grown = ck__realloc(req->body, req->len + n + 1);
        if (!grown) {
            req->no_memory = true;
            free(req->body);
            req->body = NULL;
            req->len = 0;
            return MHD_YES;
        }
        memcpy(grown + req->len, upload_data, n);
        req->body = grown;
        req->len += n;
        req->body[req->len] = '\0';
        return MHD_YES;
    }
    if (req->no_memory) {
        ck__request_labels_set(&req->labels, method, NULL, false, false);
        return ck__fail_no_memory(conn);
    }
    if (req->too_large) {
        ck__request_labels_set(&req->labels, method, NULL, false, false);
        return ck__fail_with(conn, "RequestEntityTooLarge",
                             "Request entity too large: limit is 3145728");
    }
    return route(cls, conn, req, method, url);
}

/* The access log line of Kubernetes' httplog, at -v 2. */
static void log_access(struct MHD_Connection *conn, const struct request *req, unsigned code,
                       double seconds)
{
    char latency[32], resp[16], peer[INET6_ADDRSTRLEN + 8] = "";
    snprintf(latency, sizeof(latency), "%.3fms", seconds * 1e3);
    snprintf(resp, sizeof(resp), "%u", code);
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(peer, sizeof(peer), "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    }
    const char *agent = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "User-Agent");
    CK_LOGS(2, "HTTP", "verb", req->labels.verb, "URI", req->path, "latency", latency, "userAgent",
            agent ? agent : "", "srcIP", peer, "resp", resp);
}

static void request_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                              enum MHD_RequestTerminationCode code)
{
    struct ck_apiserver *server = cls;
    (void)code;
    struct request *req = *req_cls;
    if (!req || req == &unrecorded_request)
        return;
    if (req->labels.verb[0]) { /* answered, not just opened */
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        unsigned status = info ? info->http_status : 0;
        double seconds = monotonic_seconds() - req->start;
        ck__metrics_observe(server->metrics, &req->labels, status, seconds);
        if (req->path)
            log_access(conn, req, status, seconds);
    }
    ck_auth_user_free(req->user);
    free(req->path);
    free(req->body);
    free(req);
    *req_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t len = strlen(msg);
    while (len > 0 && msg[len - 1] == '\n')
        msg[--len] = '\0';
    CK_LOGV(2, "libmicrohttpd: %s", msg);
}

/* Splits "HOST:PORT" / "[HOST]:PORT" into host and port buffers. */
static int split_host_port(const char *addr, bool tls, char *host, size_t host_size, char *port,
                           size_t port_size, struct ck_err *reterr)
{
    const char *colon;
    const char *host_start = addr;
    size_t host_len;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return ck_err_set(reterr, CK_EINVAL, "invalid listen address %s: want [HOST]:PORT",
                              addr);
        host_start = addr + 1;
        host_len = (size_t)(close - host_start);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return ck_err_set(reterr, CK_EINVAL, "invalid listen address %s: want HOST:PORT", addr);
        host_len = (size_t)(colon - addr);
    }
    const char *port_str = colon + 1;
    char *end;
    long port_num = strtol(port_str, &end, 10);
    if (*port_str == '\0' || *end != '\0' || port_num < 0 || port_num > 65535)
        return ck_err_set(reterr, CK_EINVAL, "invalid listen address %s: bad port %s", addr,
                          port_str);
    if (host_len == 0 && tls) {
        host_start = "0.0.0.0"; /* every interface */
        host_len = strlen(host_start);
    } else if (host_len == 0)
        return ck_err_set(
            reterr, CK_EINVAL,
            "listen address %s has no host: without TLS and authentication ckube listens on loopback only",
            addr);
    if (host_len >= host_size || strlen(port_str) >= port_size)
        return ck_err_set(reterr, CK_EINVAL, "invalid listen address %s: too long", addr);
    memcpy(host, host_start, host_len);
    host[host_len] = '\0';
    strcpy(port, port_str);
    return 0;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    return false;
}

static int bind_listen_socket(struct ck_apiserver *server, const char *addr, bool tls,
                              struct ck_err *reterr)
{
    char host[256], port[16];
    int r = split_host_port(addr, tls, host, sizeof(host), port, sizeof(port), reterr);
    if (r < 0)
        return r;

    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0)
        return ck_err_set(reterr, CK_EINVAL, "invalid listen address %s: %s", addr,
                          gai_strerror(gai));
    if (!tls && !is_loopback(res->ai_addr)) {
        freeaddrinfo(res);
        return ck_err_set(
            reterr, CK_EINVAL,
            "refusing to listen on %s: without TLS and authentication ckube listens on loopback addresses only (127.0.0.0/8, ::1)",
            addr);
    }

    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return ck_err_set(reterr, CK_EIO, "cannot create socket for %s: %s", addr, strerror(errno));
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
        int e = errno;
        freeaddrinfo(res);
        close(fd);
        if (e == EADDRINUSE)
            return ck_err_set(
                reterr, CK_EADDRINUSE,
                "cannot listen on %s: address already in use (is another ckube server running?)",
                addr);
        return ck_err_set(reterr, CK_EIO, "cannot listen on %s: %s", addr, strerror(e));
    }
    freeaddrinfo(res);
    if (listen(fd, 128) < 0) {
        int e = errno;
        close(fd);
        return ck_err_set(reterr, CK_EIO, "cannot listen on %s: %s", addr, strerror(e));
    }
    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof(bound);
    getsockname(fd, (struct sockaddr *)&bound, &bound_len);
    server->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                     : ((struct sockaddr_in *)&bound)->sin_port);
    snprintf(server->url, sizeof(server->url),
             bound.ss_family == AF_INET6 ? "%s://[%s]:%u" : "%s://%s:%u", tls ? "https" : "http",
             host, (unsigned)server->port);
    server->listen_fd = fd;
    return 0;
}

static void *ticker_main(void *arg)
{
    struct ck_apiserver *server = arg;
    pthread_mutex_lock(&server->ticker_lock);
    while (!server->ticker_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&server->ticker_wake, &server->ticker_lock, &until);
        if (server->ticker_stop)
            break;
        pthread_mutex_unlock(&server->ticker_lock);
        ck__watch_tick(server, false);
        pthread_mutex_lock(&server->ticker_lock);
    }
    pthread_mutex_unlock(&server->ticker_lock);
    return NULL;
}

/* Creates the namespaces Kubernetes has from the start, when absent. */
static int bootstrap_namespaces(struct ck_apiserver *server, struct ck_err *reterr)
{
    static const char *const names[] = {"default", "kube-system", "kube-public", "kube-node-lease"};
    const struct ck_kind *ns_kind = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    char api_version[64];
    if (!ns_kind)
        return 0; /* no kind serves namespaces: nothing to create */
    ck_kind_api_version(ns_kind, api_version, sizeof(api_version));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", api_version, "kind",
                               ns_kind->kind, "metadata", "name", names[i]);
        char *out = NULL;
        size_t len = 0;
        struct ck_err err = {0};
        int r =
            ns ? ck__registry_create(server->registry, ns_kind, NULL, ns, false, &out, &len, &err)
               : ck_err_no_memory(&err);
        json_decref(ns);
        free(out);
        if (r < 0 && r != CK_EEXIST) {
            ck_err_set(reterr, CK_EIO, "cannot create namespace %s: %s", names[i],
                       ck_err_message(&err));
            ck_err_release(&err);
            return CK_EIO;
        }
        ck_err_release(&err);
    }
    return 0;
}

/* Frees what start built, in reverse order; safe on a partly built server. */
static void teardown(struct ck_apiserver *server)
{
    if (server->ticker) {
        pthread_mutex_lock(&server->ticker_lock);
        server->ticker_stop = true;
        pthread_cond_signal(&server->ticker_wake);
        pthread_mutex_unlock(&server->ticker_lock);
        pthread_join(server->ticker, NULL);
    }
    server->ttl = ck__ttl_stop(server->ttl);
    if (server->registry)
        ck__allocator_free(server->registry->allocator);
    free(server->registry);
    ck__auth_free(server->auth);
    ck__metrics_free(server->metrics);
    ck_fg_gate_free(server->own_gates);
    ck_schemas_free(server->schemas);
    ck_store_close(server->store);
    if (server->listen_fd >= 0)
        close(server->listen_fd);
    pthread_mutex_destroy(&server->watches_lock);
    pthread_mutex_destroy(&server->ticker_lock);
    pthread_cond_destroy(&server->ticker_wake);
    free(server);
}

int ck_apiserver_start(const struct ck_apiserver_config *config, struct ck_apiserver **ret_server,
                       struct ck_err *reterr)
{
    const char *listen_addr =
        config && config->listen ? config->listen : CK_APISERVER_DEFAULT_LISTEN;
    if (!config || !config->store_url)
        return ck_err_set(reterr, CK_EINVAL, "no store configured");
    struct ck_apiserver *server = ck__calloc(1, sizeof(*server));
    if (!server)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    server->listen_fd = -1;
    pthread_mutex_init(&server->watches_lock, NULL);
    pthread_mutex_init(&server->ticker_lock, NULL);
    pthread_cond_init(&server->ticker_wake, NULL);

    server->metrics = ck__metrics_new();
    char host[256], port[16];
    int r = server->metrics
                ? split_host_port(listen_addr, true, host, sizeof(host), port, sizeof(port), reterr)
                : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0)
        r = ck__auth_init(server, config, host, reterr);
    bool tls = server->auth != NULL;
    if (r == 0)
        r = bind_listen_socket(server, listen_addr, tls, reterr);
    if (r == 0 && !config->feature_gates) {
        r = ck_apiserver_feature_gate_new(NULL, &server->own_gates, reterr);
        if (r == 0)
            ck_fg_close(server->own_gates);
    }
    server->feature_gates = config->feature_gates ? config->feature_gates : server->own_gates;
    if (r == 0)
        r = ck__check_api_features(server->feature_gates, reterr);
    if (r == 0)
        ck_fg_log_startup(server->feature_gates);
    if (r == 0)
        r = ck_store_open(config->store_url, NULL, &server->store, reterr);
    if (r == 0)
        r = ck__encryption_wrap(config->encryption_provider_config, &server->store, reterr);
    if (r == 0)
        r = ck_api_builtin_schemas(&server->schemas, reterr);
    if (r == 0) {
        server->registry = ck__calloc(1, sizeof(*server->registry));
        if (!server->registry)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        else
            *server->registry = (struct ck__registry){server->store, server->schemas,
                                                      ck__feature_enabled, server, NULL};
    }
    if (r == 0)
        r = ck__allocator_new(
            server->store,
            config->service_cluster_ip_range ? config->service_cluster_ip_range : "10.96.0.0/12",
            config->service_node_port_range ? config->service_node_port_range : "30000-32767",
            &server->registry->allocator, reterr);
    if (r == 0)
        r = bootstrap_namespaces(server, reterr);
    if (r == 0)
        r = ck__allocator_bootstrap(server->registry, ck_apiserver_port(server), reterr);
    if (r == 0)
        r = ck__auth_bootstrap(server, reterr);
    if (r == 0 && pthread_create(&server->ticker, NULL, ticker_main, server) != 0) {
        server->ticker = 0;
        r = ck_err_set(reterr, CK_EIO, "cannot start the watch ticker thread");
    }
    if (r == 0)
        r = ck__ttl_start(server->store, config->event_ttl, &server->ttl, reterr);
    if (r < 0) {
        teardown(server);
        return r;
    }

    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    /* TLS options come first; without TLS the list ends there (MHD_OPTION_ARRAY's end). */
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)ck__auth_cert_pem(server->auth)},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)ck__auth_key_pem(server->auth)},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES},
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)ck__auth_client_ca_pem(server->auth)},
        {MHD_OPTION_END, 0, NULL},
    };
    if (tls) {
        flags |= MHD_USE_TLS;
        if (!ck__auth_client_ca_pem(server->auth))
            tls_options[3].option = MHD_OPTION_END;
    } else {
        tls_options[0].option = MHD_OPTION_END;
    }
    server->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, access_handler, server, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_ARRAY, tls_options, MHD_OPTION_LISTEN_SOCKET, server->listen_fd,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60, MHD_OPTION_CONNECTION_LIMIT,
        MAX_CONNECTIONS, MHD_OPTION_THREAD_POOL_SIZE, HANDLER_THREADS, MHD_OPTION_NOTIFY_COMPLETED,
        request_completed, server, MHD_OPTION_NOTIFY_CONNECTION, ck__auth_notify_connection, server,
        MHD_OPTION_END);
    if (!server->daemon) {
        teardown(server);
        return ck_err_set(reterr, CK_EIO, "cannot start the HTTP server on %s", listen_addr);
    }
    *ret_server = server;
    return 0;
}

uint16_t ck_apiserver_port(const struct ck_apiserver *server)
{
    return server->port;
}

const char *ck_apiserver_url(const struct ck_apiserver *server)
{
    return server->url;
}

void ck_apiserver_begin_shutdown(struct ck_apiserver *server)
{
    atomic_store(&server->shutting_down, true);
}

struct ck_apiserver *ck_apiserver_free(struct ck_apiserver *server)
{
    if (!server)
        return NULL;
    atomic_store(&server->shutting_down, true);
    /* Stop accepting, end every watch stream cleanly (no connection stays
     * suspended), then close the connections; we own the listen socket. */
    MHD_socket fd = MHD_quiesce_daemon(server->daemon);
    ck__watch_tick(server, true);
    for (int i = 0; i < 200 && atomic_load(&server->active_watches) > 0; i++) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL); /* let MHD flush the ended streams (2 s at most) */
    }
    MHD_stop_daemon(server->daemon);
    if (fd == MHD_INVALID_SOCKET)
        server->listen_fd = -1; /* MHD kept and closed it */
    teardown(server);
    return NULL;
}
