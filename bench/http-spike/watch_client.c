/*
 * watch_client.c - watch fan-out for the HTTP-layer spike: K HTTP/1.1 watches
 * over TLS, one event broadcast, delivery latency and the server's memory.
 *
 *   watch_client PORT STREAMS EVENTS SERVER_PID
 *
 * Opens STREAMS TLS connections to 127.0.0.1:PORT (ALPN http/1.1), each with
 * GET /watch, waits for every response's headers, reads the server's VmRSS,
 * then asks GET /fire on one more connection: the server publishes EVENTS
 * events, each carrying the monotonic clock at publication ("ts"). One epoll
 * thread reads every stream; http-parser undoes the chunked framing; each
 * complete line is one event, its latency is arrival minus "ts". Prints one
 * JSON object: deliveries seen and expected, latency p50/p99/max in ms,
 * the server's RSS before the watches, with all of them open, and the growth
 * per stream in KiB, and the server's CPU time (user + system, from
 * /proc/PID/stat) from the fire to the last delivery, per delivery.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct stream {
    int fd;
    SSL *ssl;
    http_parser hp;
    int headers;
    size_t line_len;
    char line[1024];
};

static int port, nstreams, nevents;
static SSL_CTX *ctx;
static uint32_t *lat_us;
static size_t nlat, headers_seen;
static http_parser_settings settings;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long rss_kib(int pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(buf, sizeof buf, f))
        if (sscanf(buf, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static double cpu_s(int pid)
{
    char path[64], buf[1024];
    unsigned long ut = 0, st = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f && fgets(buf, sizeof buf, f)) {
        char *p = strrchr(buf, ')');
        if (p)
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    }
    if (f)
        fclose(f);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static SSL *dial(int *fdp)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1) {
        fprintf(stderr, "handshake failed\n");
        exit(1);
    }
    *fdp = fd;
    return ssl;
}

static void send_get(SSL *ssl, const char *path)
{
    char req[128];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (SSL_write(ssl, req, n) != n) {
        fprintf(stderr, "write failed\n");
        exit(1);
    }
}

static int on_headers(http_parser *p)
{
    struct stream *s = p->data;
    s->headers = 1;
    headers_seen++;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct stream *s = p->data;
    uint64_t now = now_ns();
    for (size_t i = 0; i < n; i++) {
        if (at[i] != '\n') {
            if (s->line_len < sizeof s->line - 1)
                s->line[s->line_len++] = at[i];
            continue;
        }
        s->line[s->line_len] = 0;
        s->line_len = 0;
        const char *ts = strstr(s->line, "\"ts\":\"");
        if (ts && nlat < (size_t)nstreams * (size_t)nevents) {
            uint64_t sent = strtoull(ts + 6, NULL, 10);
            lat_us[nlat++] = (uint32_t)((now - sent) / 1000);
        }
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* read what is there; 0 on success, -1 when the stream ended or broke */
static int pump(struct stream *s)
{
    char buf[16384];
    for (;;) {
        int n = SSL_read(s->ssl, buf, sizeof buf);
        if (n <= 0) {
            int e = SSL_get_error(s->ssl, n);
            return e == SSL_ERROR_WANT_READ ? 0 : -1;
        }
        if (http_parser_execute(&s->hp, &settings, buf, (size_t)n) != (size_t)n)
            return -1;
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s PORT STREAMS EVENTS SERVER_PID\n", argv[0]);
        return 2;
    }
    port = atoi(argv[1]);
    nstreams = atoi(argv[2]);
    nevents = atoi(argv[3]);
    int pid = atoi(argv[4]);
    settings.on_headers_complete = on_headers;
    settings.on_body = on_body;
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1", 9);
    lat_us = calloc((size_t)nstreams * (size_t)nevents, sizeof *lat_us);
    struct stream *ss = calloc((size_t)nstreams, sizeof *ss);
    int ep = epoll_create1(0);

    long rss_before = rss_kib(pid);
    uint64_t t0 = now_ns();
    for (int i = 0; i < nstreams; i++) {
        struct stream *s = &ss[i];
        s->ssl = dial(&s->fd);
        send_get(s->ssl, "/watch");
        fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
        http_parser_init(&s->hp, HTTP_RESPONSE);
        s->hp.data = s;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
        epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev);
    }
    double open_s = (double)(now_ns() - t0) / 1e9;
    struct epoll_event evs[256];
    int broken = 0;
    while (headers_seen < (size_t)nstreams) {
        int n = epoll_wait(ep, evs, 256, 10000);
        if (n <= 0) {
            fprintf(stderr, "only %zu of %d watches answered\n", headers_seen, nstreams);
            return 1;
        }
        for (int i = 0; i < n; i++)
            if (pump(evs[i].data.ptr) != 0)
                broken++;
    }
    sleep(1); /* let the server settle before reading its memory */
    long rss_open = rss_kib(pid);

    int ffd;
    double cpu0 = cpu_s(pid);
    SSL *fire = dial(&ffd);
    send_get(fire, "/fire");
    size_t want = (size_t)nstreams * (size_t)nevents;
    uint64_t deadline = now_ns() + 120ull * 1000000000u;
    long rss_peak = rss_open;
    uint64_t next_sample = 0;
    while (nlat < want && now_ns() < deadline) {
        int n = epoll_wait(ep, evs, 256, 1000);
        for (int i = 0; i < n; i++)
            if (pump(evs[i].data.ptr) != 0) {
                broken++;
                epoll_ctl(ep, EPOLL_CTL_DEL, ((struct stream *)evs[i].data.ptr)->fd, NULL);
            }
        if (now_ns() >= next_sample) { /* every 100 ms: reading /proc is not free */
            long r = rss_kib(pid);
            if (r > rss_peak)
                rss_peak = r;
            next_sample = now_ns() + 100000000u;
        }
    }
    double cpu_us = (cpu_s(pid) - cpu0) * 1e6;
    qsort(lat_us, nlat, sizeof *lat_us, cmp_u32);
    uint32_t p50 = nlat ? lat_us[nlat / 2] : 0, p99 = nlat ? lat_us[nlat * 99 / 100] : 0;
    uint32_t max = nlat ? lat_us[nlat - 1] : 0;
    printf(
        "{\"streams\":%d,\"events\":%d,\"delivered\":%zu,\"expected\":%zu,\"broken\":%d,"
        "\"open_s\":%.2f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,"
        "\"rss_before_kib\":%ld,\"rss_open_kib\":%ld,\"rss_peak_kib\":%ld,\"kib_per_stream\":%.1f,"
        "\"server_cpu_us_per_delivery\":%.2f}\n",
        nstreams, nevents, nlat, want, broken, open_s, p50 / 1000.0, p99 / 1000.0, max / 1000.0,
        rss_before, rss_open, rss_peak, (double)(rss_open - rss_before) / nstreams,
        nlat ? cpu_us / (double)nlat : 0.0);
    return nlat == want ? 0 : 1;
}
