/*
 * endpointslicemirroring.c - the EndpointSlice mirroring controller: hand-written
 * Endpoints of selector-less Services as EndpointSlices (see
 * ckube/endpointslicemirroring.h for what it keeps).
 *
 * Mirrors Kubernetes' pkg/controller/endpointslicemirroring (controller, reconciler and
 * utils): the key is the Endpoints' (and its Service's) namespace/name. The sync deletes
 * the mirrored slices when the Endpoints or the Service is gone, the Service has a
 * selector, or the Endpoints must not be mirrored (skip-mirror label, leader-election
 * annotation); otherwise it computes the desired slices: each subset's addresses (ready)
 * then notReadyAddresses (not ready), at most 1000 per subset, each as an endpoint with
 * its IP (an unparsable IP is skipped), targetRef, nodeName and hostname; endpoints with
 * the same address type and ports share slices of at most 1000, an address seen twice
 * for the same ports counting once.
 *
 * Reconciling is the endpointslice controller's: the desired slices are matched in order
 * with the existing mirrored slices sorted by name; one that differs is updated, missing
 * ones are created, extra ones deleted. Kubernetes' reconciler also keeps the slices'
 * endpoints in place to minimise churn (docs/differences.md).
 *
 * Threading: the runner runs one sync per key at a time; handlers run on the informers'
 * threads and only enqueue keys. The controller's state is read-only after creation.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/endpointslicemirroring.h"
#include "ckube/internal/util.h"

#define SERVICE_NAME_LABEL "kubernetes.io/service-name"
#define MANAGED_BY_LABEL   "endpointslice.kubernetes.io/managed-by"
#define SKIP_MIRROR_LABEL  "endpointslice.kubernetes.io/skip-mirror"
#define LEADER_ANNOTATION  "control-plane.alpha.kubernetes.io/leader"

struct ck_mirroring_controller {
    struct ck_ctl_client client;
    struct ck_lister services, endpoints, slices;
    const struct ck_resource *services_res, *endpoints_res, *slices_res;
    struct ck_informer *infs[3]; /* NULL when made from given listers */
    struct ck_controller ctl;
    struct ck_runner *runner;
};

static const char *meta_str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
}

/* ---- desired slices -------------------------------------------------------------------- */

/* The address's endpoint and its type ("IPv4", "IPv6"), or NULL for an unparsable IP. */
static json_t *address_endpoint(const json_t *address, bool ready, const char **ret_type)
{
    const char *ip = json_string_value(json_object_get(address, "ip"));
    unsigned char bin[16];
    char canonical[INET6_ADDRSTRLEN];
    int family = ip && inet_pton(AF_INET, ip, bin) == 1    ? AF_INET
                 : ip && inet_pton(AF_INET6, ip, bin) == 1 ? AF_INET6
                                                           : 0;
    if (!family || !inet_ntop(family, bin, canonical, sizeof(canonical)))
        return NULL;
    *ret_type = family == AF_INET ? "IPv4" : "IPv6";
    json_t *ep =
        json_pack("{s:[s], s:{s:b}}", "addresses", canonical, "conditions", "ready", ready);
    static const char *const copied[] = {"targetRef", "nodeName", "hostname"};
    for (size_t i = 0; ep && i < 3; i++) {
        const json_t *v = json_object_get(address, copied[i]);
        if (v && !(json_is_string(v) && !*json_string_value(v)))
            json_object_set(ep, copied[i], (json_t *)v);
    }
    return ep;
}

/* The subset's ports as slice ports (name, port, protocol, appProtocol). */
static json_t *slice_ports(const json_t *subset)
{
    json_t *ports = json_array();
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(subset, "ports"), i, p)
    {
        const char *protocol = json_string_value(json_object_get(p, "protocol"));
        json_t *sp = json_pack("{s:s, s:O, s:s}", "name",
                               json_string_value(json_object_get(p, "name")) ?: "", "port",
                               json_object_get(p, "port"), "protocol", protocol ? protocol : "TCP");
        const json_t *app = json_object_get(p, "appProtocol");
        if (sp && app)
            json_object_set(sp, "appProtocol", (json_t *)app);
        json_array_append_new(ports, sp);
    }
    return ports;
}

