/*
 * printers.c - server-side printing: the Tables `kubectl get` shows.
 *
 * kubectl 1.32 has no column printers of its own for built-in kinds; it asks
 * the server for a meta.k8s.io/v1 Table. The columns and cell contents
 * mirror Kubernetes' pkg/printers/internalversion/printers.go; like the
 * Kubernetes API server, every row carries the cells of every column (wide
 * ones included) and kubectl hides priority-1 columns unless -o wide.
 * Ages are computed at response time by ck_human_duration().
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

static const char name_doc[] = "Name must be unique within a namespace.";
static const char age_doc[] =
    "CreationTimestamp is a timestamp representing the server time when this object was created.";

const json_t *ck__json_path(const json_t *obj, const char *dotted)
{
    char part[128];
    const json_t *cur = obj;
    while (cur && *dotted) {
        const char *dot = strchr(dotted, '.');
        size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);
        if (len >= sizeof(part))
            return NULL;
        memcpy(part, dotted, len);
        part[len] = '\0';
        cur = json_object_get(cur, part);
        dotted += len + (dot ? 1 : 0);
    }
    return cur;
}

static const char *str_at(const json_t *obj, const char *path)
{
    return json_string_value(ck__json_path(obj, path));
}

static long long int_at(const json_t *obj, const char *path)
{
    return (long long)json_integer_value(ck__json_path(obj, path));
}

static const char *or_none(const char *s)
{
    return s && *s ? s : "<none>";
}

/* ---- durations ---------------------------------------------------------- */

const char *ck_human_duration(long long seconds, char *buf, size_t size)
{
    if (seconds < -1) {
        snprintf(buf, size, "<invalid>");
        return buf;
    }
    if (seconds < 0)
        seconds = 0;
    long long minutes = seconds / 60, hours = seconds / 3600, days = hours / 24;
    if (seconds < 120)
        snprintf(buf, size, "%llds", seconds);
    else if (minutes < 10 && seconds % 60)
        snprintf(buf, size, "%lldm%llds", minutes, seconds % 60);
    else if (minutes < 180)
        snprintf(buf, size, "%lldm", minutes);
    else if (hours < 8 && minutes % 60)
        snprintf(buf, size, "%lldh%lldm", hours, minutes % 60);
    else if (hours < 48)
        snprintf(buf, size, "%lldh", hours);
    else if (hours < 24 * 8 && hours % 24)
        snprintf(buf, size, "%lldd%lldh", days, hours % 24);
    else if (hours < 24 * 365 * 2)
        snprintf(buf, size, "%lldd", days);
    else if (hours < 24 * 365 * 8 && days % 365)
        snprintf(buf, size, "%lldy%lldd", days / 365, days % 365);
    else
        snprintf(buf, size, "%lldy", days / 365);
    return buf;
}

const char *ck_age(const char *timestamp, long long now, char *buf, size_t size)
{
    int64_t t;
    if (ck__time_parse(timestamp, &t, NULL) < 0) {
        snprintf(buf, size, "<unknown>");
        return buf;
    }
    return ck_human_duration(now - t, buf, size);
}

static void add_age(json_t *cells, const char *timestamp, long long now)
{
    char buf[32];
    json_array_append_new(cells, json_string(ck_age(timestamp, now, buf, sizeof(buf))));
}

/* ---- shared cells ------------------------------------------------------- */

/* Comma-joins field of each element of array (container names, images). */
static json_t *join_field(const json_t *array, const char *field)
{
    size_t total = 1, i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        const char *s = json_string_value(json_object_get(item, field));
        total += (s ? strlen(s) : 0) + 1;
    }
    char *buf = calloc(1, total);
    if (!buf)
        return json_string("");
    json_array_foreach(array, i, item)
    {
        const char *s = json_string_value(json_object_get(item, field));
        if (i > 0)
            strcat(buf, ",");
        strcat(buf, s ? s : "");
    }
    json_t *out = json_string(buf);
    free(buf);
    return out;
}

static json_t *selector_cell(const json_t *selector)
{
    struct ck_label_selector *s = NULL;
    if (!selector)
        return json_string("<none>");
    if (ck_label_selector_from_object(selector, &s, NULL) < 0)
        return json_string("<error>");
    char *text = ck_label_selector_string(s);
    ck_label_selector_free(s);
    json_t *out = json_string(text ? text : "");
    free(text);
    return out;
}

