/*
 * plugins.c - the decisions of kube-scheduler's default profile, as pure functions.
 *
 * Mirrors pkg/scheduler/framework/plugins of Kubernetes 1.32:
 * - nodeunschedulable: a node with spec.unschedulable only takes pods tolerating the
 *   node.kubernetes.io/unschedulable:NoSchedule taint;
 * - nodename: a pod's spec.nodeName, when set, names the node;
 * - tainttoleration: every NoSchedule and NoExecute taint must be tolerated; the
 *   reason names the first that is not;
 * - nodeaffinity: spec.nodeSelector and the required node selector terms (terms ORed,
 *   expressions ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt; matchFields on
 *   metadata.name);
 * - nodeports: a host port (protocol, host IP, port) in use on the node conflicts,
 *   0.0.0.0 conflicting with every address;
 * - noderesources Fit: the pod's requests of cpu, memory and ephemeral-storage (the
 *   larger of the containers' sum and the largest init container, plus overhead) and
 *   one more pod must fit in allocatable minus what the node's pods request;
 * - LeastAllocated and BalancedAllocation over cpu and memory with scoring's non-zero
 *   defaults (100m, 200Mi), and the spreading of one owner's pods (SelectorSpread's
 *   normalisation by the fullest node);
 * - FitError.Error() and the default preemption's "no victims" message.
 *
 * Whether a toleration tolerates a taint and whether a node matches a pod's node
 * selector and required affinity are component-helpers' predicates, which the DaemonSet
 * and node lifecycle controllers use too (../scheduling_helpers.c); the filters here add
 * the scheduler's reasons and codes.
 *
 * Threading: pure; a node summary is changed only under its cache's lock.
 *
 * Tested by tests/controllers/test_scheduler_plugins.c, one table per plugin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../scheduling_helpers.h"
#include "ckube/api.h"
#include "ckube/controllers.h"
#include "internal.h"

/* ---- pods and nodes ---------------------------------------------------------------------- */

static int64_t quantity(const json_t *v, bool milli)
{
    int64_t m = 0;
    if (json_is_integer(v))
        return milli ? (int64_t)json_integer_value(v) * 1000 : (int64_t)json_integer_value(v);
    if (!json_is_string(v) || ck_quantity_milli(json_string_value(v), &m) < 0)
        return 0;
    return milli ? m : (m + 999) / 1000; /* Value() rounds up */
}

static void read_resources(const json_t *list, struct ck__sched_resources *r)
{
    r->milli_cpu = quantity(json_object_get(list, "cpu"), true);
    r->memory = quantity(json_object_get(list, "memory"), false);
    r->ephemeral = quantity(json_object_get(list, "ephemeral-storage"), false);
    r->pods = quantity(json_object_get(list, "pods"), false);
}

static int add_ports(struct ck__sched_pod *p, const json_t *container)
{
    size_t i;
    json_t *port;
    json_array_foreach(json_object_get(container, "ports"), i, port)
    {
        json_int_t host_port = json_integer_value(json_object_get(port, "hostPort"));
        if (host_port <= 0)
            continue;
        struct ck__sched_port *grown = realloc(p->ports, (p->n_ports + 1) * sizeof(*grown));
        if (!grown)
            return CK_ENOMEM;
        p->ports = grown;
        struct ck__sched_port *hp = &p->ports[p->n_ports++];
        const char *protocol = json_string_value(json_object_get(port, "protocol"));
        const char *ip = json_string_value(json_object_get(port, "hostIP"));
        snprintf(hp->protocol, sizeof(hp->protocol), "%s", protocol ? protocol : "TCP");
        snprintf(hp->host_ip, sizeof(hp->host_ip), "%s", ip && *ip ? ip : "0.0.0.0");
        hp->port = (int)host_port;
    }
    return 0;
}

