/*
 * test_deployment_util.c - lib/controllers/deployment/util.c on the table cases of
 * kubernetes pkg/controller/deployment/util/deployment_util_test.go (EqualIgnoreHash,
 * FindNewReplicaSet, FindOldReplicaSets, replica counts, ResolveFenceposts,
 * NewRSNewReplicas, conditions, DeploymentComplete/Progressing/TimedOut,
 * MaxUnavailable, MinAvailable, int32 annotations, annotation utilities,
 * ReplicasAnnotationsNeedUpdate, getReplicaSetFraction), plus our own cases for the
 * template hash, percentages, times and revisions.
 */
#include "cktest.h"

#include <stdint.h>
#include <string.h>

#include "controllers/deploy_fixtures.h"

/* generatePodTemplateSpec: name, nodeName, one annotation (or none), labels. */
static json_t *pod_template(const char *name, const char *node, const char *annotation,
                            json_t *labels)
{
    json_t *t = json_pack("{s:{s:s, s:o}, s:{s:s}}", "metadata", "name", name, "labels", labels,
                          "spec", "nodeName", node);
    if (annotation)
        fx_set(t, "metadata.annotations", json_pack("{s:s}", annotation, "value"));
    return t;
}

#define H CK_DEPLOY_HASH_LABEL

