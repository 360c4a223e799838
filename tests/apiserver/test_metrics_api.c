/*
 * test_metrics_api.c - tests for lib/apiserver/metrics_api.c, metrics.k8s.io as
 * metrics-server builds it: kubelet's /metrics/resource text read (HELP and TYPE lines,
 * families it does not use, labels in any order with escapes, sample times, a broken
 * line passed over), the CPU rate between two scrapes in nanocores with its window and
 * timestamp, a container measured from its start when the older scrape lacks it, the
 * cases without a rate (CPU down, no time between, a container without memory), and the
 * canonical quantities and Go durations the objects carry.
 *
 * The text is written as kubelet 1.32's resource metrics collector writes it.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"

static const char kubelet_text[] =
    "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the "
    "container in core-seconds\n"
    "# TYPE container_cpu_usage_seconds_total counter\n"
    "container_cpu_usage_seconds_total{container=\"app\",namespace=\"web\",pod=\"a\"} 10.5 "
    "2000\n"
    "container_cpu_usage_seconds_total{namespace=\"web\",pod=\"a\",container=\"side\"} 1 2000\n"
    "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container "
    "in bytes\n"
    "# TYPE container_memory_working_set_bytes gauge\n"
    "container_memory_working_set_bytes{container=\"app\",namespace=\"web\",pod=\"a\"} "
    "1.048576e+06 2000\n"
    "container_memory_working_set_bytes{container=\"side\",namespace=\"web\",pod=\"a\"} 4096 "
    "2000\n"
    "container_memory_working_set_bytes{container=\"x\",namespace=\"we\\\"b\",pod=\"b\"} 1 2000\n"
    "# TYPE container_start_time_seconds gauge\n"
    "container_start_time_seconds{container=\"side\",namespace=\"web\",pod=\"a\"} 1.5\n"
    "container_swap_usage_bytes{container=\"app\",namespace=\"web\",pod=\"a\"} 77 2000\n"
    "node_cpu_usage_seconds_total 357.35491 2100\n"
    "node_memory_working_set_bytes 1.073741824e+09 2100\n"
    "node_cpu_usage_seconds_total{broken 1\n"
    "resource_scrape_error 0\n";

static struct ck__node_scrape parse(const char *text)
{
    struct ck__node_scrape s;
    assert_int_equal(ck__metrics_scrape_parse(text, strlen(text), &s), 0);
    return s;
}

static const struct ck__ctr_sample *ctr(const struct ck__node_scrape *s, const char *ns,
                                        const char *pod, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->c[i].ns, ns) && !strcmp(s->c[i].pod, pod) && !strcmp(s->c[i].name, name))
            return &s->c[i];
    fail_msg("no container %s/%s/%s", ns, pod, name);
    return NULL;
}

static void test_kubelet_text_read(void **state)
{
    (void)state;
    struct ck__node_scrape s = parse(kubelet_text);
    assert_true(s.has_cpu && s.has_memory);
    assert_true(s.cpu_s == 357.35491);
    assert_int_equal(s.cpu_ms, 2100);
    assert_true(s.memory == 1073741824.0);
    assert_int_equal(s.n, 3);
    const struct ck__ctr_sample *app = ctr(&s, "web", "a", "app");
    assert_true(app->has_cpu && app->has_memory && app->cpu_s == 10.5 && app->memory == 1048576);
    assert_int_equal(app->cpu_ms, 2000);
    assert_true(app->start_s == 0);
    const struct ck__ctr_sample *side = ctr(&s, "web", "a", "side"); /* labels reordered */
    assert_true(side->cpu_s == 1 && side->memory == 4096 && side->start_s == 1.5);
    const struct ck__ctr_sample *x = ctr(&s, "we\"b", "b", "x"); /* an escaped quote */
    assert_false(x->has_cpu);
    ck__node_scrape_release(&s);
    /* samples outside their bounds are passed over: a negative figure, a time past 1e15 ms */
    s = parse("node_cpu_usage_seconds_total -1 1000\n"
              "node_memory_working_set_bytes 5 99999999999999999\n"
              "container_cpu_usage_seconds_total{container=\"c\",namespace=\"n\",pod=\"p\"} "
              "1e300 1000\n");
    assert_false(s.has_cpu || s.has_memory);
    assert_true(s.n == 0 || !s.c[0].has_cpu);
    ck__node_scrape_release(&s);
    /* nothing of use: an empty scrape, not an error */
    s = parse("# only a comment\nsomething_else 1\n");
    assert_false(s.has_cpu || s.has_memory);
    assert_int_equal(s.n, 0);
    ck__node_scrape_release(&s);
}

static const char *str(const json_t *o, const char *path)
{
    const json_t *v = o;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save, *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(k)) : json_object_get(v, k);
    return json_string_value(v);
}

