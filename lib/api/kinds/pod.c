/*
 * pod.c - the Pod kind (core/v1).
 *
 * Mirrors Kubernetes' pkg/registry/core/pod (strategy.go, storage's
 * BindingREST) and the pod printer of pkg/printers/internalversion:
 * status reset to Pending with its QoS class on create; most of spec
 * immutable on update; containers named, unique, with an image;
 * imagePullPolicy from the image tag; a status write never changes the
 * owner references; a delete of a pod a node runs waits for its grace
 * period; the binding subresource sets spec.nodeName once; the
 * ephemeralcontainers subresource changes spec.ephemeralContainers alone
 * (EphemeralContainersStrategy: added ones only, none changed or removed,
 * validated by ValidatePodEphemeralContainersUpdate); the eviction
 * subresource deletes the pod with the Eviction's delete options (the
 * admission plugins, DefaultTolerationSeconds among them, are the API
 * server's: lib/apiserver/admission/); the READY,
 * STATUS, RESTARTS, IP and READINESS GATES cells are computed as
 * Kubernetes' printPod does.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_strategy.c (defaults, validation, prepare hooks),
 * test_printers.c (every column), test_kinds.c (descriptor, field labels,
 * subresources) and the API server and kubectl tests that create pods.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"

/* ---- strategy ----------------------------------------------------------- */

/* qos.GetPodQOS, for cpu and memory. */
static const char *pod_qos(const json_t *spec)
{
    bool any = false, guaranteed = true;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        const json_t *requests = json_object_get(json_object_get(c, "resources"), "requests");
        const json_t *limits = json_object_get(json_object_get(c, "resources"), "limits");
        static const char *const resources[] = {"cpu", "memory"};
        for (size_t r = 0; r < 2; r++) {
            const json_t *req = json_object_get(requests, resources[r]);
            const json_t *lim = json_object_get(limits, resources[r]);
            if (req || lim)
                any = true;
            if (!lim || (req && !json_equal((json_t *)req, (json_t *)lim)))
                guaranteed = false;
        }
    }
    if (!any)
        return "BestEffort";
    return guaranteed ? "Guaranteed" : "Burstable";
}

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status",
                               json_pack("{s:s, s:s}", "phase", "Pending", "qosClass",
                                         pod_qos(json_object_get(obj, "spec")))) < 0
               ? CK_ENOMEM
               : 0;
}

/*
 * SetDefaults_Pod: a container's (and init container's) limits are its requests for
 * every resource it requests nothing of. Pods only: templates keep what they say.
 */
static int default_requests_from_limits(json_t *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            json_t *resources = json_object_get(c, "resources");
            json_t *limits = json_object_get(resources, "limits");
            if (!json_is_object(limits) || json_object_size(limits) == 0)
                continue;
            json_t *requests = json_object_get(resources, "requests");
            if (!json_is_object(requests)) {
                if (json_object_set_new(resources, "requests", json_object()) < 0)
                    return CK_ENOMEM;
                requests = json_object_get(resources, "requests");
            }
            const char *key;
            json_t *value;
            json_object_foreach(limits, key, value)
            {
                if (!json_object_get(requests, key) && json_object_set(requests, key, value) < 0)
                    return CK_ENOMEM;
            }
        }
    }
    return 0;
}

static int defaults(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    int r = ck__pod_spec_default(spec);
    return r < 0 ? r : default_requests_from_limits(spec);
}

/* A copy of a pod spec without what an update may change. */
static json_t *mutable_masked(const json_t *spec)
{
    json_t *copy = ck__json_copy(spec);
    if (!copy)
        return NULL;
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(copy, lists[l]), i, c)
        {
            json_object_del(c, "image");
        }
    }
    json_object_del(copy, "activeDeadlineSeconds");
    json_object_del(copy, "tolerations");
    json_object_del(copy, "terminationGracePeriodSeconds");
    return copy;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const json_t *spec = json_object_get(obj, "spec");
    ck__pod_spec_validate(spec, "spec", false, errs);
    if (!old && json_array_size(json_object_get(spec, "ephemeralContainers")) > 0)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.ephemeralContainers", NULL, false,
                            "cannot be set on create");
    if (!old)
        return;
    json_t *a = mutable_masked(spec);
    json_t *b = mutable_masked(json_object_get(old, "spec"));
    if ((spec && !a) || (json_object_get(old, "spec") && !b))
        errs->nomem = true; /* a copy it could not make is no change */
    else if (!json_equal(a, b))
        ck_field_errors_add(
            errs, CK_FIELD_FORBIDDEN, "spec", NULL, false,
            "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)");
    json_decref(a);
    json_decref(b);
}

