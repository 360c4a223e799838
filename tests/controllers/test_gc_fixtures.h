/*
 * test_gc_fixtures.h - what the garbage collector's and the namespace controller's unit
 * tests share: a fake discovery source serving a small, fixed set of resources (core
 * pods, events, namespaces and nodes; apps replicasets; example.ckube.io frobbers
 * without deletecollection) and objects with metadata as the server hands them out.
 *
 * Everything is static inline, for tests only; failures abort through cmocka asserts.
 */
#ifndef CKUBE_TESTS_CONTROLLERS_GC_FIXTURES_H
#define CKUBE_TESTS_CONTROLLERS_GC_FIXTURES_H

#include <stdlib.h>
#include <string.h>

#include "ckube/controllers.h"
#include "ckube/rest.h"

#define FX_ALL_VERBS                                                                               \
    "[\"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"update\", "    \
    "\"watch\"]"

/* The discovery documents by path; a path in fx_discovery_fail answers 503. */
static const char *fx_discovery_fail = NULL;

static inline int fx_discovery_get(void *ctx, const char *path, json_t **ret_doc,
                                   struct ck_err *reterr)
{
    (void)ctx;
    const char *text = NULL;
    if (fx_discovery_fail && strcmp(path, fx_discovery_fail) == 0)
        return ck_err_set(reterr, CK_EIO, "service unavailable");
    if (strcmp(path, "/api") == 0)
        text = "{\"versions\": [\"v1\"]}";
    else if (strcmp(path, "/apis") == 0)
        text = "{\"groups\": ["
               "{\"name\": \"apps\", \"versions\": [{\"groupVersion\": \"apps/v1\", \"version\": "
               "\"v1\"}], \"preferredVersion\": {\"version\": \"v1\"}},"
               "{\"name\": \"example.ckube.io\", \"versions\": [{\"groupVersion\": "
               "\"example.ckube.io/v1\", \"version\": \"v1\"}]}]}";
    else if (strcmp(path, "/api/v1") == 0)
        text =
            "{\"resources\": ["
            "{\"name\": \"pods\", \"kind\": \"Pod\", \"namespaced\": true, \"verbs\": " FX_ALL_VERBS
            "},"
            "{\"name\": \"pods/status\", \"kind\": \"Pod\", \"namespaced\": true, \"verbs\": "
            "[\"get\"]},"
            "{\"name\": \"events\", \"kind\": \"Event\", \"namespaced\": true, \"verbs\": " FX_ALL_VERBS
            "},"
            "{\"name\": \"namespaces\", \"kind\": \"Namespace\", \"namespaced\": false, "
            "\"verbs\": " FX_ALL_VERBS "},"
            "{\"name\": \"nodes\", \"kind\": \"Node\", \"namespaced\": false, \"verbs\": " FX_ALL_VERBS
            "}]}";
    else if (strcmp(path, "/apis/apps/v1") == 0)
        text = "{\"resources\": [{\"name\": \"replicasets\", \"kind\": \"ReplicaSet\", "
               "\"namespaced\": true, \"verbs\": " FX_ALL_VERBS "}]}";
    else if (strcmp(path, "/apis/example.ckube.io/v1") == 0)
        text = "{\"resources\": [{\"name\": \"frobbers\", \"kind\": \"Frobber\", "
               "\"namespaced\": true, \"verbs\": [\"delete\", \"get\", \"list\", \"watch\"]}]}";
    if (!text)
        return ck_err_set(reterr, CK_ENOENT, "%s not found", path);
    *ret_doc = json_loads(text, 0, NULL);
    assert_non_null(*ret_doc);
    return 0;
}

static inline struct ck_discovery *fx_discovery_new(struct ck_clock *clock)
{
    struct ck_discovery_source src = {.get = fx_discovery_get};
    struct ck_discovery *d = NULL;
    assert_int_equal(ck_discovery_new(&src, 0, clock, &d, NULL), 0);
    return d;
}

