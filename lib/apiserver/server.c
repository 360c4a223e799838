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
 * authorized (authn_authz.c) before it is routed, and between the two, as in
 * kube-apiserver's filter chain, admitted by API Priority and Fairness
 * (apf.c, flow_control() here): it runs, is refused 429, or waits for a seat
 * with its connection suspended, so that no thread waits with it.
 *
 * A request starts in MHD's URI callback (request_begins), which keeps the
 * target as the client sent it: MHD decodes its own copy in place, and a
 * "%00" would cut a name short; the raw target is checked (route.c) before
 * authentication and routing. Connections are bounded and their header has a
 * deadline (connections.c, fed by MHD's connection notifications).
 *
 * Requests are answered on the access handler's second call, never the first:
 * queuing on the first call makes MHD close kept-alive connections. The one
 * exception is on purpose: a header over MAX_HEADER_BYTES or with doubtful
 * framing (two Content-Lengths, Transfer-Encoding with Content-Length, ...)
 * is refused on the first call, so the connection is closed rather than its
 * body read with framing a proxy might have read differently.
 *
 * Discovery (/api, /apis, /api/v1, /apis/apps/v1) is the legacy form, built
 * from the kind registry; kubectl resolves every resource name through it.
 * OpenAPI (/openapi/v2, /openapi/v3) comes from the same schemas, with an
 * ETag and 304 for If-None-Match as kube-openapi answers it.
 *
 * Health follows k8s.io/apiserver/pkg/server/healthz: each endpoint runs a
 * list of named checks; success is "ok" (or, with ?verbose, one "[+]name ok"
 * line per check and "<endpoint> check passed"); any failure answers 500 with
 * the per-check lines, and ?exclude=name skips a check. /readyz also has the
 * "shutdown" check, which fails once shutdown has begun. Those endpoints are
 * public and withhold a failing check's reason; /readyz/NAME (and
 * /livez/NAME, /healthz/NAME) answers one check with its reason, and the log
 * says why a check has been failing for a while (run_check).
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
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ckube/apiserver.h"
#include "ckube/internal/util.h"
#include "ckube/store.h"
#include "internal.h"
#include "req_mhd.h"

#define MAX_BODY_BYTES  (3u * 1024 * 1024) /* Kubernetes' request body limit */
#define HANDLER_THREADS 16u                /* requests in progress at once */
/* Writes in progress at once (workers.c): each waits for its commit on a thread of its own. */
#define WRITE_WORKERS 64u
/* Connection bounds by default (connections.c; kube-apiserver has none). */
#define MAX_CONNECTIONS             10000u
#define MAX_CONNECTIONS_PER_ADDRESS 2000u
#define REQUEST_HEADER_TIMEOUT      32u /* seconds: kube-apiserver's ReadHeaderTimeout */
/*
 * Request line and header fields together, answered 431 (414 for the request
 * line alone) as a Status. libmicrohttpd holds them in a per-connection pool
 * twice as large, so that what exceeds our limit still reaches us to be
 * answered; beyond the pool libmicrohttpd answers on its own.
 */
#define MAX_HEADER_BYTES        (32u * 1024)
#define CONNECTION_MEMORY_BYTES (2u * MAX_HEADER_BYTES)
/* GnuTLS priorities: its defaults, TLS 1.2 and 1.3 only. */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/* What one request collected before it is answered. */
struct request {
    char *body;
    size_t len;
    bool too_large;
    bool no_memory;                   /* the body could not be kept: answer 500 */
    bool started;                     /* the header is complete: the access handler ran */
    bool reserve;                     /* on a reserve connection: one read only */
    double start;                     /* monotonic seconds at the first call */
    struct ck__request_labels labels; /* for the metrics, set when routed */
    char *raw_uri;                    /* the target as sent, still percent-encoded */
    struct ck_auth_user *user;        /* who sent it (NULL without TLS) */
    /* a write run on a worker while its connection is suspended (workers.c) */
    struct ck__work job;
    struct ck_apiserver *server;
    struct ck__req http;      /* the request as the handlers see it (req_mhd.h) */
    const char *method, *url; /* libmicrohttpd's, valid while the connection lives */
    bool ran_on_worker;       /* the worker is done: its answer waits in `http` */
    /* API Priority and Fairness (apf.c): waiting, its answer is the ticket's verdict */
    struct ck__apf_ticket apf;
    bool apf_waiting;
    int inflight;   /* without API Priority and Fairness: the max-in-flight slot held, or -1 */
    bool worker_ok; /* the worker's run answered (CK__YES) */
};

/*
 * The request of every connection whose struct request could not be
 * allocated: its body is read and dropped, it is answered 500, and it is
 * neither counted nor logged. Never written, so all threads may share it.
 */
static struct request unrecorded_request = {.inflight = -1};

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A health check: returns true when healthy, else false with one sentence in
 * reason (at most len bytes, NUL included) saying why.
 */
struct health_check {
    const char *name;
    enum ck__health_check id; /* its streak in server->health */
    bool (*run)(struct ck_apiserver *server, char *reason, size_t len);
};

static bool check_ping(struct ck_apiserver *server, char *reason, size_t len)
{
    (void)server;
    (void)reason;
    (void)len;
    return true;
}

static bool check_shutdown(struct ck_apiserver *server, char *reason, size_t len)
{
    if (atomic_load(&server->shutting_down)) {
        snprintf(reason, len, "process is shutting down");
        return false;
    }
    return true;
}

/* The store answers a read of its revisions; the reason is the store's own error. */
static bool check_store(struct ck_apiserver *server, char *reason, size_t len)
{
    struct ck_err err = {0};
    if (ck_store_revisions(server->store, NULL, NULL, &err) < 0) {
        snprintf(reason, len, "the store does not answer: %s", ck_err_message(&err));
        ck_err_release(&err);
        return false;
    }
    return true;
}

static const struct health_check livez_checks[] = {{"ping", CK__HEALTH_PING, check_ping},
                                                   {"store", CK__HEALTH_STORE, check_store}};
static const struct health_check readyz_checks[] = {
    {"ping", CK__HEALTH_PING, check_ping},
    {"store", CK__HEALTH_STORE, check_store},
    {"shutdown", CK__HEALTH_SHUTDOWN, check_shutdown}};

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum ck__health_note ck__health_streak_note(struct ck__health_streak *s, bool ok, long long now_ms,
                                            long long *ret_failing_ms)
{
    if (now_ms <= 0)
        now_ms = 1; /* 0 means "passing" */
    if (ok) {
        long long since = atomic_exchange(&s->failing_since_ms, 0);
        long long logged = atomic_exchange(&s->logged_at_ms, 0);
        if (!since || !logged)
            return CK__HEALTH_QUIET;
        *ret_failing_ms = now_ms - since;
        return CK__HEALTH_RECOVERED;
    }
    long long since = 0;
    if (atomic_compare_exchange_strong(&s->failing_since_ms, &since, now_ms))
        since = now_ms; /* this failure starts the streak */
    if (now_ms - since < CK__HEALTH_LOG_AFTER_MS)
        return CK__HEALTH_QUIET;
    long long logged = atomic_load(&s->logged_at_ms);
    if (logged && now_ms - logged < CK__HEALTH_LOG_EVERY_MS)
        return CK__HEALTH_QUIET;
    /* of the probes that get here at once, one logs */
    if (!atomic_compare_exchange_strong(&s->logged_at_ms, &logged, now_ms))
        return CK__HEALTH_QUIET;
    *ret_failing_ms = now_ms - since;
    return CK__HEALTH_FAILING;
}

/*
 * Runs one check and keeps its streak: the log says once when a check has
 * been failing for a while (and again every CK__HEALTH_LOG_EVERY_MS while it
 * goes on), and once when it passes again, so a check that cannot pass says
 * why at the default verbosity without a line per probe.
 */
static bool run_check(struct ck_apiserver *server, const struct health_check *check, char *reason,
                      size_t len)
{
    reason[0] = '\0';
    bool ok = check->run(server, reason, len);
    if (!ok && !reason[0])
        snprintf(reason, len, "no reason given");
    long long failing_ms = 0;
    switch (ck__health_streak_note(&server->health[check->id], ok, monotonic_ms(), &failing_ms)) {
    case CK__HEALTH_FAILING:
        CK_LOGW("health check %s has been failing for %llds: %s", check->name, failing_ms / 1000,
                reason);
        break;
    case CK__HEALTH_RECOVERED:
        CK_LOGI("health check %s passes again after failing for %llds", check->name,
                failing_ms / 1000);
        break;
    case CK__HEALTH_QUIET:
        break;
    }
    return ok;
}

static enum ck__res queue_body(struct ck__req *hreq, unsigned int status, const char *content_type,
                               const char *body, size_t len)
{
    const struct ck__header headers[] = {{"Content-Type", content_type},
                                         {"X-Content-Type-Options", "nosniff"},
                                         {"Cache-Control", "no-cache, private"}};
    return ck__respond_bytes(hreq, status, headers, 3, body, len);
}

