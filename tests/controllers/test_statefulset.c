/*
 * test_statefulset.c - the StatefulSet controller's decisions on the fake client and
 * caches the test fills: OrderedReady creates one pod at a time and waits for it to be
 * Ready, Parallel creates them all; pods carry their identity, labels and claim; a claim
 * is created before its pod; scale down deletes the highest ordinal first; a rolling
 * update stops at the partition; a first sync records a ControllerRevision; the revision
 * hash is Kubernetes' (FNV-32 of the data's Go encoding and the collision count);
 * MaxUnavailableStatefulSet on deletes up to maxUnavailable stale pods, off one;
 * minReadySeconds holds availableReplicas and OrderedReady creation on the injected clock;
 * whenScaled Delete gives a scaled-away pod's claims to the pod; revisions beyond
 * revisionHistoryLimit are deleted, the oldest first, never a live one.
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/statefulset.h"
#include "fixtures.h"

struct env {
    struct fx_cache pods, sets, revisions;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_sts_controller *sc;
    const struct ck_resource *sets_res, *claims_res, *revisions_res;
    int64_t now; /* the injected wall clock, ns */
    int gate;    /* MaxUnavailableStatefulSet: -1 not given, 0 off, 1 on */
};

static int64_t fake_now(void *arg)
{
    return ((struct env *)arg)->now;
}

static bool fake_gate(void *ctx, const char *feature)
{
    return strcmp(feature, "MaxUnavailableStatefulSet") == 0 && ((struct env *)ctx)->gate == 1;
}

static void make_controller(struct env *e)
{
    ck_sts_controller_free(e->sc);
    struct ck_sts_controller_deps deps = {.client = &e->client,
                                          .pods = &e->pods.lister,
                                          .statefulsets = &e->sets.lister,
                                          .revisions = &e->revisions.lister,
                                          .now = fake_now,
                                          .now_arg = e,
                                          .feature_enabled = e->gate >= 0 ? fake_gate : NULL,
                                          .feature_ctx = e};
    assert_int_equal(ck_sts_controller_new_with(&deps, &e->sc, NULL), 0);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->pods);
    fx_cache_init(&e->sets);
    fx_cache_init(&e->revisions);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    e->gate = -1;
    e->now = (int64_t)1767225600 * CK_SEC; /* 2026-01-01T00:00:00Z */
    make_controller(e);
    e->sets_res = ck_controller_resource("apps", "v1", "statefulsets");
    e->claims_res = ck_controller_resource("", "v1", "persistentvolumeclaims");
    e->revisions_res = ck_controller_resource("apps", "v1", "controllerrevisions");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_sts_controller_free(e->sc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->sets);
    fx_cache_release(&e->revisions);
    free(e);
    return 0;
}

/* A StatefulSet "db" of app=db with a claim template "data"; returns a borrowed pointer. */
static json_t *add_set(struct env *e, int replicas, const char *policy, int partition)
{
    json_t *set = fx_rs("ns", "db", "set-uid", replicas, "db");
    json_object_set_new(set, "kind", json_string("StatefulSet"));
    json_t *spec = json_object_get(set, "spec");
    json_object_set_new(spec, "serviceName", json_string("db"));
    json_object_set_new(spec, "podManagementPolicy", json_string(policy));
    json_object_set_new(spec, "updateStrategy",
                        json_pack("{s:s, s:{s:i}}", "type", "RollingUpdate", "rollingUpdate",
                                  "partition", partition));
    json_object_set_new(spec, "volumeClaimTemplates",
                        json_pack("[{s:{s:s}, s:{s:[s]}}]", "metadata", "name", "data", "spec",
                                  "accessModes", "ReadWriteOnce"));
    assert_int_equal(ck_fake_client_seed(e->fc, e->sets_res, set), 0);
    fx_cache_add(&e->sets, set);
    return set;
}

/* Pod db-<ordinal> of the set, Running and Ready unless !ready, with a revision label. */
static void add_pod(struct env *e, const json_t *set, int ordinal, bool ready, const char *rev)
{
    char name[32];
    snprintf(name, sizeof(name), "db-%d", ordinal);
    json_t *pod = fx_pod("ns", name, "db", NULL);
    json_object_set_new(json_object_get(pod, "metadata"), "ownerReferences",
                        json_pack("[o]", ck_controller_ref_new(set, "apps/v1", "StatefulSet")));
    json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "labels"),
                        "controller-revision-hash", json_string(rev));
    fx_pod_running(pod, "n-0", ready ? "2026-01-01T00:00:00Z" : NULL);
    fx_cache_add(&e->pods, pod);
}

