/*
 * test_deployment_sync.c - lib/controllers/deployment/sync.c on the table cases of
 * kubernetes pkg/controller/deployment/sync_test.go (TestScale,
 * TestDeploymentController_cleanupDeployment and cleanupDeploymentOrder), plus our own
 * cases for calculateStatus, scaleReplicaSet's object and getNewReplicaSet.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/internal/util.h"
#include "controllers/deploy_fixtures.h"

struct scale_rs {
    const char *name;
    int size;
    const char *created;
    int want;
    int desired; /* the desired-replicas annotation when not the old Deployment's size */
    bool unavailable;
};

static void test_scale(void **state)
{
    (void)state;
    /* one case a row: the Deployment now and before, then its ReplicaSets */
    /* clang-format off */
    struct {
        const char *name;
        int replicas, surge, unavailable, old_replicas, old_surge;
        bool has_new;      /* rss[0] is the new ReplicaSet */
        bool proportional; /* neither one active ReplicaSet nor a saturated new one */
        size_t n;
        struct scale_rs rss[3];
    } cases[] = {
        {"normal scaling event: 10 -> 12", 12, 0, 0, 10, 0, true, false, 1,
         {{"foo-v1", 10, FX_NEW, 12, 0, false}}},
        {"normal scaling event: 10 -> 5", 5, 0, 0, 10, 0, true, false, 1,
         {{"foo-v1", 10, FX_NEW, 5, 0, false}}},
        {"proportional scaling: 5 -> 10", 10, 0, 0, 5, 0, true, true, 2,
         {{"foo-v2", 2, FX_NEW, 4, 0, false}, {"foo-v1", 3, FX_OLD, 6, 0, false}}},
        {"proportional scaling: 5 -> 3", 3, 0, 0, 5, 0, true, true, 2,
         {{"foo-v2", 2, FX_NEW, 1, 0, false}, {"foo-v1", 3, FX_OLD, 2, 0, false}}},
        {"proportional scaling: 9 -> 4", 4, 0, 0, 9, 0, true, true, 2,
         {{"foo-v2", 8, FX_NEW, 4, 0, false}, {"foo-v1", 1, FX_OLD, 0, 0, false}}},
        {"proportional scaling: 7 -> 10", 10, 0, 0, 7, 0, true, true, 3,
         {{"foo-v3", 2, FX_NEW, 3, 0, false}, {"foo-v2", 3, FX_OLD, 4, 0, false},
          {"foo-v1", 2, FX_OLDER, 3, 0, false}}},
        {"proportional scaling: 13 -> 8", 8, 0, 0, 13, 0, true, true, 3,
         {{"foo-v3", 2, FX_NEW, 1, 0, false}, {"foo-v2", 8, FX_OLD, 5, 0, false},
          {"foo-v1", 3, FX_OLDER, 2, 0, false}}},
        {"leftover distribution: 3 -> 4 (to the newest)", 4, 0, 0, 3, 0, true, true, 3,
         {{"foo-v3", 1, FX_NEW, 2, 0, false}, {"foo-v2", 1, FX_OLD, 1, 0, false},
          {"foo-v1", 1, FX_OLDER, 1, 0, false}}},
        {"leftover distribution: 3 -> 2 (from the oldest)", 2, 0, 0, 3, 0, true, true, 3,
         {{"foo-v3", 1, FX_NEW, 1, 0, false}, {"foo-v2", 1, FX_OLD, 1, 0, false},
          {"foo-v1", 1, FX_OLDER, 0, 0, false}}},
        {"proportional scaling (no new rs): 4 -> 5", 5, 0, 0, 4, 0, false, true, 2,
         {{"foo-v2", 2, FX_OLD, 3, 0, false}, {"foo-v1", 2, FX_OLDER, 2, 0, false}}},
        {"proportional scaling: 6 -> 0", 0, 0, 0, 6, 0, true, true, 3,
         {{"foo-v3", 3, FX_NEW, 0, 0, false}, {"foo-v2", 2, FX_OLD, 0, 0, false},
          {"foo-v1", 1, FX_OLDER, 0, 0, false}}},
        {"proportional scaling: 0 -> 6", 6, 0, 0, 6, 0, true, false, 3,
         {{"foo-v3", 0, FX_NEW, 6, 0, false}, {"foo-v2", 0, FX_OLD, 0, 0, false},
          {"foo-v1", 0, FX_OLDER, 0, 0, false}}},
        {"failed rs update (its annotation says 3)", 5, 0, 0, 5, 0, true, true, 3,
         {{"foo-v3", 2, FX_NEW, 2, 0, false}, {"foo-v2", 1, FX_OLD, 2, 3, false},
          {"foo-v1", 1, FX_OLDER, 1, 0, false}}},
        {"deployment with surge pods", 20, 2, 0, 10, 2, true, true, 2,
         {{"foo-v2", 6, FX_NEW, 11, 0, false}, {"foo-v1", 6, FX_OLD, 11, 0, false}}},
        {"change both surge and size", 50, 6, 0, 10, 3, true, true, 2,
         {{"foo-v2", 5, FX_NEW, 22, 0, false}, {"foo-v1", 8, FX_OLD, 34, 0, false}}},
        {"change both size and template", 14, 0, 0, 10, 0, false, true, 2,
         {{"foo-v2", 7, FX_NEW, 10, 0, false}, {"foo-v1", 3, FX_OLD, 4, 0, false}}},
        {"saturated but broken new replica set does not affect old pods", 2, 1, 1, 2, 1, true,
         true, 2, {{"foo-v2", 2, FX_NEW, 2, 0, true}, {"foo-v1", 1, FX_OLD, 1, 0, false}}},
    };
    /* clang-format on */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("foo", cases[i].replicas, json_integer(cases[i].surge),
                                  json_integer(cases[i].unavailable));
        json_t *old_d =
            fx_deployment("foo", cases[i].old_replicas, json_integer(cases[i].old_surge), NULL);
        json_t *rss[3] = {NULL};
        for (size_t k = 0; k < cases[i].n; k++) {
            const struct scale_rs *r = &cases[i].rss[k];
            rss[k] = fx_rs(r->name, r->size, r->created);
            int desired = r->desired ? r->desired : cases[i].old_replicas;
            ck__deploy_set_replicas_annotations(rss[k], desired,
                                                desired + ck__deploy_max_surge(old_d));
            if (r->unavailable)
                fx_set(rss[k], "status.availableReplicas", json_integer(0));
        }
        const json_t *new_rs = cases[i].has_new ? rss[0] : NULL;
        const json_t *const *old = (const json_t *const *)rss + (cases[i].has_new ? 1 : 0);
        size_t n_old = cases[i].n - (cases[i].has_new ? 1 : 0);
        int32_t new_size = -1, old_sizes[3] = {-1, -1, -1};
        bool proportional;
        assert_int_equal(
            ck__deploy_scale(d, new_rs, old, n_old, &new_size, old_sizes, &proportional), 0);
        assert_int_equal(proportional, cases[i].proportional);
        if (new_rs && new_size != cases[i].rss[0].want)
            fail_msg("%s: new ReplicaSet %d, want %d", cases[i].name, new_size,
                     cases[i].rss[0].want);
        for (size_t k = 0; k < n_old; k++) {
            const struct scale_rs *r = &cases[i].rss[k + (cases[i].has_new ? 1 : 0)];
            if (old_sizes[k] != r->want)
                fail_msg("%s: %s %d, want %d", cases[i].name, r->name, old_sizes[k], r->want);
        }
        fx_decref_all(rss, cases[i].n);
        json_decref(old_d);
        json_decref(d);
    }
}

