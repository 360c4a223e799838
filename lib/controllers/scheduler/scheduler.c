/*
 * scheduler.c - the scheduler: pending pods in, bindings out.
 *
 * Mirrors pkg/scheduler of Kubernetes 1.32 (scheduler.go, schedule_one.go,
 * eventhandlers.go) with the default profile's plugins of plugins.c:
 *
 * - Event handlers: an unassigned pod of ours that is not being deleted goes to the
 *   queue (queue.c); an assigned one goes to the cache (cache.c), and leaves the queue;
 *   a node added or changed, or a pod leaving a node (deleted or terminated), moves the
 *   unschedulable pods back to be tried.
 * - One scheduling thread (scheduleOne): pops a pod, re-reads it from the informer
 *   cache, runs every filter on every node under the cache's lock, scores the feasible
 *   nodes (least allocated + balanced allocation + 2 x owner spreading), picks the
 *   highest (ties at random, as selectHost), assumes the pod there and hands the binding
 *   to a pool of binder threads (the binding cycle runs asynchronously, as in
 *   Kubernetes), so many pods are placed before their bindings are observed.
 * - VolumeBinding (volumebinding.c): a PreFilter over the pod's claims before the
 *   filters, a Filter on bound volumes' node affinity, and a PreBind that marks
 *   WaitForFirstConsumer claims with the chosen node before the Binding.
 * - A binder POSTs the Binding; on success it records `Scheduled` ("Successfully
 *   assigned ns/name to node"); on failure it forgets the assumption, records
 *   `FailedScheduling` and puts the pod in backoff.
 * - A pod that fits nowhere: `FailedScheduling` with FitError's message, the
 *   PodScheduled=False/Unschedulable condition (written only when it changes), and the
 *   unschedulable set of the queue.
 *
 * Threading: the informer threads run the handlers; one scheduling thread; `workers`
 * binder threads that share a job list under `bind_lock`. The cache and the queue lock
 * themselves. Stopping: the informers stop first (by the caller or here), then the
 * queue shuts down, the scheduling thread ends, the binders drain their list and end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/controllers.h"
#include "ckube/scheduler.h"
#include "internal.h"

struct bind_job {
    struct bind_job *next;
    char *key, *namespace, *name, *uid, *node;
    const json_t *pod; /* shared reference, for events */
};

struct ck_scheduler {
    struct ck_rest *client;
    struct ck_ctl_client ctl;
    struct ck_informer_factory *factory;
    bool own_factory;
    char *name; /* spec.schedulerName we serve */
    struct ck_clock *clock;
    const struct ck_resource *pods_res, *nodes_res;
    struct ck_informer *pods_inf, *nodes_inf;
    struct ck_informer *volume_infs[3]; /* claims, volumes, classes: VolumeBinding's */
    struct ck_lister pods;
    struct ck__sched_volumes volumes;
    struct ck__sched_queue *queue;
    struct ck__sched_cache cache;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    unsigned int seed; /* ties, scheduling thread only */

    pthread_t scheduling;
    bool scheduling_running;
    int n_binders;
    pthread_t *binders;
    int binders_running;
    pthread_mutex_t bind_lock;
    pthread_cond_t bind_cond;
    struct bind_job *jobs, **jobs_tail;
    bool binders_stop;
    bool cache_ready;

    pthread_mutex_t stats_lock;
    struct ck_scheduler_stats stats;
};

/* ---- event handlers ------------------------------------------------------------------- */

static const char *pod_node(const json_t *pod)
{
    const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    return node && *node ? node : NULL;
}

static bool is_ours(const struct ck_scheduler *s, const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *name = json_string_value(json_object_get(spec, "schedulerName"));
    return strcmp(name ? name : CK_SCHEDULER_DEFAULT_NAME, s->name) == 0 &&
           !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
}

static bool is_terminated(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

static void pod_seen(struct ck_scheduler *s, const json_t *old, const json_t *pod)
{
    char *key = NULL;
    if (ck_meta_namespace_key(pod, &key, NULL) < 0)
        return;
    if (pod_node(pod)) {
        ck__sched_queue_delete(s->queue, key);
        ck__sched_cache_set_pod(&s->cache, key, pod);
        if (old && pod_node(old) && !is_terminated(old) && is_terminated(pod))
            ck__sched_queue_move_all(s->queue); /* it no longer takes room */
    } else if (is_ours(s, pod) && !is_terminated(pod)) {
        ck__sched_queue_add(s->queue, key);
    } else {
        ck__sched_queue_delete(s->queue, key);
    }
    free(key);
}

static void on_pod_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    pod_seen(arg, NULL, obj);
}

