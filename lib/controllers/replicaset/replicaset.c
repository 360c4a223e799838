/*
 * replicaset.c - the ReplicaSet controller (kubernetes pkg/controller/replicaset/
 * replica_set.go and replica_set_utils.go).
 *
 * Event handlers (on the informers' threads) only map an event to ReplicaSet keys and
 * put them on the queue, and record what expectations observe:
 *   - a ReplicaSet added, updated or deleted: its key (a deleted one also drops its
 *     expectations);
 *   - a pod with a controller reference: its owner's key, if that owner is a
 *     ReplicaSet we know with the same uid; a pod created counts as an observed
 *     creation, a pod deleted (or given a deletionTimestamp) as an observed deletion;
 *     a pod whose controller reference changed also enqueues the old owner;
 *   - an orphan pod: every ReplicaSet of its namespace whose selector matches, so one
 *     of them adopts it.
 *
 * sync(key) (syncReplicaSet) reads the ReplicaSet and its namespace's pods from the
 * caches, claims pods with the controller-ref manager, and, when the expectations of
 * earlier creates and deletes are met, creates or deletes the difference (manageReplicas),
 * then writes status if it changed. A failed create or delete records a Warning event
 * and sets the ReplicaFailure condition; the error makes the runner requeue the key with
 * backoff.
 *
 * Threading: the runner calls sync for one key at a time per key; handlers run on the
 * informers' threads. The controller's own state is read-only after creation, except
 * expectations, which are thread-safe.
 */
#define _GNU_SOURCE /* strptime, timegm */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "ckube/replicaset.h"

#define SLOW_START_INITIAL 1
#define MAX_CREATE_THREADS 16

struct ck_rs_controller {
    struct ck_rest *client;
    struct ck_clock *clock;
    struct ck_informer *pods, *rss;
    struct ck_expectations *exp;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
};

/* ---- small helpers ------------------------------------------------------------- */

static const json_t *meta(const json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static bool being_deleted(const json_t *obj)
{
    return json_object_get(meta(obj), "deletionTimestamp") != NULL;
}

static void enqueue_obj(struct ck_rs_controller *c, const json_t *rs)
{
    char *key = NULL;
    if (ck_meta_namespace_key(rs, &key, NULL) == 0)
        ck_wq_add(c->queue, key);
    free(key);
}

/* The ReplicaSet a controller reference points to, if we know it (new reference). */
static const json_t *resolve_ref(struct ck_rs_controller *c, const char *ns, const json_t *ref)
{
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *uid = json_string_value(json_object_get(ref, "uid"));
    if (!kind || strcmp(kind, "ReplicaSet") != 0 || !name || !uid)
        return NULL;
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    const json_t *rs = NULL;
    if (ck_indexer_get_by_key(ck_informer_indexer(c->rss), key, &rs) < 0)
        return NULL;
    const char *have = ck__meta_str(rs, "uid");
    if (!have || strcmp(have, uid) != 0) {
        ck_cached_unref(rs);
        return NULL;
    }
    return rs;
}

/* Every ReplicaSet of pod's namespace whose selector matches the pod (GetPodReplicaSets). */
static void enqueue_matching(struct ck_rs_controller *c, const json_t *pod)
{
    const char *ns = ck__meta_str(pod, "namespace");
    struct ck_obj_list rss = {0};
    if (!ns ||
        ck_indexer_by_index(ck_informer_indexer(c->rss), CK_INDEX_NAMESPACE, ns, &rss, NULL) < 0)
        return;
    const json_t *labels = json_object_get(meta(pod), "labels");
    for (size_t i = 0; i < rss.n; i++) {
        struct ck_label_selector *sel = NULL;
        const json_t *spec_sel = json_object_get(json_object_get(rss.items[i], "spec"), "selector");
        if (!spec_sel || ck_label_selector_from_object(spec_sel, &sel, NULL) < 0)
            continue;
        if (!ck_label_selector_is_empty(sel) && ck_label_selector_matches(sel, labels))
            enqueue_obj(c, rss.items[i]);
        ck_label_selector_free(sel);
    }
    ck_obj_list_release(&rss);
}

/* ---- handlers ------------------------------------------------------------------ */

static void rs_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    enqueue_obj(arg, obj);
}

static void rs_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    enqueue_obj(arg, obj);
}

