/*
 * replica_calculator.c - the replicas a resource metric asks for (kubernetes
 * pkg/controller/podautoscaler/replica_calculator.go: GetResourceReplicas,
 * GetRawResourceReplicas through calcPlainMetricReplicas, groupPods,
 * calculatePodRequests; and metrics/utilization.go's ratios).
 *
 * The pods are sorted into four groups (groupPods): ignored (being deleted, or
 * Failed), unready (Pending; for cpu also not Ready yet, or Ready so recently that no
 * whole metric window has passed since, within the CPU initialization period, or
 * never ready within the initial readiness delay), missing (no metric) and ready. The
 * ratio of the ready pods' usage to the target decides: within the tolerance nothing
 * changes; without unready or missing pods the ratio times the ready pods is the
 * answer; otherwise the missing pods count as using their whole request (the target,
 * for raw values; at least 100% for utilization) on a scale down and nothing on a
 * scale up, the unready as nothing on a scale up, and the ratio is computed again: if
 * it is within the tolerance or points the other way, or the pods counted would turn
 * the direction round, nothing changes. A raw value with resource "" is
 * calcPlainMetricReplicas for a Pods metric (GetMetricReplicas).
 *
 * Threading: pure; everything it reads is borrowed from the caller.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/podautoscaler.h"

enum group { READY, UNREADY, MISSING, IGNORED };

struct pod_entry {
    const char *name;
    enum group group;
    bool has_metric;
    int64_t metric;  /* milli */
    int64_t request; /* milli; utilization only */
    int64_t ts, window;
};

static int64_t time_ns(const char *s)
{
    int64_t sec = 0;
    long usec = 0;
    if (ck__time_parse(s, &sec, &usec) < 0)
        return -1;
    return sec * CK_SEC + (int64_t)usec * 1000;
}

/* The pod's Ready condition, or NULL. */
static const json_t *ready_condition(const json_t *pod)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "Ready") == 0)
            return c;
    }
    return NULL;
}

/* groupPods' decision for one pod with a metric, for cpu: unready or not. */
static bool cpu_unready(const struct ck_hpa_calc *calc, const json_t *pod,
                        const struct pod_entry *e)
{
    const json_t *cond = ready_condition(pod);
    int64_t start =
        time_ns(json_string_value(json_object_get(json_object_get(pod, "status"), "startTime")));
    if (!cond || start < 0)
        return true;
    const char *status = json_string_value(json_object_get(cond, "status"));
    bool is_false = status && strcmp(status, "False") == 0;
    int64_t transition = time_ns(json_string_value(json_object_get(cond, "lastTransitionTime")));
    if (transition < 0)
        transition = 0;
    if (start + calc->cpu_initialization_period > calc->now_ns)
        /* still initializing: skip an unready pod or a sample from before it was ready */
        return is_false || e->ts < transition + e->window;
    /* an unready pod that has never been ready */
    return is_false && start + calc->initial_readiness_delay > transition;
}

static bool is_name(const json_t *c, const char *container)
{
    const char *n = json_string_value(json_object_get(c, "name"));
    return !container || (n && strcmp(n, container) == 0);
}

/* calculatePodRequests for one pod: the sum of its containers' (and sidecars') requests. */
static int pod_request(const json_t *pod, const char *resource, const char *container, int64_t *ret,
                       char *err, size_t err_size)
{
    const json_t *spec = json_object_get(pod, "spec");
    int64_t sum = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, pass ? "initContainers" : "containers"), i, c)
        {
            const char *restart = json_string_value(json_object_get(c, "restartPolicy"));
            if (pass && !(restart && strcmp(restart, "Always") == 0))
                continue; /* only restartable init containers (sidecars) run beside */
            if (!is_name(c, container))
                continue;
            const json_t *q = json_object_get(
                json_object_get(json_object_get(c, "resources"), "requests"), resource);
            int64_t milli = 0;
            if (!json_is_string(q) || ck_quantity_milli(json_string_value(q), &milli) < 0) {
                snprintf(err, err_size, "missing request for %s in container %s of Pod %s",
                         resource, json_string_value(json_object_get(c, "name")),
                         ck__meta_str(pod, "name"));
                return CK_EINVAL;
            }
            sum += milli;
        }
    }
    *ret = sum;
    return 0;
}

/* GetResourceUtilizationRatio over the pods with a metric: 0 or CK_EINVAL. */
static int utilization_ratio(const struct pod_entry *e, size_t n, int64_t target, double *ratio,
                             int32_t *utilization, int64_t *raw)
{
    int64_t metrics = 0, requests = 0, entries = 0;
    for (size_t i = 0; i < n; i++) {
        if (!e[i].has_metric)
            continue;
        metrics += e[i].metric;
        requests += e[i].request;
        entries++;
    }
    if (requests == 0)
        return CK_EINVAL;
    *utilization = (int32_t)(metrics * 100 / requests);
    *ratio = (double)*utilization / (double)target;
    *raw = metrics / entries;
    return 0;
}

