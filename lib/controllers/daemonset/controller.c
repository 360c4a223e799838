/*
 * controller.c - the DaemonSet controller (kubernetes pkg/controller/daemon/
 * daemon_controller.go): handlers, syncDaemonSet, manage, syncNodes, the status.
 *
 * Handlers (on the informers' threads) map events to DaemonSet keys:
 *   - a DaemonSet added or changed: its key; deleted: its key, its expectations dropped;
 *   - a pod or ControllerRevision with a controller reference: its owner (a pod created
 *     or deleted is an observed creation or deletion); an orphan: every DaemonSet of its
 *     namespace selecting it, to adopt it. A pod turning Ready also requeues its owner
 *     after minReadySeconds and one second, when that is set;
 *   - a node added: every DaemonSet that should run on it; changed (beyond its
 *     heartbeats): every DaemonSet whose decision for it changed; deleted: every
 *     DaemonSet that had it (so the counts follow).
 *
 * sync(key) (syncDaemonSet) reads the DaemonSet, the nodes and the namespace's pods from
 * the caches, claims pods, and builds the revision history (history.c). While the
 * expectations of earlier creates and deletes are not met, it only writes status;
 * otherwise manage makes one pod per node that should run one (none on the others),
 * deletes pods whose node should not keep them, extra pods on a node (all but the oldest;
 * with surge, the oldest new and oldest old), unscheduled pods for nodes that are gone,
 * and Failed pods, each failed node with its own back-off (1 s doubling to 15 min). Then,
 * with expectations met, the RollingUpdate step (update.c), the history cleanup, and the
 * status with observedGeneration.
 *
 * Each pod is the template with the daemon tolerations, the labels
 * pod-template-generation and controller-revision-hash, and a required node affinity on
 * metadata.name In [node]: the scheduler binds it to that node. Creates go in slow-start
 * batches (1, 2, 4, ...) of at most CK_DS_BURST_REPLICAS per sync, as deletes.
 *
 * Threading: the runner calls sync for one key at a time per key; handlers only enqueue
 * and lower expectations (thread-safe).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

static const char *ns_of(const json_t *obj)
{
    return json_string_value(json_object_get(ck__ds_meta(obj), "namespace"));
}

static bool being_deleted(const json_t *obj)
{
    return json_object_get(ck__ds_meta(obj), "deletionTimestamp") != NULL;
}

static const char *phase_of(const json_t *pod)
{
    return json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
}

/* ---- handlers ------------------------------------------------------------------ */

static void ds_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_ds_controller *)arg)->queue, obj);
}

static void ds_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_ds_controller *)arg)->queue, obj);
}

static void ds_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    struct ck_ds_controller *c = arg;
    char *key = NULL;
    if (ck_deletion_handling_key(obj, t, &key, NULL) < 0)
        return;
    ck_expectations_delete(c->exp, key);
    ck_wq_add(c->queue, key);
    free(key);
}

/* The key of the DaemonSet controlling child (a new string), or NULL. */
static char *owner_key(struct ck_ds_controller *c, const json_t *child, const json_t *ref)
{
    if (!ref)
        return NULL;
    const json_t *ds = ck__ctl_resolve_ref(&c->sets, CK__DS_KIND, ns_of(child), ref);
    char *key = NULL;
    if (ds)
        ck_meta_namespace_key(ds, &key, NULL);
    ck_cached_unref(ds);
    return key;
}

static void child_deleted(struct ck_ds_controller *c, const json_t *pod, bool observe)
{
    char *key = owner_key(c, pod, ck_controller_ref(pod));
    if (!key)
        return;
    if (observe)
        ck_expectations_deletion_observed(c->exp, key);
    ck_wq_add(c->queue, key);
    free(key);
}

static void pod_add(const json_t *pod, bool initial, void *arg)
{
    (void)initial;
    struct ck_ds_controller *c = arg;
    if (being_deleted(pod)) {
        child_deleted(c, pod, true); /* a restart can show a pod already being deleted */
        return;
    }
    const json_t *ref = ck_controller_ref(pod);
    if (!ref) {
        ck__ctl_enqueue_selecting(c->queue, &c->sets, pod);
        return;
    }
    char *key = owner_key(c, pod, ref);
    if (key) {
        ck_expectations_creation_observed(c->exp, key);
        ck_wq_add(c->queue, key);
    }
    free(key);
}

