/*
 * test_controller_utils.c - controller_utils.c, lister.c and the fake client: resources
 * from the kind descriptors, the event recorder, pods from templates, slow-start batches,
 * pod predicates and scale-down ranking (kubernetes controller_utils_test.go:
 * TestSortingActivePodsWithRanks, slow start), listers over an indexer, and the fake
 * client's tracker and scripts.
 */
#include "cktest.h"

#include <stdatomic.h>

#include "fixtures.h"

static void test_resources_come_from_kind_descriptors(void **state)
{
    (void)state;
    const struct ck_resource *pods = ck_controller_resource("", "v1", "pods");
    assert_non_null(pods);
    assert_string_equal(pods->group, "");
    assert_string_equal(pods->version, "v1");
    assert_string_equal(pods->resource, "pods");
    assert_true(pods->namespaced);
    assert_ptr_equal(ck_controller_resource(NULL, "v1", "pods"), pods); /* one per resource */
    const struct ck_resource *rss = ck_controller_resource("apps", "v1", "replicasets");
    assert_non_null(rss);
    assert_string_equal(rss->group, "apps");
    assert_true(rss->namespaced);
    const struct ck_resource *nss = ck_controller_resource("", "v1", "namespaces");
    assert_non_null(nss);
    assert_false(nss->namespaced);
    assert_null(ck_controller_resource("apps", "v1", "pods"));
    assert_null(ck_controller_resource("", "v1", "nosuchthings"));
}

static void test_pod_from_template(void **state)
{
    (void)state;
    json_t *rs = fx_rs("prod", "web", "rs-uid", 3, "web");
    json_t *tmeta =
        json_object_get(json_object_get(json_object_get(rs, "spec"), "template"), "metadata");
    json_object_set_new(tmeta, "annotations", json_pack("{s:s}", "a", "b"));
    json_object_set_new(tmeta, "finalizers", json_pack("[s]", "example.com/keep"));
    json_t *ref = ck_controller_ref_new(rs, "apps/v1", "ReplicaSet");
    json_t *pod =
        ck_pod_from_template(json_object_get(json_object_get(rs, "spec"), "template"), rs, ref);
    assert_non_null(pod);
    assert_string_equal(json_string_value(json_object_get(pod, "apiVersion")), "v1");
    assert_string_equal(json_string_value(json_object_get(pod, "kind")), "Pod");
    assert_string_equal(fx_meta(pod, "generateName"), "web-");
    assert_string_equal(fx_meta(pod, "namespace"), "prod");
    assert_null(fx_meta(pod, "name"));
    const json_t *meta = json_object_get(pod, "metadata");
    assert_true(json_equal(json_object_get(meta, "labels"), json_object_get(tmeta, "labels")));
    assert_true(
        json_equal(json_object_get(meta, "annotations"), json_object_get(tmeta, "annotations")));
    assert_true(
        json_equal(json_object_get(meta, "finalizers"), json_object_get(tmeta, "finalizers")));
    const json_t *refs = json_object_get(meta, "ownerReferences");
    assert_int_equal(json_array_size(refs), 1);
    assert_true(json_equal(json_array_get(refs, 0), ref));
    assert_string_equal(json_string_value(json_object_get(ref, "uid")), "rs-uid");
    assert_string_equal(json_string_value(json_object_get(ref, "name")), "web");
    assert_true(json_is_true(json_object_get(ref, "controller")));
    assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
    assert_true(json_equal(
        json_object_get(pod, "spec"),
        json_object_get(json_object_get(json_object_get(rs, "spec"), "template"), "spec")));
    json_decref(pod);

    /* without a controller reference there is no ownerReferences at all */
    pod = ck_pod_from_template(json_object_get(json_object_get(rs, "spec"), "template"), rs, NULL);
    assert_null(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"));
    json_decref(pod);
    json_decref(ref);
    json_decref(rs);
}

struct counted {
    atomic_int calls;
    int fail_at; /* the call (1-based) that fails; 0: none */
};

static int count_call(void *arg, struct ck_err *reterr)
{
    struct counted *c = arg;
    int n = atomic_fetch_add(&c->calls, 1) + 1;
    if (n == c->fail_at)
        return ck_err_set(reterr, CK_EIO, "call %d failed", n);
    return 0;
}

static void test_slow_start_batches(void **state)
{
    (void)state;
    struct counted c = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_slow_start_batch(7, 1, count_call, &c, &err), 7);
    assert_int_equal(atomic_load(&c.calls), 7);

    /* batches 1, 2, 4, 3: the failure in the third batch leaves the fourth unstarted */
    c = (struct counted){.fail_at = 4};
    assert_int_equal(ck_slow_start_batch(10, 1, count_call, &c, &err), 6);
    assert_int_equal(atomic_load(&c.calls), 7);
    assert_int_equal(err.code, CK_EIO);
    assert_string_equal(err.msg, "call 4 failed");

    /* a failure in the first batch stops everything at once */
    c = (struct counted){.fail_at = 1};
    assert_int_equal(ck_slow_start_batch(500, 1, count_call, &c, NULL), 0);
    assert_int_equal(atomic_load(&c.calls), 1);

    c = (struct counted){0};
    assert_int_equal(ck_slow_start_batch(0, 1, count_call, &c, NULL), 0);
    assert_int_equal(atomic_load(&c.calls), 0);
}

