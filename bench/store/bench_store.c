/*
 * bench_store.c - the store's load generator (bench/store/run.sh drives it).
 *
 *   bench_store URL          ckube's store on URL (sqlite://... or etcd://...)
 *   bench_store --raw HOST:PORT   the same puts, range and watches straight to
 *                            etcd's v3 gateway (POST /v3/kv/put, /v3/kv/range,
 *                            /v3/watch), no ckube
 *
 * Measures, each as the median of REPS runs:
 *   puts/s with 1 KiB values from 1 and from 16 writer threads (DURATION s);
 *   the time to range 10,000 keys under a prefix;
 *   watch delivery latency, from just before the put to the callback (raw:
 *   to the event's line arriving), with 100 watchers on one prefix: p50 and
 *   p99 over every delivery.
 * Prints one "name value unit" line per figure.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h" /* line splitting, for the raw gateway requests */
#include "ckube/store.h"

#define REPS     3
#define DURATION 3.0
#define VALUE    1024
#define RANGE_N  10000
#define WATCHERS 100
#define WATCH_N  300

static struct ck_store *store;
static const char *raw_ep; /* --raw: host:port */
static char value[VALUE];
static char *vb64; /* value in base64, for --raw */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/* ---- raw etcd gateway ----------------------------------------------------- */

static size_t sink(char *p, size_t s, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return s * n;
}

/* POSTs body (consumed) to /v3/<path>; 0 on HTTP 200. */
static int raw_post(CURL *c, const char *path, json_t *body)
{
    char url[300], *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text)
        return -1;
    snprintf(url, sizeof(url), "http://%s/v3/%s", raw_ep, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    long status = 0;
    CURLcode cr = curl_easy_perform(c);
    free(text);
    if (cr != CURLE_OK)
        return -1;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status == 200 ? 0 : -1;
}

/* The JSON string of base64(p[0..n)), for the gateway's bytes fields. */
static json_t *b64_json(const char *p, size_t n)
{
    char *e = ck_base64_encode(p, n);
    json_t *j = json_string(e ? e : "");
    free(e);
    return j;
}

static int raw_put(CURL *c, const char *key, size_t key_len)
{
    return raw_post(c, "kv/put",
                    json_pack("{s:o,s:s}", "key", b64_json(key, key_len), "value", vb64));
}

static int raw_put_value(CURL *c, const char *key, size_t key_len, const char *v, size_t vl)
{
    return raw_post(
        c, "kv/put",
        json_pack("{s:o,s:o}", "key", b64_json(key, key_len), "value", b64_json(v, vl)));
}

/* ---- puts ----------------------------------------------------------------- */

struct putter {
    int id;
    double until;
    long done;
    int run;
};

static void *put_main(void *arg)
{
    struct putter *p = arg;
    CURL *c = raw_ep ? curl_easy_init() : NULL;
    for (long i = 0; now_s() < p->until; i++) {
        char k[64];
        int kl = snprintf(k, sizeof(k), "/bench/puts/%d/%d/%ld", p->run, p->id, i % 1000);
        struct ck_err err = {0};
        int r = raw_ep ? raw_put(c, k, (size_t)kl)
                       : ck_store_put(store, k, (size_t)kl, value, VALUE, NULL, &err);
        if (r < 0) {
            fprintf(stderr, "put failed: %s\n", raw_ep ? "gateway request failed" : err.msg);
            break;
        }
        p->done++;
    }
    if (c)
        curl_easy_cleanup(c);
    return NULL;
}

static double bench_puts(int writers, int run)
{
    struct putter ps[16];
    pthread_t th[16];
    double start = now_s();
    for (int i = 0; i < writers; i++) {
        ps[i] = (struct putter){.id = i, .until = start + DURATION, .run = run};
        pthread_create(&th[i], NULL, put_main, &ps[i]);
    }
    long total = 0;
    for (int i = 0; i < writers; i++) {
        pthread_join(th[i], NULL);
        total += ps[i].done;
    }
    return (double)total / (now_s() - start);
}

/* ---- range ---------------------------------------------------------------- */

static void fill_range(void)
{
    CURL *c = raw_ep ? curl_easy_init() : NULL;
    for (int i = 0; i < RANGE_N; i++) {
        char k[64];
        int kl = snprintf(k, sizeof(k), "/bench/range/%05d", i);
        struct ck_err err = {0};
        int r = raw_ep ? raw_put(c, k, (size_t)kl)
                       : ck_store_put(store, k, (size_t)kl, value, VALUE, NULL, &err);
        if (r < 0) {
            fprintf(stderr, "fill failed: %s\n", raw_ep ? "gateway request failed" : err.msg);
            exit(1);
        }
    }
    if (c)
        curl_easy_cleanup(c);
}

