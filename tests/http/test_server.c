/*
 * test_server.c - libckube-http (lib/http/server.c) against real clients:
 * libcurl for HTTP/1.1 keep-alive, chunked streaming, HTTP/2 over TLS with
 * ALPN, h2c with prior knowledge (one request a connection: libcurl 7.88
 * fails a second request on a reused prior-knowledge connection) and many
 * streams on one HTTP/2 connection; raw sockets for malformed requests and a
 * reader that never reads.
 *
 * The test's handler, by path: /hello answers at once; /echo answers the
 * body; /thread answers from a thread of its own; /stream?n=N&size=S writes
 * N chunks of S bytes from a thread that waits for the writable callback
 * whenever a write finds the stream above its high-water mark; /watch keeps
 * the answer open and subscribes it to the test's channel; /cert answers the
 * protocol version and how many client certificates came.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ckube/http.h"
#include "ckube/internal/util.h"
#include "ckube/util.h"

#define MAX_WATCH 256

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct ck_http_channel *ch;
    struct ck_http_req *watches[MAX_WATCH];
    int nwatch;
    int closed;         /* watches whose close callback ran */
    pthread_t loops[8]; /* distinct loop threads that saw a /watch */
    int nloops;
    char dir[64];
    char ca[96], cert[96], key[96], client_cert[96], client_key[96], rogue_cert[96], rogue_key[96];
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static const struct ck_http_header text_plain[] = {{"Content-Type", "text/plain"}};

/* ---- certificates, made with OpenSSL into a temporary directory ----------- */

static EVP_PKEY *make_key(void)
{
    EVP_PKEY *k = EVP_EC_gen("P-256");
    assert_non_null(k);
    return k;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, bool ca,
                       bool server)
{
    X509 *x = X509_new();
    assert_non_null(x);
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), rand() & 0xffff);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints,
                                              ca ? "critical,CA:TRUE" : "CA:FALSE");
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    if (server) {
        ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
        X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
    }
    assert_true(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) > 0);
    return x;
}

static void write_pem(const char *path, X509 *x, EVP_PKEY *k)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    if (x)
        PEM_write_X509(f, x);
    if (k)
        PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
}

static void make_pki(void)
{
    strcpy(T.dir, "/tmp/ckube-http-test.XXXXXX");
    assert_non_null(mkdtemp(T.dir));
    snprintf(T.ca, sizeof T.ca, "%s/ca.crt", T.dir);
    snprintf(T.cert, sizeof T.cert, "%s/server.crt", T.dir);
    snprintf(T.key, sizeof T.key, "%s/server.key", T.dir);
    snprintf(T.client_cert, sizeof T.client_cert, "%s/client.crt", T.dir);
    snprintf(T.client_key, sizeof T.client_key, "%s/client.key", T.dir);
    snprintf(T.rogue_cert, sizeof T.rogue_cert, "%s/rogue.crt", T.dir);
    snprintf(T.rogue_key, sizeof T.rogue_key, "%s/rogue.key", T.dir);
    EVP_PKEY *cak = make_key(), *sk = make_key(), *ck = make_key(), *rk = make_key();
    X509 *rogue = make_cert(rk, "mallory", NULL, NULL, false, false); /* signed by itself */
    write_pem(T.rogue_cert, rogue, NULL);
    write_pem(T.rogue_key, NULL, rk);
    X509_free(rogue);
    EVP_PKEY_free(rk);
    X509 *ca = make_cert(cak, "test-ca", NULL, NULL, true, false);
    X509 *srv = make_cert(sk, "localhost", ca, cak, false, true);
    X509 *cli = make_cert(ck, "alice", ca, cak, false, false);
    write_pem(T.ca, ca, NULL);
    write_pem(T.cert, srv, NULL);
    write_pem(T.key, NULL, sk);
    write_pem(T.client_cert, cli, NULL);
    write_pem(T.client_key, NULL, ck);
    X509_free(ca);
    X509_free(srv);
    X509_free(cli);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(sk);
    EVP_PKEY_free(ck);
}

static void remove_pki(void)
{
    const char *files[] = {T.ca,         T.cert,       T.key,      T.client_cert,
                           T.client_key, T.rogue_cert, T.rogue_key};
    for (size_t i = 0; i < 7; i++)
        unlink(files[i]);
    rmdir(T.dir);
}

/* ---- the handler ---------------------------------------------------------------- */

static void *answer_later(void *arg)
{
    struct ck_http_req *req = arg;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    ck_http_respond_bytes(req, 200, text_plain, 1, "from a thread", 13);
    return NULL;
}

static atomic_int writer_waits; /* how often writers waited for the writable callback */

struct writer {
    struct ck_http_req *req;
    int n;
    size_t size;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool writable, closed;
    int waits;       /* times the writer waited for the callback */
    atomic_int refs; /* the writer thread's and the close callback's */
};

static void writer_unref(struct writer *w)
{
    if (atomic_fetch_sub(&w->refs, 1) == 1) {
        atomic_fetch_add(&writer_waits, w->waits);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
    }
}

static void writer_cb(struct ck_http_req *req, bool closed, void *arg)
{
    struct writer *w = arg;
    (void)req;
    pthread_mutex_lock(&w->lock);
    w->writable = true;
    w->closed |= closed;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (closed)
        writer_unref(w);
}

static void *write_stream(void *arg)
{
    struct writer *w = arg;
    char *chunk = malloc(w->size);
    for (int i = 0; i < w->n; i++) {
        memset(chunk, 'a' + i % 26, w->size);
        struct ck_http_buf *b = ck_http_buf_new(chunk, w->size);
        pthread_mutex_lock(&w->lock);
        w->writable = false;
        pthread_mutex_unlock(&w->lock);
        ck_http_stream_write(w->req, b);
        ck_http_buf_unref(b);
        if (ck_http_stream_would_block(w->req)) {
            pthread_mutex_lock(&w->lock);
            w->waits++;
            while (!w->writable && !w->closed && ck_http_stream_would_block(w->req))
                pthread_cond_wait(&w->cond, &w->lock);
            pthread_mutex_unlock(&w->lock);
        }
    }
    free(chunk);
    ck_http_stream_end(w->req);
    writer_unref(w);
    return NULL;
}

