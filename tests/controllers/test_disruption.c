/*
 * test_disruption.c - the disruption controller's decisions (pkg/controller/disruption's
 * trySync), on the fake client and caches the test fills, with a fake clock standing for
 * Unix time: an integer minAvailable over the pods, maxUnavailable and percentages over
 * the controllers' replicas, the fail-safe for pods without a controller, disrupted pods
 * kept out of the healthy count until they expire, and the DisruptionAllowed condition.
 */
#include "cktest.h"

#include "ckube/disruption.h"
#include "ckube/internal/util.h"
#include "fixtures.h"

#define NOW_SEC INT64_C(1767225600) /* 2026-01-01T00:00:00Z */

struct env {
    struct fx_cache pods, budgets;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_clock *clock;
    struct ck_disruption_controller *dc;
    const struct ck_resource *rss_res, *pdbs_res;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->pods);
    fx_cache_init(&e->budgets);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    e->clock = ck_fake_clock_new(NOW_SEC * CK_SEC);
    struct ck_disruption_controller_deps deps = {.client = &e->client,
                                                 .pods = &e->pods.lister,
                                                 .budgets = &e->budgets.lister,
                                                 .clock = e->clock};
    assert_int_equal(ck_disruption_controller_new_with(&deps, &e->dc, NULL), 0);
    e->rss_res = ck_controller_resource("apps", "v1", "replicasets");
    e->pdbs_res = ck_controller_resource("policy", "v1", "poddisruptionbudgets");
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_disruption_controller_free(e->dc);
    ck_fake_client_free(e->fc);
    ck_fake_clock_free(e->clock);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->budgets);
    free(e);
    return 0;
}

/* A budget on app=web with the given bound ("minAvailable" or "maxUnavailable"). */
static void add_budget(struct env *e, const char *field, json_t *value, json_t *status)
{
    json_t *pdb = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:{s:{s:s}}}}",
                            "apiVersion", "policy/v1", "kind", "PodDisruptionBudget", "metadata",
                            "name", "web", "namespace", "ns", "uid", "pdb-uid", "resourceVersion",
                            "1", "generation", 2, "spec", "selector", "matchLabels", "app", "web");
    json_object_set_new(json_object_get(pdb, "spec"), field, value);
    json_object_set_new(pdb, "status", status ? status : json_object());
    assert_int_equal(ck_fake_client_seed(e->fc, e->pdbs_res, pdb), 0);
    fx_cache_add(&e->budgets, pdb);
}

/* n pods of the ReplicaSet rs (NULL: no controller), the first `ready` of them Ready. */
static void add_pods(struct env *e, const json_t *rs, int n, int ready)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "web-%d", i);
        json_t *pod = fx_pod("ns", name, "web", rs);
        fx_pod_running(pod, "n-0", i < ready ? "2025-12-31T23:00:00Z" : NULL);
        fx_cache_add(&e->pods, pod);
    }
}

/* The status the sync wrote (the last update-status), borrowed. */
static const json_t *written(struct env *e)
{
    const struct ck_fake_action *a = NULL;
    for (size_t i = 0; fx_action(e->fc, "update-status", "poddisruptionbudgets", i); i++)
        a = fx_action(e->fc, "update-status", "poddisruptionbudgets", i);
    assert_non_null(a);
    return json_object_get(a->body, "status");
}

static long long status_int(const json_t *status, const char *field)
{
    const json_t *v = json_object_get(status, field);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static const json_t *condition(const json_t *status)
{
    const json_t *c = json_array_get(json_object_get(status, "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "type")), "DisruptionAllowed");
    return c;
}

static void sync(struct env *e)
{
    struct ck_err err = {0};
    assert_int_equal(ck_disruption_controller_sync(e->dc, "ns/web", &err), 0);
}

static void test_min_available_integer_counts_pods(void **state)
{
    struct env *e = *state;
    add_budget(e, "minAvailable", json_integer(2), NULL);
    add_pods(e, NULL, 3, 3); /* no controller needed for an integer minAvailable */
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "expectedPods"), 3);
    assert_int_equal(status_int(s, "desiredHealthy"), 2);
    assert_int_equal(status_int(s, "currentHealthy"), 3);
    assert_int_equal(status_int(s, "disruptionsAllowed"), 1);
    assert_int_equal(status_int(s, "observedGeneration"), 2);
    assert_string_equal(json_string_value(json_object_get(condition(s), "status")), "True");
    assert_string_equal(json_string_value(json_object_get(condition(s), "reason")),
                        "SufficientPods");
}

static void test_unready_pods_leave_no_disruption(void **state)
{
    struct env *e = *state;
    add_budget(e, "minAvailable", json_integer(2), NULL);
    add_pods(e, NULL, 3, 2);
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "currentHealthy"), 2);
    assert_int_equal(status_int(s, "disruptionsAllowed"), 0);
    assert_string_equal(json_string_value(json_object_get(condition(s), "reason")),
                        "InsufficientPods");
}

