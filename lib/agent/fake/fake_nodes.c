/*
 * fake_nodes.c - simulated nodes: N Nodes, their Leases, and a kubelet that only
 * pretends (kwok's approach, in C).
 *
 * What a real kubelet does that this one imitates:
 * - registration (kubelet_node_status.go registerWithAPIServer): create the Node with
 *   its labels (kubernetes.io/hostname, os, arch, and type=fake), capacity and
 *   allocatable, addresses, node info and the Ready, MemoryPressure, DiskPressure and
 *   PIDPressure conditions; when it exists already, take it over and write its status;
 * - the node lease (pkg/kubelet/nodelease): a Lease per node in kube-node-lease, held by
 *   the node, owned by the Node, renewed every 10 s (a quarter of its 40 s duration);
 * - node status: when something (the node lifecycle controller) set Ready to anything
 *   but True, the next renewal writes the conditions back, as the kubelet's status loop
 *   would;
 * - pods bound to one of its nodes: Running and Ready at once, with a pod IP from the
 *   node's range (10.64.0.0/10 split into a /24 per node: node i has 10.(64+i/256).(i%256).0
 *   /24, hosts .2 to .254), the host IP, container statuses (running, ready, started) and
 *   init containers completed;
 * - deletion: a pod with a deletionTimestamp is removed (DELETE with grace 0 and its uid
 *   as precondition) once that time has come, i.e. after its grace period.
 *
 * A restart of the API server is survived without help: the informers relist, a failed
 * pod write is retried with the controllers' rate limiting, a failed renewal is retried
 * at the next tick, and pod IPs are relearnt from the pods that already have one.
 *
 * Threading: the informers' threads enqueue pod keys; `workers` runner threads sync
 * pods; one renewer thread writes leases and node conditions. `lock` guards the IP
 * allocations and the stats.
 *
 * Tested by tests/e2e/test_scheduler.sh (pods run, nodes go Unknown when it stops) and
 * bench/controllers/sched_scale.sh (1,000 nodes, 10,000 pods).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/agent.h"
#include "ckube/api.h"
#include "ckube/controllers.h"
#include "ckube/informer.h"
#include "ckube/internal/util.h"

#define MAX_NODES 10000

struct fake_node {
    char name[128];
    char ip[32];      /* InternalIP */
    int index;        /* in the pod range */
    uint64_t used[4]; /* pod IP hosts in use, one bit each */
    json_t *lease;    /* the last lease written (resourceVersion), or NULL */
};

struct ck_fake_nodes {
    struct ck_fake_nodes_config config;
    char *prefix, *cpu, *memory, *pods;
    struct fake_node *nodes;
    struct ck__strmap by_name; /* node name -> struct fake_node * */
    const struct ck_resource *pods_res, *nodes_res, *leases_res;
    struct ck_ctl_client ctl;
    struct ck_informer_factory *factory;
    struct ck_informer *pods_inf, *nodes_inf;
    struct ck_lister pod_lister, node_lister;
    struct ck_controller ctl_pods;
    struct ck_runner *runner;

    pthread_mutex_t lock;
    struct ck__strmap ips; /* pod key -> (node index << 16 | host) as intptr_t */
    struct ck_fake_nodes_stats stats;

    pthread_t renewer;
    bool renewer_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stopping;
};

/* ---- helpers -------------------------------------------------------------------------- */

static void now_rfc3339(char *buf, size_t size, bool micro)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ck__time_format((int64_t)ts.tv_sec, micro ? ts.tv_nsec / 1000 : -1, buf, size);
}

static void count(struct ck_fake_nodes *f, uint64_t *field)
{
    pthread_mutex_lock(&f->lock);
    (*field)++;
    pthread_mutex_unlock(&f->lock);
}

static struct fake_node *node_named(struct ck_fake_nodes *f, const char *name)
{
    struct ck__strmap_entry *e = name ? ck__strmap_find(&f->by_name, name) : NULL;
    return e ? e->value : NULL;
}

