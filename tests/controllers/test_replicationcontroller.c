/*
 * test_replicationcontroller.c - the ReplicaSet controller serving ReplicationControllers
 * (struct ck_rs_kind): an RC's equality selector (a map of labels) drives creation,
 * adoption and status, pods are owned by a v1 ReplicationController, and status is
 * written through replicationcontrollers/status; on fakes, as test_replicaset_sync.c.
 */
#include "cktest.h"

#include "ckube/internal/util.h"
#include "ckube/replicaset.h"
#include "fixtures.h"

struct env {
    struct fx_cache pods, rcs;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_rs_controller *rcc;
    const struct ck_resource *pods_res, *rcs_res;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->pods);
    fx_cache_init(&e->rcs);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_rs_controller_deps deps = {.client = &e->client,
                                         .pods = &e->pods.lister,
                                         .replicasets = &e->rcs.lister,
                                         .kind = &ck_rs_kind_replicationcontroller};
    assert_int_equal(ck_rs_controller_new_with(&deps, &e->rcc, NULL), 0);
    e->pods_res = ck_controller_resource("", "v1", "pods");
    e->rcs_res = ck_controller_resource("", "v1", "replicationcontrollers");
    assert_non_null(e->rcs_res);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_rs_controller_free(e->rcc);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->rcs);
    free(e);
    return 0;
}

/* An RC selecting app=<app> by equality, generation 1. */
static json_t *rc(const char *name, const char *uid, int replicas, const char *app)
{
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:i, s:{s:s}, "
                          "s:{s:{s:{s:s, s:s}}, s:{s:[{s:s, s:s}]}}}}",
                          "apiVersion", "v1", "kind", "ReplicationController", "metadata", "name",
                          name, "namespace", "default", "uid", uid, "resourceVersion", "1",
                          "generation", 1, "spec", "replicas", replicas, "selector", "app", app,
                          "template", "metadata", "labels", "app", app, "tier", "web", "spec",
                          "containers", "name", "c", "image", "nginx");
    assert_non_null(o);
    return o;
}

static const char *str2(const json_t *obj, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(obj, a), b));
    return s ? s : "";
}

static void test_rc_creates_pods_it_owns(void **state)
{
    struct env *e = *state;
    json_t *o = rc("web", "rc-uid", 2, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rcs_res, o), 0);
    fx_cache_add(&e->rcs, o);
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rcc, "default/web", &err), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 2);
    const struct ck_fake_action *a = fx_action(e->fc, "create", "pods", 0);
    assert_string_equal(fx_meta(a->body, "generateName"), "web-");
    const json_t *ref = ck_controller_ref(a->body);
    assert_string_equal(json_string_value(json_object_get(ref, "kind")), "ReplicationController");
    assert_string_equal(json_string_value(json_object_get(ref, "apiVersion")), "v1");
    assert_string_equal(json_string_value(json_object_get(ref, "uid")), "rc-uid");
    /* the events name the RC and come from the replication controller */
    const struct ck_fake_action *ev = fx_action(e->fc, "create", "events", 0);
    assert_non_null(ev);
    assert_string_equal(str2(ev->body, "involvedObject", "kind"), "ReplicationController");
    assert_string_equal(str2(ev->body, "source", "component"), "replication-controller");
}

static void test_rc_adopts_orphans_its_equality_selector_matches(void **state)
{
    struct env *e = *state;
    json_t *o = rc("web", "rc-uid", 2, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rcs_res, o), 0);
    fx_cache_add(&e->rcs, o);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        json_t *pod = fx_pod("default", name, i == 2 ? "other" : "web", NULL);
        assert_int_equal(ck_fake_client_seed(e->fc, e->pods_res, pod), 0);
        fx_cache_add(&e->pods, pod);
    }
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rcc, "default/web", &err), 0);
    /* p0 and p1 adopted (two updates), nothing created, p2 left alone */
    assert_int_equal(ck_fake_client_count(e->fc, "update", e->pods_res), 2);
    assert_int_equal(ck_fake_client_count(e->fc, "create", e->pods_res), 0);
    const struct ck_fake_action *st =
        fx_action(e->fc, "update-status", "replicationcontrollers", 0);
    assert_non_null(st);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(st->body, "status"), "replicas")), 2);
}

static void test_rc_scaled_down_deletes_the_surplus(void **state)
{
    struct env *e = *state;
    json_t *o = rc("web", "rc-uid", 1, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rcs_res, o), 0);
    fx_cache_add(&e->rcs, o);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        json_t *pod = fx_pod("default", name, "web", NULL);
        json_object_set_new(
            json_object_get(pod, "metadata"), "ownerReferences",
            json_pack("[o]", ck_controller_ref_new(o, "v1", "ReplicationController")));
        assert_int_equal(ck_fake_client_seed(e->fc, e->pods_res, pod), 0);
        fx_cache_add(&e->pods, pod);
    }
    struct ck_err err = {0};
    assert_int_equal(ck_rs_controller_sync(e->rcc, "default/web", &err), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", e->pods_res), 2);
}

static void test_pod_handler_finds_the_rc_by_equality_selector(void **state)
{
    struct env *e = *state;
    fx_cache_add(&e->rcs, rc("web", "rc-uid", 1, "web"));
    fx_cache_add(&e->rcs, rc("db", "rc-uid2", 1, "db"));
    struct ck_event_handler rc_h, pod_h;
    ck_rs_controller_handlers(e->rcc, &rc_h, &pod_h);
    json_t *pod = fx_pod("default", "orphan", "web", NULL);
    pod_h.on_add(pod, false, pod_h.arg);
    struct ck_wq *q = ck_rs_controller_queue(e->rcc);
    assert_int_equal(ck_wq_len(q), 1);
    const char *key = NULL;
    assert_int_equal(ck_wq_get(q, &key), 0);
    assert_string_equal(key, "default/web");
    ck_wq_done(q, key);
    json_decref(pod);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_rc_creates_pods_it_owns),
        T(test_rc_adopts_orphans_its_equality_selector_matches),
        T(test_rc_scaled_down_deletes_the_surplus),
        T(test_pod_handler_finds_the_rc_by_equality_selector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
