/*
 * quota.c - resource quota accounting: the evaluators of pods, services, claims and
 * object counts, and resource-list arithmetic (include/ckube/quota.h).
 *
 * Mirrors Kubernetes 1.32's pkg/quota/v1/evaluator/core (pods.go: PodUsageFunc,
 * podComputeUsageHelper, podMatchesScopeFunc, Constraints; services.go;
 * persistent_volume_claims.go; registry.go's legacy object-count names) and
 * k8s.io/apiserver pkg/quota/v1 (generic.Matches, the object-count evaluator,
 * resources.go's Add). A pod's requests and limits are resourcehelper.PodRequests and
 * PodLimits: the sum of its containers and sidecars, or the largest init container
 * with the sidecars started before it, if larger, plus spec.overhead (for limits only
 * where a limit is set). Quantities are added by milli value.
 *
 * Threading: pure.
 *
 * Tested by tests/api/test_quota.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/quota.h"
#include "internal.h"

/* ---- quantities and resource lists --------------------------------------------------- */

const char *ck_quantity_format(int64_t milli, bool binary, char *buf, size_t size)
{
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    static const char *const dec[] = {"", "k", "M", "G", "T", "P", "E"};
    if (milli % 1000 != 0) {
        snprintf(buf, size, "%lldm", (long long)milli);
        return buf;
    }
    long long v = (long long)(milli / 1000);
    if (binary && (v < 1024 && v > -1024))
        binary = false;
    int unit = binary ? 1024 : 1000, e = 0;
    while (v != 0 && e < 6 && v % unit == 0)
        v /= unit, e++;
    snprintf(buf, size, "%lld%s", v, binary ? bin[e] : dec[e]);
    return buf;
}

bool ck_quantity_is_binary(const char *text)
{
    size_t n = text ? strlen(text) : 0;
    return n >= 2 && text[n - 1] == 'i';
}

/* Sets list[name] to milli in the format of like (a quantity's text, or NULL: decimal). */
static int set_milli(json_t *list, const char *name, int64_t milli, const char *like)
{
    char buf[48];
    ck_quantity_format(milli, ck_quantity_is_binary(like), buf, sizeof(buf));
    return json_object_set_new(list, name, json_string(buf));
}

/* A quantity's text: a string, or a JSON number (which the API accepts too). */
static const char *quantity_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, size, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        snprintf(buf, size, "%.17g", json_real_value(v));
        return buf;
    }
    return NULL;
}

/* The milli value of v: 0 when absent; -1 with ret unset when not a quantity. */
static int milli_of(const json_t *v, int64_t *ret)
{
    char buf[48];
    const char *s = quantity_text(v, buf, sizeof(buf));
    *ret = 0;
    if (!v)
        return 0;
    return s && ck_quantity_milli(s, ret) == 0 ? 0 : -1;
}

static int64_t milli_or_zero(const json_t *v)
{
    int64_t m = 0;
    return milli_of(v, &m) == 0 ? m : 0;
}

int ck_quota_add(json_t *into, const json_t *delta)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)delta, name, v)
    {
        int64_t d = 0;
        if (milli_of(v, &d) < 0)
            return -1;
        const json_t *old = json_object_get(into, name);
        /* Quantity.Add: a zero takes the format of what is added to it */
        const char *like =
            old && milli_or_zero(old) != 0 ? json_string_value(old) : json_string_value(v);
        if (set_milli(into, name, milli_or_zero(old) + d, like) < 0)
            return -1;
    }
    return 0;
}

/* maxResourceList: into[k] = max(into[k], other[k]) for every k of other. */
static int max_into(json_t *into, const json_t *other)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)other, name, v)
    {
        const json_t *old = json_object_get(into, name);
        if ((!old || milli_or_zero(v) > milli_or_zero(old)) && json_object_set(into, name, v) < 0)
            return -1;
    }
    return 0;
}

/* ---- resources each evaluator counts ------------------------------------------------- */

