/*
 * horizontal.c - the horizontal pod autoscaler controller (kubernetes
 * pkg/controller/podautoscaler/horizontal.go: reconcileAutoscaler,
 * computeReplicasForMetrics, normalizeDesiredReplicas[WithBehaviors], the
 * stabilization of recommendations and the scale rate of behavior policies).
 *
 * sync(key) reads the autoscaler (autoscaling/v2, its storage version) and its
 * target's scale: the target kind is found from scaleTargetRef among the served kinds
 * with a scale subresource (Deployment, ReplicaSet, StatefulSet,
 * ReplicationController, custom resources with one), and its autoscaling/v1 Scale read
 * (and written) through the sources (Kubernetes' scale client). Each metric proposes a replica
 * count; resource and container resource metrics are the metrics.k8s.io/v1beta1
 * PodMetrics the API server serves itself, listed by the target's selector through the
 * sources (Kubernetes' metrics client), with the pods from the informer cache, and go
 * through replica_calculator.c. Pods, Object and External metrics are read from the
 * custom (v1beta2) and external (v1beta1) metrics APIs through the sources, as
 * metrics/client.go's customMetricsClient and externalMetricsClient read them (so from
 * the adapter an APIService registers), and computed as replica_calculator.go's
 * GetMetricReplicas (a Pods metric, as a raw resource value), GetObjectMetricReplicas
 * and GetExternalMetricReplicas (a value target against the ready pods),
 * GetObjectPerPodMetricReplicas and GetExternalPerPodMetricReplicas (an average value
 * target per replica of the status) do.
 *
 * The highest proposal wins and is normalized: without spec.behavior, the highest
 * recommendation of the downscale stabilization window (5 minutes) and a scale up of
 * at most max(2 x current, 4); with it, the stabilization windows of both directions
 * and the policies' rates over the scale events the controller made, as Kubernetes
 * keeps them (in memory, per autoscaler, lost at restart). The scale is written
 * through the target's scale subresource (an update of the Scale read), and the
 * status (currentReplicas, desiredReplicas, currentMetrics, lastScaleTime, and the
 * conditions AbleToScale, ScalingActive and ScalingLimited with Kubernetes' reasons
 * and messages) only when it changed. Events are Kubernetes': SuccessfulRescale,
 * FailedRescale, FailedGetScale, FailedGetResourceMetric, FailedGetContainerResourceMetric,
 * FailedGetPodsMetric, FailedGetObjectMetric, FailedGetExternalMetric,
 * FailedComputeMetricsReplicas,
 * SelectorRequired, InvalidSelector, FailedUpdateStatus.
 *
 * Every autoscaler is synced again a sync period (15 s) after its last sync, whatever
 * happened (Kubernetes' fixed-interval requeue); a new or changed autoscaler waits the
 * same, as Kubernetes enqueues it rate-limited.
 *
 * Threading: the runner syncs a key on one worker at a time; the in-memory history
 * (recommendations and scale events) is shared between workers under c->lock.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "../internal.h"
#include "ckube/internal/util.h"
#include "ckube/podautoscaler.h"
#include "ckube/quota.h"

#define SCALE_UP_LIMIT_FACTOR  2.0
#define SCALE_UP_LIMIT_MINIMUM 4.0
#define MSG_SIZE               1024

struct timed {
    int32_t value; /* a recommendation, or a scale event's change */
    int64_t at;    /* ns */
    bool outdated; /* a scale event no policy period covers any more */
};

struct timed_list {
    struct timed *items;
    size_t n, cap;
};

struct history {
    char *key;
    struct timed_list recommendations, up_events, down_events;
    struct history *next;
};

struct ck_hpa_controller {
    struct ck_ctl_client client;
    struct ck_hpa_sources sources;
    struct ck_lister hpas, pods;
    const struct ck_resource *hpas_res;
    struct ck_informer *infs[2];
    size_t n_infs;
    struct ck_wq *queue;
    struct ck_controller ctl;
    struct ck_runner *runner;
    struct ck_ctl_event_sink sink;
    struct ck_event_recorder *recorder;
    int64_t (*now)(void *arg);
    void *now_arg;
    struct ck_hpa_options opts;
    pthread_mutex_t lock; /* guards histories and the custom metrics API's version */
    struct history *histories;
    /* the version of custom.metrics.k8s.io to ask ("" before discovery) and when it was
       found: found again after a sync period, as the controller manager invalidates it */
    char custom_version[16];
    int64_t custom_version_at;
};

/* What one sync works on. */
struct sync {
    struct ck_hpa_controller *c;
    const char *key;
    json_t *hpa; /* a copy of the cached autoscaler, its status changed as we go */
    int64_t now; /* ns */
};

static int64_t wall_ns(const struct ck_hpa_controller *c)
{
    if (c->now)
        return c->now(c->now_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

/* snprintf into a buffer where a long message may be cut short. */
static void bprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void bprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

static const char *rfc3339(int64_t ns, char *buf, size_t size)
{
    return ck_rfc3339((long long)(ns / CK_SEC), buf, size);
}

/* ---- history ------------------------------------------------------------------------ */

static int timed_add(struct timed_list *l, struct timed t)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        struct timed *items = realloc(l->items, cap * sizeof(*items));
        if (!items)
            return CK_ENOMEM;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = t;
    return 0;
}

/* The history of key, created when absent (under c->lock); NULL when out of memory. */
static struct history *history_of(struct ck_hpa_controller *c, const char *key)
{
    for (struct history *h = c->histories; h; h = h->next)
        if (strcmp(h->key, key) == 0)
            return h;
    struct history *h = ck__calloc(1, sizeof(*h));
    if (!h || !(h->key = strdup(key))) {
        free(h);
        return NULL;
    }
    h->next = c->histories;
    c->histories = h;
    return h;
}

static void history_free(struct history *h)
{
    free(h->key);
    free(h->recommendations.items);
    free(h->up_events.items);
    free(h->down_events.items);
    free(h);
}

static void history_forget(struct ck_hpa_controller *c, const char *key)
{
    pthread_mutex_lock(&c->lock);
    for (struct history **p = &c->histories; *p; p = &(*p)->next)
        if (strcmp((*p)->key, key) == 0) {
            struct history *h = *p;
            *p = h->next;
            history_free(h);
            break;
        }
    pthread_mutex_unlock(&c->lock);
}

/* ---- conditions and status ------------------------------------------------------------ */

/* setCondition: type's condition gets status, reason and message; its transition time
 * changes when its status does. */
static void set_condition(struct sync *s, const char *type, const char *status, const char *reason,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void set_condition(struct sync *s, const char *type, const char *status, const char *reason,
                          const char *fmt, ...)
{
    char msg[MSG_SIZE], ts[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *st = json_object_get(s->hpa, "status");
    json_t *list = json_object_get(st, "conditions");
    if (!json_is_array(list)) {
        list = json_array();
        json_object_set_new(st, "conditions", list);
    }
    json_t *cond = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && strcmp(t, type) == 0)
            cond = c;
    }
    if (!cond) {
        cond = json_pack("{s:s}", "type", type);
        json_array_append_new(list, cond);
    }
    const char *old = json_string_value(json_object_get(cond, "status"));
    if (!old || strcmp(old, status) != 0)
        json_object_set_new(cond, "lastTransitionTime",
                            json_string(rfc3339(s->now, ts, sizeof(ts))));
    json_object_set_new(cond, "status", json_string(status));
    json_object_set_new(cond, "reason", json_string(reason));
    json_object_set_new(cond, "message", json_string(msg));
}

/* setStatus: the status's counts and metrics, lastScaleTime when it rescaled. */
static void set_status(struct sync *s, int32_t current, int32_t desired, json_t *metrics,
                       bool rescale)
{
    json_t *st = json_object_get(s->hpa, "status");
    json_object_set_new(st, "currentReplicas", json_integer(current));
    json_object_set_new(st, "desiredReplicas", json_integer(desired));
    if (metrics)
        json_object_set(st, "currentMetrics", metrics);
    else
        json_object_del(st, "currentMetrics");
    if (current == 0)
        json_object_del(st, "currentReplicas"); /* omitempty */
    if (rescale) {
        char ts[40];
        json_object_set_new(st, "lastScaleTime", json_string(rfc3339(s->now, ts, sizeof(ts))));
    }
}

static void record(struct sync *s, const char *type, const char *reason, const char *msg)
{
    ck_event_recordf(s->c->recorder, s->hpa, type, reason, "%s", msg);
}

/* ---- the target's scale --------------------------------------------------------------- */

struct scale {
    const struct ck_kind *kind;
    const struct ck_resource *res;
    long long spec_replicas, status_replicas;
    char *selector; /* the Scale's status.selector; NULL when it has none */
    json_t *obj;    /* the Scale read */
};

static void scale_release(struct scale *s)
{
    free(s->selector);
    json_decref(s->obj);
}

/* The value at a dotted path ("spec.replicas"), or NULL. Borrowed. */
static const json_t *dotted(const json_t *obj, const char *path)
{
    char part[128];
    while (obj && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        obj = json_object_get(obj, part);
        path += n + (path[n] == '.');
    }
    return obj;
}

/* The kind scaleTargetRef names (group of its apiVersion, kind), one with a scale. */
static const struct ck_kind *target_kind(const json_t *ref, char *err, size_t err_size)
{
    const char *api_version = json_string_value(json_object_get(ref, "apiVersion"));
    const char *kind = json_string_value(json_object_get(ref, "kind"));
    char group[256] = "";
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    if (slash)
        snprintf(group, sizeof(group), "%.*s", (int)(slash - api_version), api_version);
    const char *version = slash ? slash + 1 : api_version;
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    const struct ck_kind *found = NULL;
    for (size_t i = 0; kind && i < n; i++) {
        if (strcmp(kinds[i]->group, group) != 0 || strcmp(kinds[i]->kind, kind) != 0)
            continue;
        if (!found || (version && strcmp(kinds[i]->version, version) == 0))
            found = kinds[i];
    }
    if (!found)
        snprintf(err, err_size, "no matches for kind \"%s\" in group \"%s\"", kind ? kind : "",
                 group);
    return found;
}

static int get_scale(struct sync *s, const char *ns, struct scale *ret, char *err, size_t err_size)
{
    const json_t *ref = json_object_get(json_object_get(s->hpa, "spec"), "scaleTargetRef");
    const char *name = json_string_value(json_object_get(ref, "name"));
    memset(ret, 0, sizeof(*ret));
    ret->kind = target_kind(ref, err, err_size);
    if (!ret->kind)
        return CK_ENOENT;
    ret->res = ck_controller_resource(ret->kind->group, ret->kind->version, ret->kind->resource);
    if (!ck_kind_subresource_part(ret->kind, CK_SUBRESOURCE_SCALE) || !ret->res) {
        snprintf(err, err_size, "the server could not find the requested resource");
        return CK_ENOENT;
    }
    json_t *scale = NULL;
    struct ck_err e = {0};
    int r = s->c->sources.ops->get_scale(s->c->sources.data, ret->res, ns, name ? name : "", &scale,
                                         &e);
    if (r < 0) {
        snprintf(err, err_size, "%s", e.msg);
        ck_err_release(&e);
        return r;
    }
    ret->spec_replicas = json_integer_value(dotted(scale, "spec.replicas"));
    ret->status_replicas = json_integer_value(dotted(scale, "status.replicas"));
    const char *sel = json_string_value(dotted(scale, "status.selector"));
    if (sel && *sel)
        ret->selector = strdup(sel);
    ret->obj = scale;
    return 0;
}

/* ---- metrics ---------------------------------------------------------------------------- */

/* A Go duration ("15.2s", "1m0.5s", "500ms") in ns; 0 when it is not one. */
static int64_t go_duration(const char *s)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    double total = 0;
    while (s && *s) {
        char *end = NULL;
        double v = strtod(s, &end);
        if (end == s)
            return 0;
        size_t best = 0, best_len = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t len = strlen(units[i].unit);
            if (strncmp(end, units[i].unit, len) == 0 && len > best_len)
                best = i, best_len = len;
        }
        if (!best_len)
            return 0;
        total += v * units[best].ns;
        s = end + best_len;
    }
    return (int64_t)total;
}