static void watch_cb(struct ck_http_req *req, bool closed, void *arg)
{
    (void)arg;
    if (!closed)
        return;
    pthread_mutex_lock(&T.lock);
    for (int i = 0; i < T.nwatch; i++)
        if (T.watches[i] == req) {
            T.watches[i] = T.watches[--T.nwatch];
            T.closed++;
            ck_http_stream_end(req);
            break;
        }
    pthread_cond_broadcast(&T.cond);
    pthread_mutex_unlock(&T.lock);
}

/* /upgrade: "echo" upper-cases what the client sends until it sends "bye" */
struct echo {
    bool ended;
};

static void echo_data(struct ck_http_req *req, const void *data, size_t len, void *arg)
{
    struct echo *e = arg;
    char *up = malloc(len);
    for (size_t i = 0; i < len; i++)
        up[i] = (char)toupper(((const unsigned char *)data)[i]);
    struct ck_http_buf *b = ck_http_buf_take(up, len);
    assert_true(ck_http_stream_write(req, b) >= 0);
    ck_http_buf_unref(b);
    if (!e->ended && memmem(data, len, "bye", 3)) {
        e->ended = true;
        ck_http_stream_end(req);
    }
}

static void echo_closed(struct ck_http_req *req, bool closed, void *arg)
{
    struct echo *e = arg;
    (void)req;
    if (!closed)
        return;
    if (!e->ended) /* the client went first */
        ck_http_stream_end(req);
    free(e);
}

static void on_request(struct ck_http_req *req, void *arg)
{
    const char *t = ck_http_req_target(req);
    pthread_t th;
    (void)arg;
    if (strcmp(t, "/hello") == 0) {
        ck_http_respond_bytes(req, 200, text_plain, 1, "hello", 5);
    } else if (strcmp(t, "/echo") == 0) {
        size_t len;
        const void *body = ck_http_req_body(req, &len);
        ck_http_respond_bytes(req, 200, text_plain, 1, body, len);
    } else if (strcmp(t, "/thread") == 0) {
        assert_int_equal(pthread_create(&th, NULL, answer_later, req), 0);
        pthread_detach(th);
    } else if (strncmp(t, "/stream?", 8) == 0) {
        struct writer *w = calloc(1, sizeof *w);
        w->req = req;
        assert_int_equal(sscanf(t, "/stream?n=%d&size=%zu", &w->n, &w->size), 2);
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        atomic_init(&w->refs, 2);
        ck_http_stream_start(req, 200, text_plain, 1, writer_cb, w);
        assert_int_equal(pthread_create(&th, NULL, write_stream, w), 0);
        pthread_detach(th);
    } else if (strcmp(t, "/watch") == 0) {
        pthread_mutex_lock(&T.lock);
        bool known = false;
        for (int i = 0; i < T.nloops; i++)
            known |= pthread_equal(T.loops[i], pthread_self());
        if (!known && T.nloops < 8)
            T.loops[T.nloops++] = pthread_self();
        T.watches[T.nwatch++] = req;
        ck_http_stream_start(req, 200, text_plain, 1, watch_cb, NULL);
        ck_http_stream_subscribe(req, T.ch);
        pthread_cond_broadcast(&T.cond);
        pthread_mutex_unlock(&T.lock);
    } else if (strcmp(t, "/upgrade") == 0) {
        static const struct ck_http_header up[] = {{"Connection", "Upgrade"}, {"Upgrade", "echo"}};
        ck_http_upgrade(req, up, 2, echo_data, echo_closed, calloc(1, sizeof(struct echo)));
    } else if (strcmp(t, "/cert") == 0) {
        char out[128], cn[64] = "-";
        const unsigned char *der = NULL;
        size_t len = 0;
        /* the leaf first (the client may send its CA after it) */
        if (ck_http_req_peer_cert(req, 0, &der, &len) > 0) {
            X509 *x = d2i_X509(NULL, &der, (long)len);
            assert_non_null(x);
            X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
            X509_free(x);
        }
        int k = snprintf(out, sizeof out, "%d %s %s", ck_http_req_version(req), cn,
                         ck_http_req_is_tls(req) ? "tls" : "plain");
        ck_http_respond_bytes(req, 200, text_plain, 1, out, (size_t)k);
    } else {
        ck_http_respond_bytes(req, 404, text_plain, 1, "not found", 9);
    }
}

/* ---- servers and clients ------------------------------------------------------ */

static struct ck_http_server *start(struct ck_http_config *cfg)
{
    struct ck_http_server *srv = NULL;
    char err[256] = "";
    cfg->on_request = on_request;
    int rv = ck_http_server_new(cfg, &srv, err, sizeof err);
    if (rv)
        fail_msg("ck_http_server_new: %d %s", rv, err);
    T.ch = ck_http_channel_new(srv);
    T.nwatch = T.closed = T.nloops = 0;
    assert_int_equal(ck_http_server_start(srv), 0);
    return srv;
}

static void stop(struct ck_http_server *srv)
{
    ck_http_server_shutdown(srv, 200);
    ck_http_server_free(srv);
    T.ch = ck_http_channel_unref(T.ch);
}

struct body {
    char *data;
    size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
    struct body *b = arg;
    b->data = realloc(b->data, b->len + size * n + 1);
    memcpy(b->data + b->len, p, size * n);
    b->len += size * n;
    b->data[b->len] = 0;
    return size * n;
}

static CURL *easy(const char *url, struct body *b)
{
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(e, CURLOPT_CAINFO, T.ca);
    if (getenv("HTTP_TEST_VERBOSE"))
        curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
    return e;
}

