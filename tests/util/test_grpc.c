/*
 * test_grpc.c - gRPC calls over h2c (lib/util/grpc.c) against a small HTTP/2
 * server of the test's own (nghttp2's server side, on a thread) listening on
 * TCP and on a unix socket: unary calls and their reuse of one connection, a
 * status with a percent-encoded message, a refused stream, an answer over many
 * DATA frames and one past the cap, a deadline, a server that closes, a
 * streaming call whose request side stays open, calls over unix:///path, and
 * the one-message check of a unary answer.
 *
 * The server's methods, by path: /t.S/Echo answers the request's bytes with
 * grpc-status 0; /t.S/Fail answers only trailers (grpc-status 5); /t.S/Refuse
 * resets the stream with REFUSED_STREAM; /t.S/Big answers 3 MiB; /t.S/Silent
 * never answers; /t.S/Close answers as Echo and then closes the connection;
 * /t.S/Stream answers each DATA chunk with the same bytes at once and ends
 * (grpc-status 0) after a message "end".
 */
#include <errno.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

#define BIG (3u << 20)

/* ---- the server ------------------------------------------------------------------- */

struct stream {
    int32_t id;
    char path[64];
    struct ck__buf in, out; /* request bytes; answer bytes not yet sent */
    size_t out_sent;
    bool ending;     /* the answer's data ends, then trailers */
    bool close_conn; /* the connection ends with the stream */
};

struct server {
    int listener, listener_unix;
    atomic_bool stop;
    pthread_t thread;
    nghttp2_session *session;
    int fd;
    bool close_after; /* a /t.S/Close stream closed: end the connection */
    struct stream streams[64];
};

static struct server srv;
static char endpoint[64];
static char unix_dir[64], unix_endpoint[128];

static struct stream *stream_of(int32_t id)
{
    for (size_t i = 0; i < sizeof(srv.streams) / sizeof(srv.streams[0]); i++)
        if (srv.streams[i].id == id)
            return &srv.streams[i];
    for (size_t i = 0; i < sizeof(srv.streams) / sizeof(srv.streams[0]); i++)
        if (srv.streams[i].id == 0) {
            memset(&srv.streams[i], 0, sizeof(srv.streams[i]));
            srv.streams[i].id = id;
            return &srv.streams[i];
        }
    return NULL;
}

static ssize_t s_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
    (void)s;
    (void)flags;
    (void)arg;
    ssize_t n = send(srv.fd, data, len, MSG_NOSIGNAL);
    return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int s_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                    const uint8_t *value, size_t vl, uint8_t flags, void *arg)
{
    (void)s;
    (void)flags;
    (void)arg;
    struct stream *st = stream_of(f->hd.stream_id);
    if (st && nl == 5 && memcmp(name, ":path", 5) == 0)
        snprintf(st->path, sizeof(st->path), "%.*s", (int)vl, (const char *)value);
    return 0;
}

static ssize_t s_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                      nghttp2_data_source *src, void *arg)
{
    (void)s;
    (void)src;
    (void)arg;
    struct stream *st = stream_of(id);
    size_t n = st->out.len - st->out_sent;
    if (n == 0 && !st->ending)
        return NGHTTP2_ERR_DEFERRED;
    if (n > len)
        n = len;
    memcpy(buf, st->out.p + st->out_sent, n);
    st->out_sent += n;
    if (st->out_sent == st->out.len && st->ending) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv trailers[] = {{(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, 0}};
        nghttp2_submit_trailer(srv.session, id, trailers, 1);
    }
    return (ssize_t)n;
}

static void answer_headers(int32_t id)
{
    nghttp2_nv h[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
                      {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0}};
    nghttp2_data_provider p = {.read_callback = s_read};
    nghttp2_submit_response(srv.session, id, h, 2, &p);
}

