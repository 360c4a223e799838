/*
 * endpointslice.c - the EndpointSlice controller: a Service's selected pods as
 * EndpointSlices (see ckube/endpointslice.h for what it keeps).
 *
 * Mirrors Kubernetes' pkg/controller/endpointslice (controller and
 * reconciler) and endpointslice's utils: a pod counts when it has an IP and
 * is not terminal (Succeeded, Failed); its endpoint is ready when the pod's
 * Ready condition is True and it is not terminating (always, with
 * publishNotReadyAddresses), serving when Ready, terminating when it has a
 * deletionTimestamp; a named targetPort resolves to the container port of that
 * name and protocol (a pod without it gets no endpoint for that port set).
 * Endpoints are grouped by their resolved ports; each group fills slices of at
 * most 100 endpoints. A service whose pods give no endpoint keeps one empty
 * slice, as Kubernetes' placeholder. Services without a selector, and
 * ExternalName services, are left alone.
 *
 * Reconciling: the desired slices are matched in order with the existing
 * slices managed for the service (sorted by name); a slice that differs is
 * updated, missing ones are created (generateName "<service>-"), extra ones
 * deleted. Kubernetes' reconciler packs endpoints into existing slices to
 * minimise churn; the slices reached hold the same endpoints
 * (docs/differences.md).
 *
 * Legacy Endpoints: the same sync keeps the v1 Endpoints named as the service
 * (Kubernetes runs a second controller, "endpoint", for it): one subset per
 * port set, ready addresses and notReadyAddresses sorted by IP, terminating
 * pods left out unless the service publishes not-ready addresses, the
 * service's labels (plus service.kubernetes.io/headless for a headless one);
 * a deleted service's Endpoints are deleted. They are read with a GET, not
 * from a cache.
 *
 * Threading: the runner runs one sync per key at a time; handlers run on the
 * informers' threads and only enqueue keys. The controller's state is
 * read-only after creation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/endpointslice.h"
#include "ckube/internal/util.h"

#define SERVICE_NAME_LABEL "kubernetes.io/service-name"
#define MANAGED_BY_LABEL   "endpointslice.kubernetes.io/managed-by"

struct ck_eps_controller {
    struct ck_ctl_client client;
    struct ck_lister services, pods, slices;
    const struct ck_resource *services_res, *pods_res, *slices_res, *endpoints_res;
    struct ck_informer *infs[3]; /* NULL when made from given listers */
    struct ck_controller ctl;
    struct ck_wq *queue;
    struct ck_runner *runner;
};

/* ---- what a pod contributes ---------------------------------------------------------- */

static const char *meta_str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
}

static bool pod_ready(const json_t *pod)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && strcmp(type, "Ready") == 0)
            return json_string_value(json_object_get(c, "status")) &&
                   strcmp(json_string_value(json_object_get(c, "status")), "True") == 0;
    }
    return false;
}

/* The slice ports of the service on pod, or NULL when a named port does not resolve. */
static json_t *pod_ports(const json_t *service, const json_t *pod)
{
    json_t *ports = json_array();
    size_t i;
    const json_t *sp;
    json_array_foreach(json_object_get(json_object_get(service, "spec"), "ports"), i, sp)
    {
        const char *protocol = json_string_value(json_object_get(sp, "protocol"));
        const json_t *target = json_object_get(sp, "targetPort");
        json_int_t number =
            json_is_string(target)
                ? ck_pod_find_port(pod, json_string_value(target), protocol ? protocol : "TCP")
            : json_is_integer(target) ? json_integer_value(target)
                                      : json_integer_value(json_object_get(sp, "port"));
        if (number <= 0) {
            json_decref(ports);
            return NULL;
        }
        json_t *p = json_pack("{s:s, s:s, s:I}", "name",
                              json_string_value(json_object_get(sp, "name")) ?: "", "protocol",
                              protocol ? protocol : "TCP", "port", (json_int_t)number);
        const json_t *app = json_object_get(sp, "appProtocol");
        if (p && app)
            json_object_set(p, "appProtocol", (json_t *)app);
        if (!p || json_array_append_new(ports, p) < 0) {
            json_decref(ports);
            return NULL;
        }
    }
    return ports;
}

