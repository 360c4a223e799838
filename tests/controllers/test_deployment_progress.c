/*
 * test_deployment_progress.c - lib/controllers/deployment/progress.c on the table cases
 * of kubernetes pkg/controller/deployment/progress_test.go (TestRequeueStuckDeployment,
 * TestSyncRolloutStatus), plus the ReplicaFailure condition.
 */
#include "cktest.h"

#include <string.h>

#include "controllers/deploy_fixtures.h"

#define TEST_TIME "2017-02-15T18:49:00Z"

#define COND_FAILED                                                                                \
    "[{\"type\":\"Progressing\",\"status\":\"False\",\"reason\":\"ProgressDeadlineExceeded\"}]"
#define COND_STUCK                                                                                 \
    "[{\"type\":\"Progressing\",\"status\":\"True\",\"lastUpdateTime\":\"" TEST_TIME "\"}]"
#define COND_NEW_RS_AVAILABLE                                                                      \
    "[{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"NewReplicaSetAvailable\","        \
    "\"lastUpdateTime\":\"" TEST_TIME "\",\"lastTransitionTime\":\"" TEST_TIME "\"}]"
#define COND_RS_UPDATED                                                                            \
    "[{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"ReplicaSetUpdated\","             \
    "\"lastUpdateTime\":\"" TEST_TIME "\",\"lastTransitionTime\":\"" TEST_TIME "\"}]"

/* currentDeployment: pds < 0 for none; conditions as JSON text or NULL. */
static json_t *current_deployment(int64_t pds, int replicas, int status_replicas, int updated,
                                  int available, const char *conditions)
{
    json_t *d = json_pack("{s:{s:s}, s:{s:i, s:{s:s}}, s:{s:i, s:i, s:i}}", "metadata", "name",
                          "progress-test", "spec", "replicas", replicas, "strategy", "type",
                          "Recreate", "status", "replicas", status_replicas, "updatedReplicas",
                          updated, "availableReplicas", available);
    if (pds >= 0)
        fx_set(d, "spec.progressDeadlineSeconds", json_integer(pds));
    if (conditions)
        fx_set(d, "status.conditions", json_loads(conditions, 0, NULL));
    return d;
}

/* newRSWithAvailable */
static json_t *rs_available(const char *name, int spec, int status, int available)
{
    json_t *rs = fx_rs(name, spec, NULL);
    fx_set(rs, "status",
           json_pack("{s:i, s:i}", "replicas", status, "availableReplicas", available));
    return rs;
}

/* Whether two conditions have the same value (or none) for a field. */
static bool same(const json_t *a, const json_t *b, const char *field)
{
    const json_t *x = json_object_get(a, field), *y = json_object_get(b, field);
    return (!x && !y) || json_equal(x, y);
}