static int s_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                  void *arg)
{
    (void)s;
    (void)flags;
    (void)arg;
    struct stream *st = stream_of(id);
    ck__buf_add(&st->in, data, len);
    if (strcmp(st->path, "/t.S/Stream") == 0) { /* echo at once; "end" ends */
        ck__buf_add(&st->out, data, len);
        if (len >= 8 && memcmp(data + len - 3, "end", 3) == 0)
            st->ending = true;
        nghttp2_session_resume_data(srv.session, id);
    }
    return 0;
}

/* A whole request arrived (END_STREAM): answer by path. */
static void requested(struct stream *st)
{
    if (strcmp(st->path, "/t.S/Echo") == 0 || strcmp(st->path, "/t.S/Close") == 0) {
        ck__buf_add(&st->out, st->in.p, st->in.len);
        st->ending = true;
        answer_headers(st->id);
        st->close_conn = strcmp(st->path, "/t.S/Close") == 0;
    } else if (strcmp(st->path, "/t.S/Fail") == 0) {
        nghttp2_nv h[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
                          {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0},
                          {(uint8_t *)"grpc-status", (uint8_t *)"5", 11, 1, 0},
                          {(uint8_t *)"grpc-message", (uint8_t *)"not%20found%3A x", 12, 16, 0}};
        nghttp2_submit_response(srv.session, st->id, h, 4, NULL);
    } else if (strcmp(st->path, "/t.S/Refuse") == 0) {
        nghttp2_submit_rst_stream(srv.session, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_REFUSED_STREAM);
    } else if (strcmp(st->path, "/t.S/Big") == 0) {
        unsigned char prefix[5] = {0, (unsigned char)(BIG >> 24), (unsigned char)(BIG >> 16),
                                   (unsigned char)(BIG >> 8), (unsigned char)BIG};
        ck__buf_add(&st->out, prefix, 5);
        char *zeros = calloc(1, BIG);
        ck__buf_add(&st->out, zeros, BIG);
        free(zeros);
        st->ending = true;
        answer_headers(st->id);
    } /* /t.S/Silent: nothing */
}

static int s_frame(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    (void)s;
    (void)arg;
    struct stream *st = f->hd.stream_id ? stream_of(f->hd.stream_id) : NULL;
    if (!st)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && strcmp(st->path, "/t.S/Stream") == 0)
        answer_headers(st->id);
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
        (f->hd.flags & NGHTTP2_FLAG_END_STREAM) && strcmp(st->path, "/t.S/Stream") != 0)
        requested(st);
    return 0;
}

static int s_close(nghttp2_session *s, int32_t id, uint32_t code, void *arg)
{
    (void)s;
    (void)code;
    (void)arg;
    struct stream *st = stream_of(id);
    srv.close_after |= st->close_conn; /* all of its answer is sent */
    ck__buf_release(&st->in);
    ck__buf_release(&st->out);
    st->id = 0;
    return 0;
}

static void serve_connection(void)
{
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, s_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, s_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, s_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, s_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, s_close);
    nghttp2_session_server_new(&srv.session, cbs, NULL);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(srv.session, NGHTTP2_FLAG_NONE, NULL, 0);
    srv.close_after = false;
    unsigned char in[16384];
    while (!atomic_load(&srv.stop)) {
        if (nghttp2_session_send(srv.session) != 0 || srv.close_after)
            break;
        struct pollfd p = {.fd = srv.fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv(srv.fd, in, sizeof(in), 0);
        if (n <= 0 || nghttp2_session_mem_recv(srv.session, in, (size_t)n) < 0)
            break;
    }
    nghttp2_session_del(srv.session);
    for (size_t i = 0; i < sizeof(srv.streams) / sizeof(srv.streams[0]); i++) {
        ck__buf_release(&srv.streams[i].in);
        ck__buf_release(&srv.streams[i].out);
        srv.streams[i].id = 0;
    }
    /* an orderly close: what the client still sends (a window update) must not
     * turn it into a reset, which could drop the answer's last bytes */
    shutdown(srv.fd, SHUT_WR);
    struct pollfd p = {.fd = srv.fd, .events = POLLIN};
    while (poll(&p, 1, 1000) == 1 && recv(srv.fd, in, sizeof(in), 0) > 0)
        ;
    close(srv.fd);
}