/* The pod's endpoint, or NULL when it has none (no IP, terminal). */
static json_t *pod_endpoint(const json_t *service, const json_t *pod)
{
    const json_t *status = json_object_get(pod, "status");
    const char *ip = json_string_value(json_object_get(status, "podIP"));
    const char *phase = json_string_value(json_object_get(status, "phase"));
    if (!ip || !*ip || (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
        return NULL;
    bool terminating = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
    bool ready = pod_ready(pod);
    bool publish =
        json_is_true(json_object_get(json_object_get(service, "spec"), "publishNotReadyAddresses"));
    json_t *ep = json_pack("{s:[s], s:{s:b, s:b, s:b}, s:{s:s, s:s, s:s, s:s}}", "addresses", ip,
                           "conditions", "ready", publish || (ready && !terminating), "serving",
                           publish || ready, "terminating", terminating, "targetRef", "kind", "Pod",
                           "namespace", meta_str(pod, "namespace") ?: "", "name",
                           meta_str(pod, "name") ?: "", "uid", meta_str(pod, "uid") ?: "");
    const json_t *spec = json_object_get(pod, "spec");
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    if (ep && node && *node)
        json_object_set_new(ep, "nodeName", json_string(node));
    const char *hostname = json_string_value(json_object_get(spec, "hostname"));
    const char *subdomain = json_string_value(json_object_get(spec, "subdomain"));
    const char *svc_name = meta_str(service, "name");
    if (ep && hostname && subdomain && svc_name && strcmp(subdomain, svc_name) == 0)
        json_object_set_new(ep, "hostname", json_string(hostname));
    return ep;
}

/* ---- desired slices ------------------------------------------------------------------ */

static json_t *slice_for(const json_t *service, const json_t *ports, json_t *endpoints)
{
    const char *name = meta_str(service, "name");
    char generate[300];
    snprintf(generate, sizeof(generate), "%s-", name);
    json_t *labels = ck__json_copy(json_object_get(json_object_get(service, "metadata"), "labels"));
    if (!labels)
        labels = json_object();
    json_object_set_new(labels, SERVICE_NAME_LABEL, json_string(name));
    json_object_set_new(labels, MANAGED_BY_LABEL, json_string(CK_ENDPOINTSLICE_MANAGED_BY));
    json_t *slice = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:s, s:o}", "apiVersion",
        "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "generateName", generate,
        "namespace", meta_str(service, "namespace") ?: "", "labels", labels, "ownerReferences",
        "apiVersion", "v1", "kind", "Service", "name", name, "uid", meta_str(service, "uid") ?: "",
        "controller", 1, "blockOwnerDeletion", 1, "addressType", "IPv4", "endpoints", endpoints);
    if (slice && json_array_size(ports) > 0)
        json_object_set(slice, "ports", (json_t *)ports);
    return slice;
}

/* Every slice the service should have, in a stable order. */
static int desired_slices(const json_t *service, const struct ck_obj_list *pods, json_t *out)
{
    json_t *groups = json_object(); /* ports as text -> {ports, endpoints} */
    if (!groups)
        return CK_ENOMEM;
    for (size_t i = 0; i < pods->n; i++) {
        json_t *ep = pod_endpoint(service, pods->items[i]);
        json_t *ports = ep ? pod_ports(service, pods->items[i]) : NULL;
        char *text = ports ? json_dumps(ports, JSON_COMPACT) : NULL;
        if (text) {
            json_t *g = json_object_get(groups, text);
            if (!g) {
                g = json_pack("{s:O, s:[]}", "ports", ports, "endpoints");
                json_object_set_new(groups, text, g);
            }
            json_array_append(json_object_get(g, "endpoints"), ep);
        }
        free(text);
        json_decref(ports);
        json_decref(ep);
    }
    const char *key;
    json_t *g;
    json_object_foreach(groups, key, g)
    {
        json_t *eps = json_object_get(g, "endpoints");
        for (size_t at = 0; at < json_array_size(eps); at += CK_ENDPOINTSLICE_MAX_ENDPOINTS) {
            json_t *chunk = json_array();
            for (size_t j = at; j < json_array_size(eps) && j < at + CK_ENDPOINTSLICE_MAX_ENDPOINTS;
                 j++)
                json_array_append(chunk, json_array_get(eps, j));
            json_array_append_new(out, slice_for(service, json_object_get(g, "ports"), chunk));
        }
    }
    json_decref(groups);
    if (json_array_size(out) == 0) /* the placeholder: an empty slice */
        json_array_append_new(out, slice_for(service, NULL, json_array()));
    for (size_t i = 0; i < json_array_size(out); i++)
        if (!json_array_get(out, i))
            return CK_ENOMEM;
    return 0;
}