/* Allocation failure leaves every ReplicaSet at its size. */
static void test_scale_out_of_memory(void **state)
{
    (void)state;
    json_t *d = fx_deployment("foo", 10, NULL, NULL);
    json_t *new_rs = fx_rs("foo-v2", 2, FX_NEW), *old_rs = fx_rs("foo-v1", 3, FX_OLD);
    ck__deploy_set_replicas_annotations(new_rs, 5, 5);
    ck__deploy_set_replicas_annotations(old_rs, 5, 5);
    const json_t *old[] = {old_rs};
    int32_t new_size = -1, old_size = -1;
    ck__alloc_fail_at(1, false);
    assert_int_equal(ck__deploy_scale(d, new_rs, old, 1, &new_size, &old_size, NULL), CK_ENOMEM);
    ck__alloc_fail_at(0, false);
    assert_int_equal(new_size, 2);
    assert_int_equal(old_size, 3);
    assert_int_equal(ck__deploy_scale(d, new_rs, old, 1, &new_size, &old_size, NULL), 0);
    assert_int_equal(new_size, 4);
    assert_int_equal(old_size, 6);
    json_decref(old_rs);
    json_decref(new_rs);
    json_decref(d);
}

static void test_is_scaling_event(void **state)
{
    (void)state;
    json_t *d = fx_deployment("foo", 5, NULL, NULL);
    json_t *a = fx_rs("a", 3, NULL), *b = fx_rs("b", 2, NULL), *idle = fx_rs("idle", 0, NULL);
    ck__deploy_set_replicas_annotations(a, 5, 5);
    ck__deploy_set_replicas_annotations(b, 5, 5);
    ck__deploy_set_replicas_annotations(idle, 9, 9); /* not active: ignored */
    const json_t *rss[] = {a, b, idle, NULL};
    assert_false(ck__deploy_is_scaling_event(d, rss, 4));
    fx_set(d, "spec.replicas", json_integer(7));
    assert_true(ck__deploy_is_scaling_event(d, rss, 4));
    json_t *bare = fx_rs("bare", 3, NULL); /* no annotation: no opinion */
    const json_t *only_bare[] = {bare};
    assert_false(ck__deploy_is_scaling_event(d, only_bare, 1));
    json_t *objs[] = {d, a, b, idle, bare};
    fx_decref_all(objs, 5);
}

