/*
 * test_cri_stream.c - exec into a CRI container's relay (lib/agent/cri_stream.c) against a
 * streaming server of the test's own (a thread with wslay's server side): the upgrade
 * request (path, Host, Upgrade, the v4.channel.k8s.io subprotocol); a refused upgrade;
 * bytes of the WebSocket that came with the 101 answer; stdin and resize reaching the
 * server; output, a message over 64 KiB split into records, 6 MiB sent faster than it is
 * read arriving whole (the relay pushes back), and the server's Status; the
 * end of stdin closing the stream once the command is quiet, with a Status saying the exit
 * code is unknown (for an attach, the Success of an attach whose stdin ended); a server that ends
 * without a Status; an https URL refused; and the checks of the upgrade's answer.
 */
#define _GNU_SOURCE /* asprintf */
#include "cktest.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/exec_stream.h"

#define BIG   100000
#define FLOOD (6 * 1024 * 1024) /* more than the relay keeps pending: it must push back */
/* the server thread's checks (cmocka's asserts belong to the test's thread) */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: server: %s\n", __FILE__, __LINE__, #cond);                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The fake streaming server: one connection, then it ends. */
struct server {
    int listen_fd, fd;
    int port;
    const char *mode; /* "refuse", "serve", "quit" (ends without a Status) */
    char request[4096];
    char resize[128];
    bool got_close;
    bool close_after; /* close once nothing is queued */
    pthread_t thread;
};

