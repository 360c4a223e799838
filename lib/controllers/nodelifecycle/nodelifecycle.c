/*
 * nodelifecycle.c - the node lifecycle controller and its taint-based eviction.
 *
 * Mirrors pkg/controller/nodelifecycle/node_lifecycle_controller.go and
 * pkg/controller/tainteviction of Kubernetes 1.32, on one monitor thread:
 *
 * - Health (monitorNodeHealth, tryUpdateNodeHealth): each node's probe time is the
 *   controller's clock when it last saw the node's Lease renewTime change (or first saw
 *   the node). When it is older than the grace period (40 s), the node's Ready,
 *   MemoryPressure, DiskPressure and PIDPressure conditions become Unknown with reason
 *   NodeStatusUnknown, "Kubelet stopped posting node status." (NodeStatusNeverUpdated
 *   for a condition never posted).
 * - Taints (doNoScheduleTaintingPass, doNoExecuteTaintingPass): Ready Unknown brings
 *   node.kubernetes.io/unreachable with NoSchedule and NoExecute, Ready False
 *   node.kubernetes.io/not-ready with both, spec.unschedulable
 *   node.kubernetes.io/unschedulable:NoSchedule; a node Ready again loses them. Taints
 *   others put on the node stay as they are.
 * - Pods of a node that goes Unknown are marked not Ready (MarkPodsNotReady), with a
 *   NodeNotReady event.
 * - Eviction (the taint eviction controller): a pod on a node with NoExecute taints is
 *   deleted at once when it does not tolerate one, else when the smallest matching
 *   tolerationSeconds has passed since the taint's timeAdded (a toleration matches a
 *   taint as ../scheduling_helpers.c says, for every controller); a TaintManagerEviction
 *   event says so ("Marking for deletion Pod ns/name"). Replacement is the owners' job.
 *
 * Unlike Kubernetes there are no zones: every node is its own, so there is no
 * disruption mode that would stop evictions when most of a zone is lost
 * (docs/differences.md).
 *
 * Threading: the informers' handlers record probe times under `lock`; the monitor
 * thread makes every write.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "../scheduling_helpers.h"
#include "ckube/internal/util.h"
#include "ckube/nodelifecycle.h"

struct probe {
    int64_t at;     /* the controller's clock when the node was last heard from */
    char renew[48]; /* the lease's renewTime then */
};

struct ck_nodelifecycle {
    struct ck_nodelifecycle_config config;
    const struct ck_resource *nodes_res, *pods_res;
    pthread_mutex_t lock;
    struct ck__strmap probes; /* node name -> struct probe (inline) */
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;

    pthread_t thread;
    bool running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stopping;
    bool kicked; /* a node's NoSchedule taints need a pass now */

    /* the manager row's own state */
    struct ck_informer *nodes_inf, *leases_inf, *pods_inf;
};

/* ---- decisions -------------------------------------------------------------------------- */

static const char *condition_status(const json_t *node, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            return json_string_value(json_object_get(c, "status"));
    }
    return NULL;
}

static bool managed_taint(const json_t *taint)
{
    const char *key = json_string_value(json_object_get(taint, "key"));
    const char *effect = json_string_value(json_object_get(taint, "effect"));
    if (!key || !effect)
        return false;
    if (strcmp(key, "node.kubernetes.io/unschedulable") == 0)
        return strcmp(effect, "NoSchedule") == 0;
    return (strcmp(key, "node.kubernetes.io/unreachable") == 0 ||
            strcmp(key, "node.kubernetes.io/not-ready") == 0) &&
           (strcmp(effect, "NoSchedule") == 0 || strcmp(effect, "NoExecute") == 0);
}

static const json_t *find_taint(const json_t *taints, const char *key, const char *effect)
{
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "key")) ?: "", key) == 0 &&
            strcmp(json_string_value(json_object_get(t, "effect")) ?: "", effect) == 0)
            return t;
    }
    return NULL;
}