static json_t *node_status(struct ck_fake_nodes *f, const struct fake_node *n)
{
    return json_pack(
        "{s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:o, s:[{s:s, s:s}, {s:s, s:s}],"
        " s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:{s:{s:i}}}",
        "capacity", "cpu", f->cpu, "memory", f->memory, "pods", f->pods, "ephemeral-storage",
        "100Gi", "allocatable", "cpu", f->cpu, "memory", f->memory, "pods", f->pods,
        "ephemeral-storage", "100Gi", "conditions", ck_agent_node_conditions(), "addresses", "type",
        "InternalIP", "address", n->ip, "type", "Hostname", "address", n->name, "nodeInfo",
        "kubeletVersion", "v1.32.0-ckube-fake", "kubeProxyVersion", "", "osImage",
        "ckube fake node", "kernelVersion", "fake", "containerRuntimeVersion", "fake://1.0",
        "operatingSystem", "linux", "architecture", "amd64", "machineID", n->name, "systemUUID",
        n->name, "bootID", "fake", "daemonEndpoints", "kubeletEndpoint", "Port", 10250);
}

/* ---- registration --------------------------------------------------------------------- */

static int register_node(struct ck_fake_nodes *f, struct fake_node *n, struct ck_err *reterr)
{
    char cidr[32];
    snprintf(cidr, sizeof(cidr), "10.%d.%d.0/24", 64 + n->index / 256, n->index % 256);
    json_t *status = node_status(f, n);
    json_t *node = json_pack(
        "{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s}}, s:{s:s, s:[s]}, s:O}", "apiVersion",
        "v1", "kind", "Node", "metadata", "name", n->name, "labels", "kubernetes.io/hostname",
        n->name, "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
        "beta.kubernetes.io/os", "linux", "beta.kubernetes.io/arch", "amd64", "type", "fake",
        "spec", "podCIDR", cidr, "podCIDRs", cidr, "status", status);
    json_decref(status);
    int r = node ? ck_agent_register_node(&f->ctl, node, &n->lease, reterr)
                 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(node);
    return r;
}

/* ---- renewals ------------------------------------------------------------------------- */

static void renew_lease(struct ck_fake_nodes *f, struct fake_node *n)
{
    struct ck_err err = {0};
    int r = ck_agent_renew_lease(&f->ctl, &n->lease, &err);
    if (r == 0)
        count(f, &f->stats.renewals);
    else { /* conflict, gone, server away: start over at the next tick */
        count(f, &f->stats.write_errors);
        if (register_node(f, n, &err) < 0)
            CK_LOGV(2, "fake-nodes: %s: %s", n->name, err.msg);
    }
}

/* The node's Ready condition is no longer True: write the healthy conditions again. */
static void restore_ready(struct ck_fake_nodes *f, struct fake_node *n)
{
    const json_t *cached = NULL;
    if (ck_lister_get(&f->node_lister, "", n->name, &cached) < 0)
        return;
    bool ready = ck_agent_node_ready(cached);
    if (!ready) {
        json_t *copy = ck__json_copy(cached);
        struct ck_err err = {0};
        if (copy)
            json_object_set_new(json_object_get(copy, "status"), "conditions",
                                ck_agent_node_conditions());
        if (!copy || ck_ctl_update_status(&f->ctl, f->nodes_res, "", copy, NULL, &err) < 0)
            count(f, &f->stats.write_errors);
        json_decref(copy);
    }
    ck_cached_unref(cached);
}

static void *renewer_main(void *arg)
{
    struct ck_fake_nodes *f = arg;
    int64_t interval = f->config.renew_interval;
    pthread_mutex_lock(&f->stop_lock);
    while (!f->stopping) {
        int64_t deadline = ck_clock_now(NULL) + interval;
        pthread_mutex_unlock(&f->stop_lock);
        for (int i = 0; i < f->config.count; i++) {
            renew_lease(f, &f->nodes[i]);
            restore_ready(f, &f->nodes[i]);
        }
        pthread_mutex_lock(&f->stop_lock);
        while (!f->stopping && ck_clock_now(NULL) < deadline)
            ck_clock_wait(NULL, &f->stop_cond, &f->stop_lock, deadline);
    }
    pthread_mutex_unlock(&f->stop_lock);
    return NULL;
}

/* ---- pods ----------------------------------------------------------------------------- */

static void release_ip(struct ck_fake_nodes *f, const char *key)
{
    pthread_mutex_lock(&f->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&f->ips, key);
    if (e) {
        intptr_t v = (intptr_t)e->value;
        int node = (int)(v >> 16), host = (int)(v & 0xffff);
        if (node < f->config.count)
            f->nodes[node].used[host / 64] &= ~(UINT64_C(1) << (host % 64));
        ck__strmap_remove_entry(&f->ips, e);
    }
    pthread_mutex_unlock(&f->lock);
}

