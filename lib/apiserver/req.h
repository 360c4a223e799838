/*
 * req.h - the request seam of the API server: what a handler reads of the
 * request it serves and how it answers, whatever carries the request.
 *
 * Kubernetes' handlers see Go's *http.Request and http.ResponseWriter
 * (net/http); ckube's see a struct ck__req through these calls, shaped like
 * libckube-http's (ckube/http.h: ck_http_req_method/target/header/body,
 * is_tls, peer_cert, peer_address, ck_http_respond, ck_http_respond_bytes),
 * so that a transport is a thin mapping. Today's transport is libmicrohttpd
 * (req_mhd.c, the one file of the request path that calls it besides the
 * daemon's set-up in server.c); docs/internals/apiserver.md says what still
 * reaches past the seam (the streaming answers) and the interface the next
 * transport brings for them.
 *
 * A struct ck__req lives from the request's header to its end; its strings
 * are valid that long. A request is answered once: a second answer is
 * refused (CK__NO), as libmicrohttpd refuses it.
 *
 * Threading: a request's calls are made by the thread serving it (its
 * transport's thread, or a worker it was handed to).
 */
#ifndef CKUBE_APISERVER_REQ_H
#define CKUBE_APISERVER_REQ_H

#include <stdbool.h>
#include <stddef.h>

struct ck__req;

/*
 * What a handler returns: CK__YES when its answer was queued (or will be),
 * CK__NO when it could not be and the transport must drop the connection
 * (libmicrohttpd's MHD_NO; the values are its).
 */
enum ck__res {
    CK__NO = 0,
    CK__YES = 1,
};

/* A header field, of a request as received (several may have one name) or of an answer. */
struct ck__header {
    const char *name, *value;
};

/* ---- the request ----------------------------------------------------------- */

const char *ck__req_method(const struct ck__req *req);
/* The request target as the client sent it, still percent-encoded (NULL if it could not be kept).
 */
const char *ck__req_target(const struct ck__req *req);
/* The first header of that name (case-insensitive), or NULL. */
const char *ck__req_header(const struct ck__req *req, const char *name);

/*
 * Calls fn for each header field in the order received (value "" for an
 * empty one) until it returns false. Returns how many fields were visited;
 * fn NULL counts them.
 */
typedef bool (*ck__req_field_fn)(void *arg, const char *name, const char *value);
size_t ck__req_headers(const struct ck__req *req, ck__req_field_fn fn, void *arg);

/* The first query argument of that name (case-sensitive), percent-decoded, or NULL. */
const char *ck__req_query(const struct ck__req *req, const char *name);
/*
 * Calls fn for each query argument in order, decoded (value NULL for a key
 * without '='), until it returns false. Returns how many were visited.
 */
size_t ck__req_queries(const struct ck__req *req, ck__req_field_fn fn, void *arg);

/* The request's body as read (NUL-terminated; NULL when it has none). */
const char *ck__req_body(const struct ck__req *req, size_t *ret_len);

bool ck__req_is_tls(const struct ck__req *req);
/*
 * The client's certificate chain as the TLS handshake gave it, leaf first,
 * in DER: returns how many there are and sets *ret_der and *ret_len to the
 * i-th when i is below that. Not verified: see ck__req_peer_verify().
 */
size_t ck__req_peer_cert(const struct ck__req *req, size_t i, const unsigned char **ret_der,
                         size_t *ret_len);
/* Whether the chain verifies against the serving trust (--client-ca-file). */
bool ck__req_peer_verify(const struct ck__req *req);
/*
 * The client's address: its IP in ip[size] ("" when unknown) and its port;
 * returns the address family (AF_INET, AF_INET6) or 0.
 */
int ck__req_peer_address(const struct ck__req *req, char *ip, size_t size, unsigned *ret_port);
/*
 * The state the authenticator keeps for the request's connection across its
 * requests (its verified certificate: ck__auth_conn_opened), or NULL.
 */
void *ck__req_conn_state(const struct ck__req *req);

/* ---- answers --------------------------------------------------------------- */

/*
 * Answers with status, the headers in that order and the body (taken: freed
 * with free(), also on failure; NULL with len 0 is empty). The transport adds
 * Content-Length, Date and the flow control headers of a classified request
 * (X-Kubernetes-PF-*, after these).
 */
enum ck__res ck__respond(struct ck__req *req, unsigned status, const struct ck__header *headers,
                         size_t n_headers, char *body, size_t len);
/* The same with a body that is copied. */
enum ck__res ck__respond_bytes(struct ck__req *req, unsigned status,
                               const struct ck__header *headers, size_t n_headers, const void *body,
                               size_t len);
/* The same with a body that outlives the answer (a static one): neither copied nor freed. */
enum ck__res ck__respond_static(struct ck__req *req, unsigned status,
                                const struct ck__header *headers, size_t n_headers,
                                const void *body, size_t len);

/* One piece of a body made of borrowed pieces. */
struct ck__piece {
    const void *data;
    size_t len;
};

/*
 * Answers with a body that is the concatenation of pieces[0..n) (borrowed),
 * copied into the connection as it is sent; release(arg) runs once when the
 * answer is done with them (or was refused). pieces must stay valid until
 * then (they may live in arg).
 */
enum ck__res ck__respond_pieces(struct ck__req *req, unsigned status,
                                const struct ck__header *headers, size_t n_headers,
                                const struct ck__piece *pieces, size_t n, void (*release)(void *),
                                void *arg);

#endif /* CKUBE_APISERVER_REQ_H */