int ck__sched_pod_init(struct ck__sched_pod *p, const json_t *pod)
{
    memset(p, 0, sizeof(*p));
    p->pod = pod;
    const json_t *spec = json_object_get(pod, "spec");
    struct ck__sched_resources sum = {0}, init_max = {0};
    int64_t nz_cpu = 0, nz_mem = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        struct ck__sched_resources r;
        const json_t *requests = json_object_get(json_object_get(c, "resources"), "requests");
        read_resources(requests, &r);
        sum.milli_cpu += r.milli_cpu;
        sum.memory += r.memory;
        sum.ephemeral += r.ephemeral;
        nz_cpu += json_object_get(requests, "cpu") ? r.milli_cpu : CK__SCHED_DEFAULT_MILLI_CPU;
        nz_mem += json_object_get(requests, "memory") ? r.memory : CK__SCHED_DEFAULT_MEMORY;
        if (add_ports(p, c) < 0)
            goto out_nomem;
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        struct ck__sched_resources r;
        read_resources(json_object_get(json_object_get(c, "resources"), "requests"), &r);
        init_max.milli_cpu = r.milli_cpu > init_max.milli_cpu ? r.milli_cpu : init_max.milli_cpu;
        init_max.memory = r.memory > init_max.memory ? r.memory : init_max.memory;
        init_max.ephemeral = r.ephemeral > init_max.ephemeral ? r.ephemeral : init_max.ephemeral;
        if (add_ports(p, c) < 0)
            goto out_nomem;
    }
    struct ck__sched_resources overhead;
    read_resources(json_object_get(spec, "overhead"), &overhead);
    p->requests.milli_cpu =
        (sum.milli_cpu > init_max.milli_cpu ? sum.milli_cpu : init_max.milli_cpu) +
        overhead.milli_cpu;
    p->requests.memory =
        (sum.memory > init_max.memory ? sum.memory : init_max.memory) + overhead.memory;
    p->requests.ephemeral =
        (sum.ephemeral > init_max.ephemeral ? sum.ephemeral : init_max.ephemeral) +
        overhead.ephemeral;
    p->requests.pods = 1;
    p->nonzero_cpu = nz_cpu + overhead.milli_cpu;
    p->nonzero_memory = nz_mem + overhead.memory;
    const json_t *ref = ck_controller_ref(pod);
    p->owner_uid = json_string_value(json_object_get(ref, "uid"));
    ck__sched_pod_refresh(p, pod);
    return 0;

out_nomem:
    ck__sched_pod_release(p);
    return CK_ENOMEM;
}

/* The time at key of obj (RFC 3339) in seconds, or 0. */
static int64_t time_at(const json_t *obj, const char *key)
{
    int64_t sec = 0;
    const char *text = json_string_value(json_object_get(obj, key));
    return text && ck__time_parse(text, &sec, NULL) == 0 ? sec : 0;
}

