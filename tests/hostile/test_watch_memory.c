/*
 * test_watch_memory.c - what watches may make the server hold (docs/limits.md,
 * "Watch"):
 *
 *   - the store's in-memory watch history is bounded by the bytes of the
 *     objects it holds as well as by events, oldest revisions leaving first,
 *     and a watcher from before the ring still gets every revision (from the
 *     database) while one from before compaction gets CK_ECOMPACTED (410);
 *   - watch streams whose clients do not read share a budget; one beyond its
 *     share is cut between two whole events and its stream ends, and the
 *     server's buffered total goes back to zero.
 *
 * Short forms; bench/hostile/ has the long ones (1,000 watchers that never
 * read, a 2.5 MB object updated 1,000 times) with the server's RSS measured.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "../../lib/apiserver/internal.h"
#include "../../lib/store/internal.h"
#include "apiserver/httptest.h"
#include "store/storetest.h"

static char dir[] = "/tmp/ckube-test-hostile-watch-XXXXXX";
static struct ck_apiserver *server;

#include "apiserver/apitest.h"

/* ---- the store's watch history ------------------------------------------ */

struct history {
    pthread_mutex_t lock;
    struct ck__event log[64];
    size_t n;
    int64_t compacted;
};

static int history_read(void *backend, const char *key, size_t key_len, bool prefix, int64_t from,
                        int64_t to, int (*emit)(const struct ck__event *ev, void *arg), void *arg,
                        int64_t *ret_compacted, struct ck_err *reterr)
{
    struct history *h = backend;
    pthread_mutex_lock(&h->lock);
    size_t n = h->n;
    int64_t compacted = h->compacted;
    pthread_mutex_unlock(&h->lock);
    if (from <= compacted) {
        *ret_compacted = compacted;
        return ck_err_set(reterr, CK_ECOMPACTED, "compacted");
    }
    for (size_t i = 0; i < n; i++)
        if (h->log[i].revision >= from && h->log[i].revision <= to &&
            ck__key_matches(key, key_len, prefix, h->log[i].kv->key, h->log[i].kv->key_len))
            emit(&h->log[i], arg);
    return 0;
}

/* Puts a value of size bytes at the next revision: into the history, then the hub. */
static void put(struct ck__hub *hub, struct history *h, size_t size)
{
    char *value = malloc(size);
    assert_non_null(value);
    memset(value, 'v', size);
    pthread_mutex_lock(&h->lock);
    int64_t rev = (int64_t)h->n + 1;
    struct ck_kv *kv = ck__kv_new("/big", 4, value, size, 1, rev, rev);
    assert_non_null(kv);
    h->log[h->n++] = (struct ck__event){.type = CK_STORE_EVENT_PUT, .revision = rev, .kv = kv};
    pthread_mutex_unlock(&h->lock);
    free(value);
    struct ck__event ev = {.type = CK_STORE_EVENT_PUT, .revision = rev, .kv = ck_kv_ref(kv)};
    ck__hub_publish(hub, &ev, 1, rev);
}

static void history_release(struct history *h)
{
    for (size_t i = 0; i < h->n; i++)
        ck_kv_unref(h->log[i].kv);
}

