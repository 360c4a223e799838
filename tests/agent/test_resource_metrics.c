/*
 * test_resource_metrics.c - tests for lib/agent/resource_metrics.c: the Prometheus text
 * of kubelet's /metrics/resource (families in name order with their HELP and TYPE,
 * samples in label order, Go's float forms, times in milliseconds, pods as the sums of
 * their containers or the runtime's own figures of them, unknown figures left out, label
 * escapes, the scrape error), and the
 * readers of the node's /proc/stat and /proc/meminfo, a cgroup v2 directory and a process
 * group in /proc, on files written in a scratch directory and on this process.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <string.h>
#include <unistd.h>

#include "../../lib/agent/internal.h"
#include "scratch.h"

#define SEC 1000000000LL

static char *render_own(const struct ck__rt_stats *node, const struct ck__rt_stats_ref *refs,
                        const struct ck__rt_stats *st, const struct ck__rt_stats *own, size_t n,
                        bool failed)
{
    struct ck__buf b = {0};
    assert_int_equal(ck__resource_metrics_render(&b, node, refs, st, own, n, failed), 0);
    return ck__buf_take(&b);
}

static char *render(const struct ck__rt_stats *node, const struct ck__rt_stats_ref *refs,
                    const struct ck__rt_stats *st, size_t n, bool failed)
{
    struct ck__buf b = {0};
    assert_int_equal(ck__resource_metrics_render(&b, node, refs, st, NULL, n, failed), 0);
    return ck__buf_take(&b);
}

/* The position of line (a whole line) in text; fails the test when it is not there. */
static size_t line_at(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return (size_t)(p - text);
    fail_msg("no line \"%s\" in:\n%s", line, text);
    return 0;
}

static void test_text_as_kubelet_writes_it(void **state)
{
    (void)state;
    struct ck__rt_stats node = {
        true,         true, 1700000000123LL * 1000000, 1700000000456LL * 1000000, 357354910000ULL,
        1073741824ULL};
    struct ck__rt_stats_ref refs[3] = {
        {"web", "b-pod", "u2", "app", 0, "process://3", 1700000000LL * SEC + SEC / 2, ""},
        {"web", "a-pod", "u1", "side", 1, "process://2", 0, ""},
        {"web", "a-pod", "u1", "app", 0, "process://1", 1600000000LL * SEC, ""},
    };
    struct ck__rt_stats st[3] = {
        {true, true, 5000LL * 1000000, 5001LL * 1000000, 123456789ULL, 11091968ULL},
        {true, false, 7000LL * 1000000, 0, 500000000ULL, 0}, /* memory unknown */
        {true, true, 6000LL * 1000000, 6000LL * 1000000, 2000000000ULL, 4096ULL},
    };
    char *t = render(&node, refs, st, 3, false);
    /* the families, in name order, each with its HELP and TYPE */
#define CPU_HELP                                                                                   \
    "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the "       \
    "container in core-seconds"
    const char *families[] = {
        CPU_HELP,
        "# TYPE container_cpu_usage_seconds_total counter",
        "# TYPE container_memory_working_set_bytes gauge",
        "# TYPE container_start_time_seconds gauge",
        "# TYPE node_cpu_usage_seconds_total counter",
        "# TYPE node_memory_working_set_bytes gauge",
        "# TYPE pod_cpu_usage_seconds_total counter",
        "# TYPE pod_memory_working_set_bytes gauge",
        "# TYPE resource_scrape_error gauge",
    };
    size_t at = 0;
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        size_t here = line_at(t, families[i]);
        assert_true(here >= at);
        at = here;
    }
    /* samples by container, then namespace, then pod; seconds; times in ms */
    size_t a1 = line_at(t, "container_cpu_usage_seconds_total{container=\"app\",namespace=\"web\","
                           "pod=\"a-pod\"} 2 6000");
    size_t a2 = line_at(t, "container_cpu_usage_seconds_total{container=\"app\",namespace=\"web\","
                           "pod=\"b-pod\"} 0.123456789 5000");
    size_t a3 = line_at(t, "container_cpu_usage_seconds_total{container=\"side\","
                           "namespace=\"web\",pod=\"a-pod\"} 0.5 7000");
    assert_true(a1 < a2 && a2 < a3);
    /* Go's shortest 'g': an exponent from 1e6 up */
    line_at(t, "container_memory_working_set_bytes{container=\"app\",namespace=\"web\","
               "pod=\"b-pod\"} 1.1091968e+07 5001");
    line_at(t, "container_memory_working_set_bytes{container=\"app\",namespace=\"web\","
               "pod=\"a-pod\"} 4096 6000");
    assert_null(strstr(t, "container_memory_working_set_bytes{container=\"side\""));
    /* the start time without a sample time; none when unknown */
    line_at(t, "container_start_time_seconds{container=\"app\",namespace=\"web\",pod=\"b-pod\"} "
               "1.7000000005e+09");
    line_at(t, "container_start_time_seconds{container=\"app\",namespace=\"web\",pod=\"a-pod\"} "
               "1.6e+09");
    assert_null(strstr(t, "container_start_time_seconds{container=\"side\""));
    line_at(t, "node_cpu_usage_seconds_total 357.35491 1700000000123");
    line_at(t, "node_memory_working_set_bytes 1.073741824e+09 1700000000456");
    /* a pod is the sum of its containers, at the newest of their times */
    size_t p1 = line_at(t, "pod_cpu_usage_seconds_total{namespace=\"web\",pod=\"a-pod\"} 2.5 7000");
    size_t p2 =
        line_at(t, "pod_cpu_usage_seconds_total{namespace=\"web\",pod=\"b-pod\"} 0.123456789 5000");
    assert_true(p1 < p2);
    line_at(t, "pod_memory_working_set_bytes{namespace=\"web\",pod=\"a-pod\"} 4096 6000");
    line_at(t, "resource_scrape_error 0");
    assert_null(strstr(t, "\nscrape_error")); /* hidden since 1.30 */
    free(t);

    /* the runtime's figures of a pod as a whole (its sandbox's) replace the sums, each
       where it has one: a-pod's CPU, not its memory; b-pod keeps its sums */
    struct ck__rt_stats own[3] = {
        {0},
        {true, false, 8000LL * 1000000, 0, 3000000000ULL, 0},
        {0},
    };
    t = render_own(&node, refs, st, own, 3, false);
    line_at(t, "pod_cpu_usage_seconds_total{namespace=\"web\",pod=\"a-pod\"} 3 8000");
    line_at(t, "pod_memory_working_set_bytes{namespace=\"web\",pod=\"a-pod\"} 4096 6000");
    line_at(t, "pod_cpu_usage_seconds_total{namespace=\"web\",pod=\"b-pod\"} 0.123456789 5000");
    /* the containers' own lines are unchanged */
    line_at(t, "container_cpu_usage_seconds_total{container=\"app\",namespace=\"web\","
               "pod=\"a-pod\"} 2 6000");
    free(t);
}