static void *server_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&srv.stop)) {
        struct pollfd p[2] = {{.fd = srv.listener, .events = POLLIN},
                              {.fd = srv.listener_unix, .events = POLLIN}};
        if (poll(p, 2, 50) <= 0)
            continue;
        srv.fd = accept(p[0].revents ? srv.listener : srv.listener_unix, NULL, NULL);
        if (srv.fd >= 0)
            serve_connection();
    }
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    srv.listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (bind(srv.listener, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(srv.listener, 8) < 0 ||
        getsockname(srv.listener, (struct sockaddr *)&a, &al) < 0)
        return -1;
    snprintf(endpoint, sizeof(endpoint), "127.0.0.1:%u", ntohs(a.sin_port));
    /* a unix socket's path is at most 107 bytes: a long TMPDIR is passed over for /tmp */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || strlen(tmp) > 40)
        tmp = "/tmp";
    snprintf(unix_dir, sizeof(unix_dir), "%s/ckube-grpc-XXXXXX", tmp);
    if (!mkdtemp(unix_dir))
        return -1;
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    snprintf(u.sun_path, sizeof(u.sun_path), "%s/s.sock", unix_dir);
    snprintf(unix_endpoint, sizeof(unix_endpoint), "unix://%s", u.sun_path);
    srv.listener_unix = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(srv.listener_unix, (struct sockaddr *)&u, sizeof(u)) < 0 ||
        listen(srv.listener_unix, 8) < 0)
        return -1;
    return pthread_create(&srv.thread, NULL, server_main, NULL);
}

static int teardown(void **state)
{
    (void)state;
    atomic_store(&srv.stop, true);
    pthread_join(srv.thread, NULL);
    close(srv.listener);
    close(srv.listener_unix);
    char path[128];
    snprintf(path, sizeof(path), "%s/s.sock", unix_dir);
    unlink(path);
    rmdir(unix_dir);
    return 0;
}

/* ---- the client --------------------------------------------------------------------- */

static char why[256]; /* what the last call or run said */

/* A unary call whose answer is capped at max bytes. */
static int call(struct ck__grpc_conn *c, const char *path, const char *msg, size_t len,
                int timeout_ms, size_t max, struct ck__grpc_answer *a)
{
    *a = (struct ck__grpc_answer){.body = {.max = max}};
    return ck__grpc_call(c, path, msg, len, timeout_ms, a, why, sizeof(why));
}

static struct ck__grpc_conn *dial(void)
{
    struct ck__grpc_conn *c = NULL;
    assert_int_equal(ck__grpc_connect(endpoint, 1000, &c, why, sizeof(why)), 0);
    return c;
}

/* The one message of an answer's bytes. */
static void assert_message(const struct ck__buf *b, const char *want)
{
    size_t n = strlen(want);
    assert_int_equal(b->len, n + 5);
    assert_int_equal((unsigned char)b->p[4], n);
    assert_memory_equal(b->p + 5, want, n);
}

static void test_unary_calls_share_a_connection(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    for (int i = 0; i < 3; i++) { /* libcurl 7.88 failed the second of these */
        char msg[16];
        snprintf(msg, sizeof(msg), "hello %d", i);
        struct ck__grpc_answer a;
        assert_int_equal(call(c, "/t.S/Echo", msg, strlen(msg), 2000, 1 << 20, &a), 0);
        assert_true(a.status_seen);
        assert_int_equal(a.status, 0);
        assert_message(&a.body, msg);
        ck__buf_release(&a.body);
        assert_true(ck__grpc_usable(c));
    }
    ck__grpc_close(c);
}