/* An object of apiVersion/kind named name with uid, in namespace ns ("" for none). */
static inline json_t *fx_obj(const char *api_version, const char *kind, const char *ns,
                             const char *name, const char *uid)
{
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", api_version, "kind", kind,
                          "metadata", "name", name, "uid", uid, "resourceVersion", "1");
    assert_non_null(o);
    if (ns && *ns)
        json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
    return o;
}

/* Adds an ownerReference to obj. */
static inline void fx_add_owner(json_t *obj, const char *api_version, const char *kind,
                                const char *name, const char *uid, bool block)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_t *refs = json_object_get(meta, "ownerReferences");
    if (!refs) {
        refs = json_array();
        json_object_set_new(meta, "ownerReferences", refs);
    }
    json_array_append_new(refs,
                          json_pack("{s:s, s:s, s:s, s:s, s:b}", "apiVersion", api_version, "kind",
                                    kind, "name", name, "uid", uid, "blockOwnerDeletion", block));
}

/* Marks obj deleted, with one finalizer (or none: NULL). */
static inline void fx_deleting(json_t *obj, const char *finalizer)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_object_set_new(meta, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
    if (finalizer)
        json_object_set_new(meta, "finalizers", json_pack("[s]", finalizer));
}

/* ---- a garbage collector over the fake client and fake discovery ---- */

#ifdef CKUBE_GARBAGECOLLECTOR_H
struct gc_world {
    struct ck_fake_client *fc;
    struct ck_discovery *disc;
    struct ck_gc *gc;
    const struct ck_resource *pods, *rss;
};

static inline int gc_world_setup(void **state)
{
    struct gc_world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    assert_int_equal(ck_fake_client_new(&w->fc, NULL), 0);
    w->disc = fx_discovery_new(NULL);
    struct ck_gc_config config = {.discovery = w->disc};
    ck_fake_client_iface(w->fc, &config.client);
    assert_int_equal(ck_gc_new(&config, &w->gc, NULL), 0);
    w->pods = ck_controller_resource("", "v1", "pods");
    w->rss = ck_controller_resource("apps", "v1", "replicasets");
    *state = w;
    return 0;
}

static inline int gc_world_teardown(void **state)
{
    struct gc_world *w = *state;
    ck_gc_free(w->gc);
    ck_discovery_free(w->disc);
    ck_fake_client_free(w->fc);
    free(w);
    return 0;
}

/* Feeds one event to the graph builder and applies it on the calling thread. */
static inline void gc_observe(struct gc_world *w, enum ck_gc_event_type type, json_t *obj,
                              json_t *old)
{
    assert_int_equal(ck_gc_observe(w->gc, type,
                                   json_string_value(json_object_get(obj, "apiVersion")),
                                   json_string_value(json_object_get(obj, "kind")), obj, old),
                     0);
    ck_gc_process_graph_changes(w->gc);
}

/*
 * Seeds the fake server with ReplicaSet "web" (uid rs_uid) in rs_ns and pod "p1" (uid
 * pod-1) in "ns" whose owner reference names web with ref_uid; returns both.
 */
static inline void gc_seed_rs_and_pod(struct gc_world *w, const char *rs_ns, const char *rs_uid,
                                      const char *ref_uid, json_t **ret_rs, json_t **ret_pod)
{
    *ret_rs = fx_obj("apps/v1", "ReplicaSet", rs_ns, "web", rs_uid);
    assert_int_equal(ck_fake_client_seed(w->fc, w->rss, *ret_rs), 0);
    *ret_pod = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
    fx_add_owner(*ret_pod, "apps/v1", "ReplicaSet", "web", ref_uid, true);
    assert_int_equal(ck_fake_client_seed(w->fc, w->pods, *ret_pod), 0);
}

/* Takes every key off q; returns how many were want (NULL: none counted). */
static inline size_t gc_drain(struct ck_wq *q, const char *want)
{
    size_t hits = 0;
    const char *key;
    while (ck_wq_try_get(q, &key) == 0) {
        hits += want && strcmp(key, want) == 0;
        ck_wq_done(q, key);
    }
    return hits;
}
#endif

#endif /* CKUBE_TESTS_CONTROLLERS_GC_FIXTURES_H */