static void pod_update(const json_t *old, const json_t *pod, void *arg)
{
    struct ck_ds_controller *c = arg;
    if (old == pod) { /* a resync */
        pod_add(pod, false, arg);
        return;
    }
    if (ck__ctl_same_version(old, pod))
        return;
    if (being_deleted(pod)) {
        /* the deletion is observed once, when the pod first shows its deletionTimestamp */
        child_deleted(c, pod, !being_deleted(old));
        return;
    }
    const json_t *old_ref = ck_controller_ref(old), *ref = ck_controller_ref(pod);
    if (!ck__ctl_same_ref(old_ref, ref))
        ck__ctl_enqueue_owner(c->queue, &c->sets, CK__DS_KIND, old, old_ref);
    if (ref) {
        const json_t *ds = ck__ctl_resolve_ref(&c->sets, CK__DS_KIND, ns_of(pod), ref);
        if (ds) {
            ck__ctl_enqueue(c->queue, ds);
            long long min_ready = ck__ds_min_ready(ds);
            if (min_ready > 0 && !ck_pod_is_ready(old, NULL) && ck_pod_is_ready(pod, NULL)) {
                char *key = NULL;
                if (ck_meta_namespace_key(ds, &key, NULL) == 0)
                    ck_wq_add_after(c->queue, key, (int64_t)(min_ready + 1) * CK_SEC);
                free(key);
            }
        }
        ck_cached_unref(ds);
        return;
    }
    if (old_ref || !json_equal(json_object_get(ck__ds_meta(old), "labels"),
                               json_object_get(ck__ds_meta(pod), "labels")))
        ck__ctl_enqueue_selecting(c->queue, &c->sets, pod);
}

static void pod_delete(const json_t *pod, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    const json_t *obj = pod ? pod : (t ? t->obj : NULL);
    /* a pod seen with its deletionTimestamp was counted then */
    if (obj)
        child_deleted(arg, obj, !being_deleted(obj));
}

static void revision_delete(const json_t *rev, const struct ck_deleted_final_state_unknown *t,
                            void *arg);

static void revision_add(const json_t *rev, bool initial, void *arg)
{
    (void)initial;
    struct ck_ds_controller *c = arg;
    if (being_deleted(rev)) {
        revision_delete(rev, NULL, arg);
        return;
    }
    /* an owned revision added is only observed; an orphan may be adopted */
    if (!ck_controller_ref(rev))
        ck__ctl_enqueue_selecting(c->queue, &c->sets, rev);
}

static void revision_update(const json_t *old, const json_t *rev, void *arg)
{
    struct ck_ds_controller *c = arg;
    if (old == rev || ck__ctl_same_version(old, rev))
        return;
    const json_t *old_ref = ck_controller_ref(old), *ref = ck_controller_ref(rev);
    bool ref_changed = !ck__ctl_same_ref(old_ref, ref);
    if (ref_changed)
        ck__ctl_enqueue_owner(c->queue, &c->sets, CK__DS_KIND, old, old_ref);
    if (ref)
        ck__ctl_enqueue_owner(c->queue, &c->sets, CK__DS_KIND, rev, ref);
    else if (ref_changed || !json_equal(json_object_get(ck__ds_meta(old), "labels"),
                                        json_object_get(ck__ds_meta(rev), "labels"))) {
        ck__ctl_enqueue_selecting(c->queue, &c->sets, rev);
    }
}

static void revision_delete(const json_t *rev, const struct ck_deleted_final_state_unknown *t,
                            void *arg)
{
    struct ck_ds_controller *c = arg;
    const json_t *obj = rev ? rev : (t ? t->obj : NULL);
    if (obj)
        ck__ctl_enqueue_owner(c->queue, &c->sets, CK__DS_KIND, obj, ck_controller_ref(obj));
}

