/*
 * test_horizontalpodautoscaler.c - tests for lib/api/kinds/horizontalpodautoscaler.c and
 * horizontalpodautoscalerv1.c: the v2 defaults (pkg/apis/autoscaling/v2/defaults.go),
 * validation in Kubernetes' words, the printer's columns and TARGETS cell, and the
 * conversion between autoscaling/v1 and the stored autoscaling/v2 (round trips through
 * the autoscaling.alpha.kubernetes.io annotations).
 */
#include "cktest.h"

#include "kindtest.h"

static const struct ck_kind *v2_kind(void)
{
    const struct ck_kind *k = ck_kind_lookup("autoscaling", "v2", "horizontalpodautoscalers");
    assert_non_null(k);
    return k;
}

static const char *const minimal = "{\"apiVersion\":\"autoscaling/v2\",\"kind\":"
                                   "\"HorizontalPodAutoscaler\",\"metadata\":{\"name\":\"web\","
                                   "\"namespace\":\"default\"},\"spec\":{\"scaleTargetRef\":{"
                                   "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":"
                                   "\"web\"},\"maxReplicas\":5}}";

/*
 * The value at a path: members separated by dots ("\\." is a dot inside a name), an
 * index as [n] after a member or alone ("[0].resource"). Borrowed; NULL when absent.
 */
static json_t *json_path(const json_t *o, const char *path)
{
    char name[256];
    const char *p = path;
    json_t *cur = (json_t *)o;
    while (cur && *p) {
        size_t n = 0;
        while (*p && *p != '.' && *p != '[' && n + 1 < sizeof(name)) {
            if (*p == '\\' && p[1])
                p++;
            name[n++] = *p++;
        }
        name[n] = '\0';
        if (n)
            cur = json_object_get(cur, name);
        while (cur && *p == '[') {
            cur = json_array_get(cur, strtoul(p + 1, NULL, 10));
            p = strchr(p, ']') + 1;
        }
        if (*p == '.')
            p++;
    }
    return cur;
}