/* True when the comma-separated or repeated ?exclude= values name the check. */
static bool excluded(struct ck__req *hreq, const char *check)
{
    const char *value = ck__req_query(hreq, "exclude");
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

static bool note_key(void *cls, const char *key, const char *value)
{
    (void)value;
    struct arg_search *search = cls;
    if (strcmp(key, search->wanted) == 0)
        search->found = true;
    return true;
}

/* True when the query has the argument, with or without a value (`?verbose`). */
static bool has_query_arg(struct ck__req *hreq, const char *name)
{
    struct arg_search search = {name, false};
    ck__req_queries(hreq, note_key, &search);
    return search.found;
}

/*
 * /readyz, /livez, /healthz as kube-apiserver's healthz.handleRootHealth
 * answers them. The endpoint is public (system:public-info-viewer), so a
 * failing check's line withholds its reason there; the reason goes to the log
 * (V(2), per request, and the streak lines of run_check) and to whoever may
 * read the check's own path (serve_one_check).
 */
static enum ck__res serve_health(struct ck_apiserver *server, struct ck__req *hreq,
                                 const char *endpoint, const struct health_check *checks,
                                 size_t n_checks)
{
    bool verbose = has_query_arg(hreq, "verbose");
    char body[2048], failed_names[256] = "", failed_log[1024] = "";
    size_t len = 0, names_len = 0, log_len = 0;
    bool healthy = true;

    for (size_t i = 0; i < n_checks; i++) {
        char reason[512];
        const char *name = checks[i].name;
        int n;
        if (excluded(hreq, name))
            n = snprintf(body + len, sizeof(body) - len, "[+]%s excluded: ok\n", name);
        else if (run_check(server, &checks[i], reason, sizeof(reason)))
            n = snprintf(body + len, sizeof(body) - len, "[+]%s ok\n", name);
        else {
            healthy = false;
            n = snprintf(body + len, sizeof(body) - len, "[-]%s failed: reason withheld\n", name);
            int m = snprintf(failed_names + names_len, sizeof(failed_names) - names_len, "%s%s",
                             names_len ? "," : "", name);
            if (m > 0 && (size_t)m < sizeof(failed_names) - names_len)
                names_len += (size_t)m;
            m = snprintf(failed_log + log_len, sizeof(failed_log) - log_len, "[-]%s failed: %s\n",
                         name, reason);
            if (m > 0 && (size_t)m < sizeof(failed_log) - log_len)
                log_len += (size_t)m;
        }
        if (n > 0 && (size_t)n < sizeof(body) - len)
            len += (size_t)n;
    }
    if (!healthy)
        CK_LOGV(2, "%s check failed: %s\n%s", failed_names, endpoint, failed_log);
    int n = snprintf(body + len, sizeof(body) - len, "%s check %s\n", endpoint,
                     healthy ? "passed" : "failed");
    if (n > 0 && (size_t)n < sizeof(body) - len)
        len += (size_t)n;

    const char *text_plain = "text/plain; charset=utf-8";
    if (healthy && !verbose)
        return queue_body(hreq, 200, text_plain, "ok", 2);
    return queue_body(hreq, healthy ? 200 : 500, text_plain, body, len);
}

/*
 * /readyz/NAME, /livez/NAME, /healthz/NAME: one check, as healthz's
 * adaptCheckToHandler answers it: "ok", or 500 with its reason. RBAC grants
 * these paths to system:monitoring, not to everyone as the endpoints above.
 */
static enum ck__res serve_one_check(struct ck_apiserver *server, struct ck__req *hreq,
                                    const char *name, const struct health_check *checks,
                                    size_t n_checks)
{
    for (size_t i = 0; i < n_checks; i++) {
        if (strcmp(checks[i].name, name) != 0)
            continue;
        char reason[512], body[600];
        const char *text_plain = "text/plain; charset=utf-8";
        if (run_check(server, &checks[i], reason, sizeof(reason)))
            return queue_body(hreq, 200, text_plain, "ok", 2);
        int n = snprintf(body, sizeof(body), "internal server error: %s\n", reason);
        size_t len = n > 0 && (size_t)n < sizeof(body) ? (size_t)n : strlen(body);
        return queue_body(hreq, 500, text_plain, body, len);
    }
    return ck__fail_with(hreq, "NotFound", "the server could not find the requested resource");
}

/*
 * The health endpoint url names (/readyz, /livez, /healthz) and, through
 * ret_check, the check it names after a '/' (NULL for the endpoint itself);
 * false for any other url.
 */
static bool health_path(const char *url, const struct health_check **ret_checks, size_t *ret_n,
                        const char **ret_check)
{
    static const char *const endpoints[] = {"/readyz", "/livez", "/healthz"};
    for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
        size_t n = strlen(endpoints[i]);
        if (strncmp(url, endpoints[i], n) != 0 || (url[n] && (url[n] != '/' || !url[n + 1])))
            continue;
        bool ready = i == 0;
        *ret_checks = ready ? readyz_checks : livez_checks;
        *ret_n = ready ? sizeof(readyz_checks) / sizeof(readyz_checks[0])
                       : sizeof(livez_checks) / sizeof(livez_checks[0]);
        *ret_check = url[n] ? url + n + 1 : NULL;
        return true;
    }
    return false;
}

static enum ck__res serve_version(struct ck__req *hreq)
{
    char *body = ck_version_json(true);
    if (!body)
        return ck__fail_no_memory(hreq);
    enum ck__res ret = ck__send_json(hreq, 200, body);
    free(body);
    return ret;
}

/*
 * Answers value (taken), an API object such as a discovery document, in the
 * negotiated format; 500 when it is NULL or cannot be rendered: out of memory.
 */
static enum ck__res queue_json_value(struct ck__req *hreq, json_t *value)
{
    size_t len = 0;
    char *body = ck__json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
    json_decref(value);
    if (!body)
        return ck__fail_no_memory(hreq);
    return ck__send_bytes(hreq, 200, "application/json", body, len, NULL);
}

/* A discovery document: 404 for a group/version nobody serves, 500 when it cannot be built. */
static enum ck__res queue_resources(struct ck__req *hreq, const char *group, const char *version)
{
    if (!ck__serves_group_version(group, version))
        return ck__fail_with(hreq, "NotFound", "the server could not find the requested resource");
    return queue_json_value(hreq, ck_discovery_resources(group, version));
}

/* True when an If-None-Match list ("*", or "a", W/"b", ...) names etag (quoted). */
static bool etag_matches(const char *if_none_match, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = if_none_match; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0) /* the weak comparison of GET */
            p += 2;
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
        p = strchr(p, ',');
    }
    return false;
}

/* What an OpenAPI document is answered in. */
enum openapi_format { OPENAPI_NONE, OPENAPI_JSON, OPENAPI_PROTO };

/* Accept entries read for OpenAPI and discovery; more are ignored (Go reads all). */
#define MAX_ACCEPT 32

/* One entry of an Accept header, as goautoneg's ParseAccept reads it. */
struct accept_clause {
    const char *type, *subtype; /* in the header, not NUL-terminated */
    size_t type_len, subtype_len;
    const char *params; /* ";a=b;c=d", not NUL-terminated */
    size_t params_len;
    double q;
    int n_params;
};

/* goautoneg's order: higher q first, then a concrete type, subtype, more parameters. */
static bool clause_before(const struct accept_clause *a, const struct accept_clause *b)
{
    bool a_any_type = a->type_len == 1 && a->type[0] == '*';
    bool b_any_type = b->type_len == 1 && b->type[0] == '*';
    bool a_any_sub = a->subtype_len == 1 && a->subtype[0] == '*';
    bool b_any_sub = b->subtype_len == 1 && b->subtype[0] == '*';
    if (a->q != b->q)
        return a->q > b->q;
    if (a_any_type != b_any_type)
        return !a_any_type;
    if (a_any_sub != b_any_sub)
        return !a_any_sub;
    return a->n_params > b->n_params;
}

/* Splits one entry ("type/subtype;q=0.5;..."); false for one without a '/' (skipped). */
static bool parse_clause(const char *p, size_t len, struct accept_clause *ret)
{
    size_t range = strcspn(p, ";");
    if (range > len)
        range = len;
    while (range && p[range - 1] == ' ')
        range--;
    *ret = (struct accept_clause){.q = 1, .params = p + range, .params_len = len - range};
    if (range == 1 && p[0] == '*') {
        /* goautoneg reads a bare star as any type and subtype */
        ret->type = ret->subtype = "*";
        ret->type_len = ret->subtype_len = 1;
    } else {
        const char *slash = memchr(p, '/', range);
        if (!slash)
            return false;
        ret->type = p;
        ret->type_len = (size_t)(slash - p);
        ret->subtype = slash + 1;
        ret->subtype_len = range - ret->type_len - 1;
    }
    for (const char *param = memchr(p, ';', len); param;
         param = memchr(param + 1, ';', (size_t)(p + len - param - 1))) {
        const char *name = param + 1;
        while (name < p + len && *name == ' ')
            name++;
        if (p + len - name >= 2 && name[0] == 'q' && name[1] == '=') {
            char buf[32];
            size_t n = strcspn(name + 2, ";,");
            snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) - 1 ? n : sizeof(buf) - 1),
                     name + 2);
            char *end;
            double q = strtod(buf, &end);
            if (end != buf)
                ret->q = q;
        } else {
            ret->n_params++;
        }
    }
    return true;
}

