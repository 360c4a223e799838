/*
 * test_podresources.c - tests for lib/agent/podresources.c (a pod's QoS class and its pod
 * cgroup's resources as the kubelet's ResourceConfigForPod computes them: init
 * containers' max against the containers' sum, sidecars, overhead, requests defaulted to
 * limits, limits declared by every container or not) and for the size of a memory-backed
 * emptyDir (lib/agent/emptydir.c: the node's memory, the pod's limit, the sizeLimit).
 */
#include "cktest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/agent/internal.h"

#define MI (1024LL * 1024)

static json_t *pod_of(const char *spec_json)
{
    json_error_t e;
    json_t *spec = json_loads(spec_json, 0, &e);
    assert_non_null(spec);
    return json_pack("{s:o}", "spec", spec);
}

static struct ck__pod_resources config_of(const char *spec_json, const char **ret_qos)
{
    json_t *pod = pod_of(spec_json);
    struct ck__pod_resources r;
    ck__pod_resource_config(pod, &r);
    static char qos[32];
    snprintf(qos, sizeof(qos), "%s", ck__pod_qos(pod));
    *ret_qos = qos;
    json_decref(pod);
    return r;
}

static void test_best_effort_gets_two_shares_and_nothing_else(void **state)
{
    (void)state;
    const char *qos;
    struct ck__pod_resources r = config_of("{\"containers\": [{\"name\": \"a\"}]}", &qos);
    assert_string_equal(qos, "BestEffort");
    assert_int_equal(r.cpu_shares, 2);
    assert_false(r.has_cpu_quota);
    assert_false(r.has_memory);
}

static void test_guaranteed_sums_the_containers_limits(void **state)
{
    (void)state;
    const char *qos;
    /* limits only: the requests default to them */
    struct ck__pod_resources r = config_of(
        "{\"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"250m\", \"memory\": \"64Mi\"}}},"
        "{\"name\": \"b\", \"resources\": {\"limits\": {\"cpu\": \"500m\", \"memory\": \"128Mi\"}}}"
        "]}",
        &qos);
    assert_string_equal(qos, "Guaranteed");
    assert_int_equal(r.cpu_shares, 768); /* 750m * 1024 / 1000 */
    assert_true(r.has_cpu_quota);
    assert_int_equal(r.cpu_quota, 75000);
    assert_int_equal(r.cpu_period, 100000);
    assert_true(r.has_memory);
    assert_int_equal(r.memory, 192 * MI);
}

static void test_burstable_limits_only_when_every_container_declares_them(void **state)
{
    (void)state;
    const char *qos;
    struct ck__pod_resources r = config_of(
        "{\"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"64Mi\"}}},"
        "{\"name\": \"b\", \"resources\": {\"requests\": {\"cpu\": \"100m\"}}}"
        "]}",
        &qos);
    assert_string_equal(qos, "Burstable");
    assert_int_equal(r.cpu_shares, 1126); /* (1000 + 100) * 1024 / 1000 */
    assert_false(r.has_cpu_quota);
    assert_false(r.has_memory);
    /* every container limits cpu, one memory: the quota, no memory limit */
    r = config_of("{\"containers\": ["
                  "{\"name\": \"a\", \"resources\": {\"requests\": {\"cpu\": \"100m\"}, "
                  "\"limits\": {\"cpu\": \"1\", \"memory\": \"64Mi\"}}},"
                  "{\"name\": \"b\", \"resources\": {\"limits\": {\"cpu\": \"5m\"}}}"
                  "]}",
                  &qos);
    assert_string_equal(qos, "Burstable");
    assert_int_equal(r.cpu_shares, 107); /* 105m */
    assert_true(r.has_cpu_quota);
    assert_int_equal(r.cpu_quota, 100500);
    assert_false(r.has_memory);
}

static void test_init_containers_max_against_the_sum(void **state)
{
    (void)state;
    const char *qos;
    struct ck__pod_resources r = config_of(
        "{\"initContainers\": ["
        "{\"name\": \"i\", \"resources\": {\"limits\": {\"cpu\": \"2\", \"memory\": \"1Gi\"}}}],"
        "\"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"500m\", \"memory\": \"256Mi\"}}}"
        "]}",
        &qos);
    assert_string_equal(qos, "Guaranteed");
    assert_int_equal(r.cpu_shares, 2048);
    assert_int_equal(r.cpu_quota, 200000);
    assert_int_equal(r.memory, 1024 * MI);
    /* smaller init containers: the containers' sum */
    r = config_of(
        "{\"initContainers\": ["
        "{\"name\": \"i\", \"resources\": {\"limits\": {\"cpu\": \"100m\", \"memory\": \"8Mi\"}}}],"
        "\"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"300m\", \"memory\": \"16Mi\"}}},"
        "{\"name\": \"b\", \"resources\": {\"limits\": {\"cpu\": \"300m\", \"memory\": \"16Mi\"}}}"
        "]}",
        &qos);
    assert_int_equal(r.cpu_quota, 60000);
    assert_int_equal(r.memory, 32 * MI);
}

