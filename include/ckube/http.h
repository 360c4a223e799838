/*
 * ckube/http.h - libckube-http: an event-loop HTTP/1.1 and HTTP/2 server.
 *
 * The API server's next HTTP layer (kube-apiserver serves Go's net/http with
 * golang.org/x/net/http2): N loop threads, each owning the connections it
 * accepted (one listener a loop, SO_REUSEPORT), TLS through OpenSSL with ALPN
 * "h2" and "http/1.1", HTTP/2 with prior knowledge ("h2c") on a plain listener,
 * HTTP/1.1 keep-alive and chunked answers.
 *
 * A request reaches the caller once its headers and its whole body have been
 * read (the body capped: 413), on the loop thread that owns its connection.
 * The callback must not block: it answers at once or hands the request to
 * another thread, which answers later. Every answer call may be made from any
 * thread: it is queued to the owning loop, which is woken once for however
 * many answers wait (one queue a loop).
 *
 * A request is finished exactly once, by ck_http_respond() or, after
 * ck_http_stream_start(), by ck_http_stream_end(); until then the request
 * object stays valid even when its client has gone (the calls then do nothing
 * and the stream's close callback has said so).
 *
 * Streaming answers (watches) are chunks on HTTP/1.1 and DATA frames on
 * HTTP/2. Each write takes a reference to an immutable, refcounted
 * struct ck_http_buf; the bytes wait in no per-stream copy and go out by
 * reference (HTTP/1.1 chunks, HTTP/2 DATA frames of pieces from 1 KiB up),
 * copied only as they are sent: into the TLS record, one a flush. A stream counts the bytes
 * written to it and not yet handed to its connection: a writer sees the count
 * returned by ck_http_stream_write() (above the high-water mark: slow down and
 * wait for the writable callback) and a stream whose count passes the
 * configured maximum is ended by its loop, its queued bytes dropped, as
 * kube-apiserver ends a watch that cannot keep up.
 *
 * Broadcast: a struct ck_http_channel carries one watch's events to every
 * stream subscribed to it. ck_http_channel_publish() hands the buffer once to
 * each loop (one wake-up a loop), and the loop appends it to each of its
 * subscribed streams by reference.
 *
 * Threading: the server's calls are made by one controlling thread
 * (new/start/shutdown/free); the request, stream and channel calls from any
 * thread. Callbacks run on loop threads and must not block.
 */
#ifndef CKUBE_HTTP_H
#define CKUBE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ck_http_server;
struct ck_http_req;
struct ck_http_channel;

/* ---- buffers --------------------------------------------------------------- */

/* An immutable byte buffer shared by reference between threads and streams. */
struct ck_http_buf;

/* A buffer holding a copy of data[0..len); NULL when memory runs out. */
struct ck_http_buf *ck_http_buf_new(const void *data, size_t len);
/* A buffer that takes ownership of data (freed with free() by its last unref). */
struct ck_http_buf *ck_http_buf_take(void *data, size_t len);
struct ck_http_buf *ck_http_buf_ref(struct ck_http_buf *b);
/* Drops a reference; the last one frees the buffer. Returns NULL; NULL is a no-op. */
struct ck_http_buf *ck_http_buf_unref(struct ck_http_buf *b);
const void *ck_http_buf_data(const struct ck_http_buf *b);
size_t ck_http_buf_len(const struct ck_http_buf *b);

/* ---- the server ------------------------------------------------------------ */

struct ck_http_header {
    const char *name; /* any case on input; HTTP/2 sends it lowercased */
    const char *value;
};

/*
 * Called on the owning loop thread with a request whose body has been read.
 * The callback (or whoever it hands the request to) owns the duty to finish it.
 */
typedef void (*ck_http_request_cb)(struct ck_http_req *req, void *arg);

/*
 * The body of an answer the server makes itself (400, 413, 414, 431, 503 at
 * shutdown): set *ret_content_type (static) and return a buffer the server
 * takes, or NULL for the default, Go's net/http words ("431 Request Header
 * Fields Too Large"). Runs on a loop thread.
 */
typedef struct ck_http_buf *(*ck_http_error_cb)(int status, const char **ret_content_type,
                                                void *arg);

struct ck_http_config {
    const char *address; /* an IPv4 or IPv6 literal; NULL is 127.0.0.1 */
    uint16_t port;       /* 0 picks one: see ck_http_server_port() */
    int loops;           /* loop threads; 0 is the number of online CPUs */