static bool in(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* helper.IsNativeResource: no domain, or a kubernetes.io one. */
static bool is_native(const char *name)
{
    const char *slash = strchr(name, '/');
    if (!slash)
        return true;
    size_t n = (size_t)(slash - name);
    return (n >= 13 && strncmp(slash - 13, "kubernetes.io", 13) == 0 &&
            (n == 13 || slash[-14] == '.'));
}

/* helper.IsExtendedResourceName: a domain-qualified name, not native, not requests.*. */
static bool is_extended(const char *name)
{
    return !is_native(name) && !has_prefix(name, "requests.");
}

static const char *const pod_resources[] = {"count/pods",
                                            "cpu",
                                            "memory",
                                            "ephemeral-storage",
                                            "requests.cpu",
                                            "requests.memory",
                                            "requests.ephemeral-storage",
                                            "limits.cpu",
                                            "limits.memory",
                                            "limits.ephemeral-storage",
                                            "pods",
                                            NULL};
static const char *const service_resources[] = {
    "count/services", "services", "services.loadbalancers", "services.nodeports", NULL};
static const char *const pvc_resources[] = {"count/persistentvolumeclaims",
                                            "persistentvolumeclaims", "requests.storage", NULL};
#define STORAGE_CLASS_SUFFIX ".storageclass.storage.k8s.io/"

static bool is_core(const char *group, const char *resource, const char *want)
{
    return group && !*group && strcmp(resource, want) == 0;
}

bool ck_quota_handles(const char *group, const char *resource, bool update)
{
    /* kube-apiserver's ignored resources: never counted */
    static const char *const ignored_core[] = {"events", NULL};
    static const char *const ignored_authz[] = {"subjectaccessreviews", "selfsubjectaccessreviews",
                                                "localsubjectaccessreviews",
                                                "selfsubjectrulesreviews", NULL};
    if ((!*group && in(resource, ignored_core)) ||
        (strcmp(group, "events.k8s.io") == 0 && strcmp(resource, "events") == 0) ||
        (strcmp(group, "authorization.k8s.io") == 0 && in(resource, ignored_authz)) ||
        (strcmp(group, "authentication.k8s.io") == 0))
        return false;
    if (is_core(group, resource, "services") || is_core(group, resource, "persistentvolumeclaims"))
        return true;
    return !update;
}

/* The object-count resource name of group's resource: count/pods, count/deployments.apps. */
static void count_name(const char *group, const char *resource, char *buf, size_t size)
{
    if (*group)
        snprintf(buf, size, "count/%s.%s", resource, group);
    else
        snprintf(buf, size, "count/%s", resource);
}

/* The legacy name registry.go gives some core object counts, or NULL. */
static const char *legacy_count_name(const char *group, const char *resource)
{
    static const char *const legacy[] = {"configmaps", "resourcequotas", "replicationcontrollers",
                                         "secrets", NULL};
    return !*group && in(resource, legacy) ? resource : NULL;
}

bool ck_quota_matching_resource(const char *group, const char *resource, const char *name)
{
    if (is_core(group, resource, "pods"))
        return in(name, pod_resources) || has_prefix(name, "hugepages-") ||
               has_prefix(name, "requests.hugepages-") ||
               (has_prefix(name, "requests.") && is_extended(name + strlen("requests.")));
    if (is_core(group, resource, "services"))
        return in(name, service_resources);
    if (is_core(group, resource, "persistentvolumeclaims"))
        return in(name, pvc_resources) ||
               (strstr(name, STORAGE_CLASS_SUFFIX) &&
                (has_suffix(name, STORAGE_CLASS_SUFFIX "requests.storage") ||
                 has_suffix(name, STORAGE_CLASS_SUFFIX "persistentvolumeclaims")));
    char count[320];
    count_name(group, resource, count, sizeof(count));
    const char *legacy = legacy_count_name(group, resource);
    return strcmp(name, count) == 0 || (legacy && strcmp(name, legacy) == 0);
}

/* ---- pods ---------------------------------------------------------------------------- */

/* PodRequests / PodLimits (which: "requests" or "limits"), sidecars and overhead included. */
static json_t *pod_total(const json_t *spec, const char *which)
{
    json_t *total = json_object(), *sidecars = json_object(), *init = json_object();
    int failed = !total || !sidecars || !init;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c)
    {
        failed |= ck_quota_add(total, json_object_get(json_object_get(c, "resources"), which));
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        const json_t *list = json_object_get(json_object_get(c, "resources"), which);
        const char *restart = json_string_value(json_object_get(c, "restartPolicy"));
        json_t *this = json_object();
        failed |= !this;
        if (restart && strcmp(restart, "Always") == 0) {
            failed |= ck_quota_add(total, list) | ck_quota_add(sidecars, list);
            failed |= ck_quota_add(this, sidecars);
        } else {
            failed |= ck_quota_add(this, list) | ck_quota_add(this, sidecars);
        }
        failed |= max_into(init, this);
        json_decref(this);
    }
    failed |= max_into(total, init);
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(spec, "overhead"), name, v)
    {
        if (strcmp(which, "requests") == 0 || json_object_get(total, name)) {
            json_t *one = json_pack("{sO}", name, v);
            failed |= !one || ck_quota_add(total, one);
            json_decref(one);
        }
    }
    json_decref(sidecars);
    json_decref(init);
    if (failed)
        total = (json_decref(total), NULL);
    return total;
}

