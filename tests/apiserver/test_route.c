/*
 * test_route.c - tests for lib/apiserver/route.c: every path shape of the
 * Kubernetes REST API for the kinds ckube serves, the namespaces special
 * case, and paths that must not resolve.
 */
#include "cktest.h"

#include <string.h>

#include "../../lib/apiserver/internal.h"

static void test_resource_paths(void **state)
{
    (void)state;
    static const struct {
        const char *path, *kind, *ns, *name, *sub;
    } cases[] = {
        {"/api/v1/pods", "Pod", "", "", ""},
        {"/api/v1/namespaces/default/pods", "Pod", "default", "", ""},
        {"/api/v1/namespaces/default/pods/web-1", "Pod", "default", "web-1", ""},
        {"/api/v1/namespaces/default/pods/web-1/status", "Pod", "default", "web-1", "status"},
        {"/api/v1/namespaces/default/pods/web-1/log", "Pod", "default", "web-1", "log"},
        {"/api/v1/namespaces/default/pods/web-1/binding", "Pod", "default", "web-1", "binding"},
        {"/api/v1/nodes", "Node", "", "", ""},
        {"/api/v1/nodes/n1/status", "Node", "", "n1", "status"},
        {"/api/v1/namespaces", "Namespace", "", "", ""},
        {"/api/v1/namespaces/kube-system", "Namespace", "", "kube-system", ""},
        {"/api/v1/namespaces/kube-system/status", "Namespace", "", "kube-system", "status"},
        {"/api/v1/namespaces/x/finalize", "Namespace", "", "x", "finalize"},
        {"/api/v1/namespaces/status/pods", "Pod", "status", "", ""},
        {"/api/v1/namespaces/default/events", "Event", "default", "", ""},
        {"/apis/apps/v1/deployments", "Deployment", "", "", ""},
        {"/apis/apps/v1/namespaces/ns1/deployments/web/scale", "Deployment", "ns1", "web", "scale"},
        {"/apis/apps/v1/namespaces/ns1/replicasets/web-abc", "ReplicaSet", "ns1", "web-abc", ""},
        {"//api//v1/pods/", "Pod", "", "", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__target t;
        if (ck__route(cases[i].path, &t) != 0)
            fail_msg("%s did not route", cases[i].path);
        if (strcmp(t.kind->kind, cases[i].kind) || strcmp(t.namespace, cases[i].ns) ||
            strcmp(t.name, cases[i].name) || strcmp(t.subresource, cases[i].sub))
            fail_msg("%s: got %s ns=%s name=%s sub=%s", cases[i].path, t.kind->kind, t.namespace,
                     t.name, t.subresource);
    }
}

static void test_paths_that_do_not_resolve(void **state)
{
    (void)state;
    static const char *const paths[] = {
        "/",
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps",
        "/apis/apps/v1",
        "/api/v2/pods",
        "/api/v1/widgets",
        "/apis/apps/v1/pods",
        "/api/v1/namespaces/default/nodes",         /* nodes are cluster-scoped */
        "/api/v1/namespaces/default/pods/web/exec", /* not served */
        "/api/v1/namespaces/default/pods/web/status/x",
        "/apis/apps/v1/namespaces/ns/deployments/web/log",
        "/healthz",
        "/version",
        "/api/v1/a/b/c/d/e/f/g/h/i",
    };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct ck__target t;
        if (ck__route(paths[i], &t) != CK_ENOENT)
            fail_msg("%s routed", paths[i]);
    }
}

static void test_overlong_segments_are_refused(void **state)
{
    (void)state;
    char path[600] = "/api/v1/namespaces/default/pods/";
    size_t len = strlen(path);
    memset(path + len, 'a', 300);
    path[len + 300] = '\0';
    struct ck__target t;
    assert_int_equal(ck__route(path, &t), CK_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_paths),
        cmocka_unit_test(test_paths_that_do_not_resolve),
        cmocka_unit_test(test_overlong_segments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