/* Enqueues every DaemonSet for which `want` says the node change matters. */
static void enqueue_for_node(struct ck_ds_controller *c, const json_t *old, const json_t *node)
{
    struct ck_obj_list sets = {0};
    if (ck_lister_list(&c->sets, NULL, NULL, &sets, NULL) < 0)
        return;
    for (size_t i = 0; i < sets.n; i++) {
        bool run, cont, old_run = false, old_cont = false;
        ck_ds_node_should_run(node, sets.items[i], &run, &cont);
        if (old)
            ck_ds_node_should_run(old, sets.items[i], &old_run, &old_cont);
        if (old ? (run != old_run || cont != old_cont) : run)
            ck__ctl_enqueue(c->queue, sets.items[i]);
    }
    ck_obj_list_release(&sets);
}

static void node_add(const json_t *node, bool initial, void *arg)
{
    (void)initial;
    enqueue_for_node(arg, NULL, node);
}

/* The types of node's conditions that are True, in order. */
static bool has_true_condition(const json_t *node, const json_t *type)
{
    size_t i;
    const json_t *cond;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, cond)
    {
        if (json_equal(json_object_get(cond, "type"), (json_t *)type) &&
            json_is_string(json_object_get(cond, "status")) &&
            strcmp(json_string_value(json_object_get(cond, "status")), "True") == 0)
            return true;
    }
    return false;
}

/* nodeInSameCondition: the same condition types are True in both. */
static bool same_conditions(const json_t *old, const json_t *node)
{
    const json_t *conds[2] = {json_object_get(json_object_get(old, "status"), "conditions"),
                              json_object_get(json_object_get(node, "status"), "conditions")};
    const json_t *other[2] = {node, old};
    for (int k = 0; k < 2; k++) {
        size_t i;
        const json_t *cond;
        json_array_foreach(conds[k], i, cond)
        {
            const char *status = json_string_value(json_object_get(cond, "status"));
            if (status && strcmp(status, "True") == 0 &&
                !has_true_condition(other[k], json_object_get(cond, "type")))
                return false;
        }
    }
    return true;
}

static void node_update(const json_t *old, const json_t *node, void *arg)
{
    /* shouldIgnoreNodeUpdate: only heartbeats changed */
    if (old == node || (same_conditions(old, node) &&
                        json_equal(json_object_get(ck__ds_meta(old), "labels"),
                                   json_object_get(ck__ds_meta(node), "labels")) &&
                        json_equal(json_object_get(old, "spec"), json_object_get(node, "spec"))))
        return;
    enqueue_for_node(arg, old, node);
}

static void node_delete(const json_t *node, const struct ck_deleted_final_state_unknown *t,
                        void *arg)
{
    struct ck_ds_controller *c = arg;
    const json_t *obj = node ? node : (t ? t->obj : NULL);
    struct ck_obj_list sets = {0};
    if (!obj || ck_lister_list(&c->sets, NULL, NULL, &sets, NULL) < 0)
        return;
    for (size_t i = 0; i < sets.n; i++) {
        bool run, cont;
        ck_ds_node_should_run(obj, sets.items[i], &run, &cont);
        if (run || cont)
            ck__ctl_enqueue(c->queue, sets.items[i]);
    }
    ck_obj_list_release(&sets);
}

/* ---- syncNodes: creating and deleting pods ------------------------------------------ */

struct create_ctx {
    struct ck_ds_controller *c;
    const json_t *ds;
    const json_t *template; /* CreatePodTemplate's */
    const json_t *ref;
    const char *const *nodes;
    atomic_size_t next; /* the index of the next node to take */
};

/* One pod for the next node (PodControl.CreatePods), with an event either way. */
static int create_one(void *arg, struct ck_err *reterr)
{
    struct create_ctx *x = arg;
    size_t ix = atomic_fetch_add(&x->next, 1);
    json_t *tmpl = ck__json_copy(x->template);
    json_t *spec = tmpl ? json_object_get(tmpl, "spec") : NULL;
    json_t *pod = NULL;
    if (spec && ck__ds_set_node_affinity(spec, x->nodes[ix]) == 0)
        pod = ck_pod_from_template(tmpl, x->ds, x->ref);
    json_decref(tmpl);
    if (!pod)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_t *made = NULL;
    int r = ck_ctl_create(&x->c->client, x->c->pods_res, ns_of(x->ds), pod, &made, reterr);
    if (r < 0)
        ck_event_recordf(x->c->recorder, x->ds, CK_EVENT_WARNING, "FailedCreate",
                         "Error creating: %s", reterr ? ck_err_message(reterr) : "");
    else
        ck_event_recordf(x->c->recorder, x->ds, CK_EVENT_NORMAL, "SuccessfulCreate",
                         "Created pod: %s", ck__ds_name_of(made) ? ck__ds_name_of(made) : "");
    json_decref(made);
    json_decref(pod);
    return r;
}

