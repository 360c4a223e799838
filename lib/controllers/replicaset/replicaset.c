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
 * The controller sees the world only through its interfaces (controllers.h): two listers
 * (pods and ReplicaSets) for reads and a client for writes. ck_rs_controller_new() puts
 * them over the shared informers and the REST client; ck_rs_controller_new_with() takes
 * them from the caller, so unit tests drive sync on fakes and check the client's actions.
 * Creating, ranking, events and expectations come from controller_utils.
 *
 * One controller serves ReplicaSets or ReplicationControllers (struct ck_rs_kind), as
 * Kubernetes' replication controller is the ReplicaSet controller over an adapter
 * (pkg/controller/replication/conversion.go): what differs is the resource, the kind in
 * owner references, the event component, and the selector, which for an RC is a map of
 * labels read as the equality selector of those labels.
 *
 * Threading: the runner calls sync for one key at a time per key; handlers run on the
 * informers' threads. The controller's own state is read-only after creation, except
 * expectations, which are thread-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/replicaset.h"

const struct ck_rs_kind ck_rs_kind_replicaset = {
    .controller = "replicaset",
    .component = "replicaset-controller",
    .group = "apps",
    .version = "v1",
    .resource = "replicasets",
    .api_version = "apps/v1",
    .kind = "ReplicaSet",
};

/* Kubernetes runs ReplicationControllers through the ReplicaSet controller too. */
const struct ck_rs_kind ck_rs_kind_replicationcontroller = {
    .controller = "replicationcontroller",
    .component = "replication-controller",
    .group = "",
    .version = "v1",
    .resource = "replicationcontrollers",
    .api_version = "v1",
    .kind = "ReplicationController",
    .equality_selector = true,
};

struct ck_rs_controller {
    const struct ck_rs_kind *kind; /* what the controller keeps: ReplicaSets or RCs */
    struct ck_ctl_client client;   /* every write */
    struct ck_lister pods, rss;    /* every read of the caches */
    const struct ck_resource *pods_res, *rss_res;
    struct ck_ctl_event_sink sink;      /* the recorder writes through client */
    struct ck_event_recorder *recorder; /* events on the ReplicaSets */
    struct ck_informer *infs[2];        /* ReplicaSets, pods; NULL when made from given listers */
    struct ck_expectations *exp;
    struct ck_wq *queue; /* ctl.queue */
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

/*
 * The owner's selector: a LabelSelector, or for an equality selector (a
 * ReplicationController's map of labels) the selector of those labels.
 * Returns 0 (a NULL spec.selector included, giving *ret NULL) or < 0.
 */
static int owner_selector(const struct ck_rs_controller *c, const json_t *owner,
                          struct ck_label_selector **ret, struct ck_err *reterr)
{
    const json_t *spec_sel = json_object_get(json_object_get(owner, "spec"), "selector");
    *ret = NULL;
    if (!spec_sel)
        return 0;
    if (!c->kind->equality_selector)
        return ck_label_selector_from_object(spec_sel, ret, reterr);
    json_t *as_label_selector = json_pack("{s:O}", "matchLabels", spec_sel);
    if (!as_label_selector)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = ck_label_selector_from_object(as_label_selector, ret, reterr);
    json_decref(as_label_selector);
    return r;
}

/* Enqueues every owner of child's namespace whose selector matches its labels. */
static void enqueue_selecting(struct ck_rs_controller *c, const json_t *child)
{
    if (!c->kind->equality_selector) {
        ck__ctl_enqueue_selecting(c->queue, &c->rss, child);
        return;
    }
    const char *ns = ck__meta_str(child, "namespace");
    struct ck_obj_list list = {0};
    if (!ns || ck_lister_list(&c->rss, ns, NULL, &list, NULL) < 0)
        return;
    const json_t *labels = json_object_get(meta(child), "labels");
    for (size_t i = 0; i < list.n; i++) {
        struct ck_label_selector *sel = NULL;
        if (owner_selector(c, list.items[i], &sel, NULL) < 0 || !sel)
            continue;
        if (!ck_label_selector_is_empty(sel) && ck_label_selector_matches(sel, labels))
            ck__ctl_enqueue(c->queue, list.items[i]);
        ck_label_selector_free(sel);
    }
    ck_obj_list_release(&list);
}

/* ---- handlers ------------------------------------------------------------------ */

static void rs_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_rs_controller *)arg)->queue, obj);
}