static void rs_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    struct ck_rs_controller *c = arg;
    char *key = NULL;
    if (ck_deletion_handling_key(obj, t, &key, NULL) < 0)
        return;
    ck_expectations_delete(c->exp, key);
    ck_wq_add(c->queue, key);
    free(key);
}

static void pod_deleted(struct ck_rs_controller *c, const json_t *pod, const char *pod_key)
{
    const json_t *ref = ck_controller_ref(pod);
    if (!ref)
        return;
    const json_t *rs = resolve_ref(c, ck__meta_str(pod, "namespace"), ref);
    if (!rs)
        return;
    char *rs_key = NULL;
    if (ck_meta_namespace_key(rs, &rs_key, NULL) == 0) {
        ck_expectations_deletion_observed_of(c->exp, rs_key, pod_key);
        ck_wq_add(c->queue, rs_key);
    }
    free(rs_key);
    ck_cached_unref(rs);
}

static void pod_add(const json_t *pod, bool initial, void *arg)
{
    (void)initial;
    struct ck_rs_controller *c = arg;
    char *pod_key = NULL;
    if (ck_meta_namespace_key(pod, &pod_key, NULL) < 0)
        return;
    if (being_deleted(pod)) {
        pod_deleted(c, pod, pod_key); /* a restart can show a pod already being deleted */
    } else if (ck_controller_ref(pod)) {
        const json_t *rs = resolve_ref(c, ck__meta_str(pod, "namespace"), ck_controller_ref(pod));
        char *rs_key = NULL;
        if (rs && ck_meta_namespace_key(rs, &rs_key, NULL) == 0) {
            ck_expectations_creation_observed(c->exp, rs_key);
            ck_wq_add(c->queue, rs_key);
        }
        free(rs_key);
        ck_cached_unref(rs);
    } else {
        enqueue_matching(c, pod);
    }
    free(pod_key);
}

static bool same_ref(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    const char *ua = json_string_value(json_object_get(a, "uid"));
    const char *ub = json_string_value(json_object_get(b, "uid"));
    return ua && ub && strcmp(ua, ub) == 0;
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    struct ck_rs_controller *c = arg;
    if (old == pod) { /* a resync: the owner looks again */
        pod_add(pod, false, arg);
        return;
    }
    const char *a = ck__meta_str(old, "resourceVersion"), *b = ck__meta_str(pod, "resourceVersion");
    if (a && b && strcmp(a, b) == 0)
        return;
    char *pod_key = NULL;
    if (ck_meta_namespace_key(pod, &pod_key, NULL) < 0)
        return;
    bool labels_changed =
        !json_equal(json_object_get(meta(old), "labels"), json_object_get(meta(pod), "labels"));
    const json_t *old_ref = ck_controller_ref(old), *ref = ck_controller_ref(pod);
    if (being_deleted(pod)) {
        pod_deleted(c, pod, pod_key);
        if (!same_ref(old_ref, ref))
            pod_deleted(c, old, pod_key);
        free(pod_key);
        return;
    }
    if (!same_ref(old_ref, ref) && old_ref) {
        const json_t *rs = resolve_ref(c, ck__meta_str(old, "namespace"), old_ref);
        if (rs)
            enqueue_obj(c, rs);
        ck_cached_unref(rs);
    }
    if (ref) {
        const json_t *rs = resolve_ref(c, ck__meta_str(pod, "namespace"), ref);
        if (rs)
            enqueue_obj(c, rs);
        ck_cached_unref(rs);
    } else if (labels_changed || old_ref) {
        enqueue_matching(c, pod);
    }
    free(pod_key);
}

static void pod_delete(const json_t *pod, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    char *key = NULL;
    if (ck_deletion_handling_key(pod, t, &key, NULL) < 0)
        return;
    pod_deleted(arg, pod, key);
    free(key);
}

/* ---- events --------------------------------------------------------------------- */

