/*
 * test_deployment_recreate.c - lib/controllers/deployment/recreate.c on the table cases
 * of kubernetes pkg/controller/deployment/recreate_test.go (TestScaleDownOldReplicaSets,
 * TestOldPodsRunning), and the order of a Recreate rollout.
 */
#include "cktest.h"

#include "controllers/deploy_fixtures.h"

/* A JSON object from ReplicaSet uid to pods, from text like {"uid-1":["Failed",""]}. */
static json_t *pod_map(const char *phases)
{
    json_t *in = json_loads(phases, 0, NULL), *out = json_object();
    const char *uid;
    json_t *list;
    json_object_foreach(in, uid, list)
    {
        json_t *pods = json_array();
        size_t i;
        json_t *phase;
        json_array_foreach(list, i, phase)
        {
            json_t *pod = json_object();
            if (json_string_length(phase) > 0)
                fx_set(pod, "status.phase", json_copy(phase));
            json_array_append_new(pods, pod);
        }
        json_object_set_new(out, uid, pods);
    }
    json_decref(in);
    return out;
}

static void test_old_pods_running(void **state)
{
    (void)state;
    json_t *some = fx_rs_status("some-uid", 0, 0), *other = fx_rs_status("other-uid", 0, 0);
    json_t *one = fx_rs_status("rs-1", 0, 1), *zero = fx_rs_status("rs-1", 0, 0);
    struct {
        const json_t *old[2];
        size_t n_old;
        const char *pods;
        bool expected;
    } cases[] = {
        {{NULL}, 0, "{}", false}, /* no old RSs */
        {{some, other}, 2, "{\"some-uid\":[\"\",\"\"],\"other-uid\":[\"\",\"\"]}", true},
        {{one}, 1, "{}", true}, /* status.replicas */
        {{zero}, 1, "{}", false},
        {{zero}, 1, "{\"uid-1\":[\"Failed\",\"Succeeded\"]}", false}, /* terminal */
        {{zero}, 1, "{\"uid-1\":[\"Unknown\"]}", true},
        {{zero}, 1, "{\"uid-1\":[\"Pending\"]}", true},
        {{zero}, 1, "{\"uid-1\":[\"Running\"]}", true},
        {{zero},
         1,
         "{\"uid-1\":[\"Failed\",\"Succeeded\"],\"uid-2\":[],\"uid-3\":[\"Pending\"]}",
         true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *pods = pod_map(cases[i].pods);
        assert_int_equal(ck__deploy_old_pods_running(NULL, cases[i].old, cases[i].n_old, pods),
                         cases[i].expected);
        json_decref(pods);
    }
    /* the new ReplicaSet's own pods are not old */
    json_t *new_rs = fx_rs("new-uid", 3, NULL);
    json_t *pods = pod_map("{\"new-uid\":[\"Running\"]}");
    const json_t *old[] = {zero};
    assert_false(ck__deploy_old_pods_running(new_rs, old, 1, pods));
    json_decref(pods);
    json_t *objs[] = {some, other, one, zero, new_rs};
    fx_decref_all(objs, 5);
}

static void test_recreate_order(void **state)
{
    (void)state;
    json_t *d = fx_deployment("foo", 3, NULL, NULL);
    fx_set(d, "spec.strategy", json_pack("{s:s}", "type", "Recreate"));
    json_t *old_rs = fx_rs("foo-0", 3, NULL), *new_rs = fx_rs("foo-1", 0, NULL);
    json_t *empty = json_object();
    const json_t *old[] = {old_rs};

    /* TestScaleDownOldReplicaSets: old ReplicaSets with replicas go to 0 first */
    assert_int_equal(ck__deploy_recreate_next(d, NULL, old, 1, empty),
                     CK_DEPLOY_RECREATE_SCALE_DOWN_OLD);
    /* scaled down, but a pod still reported: wait */
    fx_set(old_rs, "spec.replicas", json_integer(0));
    fx_set(old_rs, "status.replicas", json_integer(1));
    assert_int_equal(ck__deploy_recreate_next(d, NULL, old, 1, empty),
                     CK_DEPLOY_RECREATE_WAIT_OLD_PODS);
    fx_set(old_rs, "status.replicas", json_integer(0));
    json_t *pods = pod_map("{\"foo-0\":[\"Running\"]}");
    assert_int_equal(ck__deploy_recreate_next(d, NULL, old, 1, pods),
                     CK_DEPLOY_RECREATE_WAIT_OLD_PODS);
    json_decref(pods);
    /* gone: create the new ReplicaSet, then scale it up, then done */
    assert_int_equal(ck__deploy_recreate_next(d, NULL, old, 1, empty),
                     CK_DEPLOY_RECREATE_CREATE_NEW);
    assert_int_equal(ck__deploy_recreate_next(d, new_rs, old, 1, empty),
                     CK_DEPLOY_RECREATE_SCALE_UP_NEW);
    fx_set(new_rs, "spec.replicas", json_integer(3));
    assert_int_equal(ck__deploy_recreate_next(d, new_rs, old, 1, empty), CK_DEPLOY_RECREATE_DONE);
    json_t *objs[] = {d, old_rs, new_rs, empty};
    fx_decref_all(objs, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_pods_running),
        cmocka_unit_test(test_recreate_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