static void test_equal_ignore_hash(void **state)
{
    (void)state;
    struct {
        const char *name1, *node1, *ann1;
        const char *labels1;
        const char *name2, *node2, *ann2;
        const char *labels2;
        bool expected;
    } cases[] = {
        {"foo", "foo-node", NULL, "{\"" H "\":\"value-1\",\"something\":\"else\"}", "foo",
         "foo-node", NULL, "{\"" H "\":\"value-1\",\"something\":\"else\"}", true},
        {"foo", "foo-node", NULL, "{\"" H "\":\"value-1\",\"something\":\"else\"}", "foo",
         "foo-node", NULL, "{\"" H "\":\"value-2\",\"something\":\"else\"}", true},
        {"foo", "foo-node", NULL, "{\"something\":\"else\"}", "foo", "foo-node", NULL,
         "{\"" H "\":\"value-2\",\"something\":\"else\"}", true},
        {"foo", "foo-node", NULL, "{\"something\":\"else\"}", "foo", "foo-node", NULL,
         "{\"" H "\":\"value-2\"}", false},
        {"foo", "foo-node", NULL, "{\"" H "\":\"value-1\"}", "foo", "foo-node", NULL,
         "{\"something\":\"else\"}", false},
        {"foo", "foo-node", NULL, "{\"" H "\":\"value-1\"}", "foo", "foo-node", NULL,
         "{\"" H "\":\"value-1\",\"something\":\"else\"}", false},
        {"foo", "foo-node", "former", "{\"" H "\":\"value-1\",\"something\":\"else\"}", "foo",
         "foo-node", "latter", "{\"" H "\":\"value-1\",\"something\":\"else\"}", false},
        {"foo-1", "foo-node", NULL, "{\"" H "\":\"value-1\",\"something\":\"else\"}", "foo-2",
         "foo-node", NULL, "{\"" H "\":\"value-2\",\"something\":\"else\"}", false},
        {"foo-1", "foo-node-1", NULL, "{\"something\":\"else\"}", "foo-2", "foo-node-2", NULL,
         "{\"" H "\":\"value-2\",\"something\":\"else\"}", false},
        {"foo", "foo-node-1", NULL, "{\"something\":\"else\"}", "foo", "foo-node-2", NULL,
         "{\"nothing\":\"else\"}", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *a = pod_template(cases[i].name1, cases[i].node1, cases[i].ann1,
                                 json_loads(cases[i].labels1, 0, NULL));
        json_t *b = pod_template(cases[i].name2, cases[i].node2, cases[i].ann2,
                                 json_loads(cases[i].labels2, 0, NULL));
        json_t *a_before = json_deep_copy(a);
        assert_int_equal(ck__deploy_equal_ignore_hash(a, b), cases[i].expected);
        assert_int_equal(ck__deploy_equal_ignore_hash(b, a), cases[i].expected);
        assert_true(json_equal(a, a_before)); /* inputs untouched */
        json_decref(a_before);
        json_decref(a);
        json_decref(b);
    }
}

/* generateDeployment: one container named and imaged after `image`, defaults filled. */
static json_t *generate_deployment(const char *image)
{
    return json_pack("{s:{s:s, s:{}}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, s:s, "
                     "s:s, s:s}], s:s, s:i, s:s, s:{}, s:b}}}}",
                     "metadata", "name", image, "annotations", "spec", "replicas", 1, "selector",
                     "matchLabels", "name", image, "template", "metadata", "labels", "name", image,
                     "spec", "containers", "name", image, "image", image, "imagePullPolicy",
                     "Always", "terminationMessagePath", "/dev/termination-log", "dnsPolicy",
                     "ClusterFirst", "terminationGracePeriodSeconds", 30, "restartPolicy", "Always",
                     "securityContext", "enableServiceLinks", 1);
}

/* generateRS: a ReplicaSet with d's template (labels shared as in Go, hash set here). */
static json_t *generate_rs(const json_t *d, const char *name, const char *hash, int replicas,
                           const char *created)
{
    json_t *rs = fx_rs(name, replicas, created);
    fx_set(rs, "spec.template", json_deep_copy(fx_get(d, "spec.template")));
    if (hash)
        fx_set(rs, "spec.template.metadata.labels." H, json_string(hash));
    return rs;
}

#define NOW   "2024-01-01T00:01:00Z"
#define LATER "2024-01-01T00:02:00Z"
#define EARLY "2024-01-01T00:00:00Z"

static void test_find_new_and_old(void **state)
{
    (void)state;
    json_t *d = generate_deployment("nginx");
    json_t *old_d = generate_deployment("nginx");
    fx_set(json_array_get(fx_get(old_d, "spec.template.spec.containers"), 0), "name",
           json_string("nginx-old-1"));
    json_t *new_rs = generate_rs(d, "new", "hash", 1, LATER);
    json_t *dup = generate_rs(d, "dup", "different-hash", 0, NOW);
    json_t *old = generate_rs(old_d, "old", NULL, 0, NULL);
    json_t *old_before = generate_rs(old_d, "old-before", NULL, 0, EARLY);

    /* TestFindNewReplicaSet (the cases of fields dropped by the server came after 1.32) */
    const json_t *l1[] = {new_rs, old};
    assert_ptr_equal(ck__deploy_find_new_rs(d, l1, 2), new_rs);
    const json_t *l2[] = {new_rs, old, dup};
    assert_ptr_equal(ck__deploy_find_new_rs(d, l2, 3), dup); /* the oldest of two */
    const json_t *l3[] = {old};
    assert_null(ck__deploy_find_new_rs(d, l3, 1));

    /* TestFindOldReplicaSets */
    const json_t *all[4], *req[4];
    size_t n_all, n_req;
    const json_t *f1[] = {new_rs, old_before};
    ck__deploy_find_old_rss(d, f1, 2, all, &n_all, req, &n_req);
    assert_int_equal(n_all, 1);
    assert_ptr_equal(all[0], old_before);
    assert_int_equal(n_req, 0);
    const json_t *f2[] = {old_before};
    ck__deploy_find_old_rss(d, f2, 1, all, &n_all, req, &n_req);
    assert_int_equal(n_all, 1);
    assert_int_equal(n_req, 0);
    const json_t *f3[] = {old_before, new_rs, dup};
    ck__deploy_find_old_rss(d, f3, 3, all, &n_all, req, &n_req);
    assert_int_equal(n_all, 2);
    assert_ptr_equal(all[0], old_before); /* oldest first */
    assert_ptr_equal(all[1], new_rs);
    assert_int_equal(n_req, 1);
    assert_ptr_equal(req[0], new_rs);
    const json_t *f4[] = {new_rs};
    ck__deploy_find_old_rss(d, f4, 1, all, &n_all, req, &n_req);
    assert_int_equal(n_all, 0);
    assert_int_equal(n_req, 0);

    json_t *objs[] = {d, old_d, new_rs, dup, old, old_before};
    fx_decref_all(objs, 6);
}

static void test_replica_counts(void **state)
{
    (void)state;
    json_t *rs1 = fx_rs_status("rs1", 1, 2), *rs2 = fx_rs_status("rs2", 2, 3);
    json_t *rs3 = fx_rs_status("rs3", 3, 0), *rs4 = fx_rs_status("rs4", 1, 1);
    struct {
        const json_t *sets[4];
        size_t n;
        int32_t count, actual;
    } cases[] = {
        {{rs1}, 1, 1, 2},           {{rs1, rs2}, 2, 3, 5}, {{rs3}, 1, 3, 0},
        {{rs1, rs2, rs3}, 3, 6, 5}, {{rs4}, 1, 1, 1},      {{rs1, rs2, rs3, rs4}, 4, 7, 6},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(ck__deploy_replica_count(cases[i].sets, cases[i].n), cases[i].count);
        assert_int_equal(ck__deploy_actual_replica_count(cases[i].sets, cases[i].n),
                         cases[i].actual);
    }
    const json_t *with_null[] = {rs1, NULL, rs2};
    assert_int_equal(ck__deploy_replica_count(with_null, 3), 3);
    json_t *objs[] = {rs1, rs2, rs3, rs4};
    fx_decref_all(objs, 4);
}

static void test_resolve_fenceposts(void **state)
{
    (void)state;
    struct {
        const char *surge, *unavailable;
        int32_t desired, want_surge, want_unavailable;
        bool error;
    } cases[] = {
        {"0%", "0%", 0, 0, 1, false},    {"39%", "39%", 10, 4, 3, false},
        {"oops", "39%", 10, 0, 0, true}, {"55%", "urg", 10, 0, 0, true},
        {NULL, "39%", 10, 0, 3, false},  {"39%", NULL, 10, 4, 0, false},
        {NULL, NULL, 10, 0, 1, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *s = cases[i].surge ? json_string(cases[i].surge) : NULL;
        json_t *u = cases[i].unavailable ? json_string(cases[i].unavailable) : NULL;
        int32_t surge = -1, unavailable = -1;
        int rc = ck__deploy_resolve_fenceposts(s, u, cases[i].desired, &surge, &unavailable);
        assert_int_equal(rc < 0, cases[i].error);
        assert_int_equal(surge, cases[i].want_surge);
        assert_int_equal(unavailable, cases[i].want_unavailable);
        json_decref(s);
        json_decref(u);
    }
}

static void test_intstr_values(void **state)
{
    (void)state;
    int32_t v;
    json_t *x = json_string("25%");
    assert_int_equal(ck__deploy_intstr_value(x, 10, true, &v), 0);
    assert_int_equal(v, 3); /* 2.5 up */
    assert_int_equal(ck__deploy_intstr_value(x, 10, false, &v), 0);
    assert_int_equal(v, 2); /* 2.5 down */
    json_decref(x);
    x = json_integer(7);
    assert_int_equal(ck__deploy_intstr_value(x, 10, false, &v), 0);
    assert_int_equal(v, 7);
    json_decref(x);
    const char *bad[] = {"25", "%", "x%", "2.5%", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        x = json_string(bad[i]);
        assert_int_equal(ck__deploy_intstr_value(x, 10, true, &v), CK_EINVAL);
        json_decref(x);
    }
}

static void test_new_rs_new_replicas(void **state)
{
    (void)state;
    struct {
        const char *type;
        int dep, new_rs, surge;
        int32_t expected;
    } cases[] = {
        {"RollingUpdate", 1, 5, 1, 5}, /* cannot scale up */
        {"RollingUpdate", 6, 2, 10, 6},
        {"Recreate", 3, 1, 1, 3},
    };
    json_t *rs5 = fx_rs("rs5", 5, NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d =
            fx_deployment("nginx", cases[i].dep, json_integer(cases[i].surge), json_integer(1));
        fx_set(d, "spec.strategy.type", json_string(cases[i].type));
        json_t *new_rs = fx_rs("new", cases[i].new_rs, NULL);
        const json_t *all[] = {rs5};
        int32_t got = -1;
        assert_int_equal(ck__deploy_new_rs_new_replicas(d, all, 1, new_rs, &got), 0);
        assert_int_equal(got, cases[i].expected);
        json_decref(new_rs);
        json_decref(d);
    }
    json_t *d = fx_deployment("nginx", 1, NULL, NULL);
    fx_set(d, "spec.strategy.type", json_string("BlueGreen"));
    int32_t got;
    const json_t *all[] = {rs5};
    assert_int_equal(ck__deploy_new_rs_new_replicas(d, all, 1, rs5, &got), CK_EINVAL);
    json_decref(d);
    json_decref(rs5);
}

#define COND_PROGRESSING                                                                           \
    "{\"type\":\"Progressing\",\"status\":\"False\",\"reason\":\"ForSomeReason\"}"
#define COND_PROGRESSING2                                                                          \
    "{\"type\":\"Progressing\",\"status\":\"True\",\"reason\":\"BecauseItIs\"}"
#define COND_AVAILABLE                                                                             \
    "{\"type\":\"Available\",\"status\":\"True\",\"reason\":\"AwesomeController\"}"

static void test_conditions(void **state)
{
    (void)state;
    json_t *st = json_loads("{\"conditions\":[" COND_PROGRESSING "," COND_AVAILABLE "]}", 0, NULL);
    /* TestGetCondition */
    assert_non_null(ck__deploy_condition_get(st, "Available"));
    assert_null(ck__deploy_condition_get(st, "ReplicaFailure"));
    json_decref(st);

    /* TestSetCondition */
    struct {
        const char *status, *cond, *expected;
    } set[] = {
        {"{}", COND_AVAILABLE, "{\"conditions\":[" COND_AVAILABLE "]}"},
        {"{\"conditions\":[" COND_PROGRESSING "]}", COND_AVAILABLE,
         "{\"conditions\":[" COND_PROGRESSING "," COND_AVAILABLE "]}"},
        {"{\"conditions\":[" COND_PROGRESSING "]}", COND_PROGRESSING2,
         "{\"conditions\":[" COND_PROGRESSING2 "]}"},
    };
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
        json_t *s = json_loads(set[i].status, 0, NULL),
               *want = json_loads(set[i].expected, 0, NULL);
        ck__deploy_condition_set(s, json_loads(set[i].cond, 0, NULL));
        assert_true(json_equal(s, want));
        json_decref(s);
        json_decref(want);
    }

    /* TestRemoveCondition */
    struct {
        const char *status, *type, *expected;
    } rm[] = {
        {"{}", "Progressing", "{}"},
        {"{\"conditions\":[" COND_PROGRESSING "]}", "Progressing", "{}"},
        {"{\"conditions\":[" COND_PROGRESSING "," COND_AVAILABLE "]}", "ReplicaFailure",
         "{\"conditions\":[" COND_PROGRESSING "," COND_AVAILABLE "]}"},
    };
    for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
        json_t *s = json_loads(rm[i].status, 0, NULL), *want = json_loads(rm[i].expected, 0, NULL);
        ck__deploy_condition_remove(s, rm[i].type);
        assert_true(json_equal(s, want));
        json_decref(s);
        json_decref(want);
    }

    /* the time rules: same status and reason change nothing; same status keeps the
     * transition time; a new status takes both times from now */
    int64_t t0 = fx_ns("2020-01-01T00:00:00Z"), t1 = fx_ns("2020-01-01T00:10:00Z");
    json_t *s = json_object();
    ck__deploy_condition_set(s, ck__deploy_condition_new("Progressing", "True", "A", "m", t0));
    ck__deploy_condition_set(s, ck__deploy_condition_new("Progressing", "True", "A", "m2", t1));
    const json_t *c = ck__deploy_condition_get(s, "Progressing");
    assert_string_equal(json_string_value(json_object_get(c, "message")), "m");
    ck__deploy_condition_set(s, ck__deploy_condition_new("Progressing", "True", "B", "m3", t1));
    c = ck__deploy_condition_get(s, "Progressing");
    assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                        "2020-01-01T00:00:00Z");
    assert_string_equal(json_string_value(json_object_get(c, "lastUpdateTime")),
                        "2020-01-01T00:10:00Z");
    ck__deploy_condition_set(s, ck__deploy_condition_new("Progressing", "False", "C", "m4", t1));
    c = ck__deploy_condition_get(s, "Progressing");
    assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                        "2020-01-01T00:10:00Z");
    json_decref(s);

    /* ReplicaSetToDeploymentCondition */
    json_t *rc =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "ReplicaFailure", "status", "True", "reason",
                  "FailedCreate", "message", "quota", "lastTransitionTime", "2020-01-01T00:00:00Z");
    json_t *dc = ck__deploy_condition_from_rs(rc);
    assert_string_equal(json_string_value(json_object_get(dc, "lastUpdateTime")),
                        "2020-01-01T00:00:00Z");
    assert_string_equal(json_string_value(json_object_get(dc, "reason")), "FailedCreate");
    json_decref(dc);
    json_decref(rc);
}