static void test_failed_scrape_and_escapes(void **state)
{
    (void)state;
    struct ck__rt_stats node = {0};
    char *t = render(&node, NULL, NULL, 0, true);
    line_at(t, "resource_scrape_error 1");
    line_at(t, "# TYPE node_cpu_usage_seconds_total counter");
    assert_null(strstr(t, "\nnode_cpu_usage_seconds_total ")); /* unknown: no sample */
    free(t);
    struct ck__rt_stats_ref ref = {"n\"s", "p\\o", "u", "c\nd", 0, "x", 0, ""};
    struct ck__rt_stats st = {true, false, 1000000, 0, 10000, 0};
    t = render(&node, &ref, &st, 1, false);
    line_at(t, "container_cpu_usage_seconds_total{container=\"c\\nd\",namespace=\"n\\\"s\","
               "pod=\"p\\\\o\"} 1e-05 1");
    free(t);
}

static int setup(void **state)
{
    return scratch_setup(state, "resmetrics", "log", "exit");
}

static void test_node_from_proc_files(void **state)
{
    struct scratch *s = *state;
    char stat_path[128], meminfo[128];
    snprintf(stat_path, sizeof(stat_path), "%s/stat", s->dir);
    snprintf(meminfo, sizeof(meminfo), "%s/meminfo", s->dir);
    long hz = sysconf(_SC_CLK_TCK);
    char line[128];
    /* user nice system idle iowait irq softirq steal: busy = all but idle and iowait */
    snprintf(line, sizeof(line), "cpu  %ld 20 30 4000 500 6 7 8 0 0\ncpu0 1 2 3 4\n", 3 * hz);
    scratch_put(stat_path, line, "w");
    scratch_put(meminfo,
                "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\n"
                "Inactive(anon):   50 kB\nInactive(file):  100 kB\n",
                "w");
    struct ck__rt_stats st;
    ck__node_stats_read(stat_path, meminfo, 42, &st);
    assert_true(st.has_cpu && st.has_memory);
    assert_int_equal(st.cpu_time, 42);
    long long busy = 3 * hz + 20 + 30 + 6 + 7 + 8;
    assert_int_equal(st.cpu_core_ns, busy / hz * SEC + busy % hz * SEC / hz);
    assert_int_equal(st.working_set_bytes, (1000 - 200 - 100) * 1024);
    ck__node_stats_read("/nonexistent/stat", "/nonexistent/meminfo", 42, &st);
    assert_false(st.has_cpu || st.has_memory);
    /* this host */
    ck__node_stats_read(NULL, NULL, 1, &st);
    assert_true(st.has_cpu && st.has_memory && st.cpu_core_ns > 0 && st.working_set_bytes > 0);
}

