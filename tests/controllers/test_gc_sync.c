/*
 * test_gc_sync.c - the garbage collector's attemptToDelete and attemptToOrphan syncs on
 * fakes, one policy at a time: background (owner gone: dependents deleted with a uid
 * precondition), foreground (dependents deleted, the owner waits for blocking ones,
 * then loses foregroundDeletion), orphan (references removed, then the finalizer), a
 * deletion already in progress when the collector starts, and failures retried.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ckube/garbagecollector.h"
#include "ckube/internal/util.h"
#include "controllers/fixtures.h"
#include "controllers/test_gc_fixtures.h"

/* An rs "web" (uid rs-1) with pods p1, p2 owned with blockOwnerDeletion; all seeded. */
static void world_rs_with_pods(struct gc_world *w, json_t **ret_rs, json_t **ret_pods)
{
    *ret_rs = fx_obj("apps/v1", "ReplicaSet", "ns", "web", "rs-1");
    assert_int_equal(ck_fake_client_seed(w->fc, w->rss, *ret_rs), 0);
    gc_observe(w, CK_GC_ADD, *ret_rs, NULL);
    for (int i = 0; i < 2; i++) {
        char name[8], uid[8];
        snprintf(name, sizeof(name), "p%d", i + 1);
        snprintf(uid, sizeof(uid), "pod-%d", i + 1);
        ret_pods[i] = fx_obj("v1", "Pod", "ns", name, uid);
        fx_add_owner(ret_pods[i], "apps/v1", "ReplicaSet", "web", "rs-1", true);
        assert_int_equal(ck_fake_client_seed(w->fc, w->pods, ret_pods[i]), 0);
        gc_observe(w, CK_GC_ADD, ret_pods[i], NULL);
    }
    gc_drain(ck_gc_delete_queue(w->gc), NULL);
}

static void test_background_owner_gone_deletes_dependents(void **state)
{
    struct gc_world *w = *state;
    json_t *rs, *pods[2];
    world_rs_with_pods(w, &rs, pods);
    /* the server removed the rs at once (no finalizers): its delete event arrives */
    struct ck_err err = {0};
    struct ck_ctl_client c;
    ck_fake_client_iface(w->fc, &c);
    assert_int_equal(ck_ctl_delete(&c, w->rss, "ns", "web", NULL, NULL, &err), 0);
    ck_fake_client_clear_actions(w->fc);
    gc_observe(w, CK_GC_DELETE, rs, NULL);
    assert_int_equal(gc_drain(ck_gc_delete_queue(w->gc), "pod-1"), 1);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", NULL), 0);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-2", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "delete", w->pods), 2);
    const struct ck_fake_action *del = fx_action(w->fc, "delete", "pods", 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(del->body, "preconditions"), "uid")),
        "pod-2");
    json_decref(rs);
    json_decref(pods[0]);
    json_decref(pods[1]);
}

static void test_foreground_waits_for_blocking_dependents_then_drops_finalizer(void **state)
{
    struct gc_world *w = *state;
    json_t *rs, *pods[2];
    world_rs_with_pods(w, &rs, pods);
    json_t *rs_del = json_deep_copy(rs);
    fx_deleting(rs_del, "foregroundDeletion");
    assert_int_equal(ck_fake_client_seed(w->fc, w->rss, rs_del), 0);
    gc_observe(w, CK_GC_UPDATE, rs_del, rs);
    struct ck_gc_node_info info;
    assert_true(ck_gc_graph_node(w->gc, "rs-1", &info));
    assert_true(info.deleting_dependents);
    struct ck_wq *q = ck_gc_delete_queue(w->gc);
    assert_int_equal(ck_wq_len(q), 3); /* both pods and the owner */
    gc_drain(q, NULL);
    /* the owner waits: its pods block it */
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "rs-1", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "patch", NULL), 0);
    assert_int_equal(gc_drain(q, "pod-1"), 1);
    /* each pod's only owner is waiting and it has no dependents: background delete */
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", NULL), 0);
    const struct ck_fake_action *del = fx_action(w->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(json_string_value(json_object_get(del->body, "propagationPolicy")),
                        "Background");
    /* one pod gone: the owner is looked at again, still blocked by p2 */
    gc_observe(w, CK_GC_DELETE, pods[0], NULL);
    assert_int_equal(gc_drain(q, "rs-1"), 1);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "rs-1", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "patch", NULL), 0);
    /* p2 gone too: the finalizer goes */
    gc_observe(w, CK_GC_DELETE, pods[1], NULL);
    assert_int_equal(gc_drain(q, "rs-1"), 1);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "rs-1", NULL), 0);
    const struct ck_fake_action *p = fx_action(w->fc, "patch", "replicasets", 0);
    assert_non_null(p);
    json_t *op = json_array_get(p->body, json_array_size(p->body) - 1);
    assert_string_equal(json_string_value(json_object_get(op, "op")), "remove");
    assert_string_equal(json_string_value(json_object_get(op, "path")), "/metadata/finalizers");
    json_decref(rs);
    json_decref(rs_del);
    json_decref(pods[0]);
    json_decref(pods[1]);
}