struct pod_metrics {
    struct ck_hpa_pod_metric *items;
    size_t n;
    json_t **held; /* the PodMetrics read, which the items' names borrow from */
    size_t n_held;
};

static void pod_metrics_release(struct pod_metrics *m)
{
    for (size_t i = 0; i < m->n_held; i++)
        json_decref(m->held[i]);
    free(m->held);
    free(m->items);
}

/*
 * GetResourceMetric: the metric of resource (in container, when not NULL) of each pod
 * that has one in the resource metrics API. A pod with a container without the
 * resource is left out, as Kubernetes' metrics client leaves it.
 */
static int resource_metrics(struct sync *s, const char *ns, const char *selector,
                            const char *resource, const char *container, struct pod_metrics *ret,
                            char *err, size_t err_size)
{
    memset(ret, 0, sizeof(*ret));
    struct ck_err e = {0};
    json_t *items = NULL;
    if (s->c->sources.ops->pod_metrics(s->c->sources.data, ns, selector, &items, &e) < 0) {
        snprintf(err, err_size, "unable to fetch metrics from resource metrics API: %s", e.msg);
        ck_err_release(&e);
        return CK_EINVAL;
    }
    ret->held = ck__calloc(1, sizeof(*ret->held));
    ret->items = ck__calloc(json_array_size(items) + 1, sizeof(*ret->items));
    if (!ret->held || !ret->items) {
        json_decref(items);
        return CK_ENOMEM;
    }
    ret->held[ret->n_held++] = items;
    if (json_array_size(items) == 0) {
        snprintf(err, err_size, "no metrics returned from resource metrics API");
        return CK_EINVAL;
    }
    size_t i;
    const json_t *pm;
    json_array_foreach(items, i, pm)
    {
        int64_t sum = 0;
        bool ok = true, any = false;
        size_t k;
        const json_t *cm;
        json_array_foreach(json_object_get(pm, "containers"), k, cm)
        {
            const char *cname = json_string_value(json_object_get(cm, "name"));
            if (container && (!cname || strcmp(cname, container) != 0))
                continue;
            const json_t *q = json_object_get(json_object_get(cm, "usage"), resource);
            int64_t milli = 0;
            if (!json_is_string(q) || ck_quantity_milli(json_string_value(q), &milli) < 0)
                ok = false;
            sum += milli;
            any = true;
        }
        if (!ok || !any || !ck__meta_str(pm, "name"))
            continue; /* a container without the resource: the pod is missing */
        int64_t ts_sec = 0;
        long usec = 0;
        ck__time_parse(json_string_value(json_object_get(pm, "timestamp")), &ts_sec, &usec);
        ret->items[ret->n++] = (struct ck_hpa_pod_metric){
            ck__meta_str(pm, "name"), sum, ts_sec * CK_SEC + (int64_t)usec * 1000,
            go_duration(json_string_value(json_object_get(pm, "window")))};
    }
    return 0;
}

/* One metric's proposal, or its failure: reason and the condition's and event's words. */
struct proposal {
    int32_t replicas;
    char name[256];
    json_t *status; /* the MetricStatus; NULL on failure */
    char reason[64];
    char err[MSG_SIZE];  /* the condition's message */
    char full[MSG_SIZE]; /* the error computeReplicasForMetric returns */
};

/* computeStatusFor(Container)ResourceMetric. */
static int resource_proposal(struct sync *s, const char *ns, const json_t *spec, bool container,
                             const struct ck_label_selector *selector, int32_t current,
                             struct proposal *p)
{
    const json_t *src = json_object_get(spec, container ? "containerResource" : "resource");
    const char *resource = json_string_value(json_object_get(src, "name"));
    const char *cname = container ? json_string_value(json_object_get(src, "container")) : NULL;
    const json_t *target = json_object_get(src, "target");
    const char *average = json_string_value(json_object_get(target, "averageValue"));
    const json_t *util = json_object_get(target, "averageUtilization");
    snprintf(p->reason, sizeof(p->reason), "%s",
             container ? "FailedGetContainerResourceMetric" : "FailedGetResourceMetric");
    if (!resource)
        resource = "";
    if (!average && !json_is_integer(util)) {
        snprintf(p->err, sizeof(p->err),
                 "invalid resource metric source: neither a utilization target nor a value "
                 "target was set");
        return CK_EINVAL;
    }
    int64_t target_value = 0;
    if (average && ck_quantity_milli(average, &target_value) < 0)
        target_value = 0;
    struct ck_obj_list pods = {0};
    struct pod_metrics metrics = {0};
    char why[MSG_SIZE] = "";
    int r = ck_lister_list(&s->c->pods, ns, selector, &pods, NULL);
    if (r < 0)
        return r;
    char *selector_text = ck_label_selector_string(selector);
    r = selector_text
            ? resource_metrics(s, ns, selector_text, resource, cname, &metrics, why, sizeof(why))
            : CK_ENOMEM;
    free(selector_text);
    struct ck_hpa_calc calc = {s->c->opts.tolerance, s->c->opts.cpu_initialization_period,
                               s->c->opts.initial_readiness_delay, s->now};
    struct ck_hpa_proposal out = {0};
    if (r == CK_EINVAL) {
        bprintf(p->err, sizeof(p->err), "unable to get metrics for resource %s: %s", resource, why);
    } else if (r == 0) {
        r = ck_hpa_resource_replicas(
            &calc, current, average ? target_value : json_integer_value(util), average != NULL,
            resource, cname, (const json_t *const *)pods.items, pods.n, metrics.items, metrics.n,
            &out, why, sizeof(why));
        if (r == CK_EINVAL)
            snprintf(p->err, sizeof(p->err), "%s", why);
    }
    pod_metrics_release(&metrics);
    ck_obj_list_release(&pods);
    if (r < 0)
        return r;
    char q[48];
    ck_quantity_format(out.raw, false, q, sizeof(q));
    json_t *current_value = average ? json_pack("{s:s}", "averageValue", q)
                                    : json_pack("{s:i,s:s}", "averageUtilization",
                                                (int)out.utilization, "averageValue", q);
    p->status = container ? json_pack("{s:s,s:{s:s,s:s,s:o}}", "type", "ContainerResource",
                                      "containerResource", "name", resource, "container",
                                      cname ? cname : "", "current", current_value)
                          : json_pack("{s:s,s:{s:s,s:o}}", "type", "Resource", "resource", "name",
                                      resource, "current", current_value);
    p->replicas = out.replicas;
    if (container)
        snprintf(p->name, sizeof(p->name),
                 average ? "%s container resource"
                         : "%s container resource utilization (percentage of request)",
                 resource);
    else
        snprintf(p->name, sizeof(p->name),
                 average ? "%s resource" : "%s resource utilization (percentage of request)",
                 resource);
    return p->status ? 0 : CK_ENOMEM;
}

