/*
 * test_scheduling_helpers.c - tests for lib/controllers/scheduling_helpers.c, the
 * predicates of component-helpers' scheduling/corev1 that the scheduler, the DaemonSet
 * controller and the node lifecycle controller share: a table of toleration against
 * taint, the search for an untolerated taint by effect, and a table of pods' node
 * selectors and required affinities against one node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/controllers/scheduling_helpers.h"

#define N(x) (sizeof(x) / sizeof(x[0]))

static json_t *load(const char *what, const char *json)
{
    json_t *v = json_loads(json, 0, NULL);
    if (!v)
        fail_msg("%s: bad JSON %s", what, json);
    return v;
}

static void test_toleration_tolerates_taint(void **state)
{
    (void)state;
    static const char gpu[] = "{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}";
    static const char bare[] = "{\"key\":\"gone\",\"effect\":\"NoExecute\"}";
    const struct {
        const char *name, *toleration, *taint;
        bool want;
    } cases[] = {
        {"Equal with key, value and effect",
         "{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"gpu\",\"effect\":"
         "\"NoSchedule\"}",
         gpu, true},
        {"no operator means Equal", "{\"key\":\"dedicated\",\"value\":\"gpu\"}", gpu, true},
        {"Equal with another value", "{\"key\":\"dedicated\",\"value\":\"cpu\"}", gpu, false},
        {"Equal without a value against a value", "{\"key\":\"dedicated\"}", gpu, false},
        {"Equal without a value against none", "{\"key\":\"gone\",\"operator\":\"Equal\"}", bare,
         true},
        {"Exists ignores the value",
         "{\"key\":\"dedicated\",\"operator\":\"Exists\",\"value\":\"cpu\"}", gpu, true},
        {"another key", "{\"key\":\"other\",\"operator\":\"Exists\"}", gpu, false},
        {"empty key with Exists tolerates every taint", "{\"operator\":\"Exists\"}", gpu, true},
        {"empty effect matches every effect", "{\"key\":\"gone\",\"operator\":\"Exists\"}", bare,
         true},
        {"the effect must match",
         "{\"key\":\"dedicated\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}", gpu, false},
        {"empty key with Exists still needs the effect",
         "{\"operator\":\"Exists\",\"effect\":\"NoExecute\"}", gpu, false},
        {"an unknown operator tolerates nothing",
         "{\"key\":\"dedicated\",\"operator\":\"Gt\",\"value\":\"gpu\"}", gpu, false},
    };
    for (size_t i = 0; i < N(cases); i++) {
        json_t *toleration = load(cases[i].name, cases[i].toleration);
        json_t *taint = load(cases[i].name, cases[i].taint);
        if (ck__toleration_tolerates_taint(toleration, taint) != cases[i].want)
            fail_msg("%s: want %s", cases[i].name, cases[i].want ? "tolerated" : "not tolerated");
        /* a list holding only this toleration answers the same */
        json_t *list = json_pack("[O]", toleration);
        assert_int_equal(ck__tolerations_tolerate_taint(list, taint), cases[i].want);
        json_decref(list);
        json_decref(taint);
        json_decref(toleration);
    }
}

static void test_tolerations_tolerate_taint_any_of_them(void **state)
{
    (void)state;
    json_t *taint = load("taint", "{\"key\":\"gone\",\"effect\":\"NoExecute\"}");
    json_t *none = load("none", "[]");
    json_t *second = load("second", "[{\"key\":\"other\",\"operator\":\"Exists\"},"
                                    "{\"key\":\"gone\",\"operator\":\"Exists\"}]");
    assert_false(ck__tolerations_tolerate_taint(NULL, taint));
    assert_false(ck__tolerations_tolerate_taint(none, taint));
    assert_true(ck__tolerations_tolerate_taint(second, taint));
    json_decref(second);
    json_decref(none);
    json_decref(taint);
}