static void on_pod_update(const json_t *old, const json_t *obj, void *arg)
{
    pod_seen(arg, old, obj);
}

static void on_pod_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *tomb,
                          void *arg)
{
    struct ck_scheduler *s = arg;
    char *key = NULL;
    if (ck_deletion_handling_key(obj, tomb, &key, NULL) < 0)
        return;
    ck__sched_queue_delete(s->queue, key);
    if (ck__sched_cache_remove_pod(&s->cache, key))
        ck__sched_queue_move_all(s->queue);
    free(key);
}

static void node_seen(struct ck_scheduler *s, const json_t *node)
{
    ck__sched_cache_set_node(&s->cache, node);
    ck__sched_queue_move_all(s->queue);
}

static void on_node_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    node_seen(arg, obj);
}

static void on_node_update(const json_t *old, const json_t *obj, void *arg)
{
    struct ck_scheduler *s = arg;
    const json_t *old_meta = json_object_get(old, "metadata");
    const json_t *new_meta = json_object_get(obj, "metadata");
    bool same =
        json_equal(json_object_get(old, "spec"), json_object_get(obj, "spec")) &&
        json_equal(json_object_get(old_meta, "labels"), json_object_get(new_meta, "labels")) &&
        json_equal(json_object_get(json_object_get(old, "status"), "allocatable"),
                   json_object_get(json_object_get(obj, "status"), "allocatable"));
    if (same) /* a resync or a heartbeat: nothing the plugins read, nobody moves */
        ck__sched_cache_set_node(&s->cache, obj);
    else
        node_seen(s, obj);
}

static void on_node_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *tomb,
                           void *arg)
{
    struct ck_scheduler *s = arg;
    const json_t *node = tomb ? tomb->obj : obj;
    const char *name =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
    if (name)
        ck__sched_cache_remove_node(&s->cache, name);
}

/* A claim, volume or class changed: pods waiting on one may fit now (VolumeBinding's events). */
static void on_storage_add(const json_t *obj, bool initial, void *arg)
{
    (void)obj;
    if (!initial)
        ck__sched_queue_move_all(((struct ck_scheduler *)arg)->queue);
}

static void on_storage_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    on_storage_add(obj, false, arg);
}

static void on_storage_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *tomb,
                              void *arg)
{
    (void)obj, (void)tomb, (void)arg;
}

/* ---- failures ------------------------------------------------------------------------- */

/* The pod's PodScheduled condition, or NULL. */
static const json_t *scheduled_condition(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "PodScheduled") == 0)
            return c;
    }
    return NULL;
}

/* updatePod: PodScheduled=False/Unschedulable with message, when it is not already so. */
static void set_unschedulable(struct ck_scheduler *s, const json_t *pod, const char *message)
{
    const json_t *c = scheduled_condition(pod);
    if (c && strcmp(json_string_value(json_object_get(c, "status")) ?: "", "False") == 0 &&
        strcmp(json_string_value(json_object_get(c, "reason")) ?: "", "Unschedulable") == 0 &&
        strcmp(json_string_value(json_object_get(c, "message")) ?: "", message) == 0)
        return;
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    const json_t *meta = json_object_get(pod, "metadata");
    json_t *patch =
        json_pack("{s:{s:s}, s:{s:[{s:s, s:s, s:s, s:s, s:n, s:s}]}}", "metadata", "uid",
                  json_string_value(json_object_get(meta, "uid")) ?: "", "status", "conditions",
                  "type", "PodScheduled", "status", "False", "reason", "Unschedulable", "message",
                  message, "lastProbeTime", "lastTransitionTime", now);
    struct ck_err err = {0};
    if (patch &&
        ck_ctl_patch(&s->ctl, s->pods_res, json_string_value(json_object_get(meta, "namespace")),
                     json_string_value(json_object_get(meta, "name")), "status", CK_PATCH_STRATEGIC,
                     patch, NULL, &err) < 0)
        CK_LOGV(2, "scheduler: updating the condition of a pod: %s", err.msg);
    json_decref(patch);
}