/* A Deployment with spec.replicas, a rolling strategy and a status. */
static json_t *status_deployment(int desired, int current, int updated, int ready, int available,
                                 int max_unavailable, int max_surge)
{
    json_t *d = fx_deployment("d", desired, json_integer(max_surge), json_integer(max_unavailable));
    fx_set(d, "status",
           json_pack("{s:i, s:i, s:i, s:i}", "replicas", current, "updatedReplicas", updated,
                     "readyReplicas", ready, "availableReplicas", available));
    return d;
}

static void test_complete_and_progressing(void **state)
{
    (void)state;
    /* TestDeploymentComplete: desired, current, updated, available, maxUnavailable, surge */
    struct {
        int v[6];
        bool expected;
    } complete[] = {
        {{5, 5, 5, 4, 1, 0}, false}, {{5, 5, 5, 3, 1, 0}, false}, {{5, 5, 5, 5, 0, 0}, true},
        {{5, 5, 4, 5, 0, 0}, false}, {{1, 2, 1, 1, 0, 1}, false}, {{1, 1, 1, 0, 1, 1}, false},
    };
    for (size_t i = 0; i < sizeof(complete) / sizeof(complete[0]); i++) {
        const int *v = complete[i].v;
        json_t *d = status_deployment(v[0], v[1], v[2], 0, v[3], v[4], v[5]);
        assert_int_equal(ck__deploy_complete(d, fx_get(d, "status")), complete[i].expected);
        json_decref(d);
    }
    /* TestDeploymentProgressing: old current, updated, ready, available; then new */
    struct {
        int old[4], now[4];
        bool expected;
    } progressing[] = {
        {{10, 4, 4, 4}, {10, 6, 4, 4}, true},      {{10, 4, 4, 4}, {10, 4, 4, 4}, false},
        {{10, 4, 6, 6}, {8, 4, 6, 6}, true},       {{10, 7, 3, 3}, {10, 6, 3, 3}, false},
        {{10, 4, 7, 7}, {8, 8, 5, 5}, true},       {{10, 10, 9, 8}, {10, 10, 10, 8}, true},
        {{10, 10, 10, 9}, {10, 10, 10, 10}, true},
    };
    for (size_t i = 0; i < sizeof(progressing) / sizeof(progressing[0]); i++) {
        const int *o = progressing[i].old, *n = progressing[i].now;
        json_t *d = status_deployment(10, o[0], o[1], o[2], o[3], 0, 0);
        json_t *st = json_pack("{s:i, s:i, s:i, s:i}", "replicas", n[0], "updatedReplicas", n[1],
                               "readyReplicas", n[2], "availableReplicas", n[3]);
        assert_int_equal(ck__deploy_progressing(d, st), progressing[i].expected);
        json_decref(st);
        json_decref(d);
    }
}

