/*
 * test_node.c - the Node kind's spec.podCIDR and spec.podCIDRs (lib/api/kinds/node.c):
 * each fills the other, they must be CIDRs, and once set they may not change, as
 * Kubernetes' ValidateNode and ValidateNodeUpdate say.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static const struct ck_kind *nodes(void)
{
    return ck_kind_lookup("", "v1", "nodes");
}

#define NODE(spec) "{\"metadata\":{\"name\":\"n1\"},\"spec\":" spec "}"

/* Defaults text (and old_text), validates, and checks for an error containing want. */
static void expect(const char *text, const char *old_text, const char *want)
{
    json_t *obj = load(text), *old = old_text ? load(old_text) : NULL;
    assert_int_equal(ck_kind_default(nodes(), obj), 0);
    if (old)
        assert_int_equal(ck_kind_default(nodes(), old), 0);
    struct ck_field_errors errs = {0};
    ck_meta_validate(nodes(), obj, old, &errs);
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

static void test_pod_cidr_fills_pod_cidrs_and_back(void **state)
{
    (void)state;
    json_t *n = load(NODE("{\"podCIDR\":\"10.244.1.0/24\"}"));
    assert_int_equal(ck_kind_default(nodes(), n), 0);
    json_t *spec = json_object_get(n, "spec");
    assert_string_equal(json_string_value(json_array_get(json_object_get(spec, "podCIDRs"), 0)),
                        "10.244.1.0/24");
    json_decref(n);
    n = load(NODE("{\"podCIDRs\":[\"10.244.2.0/24\"]}"));
    assert_int_equal(ck_kind_default(nodes(), n), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(n, "spec"), "podCIDR")),
                        "10.244.2.0/24");
    json_decref(n);
}

static void test_pod_cidrs_are_validated(void **state)
{
    (void)state;
    expect(NODE("{\"podCIDR\":\"10.244.1.0/24\"}"), NULL, NULL);
    expect(NODE("{\"podCIDR\":\"10.244.1.0\"}"), NULL,
           "spec.podCIDR: Invalid value: \"10.244.1.0\": must be a valid CIDR");
    expect(NODE("{\"podCIDRs\":[\"10.0.0.0/24\",\"fd00::/64\",\"10.1.0.0/24\"]}"), NULL,
           "spec.podCIDRs: Invalid value");
    expect(NODE("{\"podCIDR\":\"10.0.0.0/24\",\"podCIDRs\":[\"10.1.0.0/24\"]}"), NULL,
           "must match spec.podCIDR");
}

static void test_pod_cidr_is_set_once(void **state)
{
    (void)state;
    /* from "" to a value: what the node IPAM controller does */
    expect(NODE("{\"podCIDR\":\"10.244.1.0/24\",\"podCIDRs\":[\"10.244.1.0/24\"]}"), NODE("{}"),
           NULL);
    expect(NODE("{\"podCIDR\":\"10.244.1.0/24\"}"), NODE("{\"podCIDR\":\"10.244.1.0/24\"}"), NULL);
    expect(NODE("{\"podCIDR\":\"10.244.2.0/24\"}"), NODE("{\"podCIDR\":\"10.244.1.0/24\"}"),
           "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to "
           "valid");
    expect(NODE("{}"), NODE("{\"podCIDR\":\"10.244.1.0/24\"}"), "spec.podCIDRs: Forbidden");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_cidr_fills_pod_cidrs_and_back),
        cmocka_unit_test(test_pod_cidrs_are_validated),
        cmocka_unit_test(test_pod_cidr_is_set_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