static void count_stat(struct ck_scheduler *s, uint64_t *field, int64_t nanos)
{
    pthread_mutex_lock(&s->stats_lock);
    if (field)
        (*field)++;
    s->stats.cycle_nanos += nanos;
    pthread_mutex_unlock(&s->stats_lock);
}

/* ---- binding -------------------------------------------------------------------------- */

static void job_free(struct bind_job *j)
{
    if (!j)
        return;
    free(j->key);
    free(j->namespace);
    free(j->name);
    free(j->uid);
    free(j->node);
    ck_cached_unref(j->pod);
    free(j);
}

static int post_binding(struct ck_scheduler *s, const struct bind_job *j, struct ck_err *reterr)
{
    char path[1024];
    if (ck_rest_path(s->pods_res, j->namespace, j->name, "binding", NULL, path, sizeof(path)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "pod name too long");
    json_t *binding =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
                  "Binding", "metadata", "name", j->name, "namespace", j->namespace, "uid", j->uid,
                  "target", "apiVersion", "v1", "kind", "Node", "name", j->node);
    if (!binding)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = ck_rest_do(s->client, "POST", path, binding, NULL, NULL, reterr);
    json_decref(binding);
    return r;
}

static void bind_one(struct ck_scheduler *s, struct bind_job *j)
{
    struct ck_err err = {0};
    if (ck__sched_volumes_prebind(&s->volumes, &s->ctl, j->pod, j->node, &err) == 0 &&
        post_binding(s, j, &err) == 0) {
        ck__sched_queue_done(s->queue, j->key);
        ck_event_recordf(s->recorder, j->pod, CK_EVENT_NORMAL, "Scheduled",
                         "Successfully assigned %s/%s to %s", j->namespace, j->name, j->node);
        count_stat(s, &s->stats.scheduled, 0);
        return;
    }
    ck__sched_cache_forget(&s->cache, j->key);
    count_stat(s, &s->stats.bind_errors, 0);
    if (err.http_status == 404) { /* the pod is gone */
        ck__sched_queue_delete(s->queue, j->key);
        return;
    }
    ck__sched_queue_backoff(s->queue, j->key);
    ck_event_recordf(s->recorder, j->pod, CK_EVENT_WARNING, "FailedScheduling",
                     "Binding rejected: %s", err.msg);
}

static void *binder_main(void *arg)
{
    struct ck_scheduler *s = arg;
    pthread_mutex_lock(&s->bind_lock);
    for (;;) {
        while (!s->jobs && !s->binders_stop)
            pthread_cond_wait(&s->bind_cond, &s->bind_lock);
        struct bind_job *j = s->jobs;
        if (!j)
            break; /* stopping, and nothing left */
        s->jobs = j->next;
        if (!s->jobs)
            s->jobs_tail = &s->jobs;
        pthread_mutex_unlock(&s->bind_lock);
        bind_one(s, j);
        job_free(j);
        pthread_mutex_lock(&s->bind_lock);
    }
    pthread_mutex_unlock(&s->bind_lock);
    return NULL;
}

static void submit(struct ck_scheduler *s, struct bind_job *j)
{
    pthread_mutex_lock(&s->bind_lock);
    j->next = NULL;
    *s->jobs_tail = j;
    s->jobs_tail = &j->next;
    pthread_cond_signal(&s->bind_cond);
    pthread_mutex_unlock(&s->bind_lock);
}

/* ---- the scheduling cycle ------------------------------------------------------------- */

struct candidate {
    struct ck__sched_node *node;
    int64_t owner_count, spread, score;
};

/*
 * Filters and scores under the cache lock; on success assumes the pod on the chosen
 * node and returns its name (to free). Else NULL with *ret_message (to free) saying why,
 * or NULL with no message when out of memory.
 */