static void test_cgroup_directory(void **state)
{
    struct scratch *s = *state;
    char path[160];
    snprintf(path, sizeof(path), "%s/cpu.stat", s->dir);
    scratch_put(path, "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n", "w");
    snprintf(path, sizeof(path), "%s/memory.current", s->dir);
    scratch_put(path, "10000\n", "w");
    snprintf(path, sizeof(path), "%s/memory.stat", s->dir);
    scratch_put(path, "anon 6000\nfile 4000\nactive_file 0\ninactive_file 3000\n", "w");
    struct ck__rt_stats st;
    ck__cgroup_stats_read(s->dir, 7, &st);
    assert_true(st.has_cpu && st.has_memory);
    assert_int_equal(st.cpu_core_ns, 1500000);
    assert_int_equal(st.working_set_bytes, 7000);
    assert_int_equal(st.memory_time, 7);
    /* inactive file pages above the usage (a race between the reads): 0, not a wrap */
    scratch_put(path, "inactive_file 20000\n", "w");
    ck__cgroup_stats_read(s->dir, 7, &st);
    assert_int_equal(st.working_set_bytes, 0);
}

static void put_proc(const char *dir, const char *pid, const char *stat)
{
    char path[200];
    snprintf(path, sizeof(path), "%s/%s", dir, pid);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/%s/stat", dir, pid);
    scratch_put(path, stat, "w");
}

static void test_process_group(void **state)
{
    struct scratch *s = *state;
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    /* pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
       utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss */
    put_proc(s->dir, "10",
             "10 (sh (a) b) R 1 10 10 0 -1 0 0 0 0 0 100 50 7 3 20 0 1 0 5 1000 30\n");
    put_proc(s->dir, "11", "11 (loop) S 10 10 10 0 -1 0 0 0 0 0 40 10 99 99 20 0 1 0 6 1000 20\n");
    put_proc(s->dir, "12", "12 (other) S 1 12 12 0 -1 0 0 0 0 0 900 900 0 0 20 0 1 0 7 1000 500\n");
    char self[160];
    snprintf(self, sizeof(self), "%s/self", s->dir); /* not a pid: skipped */
    assert_int_equal(mkdir(self, 0755), 0);
    struct ck__rt_stats st;
    ck__pgroup_stats_read(s->dir, 10, 9, &st);
    assert_true(st.has_cpu && st.has_memory);
    /* both members' own time, the leader's ended children (not a member's) */
    long long ticks = 100 + 50 + 7 + 3 + 40 + 10;
    assert_int_equal(st.cpu_core_ns, ticks / hz * SEC + ticks % hz * SEC / hz);
    assert_int_equal(st.working_set_bytes, (30 + 20) * page);
    ck__pgroup_stats_read(s->dir, 77, 9, &st);
    assert_false(st.has_cpu || st.has_memory);
    /* this process's own group in the real /proc */
    ck__pgroup_stats_read(NULL, (int)getpgrp(), 9, &st);
    assert_true(st.has_memory && st.working_set_bytes > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_as_kubelet_writes_it),
        cmocka_unit_test(test_failed_scrape_and_escapes),
        cmocka_unit_test_setup_teardown(test_node_from_proc_files, setup, scratch_teardown),
        cmocka_unit_test_setup_teardown(test_cgroup_directory, setup, scratch_teardown),
        cmocka_unit_test_setup_teardown(test_process_group, setup, scratch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