static json_t *slice_for(const json_t *endpoints, const char *type, const json_t *ports,
                         json_t *eps)
{
    const char *name = meta_str(endpoints, "name");
    const json_t *meta = json_object_get(endpoints, "metadata");
    char generate[300];
    snprintf(generate, sizeof(generate), "%s-", name);
    json_t *labels = ck__json_copy(json_object_get(meta, "labels"));
    if (!labels)
        labels = json_object();
    json_object_set_new(labels, SERVICE_NAME_LABEL, json_string(name));
    json_object_set_new(labels, MANAGED_BY_LABEL, json_string(CK_MIRRORING_MANAGED_BY));
    json_t *annotations = ck__json_copy(json_object_get(meta, "annotations"));
    if (annotations) {
        json_object_del(annotations, "endpoints.kubernetes.io/last-change-trigger-time");
        json_object_del(annotations, "kubectl.kubernetes.io/last-applied-configuration");
    }
    json_t *slice = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}, s:s, s:o, s:O}",
        "apiVersion", "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "generateName",
        generate, "namespace", meta_str(endpoints, "namespace") ?: "", "labels", labels,
        "ownerReferences", "apiVersion", "v1", "kind", "Endpoints", "name", name, "uid",
        meta_str(endpoints, "uid") ?: "", "controller", 1, "blockOwnerDeletion", 1, "addressType",
        type, "endpoints", eps, "ports", ports);
    if (slice && json_object_size(annotations) > 0)
        json_object_set(json_object_get(slice, "metadata"), "annotations", annotations);
    json_decref(annotations);
    return slice;
}

/* Every slice endpoints should be mirrored into, in a stable order, appended to out. */
static int desired_slices(const json_t *endpoints, json_t *out)
{
    json_t *groups = json_object(); /* "type ports" -> {type, ports, endpoints, seen} */
    json_t *order = json_array();   /* group keys in order of first appearance */
    if (!groups || !order) {
        json_decref(groups);
        json_decref(order);
        return CK_ENOMEM;
    }
    size_t i;
    const json_t *subset;
    json_array_foreach(json_object_get(endpoints, "subsets"), i, subset)
    {
        json_t *ports = slice_ports(subset);
        char *ports_text = ports ? json_dumps(ports, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        size_t taken = 0;
        for (int pass = 0; ports_text && pass < 2; pass++) {
            const json_t *list =
                json_object_get(subset, pass == 0 ? "addresses" : "notReadyAddresses");
            size_t j;
            const json_t *address;
            json_array_foreach(list, j, address)
            {
                if (taken == CK_MIRRORING_MAX_ENDPOINTS)
                    break;
                const char *type = NULL;
                json_t *ep = address_endpoint(address, pass == 0, &type);
                if (!ep)
                    continue;
                taken++;
                char key[1100];
                snprintf(key, sizeof(key), "%s %s", type, ports_text);
                json_t *g = json_object_get(groups, key);
                if (!g) {
                    g = json_pack("{s:s, s:O, s:[], s:{}}", "type", type, "ports", ports,
                                  "endpoints", "seen");
                    json_object_set_new(groups, key, g);
                    json_array_append_new(order, json_string(key));
                }
                const char *ip =
                    json_string_value(json_array_get(json_object_get(ep, "addresses"), 0));
                json_t *seen = json_object_get(g, "seen");
                if (seen && !json_object_get(seen, ip)) {
                    json_object_set_new(seen, ip, json_true());
                    json_array_append(json_object_get(g, "endpoints"), ep);
                }
                json_decref(ep);
            }
        }
        free(ports_text);
        json_decref(ports);
    }
    const json_t *k;
    json_array_foreach(order, i, k)
    {
        const json_t *g = json_object_get(groups, json_string_value(k));
        const json_t *eps = json_object_get(g, "endpoints");
        for (size_t at = 0; at < json_array_size(eps); at += CK_MIRRORING_MAX_ENDPOINTS) {
            json_t *chunk = json_array();
            for (size_t j = at; j < json_array_size(eps) && j < at + CK_MIRRORING_MAX_ENDPOINTS;
                 j++)
                json_array_append(chunk, json_array_get(eps, j));
            json_array_append_new(out, slice_for(endpoints,
                                                 json_string_value(json_object_get(g, "type")),
                                                 json_object_get(g, "ports"), chunk));
        }
    }
    json_decref(groups);
    json_decref(order);
    for (i = 0; i < json_array_size(out); i++)
        if (!json_array_get(out, i))
            return CK_ENOMEM;
    return 0;
}

/* ---- reconciling ---------------------------------------------------------------------- */

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
    const json_t *em = json_object_get(existing, "metadata");
    const json_t *dm = json_object_get(desired, "metadata");
    const json_t *ea = json_object_get(em, "annotations"), *da = json_object_get(dm, "annotations");
    bool same_annotations = (json_object_size(ea) == 0 && json_object_size(da) == 0) ||
                            (ea && da && json_equal(ea, da));
    return same_annotations &&
           json_equal(json_object_get(em, "labels"), json_object_get(dm, "labels"));
}