/* ---- the custom and external metrics APIs (metrics/client.go) ----------------------- */

#define CUSTOM_GROUP     "custom.metrics.k8s.io"
#define EXTERNAL_METRICS "/apis/external.metrics.k8s.io/v1beta1"
#define DEFAULT_WINDOW   (60 * CK_SEC) /* metricServerDefaultMetricWindow */

/* obj[key] when it is a string, else dflt. */
static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v ? v : dflt;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The string form of a metric's selector (a metav1.LabelSelector, may be NULL); "" for none. */
static int metric_selector(const json_t *object, char **ret, char *err, size_t err_size)
{
    struct ck_label_selector *sel = NULL;
    struct ck_err e = {0};
    if (ck_label_selector_from_object(object, &sel, &e) < 0) {
        snprintf(err, err_size, "%s", e.msg);
        int r = e.code == CK_ENOMEM ? CK_ENOMEM : CK_EINVAL;
        ck_err_release(&e);
        return r;
    }
    *ret = ck_label_selector_string(sel);
    ck_label_selector_free(sel);
    return *ret ? 0 : CK_ENOMEM;
}

/*
 * Go's %+v of a *metav1.LabelSelector, the generated String(): "nil", or
 * &LabelSelector{MatchLabels:map[string]string{k: v,},MatchExpressions:[]...{...},}.
 */
static void go_selector(const json_t *sel, char *buf, size_t size)
{
    if (!json_is_object(sel)) {
        snprintf(buf, size, "nil");
        return;
    }
    struct ck__buf b = {0};
    ck__buf_printf(&b, "&LabelSelector{MatchLabels:map[string]string{");
    const json_t *labels = json_object_get(sel, "matchLabels");
    const char **keys = ck__calloc(json_object_size(labels) + 1, sizeof(*keys));
    size_t n = 0;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        if (keys)
            keys[n++] = k;
    }
    if (keys)
        qsort(keys, n, sizeof(*keys), by_string);
    for (size_t i = 0; i < n; i++)
        ck__buf_printf(&b, "%s: %s,", keys[i], json_string_value(json_object_get(labels, keys[i])));
    free(keys);
    ck__buf_printf(&b, "},MatchExpressions:[]LabelSelectorRequirement{");
    size_t i;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, v)
    {
        ck__buf_printf(&b, "LabelSelectorRequirement{Key:%s,Operator:%s,Values:[",
                       json_string_value(json_object_get(v, "key")),
                       json_string_value(json_object_get(v, "operator")));
        size_t j;
        const json_t *value;
        json_array_foreach(json_object_get(v, "values"), j, value)
        {
            ck__buf_printf(&b, "%s%s", j ? " " : "", json_string_value(value));
        }
        ck__buf_printf(&b, "],},");
    }
    ck__buf_printf(&b, "},}");
    snprintf(buf, size, "%s", b.p ? b.p : "");
    free(b.p);
}

/* The versions of custom.metrics.k8s.io this client reads, newest first (MetricVersions). */
static const char *const custom_versions[] = {"v1beta2", "v1beta1"};

static bool custom_version_known(const char *group_version)
{
    for (size_t i = 0; group_version && i < sizeof(custom_versions) / sizeof(*custom_versions); i++)
        if (strncmp(group_version, CUSTOM_GROUP "/", strlen(CUSTOM_GROUP "/")) == 0 &&
            strcmp(group_version + strlen(CUSTOM_GROUP "/"), custom_versions[i]) == 0)
            return true;
    return false;
}

/*
 * The version of custom.metrics.k8s.io to ask, into version: the group's preferred
 * version when this client reads it, else the first it reads of those the group lists
 * (client-go's apiVersionsFromDiscovery), from the server's group list, kept for one sync
 * period. 0, or a negative code with the discovery client's words in *reterr.
 */
static int custom_version(struct sync *s, char *version, size_t size, struct ck_err *reterr)
{
    struct ck_hpa_controller *c = s->c;
    pthread_mutex_lock(&c->lock);
    bool cached = c->custom_version[0] && s->now - c->custom_version_at < c->opts.sync_period;
    if (cached)
        snprintf(version, size, "%s", c->custom_version);
    pthread_mutex_unlock(&c->lock);
    if (cached)
        return 0;
    json_t *list = NULL;
    int r = c->sources.ops->api_groups(c->sources.data, &list, reterr);
    if (r < 0)
        return r;
    const json_t *group = NULL, *g;
    size_t i;
    json_array_foreach(json_object_get(list, "groups"), i, g)
    {
        if (strcmp(str_or(g, "name", ""), CUSTOM_GROUP) == 0) {
            group = g;
            break;
        }
    }
    const char *chosen = NULL;
    if (group) {
        chosen = str_or(json_object_get(group, "preferredVersion"), "groupVersion", NULL);
        const json_t *v;
        json_array_foreach(json_object_get(group, "versions"), i, v)
        {
            if (custom_version_known(chosen))
                break;
            chosen = str_or(v, "groupVersion", NULL);
        }
    }
    if (!group)
        r = ck_err_set(reterr, CK_ENOENT, "no custom metrics API (%s) registered", CUSTOM_GROUP);
    else if (!custom_version_known(chosen))
        r = ck_err_set(reterr, CK_ENOENT, "no known available metric versions found");
    else {
        snprintf(version, size, "%s", chosen + strlen(CUSTOM_GROUP "/"));
        pthread_mutex_lock(&c->lock);
        snprintf(c->custom_version, sizeof(c->custom_version), "%s", version);
        c->custom_version_at = s->now;
        pthread_mutex_unlock(&c->lock);
    }
    json_decref(list);
    return r;
}

/*
 * A v1beta1 MetricValue as v1beta2 has it (the generated conversion): metricName and
 * selector become metric's name and selector, window becomes windowSeconds.
 */
static int metric_value_from_v1beta1(json_t *item)
{
    json_t *metric = json_pack("{s:s}", "name", str_or(item, "metricName", ""));
    if (!metric)
        return CK_ENOMEM;
    json_t *selector = json_object_get(item, "selector");
    if (selector && !json_is_null(selector))
        json_object_set(metric, "selector", selector);
    json_t *window = json_object_get(item, "window");
    if ((window && json_object_set(item, "windowSeconds", window) < 0) ||
        json_object_set_new(item, "metric", metric) < 0)
        return CK_ENOMEM;
    json_object_del(item, "metricName");
    json_object_del(item, "selector");
    json_object_del(item, "window");
    return 0;
}

/*
 * GET rel (a path under the version, "namespaces/NS/...") of the custom metrics API in
 * the version the server offers: the MetricValueList, as v1beta2 has it, in *ret_list.
 */
static int custom_metric_values(struct sync *s, const char *rel, const char *selector,
                                const char *msel, json_t **ret_list, struct ck_err *reterr)
{
    char version[16], path[1200];
    int r = custom_version(s, version, sizeof(version), reterr);
    if (r < 0)
        return r;
    snprintf(path, sizeof(path), "/apis/" CUSTOM_GROUP "/%s/%s", version, rel);
    r = s->c->sources.ops->metric_values(s->c->sources.data, path, selector, msel, ret_list,
                                         reterr);
    if (r < 0 || strcmp(version, "v1beta1") != 0)
        return r;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(*ret_list, "items"), i, item)
    {
        if (json_is_object(item) && metric_value_from_v1beta1(item) < 0) {
            json_decref(*ret_list);
            *ret_list = NULL;
            return ck_err_set(reterr, CK_ENOMEM, "out of memory");
        }
    }
    return 0;
}

/*
 * A list from the custom or external metrics API (api: "custom", "external"; path: for
 * custom, under its version, see custom_metric_values): its items, at least one, or
 * CK_EINVAL with the metrics client's words in err.
 */
static int metric_list(struct sync *s, const char *api, const char *path, const char *selector,
                       const char *msel, json_t **ret_items, char *err, size_t err_size)
{
    json_t *list = NULL;
    struct ck_err e = {0};
    *ret_items = NULL;
    int r =
        strcmp(api, "custom") == 0
            ? custom_metric_values(s, path, selector, msel, &list, &e)
            : s->c->sources.ops->metric_values(s->c->sources.data, path, selector, msel, &list, &e);
    if (r < 0) {
        snprintf(err, err_size, "unable to fetch metrics from %s metrics API: %s", api, e.msg);
        r = e.code == CK_ENOMEM ? CK_ENOMEM : CK_EINVAL;
        ck_err_release(&e);
        return r;
    }
    json_t *items = json_object_get(list, "items");
    if (json_array_size(items) == 0) {
        json_decref(list);
        snprintf(err, err_size, "no metrics returned from %s metrics API", api);
        return CK_EINVAL;
    }
    *ret_items = json_incref(items);
    json_decref(list);
    return 0;
}