/* The pod's IP on n: the one it has (relearnt after a restart) or a free one. */
static int pod_ip(struct ck_fake_nodes *f, struct fake_node *n, const char *key, const char *have,
                  char *buf, size_t size)
{
    pthread_mutex_lock(&f->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&f->ips, key);
    int host = e ? (int)((intptr_t)e->value & 0xffff) : -1;
    unsigned a, b, c, d;
    if (host < 0 && have && sscanf(have, "%u.%u.%u.%u", &a, &b, &c, &d) == 4 && d < 256)
        host = (int)d;
    for (int h = 2; host < 0 && h < 255; h++)
        if (!(n->used[h / 64] & (UINT64_C(1) << (h % 64))))
            host = h;
    int r = host < 0 ? CK_ENOMEM : 0;
    if (host >= 0 && !e) {
        bool created;
        if (!ck__strmap_put(&f->ips, key, (void *)(((intptr_t)n->index << 16) | host), &created))
            r = CK_ENOMEM;
        else
            n->used[host / 64] |= UINT64_C(1) << (host % 64);
    }
    pthread_mutex_unlock(&f->lock);
    snprintf(buf, size, "10.%d.%d.%d", 64 + n->index / 256, n->index % 256, host);
    return r;
}

static bool is_running(const json_t *pod)
{
    const json_t *status = json_object_get(pod, "status");
    const char *phase = json_string_value(json_object_get(status, "phase"));
    return phase && strcmp(phase, "Pending") != 0 && json_object_get(status, "podIP");
}

static json_t *container_statuses(const json_t *containers, const char *uid, const char *now,
                                  bool init)
{
    json_t *list = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *image = json_string_value(json_object_get(c, "image"));
        char id[256];
        snprintf(id, sizeof(id), "fake://%s-%s", uid, name ? name : "");
        json_t *state =
            init ? json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", 0, "reason",
                             "Completed", "startedAt", now, "finishedAt", now, "containerID", id)
                 : json_pack("{s:{s:s}}", "running", "startedAt", now);
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:i, s:o, s:{}}",
                                              "name", name ? name : "", "image", image ? image : "",
                                              "imageID", image ? image : "", "containerID", id,
                                              "ready", !init, "started", !init, "restartCount", 0,
                                              "state", state, "lastState"));
    }
    return list;
}

/* Running and Ready, as the kubelet reports a pod whose containers started. */
static int start_pod(struct ck_fake_nodes *f, struct fake_node *n, const char *key,
                     const json_t *pod, struct ck_err *reterr)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *spec = json_object_get(pod, "spec");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    char ip[32], now[40];
    if (pod_ip(f, n, key,
               json_string_value(json_object_get(json_object_get(pod, "status"), "podIP")), ip,
               sizeof(ip)) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "no pod IP left on %s", n->name);
    now_rfc3339(now, sizeof(now), false);
    json_t *conds = json_array();
    static const char *const types[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                        "ContainersReady", "PodScheduled"};
    for (size_t i = 0; conds && i < 5; i++)
        json_array_append_new(conds, json_pack("{s:s, s:s, s:n, s:s}", "type", types[i], "status",
                                               "True", "lastProbeTime", "lastTransitionTime", now));
    json_t *patch = json_pack(
        "{s:{s:s, s:o, s:s, s:[{s:s}], s:s, s:[{s:s}], s:s, s:o, s:o}}", "status", "phase",
        "Running", "conditions", conds, "hostIP", n->ip, "hostIPs", "ip", n->ip, "podIP", ip,
        "podIPs", "ip", ip, "startTime", now, "containerStatuses",
        container_statuses(json_object_get(spec, "containers"), uid ? uid : "", now, false),
        "initContainerStatuses",
        container_statuses(json_object_get(spec, "initContainers"), uid ? uid : "", now, true));
    if (!patch)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r =
        ck_ctl_patch(&f->ctl, f->pods_res, json_string_value(json_object_get(meta, "namespace")),
                     json_string_value(json_object_get(meta, "name")), "status", CK_PATCH_MERGE,
                     patch, NULL, reterr);
    json_decref(patch);
    if (r == 0)
        count(f, &f->stats.started);
    return r == CK_ENOENT ? 0 : r;
}