static ssize_t srv_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                        void *user)
{
    (void)flags;
    struct server *s = user;
    ssize_t r = recv(s->fd, buf, len, 0);
    if (r <= 0) {
        wslay_event_set_error(ctx, r < 0 && errno == EAGAIN ? WSLAY_ERR_WOULDBLOCK
                                                            : WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

static ssize_t srv_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                        void *user)
{
    (void)flags;
    struct server *s = user;
    ssize_t r = send(s->fd, data, len, MSG_NOSIGNAL);
    if (r < 0) {
        wslay_event_set_error(ctx,
                              errno == EAGAIN ? WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return r;
}

static void srv_send_msg(wslay_event_context_ptr ctx, unsigned ch, const void *data, size_t n)
{
    unsigned char *m = malloc(n + 1);
    m[0] = (unsigned char)ch;
    memcpy(m + 1, data, n);
    struct wslay_event_msg msg = {WSLAY_BINARY_FRAME, m, n + 1};
    CHECK(wslay_event_queue_msg(ctx, &msg) == 0);
    free(m);
}

static void srv_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
                        void *user)
{
    struct server *s = user;
    if (m->opcode == WSLAY_CONNECTION_CLOSE) {
        s->got_close = true;
        return;
    }
    if (m->opcode != WSLAY_BINARY_FRAME || m->msg_length < 1)
        return;
    const char *data = (const char *)m->msg + 1;
    size_t n = m->msg_length - 1;
    if (m->msg[0] == CK_EXEC_RESIZE) {
        snprintf(s->resize, sizeof(s->resize), "%.*s", (int)n, data);
        return;
    }
    if (m->msg[0] != CK_EXEC_STDIN)
        return;
    if (n == 4 && memcmp(data, "big\n", 4) == 0) {
        char *big = malloc(BIG);
        memset(big, 'b', BIG);
        srv_send_msg(ctx, CK_EXEC_STDOUT, big, BIG);
        free(big);
    } else if (n == 6 && memcmp(data, "flood\n", 6) == 0) {
        char *chunk = malloc(64 * 1024);
        memset(chunk, 'f', 64 * 1024);
        for (size_t sent = 0; sent < FLOOD; sent += 64 * 1024)
            srv_send_msg(ctx, CK_EXEC_STDOUT, chunk, 64 * 1024);
        free(chunk);
    } else if (n == 5 && memcmp(data, "exit\n", 5) == 0) {
        if (strcmp(s->mode, "serve") == 0) {
            static const char st[] =
                "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"exit 7\",\"reason\":"
                "\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
                "\"message\":\"7\"}]}}";
            srv_send_msg(ctx, CK_EXEC_ERROR, st, strlen(st));
        }
        s->close_after = true; /* once the Status left: wslay sends a close ahead of data */
    } else {
        srv_send_msg(ctx, CK_EXEC_STDOUT, data, n); /* an echo on stdout, and on stderr */
        srv_send_msg(ctx, CK_EXEC_STDERR, data, n);
    }
}

static void *serve(void *arg)
{
    struct server *s = arg;
    s->fd = accept(s->listen_fd, NULL, NULL);
    CHECK(s->fd >= 0);
    size_t have = 0;
    while (!strstr(s->request, "\r\n\r\n") && have < sizeof(s->request) - 1) {
        ssize_t n = recv(s->fd, s->request + have, sizeof(s->request) - 1 - have, 0);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    if (strcmp(s->mode, "refuse") == 0) {
        static const char no[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        CHECK(send(s->fd, no, strlen(no), MSG_NOSIGNAL) == (ssize_t)strlen(no));
        close(s->fd);
        return NULL;
    }
    /* the 101 answer and, in the same write, the "connected" message: an empty stdout */
    static const char yes[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                              "Connection: Upgrade\r\nSec-WebSocket-Protocol: v4.channel.k8s.io"
                              "\r\n\r\n\x82\x01\x01";
    CHECK(send(s->fd, yes, sizeof(yes) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(yes) - 1);
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    struct wslay_event_callbacks cb = {srv_recv, srv_send, NULL, NULL, NULL, NULL, srv_message};
    wslay_event_context_ptr ctx;
    CHECK(wslay_event_context_server_init(&ctx, &cb, s) == 0);
    while (wslay_event_want_read(ctx) || wslay_event_want_write(ctx)) {
        if (s->close_after && wslay_event_get_queued_msg_count(ctx) == 0) {
            wslay_event_queue_close(ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
            s->close_after = false;
        }
        struct pollfd p = {s->fd, (short)(POLLIN | (wslay_event_want_write(ctx) ? POLLOUT : 0)), 0};
        if (poll(&p, 1, 10000) <= 0)
            break;
        if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && wslay_event_recv(ctx) != 0)
            break;
        if ((p.revents & POLLOUT) && wslay_event_send(ctx) != 0)
            break;
    }
    wslay_event_context_free(ctx);
    close(s->fd);
    return NULL;
}

static char *server_start(struct server *s, const char *mode)
{
    memset(s, 0, sizeof(*s));
    s->mode = mode;
    s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(s->listen_fd, 1), 0);
    socklen_t len = sizeof(a);
    getsockname(s->listen_fd, (struct sockaddr *)&a, &len);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
    char *url = NULL;
    assert_true(asprintf(&url, "http://127.0.0.1:%d/exec/tok3n?x=1", s->port) > 0);
    return url;
}

static void server_stop(struct server *s)
{
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
}

/* What came out: stdout, stderr, the Status, and the largest record. */
struct output {
    char *out, *err;
    size_t out_len, err_len, biggest;
    json_t *status;
    bool ended;
};

static struct ck__exec_frames frames;

/* Reads until the output holds want bytes of stdout, or the end (at most 10 s idle). */
static void read_until(struct ck__cri_stream *cs, struct output *o, size_t want)
{
    static char buf[70000];
    for (int idle = 0; idle < 10 && !o->ended && (want == 0 || o->out_len < want);) {
        ssize_t n = ck__cri_stream_read(cs, buf, sizeof(buf));
        if (n < 0) {
            o->ended = true;
            break;
        }
        if (n == 0) {
            idle++;
            continue;
        }
        assert_int_equal(ck__exec_frames_append(&frames, buf, (size_t)n), (size_t)n);
        unsigned ch;
        const unsigned char *p;
        size_t len;
        while (ck__exec_frames_next(&frames, &ch, &p, &len) > 0) {
            if (len > o->biggest)
                o->biggest = len;
            if (ch == CK_EXEC_ERROR) {
                assert_null(o->status);
                o->status = json_loadb((const char *)p, len, 0, NULL);
                assert_non_null(o->status);
                continue;
            }
            assert_true(ch == CK_EXEC_STDOUT || ch == CK_EXEC_STDERR);
            char **dst = ch == CK_EXEC_STDOUT ? &o->out : &o->err;
            size_t *dlen = ch == CK_EXEC_STDOUT ? &o->out_len : &o->err_len;
            *dst = realloc(*dst, *dlen + len + 1);
            memcpy(*dst + *dlen, p, len);
            *dlen += len;
            (*dst)[*dlen] = '\0';
        }
    }
}

static void output_release(struct output *o)
{
    free(o->out);
    free(o->err);
    json_decref(o->status);
    memset(o, 0, sizeof(*o));
    memset(&frames, 0, sizeof(frames));
}

static void input(struct ck__cri_stream *cs, unsigned ch, const char *data)
{
    ck__cri_stream_input(cs, ch, (const unsigned char *)data, strlen(data));
}

static void test_refused(void **state)
{
    (void)state;
    struct server s;
    char *url = server_start(&s, "refuse");
    struct ck__cri_stream *cs = NULL;
    char msg[256];
    assert_int_equal(ck__cri_stream_open(url, false, &cs, msg, sizeof(msg)), CK_EIO);
    assert_null(cs);
    assert_non_null(strstr(msg, "refused the upgrade: HTTP/1.1 404 Not Found"));
    server_stop(&s);
    /* the request: its path and query, Host, the upgrade and the subprotocol */
    char host[64];
    snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", s.port);
    assert_true(strncmp(s.request, "GET /exec/tok3n?x=1 HTTP/1.1\r\n", 30) == 0);
    assert_non_null(strstr(s.request, host));
    assert_non_null(strstr(s.request, "\r\nUpgrade: websocket\r\n"));
    assert_non_null(strstr(s.request, "\r\nConnection: Upgrade\r\n"));
    assert_non_null(strstr(s.request, "\r\nSec-WebSocket-Version: 13\r\n"));
    assert_non_null(strstr(s.request, "\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n"));
    assert_non_null(strstr(s.request, "\r\nSec-WebSocket-Key: "));
    free(url);
}

static void test_serve(void **state)
{
    (void)state;
    struct server s;
    char *url = server_start(&s, "serve");
    struct ck__cri_stream *cs = NULL;
    char msg[256];
    assert_int_equal(ck__cri_stream_open(url, false, &cs, msg, sizeof(msg)), 0);
    struct output o = {0};
    input(cs, CK_EXEC_STDIN, "hello\n");
    read_until(cs, &o, 6);
    assert_string_equal(o.out, "hello\n");
    input(cs, CK_EXEC_RESIZE, "{\"Width\":101,\"Height\":33}");
    input(cs, CK_EXEC_STDIN, "big\n");
    read_until(cs, &o, 6 + BIG);
    assert_int_equal(o.out_len, 6 + BIG);
    assert_true(o.biggest <= CK_EXEC_FRAME_MAX); /* one message, several records */
    for (size_t i = 6; i < o.out_len; i++)
        if (o.out[i] != 'b')
            fail_msg("byte %zu of the big message is %d", i, o.out[i]);
    /* output faster than it is taken: every byte arrives (the relay stops reading) */
    input(cs, CK_EXEC_STDIN, "flood\n");
    read_until(cs, &o, 6 + BIG + FLOOD);
    assert_int_equal(o.out_len, 6 + BIG + FLOOD);
    input(cs, CK_EXEC_STDIN, "exit\n");
    read_until(cs, &o, 0);
    assert_true(o.ended);
    assert_string_equal(o.err, "hello\n");
    assert_non_null(o.status); /* the server's, as it sent it */
    assert_string_equal(json_string_value(json_object_get(o.status, "reason")), "NonZeroExitCode");
    assert_int_equal(ck__cri_stream_read(cs, msg, sizeof(msg)), -1);
    server_stop(&s);
    assert_string_equal(s.resize, "{\"Width\":101,\"Height\":33}");
    ck__cri_stream_free(cs);
    output_release(&o);
    free(url);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The end of stdin closes the stream after a quiet second; exec's or attach's Status. */
static void stdin_end(bool attach)
{
    struct server s;
    char *url = server_start(&s, "serve");
    struct ck__cri_stream *cs = NULL;
    char msg[256];
    assert_int_equal(ck__cri_stream_open(url, false, &cs, msg, sizeof(msg)), 0);
    if (attach)
        ck__cri_stream_set_attach(cs);
    struct output o = {0};
    input(cs, CK_EXEC_STDIN, "hi\n");
    unsigned char close_stdin = CK_EXEC_STDIN;
    ck__cri_stream_input(cs, CK_EXEC_CLOSE, &close_stdin, 1);
    int64_t start = now_ms();
    read_until(cs, &o, 0);
    int64_t took = now_ms() - start;
    assert_true(o.ended);
    assert_string_equal(o.out, "hi\n"); /* what came before the close */
    assert_true(took >= 900);           /* a quiet second first */
    assert_non_null(o.status);
    if (attach) { /* as the runtime ends an attach whose stdin ended */
        assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Success");
    } else {
        assert_string_equal(json_string_value(json_object_get(o.status, "status")), "Failure");
        assert_non_null(
            strstr(json_string_value(json_object_get(o.status, "message")), "cannot end stdin"));
    }
    server_stop(&s);
    assert_true(s.got_close);
    ck__cri_stream_free(cs);
    output_release(&o);
    free(url);
}

static void test_stdin_end(void **state)
{
    (void)state;
    stdin_end(false);
}

static void test_stdin_end_of_an_attach(void **state)
{
    (void)state;
    stdin_end(true);
}

static void test_no_status(void **state)
{
    (void)state;
    struct server s;
    char *url = server_start(&s, "quit");
    struct ck__cri_stream *cs = NULL;
    char msg[256];
    assert_int_equal(ck__cri_stream_open(url, true, &cs, msg, sizeof(msg)), 0);
    struct output o = {0};
    input(cs, CK_EXEC_STDIN, "exit\n");
    read_until(cs, &o, 0);
    assert_true(o.ended);
    assert_non_null(o.status);
    assert_non_null(strstr(json_string_value(json_object_get(o.status, "message")),
                           "ended without the command's exit status"));
    server_stop(&s);
    ck__cri_stream_free(cs);
    output_release(&o);
    free(url);
}

static void test_bad_urls(void **state)
{
    (void)state;
    struct ck__cri_stream *cs = NULL;
    char msg[256];
    assert_int_equal(
        ck__cri_stream_open("https://127.0.0.1:1/exec/x", false, &cs, msg, sizeof(msg)), CK_EINVAL);
    assert_non_null(strstr(msg, "speaks https"));
    assert_int_equal(ck__cri_stream_open("http://127.0.0.1:1/exec/x", false, &cs, msg, sizeof(msg)),
                     CK_EIO);
    assert_non_null(strstr(msg, "cannot connect"));
    assert_null(cs);
}

static void test_upgrade_answer(void **state)
{
    (void)state;
    size_t len = 0;
    char msg[256];
    const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nxyz";
    for (size_t n = 0; n < sizeof(ok) - 4; n++) /* not yet: the headers have not ended */
        assert_int_equal(ck__ws_upgrade_answer(ok, n, &len, msg, sizeof(msg)), 0);
    assert_int_equal(ck__ws_upgrade_answer(ok, sizeof(ok) - 1, &len, msg, sizeof(msg)), 1);
    assert_int_equal(len, sizeof(ok) - 4);
    assert_int_equal(ck__ws_upgrade_answer("HTTP/1.1 101\r\n\r\n", 16, &len, msg, sizeof(msg)), 1);
    assert_int_equal(len, 16);
    const char *refused[] = {"HTTP/1.1 1010 x\r\n\r\n", "HTTP/1.0 101 x\r\n\r\n",
                             "HTTP/1.1 400 Bad Request\r\n\r\n", "\r\n\r\n", "HTTP/1.1 10\r\n\r\n"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_int_equal(
            ck__ws_upgrade_answer(refused[i], strlen(refused[i]), &len, msg, sizeof(msg)), CK_EIO);
        assert_non_null(strstr(msg, "refused the upgrade"));
    }
    static char huge[8192];
    memset(huge, 'h', sizeof(huge));
    assert_int_equal(ck__ws_upgrade_answer(huge, sizeof(huge), &len, msg, sizeof(msg)), CK_EIO);
    assert_non_null(strstr(msg, "over 8192 bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_stdin_end),
        cmocka_unit_test(test_no_status),
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_upgrade_answer),
        cmocka_unit_test(test_stdin_end_of_an_attach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