static int compare_names(const void *a, const void *b)
{
    const char *na = meta_str(*(const json_t *const *)a, "name");
    const char *nb = meta_str(*(const json_t *const *)b, "name");
    return strcmp(na ? na : "", nb ? nb : "");
}

/* Makes the mirrored slices of ns/name the desired ones (none: deletes them all). */
static int reconcile(struct ck_mirroring_controller *c, const char *ns, const char *name,
                     const json_t *desired, struct ck_err *reterr)
{
    char selector_text[600];
    snprintf(selector_text, sizeof(selector_text), SERVICE_NAME_LABEL "=%s," MANAGED_BY_LABEL "=%s",
             name, CK_MIRRORING_MANAGED_BY);
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
        if (i >= existing.n) {
            r = ck_ctl_create(&c->client, c->slices_res, ns, want, NULL, reterr);
            continue;
        }
        if (same_content(existing.items[i], want))
            continue;
        json_t *next = ck__json_copy(existing.items[i]);
        json_t *meta = json_object_get(next, "metadata");
        const json_t *want_meta = json_object_get(want, "metadata");
        json_object_set(meta, "labels", json_object_get(want_meta, "labels"));
        if (json_object_get(want_meta, "annotations"))
            json_object_set(meta, "annotations", json_object_get(want_meta, "annotations"));
        else
            json_object_del(meta, "annotations");
        json_object_set(meta, "ownerReferences", json_object_get(want_meta, "ownerReferences"));
        static const char *const fields[] = {"addressType", "endpoints", "ports"};
        for (size_t f = 0; f < 3; f++)
            json_object_set(next, fields[f], json_object_get(want, fields[f]));
        r = next ? ck_ctl_update(&c->client, c->slices_res, ns, next, NULL, reterr)
                 : ck_err_no_memory(reterr);
        json_decref(next);
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

/* Whether endpoints may be mirrored (shouldMirror). */
static bool should_mirror(const json_t *endpoints)
{
    const json_t *meta = json_object_get(endpoints, "metadata");
    const char *skip =
        json_string_value(json_object_get(json_object_get(meta, "labels"), SKIP_MIRROR_LABEL));
    return !(skip && strcmp(skip, "true") == 0) &&
           !json_object_get(json_object_get(meta, "annotations"), LEADER_ANNOTATION);
}

static int sync_endpoints(struct ck_controller *ctl, const char *key, struct ck_err *reterr)
{
    struct ck_mirroring_controller *c = ctl->data;
    char *ns = NULL, *name = NULL;
    if (ck_split_meta_namespace_key(key, &ns, &name, reterr) < 0)
        return 0; /* a malformed key is never retried */
    const json_t *service = NULL, *endpoints = NULL;
    ck_lister_get(&c->services, ns, name, &service);
    ck_lister_get(&c->endpoints, ns, name, &endpoints);
    bool mirror =
        service && endpoints &&
        json_object_size(json_object_get(json_object_get(service, "spec"), "selector")) == 0 &&
        should_mirror(endpoints);
    json_t *desired = json_array();
    int r = desired ? 0 : ck_err_no_memory(reterr);
    if (r == 0 && mirror && desired_slices(endpoints, desired) < 0)
        r = ck_err_no_memory(reterr);
    if (r == 0) /* not mirrored: no desired slice, so every mirrored one goes */
        r = reconcile(c, ns, name, desired, reterr);
    json_decref(desired);
    ck_cached_unref(service);
    ck_cached_unref(endpoints);
    free(ns);
    free(name);
    return r;
}

/* ---- handlers ---------------------------------------------------------------------------- */

static void obj_add(const json_t *obj, bool initial, void *arg)
{
    (void)initial;
    ck__ctl_enqueue(((struct ck_mirroring_controller *)arg)->ctl.queue, obj);
}

static void obj_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    ck__ctl_enqueue(((struct ck_mirroring_controller *)arg)->ctl.queue, obj);
}

