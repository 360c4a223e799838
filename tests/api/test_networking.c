/*
 * test_networking.c - tests for the networking.k8s.io kinds of lib/api/kinds/
 * (ingressclass.c, ingress.c, networkpolicy.c): validation with Kubernetes'
 * messages, schema defaults and the table cells kubectl prints.
 */
#include "cktest.h"

#include "kindtest.h"

static json_t *ingress(const char *spec)
{
    json_t *o = json_pack("{s:{s:s,s:s}, s:o}", "metadata", "name", "web", "namespace", "default",
                          "spec", load(spec));
    return o;
}

static void test_ingressclass(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("networking.k8s.io", "ingressclasses");
    assert_false(k->namespaced);
    json_t *ok = load("{\"metadata\":{\"name\":\"nginx\"},\"spec\":{\"controller\":\"k8s.io/"
                      "ingress-nginx\",\"parameters\":{\"kind\":\"Params\",\"name\":\"p\","
                      "\"apiGroup\":\"example.com\"}}}");
    kt_default(k, ok);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(ok, "spec"), "parameters"), "scope")),
                        "Cluster");
    kt_expect(k, ok, NULL, NULL);
    kt_expect_cell(k, ok, "Controller", "k8s.io/ingress-nginx");
    kt_expect_cell(k, ok, "Parameters", "Params.example.com/p");

    json_t *changed = json_deep_copy(ok);
    json_object_set_new(json_object_get(changed, "spec"), "controller", json_string("a.io/b"));
    kt_expect(k, changed, ok, "spec.controller: Invalid value: \"a.io/b\": field is immutable");
    json_decref(changed);

    json_t *bad = load("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"parameters\":{\"kind\":\"P\","
                       "\"name\":\"p\",\"scope\":\"Namespace\"}}}");
    kt_expect(k, bad, NULL, "spec.controller: Required value");
    kt_expect(k, bad, NULL,
              "spec.parameters.namespace: Required value: `parameters.scope` is set to "
              "'Namespace'");
    json_decref(bad);
    bad = load("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"controller\":\"nodomain\"}}");
    kt_expect(k, bad, NULL, "spec.controller: Invalid value");
    json_decref(bad);
    json_object_del(json_object_get(ok, "spec"), "parameters");
    kt_expect_cell(k, ok, "Parameters", "<none>");
    json_decref(ok);
}

