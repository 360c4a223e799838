/*
 * bench_watch.c - watch delivery latency: many watchers, one stream of updates.
 *
 *   bench_watch HOST PORT NAMESPACE POD POD_FILE WATCHERS UPDATES INTERVAL_MS [SERVER_PID]
 *
 * Opens WATCHERS watches (GET /api/v1/namespaces/NAMESPACE/pods?watch=1) on
 * keep-alive connections, waits until each has received its initial ADDED
 * event for the one pod POD in the namespace, then PUTs that pod UPDATES times,
 * INTERVAL_MS apart, from a second thread on its own connection. POD_FILE is
 * the pod's JSON with the text @SENT@ where the value of the annotation
 * bench.ckube.io/sent goes. A first PUT writes 0 there (the state each watch
 * starts from); each measured PUT writes the monotonic clock in
 * nanoseconds just before the request is sent, so a watcher that reads the
 * event computes the delivery latency (request sent -> event received, store
 * write and fan-out included) against the same clock.
 *
 * One thread reads every watch with epoll, undoing the chunked transfer
 * encoding and splitting events at newlines. It prints one JSON object:
 * latency percentiles in microseconds, the PUTs' own round trip (the write
 * alone, to tell it from the fan-out), how many deliveries arrived of the
 * expected WATCHERS * UPDATES, and, given SERVER_PID, the server's resident
 * memory (VmRSS, KiB) before the watches, with every watch open, and at its
 * highest while updates stream.
 *
 * Threading: the main thread owns the watch connections; the updater thread
 * owns its connection and the RSS samples; they share only `stop` and the
 * sample results, joined before they are read.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MARKER    "\"bench.ckube.io/sent\":\""
#define LINE_MAX_ (64u * 1024) /* longer event lines are cut (no marker lost: it is early) */

enum chunk_state { CHUNK_SIZE, CHUNK_SIZE_LF, CHUNK_DATA, CHUNK_DATA_CR, CHUNK_DATA_LF };

struct watcher {
    int fd;
    bool headers_done;
    char head[4096];
    size_t head_len;
    enum chunk_state state;
    size_t chunk_left;
    char *line;
    size_t line_len;
    long events; /* measured deliveries */
    bool ready;  /* got its initial event */
};

struct updater {
    struct sockaddr_in addr;
    const char *path;
    const char *pod;
    long updates;
    long interval_ms;
    long pid;
    long rss_peak_kib;
    int failures;
    int64_t *put_ns; /* round trip of each PUT */
    long puts;
    atomic_bool stop;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long rss_kib(long pid)
{
    if (pid <= 0)
        return -1;
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

__attribute__((noreturn)) static void die(const char *what)
{
    perror(what);
    exit(1);
}

static int connect_to(const struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0)
        die("connect");
    return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("send");
        data += n;
        len -= (size_t)n;
    }
}

/* Reads one HTTP response with a Content-Length; returns its status code. */
static int read_response(int fd)
{
    char buf[65536];
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (!end)
            continue;
        const char *cl = strcasestr(buf, "Content-Length:");
        size_t body = cl ? strtoul(cl + 15, NULL, 10) : 0;
        size_t want = (size_t)(end + 4 - buf) + body;
        if (want >= sizeof(buf))
            return -1;
        while (len < want) {
            n = recv(fd, buf + len, want - len, 0);
            if (n <= 0)
                return -1;
            len += (size_t)n;
        }
        return atoi(buf + 9);
    }
}

/* PUTs the pod with `sent` as the annotation's value; returns the HTTP status. */
static int put_pod(int fd, const char *path, const char *pod, long long sent)
{
    const char *at = strstr(pod, "@SENT@");
    size_t cap = strlen(pod) + 64;
    char *body = malloc(cap), *request = malloc(cap + 512);
    if (!at || !body || !request)
        die("pod template");
    int blen = snprintf(body, cap, "%.*s%lld%s", (int)(at - pod), pod, sent, at + 6);
    int rlen = snprintf(request, cap + 512,
                        "PUT %s HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                        "Content-Length: %d\r\n\r\n%s",
                        path, blen, body);
    send_all(fd, request, (size_t)rlen);
    free(body);
    free(request);
    return read_response(fd);
}