static void now_rfc3339(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Records a Warning event about rs (best effort, as client-go's recorder). */
static void record_warning(struct ck_rs_controller *c, const json_t *rs, const char *reason,
                           const char *message)
{
    char now[32], prefix[300];
    now_rfc3339(now, sizeof(now));
    snprintf(prefix, sizeof(prefix), "%s.", ck__meta_str(rs, "name"));
    json_t *ev = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s}, s:s, "
        "s:s, s:i}",
        "apiVersion", "v1", "kind", "Event", "metadata", "generateName", prefix, "namespace",
        ck__meta_str(rs, "namespace"), "involvedObject", "apiVersion", "apps/v1", "kind",
        "ReplicaSet", "name", ck__meta_str(rs, "name"), "namespace", ck__meta_str(rs, "namespace"),
        "uid", ck__meta_str(rs, "uid"), "reason", reason, "message", message, "type", "Warning",
        "source", "component", "replicaset-controller", "firstTimestamp", now, "lastTimestamp", now,
        "count", 1);
    struct ck_err err = {0};
    if (ev && ck_rest_create(c->client, &ck_res_events, ck__meta_str(rs, "namespace"), ev, NULL,
                             &err) < 0)
        CK_LOGV(2, "replicaset: cannot record event %s: %s", reason, err.msg);
    json_decref(ev);
}

/* ---- creating pods in slow-start batches ----------------------------------------- */

struct create_batch {
    struct ck_rs_controller *c;
    const json_t *rs;
    json_t *pod; /* the pod to create: the same for every call */
    const char *rs_key;
    atomic_int next, remaining_in_batch, failed;
    pthread_mutex_t lock;
    struct ck_err first_err;
};