json_t *ck_nodelifecycle_desired_taints(const json_t *node, const char *now_rfc3339)
{
    const json_t *spec = json_object_get(node, "spec");
    const json_t *have = json_object_get(spec, "taints");
    json_t *want = json_array();
    if (!want)
        return NULL;
    size_t i;
    json_t *t;
    json_array_foreach(have, i, t)
    {
        if (!managed_taint(t))
            json_array_append(want, t);
    }
    const char *ready = condition_status(node, "Ready");
    const char *key = !ready || strcmp(ready, "Unknown") == 0 ? "node.kubernetes.io/unreachable"
                      : strcmp(ready, "False") == 0           ? "node.kubernetes.io/not-ready"
                                                              : NULL;
    if (!ready && !json_object_get(json_object_get(node, "status"), "conditions"))
        key = NULL; /* a node that never posted status: left to the grace period */
    if (key) {
        json_array_append_new(want, json_pack("{s:s, s:s}", "key", key, "effect", "NoSchedule"));
        const json_t *old = find_taint(have, key, "NoExecute");
        const char *added = json_string_value(json_object_get(old, "timeAdded"));
        json_array_append_new(want, json_pack("{s:s, s:s, s:s}", "key", key, "effect", "NoExecute",
                                              "timeAdded", added ? added : now_rfc3339));
    }
    if (json_is_true(json_object_get(spec, "unschedulable")))
        json_array_append_new(want,
                              json_pack("{s:s, s:s}", "key", "node.kubernetes.io/unschedulable",
                                        "effect", "NoSchedule"));
    return want;
}

int64_t ck_nodelifecycle_eviction_time(const json_t *pod, const json_t *taints, int64_t wall_now)
{
    const json_t *tolerations = json_object_get(json_object_get(pod, "spec"), "tolerations");
    int64_t at = -1;
    size_t i;
    json_t *taint;
    json_array_foreach(taints, i, taint)
    {
        const char *effect = json_string_value(json_object_get(taint, "effect"));
        if (!effect || strcmp(effect, "NoExecute") != 0)
            continue;
        bool tolerated = false, forever = false;
        int64_t seconds = INT64_MAX;
        size_t j;
        json_t *tol;
        json_array_foreach(tolerations, j, tol)
        {
            if (!ck__toleration_tolerates_taint(tol, taint))
                continue;
            tolerated = true;
            const json_t *s = json_object_get(tol, "tolerationSeconds");
            if (!json_is_integer(s))
                forever = true;
            else if (json_integer_value(s) < seconds)
                seconds = json_integer_value(s) < 0 ? 0 : json_integer_value(s);
        }
        if (!tolerated)
            return wall_now;
        if (forever && seconds == INT64_MAX)
            continue;
        int64_t added = wall_now;
        ck__time_parse(json_string_value(json_object_get(taint, "timeAdded")), &added, NULL);
        int64_t when = added + seconds;
        if (at < 0 || when < at)
            at = when;
    }
    return at;
}

/* ---- probes ------------------------------------------------------------------------------ */

static struct probe *probe_of(struct ck_nodelifecycle *c, const char *name, bool *ret_created)
{
    struct ck__strmap_entry *e = ck__strmap_find(&c->probes, name);
    *ret_created = false;
    if (!e) {
        e = ck__strmap_insert(&c->probes, name, sizeof(struct probe));
        if (!e)
            return NULL;
        *ret_created = true;
    }
    return e->value;
}

/* The key of the next managed NoSchedule taint of list from *i on (NULL: none); *i past it. */
static const char *next_no_schedule(const json_t *list, size_t *i)
{
    for (; *i < json_array_size(list); (*i)++) {
        const json_t *t = json_array_get(list, *i);
        const char *effect = json_string_value(json_object_get(t, "effect"));
        if (managed_taint(t) && strcmp(effect, "NoSchedule") == 0)
            return json_string_value(json_object_get(json_array_get(list, (*i)++), "key"));
    }
    return NULL;
}

/* Whether the managed NoSchedule taints of list and other are the same keys, in order. */
static bool same_no_schedule(const json_t *list, const json_t *other)
{
    size_t i = 0, j = 0;
    const char *a, *b;
    do {
        a = next_no_schedule(list, &i);
        b = next_no_schedule(other, &j);
        if (!a || !b)
            return a == b;
    } while (strcmp(a, b) == 0);
    return false;
}

void ck_nodelifecycle_observe_node(struct ck_nodelifecycle *c, const json_t *node)
{
    const char *name =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
    if (!name)
        return;
    pthread_mutex_lock(&c->lock);
    bool created;
    struct probe *p = probe_of(c, name, &created);
    if (p && created)
        p->at = ck_clock_now(c->config.clock);
    pthread_mutex_unlock(&c->lock);
    /*
     * doNoScheduleTaintingPass runs on every node event in Kubernetes (nodeUpdateQueue):
     * a node whose NoSchedule taints are not those its conditions call for (one created
     * with node.kubernetes.io/not-ready, the TaintNodesByCondition plugin's, that is
     * Ready already) is seen to at once, not at the next period.
     */
    json_t *want = ck_nodelifecycle_desired_taints(node, "");
    if (want && !same_no_schedule(json_object_get(json_object_get(node, "spec"), "taints"), want)) {
        pthread_mutex_lock(&c->stop_lock);
        c->kicked = true;
        pthread_cond_broadcast(&c->stop_cond);
        pthread_mutex_unlock(&c->stop_lock);
    }
    json_decref(want);
}