static void sync(struct env *e)
{
    struct ck_err err = {0};
    assert_int_equal(ck_sts_controller_sync(e->sc, "ns/db", &err), 0);
}

static const char *update_revision(const json_t *set, char *buf, size_t size)
{
    return ck_sts_revision_name(set, 0, buf, size);
}

/* The sync deleted exactly the objects of resource named (NULL-terminated), in order. */
static void assert_deleted(struct env *e, const char *resource, const char *const *names)
{
    size_t i = 0;
    for (; names[i]; i++) {
        const struct ck_fake_action *del = fx_action(e->fc, "delete", resource, i);
        assert_non_null(del);
        assert_string_equal(del->name, names[i]);
    }
    assert_null(fx_action(e->fc, "delete", resource, i));
}

/* A controller with MaxUnavailableStatefulSet at gate, and a set of 3 with maxUnavailable. */
static json_t *max_unavailable_set(struct env *e, int gate, const char *policy, json_t *max)
{
    e->gate = gate;
    make_controller(e);
    json_t *set = add_set(e, 3, policy, 0);
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(set, "spec"), "updateStrategy"),
                        "rollingUpdate"),
        "maxUnavailable", max);
    return set;
}

static void test_ordered_ready_creates_one_pod_with_identity_and_claim(void **state)
{
    struct env *e = *state;
    add_set(e, 3, "OrderedReady", 0);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL) > 0, true);
    const struct ck_fake_action *claim = fx_action(e->fc, "create", "persistentvolumeclaims", 0);
    const struct ck_fake_action *pod = fx_action(e->fc, "create", "pods", 0);
    assert_non_null(claim);
    assert_non_null(pod);
    assert_null(fx_action(e->fc, "create", "pods", 1)); /* one at a time */
    assert_true(claim < pod);                           /* the claim first */
    assert_string_equal(fx_meta(claim->body, "name"), "data-db-0");
    assert_string_equal(fx_meta(pod->body, "name"), "db-0");
    const json_t *labels = json_object_get(json_object_get(pod->body, "metadata"), "labels");
    assert_string_equal(
        json_string_value(json_object_get(labels, "statefulset.kubernetes.io/pod-name")), "db-0");
    assert_string_equal(json_string_value(json_object_get(labels, "apps.kubernetes.io/pod-index")),
                        "0");
    const json_t *spec = json_object_get(pod->body, "spec");
    assert_string_equal(json_string_value(json_object_get(spec, "hostname")), "db-0");
    assert_string_equal(json_string_value(json_object_get(spec, "subdomain")), "db");
    const json_t *vol = json_array_get(json_object_get(spec, "volumes"), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(vol, "persistentVolumeClaim"), "claimName")),
                        "data-db-0");
    assert_non_null(fx_action(e->fc, "create", "controllerrevisions", 0));
}

static void test_ordered_ready_waits_for_ready(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 3, "OrderedReady", 0);
    update_revision(set, rev, sizeof(rev));
    add_pod(e, set, 0, false, rev);
    sync(e);
    assert_null(fx_action(e->fc, "create", "pods", 0)); /* db-0 is not Ready yet */
}

static void test_ordered_ready_creates_next_after_ready(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 3, "OrderedReady", 0);
    update_revision(set, rev, sizeof(rev));
    add_pod(e, set, 0, true, rev);
    sync(e);
    const struct ck_fake_action *pod = fx_action(e->fc, "create", "pods", 0);
    assert_non_null(pod);
    assert_string_equal(fx_meta(pod->body, "name"), "db-1");
    assert_null(fx_action(e->fc, "create", "pods", 1));
}

static void test_parallel_creates_all(void **state)
{
    struct env *e = *state;
    add_set(e, 3, "Parallel", 0);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL) >= 3, true);
    assert_non_null(fx_action(e->fc, "create", "pods", 2));
}

static void test_scale_down_deletes_highest_first(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 1, "OrderedReady", 0);
    update_revision(set, rev, sizeof(rev));
    for (int i = 0; i < 3; i++)
        add_pod(e, set, i, true, rev);
    sync(e);
    assert_deleted(e, "pods", (const char *const[]){"db-2", NULL});
}