/* podComputeUsageHelper: what requests and limits use, pods=1 included. */
static int compute_usage(json_t *out, const json_t *requests, const json_t *limits)
{
    static const struct {
        const char *resource, *request_names[2], *limit_name;
    } map[] = {
        {"cpu", {"cpu", "requests.cpu"}, "limits.cpu"},
        {"memory", {"memory", "requests.memory"}, "limits.memory"},
        {"ephemeral-storage",
         {"ephemeral-storage", "requests.ephemeral-storage"},
         "limits.ephemeral-storage"},
    };
    int failed = json_object_set_new(out, "pods", json_string("1"));
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        json_t *r = json_object_get(requests, map[i].resource);
        json_t *l = json_object_get(limits, map[i].resource);
        if (r)
            failed |= json_object_set(out, map[i].request_names[0], r) |
                      json_object_set(out, map[i].request_names[1], r);
        if (l)
            failed |= json_object_set(out, map[i].limit_name, l);
    }
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)requests, name, v)
    {
        char prefixed[320];
        snprintf(prefixed, sizeof(prefixed), "requests.%s", name);
        if (has_prefix(name, "hugepages-"))
            failed |= json_object_set(out, name, v) | json_object_set(out, prefixed, v);
        if (is_extended(name))
            failed |= json_object_set(out, prefixed, v);
    }
    return failed ? -1 : 0;
}

/* QuotaV1Pod: a pod that has not terminated nor outlived its deletion grace period. */
static bool pod_charged(const json_t *pod, int64_t now)
{
    const char *phase = ck__str_at(pod, "status.phase");
    if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
        return false;
    const char *deletion = ck__str_at(pod, "metadata.deletionTimestamp");
    const json_t *grace = ck__json_path(pod, "metadata.deletionGracePeriodSeconds");
    int64_t t = 0;
    if (deletion && json_is_integer(grace) && ck__time_parse(deletion, &t, NULL) == 0 &&
        now > t + (int64_t)json_integer_value(grace))
        return false;
    return true;
}

static json_t *pod_usage(const json_t *pod, int64_t now)
{
    json_t *out = json_pack("{ss}", "count/pods", "1");
    if (!out || !pod_charged(pod, now))
        return out;
    const json_t *spec = json_object_get(pod, "spec");
    json_t *requests = pod_total(spec, "requests"), *limits = pod_total(spec, "limits");
    json_t *compute = json_object();
    if (!requests || !limits || !compute || compute_usage(compute, requests, limits) < 0 ||
        ck_quota_add(out, compute) < 0)
        out = (json_decref(out), NULL);
    json_decref(requests);
    json_decref(limits);
    json_decref(compute);
    return out;
}

/* qos.GetPodQOS(pod) == BestEffort: no container asks for or limits cpu or memory. */
static bool is_best_effort(const json_t *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    static const char *const kinds[] = {"requests", "limits"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            for (size_t k = 0; k < 2; k++) {
                const json_t *list = json_object_get(json_object_get(c, "resources"), kinds[k]);
                if (milli_or_zero(json_object_get(list, "cpu")) > 0 ||
                    milli_or_zero(json_object_get(list, "memory")) > 0)
                    return false;
            }
        }
    }
    return true;
}

static bool cross_namespace_terms(const json_t *terms, bool weighted)
{
    size_t i;
    const json_t *t;
    json_array_foreach(terms, i, t)
    {
        const json_t *term = weighted ? json_object_get(t, "podAffinityTerm") : t;
        if (json_array_size(json_object_get(term, "namespaces")) > 0 ||
            (json_object_get(term, "namespaceSelector") &&
             !json_is_null(json_object_get(term, "namespaceSelector"))))
            return true;
    }
    return false;
}

/* usesCrossNamespacePodAffinity */
static bool cross_namespace_affinity(const json_t *spec)
{
    static const char *const kinds[] = {"podAffinity", "podAntiAffinity"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *a = json_object_get(json_object_get(spec, "affinity"), kinds[k]);
        if (cross_namespace_terms(
                json_object_get(a, "requiredDuringSchedulingIgnoredDuringExecution"), false) ||
            cross_namespace_terms(
                json_object_get(a, "preferredDuringSchedulingIgnoredDuringExecution"), true))
            return true;
    }
    return false;
}