/* Removes a pod whose grace period is over; else comes back when it is. */
static int finish_pod(struct ck_fake_nodes *f, const char *key, const json_t *pod,
                      struct ck_err *reterr)
{
    const json_t *meta = json_object_get(pod, "metadata");
    int64_t at = 0;
    ck__time_parse(json_string_value(json_object_get(meta, "deletionTimestamp")), &at, NULL);
    int64_t left = at - (int64_t)time(NULL);
    if (left > 0) {
        ck_wq_add_after(f->ctl_pods.queue, key, left * CK_SEC);
        return 0;
    }
    json_t *options = json_pack("{s:i, s:{s:s}}", "gracePeriodSeconds", 0, "preconditions", "uid",
                                json_string_value(json_object_get(meta, "uid")) ?: "");
    int r = options ? ck_ctl_delete(&f->ctl, f->pods_res,
                                    json_string_value(json_object_get(meta, "namespace")),
                                    json_string_value(json_object_get(meta, "name")), options, NULL,
                                    reterr)
                    : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(options);
    if (r == 0) {
        count(f, &f->stats.deleted);
        release_ip(f, key);
    }
    return r == CK_ENOENT || r == CK_ECONFLICT ? 0 : r;
}

static int sync_pod(struct ck_controller *c, const char *key, struct ck_err *reterr)
{
    struct ck_fake_nodes *f = c->data;
    char *ns = NULL, *name = NULL;
    const json_t *pod = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, reterr);
    if (r == 0 && ck_lister_get(&f->pod_lister, ns, name, &pod) < 0) {
        release_ip(f, key); /* gone */
        goto out;
    }
    if (r < 0)
        goto out;
    struct fake_node *n =
        node_named(f, json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")));
    if (!n)
        goto out;
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
        r = finish_pod(f, key, pod, reterr);
    else if (!is_running(pod))
        r = start_pod(f, n, key, pod, reterr);
    else /* already running (after a restart of ours): keep its IP */
        r = pod_ip(f, n, key,
                   json_string_value(json_object_get(json_object_get(pod, "status"), "podIP")),
                   (char[32]){0}, 32);
out:
    if (r < 0)
        count(f, &f->stats.write_errors);
    ck_cached_unref(pod);
    free(ns);
    free(name);
    return r;
}

static void enqueue_if_ours(struct ck_fake_nodes *f, const json_t *pod)
{
    char *key = NULL;
    if (node_named(f,
                   json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"))) &&
        ck_meta_namespace_key(pod, &key, NULL) == 0)
        ck_wq_add(f->ctl_pods.queue, key);
    free(key);
}

static void on_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    enqueue_if_ours(arg, obj);
}

static void on_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    enqueue_if_ours(arg, obj);
}

static void on_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *tomb,
                      void *arg)
{
    struct ck_fake_nodes *f = arg;
    char *key = NULL;
    if (ck_deletion_handling_key(obj, tomb, &key, NULL) == 0)
        release_ip(f, key);
    free(key);
}

/* ---- lifecycle ------------------------------------------------------------------------ */

