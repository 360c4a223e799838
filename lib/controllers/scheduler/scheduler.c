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
 * - A pod that fits nowhere: the default PostFilter (preemption.c) looks for
 *   lower-priority pods whose eviction would make room, budgets (PodDisruptionBudgets)
 *   weighed; when it finds some it marks each victim with the DisruptionTarget condition
 *   (PreemptionByScheduler), deletes it, records `Preempted` on it and nominates the pod
 *   to the node (status.nominatedNodeName, and the cache's nominator). Then
 *   `FailedScheduling` with FitError's message (and the PostFilter's when it found no
 *   victims), the PodScheduled=False/Unschedulable condition (written only when it
 *   changes), and the unschedulable set of the queue.
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
    const struct ck_resource *pods_res, *nodes_res, *pdbs_res;
    struct ck_informer *pods_inf, *nodes_inf, *pdbs_inf;
    struct ck_informer *volume_infs[3]; /* claims, volumes, classes: VolumeBinding's */
    struct ck_lister pods, pdbs;
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

/*
 * updatePod: PodScheduled=False/Unschedulable with message, and status.nominatedNodeName
 * when preemption nominated a node (NULL: left as it is), when it is not already so.
 */
static void set_unschedulable(struct ck_scheduler *s, const json_t *pod, const char *message,
                              const char *nominated)
{
    const json_t *c = scheduled_condition(pod);
    const char *had =
        json_string_value(json_object_get(json_object_get(pod, "status"), "nominatedNodeName"));
    if (c && strcmp(json_string_value(json_object_get(c, "status")) ?: "", "False") == 0 &&
        strcmp(json_string_value(json_object_get(c, "reason")) ?: "", "Unschedulable") == 0 &&
        strcmp(json_string_value(json_object_get(c, "message")) ?: "", message) == 0 &&
        (!nominated || strcmp(had ? had : "", nominated) == 0))
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
    if (patch && nominated)
        json_object_set_new(json_object_get(patch, "status"), "nominatedNodeName",
                            json_string(nominated));
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
    bool worked = false; /* a thread that never allocated has no cache to give back */
    pthread_mutex_lock(&s->bind_lock);
    for (;;) {
        if (worked && !s->jobs && !s->binders_stop) { /* about to wait */
            pthread_mutex_unlock(&s->bind_lock);
            ck__memory_idle();
            pthread_mutex_lock(&s->bind_lock);
        }
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
        worked = true;
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

/* What preemption decided for a pod that fits nowhere. */
struct preemption {
    char *node;     /* the node it is nominated to, or NULL */
    char **victims; /* their keys */
    size_t n_victims;
};

static void preemption_release(struct preemption *pre)
{
    for (size_t i = 0; i < pre->n_victims; i++)
        free(pre->victims[i]);
    free(pre->victims);
    free(pre->node);
    memset(pre, 0, sizeof(*pre));
}

/* The index of the failed node named name in nodes (failed_at), or n_failed. */
static size_t failed_index(struct ck__sched_node *const *nodes, const size_t *failed_at,
                           size_t n_failed, const char *name)
{
    for (size_t i = 0; i < n_failed; i++)
        if (strcmp(nodes[failed_at[i]]->name, name) == 0)
            return i;
    return n_failed;
}

/* PodEligibleToPreemptOthers: NULL, or why not (the PostFilter's message). Cache locked. */
static const char *not_eligible(struct ck_scheduler *s, const struct ck__sched_pod *p,
                                struct ck__sched_node *const *nodes,
                                const struct ck__sched_status *statuses, const size_t *failed_at,
                                size_t n_failed)
{
    if (p->preempt_never)
        return "not eligible due to preemptionPolicy=Never.";
    const char *nominated =
        json_string_value(json_object_get(json_object_get(p->pod, "status"), "nominatedNodeName"));
    if (!nominated || !*nominated)
        return NULL;
    size_t i = failed_index(nodes, failed_at, n_failed, nominated);
    if (i < n_failed && statuses[i].code == CK__SCHED_UNRESOLVABLE)
        return NULL; /* its node cannot take it any more: it may preempt elsewhere */
    size_t n = ck__sched_cache_pods_on_locked(&s->cache, nominated, NULL, 0);
    struct ck__sched_placed *on = calloc(n + 1, sizeof(*on));
    if (!on)
        return NULL;
    n = ck__sched_cache_pods_on_locked(&s->cache, nominated, on, n);
    bool waiting = false;
    for (size_t k = 0; k < n && !waiting; k++)
        waiting = on[k].info->priority < p->priority && on[k].info->terminating_by_preemption;
    free(on);
    return waiting ? "not eligible due to a terminating pod on the nominated node." : NULL;
}

/* The PodDisruptionBudgets as preemption reads them (*ret to free with budgets_free). */
static size_t budgets_read(struct ck_scheduler *s, struct ck__sched_budget **ret,
                           struct ck_obj_list *list)
{
    *ret = NULL;
    struct ck_err err = {0};
    if (!s->pdbs.ops || ck_lister_list(&s->pdbs, NULL, NULL, list, &err) < 0 || !list->n)
        return 0;
    struct ck__sched_budget *b = calloc(list->n, sizeof(*b));
    if (!b)
        return 0;
    for (size_t i = 0; i < list->n; i++) {
        const json_t *pdb = list->items[i];
        const json_t *status = json_object_get(pdb, "status");
        b[i].namespace =
            json_string_value(json_object_get(json_object_get(pdb, "metadata"), "namespace"));
        if (!b[i].namespace)
            b[i].namespace = "";
        b[i].disrupted = json_object_get(status, "disruptedPods");
        b[i].allowed = json_integer_value(json_object_get(status, "disruptionsAllowed"));
        const json_t *selector = json_object_get(json_object_get(pdb, "spec"), "selector");
        if (selector &&
            ck_label_selector_from_object(selector, &b[i].selector, &(struct ck_err){0}) < 0)
            b[i].selector = NULL; /* an invalid selector matches nothing */
    }
    *ret = b;
    return list->n;
}

static void budgets_free(struct ck__sched_budget *b, size_t n, struct ck_obj_list *list)
{
    for (size_t i = 0; b && i < n; i++)
        ck_label_selector_free(b[i].selector);
    free(b);
    ck_obj_list_release(list);
}

/* One node weighed for preemption: its pods, and the pod objects their labels come from. */
struct weighed {
    struct ck__sched_placed *pods;
    const json_t **objects;
    size_t n;
};

static void weighed_release(struct weighed *w)
{
    for (size_t i = 0; i < w->n; i++)
        ck_cached_unref(w->objects[i]);
    free(w->objects);
    free(w->pods);
    memset(w, 0, sizeof(*w));
}

/* The pods placed on node, with their labels from the informer. 0 or CK_ENOMEM. */
static int weighed_read(struct ck_scheduler *s, const char *node, struct weighed *w)
{
    memset(w, 0, sizeof(*w));
    size_t n = ck__sched_cache_pods_on_locked(&s->cache, node, NULL, 0);
    w->pods = calloc(n + 1, sizeof(*w->pods));
    w->objects = calloc(n + 1, sizeof(*w->objects));
    if (!w->pods || !w->objects) {
        weighed_release(w);
        return CK_ENOMEM;
    }
    w->n = ck__sched_cache_pods_on_locked(&s->cache, node, w->pods, n);
    for (size_t i = 0; i < w->n; i++) {
        char *ns = NULL, *name = NULL;
        if (ck_split_meta_namespace_key(w->pods[i].key, &ns, &name, NULL) == 0 &&
            ck_lister_get(&s->pods, ns, name, &w->objects[i]) == 0)
            w->pods[i].labels =
                json_object_get(json_object_get(w->objects[i], "metadata"), "labels");
        free(ns);
        free(name);
    }
    return 0;
}

/*
 * The default PostFilter (DefaultPreemption.PostFilter) for p, which failed on every
 * node (statuses[i] for nodes[failed_at[i]]), cache locked: on success *ret names the
 * node and the victims and p is nominated there; else *ret_post says why (the message
 * FitError appends). 0 or CK_ENOMEM.
 */
static int preempt_locked(struct ck_scheduler *s, const char *key, const struct ck__sched_pod *p,
                          struct ck__sched_node *const *nodes, size_t n_nodes,
                          const struct ck__sched_status *statuses, const size_t *failed_at,
                          size_t n_failed, char **ret_post, struct preemption *ret)
{
    *ret_post = NULL;
    const char *why = not_eligible(s, p, nodes, statuses, failed_at, n_failed);
    if (why) {
        *ret_post = strdup(why);
        return *ret_post ? 0 : CK_ENOMEM;
    }
    struct ck_obj_list pdb_list = {0};
    struct ck__sched_budget *budgets = NULL;
    size_t n_budgets = budgets_read(s, &budgets, &pdb_list);
    struct ck__sched_status *diagnosis = calloc(n_failed + 1, sizeof(*diagnosis));
    struct weighed *weighed = calloc(n_failed + 1, sizeof(*weighed));
    struct ck__sched_candidate *cands = calloc(n_failed + 1, sizeof(*cands));
    size_t n_cands = 0, helpful = 0, n_weighed = 0;
    int r = diagnosis && weighed && cands ? 0 : CK_ENOMEM;
    for (size_t i = 0; i < n_failed; i++)
        helpful += statuses[i].code != CK__SCHED_UNRESOLVABLE;
    size_t want = ck__sched_preemption_candidates(helpful);
    for (size_t i = 0; r == 0 && i < n_failed; i++) {
        if (statuses[i].code == CK__SCHED_UNRESOLVABLE) {
            diagnosis[i].code = CK__SCHED_UNRESOLVABLE;
            diagnosis[i].reasons[diagnosis[i].n_reasons++] = CK__SCHED_REASON_NOT_HELPFUL;
            continue;
        }
        if (n_cands == want)
            continue; /* enough candidates: the others are not weighed (DryRunPreemption) */
        const struct ck__sched_node *node = nodes[failed_at[i]];
        struct weighed *w = &weighed[n_weighed];
        r = weighed_read(s, node->name, w);
        if (r < 0)
            break;
        n_weighed++;
        size_t violations = 0;
        r = ck__sched_select_victims(p, node, w->pods, w->n, budgets, n_budgets, &violations,
                                     &diagnosis[i]);
        if (r == 1)
            cands[n_cands++] = (struct ck__sched_candidate){node, w->pods, w->n, violations};
        r = r < 0 ? r : 0;
    }
    if (r == 0 && n_cands) {
        const struct ck__sched_candidate *best = &cands[ck__sched_pick_candidate(cands, n_cands)];
        ret->node = strdup(best->node->name);
        ret->victims = calloc(best->n_pods + 1, sizeof(*ret->victims));
        for (size_t i = 0; ret->victims && i < best->n_pods; i++)
            if (best->pods[i].victim && (ret->victims[ret->n_victims] = strdup(best->pods[i].key)))
                ret->n_victims++;
        if (!ret->node || !ret->victims ||
            ck__sched_cache_nominate_locked(&s->cache, key, p, ret->node) < 0) {
            preemption_release(ret);
            r = CK_ENOMEM;
        }
    } else if (r == 0) {
        char *fit = ck__sched_fit_message(n_nodes, diagnosis, n_failed, NULL);
        struct ck__buf b = {0};
        if (!fit || ck__buf_printf(&b, "preemption: %s", fit) < 0)
            r = CK_ENOMEM;
        free(fit);
        *ret_post = r == 0 ? ck__buf_take(&b) : NULL;
        ck__buf_release(&b);
        if (r == 0 && !*ret_post)
            r = CK_ENOMEM;
    }
    for (size_t i = 0; i < n_weighed; i++)
        weighed_release(&weighed[i]);
    free(weighed);
    free(cands);
    free(diagnosis);
    budgets_free(budgets, n_budgets, &pdb_list);
    return r;
}

/*
 * Filters and scores under the cache lock; on success assumes the pod on the chosen
 * node and returns its name (to free). Else NULL with *ret_message (to free) saying why
 * and *pre what preemption decided, or NULL with no message when out of memory.
 */
static char *place(struct ck_scheduler *s, const char *key, const struct ck__sched_pod *p,
                   char **ret_message, struct preemption *pre)
{
    *ret_message = NULL;
    memset(pre, 0, sizeof(*pre));
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
    size_t *failed_at = malloc(n * sizeof(*failed_at));
    size_t feasible = 0, failed = 0;
    if (!statuses || !cands || !counts || !spread || !failed_at)
        goto out_free;
    for (size_t i = 0; i < n; i++) {
        /* the room nominated pods of p's priority or higher will take counts as taken */
        struct ck__sched_node scratch;
        const struct ck__sched_node *seen =
            ck__sched_cache_with_nominated_locked(&s->cache, nodes[i], key, p, &scratch);
        if (!seen)
            goto out_free;
        enum ck__sched_code code = ck__sched_filter(p, seen, &statuses[failed]);
        if (seen != nodes[i])
            ck__sched_node_release(&scratch);
        if (code != CK__SCHED_SUCCESS) {
            failed_at[failed++] = i;
            continue;
        }
        cands[feasible].node = nodes[i];
        counts[feasible] = ck__sched_node_owner_count(nodes[i], p->owner_uid);
        feasible++;
    }
    if (feasible == 0) {
        char *post = NULL;
        if (preempt_locked(s, key, p, nodes, n, statuses, failed_at, failed, &post, pre) == 0)
            *ret_message = ck__sched_fit_message(n, statuses, failed, post);
        free(post);
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
    free(failed_at);
    free(statuses);
    free(cands);
    free(counts);
    free(spread);
out:
    pthread_mutex_unlock(&s->cache.lock);
    return chosen;
}

/*
 * prepareCandidate: each victim gets the DisruptionTarget condition, is deleted and
 * hears why (`Preempted`). A victim already gone is no matter.
 */
static void evict(struct ck_scheduler *s, const json_t *pod, const struct preemption *pre)
{
    if (!pre->node)
        return;
    const char *uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
    char now[32], message[300];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(message, sizeof(message), "%s: preempting to accommodate a higher priority pod",
             s->name);
    for (size_t i = 0; i < pre->n_victims; i++) {
        char *ns = NULL, *name = NULL;
        const json_t *victim = NULL;
        if (ck_split_meta_namespace_key(pre->victims[i], &ns, &name, NULL) < 0 ||
            ck_lister_get(&s->pods, ns, name, &victim) < 0) {
            free(ns);
            free(name);
            continue;
        }
        json_t *patch =
            json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type",
                      "DisruptionTarget", "status", "True", "reason", CK__SCHED_PREEMPTION_REASON,
                      "message", message, "lastTransitionTime", now);
        struct ck_err err = {0};
        if (!patch || ck_ctl_patch(&s->ctl, s->pods_res, ns, name, "status", CK_PATCH_STRATEGIC,
                                   patch, NULL, &err) < 0)
            CK_LOGV(2, "scheduler: marking a victim of preemption: %s", err.msg);
        json_decref(patch);
        ck_err_release(&err);
        if (ck_ctl_delete(&s->ctl, s->pods_res, ns, name, NULL, NULL, &err) < 0 &&
            err.http_status != 404) {
            CK_LOGV(2, "scheduler: deleting a victim of preemption: %s", err.msg);
        } else {
            ck_event_recordf(s->recorder, victim, CK_EVENT_NORMAL, "Preempted",
                             "Preempted by pod %s on node %s", uid ? uid : "", pre->node);
            count_stat(s, &s->stats.preempted, 0);
        }
        ck_err_release(&err);
        ck_cached_unref(victim);
        free(ns);
        free(name);
    }
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
    struct preemption pre = {0};
    int prefiltered = ck__sched_volumes_prefilter(&s->volumes, &p, n_nodes, &message);
    char *node = prefiltered == 0 ? place(s, key, &p, &message, &pre) : NULL;
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
        evict(s, pod, &pre);
        ck__sched_queue_unschedulable(s->queue, key, cycle);
        ck_event_recordf(s->recorder, pod, CK_EVENT_WARNING, "FailedScheduling", "%s", message);
        set_unschedulable(s, pod, message, pre.node);
        preemption_release(&pre);
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
    s->pdbs_res = ck_controller_resource("policy", "v1", "poddisruptionbudgets");
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
    /* preemption weighs the budgets; a server without the kind has none to weigh */
    const struct ck_event_handler no_handler = {0};
    if (r == 0 && s->pdbs_res)
        r = ck__ctl_watch(s->factory, s->pdbs_res, &no_handler, &s->pdbs_inf, &s->pdbs, reterr);
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
        !ck_informer_wait_for_sync(s->pods_inf, CK_TIME_NEVER) ||
        (s->pdbs_inf && !ck_informer_wait_for_sync(s->pdbs_inf, CK_TIME_NEVER)))
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
    /*
     * The manager's informers: one cache of pods, nodes, volumes and budgets in the
     * process, not one per component. They list and watch as the controller manager does
     * (its role lists and watches everything, for its shared informers); the scheduler's
     * writes (bindings, events, status) still carry its own identity.
     */
    struct ck_scheduler_config config = {.client = ctx->client, .factory = ctx->factory};
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