static void *update_main(void *arg)
{
    struct updater *u = arg;
    int fd = connect_to(&u->addr);
    for (long i = 0; i < u->updates && !atomic_load(&u->stop); i++) {
        int64_t sent = now_ns();
        if (put_pod(fd, u->path, u->pod, (long long)sent) != 200)
            u->failures++;
        u->put_ns[u->puts++] = now_ns() - sent;
        long rss = rss_kib(u->pid);
        if (rss > u->rss_peak_kib)
            u->rss_peak_kib = rss;
        struct timespec pause = {.tv_sec = u->interval_ms / 1000,
                                 .tv_nsec = (u->interval_ms % 1000) * 1000000};
        nanosleep(&pause, NULL);
    }
    close(fd);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Handles one complete event line; returns true when it was a measured delivery. */
static bool on_line(struct watcher *w, const char *line, int64_t received, int64_t *ret_latency)
{
    const char *m = strstr(line, MARKER);
    if (!m)
        return false;
    long long sent = strtoll(m + sizeof(MARKER) - 1, NULL, 10);
    if (sent <= 0) {
        w->ready = true; /* the initial ADDED of the pod as created */
        return false;
    }
    *ret_latency = received - (int64_t)sent;
    return true;
}

/* Feeds decoded body bytes; complete lines go to on_line. */
static void feed_body(struct watcher *w, const char *data, size_t len, int64_t received,
                      int64_t *lat, size_t *n_lat, size_t cap_lat)
{
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n') {
            if (w->line_len + 1 < LINE_MAX_)
                w->line[w->line_len++] = data[i];
            continue;
        }
        w->line[w->line_len] = '\0';
        int64_t latency;
        if (on_line(w, w->line, received, &latency)) {
            w->events++;
            if (*n_lat < cap_lat)
                lat[(*n_lat)++] = latency;
        }
        w->line_len = 0;
    }
}

/* Undoes the chunked transfer encoding of what recv returned. */
static void feed(struct watcher *w, const char *data, size_t len, int64_t received, int64_t *lat,
                 size_t *n_lat, size_t cap_lat)
{
    size_t i = 0;
    if (!w->headers_done) {
        while (i < len && !w->headers_done) {
            if (w->head_len + 1 < sizeof(w->head))
                w->head[w->head_len++] = data[i];
            i++;
            w->head[w->head_len] = '\0';
            if (strstr(w->head, "\r\n\r\n")) {
                if (strncmp(w->head + 9, "200", 3) != 0) {
                    fprintf(stderr, "watch refused: %s\n", w->head);
                    exit(1);
                }
                w->headers_done = true;
            }
        }
    }
    while (i < len) {
        char c = data[i];
        switch (w->state) {
        case CHUNK_SIZE:
            if (c == '\r')
                w->state = CHUNK_SIZE_LF;
            else if (c >= '0' && c <= '9')
                w->chunk_left = w->chunk_left * 16 + (size_t)(c - '0');
            else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
                w->chunk_left = w->chunk_left * 16 + (size_t)((c | 0x20) - 'a' + 10);
            i++;
            break;
        case CHUNK_SIZE_LF:
            w->state = w->chunk_left ? CHUNK_DATA : CHUNK_DATA_CR;
            i++;
            break;
        case CHUNK_DATA: {
            size_t n = len - i < w->chunk_left ? len - i : w->chunk_left;
            feed_body(w, data + i, n, received, lat, n_lat, cap_lat);
            w->chunk_left -= n;
            i += n;
            if (w->chunk_left == 0)
                w->state = CHUNK_DATA_CR;
            break;
        }
        case CHUNK_DATA_CR:
            w->state = CHUNK_DATA_LF;
            i++;
            break;
        case CHUNK_DATA_LF:
            w->state = CHUNK_SIZE;
            i++;
            break;
        }
    }
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die(path);
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, '\0', f);
    fclose(f);
    if (n <= 0)
        die("empty pod file");
    return text;
}