static bool clause_matches(const struct accept_clause *c, const char *type, const char *subtype)
{
    return ((c->type_len == 1 && c->type[0] == '*') ||
            (c->type_len == strlen(type) && strncasecmp(c->type, type, c->type_len) == 0)) &&
           ((c->subtype_len == 1 && c->subtype[0] == '*') ||
            (c->subtype_len == strlen(subtype) &&
             strncasecmp(c->subtype, subtype, c->subtype_len) == 0));
}

/*
 * The entries of a request's Accept header (none: anything) sorted as goautoneg
 * sorts them, MAX_ACCEPT at the most (more are ignored); how many.
 */
static size_t sorted_accept(struct ck__req *hreq, struct accept_clause *clauses)
{
    const char *accept = ck__req_header(hreq, "Accept");
    if (!accept || !*accept)
        accept = "*/*";
    size_t n = 0;
    for (const char *p = accept; *p && n < MAX_ACCEPT;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        struct accept_clause c;
        if (len && parse_clause(p, len, &c)) {
            /* insertion keeps equal entries in header order, as Go's sort of a short list does */
            size_t i = n++;
            for (; i > 0 && clause_before(&c, &clauses[i - 1]); i--)
                clauses[i] = clauses[i - 1];
            clauses[i] = c;
        }
        p += len;
    }
    return n;
}

/*
 * The format kube-openapi's handler answers for an Accept header (none:
 * anything): its entries sorted as goautoneg sorts them, the first one that
 * names JSON or, for /openapi/v2 (proto), gnostic's protobuf in either
 * spelling; OPENAPI_NONE is a 406.
 */
static enum openapi_format openapi_accept(struct ck__req *hreq, bool proto)
{
    static const struct {
        const char *subtype;
        enum openapi_format format;
    } formats[] = {
        {"json", OPENAPI_JSON},
        {"com.github.proto-openapi.spec.v2@v1.0+protobuf", OPENAPI_PROTO},
        {"com.github.proto-openapi.spec.v2.v1.0+protobuf", OPENAPI_PROTO},
    };
    struct accept_clause clauses[MAX_ACCEPT];
    size_t n = sorted_accept(hreq, clauses);
    for (size_t i = 0; i < n; i++)
        for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++)
            if ((proto || formats[f].format == OPENAPI_JSON) &&
                clause_matches(&clauses[i], "application", formats[f].subtype))
                return formats[f].format;
    return OPENAPI_NONE;
}

/* An ETag: the quoted upper-case hex SHA-512 of a document, as kube-openapi and discovery write it.
 */
#define ETAG_SIZE (2 * 64 + 3)
static bool etag_of(const char *body, size_t len, char etag[ETAG_SIZE])
{
    unsigned char digest[64];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA512, body, len, digest) < 0)
        return false;
    etag[0] = '"';
    for (size_t i = 0; i < sizeof(digest); i++)
        snprintf(etag + 1 + 2 * i, 3, "%02X", digest[i]);
    snprintf(etag + 1 + 2 * sizeof(digest), 2, "\"");
    return true;
}

/*
 * Answers an OpenAPI document (taken) as kube-openapi does: JSON as it is
 * (no line break, never indented), an ETag of its SHA-512, and 304 Not
 * Modified when If-None-Match names that ETag; 406 for an Accept that does
 * not take JSON (or, with proto, /openapi/v2's protobuf, which has the
 * ETag of the JSON, as kube-openapi's cache gives it, told apart by Vary).
 */
/*
 * An answer with an ETag: 304 without a body when not_modified (body freed),
 * else 200 with body (taken) of content_type.
 */
static enum ck__res queue_tagged(struct ck__req *hreq, bool not_modified, char *body, size_t len,
                                 const char *content_type, const char *etag,
                                 const char *cache_control)
{
    struct ck__header headers[4];
    size_t n = 0;
    if (!not_modified)
        headers[n++] = (struct ck__header){"Content-Type", content_type};
    headers[n++] = (struct ck__header){"ETag", etag};
    headers[n++] = (struct ck__header){"Vary", "Accept"};
    headers[n++] = (struct ck__header){"Cache-Control", cache_control};
    if (!not_modified)
        return ck__respond(hreq, 200, headers, n, body, len);
    free(body);
    return ck__respond_static(hreq, 304, headers, n, "", 0);
}

static enum ck__res queue_openapi(struct ck__req *hreq, json_t *doc, bool proto)
{
    enum openapi_format format = openapi_accept(hreq, proto);
    if (format == OPENAPI_NONE) {
        json_decref(doc);
        return queue_body(hreq, 406, "text/plain; charset=utf-8", "", 0);
    }
    size_t len = 0;
    char *body = ck__json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
    if (!body) {
        json_decref(doc);
        return ck__fail_no_memory(hreq);
    }
    char etag[ETAG_SIZE];
    if (!etag_of(body, len, etag)) {
        json_decref(doc);
        free(body);
        return ck__fail_no_memory(hreq);
    }
    bool not_modified = etag_matches(ck__req_header(hreq, "If-None-Match"), etag);
    if (!not_modified && format == OPENAPI_PROTO) {
        free(body);
        struct ck_err err = {0};
        if (ck_openapi_v2_proto(doc, &body, &len, &err) < 0) {
            json_decref(doc);
            return ck__fail(hreq, &err);
        }
    }
    json_decref(doc);
    return queue_tagged(hreq, not_modified, body, len,
                        format == OPENAPI_PROTO ? CK_OPENAPI_V2_PROTO_MEDIA_TYPE
                                                : "application/json",
                        etag, "no-cache, private");
}

/* True when the len bytes at p hold needle. */
static bool params_have(const char *p, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(p + i, needle, n) == 0)
            return true;
    return false;
}

/*
 * The aggregated discovery version a request's Accept asks for on /api and
 * /apis ("v2", "v2beta1"), or NULL for the legacy documents: the first entry
 * in goautoneg's order that discovery can answer decides, as kube-apiserver's
 * WrappedHandler negotiates with its discovery restrictions (JSON, and of the
 * as= shapes only APIGroupDiscoveryList).
 */
static const char *aggregated_version(struct ck__req *hreq)
{
    struct accept_clause clauses[MAX_ACCEPT];
    size_t n = sorted_accept(hreq, clauses);
    for (size_t i = 0; i < n; i++) {
        const struct accept_clause *c = &clauses[i];
        if (!clause_matches(c, "application", "json"))
            continue;
        if (!params_have(c->params, c->params_len, "as="))
            return NULL;
        if (params_have(c->params, c->params_len, "as=APIGroupDiscoveryList") &&
            params_have(c->params, c->params_len, "g=apidiscovery.k8s.io")) {
            if (params_have(c->params, c->params_len, "v=v2beta1"))
                return "v2beta1";
            if (params_have(c->params, c->params_len, "v=v2"))
                return "v2";
        }
    }
    return NULL;
}

/*
 * Aggregated discovery as kube-apiserver answers it (discovery/aggregated):
 * compact JSON with an ETag of its SHA-512, Vary: Accept, Cache-Control:
 * public, and 304 when If-None-Match is that ETag. Built from the kind
 * registry on each request, so it follows kinds and CRDs as they come and go.
 */
static enum ck__res queue_aggregated(struct ck_apiserver *server, struct ck__req *hreq, bool core,
                                     const char *version)
{
    char api_version[64], type[128];
    snprintf(api_version, sizeof(api_version), "apidiscovery.k8s.io/%s", version);
    snprintf(type, sizeof(type),
             "application/json;g=apidiscovery.k8s.io;v=%s;as=APIGroupDiscoveryList", version);
    size_t len = 0;
    json_t *doc = ck_discovery_aggregated(core, api_version);
    if (!core)
        doc = ck__aggregator_discovery(server, doc);
    char *body = doc ? ck__json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER, &len) : NULL;
    json_decref(doc);
    char etag[ETAG_SIZE];
    if (!body || !etag_of(body, len, etag)) {
        free(body);
        return ck__fail_no_memory(hreq);
    }
    const char *if_none_match = ck__req_header(hreq, "If-None-Match");
    bool not_modified = if_none_match && strcmp(if_none_match, etag) == 0;
    /* the ETag is the compact document's; the answer is JSON as every API answer (a line break) */
    char content_type[sizeof(type) + 32];
    if (!not_modified && ck__media_encode(hreq, type, body, len, &body, &len, content_type,
                                          sizeof(content_type)) < 0)
        return ck__fail_no_memory(hreq);
    return queue_tagged(hreq, not_modified, body, len, content_type, etag, "public");
}

/*
 * Legacy discovery: /api, /apis, /api/<v>, /apis/<g>/<v>. Returns false when
 * url is not a discovery path (so the caller keeps routing).
 */