static void test_pod_predicates(void **state)
{
    (void)state;
    json_t *pod = fx_pod("default", "p", "web", NULL);
    assert_true(ck_pod_is_active(pod));
    assert_false(ck_pod_is_ready(pod, NULL));
    fx_pod_running(pod, "node-1", "2026-01-01T00:00:05Z");
    const char *since = NULL;
    assert_true(ck_pod_is_ready(pod, &since));
    assert_string_equal(since, "2026-01-01T00:00:05Z");
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded"));
    assert_false(ck_pod_is_active(pod));
    json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Running"));
    json_object_set_new(json_object_get(pod, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    assert_false(ck_pod_is_active(pod));
    json_decref(pod);
}

static void test_rank_for_deletion(void **state)
{
    (void)state;
    /* listed in the order ActivePodsWithRanks deletes them */
    json_t *unassigned = fx_pod("default", "unassigned", "web", NULL);
    json_t *pending = fx_pod("default", "pending", "web", NULL);
    json_object_set_new(json_object_get(pending, "spec"), "nodeName", json_string("node-1"));
    json_t *unknown = fx_pod("default", "unknown", "web", NULL);
    fx_pod_running(unknown, "node-1", NULL);
    json_object_set_new(json_object_get(unknown, "status"), "phase", json_string("Unknown"));
    json_t *not_ready = fx_pod("default", "not-ready", "web", NULL);
    fx_pod_running(not_ready, "node-2", NULL);
    json_t *doubled = fx_pod("default", "doubled", "web", NULL); /* node-1 has 3 of ours */
    fx_pod_running(doubled, "node-1", "2026-01-01T00:00:00Z");
    json_t *ready_recently = fx_pod("default", "ready-recently", "web", NULL);
    fx_pod_running(ready_recently, "node-3", "2026-01-01T00:10:00Z");
    json_t *restarted = fx_pod("default", "restarted", "web", NULL);
    fx_pod_running(restarted, "node-4", "2026-01-01T00:00:00Z");
    json_object_set_new(json_object_get(restarted, "status"), "containerStatuses",
                        json_pack("[{s:i}]", "restartCount", 3));
    json_t *newer = fx_pod("default", "newer", "web", NULL);
    fx_pod_running(newer, "node-5", "2026-01-01T00:00:00Z");
    json_object_set_new(json_object_get(newer, "metadata"), "creationTimestamp",
                        json_string("2026-01-01T00:00:01Z"));
    json_t *oldest = fx_pod("default", "oldest", "web", NULL);
    fx_pod_running(oldest, "node-6", "2026-01-01T00:00:00Z");

    const json_t *want[] = {unassigned,     pending,   unknown, not_ready, doubled,
                            ready_recently, restarted, newer,   oldest};
    size_t n = sizeof(want) / sizeof(want[0]);
    const json_t *pods[] = {oldest,    newer,   restarted, ready_recently, doubled,
                            not_ready, unknown, pending,   unassigned};
    assert_int_equal(ck_pods_rank_for_deletion(pods, n, NULL, 0), 0);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(fx_meta(pods[i], "name"), fx_meta(want[i], "name"));

    /* related pods count towards the rank: with many on node-6, "oldest" goes first of
     * the ready ones */
    json_t *sibling1 = fx_pod("default", "s1", "web", NULL),
           *sibling2 = fx_pod("default", "s2", "web", NULL);
    fx_pod_running(sibling1, "node-6", NULL);
    fx_pod_running(sibling2, "node-6", NULL);
    const json_t *ready[] = {newer, oldest};
    const json_t *related[] = {newer, oldest, sibling1, sibling2};
    assert_int_equal(ck_pods_rank_for_deletion(ready, 2, related, 4), 0);
    assert_string_equal(fx_meta(ready[0], "name"), "oldest");
    for (size_t i = 0; i < n; i++)
        json_decref((json_t *)want[i]);
    json_decref(sibling1);
    json_decref(sibling2);
}

static void test_event_sink_over_the_client(void **state)
{
    (void)state;
    struct ck_fake_client *fc = NULL;
    struct ck_ctl_client client;
    assert_int_equal(ck_fake_client_new(&fc, NULL), 0);
    ck_fake_client_iface(fc, &client);
    struct ck_ctl_event_sink sink_state;
    struct ck_event_sink sink;
    assert_int_equal(ck_ctl_event_sink_init(&sink_state, &client, &sink), 0);
    struct ck_event_recorder *rec = NULL;
    struct ck_event_recorder_options o = {.component = "replicaset-controller",
                                          .synchronous = true};
    assert_int_equal(ck_event_recorder_new(&o, &sink, &rec, NULL), 0);
    json_t *rs = fx_rs("prod", "web", "rs-uid", 1, "web");
    ck_event_recordf(rec, rs, CK_EVENT_WARNING, "FailedCreate", "Error creating: %s", "forbidden");
    const struct ck_fake_action *a = fx_action(fc, "create", "events", 0);
    assert_non_null(a);
    assert_string_equal(a->namespace, "prod");
    const json_t *ev = a->body;
    assert_memory_equal(fx_meta(ev, "name"), "web.", 4);
    assert_string_equal(json_string_value(json_object_get(ev, "type")), "Warning");
    assert_string_equal(json_string_value(json_object_get(ev, "reason")), "FailedCreate");
    assert_string_equal(json_string_value(json_object_get(ev, "message")),
                        "Error creating: forbidden");
    assert_int_equal(json_integer_value(json_object_get(ev, "count")), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ev, "source"), "component")),
        "replicaset-controller");
    const json_t *inv = json_object_get(ev, "involvedObject");
    assert_string_equal(json_string_value(json_object_get(inv, "kind")), "ReplicaSet");
    assert_string_equal(json_string_value(json_object_get(inv, "apiVersion")), "apps/v1");
    assert_string_equal(json_string_value(json_object_get(inv, "uid")), "rs-uid");
    assert_string_equal(json_string_value(json_object_get(inv, "name")), "web");
    assert_non_null(json_object_get(ev, "firstTimestamp"));

    /* the same event again: a strategic-merge patch of the first one's count */
    char first[320];
    snprintf(first, sizeof(first), "%s", fx_meta(ev, "name"));
    ck_event_recordf(rec, rs, CK_EVENT_WARNING, "FailedCreate", "Error creating: %s", "forbidden");
    const struct ck_fake_action *p = fx_action(fc, "patch", "events", 0);
    assert_non_null(p);
    assert_string_equal(p->name, first);
    assert_int_equal(json_integer_value(json_object_get(p->body, "count")), 2);

    /* an unknown type is dropped; a failing write is swallowed and counted */
    ck_fake_client_clear_actions(fc);
    ck_event_recordf(rec, rs, "Bogus", "X", "y");
    size_t n = 1;
    ck_fake_client_actions(fc, &n);
    assert_int_equal(n, 0);
    assert_int_equal(ck_fake_client_fail(fc, "create", NULL, -1, CK_EPERM, "no"), 0);
    ck_event_recordf(rec, rs, CK_EVENT_NORMAL, "SuccessfulCreate", "Created pod: %s", "web-1");
    assert_int_equal(fx_action(fc, "create", "events", 0)->result, CK_EPERM);
    struct ck_event_recorder_stats st;
    ck_event_recorder_stats(rec, &st);
    assert_int_equal(st.dropped, 1);
    ck_event_recorder_free(rec);
    json_decref(rs);
    ck_fake_client_free(fc);
}

