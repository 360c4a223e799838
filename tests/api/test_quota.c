/*
 * test_quota.c - tests for lib/api/quota.c (the quota evaluators: what pods, services,
 * claims and other objects use, scopes, constraints, sums) and the validation of the
 * ResourceQuota kind (lib/api/kinds/resourcequota.c), on objects built here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckube/api.h"
#include "ckube/quota.h"

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

/* Asserts usage[name] == want (NULL: absent). */
static void assert_entry(const json_t *usage, const char *name, const char *want)
{
    const char *got = json_string_value(json_object_get(usage, name));
    if (!want) {
        if (got)
            fail_msg("%s: unexpected %s", name, got);
        return;
    }
    if (!got || strcmp(got, want) != 0)
        fail_msg("%s: want %s, got %s", name, want, got ? got : "(absent)");
}

static void test_quantity_format_matches_quantity_string(void **state)
{
    (void)state;
    static const struct {
        int64_t milli;
        bool binary;
        const char *want;
    } cases[] = {
        {0, false, "0"},
        {500, false, "500m"},
        {1500, false, "1500m"},
        {2000, false, "2"},
        {3000000, false, "3k"},
        {1500000, false, "1500"},
        {INT64_C(128) * 1024 * 1024 * 1000, true, "128Mi"},
        {INT64_C(1536) * 1000, true, "1536"},
        {512000, true, "512"},
        {INT64_C(2) * 1024 * 1024 * 1024 * 1000, true, "2Gi"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[48];
        assert_string_equal(ck_quantity_format(cases[i].milli, cases[i].binary, buf, sizeof(buf)),
                            cases[i].want);
    }
}

static void test_add_keeps_the_first_format_and_sums(void **state)
{
    (void)state;
    json_t *into = parse("{\"memory\":\"1Gi\",\"cpu\":\"500m\",\"storage\":\"0\"}");
    json_t *delta = parse("{\"memory\":\"512Mi\",\"cpu\":\"500m\",\"pods\":1,\"storage\":\"2Gi\"}");
    assert_int_equal(ck_quota_add(into, delta), 0);
    assert_entry(into, "memory", "1536Mi");
    assert_entry(into, "cpu", "1");
    assert_entry(into, "pods", "1");
    assert_entry(into, "storage", "2Gi"); /* a zero takes the format added */
    json_t *bad = parse("{\"cpu\":\"lots\"}");
    assert_int_equal(ck_quota_add(into, bad), -1);
    json_decref(bad);
    json_decref(into);
    json_decref(delta);
}

static void test_pod_usage_counts_containers_sidecars_and_overhead(void **state)
{
    (void)state;
    json_t *pod = parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{"
                        "\"overhead\":{\"cpu\":\"100m\",\"memory\":\"10Mi\"},"
                        "\"containers\":["
                        "{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"200m\",\"memory\":"
                        "\"64Mi\"},\"limits\":{\"cpu\":\"1\"}}},"
                        "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"300m\","
                        "\"example.com/gpu\":\"2\"}}}],"
                        "\"initContainers\":["
                        "{\"name\":\"side\",\"restartPolicy\":\"Always\",\"resources\":{"
                        "\"requests\":{\"cpu\":\"100m\"}}},"
                        "{\"name\":\"init\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}");
    json_t *u = ck_quota_usage("", "pods", pod, 0);
    assert_non_null(u);
    assert_entry(u, "pods", "1");
    assert_entry(u, "count/pods", "1");
    /* max(200m+300m+100m sidecar, 2 init + 100m sidecar) + 100m overhead */
    assert_entry(u, "requests.cpu", "2200m");
    assert_entry(u, "cpu", "2200m");
    assert_entry(u, "requests.memory", "74Mi");
    /* overhead joins limits only where a limit is set */
    assert_entry(u, "limits.cpu", "1100m");
    assert_entry(u, "limits.memory", NULL);
    assert_entry(u, "requests.example.com/gpu", "2");
    json_decref(u);
    json_decref(pod);
}

static void test_terminal_and_expired_pods_use_only_their_count(void **state)
{
    (void)state;
    static const char *const pods[] = {
        "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Succeeded\"}}",
        "{\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Failed\"}}",
        ("{\"metadata\":{\"deletionTimestamp\":\"2024-01-01T00:00:00Z\","
         "\"deletionGracePeriodSeconds\":30},\"spec\":{\"containers\":[{\"name\":\"a\"}]}}"),
    };
    for (size_t i = 0; i < 3; i++) {
        json_t *pod = parse(pods[i]);
        /* 2024-01-01T00:01:00Z: past the grace period of the third */
        json_t *u = ck_quota_usage("", "pods", pod, 1704067260);
        assert_entry(u, "count/pods", "1");
        assert_entry(u, "pods", NULL);
        json_decref(u);
        json_decref(pod);
    }
    json_t *pod = parse(pods[2]);
    json_t *u = ck_quota_usage("", "pods", pod, 1704067210); /* within its grace period */
    assert_entry(u, "pods", "1");
    json_decref(u);
    json_decref(pod);
}

static void test_services_claims_and_object_counts(void **state)
{
    (void)state;
    json_t *svc = parse("{\"spec\":{\"type\":\"LoadBalancer\",\"ports\":[{\"port\":80},{\"port\":"
                        "443}]}}");
    json_t *u = ck_quota_usage("", "services", svc, 0);
    assert_entry(u, "services", "1");
    assert_entry(u, "count/services", "1");
    assert_entry(u, "services.loadbalancers", "1");
    assert_entry(u, "services.nodeports", "2");
    json_decref(u);
    json_object_set_new(json_object_get(svc, "spec"), "allocateLoadBalancerNodePorts",
                        json_false());
    u = ck_quota_usage("", "services", svc, 0);
    assert_entry(u, "services.nodeports", "0");
    json_decref(u);
    json_decref(svc);

    json_t *pvc = parse("{\"spec\":{\"storageClassName\":\"gold\",\"resources\":{\"requests\":{"
                        "\"storage\":\"5Gi\"}}}}");
    u = ck_quota_usage("", "persistentvolumeclaims", pvc, 0);
    assert_entry(u, "persistentvolumeclaims", "1");
    assert_entry(u, "requests.storage", "5Gi");
    assert_entry(u, "gold.storageclass.storage.k8s.io/requests.storage", "5Gi");
    assert_entry(u, "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1");
    json_decref(u);
    json_decref(pvc);

    json_t *cm = parse("{}");
    u = ck_quota_usage("", "configmaps", cm, 0);
    assert_entry(u, "configmaps", "1");
    assert_entry(u, "count/configmaps", "1");
    json_decref(u);
    u = ck_quota_usage("apps", "deployments", cm, 0);
    assert_entry(u, "count/deployments.apps", "1");
    assert_int_equal(json_object_size(u), 1);
    json_decref(u);
    json_decref(cm);

    assert_true(ck_quota_matching_resource("apps", "deployments", "count/deployments.apps"));
    assert_false(ck_quota_matching_resource("apps", "deployments", "count/deployments"));
    assert_true(ck_quota_matching_resource("", "pods", "requests.hugepages-2Mi"));
    assert_false(ck_quota_matching_resource("", "pods", "services"));
    assert_true(ck_quota_handles("", "services", true));
    assert_false(ck_quota_handles("", "pods", true));
    assert_true(ck_quota_handles("", "pods", false));
    assert_false(ck_quota_handles("", "events", false));
}

static void test_scopes_select_pods(void **state)
{
    (void)state;
    json_t *best = parse("{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
    json_t *burst = parse("{\"spec\":{\"priorityClassName\":\"high\",\"activeDeadlineSeconds\":5,"
                          "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":"
                          "\"1\"}}}]}}");
    static const struct {
        const char *quota;
        bool best, burst;
    } cases[] = {
        {"{\"status\":{\"hard\":{\"pods\":\"1\"}}}", true, true},
        {"{\"status\":{\"hard\":{\"services\":\"1\"}}}", false, false},
        {"{\"spec\":{\"scopes\":[\"BestEffort\"]},\"status\":{\"hard\":{\"pods\":\"1\"}}}", true,
         false},
        {"{\"spec\":{\"scopes\":[\"NotBestEffort\",\"Terminating\"]},\"status\":{\"hard\":{"
         "\"pods\":\"1\"}}}",
         false, true},
        {"{\"spec\":{\"scopes\":[\"NotTerminating\"]},\"status\":{\"hard\":{\"pods\":\"1\"}}}",
         true, false},
        {"{\"spec\":{\"scopeSelector\":{\"matchExpressions\":[{\"scopeName\":\"PriorityClass\","
         "\"operator\":\"In\",\"values\":[\"high\"]}]}},\"status\":{\"hard\":{\"pods\":\"1\"}}}",
         false, true},
        {"{\"spec\":{\"scopeSelector\":{\"matchExpressions\":[{\"scopeName\":\"PriorityClass\","
         "\"operator\":\"NotIn\",\"values\":[\"high\"]}]}},\"status\":{\"hard\":{\"pods\":\"1\"}}}",
         true, false},
        {"{\"spec\":{\"scopeSelector\":{\"matchExpressions\":[{\"scopeName\":\"PriorityClass\","
         "\"operator\":\"DoesNotExist\"}]}},\"status\":{\"hard\":{\"pods\":\"1\"}}}",
         true, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *q = parse(cases[i].quota);
        if (ck_quota_matches(q, "", "pods", best) != cases[i].best ||
            ck_quota_matches(q, "", "pods", burst) != cases[i].burst)
            fail_msg("case %zu: %s", i, cases[i].quota);
        json_decref(q);
    }
    /* a scoped quota covers no service */
    json_t *q = parse("{\"spec\":{\"scopes\":[\"BestEffort\"]},\"status\":{\"hard\":{"
                      "\"services\":\"1\"}}}");
    assert_false(ck_quota_matches(q, "", "services", best));
    json_decref(q);
    json_decref(best);
    json_decref(burst);
}

static void test_constraints_name_the_containers_missing_resources(void **state)
{
    (void)state;
    json_t *hard = parse("{\"limits.cpu\":\"2\",\"requests.memory\":\"1Gi\",\"pods\":\"3\"}");
    json_t *pod = parse("{\"spec\":{\"containers\":["
                        "{\"name\":\"web\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}},"
                        "{\"name\":\"app\"}],"
                        "\"initContainers\":[{\"name\":\"init\",\"resources\":{\"requests\":{"
                        "\"memory\":\"1Mi\"}}}]}}");
    char buf[512];
    assert_true(ck_quota_constraints_fail("", "pods", hard, pod, buf, sizeof(buf)));
    assert_string_equal(buf, "must specify limits.cpu for: app,init; requests.memory for: app,web");
    json_t *ok = parse("{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{"
                       "\"cpu\":\"1\"},\"requests\":{\"memory\":\"1Mi\"}}}]}}");
    assert_false(ck_quota_constraints_fail("", "pods", hard, ok, buf, sizeof(buf)));
    assert_false(ck_quota_constraints_fail("", "services", hard, pod, buf, sizeof(buf)));
    json_decref(ok);
    json_decref(pod);
    json_decref(hard);
}

/* The rendered field errors of validating obj (old: an update), joined by "\n". */
static char *validation_of(const char *obj_text, const char *old_text)
{
    const struct ck_kind *kind = ck_kind_lookup("", "v1", "resourcequotas");
    assert_non_null(kind);
    json_t *obj = parse(obj_text);
    json_t *old = old_text ? parse(old_text) : NULL;
    struct ck_field_errors errs = {0};
    kind->validate(obj, old, &errs);
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "\n" : "", s);
        free(s);
    }
    ck_field_errors_release(&errs);
    json_decref(obj);
    json_decref(old);
    return out;
}

static void test_validation_in_kubernetes_words(void **state)
{
    (void)state;
    static const struct {
        const char *obj, *old, *want;
    } cases[] = {
        {"{\"spec\":{\"hard\":{\"pods\":\"10\",\"requests.cpu\":\"500m\",\"count/deployments."
         "apps\":\"2\"}}}",
         NULL, ""},
        {"{\"spec\":{\"hard\":{\"pods\":\"-1\"}}}", NULL,
         "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0"},
        {"{\"spec\":{\"hard\":{\"pods\":\"1500m\"}}}", NULL,
         "spec.hard[pods]: Invalid value: \"1500m\": must be an integer"},
        {"{\"spec\":{\"hard\":{\"storage\":\"1\"}}}", NULL,
         "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota"},
        {"{\"spec\":{\"hard\":{\"requests.cpu\":\"1\"},\"scopes\":[\"BestEffort\"]}}", NULL,
         "spec.scopes: Invalid value: [\"BestEffort\"]: unsupported scope applied to resource"},
        {"{\"spec\":{\"hard\":{\"pods\":\"1\"},\"scopes\":[\"BestEffort\",\"NotBestEffort\"]}}",
         NULL,
         "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\"]: conflicting scopes"},
        {"{\"spec\":{\"hard\":{\"pods\":\"1\"},\"scopes\":[\"Sometimes\"]}}", NULL,
         "spec.scopes: Invalid value: [\"Sometimes\"]: unsupported scope"},
        {"{\"spec\":{\"hard\":{\"pods\":\"1\"},\"scopeSelector\":{\"matchExpressions\":[{"
         "\"scopeName\":\"PriorityClass\",\"operator\":\"In\"}]}}}",
         NULL,
         "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value "
         "when `operator` is 'In' or 'NotIn' for scope selector"},
        {"{\"spec\":{\"hard\":{\"pods\":\"1\"},\"scopeSelector\":{\"matchExpressions\":[{"
         "\"scopeName\":\"BestEffort\",\"operator\":\"DoesNotExist\"}]}}}",
         NULL,
         "spec.scopeSelector.matchExpressions.operator: Invalid value: \"DoesNotExist\": must be "
         "'Exist' when scope is any of ResourceQuotaScopeTerminating, "
         "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
         "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"},
        {"{\"spec\":{\"hard\":{\"pods\":\"1\"},\"scopes\":[\"Terminating\"]}}",
         "{\"spec\":{\"hard\":{\"pods\":\"1\"}}}",
         "spec.scopes: Invalid value: [\"Terminating\"]: field is immutable"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = validation_of(cases[i].obj, cases[i].old);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu:\nwant %s\n got %s", i, cases[i].want, got);
        free(got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity_format_matches_quantity_string),
        cmocka_unit_test(test_add_keeps_the_first_format_and_sums),
        cmocka_unit_test(test_pod_usage_counts_containers_sidecars_and_overhead),
        cmocka_unit_test(test_terminal_and_expired_pods_use_only_their_count),
        cmocka_unit_test(test_services_claims_and_object_counts),
        cmocka_unit_test(test_scopes_select_pods),
        cmocka_unit_test(test_constraints_name_the_containers_missing_resources),
        cmocka_unit_test(test_validation_in_kubernetes_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