/* True when existing already holds what desired says. */
static bool same_content(const json_t *existing, const json_t *desired)
{
    static const char *const fields[] = {"addressType", "endpoints", "ports"};
    for (size_t i = 0; i < 3; i++) {
        const json_t *a = json_object_get(existing, fields[i]);
        const json_t *b = json_object_get(desired, fields[i]);
        bool a_empty = !a || (json_is_array(a) && json_array_size(a) == 0);
        bool b_empty = !b || (json_is_array(b) && json_array_size(b) == 0);
        if (!(a_empty && b_empty) && !json_equal(a, b))
            return false;
    }
    const json_t *labels = json_object_get(json_object_get(existing, "metadata"), "labels");
    return json_equal(labels, json_object_get(json_object_get(desired, "metadata"), "labels"));
}

static int compare_names(const void *a, const void *b)
{
    const char *na = meta_str(*(const json_t *const *)a, "name");
    const char *nb = meta_str(*(const json_t *const *)b, "name");
    return strcmp(na ? na : "", nb ? nb : "");
}

/* ---- legacy Endpoints ------------------------------------------------------------------ */

static int compare_ips(const void *a, const void *b)
{
    const char *ia = json_string_value(json_object_get(*(json_t *const *)a, "ip"));
    const char *ib = json_string_value(json_object_get(*(json_t *const *)b, "ip"));
    return strcmp(ia ? ia : "", ib ? ib : "");
}