static void test_timed_out(void **state)
{
    (void)state;
    struct {
        const char *reason;
        int64_t pds; /* -1: unset */
        const char *from, *now;
        bool expected;
    } cases[] = {
        {"", -1, "2016-01-01T00:01:09Z", "2016-01-01T00:01:20Z", false},
        {"", INT32_MAX, "2016-01-01T00:01:09Z", "2016-01-01T00:01:20Z", false},
        {"", 10, "2016-01-01T00:01:09Z", "2016-01-01T00:01:20Z", true},  /* 11s */
        {"", 10, "2016-01-01T00:01:11Z", "2016-01-01T00:01:20Z", false}, /* 9s */
        {CK_DEPLOY_REASON_NEW_RS_AVAILABLE, -1, "0001-01-01T00:00:00Z", "2016-01-01T00:01:20Z",
         false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = json_pack("{s:{}, s:{s:[{s:s, s:s, s:s, s:s}]}}", "spec", "status",
                              "conditions", "type", "Progressing", "status", "True", "reason",
                              cases[i].reason, "lastUpdateTime", cases[i].from);
        if (cases[i].pds >= 0)
            fx_set(d, "spec.progressDeadlineSeconds", json_integer(cases[i].pds));
        assert_int_equal(ck__deploy_timed_out(d, fx_get(d, "status"), fx_ns(cases[i].now)),
                         cases[i].expected);
        json_decref(d);
    }
}

static void test_max_unavailable_and_min_available(void **state)
{
    (void)state;
    struct {
        int replicas;
        const char *max_unavailable; /* JSON; NULL: a Recreate Deployment */
        int32_t max_unavailable_want, min_available_want;
    } cases[] = {
        {10, "5", 5, 5},         {10, "10", 10, 0},     {5, "10", 5, 0},
        {0, "10", 0, 0},         {10, NULL, 0, 0},      {10, "\"50%\"", 5, 5},
        {10, "\"100%\"", 10, 0}, {5, "\"100%\"", 5, 0}, {10, "\"60%\"", 6, 4},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *mu = cases[i].max_unavailable
                         ? json_loads(cases[i].max_unavailable, JSON_DECODE_ANY, NULL)
                         : NULL;
        json_t *d = fx_deployment("d", cases[i].replicas, json_integer(1), mu);
        if (!mu)
            fx_set(d, "spec.strategy", json_pack("{s:s}", "type", "Recreate"));
        assert_int_equal(ck__deploy_max_unavailable(d), cases[i].max_unavailable_want);
        assert_int_equal(ck__deploy_min_available(d), cases[i].min_available_want);
        json_decref(d);
    }
    /* MaxUnavailable of a Recreate Deployment without spec.replicas */
    json_t *d = json_pack("{s:{s:{s:s}}}", "spec", "strategy", "type", "Recreate");
    assert_int_equal(ck__deploy_max_unavailable(d), 0);
    json_decref(d);
}

static void test_annotation_int32(void **state)
{
    (void)state;
    struct {
        const char *value;
        int32_t want;
        bool valid;
    } cases[] = {
        {NULL, 0, false},         {"invalid", 0, false},    {"-1", 0, false},
        {"0", 0, true},           {"13", 13, true},         {"2147483647", INT32_MAX, true},
        {"2147483648", 0, false}, {"4294967296", 0, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *rs = fx_rs("rs", 1, NULL);
        fx_annotate(rs, "foo", "2");
        if (cases[i].value)
            fx_annotate(rs, "test", cases[i].value);
        int32_t v = -7;
        assert_int_equal(ck__deploy_annotation_int32(rs, "test", &v), cases[i].valid);
        assert_int_equal(v, cases[i].want);
        json_decref(rs);
    }
}

static void test_annotation_utils(void **state)
{
    (void)state;
    json_t *d = generate_deployment("nginx");
    fx_annotate(d, CK_DEPLOY_REVISION_ANNOTATION, "1");
    fx_annotate(d, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, "kubectl set image");
    json_t *rs = generate_rs(d, "nginx-1", NULL, 0, NULL);

    /* SetNewReplicaSetAnnotations: revisions 11..20, history capped at 5 characters */
    for (int i = 10; i < 20; i++) {
        char next[16], history[32];
        snprintf(next, sizeof(next), "%d", i + 1);
        ck__deploy_set_new_rs_annotations(d, rs, next, true, 5);
        if (i >= 12) {
            snprintf(history, sizeof(history), "%d,%d", i - 1, i);
            assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_REVISION_HISTORY_ANNOTATION),
                                history);
        }
        assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_REVISION_ANNOTATION), next);
    }
    /* change-cause is copied; the Deployment's own revision is not */
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION),
                        "kubectl set image");
    /* an older revision changes nothing */
    assert_false(ck__deploy_set_new_rs_annotations(d, rs, "3", true, 5));

    /* SetReplicasAnnotations */
    assert_true(ck__deploy_set_replicas_annotations(rs, 10, 11));
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "10");
    assert_string_equal(ck__deploy_annotation(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION), "11");
    assert_false(ck__deploy_set_replicas_annotations(rs, 10, 11));

    /* IsSaturated */
    fx_annotate(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION, "1");
    fx_set(rs, "status.availableReplicas", json_integer(1));
    fx_set(rs, "spec.replicas", json_integer(1));
    assert_true(ck__deploy_is_saturated(d, rs));
    fx_set(rs, "status.availableReplicas", json_integer(0));
    assert_false(ck__deploy_is_saturated(d, rs));
    assert_false(ck__deploy_is_saturated(d, NULL));

    /* a ReplicaSet about to be created gets desired- and max-replicas */
    json_t *fresh = generate_rs(d, "nginx-2", NULL, 0, NULL);
    assert_true(ck__deploy_set_new_rs_annotations(d, fresh, "2", false, 5));
    assert_string_equal(ck__deploy_annotation(fresh, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION), "1");
    assert_null(ck__deploy_annotation(fresh, CK_DEPLOY_REVISION_HISTORY_ANNOTATION));
    json_decref(fresh);
    json_decref(rs);
    json_decref(d);
}