static void *create_worker(void *arg)
{
    struct create_batch *b = arg;
    while (atomic_fetch_sub(&b->remaining_in_batch, 1) > 0) {
        struct ck_err err = {0};
        int r = ck_rest_create(b->c->client, &ck_res_pods, ck__meta_str(b->rs, "namespace"), b->pod,
                               NULL, &err);
        if (r < 0) {
            /* the pod will never be observed: lower the expectation now */
            ck_expectations_creation_observed(b->c->exp, b->rs_key);
            pthread_mutex_lock(&b->lock);
            if (atomic_fetch_add(&b->failed, 1) == 0)
                b->first_err = err;
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

/* The pod a ReplicaSet's template describes (GetPodFromTemplate). NULL when out of memory. */
static json_t *pod_from_template(const json_t *rs)
{
    const json_t *tmpl = json_object_get(json_object_get(rs, "spec"), "template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s-", ck__meta_str(rs, "name"));
    json_t *pod_meta =
        json_pack("{s:s, s:s}", "generateName", prefix, "namespace", ck__meta_str(rs, "namespace"));
    json_t *labels = json_object_get(tmeta, "labels");
    json_t *annotations = json_object_get(tmeta, "annotations");
    if (pod_meta && labels)
        json_object_set_new(pod_meta, "labels", json_deep_copy(labels));
    if (pod_meta && annotations)
        json_object_set_new(pod_meta, "annotations", json_deep_copy(annotations));
    json_t *ref = json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", "apps/v1", "kind",
                            "ReplicaSet", "name", ck__meta_str(rs, "name"), "uid",
                            ck__meta_str(rs, "uid"), "controller", 1, "blockOwnerDeletion", 1);
    if (pod_meta && ref)
        json_object_set_new(pod_meta, "ownerReferences", ref);
    else
        json_decref(ref);
    json_t *spec = json_deep_copy(json_object_get(tmpl, "spec"));
    if (!pod_meta || !spec) {
        json_decref(pod_meta);
        json_decref(spec);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                     pod_meta, "spec", spec);
}

/*
 * slowStartBatch: creates `count` pods in batches of 1, 2, 4, ...; a batch with a
 * failure ends the whole thing. Returns how many were created.
 */
static int slow_start_create(struct ck_rs_controller *c, const json_t *rs, const char *rs_key,
                             int count, struct ck_err *reterr)
{
    json_t *pod = pod_from_template(rs);
    if (!pod)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct create_batch b = {.c = c, .rs = rs, .pod = pod, .rs_key = rs_key};
    pthread_mutex_init(&b.lock, NULL);
    int created = 0, batch = SLOW_START_INITIAL;
    for (int remaining = count; remaining > 0;) {
        if (batch > remaining)
            batch = remaining;
        atomic_store(&b.remaining_in_batch, batch);
        int nthreads = batch < MAX_CREATE_THREADS ? batch : MAX_CREATE_THREADS;
        pthread_t threads[MAX_CREATE_THREADS];
        int started = 0;
        for (int i = 1; i < nthreads; i++)
            if (pthread_create(&threads[started], NULL, create_worker, &b) == 0)
                started++;
        create_worker(&b);
        for (int i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        int failed = atomic_exchange(&b.failed, 0);
        created += batch - failed;
        remaining -= batch;
        if (failed) {
            /* the pods of later batches are not attempted: lower those expectations */
            for (int i = 0; i < remaining; i++)
                ck_expectations_creation_observed(c->exp, rs_key);
            if (reterr)
                *reterr = b.first_err;
            break;
        }
        batch *= 2;
    }
    pthread_mutex_destroy(&b.lock);
    json_decref(pod);
    return created;
}

/* ---- choosing pods to delete (controller.ActivePodsWithRanks) ---------------------- */

struct ranked {
    const json_t *pod;
    int rank; /* pods of the same owner on the same node */
};

static int phase_order(const json_t *pod)
{
    const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (!p || strcmp(p, "Pending") == 0)
        return 0;
    return strcmp(p, "Unknown") == 0 ? 1 : 2; /* Running */
}

/* The Ready condition's status "True", and its lastTransitionTime (or NULL). */
static bool pod_ready(const json_t *pod, const char **ret_since)
{
    size_t i;
    const json_t *cond;
    if (ret_since)
        *ret_since = NULL;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        const char *status = json_string_value(json_object_get(cond, "status"));
        if (type && strcmp(type, "Ready") == 0) {
            if (ret_since)
                *ret_since = json_string_value(json_object_get(cond, "lastTransitionTime"));
            return status && strcmp(status, "True") == 0;
        }
    }
    return false;
}

static long restarts(const json_t *pod)
{
    long n = 0;
    size_t i;
    const json_t *cs;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i, cs)
        n += (long)json_integer_value(json_object_get(cs, "restartCount"));
    return n;
}

static const char *node_of(const json_t *pod)
{
    const char *n = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
    return n && *n ? n : NULL;
}

static int strcmp_null(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Less means "delete first" (ActivePodsWithRanks.Less). */
static int rank_cmp(const void *pa, const void *pb)
{
    const struct ranked *x = pa, *y = pb;
    const json_t *a = x->pod, *b = y->pod;
    /* 1. unassigned before assigned */
    bool na = node_of(a) != NULL, nb = node_of(b) != NULL;
    if (na != nb)
        return na ? 1 : -1;
    /* 2. Pending < Unknown < Running */
    int pa_ = phase_order(a), pb_ = phase_order(b);
    if (pa_ != pb_)
        return pa_ - pb_;
    /* 3. not ready before ready */
    const char *sa, *sb;
    bool ra = pod_ready(a, &sa), rb = pod_ready(b, &sb);
    if (ra != rb)
        return ra ? 1 : -1;
    /* 4. more pods of the owner on the same node first */
    if (x->rank != y->rank)
        return y->rank - x->rank;
    /* 5. ready for a shorter time first */
    if (ra && rb && strcmp_null(sa, sb) != 0)
        return -strcmp_null(sa, sb);
    /* 6. more restarts first */
    long ca = restarts(a), cb = restarts(b);
    if (ca != cb)
        return ca > cb ? -1 : 1;
    /* 7. newer first */
    int t = strcmp_null(ck__meta_str(b, "creationTimestamp"), ck__meta_str(a, "creationTimestamp"));
    if (t != 0)
        return t;
    return strcmp_null(ck__meta_str(a, "name"), ck__meta_str(b, "name")); /* stable */
}

/* ---- status ----------------------------------------------------------------------- */

/* A template label set is contained in the pod's labels (fullyLabeledReplicas). */
static bool fully_labeled(const json_t *rs, const json_t *pod)
{
    const json_t *want = json_object_get(
        json_object_get(json_object_get(json_object_get(rs, "spec"), "template"), "metadata"),
        "labels");
    const json_t *have = json_object_get(meta(pod), "labels");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)want, k, v)
    {
        if (!json_equal(json_object_get(have, k), v))
            return false;
    }
    return true;
}

/*
 * The new status (calculateStatus). *ret_requeue_after is set when a ready pod will
 * become available after minReadySeconds.
 */
