/*
 * test_scheduling.c - tests for lib/api/kinds/priorityclass.c: the default
 * preemption policy, the bound on user values, the reserved system- names,
 * immutability with Kubernetes' messages, and the table cells; and
 * runtimeclass.c, the other kind pods name to be placed and run.
 */
#include "cktest.h"

#include "kindtest.h"

static json_t *pc(const char *name, long long value)
{
    return json_pack("{s:{s:s}, s:I}", "metadata", "name", name, "value", (json_int_t)value);
}

static void test_priorityclass_defaults_and_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("scheduling.k8s.io", "priorityclasses");
    assert_false(k->namespaced);
    assert_string_equal(k->short_names[0], "pc");
    json_t *o = pc("high", 1000000);
    kt_default(k, o);
    assert_string_equal(json_string_value(json_object_get(o, "preemptionPolicy")),
                        "PreemptLowerPriority");
    kt_expect(k, o, NULL, NULL);
    kt_expect_cell(k, o, "Value", "1000000");
    kt_expect_cell(k, o, "Global-Default", "false");
    kt_expect_cell(k, o, "PreemptionPolicy", "PreemptLowerPriority");
    json_decref(o);
}

static void test_priorityclass_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("scheduling.k8s.io", "priorityclasses");
    json_t *o = pc("huge", 1000000001);
    kt_expect(k, o, NULL,
              "value: Forbidden: maximum allowed value of a user defined priority is 1000000000");
    json_decref(o);
    o = pc("limit", 1000000000);
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
    o = pc("system-cluster-critical", 2000000000);
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
    o = pc("system-node-critical", 2000001000);
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
    o = pc("system-node-critical", 5);
    kt_expect(k, o, NULL,
              "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
              "for system use only. error: value of system-node-critical PriorityClass must be "
              "2000001000");
    json_decref(o);
    o = pc("system-mine", 5);
    kt_expect(k, o, NULL, "error: system-mine is not a known system priority class");
    json_decref(o);
    o = pc("p", 5);
    json_object_set_new(o, "preemptionPolicy", json_string("Always"));
    kt_expect(k, o, NULL, "preemptionPolicy: Unsupported value: \"Always\"");
    json_decref(o);

    json_t *old = pc("p", 5);
    json_object_set_new(old, "preemptionPolicy", json_string("Never"));
    json_t *changed = pc("p", 6);
    json_object_set_new(changed, "preemptionPolicy", json_string("PreemptLowerPriority"));
    kt_expect(k, changed, old, "value: Forbidden: may not be changed in an update.");
    kt_expect(k, changed, old,
              "preemptionPolicy: Invalid value: \"PreemptLowerPriority\": field is immutable");
    json_t *same = json_deep_copy(old);
    json_object_set_new(same, "description", json_string("now described"));
    kt_expect(k, same, old, NULL);
    json_decref(old);
    json_decref(changed);
    json_decref(same);
}

static void test_runtimeclass(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("node.k8s.io", "runtimeclasses");
    assert_false(k->namespaced);
    json_t *o = load("{\"metadata\":{\"name\":\"gvisor\"},\"handler\":\"runsc\",\"overhead\":{"
                     "\"podFixed\":{\"memory\":\"64Mi\"}},\"scheduling\":{\"nodeSelector\":{"
                     "\"sandbox\":\"gvisor\"}}}");
    kt_expect(k, o, NULL, NULL);
    kt_expect_cell(k, o, "Handler", "runsc");
    json_t *changed = json_deep_copy(o);
    json_object_set_new(changed, "handler", json_string("kata"));
    kt_expect(k, changed, o, "handler: Invalid value: \"kata\": field is immutable");
    json_object_set_new(changed, "handler", json_string("Run_SC"));
    kt_expect(k, changed, NULL, "handler: Invalid value: \"Run_SC\"");
    json_object_del(changed, "handler");
    kt_expect(k, changed, NULL, "handler: Required value");
    json_decref(changed);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priorityclass_defaults_and_cells),
        cmocka_unit_test(test_priorityclass_validation),
        cmocka_unit_test(test_runtimeclass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