static bool serve_discovery(struct ck_apiserver *server, struct ck__req *hreq, const char *url,
                            enum ck__res *ret)
{
    char group[64], version[32], extra;
    bool core = strcmp(url, "/api") == 0 || strcmp(url, "/api/") == 0;
    const char *aggregated = core || strcmp(url, "/apis") == 0 || strcmp(url, "/apis/") == 0
                                 ? aggregated_version(hreq)
                                 : NULL;
    if (aggregated) {
        *ret = queue_aggregated(server, hreq, core, aggregated);
    } else if (core) {
        const char *address = strstr(server->url, "://");
        *ret = queue_json_value(hreq, ck_discovery_api_versions(address ? address + 3 : ""));
    } else if (strcmp(url, "/apis") == 0 || strcmp(url, "/apis/") == 0) {
        *ret = queue_json_value(hreq, ck__aggregator_api_groups(server, ck_discovery_api_groups()));
    } else if (sscanf(url, "/api/%31[^/]%c", version, &extra) == 1) {
        *ret = queue_resources(hreq, "", version);
    } else if (sscanf(url, "/apis/%63[^/]/%31[^/]%c", group, version, &extra) == 2) {
        *ret = queue_resources(hreq, group, version);
    } else {
        return false;
    }
    return true;
}

/*
 * /openapi/v2 (Swagger 2.0), /openapi/v3 (the index) and
 * /openapi/v3/<api|apis/G>/<V> (a document), all from the same schemas.
 */
static enum ck__res serve_openapi(struct ck_apiserver *server, struct ck__req *hreq,
                                  const char *url)
{
    char group[64] = "", version[32];
    char extra;
    if (strcmp(url, "/openapi/v2") == 0)
        return queue_openapi(hreq, ck_openapi_v2(server->schemas), true);
    const char *rest = url + strlen("/openapi/v3");
    if (*rest == '\0' || strcmp(rest, "/") == 0)
        return queue_openapi(hreq, ck_openapi_index(server->schemas), false);
    if (sscanf(rest, "/api/%31[^/]%c", version, &extra) == 1 ||
        sscanf(rest, "/apis/%63[^/]/%31[^/]%c", group, version, &extra) == 2) {
        /* served, a document that cannot be built is a 500 */
        if (ck__serves_group_version(group, version))
            return queue_openapi(hreq, ck_openapi_document(server->schemas, group, version), false);
    }
    return ck__fail_with(hreq, "NotFound", "the server could not find the requested resource");
}

static enum ck__res serve_metrics(struct ck_apiserver *server, struct ck__req *hreq)
{
    size_t len = 0;
    struct ck__buf extra = {0};
    char *gates = ck_fg_metrics_text(server->feature_gates);
    char *flow = ck__apf_metrics_text(server->apf);
    char *more = server->metrics_text ? server->metrics_text(server->metrics_text_arg) : NULL;
    ck__buf_adds(&extra, gates ? gates : "");
    ck__buf_adds(&extra, flow ? flow : "");
    ck__buf_adds(&extra, more ? more : "");
    char *exposition = ck__buf_take(&extra);
    /* out of memory: no exposition rather than a partial one */
    bool partial = !gates || !flow || (server->metrics_text && !more);
    free(gates);
    free(flow);
    free(more);
    if (exposition && partial)
        exposition = (free(exposition), NULL);
    char *text =
        exposition ? ck__metrics_render(server->metrics, server->store, exposition, &len) : NULL;
    free(exposition);
    if (!text)
        return ck__fail_no_memory(hreq);
    enum ck__res ret = queue_body(hreq, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
    return ret;
}

/*
 * 429 for a write or watch on a reserve connection, as kube-apiserver's
 * max-in-flight filter answers: Status TooManyRequests and Retry-After: 1.
 */
static enum ck__res refuse_in_reserve(struct ck__req *hreq)
{
    struct ck_err err = {0};
    ck_err_status(&err, "TooManyRequests", "Too many requests, please try again later.");
    size_t len = 0;
    char *body = ck__status_json(&err, false, &len);
    ck_err_release(&err);
    if (!body)
        return ck__fail_no_memory(hreq);
    const struct ck__header headers[] = {{"Content-Type", "application/json"},
                                         {"X-Content-Type-Options", "nosniff"},
                                         {"Cache-Control", "no-cache, private"},
                                         {"Retry-After", "1"}};
    return ck__respond(hreq, 429, headers, 4, body, len);
}

/* kube-apiserver's long-running subresources (their requests have no deadline). */
static bool long_running_subresource(const char *subresource)
{
    static const char *const long_running[] = {"attach", "exec", "log", "portforward", "proxy"};
    for (size_t i = 0; i < sizeof(long_running) / sizeof(long_running[0]); i++)
        if (strcmp(subresource, long_running[i]) == 0)
            return true;
    return false;
}

/*
 * request_deadline.go: a ?timeout that is not a Go duration is refused 400 before
 * authentication, unless the request is long-running (a watch, exec, attach,
 * portforward, proxy, log).
 */
static bool bad_timeout(struct ck__req *hreq, const char *method, const char *url,
                        enum ck__res *ret)
{
    char msg[512];
    struct ck__target t;
    if (!ck__apf_timeout_invalid(ck__query(hreq, "timeout"), msg, sizeof(msg)))
        return false;
    if (ck__route(url, &t) == 0 && (long_running_subresource(t.subresource) ||
                                    strcmp(ck__request_verb(hreq, method, &t), "watch") == 0))
        return false;
    *ret = ck__fail_with(hreq, "BadRequest", msg);
    return true;
}

/*
 * What every request passes before API Priority and Fairness: the target's
 * check, the reserve connections' rule, a ?timeout that is no duration,
 * authentication and impersonation.
 * Returns false when it answered (*ret is the answer's result).
 */
static bool front(struct ck_apiserver *server, struct ck__req *hreq, struct request *req,
                  const char *method, const char *url, enum ck__res *ret)
{
    bool readonly = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    ck__request_labels_set(&req->labels, method, NULL, false, false);
    /* what url cannot show: a decoded NUL or '/', empty segments */
    struct ck_err path_err = {0};
    bool answered = true;
    if (!req->raw_uri)
        *ret = ck__fail_no_memory(hreq);
    else if (ck__path_check(req->raw_uri, &path_err) < 0)
        *ret = ck__fail(hreq, &path_err);
    else if (req->reserve && !(readonly && !ck__query_bool(hreq, "watch")))
        *ret = refuse_in_reserve(hreq); /* a reserve connection is for health checks and reads */
    else if (!bad_timeout(hreq, method, url, ret))
        *ret = ck__auth_authenticate(server, hreq, &req->user, &answered);
    return !answered;
}

/* Authorization and the request's handler, once API Priority and Fairness admitted it. */
static enum ck__res route(struct ck_apiserver *server, struct ck__req *hreq, struct request *req,
                          const char *method, const char *url)
{
    const char *body = req->body;
    size_t body_len = req->len;
    bool readonly = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool answered = false;
    enum ck__res auth_ret = ck__auth_authorize(server, hreq, method, url, req->user, &answered);
    if (answered)
        return auth_ret;
    enum ck__res discovery_ret;
    if (ck__aggregator_serve(server, hreq, method, body, body_len, req->raw_uri, url, req->user,
                             &discovery_ret))
        return discovery_ret;
    if (readonly && serve_discovery(server, hreq, url, &discovery_ret))
        return discovery_ret;
    if (readonly && (strcmp(url, "/openapi/v2") == 0 ||
                     (strncmp(url, "/openapi/v3", 11) == 0 && (url[11] == '\0' || url[11] == '/'))))
        return serve_openapi(server, hreq, url);

    /* kube-apiserver serves /version and /version/ alike */
    bool version = strcmp(url, "/version") == 0 || strcmp(url, "/version/") == 0;
    const struct health_check *checks = NULL;
    size_t n_checks = 0;
    const char *check = NULL;
    bool health = health_path(url, &checks, &n_checks, &check);
    if (health || version || strcmp(url, "/metrics") == 0) {
        if (!readonly)
            return ck__fail_with(hreq, "MethodNotAllowed",
                                 "the server does not allow this method on the requested resource");
        if (version)
            return serve_version(hreq);
        if (strcmp(url, "/metrics") == 0)
            return serve_metrics(server, hreq);
        if (check)
            return serve_one_check(server, hreq, check, checks, n_checks);
        char endpoint[16];
        snprintf(endpoint, sizeof(endpoint), "%s", url + 1);
        return serve_health(server, hreq, endpoint, checks, n_checks);
    }
    struct ck__target target;
    if (ck__route(url, &target) == 0) {
        target.user = req->user;
        ck__request_labels_set(&req->labels, method, &target,
                               readonly && ck__query_bool(hreq, "watch"),
                               ck__query(hreq, "dryRun") != NULL);
        struct ck_err name_err = {0};
        if (target.name[0] && ck__check_name_segment(target.name, &name_err) < 0)
            return ck__fail(hreq, &name_err);
        enum ck__res auth_served;
        if (ck__auth_serve(server, hreq, method, &target, req->user, body, body_len, &auth_served))
            return auth_served;
        if (ck__metrics_api_serve(server, hreq, method, &target, &auth_served))
            return auth_served;
        if (strcmp(target.subresource, "proxy") == 0) /* any method, any body: relayed */
            return ck__serve_proxy(server, hreq, method, body, body_len, req->raw_uri, &target);
        if (readonly)
            return ck__serve_resource(server, hreq, method, &target, body, body_len);
        struct ck_err err = {0};
        const char *type = ck__req_header(hreq, "Content-Type");
        /* a YAML object is JSON from here on, for the RBAC check as for the handlers */
        char *converted = NULL;
        size_t converted_len = 0;
        if ((strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) &&
            ck__media_decode_body(hreq, target.kind, body, body_len, &converted, &converted_len,
                                  &err) < 0)
            return ck__fail(hreq, &err);
        if (converted) {
            body = converted;
            body_len = converted_len;
        }
        if (ck__auth_check_write(server, req->user, &target, method, type, body, body_len, &err) <
            0) {
            free(converted);
            return ck__fail(hreq, &err);
        }
        enum ck__res ret = ck__serve_resource(server, hreq, method, &target, body, body_len);
        free(converted);
        if (ck__apf_follows(server->apf, target.kind))
            ck__apf_refresh(server->apf); /* the writer's next request sees its change */
        enum ck_kind_role role = target.kind->role;
        if (role == CK_KIND_ROLE_RBAC_ROLE || role == CK_KIND_ROLE_RBAC_CLUSTER_ROLE ||
            role == CK_KIND_ROLE_RBAC_ROLE_BINDING ||
            role == CK_KIND_ROLE_RBAC_CLUSTER_ROLE_BINDING)
            ck__auth_rbac_changed(server);
        return ret;
    }
    return ck__fail_with(hreq, "NotFound", "the server could not find the requested resource");
}

/*
 * GnuTLS's read of a connection in its TLS handshake. libmicrohttpd 0.9.75's
 * epoll mode keeps such a connection on its ready list until the handshake
 * ends, because GnuTLS reads the socket itself and the "would block" answer
 * never reaches libmicrohttpd: its thread spins, calling recv() and
 * epoll_wait() with no timeout, while the client computes its part of the
 * handshake. Giving the core away at each "would block" leaves that spin to
 * idle cores only, so under a flood of handshakes the spinning threads do not
 * crowd out the clients, or the handler threads that serve requests.
 */
static ssize_t handshake_pull(gnutls_transport_ptr_t transport, void *buf, size_t size)
{
    ssize_t n = recv((int)(intptr_t)transport, buf, size, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        sched_yield();
        errno = EAGAIN; /* GnuTLS reads errno */
    }
    return n;
}

/* GnuTLS's read once the handshake is over: the default, a plain recv(). */
static ssize_t record_pull(gnutls_transport_ptr_t transport, void *buf, size_t size)
{
    return recv((int)(intptr_t)transport, buf, size, 0);
}

static gnutls_session_t tls_session_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return ci ? (gnutls_session_t)ci->tls_session : NULL;
}

