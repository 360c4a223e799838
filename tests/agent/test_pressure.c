/*
 * test_pressure.c - tests for lib/agent/pressure.c and the pressure parts of node.c:
 * evictionHard read as the kubelet reads it (its 1.32 defaults when absent, quantities and
 * percentages, a bad value refused), the three pressures from a sample against the
 * thresholds, the conditions' reasons as the kubelet's, the NoSchedule taints added and
 * removed without touching others, and a measurement of this host that is plausible.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/agent.h"
#include "ckube/internal/util.h"

static void test_defaults_and_given_thresholds(void **state)
{
    (void)state;
    struct ck_pressure_thresholds t;
    struct ck_err err = {0};
    assert_int_equal(ck_pressure_thresholds_parse(NULL, &t, &err), 0);
    assert_true(t.memory_available.set);
    assert_int_equal(t.memory_available.quantity, 100 << 20);
    assert_true(t.memory_available.percent < 0);
    assert_true(t.nodefs_available.set);
    assert_true(t.nodefs_available.percent == 10.0);
    assert_true(t.nodefs_inodes_free.percent == 5.0);
    assert_false(t.pid_available.set); /* not among the kubelet's defaults */
    json_t *given = json_pack("{s:s, s:s, s:s}", "pid.available", "1000", "imagefs.available",
                              "15%", "memory.available", "5%");
    assert_int_equal(ck_pressure_thresholds_parse(given, &t, &err), 0);
    assert_int_equal(t.pid_available.quantity, 1000);
    assert_true(t.memory_available.percent == 5.0);
    assert_false(t.nodefs_available.set); /* a given map replaces the defaults */
    json_decref(given);
    given = json_pack("{s:s}", "memory.available", "lots");
    assert_int_equal(ck_pressure_thresholds_parse(given, &t, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "memory.available"));
    json_decref(given);
}

static void test_pressures_from_a_sample(void **state)
{
    (void)state;
    struct ck_pressure_thresholds t;
    assert_int_equal(ck_pressure_thresholds_parse(NULL, &t, NULL), 0);
    t.pid_available = (struct ck_threshold){true, 100, -1};
    struct ck_pressure_sample s = {.memory_available = 200 << 20,
                                   .memory_capacity = 1LL << 32,
                                   .nodefs_available = 50,
                                   .nodefs_capacity = 100,
                                   .inodes_free = 50,
                                   .inodes_capacity = 100,
                                   .pid_available = 1000,
                                   .pid_capacity = 4096};
    struct ck_pressure p;
    ck_pressure_evaluate(&t, &s, &p);
    assert_false(p.memory || p.disk || p.pid);
    s.memory_available = 99 << 20;
    s.nodefs_available = 9; /* under 10% */
    s.pid_available = 99;
    ck_pressure_evaluate(&t, &s, &p);
    assert_true(p.memory && p.disk && p.pid);
    s.nodefs_available = 50;
    s.inodes_free = 4; /* under 5% of the inodes: disk pressure too */
    ck_pressure_evaluate(&t, &s, &p);
    assert_true(p.disk);
}

static const json_t *find(const json_t *list, const char *field, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *v = json_string_value(json_object_get(e, field));
        if (v && strcmp(v, value) == 0)
            return e;
    }
    return NULL;
}

static void test_conditions_and_taints(void **state)
{
    (void)state;
    struct ck_pressure p = {.memory = true, .disk = false, .pid = true};
    json_t *c = ck_agent_node_conditions_with(&p);
    const json_t *m = find(c, "type", "MemoryPressure");
    assert_string_equal(json_string_value(json_object_get(m, "status")), "True");
    assert_string_equal(json_string_value(json_object_get(m, "reason")),
                        "KubeletHasInsufficientMemory");
    const json_t *d = find(c, "type", "DiskPressure");
    assert_string_equal(json_string_value(json_object_get(d, "reason")),
                        "KubeletHasNoDiskPressure");
    const json_t *pid = find(c, "type", "PIDPressure");
    assert_string_equal(json_string_value(json_object_get(pid, "reason")),
                        "KubeletHasInsufficientPID");
    json_decref(c);
    json_t *old = json_pack("[{s:s, s:s}, {s:s, s:s}]", "key", "dedicated", "effect", "NoSchedule",
                            "key", "node.kubernetes.io/disk-pressure", "effect", "NoSchedule");
    json_t *t = ck_agent_pressure_taints(old, &p);
    assert_int_equal(json_array_size(t), 3);
    assert_non_null(find(t, "key", "dedicated"));
    assert_non_null(find(t, "key", "node.kubernetes.io/memory-pressure"));
    assert_non_null(find(t, "key", "node.kubernetes.io/pid-pressure"));
    assert_null(find(t, "key", "node.kubernetes.io/disk-pressure"));
    assert_string_equal(json_string_value(json_object_get(
                            find(t, "key", "node.kubernetes.io/pid-pressure"), "effect")),
                        "NoSchedule");
    json_decref(t);
    json_decref(old);
}

static void test_this_host_measured(void **state)
{
    (void)state;
    struct ck_pressure_sample s;
    assert_int_equal(ck_pressure_measure("/", &s), 0);
    assert_true(s.memory_available > 0 && s.memory_available <= s.memory_capacity);
    assert_true(s.nodefs_available >= 0 && s.nodefs_available <= s.nodefs_capacity);
    assert_true(s.pid_available > 0 && s.pid_available < s.pid_capacity);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_given_thresholds),
        cmocka_unit_test(test_pressures_from_a_sample),
        cmocka_unit_test(test_conditions_and_taints),
        cmocka_unit_test(test_this_host_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
