/*
 * bench_etcd_put.c - raw etcd puts over gRPC (etcdserverpb.KV/Put), the
 * reference for ckube's creates on its etcd backend, which speaks the same
 * gRPC (bench/apiserver/bench.py runs it beside the JSON gateway's puts).
 *
 *   bench_etcd_put HOST:PORT VALUE_FILE CLIENTS SECONDS
 *
 * Each client thread holds one HTTP/2 connection and puts the file's bytes
 * under a new key per put, one put at a time, for SECONDS. Prints
 * "puts/s N" and "failed N".
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h" /* the store's gRPC calls */

static const char *endpoint;
static char *value;
static size_t value_len;
static double seconds;
static atomic_long done_puts, failed_puts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *client(void *arg)
{
    long id = (long)(intptr_t)arg;
    char why[256];
    struct ck__grpc_conn *c = NULL;
    double end = now_s() + seconds;
    for (long i = 0; now_s() < end; i++) {
        if (!c && ck__grpc_connect(endpoint, 1000, &c, why, sizeof(why)) < 0) {
            fprintf(stderr, "bench_etcd_put: %s: %s\n", endpoint, why);
            atomic_fetch_add(&failed_puts, 1);
            return NULL;
        }
        char key[96];
        int kl = snprintf(key, sizeof(key), "/bench/grpc/%d-%ld-%ld", (int)getpid(), id, i);
        struct ck__buf req = {0};
        ck__pb_put_bytes(&req, 1, key, (size_t)kl);  /* PutRequest.key */
        ck__pb_put_bytes(&req, 2, value, value_len); /* PutRequest.value */
        struct ck__grpc_answer a = {.body = {.max = 1 << 20}};
        int r = req.err ? CK_ENOMEM
                        : ck__grpc_call(c, "/etcdserverpb.KV/Put", req.p, req.len, 5000, &a, why,
                                        sizeof(why));
        if (r == 0 && a.status_seen && a.status == 0)
            atomic_fetch_add(&done_puts, 1);
        else
            atomic_fetch_add(&failed_puts, 1);
        ck__buf_release(&req);
        ck__buf_release(&a.body);
        if (r < 0) { /* a failed call leaves its connection dead */
            ck__grpc_close(c);
            c = NULL;
        }
    }
    ck__grpc_close(c);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_etcd_put HOST:PORT VALUE_FILE CLIENTS SECONDS\n");
        return 2;
    }
    endpoint = argv[1];
    if (ck__read_file(argv[2], 64 << 20, &value, &value_len) < 0) {
        fprintf(stderr, "bench_etcd_put: cannot read %s\n", argv[2]);
        return 1;
    }
    int clients = atoi(argv[3]);
    seconds = atof(argv[4]);
    if (clients < 1 || clients > 1024 || seconds <= 0) {
        fprintf(stderr, "bench_etcd_put: CLIENTS 1-1024, SECONDS > 0\n");
        return 2;
    }
    pthread_t *t = calloc((size_t)clients, sizeof(*t));
    double start = now_s();
    for (long i = 0; i < clients; i++)
        pthread_create(&t[i], NULL, client, (void *)(intptr_t)i);
    for (int i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    double took = now_s() - start;
    printf("puts/s %.1f\nfailed %ld\n", (double)atomic_load(&done_puts) / took,
           atomic_load(&failed_puts));
    free(t);
    free(value);
    return atomic_load(&failed_puts) ? 1 : 0;
}
