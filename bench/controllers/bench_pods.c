/*
 * bench_pods.c - the ReplicaSet and Deployment benches' helper, with two jobs:
 *
 *   bench_pods KUBECONFIG NAMESPACE ready SELECTOR THREADS
 *       the stand-in for a node agent: marks every pod that matches SELECTOR and is
 *       neither Ready yet nor being deleted Running and Ready through the status
 *       subresource (so it can run again and again during a rollout);
 *   bench_pods KUBECONFIG NAMESPACE succeed SELECTOR THREADS
 *       the same stand-in for Jobs: every matching pod not finished nor being deleted
 *       ends Succeeded (exit code 0) through the status subresource;
 *   bench_pods KUBECONFIG NAMESPACE create N THREADS
 *       the reference: creates N pods (generateName "ref-") straight through the REST
 *       client, as fast as THREADS threads can, with no controller in between.
 *
 * Prints how many it did; exits 1 if any call failed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/controllers.h"
#include "ckube/rest.h"

struct work {
    struct ck_rest *client;
    const struct ck_resource *pods; /* from the API kind descriptors */
    const char *ns;
    json_t *items; /* ready: the pods to mark */
    size_t n;      /* create: how many */
    atomic_size_t next;
    atomic_size_t marked, failed;
    bool succeed; /* mark: Succeeded rather than Running and Ready */
};

static void *create(void *arg)
{
    struct work *w = arg;
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1",
                            "kind", "Pod", "metadata", "generateName", "ref-", "labels", "app",
                            "ref", "spec", "containers", "name", "c", "image", "nginx");
    while (atomic_fetch_add(&w->next, 1) < w->n) {
        struct ck_err err = {0};
        if (ck_rest_create(w->client, w->pods, w->ns, pod, NULL, &err) == 0)
            atomic_fetch_add(&w->marked, 1);
        else
            atomic_fetch_add(&w->failed, 1);
    }
    json_decref(pod);
    return NULL;
}

static void *mark(void *arg)
{
    struct work *w = arg;
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < json_array_size(w->items);) {
        json_t *pod = json_array_get(w->items, i);
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        bool finished = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
        if ((w->succeed ? finished : ck_pod_is_ready(pod, NULL)) ||
            json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
            continue; /* done already, or going: a pass marks only what is new */
        if (w->succeed)
            json_object_set_new(pod, "status", json_pack("{s:s}", "phase", "Succeeded"));
        else
            json_object_set_new(pod, "status",
                                json_pack("{s:s, s:[{s:s, s:s, s:s, s:s}]}", "phase", "Running",
                                          "conditions", "type", "Ready", "status", "True",
                                          "lastTransitionTime", "2026-01-01T00:00:00Z",
                                          "lastProbeTime", "2026-01-01T00:00:00Z"));
        struct ck_err err = {0};
        if (ck_rest_update_status(w->client, w->pods, w->ns, pod, NULL, &err) == 0)
            atomic_fetch_add(&w->marked, 1);
        else
            atomic_fetch_add(&w->failed, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 6 || (strcmp(argv[3], "ready") != 0 && strcmp(argv[3], "succeed") != 0 &&
                      strcmp(argv[3], "create") != 0)) {
        fprintf(stderr,
                "usage: %s KUBECONFIG NAMESPACE ready SELECTOR THREADS\n"
                "       %s KUBECONFIG NAMESPACE succeed SELECTOR THREADS\n"
                "       %s KUBECONFIG NAMESPACE create N THREADS\n",
                argv[0], argv[0], argv[0]);
        return 2;
    }
    int threads = atoi(argv[5]);
    if (threads < 1 || threads > 64)
        threads = 4;
    struct ck_kubeconfig *kc = NULL;
    struct ck_rest *client = NULL;
    struct ck_err err = {0};
    if (ck_kubeconfig_load(argv[1], NULL, &kc, &err) < 0 ||
        ck_rest_new_from_kubeconfig(kc, -1, 0, &client, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    struct work w = {
        .client = client, .pods = ck_controller_resource("", "v1", "pods"), .ns = argv[2]};
    json_t *list = NULL;
    w.succeed = strcmp(argv[3], "succeed") == 0;
    bool ready = strcmp(argv[3], "ready") == 0 || w.succeed;
    if (ready) {
        struct ck_list_options opts = {.label_selector = argv[4]};
        if (ck_rest_list(client, w.pods, argv[2], &opts, &list, &err) < 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        w.items = json_object_get(list, "items");
    } else {
        w.n = (size_t)strtoul(argv[4], NULL, 10);
    }
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, ready ? mark : create, &w);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%s %zu failed %zu\n", ready ? "marked" : "created", atomic_load(&w.marked),
           atomic_load(&w.failed));
    json_decref(list);
    ck_rest_free(client);
    ck_kubeconfig_free(kc);
    return atomic_load(&w.failed) ? 1 : 0;
}
