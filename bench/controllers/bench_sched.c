/*
 * bench_sched.c - the scheduler bench's observer: watches the pods of a namespace
 * through an informer and stamps, on its own monotonic clock, when it first saw each pod,
 * when it first saw it bound (spec.nodeName) and when it first saw it Ready.
 *
 *   bench_sched KUBECONFIG NAMESPACE N TIMEOUT_SECONDS
 *
 * Waits until N pods are Ready (or the timeout), then prints one line each:
 *   bound: N in S s (first to last binding seen: R pods/s)
 *   latency seen->bound: median M ms, p99 P ms
 *   ready: N in S s after start
 * Times count from the observer's start; start it just before creating the workload.
 * Exits 1 on timeout.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchtime.h"
#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/internal/util.h"

struct stamp {
    double seen, bound, ready;
};

struct observer {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct ck__strmap pods; /* key -> struct stamp (inline) */
    size_t n_bound, n_ready;
    double first_bound, last_bound, last_ready;
};

static void observe(struct observer *o, const json_t *pod)
{
    char *key = NULL;
    if (ck_meta_namespace_key(pod, &key, NULL) < 0)
        return;
    double now = bench_wall_ns();
    pthread_mutex_lock(&o->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&o->pods, key);
    if (!e && (e = ck__strmap_insert(&o->pods, key, sizeof(struct stamp))))
        ((struct stamp *)e->value)->seen = now;
    struct stamp *s = e ? e->value : NULL;
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    if (s && s->bound == 0 && node && *node) {
        s->bound = now;
        if (o->n_bound++ == 0)
            o->first_bound = now;
        o->last_bound = now;
    }
    if (s && s->ready == 0 && ck_pod_is_ready(pod, NULL)) {
        s->ready = now;
        o->n_ready++;
        o->last_ready = now;
        pthread_cond_broadcast(&o->cond);
    }
    pthread_mutex_unlock(&o->lock);
    free(key);
}

static void on_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    observe(arg, obj);
}

static void on_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    observe(arg, obj);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s KUBECONFIG NAMESPACE N TIMEOUT_SECONDS\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)strtoul(argv[3], NULL, 10);
    double timeout = atof(argv[4]) * 1e9;
    struct ck_kubeconfig *kc = NULL;
    struct ck_rest *client = NULL;
    struct ck_err err = {0};
    if (ck_kubeconfig_load(argv[1], NULL, &kc, &err) < 0 ||
        ck_rest_new_from_kubeconfig(kc, -1, 0, &client, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct observer o = {0};
    pthread_mutex_init(&o.lock, NULL);
    pthread_cond_init(&o.cond, NULL);
    struct ck_informer_options opts = {
        .client = client, .res = ck_controller_resource("", "v1", "pods"), .namespace = argv[2]};
    struct ck_informer *inf = NULL;
    struct ck_event_handler h = {on_add, on_update, NULL, &o};
    double start = bench_wall_ns();
    if (ck_informer_new(&opts, &inf, &err) < 0 || ck_informer_add_handler(inf, &h, 0, &err) < 0 ||
        ck_informer_start(inf, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    pthread_mutex_lock(&o.lock);
    while (o.n_ready < n && bench_wall_ns() - start < timeout) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&o.cond, &o.lock, &ts);
    }
    size_t bound = o.n_bound, ready = o.n_ready;
    double *lat = calloc(o.pods.len ? o.pods.len : 1, sizeof(*lat));
    size_t n_lat = 0, i = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&o.pods, NULL, &i); e;
         e = ck__strmap_next(&o.pods, e, &i)) {
        struct stamp *s = e->value;
        if (s->bound != 0)
            lat[n_lat++] = (s->bound - s->seen) / 1e6;
    }
    pthread_mutex_unlock(&o.lock);
    ck_informer_free(inf);
    qsort(lat, n_lat, sizeof(*lat), bench_cmp_double);
    double span = (o.last_bound - o.first_bound) / 1e9;
    printf("bound: %zu in %.2f s (first to last binding seen: %.0f pods/s)\n", bound,
           (o.last_bound - start) / 1e9, span > 0 ? (double)(bound - 1) / span : 0.0);
    if (n_lat)
        printf("latency seen->bound: median %.0f ms, p99 %.0f ms\n", lat[n_lat / 2],
               lat[(size_t)((double)n_lat * 0.99)]);
    printf("ready: %zu in %.2f s after start\n", ready, (o.last_ready - start) / 1e9);
    free(lat);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return ready >= n ? 0 : 1;
}