/* podMatchesScopeFunc for one requirement {scopeName, operator, values}. */
static bool pod_matches_scope(const json_t *req, const json_t *pod)
{
    const char *scope = json_string_value(json_object_get(req, "scopeName"));
    const char *op = json_string_value(json_object_get(req, "operator"));
    const json_t *spec = json_object_get(pod, "spec");
    if (!scope)
        return false;
    if (strcmp(scope, "Terminating") == 0 || strcmp(scope, "NotTerminating") == 0) {
        const json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
        bool terminating = json_is_integer(ads) && json_integer_value(ads) >= 0;
        return strcmp(scope, "Terminating") == 0 ? terminating : !terminating;
    }
    if (strcmp(scope, "BestEffort") == 0)
        return is_best_effort(spec);
    if (strcmp(scope, "NotBestEffort") == 0)
        return !is_best_effort(spec);
    if (strcmp(scope, "CrossNamespacePodAffinity") == 0)
        return cross_namespace_affinity(spec);
    if (strcmp(scope, "PriorityClass") != 0 || !op)
        return false;
    /* the selector PriorityClass <op> values over the labels {PriorityClass: name} */
    const char *pc = json_string_value(json_object_get(spec, "priorityClassName"));
    bool has = pc && *pc;
    if (strcmp(op, "Exists") == 0)
        return has;
    if (strcmp(op, "DoesNotExist") == 0)
        return !has;
    bool listed = false;
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(req, "values"), i, v)
    {
        listed |= has && json_is_string(v) && strcmp(json_string_value(v), pc) == 0;
    }
    if (strcmp(op, "In") == 0)
        return listed;
    if (strcmp(op, "NotIn") == 0)
        return !listed;
    return false;
}

/* ---- services and claims ------------------------------------------------------------- */

static json_t *service_usage(const json_t *svc)
{
    json_t *out = json_pack("{ssss}", "services", "1", "count/services", "1");
    if (!out)
        return NULL;
    const json_t *spec = json_object_get(svc, "spec");
    const char *type = json_string_value(json_object_get(spec, "type"));
    const json_t *ports = json_object_get(spec, "ports");
    char n[24];
    snprintf(n, sizeof(n), "%zu", json_array_size(ports));
    int failed = 0;
    if (type && strcmp(type, "NodePort") == 0)
        failed |= json_object_set_new(out, "services.nodeports", json_string(n));
    if (type && strcmp(type, "LoadBalancer") == 0) {
        const json_t *alloc = json_object_get(spec, "allocateLoadBalancerNodePorts");
        if (json_is_false(alloc)) { /* only the ports that name a node port */
            size_t i, with = 0;
            const json_t *p;
            json_array_foreach(ports, i, p)
            {
                with += json_integer_value(json_object_get(p, "nodePort")) != 0;
            }
            snprintf(n, sizeof(n), "%zu", with);
        }
        failed |= json_object_set_new(out, "services.nodeports", json_string(n)) |
                  json_object_set_new(out, "services.loadbalancers", json_string("1"));
    }
    if (failed)
        out = (json_decref(out), NULL);
    return out;
}

static json_t *claim_usage(const json_t *pvc)
{
    json_t *out =
        json_pack("{ssss}", "persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1");
    if (!out)
        return NULL;
    /* GetPersistentVolumeClaimClass: the beta annotation first */
    const char *cls = json_string_value(json_object_get(ck__json_path(pvc, "metadata.annotations"),
                                                        "volume.beta.kubernetes.io/storage-class"));
    if (!cls)
        cls = ck__str_at(pvc, "spec.storageClassName");
    const json_t *storage = ck__json_path(pvc, "spec.resources.requests.storage");
    char name[320];
    int failed = 0;
    if (cls && *cls) {
        snprintf(name, sizeof(name), "%s" STORAGE_CLASS_SUFFIX "persistentvolumeclaims", cls);
        failed |= json_object_set_new(out, name, json_string("1"));
    }
    if (json_is_string(storage)) {
        failed |= json_object_set(out, "requests.storage", (json_t *)storage);
        if (cls && *cls) {
            snprintf(name, sizeof(name), "%s" STORAGE_CLASS_SUFFIX "requests.storage", cls);
            failed |= json_object_set(out, name, (json_t *)storage);
        }
    }
    if (failed)
        out = (json_decref(out), NULL);
    return out;
}