static void test_ring_is_bounded_by_bytes_oldest_first(void **state)
{
    (void)state;
    struct history h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck__hub *hub = NULL;
    assert_int_equal(ck__hub_new_bounded(1000, 64 * 1024, 0, 0, history_read, &h, &hub, NULL), 0);
    for (int i = 0; i < 40; i++)
        put(hub, &h, 8 * 1024);
    size_t events, bytes;
    int64_t floor;
    ck__hub_usage(hub, &events, &bytes, &floor);
    assert_true(bytes <= 64 * 1024);
    assert_true(events >= 6 && events <= 8); /* 8 KiB values and their boxes */
    assert_int_equal(floor, 40 - (int64_t)events);

    /* from revision 1, long gone from the ring: every revision, once, in order */
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w = NULL;
    assert_int_equal(ck__hub_watch(hub, NULL, "/big", 4, false, 1, 0, collect, &c, &w, NULL), 0);
    assert_true(collector_wait(&c, &c.n, 40));
    pthread_mutex_lock(&c.lock);
    for (size_t i = 0; i < 40; i++)
        assert_int_equal(c.events[i].revision, (int64_t)i + 1);
    pthread_mutex_unlock(&c.lock);
    ck__hub_watch_cancel(w);
    collector_release(&c);

    /* from below the compacted revision: the watch ends with CK_ECOMPACTED */
    collector_init(&c);
    assert_int_equal(ck__hub_watch(hub, NULL, "/big", 4, false, 3, 10, collect, &c, &w, NULL), 0);
    assert_true(collector_wait(&c, &c.n, 1));
    pthread_mutex_lock(&c.lock);
    assert_int_equal(c.events[0].type, CK_STORE_EVENT_ERROR);
    assert_int_equal(c.events[0].error, CK_ECOMPACTED);
    pthread_mutex_unlock(&c.lock);
    ck__hub_watch_cancel(w);
    collector_release(&c);
    ck__hub_free(hub);
    history_release(&h);
}

static void test_the_newest_revision_stays_however_large(void **state)
{
    (void)state;
    struct history h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck__hub *hub = NULL;
    assert_int_equal(ck__hub_new_bounded(1000, 1024, 0, 0, history_read, &h, &hub, NULL), 0);
    put(hub, &h, 16 * 1024);
    put(hub, &h, 16 * 1024);
    size_t events, bytes;
    int64_t floor;
    ck__hub_usage(hub, &events, &bytes, &floor);
    assert_int_equal(events, 1);
    assert_int_equal(floor, 1);
    ck__hub_free(hub);
    history_release(&h);
}

static void test_store_url_sets_the_history_bounds(void **state)
{
    (void)state;
    char url[512];
    struct ck_store *store = NULL;
    struct ck_err err = {0};
    snprintf(url, sizeof(url), "sqlite://%s/opts.db?watch-history-bytes=12x", dir);
    assert_int_equal(ck_store_open(url, NULL, &store, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "watch-history-bytes=12x"));
    snprintf(url, sizeof(url), "sqlite://%s/opts.db?colour=blue", dir);
    assert_int_equal(ck_store_open(url, NULL, &store, &err), CK_EINVAL);
    snprintf(url, sizeof(url),
             "sqlite://%s/opts.db?watch-history-events=10&watch-history-bytes=4096", dir);
    assert_int_equal(ck_store_open(url, NULL, &store, &err), 0);
    ck_store_close(store);
    /* the options are not part of the file name */
    snprintf(url, sizeof(url), "%s/opts.db", dir);
    assert_int_equal(access(url, F_OK), 0);
    static const char *const files[] = {"opts.db", "opts.db-wal", "opts.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(url, sizeof(url), "%s/%s", dir, files[i]);
        unlink(url);
    }
}

/* ---- watch streams that are not read ------------------------------------ */

/* A connection that asks for a watch, then reads nothing (a tiny receive window). */
static int open_idle_watch(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(ck_apiserver_port(server))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    static const char request[] = "GET /api/v1/namespaces/default/pods?watch=true HTTP/1.1\r\n"
                                  "Host: localhost\r\n\r\n";
    assert_int_equal(send(fd, request, sizeof(request) - 1, 0), (ssize_t)sizeof(request) - 1);
    return fd;
}

/*
 * Reads the whole response (until the chunked body's last chunk or 30 s) and
 * returns its body, de-chunked; *ret_ended says whether the last chunk came.
 */
