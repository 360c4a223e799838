/*
 * test_service.c - the Service and EndpointSlice kinds (lib/api/kinds/service.c,
 * endpointslice.c): defaults, validation with Kubernetes' messages, an update that
 * leaves out the allocated values keeping them, a change of type dropping what only
 * the old type used, and kubectl's cells.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static const struct ck_kind *services(void)
{
    return ck_kind_lookup("", "v1", "services");
}

static const struct ck_kind *slices(void)
{
    return ck_kind_lookup("discovery.k8s.io", "v1", "endpointslices");
}

#define SVC(spec) "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"spec\":" spec "}"

static json_t *spec_of(json_t *svc)
{
    return json_object_get(svc, "spec");
}

static const char *spec_str(json_t *svc, const char *field)
{
    return json_string_value(json_object_get(spec_of(svc), field));
}

static void expect(const struct ck_kind *k, const char *text, const char *old_text,
                   const char *want)
{
    json_t *obj = load(text), *old = old_text ? load(old_text) : NULL;
    assert_int_equal(ck_kind_default(k, obj), 0);
    struct ck_field_errors errs = {0};
    ck_meta_validate(k, obj, old, &errs);
    bool found = false;
    char *first = NULL;
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        found = found || (want && strstr(s, want));
        if (!first)
            first = s;
        else
            free(s);
    }
    if (want && !found)
        fail_msg("%s: no error \"%s\" (first: %s)", text, want, first ? first : "none");
    if (!want && errs.len)
        fail_msg("%s: unexpected %s", text, first);
    free(first);
    ck_field_errors_release(&errs);
    json_decref(obj);
    json_decref(old);
}

static void test_defaults(void **state)
{
    (void)state;
    json_t *svc = load(SVC("{\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.5\",\"ports\":[{"
                           "\"port\":80},{\"port\":81,\"targetPort\":\"web\"}]}"));
    assert_int_equal(ck_kind_default(services(), svc), 0);
    json_t *ports = json_object_get(spec_of(svc), "ports");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(ports, 0), "targetPort")),
                     80);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ports, 1), "targetPort")),
                        "web");
    assert_string_equal(spec_str(svc, "externalTrafficPolicy"), "Cluster");
    assert_string_equal(spec_str(svc, "internalTrafficPolicy"), "Cluster");
    assert_string_equal(spec_str(svc, "ipFamilyPolicy"), "SingleStack");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(spec_of(svc), "clusterIPs"), 0)),
        "10.96.0.5");
    json_decref(svc);
    svc = load(SVC("{\"type\":\"ExternalName\",\"externalName\":\"x.example.com\"}"));
    assert_int_equal(ck_kind_default(services(), svc), 0);
    assert_null(json_object_get(spec_of(svc), "internalTrafficPolicy"));
    assert_null(json_object_get(spec_of(svc), "ipFamilies"));
    json_decref(svc);
}

static void test_validation(void **state)
{
    (void)state;
    expect(services(), SVC("{\"ports\":[{\"port\":80}]}"), NULL, NULL);
    expect(services(), SVC("{\"selector\":{\"a\":\"b\"}}"), NULL, "spec.ports: Required value");
    expect(services(), SVC("{\"clusterIP\":\"None\",\"selector\":{\"a\":\"b\"}}"), NULL, NULL);
    expect(services(), SVC("{\"ports\":[{\"port\":80},{\"port\":81}]}"), NULL,
           "spec.ports[0].name: Required value");
    expect(services(),
           SVC("{\"ports\":[{\"name\":\"a\",\"port\":80},{\"name\":\"a\",\"port\":81}]}"), NULL,
           "spec.ports[1].name: Duplicate value: \"a\"");
    expect(services(), SVC("{\"ports\":[{\"port\":70000}]}"), NULL,
           "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive");
    expect(services(), SVC("{\"ports\":[{\"port\":80,\"nodePort\":30000}]}"), NULL,
           "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'");
    expect(services(), SVC("{\"type\":\"ExternalName\"}"), NULL,
           "spec.externalName: Required value");
    expect(services(), SVC("{\"type\":\"ExternalName\",\"externalName\":\"Not_A_Name\"}"), NULL,
           "spec.externalName: Invalid value: \"Not_A_Name\"");
    expect(services(), SVC("{\"ports\":[{\"port\":80}],\"clusterIP\":\"banana\"}"), NULL,
           "spec.clusterIPs[0]: Invalid value: \"banana\": must be a valid IP address");
    expect(services(), SVC("{\"ports\":[{\"port\":80}],\"externalTrafficPolicy\":\"Local\"}"), NULL,
           "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set when `type` is "
           "'NodePort' or 'LoadBalancer'");
    expect(services(), SVC("{\"ports\":[{\"port\":80}],\"clusterIP\":\"10.96.0.9\"}"),
           SVC("{\"ports\":[{\"port\":80}],\"clusterIP\":\"10.96.0.8\"}"),
           "spec.clusterIPs[0]: Invalid value: \"10.96.0.9\": may not change once set");
}

static void test_updates_keep_allocated_values_and_drop_old_types_fields(void **state)
{
    (void)state;
    json_t *old = load(SVC("{\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.8\",\"clusterIPs\":["
                           "\"10.96.0.8\"],\"externalTrafficPolicy\":\"Cluster\",\"ports\":[{"
                           "\"port\":80,\"protocol\":\"TCP\",\"nodePort\":30080}]}"));
    json_t *next =
        load(SVC("{\"type\":\"NodePort\",\"ports\":[{\"port\":80,\"protocol\":\"TCP\"}]}"));
    assert_int_equal(ck_meta_prepare_update(services(), next, old), 0);
    assert_string_equal(spec_str(next, "clusterIP"), "10.96.0.8");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(spec_of(next), "ports"), 0), "nodePort")),
                     30080);
    json_decref(next);
    /* to ClusterIP: the node port and the external policy go */
    next =
        load(SVC("{\"type\":\"ClusterIP\",\"clusterIP\":\"10.96.0.8\",\"externalTrafficPolicy\":"
                 "\"Cluster\",\"ports\":[{\"port\":80,\"protocol\":\"TCP\",\"nodePort\":30080}]}"));
    assert_int_equal(ck_meta_prepare_update(services(), next, old), 0);
    assert_null(
        json_object_get(json_array_get(json_object_get(spec_of(next), "ports"), 0), "nodePort"));
    assert_null(json_object_get(spec_of(next), "externalTrafficPolicy"));
    json_decref(next);
    json_decref(old);
}

