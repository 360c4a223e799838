/*
 * test_replicaset_sync.c - the ReplicaSet controller's sync and handlers on fakes: caches
 * the test fills (pods and ReplicaSets behind listers) and the fake client, no server,
 * no informers, no workers. Each test builds a world, runs one sync, and checks the
 * actions the client recorded, as kubernetes' replica_set_test.go does with the fake
 * clientset (TestSyncReplicaSetCreateFailures, TestSyncReplicaSetDormancy,
 * TestDeleteControllerAndExpectations, TestUpdatePods ...).
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/replicaset.h"
#include "fixtures.h"

struct env {
    struct fx_cache pods, rss;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_rs_controller *rsc;
    const struct ck_resource *pods_res, *rss_res;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->pods);
    fx_cache_init(&e->rss);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_rs_controller_deps deps = {
        .client = &e->client, .pods = &e->pods.lister, .replicasets = &e->rss.lister};
    assert_int_equal(ck_rs_controller_new_with(&deps, &e->rsc, NULL), 0);
    e->pods_res = ck_controller_resource("", "v1", "pods");
    e->rss_res = ck_controller_resource("apps", "v1", "replicasets");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_rs_controller_free(e->rsc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->rss);
    free(e);
    return 0;
}

/* Puts rs in the cache and on the fake server; returns a borrowed pointer to it. */
static json_t *add_rs(struct env *e, json_t *rs)
{
    assert_int_equal(ck_fake_client_seed(e->fc, e->rss_res, rs), 0);
    fx_cache_add(&e->rss, rs);
    return rs;
}

static void add_pod(struct env *e, json_t *pod)
{
    assert_int_equal(ck_fake_client_seed(e->fc, e->pods_res, pod), 0);
    fx_cache_add(&e->pods, pod);
}

static const json_t *status_written(struct env *e, size_t index)
{
    const struct ck_fake_action *a = fx_action(e->fc, "update-status", "replicasets", index);
    assert_non_null(a);
    return json_object_get(a->body, "status");
}

static json_int_t status_int(const json_t *status, const char *field)
{
    return json_integer_value(json_object_get(status, field));
}

static void test_sync_creates_missing_pods(void **state)
{
    struct env *e = *state;
    add_rs(e, fx_rs("default", "web", "rs-uid", 3, "web"));
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", &err), 0);

    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 3);
    for (size_t i = 0; i < 3; i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "create", "pods", i);
        assert_string_equal(a->namespace, "default");
        assert_string_equal(fx_meta(a->body, "generateName"), "web-");
        const json_t *labels = json_object_get(json_object_get(a->body, "metadata"), "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "app")), "web");
        const json_t *ref = ck_controller_ref(a->body);
        assert_string_equal(json_string_value(json_object_get(ref, "uid")), "rs-uid");
        assert_string_equal(json_string_value(json_object_get(ref, "kind")), "ReplicaSet");
        assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
    }
    /*
     * one SuccessfulCreate event per pod (PodControl.CreatePods); a slow-start batch
     * creates its pods on several threads, so the events come in any order
     */
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 6);
    char want[3][300];
    bool seen[3] = {false, false, false};
    for (size_t i = 0; i < 3; i++)
        snprintf(want[i], sizeof(want[i]), "Created pod: %s",
                 fx_action(e->fc, "create", "pods", i)->name);
    for (size_t i = 0; i < 3; i++) {
        const struct ck_fake_action *ev = fx_action(e->fc, "create", "events", i);
        assert_non_null(ev);
        assert_string_equal(json_string_value(json_object_get(ev->body, "type")), "Normal");
        assert_string_equal(json_string_value(json_object_get(ev->body, "reason")),
                            "SuccessfulCreate");
        const char *message = json_string_value(json_object_get(ev->body, "message"));
        size_t match = 3;
        for (size_t j = 0; j < 3; j++)
            if (!seen[j] && message && strcmp(message, want[j]) == 0)
                match = j;
        if (match == 3)
            fail_msg("event %zu: \"%s\" names no pod created, or one named already", i,
                     message ? message : "(none)");
        seen[match] = true;
        const json_t *inv = json_object_get(ev->body, "involvedObject");
        assert_string_equal(json_string_value(json_object_get(inv, "uid")), "rs-uid");
        assert_string_equal(json_string_value(json_object_get(inv, "kind")), "ReplicaSet");
    }
    /* status written from the cache's view (no pods yet) */
    const json_t *st = status_written(e, 0);
    assert_int_equal(status_int(st, "replicas"), 0);
    assert_int_equal(status_int(st, "observedGeneration"), 1);
    assert_null(json_object_get(st, "conditions"));

    /* the controller now waits for its informer to see the three creations */
    struct ck_expectations *exp = ck_rs_controller_expectations(e->rsc);
    int64_t adds = -1, dels = -1;
    assert_int_equal(ck_expectations_get(exp, "default/web", &adds, &dels), 0);
    assert_int_equal(adds, 3);
    assert_false(ck_expectations_satisfied(exp, "default/web"));
    ck_fake_client_clear_actions(e->fc);
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", &err), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 0);
}