int ck_fake_nodes_new(const struct ck_fake_nodes_config *config, struct ck_fake_nodes **ret,
                      struct ck_err *reterr)
{
    if (config->count < 1 || config->count > MAX_NODES)
        return ck_err_set(reterr, CK_EINVAL, "--count must be between 1 and %d", MAX_NODES);
    struct ck_fake_nodes *f = calloc(1, sizeof(*f));
    if (!f)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    pthread_mutex_init(&f->lock, NULL);
    pthread_mutex_init(&f->stop_lock, NULL);
    pthread_cond_init(&f->stop_cond, NULL);
    f->config = *config;
    if (f->config.renew_interval <= 0)
        f->config.renew_interval = CK_FAKE_NODE_RENEW;
    f->prefix = strdup(config->prefix ? config->prefix : "fake-node-");
    f->cpu = strdup(config->cpu ? config->cpu : "32");
    f->memory = strdup(config->memory ? config->memory : "256Gi");
    f->pods = strdup(config->pods ? config->pods : "110");
    f->nodes = calloc((size_t)config->count, sizeof(*f->nodes));
    int r = 0;
    if (!f->prefix || !f->cpu || !f->memory || !f->pods || !f->nodes) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_fail;
    }
    int64_t check;
    if (ck_quantity_milli(f->cpu, &check) < 0 || ck_quantity_milli(f->memory, &check) < 0 ||
        ck_quantity_milli(f->pods, &check) < 0) {
        r = ck_err_set(reterr, CK_EINVAL, "--cpu, --memory and --pods must be quantities");
        goto out_fail;
    }
    for (int i = 0; i < config->count; i++) {
        struct fake_node *n = &f->nodes[i];
        n->index = i;
        snprintf(n->name, sizeof(n->name), "%s%d", f->prefix, i);
        snprintf(n->ip, sizeof(n->ip), "10.255.%d.%d", i / 256, i % 256);
        bool created;
        if (!ck__strmap_put(&f->by_name, n->name, n, &created)) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out_fail;
        }
    }
    f->pods_res = ck_controller_resource("", "v1", "pods");
    f->nodes_res = ck_controller_resource("", "v1", "nodes");
    f->leases_res = ck_controller_resource("coordination.k8s.io", "v1", "leases");
    if (!f->pods_res || !f->nodes_res || !f->leases_res) {
        r = ck_err_set(reterr, CK_ENOENT, "no kind serves pods, nodes or leases");
        goto out_fail;
    }
    ck_ctl_client_init_rest(&f->ctl, config->client);
    struct ck_wq_options qopts = {.name = "fake-nodes",
                                  .limiter = ck_rl_default_controller_new(NULL)};
    r = ck_wq_new(&qopts, &f->ctl_pods.queue, reterr);
    f->ctl_pods.name = "fake-nodes";
    f->ctl_pods.sync = sync_pod;
    f->ctl_pods.data = f;
    if (r == 0)
        r = ck_informer_factory_new(config->client, NULL, 0, NULL, &f->factory, reterr);
    if (r == 0) /* what a kubelet plays with never needs them: the cache holds less */
        ck_informer_factory_set_transform(f->factory, ck_transform_strip_managed_fields, NULL);
    const struct ck_event_handler handler = {on_add, on_update, on_delete, f};
    if (r == 0) {
        f->pods_inf = ck_informer_factory_for(f->factory, f->pods_res);
        f->nodes_inf = ck_informer_factory_for(f->factory, f->nodes_res);
        if (!f->pods_inf || !f->nodes_inf)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    if (r == 0)
        r = ck_informer_add_handler(f->pods_inf, &handler, 0, reterr);
    if (r < 0)
        goto out_fail;
    ck_lister_init(&f->pod_lister, ck_informer_indexer(f->pods_inf));
    ck_lister_init(&f->node_lister, ck_informer_indexer(f->nodes_inf));
    *ret = f;
    return 0;

out_fail:
    ck_fake_nodes_free(f);
    return r;
}

int ck_fake_nodes_run(struct ck_fake_nodes *f, struct ck_err *reterr)
{
    for (int i = 0; i < f->config.count; i++) {
        int r = register_node(f, &f->nodes[i], reterr);
        if (r < 0)
            return r;
    }
    int r = ck_informer_factory_start(f->factory, reterr);
    if (r < 0)
        return r;
    if (!ck_informer_wait_for_sync(f->pods_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "fake-nodes: stopped before syncing");
    r = ck_runner_start(&f->ctl_pods, f->config.workers > 0 ? f->config.workers : 16, &f->runner,
                        reterr);
    if (r == 0 && pthread_create(&f->renewer, NULL, renewer_main, f) == 0)
        f->renewer_running = true;
    else if (r == 0)
        r = ck_err_set(reterr, CK_ENOMEM, "cannot start the lease renewer");
    return r;
}

struct ck_fake_nodes *ck_fake_nodes_free(struct ck_fake_nodes *f)
{
    if (!f)
        return NULL;
    pthread_mutex_lock(&f->stop_lock);
    f->stopping = true;
    pthread_cond_broadcast(&f->stop_cond);
    pthread_mutex_unlock(&f->stop_lock);
    if (f->renewer_running)
        pthread_join(f->renewer, NULL);
    if (f->factory)
        ck_informer_factory_stop(f->factory);
    if (f->runner)
        ck_runner_stop(f->runner);
    if (f->ctl_pods.queue)
        ck_wq_free(f->ctl_pods.queue);
    ck_informer_factory_free(f->factory);
    for (int i = 0; f->nodes && i < f->config.count; i++)
        json_decref(f->nodes[i].lease);
    ck__strmap_release(&f->by_name);
    ck__strmap_release(&f->ips);
    free(f->nodes);
    free(f->prefix);
    free(f->cpu);
    free(f->memory);
    free(f->pods);
    pthread_mutex_destroy(&f->lock);
    pthread_mutex_destroy(&f->stop_lock);
    pthread_cond_destroy(&f->stop_cond);
    free(f);
    return NULL;
}

void ck_fake_nodes_stats(struct ck_fake_nodes *f, struct ck_fake_nodes_stats *ret)
{
    pthread_mutex_lock(&f->lock);
    *ret = f->stats;
    pthread_mutex_unlock(&f->lock);
}
