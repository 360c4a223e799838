/*
 * test_protection.c - the pvc-protection and pv-protection controllers on fakes (facts of
 * Kubernetes' pvc_protection_controller_test.go and pv_protection_controller_test.go): a
 * claim being deleted keeps its finalizer while a scheduled, unfinished pod uses it and
 * loses it after; one not being deleted gets it; a volume being deleted keeps it while
 * Bound; a pod's deletion queues the claims it used.
 */
#include "cktest.h"

#include "ckube/persistentvolume.h"
#include "fixtures.h"

struct env {
    struct fx_cache objects, pods;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_protection_controller *c;
    const struct ck_resource *res;
};

static struct env *env_new(enum ck_protected what)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->objects);
    fx_cache_init(&e->pods);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_protection_controller_deps deps = {
        .what = what, .client = &e->client, .objects = &e->objects.lister, .pods = &e->pods.lister};
    assert_int_equal(ck_protection_controller_new_with(&deps, &e->c, NULL), 0);
    e->res = ck_controller_resource(
        "", "v1", what == CK_PROTECT_CLAIMS ? "persistentvolumeclaims" : "persistentvolumes");
    return e;
}

static void env_free(struct env *e)
{
    ck_protection_controller_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->objects);
    fx_cache_release(&e->pods);
    free(e);
}

/* An object: claim in default (ns) or volume, with finalizers and deleting or not. */
static void add_object(struct env *e, const char *ns, const char *name, bool finalizer,
                       bool deleting, const char *phase)
{
    json_t *o = json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "name", name, "uid", name,
                          "resourceVersion", "1", "status", "phase", phase);
    json_t *meta = json_object_get(o, "metadata");
    if (ns)
        json_object_set_new(meta, "namespace", json_string(ns));
    if (finalizer)
        json_object_set_new(
            meta, "finalizers",
            json_pack("[s]", ns ? CK_PVC_PROTECTION_FINALIZER : CK_PV_PROTECTION_FINALIZER));
    if (deleting)
        json_object_set_new(meta, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
    assert_int_equal(ck_fake_client_seed(e->fc, e->res, o), 0);
    fx_cache_add(&e->objects, o);
}

static void add_pod(struct env *e, const char *name, const char *claim, const char *node,
                    const char *phase)
{
    json_t *pod = fx_pod("default", name, "a", NULL);
    json_t *spec = json_object_get(pod, "spec");
    json_object_set_new(
        spec, "volumes",
        json_pack("[{s:s, s:{s:s}}]", "name", "data", "persistentVolumeClaim", "claimName", claim));
    if (node)
        json_object_set_new(spec, "nodeName", json_string(node));
    json_object_set_new(pod, "status", json_pack("{s:s}", "phase", phase));
    fx_cache_add(&e->pods, pod);
}

static void sync(struct env *e, const char *key)
{
    struct ck_err err = {0};
    if (ck_protection_controller_sync(e->c, key, &err) < 0)
        fail_msg("sync %s: %s", key, err.msg);
}

static size_t finalizers_written(struct env *e, size_t *ret_len)
{
    const struct ck_fake_action *a = fx_action(e->fc, "update", NULL, 0);
    size_t n = ck_fake_client_count(e->fc, "update", e->res);
    if (a && ret_len)
        *ret_len =
            json_array_size(json_object_get(json_object_get(a->body, "metadata"), "finalizers"));
    return n;
}

static void test_claim_in_use_keeps_its_finalizer(void **state)
{
    (void)state;
    struct env *e = env_new(CK_PROTECT_CLAIMS);
    add_object(e, "default", "data", true, true, "Bound");
    add_pod(e, "user", "data", "node-1", "Running");
    sync(e, "default/data");
    assert_int_equal(finalizers_written(e, NULL), 0);

    /* an unscheduled pod or a finished one does not hold it */
    fx_cache_release(&e->pods);
    fx_cache_init(&e->pods);
    struct ck_protection_controller_deps deps = {.what = CK_PROTECT_CLAIMS,
                                                 .client = &e->client,
                                                 .objects = &e->objects.lister,
                                                 .pods = &e->pods.lister};
    ck_protection_controller_free(e->c);
    assert_int_equal(ck_protection_controller_new_with(&deps, &e->c, NULL), 0);
    add_pod(e, "pending", "data", NULL, "Pending");
    add_pod(e, "done", "data", "node-1", "Succeeded");
    add_pod(e, "other", "other-claim", "node-1", "Running");
    sync(e, "default/data");
    size_t len = 99;
    assert_int_equal(finalizers_written(e, &len), 1);
    assert_int_equal(len, 0);
    env_free(e);
}

static void test_claim_without_finalizer_gets_it(void **state)
{
    (void)state;
    struct env *e = env_new(CK_PROTECT_CLAIMS);
    add_object(e, "default", "old", false, false, "Bound");
    sync(e, "default/old");
    size_t len = 0;
    assert_int_equal(finalizers_written(e, &len), 1);
    assert_int_equal(len, 1);
    /* with it already, nothing is written */
    ck_fake_client_clear_actions(e->fc);
    add_object(e, "default", "new", true, false, "Pending");
    sync(e, "default/new");
    assert_int_equal(finalizers_written(e, NULL), 0);
    env_free(e);
}

static void test_pod_deletion_queues_the_claim(void **state)
{
    (void)state;
    struct env *e = env_new(CK_PROTECT_CLAIMS);
    add_object(e, "default", "data", true, true, "Bound");
    struct ck_event_handler ho, hp;
    ck_protection_controller_handlers(e->c, &ho, &hp);
    json_t *pod = fx_pod("default", "user", "a", NULL);
    json_object_set_new(
        json_object_get(pod, "spec"), "volumes",
        json_pack("[{s:s, s:{s:s}}]", "name", "v", "persistentVolumeClaim", "claimName", "data"));
    hp.on_delete(pod, NULL, hp.arg);
    json_decref(pod);
    assert_int_equal(ck_wq_len(ck_protection_controller_queue(e->c)), 1);
    env_free(e);
}

static void test_volume_bound_keeps_its_finalizer(void **state)
{
    (void)state;
    struct env *e = env_new(CK_PROTECT_VOLUMES);
    add_object(e, NULL, "bound", true, true, "Bound");
    sync(e, "bound");
    assert_int_equal(finalizers_written(e, NULL), 0);
    add_object(e, NULL, "released", true, true, "Released");
    sync(e, "released");
    size_t len = 99;
    assert_int_equal(finalizers_written(e, &len), 1);
    assert_int_equal(len, 0);
    ck_fake_client_clear_actions(e->fc);
    add_object(e, NULL, "fresh", false, false, "Available");
    sync(e, "fresh");
    assert_int_equal(finalizers_written(e, &len), 1);
    assert_int_equal(len, 1);
    env_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_in_use_keeps_its_finalizer),
        cmocka_unit_test(test_claim_without_finalizer_gets_it),
        cmocka_unit_test(test_pod_deletion_queues_the_claim),
        cmocka_unit_test(test_volume_bound_keeps_its_finalizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