static long get(CURL *e)
{
    long status = 0;
    CURLcode rc = curl_easy_perform(e);
    if (rc != CURLE_OK)
        fail_msg("curl: %s", curl_easy_strerror(rc));
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

/* get() over HTTP/2 (ALPN h2), checked to have been HTTP/2. */
static long get_h2(CURL *e)
{
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    long status = get(e), version = 0;
    curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
    assert_int_equal(version, CURL_HTTP_VERSION_2_0);
    return status;
}

/* A TCP connection to the server on loopback; rcvbuf > 0 shrinks its receive buffer first. */
static int connect_local(uint16_t port, int rcvbuf)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* A raw client: sends req, returns what came back until the server closed (or 5 s). */
static char *raw(uint16_t port, const char *req, size_t len)
{
    int fd = connect_local(port, 0);
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* the server may answer and close before reading it all */
        off += (size_t)n;
    }
    struct body b = {0};
    char buf[4096];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, 5000) == 1) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        collect(buf, 1, (size_t)n, &b);
    }
    close(fd);
    return b.data ? b.data : strdup("");
}

/* ---- tests ----------------------------------------------------------------------- */

static void test_h1_keepalive_and_chunked_stream(void **state)
{
    struct ck_http_config cfg = {.loops = 2, .stream_high_water = 64 << 10};
    struct ck_http_server *srv = start(&cfg);
    char url[128];
    struct body b = {0};
    (void)state;
    snprintf(url, sizeof url, "http://127.0.0.1:%u/hello", ck_http_server_port(srv));
    CURL *e = easy(url, &b);
    assert_int_equal(get(e), 200);
    assert_string_equal(b.data, "hello");
    b.len = 0;
    assert_int_equal(get(e), 200); /* the same connection */
    long connects = -1;
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    assert_int_equal(connects, 0);
    assert_string_equal(b.data, "hello");

    /* 200 chunks of 16 KiB through a 64 KiB high-water mark: the writer waits */
    snprintf(url, sizeof url, "http://127.0.0.1:%u/stream?n=200&size=16384",
             ck_http_server_port(srv));
    curl_easy_setopt(e, CURLOPT_URL, url);
    b.len = 0;
    assert_int_equal(get(e), 200);
    assert_int_equal(b.len, 200 * 16384);
    for (int i = 0; i < 200; i++)
        assert_int_equal(b.data[i * 16384 + 100], 'a' + i % 26);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    assert_int_equal(connects, 0); /* still the same connection after a chunked answer */
    assert_true(atomic_load(&writer_waits) > 0);

    /* HTTP/1.0 has no chunks: the stream ends with the connection */
    const char req10[] = "GET /stream?n=3&size=4 HTTP/1.0\r\n\r\n";
    char *answer = raw(ck_http_server_port(srv), req10, sizeof req10 - 1);
    assert_non_null(strstr(answer, "\r\n\r\naaaabbbbcccc"));
    assert_null(strstr(answer, "chunked"));
    free(answer);

    /* a body echoed */
    snprintf(url, sizeof url, "http://127.0.0.1:%u/echo", ck_http_server_port(srv));
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "{\"kind\":\"Pod\"}");
    b.len = 0;
    assert_int_equal(get(e), 200);
    assert_string_equal(b.data, "{\"kind\":\"Pod\"}");

    /* a body of 64 KiB: libcurl asks "Expect: 100-continue" and waits for the 100 */
    char *big = malloc(64 << 10);
    memset(big, 'p', 64 << 10);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 64L << 10);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, big);
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 20000L); /* a 100 not sent: 20 s */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    b.len = 0;
    assert_int_equal(get(e), 200);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(b.len, 64 << 10);
    assert_memory_equal(b.data, big, 64 << 10);
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    free(big);
    curl_easy_cleanup(e);
    free(b.data);
    stop(srv);
}

static void test_h2_tls_alpn_and_client_cert(void **state)
{
    struct ck_http_config cfg = {
        .loops = 2, .cert_file = T.cert, .key_file = T.key, .client_ca_file = T.ca};
    struct ck_http_server *srv = start(&cfg);
    char url[128];
    struct body b = {0};
    (void)state;
    snprintf(url, sizeof url, "https://localhost:%u/cert", ck_http_server_port(srv));
    CURL *e = easy(url, &b);
    assert_int_equal(get_h2(e), 200);
    assert_string_equal(b.data, "2 - tls");
    curl_easy_cleanup(e);

    /* with a client certificate: the request sees its DER */
    b.len = 0;
    e = easy(url, &b);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_SSLCERT, T.client_cert);
    curl_easy_setopt(e, CURLOPT_SSLKEY, T.client_key);
    assert_int_equal(get(e), 200);
    assert_string_equal(b.data, "2 alice tls");
    curl_easy_cleanup(e);

    /* a certificate the client CA did not sign fails the handshake */
    e = easy(url, &b);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_SSLCERT, T.rogue_cert);
    curl_easy_setopt(e, CURLOPT_SSLKEY, T.rogue_key);
    assert_int_not_equal(curl_easy_perform(e), CURLE_OK);
    curl_easy_cleanup(e);

    /* HTTP/1.1 over TLS when the client offers only it */
    b.len = 0;
    e = easy(url, &b);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    assert_int_equal(get(e), 200);
    assert_string_equal(b.data, "1 - tls");
    curl_easy_cleanup(e);
    free(b.data);
    stop(srv);
}

static void test_h2c_prior_knowledge(void **state)
{
    struct ck_http_config cfg = {.loops = 1};
    struct ck_http_server *srv = start(&cfg);
    char url[128];
    (void)state;
    snprintf(url, sizeof url, "http://127.0.0.1:%u/echo", ck_http_server_port(srv));
    for (int i = 0; i < 3; i++) { /* one request a connection: libcurl 7.88's limit */
        struct body b = {0};
        CURL *e = easy(url, &b);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "over h2c");
        assert_int_equal(get(e), 200);
        long version = 0;
        curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
        assert_int_equal(version, CURL_HTTP_VERSION_2_0);
        assert_string_equal(b.data, "over h2c");
        curl_easy_cleanup(e);
        free(b.data);
    }
    stop(srv);
}