/* Whether pod has the DisruptionTarget condition the scheduler's preemption writes. */
static bool preempted(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *reason = json_string_value(json_object_get(c, "reason"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (type && strcmp(type, "DisruptionTarget") == 0 && status &&
            strcmp(status, "True") == 0 && reason &&
            strcmp(reason, CK__SCHED_PREEMPTION_REASON) == 0)
            return true;
    }
    return false;
}

void ck__sched_pod_refresh(struct ck__sched_pod *p, const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *meta = json_object_get(pod, "metadata");
    p->priority = (int32_t)json_integer_value(json_object_get(spec, "priority"));
    const char *policy = json_string_value(json_object_get(spec, "preemptionPolicy"));
    p->preempt_never = policy && strcmp(policy, "Never") == 0;
    p->start = time_at(json_object_get(pod, "status"), "startTime");
    if (!p->start)
        p->start = time_at(meta, "creationTimestamp");
    p->terminating_by_preemption = json_object_get(meta, "deletionTimestamp") && preempted(pod);
}

void ck__sched_pod_release(struct ck__sched_pod *p)
{
    free(p->ports);
    p->ports = NULL;
    p->n_ports = 0;
    json_decref(p->volume_affinity);
    p->volume_affinity = NULL;
}

int ck__sched_node_set(struct ck__sched_node *n, const json_t *node)
{
    ck_cached_unref(n->node);
    n->node = ck_cached_ref(node);
    const json_t *status = json_object_get(node, "status");
    const json_t *alloc = json_object_get(status, "allocatable");
    read_resources(alloc ? alloc : json_object_get(status, "capacity"), &n->allocatable);
    return 0;
}

int ck__sched_node_copy(struct ck__sched_node *dst, const struct ck__sched_node *src)
{
    *dst = (struct ck__sched_node){
        .allocatable = src->allocatable,
        .requested = src->requested,
        .nonzero_cpu = src->nonzero_cpu,
        .nonzero_memory = src->nonzero_memory,
    };
    dst->name = strdup(src->name);
    dst->ports = src->n_ports ? malloc(src->n_ports * sizeof(*dst->ports)) : NULL;
    if (!dst->name || (src->n_ports && !dst->ports)) {
        ck__sched_node_release(dst);
        return CK_ENOMEM;
    }
    if (src->n_ports)
        memcpy(dst->ports, src->ports, src->n_ports * sizeof(*dst->ports));
    dst->n_ports = dst->cap_ports = src->n_ports;
    dst->node = ck_cached_ref(src->node);
    return 0;
}

void ck__sched_node_release(struct ck__sched_node *n)
{
    ck_cached_unref(n->node);
    n->node = NULL;
    free(n->ports);
    n->ports = NULL;
    n->n_ports = n->cap_ports = 0;
    ck__strmap_release(&n->owners);
    free(n->name);
    n->name = NULL;
}

int ck__sched_node_account(struct ck__sched_node *n, const struct ck__sched_pod *p, int sign)
{
    if (sign > 0 && n->n_ports + p->n_ports > n->cap_ports) {
        size_t cap = n->cap_ports ? n->cap_ports * 2 : 8;
        while (cap < n->n_ports + p->n_ports)
            cap *= 2;
        struct ck__sched_port *grown = realloc(n->ports, cap * sizeof(*grown));
        if (!grown)
            return CK_ENOMEM;
        n->ports = grown;
        n->cap_ports = cap;
    }
    if (p->owner_uid) {
        bool created = false;
        struct ck__strmap_entry *e = ck__strmap_put(&n->owners, p->owner_uid, NULL, &created);
        if (!e && sign > 0)
            return CK_ENOMEM;
        if (e) {
            intptr_t count = (intptr_t)e->value + sign;
            if (count <= 0)
                ck__strmap_remove_entry(&n->owners, e);
            else
                e->value = (void *)count;
        }
    }
    n->requested.milli_cpu += sign * p->requests.milli_cpu;
    n->requested.memory += sign * p->requests.memory;
    n->requested.ephemeral += sign * p->requests.ephemeral;
    n->requested.pods += sign;
    n->nonzero_cpu += sign * p->nonzero_cpu;
    n->nonzero_memory += sign * p->nonzero_memory;
    for (size_t i = 0; i < p->n_ports; i++) {
        if (sign > 0) {
            n->ports[n->n_ports++] = p->ports[i];
            continue;
        }
        for (size_t j = 0; j < n->n_ports; j++) {
            if (n->ports[j].port == p->ports[i].port &&
                strcmp(n->ports[j].protocol, p->ports[i].protocol) == 0 &&
                strcmp(n->ports[j].host_ip, p->ports[i].host_ip) == 0) {
                n->ports[j] = n->ports[--n->n_ports];
                break;
            }
        }
    }
    return 0;
}

int64_t ck__sched_node_owner_count(const struct ck__sched_node *n, const char *owner_uid)
{
    const struct ck__strmap_entry *e = owner_uid ? ck__strmap_find(&n->owners, owner_uid) : NULL;
    return e ? (int64_t)(intptr_t)e->value : 0;
}

/* ---- filters ------------------------------------------------------------------------------ */

static enum ck__sched_code fail(struct ck__sched_status *st, enum ck__sched_code code,
                                const char *reason)
{
    st->code = code;
    if (st->n_reasons < 4)
        st->reasons[st->n_reasons++] = reason;
    return code;
}

static const json_t *pod_tolerations(const struct ck__sched_pod *p)
{
    return json_object_get(json_object_get(p->pod, "spec"), "tolerations");
}

enum ck__sched_code ck__sched_filter_unschedulable(const struct ck__sched_pod *p,
                                                   const struct ck__sched_node *n,
                                                   struct ck__sched_status *st)
{
    if (!json_is_true(json_object_get(json_object_get(n->node, "spec"), "unschedulable")))
        return CK__SCHED_SUCCESS;
    json_t *taint =
        json_pack("{s:s, s:s}", "key", "node.kubernetes.io/unschedulable", "effect", "NoSchedule");
    bool tolerated = taint && ck__tolerations_tolerate_taint(pod_tolerations(p), taint);
    json_decref(taint);
    return tolerated ? CK__SCHED_SUCCESS
                     : fail(st, CK__SCHED_UNRESOLVABLE, CK__SCHED_REASON_UNSCHEDULABLE);
}

enum ck__sched_code ck__sched_filter_node_name(const struct ck__sched_pod *p,
                                               const struct ck__sched_node *n,
                                               struct ck__sched_status *st)
{
    const char *want =
        json_string_value(json_object_get(json_object_get(p->pod, "spec"), "nodeName"));
    if (!want || !*want || strcmp(want, n->name) == 0)
        return CK__SCHED_SUCCESS;
    return fail(st, CK__SCHED_UNRESOLVABLE, CK__SCHED_REASON_NODE_NAME);
}

enum ck__sched_code ck__sched_filter_taints(const struct ck__sched_pod *p,
                                            const struct ck__sched_node *n,
                                            struct ck__sched_status *st)
{
    const json_t *taint = ck__find_untolerated_taint(
        json_object_get(json_object_get(n->node, "spec"), "taints"), pod_tolerations(p),
        CK__TAINT_NO_SCHEDULE | CK__TAINT_NO_EXECUTE);
    if (!taint)
        return CK__SCHED_SUCCESS;
    const char *key = json_string_value(json_object_get(taint, "key"));
    const char *value = json_string_value(json_object_get(taint, "value"));
    snprintf(st->buf, sizeof(st->buf), "node(s) had untolerated taint {%s: %s}", key ? key : "",
             value ? value : "");
    return fail(st, CK__SCHED_UNRESOLVABLE, st->buf);
}

enum ck__sched_code ck__sched_filter_affinity(const struct ck__sched_pod *p,
                                              const struct ck__sched_node *n,
                                              struct ck__sched_status *st)
{
    if (ck__required_node_affinity_matches(p->pod, n->node))
        return CK__SCHED_SUCCESS;
    return fail(st, CK__SCHED_UNRESOLVABLE, CK__SCHED_REASON_AFFINITY);
}

static bool ports_conflict(const struct ck__sched_port *a, const struct ck__sched_port *b)
{
    if (a->port != b->port || strcmp(a->protocol, b->protocol) != 0)
        return false;
    return strcmp(a->host_ip, "0.0.0.0") == 0 || strcmp(b->host_ip, "0.0.0.0") == 0 ||
           strcmp(a->host_ip, b->host_ip) == 0;
}

enum ck__sched_code ck__sched_filter_ports(const struct ck__sched_pod *p,
                                           const struct ck__sched_node *n,
                                           struct ck__sched_status *st)
{
    for (size_t i = 0; i < p->n_ports; i++)
        for (size_t j = 0; j < n->n_ports; j++)
            if (ports_conflict(&p->ports[i], &n->ports[j]))
                return fail(st, CK__SCHED_UNSCHEDULABLE, CK__SCHED_REASON_PORTS);
    return CK__SCHED_SUCCESS;
}

enum ck__sched_code ck__sched_filter_fit(const struct ck__sched_pod *p,
                                         const struct ck__sched_node *n,
                                         struct ck__sched_status *st)
{
    const struct ck__sched_resources *a = &n->allocatable, *r = &n->requested, *q = &p->requests;
    if (r->pods + 1 > a->pods)
        fail(st, CK__SCHED_UNSCHEDULABLE, CK__SCHED_REASON_TOO_MANY_PODS);
    if (q->milli_cpu > 0 && q->milli_cpu > a->milli_cpu - r->milli_cpu)
        fail(st, CK__SCHED_UNSCHEDULABLE, "Insufficient cpu");
    if (q->memory > 0 && q->memory > a->memory - r->memory)
        fail(st, CK__SCHED_UNSCHEDULABLE, "Insufficient memory");
    if (q->ephemeral > 0 && q->ephemeral > a->ephemeral - r->ephemeral)
        fail(st, CK__SCHED_UNSCHEDULABLE, "Insufficient ephemeral-storage");
    return st->n_reasons ? st->code : CK__SCHED_SUCCESS;
}

enum ck__sched_code ck__sched_filter(const struct ck__sched_pod *p, const struct ck__sched_node *n,
                                     struct ck__sched_status *st)
{
    typedef enum ck__sched_code (*filter_fn)(
        const struct ck__sched_pod *, const struct ck__sched_node *, struct ck__sched_status *);
    static const filter_fn filters[] = {
        ck__sched_filter_unschedulable,  ck__sched_filter_node_name, ck__sched_filter_taints,
        ck__sched_filter_affinity,       ck__sched_filter_ports,     ck__sched_filter_fit,
        ck__sched_filter_volume_binding,
    };
    st->code = CK__SCHED_SUCCESS;
    st->n_reasons = 0;
    for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
        if (filters[i](p, n, st) != CK__SCHED_SUCCESS)
            return st->code;
    return CK__SCHED_SUCCESS;
}

/* ---- scores ------------------------------------------------------------------------------- */

static int64_t least_allocated(int64_t requested, int64_t capacity)
{
    if (capacity <= 0 || requested > capacity)
        return 0;
    return (capacity - requested) * 100 / capacity;
}

int64_t ck__sched_score_least_allocated(const struct ck__sched_pod *p,
                                        const struct ck__sched_node *n)
{
    int64_t cpu = least_allocated(n->nonzero_cpu + p->nonzero_cpu, n->allocatable.milli_cpu);
    int64_t mem = least_allocated(n->nonzero_memory + p->nonzero_memory, n->allocatable.memory);
    return (cpu + mem) / 2;
}

int64_t ck__sched_score_balanced(const struct ck__sched_pod *p, const struct ck__sched_node *n)
{
    double fractions[2] = {0, 0};
    const int64_t req[2] = {n->nonzero_cpu + p->nonzero_cpu, n->nonzero_memory + p->nonzero_memory};
    const int64_t cap[2] = {n->allocatable.milli_cpu, n->allocatable.memory};
    for (int i = 0; i < 2; i++) {
        fractions[i] = cap[i] > 0 ? (double)req[i] / (double)cap[i] : 1.0;
        if (fractions[i] > 1)
            fractions[i] = 1;
    }
    /* the standard deviation of two fractions is half their distance */
    double std =
        (fractions[0] > fractions[1] ? fractions[0] - fractions[1] : fractions[1] - fractions[0]) /
        2;
    return (int64_t)((1 - std) * 100);
}

void ck__sched_score_spread(const int64_t *counts, size_t n, int64_t *scores)
{
    int64_t max = 0;
    for (size_t i = 0; i < n; i++)
        max = counts[i] > max ? counts[i] : max;
    for (size_t i = 0; i < n; i++)
        scores[i] = max > 0 ? 100 * (max - counts[i]) / max : 100;
}

/* ---- the message -------------------------------------------------------------------------- */

struct histogram_entry {
    const char *reason;
    size_t count;
    char text[360];
};

static int cmp_text(const void *a, const void *b)
{
    return strcmp(((const struct histogram_entry *)a)->text,
                  ((const struct histogram_entry *)b)->text);
}

static void histogram_add(struct histogram_entry *h, size_t *n, size_t cap, const char *reason)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(h[i].reason, reason) == 0) {
            h[i].count++;
            return;
        }
    }
    if (*n < cap)
        h[(*n)++] = (struct histogram_entry){.reason = reason, .count = 1};
}