static void add_workload_wide_cells(const json_t *obj, json_t *cells)
{
    const json_t *containers = ck__json_path(obj, "spec.template.spec.containers");
    json_array_append_new(cells, join_field(containers, "name"));
    json_array_append_new(cells, join_field(containers, "image"));
    json_array_append_new(cells, selector_cell(ck__json_path(obj, "spec.selector")));
}

/* ---- namespaces --------------------------------------------------------- */

const struct ck_table_column ck__namespace_columns[CK__NAMESPACE_COLUMNS] = {
    {"Name", "string", "name", name_doc, 0},
    {"Status", "string", "", "The status of the namespace", 0},
    {"Age", "string", "", age_doc, 0},
};

void ck__namespace_row(const json_t *obj, long long now, json_t *cells)
{
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
    const char *phase = str_at(obj, "status.phase");
    json_array_append_new(cells, json_string(phase ? phase : ""));
    add_age(cells, str_at(obj, "metadata.creationTimestamp"), now);
}

/* ---- pods --------------------------------------------------------------- */

const struct ck_table_column ck__pod_columns[CK__POD_COLUMNS] = {
    {"Name", "string", "name", name_doc, 0},
    {"Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0},
    {"Status", "string", "", "The aggregate status of the containers in this pod.", 0},
    {"Restarts", "string", "",
     "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
     0},
    {"Age", "string", "", age_doc, 0},
    {"IP", "string", "",
     "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
     1},
    {"Node", "string", "", "NodeName is a request to schedule this pod onto a specific node.", 1},
    {"Nominated Node", "string", "",
     "nominatedNodeName is set only when this pod preempts other pods on the node.", 1},
    {"Readiness Gates", "string", "",
     "If specified, all readiness gates will be evaluated for pod readiness.", 1},
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
        ck__time_parse(str_at(cs, "lastState.terminated.finishedAt"), &finished, NULL);
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
        const char *waiting = str_at(cs, "state.waiting.reason");
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

void ck__pod_row(const json_t *obj, long long now, json_t *cells)
{
    char reason[128];
    const char *phase = str_at(obj, "status.phase");
    const char *status_reason = str_at(obj, "status.reason");
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
            const char *waiting = str_at(cs, "state.waiting.reason");
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
    if (str_at(obj, "metadata.deletionTimestamp") && !terminal)
        snprintf(reason, sizeof(reason), "%s",
                 status_reason && strcmp(status_reason, "NodeLost") == 0 ? "Unknown"
                                                                         : "Terminating");

    char buf[96];
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
    snprintf(buf, sizeof(buf), "%lld/%zu", ready,
             json_array_size(ck__json_path(obj, "spec.containers")));
    json_array_append_new(cells, json_string(buf));
    json_array_append_new(cells, json_string(reason));
    if (last_restart >= 0) {
        char ago[32];
        snprintf(buf, sizeof(buf), "%lld (%s ago)", restarts,
                 ck_human_duration(now - last_restart, ago, sizeof(ago)));
    } else {
        snprintf(buf, sizeof(buf), "%lld", restarts);
    }
    json_array_append_new(cells, json_string(buf));
    add_age(cells, str_at(obj, "metadata.creationTimestamp"), now);

    const char *ip = str_at(obj, "status.podIP");
    const json_t *ips = ck__json_path(obj, "status.podIPs");
    if (json_array_size(ips) > 0)
        ip = json_string_value(json_object_get(json_array_get(ips, 0), "ip"));
    json_array_append_new(cells, json_string(or_none(ip)));
    json_array_append_new(cells, json_string(or_none(str_at(obj, "spec.nodeName"))));
    json_array_append_new(cells, json_string(or_none(str_at(obj, "status.nominatedNodeName"))));

    const json_t *gates = ck__json_path(obj, "spec.readinessGates");
    if (json_array_size(gates) == 0) {
        json_array_append_new(cells, json_string("<none>"));
    } else {
        size_t passed = 0, i;
        json_t *gate;
        json_array_foreach(gates, i, gate)
        {
            const char *type = str_at(gate, "conditionType");
            if (type && has_condition_true(ck__json_path(obj, "status.conditions"), type))
                passed++;
        }
        snprintf(buf, sizeof(buf), "%zu/%zu", passed, json_array_size(gates));
        json_array_append_new(cells, json_string(buf));
    }
}

/* ---- nodes -------------------------------------------------------------- */

const struct ck_table_column ck__node_columns[CK__NODE_COLUMNS] = {
    {"Name", "string", "name", name_doc, 0},
    {"Status", "string", "", "The status of the node", 0},
    {"Roles", "string", "", "The roles of the node", 0},
    {"Age", "string", "", age_doc, 0},
    {"Version", "string", "", "Kubelet Version reported by the node.", 0},
    {"Internal-IP", "string", "", "List of addresses reachable to the node.", 1},
    {"External-IP", "string", "", "List of addresses reachable to the node.", 1},
    {"OS-Image", "string", "",
     "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1},
    {"Kernel-Version", "string", "",
     "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1},
    {"Container-Runtime", "string", "",
     "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
     1},
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *node_roles(const json_t *labels)
{
    static const char prefix[] = "node-role.kubernetes.io/";
    const char *roles[32];
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)labels, key, value)
    {
        if (n == 32)
            break;
        if (strncmp(key, prefix, sizeof(prefix) - 1) == 0 && key[sizeof(prefix) - 1])
            roles[n++] = key + sizeof(prefix) - 1;
        else if (strcmp(key, "kubernetes.io/role") == 0 && json_string_length(value))
            roles[n++] = json_string_value(value);
    }
    if (n == 0)
        return json_string("<none>");
    qsort(roles, n, sizeof(roles[0]), cmp_str);
    char buf[512] = "";
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(roles[i], roles[i - 1]) == 0)
            continue;
        if (buf[0])
            strncat(buf, ",", sizeof(buf) - strlen(buf) - 1);
        strncat(buf, roles[i], sizeof(buf) - strlen(buf) - 1);
    }
    return json_string(buf);
}

static const char *node_address(const json_t *obj, const char *type)
{
    size_t i;
    json_t *a;
    json_array_foreach(ck__json_path(obj, "status.addresses"), i, a)
    {
        const char *t = str_at(a, "type");
        if (t && strcmp(t, type) == 0)
            return str_at(a, "address");
    }
    return NULL;
}

void ck__node_row(const json_t *obj, long long now, json_t *cells)
{
    const char *status = "Unknown";
    size_t i;
    json_t *c;
    json_array_foreach(ck__json_path(obj, "status.conditions"), i, c)
    {
        const char *type = str_at(c, "type");
        if (type && strcmp(type, "Ready") == 0) {
            const char *s = str_at(c, "status");
            status = s && strcmp(s, "True") == 0 ? "Ready" : "NotReady";
        }
    }
    char buf[128];
    snprintf(buf, sizeof(buf), "%s%s", status,
             json_is_true(ck__json_path(obj, "spec.unschedulable")) ? ",SchedulingDisabled" : "");
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
    json_array_append_new(cells, json_string(buf));
    json_array_append_new(cells, node_roles(ck__json_path(obj, "metadata.labels")));
    add_age(cells, str_at(obj, "metadata.creationTimestamp"), now);
    const char *version = str_at(obj, "status.nodeInfo.kubeletVersion");
    json_array_append_new(cells, json_string(version ? version : ""));
    json_array_append_new(cells, json_string(or_none(node_address(obj, "InternalIP"))));
    json_array_append_new(cells, json_string(or_none(node_address(obj, "ExternalIP"))));
    static const char *const info[] = {"status.nodeInfo.osImage", "status.nodeInfo.kernelVersion",
                                       "status.nodeInfo.containerRuntimeVersion"};
    for (size_t k = 0; k < 3; k++)
        json_array_append_new(cells, json_string(or_none(str_at(obj, info[k]))));
}

/* ---- events ------------------------------------------------------------- */

const struct ck_table_column ck__event_columns[CK__EVENT_COLUMNS] = {
    {"Last Seen", "string", "",
     "The time at which the most recent occurrence of this event was recorded.", 0},
    {"Type", "string", "", "Type of this event (Normal, Warning).", 0},
    {"Reason", "string", "", "Why the action was taken. Human-readable and machine-understandable.",
     0},
    {"Object", "string", "", "The object that this event is about.", 0},
    {"Subobject", "string", "", "The field of the object this event is about.", 1},
    {"Source", "string", "", "The component reporting this event.", 1},
    {"Message", "string", "", "A human-readable description of the status of this operation.", 0},
    {"First Seen", "string", "", "The time at which the event was first recorded.", 1},
    {"Count", "string", "", "The number of times this event has occurred.", 1},
    {"Name", "string", "name", name_doc, 1},
};

void ck__event_row(const json_t *obj, long long now, json_t *cells)
{
    char first[32], last[32], buf[512];
    const char *first_ts = str_at(obj, "firstTimestamp");
    ck_age(first_ts ? first_ts : str_at(obj, "eventTime"), now, first, sizeof(first));
    const char *last_ts = str_at(obj, "lastTimestamp");
    if (last_ts)
        ck_age(last_ts, now, last, sizeof(last));
    else
        snprintf(last, sizeof(last), "%s", first);
    long long count = int_at(obj, "count");
    if (ck__json_path(obj, "series")) {
        ck_age(str_at(obj, "series.lastObservedTime"), now, last, sizeof(last));
        count = int_at(obj, "series.count");
    } else if (count == 0) {
        count = 1;
    }

    json_array_append_new(cells, json_string(last));
    const char *type = str_at(obj, "type");
    const char *reason = str_at(obj, "reason");
    json_array_append_new(cells, json_string(type ? type : ""));
    json_array_append_new(cells, json_string(reason ? reason : ""));

    const char *kind = str_at(obj, "involvedObject.kind");
    const char *name = str_at(obj, "involvedObject.name");
    char lower[128];
    snprintf(lower, sizeof(lower), "%s", kind ? kind : "");
    for (char *p = lower; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (name && *name)
        snprintf(buf, sizeof(buf), "%s/%s", lower, name);
    else
        snprintf(buf, sizeof(buf), "%s", lower);
    json_array_append_new(cells, json_string(buf));
    const char *field_path = str_at(obj, "involvedObject.fieldPath");
    json_array_append_new(cells, json_string(field_path ? field_path : ""));

    const char *component = str_at(obj, "source.component");
    if (!component || !*component)
        component = str_at(obj, "reportingComponent");
    const char *host = str_at(obj, "source.host");
    if (host && *host)
        snprintf(buf, sizeof(buf), "%s, %s", component ? component : "", host);
    else
        snprintf(buf, sizeof(buf), "%s", component ? component : "");
    json_array_append_new(cells, json_string(buf));

    const char *message = str_at(obj, "message");
    char *trimmed = strdup(message ? message : "");
    if (trimmed) {
        char *start = trimmed;
        while (*start == ' ' || *start == '\n' || *start == '\t')
            start++;
        size_t len = strlen(start);
        while (len > 0 &&
               (start[len - 1] == ' ' || start[len - 1] == '\n' || start[len - 1] == '\t'))
            start[--len] = '\0';
        json_array_append_new(cells, json_string(start));
        free(trimmed);
    } else {
        json_array_append_new(cells, json_string(""));
    }
    json_array_append_new(cells, json_string(first));
    json_array_append_new(cells, json_integer(count));
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
}

/* ---- deployments and replica sets -------------------------------------- */

const struct ck_table_column ck__deployment_columns[CK__DEPLOYMENT_COLUMNS] = {
    {"Name", "string", "name", name_doc, 0},
    {"Ready", "string", "", "Number of the pod with ready state", 0},
    {"Up-to-date", "integer", "",
     "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
     0},
    {"Available", "integer", "",
     "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
     0},
    {"Age", "string", "", age_doc, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "",
     "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
     1},
};

void ck__deployment_row(const json_t *obj, long long now, json_t *cells)
{
    char buf[64];
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
    snprintf(buf, sizeof(buf), "%lld/%lld", int_at(obj, "status.readyReplicas"),
             int_at(obj, "spec.replicas"));
    json_array_append_new(cells, json_string(buf));
    json_array_append_new(cells, json_integer(int_at(obj, "status.updatedReplicas")));
    json_array_append_new(cells, json_integer(int_at(obj, "status.availableReplicas")));
    add_age(cells, str_at(obj, "metadata.creationTimestamp"), now);
    add_workload_wide_cells(obj, cells);
}

const struct ck_table_column ck__replicaset_columns[CK__REPLICASET_COLUMNS] = {
    {"Name", "string", "name", name_doc, 0},
    {"Desired", "integer", "", "Number of desired pods.", 0},
    {"Current", "integer", "", "Number of actual pods.", 0},
    {"Ready", "integer", "", "Number of pods ready.", 0},
    {"Age", "string", "", age_doc, 0},
    {"Containers", "string", "", "Names of each container in the template.", 1},
    {"Images", "string", "", "Images referenced by each container in the template.", 1},
    {"Selector", "string", "", "Label query over pods that should match the replica count.", 1},
};

void ck__replicaset_row(const json_t *obj, long long now, json_t *cells)
{
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
    json_array_append_new(cells, json_integer(int_at(obj, "spec.replicas")));
    json_array_append_new(cells, json_integer(int_at(obj, "status.replicas")));
    json_array_append_new(cells, json_integer(int_at(obj, "status.readyReplicas")));
    add_age(cells, str_at(obj, "metadata.creationTimestamp"), now);
    add_workload_wide_cells(obj, cells);
}

/* ---- the Table ---------------------------------------------------------- */

int ck_include_object_parse(const char *text, enum ck_include_object *ret)
{
    if (!text || !*text || strcmp(text, "Metadata") == 0)
        *ret = CK_INCLUDE_METADATA;
    else if (strcmp(text, "Object") == 0)
        *ret = CK_INCLUDE_OBJECT;
    else if (strcmp(text, "None") == 0)
        *ret = CK_INCLUDE_NONE;
    else
        return CK_EINVAL;
    return 0;
}

static json_t *row_object(json_t *obj, enum ck_include_object include)
{
    if (include == CK_INCLUDE_OBJECT)
        return json_incref(obj);
    json_t *meta = json_object_get(obj, "metadata");
    return json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata", "apiVersion",
                     "meta.k8s.io/v1", "metadata", meta ? json_incref(meta) : json_object());
}

json_t *ck_table_build(const struct ck_kind *kind, json_t *const *objects, size_t n_objects,
                       bool with_columns, enum ck_include_object include,
                       const char *resource_version, const char *continue_token, long long now)
{
    json_t *columns = json_array();
    json_t *rows = json_array();
    json_t *table = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:o, s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
        "metadata", "resourceVersion", resource_version ? resource_version : "", "continue",
        continue_token ? continue_token : "", "columnDefinitions", columns, "rows", rows);
    if (!table)
        return NULL;
    for (size_t i = 0; with_columns && i < kind->n_columns; i++) {
        const struct ck_table_column *c = &kind->columns[i];
        json_array_append_new(columns,
                              json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", c->name, "type",
                                        c->type, "format", c->format, "description", c->description,
                                        "priority", c->priority));
    }
    for (size_t i = 0; i < n_objects; i++) {
        json_t *cells = json_array();
        kind->row_cells(objects[i], now, cells);
        json_t *row = json_pack("{s:o}", "cells", cells);
        if (row && include != CK_INCLUDE_NONE)
            json_object_set_new(row, "object", row_object(objects[i], include));
        json_array_append_new(rows, row);
    }
    return table;
}

/* ---- frobbers (example.ckube.io) ---------------------------------------- */

const struct ck_table_column ck__frobber_columns[CK__FROBBER_COLUMNS] = {
    {"Name", "string", "name", name_doc, 0},
    {"Height", "integer", "", "Height of the frobber.", 0},
    {"Width", "string", "", "Width of the frobber (feature gate Frobber2D).", 0},
    {"Restart Policy", "string", "", "When to restart the frobber.", 0},
    {"Age", "string", "", age_doc, 0},
};

void ck__frobber_row(const json_t *obj, long long now, json_t *cells)
{
    json_array_append_new(cells, json_string(or_none(str_at(obj, "metadata.name"))));
    json_array_append_new(cells,
                          json_integer(json_integer_value(ck__json_path(obj, "spec.height"))));
    const json_t *width = ck__json_path(obj, "spec.width");
    char buf[32] = "<none>";
    if (json_is_integer(width))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(width));
    json_array_append_new(cells, json_string(buf));
    json_array_append_new(cells, json_string(or_none(str_at(obj, "spec.restartPolicy"))));
    add_age(cells, str_at(obj, "metadata.creationTimestamp"), now);
}
