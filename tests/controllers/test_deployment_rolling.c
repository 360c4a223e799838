/*
 * test_deployment_rolling.c - lib/controllers/deployment/rolling.c on the table cases
 * of kubernetes pkg/controller/deployment/rolling_test.go: reconcileNewReplicaSet,
 * reconcileOldReplicaSets, cleanupUnhealthyReplicas and
 * scaleDownOldReplicaSetsForRollingUpdate.
 */
#include "cktest.h"

#include "controllers/deploy_fixtures.h"

static void test_reconcile_new_rs(void **state)
{
    (void)state;
    struct {
        int replicas, max_surge, old, new_rs;
        bool scale;
        int32_t expected;
    } cases[] = {
        {10, 0, 10, 0, false, 0}, /* no surge: no room */
        {10, 2, 10, 0, true, 2},  {10, 2, 5, 0, true, 7},
        {10, 2, 10, 2, false, 0}, {10, 2, 2, 11, true, 10}, /* scale down */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("foo", cases[i].replicas, json_integer(cases[i].max_surge),
                                  json_integer(0));
        json_t *new_rs = fx_rs("foo-v2", cases[i].new_rs, NULL);
        json_t *old_rs = fx_rs("foo-v1", cases[i].old, NULL);
        const json_t *all[] = {new_rs, old_rs};
        int32_t size = -1;
        assert_int_equal(ck__deploy_reconcile_new_rs(d, all, 2, new_rs, &size), 0);
        if (cases[i].scale)
            assert_int_equal(size, cases[i].expected);
        else
            assert_int_equal(size, cases[i].new_rs);
        json_decref(old_rs);
        json_decref(new_rs);
        json_decref(d);
    }
}

static void test_reconcile_old_rss(void **state)
{
    (void)state;
    struct {
        int replicas, max_unavailable, old, new_rs, ready_old, ready_new;
        bool scale;
        int32_t expected_old;
    } cases[] = {
        {10, 0, 10, 0, 10, 0, true, 9}, {10, 2, 10, 0, 10, 0, true, 8},
        {10, 2, 10, 0, 8, 0, true, 8}, /* the unhealthy ones go */
        {10, 2, 10, 0, 9, 0, true, 8}, /* one unhealthy, one ready */
        {10, 2, 8, 2, 8, 0, false, 8}, /* new pods unavailable: old ones wait */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("foo", cases[i].replicas, json_integer(0),
                                  json_integer(cases[i].max_unavailable));
        json_t *new_rs = fx_rs("foo-new", cases[i].new_rs, NULL);
        fx_set(new_rs, "status.availableReplicas", json_integer(cases[i].ready_new));
        json_t *old_rs = fx_rs("foo-old", cases[i].old, NULL);
        fx_set(old_rs, "status.availableReplicas", json_integer(cases[i].ready_old));
        const json_t *all[] = {old_rs, new_rs}, *old[] = {old_rs};
        int32_t sizes[1];
        int32_t down = ck__deploy_reconcile_old_rss(d, all, 2, old, 1, new_rs, sizes);
        assert_int_equal(down > 0, cases[i].scale);
        assert_int_equal(sizes[0], cases[i].expected_old);
        assert_int_equal(down, cases[i].old - sizes[0]);
        json_decref(old_rs);
        json_decref(new_rs);
        json_decref(d);
    }
}

static void test_cleanup_unhealthy(void **state)
{
    (void)state;
    struct {
        int old, ready, max_cleanup;
        int32_t expected;
    } cases[] = {
        {10, 8, 1, 1},
        {10, 8, 3, 2},
        {10, 8, 0, 0},
        {10, 10, 3, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *old_rs = fx_rs("foo-v2", cases[i].old, NULL);
        fx_set(old_rs, "status.availableReplicas", json_integer(cases[i].ready));
        const json_t *old[] = {old_rs};
        int32_t sizes[] = {cases[i].old};
        assert_int_equal(ck__deploy_cleanup_unhealthy(old, 1, cases[i].max_cleanup, sizes),
                         cases[i].expected);
        assert_int_equal(sizes[0], cases[i].old - cases[i].expected);
        json_decref(old_rs);
    }
}

static void test_scale_down_old_for_rolling(void **state)
{
    (void)state;
    struct {
        int replicas, max_unavailable, ready, old;
        bool scale;
        int32_t expected_old;
    } cases[] = {
        {10, 0, 10, 10, true, 9}, {10, 2, 10, 10, true, 8},  {10, 2, 8, 10, false, 10},
        {10, 2, 10, 0, false, 0}, {10, 2, 1, 10, false, 10},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("foo", cases[i].replicas, json_integer(0),
                                  json_integer(cases[i].max_unavailable));
        json_t *old_rs = fx_rs("foo-v2", cases[i].old, NULL);
        fx_set(old_rs, "status.availableReplicas", json_integer(cases[i].ready));
        const json_t *old[] = {old_rs};
        int32_t sizes[] = {cases[i].old};
        int32_t down = ck__deploy_scale_down_old_for_rolling(d, old, 1, NULL, sizes);
        assert_int_equal(down > 0, cases[i].scale);
        assert_int_equal(sizes[0], cases[i].expected_old);
        json_decref(old_rs);
        json_decref(d);
    }
}

/* Our own: several old ReplicaSets shrink oldest first, never below minAvailable. */
static void test_scale_down_oldest_first(void **state)
{
    (void)state;
    json_t *d = fx_deployment("foo", 6, json_integer(0), json_integer(3));
    json_t *older = fx_rs("a-older", 2, FX_OLDER), *old = fx_rs("b-old", 4, FX_OLD);
    fx_set(older, "status.availableReplicas", json_integer(2));
    fx_set(old, "status.availableReplicas", json_integer(4));
    const json_t *olds[] = {old, older}; /* not in creation order */
    int32_t sizes[] = {4, 2};
    assert_int_equal(ck__deploy_scale_down_old_for_rolling(d, olds, 2, NULL, sizes), 3);
    assert_int_equal(sizes[1], 0); /* the older one first */
    assert_int_equal(sizes[0], 3);
    json_decref(older);
    json_decref(old);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reconcile_new_rs),
        cmocka_unit_test(test_reconcile_old_rss),
        cmocka_unit_test(test_cleanup_unhealthy),
        cmocka_unit_test(test_scale_down_old_for_rolling),
        cmocka_unit_test(test_scale_down_oldest_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