static const char *cell(const struct ck_kind *k, const char *text, size_t column)
{
    static char out[256];
    json_t *obj = load(text);
    json_t *cells = json_array();
    assert_int_equal(ck_table_row_cells(k, obj, 0, cells), 0);
    snprintf(out, sizeof(out), "%s", json_string_value(json_array_get(cells, column)));
    json_decref(cells);
    json_decref(obj);
    return out;
}

static void test_cells(void **state)
{
    (void)state;
    /* NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR */
    const char *np = SVC("{\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.8\",\"selector\":{\"b\":"
                         "\"2\",\"a\":\"1\"},\"ports\":[{\"port\":80,\"protocol\":\"TCP\","
                         "\"nodePort\":30080},{\"port\":53,\"protocol\":\"UDP\"}]}");
    assert_string_equal(cell(services(), np, 1), "NodePort");
    assert_string_equal(cell(services(), np, 2), "10.96.0.8");
    assert_string_equal(cell(services(), np, 3), "<none>");
    assert_string_equal(cell(services(), np, 4), "80:30080/TCP,53/UDP");
    assert_string_equal(cell(services(), np, 6), "a=1,b=2");
    const char *lb = SVC("{\"type\":\"LoadBalancer\",\"ports\":[{\"port\":80}]}");
    assert_string_equal(cell(services(), lb, 3), "<pending>");
    const char *ext = SVC("{\"type\":\"ExternalName\",\"externalName\":\"db.example.com\"}");
    assert_string_equal(cell(services(), ext, 2), "<none>");
    assert_string_equal(cell(services(), ext, 3), "db.example.com");
    assert_string_equal(cell(services(), ext, 4), "<none>");
    /* NAME ADDRESSTYPE PORTS ENDPOINTS AGE */
    const char *slice =
        "{\"metadata\":{\"name\":\"s\"},\"addressType\":\"IPv4\",\"ports\":[{\"port\":80}],"
        "\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]},{\"addresses\":[\"10.0.0.2\"]},{"
        "\"addresses\":[\"10.0.0.3\"]},{\"addresses\":[\"10.0.0.4\"]},{\"addresses\":["
        "\"10.0.0.5\"]}]}";
    assert_string_equal(cell(slices(), slice, 2), "80");
    assert_string_equal(cell(slices(), slice, 3), "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...");
    assert_string_equal(cell(slices(), "{\"addressType\":\"IPv4\",\"endpoints\":[]}", 3),
                        "<unset>");
}

static void test_endpoints(void **state)
{
    (void)state;
    const struct ck_kind *ep = ck_kind_lookup("", "v1", "endpoints");
    const char *two = "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"subsets\":[{"
                      "\"addresses\":[{\"ip\":\"10.0.0.1\"},{\"ip\":\"10.0.0.2\"}],"
                      "\"notReadyAddresses\":[{\"ip\":\"10.0.0.3\"}],\"ports\":[{\"port\":80},{"
                      "\"port\":443}]}]}";
    assert_string_equal(cell(ep, two, 1), "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...");
    assert_string_equal(cell(ep, "{\"metadata\":{\"name\":\"web\"}}", 1), "<none>");
    expect(ep, two, NULL, "subsets[0].ports[0].name: Required value");
    expect(ep,
           "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"subsets\":[{\"addresses\":[{"
           "\"ip\":\"nope\"}],\"ports\":[{\"port\":80}]}]}",
           NULL, "subsets[0].addresses[0].ip: Invalid value: \"nope\"");
}

static void test_endpoint_slice_validation(void **state)
{
    (void)state;
    expect(slices(),
           "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"addressType\":\"IPv4\","
           "\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]}]}",
           NULL, NULL);
    expect(slices(),
           "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"addressType\":\"IPv4\","
           "\"endpoints\":[{\"addresses\":[\"fe80::1\"]}]}",
           NULL, "endpoints[0].addresses[0]: Invalid value: \"fe80::1\"");
    expect(slices(),
           "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"addressType\":\"IPv4\","
           "\"endpoints\":[{\"addresses\":[]}]}",
           NULL, "endpoints[0].addresses: Required value");
    expect(slices(),
           "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"addressType\":\"IPv6\","
           "\"endpoints\":[]}",
           "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"addressType\":\"IPv4\","
           "\"endpoints\":[]}",
           "addressType: Invalid value: \"IPv6\": field is immutable");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_updates_keep_allocated_values_and_drop_old_types_fields),
        cmocka_unit_test(test_cells),
        cmocka_unit_test(test_endpoint_slice_validation),
        cmocka_unit_test(test_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