static void rs_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_rs_controller *)arg)->queue, obj);
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
    const json_t *rs =
        ck__ctl_resolve_ref(&c->rss, c->kind->kind, ck__meta_str(pod, "namespace"), ref);
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
        const json_t *rs = ck__ctl_resolve_ref(
            &c->rss, c->kind->kind, ck__meta_str(pod, "namespace"), ck_controller_ref(pod));
        char *rs_key = NULL;
        if (rs && ck_meta_namespace_key(rs, &rs_key, NULL) == 0) {
            ck_expectations_creation_observed(c->exp, rs_key);
            ck_wq_add(c->queue, rs_key);
        }
        free(rs_key);
        ck_cached_unref(rs);
    } else {
        enqueue_selecting(c, pod);
    }
    free(pod_key);
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    struct ck_rs_controller *c = arg;
    if (old == pod) { /* a resync: the owner looks again */
        pod_add(pod, false, arg);
        return;
    }
    if (ck__ctl_same_version(old, pod))
        return;
    char *pod_key = NULL;
    if (ck_meta_namespace_key(pod, &pod_key, NULL) < 0)
        return;
    bool labels_changed =
        !json_equal(json_object_get(meta(old), "labels"), json_object_get(meta(pod), "labels"));
    const json_t *old_ref = ck_controller_ref(old), *ref = ck_controller_ref(pod);
    if (being_deleted(pod)) {
        pod_deleted(c, pod, pod_key);
        if (!ck__ctl_same_ref(old_ref, ref))
            pod_deleted(c, old, pod_key);
        free(pod_key);
        return;
    }
    if (!ck__ctl_same_ref(old_ref, ref))
        ck__ctl_enqueue_owner(c->queue, &c->rss, c->kind->kind, old, old_ref);
    if (ref)
        ck__ctl_enqueue_owner(c->queue, &c->rss, c->kind->kind, pod, ref);
    else if (labels_changed || old_ref)
        enqueue_selecting(c, pod);
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

/* ---- time ------------------------------------------------------------------------ */

/* ---- creating pods in slow-start batches ----------------------------------------- */

struct create_ctx {
    struct ck_rs_controller *c;
    const json_t *rs; /* what the events are about */
    const char *namespace;
    const json_t *pod; /* the pod to create: the same for every call */
};

/* One pod (PodControl.CreatePods): an event on the ReplicaSet either way. */
static int create_one(void *arg, struct ck_err *reterr)
{
    struct create_ctx *x = arg;
    json_t *made = NULL;
    int r = ck_ctl_create(&x->c->client, x->c->pods_res, x->namespace, x->pod, &made, reterr);
    if (r < 0)
        ck_event_recordf(x->c->recorder, x->rs, CK_EVENT_WARNING, "FailedCreate",
                         "Error creating: %s", reterr ? ck_err_message(reterr) : "");
    else
        ck_event_recordf(x->c->recorder, x->rs, CK_EVENT_NORMAL, "SuccessfulCreate",
                         "Created pod: %s", ck__meta_str(made, "name") ?: "");
    json_decref(made);
    return r;
}

