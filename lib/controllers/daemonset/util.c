/*
 * util.c - the DaemonSet controller's pure helpers (kubernetes pkg/controller/daemon/
 * util/daemonset_util.go, and NodeShouldRunDaemonPod of daemon_controller.go).
 *
 * A node should run a daemon pod when the template's nodeName (if any) is the node, the
 * node matches the template's nodeSelector and required node affinity, and the pod,
 * with the tolerations every daemon pod gets, tolerates each NoSchedule and NoExecute
 * taint. A pod already there may continue when only NoSchedule taints are untolerated.
 * The selector, affinity and toleration rules are the ones the scheduler's filters use
 * (../scheduling_helpers.c, component-helpers' scheduling/corev1), so the controller and
 * the scheduler never disagree on a node.
 *
 * The failed-pod back-off is client-go's flowcontrol.Backoff without jitter: per key,
 * 1 s doubling to 15 min, forgotten after twice the maximum without a failure.
 *
 * Threading: everything is pure except the back-off, which takes its lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../deployment/deployment.h"
#include "../scheduling_helpers.h"
#include "ckube/internal/util.h"
#include "internal.h"

/* ---- tolerations ------------------------------------------------------------------- */

static bool str_same(const json_t *a, const json_t *b)
{
    const char *x = json_string_value(a), *y = json_string_value(b);
    return strcmp(x ? x : "", y ? y : "") == 0;
}

/* v1 Toleration.MatchToleration: same key, operator, value and effect. */
static bool same_toleration(const json_t *a, const json_t *b)
{
    static const char *const fields[] = {"key", "operator", "value", "effect"};
    for (size_t i = 0; i < 4; i++)
        if (!str_same(json_object_get(a, fields[i]), json_object_get(b, fields[i])))
            return false;
    return true;
}

/* AddOrUpdateTolerationInPodSpec. */
static int add_or_update_toleration(json_t *spec, const char *key, const char *effect)
{
    json_t *list = json_object_get(spec, "tolerations");
    if (!json_is_array(list)) {
        list = json_array();
        if (!list || json_object_set_new(spec, "tolerations", list) < 0)
            return CK_ENOMEM;
    }
    json_t *t = json_pack("{s:s, s:s, s:s}", "key", key, "operator", "Exists", "effect", effect);
    if (!t)
        return CK_ENOMEM;
    size_t i;
    json_t *have;
    bool found = false;
    json_array_foreach(list, i, have)
    {
        if (!same_toleration(have, t))
            continue;
        found = true;
        if (!json_equal(have, t) && json_array_set(list, i, t) < 0) {
            json_decref(t);
            return CK_ENOMEM;
        }
    }
    int r = found ? 0 : json_array_append(list, t) < 0 ? CK_ENOMEM : 0;
    json_decref(t);
    return r;
}

int ck_ds_add_daemon_tolerations(json_t *spec)
{
    static const struct {
        const char *key, *effect;
    } always[] = {
        {"node.kubernetes.io/not-ready", "NoExecute"},
        {"node.kubernetes.io/unreachable", "NoExecute"},
        {"node.kubernetes.io/disk-pressure", "NoSchedule"},
        {"node.kubernetes.io/memory-pressure", "NoSchedule"},
        {"node.kubernetes.io/pid-pressure", "NoSchedule"},
        {"node.kubernetes.io/unschedulable", "NoSchedule"},
    };
    for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
        if (add_or_update_toleration(spec, always[i].key, always[i].effect) < 0)
            return CK_ENOMEM;
    if (json_is_true(json_object_get(spec, "hostNetwork")) &&
        add_or_update_toleration(spec, "node.kubernetes.io/network-unavailable", "NoSchedule") < 0)
        return CK_ENOMEM;
    return 0;
}

/* ---- the node predicate ------------------------------------------------------------ */

void ck_ds_node_should_run(const json_t *node, const json_t *ds, bool *ret_should_run,
                           bool *ret_should_continue)
{
    *ret_should_run = *ret_should_continue = false;
    const char *node_name = json_string_value(json_object_get(ck__ds_meta(node), "name"));
    const json_t *tmpl_spec =
        json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec");
    const char *want = json_string_value(json_object_get(tmpl_spec, "nodeName"));
    if (!node_name || (want && *want && strcmp(want, node_name) != 0))
        return;
    /* NewPod: the template's spec with the daemon tolerations */
    json_t *spec = tmpl_spec ? ck__json_copy(tmpl_spec) : json_object();
    json_t *pod = spec ? json_pack("{s:o}", "spec", spec) : NULL;
    if (!pod || ck_ds_add_daemon_tolerations(spec) < 0) {
        json_decref(pod);
        return;
    }
    bool fits_affinity = ck__required_node_affinity_matches(pod, node);
    const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    const json_t *tolerations = json_object_get(spec, "tolerations");
    bool fits_taints = !ck__find_untolerated_taint(taints, tolerations,
                                                   CK__TAINT_NO_SCHEDULE | CK__TAINT_NO_EXECUTE);
    bool tolerates_no_execute =
        !ck__find_untolerated_taint(taints, tolerations, CK__TAINT_NO_EXECUTE);
    json_decref(pod);
    if (!fits_affinity)
        return;
    *ret_should_run = fits_taints;
    *ret_should_continue = tolerates_no_execute;
}