/* A metric value's quantity in milli units (0 when it is not one). */
static int64_t value_milli(const json_t *item)
{
    int64_t milli = 0;
    const char *q = json_string_value(json_object_get(item, "value"));
    if (!q || ck_quantity_milli(q, &milli) < 0)
        return 0;
    return milli;
}

/* The MetricStatus of a metric (kind "pods", "object", "external"), a new object. */
static json_t *metric_status(const char *type, const char *member, const json_t *src,
                             const json_t *described, const char *current, int64_t milli)
{
    char q[48];
    ck_quantity_format(milli, false, q, sizeof(q));
    const json_t *metric = json_object_get(src, "metric");
    json_t *id = json_pack("{s:s}", "name", str_or(metric, "name", ""));
    if (id && json_object_get(metric, "selector"))
        json_object_set(id, "selector", json_object_get(metric, "selector"));
    json_t *status = json_pack("{s:o, s:{s:s}}", "metric", id, "current", current, q);
    if (status && described)
        json_object_set(status, "describedObject", (json_t *)described);
    return json_pack("{s:s, s:o}", "type", type, member, status);
}

/* getReadyPodsCount: the Running and Ready pods of the target. */
static int ready_pods(struct sync *s, const char *ns, const struct ck_label_selector *selector,
                      int64_t *ret, char *err, size_t err_size)
{
    struct ck_obj_list pods = {0};
    int r = ck_lister_list(&s->c->pods, ns, selector, &pods, NULL);
    if (r < 0)
        return r;
    *ret = 0;
    for (size_t i = 0; i < pods.n; i++) {
        const char *phase =
            json_string_value(json_object_get(json_object_get(pods.items[i], "status"), "phase"));
        if (phase && strcmp(phase, "Running") == 0 && ck_pod_is_ready(pods.items[i], NULL))
            (*ret)++;
    }
    if (pods.n == 0) {
        snprintf(err, err_size, "no pods returned by selector while calculating replica count");
        r = CK_EINVAL;
    }
    ck_obj_list_release(&pods);
    return r;
}

/* getUsageRatioReplicaCount: the replicas a usage ratio asks for, currently current. */
static int ratio_replicas(struct sync *s, const char *ns, const struct ck_label_selector *selector,
                          int32_t current, double ratio, int32_t *ret, char *err, size_t err_size)
{
    if (current == 0) {
        *ret = (int32_t)ceil(ratio); /* scale from zero: the ratio alone */
        return 0;
    }
    if (fabs(1.0 - ratio) <= s->c->opts.tolerance) {
        *ret = current;
        return 0;
    }
    int64_t ready = 0;
    char why[MSG_SIZE] = "";
    int r = ready_pods(s, ns, selector, &ready, why, sizeof(why));
    if (r == CK_EINVAL)
        bprintf(err, err_size, "unable to calculate ready pods: %s", why);
    if (r == 0)
        *ret = (int32_t)ceil(ratio * (double)ready);
    return r;
}

/* GetObjectPerPodMetricReplicas and GetExternalPerPodMetricReplicas: a total per pod. */
static int32_t per_pod_replicas(struct sync *s, int32_t status_replicas, int64_t usage,
                                int64_t target, int64_t *ret_average)
{
    int32_t replicas = status_replicas;
    double ratio = (double)usage / ((double)target * (double)status_replicas);
    if (fabs(1.0 - ratio) > s->c->opts.tolerance && target > 0)
        replicas = (int32_t)ceil((double)usage / (double)target);
    *ret_average = status_replicas > 0 ? (int64_t)ceil((double)usage / (double)status_replicas) : 0;
    return replicas;
}

static int64_t target_milli(const json_t *target, const char *member)
{
    int64_t milli = 0;
    const char *q = json_string_value(json_object_get(target, member));
    if (!q || ck_quantity_milli(q, &milli) < 0)
        return 0;
    return milli;
}

/*
 * The replicas a total (an object's metric, an external metric's sum) asks for: against
 * a value target the ratio to it (getUsageRatioReplicaCount); against an average value
 * target per pod of the status's replicas, *usage becoming that average.
 */
static int total_replicas(struct sync *s, const char *ns, const struct ck_label_selector *selector,
                          int32_t current, int32_t status_replicas, const json_t *target,
                          bool value, int64_t *usage, int32_t *ret, struct proposal *p)
{
    if (!value) {
        *ret = per_pod_replicas(s, status_replicas, *usage, target_milli(target, "averageValue"),
                                usage);
        return 0;
    }
    double ratio = (double)*usage / (double)target_milli(target, "value");
    return ratio_replicas(s, ns, selector, current, ratio, ret, p->err, sizeof(p->err));
}

/* computeStatusForPodsMetric: GetMetricReplicas over the pods' custom metric. */
static int pods_proposal(struct sync *s, const char *ns, const json_t *spec,
                         const struct ck_label_selector *selector, int32_t current,
                         struct proposal *p)
{
    const json_t *src = json_object_get(spec, "pods");
    const char *name = str_or(json_object_get(src, "metric"), "name", "");
    snprintf(p->reason, sizeof(p->reason), "FailedGetPodsMetric");
    char *msel = NULL, *sel = NULL, why[MSG_SIZE] = "";
    json_t *items = NULL;
    int r = metric_selector(json_object_get(json_object_get(src, "metric"), "selector"), &msel,
                            p->err, sizeof(p->err));
    if (r == 0 && !(sel = ck_label_selector_string(selector)))
        r = CK_ENOMEM;
    char path[1024];
    snprintf(path, sizeof(path), "namespaces/%s/pods/*/%s", ns, name);
    if (r == 0 &&
        (r = metric_list(s, "custom", path, sel, msel, &items, why, sizeof(why))) == CK_EINVAL)
        bprintf(p->err, sizeof(p->err), "unable to get metric %s: %s", name, why);
    int64_t target = target_milli(json_object_get(src, "target"), "averageValue");
    struct ck_hpa_pod_metric *metrics =
        r == 0 ? ck__calloc(json_array_size(items) + 1, sizeof(*metrics)) : NULL;
    struct ck_obj_list pods = {0};
    struct ck_hpa_proposal out = {0};
    if (r == 0 && !metrics)
        r = CK_ENOMEM;
    if (r == 0)
        r = ck_lister_list(&s->c->pods, ns, selector, &pods, NULL);
    if (r == 0) {
        size_t i, n = 0;
        const json_t *m;
        json_array_foreach(items, i, m)
        {
            const char *pod = str_or(json_object_get(m, "describedObject"), "name", NULL);
            if (!pod)
                continue;
            int64_t ts_sec = 0;
            long usec = 0;
            ck__time_parse(json_string_value(json_object_get(m, "timestamp")), &ts_sec, &usec);
            const json_t *w = json_object_get(m, "windowSeconds");
            metrics[n++] = (struct ck_hpa_pod_metric){
                pod, value_milli(m), ts_sec * CK_SEC + (int64_t)usec * 1000,
                json_is_integer(w) ? json_integer_value(w) * CK_SEC : DEFAULT_WINDOW};
        }
        struct ck_hpa_calc calc = {s->c->opts.tolerance, s->c->opts.cpu_initialization_period,
                                   s->c->opts.initial_readiness_delay, s->now};
        r = ck_hpa_resource_replicas(&calc, current, target, true, "", NULL,
                                     (const json_t *const *)pods.items, pods.n, metrics, n, &out,
                                     p->err, sizeof(p->err));
    }
    ck_obj_list_release(&pods);
    free(metrics);
    json_decref(items);
    free(sel);
    free(msel);
    if (r == CK_EINVAL)
        bprintf(p->full, sizeof(p->full), "failed to get pods metric value: %s", p->err);
    if (r < 0)
        return r;
    p->replicas = out.replicas;
    p->status = metric_status("Pods", "pods", src, NULL, "averageValue", out.raw);
    snprintf(p->name, sizeof(p->name), "pods metric %s", name);
    return p->status ? 0 : CK_ENOMEM;
}

/* The custom metrics API's path of an object's metric, under the version (GetObjectMetric). */
static int object_path(const char *ns, const json_t *described, const char *metric, char *path,
                       size_t size, char *err, size_t err_size)
{
    const char *api_version = str_or(described, "apiVersion", "");
    const char *kind = str_or(described, "kind", "");
    if (strcmp(kind, "Namespace") == 0 && !strchr(api_version, '/')) {
        /* the namespace's own metrics, whatever name it gives */
        snprintf(path, size, "namespaces/%s/metrics/%s", ns, metric);
        return 0;
    }
    const struct ck_kind *k = target_kind(described, err, err_size);
    if (!k)
        return CK_EINVAL;
    snprintf(path, size, "namespaces/%s/%s%s%s/%s/%s", ns, k->resource, *k->group ? "." : "",
             k->group, str_or(described, "name", ""), metric);
    return 0;
}