/* Waits for events until every watcher is ready (want_ready) or has `want` events. */
static void pump(int ep, struct watcher *ws, long n_ws, bool want_ready, long want, int64_t *lat,
                 size_t *n_lat, size_t cap_lat, int64_t deadline)
{
    char buf[65536];
    struct epoll_event evs[256];
    for (;;) {
        long done = 0;
        for (long i = 0; i < n_ws; i++)
            done += want_ready ? ws[i].ready : ws[i].events >= want;
        if (done == n_ws || now_ns() > deadline)
            return;
        int n = epoll_wait(ep, evs, 256, 100);
        int64_t received = now_ns();
        for (int e = 0; e < n; e++) {
            struct watcher *w = evs[e].data.ptr;
            for (;;) {
                ssize_t got = recv(w->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (got > 0) {
                    feed(w, buf, (size_t)got, received, lat, n_lat, cap_lat);
                    continue;
                }
                if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                    fprintf(stderr, "a watch ended early\n");
                    exit(1);
                }
                break;
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 9) {
        fprintf(stderr,
                "usage: %s HOST PORT NAMESPACE POD POD_FILE WATCHERS UPDATES INTERVAL_MS "
                "[SERVER_PID]\n",
                argv[0]);
        return 2;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1)
        die("address");
    const char *ns = argv[3];
    const char *name = argv[4];
    char *pod = read_file(argv[5]);
    long n_ws = atol(argv[6]), updates = atol(argv[7]), interval = atol(argv[8]);
    long pid = argc > 9 ? atol(argv[9]) : 0;
    if (n_ws <= 0 || updates <= 0)
        die("arguments");

    char path[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    int fd = connect_to(&addr);
    int code = put_pod(fd, path, pod, 0); /* the state every watch starts from */
    close(fd);
    if (code != 200) {
        fprintf(stderr, "PUT %s answered %d\n", path, code);
        return 1;
    }
    long rss_before = rss_kib(pid);
    int ep = epoll_create1(0);
    struct watcher *ws = calloc((size_t)n_ws, sizeof(*ws));
    char request[512];
    int rlen = snprintf(request, sizeof(request),
                        "GET /api/v1/namespaces/%s/pods?watch=1 HTTP/1.1\r\nHost: bench\r\n"
                        "Accept: application/json\r\n\r\n",
                        ns);
    for (long i = 0; i < n_ws; i++) {
        ws[i].fd = connect_to(&addr);
        ws[i].line = malloc(LINE_MAX_);
        if (!ws[i].line)
            die("malloc");
        send_all(ws[i].fd, request, (size_t)rlen);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ws[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, ws[i].fd, &ev) < 0)
            die("epoll_ctl");
    }
    size_t cap_lat = (size_t)n_ws * (size_t)updates, n_lat = 0;
    int64_t *lat = malloc(cap_lat * sizeof(*lat));
    if (!lat)
        die("malloc");
    pump(ep, ws, n_ws, true, 0, lat, &n_lat, cap_lat, now_ns() + 60 * 1000000000LL);
    long ready = 0;
    for (long i = 0; i < n_ws; i++)
        ready += ws[i].ready;
    if (ready != n_ws) {
        fprintf(stderr, "only %ld of %ld watches started\n", ready, n_ws);
        return 1;
    }
    long rss_watching = rss_kib(pid);

    struct updater u = {.addr = addr,
                        .path = path,
                        .pod = pod,
                        .updates = updates,
                        .interval_ms = interval,
                        .pid = pid,
                        .rss_peak_kib = rss_watching,
                        .put_ns = calloc((size_t)updates, sizeof(int64_t))};
    if (!u.put_ns)
        die("calloc");
    pthread_t t;
    if (pthread_create(&t, NULL, update_main, &u) != 0)
        die("pthread_create");
    int64_t deadline = now_ns() + (updates * interval + 10000) * 1000000LL;
    pump(ep, ws, n_ws, false, updates, lat, &n_lat, cap_lat, deadline);
    atomic_store(&u.stop, true);
    pthread_join(t, NULL);

    qsort(lat, n_lat, sizeof(*lat), cmp_i64);
    qsort(u.put_ns, (size_t)u.puts, sizeof(*u.put_ns), cmp_i64);
#define PCT(p)     (n_lat ? (double)lat[(size_t)((double)(n_lat - 1) * (p))] / 1000.0 : -1.0)
#define PUT_PCT(p) (u.puts ? (double)u.put_ns[(size_t)((double)(u.puts - 1) * (p))] / 1000.0 : -1.0)
    printf("{\"watchers\":%ld,\"updates\":%ld,\"interval_ms\":%ld,\"deliveries\":%zu,"
           "\"expected\":%zu,\"failed_updates\":%d,\"p50_us\":%.0f,\"p90_us\":%.0f,"
           "\"p99_us\":%.0f,\"max_us\":%.0f,\"put_p50_us\":%.0f,\"put_p99_us\":%.0f,"
           "\"rss_before_kib\":%ld,\"rss_watching_kib\":%ld,"
           "\"rss_peak_kib\":%ld}\n",
           n_ws, updates, interval, n_lat, cap_lat, u.failures, PCT(0.5), PCT(0.9), PCT(0.99),
           PCT(1.0), PUT_PCT(0.5), PUT_PCT(0.99), rss_before, rss_watching, u.rss_peak_kib);
    for (long i = 0; i < n_ws; i++) {
        close(ws[i].fd);
        free(ws[i].line);
    }
    free(ws);
    free(lat);
    free(u.put_ns);
    free(pod);
    close(ep);
    return 0;
}
