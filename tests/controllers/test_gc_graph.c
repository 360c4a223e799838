/*
 * test_gc_graph.c - the garbage collector's graph and graph builder on fakes: events
 * are fed with ck_gc_observe and applied on the test's thread, the queues are read
 * back, and live reads answer from the fake client. Cases after Kubernetes'
 * garbagecollector_test.go: virtual owners, identity (uid) mismatch, several owners,
 * cycles of ownerReferences, the cross-namespace rules, and changes of references.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ckube/garbagecollector.h"
#include "controllers/fixtures.h"
#include "controllers/test_gc_fixtures.h"

static void test_unseen_owner_is_a_virtual_node_queued_for_a_check(void **state)
{
    struct gc_world *w = *state;
    json_t *pod = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
    fx_add_owner(pod, "apps/v1", "ReplicaSet", "web", "rs-1", true);
    gc_observe(w, CK_GC_ADD, pod, NULL);
    struct ck_gc_node_info info;
    assert_true(ck_gc_graph_node(w->gc, "rs-1", &info));
    assert_true(info.is_virtual);
    assert_int_equal(info.n_dependents, 1);
    assert_true(0 < gc_drain(ck_gc_delete_queue(w->gc), "rs-1"));
    /* the informer shows the owner: the node becomes real, keeps its dependent */
    json_t *rs = fx_obj("apps/v1", "ReplicaSet", "ns", "web", "rs-1");
    gc_observe(w, CK_GC_ADD, rs, NULL);
    assert_true(ck_gc_graph_node(w->gc, "rs-1", &info));
    assert_false(info.is_virtual);
    assert_int_equal(info.n_dependents, 1);
    assert_int_equal(ck_gc_graph_len(w->gc), 2);
    json_decref(pod);
    json_decref(rs);
}

static void test_virtual_owner_with_another_uid_is_removed_and_dependent_deleted(void **state)
{
    struct gc_world *w = *state;
    /* "web" exists on the server, but it is a newer object with another uid */
    json_t *rs, *pod;
    gc_seed_rs_and_pod(w, "ns", "rs-new", "rs-old", &rs, &pod);
    gc_observe(w, CK_GC_ADD, pod, NULL);
    gc_drain(ck_gc_delete_queue(w->gc), NULL);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "rs-old", NULL), 0);
    ck_gc_process_graph_changes(w->gc); /* the virtual delete */
    assert_false(ck_gc_graph_node(w->gc, "rs-old", NULL));
    assert_true(0 < gc_drain(ck_gc_delete_queue(w->gc), "pod-1"));
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", NULL), 0);
    const struct ck_fake_action *del = fx_action(w->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "p1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(del->body, "preconditions"), "uid")),
        "pod-1");
    assert_string_equal(json_string_value(json_object_get(del->body, "propagationPolicy")),
                        "Background");
    json_decref(rs);
    json_decref(pod);
}

static void test_several_owners_one_gone_only_loses_that_reference(void **state)
{
    struct gc_world *w = *state;
    json_t *a = fx_obj("apps/v1", "ReplicaSet", "ns", "a", "rs-a");
    assert_int_equal(
        ck_fake_client_seed(w->fc, ck_controller_resource("apps", "v1", "replicasets"), a), 0);
    json_t *pod = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
    fx_add_owner(pod, "apps/v1", "ReplicaSet", "a", "rs-a", false);
    fx_add_owner(pod, "apps/v1", "ReplicaSet", "b", "rs-b", false); /* b is gone */
    assert_int_equal(ck_fake_client_seed(w->fc, ck_controller_resource("", "v1", "pods"), pod), 0);
    gc_observe(w, CK_GC_ADD, a, NULL);
    gc_observe(w, CK_GC_ADD, pod, NULL);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "delete", NULL), 0);
    const struct ck_fake_action *p = fx_action(w->fc, "patch", "pods", 0);
    assert_non_null(p);
    /* [test uid, test resourceVersion, replace ownerReferences with a's only] */
    json_t *replace = json_array_get(p->body, 2);
    assert_string_equal(json_string_value(json_object_get(replace, "op")), "replace");
    json_t *kept = json_object_get(replace, "value");
    assert_int_equal(json_array_size(kept), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(kept, 0), "uid")), "rs-a");
    json_decref(a);
    json_decref(pod);
}