static char *read_watch(int fd, size_t *ret_len, bool *ret_ended)
{
    struct httptest_buf raw = {0};
    char block[65536];
    time_t give_up = time(NULL) + 30;
    *ret_ended = false;
    while (time(NULL) < give_up) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 500) <= 0)
            continue;
        ssize_t n = recv(fd, block, sizeof(block), 0);
        if (n <= 0)
            break;
        httptest_collect(block, 1, (size_t)n, &raw);
        if (raw.len >= 5 && memcmp(raw.buf + raw.len - 5, "0\r\n\r\n", 5) == 0) {
            *ret_ended = true;
            break;
        }
    }
    assert_non_null(raw.buf);
    char *body_start = strstr(raw.buf, "\r\n\r\n");
    assert_non_null(body_start);
    const char *p = body_start + 4;
    const char *end = raw.buf + raw.len;
    struct httptest_buf body = {0};
    while (p < end) {
        char *after;
        unsigned long size = strtoul(p, &after, 16);
        if (after == p || after + 2 > end || memcmp(after, "\r\n", 2) != 0)
            break;
        p = after + 2;
        if (size == 0 || p + size > end)
            break;
        httptest_collect((char *)p, 1, size, &body);
        p += size + 2;
    }
    free(raw.buf);
    *ret_len = body.len;
    return body.buf;
}

static void test_unread_watches_are_cut_between_whole_events(void **state)
{
    (void)state;
    atomic_store(&server->watch_budget, 1024 * 1024);
    enum { WATCHERS = 4, PODS = 60 };
    int fds[WATCHERS];
    for (int i = 0; i < WATCHERS; i++)
        fds[i] = open_idle_watch();
    /* let the watches start before the events */
    for (int i = 0; i < 100 && atomic_load(&server->active_watches) < WATCHERS; i++)
        usleep(20000);
    assert_int_equal(atomic_load(&server->active_watches), WATCHERS);
    size_t arg_len = 200 * 1024;
    char *arg = malloc(arg_len + 1);
    assert_non_null(arg);
    memset(arg, 'a', arg_len);
    arg[arg_len] = '\0';
    size_t body_size = arg_len + 256;
    char *body = malloc(body_size);
    assert_non_null(body);
    for (int i = 0; i < PODS; i++) {
        snprintf(body, body_size,
                 "{\"metadata\":{\"name\":\"w%d\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                 "\"image\":\"x\",\"args\":[\"%s\"]}]}}",
                 i, arg);
        json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
        /* never more than the budget and the shares of the streams below it */
        assert_true(atomic_load(&server->watch_buffered) <= 2 * 1024 * 1024 + body_size);
    }
    free(body);
    free(arg);
    for (int i = 0; i < WATCHERS; i++) {
        size_t len = 0;
        bool ended = false;
        char *events = read_watch(fds[i], &len, &ended);
        assert_true(ended); /* the stream was cut, and ended properly */
        /* whole events only: every line is one JSON object */
        size_t lines = 0;
        for (char *line = events, *nl; line < events + len; line = nl + 1) {
            nl = memchr(line, '\n', (size_t)(events + len - line));
            assert_non_null(nl);
            json_error_t jerr;
            json_t *ev = json_loadb(line, (size_t)(nl - line), 0, &jerr);
            if (!ev)
                fail_msg("watcher %d, event %zu is not whole JSON: %s", i, lines, jerr.text);
            assert_string_equal(json_string_value(json_object_get(ev, "type")), "ADDED");
            json_decref(ev);
            lines++;
        }
        assert_true(lines < PODS);
        free(events);
        close(fds[i]);
    }
    for (int i = 0; i < 250 && atomic_load(&server->active_watches) > 0; i++)
        usleep(20000);
    assert_int_equal(atomic_load(&server->active_watches), 0);
    assert_int_equal(atomic_load(&server->watch_buffered), 0);
    atomic_store(&server->watch_budget, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_is_bounded_by_bytes_oldest_first),
        cmocka_unit_test(test_the_newest_revision_stays_however_large),
        cmocka_unit_test(test_store_url_sets_the_history_bounds),
        cmocka_unit_test(test_unread_watches_are_cut_between_whole_events),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