static void test_requeue_stuck_deployment(void **state)
{
    (void)state;
    struct {
        const char *name;
        int64_t pds;
        int d[4];      /* replicas, status replicas, updated, available */
        int status[3]; /* the new status: replicas, updated, available */
        const char *conditions;
        const char *now;
        int64_t expected;
    } cases[] = {
        {"nil progressDeadlineSeconds", -1, {4, 3, 3, 2}, {3, 3, 2}, NULL, TEST_TIME, -1},
        {"infinite progressDeadlineSeconds",
         INT32_MAX,
         {4, 3, 3, 2},
         {3, 3, 2},
         NULL,
         TEST_TIME,
         -1},
        {"no progressing condition", 60, {4, 3, 3, 2}, {3, 3, 2}, NULL, TEST_TIME, -1},
        {"complete deployment", 60, {3, 3, 3, 3}, {3, 3, 3}, NULL, TEST_TIME, -1},
        {"already failed", 60, {3, 3, 3, 0}, {3, 3, 0}, COND_FAILED, TEST_TIME, -1},
        {"stuck - 30s",
         60,
         {3, 3, 3, 1},
         {3, 3, 1},
         COND_STUCK,
         "2017-02-15T18:49:30Z",
         30 * CK_DEPLOY_NS_PER_SEC},
        {"stuck - 1s",
         60,
         {3, 3, 3, 1},
         {3, 3, 1},
         COND_STUCK,
         "2017-02-15T18:49:59Z",
         CK_DEPLOY_NS_PER_SEC},
        {"less than a second => now",
         60,
         {3, 3, 3, 1},
         {3, 3, 1},
         COND_STUCK,
         "2017-02-15T18:49:59.000001Z", /* API times keep microseconds at most */
         0},
        {"failed - now", 60, {3, 3, 3, 1}, {3, 3, 1}, COND_STUCK, "2017-02-15T18:50:00Z", 0},
        {"failed - 1s after deadline",
         60,
         {3, 3, 3, 1},
         {3, 3, 1},
         COND_STUCK,
         "2017-02-15T18:50:01Z",
         0},
        {"failed - 60s after deadline",
         60,
         {3, 3, 3, 1},
         {3, 3, 1},
         COND_STUCK,
         "2017-02-15T18:51:00Z",
         0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = current_deployment(cases[i].pds, cases[i].d[0], cases[i].d[1], cases[i].d[2],
                                       cases[i].d[3], cases[i].conditions);
        json_t *st = json_pack("{s:i, s:i, s:i}", "replicas", cases[i].status[0], "updatedReplicas",
                               cases[i].status[1], "availableReplicas", cases[i].status[2]);
        int64_t got = ck__deploy_requeue_stuck_after(d, st, fx_ns(cases[i].now));
        if (got != cases[i].expected)
            fail_msg("%s: %lld, want %lld", cases[i].name, (long long)got,
                     (long long)cases[i].expected);
        json_decref(st);
        json_decref(d);
    }
}

static void test_sync_rollout_status(void **state)
{
    (void)state;
    int64_t now = fx_ns("2017-02-15T18:55:00Z"); /* 6 minutes after TEST_TIME */
    /* one case a row */
    /* clang-format off */
    struct {
        const char *name;
        int64_t pds;                 /* -1: none */
        int d[4];                    /* spec.replicas, status replicas, updated, available */
        const char *conditions;
        int other[3], new_rs[3];     /* spec, status, available; spec -1: none */
        const char *status, *reason; /* the Progressing condition wanted; NULL: none */
        bool same_update, same_transition;
    } cases[] = {
        {"no deadline: condition removed", -1, {3, 2, 2, 2}, COND_RS_UPDATED,
         {0, 1, 1}, {3, 2, 2}, NULL, NULL, false, false},
        {"one active ReplicaSet: not estimated", 60, {3, 3, 3, 3}, COND_NEW_RS_AVAILABLE,
         {3, 3, 3}, {-1}, "True", "NewReplicaSetAvailable", true, true},
        {"progressing, was True: keep lastTransitionTime", 60, {3, 2, 2, 2}, COND_RS_UPDATED,
         {0, 1, 1}, {3, 2, 2}, "True", "ReplicaSetUpdated", false, true},
        {"progressing, was False: update everything", 60, {3, 2, 2, 2}, COND_FAILED,
         {0, 1, 1}, {3, 2, 2}, "True", "ReplicaSetUpdated", false, false},
        {"progressing: create the condition", 60, {3, 2, 2, 2}, "[]",
         {0, 1, 1}, {3, 2, 2}, "True", "ReplicaSetUpdated", false, false},
        {"complete, was True: keep lastTransitionTime", 60, {3, 3, 3, 3}, COND_RS_UPDATED,
         {-1}, {3, 3, 3}, "True", "NewReplicaSetAvailable", false, true},
        {"complete, was False: update everything", 60, {3, 3, 3, 3}, COND_FAILED,
         {-1}, {3, 3, 3}, "True", "NewReplicaSetAvailable", false, false},
        {"complete: create the condition", 60, {3, 3, 3, 3}, "[]",
         {-1}, {3, 3, 3}, "True", "NewReplicaSetAvailable", false, false},
        {"complete without a new ReplicaSet", 60, {0, 3, 3, 3}, COND_RS_UPDATED,
         {0, 0, 0}, {-1}, "True", "NewReplicaSetAvailable", false, true},
        {"past the deadline: timed out", 60, {3, 2, 2, 2}, COND_RS_UPDATED,
         {-1}, {3, 2, 2}, "False", "ProgressDeadlineExceeded", false, false},
        {"already timed out: unchanged", 60, {3, 2, 2, 2}, COND_FAILED,
         {-1}, {3, 2, 2}, "False", "ProgressDeadlineExceeded", true, true},
    };
    /* clang-format on */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = current_deployment(cases[i].pds, cases[i].d[0], cases[i].d[1], cases[i].d[2],
                                       cases[i].d[3], cases[i].conditions);
        json_t *objs[2], *new_rs = NULL;
        const json_t *all[2];
        size_t n = 0;
        if (cases[i].other[0] >= 0) {
            objs[n] = rs_available("bar", cases[i].other[0], cases[i].other[1], cases[i].other[2]);
            all[n] = objs[n];
            n++;
        }
        if (cases[i].new_rs[0] >= 0) {
            new_rs =
                rs_available("foo", cases[i].new_rs[0], cases[i].new_rs[1], cases[i].new_rs[2]);
            objs[n] = new_rs;
            all[n++] = new_rs;
        }
        json_t *st = ck__deploy_rollout_status(all, n, new_rs, d, now);
        const json_t *c = ck__deploy_condition_get(st, CK_DEPLOY_COND_PROGRESSING);
        const json_t *before =
            ck__deploy_condition_get(fx_get(d, "status"), CK_DEPLOY_COND_PROGRESSING);
        if (!cases[i].status) {
            if (c)
                fail_msg("%s: unexpected Progressing condition", cases[i].name);
        } else {
            if (!c)
                fail_msg("%s: no Progressing condition", cases[i].name);
            assert_string_equal(json_string_value(json_object_get(c, "status")), cases[i].status);
            assert_string_equal(json_string_value(json_object_get(c, "reason")), cases[i].reason);
            assert_int_equal(same(c, before, "lastUpdateTime"), cases[i].same_update);
            assert_int_equal(same(c, before, "lastTransitionTime"), cases[i].same_transition);
        }
        json_decref(st);
        fx_decref_all(objs, n);
        json_decref(d);
    }
}