/* computeStatusForObjectMetric: GetObjectMetricReplicas, GetObjectPerPodMetricReplicas. */
static int object_proposal(struct sync *s, const char *ns, const json_t *spec,
                           const struct ck_label_selector *selector, int32_t current,
                           int32_t status_replicas, struct proposal *p)
{
    const json_t *src = json_object_get(spec, "object");
    const json_t *described = json_object_get(src, "describedObject");
    const json_t *target = json_object_get(src, "target");
    const char *name = str_or(json_object_get(src, "metric"), "name", "");
    const char *type = str_or(target, "type", "");
    bool value = strcmp(type, "Value") == 0, average = strcmp(type, "AverageValue") == 0;
    snprintf(p->reason, sizeof(p->reason), "FailedGetObjectMetric");
    char *msel = NULL, path[1024], why[MSG_SIZE] = "";
    int r = metric_selector(json_object_get(json_object_get(src, "metric"), "selector"), &msel,
                            p->err, sizeof(p->err));
    if (r == 0 && !value && !average) {
        snprintf(p->err, sizeof(p->err),
                 "invalid object metric source: neither a value target nor an average value "
                 "target was set");
        r = CK_EINVAL;
    }
    json_t *items = NULL;
    bool fetched = r == 0; /* a failure past here is the fetch's */
    if (r == 0) {
        r = object_path(ns, described, name, path, sizeof(path), why, sizeof(why));
        if (r == 0) {
            json_t *list = NULL;
            struct ck_err e = {0};
            r = custom_metric_values(s, path, NULL, msel, &list, &e);
            if (r < 0)
                snprintf(why, sizeof(why), "%s", e.msg);
            else if (json_array_size(json_object_get(list, "items")) != 1)
                snprintf(why, sizeof(why),
                         "the custom metrics API server returned %zu results when we asked for "
                         "exactly one",
                         json_array_size(json_object_get(list, "items")));
            else
                items = json_incref(json_object_get(list, "items"));
            r = r < 0 && e.code == CK_ENOMEM ? CK_ENOMEM : items ? 0 : CK_EINVAL;
            ck_err_release(&e);
            json_decref(list);
        }
        if (r == CK_EINVAL) {
            char fetch[MSG_SIZE];
            bprintf(fetch, sizeof(fetch), "unable to fetch metrics from custom metrics API: %s",
                    why);
            /* the words as Kubernetes' format string orders them */
            bprintf(p->err, sizeof(p->err), "unable to get metric %s: %s on %s %s/%s", name,
                    str_or(described, "kind", ""), ns, str_or(described, "name", ""), fetch);
        }
    }
    free(msel);
    int64_t usage = items ? value_milli(json_array_get(items, 0)) : 0;
    json_decref(items);
    int32_t replicas = 0;
    if (r == 0)
        r = total_replicas(s, ns, selector, current, status_replicas, target, value, &usage,
                           &replicas, p);
    if (r == CK_EINVAL && average && fetched)
        bprintf(p->full, sizeof(p->full),
                "failed to get object metric value: failed to get %s object metric: %s", name,
                p->err);
    else if (r == CK_EINVAL)
        bprintf(p->full, sizeof(p->full), "failed to get object metric value: %s", p->err);
    if (r < 0)
        return r;
    p->replicas = replicas;
    if (value) {
        p->status = metric_status("Object", "object", src, described, "value", usage);
        snprintf(p->name, sizeof(p->name), "%s metric %s", str_or(described, "kind", ""), name);
    } else {
        /* Kubernetes leaves the described object out, and names it an external metric */
        json_t *none = json_pack("{s:s, s:s}", "kind", "", "name", "");
        p->status = metric_status("Object", "object", src, none, "averageValue", usage);
        json_decref(none);
        char sel[MSG_SIZE / 2];
        go_selector(json_object_get(json_object_get(src, "metric"), "selector"), sel, sizeof(sel));
        bprintf(p->name, sizeof(p->name), "external metric %s(%s)", name, sel);
    }
    return p->status ? 0 : CK_ENOMEM;
}

/* computeStatusForExternalMetric: GetExternalMetricReplicas, GetExternalPerPodMetricReplicas. */
static int external_proposal(struct sync *s, const char *ns, const json_t *spec,
                             const struct ck_label_selector *selector, int32_t current,
                             int32_t status_replicas, struct proposal *p)
{
    const json_t *src = json_object_get(spec, "external");
    const json_t *target = json_object_get(src, "target");
    const json_t *msel_obj = json_object_get(json_object_get(src, "metric"), "selector");
    const char *name = str_or(json_object_get(src, "metric"), "name", "");
    bool average = json_is_string(json_object_get(target, "averageValue"));
    bool value = !average && json_is_string(json_object_get(target, "value"));
    snprintf(p->reason, sizeof(p->reason), "FailedGetExternalMetric");
    char go_sel[MSG_SIZE / 2];
    go_selector(msel_obj, go_sel, sizeof(go_sel));
    if (!average && !value) {
        snprintf(p->err, sizeof(p->err),
                 "invalid external metric source: neither a value target nor an average value "
                 "target was set");
        snprintf(p->full, sizeof(p->full), "%s", p->err);
        return CK_EINVAL;
    }
    char *msel = NULL, path[1024], why[MSG_SIZE] = "";
    json_t *items = NULL;
    int r = metric_selector(msel_obj, &msel, p->err, sizeof(p->err));
    snprintf(path, sizeof(path), EXTERNAL_METRICS "/namespaces/%s/%s", ns, name);
    if (r == 0 &&
        (r = metric_list(s, "external", path, msel, NULL, &items, why, sizeof(why))) == CK_EINVAL)
        bprintf(p->err, sizeof(p->err), "unable to get external metric %s/%s/%s: %s", ns, name,
                go_sel, why);
    free(msel);
    int64_t usage = 0;
    size_t i;
    const json_t *m;
    json_array_foreach(items, i, m)
    {
        usage += value_milli(m);
    }
    json_decref(items);
    int32_t replicas = 0;
    if (r == 0)
        r = total_replicas(s, ns, selector, current, status_replicas, target, value, &usage,
                           &replicas, p);
    if (r == CK_EINVAL)
        bprintf(p->full, sizeof(p->full),
                average ? "failed to get %s external metric: %s"
                        : "failed to get external metric %s: %s",
                name, p->err);
    if (r < 0)
        return r;
    p->replicas = replicas;
    p->status =
        metric_status("External", "external", src, NULL, value ? "value" : "averageValue", usage);
    bprintf(p->name, sizeof(p->name), "external metric %s(%s)", name, go_sel);
    return p->status ? 0 : CK_ENOMEM;
}

/* computeReplicasForMetric: one metric's proposal. 0, CK_EINVAL (p says why) or CK_ENOMEM. */
static int metric_proposal(struct sync *s, const char *ns, const json_t *spec,
                           const struct ck_label_selector *selector, int32_t current,
                           int32_t status_replicas, struct proposal *p)
{
    const char *type = json_string_value(json_object_get(spec, "type"));
    if (!type)
        type = "";
    if (strcmp(type, "Resource") == 0 || strcmp(type, "ContainerResource") == 0) {
        int r = resource_proposal(s, ns, spec, strcmp(type, "ContainerResource") == 0, selector,
                                  current, p);
        if (r == CK_EINVAL) { /* the condition says what the calculation said; the error more */
            char inner[MSG_SIZE];
            snprintf(inner, sizeof(inner), "%s", p->err);
            record(s, CK_EVENT_WARNING, p->reason, inner);
            bprintf(p->err, sizeof(p->err), "the HPA was unable to compute the replica count: %s",
                    inner);
            const char *what = strcmp(type, "Resource") == 0 ? "resource" : "container";
            const char *name = json_string_value(json_object_get(
                json_object_get(spec,
                                strcmp(type, "Resource") == 0 ? "resource" : "containerResource"),
                "name"));
            bprintf(p->full, sizeof(p->full),
                    "failed to get %s %s metric value: failed to get %s utilization: %s", name,
                    what, name, inner);
        }
        return r;
    }
    int r = CK_EINVAL;
    if (strcmp(type, "Pods") == 0) {
        r = pods_proposal(s, ns, spec, selector, current, p);
    } else if (strcmp(type, "Object") == 0) {
        r = object_proposal(s, ns, spec, selector, current, status_replicas, p);
    } else if (strcmp(type, "External") == 0) {
        r = external_proposal(s, ns, spec, selector, current, status_replicas, p);
    } else {
        snprintf(p->reason, sizeof(p->reason), "InvalidMetricSourceType");
        snprintf(p->err, sizeof(p->err), "unknown metric source type \"%s\"", type);
        snprintf(p->full, sizeof(p->full), "%s", p->err);
    }
    if (r != CK_EINVAL)
        return r;
    /* getUnableComputeReplicaCountCondition: the event says the error, the condition more */
    char inner[MSG_SIZE];
    snprintf(inner, sizeof(inner), "%s", p->err);
    record(s, CK_EVENT_WARNING, p->reason, inner);
    bprintf(p->err, sizeof(p->err), "the HPA was unable to compute the replica count: %s", inner);
    return CK_EINVAL;
}

/*
 * computeReplicasForMetrics: the highest proposal and the metrics' statuses (*ret_statuses,
 * a new array). 0; CK_EINVAL when the selector is missing or bad, or every metric (or,
 * on a scale down, any) failed, with the event message in err; CK_ENOMEM.
 */