static void test_cycle_of_owner_references_does_not_hang(void **state)
{
    struct gc_world *w = *state;
    json_t *a = fx_obj("v1", "Pod", "ns", "a", "uid-a");
    json_t *b = fx_obj("v1", "Pod", "ns", "b", "uid-b");
    fx_add_owner(a, "v1", "Pod", "b", "uid-b", true);
    fx_add_owner(b, "v1", "Pod", "a", "uid-a", true);
    assert_int_equal(ck_fake_client_seed(w->fc, ck_controller_resource("", "v1", "pods"), b), 0);
    gc_observe(w, CK_GC_ADD, a, NULL);
    gc_observe(w, CK_GC_ADD, b, NULL);
    struct ck_gc_node_info info;
    assert_true(ck_gc_graph_node(w->gc, "uid-a", &info));
    assert_int_equal(info.n_dependents, 1);
    assert_false(info.is_virtual);
    /* foreground on a: b blocks it, a blocks b; every step returns */
    json_t *a_del = json_deep_copy(a);
    fx_deleting(a_del, "foregroundDeletion");
    assert_int_equal(ck_fake_client_seed(w->fc, ck_controller_resource("", "v1", "pods"), a_del),
                     0);
    gc_observe(w, CK_GC_UPDATE, a_del, a);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "uid-a", NULL), 0);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "uid-b", NULL), 0);
    /* b's only owner is waiting and b has a dependent (a): b is unblocked and deleted in
     * foreground */
    const struct ck_fake_action *del = fx_action(w->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "b");
    assert_string_equal(json_string_value(json_object_get(del->body, "propagationPolicy")),
                        "Foreground");
    /* a vanishes: b is queued, the graph shrinks, nothing loops */
    gc_observe(w, CK_GC_DELETE, a_del, NULL);
    assert_false(ck_gc_graph_node(w->gc, "uid-a", NULL));
    assert_true(0 < gc_drain(ck_gc_delete_queue(w->gc), "uid-b"));
    json_decref(a);
    json_decref(a_del);
    json_decref(b);
}

static void test_chain_in_foreground_keeps_blocking_the_top_owner(void **state)
{
    /* top <- mid <- leaf, every reference blocking (a Deployment, its ReplicaSet, a pod) */
    struct gc_world *w = *state;
    json_t *top = fx_obj("v1", "Pod", "ns", "top", "uid-top");
    json_t *mid = fx_obj("v1", "Pod", "ns", "mid", "uid-mid");
    json_t *leaf = fx_obj("v1", "Pod", "ns", "leaf", "uid-leaf");
    fx_add_owner(mid, "v1", "Pod", "top", "uid-top", true);
    fx_add_owner(leaf, "v1", "Pod", "mid", "uid-mid", true);
    json_t *top_del = json_deep_copy(top);
    fx_deleting(top_del, "foregroundDeletion");
    const struct ck_resource *pods = ck_controller_resource("", "v1", "pods");
    assert_int_equal(ck_fake_client_seed(w->fc, pods, top_del), 0);
    assert_int_equal(ck_fake_client_seed(w->fc, pods, mid), 0);
    assert_int_equal(ck_fake_client_seed(w->fc, pods, leaf), 0);
    gc_observe(w, CK_GC_ADD, top_del, NULL);
    gc_observe(w, CK_GC_ADD, mid, NULL);
    gc_observe(w, CK_GC_ADD, leaf, NULL);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "uid-mid", NULL), 0);
    /* mid is deleted in the foreground and its reference keeps blocking top: no patch
     * unblocks it (that is only for a possible cycle), so top waits for mid */
    const struct ck_fake_action *del = fx_action(w->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "mid");
    assert_string_equal(json_string_value(json_object_get(del->body, "propagationPolicy")),
                        "Foreground");
    assert_int_equal(ck_fake_client_count(w->fc, "patch", NULL), 0);
    json_t *mid_del = json_deep_copy(mid);
    fx_deleting(mid_del, "foregroundDeletion");
    gc_observe(w, CK_GC_UPDATE, mid_del, mid);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "uid-top", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "patch", NULL), 0); /* top keeps waiting */
    json_decref(top);
    json_decref(top_del);
    json_decref(mid);
    json_decref(mid_del);
    json_decref(leaf);
}

