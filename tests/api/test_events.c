/*
 * test_events.c - tests for lib/api/kinds/eventv1.c and the validation of
 * kinds/event.c: the events.k8s.io/v1 form of a core event and back
 * (pkg/apis/events/v1/conversion.go), legacyValidateEvent on core writes, the
 * strict rules of an events.k8s.io write with Kubernetes' messages, and the
 * printer reading the v1 form.
 */
#include "cktest.h"

#include "kindtest.h"

static json_t *core_event(void)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:{s:s, s:s}, "
                     "s:s, s:s, s:i, s:s, s:s, s:s}",
                     "apiVersion", "v1", "kind", "Event", "metadata", "name", "web.1", "namespace",
                     "default", "involvedObject", "kind", "Pod", "name", "web", "namespace",
                     "default", "apiVersion", "v1", "reason", "Pulled", "message",
                     "Container image pulled", "source", "component", "kubelet", "host", "node-1",
                     "firstTimestamp", "2026-01-01T00:00:00Z", "lastTimestamp",
                     "2026-01-01T00:01:00Z", "count", 3, "type", "Normal", "reportingComponent", "",
                     "reportingInstance", "");
}

/* A valid events.k8s.io/v1 event, as a client of that API writes it. */
static json_t *v1_event(void)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:s, "
                     "s:s, s:s}",
                     "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata", "name", "web.2",
                     "namespace", "default", "eventTime", "2026-12-07T10:00:00.000000Z",
                     "regarding", "kind", "Pod", "name", "web", "namespace", "default",
                     "reportingController", "example.com/prober", "reportingInstance", "prober-1",
                     "action", "Probing", "reason", "Unhealthy", "note", "Readiness probe failed",
                     "type", "Warning");
}

static void test_core_event_reads_as_v1_and_back(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("events.k8s.io", "events");
    assert_string_equal(k->storage_api_version, "v1");
    assert_string_equal(k->short_names[0], "ev");
    json_t *core = core_event();
    json_t *v1 = json_deep_copy(core);
    assert_int_equal(k->from_storage(v1), 0);
    assert_string_equal(json_string_value(json_object_get(v1, "apiVersion")), "events.k8s.io/v1");
    assert_string_equal(json_string_value(json_object_get(v1, "note")), "Container image pulled");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v1, "regarding"), "name")), "web");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v1, "deprecatedSource"), "host")),
        "node-1");
    assert_string_equal(json_string_value(json_object_get(v1, "deprecatedFirstTimestamp")),
                        "2026-01-01T00:00:00Z");
    assert_string_equal(json_string_value(json_object_get(v1, "deprecatedLastTimestamp")),
                        "2026-01-01T00:01:00Z");
    assert_int_equal(json_integer_value(json_object_get(v1, "deprecatedCount")), 3);
    static const char *const gone[] = {"involvedObject",
                                       "message",
                                       "source",
                                       "firstTimestamp",
                                       "lastTimestamp",
                                       "count",
                                       "reportingComponent",
                                       "reportingController",
                                       "reportingInstance"};
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        assert_null(json_object_get(v1, gone[i])); /* renamed, or empty and omitted */
    assert_string_equal(json_string_value(json_object_get(v1, "reason")), "Pulled");

    /* and back: the stored form again (the omitted empty strings aside) */
    assert_int_equal(k->to_storage(v1), 0);
    json_object_del(core, "reportingComponent");
    json_object_del(core, "reportingInstance");
    assert_true(json_equal(v1, core));
    json_decref(v1);
    json_decref(core);

    /* a v1 write keeps reportingController as core's reportingComponent */
    json_t *w = v1_event();
    assert_int_equal(k->to_storage(w), 0);
    assert_string_equal(json_string_value(json_object_get(w, "reportingComponent")),
                        "example.com/prober");
    assert_string_equal(json_string_value(json_object_get(w, "message")), "Readiness probe failed");
    json_decref(w);
}