/* Creates count pods from rs's template in slow-start batches; returns how many were made. */
static int slow_start_create(struct ck_rs_controller *c, const json_t *rs, const char *rs_key,
                             int count, struct ck_err *reterr)
{
    json_t *ref = ck_controller_ref_new(rs, c->kind->api_version, c->kind->kind);
    json_t *pod = ref ? ck_pod_from_template(
                            json_object_get(json_object_get(rs, "spec"), "template"), rs, ref)
                      : NULL;
    json_decref(ref);
    int created = 0;
    if (pod) {
        struct create_ctx x = {c, rs, ck__meta_str(rs, "namespace"), pod};
        created = ck_slow_start_batch(count, CK_SLOW_START_INITIAL_BATCH, create_one, &x, reterr);
    } else {
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    /* pods that failed or were never tried will not be observed: stop expecting them */
    for (int i = created; i < count; i++)
        ck_expectations_creation_observed(c->exp, rs_key);
    json_decref(pod);
    return created;
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
        if (ck_pod_is_ready(pod, &since)) {
            ready++;
            int64_t t = 0;
            if (ck__time_parse(since, &t, NULL) != 0)
                t = 0;
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
            ck__time_format((int64_t)time(NULL), 0, now_s, sizeof(now_s));
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
    json_t *copy = ck__json_copy(rs);
    if (!copy)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_object_set(copy, "status", status);
    const char *ns = ck__meta_str(rs, "namespace");
    int r = ck_ctl_update_status(&c->client, c->rss_res, ns, copy, NULL, reterr);
    json_decref(copy);
    if (r != CK_ECONFLICT)
        return r;
    /* the cache is behind (statusUpdateRetries): once more on a fresh read */
    json_t *fresh = NULL;
    r = ck_ctl_get(&c->client, c->rss_res, ns, ck__meta_str(rs, "name"), &fresh, reterr);
    if (r < 0)
        return r;
    const char *a = ck__meta_str(fresh, "uid"), *b = ck__meta_str(rs, "uid");
    if (a && b && strcmp(a, b) == 0) {
        json_object_set(fresh, "status", status);
        r = ck_ctl_update_status(&c->client, c->rss_res, ns, fresh, NULL, reterr);
    }
    json_decref(fresh);
    return r;
}

/* ---- sync ------------------------------------------------------------------------- */

/* Deletes surplus pods, ranked. Returns 0 or the first error (with its words). */
static int delete_surplus(struct ck_rs_controller *c, const json_t *rs, const char *rs_key,
                          const struct ck_obj_list *pods, int diff, struct ck_err *reterr)
{
    const json_t **order = ck__calloc(pods->n ? pods->n : 1, sizeof(*order));
    const char **keys = ck__calloc((size_t)diff, sizeof(*keys));
    char **owned_keys = ck__calloc((size_t)diff, sizeof(*owned_keys));
    int first = order && keys && owned_keys ? 0 : CK_ENOMEM;
    if (first == 0) {
        memcpy(order, pods->items, pods->n * sizeof(*order));
        first = ck_pods_rank_for_deletion(order, pods->n, NULL, 0);
    }
    if (first < 0) {
        free(order);
        free(keys);
        free(owned_keys);
        return ck_err_set(reterr, first, "out of memory");
    }
    for (int i = 0; i < diff; i++) {
        ck_meta_namespace_key(order[i], &owned_keys[i], NULL);
        keys[i] = owned_keys[i] ? owned_keys[i] : "";
    }
    ck_expectations_expect_deletions_of(c->exp, rs_key, keys, (size_t)diff);
    for (int i = 0; i < diff; i++) {
        struct ck_err err = {0};
        const char *pod_name = ck__meta_str(order[i], "name");
        int e = ck_ctl_delete(&c->client, c->pods_res, ck__meta_str(order[i], "namespace"),
                              pod_name, NULL, NULL, &err);
        if (e < 0) /* will not be observed (or was gone already) */
            ck_expectations_deletion_observed_of(c->exp, rs_key, keys[i]);
        /* PodControl.DeletePod: a pod already gone is no news */
        if (e == 0)
            ck_event_recordf(c->recorder, rs, CK_EVENT_NORMAL, "SuccessfulDelete",
                             "Deleted pod: %s", pod_name ? pod_name : "");
        else if (e != CK_ENOENT)
            ck_event_recordf(c->recorder, rs, CK_EVENT_WARNING, "FailedDelete",
                             "Error deleting: %s", ck_err_message(&err));
        if (e < 0 && e != CK_ENOENT && !first) {
            first = e;
            *reterr = err; /* the caller releases it */
        } else {
            ck_err_release(&err);
        }
    }
    for (int i = 0; i < diff; i++)
        free(owned_keys[i]);
    free(owned_keys);
    free(keys);
    free(order);
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
        CK_LOGV(2, "%s %s: too few replicas, need %lld, creating %d", c->kind->controller, rs_key,
                (long long)want, n);
        struct ck_err err = {0};
        int created = slow_start_create(c, rs, rs_key, n, &err);
        if (created < n) {
            *ret_reason = "FailedCreate"; /* its event came with the failed create */
            *reterr = err;
            return err.code ? err.code : CK_EIO;
        }
    } else if (diff > 0) {
        int n = (int)(diff > CK_RS_BURST_REPLICAS ? CK_RS_BURST_REPLICAS : diff);
        CK_LOGV(2, "%s %s: too many replicas, need %lld, deleting %d", c->kind->controller, rs_key,
                (long long)want, n);
        struct ck_err err = {0};
        int r = delete_surplus(c, rs, rs_key, pods, n, &err);
        if (r < 0) {
            *ret_reason = "FailedDelete"; /* its event came with the failed delete */
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
    char *ns_part = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns_part, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->rss, ns_part, name, &rs);
    free(ns_part);
    free(name);
    if (r < 0) {
        ck_expectations_delete(c->exp, key); /* deleted (or a bad key): nothing to do */
        return 0;
    }
    bool needs_sync = ck_expectations_satisfied(c->exp, key);
    struct ck_label_selector *sel = NULL;
    const json_t *spec_sel = json_object_get(json_object_get(rs, "spec"), "selector");
    if (owner_selector(c, rs, &sel, NULL) < 0 || !spec_sel) {
        CK_LOGE("%s %s: invalid selector; not syncing", c->kind->controller, key);
        ck_cached_unref(rs);
        return 0; /* retrying cannot help until the object changes */
    }

    /* the namespace's pods that are active */
    struct ck_obj_list all = {0};
    const char *ns = ck__meta_str(rs, "namespace");
    r = ck_lister_list(&c->pods, ns ? ns : "", NULL, &all, reterr);
    const json_t **active = calloc(all.n ? all.n : 1, sizeof(*active));
    size_t nactive = 0;
    for (size_t i = 0; active && i < all.n; i++)
        if (ck_pod_is_active(all.items[i]))
            active[nactive++] = all.items[i];
    struct ck_obj_list claimed = {0};
    int claim_err = 0;
    if (r == 0 && active) {
        struct ck_ref_owner owner = {
            .owner = rs,
            .api_version = c->kind->api_version,
            .kind = c->kind->kind,
            .selector = sel,
            .client = &c->client,
            .owner_res = c->rss_res,
            .child_res = c->pods_res,
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

/*
 * What both constructors share: resources, recorder, queue, expectations, the runner's
 * view. synchronous_events: the recorder writes on the recording thread (unit tests).
 */
static int init_common(struct ck_rs_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    c->pods_res = ck_controller_resource("", "v1", "pods");
    c->rss_res = ck_controller_resource(c->kind->group, c->kind->version, c->kind->resource);
    if (!c->pods_res || !c->rss_res)
        return ck_err_set(reterr, CK_ENOENT, "%s: the API kinds it needs are unknown",
                          c->kind->controller);
    int r = ck__ctl_recorder(&c->sink, &c->client, c->kind->component, clock, synchronous_events,
                             &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, c->kind->controller, sync_rs, c, clock, reterr);
    c->queue = c->ctl.queue;
    if (r == 0)
        r = ck_expectations_new(clock, 0, &c->exp, reterr);
    return r;
}

int ck_rs_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         struct ck_clock *clock, struct ck_rs_controller **ret_c,
                         struct ck_err *reterr)
{
    return ck_rs_controller_new_for(&ck_rs_kind_replicaset, client, factory, clock, ret_c, reterr);
}

int ck_rs_controller_new_for(const struct ck_rs_kind *kind, struct ck_rest *client,
                             struct ck_informer_factory *factory, struct ck_clock *clock,
                             struct ck_rs_controller **ret_c, struct ck_err *reterr)
{
    struct ck_rs_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->kind = kind;
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler rs_h, pod_h;
    ck_rs_controller_handlers(c, &rs_h, &pod_h);
    int r = init_common(c, &rest, clock, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->rss_res, &rs_h, &c->infs[0], &c->rss, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->pods_res, &pod_h, &c->infs[1], &c->pods, reterr);
    if (r == 0) {
        /* other controllers may have added it already: that is fine */
        int ix = ck_informer_add_index(c->infs[1], CK_INDEX_CONTROLLER_UID,
                                       ck_index_by_controller_uid, NULL, NULL);
        if (ix < 0 && ix != CK_EEXIST)
            r = ck_err_set(reterr, ix, "cannot add the controller-uid index");
    }
    if (r < 0) {
        ck_rs_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_rs_controller_new_with(const struct ck_rs_controller_deps *deps,
                              struct ck_rs_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->pods || !deps->replicasets)
        return ck_err_set(reterr, CK_EINVAL, "replicaset: a client and two listers are needed");
    struct ck_rs_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->kind = deps->kind ? deps->kind : &ck_rs_kind_replicaset;
    c->pods = *deps->pods;
    c->rss = *deps->replicasets;
    int r = init_common(c, deps->client, deps->clock, !deps->async_events, reterr);
    if (r < 0) {
        ck_rs_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

void ck_rs_controller_handlers(struct ck_rs_controller *c, struct ck_event_handler *ret_rs,
                               struct ck_event_handler *ret_pods)
{
    *ret_rs = (struct ck_event_handler){rs_add, rs_update, rs_delete, c};
    *ret_pods = (struct ck_event_handler){pod_add, pod_update, pod_delete, c};
}

int ck_rs_controller_sync(struct ck_rs_controller *c, const char *key, struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

int ck_rs_controller_run(struct ck_rs_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 2, workers, &c->runner, reterr);
}

struct ck_rs_controller *ck_rs_controller_free(struct ck_rs_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    ck_expectations_free(c->exp);
    free(c);
    return NULL;
}

struct ck_wq *ck_rs_controller_queue(struct ck_rs_controller *c)
{
    return c->queue;
}

struct ck_expectations *ck_rs_controller_expectations(struct ck_rs_controller *c)
{
    return c->exp;
}

struct ck_event_recorder *ck_rs_controller_recorder(struct ck_rs_controller *c)
{
    return c->recorder;
}