/* Appends the histogram, sorted as Go's sort.Strings sorts "<count> <reason>". */
static void append_histogram(struct ck__buf *b, struct histogram_entry *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        snprintf(h[i].text, sizeof(h[i].text), "%zu %s", h[i].count, h[i].reason);
    qsort(h, n, sizeof(*h), cmp_text);
    for (size_t i = 0; i < n; i++)
        ck__buf_printf(b, "%s%s", i ? ", " : "", h[i].text);
}

char *ck__sched_fit_message(size_t n_all, const struct ck__sched_status *statuses, size_t n,
                            const char *post_filter)
{
    size_t cap = n * 4 + 2, len = 0;
    struct histogram_entry *h = calloc(cap, sizeof(*h));
    if (!h)
        return NULL;
    struct ck__buf b = {0};
    ck__buf_printf(&b, "0/%zu nodes are available", n_all);
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < statuses[i].n_reasons; r++)
            histogram_add(h, &len, cap, statuses[i].reasons[r]);
    if (len) {
        ck__buf_printf(&b, ": ");
        append_histogram(&b, h, len);
        ck__buf_printf(&b, ".");
    }
    if (post_filter && *post_filter)
        ck__buf_printf(&b, " %s", post_filter);
    free(h);
    return ck__buf_take(&b);
}