static json_t *compute_status(const json_t *rs, const struct ck_obj_list *pods, int manage_err,
                              const char *err_reason, const char *err_msg,
                              int64_t *ret_requeue_after)
{
    const json_t *spec = json_object_get(rs, "spec");
    long min_ready = (long)json_integer_value(json_object_get(spec, "minReadySeconds"));
    time_t now = time(NULL);
    json_int_t labeled = 0, ready = 0, available = 0;
    *ret_requeue_after = 0;
    for (size_t i = 0; i < pods->n; i++) {
        const json_t *pod = pods->items[i];
        if (fully_labeled(rs, pod))
            labeled++;
        const char *since;
        if (pod_ready(pod, &since)) {
            ready++;
            int64_t t = 0;
            ck__time_parse(since, &t, NULL);
            if (min_ready == 0 || (t && t + min_ready <= now))
                available++;
            else
                *ret_requeue_after = (int64_t)min_ready * CK_SEC;
        }
    }
    json_t *status = json_pack("{s:I, s:I, s:I, s:I, s:I}", "replicas", (json_int_t)pods->n,
                               "fullyLabeledReplicas", labeled, "readyReplicas", ready,
                               "availableReplicas", available, "observedGeneration",
                               json_integer_value(json_object_get(meta(rs), "generation")));
    if (!status)
        return NULL;
    /* ReplicaFailure: set on a manage error, kept while it lasts, removed after */
    const json_t *old_conds = json_object_get(json_object_get(rs, "status"), "conditions");
    json_t *conds = json_array();
    size_t i;
    const json_t *cond;
    const json_t *old_failure = NULL;
    json_array_foreach(old_conds, i, cond)
    {
        const char *type = json_string_value(json_object_get(cond, "type"));
        if (type && strcmp(type, "ReplicaFailure") == 0)
            old_failure = cond;
        else
            json_array_append(conds, (json_t *)cond);
    }
    if (manage_err < 0) {
        if (old_failure) {
            json_array_append(conds, (json_t *)old_failure);
        } else {
            char now_s[32];
            now_rfc3339(now_s, sizeof(now_s));
            json_array_append_new(conds,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "ReplicaFailure",
                                            "status", "True", "lastTransitionTime", now_s, "reason",
                                            err_reason, "message", err_msg));
        }
    }
    if (json_array_size(conds))
        json_object_set_new(status, "conditions", conds);
    else
        json_decref(conds);
    return status;
}

/* Writes status when it differs from what the ReplicaSet has (updateReplicaSetStatus). */
static int write_status(struct ck_rs_controller *c, const json_t *rs, json_t *status,
                        struct ck_err *reterr)
{
    if (json_equal(json_object_get(rs, "status"), status))
        return 0;
    json_t *copy = json_deep_copy(rs);
    if (!copy)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_object_set(copy, "status", status);
    const char *ns = ck__meta_str(rs, "namespace");
    int r = ck_rest_update_status(c->client, &ck_res_replicasets, ns, copy, NULL, reterr);
    json_decref(copy);
    if (r != CK_ECONFLICT)
        return r;
    /* the cache is behind (statusUpdateRetries): once more on a fresh read */
    json_t *fresh = NULL;
    r = ck_rest_get(c->client, &ck_res_replicasets, ns, ck__meta_str(rs, "name"), &fresh, reterr);
    if (r < 0)
        return r;
    const char *a = ck__meta_str(fresh, "uid"), *b = ck__meta_str(rs, "uid");
    if (a && b && strcmp(a, b) == 0) {
        json_object_set(fresh, "status", status);
        r = ck_rest_update_status(c->client, &ck_res_replicasets, ns, fresh, NULL, reterr);
    }
    json_decref(fresh);
    return r;
}

/* ---- sync ------------------------------------------------------------------------- */

static bool is_active(const json_t *pod)
{
    const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return !being_deleted(pod) && !(p && (strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0));
}