static void test_find_untolerated_taint_by_effect(void **state)
{
    (void)state;
    json_t *taints = load("taints", "[{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"},"
                                    "{\"key\":\"odd\",\"effect\":\"Sometimes\"},"
                                    "{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":"
                                    "\"NoSchedule\"},"
                                    "{\"key\":\"gone\",\"effect\":\"NoExecute\"}]");
    json_t *none = load("none", "[]");
    json_t *gpu = load("gpu", "[{\"key\":\"dedicated\",\"value\":\"gpu\"}]");
    json_t *all = load("all", "[{\"operator\":\"Exists\"}]");
    const unsigned no_schedule = CK__TAINT_NO_SCHEDULE | CK__TAINT_NO_EXECUTE;

    /* the first untolerated taint among the effects asked for, in the node's order */
    const json_t *t = ck__find_untolerated_taint(taints, none, no_schedule);
    assert_ptr_equal(t, json_array_get(taints, 2));
    t = ck__find_untolerated_taint(taints, gpu, no_schedule);
    assert_ptr_equal(t, json_array_get(taints, 3));
    t = ck__find_untolerated_taint(taints, gpu, CK__TAINT_NO_EXECUTE);
    assert_ptr_equal(t, json_array_get(taints, 3));
    /* NoExecute alone passes over the untolerated NoSchedule taint */
    json_t *gone = load("gone", "[{\"key\":\"gone\",\"operator\":\"Exists\"}]");
    assert_null(ck__find_untolerated_taint(taints, gone, CK__TAINT_NO_EXECUTE));
    assert_ptr_equal(ck__find_untolerated_taint(taints, gone, no_schedule),
                     json_array_get(taints, 2));
    /* PreferNoSchedule only when asked for; an unknown effect never */
    assert_ptr_equal(ck__find_untolerated_taint(taints, none, CK__TAINT_PREFER_NO_SCHEDULE),
                     json_array_get(taints, 0));
    assert_null(
        ck__find_untolerated_taint(taints, all, no_schedule | CK__TAINT_PREFER_NO_SCHEDULE));
    assert_null(ck__find_untolerated_taint(NULL, none, no_schedule));
    json_decref(gone);
    json_decref(all);
    json_decref(gpu);
    json_decref(none);
    json_decref(taints);
}

static const char plain_node[] =
    "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"a\",\"gen\":\"5\","
    "\"big\":\"99999999999999999999\"}}}";