/* Sorts an array of addresses by IP, as Kubernetes' RepackSubsets does. */
static json_t *sorted_by_ip(json_t *addresses)
{
    size_t n = json_array_size(addresses);
    json_t **items = ck__calloc(n ? n : 1, sizeof(*items));
    json_t *out = json_array();
    if (!items || !out) {
        free(items);
        json_decref(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        items[i] = json_array_get(addresses, i);
    qsort(items, n, sizeof(*items), compare_ips);
    for (size_t i = 0; i < n; i++)
        json_array_append(out, items[i]);
    free(items);
    return out;
}

/*
 * The subsets of the service's Endpoints from the slices' endpoints: one per port set,
 * ready addresses and not-ready ones (terminating pods left out unless the service
 * publishes not-ready addresses), each sorted by IP.
 */
static json_t *endpoints_subsets(const json_t *service, const json_t *desired)
{
    bool publish =
        json_is_true(json_object_get(json_object_get(service, "spec"), "publishNotReadyAddresses"));
    json_t *subsets = json_array();
    size_t i;
    const json_t *slice;
    json_array_foreach(desired, i, slice)
    {
        json_t *ready = json_array(), *not_ready = json_array(), *ports = json_array();
        size_t j;
        const json_t *ep, *port;
        json_array_foreach(json_object_get(slice, "endpoints"), j, ep)
        {
            const json_t *cond = json_object_get(ep, "conditions");
            bool is_ready = json_is_true(json_object_get(cond, "ready"));
            if (json_is_true(json_object_get(cond, "terminating")) && !publish)
                continue;
            json_t *address =
                json_pack("{s:O, s:O}", "ip", json_array_get(json_object_get(ep, "addresses"), 0),
                          "targetRef", json_object_get(ep, "targetRef"));
            const json_t *node = json_object_get(ep, "nodeName");
            if (address && node)
                json_object_set(address, "nodeName", (json_t *)node);
            const json_t *hostname = json_object_get(ep, "hostname");
            if (address && hostname)
                json_object_set(address, "hostname", (json_t *)hostname);
            json_array_append_new(is_ready ? ready : not_ready, address);
        }
        json_array_foreach(json_object_get(slice, "ports"), j, port)
        {
            json_t *p = json_pack("{s:O, s:O, s:O}", "name", json_object_get(port, "name"), "port",
                                  json_object_get(port, "port"), "protocol",
                                  json_object_get(port, "protocol"));
            const json_t *app = json_object_get(port, "appProtocol");
            if (p && app)
                json_object_set(p, "appProtocol", (json_t *)app);
            json_array_append_new(ports, p);
        }
        if (json_array_size(ready) + json_array_size(not_ready) > 0) {
            json_t *subset = json_object();
            if (json_array_size(ready))
                json_object_set_new(subset, "addresses", sorted_by_ip(ready));
            if (json_array_size(not_ready))
                json_object_set_new(subset, "notReadyAddresses", sorted_by_ip(not_ready));
            if (json_array_size(ports))
                json_object_set(subset, "ports", ports);
            json_array_append_new(subsets, subset);
        }
        json_decref(ready);
        json_decref(not_ready);
        json_decref(ports);
    }
    return subsets;
}

/* Creates or updates the Endpoints named as the service when they differ from desired. */
static int sync_endpoints(struct ck_eps_controller *c, const char *ns, const json_t *service,
                          const json_t *desired, struct ck_err *reterr)
{
    const char *name = meta_str(service, "name");
    json_t *subsets = endpoints_subsets(service, desired);
    json_t *labels = ck__json_copy(json_object_get(json_object_get(service, "metadata"), "labels"));
    if (!labels)
        labels = json_object();
    const char *ip =
        json_string_value(json_object_get(json_object_get(service, "spec"), "clusterIP"));
    if (ip && strcmp(ip, "None") == 0)
        json_object_set_new(labels, "service.kubernetes.io/headless", json_string(""));
    json_t *current = NULL;
    int r = ck_ctl_get(&c->client, c->endpoints_res, ns, name, &current, reterr);
    json_t *next = NULL;
    if (r == CK_ENOENT) {
        next = json_pack("{s:s, s:s, s:{s:s, s:s, s:O}}", "apiVersion", "v1", "kind", "Endpoints",
                         "metadata", "name", name, "namespace", ns, "labels", labels);
        if (next && json_array_size(subsets))
            json_object_set(next, "subsets", subsets);
        r = next ? ck_ctl_create(&c->client, c->endpoints_res, ns, next, NULL, reterr)
                 : ck_err_no_memory(reterr);
    } else if (r == 0) {
        const json_t *have = json_object_get(current, "subsets");
        const json_t *have_labels = json_object_get(json_object_get(current, "metadata"), "labels");
        bool same_subsets = (json_array_size(have) == 0 && json_array_size(subsets) == 0) ||
                            json_equal(have, subsets);
        bool same_labels = (json_object_size(have_labels) == 0 && json_object_size(labels) == 0) ||
                           json_equal(have_labels, labels);
        if (!same_subsets || !same_labels) {
            next = ck__json_copy(current);
            json_object_set(json_object_get(next, "metadata"), "labels", labels);
            if (json_array_size(subsets))
                json_object_set(next, "subsets", subsets);
            else
                json_object_del(next, "subsets");
            r = ck_ctl_update(&c->client, c->endpoints_res, ns, next, NULL, reterr);
        }
    }
    json_decref(next);
    json_decref(current);
    json_decref(labels);
    json_decref(subsets);
    return r;
}

/* ---- sync ---------------------------------------------------------------------------- */

static int reconcile(struct ck_eps_controller *c, const char *ns, const json_t *service,
                     const json_t *desired, struct ck_err *reterr)
{
    char selector_text[512];
    snprintf(selector_text, sizeof(selector_text), SERVICE_NAME_LABEL "=%s," MANAGED_BY_LABEL "=%s",
             meta_str(service, "name"), CK_ENDPOINTSLICE_MANAGED_BY);
    struct ck_label_selector *sel = NULL;
    int r = ck_label_selector_parse(selector_text, &sel, reterr);
    struct ck_obj_list existing = {0};
    if (r == 0)
        r = ck_lister_list(&c->slices, ns, sel, &existing, reterr);
    ck_label_selector_free(sel);
    if (r < 0)
        return r;
    qsort(existing.items, existing.n, sizeof(existing.items[0]), compare_names);
    size_t i;
    for (i = 0; i < json_array_size(desired) && r == 0; i++) {
        json_t *want = json_array_get(desired, i);
        if (i < existing.n) {
            if (same_content(existing.items[i], want))
                continue;
            json_t *next = ck__json_copy(existing.items[i]);
            json_t *meta = json_object_get(next, "metadata");
            json_object_set(meta, "labels",
                            json_object_get(json_object_get(want, "metadata"), "labels"));
            json_object_set(next, "endpoints", json_object_get(want, "endpoints"));
            json_t *ports = json_object_get(want, "ports");
            if (ports)
                json_object_set(next, "ports", ports);
            else
                json_object_del(next, "ports");
            r = next ? ck_ctl_update(&c->client, c->slices_res, ns, next, NULL, reterr)
                     : ck_err_no_memory(reterr);
            json_decref(next);
        } else {
            r = ck_ctl_create(&c->client, c->slices_res, ns, want, NULL, reterr);
        }
    }
    for (; i < existing.n && r == 0; i++) {
        r = ck_ctl_delete(&c->client, c->slices_res, ns, meta_str(existing.items[i], "name"), NULL,
                          NULL, reterr);
        if (r == CK_ENOENT)
            r = 0;
    }
    ck_obj_list_release(&existing);
    return r;
}

static int sync_service(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_eps_controller *c = ctl->data;
    char *ns = NULL, *name = NULL;
    int r = ck_split_meta_namespace_key(key, &ns, &name, reterr);
    if (r < 0)
        return 0; /* a malformed key is never retried */
    const json_t *service = NULL;
    r = ck_lister_get(&c->services, ns, name, &service);
    const json_t *spec = service ? json_object_get(service, "spec") : NULL;
    const json_t *selector = json_object_get(spec, "selector");
    const char *type = json_string_value(json_object_get(spec, "type"));
    if (r == CK_ENOENT || !service) {
        /* gone: the garbage collector removes its slices; its Endpoints go here */
        r = ck_ctl_delete(&c->client, c->endpoints_res, ns, name, NULL, NULL, reterr);
        free(ns);
        free(name);
        return r == CK_ENOENT ? 0 : r;
    }
    if (json_object_size(selector) == 0 || (type && strcmp(type, "ExternalName") == 0)) {
        /* not ours to manage: the user keeps its endpoints */
        ck_cached_unref(service);
        free(ns);
        free(name);
        return 0;
    }
    json_t *wrapped = json_pack("{s:O}", "matchLabels", selector);
    struct ck_label_selector *sel = NULL;
    struct ck_obj_list pods = {0};
    json_t *desired = json_array();
    r = wrapped && desired ? ck_label_selector_from_object(wrapped, &sel, reterr)
                           : ck_err_no_memory(reterr);
    if (r == 0)
        r = ck_lister_list(&c->pods, ns, sel, &pods, reterr);
    if (r == 0 && desired_slices(service, &pods, desired) < 0)
        r = ck_err_no_memory(reterr);
    if (r == 0)
        r = reconcile(c, ns, service, desired, reterr);
    if (r == 0)
        r = sync_endpoints(c, ns, service, desired, reterr);
    ck_obj_list_release(&pods);
    ck_label_selector_free(sel);
    json_decref(wrapped);
    json_decref(desired);
    ck_cached_unref(service);
    free(ns);
    free(name);
    return r;
}

/* ---- handlers ------------------------------------------------------------------------ */

static void service_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_eps_controller *)arg)->queue, obj);
}