/*
 * CheckGracefulDelete: the request's grace period, or the pod's
 * terminationGracePeriodSeconds (30 by default); 0 for a pod no node runs
 * (unbound, or finished).
 */
static long long delete_grace(const json_t *obj, const long long *requested)
{
    const json_t *spec = json_object_get(obj, "spec");
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    const char *phase = json_string_value(json_object_get(json_object_get(obj, "status"), "phase"));
    if (!node || !*node || (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
        return 0;
    if (requested)
        return *requested < 0 ? 0 : *requested;
    const json_t *tgps = json_object_get(spec, "terminationGracePeriodSeconds");
    return tgps ? json_integer_value(tgps) : 30;
}

/* ---- subresources ------------------------------------------------------- */

/*
 * pods/binding: spec.nodeName set once from the Binding's target, with
 * condition PodScheduled=True; refused (409) once bound or being deleted.
 */
static json_t *binding_update(const char *name, const json_t *binding, const json_t *old,
                              struct ck_field_errors *errs, struct ck_err *reterr)
{
    const json_t *target = json_object_get(binding, "target");
    const char *node = json_string_value(json_object_get(target, "name"));
    const char *bound =
        json_string_value(json_object_get(json_object_get(old, "spec"), "nodeName"));
    if (!node || !*node) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "target.name", NULL, false, NULL);
        ck_err_set(reterr, CK_EINVAL, "invalid binding");
        return NULL;
    }
    if (bound && *bound) {
        ck_err_set(reterr, CK_ECONFLICT, "pod %s is already assigned to node \"%s\"", name, bound);
        return NULL;
    }
    if (json_object_get(json_object_get(old, "metadata"), "deletionTimestamp")) {
        ck_err_set(reterr, CK_ECONFLICT, "pod %s is being deleted, cannot be assigned to a host",
                   name);
        return NULL;
    }
    /*
     * spec and status are copied to be changed; the rest (metadata and its managedFields
     * above all) is shared with old: a binding goes to storage as it is, never changed again
     */
    json_t *next = json_object();
    int failed = next ? 0 : -1;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)old, key, value)
    {
        bool changed = strcmp(key, "spec") == 0 || strcmp(key, "status") == 0;
        failed |= next ? json_object_set_new(next, key,
                                             changed ? ck__json_copy(value) : json_incref(value))
                       : -1;
    }
    json_t *spec = next ? json_object_get(next, "spec") : NULL;
    json_t *status = next ? json_object_get(next, "status") : NULL;
    if (failed) {
        json_decref(next);
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    if (!json_is_object(spec) || !json_is_object(status)) {
        json_decref(next);
        ck_err_set(reterr, CK_EIO, "pod without spec");
        return NULL;
    }
    /* json_object_set_new frees what it cannot insert: look values up again, never reuse them */
    failed = json_object_set_new(spec, "nodeName", json_string(node));
    if (!json_is_array(json_object_get(status, "conditions")))
        failed |= json_object_set_new(status, "conditions", json_array());
    json_t *conditions = json_object_get(status, "conditions");
    for (size_t i = json_array_size(conditions); i-- > 0;) {
        const char *type =
            json_string_value(json_object_get(json_array_get(conditions, i), "type"));
        if (type && strcmp(type, "PodScheduled") == 0)
            json_array_remove(conditions, i);
    }
    char now[32];
    failed |= json_array_append_new(
        conditions,
        json_pack("{s:s, s:s, s:n, s:s}", "type", "PodScheduled", "status", "True", "lastProbeTime",
                  "lastTransitionTime", ck_rfc3339(time(NULL), now, sizeof(now))));
    if (failed) {
        json_decref(next);
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    return next;
}

/*
 * pods/ephemeralcontainers (EphemeralContainersStrategy's PrepareForUpdate):
 * the stored pod with the request's spec.ephemeralContainers, nothing else of it.
 */
static json_t *ephemeral_update(const char *name, const json_t *body, const json_t *old,
                                struct ck_field_errors *errs, struct ck_err *reterr)
{
    (void)name;
    (void)errs;
    json_t *next = ck__json_copy(old);
    json_t *spec = json_object_get(next, "spec");
    const json_t *asked = json_object_get(json_object_get(body, "spec"), "ephemeralContainers");
    if (next && !json_is_object(spec)) {
        json_decref(next);
        ck_err_set(reterr, CK_EIO, "pod without spec");
        return NULL;
    }
    int failed = !next;
    if (next && asked && !json_is_null(asked))
        failed = json_object_set_new(spec, "ephemeralContainers", ck__json_copy(asked)) < 0;
    else if (next)
        json_object_del(spec, "ephemeralContainers");
    if (failed) {
        json_decref(next);
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
        return NULL;
    }
    return next;
}

/*
 * ValidatePodEphemeralContainersUpdate: the pod's spec as a pod's, no
 * ephemeral containers for a static pod, and the existing ones neither
 * removed nor changed. Kubernetes appends a diff of the change to the
 * message; ckube ends it with the line break before that diff.
 */
static void ephemeral_validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    ck__pod_spec_validate(json_object_get(obj, "spec"), "spec", false, errs);
    if (!old)
        return;
    const json_t *annotations = json_object_get(json_object_get(old, "metadata"), "annotations");
    if (json_object_get(annotations, "kubernetes.io/config.mirror")) {
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "", NULL, false,
                            "static pods do not support ephemeral containers");
        return;
    }
    const json_t *now = json_object_get(json_object_get(obj, "spec"), "ephemeralContainers");
    size_t i;
    json_t *was;
    json_array_foreach(json_object_get(json_object_get(old, "spec"), "ephemeralContainers"), i, was)
    {
        const char *name = json_string_value(json_object_get(was, "name"));
        const json_t *is = ck__json_find(now, "name", name ? name : "");
        char field[320];
        snprintf(field, sizeof(field), "spec.ephemeralContainers[%s]", name ? name : "");
        if (!is)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.ephemeralContainers", NULL, false,
                                "existing ephemeral containers \"%s\" may not be removed\n",
                                name ? name : "");
        else if (!json_equal(was, (json_t *)is))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, field, NULL, false,
                                "existing ephemeral containers \"%s\" may not be changed\n",
                                name ? name : "");
    }
}

