/*
 * test_namespace_sync.c - the namespace controller's deletion pass on fakes: the
 * namespace and single deletes go through the fake client, collection calls and lists
 * through a small fake content store, discovery through the fixed fake documents.
 * Cases after Kubernetes' namespaced_resources_deleter_test.go: content deleted with
 * deletecollection where served and list + delete where not; content held by a
 * finalizer keeps the namespace with Kubernetes' conditions and messages; an empty
 * namespace is finalized without `kubernetes`; a namespace not being deleted is left
 * alone; a discovery failure is reported and retried.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ckube/nscontroller.h"
#include "controllers/fixtures.h"
#include "controllers/test_gc_fixtures.h"

/* The content of namespace "demo": resource name -> array of objects. */
struct content {
    json_t *store;
    json_t *finalized; /* the last finalize body */
    int collections;   /* deletecollection calls */
};

/* Deletes what has no finalizers; marks the rest deleted. */
static void delete_items(json_t *items)
{
    for (size_t i = json_array_size(items); i-- > 0;) {
        json_t *meta = json_object_get(json_array_get(items, i), "metadata");
        if (json_array_size(json_object_get(meta, "finalizers")))
            json_object_set_new(meta, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
        else
            json_array_remove(items, i);
    }
}

static int c_delete_collection(void *ctx, const struct ck_resource *res, const char *ns,
                               const json_t *options, struct ck_err *reterr)
{
    (void)ns, (void)reterr;
    struct content *c = ctx;
    assert_string_equal(json_string_value(json_object_get(options, "propagationPolicy")),
                        "Background");
    c->collections++;
    delete_items(json_object_get(c->store, res->resource));
    return 0;
}

static int c_list(void *ctx, const struct ck_resource *res, const char *ns, json_t **ret_list,
                  struct ck_err *reterr)
{
    (void)ns, (void)reterr;
    struct content *c = ctx;
    json_t *items = json_object_get(c->store, res->resource);
    *ret_list = json_pack("{s:o}", "items", items ? json_deep_copy(items) : json_array());
    return 0;
}

static int c_finalize(void *ctx, const json_t *ns, struct ck_err *reterr)
{
    (void)reterr;
    struct content *c = ctx;
    json_decref(c->finalized);
    c->finalized = json_deep_copy(ns);
    return 0;
}

static const struct ck_ns_content_ops content_ops = {c_delete_collection, c_list, c_finalize};

struct world {
    struct ck_fake_client *fc;
    struct ck_discovery *disc;
    struct ck_ns_controller *c;
    struct content content;
    const struct ck_resource *ns_res;
};

static int setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    assert_int_equal(ck_fake_client_new(&w->fc, NULL), 0);
    w->disc = fx_discovery_new(NULL);
    w->content.store = json_object();
    struct ck_ns_controller_config config = {
        .content = &content_ops, .content_ctx = &w->content, .discovery = w->disc};
    ck_fake_client_iface(w->fc, &config.client);
    assert_int_equal(ck_ns_controller_new(&config, &w->c, NULL), 0);
    w->ns_res = ck_controller_resource("", "v1", "namespaces");
    fx_discovery_fail = NULL;
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    ck_ns_controller_free(w->c);
    ck_discovery_free(w->disc);
    ck_fake_client_free(w->fc);
    json_decref(w->content.store);
    json_decref(w->content.finalized);
    free(w);
    return 0;
}

/* Namespace demo, being deleted (or not), with the kubernetes finalizer. */
static void seed_namespace(struct world *w, bool deleting)
{
    json_t *ns = fx_obj("v1", "Namespace", "", "demo", "ns-1");
    json_object_set_new(ns, "spec", json_pack("{s:[s]}", "finalizers", "kubernetes"));
    json_object_set_new(ns, "status", json_pack("{s:s}", "phase", "Terminating"));
    if (deleting)
        json_object_set_new(json_object_get(ns, "metadata"), "deletionTimestamp",
                            json_string("2026-01-01T00:00:00Z"));
    assert_int_equal(ck_fake_client_seed(w->fc, w->ns_res, ns), 0);
    json_decref(ns);
}

static void add_content(struct world *w, const char *resource, json_t *obj)
{
    json_t *items = json_object_get(w->content.store, resource);
    if (!items) {
        items = json_array();
        json_object_set_new(w->content.store, resource, items);
    }
    json_array_append_new(items, obj);
}

/* The condition of type in the last status written, or NULL. */
static const json_t *condition(struct world *w, const char *type)
{
    size_t n = 0, i;
    const struct ck_fake_action *a = ck_fake_client_actions(w->fc, &n);
    const json_t *found = NULL;
    for (size_t k = 0; k < n; k++) {
        if (strcmp(a[k].verb, "update-status") != 0)
            continue;
        json_t *cond;
        json_array_foreach(json_object_get(json_object_get(a[k].body, "status"), "conditions"), i,
                           cond)
        {
            if (strcmp(json_string_value(json_object_get(cond, "type")), type) == 0)
                found = cond;
        }
    }
    return found;
}

static const char *cond_str(const json_t *cond, const char *field)
{
    return json_string_value(json_object_get(cond, field));
}