static void test_replicas_annotations_need_update(void **state)
{
    (void)state;
    struct {
        const char *desired, *max;
        bool expected;
    } cases[] = {
        {NULL, NULL, true},
        {"8", "20", true},
        {"10", "16", true},
        {"10", "20", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *rs = fx_rs("hello", 1, NULL);
        if (cases[i].desired) {
            fx_annotate(rs, CK_DEPLOY_DESIRED_REPLICAS_ANNOTATION, cases[i].desired);
            fx_annotate(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION, cases[i].max);
        }
        assert_int_equal(ck__deploy_replicas_annotations_need_update(rs, 10, 20),
                         cases[i].expected);
        json_decref(rs);
    }
}

static void test_replica_set_fraction(void **state)
{
    (void)state;
    struct {
        int replicas, status_replicas, max_surge, rs_replicas;
        const char *max_annotation;
        int32_t expected;
    } cases[] = {
        {0, 0, 0, 10, NULL, -10}, /* an empty Deployment scales everything to 0 */
        {10, 0, 0, 5, NULL, 0},   /* no annotation, unsynced: no scaling */
        {10, 0, 0, 5, "0", 0},    /* annotation zeroed, unsynced: no scaling */
        {120, 100, 0, 50, NULL, 10}, {120, 100, 0, 50, "0", 10}, {120, 0, 0, 50, "100", 10},
        {120, 0, 10, 50, "110", 9},  {10, 0, 0, 6, "12", -1},    {100, 0, 10, 50, "130", -8},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *d = fx_deployment("nginx", cases[i].replicas, json_integer(cases[i].max_surge),
                                  json_integer(1));
        fx_set(d, "status.replicas", json_integer(cases[i].status_replicas));
        json_t *rs = fx_rs("rs", cases[i].rs_replicas, NULL);
        if (cases[i].max_annotation)
            fx_annotate(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION, cases[i].max_annotation);
        assert_int_equal(ck__deploy_rs_fraction(rs, d), cases[i].expected);
        json_decref(rs);
        json_decref(d);
    }
}

/* GetReplicaSetProportion: the share, never beyond what is left to hand out. */
static void test_rs_proportion(void **state)
{
    (void)state;
    json_t *d = fx_deployment("nginx", 20, NULL, json_integer(1));
    json_t *rs = fx_rs("rs", 5, NULL), *empty = fx_rs("empty", 0, NULL);
    fx_annotate(rs, CK_DEPLOY_MAX_REPLICAS_ANNOTATION, "10"); /* share: 5 * 20/10 - 5 = 5 */
    struct {
        const json_t *rs;
        int32_t to_add, added, expected;
    } cases[] = {
        {NULL, 10, 0, 0},  /* no ReplicaSet */
        {empty, 10, 0, 0}, /* never from zero */
        {rs, 0, 0, 0},     /* nothing to add */
        {rs, 10, 10, 0},   /* all handed out */
        {rs, 10, 0, 5},    /* its share */
        {rs, 10, 7, 3},    /* capped by what is left */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(ck__deploy_rs_proportion(cases[i].rs, d, cases[i].to_add, cases[i].added),
                         cases[i].expected);
    /* scaling down: share round(5 * 5/10) - 5 = 3 - 5 = -2, capped likewise */
    fx_set(d, "spec.replicas", json_integer(5));
    assert_int_equal(ck__deploy_rs_proportion(rs, d, -10, 0), -2);
    assert_int_equal(ck__deploy_rs_proportion(rs, d, -10, -9), -1);
    json_decref(empty);
    json_decref(rs);
    json_decref(d);
}

static void test_template_hash(void **state)
{
    (void)state;
    json_t *d = generate_deployment("nginx");
    const json_t *t = fx_get(d, "spec.template");
    char a[16], b[16], c[16], e[16];
    ck__deploy_template_hash(t, NULL, a, sizeof(a));
    json_t *same = json_deep_copy(t);
    ck__deploy_template_hash(same, NULL, b, sizeof(b));
    assert_string_equal(a, b); /* stable, whatever the key order */
    assert_true(strlen(a) > 0 && strlen(a) <= 10);
    assert_int_equal(strspn(a, "bcdfghjklmnpqrstvwxz2456789"), strlen(a));
    json_t *one = json_integer(1);
    ck__deploy_template_hash(t, one, c, sizeof(c));
    assert_string_not_equal(a, c); /* collisionCount changes it */
    fx_set(json_array_get(fx_get(same, "spec.containers"), 0), "image", json_string("nginx:2"));
    ck__deploy_template_hash(same, NULL, e, sizeof(e));
    assert_string_not_equal(a, e); /* so does the template */
    json_decref(one);
    json_decref(same);
    json_decref(d);
}

static void test_times(void **state)
{
    (void)state;
    int64_t ns;
    assert_int_equal(ck__deploy_parse_time("1970-01-01T00:00:01Z", &ns), 0);
    assert_int_equal(ns, CK_DEPLOY_NS_PER_SEC);
    assert_int_equal(ck__deploy_parse_time("2017-02-15T18:49:00Z", &ns), 0);
    assert_int_equal(ns, 1487184540LL * CK_DEPLOY_NS_PER_SEC);
    assert_int_equal(ck__deploy_parse_time("2017-02-15T19:49:00.5+01:00", &ns), 0);
    assert_int_equal(ns, 1487184540LL * CK_DEPLOY_NS_PER_SEC + 500000000);
    assert_int_equal(ck__deploy_parse_time("2017-02-15 18:49:00Z", &ns), CK_EINVAL);
    assert_int_equal(ck__deploy_parse_time("2017-02-15T18:49:00", &ns), CK_EINVAL);
    assert_int_equal(ck__deploy_parse_time(NULL, &ns), CK_EINVAL);
}

static void test_revisions(void **state)
{
    (void)state;
    json_t *r1 = fx_rs("r1", 0, NULL), *r3 = fx_rs("r3", 0, NULL), *r2 = fx_rs("r2", 0, NULL);
    json_t *bad = fx_rs("bad", 0, NULL), *none = fx_rs("none", 0, NULL);
    fx_annotate(r1, CK_DEPLOY_REVISION_ANNOTATION, "1");
    fx_annotate(r2, CK_DEPLOY_REVISION_ANNOTATION, "2");
    fx_annotate(r3, CK_DEPLOY_REVISION_ANNOTATION, "3");
    fx_annotate(bad, CK_DEPLOY_REVISION_ANNOTATION, "x");
    const json_t *all[] = {r1, bad, r3, none, r2};
    assert_int_equal(ck__deploy_max_revision(all, 5), 3);
    assert_int_equal(ck__deploy_last_revision(all, 5), 2);
    int64_t v;
    assert_int_equal(ck__deploy_revision(none, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(ck__deploy_revision(bad, &v), CK_EINVAL);
    json_t *objs[] = {r1, r2, r3, bad, none};
    fx_decref_all(objs, 5);
}

static void test_find_active_or_latest(void **state)
{
    (void)state;
    json_t *n0 = fx_rs("new", 0, FX_NEW), *n3 = fx_rs("new3", 3, FX_NEW);
    json_t *o0 = fx_rs("old", 0, FX_OLD), *o2 = fx_rs("old2", 2, FX_OLD);
    json_t *p0 = fx_rs("older", 0, FX_OLDER);
    const json_t *zeros[] = {p0, o0};
    assert_ptr_equal(ck__deploy_find_active_or_latest(n0, zeros, 2), n0);
    assert_ptr_equal(ck__deploy_find_active_or_latest(NULL, zeros, 2), o0); /* the newest */
    const json_t *one[] = {p0, o2};
    assert_ptr_equal(ck__deploy_find_active_or_latest(n0, one, 2), o2);
    assert_null(ck__deploy_find_active_or_latest(n3, one, 2)); /* two active */
    assert_null(ck__deploy_find_active_or_latest(NULL, NULL, 0));
    json_t *objs[] = {n0, n3, o0, o2, p0};
    fx_decref_all(objs, 5);
}

static void test_set_annotations_to(void **state)
{
    (void)state;
    json_t *d = fx_deployment("d", 1, NULL, NULL);
    fx_annotate(d, CK_DEPLOY_REVISION_ANNOTATION, "5");
    fx_annotate(d, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, "edit");
    fx_annotate(d, "team", "a");
    json_t *rs = fx_rs("rs", 0, NULL);
    fx_annotate(rs, CK_DEPLOY_REVISION_ANNOTATION, "2");
    fx_annotate(rs, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION, "create");
    ck__deploy_set_annotations_to(d, rs);
    assert_string_equal(ck__deploy_annotation(d, CK_DEPLOY_REVISION_ANNOTATION), "5");
    assert_string_equal(ck__deploy_annotation(d, CK_DEPLOY_CHANGE_CAUSE_ANNOTATION), "create");
    assert_null(ck__deploy_annotation(d, "team"));
    assert_true(ck__deploy_set_revision(d, "6"));
    assert_false(ck__deploy_set_revision(d, "6"));
    json_decref(rs);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_ignore_hash),
        cmocka_unit_test(test_find_new_and_old),
        cmocka_unit_test(test_replica_counts),
        cmocka_unit_test(test_resolve_fenceposts),
        cmocka_unit_test(test_intstr_values),
        cmocka_unit_test(test_new_rs_new_replicas),
        cmocka_unit_test(test_conditions),
        cmocka_unit_test(test_complete_and_progressing),
        cmocka_unit_test(test_timed_out),
        cmocka_unit_test(test_max_unavailable_and_min_available),
        cmocka_unit_test(test_annotation_int32),
        cmocka_unit_test(test_annotation_utils),
        cmocka_unit_test(test_replicas_annotations_need_update),
        cmocka_unit_test(test_replica_set_fraction),
        cmocka_unit_test(test_rs_proportion),
        cmocka_unit_test(test_template_hash),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_revisions),
        cmocka_unit_test(test_find_active_or_latest),
        cmocka_unit_test(test_set_annotations_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