static void test_paused_conditions(void **state)
{
    (void)state;
    int64_t now = fx_ns("2024-01-01T00:00:00Z");
    json_t *d = fx_deployment("foo", 1, NULL, NULL);
    fx_set(d, "spec.paused", json_true());
    assert_false(ck__deploy_check_paused_conditions(d, now)); /* no progress deadline */
    fx_set(d, "spec.progressDeadlineSeconds", json_integer(600));
    assert_true(ck__deploy_check_paused_conditions(d, now));
    const json_t *c = ck__deploy_condition_get(fx_get(d, "status"), CK_DEPLOY_COND_PROGRESSING);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "Unknown");
    assert_string_equal(json_string_value(json_object_get(c, "reason")), CK_DEPLOY_REASON_PAUSED);
    assert_false(ck__deploy_check_paused_conditions(d, now)); /* already says so */
    fx_set(d, "spec.paused", json_false());
    assert_true(ck__deploy_check_paused_conditions(d, now));
    c = ck__deploy_condition_get(fx_get(d, "status"), CK_DEPLOY_COND_PROGRESSING);
    assert_string_equal(json_string_value(json_object_get(c, "reason")), CK_DEPLOY_REASON_RESUMED);
    assert_false(ck__deploy_check_paused_conditions(d, now));
    /* a timed-out rollout keeps saying so, paused or not */
    fx_set(d, "status.conditions",
           json_pack("[{s:s, s:s, s:s}]", "type", "Progressing", "status", "False", "reason",
                     CK_DEPLOY_REASON_TIMED_OUT));
    fx_set(d, "spec.paused", json_true());
    assert_false(ck__deploy_check_paused_conditions(d, now));
    json_decref(d);
}

static void test_scaled_rs(void **state)
{
    (void)state;
    json_t *d = fx_deployment("foo", 10, json_integer(2), NULL);
    json_t *rs = fx_rs("foo-1", 3, NULL);
    json_t *up = ck__deploy_scaled_rs(rs, d, 5);
    assert_non_null(up);
    assert_int_equal(json_integer_value(fx_get(up, "spec.replicas")), 5);
    assert_string_equal(ck__deploy_annotation(up, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "10");
    assert_string_equal(ck__deploy_annotation(up, CK_DEPLOY_MAX_REPLICAS_ANNOTATION), "12");
    assert_int_equal(json_integer_value(fx_get(rs, "spec.replicas")), 3); /* input untouched */
    assert_null(ck__deploy_scaled_rs(up, d, 5));                          /* nothing to do */
    json_t *annotated = ck__deploy_scaled_rs(rs, d, 3); /* same size, annotations missing */
    assert_non_null(annotated);
    json_decref(annotated);
    json_decref(up);
    json_decref(rs);
    json_decref(d);
}

/* Names of the chosen ReplicaSets, comma-separated, in a static buffer. */
static const char *names(const json_t **rss, size_t n)
{
    static char buf[128];
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, ck__deploy_name(rss[i]));
    }
    return buf;
}

