/*
 * test_scheduler_volumebinding.c - tests for lib/controllers/scheduler/volumebinding.c,
 * with the facts of Kubernetes' volume_binding_test.go that ckube's part covers: a
 * missing, deleted or unbound Immediate claim fails PreFilter with Kubernetes' words, a
 * WaitForFirstConsumer claim passes, a bound volume's node affinity filters the nodes,
 * and PreBind writes the selected node on WaitForFirstConsumer claims only.
 */
#include "cktest.h"

#include "../../lib/controllers/scheduler/internal.h"
#include "fixtures.h"

struct env {
    struct fx_cache claims, volumes, classes;
    struct ck__sched_volumes v;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->claims);
    fx_cache_init(&e->volumes);
    fx_cache_init(&e->classes);
    e->v = (struct ck__sched_volumes){e->claims.lister, e->volumes.lister, e->classes.lister, true};
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    fx_cache_add(&e->classes,
                 json_pack("{s:{s:s}, s:s, s:s}", "metadata", "name", "wait", "provisioner",
                           "rancher.io/local-path", "volumeBindingMode", "WaitForFirstConsumer"));
    fx_cache_add(&e->classes, json_pack("{s:{s:s}, s:s, s:s}", "metadata", "name", "now",
                                        "provisioner", "x.io/p", "volumeBindingMode", "Immediate"));
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->claims);
    fx_cache_release(&e->volumes);
    fx_cache_release(&e->classes);
    free(e);
    return 0;
}

static void add_claim(struct env *e, const char *name, const char *cls, const char *volume,
                      bool deleting)
{
    json_t *c = json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "name", name, "namespace",
                          "default", "uid", name, "spec", "storageClassName", cls);
    if (volume)
        json_object_set_new(json_object_get(c, "spec"), "volumeName", json_string(volume));
    if (deleting)
        json_object_set_new(json_object_get(c, "metadata"), "deletionTimestamp",
                            json_string("2026-01-01T00:00:00Z"));
    fx_cache_add(&e->claims, c);
}

static json_t *pod_with(const char *claim)
{
    return json_pack("{s:{s:s, s:s}, s:{s:[{s:s, s:{s:s}}]}}", "metadata", "name", "p", "namespace",
                     "default", "spec", "volumes", "name", "d", "persistentVolumeClaim",
                     "claimName", claim);
}

/* PreFilter's message for a pod naming claim, or NULL when it passes. */
static char *prefilter(struct env *e, const char *claim, json_t **ret_affinity)
{
    json_t *pod = pod_with(claim);
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    char *msg = NULL;
    int r = ck__sched_volumes_prefilter(&e->v, &p, 2, &msg);
    assert_true(r == 0 || r == CK__SCHED_UNRESOLVABLE);
    assert_true((r == 0) == (msg == NULL));
    if (ret_affinity)
        *ret_affinity = json_incref(p.volume_affinity);
    ck__sched_pod_release(&p);
    json_decref(pod);
    return msg;
}

static void test_prefilter(void **state)
{
    struct env *e = *state;
    char *msg = prefilter(e, "missing", NULL);
    assert_string_equal(msg, "0/2 nodes are available: persistentvolumeclaim \"missing\" not "
                             "found. preemption: 0/2 nodes are available: 2 Preemption is not "
                             "helpful for scheduling.");
    free(msg);
    add_claim(e, "going", "wait", NULL, true);
    msg = prefilter(e, "going", NULL);
    assert_non_null(strstr(msg, "persistentvolumeclaim \"going\" is being deleted"));
    free(msg);
    add_claim(e, "immediate", "now", NULL, false);
    msg = prefilter(e, "immediate", NULL);
    assert_non_null(strstr(msg, "pod has unbound immediate PersistentVolumeClaims"));
    free(msg);
    add_claim(e, "later", "wait", NULL, false);
    assert_null(prefilter(e, "later", NULL));
}

static void test_bound_volume_affinity_filters_nodes(void **state)
{
    struct env *e = *state;
    fx_cache_add(&e->volumes,
                 json_loads("{\"metadata\":{\"name\":\"pv1\"},\"spec\":{\"nodeAffinity\":{"
                            "\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
                            "\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":["
                            "\"a\"]}]}]}}}}",
                            0, NULL));
    add_claim(e, "bound", "wait", "pv1", false);
    json_t *affinity = NULL;
    assert_null(prefilter(e, "bound", &affinity));
    assert_int_equal(json_array_size(affinity), 1);
    struct ck__sched_pod p = {.volume_affinity = affinity};
    struct ck__sched_node a = {0}, b = {0};
    json_t *na = json_loads("{\"metadata\":{\"name\":\"a\",\"labels\":{\"kubernetes.io/"
                            "hostname\":\"a\"}}}",
                            0, NULL);
    json_t *nb = json_loads("{\"metadata\":{\"name\":\"b\",\"labels\":{\"kubernetes.io/"
                            "hostname\":\"b\"}}}",
                            0, NULL);
    a.node = na;
    b.node = nb;
    struct ck__sched_status st = {0};
    assert_int_equal(ck__sched_filter_volume_binding(&p, &a, &st), CK__SCHED_SUCCESS);
    assert_int_equal(ck__sched_filter_volume_binding(&p, &b, &st), CK__SCHED_UNRESOLVABLE);
    assert_string_equal(st.reasons[0], "node(s) had volume node affinity conflict");
    json_decref(na);
    json_decref(nb);
    json_decref(affinity);
}

static void test_prebind_selects_the_node(void **state)
{
    struct env *e = *state;
    add_claim(e, "later", "wait", NULL, false);
    add_claim(e, "immediate", "now", NULL, false);
    json_t *pod = pod_with("later");
    assert_int_equal(ck__sched_volumes_prebind(&e->v, &e->client, pod, "node-1", NULL), 0);
    const struct ck_fake_action *a = fx_action(e->fc, "patch", "persistentvolumeclaims", 0);
    assert_non_null(a);
    assert_string_equal(a->name, "later");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(a->body, "metadata"), "annotations"),
                            "volume.kubernetes.io/selected-node")),
                        "node-1");
    json_decref(pod);
    ck_fake_client_clear_actions(e->fc);
    pod = pod_with("immediate");
    assert_int_equal(ck__sched_volumes_prebind(&e->v, &e->client, pod, "node-1", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "patch", NULL), 0);
    json_decref(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prefilter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_volume_affinity_filters_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prebind_selects_the_node, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
