/*
 * test_printers.c - tests for lib/api/printers.c: Kubernetes' human
 * durations, the Pod STATUS/READY/RESTARTS logic, every kind's rows having
 * one cell per column, columns described as data (JSONPath-like cell
 * sources, as a CRD's additionalPrinterColumns) next to computed ones, and
 * the Table envelope (columns, row objects, includeObject).
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

#define NOW 1800000000LL /* 2027-01-15T08:00:00Z */

static void test_human_durations(void **state)
{
    (void)state;
    static const struct {
        long long seconds;
        const char *want;
    } cases[] = {
        {-5, "<invalid>"},
        {-1, "0s"},
        {0, "0s"},
        {119, "119s"},
        {120, "2m"},
        {185, "3m5s"},
        {600, "10m"},
        {179 * 60, "179m"},
        {3 * 3600, "3h"},
        {3 * 3600 + 600, "3h10m"},
        {8 * 3600 + 600, "8h"},
        {47 * 3600, "47h"},
        {48 * 3600, "2d"},
        {51 * 3600, "2d3h"},
        {8 * 86400, "8d"},
        {729 * 86400LL, "729d"},
        {733 * 86400LL, "2y3d"},
        {730 * 86400LL, "2y"},
        {9 * 365 * 86400LL, "9y"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(ck_human_duration(cases[i].seconds, buf, sizeof(buf)), cases[i].want) != 0)
            fail_msg("%lld s: got %s, want %s", cases[i].seconds, buf, cases[i].want);
    assert_string_equal(ck_age(NULL, NOW, buf, sizeof(buf)), "<unknown>");
    assert_string_equal(ck_age("garbage", NOW, buf, sizeof(buf)), "<unknown>");
    assert_string_equal(ck_age("2027-01-15T07:55:00Z", NOW, buf, sizeof(buf)), "5m");
}

static json_t *pod_row(const char *pod_json)
{
    json_t *pod = load(pod_json);
    json_t *cells = json_array();
    ck_table_row_cells(ck_kind_lookup("", "v1", "pods"), pod, NOW, cells);
    json_decref(pod);
    assert_int_equal(json_array_size(cells), 9);
    return cells;
}

static const char *cell(json_t *cells, size_t i)
{
    return json_string_value(json_array_get(cells, i));
}

static void test_pod_status_column(void **state)
{
    (void)state;
    static const struct {
        const char *pod, *ready, *status, *restarts;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"a\"},\"spec\":{\"containers\":[{},{}]},\"status\":{\"phase\":\"Pending\"}}",
         "0/2", "Pending", "0"},
        {"{\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Running\",\"containerStatuses\":"
         "[{\"ready\":true,\"restartCount\":2,\"state\":{\"running\":{}}}]}}",
         "1/1", "Running", "2"},
        {"{\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Pending\",\"containerStatuses\":"
         "[{\"ready\":false,\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}",
         "0/1", "ContainerCreating", "0"},
        {"{\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Failed\",\"containerStatuses\":"
         "[{\"state\":{\"terminated\":{\"exitCode\":3}}}]}}",
         "0/1", "ExitCode:3", "0"},
        {"{\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":"
         "[{\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}",
         "0/1", "Completed", "0"},
        {"{\"metadata\":{\"deletionTimestamp\":\"2027-01-15T07:59:00Z\"},\"spec\":{\"containers\":[{}]},"
         "\"status\":{\"phase\":\"Running\"}}",
         "0/1", "Terminating", "0"},
        {"{\"spec\":{\"containers\":[{}],\"initContainers\":[{},{}]},\"status\":{\"phase\":\"Pending\","
         "\"initContainerStatuses\":[{\"state\":{\"terminated\":{\"exitCode\":0}}},{\"state\":{\"running\":{}}}]}}",
         "0/1", "Init:1/2", "0"},
        {"{\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Running\",\"containerStatuses\":"
         "[{\"ready\":true,\"restartCount\":5,\"state\":{\"running\":{}},\"lastState\":{\"terminated\":"
         "{\"exitCode\":1,\"finishedAt\":\"2027-01-15T07:57:00Z\"}}}]}}",
         "1/1", "Running", "5 (3m ago)"},
        {"{\"spec\":{\"containers\":[{}]},\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\"}}",
         "0/1", "Evicted", "0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *cells = pod_row(cases[i].pod);
        if (strcmp(cell(cells, 1), cases[i].ready) || strcmp(cell(cells, 2), cases[i].status) ||
            strcmp(cell(cells, 3), cases[i].restarts))
            fail_msg("case %zu: got %s %s %s, want %s %s %s", i, cell(cells, 1), cell(cells, 2),
                     cell(cells, 3), cases[i].ready, cases[i].status, cases[i].restarts);
        json_decref(cells);
    }
}

static void test_pod_wide_cells(void **state)
{
    (void)state;
    json_t *cells =
        pod_row("{\"metadata\":{\"name\":\"web\",\"creationTimestamp\":\"2027-01-15T07:00:00Z\"},"
                "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{}],\"readinessGates\":"
                "[{\"conditionType\":\"x\"}]},\"status\":{\"podIP\":\"10.0.0.5\","
                "\"conditions\":[{\"type\":\"x\",\"status\":\"True\"}]}}");
    assert_string_equal(cell(cells, 0), "web");
    assert_string_equal(cell(cells, 4), "60m");
    assert_string_equal(cell(cells, 5), "10.0.0.5");
    assert_string_equal(cell(cells, 6), "n1");
    assert_string_equal(cell(cells, 7), "<none>");
    assert_string_equal(cell(cells, 8), "1/1");
    json_decref(cells);
}

static void test_every_kind_fills_every_column(void **state)
{
    (void)state;
    static const struct {
        const char *group, *resource, *obj;
        const char *first_cells[3];
    } cases[] = {
        {"",
         "namespaces",
         "{\"metadata\":{\"name\":\"default\"},\"status\":{\"phase\":\"Active\"}}",
         {"default", "Active", NULL}},
        {"",
         "nodes",
         "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"node-role.kubernetes.io/control-plane\":\"\"}},"
         "\"spec\":{\"unschedulable\":true},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
         "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.32.0\"}}}",
         {"n1", "Ready,SchedulingDisabled", "control-plane"}},
        {"",
         "events",
         "{\"metadata\":{\"name\":\"e\"},\"type\":\"Normal\",\"reason\":\"Created\",\"message\":\" hi \","
         "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"web\"},\"source\":{\"component\":\"kubelet\",\"host\":\"n1\"}}",
         {"<unknown>", "Normal", "Created"}},
        {"apps",
         "deployments",
         "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
         "\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}}},"
         "\"status\":{\"readyReplicas\":2,\"updatedReplicas\":3,\"availableReplicas\":2}}",
         {"d", "2/3", NULL}},
        {"apps",
         "replicasets",
         "{\"metadata\":{\"name\":\"r\"},\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}},"
         "\"status\":{\"replicas\":2,\"readyReplicas\":1}}",
         {"r", NULL, NULL}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct ck_kind *k = ck_kind_lookup(cases[i].group, "v1", cases[i].resource);
        json_t *obj = load(cases[i].obj);
        json_t *cells = json_array();
        ck_table_row_cells(k, obj, NOW, cells);
        assert_int_equal(json_array_size(cells), k->n_columns);
        for (size_t c = 0; c < 3 && cases[i].first_cells[c]; c++)
            if (strcmp(cell(cells, c), cases[i].first_cells[c]) != 0)
                fail_msg("%s cell %zu: %s, want %s", cases[i].resource, c, cell(cells, c),
                         cases[i].first_cells[c]);
        json_decref(cells);
        json_decref(obj);
    }
}

static void test_workload_and_event_details(void **state)
{
    (void)state;
    const struct ck_kind *d = ck_kind_lookup("apps", "v1", "deployments");
    json_t *obj = load(
        "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":3,\"selector\":"
        "{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"tier\","
        "\"operator\":\"In\",\"values\":[\"fe\"]}]},\"template\":{\"spec\":"
        "{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}}},"
        "\"status\":{\"updatedReplicas\":3,\"availableReplicas\":2}}");
    json_t *cells = json_array();
    ck_table_row_cells(d, obj, NOW, cells);
    assert_string_equal(cell(cells, 1), "0/3");
    assert_int_equal(json_integer_value(json_array_get(cells, 2)), 3);
    assert_int_equal(json_integer_value(json_array_get(cells, 3)), 2);
    assert_string_equal(cell(cells, 5), "a,b");
    assert_string_equal(cell(cells, 6), "x,y");
    assert_string_equal(cell(cells, 7), "app=web,tier in (fe)");
    json_decref(cells);
    json_decref(obj);

    const struct ck_kind *e = ck_kind_lookup("", "v1", "events");
    obj = load(
        "{\"metadata\":{\"name\":\"e\"},\"message\":\" hi \\n\",\"count\":4,"
        "\"firstTimestamp\":\"2027-01-15T07:00:00Z\",\"lastTimestamp\":\"2027-01-15T07:59:00Z\","
        "\"involvedObject\":{\"kind\":\"ReplicaSet\",\"name\":\"web-1\",\"fieldPath\":\"spec\"},"
        "\"source\":{\"component\":\"replicaset-controller\"}}");
    cells = json_array();
    ck_table_row_cells(e, obj, NOW, cells);
    assert_string_equal(cell(cells, 0), "60s");
    assert_string_equal(cell(cells, 3), "replicaset/web-1");
    assert_string_equal(cell(cells, 4), "spec");
    assert_string_equal(cell(cells, 5), "replicaset-controller");
    assert_string_equal(cell(cells, 6), "hi");
    assert_string_equal(cell(cells, 7), "60m");
    assert_int_equal(json_integer_value(json_array_get(cells, 8)), 4);
    json_decref(cells);
    json_decref(obj);
}

static void test_table_envelope(void **state)
{
    (void)state;
    const struct ck_kind *ns = ck_kind_lookup("", "v1", "namespaces");
    json_t *objs[2] = {
        load(
            "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"y\"}},\"spec\":{\"finalizers\":[\"kubernetes\"]}}"),
        load("{\"metadata\":{\"name\":\"b\"}}"),
    };
    json_t *t = ck_table_build(ns, objs, 2, true, CK_INCLUDE_METADATA, "42", "", NOW);
    assert_string_equal(json_string_value(json_object_get(t, "kind")), "Table");
    assert_string_equal(json_string_value(json_object_get(t, "apiVersion")), "meta.k8s.io/v1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(t, "metadata"), "resourceVersion")),
        "42");
    json_t *columns = json_object_get(t, "columnDefinitions");
    assert_int_equal(json_array_size(columns), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(columns, 0), "format")),
                        "name");
    json_t *row0 = json_array_get(json_object_get(t, "rows"), 0);
    json_t *object = json_object_get(row0, "object");
    assert_string_equal(json_string_value(json_object_get(object, "kind")),
                        "PartialObjectMetadata");
    assert_non_null(
        json_object_get(json_object_get(json_object_get(object, "metadata"), "labels"), "x"));
    assert_null(json_object_get(object, "spec")); /* metadata only */
    json_decref(t);

    t = ck_table_build(ns, objs, 2, false, CK_INCLUDE_OBJECT, "42", NULL, NOW);
    assert_int_equal(json_array_size(json_object_get(t, "columnDefinitions")), 0);
    object = json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object");
    assert_non_null(json_object_get(object, "spec")); /* the whole object */
    json_decref(t);

    t = ck_table_build(ns, objs, 0, true, CK_INCLUDE_NONE, "7", NULL, NOW);
    assert_true(json_is_array(json_object_get(t, "rows")));
    assert_int_equal(json_array_size(json_object_get(t, "rows")), 0);
    json_decref(t);
    t = ck_table_build(ns, objs, 1, true, CK_INCLUDE_NONE, "7", NULL, NOW);
    assert_null(json_object_get(json_array_get(json_object_get(t, "rows"), 0), "object"));
    json_decref(t);
    json_decref(objs[0]);
    json_decref(objs[1]);

    enum ck_include_object inc;
    assert_int_equal(ck_include_object_parse("Object", &inc), 0);
    assert_int_equal(inc, CK_INCLUDE_OBJECT);
    assert_int_equal(ck_include_object_parse(NULL, &inc), 0);
    assert_int_equal(inc, CK_INCLUDE_METADATA);
    assert_int_equal(ck_include_object_parse("Everything", &inc), CK_EINVAL);
}