static void test_cleanup_deployment(void **state)
{
    (void)state;
    struct {
        int spec[4], status[4];
        size_t n;
        int64_t limit;
        bool deleted; /* the first one is being deleted already */
        size_t expected;
    } cases[] = {
        {{0, 0, 0}, {0, 0, 0}, 3, 1, false, 2},
        {{0, 0, 1, 1}, {0, 1, 0, 1}, 4, 0, false, 1}, /* only spec = status = 0 */
        {{0, 0}, {0, 0}, 2, 0, false, 2},
        {{1, 1}, {1, 1}, 2, 0, false, 0},
        {{0}, {0}, 1, 0, true, 0},
        {{0, 0, 0}, {0, 0, 0}, 3, INT32_MAX, false, 0}, /* unlimited */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("foo", 1, NULL, NULL);
        fx_set(d, "spec.revisionHistoryLimit", json_integer(cases[i].limit));
        json_t *rss[4];
        for (size_t k = 0; k < cases[i].n; k++) {
            char name[32];
            snprintf(name, sizeof(name), "foo-%zu", k + 1);
            rss[k] = fx_rs_status(name, cases[i].spec[k], cases[i].status[k]);
        }
        if (cases[i].deleted)
            fx_set(rss[0], "metadata.deletionTimestamp", json_string(FX_NEW));
        const json_t *chosen[4];
        assert_int_equal(
            ck__deploy_cleanup_choice(d, (const json_t *const *)rss, cases[i].n, chosen),
            cases[i].expected);
        fx_decref_all(rss, cases[i].n);
        json_decref(d);
    }

    /* cleanupDeploymentOrder: creation times foo-1 < foo-2 < foo-3 < foo-4 */
    static const char *const created[] = {"2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z",
                                          "2024-01-01T00:02:00Z", "2024-01-01T00:03:00Z"};
    struct {
        int replicas[4];
        const char *revisions[4];
        size_t n;
        int limit;
        const char *expected;
    } order[] = {
        {{0, 0}, {"1", "2"}, 2, 1, "foo-1"},
        {{0, 0}, {"2", "1"}, 2, 1, "foo-2"},
        {{0, 0}, {"1", ""}, 2, 1, "foo-2"}, /* no revision reads as 0 */
        {{0, 0}, {"", "2"}, 2, 1, "foo-1"},
        {{1, 0, 0}, {"1", "2", "3"}, 3, 1, "foo-2"},
        {{1, 1, 0}, {"1", "2", "3"}, 3, 1, ""},
        {{0, 0, 0, 0}, {"3", "1", "4", "2"}, 4, 2, "foo-2,foo-4"},
    };
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        json_t *d = fx_deployment("foo", 1, NULL, NULL);
        fx_set(d, "spec.revisionHistoryLimit", json_integer(order[i].limit));
        json_t *rss[4];
        for (size_t k = 0; k < order[i].n; k++) {
            char name[32];
            snprintf(name, sizeof(name), "foo-%zu", k + 1);
            rss[k] = fx_rs(name, order[i].replicas[k], created[k]);
            fx_set(rss[k], "status.replicas", json_integer(order[i].replicas[k]));
            if (*order[i].revisions[k])
                fx_annotate(rss[k], CK_DEPLOY_REVISION_ANNOTATION, order[i].revisions[k]);
        }
        const json_t *chosen[4];
        size_t n = ck__deploy_cleanup_choice(d, (const json_t *const *)rss, order[i].n, chosen);
        assert_string_equal(names(chosen, n), order[i].expected);
        fx_decref_all(rss, order[i].n);
        json_decref(d);
    }

    /* a ReplicaSet whose controller has not observed its latest spec is kept */
    json_t *d = fx_deployment("foo", 1, NULL, NULL);
    fx_set(d, "spec.revisionHistoryLimit", json_integer(0));
    json_t *rs = fx_rs_status("foo-1", 0, 0);
    fx_set(rs, "metadata.generation", json_integer(2));
    fx_set(rs, "status.observedGeneration", json_integer(1));
    const json_t *one[] = {rs}, *chosen[1];
    assert_int_equal(ck__deploy_cleanup_choice(d, one, 1, chosen), 0);
    json_decref(rs);
    json_decref(d);
}

