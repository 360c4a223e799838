/*
 * test_scheduler_plugins.c - tests for lib/controllers/scheduler/plugins.c: one table
 * per filter (each case a pod, a node and the reason expected, or none), the scores on
 * known fractions, the owner spreading, and FitError's message. The toleration and node
 * affinity rules under the filters have their own tables in test_scheduling_helpers.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/controllers/scheduler/internal.h"

/* A node summary from JSON text, with existing pods' requests given as a pod. */
static void node_from(struct ck__sched_node *n, const char *json)
{
    memset(n, 0, sizeof(*n));
    json_t *node = json_loads(json, 0, NULL);
    assert_non_null(node);
    n->name = strdup(json_string_value(json_object_get(json_object_get(node, "metadata"), "name")));
    ck__sched_node_set(n, node);
    json_decref(node);
}

static void place_on(struct ck__sched_node *n, const char *pod_json)
{
    json_t *pod = json_loads(pod_json, 0, NULL);
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    assert_int_equal(ck__sched_node_account(n, &p, +1), 0);
    ck__sched_pod_release(&p);
    json_decref(pod);
}

struct filter_case {
    const char *name;
    const char *pod;
    const char *node;
    const char *placed; /* a pod already on the node, or NULL */
    const char *reason; /* NULL: fits */
    enum ck__sched_code code;
};

static void run_cases(const struct filter_case *cases, size_t n,
                      enum ck__sched_code (*filter)(const struct ck__sched_pod *,
                                                    const struct ck__sched_node *,
                                                    struct ck__sched_status *))
{
    for (size_t i = 0; i < n; i++) {
        struct ck__sched_node node;
        node_from(&node, cases[i].node);
        if (cases[i].placed)
            place_on(&node, cases[i].placed);
        json_t *pod = json_loads(cases[i].pod, 0, NULL);
        if (!pod)
            fail_msg("%s: bad pod JSON", cases[i].name);
        struct ck__sched_pod p;
        assert_int_equal(ck__sched_pod_init(&p, pod), 0);
        struct ck__sched_status st = {0};
        enum ck__sched_code code = filter(&p, &node, &st);
        if (!cases[i].reason && code != CK__SCHED_SUCCESS)
            fail_msg("%s: refused: %s", cases[i].name, st.n_reasons ? st.reasons[0] : "?");
        if (cases[i].reason) {
            if (code != cases[i].code)
                fail_msg("%s: code %d, want %d", cases[i].name, code, cases[i].code);
            if (st.n_reasons < 1 || strcmp(st.reasons[0], cases[i].reason) != 0)
                fail_msg("%s: reason \"%s\", want \"%s\"", cases[i].name,
                         st.n_reasons ? st.reasons[0] : "", cases[i].reason);
        }
        ck__sched_pod_release(&p);
        json_decref(pod);
        ck__sched_node_release(&node);
    }
}

#define N(x) (sizeof(x) / sizeof(x[0]))

static const char plain_node[] =
    "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"zone\":\"a\",\"gen\":\"5\"}},"
    "\"status\":{\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"3\","
    "\"ephemeral-storage\":\"10Gi\"}}}";

static void test_node_unschedulable(void **state)
{
    (void)state;
    static const char cordoned[] =
        "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"unschedulable\":true}}";
    const struct filter_case cases[] = {
        {"schedulable node", "{}", plain_node, NULL, NULL, 0},
        {"cordoned node", "{}", cordoned, NULL, CK__SCHED_REASON_UNSCHEDULABLE,
         CK__SCHED_UNRESOLVABLE},
        {"tolerates the unschedulable taint",
         "{\"spec\":{\"tolerations\":[{\"key\":\"node.kubernetes.io/unschedulable\","
         "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}}",
         cordoned, NULL, NULL, 0},
    };
    run_cases(cases, N(cases), ck__sched_filter_unschedulable);
}

static void test_node_name(void **state)
{
    (void)state;
    const struct filter_case cases[] = {
        {"no node name", "{}", plain_node, NULL, NULL, 0},
        {"same name", "{\"spec\":{\"nodeName\":\"n1\"}}", plain_node, NULL, NULL, 0},
        {"other name", "{\"spec\":{\"nodeName\":\"n2\"}}", plain_node, NULL,
         CK__SCHED_REASON_NODE_NAME, CK__SCHED_UNRESOLVABLE},
    };
    run_cases(cases, N(cases), ck__sched_filter_node_name);
}

