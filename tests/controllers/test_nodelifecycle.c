/*
 * test_nodelifecycle.c - tests for lib/controllers/nodelifecycle/nodelifecycle.c: the
 * taints a node's Ready condition calls for (tables), and when a pod must go for the
 * NoExecute taints it carries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckube/nodelifecycle.h"

static const char now[] = "2026-01-01T00:00:00Z";

/* The taints as "key:effect" joined by commas. */
static char *taint_list(const json_t *taints)
{
    static char buf[512];
    buf[0] = '\0';
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t)
    {
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof(buf) - len, "%s%s:%s", i ? "," : "",
                 json_string_value(json_object_get(t, "key")),
                 json_string_value(json_object_get(t, "effect")));
    }
    return buf;
}

static void test_taints_follow_ready(void **state)
{
    (void)state;
    static const struct {
        const char *name, *node, *want;
    } cases[] = {
        {"ready", "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", ""},
        {"unknown", "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}",
         "node.kubernetes.io/unreachable:NoSchedule,node.kubernetes.io/unreachable:NoExecute"},
        {"not ready", "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
         "node.kubernetes.io/not-ready:NoSchedule,node.kubernetes.io/not-ready:NoExecute"},
        {"ready again drops ours, keeps others",
         "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":"
         "\"NoExecute\"},{\"key\":\"dedicated\",\"effect\":\"NoSchedule\"}]},"
         "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
         "dedicated:NoSchedule"},
        {"cordoned",
         "{\"spec\":{\"unschedulable\":true},\"status\":{\"conditions\":[{\"type\":\"Ready\","
         "\"status\":\"True\"}]}}",
         "node.kubernetes.io/unschedulable:NoSchedule"},
        {"never posted status: left alone", "{}", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *node = json_loads(cases[i].node, 0, NULL);
        json_t *taints = ck_nodelifecycle_desired_taints(node, now);
        assert_non_null(taints);
        if (strcmp(taint_list(taints), cases[i].want) != 0)
            fail_msg("%s: %s, want %s", cases[i].name, taint_list(taints), cases[i].want);
        json_decref(taints);
        json_decref(node);
    }
}

static void test_no_execute_taint_keeps_its_time_added(void **state)
{
    (void)state;
    json_t *node = json_loads(
        "{\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":"
        "\"NoExecute\",\"timeAdded\":\"2025-05-05T00:00:00Z\"}]},\"status\":{\"conditions\":"
        "[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}",
        0, NULL);
    json_t *taints = ck_nodelifecycle_desired_taints(node, now);
    assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 1), "timeAdded")),
                        "2025-05-05T00:00:00Z");
    json_decref(taints);
    json_decref(node);
}

static void test_eviction_time(void **state)
{
    (void)state;
    const int64_t t0 = 1767225600; /* 2026-01-01T00:00:00Z */
    json_t *taints =
        json_loads("[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoSchedule\"},"
                   "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\","
                   "\"timeAdded\":\"2026-01-01T00:00:00Z\"}]",
                   0, NULL);
    static const struct {
        const char *name, *pod;
        int64_t want; /* offset from t0, or -1 */
    } cases[] = {
        {"untolerated: now", "{}", 100},
        {"default 300 s",
         "{\"spec\":{\"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
         "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]}}",
         300},
        {"smallest matching seconds",
         "{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\",\"tolerationSeconds\":60},"
         "{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\","
         "\"tolerationSeconds\":20}]}}",
         20},
        {"tolerated for ever", "{\"spec\":{\"tolerations\":[{\"operator\":\"Exists\"}]}}", -1},
        {"a NoSchedule toleration does not count",
         "{\"spec\":{\"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
         "\"Exists\",\"effect\":\"NoSchedule\"}]}}",
         100},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *pod = json_loads(cases[i].pod, 0, NULL);
        int64_t at = ck_nodelifecycle_eviction_time(pod, taints, t0 + 100);
        int64_t want = cases[i].want < 0 ? -1 : t0 + cases[i].want;
        if (at != want)
            fail_msg("%s: %lld, want %lld", cases[i].name, (long long)at, (long long)want);
        json_decref(pod);
    }
    json_t *no_execute_free = json_loads("[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]", 0, NULL);
    json_t *pod = json_object();
    assert_int_equal(ck_nodelifecycle_eviction_time(pod, no_execute_free, t0), -1);
    json_decref(pod);
    json_decref(no_execute_free);
    json_decref(taints);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taints_follow_ready),
        cmocka_unit_test(test_no_execute_taint_keeps_its_time_added),
        cmocka_unit_test(test_eviction_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