/*
 * libmicrohttpd's URI callback: the request line has arrived, the header
 * not yet. The request starts here, so that it keeps the target as the
 * client sent it (libmicrohttpd decodes its copy in place, "%00" into a NUL
 * that would cut a name short). Returns the request, which becomes *req_cls.
 */
static void *request_begins(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    struct request *req = ck__calloc(1, sizeof(*req));
    /* no memory for the request: read it and answer 500 (see unrecorded_request) */
    if (!req)
        return &unrecorded_request;
    req->start = monotonic_seconds();
    req->inflight = -1;
    req->raw_uri = ck__strdup(uri); /* NULL: answered 500 when routed */
    req->http.conn = conn;
    req->http.target = req->raw_uri;
    return req;
}

/* What the header fields say about the request's size and framing. */
struct header_census {
    size_t bytes;            /* name, value and ": " CRLF of every field */
    unsigned content_length; /* Content-Length fields */
    unsigned transfer_encoding;
    bool chunked_only; /* the (one) Transfer-Encoding is "chunked" */
};

static bool count_header(void *cls, const char *key, const char *value)
{
    struct header_census *census = cls;
    census->bytes += strlen(key) + (value ? strlen(value) : 0) + 4;
    if (strcasecmp(key, "Content-Length") == 0)
        census->content_length++;
    if (strcasecmp(key, "Transfer-Encoding") == 0) {
        census->transfer_encoding++;
        census->chunked_only = value && strcasecmp(value, "chunked") == 0;
    }
    return true;
}

/*
 * The header is complete: refuses, as a Status, a header larger than our
 * limit and framing a proxy could read differently from us (two
 * Content-Length fields, Transfer-Encoding with Content-Length, two
 * Transfer-Encodings, a coding other than chunked). Returns false when it
 * answered; the answer is queued on this first call on purpose, so
 * libmicrohttpd closes the connection instead of reading a body whose
 * extent is in doubt.
 */
static bool header_acceptable(struct ck__req *hreq, struct request *req, const char *url,
                              const char *method, enum ck__res *ret)
{
    struct header_census census = {0};
    ck__req_headers(hreq, count_header, &census);
    size_t line = strlen(method) + strlen(req->raw_uri ? req->raw_uri : url) + 12;
    struct ck_err err = {0};
    if (line > MAX_HEADER_BYTES) {
        ck_err_status(&err, "BadRequest", "the request line is longer than %u bytes",
                      MAX_HEADER_BYTES);
        err.http_status = 414;
        err.reason = "RequestURITooLong";
    } else if (line + census.bytes > MAX_HEADER_BYTES) {
        ck_err_status(&err, "BadRequest", "the request header is larger than %u bytes",
                      MAX_HEADER_BYTES);
        err.http_status = 431;
        err.reason = "RequestHeaderFieldsTooLarge";
    } else if (census.content_length > 1) {
        ck_err_status(&err, "BadRequest", "the request has more than one Content-Length header");
    } else if (census.transfer_encoding > 1) {
        ck_err_status(&err, "BadRequest", "the request has more than one Transfer-Encoding header");
    } else if (census.transfer_encoding && census.content_length) {
        ck_err_status(&err, "BadRequest",
                      "the request has both Transfer-Encoding and Content-Length headers");
    } else if (census.transfer_encoding && !census.chunked_only) {
        ck_err_status(&err, "BadRequest",
                      "unsupported transfer encoding: only chunked is accepted");
        err.http_status = 501;
        err.reason = "NotImplemented";
    } else {
        return true;
    }
    ck__request_labels_set(&req->labels, method, NULL, false, false);
    *ret = ck__fail(hreq, &err);
    return false;
}

/*
 * Whether a request waits long enough to take it off its libmicrohttpd thread:
 * every write (its commit on the store), every proxied request (its
 * upstream's answer, up to a minute) and every protocol upgrade (exec, attach,
 * port-forward: the node agent's leg opens before the 101, and an agent may
 * take its time, for instance while its pod's sync writes the pod's status to
 * this server, which would then wait on a thread the upgrade holds); not reads
 * or watches.
 */
static bool waits_on_store(const char *method, const char *url, struct ck__req *hreq)
{
    struct ck__target t;
    if (ck__route(url, &t) == 0 && strcmp(t.subresource, "proxy") == 0)
        return true;
    struct ck__aggregated_request aggregated;
    if (ck__aggregated_path(url, &aggregated) == 0)
        return true; /* possibly relayed to an APIService's backend */
    if (ck__req_header(hreq, "Upgrade"))
        return true; /* exec, attach, port-forward: the node's leg opens before the 101 */
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
           strcmp(method, "OPTIONS") != 0;
}

/* The request has run (a watch has started): its seats, or its max-in-flight slot, go. */
static void flow_done(struct ck_apiserver *server, struct request *req)
{
    ck__apf_done(server->apf, &req->apf);
    if (req->inflight >= 0)
        atomic_fetch_sub(&server->inflight[req->inflight], 1);
    req->inflight = -1;
}

/* On a worker (or here, when the pool is stopping): route, keep the answer, resume. */
static void run_request_job(struct ck__work *job)
{
    struct request *req = (struct request *)((char *)job - offsetof(struct request, job));
    req->http.deferring = true;
    req->http.flow = &req->apf;
    req->worker_ok = route(req->server, &req->http, req, req->method, req->url) == CK__YES;
    req->http.flow = NULL;
    flow_done(req->server, req); /* its seat, before req may go */
    req->ran_on_worker = true;
    MHD_resume_connection(req->http.conn);
}

/* Suspends the connection and hands req to a worker (or, when the pool is stopping, runs it). */
static void run_on_worker(struct ck_apiserver *server, struct ck__req *hreq, struct request *req,
                          const char *method, const char *url)
{
    req->job.run = run_request_job;
    req->server = server;
    req->method = method;
    req->url = url;
    MHD_suspend_connection(hreq->conn);
    if (!ck__workers_submit(server->workers, &req->job))
        run_request_job(&req->job);
}

/* Runs an admitted request: here, or on a worker when it waits on the store. */
static enum ck__res admitted(struct ck_apiserver *server, struct ck__req *hreq, struct request *req,
                             const char *method, const char *url)
{
    if (waits_on_store(method, url, hreq)) {
        run_on_worker(server, hreq, req, method, url);
        return CK__YES; /* answered when the worker resumes the connection */
    }
    hreq->flow = &req->apf;
    enum ck__res ret = route(server, hreq, req, method, url);
    hreq->flow = NULL;
    flow_done(server, req); /* a watch's seat goes once it has started */
    return ret;
}

/*
 * kube-apiserver's answer when API Priority and Fairness drops a request: 429, plain
 * text (net/http's Error) and Retry-After from the level's dropped-requests tracker.
 */