static void test_taint_toleration(void **state)
{
    (void)state;
    static const char tainted[] =
        "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":["
        "{\"key\":\"soft\",\"effect\":\"PreferNoSchedule\"},"
        "{\"key\":\"dedicated\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"},"
        "{\"key\":\"gone\",\"effect\":\"NoExecute\"}]}}";
    const struct filter_case cases[] = {
        {"untainted", "{}", plain_node, NULL, NULL, 0},
        {"first untolerated taint named", "{}", tainted, NULL,
         "node(s) had untolerated taint {dedicated: gpu}", CK__SCHED_UNRESOLVABLE},
        {"NoExecute counts too",
         "{\"spec\":{\"tolerations\":[{\"key\":\"dedicated\",\"operator\":\"Equal\","
         "\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]}}",
         tainted, NULL, "node(s) had untolerated taint {gone: }", CK__SCHED_UNRESOLVABLE},
        {"all tolerated (PreferNoSchedule never filters)",
         "{\"spec\":{\"tolerations\":[{\"key\":\"dedicated\",\"value\":\"gpu\"},"
         "{\"key\":\"gone\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]}}",
         tainted, NULL, NULL, 0},
    };
    run_cases(cases, N(cases), ck__sched_filter_taints);
}

static void test_node_affinity(void **state)
{
    (void)state;
#define REQUIRED(terms)                                                                              \
    "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
    "{\"nodeSelectorTerms\":" terms "}}}}}"
    const struct filter_case cases[] = {
        {"no constraint", "{}", plain_node, NULL, NULL, 0},
        {"selector matches", "{\"spec\":{\"nodeSelector\":{\"zone\":\"a\"}}}", plain_node, NULL,
         NULL, 0},
        {"selector value differs", "{\"spec\":{\"nodeSelector\":{\"zone\":\"b\"}}}", plain_node,
         NULL, CK__SCHED_REASON_AFFINITY, CK__SCHED_UNRESOLVABLE},
        {"required affinity misses",
         REQUIRED("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\","
                  "\"values\":[\"b\"]}]}]"),
         plain_node, NULL, CK__SCHED_REASON_AFFINITY, CK__SCHED_UNRESOLVABLE},
        {"matchFields on the node's name",
         REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
                  "\"values\":[\"n1\"]}]}]"),
         plain_node, NULL, NULL, 0},
    };
    run_cases(cases, N(cases), ck__sched_filter_affinity);
#undef REQUIRED
}

static void test_node_ports(void **state)
{
    (void)state;
#define PORT(spec) "{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[" spec "]}]}}"
    const struct filter_case cases[] = {
        {"no host ports", PORT("{\"containerPort\":80}"), plain_node,
         PORT("{\"containerPort\":80,\"hostPort\":80}"), NULL, 0},
        {"same port", PORT("{\"containerPort\":80,\"hostPort\":80}"), plain_node,
         PORT("{\"containerPort\":80,\"hostPort\":80}"), CK__SCHED_REASON_PORTS,
         CK__SCHED_UNSCHEDULABLE},
        {"other protocol", PORT("{\"containerPort\":80,\"hostPort\":80,\"protocol\":\"UDP\"}"),
         plain_node, PORT("{\"containerPort\":80,\"hostPort\":80}"), NULL, 0},
        {"different addresses",
         PORT("{\"containerPort\":80,\"hostPort\":80,\"hostIP\":\"10.0.0.1\"}"), plain_node,
         PORT("{\"containerPort\":80,\"hostPort\":80,\"hostIP\":\"10.0.0.2\"}"), NULL, 0},
        {"0.0.0.0 conflicts with any address",
         PORT("{\"containerPort\":80,\"hostPort\":80,\"hostIP\":\"10.0.0.1\"}"), plain_node,
         PORT("{\"containerPort\":80,\"hostPort\":80}"), CK__SCHED_REASON_PORTS,
         CK__SCHED_UNSCHEDULABLE},
    };
    run_cases(cases, N(cases), ck__sched_filter_ports);
#undef PORT
}

