/*
 * test_aggregator.c - tests for lib/apiserver/aggregator.c's reading of a path under
 * /apis/<group>/<version> of a group/version the server does not serve itself, as
 * apiserver's RequestInfoFactory reads it for authorization: namespaced and
 * cluster-scoped resources, names, subresources, the group/version's own discovery
 * document, the built-in metrics.k8s.io that an APIService may take over, and the paths
 * that are not aggregated (the server's own groups, /api).
 * The proxy, the checks and discovery are tested by tests/e2e/test_aggregation.sh.
 */
#include "cktest.h"

#include <string.h>

#include "../../lib/apiserver/internal.h"

static void test_aggregated_paths(void **state)
{
    (void)state;
    static const struct {
        const char *path, *group, *version, *ns, *resource, *name, *sub;
    } cases[] = {
        {"/apis/wardle.example.com/v1alpha1", "wardle.example.com", "v1alpha1", "", "", "", ""},
        {"/apis/wardle.example.com/v1alpha1/flunders", "wardle.example.com", "v1alpha1", "",
         "flunders", "", ""},
        {"/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders", "wardle.example.com",
         "v1alpha1", "ns", "flunders", "", ""},
        {"/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/one/status",
         "wardle.example.com", "v1alpha1", "ns", "flunders", "one", "status"},
        {"/apis/wardle.example.com/v1alpha1/fischers/f", "wardle.example.com", "v1alpha1", "",
         "fischers", "f", ""},
        /* a namespace itself: resource namespaces, named and in that namespace */
        {"/apis/wardle.example.com/v1alpha1/namespaces/ns", "wardle.example.com", "v1alpha1", "ns",
         "namespaces", "ns", ""},
        /* the built-in metrics.k8s.io, which an APIService with a service takes over */
        {"/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p", "metrics.k8s.io", "v1beta1", "ns",
         "pods", "p", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__aggregated_request r;
        assert_int_equal(ck__aggregated_path(cases[i].path, &r), 0);
        assert_string_equal(r.group, cases[i].group);
        assert_string_equal(r.version, cases[i].version);
        assert_string_equal(r.namespace, cases[i].ns);
        assert_string_equal(r.resource, cases[i].resource);
        assert_string_equal(r.name, cases[i].name);
        assert_string_equal(r.subresource, cases[i].sub);
    }
}

static void test_paths_that_are_not_aggregated(void **state)
{
    (void)state;
    static const char *const paths[] = {
        "/apis/apps/v1/deployments", /* the server's own */
        "/apis/apps/v1",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        "/api/v1/pods",
        "/apis",
        "/apis/wardle.example.com",
        "/healthz",
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct ck__aggregated_request r;
        assert_int_equal(ck__aggregated_path(paths[i], &r), CK_ENOENT);
    }
    assert_true(ck__serves_group_version("apps", "v1"));
    assert_true(ck__serves_group_version("", "v1"));
    assert_false(ck__serves_group_version("wardle.example.com", "v1alpha1"));
    assert_true(ck__serves_group_version("metrics.k8s.io", "v1beta1"));
    assert_true(ck__replaceable_group_version("metrics.k8s.io", "v1beta1"));
    assert_false(ck__replaceable_group_version("apps", "v1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregated_paths),
        cmocka_unit_test(test_paths_that_are_not_aggregated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