/* ---- printing ----------------------------------------------------------- */

enum {
    COL_NAME,
    COL_READY,
    COL_STATUS,
    COL_RESTARTS,
    COL_AGE,
    COL_IP,
    COL_NODE,
    COL_NOMINATED,
    COL_GATES,
};

/* The reason Kubernetes prints for a terminated container without one. */
static void terminated_reason(const json_t *terminated, const char *prefix, char *buf, size_t size)
{
    const char *reason = json_string_value(json_object_get(terminated, "reason"));
    long long signal = (long long)json_integer_value(json_object_get(terminated, "signal"));
    long long code = (long long)json_integer_value(json_object_get(terminated, "exitCode"));
    if (reason && *reason)
        snprintf(buf, size, "%s%s", prefix, reason);
    else if (signal)
        snprintf(buf, size, "%sSignal:%lld", prefix, signal);
    else
        snprintf(buf, size, "%sExitCode:%lld", prefix, code);
}

/* Adds restarts and tracks the latest restart time over a list of container statuses. */
static void count_restarts(const json_t *statuses, long long *restarts, long long *last_restart)
{
    size_t i;
    json_t *cs;
    json_array_foreach(statuses, i, cs)
    {
        *restarts += (long long)json_integer_value(json_object_get(cs, "restartCount"));
        int64_t finished = -1;
        ck__time_parse(ck__str_at(cs, "lastState.terminated.finishedAt"), &finished, NULL);
        if (finished > *last_restart)
            *last_restart = finished;
    }
}

static bool has_condition_true(const json_t *conditions, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(conditions, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (t && s && strcmp(t, type) == 0 && strcmp(s, "True") == 0)
            return true;
    }
    return false;
}

/* Init container progress: sets reason and returns true while initializing. */
static bool init_reason(const json_t *obj, char *reason, size_t size)
{
    const json_t *statuses = ck__json_path(obj, "status.initContainerStatuses");
    size_t n_init = json_array_size(ck__json_path(obj, "spec.initContainers"));
    size_t i;
    json_t *cs;
    json_array_foreach(statuses, i, cs)
    {
        const json_t *terminated = ck__json_path(cs, "state.terminated");
        const char *waiting = ck__str_at(cs, "state.waiting.reason");
        if (terminated && json_integer_value(json_object_get(terminated, "exitCode")) == 0)
            continue;
        if (terminated)
            terminated_reason(terminated, "Init:", reason, size);
        else if (waiting && *waiting && strcmp(waiting, "PodInitializing") != 0)
            snprintf(reason, size, "Init:%s", waiting);
        else
            snprintf(reason, size, "Init:%zu/%zu", i, n_init);
        return true;
    }
    return false;
}