static void test_status_and_message(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    struct ck__grpc_answer a;
    assert_int_equal(call(c, "/t.S/Fail", "x", 1, 2000, 1 << 20, &a), 0);
    assert_true(a.status_seen);
    assert_int_equal(a.status, 5);
    assert_string_equal(a.message, "not found: x");
    assert_int_equal(a.body.len, 0);
    assert_true(ck__grpc_usable(c)); /* a failed call is no broken connection */
    ck__grpc_close(c);
}

static void test_refused_stream(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    struct ck__grpc_answer a;
    assert_int_equal(call(c, "/t.S/Refuse", "x", 1, 2000, 1 << 20, &a), CK_EIO);
    assert_true(a.refused);
    assert_false(ck__grpc_usable(c));
    ck__grpc_close(c);
    struct ck__grpc_answer b;
    c = dial();
    assert_int_equal(call(c, "/t.S/Silent", "x", 1, 100, 1 << 20, &b), CK_EIO);
    assert_false(b.refused); /* a deadline says nothing of what the server did */
    ck__grpc_close(c);
}

static void test_large_answer_and_cap(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    struct ck__grpc_answer a;
    assert_int_equal(call(c, "/t.S/Big", "", 0, 5000, 8 << 20, &a), 0);
    assert_int_equal(a.status, 0);
    assert_int_equal(a.body.len, BIG + 5);
    ck__buf_release(&a.body);
    struct ck__grpc_answer b;
    assert_int_equal(call(c, "/t.S/Big", "", 0, 5000, 1 << 20, &b), CK_EIO);
    assert_string_equal(why, "answer too large");
    assert_false(ck__grpc_usable(c));
    ck__buf_release(&b.body);
    ck__grpc_close(c);
}

static void test_deadline(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct ck__grpc_answer a;
    assert_int_equal(call(c, "/t.S/Silent", "x", 1, 200, 1 << 20, &a), CK_EIO);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_string_equal(why, "timed out");
    assert_true(took >= 0.19 && took < 5);
    assert_false(ck__grpc_usable(c));
    ck__grpc_close(c);
}

static void test_closed_connections(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    struct ck__grpc_answer a;
    assert_int_equal(call(c, "/t.S/Close", "bye", 3, 2000, 1 << 20, &a), 0);
    assert_message(&a.body, "bye");
    ck__buf_release(&a.body);
    /* the server has closed it: an idle check sees so before a call is lost on it */
    bool usable = true;
    for (int i = 0; i < 100 && usable; i++) {
        usable = ck__grpc_usable(c);
        if (usable)
            usleep(10000);
    }
    assert_false(usable);
    ck__grpc_close(c);
    /* nobody listening */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(addr);
    assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&addr, &al), 0);
    close(s);
    char dead[64];
    snprintf(dead, sizeof(dead), "127.0.0.1:%u", ntohs(addr.sin_port));
    c = NULL;
    assert_int_equal(ck__grpc_connect(dead, 1000, &c, why, sizeof(why)), CK_EIO);
    assert_null(c);
}

struct received {
    struct ck__buf bytes;
};

static bool take(void *arg, const void *data, size_t len)
{
    struct received *r = arg;
    return ck__buf_add(&r->bytes, data, len) == 0;
}

/* Runs the stream until it has answered n bytes in all; the last run's result. */
static int run_until(struct ck__grpc_conn *c, struct received *r, size_t n)
{
    int ret = 1;
    for (int i = 0; i < 100 && ret == 1 && r->bytes.len < n; i++)
        ret = ck__grpc_stream_run(c, -1, 100, why, sizeof(why));
    return ret;
}