static void test_node_rate(void **state)
{
    (void)state;
    struct ck__node_scrape prev = parse("node_cpu_usage_seconds_total 10 1000\n"
                                        "node_memory_working_set_bytes 5 1000\n");
    struct ck__node_scrape cur = parse("node_cpu_usage_seconds_total 10.75 2500\n"
                                       "node_memory_working_set_bytes 1.048576e+06 2500\n");
    json_t *labels = json_pack("{s:s}", "kubernetes.io/hostname", "n1");
    json_t *o = ck__node_metrics_object("n1", labels, &prev, &cur, 86400000);
    assert_non_null(o);
    assert_string_equal(str(o, "kind"), "NodeMetrics");
    assert_string_equal(str(o, "apiVersion"), "metrics.k8s.io/v1beta1");
    assert_string_equal(str(o, "metadata.name"), "n1");
    assert_true(json_equal(json_object_get(json_object_get(o, "metadata"), "labels"), labels));
    assert_string_equal(str(o, "metadata.creationTimestamp"), "1970-01-02T00:00:00Z");
    /* 0.75 core-seconds in 1.5 s: half a core, from the older sample's time to the newer */
    assert_string_equal(str(o, "usage.cpu"), "500m");
    assert_string_equal(str(o, "usage.memory"), "1Mi");
    assert_string_equal(str(o, "window"), "1.5s");
    assert_string_equal(str(o, "timestamp"), "1970-01-01T00:00:02Z");
    json_decref(o);
    /* no rate: CPU went down, no time between the two, one scrape only */
    assert_null(ck__node_metrics_object("n1", labels, &cur, &prev, 0));
    assert_null(ck__node_metrics_object("n1", labels, &cur, &cur, 0));
    assert_null(ck__node_metrics_object("n1", labels, NULL, &cur, 0));
    json_decref(labels);
    ck__node_scrape_release(&prev);
    ck__node_scrape_release(&cur);
}

static void test_pod_rate(void **state)
{
    (void)state;
    struct ck__node_scrape prev = parse(
        "container_cpu_usage_seconds_total{container=\"app\",namespace=\"web\",pod=\"a\"} 2 10000\n"
        "container_memory_working_set_bytes{container=\"app\",namespace=\"web\",pod=\"a\"} 1 "
        "10000\n");
    /* app: 3 core-seconds more in 15 s; side is new: 1 core-second since its start at 5 s */
    struct ck__node_scrape cur = parse(
        "container_cpu_usage_seconds_total{container=\"app\",namespace=\"web\",pod=\"a\"} 5 25000\n"
        "container_memory_working_set_bytes{container=\"app\",namespace=\"web\",pod=\"a\"} 3072 "
        "25000\n"
        "container_cpu_usage_seconds_total{container=\"side\",namespace=\"web\",pod=\"a\"} 1 "
        "21000\n"
        "container_memory_working_set_bytes{container=\"side\",namespace=\"web\",pod=\"a\"} 1000 "
        "21000\n"
        "container_start_time_seconds{container=\"side\",namespace=\"web\",pod=\"a\"} 5\n"
        "container_cpu_usage_seconds_total{container=\"c\",namespace=\"web\",pod=\"nomem\"} 1 "
        "21000\n"
        "container_start_time_seconds{container=\"c\",namespace=\"web\",pod=\"nomem\"} 5\n");
    json_t *labels = json_pack("{s:s}", "app", "a");
    json_t *o = ck__pod_metrics_object("web", "a", labels, &prev, &cur, 0);
    assert_non_null(o);
    assert_string_equal(str(o, "kind"), "PodMetrics");
    assert_string_equal(str(o, "metadata.namespace"), "web");
    assert_string_equal(str(o, "metadata.labels.app"), "a");
    assert_int_equal(json_array_size(json_object_get(o, "containers")), 2);
    assert_string_equal(str(o, "containers.0.name"), "app");
    assert_string_equal(str(o, "containers.0.usage.cpu"), "200m");
    assert_string_equal(str(o, "containers.0.usage.memory"), "3Ki");
    assert_string_equal(str(o, "containers.1.name"), "side");
    assert_string_equal(str(o, "containers.1.usage.cpu"), "62500u"); /* 1 s in 16 s */
    assert_string_equal(str(o, "containers.1.usage.memory"), "1000");
    /* the pod's time is its earliest container's, with that container's window */
    assert_string_equal(str(o, "timestamp"), "1970-01-01T00:00:21Z");
    assert_string_equal(str(o, "window"), "16s");
    json_decref(o);
    /* a container without memory: the pod is left out; a pod not scraped: none */
    assert_null(ck__pod_metrics_object("web", "nomem", labels, &prev, &cur, 0));
    assert_null(ck__pod_metrics_object("web", "absent", labels, &prev, &cur, 0));
    /* restarted (its CPU went down) without a start time: no rate */
    assert_null(ck__pod_metrics_object("web", "a", labels, &cur, &prev, 0));
    json_decref(labels);
    ck__node_scrape_release(&prev);
    ck__node_scrape_release(&cur);
}

static void test_quantities_and_durations(void **state)
{
    (void)state;
    static const struct {
        uint64_t v;
        const char *cpu, *bytes;
    } q[] = {
        {0, "0", "0"},
        {1, "1n", "1"},
        {1000, "1u", "1000"},
        {1024, "1024n", "1Ki"},
        {1500000000, "1500m", "1500000000"},
        {2000000000, "2", "1953125Ki"},
        {123456789, "123456789n", "123456789"},
        {3ULL << 30, "3221225472n", "3Gi"},
        {1000000000000ULL, "1k", "976562500Ki"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        ck__quantity_nanocores(q[i].v, buf, sizeof(buf));
        assert_string_equal(buf, q[i].cpu);
        ck__quantity_bytes(q[i].v, buf, sizeof(buf));
        assert_string_equal(buf, q[i].bytes);
    }
    static const struct {
        int64_t ms;
        const char *s;
    } d[] = {{0, "0s"},        {250, "250ms"},      {1000, "1s"},
             {1012, "1.012s"}, {15500, "15.5s"},    {60250, "1m0.25s"},
             {61000, "1m1s"},  {3600000, "1h0m0s"}, {3723400, "1h2m3.4s"}};
    for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
        ck__go_duration_ms(d[i].ms, buf, sizeof(buf));
        assert_string_equal(buf, d[i].s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubelet_text_read),
        cmocka_unit_test(test_node_rate),
        cmocka_unit_test(test_pod_rate),
        cmocka_unit_test(test_quantities_and_durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