/* GetMetricUsageRatio: the average per pod with a metric against target. */
static void usage_ratio(const struct pod_entry *e, size_t n, int64_t target, double *ratio,
                        int64_t *average, size_t *count)
{
    int64_t sum = 0;
    size_t entries = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].has_metric) {
            sum += e[i].metric;
            entries++;
        }
    *average = entries ? sum / (int64_t)entries : 0;
    *ratio = (double)*average / (double)target;
    *count = entries;
}

static size_t with_metric(const struct pod_entry *e, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += e[i].has_metric;
    return k;
}

int ck_hpa_resource_replicas(const struct ck_hpa_calc *calc, int32_t current, int64_t target,
                             bool raw, const char *resource, const char *container,
                             const json_t *const *pods, size_t n_pods,
                             const struct ck_hpa_pod_metric *metrics, size_t n_metrics,
                             struct ck_hpa_proposal *ret, char *err, size_t err_size)
{
    if (n_pods == 0) {
        snprintf(err, err_size, "no pods returned by selector while calculating replica count");
        return CK_EINVAL;
    }
    struct pod_entry *e = ck__calloc(n_pods, sizeof(*e));
    if (!e)
        return CK_ENOMEM;
    int r = 0;
    size_t ready = 0, unready = 0, missing = 0;
    int64_t timestamp = 0;
    bool cpu = strcmp(resource, "cpu") == 0;
    for (size_t i = 0; i < n_pods; i++) {
        const json_t *pod = pods[i];
        e[i].name = ck__meta_str(pod, "name");
        for (size_t m = 0; e[i].name && m < n_metrics; m++)
            if (strcmp(metrics[m].pod, e[i].name) == 0) {
                e[i].has_metric = true;
                e[i].metric = metrics[m].value;
                e[i].ts = metrics[m].timestamp_ns;
                e[i].window = metrics[m].window_ns;
                if (!timestamp)
                    timestamp = metrics[m].timestamp_ns;
            }
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        if (ck__meta_str(pod, "deletionTimestamp") || (phase && strcmp(phase, "Failed") == 0))
            e[i].group = IGNORED;
        else if (phase && strcmp(phase, "Pending") == 0)
            e[i].group = UNREADY;
        else if (!e[i].has_metric)
            e[i].group = MISSING;
        else if (cpu && cpu_unready(calc, pod, &e[i]))
            e[i].group = UNREADY;
        else
            e[i].group = READY;
        ready += e[i].group == READY;
        unready += e[i].group == UNREADY;
        missing += e[i].group == MISSING;
        if (e[i].group == IGNORED || e[i].group == UNREADY)
            e[i].has_metric = false; /* removeMetricsForPods */
        if (!raw && r == 0)
            r = pod_request(pod, resource, container, &e[i].request, err, err_size);
    }
    if (r < 0)
        goto out;
    if (with_metric(e, n_pods) == 0) {
        snprintf(err, err_size,
                 "did not receive metrics for targeted pods (pods might be unready)");
        r = CK_EINVAL;
        goto out;
    }
    double ratio = 0;
    int32_t utilization = 0;
    int64_t average = 0;
    size_t count = 0;
    if (raw) {
        usage_ratio(e, n_pods, target, &ratio, &average, &count);
    } else if (utilization_ratio(e, n_pods, target, &ratio, &utilization, &average) < 0) {
        snprintf(err, err_size, "no metrics returned matched known pods");
        r = CK_EINVAL;
        goto out;
    }
    *ret = (struct ck_hpa_proposal){current, utilization, average, timestamp};
    bool up_with_unready = unready > 0 && ratio > 1.0;
    if (!up_with_unready && missing == 0) {
        if (fabs(1.0 - ratio) > calc->tolerance)
            ret->replicas = (int32_t)ceil(ratio * (double)ready);
        goto out;
    }
    for (size_t i = 0; i < n_pods; i++) {
        if (e[i].group == MISSING && ratio < 1.0) {
            e[i].has_metric = true; /* a scale down: as if it used its whole request */
            int64_t fallback = target > 100 ? target : 100;
            e[i].metric = raw ? target : e[i].request * fallback / 100;
        } else if (e[i].group == MISSING && ratio > 1.0) {
            e[i].has_metric = true; /* a scale up: as if it used nothing */
            e[i].metric = 0;
        } else if (e[i].group == UNREADY && up_with_unready) {
            e[i].has_metric = true;
            e[i].metric = 0;
        }
    }
    double again = 0;
    int32_t u2 = 0;
    int64_t a2 = 0;
    if (raw)
        usage_ratio(e, n_pods, target, &again, &a2, &count);
    else
        utilization_ratio(e, n_pods, target, &again, &u2, &a2);
    count = with_metric(e, n_pods);
    if (fabs(1.0 - again) <= calc->tolerance || (ratio < 1.0 && again > 1.0) ||
        (ratio > 1.0 && again < 1.0))
        goto out; /* too small a change, or one that turns the direction round */
    int32_t proposed = (int32_t)ceil(again * (double)count);
    if ((again < 1.0 && proposed > current) || (again > 1.0 && proposed < current))
        goto out; /* the pods counted would turn the direction round */
    ret->replicas = proposed;
out:
    free(e);
    return r;
}
