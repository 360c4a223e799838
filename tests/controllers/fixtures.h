/*
 * fixtures.h - what the controller unit tests build their worlds from: ReplicaSets and
 * pods as the API server would hand them out, and caches (an indexer with the namespace
 * index behind a lister) the test fills, as informers would. With the fake client
 * (controllers.h) they let a test drive a controller's sync without a server, as
 * Kubernetes' controller tests do with fake informers and the fake clientset.
 *
 * Everything is static inline, for tests only; failures abort through cmocka asserts.
 */
#ifndef CKUBE_TESTS_CONTROLLERS_FIXTURES_H
#define CKUBE_TESTS_CONTROLLERS_FIXTURES_H

#include <stdio.h>
#include <string.h>

#include "ckube/controllers.h"

/* A ReplicaSet selecting app=<app>, generation 1, resourceVersion "1", no status. */
static inline json_t *fx_rs(const char *ns, const char *name, const char *uid, int replicas,
                            const char *app)
{
    json_t *rs = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:i, s:{s:{s:s}}, "
                           "s:{s:{s:{s:s}}, s:{s:[{s:s, s:s}]}}}}",
                           "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                           "namespace", ns, "uid", uid, "resourceVersion", "1", "generation", 1,
                           "spec", "replicas", replicas, "selector", "matchLabels", "app", app,
                           "template", "metadata", "labels", "app", app, "spec", "containers",
                           "name", "c", "image", "nginx");
    assert_non_null(rs);
    return rs;
}

/* A Pending pod labelled app=<app>, controlled by owner (a ReplicaSet) unless NULL. */
static inline json_t *fx_pod(const char *ns, const char *name, const char *app, const json_t *owner)
{
    json_t *pod = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:[{s:s, "
        "s:s}]}, s:{s:s}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns, "uid", name,
        "resourceVersion", "1", "creationTimestamp", "2026-01-01T00:00:00Z", "labels", "app", app,
        "spec", "containers", "name", "c", "image", "nginx", "status", "phase", "Pending");
    assert_non_null(pod);
    if (owner)
        json_object_set_new(
            json_object_get(pod, "metadata"), "ownerReferences",
            json_pack("[o]", ck_controller_ref_new(owner, "apps/v1", "ReplicaSet")));
    return pod;
}

/* Puts pod on node, Running, and Ready since `since` (NULL: not ready). */
static inline void fx_pod_running(json_t *pod, const char *node, const char *since)
{
    if (node)
        json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(node));
    json_t *status = json_pack("{s:s}", "phase", "Running");
    if (since)
        json_object_set_new(status, "conditions",
                            json_pack("[{s:s, s:s, s:s}]", "type", "Ready", "status", "True",
                                      "lastTransitionTime", since));
    json_object_set_new(pod, "status", status);
}

static inline const char *fx_meta(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
}

/* A cache the test fills: an indexer with the namespace index, behind a lister. */
struct fx_cache {
    struct ck_indexer *ix;
    struct ck_lister lister;
};

static inline void fx_cache_init(struct fx_cache *c)
{
    assert_int_equal(ck_indexer_new(&c->ix, NULL), 0);
    assert_int_equal(
        ck_indexer_add_index(c->ix, CK_INDEX_NAMESPACE, ck_index_by_namespace, NULL, NULL), 0);
    ck_lister_init(&c->lister, c->ix);
}

/* Adds obj (a reference the cache takes; the caller's own is dropped). */
static inline void fx_cache_add(struct fx_cache *c, json_t *obj)
{
    assert_int_equal(ck_indexer_add(c->ix, obj, NULL), 0);
    ck_cached_unref(obj);
}

static inline void fx_cache_release(struct fx_cache *c)
{
    c->ix = ck_indexer_free(c->ix);
}

/* The index-th recorded action with this verb (and resource), or NULL. */
static inline const struct ck_fake_action *fx_action(struct ck_fake_client *fc, const char *verb,
                                                     const char *resource, size_t index)
{
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(fc, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(a[i].verb, verb) == 0 && (!resource || strcmp(a[i].resource, resource) == 0) &&
            index-- == 0)
            return &a[i];
    return NULL;
}

#endif /* CKUBE_TESTS_CONTROLLERS_FIXTURES_H */