static int compute_replicas(struct sync *s, const char *ns, const struct scale *scale,
                            int32_t *ret_replicas, char *ret_metric, size_t metric_size,
                            json_t **ret_statuses, char *err, size_t err_size)
{
    *ret_statuses = NULL;
    if (!scale->selector) {
        record(s, CK_EVENT_WARNING, "SelectorRequired", "selector is required");
        set_condition(s, "ScalingActive", "False", "InvalidSelector",
                      "the HPA target's scale is missing a selector");
        snprintf(err, err_size, "selector is required");
        return CK_EINVAL;
    }
    struct ck_label_selector *selector = NULL;
    struct ck_err e = {0};
    if (ck_label_selector_parse(scale->selector, &selector, &e) < 0) {
        snprintf(err, err_size,
                 "couldn't convert selector into a corresponding internal selector object: %s",
                 e.msg);
        ck_err_release(&e);
        record(s, CK_EVENT_WARNING, "InvalidSelector", err);
        set_condition(s, "ScalingActive", "False", "InvalidSelector", "%s", err);
        return CK_EINVAL;
    }
    const json_t *specs = json_object_get(json_object_get(s->hpa, "spec"), "metrics");
    size_t n = json_array_size(specs), invalid = 0;
    json_t *statuses = json_array();
    int32_t replicas = 0;
    struct proposal first = {0};
    int r = statuses ? 0 : CK_ENOMEM;
    for (size_t i = 0; r == 0 && i < n; i++) {
        struct proposal p = {0};
        int pr =
            metric_proposal(s, ns, json_array_get(specs, i), selector,
                            (int32_t)scale->spec_replicas, (int32_t)scale->status_replicas, &p);
        if (pr == CK_ENOMEM) {
            r = pr;
            break;
        }
        /* a failed metric's status is empty, as Kubernetes leaves its slot zero */
        json_array_append_new(statuses, p.status ? p.status : json_pack("{s:s}", "type", ""));
        if (pr < 0) {
            if (invalid++ == 0)
                first = p;
            continue;
        }
        if (replicas == 0 || p.replicas > replicas) {
            replicas = p.replicas;
            snprintf(ret_metric, metric_size, "%s", p.name);
        }
    }
    ck_label_selector_free(selector);
    if (r < 0) {
        json_decref(statuses);
        return r;
    }
    if (invalid >= n || (invalid > 0 && replicas < scale->spec_replicas)) {
        set_condition(s, "ScalingActive", "False", first.reason, "%s", first.err);
        bprintf(err, err_size, "invalid metrics (%zu invalid out of %zu), first error is: %s",
                invalid, n, first.full);
        json_decref(statuses);
        return CK_EINVAL;
    }
    set_condition(s, "ScalingActive", "True", "ValidMetricFound",
                  "the HPA was able to successfully calculate a replica count from %s", ret_metric);
    *ret_replicas = replicas;
    *ret_statuses = statuses;
    return 0;
}

/* ---- normalization ---------------------------------------------------------------------- */

/* stabilizeRecommendation: the highest recommendation of the downscale window. */
static int32_t stabilize(struct sync *s, struct history *h, int32_t desired)
{
    int32_t best = desired;
    int64_t cutoff = s->now - s->c->opts.downscale_stabilization;
    struct timed_list *l = &h->recommendations;
    ssize_t old = -1;
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].at < cutoff)
            old = (ssize_t)i;
        else if (l->items[i].value > best)
            best = l->items[i].value;
    }
    struct timed t = {desired, s->now, false};
    if (old >= 0)
        l->items[old] = t;
    else
        timed_add(l, t);
    return best;
}

/* The replica changes of events within period seconds. */
static int32_t changes_in(const struct sync *s, const struct timed_list *events, long long period)
{
    int32_t sum = 0;
    int64_t cutoff = s->now - period * CK_SEC;
    for (size_t i = 0; i < events->n; i++)
        if (events->items[i].at > cutoff)
            sum += events->items[i].value;
    return sum;
}

static const char *select_policy(const json_t *rules)
{
    const char *p = json_string_value(json_object_get(rules, "selectPolicy"));
    return p ? p : "Max";
}

/* calculateScaleUpLimitWithScalingRules */
static int32_t scale_up_limit(const struct sync *s, int32_t current, const struct timed_list *ev,
                              const json_t *rules)
{
    const char *sel = select_policy(rules);
    if (strcmp(sel, "Disabled") == 0)
        return current;
    bool use_min = strcmp(sel, "Min") == 0;
    int32_t result = use_min ? INT32_MAX : INT32_MIN;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(rules, "policies"), i, p)
    {
        long long period = json_integer_value(json_object_get(p, "periodSeconds"));
        long long value = json_integer_value(json_object_get(p, "value"));
        const char *type = json_string_value(json_object_get(p, "type"));
        int32_t start = current - changes_in(s, ev, period);
        int32_t proposed = 0;
        if (type && strcmp(type, "Pods") == 0)
            proposed = start + (int32_t)value;
        else if (type && strcmp(type, "Percent") == 0)
            proposed = (int32_t)ceil((double)start * (1.0 + (double)value / 100.0));
        result = use_min ? (proposed < result ? proposed : result)
                         : (proposed > result ? proposed : result);
    }
    return result;
}

/* calculateScaleDownLimitWithBehaviors */
static int32_t scale_down_limit(const struct sync *s, int32_t current, const struct timed_list *ev,
                                const json_t *rules)
{
    const char *sel = select_policy(rules);
    if (strcmp(sel, "Disabled") == 0)
        return current;
    bool use_max = strcmp(sel, "Min") == 0; /* the smallest change down: the highest count */
    int32_t result = use_max ? INT32_MIN : INT32_MAX;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(rules, "policies"), i, p)
    {
        long long period = json_integer_value(json_object_get(p, "periodSeconds"));
        long long value = json_integer_value(json_object_get(p, "value"));
        const char *type = json_string_value(json_object_get(p, "type"));
        int32_t start = current + changes_in(s, ev, period);
        int32_t proposed = 0;
        if (type && strcmp(type, "Pods") == 0)
            proposed = start - (int32_t)value;
        else if (type && strcmp(type, "Percent") == 0)
            proposed = (int32_t)((double)start * (1.0 - (double)value / 100.0));
        result = use_max ? (proposed > result ? proposed : result)
                         : (proposed < result ? proposed : result);
    }
    return result;
}

static long long window_of(const json_t *rules, long long dflt)
{
    const json_t *w = json_object_get(rules, "stabilizationWindowSeconds");
    return json_is_integer(w) ? json_integer_value(w) : dflt;
}

/* normalizeDesiredReplicas (no behavior). */
static int32_t normalize(struct sync *s, struct history *h, int32_t current, int32_t desired,
                         int32_t min, int32_t max)
{
    int32_t stabilized = stabilize(s, h, desired);
    if (stabilized != desired)
        set_condition(s, "AbleToScale", "True", "ScaleDownStabilized",
                      "recent recommendations were higher than current one, applying the "
                      "highest recent recommendation");
    else
        set_condition(s, "AbleToScale", "True", "ReadyForNewScale",
                      "recommended size matches current size");
    /* convertDesiredReplicasWithRules */
    int32_t up_limit = (int32_t)fmax(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM);
    int32_t allowed_max = max;
    const char *reason = "TooManyReplicas";
    const char *msg = "the desired replica count is more than the maximum replica count";
    if (max > up_limit) {
        allowed_max = up_limit;
        reason = "ScaleUpLimit";
        msg = "the desired replica count is increasing faster than the maximum scale rate";
    }
    int32_t out = stabilized;
    if (stabilized < min) {
        out = min;
        reason = "TooFewReplicas";
        msg = "the desired replica count is less than the minimum replica count";
    } else if (stabilized > allowed_max) {
        out = allowed_max;
    } else {
        reason = "DesiredWithinRange";
        msg = "the desired count is within the acceptable range";
    }
    set_condition(s, "ScalingLimited", out == stabilized ? "False" : "True", reason, "%s", msg);
    return out;
}