/* ---- pods -------------------------------------------------------------------------- */

const char *ck__ds_target_node(const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *name = json_string_value(json_object_get(spec, "nodeName"));
    if (name && *name)
        return name;
    const json_t *terms = json_object_get(
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    size_t i, j;
    const json_t *term, *req;
    json_array_foreach(terms, i, term)
    {
        json_array_foreach(json_object_get(term, "matchFields"), j, req)
        {
            const char *key = json_string_value(json_object_get(req, "key"));
            const char *op = json_string_value(json_object_get(req, "operator"));
            if (!key || !op || strcmp(key, "metadata.name") != 0 || strcmp(op, "In") != 0)
                continue;
            const json_t *values = json_object_get(req, "values");
            return json_array_size(values) == 1 ? json_string_value(json_array_get(values, 0))
                                                : NULL;
        }
    }
    return NULL;
}

bool ck__ds_template_generation(const json_t *ds, long long *ret)
{
    const char *s = json_string_value(json_object_get(
        json_object_get(ck__ds_meta(ds), "annotations"), CK_DS_TEMPLATE_GENERATION_ANNOTATION));
    char *end = NULL;
    if (!s || !*s)
        return false;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return false;
    *ret = v;
    return true;
}

static const char *pod_label(const json_t *pod, const char *key)
{
    return json_string_value(json_object_get(json_object_get(ck__ds_meta(pod), "labels"), key));
}

bool ck__ds_pod_updated(const json_t *pod, const char *hash, const json_t *ds)
{
    long long generation;
    char want[32];
    const char *have = pod_label(pod, CK_DS_TEMPLATE_GENERATION_LABEL);
    if (ck__ds_template_generation(ds, &generation)) {
        snprintf(want, sizeof(want), "%lld", generation);
        if (have && strcmp(have, want) == 0)
            return true;
    }
    const char *pod_hash = pod_label(pod, CK__DS_HASH_LABEL);
    return hash && *hash && pod_hash && strcmp(pod_hash, hash) == 0;
}

json_t *ck__ds_pod_template(const json_t *ds, const char *hash)
{
    const json_t *tmpl = json_object_get(json_object_get(ds, "spec"), "template");
    json_t *copy = tmpl ? ck__json_copy(tmpl) : json_object();
    if (!copy)
        return NULL;
    json_t *spec = json_object_get(copy, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(copy, "spec", spec);
    }
    json_t *meta = json_object_get(copy, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(copy, "metadata", meta);
    }
    json_t *labels = json_object_get(meta, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(meta, "labels", labels);
    }
    if (!spec || !labels || ck_ds_add_daemon_tolerations(spec) < 0) {
        json_decref(copy);
        return NULL;
    }
    long long generation;
    char buf[32];
    if (ck__ds_template_generation(ds, &generation)) {
        snprintf(buf, sizeof(buf), "%lld", generation);
        json_object_set_new(labels, CK_DS_TEMPLATE_GENERATION_LABEL, json_string(buf));
    }
    if (hash && *hash)
        json_object_set_new(labels, CK__DS_HASH_LABEL, json_string(hash));
    return copy;
}

int ck__ds_set_node_affinity(json_t *spec, const char *node)
{
    json_t *terms = json_pack("[{s:[{s:s, s:s, s:[s]}]}]", "matchFields", "key", "metadata.name",
                              "operator", "In", "values", node);
    if (!terms)
        return CK_ENOMEM;
    json_t *affinity = json_object_get(spec, "affinity");
    if (!json_is_object(affinity)) {
        affinity = json_object();
        json_object_set_new(spec, "affinity", affinity);
    }
    json_t *node_affinity = affinity ? json_object_get(affinity, "nodeAffinity") : NULL;
    if (affinity && !json_is_object(node_affinity)) {
        node_affinity = json_object();
        json_object_set_new(affinity, "nodeAffinity", node_affinity);
    }
    json_t *required =
        node_affinity
            ? json_object_get(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
            : NULL;
    if (node_affinity && !json_is_object(required)) {
        required = json_object();
        json_object_set_new(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution",
                            required);
    }
    /* the node selector's terms are replaced, as Kubernetes does */
    if (!required || json_object_set_new(required, "nodeSelectorTerms", terms) < 0)
        return CK_ENOMEM;
    return 0;
}

bool ck__ds_pod_available(const json_t *pod, long long min_ready, int64_t now)
{
    const char *since = NULL;
    if (!ck_pod_is_ready(pod, &since))
        return false;
    if (min_ready <= 0)
        return true;
    int64_t sec;
    long usec = 0;
    if (!since || ck__time_parse(since, &sec, &usec) < 0)
        return false;
    int64_t t = sec * CK_SEC + (int64_t)usec * 1000;
    return t + min_ready * CK_SEC < now;
}

static int64_t created_ns(const json_t *obj)
{
    int64_t sec;
    long usec = 0;
    const char *s = json_string_value(json_object_get(ck__ds_meta(obj), "creationTimestamp"));
    if (!s || ck__time_parse(s, &sec, &usec) < 0)
        return 0;
    return sec * CK_SEC + (int64_t)usec * 1000;
}

static bool pod_before(const json_t *a, const json_t *b)
{
    const char *na = json_string_value(json_object_get(json_object_get(a, "spec"), "nodeName"));
    const char *nb = json_string_value(json_object_get(json_object_get(b, "spec"), "nodeName"));
    bool sa = na && *na, sb = nb && *nb;
    if (sa != sb)
        return sa;
    int64_t ta = created_ns(a), tb = created_ns(b);
    if (ta != tb)
        return ta < tb;
    const char *xa = json_string_value(json_object_get(ck__ds_meta(a), "name"));
    const char *xb = json_string_value(json_object_get(ck__ds_meta(b), "name"));
    return strcmp(xa ? xa : "", xb ? xb : "") < 0;
}

void ck__ds_sort_pods(const json_t **pods, size_t n)
{
    for (size_t i = 1; i < n; i++) /* insertion sort: a node holds one or two pods */
        for (size_t j = i; j > 0 && pod_before(pods[j], pods[j - 1]); j--) {
            const json_t *t = pods[j];
            pods[j] = pods[j - 1];
            pods[j - 1] = t;
        }
}

long long ck__ds_min_ready(const json_t *ds)
{
    return (long long)json_integer_value(
        json_object_get(json_object_get(ds, "spec"), "minReadySeconds"));
}

bool ck__ds_rolling(const json_t *ds)
{
    const char *type = json_string_value(
        json_object_get(json_object_get(json_object_get(ds, "spec"), "updateStrategy"), "type"));
    return !type || strcmp(type, "RollingUpdate") == 0;
}

int ck__ds_surge_unavailable(const json_t *ds, int desired, int *ret_surge, int *ret_unavailable)
{
    *ret_surge = *ret_unavailable = 0;
    if (!ck__ds_rolling(ds))
        return 0;
    const json_t *ru = json_object_get(
        json_object_get(json_object_get(ds, "spec"), "updateStrategy"), "rollingUpdate");
    if (!ru)
        return 0;
    int32_t surge = 0, unavailable = 0;
    if (ck__deploy_intstr_value(json_object_get(ru, "maxSurge"), desired, true, &surge) < 0 ||
        ck__deploy_intstr_value(json_object_get(ru, "maxUnavailable"), desired, true,
                                &unavailable) < 0)
        return CK_EINVAL;
    *ret_surge = surge;
    *ret_unavailable = unavailable;
    return 0;
}

/* ---- grouping pods by node ---------------------------------------------------------- */

struct node_pod {
    const char *node;
    const json_t *pod;
};

static int cmp_node_pod(const void *a, const void *b)
{
    return strcmp(((const struct node_pod *)a)->node, ((const struct node_pod *)b)->node);
}

static bool terminal(const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0);
}

int ck__ds_group_pods(const struct ck_obj_list *pods, struct ck__ds_pods_by_node *ret)
{
    memset(ret, 0, sizeof(*ret));
    struct node_pod *all = ck__calloc(pods->n ? pods->n : 1, sizeof(*all));
    ret->storage = ck__calloc(pods->n ? pods->n : 1, sizeof(*ret->storage));
    ret->groups = ck__calloc(pods->n ? pods->n : 1, sizeof(*ret->groups));
    if (!all || !ret->storage || !ret->groups) {
        free(all);
        ck__ds_pods_by_node_release(ret);
        return CK_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < pods->n; i++) {
        const json_t *pod = pods->items[i];
        if (terminal(pod) && json_object_get(ck__ds_meta(pod), "deletionTimestamp"))
            continue; /* the kubelet or the pod GC is done with it */
        const char *node = ck__ds_target_node(pod);
        if (!node) {
            CK_LOGV(2, "daemonset: no node name found for pod %s",
                    json_string_value(json_object_get(ck__ds_meta(pod), "name")));
            continue;
        }
        all[n++] = (struct node_pod){node, pod};
    }
    qsort(all, n, sizeof(*all), cmp_node_pod);
    for (size_t i = 0; i < n; i++) {
        ret->storage[i] = all[i].pod;
        if (ret->n == 0 || strcmp(ret->groups[ret->n - 1].node, all[i].node) != 0)
            ret->groups[ret->n++] = (struct ck__ds_node_pods){all[i].node, &ret->storage[i], 0};
        ret->groups[ret->n - 1].n++;
    }
    free(all);
    return 0;
}

void ck__ds_pods_by_node_release(struct ck__ds_pods_by_node *m)
{
    free(m->groups);
    free(m->storage);
    memset(m, 0, sizeof(*m));
}

static int cmp_group(const void *key, const void *g)
{
    return strcmp(key, ((const struct ck__ds_node_pods *)g)->node);
}

const struct ck__ds_node_pods *ck__ds_pods_on(const struct ck__ds_pods_by_node *m, const char *node)
{
    if (!m->n || !node)
        return NULL;
    return bsearch(node, m->groups, m->n, sizeof(*m->groups), cmp_group);
}

/* ---- the failed-pod back-off --------------------------------------------------------- */

struct backoff_entry {
    int64_t backoff;
    int64_t last_update;
};

static bool expired(const struct backoff_entry *e, int64_t now)
{
    return now - e->last_update > 2 * CK_DS_FAILED_POD_BACKOFF_MAX;
}

int ck__ds_backoff_init(struct ck__ds_backoff *b)
{
    memset(b, 0, sizeof(*b));
    return pthread_mutex_init(&b->lock, NULL) == 0 ? 0 : CK_ENOMEM;
}

void ck__ds_backoff_release(struct ck__ds_backoff *b)
{
    ck__strmap_release(&b->entries);
    pthread_mutex_destroy(&b->lock);
}

bool ck__ds_backoff_active(struct ck__ds_backoff *b, const char *key, int64_t now,
                           int64_t *ret_delay)
{
    pthread_mutex_lock(&b->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&b->entries, key);
    const struct backoff_entry *be = e ? e->value : NULL;
    bool active = be && !expired(be, now) && now - be->last_update < be->backoff;
    if (active)
        *ret_delay = be->backoff;
    pthread_mutex_unlock(&b->lock);
    return active;
}

void ck__ds_backoff_next(struct ck__ds_backoff *b, const char *key, int64_t now)
{
    pthread_mutex_lock(&b->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&b->entries, key);
    if (!e)
        e = ck__strmap_insert(&b->entries, key, sizeof(struct backoff_entry));
    if (e) {
        struct backoff_entry *be = e->value;
        if (be->backoff == 0 || expired(be, now))
            be->backoff = CK_DS_FAILED_POD_BACKOFF_INITIAL;
        else
            be->backoff = be->backoff * 2 > CK_DS_FAILED_POD_BACKOFF_MAX
                              ? CK_DS_FAILED_POD_BACKOFF_MAX
                              : be->backoff * 2;
        be->last_update = now;
    }
    pthread_mutex_unlock(&b->lock);
}

void ck__ds_backoff_gc(struct ck__ds_backoff *b, int64_t now)
{
    pthread_mutex_lock(&b->lock);
    size_t bucket = 0;
    struct ck__strmap_entry *e = ck__strmap_next(&b->entries, NULL, &bucket);
    while (e) {
        struct ck__strmap_entry *next = ck__strmap_next(&b->entries, e, &bucket);
        if (expired(e->value, now))
            ck__strmap_remove_entry(&b->entries, e);
        e = next;
    }
    pthread_mutex_unlock(&b->lock);
}

void ck__ds_names_push(struct ck__ds_names *a, const char *s)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        const char **v = realloc(a->v, cap * sizeof(*v));
        if (!v) {
            a->nomem = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
}

int ck__ds_claim(struct ck_ds_controller *c, const json_t *ds, const struct ck_label_selector *sel,
                 struct ck_lister *lister, const struct ck_resource *child_res,
                 struct ck_obj_list *ret_claimed, struct ck_err *reterr)
{
    const char *ns = json_string_value(json_object_get(ck__ds_meta(ds), "namespace"));
    struct ck_obj_list all = {0};
    int r = ck_lister_list(lister, ns, NULL, &all, reterr);
    if (r == 0) {
        struct ck_ref_owner owner = {
            .owner = ds,
            .api_version = CK__DS_API_VERSION,
            .kind = CK__DS_KIND,
            .selector = sel,
            .client = &c->client,
            .owner_res = c->sets_res,
            .child_res = child_res,
        };
        r = ck_claim_objects(&owner, all.items, all.n, ret_claimed, reterr);
    }
    ck_obj_list_release(&all);
    return r;
}
