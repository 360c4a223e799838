/*
 * test_route.c - tests for lib/apiserver/route.c: every path shape of the
 * Kubernetes REST API for the kinds ckube serves, the namespaces special
 * case, and paths that must not resolve; the raw target check and
 * Kubernetes' path segment validation of names.
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
        {"/api/v1/namespaces/default/pods/web-1/exec", "Pod", "default", "web-1", "exec"},
        {"/api/v1/namespaces/default/pods/web-1/attach", "Pod", "default", "web-1", "attach"},
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
        {"/api/v1/pods/", "Pod", "", "", ""},
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
        "/api/v1/namespaces/default/nodes",           /* nodes are cluster-scoped */
        "/api/v1/namespaces/default/pods/web/nosuch", /* no such subresource */
        "/api/v1/namespaces/default/pods/web/status/x",
        "/apis/apps/v1/namespaces/ns/deployments/web/log",
        "/healthz",
        "/version",
        "/api/v1/a/b/c/d/e/f/g/h/i",
        "//api//v1/pods/", /* kube-apiserver: 404, empty segments are not collapsed */
        "/api//v1/pods",
        "/api/v1/namespaces/default//pods",
        "api/v1/pods",
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

/* The raw target check: what it accepts, and the code of what it refuses. */
static void test_raw_targets(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        int http; /* 0: accepted */
    } cases[] = {
        {"/api/v1/namespaces/default/pods/web", 0},
        {"/api/v1/pods/", 0},
        {"/", 0},
        {"/api/v1/namespaces/default/pods/a%2Db", 0}, /* "a-b" */
        {"/api/v1/pods?labelSelector=app%3Dweb&limit=5", 0},
        {"/api/v1/namespaces/default/pods/x%00y", 404},
        {"/api/v1/namespaces/default/pods/x%00", 404},
        {"/api/v1/namespaces/default/pods/x%2Fy", 404},
        {"/api/v1/namespaces/default/pods/x%2fy", 404},
        {"//api/v1/pods", 404},
        {"/api//v1/pods", 404},
        {"api/v1/pods", 404},
        {"", 404},
        {"?watch=1", 404},
        {"/api/v1/pods/%zz", 400},
        {"/api/v1/pods/%", 400},
        {"/api/v1/pods/a%4", 400},
        {"/api/v1/pods?fieldSelector=metadata.name%3Dx%00", 400},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_err err = {0};
        int r = ck__path_check(cases[i].target, &err);
        if (cases[i].http == 0 && r != 0)
            fail_msg("%s refused: %s", cases[i].target, err.msg);
        if (cases[i].http != 0 && (r == 0 || err.http_status != cases[i].http))
            fail_msg("%s: want %d, got %d", cases[i].target, cases[i].http, err.http_status);
        ck_err_release(&err);
    }
}

static void test_name_segments(void **state)
{
    (void)state;
    static const struct {
        const char *name, *message; /* NULL: valid */
    } cases[] = {
        {"web-1", NULL},
        {"a.b", NULL},
        {"...", NULL},
        {".", "Name parameter invalid: \".\": may not be '.'"},
        {"..", "Name parameter invalid: \"..\": may not be '..'"},
        {"a%b", "Name parameter invalid: \"a%b\": may not contain '%'"},
        {"a/b%", "Name parameter invalid: \"a/b%\": may not contain '/';may not contain '%'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_err err = {0};
        int r = ck__check_name_segment(cases[i].name, &err);
        if (!cases[i].message) {
            assert_int_equal(r, 0);
        } else {
            assert_int_equal(r, CK_EINVAL);
            assert_int_equal(err.http_status, 400);
            assert_string_equal(err.msg, cases[i].message);
        }
        ck_err_release(&err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_paths),
        cmocka_unit_test(test_paths_that_do_not_resolve),
        cmocka_unit_test(test_overlong_segments_are_refused),
        cmocka_unit_test(test_raw_targets),
        cmocka_unit_test(test_name_segments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