void ck_nodelifecycle_observe_lease(struct ck_nodelifecycle *c, const json_t *lease)
{
    const json_t *meta = json_object_get(lease, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *renew =
        json_string_value(json_object_get(json_object_get(lease, "spec"), "renewTime"));
    if (!ns || strcmp(ns, "kube-node-lease") != 0 || !name || !renew)
        return;
    pthread_mutex_lock(&c->lock);
    bool created;
    struct probe *p = probe_of(c, name, &created);
    if (p && (created || strcmp(p->renew, renew) != 0)) {
        p->at = ck_clock_now(c->config.clock);
        snprintf(p->renew, sizeof(p->renew), "%s", renew);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- the pass ----------------------------------------------------------------------------- */

/* The node's conditions set to Unknown; NULL when they all are already. */
static json_t *conditions_unknown(const json_t *node, const char *now)
{
    static const char *const types[] = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"};
    const json_t *have = json_object_get(json_object_get(node, "status"), "conditions");
    json_t *list = ck__json_copy(have ? have : json_array());
    bool changed = false;
    for (size_t t = 0; list && t < 4; t++) {
        json_t *found = NULL;
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c)
        {
            const char *type = json_string_value(json_object_get(c, "type"));
            if (type && strcmp(type, types[t]) == 0)
                found = c;
        }
        if (!found) {
            json_array_append_new(list,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", types[t],
                                            "status", "Unknown", "reason", "NodeStatusNeverUpdated",
                                            "message", "Kubelet never posted node status.",
                                            "lastHeartbeatTime", now, "lastTransitionTime", now));
            changed = true;
        } else if (strcmp(json_string_value(json_object_get(found, "status")) ?: "", "Unknown")) {
            json_object_set_new(found, "status", json_string("Unknown"));
            json_object_set_new(found, "reason", json_string("NodeStatusUnknown"));
            json_object_set_new(found, "message",
                                json_string("Kubelet stopped posting node status."));
            json_object_set_new(found, "lastTransitionTime", json_string(now));
            changed = true;
        }
    }
    if (!changed) {
        json_decref(list);
        return NULL;
    }
    return list;
}

static int evict_pods(struct ck_nodelifecycle *c, const json_t *node, int64_t wall_now,
                      struct ck_err *reterr)
{
    const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    if (!find_taint(taints, "node.kubernetes.io/unreachable", "NoExecute") &&
        !find_taint(taints, "node.kubernetes.io/not-ready", "NoExecute")) {
        bool any = false;
        size_t i;
        json_t *t;
        json_array_foreach(taints, i, t)
        {
            any = any ||
                  strcmp(json_string_value(json_object_get(t, "effect")) ?: "", "NoExecute") == 0;
        }
        if (!any)
            return 0;
    }
    const char *name =
        json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
    struct ck_obj_list pods = {0};
    int r = ck_lister_list(&c->config.pods, NULL, NULL, &pods, reterr);
    for (size_t i = 0; r == 0 && i < pods.n; i++) {
        const json_t *pod = pods.items[i];
        const json_t *meta = json_object_get(pod, "metadata");
        const char *on =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (!on || strcmp(on, name) != 0 || json_object_get(meta, "deletionTimestamp"))
            continue;
        int64_t at = ck_nodelifecycle_eviction_time(pod, taints, wall_now);
        if (at < 0 || at > wall_now)
            continue;
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *pod_name = json_string_value(json_object_get(meta, "name"));
        ck_event_recordf(c->recorder, pod, CK_EVENT_NORMAL, "TaintManagerEviction",
                         "Marking for deletion Pod %s/%s", ns ? ns : "", pod_name ? pod_name : "");
        struct ck_err err = {0};
        int d = ck_ctl_delete(&c->config.client, c->pods_res, ns, pod_name, NULL, NULL, &err);
        if (d < 0 && d != CK_ENOENT && reterr->code == 0)
            *reterr = err;
    }
    ck_obj_list_release(&pods);
    return r < 0 ? r : reterr->code;
}

/*
 * MarkPodsNotReady: the pods of a node that stopped posting status are no longer Ready
 * (so that their owners and endpoints stop counting them), with a NodeNotReady event.
 */
static void mark_pods_not_ready(struct ck_nodelifecycle *c, const char *node, const char *now)
{
    struct ck_obj_list pods = {0};
    if (ck_lister_list(&c->config.pods, NULL, NULL, &pods, NULL) < 0)
        return;
    for (size_t i = 0; i < pods.n; i++) {
        const json_t *pod = pods.items[i];
        const json_t *meta = json_object_get(pod, "metadata");
        const char *on =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        if (!on || strcmp(on, node) != 0)
            continue;
        json_t *patch = json_pack("{s:{s:[{s:s, s:s, s:s}]}}", "status", "conditions", "type",
                                  "Ready", "status", "False", "lastTransitionTime", now);
        struct ck_err err = {0};
        if (patch && ck_ctl_patch(&c->config.client, c->pods_res,
                                  json_string_value(json_object_get(meta, "namespace")),
                                  json_string_value(json_object_get(meta, "name")), "status",
                                  CK_PATCH_STRATEGIC, patch, NULL, &err) == 0)
            ck_event_recordf(c->recorder, pod, CK_EVENT_WARNING, "NodeNotReady",
                             "Node is not ready");
        json_decref(patch);
    }
    ck_obj_list_release(&pods);
}

static int monitor_node(struct ck_nodelifecycle *c, const json_t *cached, int64_t now,
                        int64_t wall_now, struct ck_err *reterr)
{
    const char *name =
        json_string_value(json_object_get(json_object_get(cached, "metadata"), "name"));
    char stamp[40];
    ck__time_format(wall_now, -1, stamp, sizeof(stamp));
    pthread_mutex_lock(&c->lock);
    bool created;
    struct probe *p = name ? probe_of(c, name, &created) : NULL;
    if (p && created)
        p->at = now;
    bool expired = p && now - p->at > c->config.grace_period;
    pthread_mutex_unlock(&c->lock);
    json_t *node = ck__json_copy(cached);
    if (!node || !name) {
        json_decref(node);
        return name ? ck_err_set(reterr, CK_ENOMEM, "out of memory") : 0;
    }
    int r = 0;
    json_t *unknown = expired ? conditions_unknown(node, stamp) : NULL;
    if (unknown) {
        json_object_set_new(json_object_get(node, "status"), "conditions", unknown);
        json_t *written = NULL;
        r = ck_ctl_update_status(&c->config.client, c->nodes_res, "", node, &written, reterr);
        if (r == 0) {
            CK_LOGS(0, "Node is not posting status: set to Unknown", "node", name);
            mark_pods_not_ready(c, name, stamp);
            json_decref(node);
            node = written;
        }
    }
    json_t *taints = r == 0 ? ck_nodelifecycle_desired_taints(node, stamp) : NULL;
    const json_t *have = json_object_get(json_object_get(node, "spec"), "taints");
    bool same = have ? json_equal(taints, (json_t *)have) : json_array_size(taints) == 0;
    if (taints && !same) {
        json_object_set(json_object_get(node, "spec"), "taints", taints);
        json_t *written = NULL;
        r = ck_ctl_update(&c->config.client, c->nodes_res, "", node, &written, reterr);
        if (r == 0) {
            json_decref(node);
            node = written;
        }
    }
    json_decref(taints);
    if (r == 0)
        r = evict_pods(c, node, wall_now, reterr);
    json_decref(node);
    return r;
}

int ck_nodelifecycle_monitor(struct ck_nodelifecycle *c, int64_t wall_now, struct ck_err *reterr)
{
    struct ck_obj_list nodes = {0};
    int r = ck_lister_list(&c->config.nodes, NULL, NULL, &nodes, reterr);
    int64_t now = ck_clock_now(c->config.clock);
    int first = 0;
    for (size_t i = 0; r == 0 && i < nodes.n; i++) {
        struct ck_err err = {0};
        if (monitor_node(c, nodes.items[i], now, wall_now, &err) < 0 && first == 0) {
            first = err.code ? err.code : CK_EIO;
            *reterr = err;
        }
    }
    ck_obj_list_release(&nodes);
    return r < 0 ? r : first;
}

static void *monitor_main(void *arg)
{
    struct ck_nodelifecycle *c = arg;
    pthread_mutex_lock(&c->stop_lock);
    while (!c->stopping) {
        pthread_mutex_unlock(&c->stop_lock);
        struct ck_err err = {0};
        if (ck_nodelifecycle_monitor(c, (int64_t)time(NULL), &err) < 0)
            CK_LOGV(2, "node lifecycle: %s", err.msg);
        pthread_mutex_lock(&c->stop_lock);
        int64_t deadline = ck_clock_now(c->config.clock) + c->config.period;
        while (!c->stopping && !c->kicked && ck_clock_now(c->config.clock) < deadline)
            ck_clock_wait(c->config.clock, &c->stop_cond, &c->stop_lock, deadline);
        c->kicked = false;
    }
    pthread_mutex_unlock(&c->stop_lock);
    return NULL;
}

/* ---- lifecycle --------------------------------------------------------------------------- */

int ck_nodelifecycle_new(const struct ck_nodelifecycle_config *config,
                         struct ck_nodelifecycle **ret, struct ck_err *reterr)
{
    struct ck_nodelifecycle *c = calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->config = *config;
    if (c->config.grace_period <= 0)
        c->config.grace_period = CK_NODE_MONITOR_GRACE_PERIOD;
    if (c->config.period <= 0)
        c->config.period = CK_NODE_MONITOR_PERIOD;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->stop_lock, NULL);
    pthread_cond_init(&c->stop_cond, NULL);
    c->nodes_res = ck_controller_resource("", "v1", "nodes");
    c->pods_res = ck_controller_resource("", "v1", "pods");
    int r = c->nodes_res && c->pods_res
                ? ck__ctl_recorder(&c->sink, &c->config.client, "node-controller", c->config.clock,
                                   false, &c->recorder, reterr)
                : ck_err_set(reterr, CK_ENOENT, "no kind serves nodes and pods");
    if (r < 0) {
        ck_nodelifecycle_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_nodelifecycle_start(struct ck_nodelifecycle *c, struct ck_err *reterr)
{
    if (pthread_create(&c->thread, NULL, monitor_main, c) != 0)
        return ck_err_set(reterr, CK_ENOMEM, "cannot start the node lifecycle controller");
    c->running = true;
    return 0;
}

struct ck_nodelifecycle *ck_nodelifecycle_free(struct ck_nodelifecycle *c)
{
    if (!c)
        return NULL;
    pthread_mutex_lock(&c->stop_lock);
    c->stopping = true;
    pthread_cond_broadcast(&c->stop_cond);
    pthread_mutex_unlock(&c->stop_lock);
    if (c->running)
        pthread_join(c->thread, NULL);
    ck_event_recorder_free(c->recorder);
    ck__strmap_release(&c->probes);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->stop_lock);
    pthread_cond_destroy(&c->stop_cond);
    free(c);
    return NULL;
}

/* ---- the controller manager's row -------------------------------------------------------- */

static void on_node(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck_nodelifecycle_observe_node(arg, obj);
}

static void on_node_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck_nodelifecycle_observe_node(arg, obj);
}