static double bench_range(void)
{
    double t0 = now_s();
    if (raw_ep) {
        CURL *c = curl_easy_init();
        json_t *body = json_pack("{s:o,s:o}", "key", b64_json("/bench/range/", 13), "range_end",
                                 b64_json("/bench/range0", 13));
        if (raw_post(c, "kv/range", body) < 0)
            fprintf(stderr, "raw range failed\n");
        curl_easy_cleanup(c);
    } else {
        struct ck_store_range req = {.key = "/bench/range/", .key_len = 13, .prefix = true};
        struct ck_store_range_result res;
        struct ck_err err = {0};
        if (ck_store_range(store, &req, &res, &err) < 0 || res.n_kvs != RANGE_N)
            fprintf(stderr, "range failed: %s (%zu kvs)\n", err.msg, res.n_kvs);
        else
            ck_store_range_result_release(&res);
    }
    return (now_s() - t0) * 1000;
}

/* ---- watch latency ---------------------------------------------------------- */

static double *lat;
static atomic_size_t n_lat;

/* One delivery of a value written by bench_watch: "<send time>". */
static void record(const char *text)
{
    double sent;
    if (sscanf(text, "%lf", &sent) != 1)
        return;
    size_t i = atomic_fetch_add(&n_lat, 1);
    if (i < (size_t)WATCHERS * WATCH_N)
        lat[i] = (now_s() - sent) * 1000;
}

static void on_event(const struct ck_store_event *ev, void *arg)
{
    (void)arg;
    if (ev->type == CK_STORE_EVENT_PUT)
        record(ev->kv->value);
}

/*
 * Raw etcd watches: WATCHERS streaming POST /v3/watch in one curl multi
 * handle, served by one thread (as ckube's etcd backend has one thread per
 * watch, this is the cheaper client).
 */
struct raw_watch {
    CURL *c;
    struct ck__buf line;
};

static struct raw_watch *rw;
static CURLM *rw_multi;
static atomic_int rw_created;
static atomic_bool rw_stop;

static bool raw_watch_line(void *arg, const char *p, size_t n)
{
    (void)arg;
    json_t *msg = json_loadb(p, n, 0, NULL);
    json_t *res = json_object_get(msg, "result");
    if (json_is_true(json_object_get(res, "created")))
        atomic_fetch_add(&rw_created, 1);
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(res, "events"), i, ev)
    {
        const char *v = json_string_value(json_object_get(json_object_get(ev, "kv"), "value"));
        size_t vl;
        char *d = v ? ck_base64_decode(v, &vl) : NULL;
        if (d)
            record(d);
        free(d);
    }
    json_decref(msg);
    return true;
}

static size_t raw_watch_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct raw_watch *w = arg;
    return ck__buf_lines(&w->line, data, size * nmemb, raw_watch_line, NULL) ? size * nmemb : 0;
}

static void *raw_watch_main(void *arg)
{
    (void)arg;
    int running = 1;
    while (running && !atomic_load(&rw_stop)) {
        curl_multi_perform(rw_multi, &running);
        curl_multi_poll(rw_multi, NULL, 0, 100, NULL);
    }
    return NULL;
}

static void raw_watch_start(pthread_t *th, char **body)
{
    json_t *o = json_pack("{s:{s:o,s:o}}", "create_request", "key", b64_json("/bench/watch/", 13),
                          "range_end", b64_json("/bench/watch0", 13));
    *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char url[300];
    snprintf(url, sizeof(url), "http://%s/v3/watch", raw_ep);
    rw = calloc(WATCHERS, sizeof(*rw));
    rw_multi = curl_multi_init();
    atomic_store(&rw_created, 0);
    atomic_store(&rw_stop, false);
    for (int i = 0; i < WATCHERS; i++) {
        rw[i].c = curl_easy_init();
        curl_easy_setopt(rw[i].c, CURLOPT_URL, url);
        curl_easy_setopt(rw[i].c, CURLOPT_POSTFIELDS, *body);
        curl_easy_setopt(rw[i].c, CURLOPT_WRITEFUNCTION, raw_watch_write);
        curl_easy_setopt(rw[i].c, CURLOPT_WRITEDATA, &rw[i]);
        curl_multi_add_handle(rw_multi, rw[i].c);
    }
    pthread_create(th, NULL, raw_watch_main, NULL);
    /* every watch must exist before the first put */
    double deadline = now_s() + 30;
    while (atomic_load(&rw_created) < WATCHERS && now_s() < deadline) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
}

static void raw_watch_stop(pthread_t th, char *body)
{
    atomic_store(&rw_stop, true);
    curl_multi_wakeup(rw_multi);
    pthread_join(th, NULL);
    for (int i = 0; i < WATCHERS; i++) {
        curl_multi_remove_handle(rw_multi, rw[i].c);
        curl_easy_cleanup(rw[i].c);
        free(rw[i].line.p);
    }
    curl_multi_cleanup(rw_multi);
    free(rw);
    free(body);
}