static void test_resources_fit(void **state)
{
    (void)state;
#define REQ(cpu, mem)                                                                              \
    "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"" cpu       \
    "\",\"memory\":\"" mem "\"}}}]}}"
    const struct filter_case cases[] = {
        {"fits", REQ("1", "1Gi"), plain_node, REQ("500m", "1Gi"), NULL, 0},
        {"exactly fills", REQ("1500m", "3Gi"), plain_node, REQ("500m", "1Gi"), NULL, 0},
        {"cpu short", REQ("1600m", "1Gi"), plain_node, REQ("500m", "1Gi"), "Insufficient cpu",
         CK__SCHED_UNSCHEDULABLE},
        {"memory short", REQ("100m", "3500Mi"), plain_node, REQ("500m", "1Gi"),
         "Insufficient memory", CK__SCHED_UNSCHEDULABLE},
        {"no requests fit anywhere with room for a pod", "{}", plain_node, REQ("2", "4Gi"), NULL,
         0},
        {"init container dominates",
         "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
         "\"100m\"}}}],\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":"
         "{\"cpu\":\"3\"}}}]}}",
         plain_node, NULL, "Insufficient cpu", CK__SCHED_UNSCHEDULABLE},
        {"overhead counts",
         "{\"spec\":{\"overhead\":{\"cpu\":\"2\"},\"containers\":[{\"name\":\"c\","
         "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
         plain_node, NULL, "Insufficient cpu", CK__SCHED_UNSCHEDULABLE},
        {"ephemeral storage",
         "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
         "{\"ephemeral-storage\":\"11Gi\"}}}]}}",
         plain_node, NULL, "Insufficient ephemeral-storage", CK__SCHED_UNSCHEDULABLE},
    };
    run_cases(cases, N(cases), ck__sched_filter_fit);
#undef REQ

    /* pod count, and several reasons at once in Kubernetes' order */
    struct ck__sched_node node;
    node_from(&node, plain_node);
    for (int i = 0; i < 3; i++)
        place_on(&node, "{}");
    json_t *pod = json_loads("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
                             "{\"requests\":{\"cpu\":\"3\",\"memory\":\"5Gi\"}}}]}}",
                             0, NULL);
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    struct ck__sched_status st = {0};
    assert_int_equal(ck__sched_filter_fit(&p, &node, &st), CK__SCHED_UNSCHEDULABLE);
    assert_int_equal(st.n_reasons, 3);
    assert_string_equal(st.reasons[0], "Too many pods");
    assert_string_equal(st.reasons[1], "Insufficient cpu");
    assert_string_equal(st.reasons[2], "Insufficient memory");
    /* taking the pods off gives the room back */
    struct ck__sched_pod empty;
    json_t *none = json_object();
    assert_int_equal(ck__sched_pod_init(&empty, none), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ck__sched_node_account(&node, &empty, -1), 0);
    assert_int_equal(node.requested.pods, 0);
    ck__sched_pod_release(&empty);
    json_decref(none);
    ck__sched_pod_release(&p);
    json_decref(pod);
    ck__sched_node_release(&node);
}

static void test_filter_stops_at_first_failure(void **state)
{
    (void)state;
    struct ck__sched_node node;
    node_from(&node, "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"unschedulable\":true,"
                     "\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]},"
                     "\"status\":{\"allocatable\":{\"pods\":\"0\"}}}");
    json_t *pod = json_object();
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    struct ck__sched_status st = {0};
    assert_int_equal(ck__sched_filter(&p, &node, &st), CK__SCHED_UNRESOLVABLE);
    assert_int_equal(st.n_reasons, 1);
    assert_string_equal(st.reasons[0], CK__SCHED_REASON_UNSCHEDULABLE);
    ck__sched_pod_release(&p);
    json_decref(pod);
    ck__sched_node_release(&node);
}