static enum ck__res refuse_by_flow_control(struct ck__req *hreq, struct request *req)
{
    static const char text[] = "Too many requests, please try again later.\n";
    char retry[16];
    snprintf(retry, sizeof(retry), "%u", req->apf.retry_after ? req->apf.retry_after : 1);
    const struct ck__header headers[] = {{"Content-Type", "text/plain; charset=utf-8"},
                                         {"X-Content-Type-Options", "nosniff"},
                                         {"Retry-After", retry}};
    hreq->flow = &req->apf;
    enum ck__res ret = ck__respond_static(hreq, 429, headers, 3, text, sizeof(text) - 1);
    hreq->flow = NULL;
    return ret;
}

/* A queued request got its seat or was rejected: its connection goes on. */
static void flow_control_wake(struct ck__apf_ticket *t)
{
    struct request *req = (struct request *)((char *)t - offsetof(struct request, apf));
    MHD_resume_connection(req->http.conn);
}

/*
 * What the work estimate reads of a list or watch: its options, and RequestInfo's name
 * from a metadata.name field selector (a valid path segment); *ret_fields, which holds
 * that name, is the caller's to free.
 */
static void list_digest(struct ck_apiserver *server, struct ck__req *hreq,
                        struct ck_field_selector **ret_fields, struct ck__apf_digest *d)
{
    const char *limit = ck__query(hreq, "limit");
    const char *fields = ck__query(hreq, "fieldSelector");
    const char *labels = ck__query(hreq, "labelSelector");
    const char *cont = ck__query(hreq, "continue");
    if (limit && *limit) {
        char *end;
        errno = 0;
        d->limit = strtoll(limit, &end, 10);
        d->bad_options = *end || errno == ERANGE;
    }
    d->selector = (fields && *fields) || (labels && *labels);
    d->continued = cont && *cont;
    d->resource_version = ck__query(hreq, "resourceVersion");
    d->rv_match = ck__query(hreq, "resourceVersionMatch");
    d->send_initial_events = ck__query_bool(hreq, "sendInitialEvents");
    d->watch_list = ck__watch_list_enabled(server);
    struct ck_err err = {0};
    if (fields && *fields && ck_field_selector_parse(fields, ret_fields, &err) < 0) {
        ck_err_release(&err);
        d->bad_options = true;
        return;
    }
    if (!*ret_fields)
        return;
    const char *name = ck_field_selector_exact(*ret_fields, "metadata.name");
    if (name && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !strpbrk(name, "/%"))
        d->name = name;
    const char *node = ck_field_selector_exact(*ret_fields, "spec.nodeName");
    d->node_indexed = node && *node;
}

/*
 * What API Priority and Fairness classifies a request by (Kubernetes'
 * RequestDigest). Returns false for the long-running requests it passes over
 * unclassified, as kube-apiserver does for those that are not watches:
 * kube-apiserver's long-running subresources (exec, attach, portforward, proxy, log).
 */
static bool flow_digest(struct ck_apiserver *server, struct ck__req *hreq,
                        const struct request *req, const char *method, const char *url,
                        struct ck__target *t, char verb[16], struct ck_field_selector **ret_fields,
                        struct ck__apf_digest *d)
{
    const struct ck_auth_user *u = req->user;
    memset(d, 0, sizeof(*d));
    d->user = u ? u->name : "";
    d->groups = u ? (const char *const *)u->groups : NULL;
    d->n_groups = u ? u->n_groups : 0;
    if (ck__route(url, t) == 0) {
        if (long_running_subresource(t->subresource))
            return false;
        d->resource_request = true;
        d->verb = ck__request_verb(hreq, method, t);
        d->api_group = t->kind->group;
        d->resource = t->kind->resource;
        d->subresource = t->subresource;
        /* a namespace's own requests are in that namespace (RequestInfo) */
        d->namespace =
            t->kind->role == CK_KIND_ROLE_NAMESPACE && t->name[0] ? t->name : t->namespace;
        d->name = t->name;
        if (strcmp(d->verb, "list") == 0 || strcmp(d->verb, "watch") == 0)
            list_digest(server, hreq, ret_fields, d);
        return true;
    }
    size_t i = 0;
    for (; method[i] && i + 1 < 16; i++)
        verb[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] - 'A' + 'a' : method[i]);
    verb[i] = '\0';
    d->verb = verb;
    d->path = url;
    return true;
}

/*
 * maxinflight.go's filter, in API Priority and Fairness's place when it is disabled: a
 * read (get, list) past --max-requests-inflight running, or a write past
 * --max-mutating-requests-inflight, is refused 429 with Retry-After 1 unless its user is
 * in system:masters; watches and the other long-running requests pass uncounted.
 */
static enum ck__res max_in_flight(struct ck_apiserver *server, struct ck__req *hreq,
                                  struct request *req, const char *method, const char *url,
                                  const struct ck__apf_digest *d)
{
    bool limited = d && strcmp(d->verb, "watch") != 0; /* d: NULL when long-running */
    int kind = limited && (strcmp(d->verb, "get") == 0 || strcmp(d->verb, "list") == 0) ? 0 : 1;
    if (!limited || !server->inflight_limit[kind])
        return admitted(server, hreq, req, method, url);
    if (atomic_fetch_add(&server->inflight[kind], 1) < server->inflight_limit[kind]) {
        req->inflight = kind;
        return admitted(server, hreq, req, method, url);
    }
    atomic_fetch_sub(&server->inflight[kind], 1);
    for (size_t i = 0; i < d->n_groups; i++)
        if (strcmp(d->groups[i], "system:masters") == 0)
            return admitted(server, hreq, req, method, url);
    req->apf.retry_after = 1;
    return refuse_by_flow_control(hreq, req);
}

/*
 * kube-apiserver's priority-and-fairness filter, after authentication: the request
 * runs, is refused 429, or waits in its level's queue with its connection suspended
 * (no thread waits), until a finishing request hands it its seats or its wait limit
 * passes (the apf's timer rejects it).
 */
static enum ck__res flow_control(struct ck_apiserver *server, struct ck__req *hreq,
                                 struct request *req, const char *method, const char *url)
{
    struct ck__apf_digest d;
    struct ck__target t;
    char verb[16];
    struct ck_field_selector *fields = NULL;
    bool classified = flow_digest(server, hreq, req, method, url, &t, verb, &fields, &d);
    if (!server->apf || !classified) {
        ck_field_selector_free(fields);
        return server->apf ? admitted(server, hreq, req, method, url)
                           : max_in_flight(server, hreq, req, method, url, classified ? &d : NULL);
    }
    enum ck__apf_verdict v = ck__apf_admit(server->apf, &d, &req->apf);
    ck_field_selector_free(fields);
    if (v == CK__APF_QUEUE) {
        req->apf.wake = flow_control_wake;
        req->apf_waiting = true;
        MHD_suspend_connection(hreq->conn); /* before it is queued: a wake may come at once */
        bool watch = d.resource_request && strcmp(d.verb, "watch") == 0;
        double limit = ck__apf_wait_limit(ck__query(hreq, "timeout"), watch);
        if (ck__apf_enqueue(server->apf, &req->apf, req->start + limit) != CK__APF_QUEUE)
            MHD_resume_connection(hreq->conn); /* decided at once: answered on the next call */
        return CK__YES;
    }
    if (v == CK__APF_REJECT)
        return refuse_by_flow_control(hreq, req);
    return admitted(server, hreq, req, method, url);
}

/* One call of the access handler, with the seam's answer. */
static enum ck__res access_step(struct ck_apiserver *server, struct MHD_Connection *conn,
                                const char *url, const char *method, const char *upload_data,
                                size_t *upload_data_size, void **req_cls)
{
    struct request *req = *req_cls;
    if (!req) /* the URI callback always sets it; be safe */
        *req_cls = req = request_begins(server, url, conn);
    if (req == &unrecorded_request) {
        if (*upload_data_size == 0) {
            struct ck__req unrecorded = {.conn = conn, .method = method};
            return ck__fail_no_memory(&unrecorded);
        }
        *upload_data_size = 0; /* dropped */
        return CK__YES;
    }
    struct ck__req *hreq = &req->http;
    if (!req->started) {
        req->started = true;
        hreq->method = method;
        req->reserve = ck__conns_request_started(server->conns, conn);
        gnutls_session_t session = server->auth ? tls_session_of(conn) : NULL;
        if (session) /* the handshake is over: a plain recv() from now on */
            gnutls_transport_set_pull_function(session, record_pull);
        enum ck__res ret;
        if (!header_acceptable(hreq, req, url, method, &ret))
            return ret;
        return CK__YES;
    }
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->too_large || req->no_memory)
            return CK__YES; /* keep reading to answer 413 (500) cleanly */
        if (req->len + n > MAX_BODY_BYTES) {
            req->too_large = true;
            free(req->body);
            req->body = NULL;
            req->len = 0;
            return CK__YES;
        }
        char *grown = ck__realloc(req->body, req->len + n + 1);
        if (!grown) {
            req->no_memory = true;
            free(req->body);
            req->body = NULL;
            req->len = 0;
            return CK__YES;
        }
        memcpy(grown + req->len, upload_data, n);
        req->body = grown;
        req->len += n;
        req->body[req->len] = '\0';
        return CK__YES;
    }
    if (req->ran_on_worker) /* resumed: the worker's answer */
        return ck__req_mhd_flush(hreq, req->worker_ok);
    if (req->apf_waiting) { /* resumed: its wait in a flow control queue is over */
        req->apf_waiting = false;
        if (req->apf.verdict == CK__APF_REJECT)
            return refuse_by_flow_control(hreq, req);
        return admitted(server, hreq, req, method, url);
    }
    ck__conns_request_received(server->conns, conn); /* the last call: the body is in */
    hreq->body = req->body;
    hreq->len = req->len;
    if (req->no_memory) {
        ck__request_labels_set(&req->labels, method, NULL, false, false);
        return ck__fail_no_memory(hreq);
    }
    if (req->too_large) {
        ck__request_labels_set(&req->labels, method, NULL, false, false);
        return ck__fail_with(hreq, "RequestEntityTooLarge",
                             "Request entity too large: limit is 3145728");
    }
    enum ck__res ret;
    if (!front(server, hreq, req, method, url, &ret))
        return ret;
    return flow_control(server, hreq, req, method, url);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                      const char *method, const char *version,
                                      const char *upload_data, size_t *upload_data_size,
                                      void **req_cls)
{
    (void)version;
    return access_step(cls, conn, url, method, upload_data, upload_data_size, req_cls) == CK__YES
               ? MHD_YES
               : MHD_NO;
}