static char *place(struct ck_scheduler *s, const char *key, const struct ck__sched_pod *p,
                   char **ret_message)
{
    *ret_message = NULL;
    char *chosen = NULL;
    pthread_mutex_lock(&s->cache.lock);
    size_t n = 0;
    struct ck__sched_node *const *nodes = ck__sched_cache_nodes_locked(&s->cache, &n);
    if (n == 0) {
        *ret_message = strdup("no nodes available to schedule pods");
        goto out;
    }
    struct ck__sched_status *statuses = malloc(n * sizeof(*statuses));
    struct candidate *cands = malloc(n * sizeof(*cands));
    int64_t *counts = malloc(n * sizeof(*counts)), *spread = malloc(n * sizeof(*spread));
    size_t feasible = 0, failed = 0;
    if (!statuses || !cands || !counts || !spread)
        goto out_free;
    for (size_t i = 0; i < n; i++) {
        if (ck__sched_filter(p, nodes[i], &statuses[failed]) != CK__SCHED_SUCCESS) {
            failed++;
            continue;
        }
        cands[feasible].node = nodes[i];
        counts[feasible] = ck__sched_node_owner_count(nodes[i], p->owner_uid);
        feasible++;
    }
    if (feasible == 0) {
        *ret_message = ck__sched_fit_message(n, statuses, failed);
        goto out_free;
    }
    ck__sched_score_spread(counts, feasible, spread);
    int64_t best = -1;
    size_t ties = 0, pick = 0;
    for (size_t i = 0; i < feasible; i++) {
        int64_t score =
            CK__SCHED_WEIGHT_LEAST_ALLOCATED * ck__sched_score_least_allocated(p, cands[i].node) +
            CK__SCHED_WEIGHT_BALANCED * ck__sched_score_balanced(p, cands[i].node) +
            CK__SCHED_WEIGHT_SPREAD * spread[i];
        if (score > best) {
            best = score;
            ties = 1;
            pick = i;
        } else if (score == best && (size_t)rand_r(&s->seed) % ++ties == 0) {
            pick = i; /* reservoir sampling: each tie equally likely */
        }
    }
    chosen = strdup(cands[pick].node->name);
    if (chosen && ck__sched_cache_assume_locked(&s->cache, key, p, chosen) < 0) {
        free(chosen);
        chosen = NULL;
    }
out_free:
    free(statuses);
    free(cands);
    free(counts);
    free(spread);
out:
    pthread_mutex_unlock(&s->cache.lock);
    return chosen;
}

static void schedule_one(struct ck_scheduler *s, const char *key, int64_t cycle)
{
    char *ns = NULL, *name = NULL;
    const json_t *pod = NULL;
    if (ck_split_meta_namespace_key(key, &ns, &name, NULL) < 0 ||
        ck_lister_get(&s->pods, ns, name, &pod) < 0 || pod_node(pod) || !is_ours(s, pod)) {
        ck__sched_queue_done(s->queue, key); /* gone, bound or not ours any more */
        goto out;
    }
    int64_t start = ck_clock_now(s->clock);
    struct ck__sched_pod p;
    if (ck__sched_pod_init(&p, pod) < 0) {
        ck__sched_queue_backoff(s->queue, key);
        goto out;
    }
    char *message = NULL;
    pthread_mutex_lock(&s->cache.lock);
    size_t n_nodes = 0;
    ck__sched_cache_nodes_locked(&s->cache, &n_nodes);
    pthread_mutex_unlock(&s->cache.lock);
    int pre = ck__sched_volumes_prefilter(&s->volumes, &p, n_nodes, &message);
    char *node = pre == 0 ? place(s, key, &p, &message) : NULL;
    ck__sched_pod_release(&p);
    int64_t spent = ck_clock_now(s->clock) - start;
    if (!node && !message) {
        count_stat(s, &s->stats.attempts, spent);
        ck__sched_queue_backoff(s->queue, key);
        goto out;
    }
    if (!node) {
        count_stat(s, &s->stats.unschedulable, spent);
        count_stat(s, &s->stats.attempts, 0);
        ck__sched_queue_unschedulable(s->queue, key, cycle);
        ck_event_recordf(s->recorder, pod, CK_EVENT_WARNING, "FailedScheduling", "%s", message);
        set_unschedulable(s, pod, message);
        free(message);
        goto out;
    }
    count_stat(s, &s->stats.attempts, spent);
    struct bind_job *j = calloc(1, sizeof(*j));
    const char *uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
    if (j) {
        j->key = strdup(key);
        j->namespace = strdup(ns);
        j->name = strdup(name);
        j->uid = strdup(uid ? uid : "");
        j->node = node;
        j->pod = ck_cached_ref(pod);
        node = NULL;
    }
    if (!j || !j->key || !j->namespace || !j->name || !j->uid) {
        job_free(j);
        free(node);
        ck__sched_cache_forget(&s->cache, key);
        ck__sched_queue_backoff(s->queue, key);
        goto out;
    }
    submit(s, j);
out:
    ck_cached_unref(pod);
    free(ns);
    free(name);
}