static void test_calculate_status(void **state)
{
    (void)state;
    int64_t now = fx_ns("2024-01-01T00:00:00Z");
    json_t *d = fx_deployment("foo", 4, json_integer(1), json_integer(1));
    fx_set(d, "metadata.generation", json_integer(7));
    fx_set(d, "status.collisionCount", json_integer(2));
    json_t *new_rs = fx_rs("new", 3, NULL), *old_rs = fx_rs("old", 1, NULL);
    fx_set(new_rs, "status",
           json_pack("{s:i, s:i, s:i}", "replicas", 3, "readyReplicas", 2, "availableReplicas", 2));
    fx_set(old_rs, "status",
           json_pack("{s:i, s:i, s:i}", "replicas", 2, "readyReplicas", 1, "availableReplicas", 1));
    const json_t *all[] = {old_rs, new_rs};
    json_t *st = ck__deploy_calculate_status(all, 2, new_rs, d, now);
    assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 7);
    assert_int_equal(json_integer_value(json_object_get(st, "replicas")), 5);
    assert_int_equal(json_integer_value(json_object_get(st, "updatedReplicas")), 3);
    assert_int_equal(json_integer_value(json_object_get(st, "readyReplicas")), 3);
    assert_int_equal(json_integer_value(json_object_get(st, "availableReplicas")), 3);
    assert_int_equal(json_integer_value(json_object_get(st, "unavailableReplicas")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "collisionCount")), 2);
    const json_t *c = ck__deploy_condition_get(st, CK_DEPLOY_COND_AVAILABLE);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "True"); /* 3 >= 4-1 */
    assert_string_equal(json_string_value(json_object_get(c, "reason")),
                        CK_DEPLOY_REASON_MIN_AVAILABLE);
    json_decref(st);

    fx_set(new_rs, "status.availableReplicas", json_integer(0));
    st = ck__deploy_calculate_status(all, 2, new_rs, d, now);
    c = ck__deploy_condition_get(st, CK_DEPLOY_COND_AVAILABLE);
    assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
    assert_int_equal(json_integer_value(json_object_get(st, "unavailableReplicas")), 3);
    json_decref(st);
    json_decref(old_rs);
    json_decref(new_rs);
    json_decref(d);
}