int ck__ds_sync_nodes(struct ck_ds_controller *c, const json_t *ds, const char *ds_key,
                      const char *const *pods_to_delete, size_t n_delete,
                      const char *const *nodes_to_create, size_t n_create, const char *hash,
                      struct ck_err *reterr)
{
    int create_diff = (int)(n_create > CK_DS_BURST_REPLICAS ? CK_DS_BURST_REPLICAS : n_create);
    int delete_diff = (int)(n_delete > CK_DS_BURST_REPLICAS ? CK_DS_BURST_REPLICAS : n_delete);
    ck_expectations_set(c->exp, ds_key, create_diff, delete_diff);
    int first = 0;
    if (create_diff > 0) {
        CK_LOGV(4, "daemonset %s: nodes needing daemon pods: %d, creating %d", ds_key,
                (int)n_create, create_diff);
        json_t *template = ck__ds_pod_template(ds, hash);
        json_t *ref = ck_controller_ref_new(ds, CK__DS_API_VERSION, CK__DS_KIND);
        int created = 0;
        if (template && ref) {
            struct create_ctx x = {c, ds, template, ref, nodes_to_create, 0};
            created = ck_slow_start_batch(create_diff, CK_SLOW_START_INITIAL_BATCH, create_one, &x,
                                          reterr);
            if (created < create_diff)
                first = reterr && reterr->code ? reterr->code : CK_EIO;
        } else {
            first = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
        /* failed or skipped creations will not be observed */
        for (int i = created; i < create_diff; i++)
            ck_expectations_creation_observed(c->exp, ds_key);
        json_decref(template);
        json_decref(ref);
    }
    for (int i = 0; i < delete_diff; i++) {
        struct ck_err err = {0};
        int e =
            ck_ctl_delete(&c->client, c->pods_res, ns_of(ds), pods_to_delete[i], NULL, NULL, &err);
        if (e < 0)
            ck_expectations_deletion_observed(c->exp, ds_key);
        if (e == 0)
            ck_event_recordf(c->recorder, ds, CK_EVENT_NORMAL, "SuccessfulDelete",
                             "Deleted pod: %s", pods_to_delete[i]);
        else if (e != CK_ENOENT)
            ck_event_recordf(c->recorder, ds, CK_EVENT_WARNING, "FailedDelete",
                             "Error deleting: %s", ck_err_message(&err));
        if (e < 0 && e != CK_ENOENT && !first) {
            first = e;
            if (reterr)
                *reterr = err;
            else
                ck_err_release(&err);
        } else {
            ck_err_release(&err);
        }
    }
    return first;
}

/* ---- manage -------------------------------------------------------------------------- */

int ck__ds_list_nodes(struct ck_ds_controller *c, struct ck_obj_list *ret, struct ck_err *reterr)
{
    return ck_lister_list(&c->nodes, NULL, NULL, ret, reterr);
}

/* podsShouldBeOnNode: what node needs, into the two arrays. */
static void pods_should_be_on_node(struct ck_ds_controller *c, const json_t *ds, const json_t *node,
                                   struct ck__ds_node_pods *g, const char *hash,
                                   struct ck__ds_names *need, struct ck__ds_names *del)
{
    bool run, cont;
    ck_ds_node_should_run(node, ds, &run, &cont);
    const char *node_name = ck__ds_name_of(node);
    if (run && !g) {
        ck__ds_names_push(need, node_name);
        return;
    }
    if (!g)
        return;
    if (!cont) {
        for (size_t i = 0; i < g->n; i++)
            if (!being_deleted(g->pods[i]))
                ck__ds_names_push(del, ck__ds_name_of(g->pods[i]));
        return;
    }
    const json_t **running = ck__calloc(g->n, sizeof(*running));
    size_t n_running = 0;
    if (!running) {
        del->nomem = true;
        return;
    }
    int64_t now = ck_clock_now(c->clock);
    for (size_t i = 0; i < g->n; i++) {
        const json_t *pod = g->pods[i];
        if (being_deleted(pod))
            continue;
        const char *phase = phase_of(pod);
        if (phase && strcmp(phase, "Failed") == 0) {
            char key[512];
            snprintf(key, sizeof(key), "%s/%lld/%s",
                     json_string_value(json_object_get(ck__ds_meta(ds), "uid")),
                     (long long)json_integer_value(
                         json_object_get(json_object_get(ds, "status"), "observedGeneration")),
                     node_name);
            int64_t delay = 0;
            if (ck__ds_backoff_active(&c->backoff, key, now, &delay)) {
                char *ds_key = NULL;
                if (ck_meta_namespace_key(ds, &ds_key, NULL) == 0)
                    ck_wq_add_after(c->queue, ds_key, delay);
                free(ds_key);
                continue;
            }
            ck__ds_backoff_next(&c->backoff, key, now);
            ck_event_recordf(c->recorder, ds, CK_EVENT_WARNING, "FailedDaemonPod",
                             "Found failed daemon pod %s/%s on node %s, will try to kill it",
                             ns_of(pod), ck__ds_name_of(pod), node_name);
            ck__ds_names_push(del, ck__ds_name_of(pod));
            continue;
        }
        if (phase && strcmp(phase, "Succeeded") == 0) {
            ck_event_recordf(c->recorder, ds, CK_EVENT_NORMAL, "SucceededDaemonPod",
                             "Found succeeded daemon pod %s/%s on node %s, will try to delete it",
                             ns_of(pod), ck__ds_name_of(pod), node_name);
            ck__ds_names_push(del, ck__ds_name_of(pod));
            continue;
        }
        running[n_running++] = pod;
    }
    ck__ds_sort_pods(running, n_running);
    int surge, unavailable;
    bool allows_surge = ck__ds_surge_unavailable(ds, 1, &surge, &unavailable) == 0 && surge > 0;
    if (!allows_surge) {
        /* all but the oldest go */
        for (size_t i = 1; i < n_running; i++)
            ck__ds_names_push(del, ck__ds_name_of(running[i]));
    } else if (n_running == 0 && run) {
        ck__ds_names_push(need, node_name); /* surging: the node needs one pod not being deleted */
    } else if (n_running > 1) {
        /*
         * Two pods may stay, the oldest new one and the oldest old one, while the new one
         * is not available and the old one is ready; every other pod goes.
         */
        const json_t *oldest_new = NULL, *oldest_old = NULL;
        for (size_t i = 0; i < n_running; i++) {
            const char *h = json_string_value(json_object_get(
                json_object_get(ck__ds_meta(running[i]), "labels"), CK__DS_HASH_LABEL));
            bool current = strcmp(h ? h : "", hash ? hash : "") == 0;
            if (current && !oldest_new)
                oldest_new = running[i];
            else if (!current && !oldest_old)
                oldest_old = running[i];
            else
                ck__ds_names_push(del, ck__ds_name_of(running[i]));
        }
        if (oldest_new && oldest_old &&
            (!ck_pod_is_ready(oldest_old, NULL) ||
             ck__ds_pod_available(oldest_new, ck__ds_min_ready(ds), now)))
            ck__ds_names_push(del, ck__ds_name_of(oldest_old));
    }
    free(running);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int manage(struct ck_ds_controller *c, const json_t *ds, const char *ds_key,
                  const struct ck_obj_list *nodes, const struct ck_obj_list *pods, const char *hash,
                  struct ck_err *reterr)
{
    struct ck__ds_pods_by_node by_node;
    if (ck__ds_group_pods(pods, &by_node) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck__ds_names need = {0}, del = {0};
    const char **node_names = ck__calloc(nodes->n ? nodes->n : 1, sizeof(*node_names));
    if (!node_names)
        need.nomem = true;
    for (size_t i = 0; node_names && i < nodes->n; i++) {
        node_names[i] = ck__ds_name_of(nodes->items[i]);
        if (!node_names[i])
            node_names[i] = "";
        pods_should_be_on_node(c, ds, nodes->items[i],
                               (struct ck__ds_node_pods *)ck__ds_pods_on(&by_node, node_names[i]),
                               hash, &need, &del);
    }
    /* getUnscheduledPodsWithoutNode: unscheduled pods meant for nodes that are gone */
    if (node_names) {
        qsort(node_names, nodes->n, sizeof(*node_names), cmp_str);
        for (size_t g = 0; g < by_node.n; g++) {
            const char *node = by_node.groups[g].node;
            if (nodes->n && bsearch(&node, node_names, nodes->n, sizeof(*node_names), cmp_str))
                continue;
            for (size_t k = 0; k < by_node.groups[g].n; k++) {
                const json_t *pod = by_node.groups[g].pods[k];
                const char *bound =
                    json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
                if (!bound || !*bound)
                    ck__ds_names_push(&del, ck__ds_name_of(pod));
            }
        }
    }
    int r = 0;
    if (need.nomem || del.nomem)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    else
        r = ck__ds_sync_nodes(c, ds, ds_key, del.v, del.n, need.v, need.n, hash, reterr);
    free(need.v);
    free(del.v);
    free(node_names);
    ck__ds_pods_by_node_release(&by_node);
    return r;
}

/* ---- status -------------------------------------------------------------------------- */

static const char *const status_fields[] = {
    "desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled", "numberReady",
    "updatedNumberScheduled", "numberAvailable",        "numberUnavailable",
};

/* updateDaemonSetStatus and storeDaemonSetStatus. */
static int update_status(struct ck_ds_controller *c, const json_t *ds, const char *ds_key,
                         const struct ck_obj_list *nodes, const struct ck_obj_list *pods,
                         const char *hash, bool observed_generation, struct ck_err *reterr)
{
    struct ck__ds_pods_by_node by_node;
    if (ck__ds_group_pods(pods, &by_node) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    long long counts[7] = {0}; /* as status_fields */
    long long min_ready = ck__ds_min_ready(ds);
    int64_t now = ck_clock_now(c->clock);
    for (size_t i = 0; i < nodes->n; i++) {
        bool run, cont;
        ck_ds_node_should_run(nodes->items[i], ds, &run, &cont);
        struct ck__ds_node_pods *g =
            (struct ck__ds_node_pods *)ck__ds_pods_on(&by_node, ck__ds_name_of(nodes->items[i]));
        bool scheduled = g && g->n > 0;
        if (!run) {
            counts[2] += scheduled;
            continue;
        }
        counts[0]++;
        if (!scheduled)
            continue;
        counts[1]++;
        ck__ds_sort_pods(g->pods, g->n);
        const json_t *pod = g->pods[0];
        if (ck_pod_is_ready(pod, NULL)) {
            counts[3]++;
            if (ck__ds_pod_available(pod, min_ready, now))
                counts[5]++;
        }
        if (ck__ds_pod_updated(pod, hash, ds))
            counts[4]++;
    }
    ck__ds_pods_by_node_release(&by_node);
    counts[6] = counts[0] - counts[5];

    const json_t *status = json_object_get(ds, "status");
    json_int_t generation = json_integer_value(json_object_get(ck__ds_meta(ds), "generation"));
    bool same = !observed_generation ||
                json_integer_value(json_object_get(status, "observedGeneration")) == generation;
    /* the first four are always written; the others are omitted when zero (omitempty) */
    for (size_t i = 0; same && i < 7; i++)
        same = json_integer_value(json_object_get(status, status_fields[i])) == counts[i] &&
               (i >= 4 || json_object_get(status, status_fields[i]));
    int r = 0;
    json_t *obj = same ? NULL : ck__json_copy(ds);
    for (int attempt = 0; !same && r == 0; attempt++) {
        json_t *st = obj ? json_object_get(obj, "status") : NULL;
        if (obj && !json_is_object(st)) {
            st = json_object();
            json_object_set_new(obj, "status", st);
        }
        if (!st) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            break;
        }
        if (observed_generation)
            json_object_set_new(st, "observedGeneration", json_integer(generation));
        for (size_t i = 0; i < 7; i++)
            if (i >= 4 && counts[i] == 0)
                json_object_del(st, status_fields[i]);
            else
                json_object_set_new(st, status_fields[i], json_integer(counts[i]));
        r = ck_ctl_update_status(&c->client, c->sets_res, ns_of(ds), obj, NULL, reterr);
        json_decref(obj);
        obj = NULL;
        if (r != CK_ECONFLICT || attempt >= 1) /* StatusUpdateRetries */
            break;
        ck_err_release(reterr);
        r = ck_ctl_get(&c->client, c->sets_res, ns_of(ds), ck__ds_name_of(ds), &obj, reterr);
    }
    json_decref(obj);
    if (r == 0 && min_ready > 0 && counts[3] != counts[5])
        ck_wq_add_after(c->queue, ds_key, min_ready * CK_SEC);
    return r;
}

/* ---- sync ---------------------------------------------------------------------------- */

static int sync_ds(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_ds_controller *c = ctl->data;
    const json_t *ds = NULL;
    char *ns = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, NULL);
    if (r == 0)
        r = ck_lister_get(&c->sets, ns, name, &ds);
    free(name);
    if (r < 0) {
        free(ns);
        ck_expectations_delete(c->exp, key); /* deleted (or a bad key): nothing to do */
        return 0;
    }
    int64_t now = ck_clock_now(c->clock);
    ck__ds_backoff_gc(&c->backoff, now);
    const json_t *spec_sel = json_object_get(json_object_get(ds, "spec"), "selector");
    struct ck_label_selector *sel = NULL;
    if (!spec_sel || ck_label_selector_from_object(spec_sel, &sel, NULL) < 0) {
        free(ns);
        ck_cached_unref(ds);
        return 0; /* retrying cannot help until the object changes */
    }
    if (ck_label_selector_is_empty(sel)) {
        ck_event_recordf(c->recorder, ds, CK_EVENT_WARNING, "SelectingAll",
                         "This daemon set is selecting all pods. A non-empty selector is "
                         "required.");
        ck_label_selector_free(sel);
        free(ns);
        ck_cached_unref(ds);
        return 0;
    }
    if (being_deleted(ds)) {
        ck_label_selector_free(sel);
        free(ns);
        ck_cached_unref(ds);
        return 0;
    }
    struct ck_obj_list nodes = {0}, claimed = {0}, old = {0};
    char *hash = NULL;
    r = ck__ds_list_nodes(c, &nodes, reterr);
    if (r == 0)
        r = ck__ds_construct_history(c, ds, &hash, &old, reterr);
    /* getDaemonPods: the namespace's pods, claimed */
    if (r == 0)
        r = ck__ds_claim(c, ds, sel, &c->pods, c->pods_res, &claimed, reterr);
    ck_label_selector_free(sel);
    free(ns);
    if (r == 0 && !ck_expectations_satisfied(c->exp, key)) {
        /* only the status, until the informer has seen our earlier writes */
        r = update_status(c, ds, key, &nodes, &claimed, hash, false, reterr);
    } else if (r == 0) {
        r = manage(c, ds, key, &nodes, &claimed, hash, reterr);
        if (r == 0 && ck_expectations_satisfied(c->exp, key) && ck__ds_rolling(ds))
            r = ck__ds_rolling_update(c, ds, key, &nodes, &claimed, hash, reterr);
        if (r == 0) {
            struct ck__ds_pods_by_node by_node;
            r = ck__ds_group_pods(&claimed, &by_node) < 0
                    ? ck_err_set(reterr, CK_ENOMEM, "out of memory")
                    : ck__ds_cleanup_history(c, ds, &by_node, &old, reterr);
            if (r == 0 || by_node.groups)
                ck__ds_pods_by_node_release(&by_node);
        }
        if (r == 0)
            r = update_status(c, ds, key, &nodes, &claimed, hash, true, reterr);
    }
    free(hash);
    ck_obj_list_release(&old);
    ck_obj_list_release(&claimed);
    ck_obj_list_release(&nodes);
    ck_cached_unref(ds);
    return r;
}

/* ---- lifecycle ----------------------------------------------------------------------- */

static int init_common(struct ck_ds_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events, struct ck_err *reterr)
{
    c->client = *client;
    c->clock = clock ? clock : ck_clock_real();
    c->pods_res = ck_controller_resource("", "v1", "pods");
    c->nodes_res = ck_controller_resource("", "v1", "nodes");
    c->sets_res = ck_controller_resource("apps", "v1", "daemonsets");
    c->revisions_res = ck_controller_resource("apps", "v1", "controllerrevisions");
    if (!c->pods_res || !c->nodes_res || !c->sets_res || !c->revisions_res)
        return ck_err_set(reterr, CK_ENOENT, "daemonset: the API kinds it needs are unknown");
    if (ck__ds_backoff_init(&c->backoff) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->backoff_ready = true;
    int r = ck__ctl_recorder(&c->sink, &c->client, "daemonset-controller", clock,
                             synchronous_events, &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "daemonset", sync_ds, c, clock, reterr);
    c->queue = c->ctl.queue;
    if (r == 0)
        r = ck_expectations_new(clock, 0, &c->exp, reterr);
    return r;
}

int ck_ds_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                         struct ck_clock *clock, struct ck_ds_controller **ret_c,
                         struct ck_err *reterr)
{
    struct ck_ds_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    struct ck_event_handler ds_h, pod_h, node_h, rev_h;
    ck_ds_controller_handlers(c, &ds_h, &pod_h, &node_h, &rev_h);
    int r = init_common(c, &rest, clock, false, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->sets_res, &ds_h, &c->infs[0], &c->sets, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->pods_res, &pod_h, &c->infs[1], &c->pods, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->nodes_res, &node_h, &c->infs[2], &c->nodes, reterr);
    if (r == 0)
        r = ck__ctl_watch(factory, c->revisions_res, &rev_h, &c->infs[3], &c->revisions, reterr);
    if (r < 0) {
        ck_ds_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_ds_controller_new_with(const struct ck_ds_controller_deps *deps,
                              struct ck_ds_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->pods || !deps->nodes || !deps->daemonsets ||
        !deps->revisions)
        return ck_err_set(reterr, CK_EINVAL, "daemonset: a client and four listers are needed");
    struct ck_ds_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->pods = *deps->pods;
    c->nodes = *deps->nodes;
    c->sets = *deps->daemonsets;
    c->revisions = *deps->revisions;
    int r = init_common(c, deps->client, deps->clock, true, reterr);
    if (r < 0) {
        ck_ds_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

void ck_ds_controller_handlers(struct ck_ds_controller *c, struct ck_event_handler *ret_ds,
                               struct ck_event_handler *ret_pods,
                               struct ck_event_handler *ret_nodes,
                               struct ck_event_handler *ret_revisions)
{
    *ret_ds = (struct ck_event_handler){ds_add, ds_update, ds_delete, c};
    *ret_pods = (struct ck_event_handler){pod_add, pod_update, pod_delete, c};
    *ret_nodes = (struct ck_event_handler){node_add, node_update, node_delete, c};
    *ret_revisions = (struct ck_event_handler){revision_add, revision_update, revision_delete, c};
}

int ck_ds_controller_sync(struct ck_ds_controller *c, const char *key, struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

int ck_ds_controller_run(struct ck_ds_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, 4, workers, &c->runner, reterr);
}

struct ck_ds_controller *ck_ds_controller_free(struct ck_ds_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    ck_expectations_free(c->exp);
    if (c->backoff_ready)
        ck__ds_backoff_release(&c->backoff);
    free(c);
    return NULL;
}

struct ck_wq *ck_ds_controller_queue(struct ck_ds_controller *c)
{
    return c->queue;
}

struct ck_expectations *ck_ds_controller_expectations(struct ck_ds_controller *c)
{
    return c->exp;
}

int ck_ds_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                        struct ck_err *reterr)
{
    struct ck_ds_controller *c = NULL;
    int r = ck_ds_controller_new(ctx->client, ctx->factory, NULL, &c, reterr);
    if (r == 0)
        *ret_state = c;
    return r;
}

int ck_ds_manager_run(void *state, int workers, struct ck_err *reterr)
{
    return ck_ds_controller_run(state, workers, reterr);
}

void ck_ds_manager_stop(void *state)
{
    ck_ds_controller_free(state);
}