static void test_sync_creates_at_most_a_burst(void **state)
{
    struct env *e = *state;
    add_rs(e, fx_rs("default", "big", "rs-uid", 600, "big"));
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/big", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), CK_RS_BURST_REPLICAS);
}

static void test_sync_deletes_surplus_in_rank_order(void **state)
{
    struct env *e = *state;
    json_t *rs = add_rs(e, fx_rs("default", "web", "rs-uid", 1, "web"));
    json_t *ready = fx_pod("default", "ready", "web", rs);
    fx_pod_running(ready, "node-1", "2026-01-01T00:00:00Z");
    json_t *not_ready = fx_pod("default", "not-ready", "web", rs);
    fx_pod_running(not_ready, "node-1", NULL);
    add_pod(e, ready);
    add_pod(e, not_ready);
    add_pod(e, fx_pod("default", "unassigned", "web", rs));
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", &err), 0);

    assert_int_equal(ck_fake_client_count(e->fc, "delete", NULL), 2);
    assert_string_equal(fx_action(e->fc, "delete", "pods", 0)->name, "unassigned");
    assert_string_equal(fx_action(e->fc, "delete", "pods", 1)->name, "not-ready");
    /* one SuccessfulDelete event per pod, and nothing else created */
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 2);
    const char *deleted[] = {"Deleted pod: unassigned", "Deleted pod: not-ready"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *ev = fx_action(e->fc, "create", "events", i)->body;
        assert_string_equal(json_string_value(json_object_get(ev, "reason")), "SuccessfulDelete");
        assert_string_equal(json_string_value(json_object_get(ev, "message")), deleted[i]);
    }
    struct ck_expectations *exp = ck_rs_controller_expectations(e->rsc);
    assert_int_equal(ck_expectations_pending_deletions(exp, "default/web"), 2);
    /* the status is the cache's view: three pods, one ready */
    const json_t *st = status_written(e, 0);
    assert_int_equal(status_int(st, "replicas"), 3);
    assert_int_equal(status_int(st, "readyReplicas"), 1);
    assert_int_equal(status_int(st, "availableReplicas"), 1);
    assert_int_equal(status_int(st, "fullyLabeledReplicas"), 3);
}

static void test_sync_adopts_orphans_and_releases_strays(void **state)
{
    struct env *e = *state;
    json_t *rs = add_rs(e, fx_rs("default", "web", "rs-uid", 2, "web"));
    add_pod(e, fx_pod("default", "orphan", "web", NULL));
    add_pod(e, fx_pod("default", "relabeled", "db", rs));
    add_pod(e, fx_pod("default", "mine", "web", rs));
    json_t *other = fx_rs("default", "other", "other-uid", 1, "web");
    add_pod(e, fx_pod("default", "theirs", "web", other));
    json_decref(other);
    add_pod(e, fx_pod("elsewhere", "far", "web", NULL)); /* another namespace */
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", NULL), 0);

    /* orphan adopted (after a fresh read of the owner), relabeled released, nothing else */
    assert_int_equal(ck_fake_client_count(e->fc, "update", e->pods_res), 2);
    const struct ck_fake_action *adopt = NULL, *release = NULL;
    for (size_t i = 0; i < 2; i++) {
        const struct ck_fake_action *a = fx_action(e->fc, "update", "pods", i);
        if (strcmp(a->name, "orphan") == 0)
            adopt = a;
        else if (strcmp(a->name, "relabeled") == 0)
            release = a;
    }
    assert_non_null(adopt);
    assert_non_null(release);
    assert_string_equal(json_string_value(json_object_get(ck_controller_ref(adopt->body), "uid")),
                        "rs-uid");
    assert_null(ck_controller_ref(release->body));
    assert_int_equal(ck_fake_client_count(e->fc, "get", e->rss_res), 1);
    /* two claimed (mine and the adopted orphan): nothing to create or delete */
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", NULL), 0);
    assert_int_equal(status_int(status_written(e, 0), "replicas"), 2);
}