static void service_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_eps_controller *)arg)->queue, obj);
}

static void service_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                           void *arg)
{
    char *key = NULL;
    if (ck_deletion_handling_key(obj, t, &key, NULL) == 0)
        ck_wq_add(((struct ck_eps_controller *)arg)->queue, key);
    free(key);
}

/* Enqueues every service of the pod's namespace whose selector matches its labels. */
static void enqueue_services_of(struct ck_eps_controller *c, const json_t *pod)
{
    const char *ns = meta_str(pod, "namespace");
    const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    struct ck_obj_list services = {0};
    if (!ns || ck_lister_list(&c->services, ns, NULL, &services, NULL) < 0)
        return;
    for (size_t i = 0; i < services.n; i++) {
        const json_t *selector =
            json_object_get(json_object_get(services.items[i], "spec"), "selector");
        if (json_object_size(selector) == 0)
            continue;
        bool match = true;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)selector, k, v) match =
            match && json_equal(json_object_get(labels, k), v);
        if (match)
            ck__ctl_enqueue(c->queue, services.items[i]);
    }
    ck_obj_list_release(&services);
}

static void pod_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    enqueue_services_of(arg, obj);
}

static void pod_update(const json_t *old, const json_t *obj, void *arg)
{
    enqueue_services_of(arg, old);
    enqueue_services_of(arg, obj);
}