static void test_ingress_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("networking.k8s.io", "ingresses");
    assert_true(k->namespaced);
    assert_string_equal(k->short_names[0], "ing");
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"{\"rules\":[{\"host\":\"a.example.com\",\"http\":{\"paths\":[{\"path\":\"/\","
         "\"pathType\":\"Prefix\",\"backend\":{\"service\":{\"name\":\"web\",\"port\":{"
         "\"number\":80}}}}]}}]}",
         NULL},
        {"{}", "either `defaultBackend` or `rules` must be specified"},
        {"{\"rules\":[{\"host\":\"1.2.3.4\"}]}",
         "spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address"},
        {"{\"rules\":[{\"host\":\"*.example.com\",\"http\":{\"paths\":[{\"path\":\"/a\","
         "\"backend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}]}}]}",
         "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"},
        {"{\"rules\":[{\"http\":{\"paths\":[{\"path\":\"a\",\"pathType\":\"Exact\","
         "\"backend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}]}}]}",
         "spec.rules[0].http.paths[0].path: Invalid value: \"a\": must be an absolute path"},
        {"{\"rules\":[{\"http\":{\"paths\":[{\"path\":\"/a//b\",\"pathType\":\"Prefix\","
         "\"backend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}]}}]}",
         "must not contain '//'"},
        {"{\"rules\":[{\"http\":{\"paths\":[{\"path\":\"/a\",\"pathType\":\"Regex\","
         "\"backend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}]}}]}",
         "spec.rules[0].http.paths[0].pathType: Unsupported value: \"Regex\": supported values: "
         "\"Exact\", \"ImplementationSpecific\", \"Prefix\""},
        {"{\"defaultBackend\":{\"service\":{\"name\":\"web\",\"port\":{\"name\":\"http\","
         "\"number\":80}}}}",
         "spec.defaultBackend: Invalid value: \"\": cannot set both port name & port number"},
        {"{\"defaultBackend\":{\"service\":{\"name\":\"web\",\"port\":{}}}}",
         "spec.defaultBackend: Required value: port name or number is required"},
        {"{\"defaultBackend\":{}}",
         "spec.defaultBackend: Invalid value: \"\": resource or service backend is required"},
        {"{\"defaultBackend\":{\"service\":{\"name\":\"1web\",\"port\":{\"number\":80}}}}",
         "spec.defaultBackend.service.name: Invalid value: \"1web\": a DNS-1035 label"},
        {"{\"defaultBackend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":70000}}}}",
         "spec.defaultBackend.service.port.number: Invalid value: 70000: must be between 1 and "
         "65535, inclusive"},
        {"{\"defaultBackend\":{\"resource\":{\"kind\":\"Bucket\",\"name\":\"a/b\"}}}",
         "spec.defaultBackend.resource.name: Invalid value: \"a/b\": may not contain '/'"},
        {"{\"defaultBackend\":{\"resource\":{\"kind\":\"Bucket\",\"name\":\"b\"},\"service\":{"
         "\"name\":\"web\",\"port\":{\"number\":80}}}}",
         "cannot set both resource and service backends"},
        {"{\"defaultBackend\":{\"resource\":{\"kind\":\"Bucket\",\"name\":\"b\"}},\"tls\":[{"
         "\"hosts\":[\"Bad_Host\"],\"secretName\":\"tls\"}]}",
         "spec.tls[0].hosts[0]: Invalid value: \"Bad_Host\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = ingress(cases[i].spec);
        kt_expect(k, o, NULL, cases[i].want);
        json_decref(o);
    }
    json_t *o = ingress("{\"ingressClassName\":\"nginx\",\"defaultBackend\":{\"service\":{"
                        "\"name\":\"web\",\"port\":{\"number\":80}}}}");
    json_object_set_new(json_object_get(o, "metadata"), "annotations",
                        json_pack("{s:s}", "kubernetes.io/ingress.class", "other"));
    kt_expect(k, o, NULL,
              "annotations.kubernetes.io/ingress.class: Invalid value: \"other\": must match "
              "`ingressClassName` when both are specified");
    json_decref(o);
}

static void test_ingress_cells(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("networking.k8s.io", "ingresses");
    json_t *o = ingress("{\"rules\":[{\"host\":\"a.io\"},{\"host\":\"b.io\"}],\"tls\":[{}]}");
    kt_expect_cell(k, o, "Class", "<none>");
    kt_expect_cell(k, o, "Hosts", "a.io,b.io");
    kt_expect_cell(k, o, "Ports", "80, 443");
    kt_expect_cell(k, o, "Address", "");
    json_object_set_new(o, "status",
                        load("{\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.0.0.1\"},{\"hostname\":"
                             "\"lb.example.com\"}]}}"));
    kt_expect_cell(k, o, "Address", "10.0.0.1,lb.example.com");
    json_decref(o);
    o = ingress("{\"ingressClassName\":\"nginx\",\"rules\":[{\"host\":\"a.io\"},{},{\"host\":"
                "\"c.io\"},{\"host\":\"d.io\"},{\"host\":\"e.io\"}]}");
    kt_expect_cell(k, o, "Class", "nginx");
    kt_expect_cell(k, o, "Hosts", "a.io,c.io,d.io + 2 more...");
    kt_expect_cell(k, o, "Ports", "80");
    json_decref(o);
    o = ingress("{\"rules\":[{}]}");
    kt_expect_cell(k, o, "Hosts", "*");
    json_decref(o);
}

static json_t *policy(const char *spec)
{
    return json_pack("{s:{s:s,s:s}, s:o}", "metadata", "name", "p", "namespace", "default", "spec",
                     load(spec));
}

