/*
 * test_kinds.c - tests for lib/api/kinds.c: the registry serves the kinds of
 * the contract's resource table, lookups by group/version/resource, names
 * in messages, and field selector labels and values per kind.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/api.h"

static void test_registry_matches_the_resource_table(void **state)
{
    (void)state;
    static const struct {
        const char *group, *resource, *kind, *short_name;
        bool namespaced;
    } want[] = {
        {"", "namespaces", "Namespace", "ns", false},
        {"", "pods", "Pod", "po", true},
        {"", "nodes", "Node", "no", false},
        {"", "events", "Event", "ev", true},
        {"apps", "deployments", "Deployment", "deploy", true},
        {"apps", "replicasets", "ReplicaSet", "rs", true},
        {"example.ckube.io", "frobbers", "Frobber", NULL, true},
    };
    size_t n;
    ck_kinds(&n);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        const struct ck_kind *k = ck_kind_lookup(want[i].group, "v1", want[i].resource);
        assert_non_null(k);
        assert_string_equal(k->kind, want[i].kind);
        if (want[i].short_name)
            assert_string_equal(k->short_names[0], want[i].short_name);
        else
            assert_null(k->short_names);
        assert_int_equal(k->namespaced, want[i].namespaced);
        assert_int_equal(k->n_columns > 0, true);
    }
    assert_null(ck_kind_lookup("apps", "v1", "pods"));
    assert_null(ck_kind_lookup("", "v2", "pods"));
    assert_null(ck_kind_lookup("", "v1", "services"));
}

static void test_names_in_messages(void **state)
{
    (void)state;
    char buf[64];
    const struct ck_kind *d = ck_kind_lookup("apps", "v1", "deployments");
    const struct ck_kind *p = ck_kind_lookup("", "v1", "pods");
    assert_string_equal(ck_kind_qualified_resource(d, buf, sizeof(buf)), "deployments.apps");
    assert_string_equal(ck_kind_qualified_resource(p, buf, sizeof(buf)), "pods");
    assert_string_equal(ck_kind_api_version(d, buf, sizeof(buf)), "apps/v1");
    assert_string_equal(ck_kind_api_version(p, buf, sizeof(buf)), "v1");
    assert_true(d->has_generation);
    assert_false(p->has_generation);
}

static bool supports(const struct ck_kind *k, const char *label)
{
    for (const char *const *l = ck_kind_field_label_names(k); *l; l++)
        if (strcmp(*l, label) == 0)
            return true;
    return false;
}

static void test_field_labels_per_kind(void **state)
{
    (void)state;
    const struct ck_kind *pod = ck_kind_lookup("", "v1", "pods");
    const struct ck_kind *event = ck_kind_lookup("", "v1", "events");
    const struct ck_kind *rs = ck_kind_lookup("apps", "v1", "replicasets");
    const struct ck_kind *deploy = ck_kind_lookup("apps", "v1", "deployments");
    assert_true(supports(pod, "metadata.name"));
    assert_true(supports(pod, "spec.nodeName"));
    assert_true(supports(pod, "status.phase"));
    assert_false(supports(pod, "spec.foo"));
    assert_true(supports(event, "involvedObject.uid"));
    assert_true(supports(event, "source"));
    assert_true(supports(rs, "status.replicas"));
    assert_true(supports(deploy, "metadata.namespace"));
    assert_false(supports(deploy, "status.replicas"));
}

static void test_field_values_render_like_kubernetes(void **state)
{
    (void)state;
    json_error_t jerr;
    json_t *pod = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
                             "\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true},"
                             "\"status\":{\"phase\":\"Running\"}}",
                             0, &jerr);
    json_t *event = json_loads("{\"source\":{\"component\":\"kubelet\"}}", 0, &jerr);
    json_t *rs = json_loads("{\"status\":{\"replicas\":3}}", 0, &jerr);
    json_t *empty = json_object();
    char buf[32];
    const struct ck_kind *pk = ck_kind_lookup("", "v1", "pods");
    const struct ck_kind *ek = ck_kind_lookup("", "v1", "events");
    const struct ck_kind *rk = ck_kind_lookup("apps", "v1", "replicasets");
    const struct ck_kind *nk = ck_kind_lookup("", "v1", "nodes");
    assert_string_equal(ck_kind_field_value(pk, "metadata.namespace", pod, buf, 32), "ns");
    assert_string_equal(ck_kind_field_value(pk, "spec.nodeName", pod, buf, 32), "n1");
    assert_string_equal(ck_kind_field_value(pk, "spec.hostNetwork", pod, buf, 32), "true");
    assert_string_equal(ck_kind_field_value(pk, "spec.hostNetwork", empty, buf, 32), "false");
    assert_null(ck_kind_field_value(pk, "status.podIP", pod, buf, 32));
    assert_string_equal(ck_kind_field_value(ek, "source", event, buf, 32), "kubelet");
    assert_string_equal(ck_kind_field_value(rk, "status.replicas", rs, buf, 32), "3");
    assert_string_equal(ck_kind_field_value(rk, "status.replicas", empty, buf, 32), "0");
    assert_string_equal(ck_kind_field_value(nk, "spec.unschedulable", empty, buf, 32), "false");

    /* through a parsed selector, as the API server will use it */
    struct ck_field_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_field_selector_parse("spec.nodeName=n1,status.phase!=Failed", &s, &err), 0);
    assert_int_equal(ck_field_selector_check_fields(s, ck_kind_field_label_names(pk), &err), 0);
    assert_int_equal(ck_field_selector_check_fields(s, ck_kind_field_label_names(nk), &err),
                     CK_EINVAL);
    assert_string_equal(err.msg, "field label not supported: spec.nodeName");
    ck_field_selector_free(s);
    json_decref(pod);
    json_decref(event);
    json_decref(rs);
    json_decref(empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_matches_the_resource_table),
        cmocka_unit_test(test_names_in_messages),
        cmocka_unit_test(test_field_labels_per_kind),
        cmocka_unit_test(test_field_values_render_like_kubernetes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