/* The access log line of Kubernetes' httplog, at -v 2. */
static void log_access(struct ck__req *hreq, const struct request *req, unsigned code,
                       double seconds)
{
    char latency[32], resp[16], peer[INET6_ADDRSTRLEN + 8] = "";
    snprintf(latency, sizeof(latency), "%.3fms", seconds * 1e3);
    snprintf(resp, sizeof(resp), "%u", code);
    char ip[INET6_ADDRSTRLEN];
    unsigned port;
    if (ck__req_peer_address(hreq, ip, sizeof(ip), &port) == AF_INET)
        snprintf(peer, sizeof(peer), "%s:%u", ip, port);
    const char *agent = ck__req_header(hreq, "User-Agent");
    CK_LOGS(2, "HTTP", "verb", req->labels.verb, "URI", req->raw_uri ? req->raw_uri : "", "latency",
            latency, "userAgent", agent ? agent : "", "srcIP", peer, "resp", resp);
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
        if (ck_log_v(2))
            log_access(&req->http, req, status, seconds);
    }
    if (req->started)
        ck__conns_request_done(server->conns, conn);
    if (req->apf.seated || req->inflight >= 0) /* not run after all */
        flow_done(server, req);
    ck__apf_end(server->apf, &req->apf); /* a watch is no longer counted */
    ck__req_mhd_release(&req->http);     /* the connection ended before it was resumed */
    ck_auth_user_free(req->user);
    free(req->raw_uri);
    free(req->body);
    free(req);
    *req_cls = NULL;
}

/* A connection opened or closed: for authentication's state and for the bounds. */
static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
    struct ck_apiserver *server = cls;
    gnutls_session_t session = server->auth ? tls_session_of(conn) : NULL;
    if (session && toe == MHD_CONNECTION_NOTIFY_STARTED)
        gnutls_transport_set_pull_function(session, handshake_pull);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = ck__auth_conn_opened(server);
    } else {
        ck__auth_conn_closed(*socket_context);
        *socket_context = NULL;
    }
    ck__conns_notify(server->conns, conn, toe);
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
    snprintf(server->listen_host, sizeof(server->listen_host), "%s", host);
    return 0;
}

/*
 * Logs (at -v 1, at most once a tick) that connections were cut since the
 * last tick: the sign of a flood, or of clients too slow for the deadline.
 */
static void log_connection_cuts(struct ck_apiserver *server, struct ck__conns_stats *last)
{
    struct ck__conns_stats now;
    ck__conns_stats(server->conns, &now);
    if (now.evicted_for_deadline != last->evicted_for_deadline ||
        now.evicted_for_room != last->evicted_for_room || now.refused != last->refused) {
        char deadline[24], room[24], refused[24], admitted[16], reserve[16];
        snprintf(deadline, sizeof(deadline), "%lu",
                 now.evicted_for_deadline - last->evicted_for_deadline);
        snprintf(room, sizeof(room), "%lu", now.evicted_for_room - last->evicted_for_room);
        snprintf(refused, sizeof(refused), "%lu", now.refused - last->refused);
        snprintf(admitted, sizeof(admitted), "%u", now.admitted);
        snprintf(reserve, sizeof(reserve), "%u", now.in_reserve);
        CK_LOGS(1, "Connections cut", "headerDeadline", deadline, "forRoom", room, "refused",
                refused, "open", admitted, "inReserve", reserve);
    }
    *last = now;
}

static void *ticker_main(void *arg)
{
    struct ck_apiserver *server = arg;
    struct ck__conns_stats conn_stats = {0};
    unsigned ticks = 0;
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
        ck__conns_tick(server->conns);
        if (ck_log_v(1))
            log_connection_cuts(server, &conn_stats);
        if (++ticks % CK__APF_ENSURE_INTERVAL == 0)
            ck__apf_ensure(server->registry);
        ck__apf_tick(server->apf, monotonic_seconds());
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
    char api_version[CK_API_VERSION_MAX];
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

/*
 * Creates the system PriorityClasses kube-apiserver creates at start
 * (pkg/registry/scheduling/rest), when absent; not fatal, as there.
 */
static void bootstrap_priority_classes(struct ck_apiserver *server)
{
    static const struct {
        const char *name, *description;
        long long value;
    } classes[] = {
        {"system-node-critical",
         "Used for system critical pods that must not be moved from their current node.",
         2000001000LL},
        {"system-cluster-critical",
         "Used for system critical pods that must run in the cluster, but can be moved to "
         "another node if necessary.",
         2000000000LL},
    };
    const struct ck_kind *kind = ck_kind_with_role(CK_KIND_ROLE_PRIORITY_CLASS);
    char api_version[CK_API_VERSION_MAX];
    if (!kind)
        return;
    ck_kind_api_version(kind, api_version, sizeof(api_version));
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        json_t *pc = json_pack("{s:s, s:s, s:{s:s}, s:I, s:s}", "apiVersion", api_version, "kind",
                               kind->kind, "metadata", "name", classes[i].name, "value",
                               (json_int_t)classes[i].value, "description", classes[i].description);
        char *out = NULL;
        size_t len = 0;
        struct ck_err err = {0};
        int r = pc ? ck__registry_create(server->registry, kind, NULL, pc, false, &out, &len, &err)
                   : ck_err_no_memory(&err);
        json_decref(pc);
        free(out);
        if (r < 0 && r != CK_EEXIST)
            CK_LOGW("cannot create priority class %s: %s", classes[i].name, ck_err_message(&err));
        ck_err_release(&err);
    }
}

/*
 * Creates the local-path StorageClass k3s ships (its local-storage manifest: provisioner
 * rancher.io/local-path, WaitForFirstConsumer, reclaim Delete, the default class), when
 * absent; not fatal.
 */
static void bootstrap_local_storage_class(struct ck_apiserver *server)
{
    const struct ck_kind *kind = ck_kind_lookup("storage.k8s.io", "v1", "storageclasses");
    if (!kind)
        return;
    json_t *sc =
        json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s, s:s, s:s}", "apiVersion", "storage.k8s.io/v1",
                  "kind", "StorageClass", "metadata", "name", "local-path", "annotations",
                  "storageclass.kubernetes.io/is-default-class", "true", "provisioner",
                  "rancher.io/local-path", "reclaimPolicy", "Delete", "volumeBindingMode",
                  "WaitForFirstConsumer");
    char *out = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    int r = sc ? ck__registry_create(server->registry, kind, NULL, sc, false, &out, &len, &err)
               : ck_err_no_memory(&err);
    json_decref(sc);
    free(out);
    if (r < 0 && r != CK_EEXIST)
        CK_LOGW("cannot create storage class local-path: %s", ck_err_message(&err));
    ck_err_release(&err);
}

/* Frees what start built, in reverse order; safe on a partly built server. */
static void teardown(struct ck_apiserver *server)
{
    ck__aggregator_stop(server);             /* writes and reads the store */
    server->epr = ck__epr_stop(server->epr); /* writes: before anything else goes */
    if (server->ticker) {
        pthread_mutex_lock(&server->ticker_lock);
        server->ticker_stop = true;
        pthread_cond_signal(&server->ticker_wake);
        pthread_mutex_unlock(&server->ticker_lock);
        pthread_join(server->ticker, NULL);
    }
    ck__workers_stop(server->workers);
    server->apf = ck__apf_free(server->apf); /* no request left: the daemon is stopped */
    ck__workers_free(server->workers);
    server->ttl = ck__ttl_stop(server->ttl);
    server->policy_status = ck__policy_status_stop(server->policy_status);
    server->crds = ck__crd_stop(server->crds);
    server->conns = ck__conns_free(server->conns);
    if (server->registry) {
        ck__allocator_free(server->registry->allocator);
        ck__namespace_cache_free(server->registry->namespaces);
        ck__admission_cache_free(server->registry->admission_lists);
    }
    free(server->registry);
    ck__admission_chain_free(server->admission);
    ck__auth_free(server->auth);
    ck__kubelet_client_free(server);
    server->metrics_api = ck__metrics_api_free(server->metrics_api);
    ck__metrics_free(server->metrics);
    ck_fg_gate_free(server->own_gates);
    ck_store_close(server->store);
    if (server->listen_fd >= 0)
        close(server->listen_fd);
    pthread_mutex_destroy(&server->watches_lock);
    pthread_mutex_destroy(&server->ticker_lock);
    pthread_cond_destroy(&server->ticker_wake);
    free(server);
}