json_t *ck_quota_usage(const char *group, const char *resource, const json_t *obj, int64_t now)
{
    if (is_core(group, resource, "pods"))
        return pod_usage(obj, now);
    if (is_core(group, resource, "services"))
        return service_usage(obj);
    if (is_core(group, resource, "persistentvolumeclaims"))
        return claim_usage(obj);
    char count[320];
    count_name(group, resource, count, sizeof(count));
    json_t *out = json_pack("{ss}", count, "1");
    const char *legacy = legacy_count_name(group, resource);
    if (out && legacy && json_object_set_new(out, legacy, json_string("1")) < 0)
        out = (json_decref(out), NULL);
    return out;
}

/* ---- matching ------------------------------------------------------------------------ */

/* Whether obj matches one scope requirement: pods by their evaluator, nothing else. */
static bool matches_scope(const json_t *req, const char *group, const char *resource,
                          const json_t *obj)
{
    return is_core(group, resource, "pods") && pod_matches_scope(req, obj);
}

json_t *ck_quota_scope_selectors(const json_t *quota)
{
    json_t *out = json_array();
    size_t i;
    const json_t *s;
    json_array_foreach(ck__json_path(quota, "spec.scopes"), i, s)
    {
        if (out && json_array_append_new(
                       out, json_pack("{sOss}", "scopeName", s, "operator", "Exists")) < 0)
            out = (json_decref(out), NULL);
    }
    json_array_foreach(ck__json_path(quota, "spec.scopeSelector.matchExpressions"), i, s)
    {
        if (out && json_array_append(out, (json_t *)s) < 0)
            out = (json_decref(out), NULL);
    }
    return out;
}

int ck_quota_matching_scopes(const char *group, const char *resource, const json_t *obj,
                             const json_t *selectors, json_t *out)
{
    size_t i;
    const json_t *s;
    json_array_foreach(selectors, i, s)
    {
        if (matches_scope(s, group, resource, obj) && json_array_append(out, (json_t *)s) < 0)
            return -1;
    }
    return 0;
}

bool ck_quota_matches(const json_t *quota, const char *group, const char *resource,
                      const json_t *obj)
{
    bool any = false;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)ck__json_path(quota, "status.hard"), name, v)
    {
        any = any || ck_quota_matching_resource(group, resource, name);
    }
    if (!any)
        return false;
    json_t *selectors = ck_quota_scope_selectors(quota);
    bool all = selectors != NULL;
    size_t i;
    const json_t *s;
    json_array_foreach(selectors, i, s)
    {
        all = all && matches_scope(s, group, resource, obj);
    }
    json_decref(selectors);
    return all;
}

/* ---- constraints --------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool ck_quota_constraints_fail(const char *group, const char *resource, const json_t *hard,
                               const json_t *obj, char *buf, size_t size)
{
    /* validationSet, in sorted order */
    static const char *const required[] = {"cpu",    "limits.cpu",   "limits.memory",
                                           "memory", "requests.cpu", "requests.memory"};
    if (!is_core(group, resource, "pods"))
        return false;
    const json_t *spec = json_object_get(obj, "spec");
    size_t used = 0;
    bool failed = false;
    buf[0] = '\0';
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++) {
        if (!json_object_get(hard, required[r]))
            continue;
        /* the containers (and init containers) whose usage lacks required[r], sorted */
        const char *names[256];
        size_t n = 0;
        static const char *const lists[] = {"containers", "initContainers"};
        for (size_t l = 0; l < 2; l++) {
            size_t i;
            const json_t *c;
            json_array_foreach(json_object_get(spec, lists[l]), i, c)
            {
                const json_t *res = json_object_get(c, "resources");
                json_t *u = json_object();
                bool lacks = !u ||
                             compute_usage(u, json_object_get(res, "requests"),
                                           json_object_get(res, "limits")) < 0 ||
                             !json_object_get(u, required[r]);
                json_decref(u);
                const char *cname = json_string_value(json_object_get(c, "name"));
                bool dup = false;
                for (size_t k = 0; k < n && cname; k++)
                    dup |= strcmp(names[k], cname) == 0;
                if (lacks && cname && !dup && n < 256)
                    names[n++] = cname;
            }
        }
        if (n == 0)
            continue;
        qsort(names, n, sizeof(names[0]), cmp_str);
        int w = snprintf(buf + used, size - used, "%s%s%s for: ", failed ? "; " : "must specify ",
                         required[r], "");
        used += w > 0 && (size_t)w < size - used ? (size_t)w : 0;
        for (size_t k = 0; k < n; k++) {
            w = snprintf(buf + used, size - used, "%s%s", k ? "," : "", names[k]);
            used += w > 0 && (size_t)w < size - used ? (size_t)w : 0;
        }
        failed = true;
    }
    return failed;
}
