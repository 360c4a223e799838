/*
 * bench_gc_memory.c - what a metadata-only informer saves: the heap one informer's cache
 * takes for the pods of a namespace, full objects against PartialObjectMetadata (what
 * the garbage collector's monitors keep), measured with mallinfo2() around each
 * informer's life. Creates the pods first when asked.
 *
 *   bench_gc_memory KUBECONFIG NAMESPACE N THREADS
 *       creates N pods in NAMESPACE with THREADS threads (0 pods: use what is there),
 *       then prints the heap of a full informer and of a metadata informer over them.
 *
 * The server answers full objects today, so the metadata informer decodes them and
 * keeps only their metadata: the figure is the cache, not the traffic.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "ckube/informer.h"
#include "ckube/rest.h"

static const struct ck_resource pods = {"", "v1", "pods", true};

struct work {
    struct ck_rest *client;
    const char *ns;
    size_t n;
    atomic_size_t next, failed;
};

/* A pod about the size of a real one (~1.5 KB of JSON). */
static json_t *pod_template(void)
{
    return json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s}}, s:{s:[{s:s, s:s, s:[{s:s, s:s}, {s:s, "
        "s:s}], s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[{s:i, s:s}], s:[{s:s, s:s}]}], s:s, s:i}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "generateName", "mem-", "labels", "app",
        "mem", "tier", "backend", "pod-template-hash", "5d8f7c9b6", "annotations",
        "example.com/note", "a pod for the garbage collector memory benchmark", "spec",
        "containers", "name", "server", "image", "registry.example.com/team/server:1.2.3", "env",
        "name", "LOG_LEVEL", "value", "info", "name", "LISTEN", "value", "0.0.0.0:8080",
        "resources", "requests", "cpu", "100m", "memory", "128Mi", "limits", "cpu", "500m",
        "memory", "512Mi", "ports", "containerPort", 8080, "protocol", "TCP", "volumeMounts",
        "name", "config", "mountPath", "/etc/server", "restartPolicy", "Always",
        "terminationGracePeriodSeconds", 30);
}

static void *create(void *arg)
{
    struct work *w = arg;
    json_t *pod = pod_template();
    while (atomic_fetch_add(&w->next, 1) < w->n)
        if (ck_rest_create(w->client, &pods, w->ns, pod, NULL, NULL) < 0)
            atomic_fetch_add(&w->failed, 1);
    json_decref(pod);
    return NULL;
}

static size_t heap(void)
{
    malloc_trim(0);
    return mallinfo2().uordblks;
}

/* The heap an informer's synced cache holds; 0 on failure. */
static size_t measure(struct ck_rest *client, const char *ns, bool metadata, size_t *ret_n)
{
    size_t before = heap();
    struct ck_metadata_informer *mi = NULL;
    struct ck_informer *inf = NULL;
    struct ck_informer_options o = {.client = client, .res = &pods, .namespace = ns};
    int r = metadata ? ck_metadata_informer_new(client, &pods, ns, 0, NULL, &mi, NULL)
                     : ck_informer_new(&o, &inf, NULL);
    if (r < 0)
        return 0;
    if (metadata)
        inf = ck_metadata_informer_informer(mi);
    if (ck_informer_start(inf, NULL) < 0 || !ck_informer_wait_for_sync(inf, CK_TIME_NEVER))
        return 0;
    ck_informer_stop(inf);
    *ret_n = ck_indexer_len(ck_informer_indexer(inf));
    size_t after = heap();
    if (metadata)
        ck_metadata_informer_free(mi);
    else
        ck_informer_free(inf);
    return after > before ? after - before : 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s KUBECONFIG NAMESPACE N THREADS\n", argv[0]);
        return 2;
    }
    struct ck_kubeconfig *kc = NULL;
    struct ck_rest *client = NULL;
    struct ck_err err = {0};
    if (ck_kubeconfig_load(argv[1], NULL, &kc, &err) < 0 ||
        ck_rest_new_from_kubeconfig(kc, -1, 0, &client, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    struct work w = {.client = client, .ns = argv[2], .n = strtoul(argv[3], NULL, 10)};
    int threads = atoi(argv[4]);
    pthread_t t[64];
    for (int i = 0; i < threads && i < 64; i++)
        pthread_create(&t[i], NULL, create, &w);
    for (int i = 0; i < threads && i < 64; i++)
        pthread_join(t[i], NULL);
    size_t n_full = 0, n_md = 0;
    size_t full = measure(client, argv[2], false, &n_full);
    size_t md = measure(client, argv[2], true, &n_md);
    printf("objects          %zu (create failures: %zu)\n", n_full, atomic_load(&w.failed));
    printf("full informer    %zu bytes (%zu per object)\n", full, n_full ? full / n_full : 0);
    printf("metadata inform. %zu bytes (%zu per object)\n", md, n_md ? md / n_md : 0);
    printf("ratio            %.2f\n", full ? (double)md / (double)full : 0.0);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return 0;
}