static void obj_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    char *key = NULL;
    if (ck_deletion_handling_key(obj, t, &key, NULL) == 0)
        ck_wq_add(((struct ck_mirroring_controller *)arg)->ctl.queue, key);
    free(key);
}

/* A mirrored slice changed or went: its Endpoints are synced again. */
static void slice_changed(struct ck_mirroring_controller *c, const json_t *slice)
{
    const json_t *labels = json_object_get(json_object_get(slice, "metadata"), "labels");
    const char *service = json_string_value(json_object_get(labels, SERVICE_NAME_LABEL));
    const char *by = json_string_value(json_object_get(labels, MANAGED_BY_LABEL));
    const char *ns = meta_str(slice, "namespace");
    if (!service || !ns || !by || strcmp(by, CK_MIRRORING_MANAGED_BY) != 0)
        return;
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, service);
    ck_wq_add(c->ctl.queue, key);
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

/* ---- lifecycle ------------------------------------------------------------------------- */

static int init_common(struct ck_mirroring_controller *c, const struct ck_ctl_client *client,
                       struct ck_clock *clock, struct ck_err *reterr)
{
    c->client = *client;
    c->services_res = ck_controller_resource("", "v1", "services");
    c->endpoints_res = ck_controller_resource("", "v1", "endpoints");
    c->slices_res = ck_controller_resource("discovery.k8s.io", "v1", "endpointslices");
    if (!c->services_res || !c->endpoints_res || !c->slices_res)
        return ck_err_set(reterr, CK_ENOENT,
                          "endpointslicemirroring: the API kinds it needs are unknown");
    return ck__ctl_init(&c->ctl, "endpointslicemirroring", sync_endpoints, c, clock, reterr);
}

int ck_mirroring_controller_new_with(const struct ck_mirroring_deps *deps,
                                     struct ck_mirroring_controller **ret_c, struct ck_err *reterr)
{
    if (!deps || !deps->client || !deps->services || !deps->endpoints || !deps->slices)
        return ck_err_set(reterr, CK_EINVAL,
                          "endpointslicemirroring: a client and three listers are needed");
    struct ck_mirroring_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    c->services = *deps->services;
    c->endpoints = *deps->endpoints;
    c->slices = *deps->slices;
    int r = init_common(c, deps->client, deps->clock, reterr);
    if (r < 0) {
        ck_mirroring_controller_free(c);
        return r;
    }
    *ret_c = c;
    return 0;
}

int ck_mirroring_controller_sync(struct ck_mirroring_controller *c, const char *key,
                                 struct ck_err *reterr)
{
    return c->ctl.sync(&c->ctl, key, reterr);
}

struct ck_mirroring_controller *ck_mirroring_controller_free(struct ck_mirroring_controller *c)
{
    if (!c)
        return NULL;
    if (c->ctl.queue)
        ck__ctl_stop(&c->ctl, c->runner);
    free(c);
    return NULL;
}

int ck_mirroring_manager_start(const struct ck_controller_context *ctx, void **ret_state,
                               struct ck_err *reterr)
{
    struct ck_mirroring_controller *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_no_memory(reterr);
    struct ck_ctl_client rest;
    ck_ctl_client_init_rest(&rest, ctx->client);
    struct ck_event_handler h = {obj_add, obj_update, obj_delete, c};
    struct ck_event_handler slice_h = {slice_add, slice_update, slice_delete, c};
    int r = init_common(c, &rest, NULL, reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->services_res, &h, &c->infs[0], &c->services, reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->endpoints_res, &h, &c->infs[1], &c->endpoints, reterr);
    if (r == 0)
        r = ck__ctl_watch(ctx->factory, c->slices_res, &slice_h, &c->infs[2], &c->slices, reterr);
    if (r < 0) {
        ck_mirroring_controller_free(c);
        return r;
    }
    *ret_state = c;
    return 0;
}

int ck_mirroring_manager_run(void *state, int workers, struct ck_err *reterr)
{
    struct ck_mirroring_controller *c = state;
    return ck__ctl_run(&c->ctl, c->infs, 3, workers, &c->runner, reterr);
}

void ck_mirroring_manager_stop(void *state)
{
    ck_mirroring_controller_free(state);
}