static void test_lister_over_an_indexer(void **state)
{
    (void)state;
    struct fx_cache cache;
    fx_cache_init(&cache);
    fx_cache_add(&cache, fx_pod("a", "p2", "web", NULL));
    fx_cache_add(&cache, fx_pod("a", "p1", "web", NULL));
    fx_cache_add(&cache, fx_pod("a", "db", "db", NULL));
    fx_cache_add(&cache, fx_pod("b", "p3", "web", NULL));
    const json_t *obj = NULL;
    assert_int_equal(ck_lister_get(&cache.lister, "a", "p1", &obj), 0);
    assert_string_equal(fx_meta(obj, "name"), "p1");
    ck_cached_unref(obj);
    assert_int_equal(ck_lister_get(&cache.lister, "b", "p1", &obj), CK_ENOENT);

    struct ck_label_selector *sel = NULL;
    assert_int_equal(ck_label_selector_parse("app=web", &sel, NULL), 0);
    struct ck_obj_list l = {0};
    assert_int_equal(ck_lister_list(&cache.lister, "a", sel, &l, NULL), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(fx_meta(l.items[0], "name"), "p1"); /* key order */
    assert_string_equal(fx_meta(l.items[1], "name"), "p2");
    ck_obj_list_release(&l);
    assert_int_equal(ck_lister_list(&cache.lister, "", sel, &l, NULL), 0);
    assert_int_equal(l.n, 3);
    ck_obj_list_release(&l);
    assert_int_equal(ck_lister_list(&cache.lister, "a", NULL, &l, NULL), 0);
    assert_int_equal(l.n, 3);
    ck_obj_list_release(&l);
    fx_cache_release(&cache);

    /* an indexer without the namespace index filters a full list, in key order */
    struct ck_indexer *bare = NULL;
    struct ck_lister lister;
    assert_int_equal(ck_indexer_new(&bare, NULL), 0);
    ck_lister_init(&lister, bare);
    const char *names[] = {"z", "m", "a"};
    for (size_t i = 0; i < 3; i++) {
        json_t *pod = fx_pod(i == 1 ? "other" : "a", names[i], "web", NULL);
        assert_int_equal(ck_indexer_add(bare, pod, NULL), 0);
        ck_cached_unref(pod);
    }
    assert_int_equal(ck_lister_list(&lister, "a", sel, &l, NULL), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(fx_meta(l.items[0], "name"), "a");
    assert_string_equal(fx_meta(l.items[1], "name"), "z");
    ck_obj_list_release(&l);
    ck_indexer_free(bare);
    ck_label_selector_free(sel);
}

static void test_fake_client_tracks_objects(void **state)
{
    (void)state;
    struct ck_fake_client *fc = NULL;
    struct ck_ctl_client c;
    assert_int_equal(ck_fake_client_new(&fc, NULL), 0);
    ck_fake_client_iface(fc, &c);
    const struct ck_resource *pods = ck_controller_resource("", "v1", "pods");
    json_t *tmpl = json_pack("{s:{s:s}}", "metadata", "generateName", "web-");
    json_t *made = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_ctl_create(&c, pods, "ns", tmpl, &made, &err), 0);
    assert_string_equal(fx_meta(made, "name"), "web-1");
    assert_string_equal(fx_meta(made, "namespace"), "ns");
    assert_string_equal(fx_meta(made, "resourceVersion"), "1");
    assert_string_equal(fx_action(fc, "create", "pods", 0)->name, "web-1");

    /* update with a stale resourceVersion conflicts; with the right one it bumps it */
    json_t *stale = json_deep_copy(made);
    json_object_set_new(json_object_get(stale, "metadata"), "resourceVersion", json_string("0"));
    assert_int_equal(ck_ctl_update(&c, pods, "ns", stale, NULL, &err), CK_ECONFLICT);
    json_t *updated = NULL;
    assert_int_equal(ck_ctl_update(&c, pods, "ns", made, &updated, &err), 0);
    assert_string_equal(fx_meta(updated, "resourceVersion"), "2");
    json_t *got = NULL;
    assert_int_equal(ck_ctl_get(&c, pods, "ns", "web-1", &got, &err), 0);
    assert_true(json_equal(got, updated));
    assert_int_equal(ck_ctl_delete(&c, pods, "ns", "web-1", NULL, NULL, &err), 0);
    assert_int_equal(ck_ctl_delete(&c, pods, "ns", "web-1", NULL, NULL, &err), CK_ENOENT);

    /* scripts: twice, then back to normal */
    assert_int_equal(ck_fake_client_fail(fc, "create", pods, 2, CK_EPERM, "forbidden"), 0);
    assert_int_equal(ck_ctl_create(&c, pods, "ns", tmpl, NULL, &err), CK_EPERM);
    assert_string_equal(err.msg, "forbidden");
    assert_int_equal(ck_ctl_create(&c, pods, "ns", tmpl, NULL, &err), CK_EPERM);
    assert_int_equal(ck_ctl_create(&c, pods, "ns", tmpl, NULL, &err), 0);
    assert_int_equal(ck_fake_client_count(fc, "create", pods), 4);
    json_decref(tmpl);
    json_decref(made);
    json_decref(stale);
    json_decref(updated);
    json_decref(got);
    ck_fake_client_free(fc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resources_come_from_kind_descriptors),
        cmocka_unit_test(test_pod_from_template),
        cmocka_unit_test(test_slow_start_batches),
        cmocka_unit_test(test_pod_predicates),
        cmocka_unit_test(test_rank_for_deletion),
        cmocka_unit_test(test_event_sink_over_the_client),
        cmocka_unit_test(test_lister_over_an_indexer),
        cmocka_unit_test(test_fake_client_tracks_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