    /* TLS when cert_file is set: ALPN h2 (unless disable_http2) and http/1.1. */
    const char *cert_file, *key_file;
    /*
     * Client certificates are always asked for and never required (Go's
     * tls.RequestClientCert). With client_ca_file set, a certificate that is
     * given must verify against it (tls.VerifyClientCertIfGiven).
     */
    const char *client_ca_file;
    bool disable_http2; /* kube-apiserver's --disable-http2-serving */

    /*
     * kube-apiserver's --http2-max-streams-per-connection: 0 is 100, the value
     * kube-apiserver gives for 0 (not x/net/http2's own 250).
     */
    uint32_t max_streams_per_connection;
    size_t max_header_bytes;   /* 0: 1 MiB, Go's http.Server.MaxHeaderBytes as kube sets it */
    size_t max_uri_bytes;      /* 0: 64 KiB; a longer request target is 414 */
    size_t max_body_bytes;     /* 0: 3 MiB + 1 KiB; a longer body is 413 */
    size_t stream_high_water;  /* 0: 256 KiB pending: writes report "would block" */
    size_t stream_max_pending; /* 0: 16 MiB pending: the stream is ended */
    /*
     * 0: 90 s, Go's IdleTimeout as kube-apiserver sets it. A connection that
     * sends nothing that long while no request of it is being answered (the
     * TLS handshake included) is closed; a watch being streamed is not idle.
     */
    int idle_timeout_ms;
    /*
     * 0: 32 s, Go's ReadHeaderTimeout as kube-apiserver sets it: bytes arriving
     * do not move this deadline. HTTP/1.1: the TLS handshake, then each
     * request's header block from its first byte (the first request's from the
     * handshake's end) must arrive within it. HTTP/2, as golang.org/x/net/http2
     * bounds it: the preface within 10 s of the protocol's start, a first
     * frame (SETTINGS) within 2 s of the preface; and, beyond Go (whose idle
     * timer alone cuts it, while no other stream is open), each request's
     * header block (HEADERS and its CONTINUATIONs) within this timeout. A
     * shorter timeout shortens the first two as well. At the deadline the connection is closed
     * without an answer, as Go's server does.
     */
    int read_header_timeout_ms;

    ck_http_request_cb on_request;
    ck_http_error_cb on_error; /* optional */
    void *arg;
};

/*
 * Makes a server and binds its listeners (one per loop, SO_REUSEPORT) without
 * serving yet. The process must ignore SIGPIPE (`ckube` does at start):
 * libevent and OpenSSL write to sockets with write(2), which raises it when a
 * client has gone. Returns 0 and sets *ret_srv, or a negative CK_E* code (CK_EINVAL
 * for an unreadable certificate or key, CK_EADDRINUSE) with *errbuf filled when
 * given.
 */
int ck_http_server_new(const struct ck_http_config *cfg, struct ck_http_server **ret_srv,
                       char *errbuf, size_t errlen);
/* The port the listeners are bound to. */
uint16_t ck_http_server_port(const struct ck_http_server *srv);
/* Starts the loop threads. */
int ck_http_server_start(struct ck_http_server *srv);
/*
 * Graceful shutdown: stops accepting, sends GOAWAY on HTTP/2 connections,
 * closes idle HTTP/1.1 connections and the rest once their answer is sent,
 * then waits up to timeout_ms for the connections to go before closing what
 * is left (open streams' close callbacks run). Returns once the loops stopped.
 */
void ck_http_server_shutdown(struct ck_http_server *srv, int timeout_ms);
/*
 * Shuts down (at once, if ck_http_server_shutdown() was not called) and frees.
 * Requests still held by the caller stay valid until finished. NULL is a no-op.
 */
struct ck_http_server *ck_http_server_free(struct ck_http_server *srv);

/* ---- requests (valid until finished) --------------------------------------- */

const char *ck_http_req_method(const struct ck_http_req *req);
/* The request target: path and query, as sent ("/api/v1/pods?watch=1"). */
const char *ck_http_req_target(const struct ck_http_req *req);
/* 1 for HTTP/1.x, 2 for HTTP/2. */
int ck_http_req_version(const struct ck_http_req *req);
/* The first header of that name (case-insensitive), or NULL. HTTP/2's :authority is "host". */
const char *ck_http_req_header(const struct ck_http_req *req, const char *name);
size_t ck_http_req_header_count(const struct ck_http_req *req);
const struct ck_http_header *ck_http_req_header_at(const struct ck_http_req *req, size_t i);
const void *ck_http_req_body(const struct ck_http_req *req, size_t *ret_len);
bool ck_http_req_is_tls(const struct ck_http_req *req);
/*
 * The client's certificate chain as the TLS handshake gave it, leaf first, in
 * DER: returns how many certificates there are and sets *ret_der and *ret_len to
 * the i-th when i is below that. Verified against client_ca_file when one was
 * configured; otherwise unverified (the caller's authenticator verifies).
 */
