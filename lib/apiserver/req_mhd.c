/*
 * req_mhd.c - the request seam (req.h) over libmicrohttpd: reading a
 * request from its MHD_Connection and answering with MHD_Responses, the
 * way Go's net/http serves kube-apiserver's handlers (net/http/server.go's
 * Request and ResponseWriter).
 *
 * Every answer passes through queue(): the flow control headers of a
 * classified request go last (kube-apiserver's setResponseHeaders), and an
 * answer made while the request runs on a worker waits in the request until
 * the connection's own thread queues it (libmicrohttpd queues only from the
 * thread of a connection it called).
 *
 * libmicrohttpd's own allocations (the response object, its headers) are
 * outside our reach: when one fails the answer is CK__NO, and the
 * connection is closed.
 *
 * Threading: a request's calls on the thread serving it.
 *
 * Tested through the servers of tests/apiserver (test_handlers.c,
 * test_wire.c, test_alloc_fail.c) and the e2e tests.
 */
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "internal.h"
#include "req_mhd.h"

const char *ck__req_method(const struct ck__req *req)
{
    return req->method;
}

const char *ck__req_target(const struct ck__req *req)
{
    return req->target;
}

const char *ck__req_header(const struct ck__req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

struct visit {
    ck__req_field_fn fn;
    void *arg;
    bool empty_is_null; /* a query key without '=' */
    bool stopped;
};

static enum MHD_Result visit_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct visit *v = cls;
    if (!v->fn(v->arg, key, value || v->empty_is_null ? value : ""))
        return MHD_NO;
    return MHD_YES;
}

static size_t visit_values(const struct ck__req *req, enum MHD_ValueKind kind, ck__req_field_fn fn,
                           void *arg, bool empty_is_null)
{
    struct visit v = {fn, arg, empty_is_null, false};
    int n = MHD_get_connection_values(req->conn, kind, fn ? visit_field : NULL, fn ? &v : NULL);
    return n > 0 ? (size_t)n : 0;
}

size_t ck__req_headers(const struct ck__req *req, ck__req_field_fn fn, void *arg)
{
    return visit_values(req, MHD_HEADER_KIND, fn, arg, false);
}

const char *ck__req_query(const struct ck__req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

size_t ck__req_queries(const struct ck__req *req, ck__req_field_fn fn, void *arg)
{
    return visit_values(req, MHD_GET_ARGUMENT_KIND, fn, arg, true);
}

const char *ck__req_body(const struct ck__req *req, size_t *ret_len)
{
    *ret_len = req->len;
    return req->body;
}

static gnutls_session_t session_of(const struct ck__req *req)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return ci ? (gnutls_session_t)ci->tls_session : NULL;
}

bool ck__req_is_tls(const struct ck__req *req)
{
    return session_of(req) != NULL;
}

size_t ck__req_peer_cert(const struct ck__req *req, size_t i, const unsigned char **ret_der,
                         size_t *ret_len)
{
    gnutls_session_t session = session_of(req);
    unsigned n = 0;
    const gnutls_datum_t *certs = session ? gnutls_certificate_get_peers(session, &n) : NULL;
    if (!certs)
        return 0;
    if (i < n) {
        *ret_der = certs[i].data;
        *ret_len = certs[i].size;
    }
    return n;
}

bool ck__req_peer_verify(const struct ck__req *req)
{
    gnutls_session_t session = session_of(req);
    unsigned status = 0;
    return session && gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0;
}

int ck__req_peer_address(const struct ck__req *req, char *ip, size_t size, unsigned *ret_port)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    ip[0] = '\0';
    *ret_port = 0;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, (socklen_t)size);
        *ret_port = ntohs(in->sin_port);
        return AF_INET;
    }
    if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, (socklen_t)size);
        *ret_port = ntohs(in6->sin6_port);
        return AF_INET6;
    }
    return 0;
}

void *ck__req_conn_state(const struct ck__req *req)
{
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return sc ? sc->socket_context : NULL;
}

/* ---- answers --------------------------------------------------------------- */

/* The one place an answer is handed to libmicrohttpd (or kept for the connection's thread). */
static enum ck__res queue(struct ck__req *req, unsigned status, struct MHD_Response *resp)
{
    const struct ck__apf_ticket *flow = req->flow;
    if (flow && flow->classified) { /* kube-apiserver's setResponseHeaders */
        MHD_add_response_header(resp, "X-Kubernetes-PF-PriorityLevel-UID", flow->pl_uid);
        MHD_add_response_header(resp, "X-Kubernetes-PF-FlowSchema-UID", flow->fs_uid);
    }
    if (req->deferring) {
        if (req->deferred) { /* a second answer: libmicrohttpd would refuse it too */
            MHD_destroy_response(resp);
            return CK__NO;
        }
        req->deferred = resp;
        req->deferred_status = status;
        return CK__YES;
    }
    enum MHD_Result ret = MHD_queue_response(req->conn, status, resp);
    MHD_destroy_response(resp);
    return ret == MHD_YES ? CK__YES : CK__NO;
}