/* normalizeDesiredReplicasWithBehaviors */
static int32_t normalize_with_behavior(struct sync *s, struct history *h, int32_t current,
                                       int32_t desired, int32_t min, int32_t max)
{
    const json_t *behavior = json_object_get(json_object_get(s->hpa, "spec"), "behavior");
    const json_t *up = json_object_get(behavior, "scaleUp");
    const json_t *down = json_object_get(behavior, "scaleDown");
    long long up_window = window_of(up, 0);
    long long down_window = window_of(down, s->c->opts.downscale_stabilization / CK_SEC);
    /* stabilizeRecommendationWithBehaviors */
    bool going_up = desired >= current;
    long long delay = going_up ? up_window : down_window;
    long long longest = up_window > down_window ? up_window : down_window;
    int64_t cutoff = s->now - delay * CK_SEC, obsolete = s->now - longest * CK_SEC;
    int32_t stabilized = desired;
    ssize_t old = -1;
    struct timed_list *l = &h->recommendations;
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].at > cutoff)
            stabilized = going_up
                             ? (l->items[i].value < stabilized ? l->items[i].value : stabilized)
                             : (l->items[i].value > stabilized ? l->items[i].value : stabilized);
        if (l->items[i].at < obsolete)
            old = (ssize_t)i;
    }
    struct timed t = {desired, s->now, false};
    if (old >= 0)
        l->items[old] = t;
    else
        timed_add(l, t);
    if (stabilized != desired)
        set_condition(s, "AbleToScale", "True",
                      going_up ? "ScaleUpStabilized" : "ScaleDownStabilized",
                      going_up ? "recent recommendations were lower than current one, applying "
                                 "the lowest recent recommendation"
                               : "recent recommendations were higher than current one, "
                                 "applying the highest recent recommendation");
    else
        set_condition(s, "AbleToScale", "True", "ReadyForNewScale",
                      "recommended size matches current size");
    /* convertDesiredReplicasWithBehaviorRate */
    int32_t out = stabilized;
    const char *reason = "DesiredWithinRange";
    const char *msg = "the desired count is within the acceptable range";
    if (stabilized > current) {
        int32_t limit = scale_up_limit(s, current, &h->up_events, up);
        if (limit < current)
            limit = current;
        int32_t allowed = max;
        const char *r2 = "TooManyReplicas";
        const char *m2 = "the desired replica count is more than the maximum replica count";
        if (allowed > limit) {
            allowed = limit;
            r2 = "ScaleUpLimit";
            m2 = "the desired replica count is increasing faster than the maximum scale rate";
        }
        if (stabilized > allowed)
            out = allowed, reason = r2, msg = m2;
    } else if (stabilized < current) {
        int32_t limit = scale_down_limit(s, current, &h->down_events, down);
        if (limit > current)
            limit = current;
        int32_t allowed = min;
        const char *r2 = "TooFewReplicas";
        const char *m2 = "the desired replica count is less than the minimum replica count";
        if (allowed < limit) {
            allowed = limit;
            r2 = "ScaleDownLimit";
            m2 = "the desired replica count is decreasing faster than the maximum scale rate";
        }
        if (stabilized < allowed)
            out = allowed, reason = r2, msg = m2;
    }
    set_condition(s, "ScalingLimited", out == stabilized ? "False" : "True", reason, "%s", msg);
    return out;
}

static long long longest_period(const json_t *rules)
{
    long long longest = 0;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(rules, "policies"), i, p)
    {
        long long v = json_integer_value(json_object_get(p, "periodSeconds"));
        if (v > longest)
            longest = v;
    }
    return longest;
}

/* storeScaleEvent: a scale the controller made, for the policies' rates. */
static void store_scale_event(struct sync *s, struct history *h, int32_t prev, int32_t next)
{
    const json_t *behavior = json_object_get(json_object_get(s->hpa, "spec"), "behavior");
    if (!behavior)
        return;
    bool up = next > prev;
    struct timed_list *l = up ? &h->up_events : &h->down_events;
    long long period = longest_period(json_object_get(behavior, up ? "scaleUp" : "scaleDown"));
    ssize_t old = -1;
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].at < s->now - period * CK_SEC)
            l->items[i].outdated = true;
        if (l->items[i].outdated)
            old = (ssize_t)i;
    }
    struct timed t = {up ? next - prev : prev - next, s->now, false};
    if (old >= 0)
        l->items[old] = t;
    else
        timed_add(l, t);
}

/* ---- reconcileAutoscaler ------------------------------------------------------------- */

static int reconcile(struct sync *s, const char *ns)
{
    struct ck_hpa_controller *c = s->c;
    char err[MSG_SIZE], reference[600], event[MSG_SIZE + 128];
    const json_t *spec = json_object_get(s->hpa, "spec");
    const json_t *ref = json_object_get(spec, "scaleTargetRef");
    snprintf(reference, sizeof(reference), "%s/%s/%s",
             json_string_value(json_object_get(ref, "kind")), ns,
             json_string_value(json_object_get(ref, "name")));
    struct scale scale;
    int r = get_scale(s, ns, &scale, err, sizeof(err));
    if (r < 0) {
        record(s, CK_EVENT_WARNING, "FailedGetScale", err);
        set_condition(s, "AbleToScale", "False", "FailedGetScale",
                      "the HPA controller was unable to get the target's current scale: %s", err);
        CK_LOGV(2, "horizontal-pod-autoscaler: failed to query scale subresource for %s: %s",
                reference, err);
        return 0;
    }
    set_condition(s, "AbleToScale", "True", "SucceededGetScale",
                  "the HPA controller was able to get the target's current scale");
    int32_t current = (int32_t)scale.spec_replicas;
    pthread_mutex_lock(&c->lock);
    struct history *h = history_of(c, s->key);
    if (h && h->recommendations.n == 0)
        timed_add(&h->recommendations, (struct timed){current, s->now, false});
    pthread_mutex_unlock(&c->lock);
    if (!h) {
        scale_release(&scale);
        return CK_ENOMEM;
    }
    const json_t *min_v = json_object_get(spec, "minReplicas");
    int32_t min = json_is_integer(min_v) ? (int32_t)json_integer_value(min_v) : 1;
    int32_t max = (int32_t)json_integer_value(json_object_get(spec, "maxReplicas"));
    int32_t desired = 0;
    char reason[600] = "";
    bool rescale = true;
    json_t *statuses = NULL;
    if (scale.spec_replicas == 0 && min != 0) {
        desired = 0;
        rescale = false;
        set_condition(s, "ScalingActive", "False", "ScalingDisabled",
                      "scaling is disabled since the replica count of the target is zero");
    } else if (current > max) {
        snprintf(reason, sizeof(reason), "Current number of replicas above Spec.MaxReplicas");
        desired = max;
    } else if (current < min) {
        snprintf(reason, sizeof(reason), "Current number of replicas below Spec.MinReplicas");
        desired = min;
    } else {
        char metric[256] = "";
        int32_t proposed = 0;
        r = compute_replicas(s, ns, &scale, &proposed, metric, sizeof(metric), &statuses, err,
                             sizeof(err));
        if (r < 0) {
            scale_release(&scale);
            if (r == CK_ENOMEM)
                return r;
            json_t *st = json_object_get(s->hpa, "status");
            set_status(s, current,
                       (int32_t)json_integer_value(json_object_get(st, "desiredReplicas")),
                       json_object_get(st, "currentMetrics"), false);
            record(s, CK_EVENT_WARNING, "FailedComputeMetricsReplicas", err);
            CK_LOGV(2,
                    "horizontal-pod-autoscaler: failed to compute desired number of replicas "
                    "based on listed metrics for %s: %s",
                    reference, err);
            return 0;
        }
        desired = proposed;
        if (desired > current)
            snprintf(reason, sizeof(reason), "%s above target", metric);
        if (desired < current)
            snprintf(reason, sizeof(reason), "All metrics below target");
        pthread_mutex_lock(&c->lock);
        desired = json_object_get(spec, "behavior")
                      ? normalize_with_behavior(s, h, current, desired, min, max)
                      : normalize(s, h, current, desired, min, max);
        pthread_mutex_unlock(&c->lock);
        rescale = desired != current;
    }
    if (rescale) {
        struct ck_err e = {0};
        const char *name = json_string_value(json_object_get(ref, "name"));
        json_t *next = json_deep_copy(scale.obj);
        json_t *next_spec = next ? json_object_get(next, "spec") : NULL;
        if (!json_is_object(next_spec) && next)
            json_object_set_new(next, "spec", next_spec = json_object());
        r = next && json_object_set_new(next_spec, "replicas", json_integer(desired)) == 0
                ? c->sources.ops->update_scale(c->sources.data, scale.res, ns, name, next, &e)
                : ck_err_set(&e, CK_ENOMEM, "out of memory");
        json_decref(next);
        if (r < 0) {
            snprintf(event, sizeof(event), "New size: %d; reason: %s; error: %s", desired, reason,
                     e.msg);
            record(s, CK_EVENT_WARNING, "FailedRescale", event);
            set_condition(s, "AbleToScale", "False", "FailedUpdateScale",
                          "the HPA controller was unable to update the target scale: %s", e.msg);
            ck_err_release(&e);
            json_t *st = json_object_get(s->hpa, "status");
            set_status(s, current,
                       (int32_t)json_integer_value(json_object_get(st, "desiredReplicas")),
                       json_object_get(st, "currentMetrics"), false);
            json_decref(statuses);
            scale_release(&scale);
            return 0;
        }
        set_condition(s, "AbleToScale", "True", "SucceededRescale",
                      "the HPA controller was able to update the target scale to %d", desired);
        snprintf(event, sizeof(event), "New size: %d; reason: %s", desired, reason);
        record(s, CK_EVENT_NORMAL, "SuccessfulRescale", event);
        pthread_mutex_lock(&c->lock);
        store_scale_event(s, h, current, desired);
        pthread_mutex_unlock(&c->lock);
        CK_LOGI("horizontal-pod-autoscaler: successful rescale of %s, old size: %d, new "
                "size: %d, reason: %s",
                s->key, current, desired, reason);
    } else {
        desired = current;
    }
    set_status(s, current, desired, statuses, rescale);
    json_decref(statuses);
    scale_release(&scale);
    return 0;
}