static void test_scores(void **state)
{
    (void)state;
    struct ck__sched_node node;
    node_from(&node, "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":"
                     "{\"cpu\":\"4\",\"memory\":\"4Gi\",\"pods\":\"110\"}}}");
    json_t *pod = json_loads("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":"
                             "{\"requests\":{\"cpu\":\"1\",\"memory\":\"3Gi\"}}}]}}",
                             0, NULL);
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    /* cpu 1/4 used -> 75, memory 3/4 -> 25: least allocated (75 + 25) / 2 */
    assert_int_equal(ck__sched_score_least_allocated(&p, &node), 50);
    /* fractions 0.25 and 0.75: std 0.25, (1 - 0.25) * 100 */
    assert_int_equal(ck__sched_score_balanced(&p, &node), 75);
    ck__sched_pod_release(&p);
    json_decref(pod);

    /* no requests: scoring assumes 100m and 200Mi */
    json_t *empty = json_loads("{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", 0, NULL);
    assert_int_equal(ck__sched_pod_init(&p, empty), 0);
    assert_int_equal(p.nonzero_cpu, CK__SCHED_DEFAULT_MILLI_CPU);
    assert_int_equal(p.nonzero_memory, CK__SCHED_DEFAULT_MEMORY);
    assert_int_equal(p.requests.milli_cpu, 0);
    ck__sched_pod_release(&p);
    json_decref(empty);
    ck__sched_node_release(&node);

    int64_t counts[] = {0, 2, 4, 4}, scores[4];
    ck__sched_score_spread(counts, 4, scores);
    assert_int_equal(scores[0], 100);
    assert_int_equal(scores[1], 50);
    assert_int_equal(scores[2], 0);
    assert_int_equal(scores[3], 0);
    int64_t none[] = {0, 0};
    ck__sched_score_spread(none, 2, scores);
    assert_int_equal(scores[0], 100);
    assert_int_equal(scores[1], 100);
}

static void test_owner_counts(void **state)
{
    (void)state;
    struct ck__sched_node node;
    node_from(&node, plain_node);
    static const char owned[] = "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"rs-1\","
                                "\"controller\":true,\"kind\":\"ReplicaSet\",\"name\":\"r\"}]}}";
    place_on(&node, owned);
    place_on(&node, owned);
    assert_int_equal(ck__sched_node_owner_count(&node, "rs-1"), 2);
    assert_int_equal(ck__sched_node_owner_count(&node, "rs-2"), 0);
    json_t *pod = json_loads(owned, 0, NULL);
    struct ck__sched_pod p;
    assert_int_equal(ck__sched_pod_init(&p, pod), 0);
    assert_string_equal(p.owner_uid, "rs-1");
    ck__sched_node_account(&node, &p, -1);
    ck__sched_node_account(&node, &p, -1);
    assert_int_equal(ck__sched_node_owner_count(&node, "rs-1"), 0);
    ck__sched_pod_release(&p);
    json_decref(pod);
    ck__sched_node_release(&node);
}

static void test_fit_message(void **state)
{
    (void)state;
    struct ck__sched_status st[3] = {0};
    st[0].code = CK__SCHED_UNSCHEDULABLE;
    st[0].reasons[0] = "Insufficient cpu";
    st[0].n_reasons = 1;
    for (int i = 1; i < 3; i++) {
        st[i].code = CK__SCHED_UNRESOLVABLE;
        snprintf(st[i].buf, sizeof(st[i].buf), "node(s) had untolerated taint {k: v}");
        st[i].reasons[0] = st[i].buf;
        st[i].n_reasons = 1;
    }
    char *msg = ck__sched_fit_message(3, st, 3, NULL);
    assert_string_equal(msg, "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had "
                             "untolerated taint {k: v}.");
    free(msg);
    /* the PostFilter's message follows, as FitError.Error() appends it */
    msg = ck__sched_fit_message(3, st, 3, "not eligible due to preemptionPolicy=Never.");
    assert_string_equal(msg, "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had "
                             "untolerated taint {k: v}. not eligible due to "
                             "preemptionPolicy=Never.");
    free(msg);
    /* sorted as strings, as Go's sort.Strings sorts them: "10 ..." before "2 ..." */
    struct ck__sched_status many[12] = {0};
    for (int i = 0; i < 12; i++) {
        many[i].code = CK__SCHED_UNRESOLVABLE;
        many[i].reasons[0] = i < 10 ? CK__SCHED_REASON_UNSCHEDULABLE : CK__SCHED_REASON_AFFINITY;
        many[i].n_reasons = 1;
    }
    msg = ck__sched_fit_message(12, many, 12, "");
    assert_string_equal(msg, "0/12 nodes are available: 10 node(s) were unschedulable, 2 node(s) "
                             "didn't match Pod's node affinity/selector.");
    free(msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_unschedulable),
        cmocka_unit_test(test_node_name),
        cmocka_unit_test(test_taint_toleration),
        cmocka_unit_test(test_node_affinity),
        cmocka_unit_test(test_node_ports),
        cmocka_unit_test(test_resources_fit),
        cmocka_unit_test(test_filter_stops_at_first_failure),
        cmocka_unit_test(test_scores),
        cmocka_unit_test(test_owner_counts),
        cmocka_unit_test(test_fit_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