static void test_rolling_update_stops_at_partition(void **state)
{
    struct env *e = *state;
    json_t *set = add_set(e, 3, "OrderedReady", 2);
    add_pod(e, set, 0, true, "db-old");
    add_pod(e, set, 1, true, "db-old");
    char rev[256];
    add_pod(e, set, 2, true, update_revision(set, rev, sizeof(rev)));
    sync(e);
    /* db-2 is updated already; db-1 and db-0 are below the partition */
    assert_null(fx_action(e->fc, "delete", "pods", 0));
}

static void test_rolling_update_deletes_highest_stale_pod(void **state)
{
    struct env *e = *state;
    json_t *set = add_set(e, 3, "OrderedReady", 1);
    for (int i = 0; i < 3; i++)
        add_pod(e, set, i, true, "db-old");
    sync(e);
    assert_deleted(e, "pods", (const char *const[]){"db-2", NULL});
}

static void test_revision_hash_is_kubernetes(void **state)
{
    (void)state;
    /* FNV-32 over {"spec":{"template":{"$patch":"replace",...}}} as Go's json.Marshal
     * writes it (sorted keys, <, > and & escaped), then the collision count */
    json_t *data = json_pack("{s:{s:{s:s, s:{s:{s:s}}, s:{s:[{s:s, s:s}]}}}}", "spec", "template",
                             "$patch", "replace", "metadata", "labels", "app", "db", "spec",
                             "containers", "name", "c", "image", "a<b&c");
    char buf[32];
    assert_string_equal(ck_sts_revision_hash(data, 0, buf, sizeof(buf)), "b774db89");
    assert_string_equal(ck_sts_revision_hash(data, 1, buf, sizeof(buf)), "b774db88");
    json_decref(data);
}

static void test_max_unavailable_gate_on_deletes_up_to_max(void **state)
{
    struct env *e = *state;
    json_t *set = max_unavailable_set(e, 1, "OrderedReady", json_integer(2));
    for (int i = 0; i < 3; i++)
        add_pod(e, set, i, true, "db-old");
    sync(e);
    assert_deleted(e, "pods", (const char *const[]){"db-2", "db-1", NULL});
}

static void test_max_unavailable_counts_pods_down(void **state)
{
    struct env *e = *state;
    /* 2 of 3, rounded down */
    json_t *set = max_unavailable_set(e, 1, "Parallel", json_string("67%"));
    add_pod(e, set, 0, false, "db-old"); /* one is down already */
    add_pod(e, set, 1, true, "db-old");
    add_pod(e, set, 2, true, "db-old");
    sync(e);
    assert_deleted(e, "pods", (const char *const[]){"db-2", NULL});
}

static void test_max_unavailable_gate_off_deletes_one(void **state)
{
    struct env *e = *state;
    json_t *set = max_unavailable_set(e, 0, "OrderedReady", json_integer(2));
    for (int i = 0; i < 3; i++)
        add_pod(e, set, i, true, "db-old");
    sync(e);
    assert_deleted(e, "pods", (const char *const[]){"db-2", NULL});
}

static void test_min_ready_seconds_holds_availability(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 3, "OrderedReady", 0);
    json_object_set_new(json_object_get(set, "spec"), "minReadySeconds", json_integer(30));
    update_revision(set, rev, sizeof(rev));
    add_pod(e, set, 0, true, rev); /* Ready since 2026-01-01T00:00:00Z, which is now */
    e->now += 10 * CK_SEC;
    sync(e);
    assert_null(fx_action(e->fc, "create", "pods", 0)); /* db-0 is not available yet */
    const struct ck_fake_action *st = fx_action(e->fc, "update-status", "statefulsets", 0);
    assert_non_null(st);
    const json_t *status = json_object_get(st->body, "status");
    assert_int_equal(json_integer_value(json_object_get(status, "readyReplicas")), 1);
    assert_int_equal(json_integer_value(json_object_get(status, "availableReplicas")), 0);

    e->now += 21 * CK_SEC;  /* 31 s after Ready */
    json_t *now_set = NULL; /* the cache catches up with the status written */
    assert_int_equal(ck_ctl_get(&e->client, e->sets_res, "ns", "db", &now_set, NULL), 0);
    fx_cache_add(&e->sets, now_set);
    ck_fake_client_clear_actions(e->fc);
    sync(e);
    const struct ck_fake_action *pod = fx_action(e->fc, "create", "pods", 0);
    assert_non_null(pod);
    assert_string_equal(fx_meta(pod->body, "name"), "db-1");
}