static void test_content_deleted_then_namespace_finalized(void **state)
{
    struct world *w = *state;
    seed_namespace(w, true);
    add_content(w, "pods", fx_obj("v1", "Pod", "demo", "p1", "pod-1"));
    add_content(w, "replicasets", fx_obj("apps/v1", "ReplicaSet", "demo", "web", "rs-1"));
    assert_int_equal(ck_ns_controller_sync(w->c, "demo", NULL), 0);
    /* pods, events, replicasets by collection; frobbers (no deletecollection) by list */
    assert_int_equal(w->content.collections, 3);
    assert_non_null(w->content.finalized);
    assert_int_equal(json_array_size(json_object_get(json_object_get(w->content.finalized, "spec"),
                                                     "finalizers")),
                     0);
    const json_t *c = condition(w, "NamespaceContentRemaining");
    assert_non_null(c);
    assert_string_equal(cond_str(c, "status"), "False");
    assert_string_equal(cond_str(c, "reason"), "ContentRemoved");
    assert_string_equal(cond_str(c, "message"), "All content successfully removed");
    c = condition(w, "NamespaceDeletionDiscoveryFailure");
    assert_string_equal(cond_str(c, "reason"), "ResourcesDiscovered");
    assert_string_equal(cond_str(c, "message"), "All resources successfully discovered");
}

static void test_resource_without_deletecollection_is_deleted_one_by_one(void **state)
{
    struct world *w = *state;
    seed_namespace(w, true);
    add_content(w, "frobbers", fx_obj("example.ckube.io/v1", "Frobber", "demo", "f1", "f-1"));
    assert_int_equal(ck_ns_controller_sync(w->c, "demo", NULL), 0);
    const struct ck_fake_action *del = fx_action(w->fc, "delete", "frobbers", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "f1");
    assert_string_equal(del->namespace, "demo");
    assert_string_equal(json_string_value(json_object_get(del->body, "propagationPolicy")),
                        "Background");
    /* the fake store still lists it: the namespace waits */
    assert_null(w->content.finalized);
    const json_t *c = condition(w, "NamespaceContentRemaining");
    assert_string_equal(cond_str(c, "message"),
                        "Some resources are remaining: frobbers.example.ckube.io has 1 resource "
                        "instances");
}

static void test_finalizer_holds_namespace_with_conditions(void **state)
{
    struct world *w = *state;
    seed_namespace(w, true);
    json_t *held = fx_obj("v1", "Pod", "demo", "held", "pod-h");
    json_object_set_new(json_object_get(held, "metadata"), "finalizers",
                        json_pack("[s]", "example.com/hold"));
    add_content(w, "pods", held);
    assert_int_equal(ck_ns_controller_sync(w->c, "demo", NULL), 0);
    assert_null(w->content.finalized);
    const json_t *c = condition(w, "NamespaceContentRemaining");
    assert_string_equal(cond_str(c, "status"), "True");
    assert_string_equal(cond_str(c, "reason"), "SomeResourcesRemain");
    assert_string_equal(cond_str(c, "message"),
                        "Some resources are remaining: pods. has 1 resource instances");
    c = condition(w, "NamespaceFinalizersRemaining");
    assert_string_equal(cond_str(c, "status"), "True");
    assert_string_equal(cond_str(c, "reason"), "SomeFinalizersRemain");
    assert_string_equal(cond_str(c, "message"),
                        "Some content in the namespace has finalizers "
                        "remaining: example.com/hold in 1 resource instances");
    /* the finalizer goes: the next pass finalizes */
    json_array_clear(json_object_get(w->content.store, "pods"));
    assert_int_equal(ck_ns_controller_sync(w->c, "demo", NULL), 0);
    assert_non_null(w->content.finalized);
}

static void test_namespace_not_being_deleted_is_left_alone(void **state)
{
    struct world *w = *state;
    seed_namespace(w, false);
    add_content(w, "pods", fx_obj("v1", "Pod", "demo", "p1", "pod-1"));
    assert_int_equal(ck_ns_controller_sync(w->c, "demo", NULL), 0);
    assert_int_equal(w->content.collections, 0);
    assert_null(w->content.finalized);
    assert_int_equal(ck_fake_client_count(w->fc, "update-status", NULL), 0);
    /* and a namespace that is gone is no error */
    assert_int_equal(ck_ns_controller_sync(w->c, "nosuch", NULL), 0);
}

static void test_discovery_failure_is_reported_and_retried(void **state)
{
    struct world *w = *state;
    seed_namespace(w, true);
    fx_discovery_fail = "/apis/example.ckube.io/v1";
    struct ck_err err = {0};
    assert_true(ck_ns_controller_sync(w->c, "demo", &err) < 0);
    assert_null(w->content.finalized);
    const json_t *c = condition(w, "NamespaceDeletionDiscoveryFailure");
    assert_string_equal(cond_str(c, "status"), "True");
    assert_string_equal(cond_str(c, "reason"), "DiscoveryFailed");
    assert_non_null(strstr(cond_str(c, "message"), "Discovery failed for some groups, 1 failing"));
    fx_discovery_fail = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_content_deleted_then_namespace_finalized, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_resource_without_deletecollection_is_deleted_one_by_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finalizer_holds_namespace_with_conditions, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_namespace_not_being_deleted_is_left_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_discovery_failure_is_reported_and_retried, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