static void test_max_unavailable_uses_controller_replicas(void **state)
{
    struct env *e = *state;
    json_t *rs = fx_rs("ns", "web-rs", "rs-uid", 4, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rss_res, rs), 0);
    add_budget(e, "maxUnavailable", json_string("50%"), NULL);
    add_pods(e, rs, 3, 3); /* one replica missing: it counts as unavailable */
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "expectedPods"), 4);
    assert_int_equal(status_int(s, "desiredHealthy"), 2);
    assert_int_equal(status_int(s, "disruptionsAllowed"), 1);
    json_decref(rs);
}

static void test_min_available_percent_rounds_up(void **state)
{
    struct env *e = *state;
    json_t *rs = fx_rs("ns", "web-rs", "rs-uid", 3, "web");
    assert_int_equal(ck_fake_client_seed(e->fc, e->rss_res, rs), 0);
    add_budget(e, "minAvailable", json_string("50%"), NULL);
    add_pods(e, rs, 3, 3);
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "desiredHealthy"), 2); /* 1.5 rounds up */
    assert_int_equal(status_int(s, "disruptionsAllowed"), 1);
    json_decref(rs);
}

static void test_pod_without_controller_is_fail_safe(void **state)
{
    struct env *e = *state;
    add_budget(e, "maxUnavailable", json_integer(1), json_pack("{s:i}", "disruptionsAllowed", 3));
    add_pods(e, NULL, 2, 2);
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "disruptionsAllowed"), 0);
    const json_t *c = condition(s);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "SyncFailed");
    assert_non_null(strstr(json_string_value(json_object_get(c, "message")),
                           "found no controller ref for pod"));
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 1); /* the Warning event */
}

static void test_disrupted_pods_are_not_healthy_until_they_expire(void **state)
{
    struct env *e = *state;
    /* web-0 was evicted a minute ago: not counted, and kept */
    add_budget(e, "minAvailable", json_integer(2),
               json_pack("{s:{s:s}}", "disruptedPods", "web-0", "2025-12-31T23:59:00Z"));
    add_pods(e, NULL, 3, 3);
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "currentHealthy"), 2);
    assert_int_equal(status_int(s, "disruptionsAllowed"), 0);
    assert_non_null(json_object_get(json_object_get(s, "disruptedPods"), "web-0"));
}

static void test_expired_disrupted_pod_counts_again(void **state)
{
    struct env *e = *state;
    /* three minutes ago: past the two-minute deletion timeout */
    add_budget(e, "minAvailable", json_integer(2),
               json_pack("{s:{s:s}}", "disruptedPods", "web-0", "2025-12-31T23:57:00Z"));
    add_pods(e, NULL, 3, 3);
    sync(e);
    const json_t *s = written(e);
    assert_int_equal(status_int(s, "currentHealthy"), 3);
    assert_int_equal(status_int(s, "disruptionsAllowed"), 1);
    assert_null(json_object_get(s, "disruptedPods"));
}

static void test_unchanged_status_is_not_written(void **state)
{
    struct env *e = *state;
    add_budget(e, "minAvailable", json_integer(2), NULL);
    add_pods(e, NULL, 3, 3);
    sync(e);
    json_t *first = json_deep_copy(written(e));
    /* the budget as the server now has it: a second sync writes nothing */
    json_t *pdb =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:i}, s:{s:i, s:{s:{s:s}}}}", "apiVersion",
                  "policy/v1", "kind", "PodDisruptionBudget", "metadata", "name", "web",
                  "namespace", "ns", "uid", "pdb-uid", "resourceVersion", "2", "generation", 2,
                  "spec", "minAvailable", 2, "selector", "matchLabels", "app", "web");
    json_object_set_new(pdb, "status", first);
    fx_cache_add(&e->budgets, pdb);
    ck_fake_client_clear_actions(e->fc);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "update-status", NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_min_available_integer_counts_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unready_pods_leave_no_disruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_unavailable_uses_controller_replicas, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_min_available_percent_rounds_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_without_controller_is_fail_safe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disrupted_pods_are_not_healthy_until_they_expire,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_expired_disrupted_pod_counts_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_status_is_not_written, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