static void test_sidecars_count_with_the_containers_and_later_inits(void **state)
{
    (void)state;
    const char *qos;
    struct ck__pod_resources r = config_of(
        "{\"initContainers\": ["
        "{\"name\": \"s\", \"restartPolicy\": \"Always\", "
        "\"resources\": {\"limits\": {\"cpu\": \"100m\", \"memory\": \"64Mi\"}}},"
        "{\"name\": \"i\", \"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"128Mi\"}}}],"
        "\"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"200m\", \"memory\": \"64Mi\"}}}"
        "]}",
        &qos);
    /* cpu: max(200 + 100, 1000 + 100); memory: max(64 + 64, 128 + 64) */
    assert_int_equal(r.cpu_shares, 1126);
    assert_int_equal(r.cpu_quota, 110000);
    assert_int_equal(r.memory, 192 * MI);
}

static void test_overhead_and_minimums(void **state)
{
    (void)state;
    const char *qos;
    struct ck__pod_resources r = config_of(
        "{\"overhead\": {\"cpu\": \"100m\", \"memory\": \"10Mi\"}, \"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"100Mi\"}}}"
        "]}",
        &qos);
    assert_int_equal(r.cpu_shares, 1126);
    assert_int_equal(r.cpu_quota, 110000);
    assert_int_equal(r.memory, 110 * MI);
    r = config_of("{\"containers\": [{\"name\": \"a\", \"resources\": "
                  "{\"limits\": {\"cpu\": \"1m\", \"memory\": \"1Mi\"}}}]}",
                  &qos);
    assert_int_equal(r.cpu_shares, 2);   /* 1m: below the kernel's minimum */
    assert_int_equal(r.cpu_quota, 1000); /* at least 1 ms */
    assert_int_equal(r.memory, 1048576);
}

static void test_the_status_qos_class_wins(void **state)
{
    (void)state;
    json_t *pod = pod_of("{\"containers\": [{\"name\": \"a\", \"resources\": "
                         "{\"limits\": {\"cpu\": \"1\", \"memory\": \"1Mi\"}}}]}");
    assert_string_equal(ck__pod_qos(pod), "Guaranteed");
    json_object_set_new(pod, "status", json_pack("{s:s}", "qosClass", "Burstable"));
    assert_string_equal(ck__pod_qos(pod), "Burstable");
    json_decref(pod);
    /* requests and limits that differ: Burstable */
    pod = pod_of("{\"containers\": [{\"name\": \"a\", \"resources\": {\"requests\": "
                 "{\"cpu\": \"500m\"}, \"limits\": {\"cpu\": \"1\", \"memory\": \"1Mi\"}}}]}");
    assert_string_equal(ck__pod_qos(pod), "Burstable");
    json_decref(pod);
}

static void test_memory_emptydir_size(void **state)
{
    (void)state;
    const int64_t node = 8192 * MI;
    json_t *guaranteed = pod_of(
        "{\"containers\": ["
        "{\"name\": \"a\", \"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"192Mi\"}}}]}");
    json_t *best_effort = pod_of("{\"containers\": [{\"name\": \"a\"}]}");
    json_t *plain = json_pack("{s:s, s:{s:s}}", "name", "v", "emptyDir", "medium", "Memory");
    json_t *small = json_pack("{s:s, s:{s:s, s:s}}", "name", "v", "emptyDir", "medium", "Memory",
                              "sizeLimit", "64Mi");
    json_t *big = json_pack("{s:s, s:{s:s, s:s}}", "name", "v", "emptyDir", "medium", "Memory",
                            "sizeLimit", "100Gi");
    assert_int_equal(ck__emptydir_memory_size(guaranteed, plain, node), 192 * MI);
    assert_int_equal(ck__emptydir_memory_size(guaranteed, small, node), 64 * MI);
    assert_int_equal(ck__emptydir_memory_size(guaranteed, big, node), 192 * MI);
    assert_int_equal(ck__emptydir_memory_size(best_effort, plain, node), node);
    assert_int_equal(ck__emptydir_memory_size(best_effort, small, node), 64 * MI);
    assert_int_equal(ck__emptydir_memory_size(best_effort, big, node), node);
    /* not of medium Memory: nothing is mounted */
    json_t *disk = json_pack("{s:s, s:{}}", "name", "v", "emptyDir");
    struct ck_err err = {0};
    assert_int_equal(ck__emptydir_setup(best_effort, disk, "/nonexistent/x/y", node, &err), 0);
    json_decref(disk);
    json_decref(guaranteed);
    json_decref(best_effort);
    json_decref(plain);
    json_decref(small);
    json_decref(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_effort_gets_two_shares_and_nothing_else),
        cmocka_unit_test(test_guaranteed_sums_the_containers_limits),
        cmocka_unit_test(test_burstable_limits_only_when_every_container_declares_them),
        cmocka_unit_test(test_init_containers_max_against_the_sum),
        cmocka_unit_test(test_sidecars_count_with_the_containers_and_later_inits),
        cmocka_unit_test(test_overhead_and_minimums),
        cmocka_unit_test(test_the_status_qos_class_wins),
        cmocka_unit_test(test_memory_emptydir_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
