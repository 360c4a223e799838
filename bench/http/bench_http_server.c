/*
 * bench_http_server.c - libckube-http serving what bench/http-spike's servers
 * serve, for h2load, wrk and the spike's watch_client to measure beside them:
 *
 *   bench_http_server [-t LOOPS] [-p PORT] [-c CERT -k KEY] [-s SIZE]
 *
 * GET /obj answers the same SIZE bytes of JSON (default 1,673, the spike's;
 * one shared buffer, a reference per answer); GET /watch streams the events POST-less GET /fire
 * publishes: 100 events of the spike's shape (with its "ts"), 50 ms apart,
 * through one broadcast channel. Runs until SIGINT or SIGTERM, then prints its CPU time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ckube/http.h"

static struct ck_http_buf *obj;
static struct ck_http_channel *channel;
static const struct ck_http_header json[] = {{"Content-Type", "application/json"}};

/* The spike's events: "ts" is the monotonic clock at publication, which watch_client
 * subtracts from its arrival time. */
static void *feed(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        char ev[512];
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        unsigned long long ns =
            (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec;
        int n = snprintf(ev, sizeof ev,
                         "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\","
                         "\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"spike\",\"namespace\":"
                         "\"default\",\"resourceVersion\":\"%d\"},\"data\":{\"ts\":\"%llu\","
                         "\"pad\":\"%0128d\"}}}\n",
                         i + 1, ns, 0);
        struct ck_http_buf *b = ck_http_buf_new(ev, (size_t)n);
        ck_http_channel_publish(channel, b);
        ck_http_buf_unref(b);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void on_request(struct ck_http_req *req, void *arg)
{
    const char *t = ck_http_req_target(req);
    (void)arg;
    if (strcmp(t, "/obj") == 0) {
        ck_http_respond(req, 200, json, 1, obj);
    } else if (strcmp(t, "/watch") == 0) {
        ck_http_stream_start(req, 200, json, 1, NULL, NULL);
        ck_http_stream_subscribe(req, channel);
    } else if (strcmp(t, "/fire") == 0) {
        pthread_t th;
        pthread_create(&th, NULL, feed, NULL);
        pthread_detach(th);
        ck_http_respond_bytes(req, 200, NULL, 0, "fired\n", 6);
    } else {
        ck_http_respond_bytes(req, 404, NULL, 0, NULL, 0);
    }
}

int main(int argc, char **argv)
{
    struct ck_http_config cfg = {.port = 8443, .on_request = on_request};
    int opt;
    size_t size = 1673;
    while ((opt = getopt(argc, argv, "t:p:c:k:s:")) != -1) {
        switch (opt) {
        case 't':
            cfg.loops = atoi(optarg);
            break;
        case 'p':
            cfg.port = (uint16_t)atoi(optarg);
            break;
        case 'c':
            cfg.cert_file = optarg;
            break;
        case 'k':
            cfg.key_file = optarg;
            break;
        case 's':
            size = (size_t)atol(optarg);
            break;
        default:
            return 2;
        }
    }
    if (size < 40)
        size = 40;
    char *body = malloc(size);
    if (!body)
        return 1;
    memset(body, 'a', size);
    memcpy(body, "{\"kind\":\"ConfigMap\",\"data\":{\"k\":\"", 34);
    memcpy(body + size - 3, "\"}}", 3);
    obj = ck_http_buf_new(body, size);
    free(body);
    struct ck_http_server *srv;
    char err[256] = "";
    if (ck_http_server_new(&cfg, &srv, err, sizeof err) != 0) {
        fprintf(stderr, "bench_http_server: %s\n", err);
        return 1;
    }
    channel = ck_http_channel_new(srv);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the loops inherit the mask */
    signal(SIGPIPE, SIG_IGN);
    ck_http_server_start(srv);
    printf("listening on %u\n", ck_http_server_port(srv));
    fflush(stdout);
    int sig;
    sigwait(&set, &sig);
    ck_http_server_shutdown(srv, 1000);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("cpu %.3f s\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    ck_http_channel_unref(channel);
    ck_http_server_free(srv);
    ck_http_buf_unref(obj);
    return 0;
}