static void test_replica_failure(void **state)
{
    (void)state;
    int64_t now = fx_ns("2017-02-15T18:55:00Z");
    json_t *d = current_deployment(60, 3, 3, 3, 3, COND_RS_UPDATED);
    fx_set(d, "status.conditions",
           json_pack("[{s:s, s:s, s:s}]", "type", "ReplicaFailure", "status", "True", "reason",
                     "Stale"));
    json_t *old_rs = rs_available("old", 0, 0, 0), *new_rs = rs_available("new", 3, 3, 3);
    json_t *failure = json_pack("[{s:s, s:s, s:s, s:s, s:s}]", "type", "ReplicaFailure", "status",
                                "True", "reason", "FailedCreate", "message", "exceeded quota",
                                "lastTransitionTime", TEST_TIME);
    fx_set(old_rs, "status.conditions", failure);
    const json_t *all[] = {old_rs, new_rs};
    json_t *st = ck__deploy_rollout_status(all, 2, new_rs, d, now);
    const json_t *c = ck__deploy_condition_get(st, CK_DEPLOY_COND_REPLICA_FAILURE);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), "FailedCreate");
    assert_string_equal(json_string_value(json_object_get(c, "lastUpdateTime")), TEST_TIME);
    json_decref(st);
    /* gone from the ReplicaSets: gone from the Deployment */
    json_object_del(json_object_get(old_rs, "status"), "conditions");
    st = ck__deploy_rollout_status(all, 2, new_rs, d, now);
    assert_null(ck__deploy_condition_get(st, CK_DEPLOY_COND_REPLICA_FAILURE));
    /* the caller writes only a changed status */
    json_t *again = ck__deploy_rollout_status(all, 2, new_rs, d, now);
    assert_true(json_equal(st, again));
    json_decref(again);
    json_decref(st);
    json_decref(old_rs);
    json_decref(new_rs);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requeue_stuck_deployment),
        cmocka_unit_test(test_sync_rollout_status),
        cmocka_unit_test(test_replica_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