/*
 * libmicrohttpd's own connection limit, a backstop behind connections.c's
 * bounds: it divides it between its threads and refuses, without telling
 * us, a connection its thread has no room for, so it must stay out of the
 * way while the tracker has room: twice the tracker's bound (evicted
 * connections linger until their thread closes them, and threads are not
 * evenly loaded), and enough per thread for small bounds.
 */
static unsigned mhd_connection_limit(const struct ck__conn_limits *limits)
{
    unsigned limit = 2 * (limits->max_total + limits->reserve);
    return limit > HANDLER_THREADS * 64 ? limit : HANDLER_THREADS * 64;
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
    struct ck__conn_limits limits = {
        .max_total = config->max_connections ? config->max_connections : MAX_CONNECTIONS,
        .max_per_address = config->max_connections_per_address ? config->max_connections_per_address
                                                               : MAX_CONNECTIONS_PER_ADDRESS,
        .header_timeout = config->request_header_timeout ? config->request_header_timeout
                                                         : REQUEST_HEADER_TIMEOUT,
    };
    /* one percent, at least 8: enough for probes and a few reads at once */
    limits.reserve = limits.max_total / 100 > 8 ? limits.max_total / 100 : 8;
    server->conns = ck__conns_new(&limits);
    char host[256], port[16];
    int r = server->metrics && server->conns
                ? split_host_port(listen_addr, true, host, sizeof(host), port, sizeof(port), reterr)
                : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0)
        r = ck__auth_init(server, config, host, reterr);
    if (r == 0)
        r = ck__kubelet_client_init(server, config, reterr);
    if (r == 0 && !(server->metrics_api = ck__metrics_api_new()))
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    bool tls = server->auth != NULL;
    if (r == 0)
        r = bind_listen_socket(server, listen_addr, tls, reterr);
    if (r == 0 && !config->feature_gates) {
        r = ck_apiserver_feature_gate_new(NULL, &server->own_gates, reterr);
        if (r == 0)
            ck_fg_close(server->own_gates);
    }
    server->feature_gates = config->feature_gates ? config->feature_gates : server->own_gates;
    server->metrics_text = config->metrics_text;
    server->metrics_text_arg = config->metrics_text_arg;
    if (r == 0)
        r = ck__check_api_features(server->feature_gates, reterr);
    if (r == 0)
        ck_fg_log_startup(server->feature_gates);
    if (r == 0)
        r = ck_store_open(config->store_url, NULL, &server->store, reterr);
    if (r == 0)
        r = ck__encryption_wrap(config->encryption_provider_config, &server->store, reterr);
    if (r == 0)
        r = ck__shared_schemas(&server->schemas, reterr);
    if (r == 0) {
        server->registry = ck__calloc(1, sizeof(*server->registry));
        if (!server->registry)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        else
            *server->registry = (struct ck__registry){.store = server->store,
                                                      .schemas = server->schemas,
                                                      .feature_enabled = ck__feature_enabled,
                                                      .feature_ctx = server};
    }
    if (r == 0)
        r = ck__admission_chain_new(config->enable_admission_plugins,
                                    config->disable_admission_plugins, &server->admission, reterr);
    if (r == 0 && config->admission_control_config_file)
        r = ck__admission_chain_configure(server->admission, config->admission_control_config_file,
                                          reterr);

    if (r == 0)
        r = ck__allocator_new(
            server->store,
            config->service_cluster_ip_range ? config->service_cluster_ip_range : "10.96.0.0/12",
            config->service_node_port_range ? config->service_node_port_range : "30000-32767",
            &server->registry->allocator, reterr);
    if (r == 0 && ck_kind_with_role(CK_KIND_ROLE_NAMESPACE))
        r = ck__namespace_cache_start(server->store, ck_kind_with_role(CK_KIND_ROLE_NAMESPACE),
                                      &server->registry->namespaces, reterr);
    if (r == 0)
        r = ck__admission_cache_start(server->store, &server->registry->admission_lists, reterr);
    if (r == 0)
        r = bootstrap_namespaces(server, reterr);
    if (r == 0) {
        bootstrap_priority_classes(server);
        ck__apf_ensure(server->registry);
        unsigned reads = config->max_requests_inflight ? config->max_requests_inflight : 400;
        unsigned writes =
            config->max_mutating_requests_inflight ? config->max_mutating_requests_inflight : 200;
        server->inflight_limit[0] = reads;
        server->inflight_limit[1] = writes;
        if (!config->disable_priority_and_fairness) {
            server->apf = ck__apf_new(reads + writes);
            r = server->apf ? ck__apf_start(server->apf, server->registry, reterr)
                            : ck_err_no_memory(reterr);
        }
    }
    if (r == 0 && config->local_storage_class)
        bootstrap_local_storage_class(server);
    if (r == 0)
        r = ck__allocator_bootstrap(server->registry, ck_apiserver_port(server), reterr);
    if (r == 0)
        r = ck__auth_bootstrap(server, reterr);
    /*
     * The objects every cluster starts with are written before admission is in place,
     * so that no flag (AlwaysDeny) can keep the server from starting.
     */
    if (r == 0) {
        server->registry->admission = server->admission;
        server->registry->authorizer = ck__auth_authorizer(server->auth);
        ck__admission_chain_log(server->admission);
    }
    if (r == 0)
        r = ck__crd_start(server->registry, server->schemas, &server->crds, reterr);
    if (r == 0)
        r = ck__policy_status_start(server->registry, server->schemas, &server->policy_status,
                                    reterr);
    if (r == 0 && pthread_create(&server->ticker, NULL, ticker_main, server) != 0) {
        server->ticker = 0;
        r = ck_err_set(reterr, CK_EIO, "cannot start the watch ticker thread");
    }
    if (r == 0)
        r = ck__ttl_start(server->store, config->event_ttl, &server->ttl, reterr);
    char *ip = server->advertise;
    if (config->advertise_address)
        snprintf(ip, sizeof(server->advertise), "%s", config->advertise_address);
    else if (ck__epr_advertise_address(server->listen_host, ip, sizeof(server->advertise)) < 0)
        ip[0] = '\0';
    if (r == 0 && config->endpoint_reconciler) {
        if (!*ip)
            CK_LOGW("no address to advertise (no --advertise-address, no non-loopback IPv4 "
                    "interface): the kubernetes service lists no endpoints of this server");
        else
            r = ck__epr_start(server->registry, ip, ck_apiserver_port(server), &server->epr,
                              reterr);
    }
    if (r == 0 && !(server->workers = ck__workers_start(WRITE_WORKERS, reterr)))
        r = reterr->code;
    if (r == 0 && config->aggregator)
        r = ck__aggregator_start(
            server,
            config->proxy_client_cert_file ? config->proxy_client_cert_file
                                           : ck__auth_front_proxy_cert(server->auth, false),
            config->proxy_client_cert_file ? config->proxy_client_key_file
                                           : ck__auth_front_proxy_cert(server->auth, true),
            reterr);
    if (r < 0) {
        teardown(server);
        return r;
    }

    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG |
                         MHD_ALLOW_UPGRADE; /* pods/exec's WebSocket */
    /* TLS options come first; without TLS the list ends there (MHD_OPTION_ARRAY's end). */
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)ck__auth_cert_pem(server->auth)},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)ck__auth_key_pem(server->auth)},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES},
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)ck__auth_trust_pem(server->auth)},
        {MHD_OPTION_END, 0, NULL},
    };
    if (tls) {
        flags |= MHD_USE_TLS;
        if (!ck__auth_trust_pem(server->auth))
            tls_options[3].option = MHD_OPTION_END;
    } else {
        tls_options[0].option = MHD_OPTION_END;
    }
    server->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, access_handler, server, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_ARRAY, tls_options, MHD_OPTION_LISTEN_SOCKET, server->listen_fd,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60, MHD_OPTION_CONNECTION_LIMIT,
        mhd_connection_limit(&limits), MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)CONNECTION_MEMORY_BYTES, MHD_OPTION_THREAD_POOL_SIZE, HANDLER_THREADS,
        MHD_OPTION_URI_LOG_CALLBACK, request_begins, server, MHD_OPTION_NOTIFY_COMPLETED,
        request_completed, server, MHD_OPTION_NOTIFY_CONNECTION, notify_connection, server,
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

const char *ck_apiserver_advertise_address(const struct ck_apiserver *server)
{
    return server->advertise;
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
    ck__apf_stop(server->apf); /* every queued request answered 429, none queued from now on */
    ck__workers_stop(server->workers); /* every write in progress answered; later ones run here */
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