static void test_streaming_call(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = dial();
    struct received r = {0};
    struct ck__grpc_answer st = {0};
    assert_int_equal(
        ck__grpc_stream_open(c, "/t.S/Stream", "one", 3, take, &r, &st, why, sizeof(why)), 0);
    assert_int_equal(run_until(c, &r, 8), 1);
    assert_int_equal(r.bytes.len, 8);
    assert_memory_equal(r.bytes.p + 5, "one", 3);
    /* the request side is still open: a second message, and its answer */
    assert_int_equal(ck__grpc_stream_send(c, "two", 3), 0);
    assert_int_equal(run_until(c, &r, 16), 1);
    assert_memory_equal(r.bytes.p + 13, "two", 3);
    /* "end": the server ends the call with grpc-status 0 */
    assert_int_equal(ck__grpc_stream_send(c, "end", 3), 0);
    int ret = 1;
    for (int i = 0; i < 100 && ret == 1; i++)
        ret = ck__grpc_stream_run(c, -1, 100, why, sizeof(why));
    assert_int_equal(ret, 0);
    assert_true(st.status_seen);
    assert_int_equal(st.status, 0);
    assert_int_equal(r.bytes.len, 24);
    assert_int_equal(ck__grpc_stream_send(c, "late", 4), CK_EIO);
    ck__buf_release(&r.bytes);
    ck__grpc_close(c);
}

static void test_unix_socket(void **state)
{
    (void)state;
    struct ck__grpc_conn *c = NULL;
    assert_int_equal(ck__grpc_connect(unix_endpoint, 1000, &c, why, sizeof(why)), 0);
    for (int i = 0; i < 2; i++) {
        struct ck__grpc_answer a;
        assert_int_equal(call(c, "/t.S/Echo", "over unix", 9, 2000, 1 << 20, &a), 0);
        assert_int_equal(a.status, 0);
        assert_message(&a.body, "over unix");
        struct ck__pb_reader r;
        assert_true(ck__grpc_unary_message(&a.body, &r));
        assert_int_equal(r.end - r.p, 9);
        assert_memory_equal(r.p, "over unix", 9);
        ck__buf_release(&a.body);
    }
    struct ck__grpc_answer f;
    assert_int_equal(call(c, "/t.S/Fail", "x", 1, 2000, 1 << 20, &f), 0);
    assert_int_equal(f.status, 5);
    assert_string_equal(f.message, "not found: x");
    ck__grpc_close(c);
    /* a socket nobody serves: the error names it */
    char absent[160];
    snprintf(absent, sizeof(absent), "unix://%s/absent.sock", unix_dir);
    c = NULL;
    assert_int_equal(ck__grpc_connect(absent, 1000, &c, why, sizeof(why)), CK_EIO);
    assert_null(c);
    assert_non_null(strstr(why, "absent.sock"));
    assert_non_null(strstr(why, strerror(ENOENT)));
    assert_int_equal(ck__grpc_connect("unix://relative.sock", 1000, &c, why, sizeof(why)), CK_EIO);
    assert_null(c);
}

static void test_unary_message_framing(void **state)
{
    (void)state;
    struct ck__pb_reader r;
    struct ck__buf b = {0};
    assert_false(ck__grpc_unary_message(&b, &r)); /* no bytes */
    ck__buf_add(&b, "\0\0\0\0\2ab", 7);
    assert_true(ck__grpc_unary_message(&b, &r));
    assert_int_equal(r.end - r.p, 2);
    ck__buf_add(&b, "c", 1); /* a byte past the message */
    assert_false(ck__grpc_unary_message(&b, &r));
    b.len = 6; /* the message cut short */
    assert_false(ck__grpc_unary_message(&b, &r));
    b.len = 7;
    b.p[0] = 1; /* compressed: never asked for */
    assert_false(ck__grpc_unary_message(&b, &r));
    ck__buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_calls_share_a_connection),
        cmocka_unit_test(test_status_and_message),
        cmocka_unit_test(test_refused_stream),
        cmocka_unit_test(test_large_answer_and_cap),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_closed_connections),
        cmocka_unit_test(test_streaming_call),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_unary_message_framing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