static void test_orphan_removes_references_then_finalizer(void **state)
{
    struct gc_world *w = *state;
    json_t *rs, *pods[2];
    world_rs_with_pods(w, &rs, pods);
    json_t *rs_del = json_deep_copy(rs);
    fx_deleting(rs_del, "orphan");
    assert_int_equal(ck_fake_client_seed(w->fc, w->rss, rs_del), 0);
    gc_observe(w, CK_GC_UPDATE, rs_del, rs);
    assert_int_equal(gc_drain(ck_gc_orphan_queue(w->gc), "rs-1"), 1);
    assert_int_equal(ck_gc_attempt_to_orphan(w->gc, "rs-1", NULL), 0);
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(w->fc, &n);
    /* get + patch per pod, then get + patch of the owner; never a delete */
    assert_int_equal(ck_fake_client_count(w->fc, "patch", w->pods), 2);
    assert_int_equal(ck_fake_client_count(w->fc, "delete", NULL), 0);
    assert_string_equal(a[n - 1].verb, "patch");
    assert_string_equal(a[n - 1].resource, "replicasets");
    json_t *pod_patch = fx_action(w->fc, "patch", "pods", 0)->body;
    json_t *last = json_array_get(pod_patch, json_array_size(pod_patch) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "path")),
                        "/metadata/ownerReferences");
    assert_string_equal(json_string_value(json_object_get(last, "op")), "remove");
    json_decref(rs);
    json_decref(rs_del);
    json_decref(pods[0]);
    json_decref(pods[1]);
}

static void test_deletion_in_progress_at_start_is_finished(void **state)
{
    struct gc_world *w = *state;
    /* a restarted collector first sees the owner already deleting in foreground */
    json_t *rs = fx_obj("apps/v1", "ReplicaSet", "ns", "web", "rs-1");
    fx_deleting(rs, "foregroundDeletion");
    assert_int_equal(ck_fake_client_seed(w->fc, w->rss, rs), 0);
    gc_observe(w, CK_GC_ADD, rs, NULL);
    struct ck_gc_node_info info;
    assert_true(ck_gc_graph_node(w->gc, "rs-1", &info));
    assert_true(info.deleting_dependents);
    assert_int_equal(gc_drain(ck_gc_delete_queue(w->gc), "rs-1"), 1);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "rs-1", NULL), 0);
    assert_non_null(fx_action(w->fc, "patch", "replicasets", 0));
    /* the same for orphan */
    json_t *rs2 = fx_obj("apps/v1", "ReplicaSet", "ns", "old", "rs-2");
    fx_deleting(rs2, "orphan");
    gc_observe(w, CK_GC_ADD, rs2, NULL);
    assert_int_equal(gc_drain(ck_gc_orphan_queue(w->gc), "rs-2"), 1);
    json_decref(rs);
    json_decref(rs2);
}

static void test_failed_live_read_is_retried(void **state)
{
    struct gc_world *w = *state;
    json_t *rs, *pods[2];
    world_rs_with_pods(w, &rs, pods);
    ck_fake_client_fail(w->fc, "get", w->pods, 1, CK_EIO, "connection refused");
    struct ck_err err = {0};
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", &err), CK_EIO);
    assert_int_equal(ck_fake_client_count(w->fc, "delete", NULL), 0);
    /* the owner exists: nothing to do once the read works */
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "delete", NULL), 0);
    assert_int_equal(ck_fake_client_count(w->fc, "patch", NULL), 0);
    json_decref(rs);
    json_decref(pods[0]);
    json_decref(pods[1]);
}

static void test_owner_of_an_unserved_kind_is_never_taken_for_absent(void **state)
{
    struct gc_world *w = *state;
    json_t *pod = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
    fx_add_owner(pod, "example.com/v1", "Gizmo", "g", "gizmo-1", true);
    assert_int_equal(ck_fake_client_seed(w->fc, w->pods, pod), 0);
    gc_observe(w, CK_GC_ADD, pod, NULL);
    struct ck_err err = {0};
    /* the virtual owner cannot be looked up: an error to retry, not a deletion */
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "gizmo-1", &err), CK_EINVAL);
    assert_int_equal(ck_gc_attempt_to_delete(w->gc, "pod-1", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "Gizmo"));
    assert_int_equal(ck_fake_client_count(w->fc, "delete", NULL), 0);
    json_decref(pod);
}

/*
 * Every allocation of an observe + apply + background sync failing in turn: no crash,
 * no leak (AddressSanitizer), and once nothing fails, the dependent is deleted.
 */
static void test_every_allocation_failing_in_turn(void **state)
{
    (void)state;
    for (unsigned long n = 1;; n++) {
        void *ws = NULL;
        gc_world_setup(&ws);
        struct gc_world *w = ws;
        json_t *pod = fx_obj("v1", "Pod", "ns", "p1", "pod-1");
        fx_add_owner(pod, "apps/v1", "ReplicaSet", "gone", "rs-gone", true);
        assert_int_equal(ck_fake_client_seed(w->fc, w->pods, pod), 0);
        ck__alloc_fail_at(n, false);
        if (ck_gc_observe(w->gc, CK_GC_ADD, "v1", "Pod", pod, NULL) == 0)
            ck_gc_process_graph_changes(w->gc);
        int r = ck_gc_attempt_to_delete(w->gc, "pod-1", NULL);
        unsigned long made = ck__alloc_fail_at(0, false);
        bool deleted = r == 0 && ck_fake_client_count(w->fc, "delete", w->pods) == 1;
        json_decref(pod);
        gc_world_teardown(&ws);
        if (made < n) { /* nothing failed: the whole path ran */
            assert_true(deleted);
            break;
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_background_owner_gone_deletes_dependents,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(
            test_foreground_waits_for_blocking_dependents_then_drops_finalizer, gc_world_setup,
            gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_orphan_removes_references_then_finalizer,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_deletion_in_progress_at_start_is_finished,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test_setup_teardown(test_owner_of_an_unserved_kind_is_never_taken_for_absent,
                                        gc_world_setup, gc_world_teardown),
        cmocka_unit_test(test_every_allocation_failing_in_turn),
        cmocka_unit_test_setup_teardown(test_failed_live_read_is_retried, gc_world_setup,
                                        gc_world_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