static void *scheduling_main(void *arg)
{
    struct ck_scheduler *s = arg;
    for (;;) {
        char *key = NULL;
        int attempts = 0;
        int64_t cycle = 0;
        int r = ck__sched_queue_pop(s->queue, &key, &attempts, &cycle);
        if (r == CK_ESHUTDOWN)
            break;
        if (r < 0)
            continue;
        schedule_one(s, key, cycle);
        free(key);
    }
    return NULL;
}

/* ---- lifecycle ------------------------------------------------------------------------ */

int ck_scheduler_new(const struct ck_scheduler_config *config, struct ck_scheduler **ret,
                     struct ck_err *reterr)
{
    struct ck_scheduler *s = calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    pthread_mutex_init(&s->bind_lock, NULL);
    pthread_cond_init(&s->bind_cond, NULL);
    pthread_mutex_init(&s->stats_lock, NULL);
    s->jobs_tail = &s->jobs;
    s->client = config->client;
    s->clock = config->clock;
    s->seed = (unsigned int)time(NULL);
    s->n_binders = config->bind_workers > 0 ? config->bind_workers : 16;
    ck_ctl_client_init_rest(&s->ctl, s->client);
    s->name = strdup(config->scheduler_name ? config->scheduler_name : CK_SCHEDULER_DEFAULT_NAME);
    s->queue = ck__sched_queue_new(s->clock);
    s->binders = calloc((size_t)s->n_binders, sizeof(*s->binders));
    int r = 0;
    s->cache_ready = ck__sched_cache_init(&s->cache) == 0;
    if (!s->name || !s->queue || !s->binders || !s->cache_ready) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_fail;
    }
    s->pods_res = ck_controller_resource("", "v1", "pods");
    s->nodes_res = ck_controller_resource("", "v1", "nodes");
    if (!s->pods_res || !s->nodes_res) {
        r = ck_err_set(reterr, CK_ENOENT, "no kind serves pods and nodes");
        goto out_fail;
    }
    s->factory = config->factory;
    if (!s->factory) {
        r = ck_informer_factory_new(s->client, NULL, 0, NULL, &s->factory, reterr);
        if (r < 0)
            goto out_fail;
        /* kube-scheduler drops them from its pods; nothing here reads a node's either */
        ck_informer_factory_set_transform(s->factory, ck_transform_strip_managed_fields, NULL);
        s->own_factory = true;
    }
    const struct ck_event_handler pod_handler = {on_pod_add, on_pod_update, on_pod_delete, s};
    const struct ck_event_handler node_handler = {on_node_add, on_node_update, on_node_delete, s};
    struct ck_lister nodes;
    r = ck__ctl_watch(s->factory, s->nodes_res, &node_handler, &s->nodes_inf, &nodes, reterr);
    if (r == 0)
        r = ck__ctl_watch(s->factory, s->pods_res, &pod_handler, &s->pods_inf, &s->pods, reterr);
    static const char *const storage[][2] = {{"", "persistentvolumeclaims"},
                                             {"", "persistentvolumes"},
                                             {"storage.k8s.io", "storageclasses"}};
    struct ck_lister *listers[] = {&s->volumes.claims, &s->volumes.volumes, &s->volumes.classes};
    const struct ck_event_handler storage_handler = {on_storage_add, on_storage_update,
                                                     on_storage_delete, s};
    for (size_t i = 0; i < 3 && r == 0; i++) {
        const struct ck_resource *res = ck_controller_resource(storage[i][0], "v1", storage[i][1]);
        if (!res)
            break; /* no such kind: VolumeBinding stays off */
        r = ck__ctl_watch(s->factory, res, &storage_handler, &s->volume_infs[i], listers[i],
                          reterr);
        s->volumes.on = r == 0 && i == 2;
    }
    if (r == 0)
        r = ck__ctl_recorder(&s->sink, &s->ctl, s->name, s->clock, false, &s->recorder, reterr);
    if (r < 0)
        goto out_fail;
    *ret = s;
    return 0;