static void pod_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)t;
    if (obj)
        enqueue_services_of(arg, obj);
}

/* A managed slice changed or went: its service is synced again. */
static void slice_changed(struct ck_eps_controller *c, const json_t *slice)
{
    const json_t *labels = json_object_get(json_object_get(slice, "metadata"), "labels");
    const char *service = json_string_value(json_object_get(labels, SERVICE_NAME_LABEL));
    const char *by = json_string_value(json_object_get(labels, MANAGED_BY_LABEL));
    const char *ns = meta_str(slice, "namespace");
    if (!service || !ns || !by || strcmp(by, CK_ENDPOINTSLICE_MANAGED_BY) != 0)
        return;
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, service);
    ck_wq_add(c->queue, key);
}

static void slice_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    slice_changed(arg, obj);
}

static void slice_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    slice_changed(arg, obj);
}

static void slice_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t,
                         void *arg)
{
    (void)t;
    if (obj)
        slice_changed(arg, obj);
}

/* ---- lifecycle ----------------------------------------------------------------------- */

static int init_common(struct ck_eps_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, struct ck_err *reterr)
{
    c->client = *client;
    c->services_res = ck_controller_resource("", "v1", "services");
    c->pods_res = ck_controller_resource("", "v1", "pods");
    c->slices_res = ck_controller_resource("discovery.k8s.io", "v1", "endpointslices");
    c->endpoints_res = ck_controller_resource("", "v1", "endpoints");
    if (!c->services_res || !c->pods_res || !c->slices_res || !c->endpoints_res)
        return ck_err_set(reterr, CK_ENOENT, "endpointslice: the API kinds it needs are unknown");
    int r = ck__ctl_init(&c->ctl, "endpointslice", sync_service, c, clock, reterr);
    c->queue = c->ctl.queue;
    return r;
}

int ck_eps_controller_new_with(const struct ck_eps_controller_deps *deps,
                               struct ck_eps_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->services || !deps->pods || !deps->slices)
        return ck_err_set(reterr, CK_EINVAL,
                          "endpointslice: a client and three listers are needed");
    struct ck_eps_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    c->services = *deps->services;
    c->pods = *deps->pods;
    c->slices = *deps->slices;
    int r = init_common(c, deps->client, deps->clock, reterr);
    if (r < 0) {
        ck_eps_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_eps_controller_sync(struct ck_eps_controller *c, const char *key, struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

struct ck_eps_controller *ck_eps_controller_free(struct ck_eps_controller *c)
{
    if (!c)
        return NULL;
    ck__ctl_stop(&c->ctl, c->runner);
    free(c);
    return NULL;
}

int ck_eps_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                         struct ck_err *reterr)
{
    struct ck_eps_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, ctx->client);
    struct ck_event_handler svc_h = {service_add, service_update, service_delete, c};
    struct ck_event_handler pod_h = {pod_add, pod_update, pod_delete, c};
    struct ck_event_handler slice_h = {slice_add, slice_update, slice_delete, c};
    int r = init_common(c, &rest, NULL, reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->services_res, &svc_h, &c->infs[0], &c->services, reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->pods_res, &pod_h, &c->infs[1], &c->pods, reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->slices_res, &slice_h, &c->infs[2], &c->slices, reterr);
    if (r < 0) {
        ck_eps_controller_free(c);
        return r;
    }
    *ret_state = c;
    return 0;
}

int ck_eps_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct ck_eps_controller *c = state;
    return ck__ctl_run(&c->ctl, c->infs, 3, workers, &c->runner, reterr);
}

void ck_eps_manager_stop(void *state)
{
    ck_eps_controller_free(state);
}