static long long int_at(const json_t *o, const char *path)
{
    json_t *v = json_path(o, path);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static const char *str_at(const json_t *o, const char *path)
{
    json_t *v = json_path(o, path);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

static void test_v2_defaults(void **state)
{
    (void)state;
    const struct ck_kind *k = v2_kind();
    json_t *o = load(minimal);
    kt_default(k, o);
    assert_int_equal(int_at(o, "spec.minReplicas"), 1);
    assert_string_equal(str_at(o, "spec.metrics[0].type"), "Resource");
    assert_string_equal(str_at(o, "spec.metrics[0].resource.name"), "cpu");
    assert_string_equal(str_at(o, "spec.metrics[0].resource.target.type"), "Utilization");
    assert_int_equal(int_at(o, "spec.metrics[0].resource.target.averageUtilization"), 80);
    assert_null(json_path(o, "spec.behavior"));
    kt_expect(k, o, NULL, NULL);
    json_decref(o);

    /* a behavior with one rule set gets the rest of both directions */
    o = load(minimal);
    json_object_set_new(json_object_get(o, "spec"), "behavior",
                        load("{\"scaleDown\":{\"stabilizationWindowSeconds\":60}}"));
    kt_default(k, o);
    assert_int_equal(int_at(o, "spec.behavior.scaleDown.stabilizationWindowSeconds"), 60);
    assert_string_equal(str_at(o, "spec.behavior.scaleDown.selectPolicy"), "Max");
    assert_string_equal(str_at(o, "spec.behavior.scaleDown.policies[0].type"), "Percent");
    assert_int_equal(int_at(o, "spec.behavior.scaleDown.policies[0].value"), 100);
    assert_int_equal(int_at(o, "spec.behavior.scaleDown.policies[0].periodSeconds"), 15);
    assert_int_equal(int_at(o, "spec.behavior.scaleUp.stabilizationWindowSeconds"), 0);
    assert_string_equal(str_at(o, "spec.behavior.scaleUp.policies[0].type"), "Pods");
    assert_int_equal(int_at(o, "spec.behavior.scaleUp.policies[0].value"), 4);
    assert_string_equal(str_at(o, "spec.behavior.scaleUp.policies[1].type"), "Percent");
    assert_int_equal(int_at(o, "spec.behavior.scaleUp.policies[1].value"), 100);
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
}

/* Sets spec's member to the JSON text value, defaults, then expects want (NULL: valid). */
static void expect_spec(const char *member, const char *value, const char *want)
{
    const struct ck_kind *k = v2_kind();
    json_t *o = load(minimal);
    json_object_set_new(json_object_get(o, "spec"), member, load(value));
    kt_default(k, o);
    kt_expect(k, o, NULL, want);
    json_decref(o);
}

static void test_validation(void **state)
{
    (void)state;
    expect_spec("minReplicas", "0",
                "spec.minReplicas: Invalid value: 0: must be greater than or "
                "equal to 1");
    expect_spec("maxReplicas", "0", "spec.maxReplicas: Invalid value: 0: must be greater than 0");
    expect_spec("minReplicas", "7",
                "spec.maxReplicas: Invalid value: 5: must be greater than or equal to "
                "`minReplicas`");
    expect_spec("scaleTargetRef", "{\"name\":\"web\"}", "spec.scaleTargetRef.kind: Required value");
    expect_spec("scaleTargetRef", "{\"kind\":\"Deployment\",\"name\":\"a/b\"}",
                "spec.scaleTargetRef.name: Invalid value: \"a/b\"");
    expect_spec("metrics", "[{\"type\":\"Resource\"}]",
                "spec.metrics[0].resource: Required value: must populate information for the "
                "given metric source");
    expect_spec("metrics", "[{\"type\":\"Cpu\"}]",
                "spec.metrics[0].type: Unsupported value: \"Cpu\"");
    expect_spec("metrics",
                "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":"
                "\"Utilization\"}}}]",
                "spec.metrics[0].resource.target.averageUtilization: Required value: must set "
                "either a target raw value or a target utilization");
    expect_spec("metrics",
                "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":"
                "\"Utilization\",\"averageUtilization\":0}}}]",
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be "
                "greater than 0");
    expect_spec("metrics",
                "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":"
                "\"AverageValue\",\"averageValue\":\"0\"}}}]",
                "spec.metrics[0].resource.target.averageValue: Invalid value: 0: must be positive");
    expect_spec("metrics",
                "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":"
                "\"Utilization\",\"averageUtilization\":50}},\"pods\":{\"metric\":{\"name\":"
                "\"x\"},\"target\":{\"type\":\"AverageValue\",\"averageValue\":\"1\"}}}]",
                "spec.metrics[0].pods: Forbidden: must populate the given metric source only");
    expect_spec("behavior",
                "{\"scaleUp\":{\"stabilizationWindowSeconds\":3601,\"policies\":[{\"type\":"
                "\"Pods\",\"value\":1,\"periodSeconds\":15}]}}",
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 3601: must be "
                "less than or equal to 3600");
    expect_spec("behavior", "{\"scaleDown\":{\"policies\":[]}}",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one "
                "Policy");
    expect_spec("behavior",
                "{\"scaleDown\":{\"selectPolicy\":\"Avg\",\"policies\":[{\"type\":\"Pods\","
                "\"value\":1,\"periodSeconds\":15}]}}",
                "spec.behavior.scaleDown.selectPolicy: Unsupported value: \"Avg\"");
    expect_spec("behavior",
                "{\"scaleDown\":{\"policies\":[{\"type\":\"Pods\",\"value\":0,\"periodSeconds\":"
                "1801}]}}",
                "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater "
                "than zero");
    expect_spec("behavior",
                "{\"scaleDown\":{\"policies\":[{\"type\":\"Pods\",\"value\":1,\"periodSeconds\":"
                "1801}]}}",
                "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be "
                "less than or equal to 1800");
    expect_spec("minReplicas", "2", NULL);
}

static void test_columns_and_targets(void **state)
{
    (void)state;
    const struct ck_kind *k = v2_kind();
    static const char *const names[] = {"Name",    "Reference", "Targets", "MinPods",
                                        "MaxPods", "Replicas",  "Age"};
    assert_int_equal(k->n_columns, 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(k->columns[i].name, names[i]);
    assert_string_equal(k->short_names[0], "hpa");
    assert_string_equal(k->categories[0], "all");
    json_t *o = load(minimal);
    kt_expect_cell(k, o, "Reference", "Deployment/web");
    kt_expect_cell(k, o, "Targets", "<none>");
    kt_expect_cell(k, o, "MinPods", "<unset>");
    kt_expect_cell(k, o, "MaxPods", "5");
    kt_expect_cell(k, o, "Replicas", "0");
    kt_default(k, o);
    kt_expect_cell(k, o, "Targets", "cpu: <unknown>/80%");
    json_object_set_new(o, "status",
                        load("{\"currentReplicas\":3,\"desiredReplicas\":3,\"currentMetrics\":[{"
                             "\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"current\":{"
                             "\"averageValue\":\"120m\",\"averageUtilization\":61}}}]}"));
    kt_expect_cell(k, o, "Targets", "cpu: 61%/80%");
    kt_expect_cell(k, o, "Replicas", "3");
    json_t *metrics = json_path(o, "spec.metrics");
    json_array_append_new(metrics, load("{\"type\":\"Resource\",\"resource\":{\"name\":"
                                        "\"memory\",\"target\":{\"type\":\"AverageValue\","
                                        "\"averageValue\":\"100Mi\"}}}"));
    json_array_append_new(metrics, load("{\"type\":\"Pods\",\"pods\":{\"metric\":{\"name\":"
                                        "\"qps\"},\"target\":{\"type\":\"AverageValue\","
                                        "\"averageValue\":\"10\"}}}"));
    kt_expect_cell(k, o, "Targets", "cpu: 61%/80%, memory: <unknown>/100Mi + 1 more...");
    json_decref(o);
}

static void test_v1_round_trip(void **state)
{
    (void)state;
    const struct ck_kind *v1 = kt_kind("autoscaling", "horizontalpodautoscalers");
    assert_non_null(v1->to_storage);
    assert_string_equal(v1->storage_api_version, "autoscaling/v2");

    /* kubectl autoscale's object: a CPU percentage */
    json_t *o = load(
        "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"HorizontalPodAutoscaler\","
        "\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"},\"spec\":{\"scaleTargetRef\":{\"kind\":"
        "\"Deployment\",\"name\":\"web\"},\"maxReplicas\":5,"
        "\"targetCPUUtilizationPercentage\":50},\"status\":{\"currentReplicas\":2,"
        "\"desiredReplicas\":2,\"currentCPUUtilizationPercentage\":30}}");
    kt_default(v1, o);
    assert_int_equal(int_at(o, "spec.minReplicas"), 1);
    kt_expect(v1, o, NULL, NULL);
    kt_expect_cell(v1, o, "Targets", "cpu: 30%/50%");
    assert_int_equal(v1->to_storage(o), 0);
    assert_string_equal(str_at(o, "apiVersion"), "autoscaling/v2");
    assert_null(json_path(o, "spec.targetCPUUtilizationPercentage"));
    assert_int_equal(int_at(o, "spec.metrics[0].resource.target.averageUtilization"), 50);
    assert_string_equal(str_at(o, "spec.metrics[0].resource.target.type"), "Utilization");
    assert_int_equal(int_at(o, "status.currentMetrics[0].resource.current.averageUtilization"), 30);
    assert_int_equal(v1->from_storage(o), 0);
    assert_string_equal(str_at(o, "apiVersion"), "autoscaling/v1");
    assert_int_equal(int_at(o, "spec.targetCPUUtilizationPercentage"), 50);
    assert_int_equal(int_at(o, "status.currentCPUUtilizationPercentage"), 30);
    assert_null(json_path(o, "spec.metrics"));
    json_decref(o);

    /* no target at all: v1's implicit 80% becomes explicit */
    o = load("{\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"web\"},"
             "\"maxReplicas\":5}}");
    assert_int_equal(v1->to_storage(o), 0);
    assert_int_equal(int_at(o, "spec.metrics[0].resource.target.averageUtilization"), 80);
    json_decref(o);

    /* what v1 cannot say survives a trip through it in the annotations */
    json_t *v2 = load(minimal);
    json_object_set_new(json_object_get(v2, "spec"), "behavior",
                        load("{\"scaleDown\":{\"stabilizationWindowSeconds\":60}}"));
    json_object_set_new(
        json_object_get(v2, "spec"), "metrics",
        load("[{\"type\":\"Resource\",\"resource\":{\"name\":\"memory\",\"target\":{\"type\":"
             "\"AverageValue\",\"averageValue\":\"100Mi\"}}},{\"type\":\"Resource\","
             "\"resource\":{\"name\":\"cpu\",\"target\":{\"type\":\"Utilization\","
             "\"averageUtilization\":70}}}]"));
    json_object_set_new(
        v2, "status",
        load("{\"desiredReplicas\":2,\"currentReplicas\":2,\"currentMetrics\":[{\"type\":"
             "\"Resource\",\"resource\":{\"name\":\"memory\",\"current\":{\"averageValue\":"
             "\"50Mi\"}}}],\"conditions\":[{\"type\":\"AbleToScale\",\"status\":\"True\","
             "\"reason\":\"ReadyForNewScale\"}]}"));
    json_t *orig = json_deep_copy(v2);
    assert_int_equal(v1->from_storage(v2), 0);
    assert_int_equal(int_at(v2, "spec.targetCPUUtilizationPercentage"), 70);
    const char *ann = str_at(v2, "metadata.annotations.autoscaling\\.alpha\\.kubernetes\\.io/"
                                 "metrics");
    json_t *ann_metrics = load(ann);
    assert_string_equal(str_at(ann_metrics, "[0].resource.targetAverageValue"), "100Mi");
    assert_string_equal(str_at(ann_metrics, "[0].resource.name"), "memory");
    assert_int_equal(json_array_size(ann_metrics), 1);
    json_decref(ann_metrics);
    assert_non_null(
        json_path(v2, "metadata.annotations.autoscaling\\.alpha\\.kubernetes\\.io/conditions"));
    assert_non_null(
        json_path(v2, "metadata.annotations.autoscaling\\.alpha\\.kubernetes\\.io/behavior"));
    assert_int_equal(v1->to_storage(v2), 0);
    assert_null(json_path(v2, "metadata.annotations"));
    assert_int_equal(json_array_size(json_path(v2, "spec.metrics")), 2);
    assert_true(json_equal(json_path(v2, "spec.metrics[0]"), json_path(orig, "spec.metrics[0]")));
    assert_true(json_equal(json_path(v2, "spec.metrics[1]"), json_path(orig, "spec.metrics[1]")));
    assert_true(json_equal(json_path(v2, "spec.behavior"), json_path(orig, "spec.behavior")));
    assert_true(
        json_equal(json_path(v2, "status.conditions"), json_path(orig, "status.conditions")));
    assert_true(json_equal(json_path(v2, "status.currentMetrics"),
                           json_path(orig, "status.currentMetrics")));
    json_decref(orig);
    json_decref(v2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2_defaults),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_columns_and_targets),
        cmocka_unit_test(test_v1_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
