/*
 * spike.c - the shared parts of the HTTP-layer spike servers (see spike.h).
 */
#define _GNU_SOURCE
#include "spike.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* About the size of a small ConfigMap as the API server returns it (1.6 KB). */
const char spike_obj[] =
    "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"spike\","
    "\"namespace\":\"default\",\"uid\":\"6c9d3f4e-0b1a-4c55-9f0e-6a1de2b9c001\","
    "\"resourceVersion\":\"123456\",\"creationTimestamp\":\"2026-12-07T12:00:00Z\"},\"data\":{"
    "\"k00\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k01\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k02\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k03\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k04\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k05\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k06\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k07\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k08\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k09\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k10\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k11\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k12\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k13\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k14\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k15\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k16\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k17\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k18\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"k19\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}\n";
const size_t spike_obj_len = sizeof spike_obj - 1;

struct spike_event spike_ring[SPIKE_RING];

static _Atomic uint64_t published;
static pthread_mutex_t feed_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t feed_cv = PTHREAD_COND_INITIALIZER;
static int fires;
static struct spike_opts feed_opts;
static int feed_loops;
static void (*feed_wake)(int loop);

int spike_parse_args(int argc, char **argv, struct spike_opts *o)
{
    *o = (struct spike_opts){.threads = 2, .port = 8443, .events = 100, .interval_ms = 50};
    int c;
    while ((c = getopt(argc, argv, "t:p:c:k:n:i:")) != -1) {
        switch (c) {
        case 't':
            o->threads = atoi(optarg);
            break;
        case 'p':
            o->port = atoi(optarg);
            break;
        case 'c':
            o->cert = optarg;
            break;
        case 'k':
            o->key = optarg;
            break;
        case 'n':
            o->events = atoi(optarg);
            break;
        case 'i':
            o->interval_ms = atoi(optarg);
            break;
        default:
            return -1;
        }
    }
    if (!o->cert || !o->key || o->threads < 1) {
        fprintf(stderr,
                "usage: %s -c CERT -k KEY [-t THREADS] [-p PORT] [-n EVENTS] [-i INTERVAL_MS]\n",
                argv[0]);
        return -1;
    }
    return 0;
}

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char ours[] = "\x02h2\x08http/1.1";
    (void)ssl, (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, ours, sizeof ours - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    return SSL_TLSEXT_ERR_OK;
}

SSL_CTX *spike_tls_ctx(const struct spike_opts *o)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* full handshakes only, as the nginx reference is configured */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "cannot load %s / %s\n", o->cert, o->key);
        exit(1);
    }
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
    return ctx;
}

void spike_listen_opts(int fd)
{
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
}

uint64_t spike_published(void)
{
    return atomic_load_explicit(&published, memory_order_acquire);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void publish(void)
{
    uint64_t n = atomic_load_explicit(&published, memory_order_relaxed);
    struct spike_event *e = &spike_ring[n % SPIKE_RING];
    /* "ts" is the monotonic clock when the event is published: the client
     * on the same machine subtracts it from its arrival time */
    int len = snprintf(
        e->data, sizeof e->data,
        "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
        "\"metadata\":{\"name\":\"spike\",\"namespace\":\"default\",\"resourceVersion\":\"%llu\"},"
        "\"data\":{\"ts\":\"%llu\",\"pad\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"}}}\n",
        (unsigned long long)n + 1, (unsigned long long)now_ns());
    e->len = (size_t)len;
    int head = snprintf(e->chunk, sizeof e->chunk, "%x\r\n", len);
    memcpy(e->chunk + head, e->data, (size_t)len);
    memcpy(e->chunk + head + len, "\r\n", 2);
    e->chunk_len = (size_t)head + (size_t)len + 2;
    atomic_store_explicit(&published, n + 1, memory_order_release);
    for (int i = 0; i < feed_loops; i++)
        feed_wake(i);
}

static void *feeder(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&feed_mu);
        while (fires == 0)
            pthread_cond_wait(&feed_cv, &feed_mu);
        fires--;
        pthread_mutex_unlock(&feed_mu);
        for (int i = 0; i < feed_opts.events; i++) {
            publish();
            struct timespec d = {feed_opts.interval_ms / 1000,
                                 (long)(feed_opts.interval_ms % 1000) * 1000000};
            nanosleep(&d, NULL);
        }
    }
    return NULL;
}

void spike_feed_start(const struct spike_opts *o, int nloops, void (*wake)(int loop))
{
    pthread_t t;
    feed_opts = *o;
    feed_loops = nloops;
    feed_wake = wake;
    pthread_create(&t, NULL, feeder, NULL);
    pthread_detach(t);
}

void spike_feed_fire(void)
{
    pthread_mutex_lock(&feed_mu);
    fires++;
    pthread_cond_signal(&feed_cv);
    pthread_mutex_unlock(&feed_mu);
}

void spike_run(const char *name, const struct spike_opts *o, void *(*run)(void *), void *loops,
               size_t size)
{
    fprintf(stderr, "%s: %d threads on 127.0.0.1:%d\n", name, o->threads, o->port);
    for (int i = 1; i < o->threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, run, (char *)loops + (size_t)i * size);
    }
    run(loops);
}