static void test_when_scaled_delete_gives_claims_to_the_pod(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 1, "OrderedReady", 0);
    json_object_set_new(json_object_get(set, "spec"), "persistentVolumeClaimRetentionPolicy",
                        json_pack("{s:s, s:s}", "whenDeleted", "Retain", "whenScaled", "Delete"));
    update_revision(set, rev, sizeof(rev));
    add_pod(e, set, 0, true, rev);
    add_pod(e, set, 1, true, rev);
    json_t *claim = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{}}", "apiVersion", "v1", "kind",
                              "PersistentVolumeClaim", "metadata", "name", "data-db-1", "namespace",
                              "ns", "uid", "claim-uid", "spec");
    assert_int_equal(ck_fake_client_seed(e->fc, e->claims_res, claim), 0);
    json_decref(claim);
    sync(e);
    const struct ck_fake_action *up = fx_action(e->fc, "update", "persistentvolumeclaims", 0);
    assert_non_null(up);
    const json_t *ref = json_array_get(
        json_object_get(json_object_get(up->body, "metadata"), "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(ref, "kind")), "Pod");
    assert_string_equal(json_string_value(json_object_get(ref, "name")), "db-1");
    const struct ck_fake_action *del = fx_action(e->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "db-1");
    assert_true(up < del); /* the claim follows the pod before the pod goes */
}

static void test_when_scaled_retain_leaves_claims(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 1, "OrderedReady", 0);
    update_revision(set, rev, sizeof(rev));
    add_pod(e, set, 0, true, rev);
    add_pod(e, set, 1, true, rev);
    sync(e);
    assert_null(fx_action(e->fc, "update", "persistentvolumeclaims", 0));
    assert_non_null(fx_action(e->fc, "delete", "pods", 0));
}

/* A revision of the set numbered number (data differing per number). */
static void add_revision(struct env *e, const json_t *set, const char *name, int number)
{
    json_t *rev =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:[o]}, s:{s:i}, s:i}", "apiVersion", "apps/v1", "kind",
                  "ControllerRevision", "metadata", "name", name, "namespace", "ns",
                  "ownerReferences", ck_controller_ref_new(set, "apps/v1", "StatefulSet"), "data",
                  "n", number, "revision", number);
    fx_cache_add(&e->revisions, rev);
}

static void test_history_beyond_limit_is_pruned_oldest_first(void **state)
{
    struct env *e = *state;
    char rev[256];
    json_t *set = add_set(e, 1, "OrderedReady", 0);
    json_object_set_new(json_object_get(set, "spec"), "revisionHistoryLimit", json_integer(1));
    update_revision(set, rev, sizeof(rev));
    add_revision(e, set, "db-r1", 1);
    add_revision(e, set, "db-r2", 2);
    add_revision(e, set, "db-r3", 3); /* db-0 runs it: live */
    add_revision(e, set, "db-r4", 4);
    add_pod(e, set, 0, true, "db-r3");
    sync(e);
    /* history (not live): r1, r2, r4 and the limit 1 keeps r4 */
    assert_deleted(e, "controllerrevisions", (const char *const[]){"db-r1", "db-r2", NULL});
}

static void test_history_within_limit_is_kept(void **state)
{
    struct env *e = *state;
    json_t *set = add_set(e, 1, "OrderedReady", 0);
    add_revision(e, set, "db-r1", 1);
    add_revision(e, set, "db-r2", 2);
    sync(e); /* revisionHistoryLimit absent: 10 */
    assert_null(fx_action(e->fc, "delete", "controllerrevisions", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ordered_ready_creates_one_pod_with_identity_and_claim,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_ordered_ready_waits_for_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ordered_ready_creates_next_after_ready, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_parallel_creates_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scale_down_deletes_highest_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rolling_update_stops_at_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rolling_update_deletes_highest_stale_pod, setup,
                                        teardown),
        cmocka_unit_test(test_revision_hash_is_kubernetes),
        cmocka_unit_test_setup_teardown(test_max_unavailable_gate_on_deletes_up_to_max, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_max_unavailable_counts_pods_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_unavailable_gate_off_deletes_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_ready_seconds_holds_availability, setup, teardown),
        cmocka_unit_test_setup_teardown(test_when_scaled_delete_gives_claims_to_the_pod, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_when_scaled_retain_leaves_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_beyond_limit_is_pruned_oldest_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_history_within_limit_is_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