/* A kind as a CRD would describe it: every column reads the object; one is computed. */
static void computed_cells(const json_t *obj, long long now, json_t **cells)
{
    (void)obj;
    (void)now;
    cells[5] = json_string("computed");
}

static const struct ck_table_column data_columns[] = {
    {"Name", "string", "name", "", 0, ".metadata.name", CK_CELL_ABSENT_NONE, false},
    {"Replicas", "integer", "", "", 0, ".spec.replicas", CK_CELL_ABSENT_ZERO, false},
    {"Size", "string", "", "", 0, ".spec.size", CK_CELL_ABSENT_NONE, false},
    {"Phase", "string", "", "", 1, ".status.phase", CK_CELL_ABSENT_NULL, false},
    {"Created", "date", "", "", 0, ".metadata.creationTimestamp", CK_CELL_ABSENT_NULL, false},
    {"Computed", "string", "", "", 0, NULL, CK_CELL_ABSENT_NULL, false},
    {"Mode", "string", "", "", 0, ".spec.mode", CK_CELL_ABSENT_EMPTY, false},
};

static const struct ck_kind data_kind = {
    .group = "test.ckube.io",
    .version = "v1",
    .kind = "Gizmo",
    .resource = "gizmos",
    .schema = "io.ckube.test.v1.Gizmo",
    .columns = data_columns,
    .n_columns = sizeof(data_columns) / sizeof(data_columns[0]),
    .cells = computed_cells,
};