size_t ck_http_req_peer_cert(const struct ck_http_req *req, size_t i, const unsigned char **ret_der,
                             size_t *ret_len);
/* The client's address as "ip:port". */
const char *ck_http_req_peer_address(const struct ck_http_req *req);

/* ---- answers (any thread) -------------------------------------------------- */

/*
 * Answers the request with status, headers and body (a reference is taken;
 * NULL is empty) and finishes it. Content-Length is the server's to add.
 */
void ck_http_respond(struct ck_http_req *req, int status, const struct ck_http_header *headers,
                     size_t nheaders, struct ck_http_buf *body);
/* The same, with a copy of a small body. */
void ck_http_respond_bytes(struct ck_http_req *req, int status,
                           const struct ck_http_header *headers, size_t nheaders, const void *body,
                           size_t len);

/*
 * Called on the owning loop when the stream's pending bytes fall to half the
 * high-water mark after a write saw them above it, and once when the stream
 * closes (closed true: the client went, the stream fell too far behind, or the
 * server shut down); after that, writes return -EPIPE.
 */
typedef void (*ck_http_stream_cb)(struct ck_http_req *req, bool closed, void *arg);

/* Sends status and headers of a streaming answer (chunked on HTTP/1.1). */
void ck_http_stream_start(struct ck_http_req *req, int status, const struct ck_http_header *headers,
                          size_t nheaders, ck_http_stream_cb cb, void *arg);
/*
 * Queues a reference to b as the next piece of the answer. Returns the
 * stream's pending bytes after it (compare with the high-water mark: above it,
 * wait for the callback) or -EPIPE once the stream has closed.
 */
long ck_http_stream_write(struct ck_http_req *req, struct ck_http_buf *b);
/* Whether pending bytes are above the high-water mark (a write would add to a backlog). */
bool ck_http_stream_would_block(const struct ck_http_req *req);
size_t ck_http_stream_pending(const struct ck_http_req *req);
/* Ends the answer once queued bytes are sent, and finishes the request. */
void ck_http_stream_end(struct ck_http_req *req);

/*
 * Bytes the client sent on an upgraded connection, on the owning loop; data
 * is valid during the call only. arg is the one given to ck_http_upgrade().
 */
typedef void (*ck_http_data_cb)(struct ck_http_req *req, const void *data, size_t len, void *arg);

/*
 * HTTP/1.1's upgrade (WebSocket, SPDY for exec and port-forward): answers
 * "101 Switching Protocols" with headers (Upgrade and Connection are the
 * caller's to give) and makes the connection a byte stream both ways:
 * ck_http_stream_write() sends bytes as they are, on_data gets the client's
 * (those that came right after the request first), cb reports writable and
 * closed as for a stream, and ck_http_stream_end() closes the connection once
 * the queued bytes are sent. On HTTP/2, which has no upgrade, the request is
 * answered 400 instead and cb runs with closed; the request is still finished
 * with ck_http_stream_end().
 */
void ck_http_upgrade(struct ck_http_req *req, const struct ck_http_header *headers, size_t nheaders,
                     ck_http_data_cb on_data, ck_http_stream_cb cb, void *arg);

/* ---- broadcast ------------------------------------------------------------- */

/* A channel of srv's loops; published to only while srv exists. NULL when memory runs out. */
struct ck_http_channel *ck_http_channel_new(struct ck_http_server *srv);
struct ck_http_channel *ck_http_channel_ref(struct ck_http_channel *ch);
struct ck_http_channel *ck_http_channel_unref(struct ck_http_channel *ch);
/*
 * Subscribes a started stream: every buffer published after the subscription
 * reaches its loop is appended to it, in publication order. A stream is in at
 * most one channel; it leaves when it closes or ends.
 */
void ck_http_stream_subscribe(struct ck_http_req *req, struct ck_http_channel *ch);
/* Appends b to every subscribed stream of every loop: one hand-over a loop. */
int ck_http_channel_publish(struct ck_http_channel *ch, struct ck_http_buf *b);

#endif /* CKUBE_HTTP_H */