static enum ck__res respond_with(struct ck__req *req, unsigned status,
                                 const struct ck__header *headers, size_t n_headers,
                                 struct MHD_Response *resp)
{
    if (!resp)
        return CK__NO;
    for (size_t i = 0; i < n_headers; i++)
        MHD_add_response_header(resp, headers[i].name, headers[i].value);
    return queue(req, status, resp);
}

enum ck__res ck__respond(struct ck__req *req, unsigned status, const struct ck__header *headers,
                         size_t n_headers, char *body, size_t len)
{
    struct MHD_Response *resp =
        body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp)
        free(body);
    return respond_with(req, status, headers, n_headers, resp);
}

enum ck__res ck__respond_bytes(struct ck__req *req, unsigned status,
                               const struct ck__header *headers, size_t n_headers, const void *body,
                               size_t len)
{
    return respond_with(
        req, status, headers, n_headers,
        MHD_create_response_from_buffer(len, (void *)(len ? body : ""), MHD_RESPMEM_MUST_COPY));
}

enum ck__res ck__respond_static(struct ck__req *req, unsigned status,
                                const struct ck__header *headers, size_t n_headers,
                                const void *body, size_t len)
{
    return respond_with(
        req, status, headers, n_headers,
        MHD_create_response_from_buffer(len, (void *)(len ? body : ""), MHD_RESPMEM_PERSISTENT));
}

/* A body of pieces as libmicrohttpd reads it. */
struct pieces {
    const struct ck__piece *p;
    size_t n;
    void (*release)(void *);
    void *arg;
    size_t at, at_offset; /* the piece and byte the next read starts at */
    uint64_t at_position; /* and their position in the answer */
};

static void pieces_free(void *cls)
{
    struct pieces *b = cls;
    b->release(b->arg);
    free(b);
}

/*
 * libmicrohttpd's reader of a body of pieces: copies them from pos into buf,
 * one connection's buffer at a time. (A response from the pieces as an I/O
 * vector would copy nothing, but libmicrohttpd 0.9.75 keeps the vector in the
 * connection's memory pool, too small for thousands of pieces, and stalls
 * after sending its first 1,024 entries.)
 */
static ssize_t pieces_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct pieces *b = cls;
    if (pos != b->at_position) { /* not where the last read ended: find pos from the start */
        b->at = b->at_offset = 0;
        b->at_position = 0;
        while (b->at < b->n && b->at_position + b->p[b->at].len <= pos)
            b->at_position += b->p[b->at++].len;
        b->at_offset = (size_t)(pos - b->at_position);
        b->at_position = pos;
    }
    size_t n = 0;
    while (n < max && b->at < b->n) {
        const struct ck__piece *v = &b->p[b->at];
        size_t take = v->len - b->at_offset;
        if (take > max - n)
            take = max - n;
        memcpy(buf + n, (const char *)v->data + b->at_offset, take);
        n += take;
        b->at_offset += take;
        if (b->at_offset == v->len) {
            b->at++;
            b->at_offset = 0;
        }
    }
    b->at_position += n;
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

/* How much of a body of pieces libmicrohttpd asks for at a time. */
#define PIECES_READ_BLOCK (32u * 1024u)

enum ck__res ck__respond_pieces(struct ck__req *req, unsigned status,
                                const struct ck__header *headers, size_t n_headers,
                                const struct ck__piece *pieces, size_t n, void (*release)(void *),
                                void *arg)
{
    struct pieces *b = ck__calloc(1, sizeof(*b));
    if (!b) { /* ours to answer, unlike libmicrohttpd's own allocations below */
        release(arg);
        return ck__fail_no_memory(req);
    }
    *b = (struct pieces){.p = pieces, .n = n, .release = release, .arg = arg};
    uint64_t size = 0;
    for (size_t i = 0; i < n; i++)
        size += pieces[i].len;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(size, PIECES_READ_BLOCK, pieces_read, b, pieces_free);
    if (!resp) {
        pieces_free(b);
        return CK__NO;
    }
    return respond_with(req, status, headers, n_headers, resp);
}

/* ---- the transport's side -------------------------------------------------- */

enum ck__res ck__req_mhd_flush(struct ck__req *req, bool ok)
{
    struct MHD_Response *resp = req->deferred;
    req->deferred = NULL;
    req->deferring = false;
    if (!resp)
        return ok ? ck__fail_no_memory(req) : CK__NO;
    if (!ok) {
        MHD_destroy_response(resp);
        return CK__NO;
    }
    const struct ck__apf_ticket *flow = req->flow;
    req->flow = NULL; /* its headers are on it already */
    enum ck__res ret = queue(req, req->deferred_status, resp);
    req->flow = flow;
    return ret;
}

void ck__req_mhd_release(struct ck__req *req)
{
    if (req->deferred)
        MHD_destroy_response(req->deferred);
    req->deferred = NULL;
}

struct MHD_Connection *ck__req_mhd(const struct ck__req *req)
{
    return req->conn;
}

enum ck__res ck__req_mhd_queue(struct ck__req *req, unsigned status, struct MHD_Response *resp)
{
    if (!resp)
        return CK__NO;
    return queue(req, status, resp);
}