static void test_required_node_affinity(void **state)
{
    (void)state;
#define REQUIRED(terms)                                                                              \
    "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
    "{\"nodeSelectorTerms\":" terms "}}}}}"
#define EXPR(key, op, values)                                                                      \
    REQUIRED("[{\"matchExpressions\":[{\"key\":\"" key "\",\"operator\":\"" op                     \
             "\",\"values\":" values "}]}]")
    const struct {
        const char *name, *pod;
        bool want;
    } cases[] = {
        {"no constraint", "{}", true},
        {"selector matches", "{\"spec\":{\"nodeSelector\":{\"zone\":\"a\"}}}", true},
        {"selector value differs", "{\"spec\":{\"nodeSelector\":{\"zone\":\"b\"}}}", false},
        {"selector label absent", "{\"spec\":{\"nodeSelector\":{\"disk\":\"\"}}}", false},
        {"In", EXPR("zone", "In", "[\"b\",\"a\"]"), true},
        {"In misses", EXPR("zone", "In", "[\"b\"]"), false},
        {"NotIn on an absent label", EXPR("disk", "NotIn", "[\"ssd\"]"), true},
        {"NotIn hits", EXPR("zone", "NotIn", "[\"a\"]"), false},
        {"Exists", EXPR("zone", "Exists", "[]"), true},
        {"DoesNotExist fails", EXPR("zone", "DoesNotExist", "[]"), false},
        {"DoesNotExist on an absent label", EXPR("disk", "DoesNotExist", "[]"), true},
        {"Gt", EXPR("gen", "Gt", "[\"4\"]"), true},
        {"Gt on an equal number fails", EXPR("gen", "Gt", "[\"5\"]"), false},
        {"Lt fails", EXPR("gen", "Lt", "[\"5\"]"), false},
        {"Lt", EXPR("gen", "Lt", "[\"6\"]"), true},
        {"Gt on a non-number fails", EXPR("zone", "Gt", "[\"1\"]"), false},
        {"Gt with two values fails", EXPR("gen", "Gt", "[\"1\",\"2\"]"), false},
        {"Gt on a label past 64 bits fails", EXPR("big", "Gt", "[\"1\"]"), false},
        {"Lt on a value past 64 bits fails", EXPR("gen", "Lt", "[\"99999999999999999999\"]"),
         false},
        {"an unknown operator fails", EXPR("zone", "Like", "[\"a\"]"), false},
        {"matchFields on the node's name",
         REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                  "\"values\":[\"n1\"]}]}]"),
         true},
        {"matchFields on another name",
         REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                  "\"values\":[\"n2\"]}]}]"),
         false},
        {"matchFields NotIn another name",
         REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
                  "\"values\":[\"n2\"]}]}]"),
         true},
        {"matchFields on an unknown field fails",
         REQUIRED("[{\"matchFields\":[{\"key\":\"spec.podCIDR\",\"operator\":\"NotIn\","
                  "\"values\":[\"x\"]}]}]"),
         false},
        {"terms are ORed",
         REQUIRED(
             "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"x\"]}]},"
             "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]"),
         true},
        {"expressions are ANDed",
         REQUIRED(
             "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]},"
             "{\"key\":\"gen\",\"operator\":\"In\",\"values\":[\"6\"]}]}]"),
         false},
        {"expressions and fields of a term are ANDed",
         REQUIRED(
             "[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}],"
             "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n2\"]}]}]"),
         false},
        {"an empty term matches nothing", REQUIRED("[{}]"), false},
        {"no terms match nothing", REQUIRED("[]"), false},
        {"selector and affinity must both match",
         "{\"spec\":{\"nodeSelector\":{\"zone\":\"b\"},\"affinity\":{\"nodeAffinity\":{"
         "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
         "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}]}}}}}",
         false},
        {"only preferred affinity constrains nothing",
         "{\"spec\":{\"affinity\":{\"nodeAffinity\":{"
         "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,\"preference\":{"
         "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"x\"]}]}}]}}}}",
         true},
    };
#undef EXPR
#undef REQUIRED
    json_t *node = load("node", plain_node);
    for (size_t i = 0; i < N(cases); i++) {
        json_t *pod = load(cases[i].name, cases[i].pod);
        if (ck__required_node_affinity_matches(pod, node) != cases[i].want)
            fail_msg("%s: want %s", cases[i].name, cases[i].want ? "a match" : "no match");
        /* the required affinity alone is MatchNodeSelectorTerms */
        const json_t *required = json_object_get(
            json_object_get(json_object_get(json_object_get(pod, "spec"), "affinity"),
                            "nodeAffinity"),
            "requiredDuringSchedulingIgnoredDuringExecution");
        if (required && !json_object_get(json_object_get(pod, "spec"), "nodeSelector"))
            assert_int_equal(ck__node_selector_terms_match(node, required), cases[i].want);
        json_decref(pod);
    }
    json_decref(node);
}

static void test_node_selector_terms_without_labels_or_terms(void **state)
{
    (void)state;
    json_t *selector = load("selector", "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{"
                                        "\"key\":\"zone\",\"operator\":\"DoesNotExist\"}]}]}");
    json_t *unlabelled = load("node", "{\"metadata\":{\"name\":\"n1\"}}");
    assert_true(ck__node_selector_terms_match(unlabelled, selector));
    assert_false(ck__node_selector_terms_match(unlabelled, NULL));
    json_decref(unlabelled);
    json_decref(selector);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toleration_tolerates_taint),
        cmocka_unit_test(test_tolerations_tolerate_taint_any_of_them),
        cmocka_unit_test(test_find_untolerated_taint_by_effect),
        cmocka_unit_test(test_required_node_affinity),
        cmocka_unit_test(test_node_selector_terms_without_labels_or_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