static void test_owner_in_another_namespace_is_reported_and_treated_absent(void **state)
{
    struct gc_world *w = *state;
    json_t *rs, *pod;
    gc_seed_rs_and_pod(w, "other", "rs-1", "rs-1", &rs, &pod);
    gc_observe(w, CK_GC_ADD, rs, NULL);
    gc_observe(w, CK_GC_ADD, pod, NULL);
    const struct ck_fake_action *ev = fx_action(w->fc, "create", "events", 0);
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev->body, "reason")),
                        "OwnerRefInvalidNamespace");
    assert_non_null(strstr(json_string_value(json_object_get(ev->body, "message")),
                           "does not exist in namespace \"ns\""));
    assert_true(0 < gc_drain(ck_gc_delete_queue(w->gc), "pod-1"));
    /* looked up in the pod's own namespace, the owner is absent: the pod goes */
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", NULL), 0);
    assert_non_null(fx_action(w->fc, "delete", "pods", 0));
    json_decref(rs);
    json_decref(pod);
}

static void test_cluster_scoped_dependent_of_namespaced_owner_is_never_deleted(void **state)
{
    struct gc_world *w = *state;
    json_t *node = fx_obj("v1", "Node", "", "n1", "node-1");
    fx_add_owner(node, "apps/v1", "ReplicaSet", "web", "rs-1", true);
    assert_int_equal(ck_fake_client_seed(w->fc, ck_controller_resource("", "v1", "nodes"), node),
                     0);
    gc_observe(w, CK_GC_ADD, node, NULL);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "node-1", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "delete", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "patch", NULL), 0);
    const struct ck_fake_action *ev = fx_action(w->fc, "create", "events", 0);
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev->body, "reason")),
                        "OwnerRefInvalidNamespace");
    json_decref(node);
}

static void test_removed_blocking_reference_requeues_the_owner(void **state)
{
    struct gc_world *w = *state;
    json_t *rs = fx_obj("apps/v1", "ReplicaSet", "ns", "web", "rs-1");
    json_t *pod = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
    fx_add_owner(pod, "apps/v1", "ReplicaSet", "web", "rs-1", true);
    gc_observe(w, CK_GC_ADD, rs, NULL);
    gc_observe(w, CK_GC_ADD, pod, NULL);
    gc_drain(ck_gc_delete_queue(w->gc), NULL);
    json_t *released = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
    gc_observe(w, CK_GC_UPDATE, released, pod);
    assert_true(0 < gc_drain(ck_gc_delete_queue(w->gc), "rs-1"));
    struct ck_gc_node_info info;
    assert_true(ck_gc_graph_node(w->gc, "rs-1", &info));
    assert_int_equal(info.n_dependents, 0);
    json_decref(rs);
    json_decref(pod);
    json_decref(released);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unseen_owner_is_a_virtual_node_queued_for_a_check,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(
            test_virtual_owner_with_another_uid_is_removed_and_dependent_deleted, gc_world_setup,
            gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_several_owners_one_gone_only_loses_that_reference,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_chain_in_foreground_keeps_blocking_the_top_owner,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_cycle_of_owner_references_does_not_hang,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(
            test_owner_in_another_namespace_is_reported_and_treated_absent, gc_world_setup,
            gc_world_teardown),
        cmocka_unit_test_setup_teardown(
            test_cluster_scoped_dependent_of_namespaced_owner_is_never_deleted, gc_world_setup,
            gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_removed_blocking_reference_requeues_the_owner,
                                        gc_world_setup, gc_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