static bool has_condition(const json_t *status, const char *type, const char *reason)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), type) == 0 &&
            strcmp(json_string_value(json_object_get(c, "reason")), reason) == 0)
            return true;
    }
    return false;
}

static void test_create_failure_records_event_and_condition(void **state)
{
    struct env *e = *state;
    add_rs(e, fx_rs("default", "web", "rs-uid", 5, "web"));
    assert_int_equal(ck_fake_client_fail(e->fc, "create", e->pods_res, -1, CK_EPERM,
                                         "pods \"web-\" is forbidden"),
                     0);
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", &err), CK_EPERM);
    assert_non_null(strstr(err.msg, "forbidden"));

    /* slow start: the first batch (one pod) failed, so no other was tried */
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 1);
    const struct ck_fake_action *ev = fx_action(e->fc, "create", "events", 0);
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev->body, "type")), "Warning");
    assert_string_equal(json_string_value(json_object_get(ev->body, "reason")), "FailedCreate");
    assert_string_equal(json_string_value(json_object_get(ev->body, "message")),
                        "Error creating: pods \"web-\" is forbidden");
    const json_t *st = status_written(e, 0);
    assert_true(has_condition(st, "ReplicaFailure", "FailedCreate"));
    /* none of the five will be observed: the expectations are met again */
    assert_true(ck_expectations_satisfied(ck_rs_controller_expectations(e->rsc), "default/web"));
}

static void test_delete_failure_records_event(void **state)
{
    struct env *e = *state;
    json_t *rs = add_rs(e, fx_rs("default", "web", "rs-uid", 0, "web"));
    add_pod(e, fx_pod("default", "p1", "web", rs));
    assert_int_equal(ck_fake_client_fail(e->fc, "delete", e->pods_res, -1, CK_EIO, "etcd is down"),
                     0);
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", &err), CK_EIO);
    const struct ck_fake_action *ev = fx_action(e->fc, "create", "events", 0);
    assert_non_null(ev);
    assert_string_equal(json_string_value(json_object_get(ev->body, "reason")), "FailedDelete");
    assert_true(has_condition(status_written(e, 0), "ReplicaFailure", "FailedDelete"));
    assert_int_equal(
        ck_expectations_pending_deletions(ck_rs_controller_expectations(e->rsc), "default/web"), 0);
}

static void test_status_conflict_retries_on_a_fresh_read(void **state)
{
    struct env *e = *state;
    add_rs(e, fx_rs("default", "web", "rs-uid", 0, "web"));
    assert_int_equal(ck_fake_client_fail(e->fc, "update-status", e->rss_res, 1, CK_ECONFLICT,
                                         "the object has been modified"),
                     0);
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", NULL), 0);
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(e->fc, &n);
    assert_int_equal(n, 3);
    assert_string_equal(a[0].verb, "update-status");
    assert_int_equal(a[0].result, CK_ECONFLICT);
    assert_string_equal(a[1].verb, "get");
    assert_string_equal(a[2].verb, "update-status");
    assert_int_equal(a[2].result, 0);
}

static void test_unchanged_status_is_not_written(void **state)
{
    struct env *e = *state;
    json_t *rs = fx_rs("default", "web", "rs-uid", 0, "web");
    json_object_set_new(rs, "status",
                        json_pack("{s:i, s:i, s:i, s:i, s:i}", "replicas", 0,
                                  "fullyLabeledReplicas", 0, "readyReplicas", 0,
                                  "availableReplicas", 0, "observedGeneration", 1));
    add_rs(e, rs);
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", NULL), 0);
    size_t n = 1;
    ck_fake_client_actions(e->fc, &n);
    assert_int_equal(n, 0);
}