static json_t *readiness_gates_cell(const json_t *obj)
{
    const json_t *gates = ck__json_path(obj, "spec.readinessGates");
    if (json_array_size(gates) == 0)
        return json_string("<none>");
    size_t passed = 0, i;
    json_t *gate;
    json_array_foreach(gates, i, gate)
    {
        const char *type = ck__str_at(gate, "conditionType");
        if (type && has_condition_true(ck__json_path(obj, "status.conditions"), type))
            passed++;
    }
    char buf[64];
    snprintf(buf, sizeof(buf), "%zu/%zu", passed, json_array_size(gates));
    return json_string(buf);
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    char reason[128];
    const char *phase = ck__str_at(obj, "status.phase");
    const char *status_reason = ck__str_at(obj, "status.reason");
    snprintf(reason, sizeof(reason), "%s",
             status_reason && *status_reason ? status_reason : (phase ? phase : "Pending"));

    long long restarts = 0, last_restart = -1;
    count_restarts(ck__json_path(obj, "status.initContainerStatuses"), &restarts, &last_restart);
    long long ready = 0;
    bool initializing = init_reason(obj, reason, sizeof(reason));
    const json_t *statuses = ck__json_path(obj, "status.containerStatuses");
    if (!initializing) {
        bool has_running = false;
        for (size_t i = json_array_size(statuses); i-- > 0;) {
            const json_t *cs = json_array_get(statuses, i);
            const char *waiting = ck__str_at(cs, "state.waiting.reason");
            const json_t *terminated = ck__json_path(cs, "state.terminated");
            if (waiting && *waiting) {
                snprintf(reason, sizeof(reason), "%s", waiting);
            } else if (terminated) {
                terminated_reason(terminated, "", reason, sizeof(reason));
            } else if (json_is_true(json_object_get(cs, "ready")) &&
                       ck__json_path(cs, "state.running")) {
                has_running = true;
                ready++;
            }
        }
        if (strcmp(reason, "Completed") == 0 && has_running)
            snprintf(reason, sizeof(reason), "%s",
                     has_condition_true(ck__json_path(obj, "status.conditions"), "Ready")
                         ? "Running"
                         : "NotReady");
    }
    count_restarts(statuses, &restarts, &last_restart);
    bool terminal = phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
    if (ck__str_at(obj, "metadata.deletionTimestamp") && !terminal)
        snprintf(reason, sizeof(reason), "%s",
                 status_reason && strcmp(status_reason, "NodeLost") == 0 ? "Unknown"
                                                                         : "Terminating");

    char buf[96];
    snprintf(buf, sizeof(buf), "%lld/%zu", ready,
             json_array_size(ck__json_path(obj, "spec.containers")));
    cells[COL_READY] = json_string(buf);
    cells[COL_STATUS] = json_string(reason);
    if (last_restart >= 0) {
        char ago[32];
        snprintf(buf, sizeof(buf), "%lld (%s ago)", restarts,
                 ck_human_duration(now - last_restart, ago, sizeof(ago)));
    } else {
        snprintf(buf, sizeof(buf), "%lld", restarts);
    }
    cells[COL_RESTARTS] = json_string(buf);

    const char *ip = ck__str_at(obj, "status.podIP");
    const json_t *ips = ck__json_path(obj, "status.podIPs");
    if (json_array_size(ips) > 0)
        ip = json_string_value(json_object_get(json_array_get(ips, 0), "ip"));
    cells[COL_IP] = json_string(ck__or_none(ip));
    cells[COL_GATES] = readiness_gates_cell(obj);
}

/* ---- the descriptor ----------------------------------------------------- */

static const char *const short_names[] = {"po", NULL};
static const char *const categories[] = {"all", NULL};
static const char *const status_keeps[] = {"ownerReferences", NULL};
static const char *const get_only[] = {"get", NULL};
static const char *const create_only[] = {"create", NULL};
static const char *const create_get[] = {"create", "get", NULL};
static const char *const get_patch_update[] = {"get", "patch", "update", NULL};