static void test_columns_described_as_data(void **state)
{
    (void)state;
    json_t *obj = load("{\"metadata\":{\"name\":\"g\",\"creationTimestamp\":"
                       "\"2027-01-15T07:55:00Z\"},\"spec\":{\"replicas\":3,\"size\":7,"
                       "\"mode\":\"\"}}");
    json_t *cells = json_array();
    ck_table_row_cells(&data_kind, obj, NOW, cells);
    assert_int_equal(json_array_size(cells), 7);
    assert_string_equal(cell(cells, 0), "g");
    assert_int_equal(json_integer_value(json_array_get(cells, 1)), 3);
    assert_string_equal(cell(cells, 2), "7"); /* a number in a string column: its text */
    assert_true(json_is_null(json_array_get(cells, 3)));
    assert_string_equal(cell(cells, 4), "5m"); /* a date column: its age */
    assert_string_equal(cell(cells, 5), "computed");
    assert_string_equal(cell(cells, 6), "");
    json_decref(cells);
    json_decref(obj);

    /* absent values follow each column's rule */
    obj = load("{}");
    cells = json_array();
    ck_table_row_cells(&data_kind, obj, NOW, cells);
    assert_string_equal(cell(cells, 0), "<none>");
    assert_int_equal(json_integer_value(json_array_get(cells, 1)), 0);
    assert_string_equal(cell(cells, 2), "<none>");
    assert_string_equal(cell(cells, 4), "<unknown>");
    json_decref(cells);
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_human_durations),
        cmocka_unit_test(test_pod_status_column),
        cmocka_unit_test(test_pod_wide_cells),
        cmocka_unit_test(test_every_kind_fills_every_column),
        cmocka_unit_test(test_workload_and_event_details),
        cmocka_unit_test(test_table_envelope),
        cmocka_unit_test(test_columns_described_as_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
