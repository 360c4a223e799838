/*
 * bench_workqueue.c - work queue add/get/done operations per second, 1 and 2 threads,
 * beside a reference: a bare mutex + condition variable ring buffer doing the same
 * hand-off with no deduplication, no per-key state and no metrics.
 *
 * One operation is one key going through add, get and done. With 1 thread the same
 * thread does all three; with 2 threads a producer adds and a consumer gets and marks
 * done. Every key is distinct (N precomputed strings), so the queue's stinginess never
 * drops work and both sides move exactly N keys. Prints the median of R runs.
 *
 * Usage: bench_workqueue [N] [R]   (defaults 1000000 and 5)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/client.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the reference: an unbounded ring of pointers under one mutex ------------ */

struct ring {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    const char **buf;
    size_t head, len, cap;
};

static void ring_push(struct ring *r, const char *s)
{
    pthread_mutex_lock(&r->mu);
    if (r->len == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        const char **buf = malloc(cap * sizeof(*buf));
        for (size_t i = 0; i < r->len; i++)
            buf[i] = r->buf[(r->head + i) % r->cap];
        free(r->buf);
        r->buf = buf;
        r->cap = cap;
        r->head = 0;
    }
    r->buf[(r->head + r->len++) % r->cap] = s;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->mu);
}

static const char *ring_pop(struct ring *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->len == 0)
        pthread_cond_wait(&r->cond, &r->mu);
    const char *s = r->buf[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    pthread_mutex_unlock(&r->mu);
    return s;
}

/* ---- runs ----------------------------------------------------------------------- */

static char **keys;
static size_t nkeys;

struct run {
    struct ck_wq *q;
    struct ring *ring;
};

static void *wq_producer(void *arg)
{
    struct run *run = arg;
    for (size_t i = 0; i < nkeys; i++)
        ck_wq_add(run->q, keys[i]);
    return NULL;
}

static void *ring_producer(void *arg)
{
    struct run *run = arg;
    for (size_t i = 0; i < nkeys; i++)
        ring_push(run->ring, keys[i]);
    return NULL;
}

static double run_wq(int threads)
{
    struct run run = {0};
    struct ck_wq_options opts = {.name = "bench"};
    if (ck_wq_new(&opts, &run.q, NULL) != 0)
        exit(1);
    double start = now_s();
    if (threads == 1) {
        for (size_t i = 0; i < nkeys; i++) {
            const char *k;
            ck_wq_add(run.q, keys[i]);
            ck_wq_get(run.q, &k);
            ck_wq_done(run.q, k);
        }
    } else {
        pthread_t t;
        pthread_create(&t, NULL, wq_producer, &run);
        for (size_t i = 0; i < nkeys; i++) {
            const char *k;
            ck_wq_get(run.q, &k);
            ck_wq_done(run.q, k);
        }
        pthread_join(t, NULL);
    }
    double elapsed = now_s() - start;
    ck_wq_free(run.q);
    return (double)nkeys / elapsed;
}

static double run_ring(int threads)
{
    struct ring ring = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    struct run run = {.ring = &ring};
    volatile size_t sink = 0;
    double start = now_s();
    if (threads == 1) {
        for (size_t i = 0; i < nkeys; i++) {
            ring_push(&ring, keys[i]);
            sink += (size_t)ring_pop(&ring)[0];
        }
    } else {
        pthread_t t;
        pthread_create(&t, NULL, ring_producer, &run);
        for (size_t i = 0; i < nkeys; i++)
            sink += (size_t)ring_pop(&ring)[0];
        pthread_join(t, NULL);
    }
    double elapsed = now_s() - start;
    free(ring.buf);
    (void)sink;
    return (double)nkeys / elapsed;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double (*fn)(int), int threads, int runs)
{
    double *v = malloc((size_t)runs * sizeof(*v));
    for (int i = 0; i < runs; i++)
        v[i] = fn(threads);
    qsort(v, (size_t)runs, sizeof(*v), cmp_double);
    double m = v[runs / 2];
    free(v);
    return m;
}

int main(int argc, char **argv)
{
    nkeys = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (nkeys == 0 || runs < 1) {
        fprintf(stderr, "usage: %s [N] [R]\n", argv[0]);
        return 2;
    }
    keys = malloc(nkeys * sizeof(*keys));
    for (size_t i = 0; i < nkeys; i++) {
        char buf[48];
        snprintf(buf, sizeof(buf), "default/pod-%zu", i);
        keys[i] = strdup(buf);
    }
    printf("keys per run: %zu, runs: %d, medians in operations (add+get+done) per second\n", nkeys,
           runs);
    printf("%-8s %16s %16s %8s\n", "threads", "ck_wq", "mutex+cond ring", "ratio");
    for (int threads = 1; threads <= 2; threads++) {
        double wq = median(run_wq, threads, runs);
        double ring = median(run_ring, threads, runs);
        printf("%-8d %16.0f %16.0f %8.2f\n", threads, wq, ring, wq / ring);
    }
    for (size_t i = 0; i < nkeys; i++)
        free(keys[i]);
    free(keys);
    return 0;
}