static void test_networkpolicy_defaults(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("networking.k8s.io", "networkpolicies");
    assert_string_equal(k->short_names[0], "netpol");
    json_t *o = policy("{\"podSelector\":{},\"egress\":[{\"ports\":[{\"port\":53}]}]}");
    kt_default(k, o);
    json_t *spec = json_object_get(o, "spec");
    json_t *types = json_object_get(spec, "policyTypes");
    assert_int_equal(json_array_size(types), 2);
    assert_string_equal(json_string_value(json_array_get(types, 0)), "Ingress");
    assert_string_equal(json_string_value(json_array_get(types, 1)), "Egress");
    json_t *port = json_array_get(
        json_object_get(json_array_get(json_object_get(spec, "egress"), 0), "ports"), 0);
    assert_string_equal(json_string_value(json_object_get(port, "protocol")), "TCP");
    kt_expect(k, o, NULL, NULL);
    kt_expect_cell(k, o, "Pod-Selector", "<none>");
    json_decref(o);
    o = policy("{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}}}");
    kt_default(k, o);
    types = json_object_get(json_object_get(o, "spec"), "policyTypes");
    assert_int_equal(json_array_size(types), 1);
    kt_expect_cell(k, o, "Pod-Selector", "app=web");
    json_decref(o);
}

static void test_networkpolicy_validation(void **state)
{
    (void)state;
    const struct ck_kind *k = kt_kind("networking.k8s.io", "networkpolicies");
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\","
         "\"except\":[\"10.1.0.0/16\"]}}],\"ports\":[{\"port\":8000,\"endPort\":9000}]}]}",
         NULL},
        {"{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":9000,\"endPort\":8000}]}]}",
         "spec.ingress[0].ports[0].endPort: Invalid value: 8000: must be greater than or equal to "
         "`port`"},
        {"{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":\"http\",\"endPort\":80}]}]}",
         "spec.ingress[0].ports[0].endPort: Invalid value: 80: may not be specified when `port` "
         "is non-numeric"},
        {"{\"podSelector\":{},\"egress\":[{\"ports\":[{\"endPort\":80}]}]}",
         "may not be specified when `port` is not specified"},
        {"{\"podSelector\":{},\"egress\":[{\"ports\":[{\"port\":0}]}]}",
         "spec.egress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"},
        {"{\"podSelector\":{},\"egress\":[{\"ports\":[{\"protocol\":\"ICMP\"}]}]}",
         "spec.egress[0].ports[0].protocol: Unsupported value: \"ICMP\""},
        {"{\"podSelector\":{},\"egress\":[{\"to\":[{}]}]}",
         "spec.egress[0].to[0]: Required value: must specify a peer"},
        {"{\"podSelector\":{},\"egress\":[{\"to\":[{\"podSelector\":{},\"ipBlock\":{\"cidr\":"
         "\"10.0.0.0/8\"}}]}]}",
         "spec.egress[0].to[0]: Forbidden: may not specify both ipBlock and another peer"},
        {"{\"podSelector\":{},\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0/8\"}}]}]}",
         "spec.egress[0].to[0].ipBlock.cidr: Invalid value: \"10.0.0/8\": must be a valid CIDR"},
        {"{\"podSelector\":{},\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/16\","
         "\"except\":[\"10.1.0.0/24\"]}}]}]}",
         "spec.egress[0].to[0].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict "
         "subset of `cidr`"},
        {"{\"podSelector\":{},\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/16\","
         "\"except\":[\"10.0.0.0/16\"]}}]}]}",
         "must be a strict subset of `cidr`"},
        {"{\"podSelector\":{},\"policyTypes\":[\"Ingress\",\"Sideways\"]}",
         "spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", "
         "\"Egress\""},
        {"{\"podSelector\":{},\"policyTypes\":[\"Ingress\",\"Egress\",\"Ingress\"]}",
         "may not specify more than two policyTypes"},
        {"{\"podSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Near\"}]}}",
         "spec.podSelector: Invalid value"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = policy(cases[i].spec);
        kt_expect(k, o, NULL, cases[i].want);
        json_decref(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ingressclass),
        cmocka_unit_test(test_ingress_validation),
        cmocka_unit_test(test_ingress_cells),
        cmocka_unit_test(test_networkpolicy_defaults),
        cmocka_unit_test(test_networkpolicy_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