/* Deletes surplus pods, ranked. Returns 0 or the first error (with its words). */
static int delete_surplus(struct ck_rs_controller *c, const char *rs_key,
                          const struct ck_obj_list *pods, int diff, struct ck_err *reterr)
{
    struct ranked *r = calloc(pods->n, sizeof(*r));
    const char **keys = calloc((size_t)diff, sizeof(*keys));
    char **owned_keys = calloc((size_t)diff, sizeof(*owned_keys));
    if (!r || !keys || !owned_keys) {
        free(r);
        free(keys);
        free(owned_keys);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < pods->n; i++) {
        r[i].pod = pods->items[i];
        const char *node = node_of(pods->items[i]);
        for (size_t j = 0; node && j < pods->n; j++)
            r[i].rank += node_of(pods->items[j]) && !strcmp(node, node_of(pods->items[j]));
    }
    qsort(r, pods->n, sizeof(*r), rank_cmp);
    for (int i = 0; i < diff; i++) {
        ck_meta_namespace_key(r[i].pod, &owned_keys[i], NULL);
        keys[i] = owned_keys[i] ? owned_keys[i] : "";
    }
    ck_expectations_expect_deletions_of(c->exp, rs_key, keys, (size_t)diff);
    int first = 0;
    for (int i = 0; i < diff; i++) {
        struct ck_err err = {0};
        int e = ck_rest_delete(c->client, &ck_res_pods, ck__meta_str(r[i].pod, "namespace"),
                               ck__meta_str(r[i].pod, "name"), NULL, NULL, &err);
        if (e < 0 && e != CK_ENOENT) {
            ck_expectations_deletion_observed_of(c->exp, rs_key, keys[i]);
            if (!first) {
                first = e;
                *reterr = err;
            }
        } else if (e == CK_ENOENT) {
            ck_expectations_deletion_observed_of(c->exp, rs_key, keys[i]);
        }
    }
    for (int i = 0; i < diff; i++)
        free(owned_keys[i]);
    free(owned_keys);
    free(keys);
    free(r);
    return first;
}

static int manage_replicas(struct ck_rs_controller *c, const json_t *rs, const char *rs_key,
                           const struct ck_obj_list *pods, const char **ret_reason,
                           struct ck_err *reterr)
{
    json_int_t want = 1;
    const json_t *replicas = json_object_get(json_object_get(rs, "spec"), "replicas");
    if (json_is_integer(replicas))
        want = json_integer_value(replicas);
    long diff = (long)pods->n - (long)want;
    if (diff < 0) {
        int n = (int)(-diff > CK_RS_BURST_REPLICAS ? CK_RS_BURST_REPLICAS : -diff);
        ck_expectations_expect_creations(c->exp, rs_key, n);
        CK_LOGV(2, "replicaset %s: too few replicas, need %lld, creating %d", rs_key,
                (long long)want, n);
        struct ck_err err = {0};
        int created = slow_start_create(c, rs, rs_key, n, &err);
        if (created < n) {
            *ret_reason = "FailedCreate";
            char msg[300];
            snprintf(msg, sizeof(msg), "Error creating: %s", err.msg);
            record_warning(c, rs, "FailedCreate", msg);
            *reterr = err;
            return err.code ? err.code : CK_EIO;
        }
    } else if (diff > 0) {
        int n = (int)(diff > CK_RS_BURST_REPLICAS ? CK_RS_BURST_REPLICAS : diff);
        CK_LOGV(2, "replicaset %s: too many replicas, need %lld, deleting %d", rs_key,
                (long long)want, n);
        struct ck_err err = {0};
        int r = delete_surplus(c, rs_key, pods, n, &err);
        if (r < 0) {
            *ret_reason = "FailedDelete";
            char msg[300];
            snprintf(msg, sizeof(msg), "Error deleting: %s", err.msg);
            record_warning(c, rs, "FailedDelete", msg);
            *reterr = err;
            return r;
        }
    }
    return 0;
}

static int sync_rs(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_rs_controller *c = ctl->data;
    const json_t *rs = NULL;
    if (ck_indexer_get_by_key(ck_informer_indexer(c->rss), key, &rs) < 0) {
        ck_expectations_delete(c->exp, key); /* deleted: nothing to do */
        return 0;
    }
    bool needs_sync = ck_expectations_satisfied(c->exp, key);
    struct ck_label_selector *sel = NULL;
    const json_t *spec_sel = json_object_get(json_object_get(rs, "spec"), "selector");
    if (ck_label_selector_from_object(spec_sel, &sel, NULL) < 0 || !spec_sel) {
        CK_LOGE("replicaset %s: invalid selector; not syncing", key);
        ck_cached_unref(rs);
        return 0; /* retrying cannot help until the object changes */
    }

    /* the namespace's pods that are active */
    struct ck_obj_list all = {0};
    const char *ns = ck__meta_str(rs, "namespace");
    int r = ck_indexer_by_index(ck_informer_indexer(c->pods), CK_INDEX_NAMESPACE, ns ? ns : "",
                                &all, reterr);
    const json_t **active = calloc(all.n ? all.n : 1, sizeof(*active));
    size_t nactive = 0;
    for (size_t i = 0; active && i < all.n; i++)
        if (is_active(all.items[i]))
            active[nactive++] = all.items[i];
    struct ck_obj_list claimed = {0};
    int claim_err = 0;
    if (r == 0 && active) {
        struct ck_ref_owner owner = {
            .owner = rs,
            .api_version = "apps/v1",
            .kind = "ReplicaSet",
            .selector = sel,
            .client = c->client,
            .owner_res = &ck_res_replicasets,
            .child_res = &ck_res_pods,
        };
        claim_err = ck_claim_objects(&owner, active, nactive, &claimed, reterr);
    } else if (r == 0) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    free(active);
    ck_obj_list_release(&all);
    ck_label_selector_free(sel);
    if (r < 0 || claim_err < 0) {
        ck_obj_list_release(&claimed);
        ck_cached_unref(rs);
        return r < 0 ? r : claim_err;
    }

    int manage_err = 0;
    const char *reason = NULL;
    struct ck_err manage_words = {0};
    if (needs_sync && !being_deleted(rs))
        manage_err = manage_replicas(c, rs, key, &claimed, &reason, &manage_words);

    int64_t requeue_after = 0;
    json_t *status = compute_status(rs, &claimed, manage_err, reason ? reason : "",
                                    manage_words.msg, &requeue_after);
    int status_err = status ? write_status(c, rs, status, reterr)
                            : ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_decref(status);
    if (status_err == 0 && requeue_after > 0)
        ck_wq_add_after(c->queue, key, requeue_after);
    ck_obj_list_release(&claimed);
    ck_cached_unref(rs);
    if (manage_err < 0) {
        *reterr = manage_words;
        return manage_err;
    }
    return status_err;
}