static void test_deleted_replicaset_drops_its_expectations(void **state)
{
    struct env *e = *state;
    struct ck_expectations *exp = ck_rs_controller_expectations(e->rsc);
    assert_int_equal(ck_expectations_expect_creations(exp, "default/gone", 2), 0);
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/gone", NULL), 0);
    int64_t adds, dels;
    assert_int_equal(ck_expectations_get(exp, "default/gone", &adds, &dels), CK_ENOENT);
    size_t n = 1;
    ck_fake_client_actions(e->fc, &n);
    assert_int_equal(n, 0);
}

static void test_replicaset_being_deleted_is_not_scaled(void **state)
{
    struct env *e = *state;
    json_t *rs = fx_rs("default", "web", "rs-uid", 3, "web");
    json_object_set_new(json_object_get(rs, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    add_rs(e, rs);
    assert_int_equal(ck_rs_controller_sync(e->rsc, "default/web", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", NULL), 1);
}

static void test_handlers_observe_and_enqueue(void **state)
{
    struct env *e = *state;
    json_t *rs = add_rs(e, fx_rs("default", "web", "rs-uid", 2, "web"));
    struct ck_event_handler rs_h, pod_h;
    ck_rs_controller_handlers(e->rsc, &rs_h, &pod_h);
    struct ck_wq *q = ck_rs_controller_queue(e->rsc);
    struct ck_expectations *exp = ck_rs_controller_expectations(e->rsc);
    assert_int_equal(ck_expectations_expect_creations(exp, "default/web", 2), 0);

    /* a pod we created shows up: one creation observed, owner queued */
    json_t *pod = fx_pod("default", "web-1", "web", rs);
    pod_h.on_add(pod, false, pod_h.arg);
    int64_t adds, dels;
    assert_int_equal(ck_expectations_get(exp, "default/web", &adds, &dels), 0);
    assert_int_equal(adds, 1);
    assert_true(ck_wq_contains(q, "default/web"));
    const char *key = NULL;
    assert_int_equal(ck_wq_try_get(q, &key), 0);
    ck_wq_done(q, key);

    /* an orphan with matching labels queues every matching ReplicaSet of its namespace */
    json_t *orphan = fx_pod("default", "stray", "web", NULL);
    pod_h.on_add(orphan, false, pod_h.arg);
    assert_true(ck_wq_contains(q, "default/web"));
    assert_int_equal(ck_wq_try_get(q, &key), 0);
    ck_wq_done(q, key);

    /* a pod of a ReplicaSet we do not know (other uid) queues nothing */
    json_t *other = fx_rs("default", "web", "another-uid", 1, "web");
    json_t *foreign = fx_pod("default", "x", "web", other);
    pod_h.on_add(foreign, false, pod_h.arg);
    assert_int_equal(ck_wq_len(q), 0);

    /* a deleted ReplicaSet forgets its expectations */
    rs_h.on_delete(rs, NULL, rs_h.arg);
    assert_int_equal(ck_expectations_get(exp, "default/web", &adds, &dels), CK_ENOENT);
    assert_true(ck_wq_contains(q, "default/web"));
    json_decref(pod);
    json_decref(orphan);
    json_decref(other);
    json_decref(foreign);
}

/* Takes every queued key; returns how many there were and whether `want` was one. */
static size_t drain(struct ck_wq *q, const char *want, bool *ret_seen)
{
    size_t n = 0;
    const char *key = NULL;
    *ret_seen = false;
    while (ck_wq_try_get(q, &key) == 0) {
        *ret_seen = *ret_seen || strcmp(key, want) == 0;
        ck_wq_done(q, key);
        n++;
    }
    return n;
}

static void test_pod_updates_enqueue_owners_and_observe_deletions(void **state)
{
    struct env *e = *state;
    json_t *web = add_rs(e, fx_rs("default", "web", "web-uid", 1, "web"));
    add_rs(e, fx_rs("default", "db", "db-uid", 1, "db"));
    struct ck_event_handler rs_h, pod_h;
    ck_rs_controller_handlers(e->rsc, &rs_h, &pod_h);
    struct ck_wq *q = ck_rs_controller_queue(e->rsc);
    struct ck_expectations *exp = ck_rs_controller_expectations(e->rsc);
    bool seen = false;

    /* the same resourceVersion is no change: nothing queued */
    json_t *old = fx_pod("default", "p", "web", web);
    json_t *same = json_deep_copy(old);
    pod_h.on_update(old, same, pod_h.arg);
    assert_int_equal(drain(q, "default/web", &seen), 0);

    /* released and relabeled to db: the old owner and the now matching db are queued */
    json_t *moved = fx_pod("default", "p", "db", NULL);
    json_object_set_new(json_object_get(moved, "metadata"), "resourceVersion", json_string("2"));
    pod_h.on_update(old, moved, pod_h.arg);
    assert_int_equal(drain(q, "default/web", &seen), 2);
    assert_true(seen);

    /* a deletionTimestamp counts as the observed deletion of a tracked pod, once */
    const char *victims[] = {"default/p"};
    assert_int_equal(ck_expectations_expect_deletions_of(exp, "default/web", victims, 1), 0);
    json_t *dying = json_deep_copy(old);
    json_object_set_new(json_object_get(dying, "metadata"), "resourceVersion", json_string("3"));
    json_object_set_new(json_object_get(dying, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    pod_h.on_update(old, dying, pod_h.arg);
    assert_int_equal(ck_expectations_pending_deletions(exp, "default/web"), 0);
    assert_true(ck_expectations_satisfied(exp, "default/web"));
    pod_h.on_delete(dying, NULL, pod_h.arg);
    int64_t adds, dels;
    assert_int_equal(ck_expectations_get(exp, "default/web", &adds, &dels), 0);
    assert_int_equal(dels, 0); /* not twice */
    assert_int_equal(drain(q, "default/web", &seen), 1);
    assert_true(seen);
    json_decref(old);
    json_decref(same);
    json_decref(moved);
    json_decref(dying);
}

/* One sync of a world with `pods` pods for a ReplicaSet of `replicas`, failing allocation n. */
static int sync_failing_at(unsigned long n, int replicas, int pods, unsigned long *ret_made)
{
    void *state = NULL;
    setup(&state);
    struct env *e = state;
    json_t *rs = add_rs(e, fx_rs("default", "web", "rs-uid", replicas, "web"));
    for (int i = 0; i < pods; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        add_pod(e, fx_pod("default", name, "web", i % 2 ? rs : NULL));
    }
    struct ck_err err = {0};
    ck__alloc_fail_at(n, false);
    int r = ck_rs_controller_sync(e->rsc, "default/web", &err);
    *ret_made = ck__alloc_fail_at(0, false);
    teardown(&state);
    return r;
}

/*
 * Every allocation of a sync (and of what it calls through the interfaces) fails in
 * turn: the sync returns 0 or CK_ENOMEM, never crashes, and leaks nothing (the sanitizer
 * checks at exit), until it runs with no failure at all.
 */
static void test_sync_survives_allocation_failures(void **state)
{
    (void)state;
    const int worlds[][2] = {{3, 0}, {1, 4}, {2, 2}};
    for (size_t w = 0; w < sizeof(worlds) / sizeof(worlds[0]); w++) {
        unsigned long n = 1, made = 0;
        for (;; n++) {
            int r = sync_failing_at(n, worlds[w][0], worlds[w][1], &made);
            if (r != 0 && r != CK_ENOMEM)
                fail_msg("world %zu, allocation %lu: sync returned %d", w, n, r);
            if (made < n)
                break; /* the nth allocation never came: the sync ran unhindered */
        }
        assert_true(n > 1);
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_sync_creates_missing_pods),
        T(test_sync_creates_at_most_a_burst),
        T(test_sync_deletes_surplus_in_rank_order),
        T(test_sync_adopts_orphans_and_releases_strays),
        T(test_create_failure_records_event_and_condition),
        T(test_delete_failure_records_event),
        T(test_status_conflict_retries_on_a_fresh_read),
        T(test_unchanged_status_is_not_written),
        T(test_deleted_replicaset_drops_its_expectations),
        T(test_replicaset_being_deleted_is_not_scaled),
        T(test_handlers_observe_and_enqueue),
        T(test_pod_updates_enqueue_owners_and_observe_deletions),
        cmocka_unit_test(test_sync_survives_allocation_failures),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
