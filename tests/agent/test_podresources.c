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
#include "ckube/internal/util.h"
#include "scratch.h"

#define MI (1024LL * 1024)

static json_t *pod_of(const char *spec_json)
{
    json_error_t e;
    json_t *spec = json_loads(spec_json, 0, &e);
    assert_non_null(spec);
    return json_pack("{s:o}", "spec", spec);
}

/* One pod's spec and the QoS class and pod cgroup resources the kubelet gives it. */
struct config_case {
    const char *what, *spec, *qos;
    uint64_t shares;
    bool has_quota;
    int64_t quota;
    bool has_memory;
    int64_t memory;
};

#define LIMITS(name, cpu, mem)                                                                     \
    "{\"name\": \"" name "\", \"resources\": {\"limits\": {\"cpu\": \"" cpu                        \
    "\", \"memory\": \"" mem "\"}}}"

static const struct config_case config_cases[] = {
    {"BestEffort: two shares and nothing else", "{\"containers\": [{\"name\": \"a\"}]}",
     "BestEffort", 2, false, 0, false, 0},
    {"Guaranteed: the containers' limits summed (requests defaulted to them)",
     "{\"containers\": [" LIMITS("a", "250m", "64Mi") "," LIMITS("b", "500m", "128Mi") "]}",
     "Guaranteed", 768, true, 75000, true, 192 * MI},
    {"Burstable, one container without limits: the shares alone",
     "{\"containers\": [" LIMITS("a", "1", "64Mi") ", {\"name\": \"b\", \"resources\": "
                                                   "{\"requests\": {\"cpu\": \"100m\"}}}]}",
     "Burstable", 1126, false, 0, false, 0},
    {"Burstable, every container limits cpu, one memory: the quota, no memory limit",
     "{\"containers\": [{\"name\": \"a\", \"resources\": {\"requests\": {\"cpu\": \"100m\"}, "
     "\"limits\": {\"cpu\": \"1\", \"memory\": \"64Mi\"}}}, {\"name\": \"b\", \"resources\": "
     "{\"limits\": {\"cpu\": \"5m\"}}}]}",
     "Burstable", 107, true, 100500, false, 0},
    {"a larger init container: its limits",
     "{\"initContainers\": [" LIMITS("i", "2", "1Gi") "], \"containers\": [" LIMITS("a", "500m",
                                                                                    "256Mi") "]}",
     "Guaranteed", 2048, true, 200000, true, 1024 * MI},
    {"smaller init containers: the containers' sum",
     "{\"initContainers\": [" LIMITS("i", "100m", "8Mi") "], \"containers\": [" LIMITS(
         "a", "300m", "16Mi") "," LIMITS("b", "300m", "16Mi") "]}",
     "Guaranteed", 614, true, 60000, true, 32 * MI},
    {"a sidecar counts with the containers and the init containers after it",
     "{\"initContainers\": [{\"name\": \"s\", \"restartPolicy\": \"Always\", \"resources\": "
     "{\"limits\": {\"cpu\": \"100m\", \"memory\": \"64Mi\"}}}," LIMITS(
         "i", "1", "128Mi") "], \"containers\": [" LIMITS("a", "200m", "64Mi") "]}",
     "Guaranteed", 1126, true, 110000, true, 192 * MI},
    {"the overhead added",
     "{\"overhead\": {\"cpu\": \"100m\", \"memory\": \"10Mi\"}, \"containers\": [" LIMITS(
         "a", "1", "100Mi") "]}",
     "Guaranteed", 1126, true, 110000, true, 110 * MI},
    {"the minimums: 2 shares, a 1 ms quota", "{\"containers\": [" LIMITS("a", "1m", "1Mi") "]}",
     "Guaranteed", 2, true, 1000, true, MI},
};

static void test_pod_resource_config(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(config_cases) / sizeof(config_cases[0]); i++) {
        const struct config_case *c = &config_cases[i];
        json_t *pod = pod_of(c->spec);
        struct ck__pod_resources r;
        ck__pod_resource_config(pod, &r);
        const char *qos = ck__pod_qos(pod);
        if (strcmp(qos, c->qos) != 0 || r.cpu_shares != c->shares ||
            r.has_cpu_quota != c->has_quota || r.cpu_quota != c->quota ||
            (c->has_quota && r.cpu_period != 100000) || r.has_memory != c->has_memory ||
            r.memory != c->memory)
            fail_msg("%s: got %s, shares %llu, quota %d %lld/%llu, memory %d %lld", c->what, qos,
                     (unsigned long long)r.cpu_shares, r.has_cpu_quota, (long long)r.cpu_quota,
                     (unsigned long long)r.cpu_period, r.has_memory, (long long)r.memory);
        json_decref(pod);
    }
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
    char path[PATH_MAX], *got = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    snprintf(text, sizeof(text), "%s", ck__read_file(path, 100, &got, &len) == 0 ? got : "");
    free(got);
    return text;
}

/* A scratch directory (into dir) and the cgroup mounts of table, each @ in it that directory. */
static void scratch_mounts(char *dir, size_t size, const char *table, struct ck__cgroup_mounts *ret)
{
    char path[128], text[1024];
    assert_int_equal(scratch_make_dir(dir, size, "podcgroup"), 0);
    snprintf(path, sizeof(path), "%s/mounts", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    size_t n = 0;
    for (const char *t = table; *t && n + strlen(dir) + 2 < sizeof(text); t++) {
        if (*t == '@')
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", dir);
        else
            text[n++] = *t;
    }
    text[n] = 0;
    fputs(text, f);
    fclose(f);
    assert_int_equal(ck__cgroup_mounts_read(path, ret), 0);
}

static void test_pod_cgroup_v1(void **state)
{
    (void)state;
    char dir[64], path[PATH_MAX + 64];
    struct ck__cgroup_mounts m;
    /* the shortest mount point of each controller wins; other types are ignored */
    scratch_mounts(dir, sizeof(dir),
                   "proc /proc proc rw 0 0\n"
                   "cgroup @/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
                   "cgroup @/a/longer/cpu cgroup rw,cpu 0 0\n"
                   "cgroup @/cpuset cgroup rw,cpuset 0 0\n"
                   "cgroup @/memory cgroup rw,memory 0 0\n"
                   "cgroup2 @/unified cgroup2 rw 0 0\n",
                   &m);
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
    char dir[64], path[PATH_MAX + 64];
    struct ck__cgroup_mounts m;
    scratch_mounts(dir, sizeof(dir), "cgroup2 @/cg cgroup2 rw,nsdelegate 0 0\n", &m);
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
        cmocka_unit_test(test_pod_resource_config),
        cmocka_unit_test(test_the_status_qos_class_wins),
        cmocka_unit_test(test_memory_emptydir_size),
        cmocka_unit_test(test_pod_cgroup_v1),
        cmocka_unit_test(test_pod_cgroup_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