/* ---- lifecycle ------------------------------------------------------------------- */

int ck_rs_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         struct ck_clock *clock, struct ck_rs_controller **ret_c,
                         struct ck_err *reterr)
{
    struct ck_rs_controller *c = calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->client = client;
    c->clock = clock;
    c->pods = ck_informer_factory_for(factory, &ck_res_pods);
    c->rss = ck_informer_factory_for(factory, &ck_res_replicasets);
    struct ck_wq_options qopts = {
        .name = "replicaset",
        .clock = clock,
        .limiter = ck_rl_default_controller_new(clock),
    };
    int r = !c->pods || !c->rss ? ck_err_set(reterr, CK_ENOMEM, "out of memory") : 0;
    if (r == 0)
        r = ck_wq_new(&qopts, &c->queue, reterr);
    else
        ck_rl_free(qopts.limiter);
    if (r == 0)
        r = ck_expectations_new(clock, 0, &c->exp, reterr);
    if (r == 0) {
        struct ck_event_handler rs_h = {rs_add, rs_update, rs_delete, c};
        struct ck_event_handler pod_h = {pod_add, pod_update, pod_delete, c};
        r = ck_informer_add_handler(c->rss, &rs_h, 0, reterr);
        if (r == 0)
            r = ck_informer_add_handler(c->pods, &pod_h, 0, reterr);
        /* other controllers may have added it already: that is fine */
        int ix = ck_informer_add_index(c->pods, CK_INDEX_CONTROLLER_UID, ck_index_by_controller_uid,
                                       NULL, NULL);
        if (r == 0 && ix < 0 && ix != CK_EEXIST)
            r = ck_err_set(reterr, ix, "cannot add the controller-uid index");
    }
    if (r < 0) {
        ck_rs_controller_free(c);
        return r;
    }
    c->ctl.name = "replicaset";
    c->ctl.sync = sync_rs;
    c->ctl.data = c;
    c->ctl.queue = c->queue;
    *ret_c = c;
    return 0;
}

int ck_rs_controller_run(struct ck_rs_controller *c, int workers, struct ck_err *reterr)
{
    if (!ck_informer_wait_for_sync(c->pods, CK_TIME_NEVER) ||
        !ck_informer_wait_for_sync(c->rss, CK_TIME_NEVER))
        return ck_err_set(reterr, CK_ESHUTDOWN, "replicaset: informers stopped before syncing");
    return ck_runner_start(&c->ctl, workers > 0 ? workers : 5, &c->runner, reterr);
}

struct ck_rs_controller *ck_rs_controller_free(struct ck_rs_controller *c)
{
    if (!c)
        return NULL;
    if (c->runner)
        ck_runner_stop(c->runner);
    ck_wq_free(c->queue);
    ck_expectations_free(c->exp);
    free(c);
    return NULL;
}

struct ck_wq *ck_rs_controller_queue(struct ck_rs_controller *c)
{
    return c->queue;
}