static void test_v1_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("events.k8s.io", "events");
    json_t *o = v1_event();
    kt_expect(k, o, NULL, NULL);
    json_decref(o);

    o = v1_event();
    json_object_del(o, "reportingController");
    json_object_del(o, "action");
    json_object_set_new(o, "type", json_string("Bad"));
    json_object_set_new(o, "deprecatedCount", json_integer(2));
    kt_expect(k, o, NULL, "reportingController: Required value");
    kt_expect(k, o, NULL, "action: Required value");
    kt_expect(k, o, NULL, "type: Invalid value: \"\": has invalid value: Bad");
    kt_expect(k, o, NULL, "count: Invalid value: \"\": needs to be unset");
    json_decref(o);

    o = v1_event();
    char note[1100];
    memset(note, 'x', sizeof(note) - 1);
    note[sizeof(note) - 1] = '\0';
    json_object_set_new(o, "note", json_string(note));
    json_object_set_new(o, "reportingInstance", json_string(note + 900));
    kt_expect(k, o, NULL, "message: Invalid value: \"\": can have at most 1024 characters");
    kt_expect(k, o, NULL,
              "reportingInstance: Invalid value: \"\": can have at most 128 characters");
    json_decref(o);

    o = v1_event();
    json_object_set_new(o, "series", json_pack("{s:i}", "count", 1));
    json_object_set_new(o, "deprecatedSource", json_pack("{s:s}", "component", "kubelet"));
    kt_expect(k, o, NULL, "series.count: Invalid value: \"\": should be at least 2");
    kt_expect(k, o, NULL, "series.lastObservedTime: Required value");
    kt_expect(k, o, NULL, "source: Invalid value: \"\": needs to be unset");
    json_decref(o);

    /* a cluster-scoped object's event goes to default or kube-system */
    o = v1_event();
    json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string("apps"));
    json_object_set_new(o, "regarding", json_pack("{s:s, s:s}", "kind", "Node", "name", "n1"));
    kt_expect(k, o, NULL, "involvedObject.namespace: Invalid value: \"\": does not match");
    json_decref(o);
}

static void test_v1_update_keeps_the_event(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("events.k8s.io", "events");
    json_t *old = v1_event();
    json_t *o = v1_event();
    json_object_set_new(
        o, "series",
        json_pack("{s:i, s:s}", "count", 2, "lastObservedTime", "2026-12-07T10:01:00.000000Z"));
    kt_expect(k, o, old, NULL);
    json_object_set_new(o, "note", json_string("changed"));
    json_object_set_new(o, "reportingController", json_string("example.com/other"));
    kt_expect(k, o, old, "message: Invalid value: \"changed\": field is immutable");
    kt_expect(k, o, old,
              "reportingController: Invalid value: \"example.com/other\": field is immutable");
    json_decref(o);
    json_decref(old);
}

static void test_core_legacy_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("", "events");
    json_t *o = core_event();
    kt_expect(k, o, NULL, NULL); /* a core write needs neither eventTime nor reportingController */
    json_object_set_new(json_object_get(o, "involvedObject"), "namespace", json_string("other"));
    kt_expect(k, o, NULL,
              "involvedObject.namespace: Invalid value: \"other\": does not match event.namespace");
    json_decref(o);
    o = core_event(); /* a node's event in default */
    json_object_set_new(o, "involvedObject", json_pack("{s:s, s:s}", "kind", "Node", "name", "n1"));
    kt_expect(k, o, NULL, NULL);
    json_decref(o);
}

static void test_v1_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("events.k8s.io", "events");
    json_t *o = core_event();
    assert_int_equal(k->from_storage(o), 0);
    kt_expect_cell(k, o, "Object", "pod/web");
    kt_expect_cell(k, o, "Message", "Container image pulled");
    kt_expect_cell(k, o, "Source", "kubelet, node-1");
    kt_expect_cell(k, o, "Count", "3");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_event_reads_as_v1_and_back),
        cmocka_unit_test(test_v1_validation),
        cmocka_unit_test(test_v1_update_keeps_the_event),
        cmocka_unit_test(test_core_legacy_validation),
        cmocka_unit_test(test_v1_cells),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