static void on_lease(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck_nodelifecycle_observe_lease(arg, obj);
}

static void on_lease_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck_nodelifecycle_observe_lease(arg, obj);
}

int ck_nodelifecycle_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                                   struct ck_err *reterr)
{
    const struct ck_resource *leases =
        ck_controller_resource("coordination.k8s.io", "v1", "leases");
    struct ck_nodelifecycle_config config = {.grace_period = ctx->node_monitor_grace_period};
    ck_ctl_client_init_rest(&config.client, ctx->client);
    struct ck_nodelifecycle *c = NULL;
    int r = leases ? ck_nodelifecycle_new(&config, &c, reterr)
                   : ck_err_set(reterr, CK_ENOENT, "no kind serves leases");
    struct ck_event_handler nodes_h = {on_node, on_node_update, NULL, c};
    struct ck_event_handler leases_h = {on_lease, on_lease_update, NULL, c};
    struct ck_lister ignored;
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->nodes_res, &nodes_h, &c->nodes_inf, &c->config.nodes,
                          reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, leases, &leases_h, &c->leases_inf, &ignored, reterr);
    if (r == 0 && !(c->pods_inf = ck_informer_factory_for(ctx->factory, c->pods_res)))
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0)
        ck_lister_init(&c->config.pods, ck_informer_indexer(c->pods_inf));
    if (r < 0) {
        ck_nodelifecycle_free(c);
        return r;
    }
    *ret_state = c;
    return 0;
}

int ck_nodelifecycle_manager_run(void *state, int workers, struct ck_err *reterr)
{
    (void)workers;
    struct ck_nodelifecycle *c = state;
    struct ck_informer *infs[] = {c->nodes_inf, c->leases_inf, c->pods_inf};
    for (size_t i = 0; i < 3; i++)
        if (!ck_informer_wait_for_sync(infs[i], CK_TIME_NEVER))
            return ck_err_set(reterr, CK_ESHUTDOWN, "nodelifecycle: informers stopped first");
    return ck_nodelifecycle_start(c, reterr);
}

void ck_nodelifecycle_manager_stop(void *state)
{
    ck_nodelifecycle_free(state);
}