out_fail:
    ck_scheduler_free(s);
    return r;
}

int ck_scheduler_run(struct ck_scheduler *s, struct ck_err *reterr)
{
    if (s->own_factory && ck_informer_factory_start(s->factory, reterr) < 0)
        return reterr->code;
    for (size_t i = 0; i < 3; i++)
        if (s->volume_infs[i] && !ck_informer_wait_for_sync(s->volume_infs[i], CK_TIME_NEVER))
            return ck_err_set(reterr, CK_ESHUTDOWN, "scheduler: informers stopped before syncing");
    if (!ck_informer_wait_for_sync(s->nodes_inf, CK_TIME_NEVER) ||
        !ck_informer_wait_for_sync(s->pods_inf, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "scheduler: informers stopped before syncing");
    for (int i = 0; i < s->n_binders; i++) {
        if (pthread_create(&s->binders[i], NULL, binder_main, s) != 0)
            break;
        s->binders_running++;
    }
    if (s->binders_running == 0 || pthread_create(&s->scheduling, NULL, scheduling_main, s) != 0)
        return ck_err_set(reterr, CK_ENOMEM, "scheduler: cannot start its threads");
    s->scheduling_running = true;
    CK_LOGS(0, "Scheduler running", "schedulerName", s->name);
    return 0;
}

void ck_scheduler_stop_informers(struct ck_scheduler *s)
{
    if (s->own_factory)
        ck_informer_factory_stop(s->factory);
}

struct ck_scheduler *ck_scheduler_free(struct ck_scheduler *s)
{
    if (!s)
        return NULL;
    if (s->own_factory)
        ck_informer_factory_stop(s->factory);
    if (s->queue)
        ck__sched_queue_shutdown(s->queue);
    if (s->scheduling_running)
        pthread_join(s->scheduling, NULL);
    pthread_mutex_lock(&s->bind_lock);
    s->binders_stop = true;
    pthread_cond_broadcast(&s->bind_cond);
    pthread_mutex_unlock(&s->bind_lock);
    for (int i = 0; i < s->binders_running; i++)
        pthread_join(s->binders[i], NULL);
    if (s->stats.attempts) {
        char attempts[32], scheduled[32], cycle[32];
        snprintf(attempts, sizeof(attempts), "%llu", (unsigned long long)s->stats.attempts);
        snprintf(scheduled, sizeof(scheduled), "%llu", (unsigned long long)s->stats.scheduled);
        snprintf(cycle, sizeof(cycle), "%.1f",
                 (double)s->stats.cycle_nanos / (double)s->stats.attempts / 1e3);
        CK_LOGS(0, "Scheduler stopping", "attempts", attempts, "scheduled", scheduled,
                "meanCycleMicroseconds", cycle);
    }
    while (s->jobs) { /* only when no binder ever started */
        struct bind_job *j = s->jobs;
        s->jobs = j->next;
        job_free(j);
    }
    ck_event_recorder_free(s->recorder);
    if (s->own_factory)
        ck_informer_factory_free(s->factory);
    ck__sched_queue_free(s->queue);
    if (s->cache_ready)
        ck__sched_cache_release(&s->cache);
    free(s->binders);
    free(s->name);
    pthread_mutex_destroy(&s->bind_lock);
    pthread_cond_destroy(&s->bind_cond);
    pthread_mutex_destroy(&s->stats_lock);
    free(s);
    return NULL;
}

void ck_scheduler_stats(struct ck_scheduler *s, struct ck_scheduler_stats *ret)
{
    pthread_mutex_lock(&s->stats_lock);
    *ret = s->stats;
    pthread_mutex_unlock(&s->stats_lock);
}

/* ---- the controller manager's row ------------------------------------------------------ */

int ck_scheduler_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                               struct ck_err *reterr)
{
    /* its own informers: they list and watch with the scheduler's identity */
    struct ck_scheduler_config config = {.client = ctx->client};
    struct ck_scheduler *s = NULL;
    int r = ck_scheduler_new(&config, &s, reterr);
    if (r == 0)
        *ret_state = s;
    return r;
}

int ck_scheduler_manager_run(void *state, int workers, struct ck_err *reterr)
{
    (void)workers;
    return ck_scheduler_run(state, reterr);
}

void ck_scheduler_manager_stop(void *state)
{
    ck_scheduler_free(state);
}
