/*
 * test_podresources.c - tests for lib/agent/podresources.c (a pod's QoS class and its pod
 * cgroup's resources as the kubelet's ResourceConfigForPod computes them: init
 * containers' max against the containers' sum, sidecars, overhead, requests defaulted to
 * limits, limits declared by every container or not) and for the size of a memory-backed
 * emptyDir (lib/agent/emptydir.c: the node's memory, the pod's limit, the sizeLimit) and the
 * pod cgroup written from them (lib/agent/podcgroup.c) into cgroup v1 and v2 hierarchies
 * that are directories of a scratch directory, named by a mount table of the test's.
 */
#define _GNU_SOURCE /* nftw */
#include "cktest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../lib/agent/internal.h"
#include "scratch.h"

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

/* The content of dir/file, or "" when it does not exist (static buffer). */
static const char *read_value(const char *dir, const char *file)
{
    static char text[128];
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    text[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = 0;
        fclose(f);
    }
    return text;
}

static void write_mounts(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_pod_cgroup_v1(void **state)
{
    (void)state;
    char dir[64], mounts[128], table[1024], path[PATH_MAX + 64];
    assert_int_equal(scratch_make_dir(dir, sizeof(dir), "podcgroup"), 0);
    snprintf(mounts, sizeof(mounts), "%s/mounts", dir);
    /* the shortest mount point of each controller wins; other types are ignored */
    snprintf(table, sizeof(table),
             "proc /proc proc rw 0 0\n"
             "cgroup %s/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
             "cgroup %s/a/longer/cpu cgroup rw,cpu 0 0\n"
             "cgroup %s/cpuset cgroup rw,cpuset 0 0\n"
             "cgroup %s/memory cgroup rw,memory 0 0\n"
             "cgroup2 %s/unified cgroup2 rw 0 0\n",
             dir, dir, dir, dir, dir);
    write_mounts(mounts, table);
    struct ck__cgroup_mounts m;
    assert_int_equal(ck__cgroup_mounts_read(mounts, &m), 0);
    assert_false(m.v2);
    snprintf(path, sizeof(path), "%s/cpu,cpuacct", dir);
    assert_string_equal(m.cpu, path);
    snprintf(path, sizeof(path), "%s/memory", dir);
    assert_string_equal(m.memory, path);
    mkdir(m.cpu, 0755);
    mkdir(m.memory, 0755);

    struct ck__pod_resources res = {512, true, 50000, 100000, true, 80 * MI};
    struct ck_err err = {0};
    assert_int_equal(ck__pod_cgroup_ensure(&m, "/test/kubepods/podA", &res, &err), 0);
    snprintf(path, sizeof(path), "%s/test/kubepods/podA", m.cpu);
    assert_string_equal(read_value(path, "cpu.shares"), "512");
    assert_string_equal(read_value(path, "cpu.cfs_period_us"), "100000");
    assert_string_equal(read_value(path, "cpu.cfs_quota_us"), "50000");
    assert_string_equal(read_value(path, "memory.limit_in_bytes"), "");
    snprintf(path, sizeof(path), "%s/test/kubepods/podA", m.memory);
    assert_string_equal(read_value(path, "memory.limit_in_bytes"), "83886080");
    /* it exists: left as it is */
    struct ck__pod_resources other = {2, false, 0, 0, false, 0};
    assert_int_equal(ck__pod_cgroup_ensure(&m, "/test/kubepods/podA", &other, &err), 0);
    assert_string_equal(read_value(path, "memory.limit_in_bytes"), "83886080");
    /* Burstable without limits: the shares alone */
    assert_int_equal(ck__pod_cgroup_ensure(&m, "/test/kubepods/burstable/podB", &other, &err), 0);
    snprintf(path, sizeof(path), "%s/test/kubepods/burstable/podB", m.cpu);
    assert_string_equal(read_value(path, "cpu.shares"), "2");
    assert_string_equal(read_value(path, "cpu.cfs_quota_us"), "");
    snprintf(path, sizeof(path), "%s/test/kubepods/burstable/podB", m.memory);
    assert_string_equal(read_value(path, "memory.limit_in_bytes"), "");
    /* no memory hierarchy: an error naming it */
    m.memory[0] = 0;
    assert_int_equal(ck__pod_cgroup_ensure(&m, "/test/kubepods/podC", &res, &err), CK_ENOENT);
    assert_non_null(strstr(err.msg, "memory"));
    scratch_remove_dir(dir);
}

static void test_pod_cgroup_v2(void **state)
{
    (void)state;
    char dir[64], mounts[128], table[512], path[PATH_MAX + 64];
    assert_int_equal(scratch_make_dir(dir, sizeof(dir), "podcgroup"), 0);
    snprintf(mounts, sizeof(mounts), "%s/mounts", dir);
    snprintf(table, sizeof(table), "cgroup2 %s/cg cgroup2 rw,nsdelegate 0 0\n", dir);
    write_mounts(mounts, table);
    struct ck__cgroup_mounts m;
    assert_int_equal(ck__cgroup_mounts_read(mounts, &m), 0);
    assert_true(m.v2);
    mkdir(m.unified, 0755);
    struct ck__pod_resources res = {512, true, 50000, 100000, true, 80 * MI};
    struct ck_err err = {0};
    assert_int_equal(ck__pod_cgroup_ensure(&m, "/kubepods/burstable/podA", &res, &err), 0);
    /* the controllers enabled from the root down to the pod's parent */
    assert_string_equal(read_value(m.unified, "cgroup.subtree_control"), "+cpu +memory");
    snprintf(path, sizeof(path), "%s/kubepods", m.unified);
    assert_string_equal(read_value(path, "cgroup.subtree_control"), "+cpu +memory");
    snprintf(path, sizeof(path), "%s/kubepods/burstable", m.unified);
    assert_string_equal(read_value(path, "cgroup.subtree_control"), "+cpu +memory");
    snprintf(path, sizeof(path), "%s/kubepods/burstable/podA", m.unified);
    assert_string_equal(read_value(path, "cgroup.subtree_control"), "");
    assert_string_equal(read_value(path, "cpu.weight"), "20"); /* 1 + 510 * 9999 / 262142 */
    assert_string_equal(read_value(path, "cpu.max"), "50000 100000");
    assert_string_equal(read_value(path, "memory.max"), "83886080");
    /* BestEffort: the lowest weight, nothing else */
    struct ck__pod_resources be = {2, false, 0, 0, false, 0};
    assert_int_equal(ck__pod_cgroup_ensure(&m, "/kubepods/besteffort/podB", &be, &err), 0);
    snprintf(path, sizeof(path), "%s/kubepods/besteffort/podB", m.unified);
    assert_string_equal(read_value(path, "cpu.weight"), "1");
    assert_string_equal(read_value(path, "cpu.max"), "");
    assert_string_equal(read_value(path, "memory.max"), "");
    scratch_remove_dir(dir);
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
        cmocka_unit_test(test_pod_cgroup_v1),
        cmocka_unit_test(test_pod_cgroup_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