static const struct ck_subresource subresources[] = {
    CK__STATUS_SUBRESOURCE,
    {.name = "log",
     .part = CK_SUBRESOURCE_UNSERVED,
     .verbs = get_only,
     .message = "pods/log is not served yet: it needs a node agent to read logs from"},
    {.name = "exec",
     .part = CK_SUBRESOURCE_UNSERVED,
     .verbs = create_get,
     .message = "pods/exec needs a WebSocket upgrade"},
    {.name = "attach",
     .part = CK_SUBRESOURCE_UNSERVED,
     .verbs = create_get,
     .message = "pods/attach needs a WebSocket upgrade"},
    {.name = "portforward",
     .part = CK_SUBRESOURCE_UNSERVED,
     .verbs = create_get,
     .message = "pods/portforward needs a WebSocket or SPDY/3.1 upgrade"},
    CK__PROXY_SUBRESOURCE("PodProxyOptions"),
    {.name = "binding",
     .part = CK_SUBRESOURCE_CUSTOM,
     .verbs = create_only,
     .kind = "Binding",
     .update = binding_update,
     .straight_to_storage = true},
    {.name = "ephemeralcontainers",
     .part = CK_SUBRESOURCE_CUSTOM,
     .verbs = get_patch_update,
     .update = ephemeral_update,
     .validate = ephemeral_validate},
    {.name = "eviction",
     .part = CK_SUBRESOURCE_DELETE,
     .verbs = create_only,
     .group = "policy",
     .version = "v1",
     .kind = "Eviction",
     .schema = "io.k8s.api.policy.v1.Eviction"},
};

static const struct ck_field_label field_labels[] = {
    {"spec.nodeName", "spec.nodeName", CK_FIELD_LABEL_STRING},
    {"spec.restartPolicy", "spec.restartPolicy", CK_FIELD_LABEL_STRING},
    {"spec.schedulerName", "spec.schedulerName", CK_FIELD_LABEL_STRING},
    {"spec.serviceAccountName", "spec.serviceAccountName", CK_FIELD_LABEL_STRING},
    {"spec.hostNetwork", "spec.hostNetwork", CK_FIELD_LABEL_BOOL},
    {"status.phase", "status.phase", CK_FIELD_LABEL_STRING},
    {"status.podIP", "status.podIP", CK_FIELD_LABEL_STRING},
    {"status.nominatedNodeName", "status.nominatedNodeName", CK_FIELD_LABEL_STRING},
};

static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_READY] = CK__COMPUTED_COLUMN(
        "Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
    [COL_STATUS] = CK__COMPUTED_COLUMN("Status", "string",
                                       "The aggregate status of the containers in this pod.", 0),
    [COL_RESTARTS] = CK__COMPUTED_COLUMN(
        "Restarts", "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_IP] = CK__COMPUTED_COLUMN(
        "IP", "string",
        "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        1),
    [COL_NODE] = {"Node", "string", "",
                  "NodeName is a request to schedule this pod onto a specific node.", 1,
                  ".spec.nodeName", CK_CELL_ABSENT_NONE, false},
    [COL_NOMINATED] =
        {"Nominated Node", "string", "",
         "nominatedNodeName is set only when this pod preempts other pods on the node.", 1,
         ".status.nominatedNodeName", CK_CELL_ABSENT_NONE, false},
    [COL_GATES] = CK__COMPUTED_COLUMN(
        "Readiness Gates", "string",
        "If specified, all readiness gates will be evaluated for pod readiness.", 1),
};

static const struct ck_api_feature features[] = {
    {"PodLevelResources", "ALPHA", false, "1.32"},
};

const struct ck_kind ck__kind_pod = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .list_kind = "PodList",
    .resource = "pods",
    .singular = "pod",
    .short_names = short_names,
    .categories = categories,
    .namespaced = true,
    .role = CK_KIND_ROLE_POD,
    .schema = "io.k8s.api.core.v1.Pod",
    CK__KIND_SUBRESOURCES(subresources),
    .status_keeps_metadata = status_keeps,
    CK__KIND_FIELD_LABELS(field_labels),
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .features = features,
    .n_features = CK__COUNT(features),
    .prepare_for_create = prepare_for_create,
    .defaults = defaults,
    .validate = validate,
    .delete_grace = delete_grace,
};