static int sync_key(struct ck_hpa_controller *c, const char *key, struct ck_err *reterr)
{
    char *ns = NULL, *name = NULL;
    const json_t *cached = NULL;
    if (ck_split_meta_namespace_key(key, &ns, &name, NULL) < 0 ||
        ck_lister_get(&c->hpas, ns, name, &cached) < 0) {
        history_forget(c, key); /* deleted: forget what we remembered of it */
        free(ns);
        free(name);
        return 0;
    }
    struct sync s = {c, key, json_deep_copy(cached), wall_ns(c)};
    ck_cached_unref(cached);
    int r = 0;
    if (!s.hpa || json_object_set_new(s.hpa, "apiVersion", json_string("autoscaling/v2")) < 0 ||
        json_object_set_new(s.hpa, "kind", json_string("HorizontalPodAutoscaler")) < 0) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out;
    }
    if (!json_is_object(json_object_get(s.hpa, "status")))
        json_object_set_new(s.hpa, "status", json_object());
    json_t *original = json_deep_copy(json_object_get(s.hpa, "status"));
    r = original ? reconcile(&s, ns) : CK_ENOMEM;
    if (r == CK_ENOMEM) {
        ck_err_set(reterr, CK_ENOMEM, "out of memory");
    } else if (!json_equal(original, json_object_get(s.hpa, "status"))) {
        struct ck_err e = {0};
        if (ck_ctl_update_status(&c->client, c->hpas_res, ns, s.hpa, NULL, &e) < 0) {
            record(&s, CK_EVENT_WARNING, "FailedUpdateStatus", e.msg);
            CK_LOGV(2, "horizontal-pod-autoscaler: failed to update status for %s: %s", name,
                    e.msg);
        }
        ck_err_release(&e);
    }
    json_decref(original);
    ck_wq_add_after(c->queue, key, c->opts.sync_period);
out:
    json_decref(s.hpa);
    free(ns);
    free(name);
    return r;
}

static int sync_hpa(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    return sync_key(ctl->data, key, reterr);
}

/* ---- handlers ------------------------------------------------------------------------- */

static void enqueue_later(struct ck_hpa_controller *c, const json_t *obj)
{
    char key[512];
    const char *ns = ck__meta_str(obj, "namespace"), *name = ck__meta_str(obj, "name");
    if (!ns || !name)
        return;
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    ck_wq_add_after(c->queue, key, c->opts.sync_period);
}

static void hpa_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    enqueue_later(arg, obj);
}

static void hpa_update(const json_t *old, const json_t *obj, void *arg)
{
    if (!ck__ctl_same_version(old, obj))
        enqueue_later(arg, obj);
}

static void hpa_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    ck__ctl_enqueue(((struct ck_hpa_controller *)arg)->queue, obj); /* forgets its history */
}

void ck_hpa_controller_handler(struct ck_hpa_controller *c, struct ck_event_handler *ret)
{
    *ret = (struct ck_event_handler){hpa_add, hpa_update, hpa_delete, c};
}

/* ---- life ------------------------------------------------------------------------------- */

static void options_defaults(struct ck_hpa_options *o, const struct ck_hpa_options *given)
{
    *o = given ? *given : (struct ck_hpa_options){0};
    if (o->sync_period <= 0)
        o->sync_period = CK_HPA_SYNC_PERIOD;
    if (o->tolerance <= 0)
        o->tolerance = CK_HPA_TOLERANCE;
    if (o->downscale_stabilization <= 0)
        o->downscale_stabilization = CK_HPA_DOWNSCALE_STABILIZATION;
    if (o->cpu_initialization_period <= 0)
        o->cpu_initialization_period = CK_HPA_CPU_INITIALIZATION_PERIOD;
    if (o->initial_readiness_delay <= 0)
        o->initial_readiness_delay = CK_HPA_INITIAL_READINESS_DELAY;
}

/* ---- the sources over REST ----------------------------------------------------------- */

static int rest_get_scale(void *data, const struct ck_resource *res, const char *ns,
                          const char *name, json_t **ret_scale, struct ck_err *reterr)
{
    char path[1024];
    if (ck_rest_path(res, ns, name, "scale", NULL, path, sizeof(path)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "%s %s/%s: not a valid path", res->resource, ns, name);
    return ck_rest_do(data, "GET", path, NULL, NULL, ret_scale, reterr);
}

static int rest_pod_metrics(void *data, const char *ns, const char *selector, json_t **ret_items,
                            struct ck_err *reterr)
{
    const struct ck_resource *res = ck_controller_resource("metrics.k8s.io", "v1beta1", "pods");
    if (!res)
        return ck_err_set(reterr, CK_ENOENT, "the server could not find the requested resource");
    struct ck_list_options opts = {.label_selector = selector};
    json_t *list = NULL;
    int r = ck_rest_list(data, res, ns, &opts, &list, reterr);
    if (r < 0)
        return r;
    *ret_items = json_incref(json_object_get(list, "items"));
    json_decref(list);
    if (!*ret_items)
        *ret_items = json_array();
    return *ret_items ? 0 : ck_err_set(reterr, CK_ENOMEM, "out of memory");
}

static int rest_update_scale(void *data, const struct ck_resource *res, const char *ns,
                             const char *name, const json_t *scale, struct ck_err *reterr)
{
    char path[1024];
    if (ck_rest_path(res, ns, name, "scale", NULL, path, sizeof(path)) < 0)
        return ck_err_set(reterr, CK_EINVAL, "%s %s/%s: not a valid path", res->resource, ns, name);
    return ck_rest_do(data, "PUT", path, scale, NULL, NULL, reterr);
}

static int rest_metric_values(void *data, const char *path, const char *label_selector,
                              const char *metric_label_selector, json_t **ret_list,
                              struct ck_err *reterr)
{
    const char *const pairs[][2] = {{"labelSelector", label_selector},
                                    {"metricLabelSelector", metric_label_selector}};
    return ck_rest_get_query(data, path, pairs, 2, ret_list, reterr);
}

static int rest_api_groups(void *data, json_t **ret_list, struct ck_err *reterr)
{
    return ck_rest_do(data, "GET", "/apis", NULL, NULL, ret_list, reterr);
}

static const struct ck_hpa_sources_ops rest_sources = {
    rest_get_scale, rest_update_scale, rest_pod_metrics, rest_metric_values, rest_api_groups};

void ck_hpa_sources_init_rest(struct ck_hpa_sources *s, struct ck_rest *rest)
{
    s->ops = &rest_sources;
    s->data = rest;
}

static int init_common(struct ck_hpa_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, bool synchronous_events,
                       const struct ck_hpa_options *opts, struct ck_err *reterr)
{
    c->client = *client;
    options_defaults(&c->opts, opts);
    pthread_mutex_init(&c->lock, NULL);
    c->hpas_res = ck_controller_resource("autoscaling", "v2", "horizontalpodautoscalers");
    if (!c->hpas_res)
        return ck_err_set(reterr, CK_ENOENT,
                          "horizontal-pod-autoscaler: the API serves no horizontalpodautoscalers");
    int r = ck__ctl_recorder(&c->sink, &c->client, "horizontal-pod-autoscaler", clock,
                             synchronous_events, &c->recorder, reterr);
    if (r == 0)
        r = ck__ctl_init(&c->ctl, "horizontal-pod-autoscaler", sync_hpa, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_hpa_controller_new(struct ck_rest *client, struct ck_informer_factory *factory,
                          const struct ck_hpa_options *options, struct ck_hpa_controller **ret,
                          struct ck_err *reterr)
{
    struct ck_hpa_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, client);
    ck_hpa_sources_init_rest(&c->sources, client);
    int r = init_common(c, &rest, NULL, false, options, reterr);
    struct ck_event_handler h = {hpa_add, hpa_update, hpa_delete, c};
    if (r == 0)
        r = ck__ctl_watch(factory, c->hpas_res, &h, &c->infs[c->n_infs++], &c->hpas, reterr);
    /* pods: only read from the cache, no handler */
    struct ck_informer *pods =
        r == 0 ? ck_informer_factory_for(factory, ck_controller_resource("", "v1", "pods")) : NULL;
    if (r == 0 && !pods)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0) {
        ck_lister_init(&c->pods, ck_informer_indexer(pods));
        c->infs[c->n_infs++] = pods;
    }
    if (r < 0) {
        ck_hpa_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_hpa_controller_new_with(const struct ck_hpa_controller_deps *deps,
                               struct ck_hpa_controller **ret, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->sources || !deps->hpas || !deps->pods)
        return ck_err_set(reterr, CK_EINVAL,
                          "horizontal-pod-autoscaler: a client, sources and listers of "
                          "autoscalers and pods are needed");
    struct ck_hpa_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->sources = *deps->sources;
    c->hpas = *deps->hpas;
    c->pods = *deps->pods;
    c->now = deps->now;
    c->now_arg = deps->now_arg;
    int r = init_common(c, deps->client, deps->clock, !deps->async_events, &deps->options, reterr);
    if (r < 0) {
        ck_hpa_controller_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int ck_hpa_controller_sync(struct ck_hpa_controller *c, const char *key, struct ck_err *reterr)
{
    return sync_key(c, key, reterr);
}

struct ck_wq *ck_hpa_controller_queue(struct ck_hpa_controller *c)
{
    return c->queue;
}

int ck_hpa_controller_run(struct ck_hpa_controller *c, int workers, struct ck_err *reterr)
{
    return ck__ctl_run(&c->ctl, c->infs, c->n_infs, workers, &c->runner, reterr);
}

struct ck_hpa_controller *ck_hpa_controller_free(struct ck_hpa_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    ck_event_recorder_free(c->recorder);
    while (c->histories) {
        struct history *h = c->histories;
        c->histories = h->next;
        history_free(h);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
}
