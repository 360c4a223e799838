/*
 * test_statefulset.c - the StatefulSet controller's decisions on the fake client and
 * caches the test fills: OrderedReady creates one pod at a time and waits for it to be
 * Ready, Parallel creates them all; pods carry their identity, labels and claim; a claim
 * is created before its pod; scale down deletes the highest ordinal first; a rolling
 * update stops at the partition; a first sync records a ControllerRevision.
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
    const struct ck_resource *sets_res;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->pods);
    fx_cache_init(&e->sets);
    fx_cache_init(&e->revisions);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_sts_controller_deps deps = {.client = &e->client,
                                          .pods = &e->pods.lister,
                                          .statefulsets = &e->sets.lister,
                                          .revisions = &e->revisions.lister};
    assert_int_equal(ck_sts_controller_new_with(&deps, &e->sc, NULL), 0);
    e->sets_res = ck_controller_resource("apps", "v1", "statefulsets");
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
    return ck_sts_revision_name("db", json_object_get(json_object_get(set, "spec"), "template"),
                                buf, size);
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
    char rev[128];
    json_t *set = add_set(e, 3, "OrderedReady", 0);
    update_revision(set, rev, sizeof(rev));
    add_pod(e, set, 0, false, rev);
    sync(e);
    assert_null(fx_action(e->fc, "create", "pods", 0)); /* db-0 is not Ready yet */
}

static void test_ordered_ready_creates_next_after_ready(void **state)
{
    struct env *e = *state;
    char rev[128];
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
    char rev[128];
    json_t *set = add_set(e, 1, "OrderedReady", 0);
    update_revision(set, rev, sizeof(rev));
    for (int i = 0; i < 3; i++)
        add_pod(e, set, i, true, rev);
    sync(e);
    const struct ck_fake_action *del = fx_action(e->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "db-2");
    assert_null(fx_action(e->fc, "delete", "pods", 1));
}

static void test_rolling_update_stops_at_partition(void **state)
{
    struct env *e = *state;
    json_t *set = add_set(e, 3, "OrderedReady", 2);
    add_pod(e, set, 0, true, "db-old");
    add_pod(e, set, 1, true, "db-old");
    char rev[128];
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
    const struct ck_fake_action *del = fx_action(e->fc, "delete", "pods", 0);
    assert_non_null(del);
    assert_string_equal(del->name, "db-2");
    assert_null(fx_action(e->fc, "delete", "pods", 1));
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