static void test_h2_many_streams_one_connection(void **state)
{
    struct ck_http_config cfg = {.loops = 2, .cert_file = T.cert, .key_file = T.key};
    struct ck_http_server *srv = start(&cfg);
    enum { N = 60 };
    CURL *e[N];
    struct body b[N] = {{0}};
    char url[128];
    (void)state;
    snprintf(url, sizeof url, "https://localhost:%u/thread", ck_http_server_port(srv));
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    for (int i = 0; i < N; i++) {
        e[i] = easy(url, &b[i]);
        curl_easy_setopt(e[i], CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(e[i], CURLOPT_PIPEWAIT, 1L);
        curl_multi_add_handle(m, e[i]);
    }
    int running = 1;
    while (running) {
        curl_multi_perform(m, &running);
        curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    long connects = 0;
    for (int i = 0; i < N; i++) {
        long status = 0, n = 0, version = 0;
        curl_easy_getinfo(e[i], CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(e[i], CURLINFO_NUM_CONNECTS, &n);
        curl_easy_getinfo(e[i], CURLINFO_HTTP_VERSION, &version);
        assert_int_equal(status, 200);
        assert_int_equal(version, CURL_HTTP_VERSION_2_0);
        assert_string_equal(b[i].data, "from a thread");
        connects += n;
        curl_multi_remove_handle(m, e[i]);
        curl_easy_cleanup(e[i]);
        free(b[i].data);
    }
    assert_int_equal(connects, 1);
    curl_multi_cleanup(m);
    stop(srv);
}

static void wait_watches(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&T.lock);
    while (T.nwatch < n && pthread_cond_timedwait(&T.cond, &T.lock, &until) == 0)
        ;
    assert_int_equal(T.nwatch, n);
    pthread_mutex_unlock(&T.lock);
}

/* n watches through libcurl's multi interface, every h2_every-th over h2c */
struct watchers {
    CURLM *m;
    CURL *e[MAX_WATCH];
    struct body b[MAX_WATCH];
    int n, running;
};

static void watchers_open(struct watchers *w, uint16_t port, int n, int h2_every)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/watch", port);
    memset(w, 0, sizeof *w);
    w->m = curl_multi_init();
    w->n = n;
    for (int i = 0; i < n; i++) {
        w->e[i] = easy(url, &w->b[i]);
        if (i % h2_every == h2_every - 1)
            curl_easy_setopt(w->e[i], CURLOPT_HTTP_VERSION,
                             (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
        curl_multi_add_handle(w->m, w->e[i]);
    }
    for (int subscribed = 0; subscribed < n;) { /* until the handler saw them all */
        curl_multi_perform(w->m, &w->running);
        curl_multi_poll(w->m, NULL, 0, 20, NULL);
        pthread_mutex_lock(&T.lock);
        subscribed = T.nwatch;
        pthread_mutex_unlock(&T.lock);
    }
}

/* Runs the transfers to their end; returns the seconds it took. */
static long watchers_finish(struct watchers *w)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (w->running) {
        curl_multi_perform(w->m, &w->running);
        curl_multi_poll(w->m, NULL, 0, 100, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return t1.tv_sec - t0.tv_sec;
}

static void watchers_free(struct watchers *w)
{
    for (int i = 0; i < w->n; i++) {
        curl_multi_remove_handle(w->m, w->e[i]);
        curl_easy_cleanup(w->e[i]);
        free(w->b[i].data);
    }
    curl_multi_cleanup(w->m);
}

static void test_broadcast_reaches_every_stream_in_order(void **state)
{
    struct ck_http_config cfg = {.loops = 3};
    struct ck_http_server *srv = start(&cfg);
    enum { N = 120, EVENTS = 50 };
    static struct watchers w;
    char expect[EVENTS * 16] = "";
    (void)state;
    watchers_open(&w, ck_http_server_port(srv), N, 4); /* a quarter over h2c */
    /* a subscription takes effect on its loop after the handler returns: an
     * event published now is queued behind it, so the first one reaches all */
    for (int i = 0; i < EVENTS; i++) {
        char ev[16];
        int k = snprintf(ev, sizeof ev, "event %d\n", i);
        strcat(expect, ev);
        struct ck_http_buf *buf = ck_http_buf_new(ev, (size_t)k);
        assert_int_equal(ck_http_channel_publish(T.ch, buf), 0);
        ck_http_buf_unref(buf);
    }
    pthread_mutex_lock(&T.lock);
    assert_true(T.nloops >= 2); /* accepts spread over the loops */
    for (int i = 0; i < T.nwatch; i++)
        ck_http_stream_end(T.watches[i]); /* queued behind the events */
    T.nwatch = 0;
    pthread_mutex_unlock(&T.lock);
    watchers_finish(&w);
    for (int i = 0; i < N; i++) {
        long status = 0;
        curl_easy_getinfo(w.e[i], CURLINFO_RESPONSE_CODE, &status);
        assert_int_equal(status, 200);
        assert_non_null(w.b[i].data);
        assert_string_equal(w.b[i].data, expect);
    }
    watchers_free(&w);
    stop(srv);
}

/*
 * Publishes up to 64 MiB in events of 16 KiB to the one watch, whose reader
 * reads nothing, until the server ends it (its queue dropped): the close
 * callback ran once.
 */
static void flood_until_closed(void)
{
    char *big = calloc(1, 16384);
    memset(big, 'x', 16383);
    struct ck_http_buf *ev = ck_http_buf_new(big, 16384);
    free(big);
    /* 64 MiB published to a reader that reads nothing */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    for (int i = 0; i < 4096; i++) {
        ck_http_channel_publish(T.ch, ev);
        if (i % 64 == 0) {
            pthread_mutex_lock(&T.lock);
            int closed = T.closed;
            pthread_mutex_unlock(&T.lock);
            if (closed)
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    ck_http_buf_unref(ev);
    pthread_mutex_lock(&T.lock);
    while (T.closed == 0 && pthread_cond_timedwait(&T.cond, &T.lock, &until) == 0)
        ;
    assert_int_equal(T.closed, 1); /* ended by the server, its queue dropped */
    pthread_mutex_unlock(&T.lock);
}

static const struct ck_http_config slow_cfg = {
    .loops = 1, .stream_high_water = 64 << 10, .stream_max_pending = 512 << 10};

static void test_slow_reader_is_closed(void **state)
{
    struct ck_http_config cfg = slow_cfg;
    struct ck_http_server *srv = start(&cfg);
    (void)state;
    int fd = connect_local(ck_http_server_port(srv), 4096);
    const char req[] = "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, req, sizeof req - 1, 0), (ssize_t)sizeof req - 1);
    wait_watches(1);
    flood_until_closed();
    close(fd);
    stop(srv);
}

static void expect_status(uint16_t port, const char *req, size_t len, const char *status_line)
{
    char *answer = raw(port, req, len);
    if (strncmp(answer, status_line, strlen(status_line)) != 0)
        fail_msg("expected %s, got: %.80s", status_line, answer);
    free(answer);
}

static void test_bad_requests(void **state)
{
    struct ck_http_config cfg = {
        .loops = 1, .max_header_bytes = 8192, .max_uri_bytes = 1024, .max_body_bytes = 4096};
    struct ck_http_server *srv = start(&cfg);
    uint16_t port = ck_http_server_port(srv);
    (void)state;
    const char garbage[] = "THIS IS NOT HTTP\r\n\r\n";
    expect_status(port, garbage, sizeof garbage - 1, "HTTP/1.1 400 Bad Request");

    size_t big = 64 << 10;
    char *huge = malloc(big + 64);
    int k = snprintf(huge, 64, "GET /hello HTTP/1.1\r\nX-Big: ");
    memset(huge + k, 'a', big);
    memcpy(huge + k + big, "\r\n\r\n", 4);
    expect_status(port, huge, (size_t)k + big + 4, "HTTP/1.1 431 Request Header Fields Too Large");

    k = snprintf(huge, 64, "GET /");
    memset(huge + k, 'a', 4096);
    memcpy(huge + k + 4096, " HTTP/1.1\r\n\r\n", 13);
    expect_status(port, huge, (size_t)k + 4096 + 13, "HTTP/1.1 414 Request URI Too Long");
    free(huge);

    const char body[] = "POST /echo HTTP/1.1\r\nContent-Length: 100000\r\n\r\nabc";
    expect_status(port, body, sizeof body - 1, "HTTP/1.1 413 Request Entity Too Large");

    /* the same limits over HTTP/2 (h2c, a connection each) */
    char url[128], *hdr = malloc(16 << 10);
    struct curl_slist *headers = NULL;
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'b', (16 << 10) - 8);
    hdr[(16 << 10) - 1] = 0;
    headers = curl_slist_append(headers, hdr);
    free(hdr);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/hello", port);
    struct body b = {0};
    CURL *e = easy(url, &b);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    assert_int_equal(get(e), 431);
    assert_string_equal(b.data, "431 Request Header Fields Too Large");
    curl_easy_cleanup(e);
    curl_slist_free_all(headers);
    char long_url[2048];
    int n = snprintf(long_url, sizeof long_url, "http://127.0.0.1:%u/", port);
    memset(long_url + n, 'p', 1500);
    long_url[n + 1500] = 0;
    b.len = 0;
    e = easy(long_url, &b);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    assert_int_equal(get(e), 414);
    curl_easy_cleanup(e);
    free(b.data);

    /* the server still serves after all that */
    const char ok[] = "GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n";
    char *answer = raw(port, ok, sizeof ok - 1);
    assert_non_null(strstr(answer, "\r\n\r\nhello"));
    free(answer);
    stop(srv);
}

static void test_shutdown_with_open_streams(void **state)
{
    struct ck_http_config cfg = {.loops = 2};
    struct ck_http_server *srv = start(&cfg);
    enum { N = 6 };
    static struct watchers w;
    (void)state;
    watchers_open(&w, ck_http_server_port(srv), N, 2); /* half over h2c */
    struct ck_http_buf *ev = ck_http_buf_new("one\n", 4);
    ck_http_channel_publish(T.ch, ev);
    ck_http_buf_unref(ev);
    /* the streams stay open: shutdown's timeout closes them, each close callback ends its own */
    ck_http_server_shutdown(srv, 100);
    pthread_mutex_lock(&T.lock);
    assert_int_equal(T.closed, N);
    assert_int_equal(T.nwatch, 0);
    pthread_mutex_unlock(&T.lock);
    /* the clients see their connections closed at once, not at their 30 s timeout */
    assert_true(watchers_finish(&w) < 10);
    watchers_free(&w);
    stop(srv);
}

static void test_idle_connection_closed_watch_kept(void **state)
{
    struct ck_http_config cfg = {.loops = 1, .idle_timeout_ms = 300};
    struct ck_http_server *srv = start(&cfg);
    uint16_t port = ck_http_server_port(srv);
    char buf[512];
    (void)state;
    int idle = connect_local(port, 0), watch = connect_local(port, 0);
    const char req[] = "GET /watch HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(watch, req, sizeof req - 1, 0), (ssize_t)sizeof req - 1);
    wait_watches(1);
    /* the silent connection is closed by the server */
    struct pollfd p = {.fd = idle, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    assert_int_equal(recv(idle, buf, sizeof buf, 0), 0);
    /* the watch, as silent and older, still gets its event */
    struct ck_http_buf *ev = ck_http_buf_new("late event\n", 11);
    ck_http_channel_publish(T.ch, ev);
    ck_http_buf_unref(ev);
    size_t got = 0;
    p.fd = watch;
    while (poll(&p, 1, 5000) == 1) {
        ssize_t n = recv(watch, buf + got, sizeof buf - 1 - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
        buf[got] = 0;
        if (strstr(buf, "late event"))
            break;
    }
    assert_non_null(strstr(buf, "\r\nb\r\nlate event\n\r\n"));
    close(idle);
    close(watch);
    stop(srv);
}

static void test_upgrade_makes_a_byte_stream(void **state)
{
    struct ck_http_config cfg = {.loops = 1};
    struct ck_http_server *srv = start(&cfg);
    (void)state;
    /* bytes right after the request, then more, then the word that ends it */
    const char req[] = "GET /upgrade HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                       "Upgrade: echo\r\n\r\nearly words, bye";
    char *answer = raw(ck_http_server_port(srv), req, sizeof req - 1);
    assert_string_equal(answer, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                "Upgrade: echo\r\n\r\nEARLY WORDS, BYE");
    free(answer);

    /* over HTTP/2 there is no upgrade: 400 */
    char url[128];
    struct body b = {0};
    snprintf(url, sizeof url, "http://127.0.0.1:%u/upgrade", ck_http_server_port(srv));
    CURL *e = easy(url, &b);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    assert_int_equal(get(e), 400);
    curl_easy_cleanup(e);
    free(b.data);
    stop(srv);
}

/* ---- Go's ReadHeaderTimeout ------------------------------------------------------ */

/* A short read_header_timeout_ms, an idle timeout far beyond the tests' bounds. */
static const struct ck_http_config header_cfg = {
    .loops = 1, .read_header_timeout_ms = 400, .idle_timeout_ms = 20000};

static long ms_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Sends one byte of trickle[] every 50 ms (all of it at once when every_ms is 0) and reads
 * what comes back until the server closes the connection; returns the milliseconds from t0
 * to the close (-1: still open after 5 s) and what came back in *got.
 */
static long until_closed(int fd, const struct timespec *t0, const char *trickle, size_t len,
                         size_t *got)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    size_t sent = 0;
    *got = 0;
    while (ms_since(t0) < 5000) {
        if (sent < len)
            sent += send(fd, trickle + sent, 1, MSG_NOSIGNAL) == 1;
        if (poll(&p, 1, 50) == 1) {
            char buf[4096];
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                return ms_since(t0);
            *got += (size_t)n;
        }
    }
    return -1;
}

static void test_header_trickle_is_cut(void **state)
{
    struct ck_http_config cfg = header_cfg;
    struct ck_http_server *srv = start(&cfg);
    uint16_t port = ck_http_server_port(srv);
    char trickle[200], buf[512];
    struct timespec t0;
    size_t got;
    (void)state;
    /* a header byte every 50 ms keeps the idle timeout away, not the header's deadline */
    int n = snprintf(trickle, sizeof trickle, "GET /hello HTTP/1.1\r\nX-Slow: ");
    memset(trickle + n, 's', sizeof trickle - (size_t)n);
    int fd = connect_local(port, 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ms = until_closed(fd, &t0, trickle, sizeof trickle, &got);
    close(fd);
    if (ms < 350 || ms > 3000)
        fail_msg("the trickling client was closed after %ld ms, not at 400", ms);
    assert_int_equal(got, 0); /* without an answer, as Go's server */

    /* a new connection that says nothing: the first request's deadline runs from the start */
    fd = connect_local(port, 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ms = until_closed(fd, &t0, "", 0, &got);
    close(fd);
    assert_true(ms >= 350 && ms <= 3000);

    /* kept alive: the next request's deadline starts with its first byte, not at the last answer */
    const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
    fd = connect_local(port, 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(send(fd, req, sizeof req - 1, 0), (ssize_t)sizeof req - 1);
        size_t have = 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (!memmem(buf, have, "hello", 5) && poll(&p, 1, 5000) == 1) {
            ssize_t k = recv(fd, buf + have, sizeof buf - have, 0);
            assert_true(k > 0);
            have += (size_t)k;
        }
        assert_non_null(memmem(buf, have, "\r\n\r\nhello", 9));
        usleep(700 * 1000); /* past the header timeout, within the idle one */
    }
    close(fd);
    stop(srv);

    /* TLS: the handshake is bounded too */
    cfg.cert_file = T.cert;
    cfg.key_file = T.key;
    srv = start(&cfg);
    fd = connect_local(ck_http_server_port(srv), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ms = until_closed(fd, &t0, "", 0, &got);
    close(fd);
    assert_true(ms >= 350 && ms <= 3000);
    stop(srv);
}

/* ---- an HTTP/2 client of nghttp2's, over h2c, for what libcurl 7.88 cannot do ---- */

struct h2c {
    int fd;
    nghttp2_session *s;
    bool goaway, eof;
    uint32_t goaway_error;
    int32_t goaway_last;
    int status[8];    /* by stream id / 2 */
    char body[8][64]; /* by stream id / 2 */
    bool closed[8];   /* by stream id / 2 */
    size_t piece;     /* when set: bodies are pieces of this size, of 'a', 'b'... in turn */
    size_t got[8];    /* by stream id / 2: body bytes */
    bool wrong[8];    /* by stream id / 2: a byte out of place */
};

static ssize_t h2c_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
    struct h2c *h = arg;
    (void)s, (void)flags;
    ssize_t n = send(h->fd, data, len, MSG_NOSIGNAL);
    return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int h2c_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                      const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
    struct h2c *h = arg;
    (void)s, (void)flags, (void)vlen;
    if (nlen == 7 && memcmp(name, ":status", 7) == 0 && f->hd.stream_id / 2 < 8)
        h->status[f->hd.stream_id / 2] = atoi((const char *)value);
    return 0;
}

static int h2c_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                    void *arg)
{
    struct h2c *h = arg;
    (void)s, (void)flags;
    char *b = h->body[id / 2 % 8];
    size_t have = strlen(b);
    for (size_t i = 0; h->piece && i < len; i++)
        h->wrong[id / 2 % 8] |= data[i] != 'a' + (h->got[id / 2 % 8] + i) / h->piece % 26;
    h->got[id / 2 % 8] += len;
    if (have + len < 64)
        memcpy(b + have, data, len);
    return 0;
}

static int h2c_frame(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    struct h2c *h = arg;
    (void)s;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        h->goaway = true;
        h->goaway_error = f->goaway.error_code;
        h->goaway_last = f->goaway.last_stream_id;
    }
    return 0;
}

static int h2c_close(nghttp2_session *s, int32_t id, uint32_t err, void *arg)
{
    struct h2c *h = arg;
    (void)s, (void)err;
    h->closed[id / 2 % 8] = true;
    return 0;
}

static void h2c_open(struct h2c *h, uint16_t port)
{
    nghttp2_session_callbacks *cb;
    memset(h, 0, sizeof *h);
    h->fd = connect_local(port, 0);
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2c_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2c_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
    assert_int_equal(nghttp2_session_client_new(&h->s, cb, h), 0);
    nghttp2_session_callbacks_del(cb);
    assert_int_equal(nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

static int32_t h2c_get(struct h2c *h, const char *path)
{
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"x", 10, 1, 0},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0},
    };
    int32_t id = nghttp2_submit_request(h->s, NULL, nv, 4, NULL, NULL);
    assert_true(id > 0 && id / 2 < 8);
    assert_int_equal(nghttp2_session_send(h->s), 0);
    return id;
}

/* Sends and reads until *flag or the server closes or 5 s pass. */
static void h2c_until(struct h2c *h, const bool *flag)
{
    uint8_t buf[16384];
    struct pollfd p = {.fd = h->fd, .events = POLLIN};
    while (!*flag && !h->eof) {
        assert_int_equal(nghttp2_session_send(h->s), 0);
        if (poll(&p, 1, 5000) != 1)
            fail_msg("no answer in 5 s");
        ssize_t n = recv(h->fd, buf, sizeof buf, 0);
        if (n <= 0) {
            h->eof = true;
            break;
        }
        assert_true(nghttp2_session_mem_recv(h->s, buf, (size_t)n) == n);
    }
}

static void h2c_close_client(struct h2c *h)
{
    nghttp2_session_del(h->s);
    close(h->fd);
}

struct shutdown_arg {
    struct ck_http_server *srv;
    int timeout_ms;
};

static void *shutdown_thread(void *arg)
{
    struct shutdown_arg *a = arg;
    ck_http_server_shutdown(a->srv, a->timeout_ms);
    return NULL;
}

static void test_h2c_reuse_and_goaway(void **state)
{
    struct ck_http_config cfg = {.loops = 1};
    struct ck_http_server *srv = start(&cfg);
    struct h2c h;
    (void)state;
    h2c_open(&h, ck_http_server_port(srv));
    /* two requests after each other on one connection, then a watch */
    int32_t a = h2c_get(&h, "/hello");
    h2c_until(&h, &h.closed[a / 2]);
    int32_t b = h2c_get(&h, "/echo");
    h2c_until(&h, &h.closed[b / 2]);
    assert_int_equal(h.status[a / 2], 200);
    assert_string_equal(h.body[a / 2], "hello");
    assert_int_equal(h.status[b / 2], 200);
    /* kube-apiserver's settings: 100 streams (its --http2-max-streams-per-connection=0), 256 KiB
     * windows */
    assert_int_equal(
        nghttp2_session_get_remote_settings(h.s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 100);
    assert_int_equal(nghttp2_session_get_remote_settings(h.s, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
                     256 << 10);
    int32_t w = h2c_get(&h, "/watch");
    wait_watches(1);
    struct ck_http_buf *ev = ck_http_buf_new("ev\n", 3);
    ck_http_channel_publish(T.ch, ev);
    ck_http_buf_unref(ev);

    /* shutdown: GOAWAY (NO_ERROR, the last stream) while the watch goes on */
    struct shutdown_arg sa = {srv, 1000};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, shutdown_thread, &sa), 0);
    h2c_until(&h, &h.goaway);
    assert_true(h.goaway);
    assert_int_equal(h.goaway_error, NGHTTP2_NO_ERROR);
    assert_int_equal(h.goaway_last, w);
    assert_false(h.closed[w / 2]);
    assert_int_equal(h.status[w / 2], 200);
    /* then, at the timeout, the connection closes */
    bool never = false;
    h2c_until(&h, &never);
    assert_true(h.eof);
    pthread_join(th, NULL);
    assert_string_equal(h.body[w / 2], "ev\n");
    h2c_close_client(&h);
    stop(srv);
}

/* Over HTTP/2 the client's stream window (64 KiB) stops the frames; the queue behind it is ended.
 */
static void test_slow_h2_reader_is_closed(void **state)
{
    struct ck_http_config cfg = slow_cfg;
    struct ck_http_server *srv = start(&cfg);
    struct h2c h;
    (void)state;
    h2c_open(&h, ck_http_server_port(srv));
    int32_t w = h2c_get(&h, "/watch");
    wait_watches(1);
    flood_until_closed();
    /* the stream ended cleanly once the client read what its window let through */
    h2c_until(&h, &h.closed[w / 2]);
    assert_true(h.closed[w / 2]);
    assert_int_equal(h.status[w / 2], 200);
    h2c_close_client(&h);
    stop(srv);
}

/* HTTP/2: a header block without its end, the preface without SETTINGS: cut at the deadline. */
static void test_h2_header_block_unfinished_is_cut(void **state)
{
    struct ck_http_config cfg = header_cfg;
    struct ck_http_server *srv = start(&cfg);
    uint16_t port = ck_http_server_port(srv);
    struct timespec t0;
    struct h2c h;
    size_t got;
    (void)state;
    h2c_open(&h, port);
    /* a watch open on the connection: the idle timeout alone would never close it */
    h2c_get(&h, "/watch");
    wait_watches(1);
    /* a header too big for one frame: HEADERS without END_HEADERS, then CONTINUATION */
    size_t big = 40000;
    char *value = malloc(big);
    memset(value, 'v', big);
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":authority", (uint8_t *)"x", 10, 1, 0},
        {(uint8_t *)":path", (uint8_t *)"/hello", 5, 6, 0},
        {(uint8_t *)"x-big", (uint8_t *)value, 5, big, 0},
    };
    assert_true(nghttp2_submit_request(h.s, NULL, nv, 5, NULL, NULL) > 0);
    const uint8_t *out;
    ssize_t len = nghttp2_session_mem_send(h.s, &out);
    assert_true(len > 9);
    size_t first = 9 + ((size_t)out[0] << 16 | (size_t)out[1] << 8 | out[2]);
    assert_int_equal(out[3], NGHTTP2_HEADERS);
    assert_false(out[4] & NGHTTP2_FLAG_END_HEADERS);
    assert_true(first <= (size_t)len);
    assert_int_equal(send(h.fd, out, first, 0), (ssize_t)first); /* and no CONTINUATION */
    free(value);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ms = until_closed(h.fd, &t0, "", 0, &got);
    if (ms < 350 || ms > 3000)
        fail_msg("the unfinished header block was closed after %ld ms, not at 400", ms);
    h2c_close_client(&h);
    pthread_mutex_lock(&T.lock);
    assert_int_equal(T.closed, 1); /* the watch went with its connection */
    pthread_mutex_unlock(&T.lock);

    /* the preface, then no SETTINGS: x/net/http2's 2 s, here shortened to the 400 ms */
    int fd = connect_local(port, 0);
    const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    assert_int_equal(send(fd, preface, sizeof preface - 1, 0), (ssize_t)sizeof preface - 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ms = until_closed(fd, &t0, "", 0, &got);
    close(fd);
    assert_true(ms >= 350 && ms <= 3000);
    assert_true(got > 0); /* the server's SETTINGS came first */

    /* a whole request in time is served, and its connection outlives the deadline */
    h2c_open(&h, port);
    int32_t a = h2c_get(&h, "/hello");
    h2c_until(&h, &h.closed[a / 2]);
    usleep(700 * 1000);
    int32_t b = h2c_get(&h, "/hello");
    h2c_until(&h, &h.closed[b / 2]);
    assert_false(h.eof);
    assert_string_equal(h.body[b / 2], "hello");
    h2c_close_client(&h);
    stop(srv);
}

/*
 * A stream's bytes over HTTP/2, every byte in its place: pieces referenced into
 * DATA frames (5,000 bytes: split across 16 KiB frames) and pieces copied (100
 * bytes), through a 64 KiB high-water mark, over TLS (libcurl) and h2c
 * (nghttp2's client: libcurl 7.88 over h2c sometimes misses the end of a long
 * stream whose last DATA frame, END_STREAM set, the server did send).
 */
static void test_h2_stream_bytes_in_order(void **state)
{
    struct ck_http_config cfg = {
        .loops = 1, .cert_file = T.cert, .key_file = T.key, .stream_high_water = 64 << 10};
    struct ck_http_config plain = {.loops = 1, .stream_high_water = 64 << 10};
    static const struct {
        int n;
        size_t size;
    } shapes[] = {{120, 5000}, {300, 100}};
    (void)state;
    for (int tls = 0; tls < 2; tls++) {
        struct ck_http_server *srv = start(tls ? &cfg : &plain);
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
            char path[64], url[128];
            size_t want = (size_t)shapes[k].n * shapes[k].size;
            snprintf(path, sizeof path, "/stream?n=%d&size=%zu", shapes[k].n, shapes[k].size);
            if (!tls) {
                struct h2c h;
                h2c_open(&h, ck_http_server_port(srv));
                h.piece = shapes[k].size;
                int32_t id = h2c_get(&h, path);
                h2c_until(&h, &h.closed[id / 2]);
                assert_true(h.closed[id / 2]);
                assert_int_equal(h.status[id / 2], 200);
                assert_int_equal(h.got[id / 2], want);
                assert_false(h.wrong[id / 2]);
                h2c_close_client(&h);
                continue;
            }
            struct body b = {0};
            snprintf(url, sizeof url, "https://localhost:%u%s", ck_http_server_port(srv), path);
            CURL *e = easy(url, &b);
            assert_int_equal(get_h2(e), 200);
            assert_int_equal(b.len, want);
            for (size_t i = 0; i < b.len; i++)
                if (b.data[i] != 'a' + (int)(i / shapes[k].size) % 26)
                    fail_msg("byte %zu of %zu-byte pieces: %c", i, shapes[k].size, b.data[i]);
            curl_easy_cleanup(e);
            free(b.data);
        }
        stop(srv);
    }
}

static void test_server_new_survives_failed_allocations(void **state)
{
    struct ck_http_config cfg = {.loops = 3, .on_request = on_request};
    struct ck_http_server *srv = NULL;
    int rv = CK_ENOMEM;
    (void)state;
    for (unsigned long n = 1; rv == CK_ENOMEM && n < 1000; n++) {
        ck__alloc_fail_at(n, false);
        rv = ck_http_server_new(&cfg, &srv, NULL, 0);
        ck__alloc_fail_at(0, false);
        if (rv != 0)
            assert_int_equal(rv, CK_ENOMEM); /* and nothing leaked: ASan says at exit */
    }
    assert_int_equal(rv, 0);
    assert_int_equal(ck_http_server_start(srv), 0);
    ck_http_server_free(srv); /* free without a shutdown first: it shuts down itself */
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as ckube does: a client that goes is no signal (http.h) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h1_keepalive_and_chunked_stream),
        cmocka_unit_test(test_h2_tls_alpn_and_client_cert),
        cmocka_unit_test(test_h2c_prior_knowledge),
        cmocka_unit_test(test_h2_many_streams_one_connection),
        cmocka_unit_test(test_h2_stream_bytes_in_order),
        cmocka_unit_test(test_broadcast_reaches_every_stream_in_order),
        cmocka_unit_test(test_slow_reader_is_closed),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_shutdown_with_open_streams),
        cmocka_unit_test(test_idle_connection_closed_watch_kept),
        cmocka_unit_test(test_upgrade_makes_a_byte_stream),
        cmocka_unit_test(test_h2c_reuse_and_goaway),
        cmocka_unit_test(test_slow_h2_reader_is_closed),
        cmocka_unit_test(test_server_new_survives_failed_allocations),
        cmocka_unit_test(test_header_trickle_is_cut),
        cmocka_unit_test(test_h2_header_block_unfinished_is_cut),
    };
    curl_global_init(CURL_GLOBAL_ALL);
    make_pki();
    int rv = cmocka_run_group_tests(tests, NULL, NULL);
    remove_pki();
    curl_global_cleanup();
    return rv;
}