static void bench_watch(double *p50, double *p99)
{
    lat = calloc((size_t)WATCHERS * WATCH_N, sizeof(*lat));
    atomic_store(&n_lat, 0);
    struct ck_store_watch *w[WATCHERS];
    struct ck_err err = {0};
    pthread_t th;
    char *body = NULL;
    CURL *c = raw_ep ? curl_easy_init() : NULL;
    if (raw_ep)
        raw_watch_start(&th, &body);
    for (int i = 0; !raw_ep && i < WATCHERS; i++)
        if (ck_store_watch(store, "/bench/watch/", 13, true, 0, on_event, NULL, &w[i], &err) < 0) {
            fprintf(stderr, "watch: %s\n", err.msg);
            exit(1);
        }
    for (int i = 0; i < WATCH_N; i++) {
        char k[64], v[64];
        int kl = snprintf(k, sizeof(k), "/bench/watch/%d", i % 10);
        /* the timestamp is taken just before the put; the latency includes the
         * commit itself, so it is an upper bound of commit -> delivery */
        int vl = snprintf(v, sizeof(v), "%.9f", now_s());
        int r = raw_ep ? raw_put_value(c, k, (size_t)kl, v, (size_t)vl)
                       : ck_store_put(store, k, (size_t)kl, v, (size_t)vl, NULL, &err);
        if (r < 0)
            fprintf(stderr, "put: %s\n", raw_ep ? "gateway request failed" : err.msg);
        /* pace: 1 ms between puts, so deliveries measure latency, not backlog */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    double deadline = now_s() + 30;
    while (atomic_load(&n_lat) < (size_t)WATCHERS * WATCH_N && now_s() < deadline) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (raw_ep) {
        raw_watch_stop(th, body);
        curl_easy_cleanup(c);
    }
    for (int i = 0; !raw_ep && i < WATCHERS; i++)
        ck_store_watch_cancel(w[i]);
    size_t n = atomic_load(&n_lat);
    if (n > (size_t)WATCHERS * WATCH_N)
        n = (size_t)WATCHERS * WATCH_N;
    qsort(lat, n, sizeof(*lat), cmp_double);
    *p50 = n ? lat[n / 2] : -1;
    *p99 = n ? lat[n * 99 / 100] : -1;
    if (n < (size_t)WATCHERS * WATCH_N)
        fprintf(stderr, "watch: only %zu of %d deliveries\n", n, WATCHERS * WATCH_N);
    free(lat);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--raw") == 0) {
        raw_ep = argv[2];
    } else if (argc != 2) {
        fprintf(stderr, "usage: bench_store URL | bench_store --raw HOST:PORT\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    memset(value, 'v', sizeof(value));
    vb64 = ck_base64_encode(value, VALUE);
    const char *name = raw_ep ? "raw-etcd" : NULL;
    if (!raw_ep) {
        /* BENCH_SYNC=normal: SQLite with synchronous=NORMAL (see docs) */
        const char *sync = getenv("BENCH_SYNC");
        struct ck_store_options opts = {.compaction_interval_ms = -1,
                                        .sqlite_synchronous_normal =
                                            sync && strcmp(sync, "normal") == 0};
        struct ck_err err = {0};
        if (ck_store_open(argv[1], &opts, &store, &err) < 0) {
            fprintf(stderr, "open: %s\n", err.msg);
            return 1;
        }
        name = strcmp(ck_store_backend(store), "sqlite") != 0 ? "ckube-etcd"
               : opts.sqlite_synchronous_normal               ? "sqlite-NORMAL"
                                                              : "ckube-sqlite";
    }
    int run = 0;
    int writers[] = {1, 16};
    for (size_t w = 0; w < 2; w++) {
        double v[REPS];
        for (int i = 0; i < REPS; i++)
            v[i] = bench_puts(writers[w], run++);
        printf("%-13s puts/s, %2d writer(s), 1 KiB: %8.0f\n", name, writers[w], median(v, REPS));
        fflush(stdout);
    }
    fill_range();
    double v[REPS];
    for (int i = 0; i < REPS; i++)
        v[i] = bench_range();
    printf("%-13s range of %d keys (1 KiB): %8.1f ms\n", name, RANGE_N, median(v, REPS));
    double p50[REPS], p99[REPS];
    for (int i = 0; i < REPS; i++)
        bench_watch(&p50[i], &p99[i]);
    printf("%-13s watch latency, %d watchers: p50 %.2f ms, p99 %.2f ms\n", name, WATCHERS,
           median(p50, REPS), median(p99, REPS));
    ck_store_close(store);
    free(vb64);
    curl_global_cleanup();
    return 0;
}