static void test_new_rs_object(void **state)
{
    (void)state;
    json_t *d = fx_deployment("web", 4, json_integer(1), json_integer(1));
    fx_set(d, "spec.minReadySeconds", json_integer(5));
    fx_annotate(d, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, "initial");
    json_t *old_rs = fx_rs("web-old", 4, NULL);
    fx_annotate(old_rs, CK_DEPLOY_REVISION_ANNOTATION, "3");
    const json_t *old[] = {old_rs};
    int err = -1;
    json_t *rs = ck__deploy_new_rs_object(d, old, 1, &err);
    assert_int_equal(err, 0);
    assert_non_null(rs);

    char hash[16], name[32];
    ck__deploy_template_hash(fx_get(d, "spec.template"), NULL, hash, sizeof(hash));
    snprintf(name, sizeof(name), "web-%s", hash);
    assert_string_equal(ck__deploy_name(rs), name);
    assert_string_equal(json_string_value(fx_get(rs, "metadata.namespace")), "default");
    assert_string_equal(json_string_value(fx_get(rs, "metadata.labels." CK_DEPLOY_HASH_LABEL)),
                        hash);
    assert_string_equal(json_string_value(fx_get(rs, "metadata.labels.foo")), "bar");
    assert_string_equal(
        json_string_value(fx_get(rs, "spec.selector.matchLabels." CK_DEPLOY_HASH_LABEL)), hash);
    assert_string_equal(
        json_string_value(fx_get(rs, "spec.template.metadata.labels." CK_DEPLOY_HASH_LABEL)), hash);
    assert_null(fx_get(d, "spec.template.metadata.labels." CK_DEPLOY_HASH_LABEL));
    const json_t *owner = json_array_get(fx_get(rs, "metadata.ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Deployment");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), "deployment-uid");
    assert_true(json_is_true(json_object_get(owner, "controller")));
    assert_int_equal(json_integer_value(fx_get(rs, "spec.minReadySeconds")), 5);
    /* 4 old + itself: surge 1 allows 1 */
    assert_int_equal(json_integer_value(fx_get(rs, "spec.replicas")), 1);
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_REVISION_ANNOTATION), "4");
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "4");
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION), "5");
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION), "initial");
    /* the new ReplicaSet is found as new for its Deployment */
    const json_t *both[] = {old_rs, rs};
    assert_ptr_equal(ck__deploy_find_new_rs(d, both, 2), rs);

    /* synced again: nothing to update; a changed minReadySeconds is */
    assert_null(ck__deploy_sync_new_rs(d, rs, old, 1));
    fx_set(d, "spec.minReadySeconds", json_integer(9));
    json_t *upd = ck__deploy_sync_new_rs(d, rs, old, 1);
    assert_non_null(upd);
    assert_int_equal(json_integer_value(fx_get(upd, "spec.minReadySeconds")), 9);
    json_decref(upd);

    /* a collision count gives another name */
    json_t *cc = json_integer(1);
    char other[16];
    ck__deploy_template_hash(fx_get(d, "spec.template"), cc, other, sizeof(other));
    assert_string_not_equal(other, hash);
    json_decref(cc);

    /* the Deployment takes its new ReplicaSet's revision and FoundNewReplicaSet */
    fx_set(d, "spec.progressDeadlineSeconds", json_integer(600));
    assert_true(ck__deploy_sync_deployment_revision(d, rs, fx_ns("2024-01-01T00:00:00Z")));
    assert_string_equal(ck__deploy_annotation(d, CK_DEPLOY_REVISION_ANNOTATION), "4");
    const json_t *c = ck__deploy_condition_get(fx_get(d, "status"), CK_DEPLOY_COND_PROGRESSING);
    assert_string_equal(json_string_value(json_object_get(c, "reason")),
                        CK_DEPLOY_REASON_FOUND_NEW_RS);
    assert_false(ck__deploy_sync_deployment_revision(d, rs, fx_ns("2024-01-01T00:00:00Z")));

    /* an unknown strategy cannot be sized */
    fx_set(d, "spec.strategy.type", json_string("BlueGreen"));
    assert_null(ck__deploy_new_rs_object(d, old, 1, &err));
    assert_int_equal(err, CK_EINVAL);
    json_decref(rs);
    json_decref(old_rs);
    json_decref(d);
}

/* Allocation failure is a clean CK_ENOMEM, at every allocation in turn. */
static void test_new_rs_object_out_of_memory(void **state)
{
    (void)state;
    json_t *d = fx_deployment("web", 4, json_integer(1), json_integer(1));
    int err = 0;
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, false);
        json_t *rs = ck__deploy_new_rs_object(d, NULL, 0, &err);
        ck__alloc_fail_at(0, false);
        if (rs) {
            assert_int_equal(err, 0);
            json_decref(rs);
            break;
        }
        assert_int_equal(err, CK_ENOMEM);
        assert_true(n < 10);
    }
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_scale_out_of_memory),
        cmocka_unit_test(test_is_scaling_event),
        cmocka_unit_test(test_paused_conditions),
        cmocka_unit_test(test_scaled_rs),
        cmocka_unit_test(test_cleanup_deployment),
        cmocka_unit_test(test_calculate_status),
        cmocka_unit_test(test_new_rs_object),
        cmocka_unit_test(test_new_rs_object_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
