/*
 * test_rbac.c - the RBAC authorizer: rule matching, bindings and subjects,
 * the denial messages, aggregation, the bootstrap policy and the escalation
 * check, on table cases. The cases restate the facts of Kubernetes'
 * plugin/pkg/auth/authorizer/rbac/rbac_test.go and
 * pkg/registry/rbac/validation's policy comparator and escalation tests.
 */
#include "cktest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ckube/auth.h>

#include "ckube/internal/util.h"

/* ---- builders -------------------------------------------------------------- */

/* A JSON array from a comma-separated list ("" is one empty string, NULL none). */
static json_t *list(const char *csv)
{
    json_t *a = json_array();
    if (!csv)
        return a;
    const char *p = csv;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        json_array_append_new(a, json_stringn(p, l));
        if (!c)
            return a;
        p = c + 1;
    }
}

/* newRule(verbs, groups, resources, urls) as in Kubernetes' tests, plus resource names. */
static json_t *rule(const char *verbs, const char *groups, const char *resources, const char *urls)
{
    json_t *r = json_object();
    json_object_set_new(r, "verbs", list(verbs));
    if (groups)
        json_object_set_new(r, "apiGroups", list(groups));
    if (resources)
        json_object_set_new(r, "resources", list(resources));
    if (urls)
        json_object_set_new(r, "nonResourceURLs", list(urls));
    return r;
}

static json_t *named(json_t *r, const char *names)
{
    json_object_set_new(r, "resourceNames", list(names));
    return r;
}

static json_t *role_obj(const char *kind, const char *ns, const char *name, json_t *rules)
{
    json_t *o =
        json_pack("{s:s,s:{s:s},s:o}", "kind", kind, "metadata", "name", name, "rules", rules);
    if (ns)
        json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
    return o;
}

/* subjects: "User:alice,Group:devs,ServiceAccount:ns/name" */
static json_t *binding(const char *ns, const char *name, const char *ref_kind, const char *ref,
                       const char *subjects)
{
    json_t *subs = json_array();
    json_t *names = list(subjects);
    size_t i;
    json_t *s;
    json_array_foreach(names, i, s)
    {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", json_string_value(s));
        char *colon = strchr(buf, ':');
        *colon = '\0';
        json_t *sub = json_pack("{s:s}", "kind", buf);
        char *slash = strchr(colon + 1, '/');
        if (strcmp(buf, "ServiceAccount") == 0 && slash) {
            *slash = '\0';
            json_object_set_new(sub, "namespace", json_string(colon + 1));
            json_object_set_new(sub, "name", json_string(slash + 1));
        } else {
            json_object_set_new(sub, "name", json_string(colon + 1));
        }
        json_array_append_new(subs, sub);
    }
    json_decref(names);
    json_t *o =
        json_pack("{s:{s:s},s:{s:s,s:s,s:s},s:o}", "metadata", "name", name, "roleRef", "apiGroup",
                  "rbac.authorization.k8s.io", "kind", ref_kind, "name", ref, "subjects", subs);
    if (ns)
        json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
    return o;
}

static struct ck_auth_user *user(const char *name, const char *groups)
{
    struct ck_auth_user *u = ck_auth_user_new(name, "");
    json_t *g = list(groups);
    size_t i;
    json_t *s;
    json_array_foreach(g, i, s)
        assert_int_equal(ck_auth_user_add_group(u, json_string_value(s)), 0);
    json_decref(g);
    return u;
}

static struct ck_rbac_policy *policy(json_t *roles, json_t *croles, json_t *rbs, json_t *crbs)
{
    struct ck_rbac_policy *p = NULL;
    assert_int_equal(ck_rbac_policy_new(roles, croles, rbs, crbs, &p, NULL), 0);
    json_decref(roles);
    json_decref(croles);
    json_decref(rbs);
    json_decref(crbs);
    return p;
}

/* One decision: "user|groups|verb|group|resource|subresource|name|namespace" or a path. */
struct req_case {
    const char *user, *groups, *verb, *group, *resource, *sub, *name, *ns, *path;
};

static bool allowed(const struct ck_rbac_policy *p, const struct req_case *c)
{
    struct ck_auth_user *u = user(c->user, c->groups);
    struct ck_rbac_request q = {
        .user = u,
        .verb = c->verb,
        .is_resource_request = c->path == NULL,
        .api_group = c->group,
        .resource = c->resource,
        .subresource = c->sub,
        .name = c->name,
        .namespace = c->ns,
        .path = c->path,
    };
    bool ok = ck_rbac_authorize(p, &q, NULL, 0) == CK_RBAC_ALLOW;
    ck_auth_user_free(u);
    return ok;
}

static void check(const struct ck_rbac_policy *p, const struct req_case *pass, size_t npass,
                  const struct req_case *fail, size_t nfail)
{
    for (size_t i = 0; i < npass; i++) {
        if (!allowed(p, &pass[i]))
            fail_msg("should pass: %s %s %s/%s", pass[i].user, pass[i].verb,
                     pass[i].resource ? pass[i].resource : pass[i].path,
                     pass[i].sub ? pass[i].sub : "");
    }
    for (size_t i = 0; i < nfail; i++) {
        if (allowed(p, &fail[i]))
            fail_msg("should fail: %s %s %s/%s", fail[i].user, fail[i].verb,
                     fail[i].resource ? fail[i].resource : fail[i].path,
                     fail[i].sub ? fail[i].sub : "");
    }
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- rule matching --------------------------------------------------------- */

static void test_rolebinding_to_clusterrole_applies_in_its_namespace_only(void **state)
{
    (void)state;
    struct ck_rbac_policy *p =
        policy(NULL,
               json_pack("[o]", role_obj("ClusterRole", NULL, "admin",
                                         json_pack("[o]", rule("*", "*", "*", NULL)))),
               json_pack("[o]", binding("ns1", "admin", "ClusterRole", "admin",
                                        "User:admin,Group:admins")),
               NULL);
    static const struct req_case pass[] = {
        {"admin", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
        {"admin", NULL, "watch", "", "pods", NULL, NULL, "ns1", NULL},
        {"someone", "admins", "get", "", "foobar", NULL, NULL, "ns1", NULL},
        {"admin", NULL, "get", "apps", "deployments", "scale", "web", "ns1", NULL},
    };
    static const struct req_case fail[] = {
        {"admin", NULL, "get", "", "pods", NULL, NULL, "ns2", NULL},
        {"admin", NULL, "get", "", "nodes", NULL, NULL, NULL, NULL},
        {"someone", "admins", "get", "", "foobar", NULL, NULL, "ns2", NULL},
        {"someone", "others", "get", "", "pods", NULL, NULL, "ns1", NULL},
        /* a namespaced grant never covers a non-resource URL */
        {"admin", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis"},
    };
    check(p, pass, N(pass), fail, N(fail));
    ck_rbac_policy_unref(p);
}

static void test_non_resource_urls_exact_prefix_and_star(void **state)
{
    (void)state;
    json_t *crs = json_pack(
        "[o,o,o,o]",
        role_obj("ClusterRole", NULL, "getter", json_pack("[o]", rule("get", NULL, NULL, "/apis"))),
        role_obj("ClusterRole", NULL, "any-verb", json_pack("[o]", rule("*", NULL, NULL, "/apis"))),
        role_obj("ClusterRole", NULL, "prefix",
                 json_pack("[o]", rule("get", NULL, NULL, "/apis/*"))),
        role_obj("ClusterRole", NULL, "all", json_pack("[o]", rule("get", NULL, NULL, "*"))));
    json_t *crbs =
        json_pack("[o,o,o,o]", binding(NULL, "b1", "ClusterRole", "getter", "User:foo,Group:bar"),
                  binding(NULL, "b2", "ClusterRole", "any-verb", "User:admin"),
                  binding(NULL, "b3", "ClusterRole", "prefix", "User:prefixed"),
                  binding(NULL, "b4", "ClusterRole", "all", "User:everything"));
    struct ck_rbac_policy *p = policy(NULL, crs, NULL, crbs);
    static const struct req_case pass[] = {
        {"foo", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"baz", "bar", "get", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"admin", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"admin", NULL, "watch", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"prefixed", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis/v1"},
        {"prefixed", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis/v1/foobar"},
        {"everything", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/healthz"},
    };
    static const struct req_case fail[] = {
        {"foo", NULL, "watch", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"baz", "bar", "watch", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"foo", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis/v1"},
        {"admin", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis/v1"},
        {"prefixed", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/apis"},
        {"prefixed", NULL, "get", NULL, NULL, NULL, NULL, NULL, "/api/v1"},
        /* URL rules never grant resources */
        {"everything", NULL, "get", "", "pods", NULL, NULL, NULL, NULL},
    };
    check(p, pass, N(pass), fail, N(fail));
    ck_rbac_policy_unref(p);
}

static void test_subresources_need_their_own_rule(void **state)
{
    (void)state;
    struct ck_rbac_policy *p =
        policy(NULL,
               json_pack("[o,o]",
                         role_obj("ClusterRole", NULL, "pods",
                                  json_pack("[o]", rule("*", "*", "pods", NULL))),
                         role_obj("ClusterRole", NULL, "subs",
                                  json_pack("[o,o]", rule("*", "*", "pods/status", NULL),
                                            rule("*", "*", "*/scale", NULL)))),
               json_pack("[o,o]", binding("ns1", "a", "ClusterRole", "pods", "User:podder"),
                         binding("ns1", "b", "ClusterRole", "subs", "User:subber")),
               NULL);
    static const struct req_case pass[] = {
        {"podder", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
        {"subber", NULL, "get", "", "pods", "status", NULL, "ns1", NULL},
        {"subber", NULL, "update", "apps", "deployments", "scale", NULL, "ns1", NULL},
        {"subber", NULL, "get", "", "anything", "scale", NULL, "ns1", NULL},
    };
    static const struct req_case fail[] = {
        {"podder", NULL, "get", "", "pods", "status", NULL, "ns1", NULL},
        {"subber", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
        {"subber", NULL, "get", "", "pods", "log", NULL, "ns1", NULL},
        {"subber", NULL, "get", "", "scale", NULL, NULL, "ns1", NULL},
        {"subber", NULL, "get", "", "pods", "statusx", NULL, "ns1", NULL},
    };
    check(p, pass, N(pass), fail, N(fail));
    ck_rbac_policy_unref(p);
}

static void test_verbs_groups_and_resource_names(void **state)
{
    (void)state;
    json_t *rules = json_pack("[o,o,o]", rule("get,list", "", "pods", NULL),
                              named(rule("get,update", "", "configmaps", NULL), "cm1,cm2"),
                              rule("create", "apps,batch", "deployments,jobs", NULL));
    struct ck_rbac_policy *p =
        policy(json_pack("[o]", role_obj("Role", "prod", "r", rules)), NULL,
               json_pack("[o]", binding("prod", "rb", "Role", "r", "User:jane")), NULL);
    static const struct req_case pass[] = {
        {"jane", NULL, "get", "", "pods", NULL, "p1", "prod", NULL},
        {"jane", NULL, "list", "", "pods", NULL, NULL, "prod", NULL},
        {"jane", NULL, "get", "", "configmaps", NULL, "cm2", "prod", NULL},
        {"jane", NULL, "create", "batch", "jobs", NULL, NULL, "prod", NULL},
        {"jane", NULL, "create", "apps", "jobs", NULL, NULL, "prod", NULL},
    };
    static const struct req_case fail[] = {
        {"jane", NULL, "watch", "", "pods", NULL, NULL, "prod", NULL},
        {"jane", NULL, "get", "apps", "pods", NULL, NULL, "prod", NULL},
        {"jane", NULL, "get", "", "configmaps", NULL, "cm3", "prod", NULL},
        /* a list has no name, so resourceNames never allow it */
        {"jane", NULL, "list", "", "configmaps", NULL, NULL, "prod", NULL},
        {"jane", NULL, "create", "", "deployments", NULL, NULL, "prod", NULL},
        {"jane", NULL, "get", "", "pods", NULL, NULL, "dev", NULL},
        {"Jane", NULL, "get", "", "pods", NULL, NULL, "prod", NULL},
    };
    check(p, pass, N(pass), fail, N(fail));
    ck_rbac_policy_unref(p);
}

static void test_service_account_subjects(void **state)
{
    (void)state;
    json_t *crs = json_pack("[o]", role_obj("ClusterRole", NULL, "view",
                                            json_pack("[o]", rule("get", "", "pods", NULL))));
    /* the first names its namespace; the second is the binding's own namespace's */
    json_t *rbs =
        json_pack("[o,o]", binding("ns1", "a", "ClusterRole", "view", "ServiceAccount:other/robot"),
                  binding("ns1", "b", "ClusterRole", "view", "ServiceAccount:local"));
    struct ck_rbac_policy *p = policy(NULL, crs, rbs, NULL);
    static const struct req_case pass[] = {
        {"system:serviceaccount:other:robot", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
        {"system:serviceaccount:ns1:local", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
    };
    static const struct req_case fail[] = {
        {"system:serviceaccount:ns1:robot", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
        {"system:serviceaccount:other:local", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
        {"robot", NULL, "get", "", "pods", NULL, NULL, "ns1", NULL},
    };
    check(p, pass, N(pass), fail, N(fail));
    ck_rbac_policy_unref(p);
}

/* ---- messages -------------------------------------------------------------- */

static void test_forbidden_messages_are_kubernetes_words(void **state)
{
    (void)state;
    struct ck_auth_user *jane = user("jane", NULL);
    char buf[512];
    struct ck_rbac_request q = {.user = jane,
                                .verb = "list",
                                .is_resource_request = true,
                                .api_group = "",
                                .resource = "pods",
                                .namespace = "prod"};
    assert_string_equal(
        ck_rbac_forbidden_message(&q, buf, sizeof(buf)),
        "User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"prod\"");
    assert_string_equal(ck_rbac_status_message(&q, "", buf, sizeof(buf)),
                        "pods is forbidden: User \"jane\" cannot list resource \"pods\" in API "
                        "group \"\" in the namespace \"prod\"");
    struct ck_rbac_request c = {.user = jane,
                                .verb = "get",
                                .is_resource_request = true,
                                .api_group = "",
                                .resource = "nodes",
                                .name = "n1"};
    assert_string_equal(
        ck_rbac_forbidden_message(&c, buf, sizeof(buf)),
        "User \"jane\" cannot get resource \"nodes\" in API group \"\" at the cluster scope");
    assert_string_equal(ck_rbac_status_message(&c, NULL, buf, sizeof(buf)),
                        "nodes \"n1\" is forbidden: User \"jane\" cannot get resource \"nodes\" "
                        "in API group \"\" at the cluster scope");
    struct ck_rbac_request s = {.user = jane,
                                .verb = "update",
                                .is_resource_request = true,
                                .api_group = "apps",
                                .resource = "deployments",
                                .subresource = "scale",
                                .name = "web",
                                .namespace = "prod"};
    assert_string_equal(ck_rbac_status_message(&s, "RBAC: x", buf, sizeof(buf)),
                        "deployments.apps \"web\" is forbidden: User \"jane\" cannot update "
                        "resource \"deployments/scale\" in API group \"apps\" in the namespace "
                        "\"prod\": RBAC: x");
    /* the 403 as a ck_err the server turns into a Status */
    struct ck_err err = {0};
    assert_int_equal(ck_rbac_forbidden(&err, &s, ""), CK_EPERM);
    assert_int_equal(err.http_status, 403);
    assert_string_equal(err.reason, "Forbidden");
    assert_string_equal(err.name, "web");
    assert_string_equal(err.group, "apps");
    assert_string_equal(err.kind, "deployments");
    assert_non_null(strstr(ck_err_message(&err), "deployments.apps \"web\" is forbidden: User"));
    ck_err_release(&err);
    struct ck_rbac_request n = {.user = jane, .verb = "get", .path = "/metrics"};
    assert_string_equal(ck_rbac_forbidden_message(&n, buf, sizeof(buf)),
                        "User \"jane\" cannot get path \"/metrics\"");
    assert_string_equal(ck_rbac_status_message(&n, "", buf, sizeof(buf)),
                        "forbidden: User \"jane\" cannot get path \"/metrics\"");
    ck_auth_user_free(jane);
}

static void test_binding_to_missing_role_is_the_reason(void **state)
{
    (void)state;
    struct ck_rbac_policy *p =
        policy(NULL, NULL,
               json_pack("[o,o]", binding("ns1", "a", "ClusterRole", "ghost", "User:jane"),
                         binding("ns1", "b", "Role", "phantom", "Group:devs")),
               NULL);
    struct ck_auth_user *jane = user("jane", "devs");
    struct ck_rbac_request q = {.user = jane,
                                .verb = "get",
                                .is_resource_request = true,
                                .api_group = "",
                                .resource = "pods",
                                .namespace = "ns1"};
    char reason[256];
    assert_int_equal(ck_rbac_authorize(p, &q, reason, sizeof(reason)), CK_RBAC_NO_OPINION);
    assert_string_equal(reason, "RBAC: [clusterrole.rbac.authorization.k8s.io \"ghost\" not "
                                "found, role.rbac.authorization.k8s.io \"phantom\" not found]");
    q.namespace = "ns2"; /* the bindings do not apply there: no reason */
    assert_int_equal(ck_rbac_authorize(p, &q, reason, sizeof(reason)), CK_RBAC_NO_OPINION);
    assert_string_equal(reason, "");
    ck_auth_user_free(jane);
    ck_rbac_policy_unref(p);
}

/* ---- aggregation and the bootstrap policy ---------------------------------- */

static void test_aggregation_unions_matching_roles_in_name_order(void **state)
{
    (void)state;
    json_t *agg = json_pack("{s:{s:s},s:{s:[{s:{s:s}}]}}", "metadata", "name", "monitoring",
                            "aggregationRule", "clusterRoleSelectors", "matchLabels",
                            "rbac.example.com/aggregate-to-monitoring", "true");
    json_t *b =
        role_obj("ClusterRole", NULL, "b",
                 json_pack("[o,o]", rule("get", "", "pods", NULL), rule("list", "", "pods", NULL)));
    json_t *a = role_obj("ClusterRole", NULL, "a", json_pack("[o]", rule("get", "", "pods", NULL)));
    json_t *c =
        role_obj("ClusterRole", NULL, "c", json_pack("[o]", rule("get", "", "secrets", NULL)));
    json_object_set_new(json_object_get(a, "metadata"), "labels",
                        json_pack("{s:s}", "rbac.example.com/aggregate-to-monitoring", "true"));
    json_object_set_new(json_object_get(b, "metadata"), "labels",
                        json_pack("{s:s}", "rbac.example.com/aggregate-to-monitoring", "true"));
    json_t *all = json_pack("[o,o,o,O]", b, a, c, agg);
    json_t *rules = ck_rbac_aggregate(agg, all);
    json_t *want =
        json_pack("[o,o]", rule("get", "", "pods", NULL), rule("list", "", "pods", NULL));
    assert_true(json_equal(rules, want));
    json_decref(want);
    json_decref(rules);
    assert_null(ck_rbac_aggregate(c, all));
    json_decref(agg);
    json_decref(all);
}

static void test_bootstrap_policy(void **state)
{
    (void)state;
    json_t *crs = NULL, *crbs = NULL;
    assert_int_equal(ck_rbac_bootstrap(&crs, &crbs, NULL), 0);
    assert_true(json_array_size(crs) >= 10);
    /* system:kubelet-api-admin as Kubernetes has it, bound by no bootstrap binding (an
       installer binds the API server's kubelet client to it): bound here */
    const json_t *kubelet_admin = NULL;
    for (size_t i = 0; i < json_array_size(crs); i++) {
        const json_t *meta = json_object_get(json_array_get(crs, i), "metadata");
        if (strcmp(json_string_value(json_object_get(meta, "name")), "system:kubelet-api-admin") ==
            0)
            kubelet_admin = json_array_get(crs, i);
    }
    assert_non_null(kubelet_admin);
    json_t *want = json_pack(
        "[{s:[s], s:[s], s:[s,s,s]}, {s:[s], s:[s], s:[s]}, {s:[s], s:[s,s,s,s], s:[s]}]",
        "apiGroups", "", "resources", "nodes", "verbs", "get", "list", "watch", "apiGroups", "",
        "resources", "nodes", "verbs", "proxy", "apiGroups", "", "resources", "nodes/log",
        "nodes/metrics", "nodes/proxy", "nodes/stats", "verbs", "*");
    assert_true(json_equal(json_object_get(kubelet_admin, "rules"), want));
    json_decref(want);
    for (size_t i = 0; i < json_array_size(crbs); i++)
        assert_string_not_equal(json_string_value(json_object_get(
                                    json_object_get(json_array_get(crbs, i), "roleRef"), "name")),
                                "system:kubelet-api-admin");
    json_array_append_new(crbs, binding(NULL, "kubelet-client", "ClusterRole",
                                        "system:kubelet-api-admin", "User:kubelet-client"));
    struct ck_rbac_policy *p = NULL;
    json_t *rbs = json_pack("[o,o,o]", binding("v", "a", "ClusterRole", "view", "User:viewer"),
                            binding("e", "b", "ClusterRole", "edit", "User:editor"),
                            binding("a", "c", "ClusterRole", "admin", "User:admin"));
    assert_int_equal(ck_rbac_policy_new(NULL, crs, rbs, crbs, &p, NULL), 0);
    static const struct req_case pass[] = {
        {"kubernetes-admin", "system:masters,system:authenticated", "delete", "", "nodes", NULL,
         "n1", NULL, NULL},
        {"kubernetes-admin", "system:masters", "get", NULL, NULL, NULL, NULL, NULL, "/metrics"},
        {"system:anonymous", "system:unauthenticated", "get", NULL, NULL, NULL, NULL, NULL,
         "/version"},
        {"system:anonymous", "system:unauthenticated", "get", NULL, NULL, NULL, NULL, NULL,
         "/healthz"},
        {"jane", "system:authenticated", "get", NULL, NULL, NULL, NULL, NULL, "/apis/apps/v1"},
        {"jane", "system:authenticated", "create", "authorization.k8s.io",
         "selfsubjectaccessreviews", NULL, NULL, NULL, NULL},
        /* view -> edit -> admin, through two levels of aggregation */
        {"viewer", NULL, "list", "", "pods", NULL, NULL, "v", NULL},
        {"viewer", NULL, "get", "apps", "deployments", "scale", "web", "v", NULL},
        {"editor", NULL, "list", "", "pods", NULL, NULL, "e", NULL},
        {"editor", NULL, "create", "apps", "deployments", NULL, NULL, "e", NULL},
        {"admin", NULL, "get", "", "pods", "log", "p", "a", NULL},
        /* kubectl top: metrics-server's reader, aggregated into view */
        {"viewer", NULL, "list", "metrics.k8s.io", "pods", NULL, NULL, "v", NULL},
        {"admin", NULL, "create", "rbac.authorization.k8s.io", "rolebindings", NULL, NULL, "a",
         NULL},
        {"system:kube-scheduler", "system:authenticated", "create", "", "pods", "binding", "p",
         "default", NULL},
        {"system:kube-controller-manager", "system:authenticated", "create", "", "pods", NULL, NULL,
         "default", NULL},
        {"system:kube-controller-manager", "system:authenticated", "update", "apps", "replicasets",
         "status", "rs", "default", NULL},
        {"system:node:n1", "system:nodes,system:authenticated", "patch", "", "nodes", "status",
         "n1", NULL, NULL},
        /* the pod's RuntimeClass, for its handler; its claims and volumes */
        {"system:node:n1", "system:nodes,system:authenticated", "watch", "node.k8s.io",
         "runtimeclasses", NULL, NULL, NULL, NULL},
        {"system:node:n1", "system:nodes,system:authenticated", "get", "", "persistentvolumeclaims",
         NULL, "c", "default", NULL},
        /* the API server's kubelet client: every kubelet API call, through nodes/proxy too */
        {"kubelet-client", NULL, "proxy", "", "nodes", NULL, "n1", NULL, NULL},
        {"kubelet-client", NULL, "create", "", "nodes", "proxy", "n1", NULL, NULL},
        {"kubelet-client", NULL, "get", "", "nodes", "stats", "n1", NULL, NULL},
        {"kubelet-client", NULL, "get", "", "nodes", "log", "n1", NULL, NULL},
        {"kubelet-client", NULL, "get", "", "nodes", "metrics", "n1", NULL, NULL},
        {"kubelet-client", NULL, "watch", "", "nodes", NULL, NULL, NULL, NULL},
    };
    static const struct req_case fail[] = {
        {"system:anonymous", "system:unauthenticated", "get", NULL, NULL, NULL, NULL, NULL,
         "/apis"},
        {"jane", "system:authenticated", "list", "", "pods", NULL, NULL, "prod", NULL},
        {"viewer", NULL, "get", "", "secrets", NULL, "s", "v", NULL},
        {"viewer", NULL, "create", "", "pods", NULL, NULL, "v", NULL},
        {"viewer", NULL, "list", "metrics.k8s.io", "pods", NULL, NULL, "other", NULL},
        {"editor", NULL, "create", "rbac.authorization.k8s.io", "rolebindings", NULL, NULL, "e",
         NULL},
        {"admin", NULL, "list", "", "pods", NULL, NULL, "other", NULL},
        {"system:kube-scheduler", "system:authenticated", "delete", "", "nodes", NULL, "n1", NULL,
         NULL},
        {"system:kube-controller-manager", "system:authenticated", "create", "", "nodes", NULL,
         NULL, NULL, NULL},
        {"system:node:n1", "system:nodes,system:authenticated", "create", "node.k8s.io",
         "runtimeclasses", NULL, NULL, NULL, NULL},
        /* nothing of the Node object beyond reading it, nor of other resources */
        {"kubelet-client", NULL, "delete", "", "nodes", NULL, "n1", NULL, NULL},
        {"kubelet-client", NULL, "update", "", "nodes", "status", "n1", NULL, NULL},
        {"kubelet-client", NULL, "get", "", "nodes", "spec", "n1", NULL, NULL},
        {"kubelet-client", NULL, "get", "", "pods", NULL, "p", "default", NULL},
    };
    check(p, pass, N(pass), fail, N(fail));
    /* every object is dressed as Kubernetes dresses its bootstrap objects */
    const json_t *first = json_array_get(crbs, 0);
    assert_string_equal(json_string_value(json_object_get(first, "kind")), "ClusterRoleBinding");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(first, "metadata"), "labels"),
                            "kubernetes.io/bootstrapping")),
                        "rbac-defaults");
    ck_rbac_policy_unref(p);
    json_decref(crs);
    json_decref(crbs);
    json_decref(rbs);
}

static void test_rules_for_lists_what_applies(void **state)
{
    (void)state;
    struct ck_rbac_policy *p =
        policy(json_pack("[o]", role_obj("Role", "ns1", "r",
                                         json_pack("[o]", rule("get", "", "pods", NULL)))),
               json_pack("[o]", role_obj("ClusterRole", NULL, "c",
                                         json_pack("[o]", rule("get", NULL, NULL, "/healthz")))),
               json_pack("[o]", binding("ns1", "rb", "Role", "r", "User:u")),
               json_pack("[o]", binding(NULL, "crb", "ClusterRole", "c", "Group:g")));
    struct ck_auth_user *u = user("u", "g");
    json_t *cluster = ck_rbac_rules_for(p, u, NULL);
    json_t *ns1 = ck_rbac_rules_for(p, u, "ns1");
    assert_int_equal(json_array_size(cluster), 1);
    assert_int_equal(json_array_size(ns1), 2);
    json_decref(cluster);
    json_decref(ns1);
    ck_auth_user_free(u);
    ck_rbac_policy_unref(p);
}

/* ---- coverage and escalation ----------------------------------------------- */

struct cover_case {
    const char *what;
    json_t *owner, *servant;
    bool covers;
};

static void test_covers_table(void **state)
{
    (void)state;
    struct cover_case cases[] = {
        {"exact match", json_pack("[o]", rule("get", "", "pods", NULL)),
         json_pack("[o]", rule("get", "", "pods", NULL)), true},
        {"star verb", json_pack("[o]", rule("*", "", "pods", NULL)),
         json_pack("[o]", rule("get,delete,escalate", "", "pods", NULL)), true},
        {"star group", json_pack("[o]", rule("get", "*", "pods", NULL)),
         json_pack("[o]", rule("get", "apps,batch", "pods", NULL)), true},
        {"other group", json_pack("[o]", rule("get", "apps", "deployments", NULL)),
         json_pack("[o]", rule("get", "extensions", "deployments", NULL)), false},
        {"star resource", json_pack("[o]", rule("get", "", "*", NULL)),
         json_pack("[o]", rule("get", "", "pods,pods/status", NULL)), true},
        {"subresource wildcard", json_pack("[o]", rule("get", "", "*/foo", NULL)),
         json_pack("[o]", rule("get", "", "bar/foo", NULL)), true},
        {"subresource wildcard does not cover the resource",
         json_pack("[o]", rule("get", "", "*/foo", NULL)),
         json_pack("[o]", rule("get", "", "bar", NULL)), false},
        {"resource does not cover its subresource", json_pack("[o]", rule("get", "", "pods", NULL)),
         json_pack("[o]", rule("get", "", "pods/status", NULL)), false},
        {"several rules cover one",
         json_pack("[o,o,o]", rule("delete", "", "deployments", NULL),
                   rule("delete", "", "builds", NULL),
                   rule("update", "", "builds,deployments", NULL)),
         json_pack("[o]", rule("delete,update", "", "builds,deployments", NULL)), true},
        {"a verb missing", json_pack("[o]", rule("get", "", "pods", NULL)),
         json_pack("[o]", rule("get,list", "", "pods", NULL)), false},
        {"no names covers names", json_pack("[o]", rule("get", "", "pods", NULL)),
         json_pack("[o]", named(rule("get", "", "pods", NULL), "a,b")), true},
        {"names cover a subset", json_pack("[o]", named(rule("get", "", "pods", NULL), "a,b,c")),
         json_pack("[o]", named(rule("get", "", "pods", NULL), "a,c")), true},
        {"names do not cover others", json_pack("[o]", named(rule("get", "", "pods", NULL), "a")),
         json_pack("[o]", named(rule("get", "", "pods", NULL), "a,b")), false},
        {"names do not cover all", json_pack("[o]", named(rule("get", "", "pods", NULL), "a")),
         json_pack("[o]", rule("get", "", "pods", NULL)), false},
        {"url exact", json_pack("[o]", rule("get", NULL, NULL, "/apis")),
         json_pack("[o]", rule("get", NULL, NULL, "/apis")), true},
        {"url prefix", json_pack("[o]", rule("get", NULL, NULL, "/apis/*")),
         json_pack("[o]", rule("get", NULL, NULL, "/apis/v1,/apis/v1/*")), true},
        {"url prefix is not the bare path", json_pack("[o]", rule("get", NULL, NULL, "/apis/*")),
         json_pack("[o]", rule("get", NULL, NULL, "/apis")), false},
        {"url star", json_pack("[o]", rule("*", NULL, NULL, "*")),
         json_pack("[o]", rule("get,post", NULL, NULL, "/healthz,/metrics")), true},
        {"resources do not cover urls", json_pack("[o]", rule("*", "*", "*", NULL)),
         json_pack("[o]", rule("get", NULL, NULL, "/healthz")), false},
        {"urls do not cover resources", json_pack("[o]", rule("*", NULL, NULL, "*")),
         json_pack("[o]", rule("get", "", "pods", NULL)), false},
        {"cluster-admin covers everything",
         json_pack("[o,o]", rule("*", "*", "*", NULL), rule("*", NULL, NULL, "*")),
         json_pack("[o,o]",
                   named(rule("get,bind", "rbac.authorization.k8s.io", "clusterroles", NULL), "x"),
                   rule("get", NULL, NULL, "/metrics")),
         true},
    };
    for (size_t i = 0; i < N(cases); i++) {
        json_t *missing = NULL;
        bool got = ck_rbac_rules_cover(cases[i].owner, cases[i].servant, &missing);
        if (got != cases[i].covers)
            fail_msg("%s: covers=%d", cases[i].what, got);
        assert_int_equal(json_array_size(missing) == 0, cases[i].covers);
        json_decref(missing);
        json_decref(cases[i].owner);
        json_decref(cases[i].servant);
    }
}

static struct ck_rbac_policy *escalation_policy(void)
{
    json_t *crs = json_pack(
        "[o,o,o]",
        role_obj("ClusterRole", NULL, "view", json_pack("[o]", rule("get,list", "", "pods", NULL))),
        role_obj("ClusterRole", NULL, "edit", json_pack("[o]", rule("*", "", "pods", NULL))),
        role_obj("ClusterRole", NULL, "rbac-writer",
                 json_pack(
                     "[o,o]",
                     rule("create,update", "rbac.authorization.k8s.io", "roles,rolebindings", NULL),
                     named(rule("escalate,bind", "rbac.authorization.k8s.io", "roles,clusterroles",
                                NULL),
                           "powerful,edit"))));
    json_t *rbs =
        json_pack("[o,o]", binding("ns1", "v", "ClusterRole", "view", "User:jane,User:joe"),
                  binding("ns1", "w", "ClusterRole", "rbac-writer", "User:joe"));
    return policy(NULL, crs, rbs, NULL);
}

static void test_role_write_needs_the_rules_or_escalate(void **state)
{
    (void)state;
    struct ck_rbac_policy *p = escalation_policy();
    struct ck_auth_user *jane = user("jane", "system:authenticated");
    struct ck_auth_user *joe = user("joe", NULL);
    struct ck_auth_user *root = user("root", "system:masters");
    json_t *held = json_pack("[o]", rule("get", "", "pods", NULL));
    json_t *more = json_pack("[o]", rule("get,delete", "", "pods", NULL));
    struct ck_err err = {0};
    assert_int_equal(ck_rbac_check_role_write(p, jane, "ns1", "mine", held, &err), 0);
    assert_int_equal(ck_rbac_check_role_write(p, jane, "ns1", "mine", more, &err), CK_EPERM);
    assert_string_equal(err.msg, "user \"jane\" (groups=[\"system:authenticated\"]) is attempting "
                                 "to grant RBAC permissions not currently held:\n"
                                 "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}");
    /* held in ns1, not in ns2 nor cluster-wide */
    assert_int_equal(ck_rbac_check_role_write(p, jane, "ns2", "mine", held, &err), CK_EPERM);
    assert_int_equal(ck_rbac_check_role_write(p, jane, NULL, "mine", held, &err), CK_EPERM);
    /* escalate on that one role name */
    assert_int_equal(ck_rbac_check_role_write(p, joe, "ns1", "powerful", more, &err), 0);
    assert_int_equal(ck_rbac_check_role_write(p, joe, "ns1", "other", more, &err), CK_EPERM);
    assert_int_equal(ck_rbac_check_role_write(p, root, NULL, "anything", more, &err), 0);
    json_decref(held);
    json_decref(more);
    ck_auth_user_free(jane);
    ck_auth_user_free(joe);
    ck_auth_user_free(root);
    ck_rbac_policy_unref(p);
}

static void test_binding_write_needs_the_rules_or_bind(void **state)
{
    (void)state;
    struct ck_rbac_policy *p = escalation_policy();
    struct ck_auth_user *jane = user("jane", NULL);
    struct ck_auth_user *joe = user("joe", NULL);
    json_t *view = json_pack("{s:s,s:s,s:s}", "apiGroup", "rbac.authorization.k8s.io", "kind",
                             "ClusterRole", "name", "view");
    json_t *edit = json_pack("{s:s,s:s,s:s}", "apiGroup", "rbac.authorization.k8s.io", "kind",
                             "ClusterRole", "name", "edit");
    json_t *ghost = json_pack("{s:s,s:s,s:s}", "apiGroup", "rbac.authorization.k8s.io", "kind",
                              "Role", "name", "ghost");
    struct ck_err err = {0};
    assert_int_equal(ck_rbac_check_binding_write(p, jane, "ns1", view, &err), 0);
    assert_int_equal(ck_rbac_check_binding_write(p, jane, "ns2", view, &err), CK_EPERM);
    assert_int_equal(ck_rbac_check_binding_write(p, jane, "ns1", edit, &err), CK_EPERM);
    assert_non_null(strstr(err.msg, "Verbs:[\"*\"]"));
    assert_int_equal(ck_rbac_check_binding_write(p, joe, "ns1", edit, &err), 0); /* bind */
    assert_int_equal(ck_rbac_check_binding_write(p, jane, "ns1", ghost, &err), CK_ENOENT);
    assert_string_equal(err.msg, "role.rbac.authorization.k8s.io \"ghost\" not found");
    assert_int_equal(ck_rbac_check_binding_write(p, jane, NULL, ghost, &err), CK_EINVAL);
    json_decref(view);
    json_decref(edit);
    json_decref(ghost);
    ck_auth_user_free(jane);
    ck_auth_user_free(joe);
    ck_rbac_policy_unref(p);
}

static void test_policy_outlives_its_inputs_and_refs(void **state)
{
    (void)state;
    json_t *crs = json_pack(
        "[o]", role_obj("ClusterRole", NULL, "c", json_pack("[o]", rule("get", "", "pods", NULL))));
    json_t *crbs = json_pack("[o]", binding(NULL, "b", "ClusterRole", "c", "User:u"));
    struct ck_rbac_policy *p = NULL;
    assert_int_equal(ck_rbac_policy_new(NULL, crs, NULL, crbs, &p, NULL), 0);
    json_array_clear(crs);
    json_decref(crs);
    json_decref(crbs);
    struct ck_rbac_policy *r = ck_rbac_policy_ref(p);
    assert_null(ck_rbac_policy_unref(p));
    static const struct req_case pass[] = {{"u", NULL, "get", "", "pods", NULL, NULL, NULL, NULL}};
    check(r, pass, 1, NULL, 0);
    assert_null(ck_rbac_policy_unref(r));
    assert_null(ck_rbac_policy_unref(NULL));
}

/* SQLite's faultsim: fail the Nth allocation (jansson's too) until the build succeeds. */
static void test_policy_allocation_failure_is_clean(void **state)
{
    (void)state;
    /* small, but with every path: aggregation, a Role, a missing role, each subject kind */
    json_t *view =
        json_pack("{s:{s:s},s:{s:[{s:{s:s}}]}}", "metadata", "name", "view", "aggregationRule",
                  "clusterRoleSelectors", "matchLabels", "agg", "view");
    json_t *part = role_obj(
        "ClusterRole", NULL, "part",
        json_pack("[o,o]", rule("list", "", "pods", NULL), rule("get", NULL, NULL, "/healthz")));
    json_object_set_new(json_object_get(part, "metadata"), "labels",
                        json_pack("{s:s}", "agg", "view"));
    json_t *crs = json_pack("[o,o]", view, part);
    json_t *roles =
        json_pack("[o]", role_obj("Role", "ns1", "r",
                                  json_pack("[o]", named(rule("get", "", "secrets", NULL), "s"))));
    json_t *crbs = json_pack("[o]", binding(NULL, "c", "ClusterRole", "part", "Group:devs"));
    json_t *rbs = json_pack("[o,o,o]", binding("ns1", "a", "ClusterRole", "view", "User:jane"),
                            binding("ns1", "b", "ClusterRole", "ghost", "ServiceAccount:robot"),
                            binding("ns1", "d", "Role", "r", "User:jane"));
    json_set_alloc_funcs(ck__malloc, free);
    int rc = CK_ENOMEM;
    unsigned long n;
    for (n = 1; rc == CK_ENOMEM; n++) {
        struct ck_rbac_policy *p = NULL;
        ck__alloc_fail_at(n, true);
        rc = ck_rbac_policy_new(roles, crs, rbs, crbs, &p, NULL);
        ck__alloc_fail_at(0, false);
        if (rc == 0) {
            static const struct req_case pass[] = {
                {"jane", NULL, "list", "", "pods", NULL, NULL, "ns1", NULL}};
            check(p, pass, 1, NULL, 0);
            ck_rbac_policy_unref(p);
        } else {
            assert_int_equal(rc, CK_ENOMEM);
            assert_null(p);
        }
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(n > 50); /* it did fail along the way, many times */
    json_decref(roles);
    json_decref(crs);
    json_decref(crbs);
    json_decref(rbs);
}

/* ---- the current policy under concurrent swaps ------------------------------- */

static struct ck_rbac_policy *versioned_policy(int version)
{
    /* every version lets jane get pods; odd ones let her get secrets too */
    json_t *rules = json_pack("[o]", rule("get", "", version % 2 ? "pods,secrets" : "pods", NULL));
    return policy(NULL, json_pack("[o]", role_obj("ClusterRole", NULL, "r", rules)),
                  json_pack("[o]", binding("ns", "b", "ClusterRole", "r", "User:jane")), NULL);
}

struct reader {
    struct ck_rbac_authorizer *a;
    atomic_bool *stop;
    long decisions;
    bool wrong;
};

static void *read_loop(void *arg)
{
    struct reader *r = arg;
    struct ck_auth_user *jane = user("jane", NULL);
    struct ck_rbac_request q = {.user = jane,
                                .verb = "get",
                                .is_resource_request = true,
                                .api_group = "",
                                .resource = "pods",
                                .namespace = "ns"};
    while (!atomic_load(r->stop) || r->decisions < 1000) {
        struct ck_rbac_policy *p = ck_rbac_authorizer_current(r->a);
        for (int i = 0; i < 10; i++)
            r->wrong = r->wrong || ck_rbac_authorize(p, &q, NULL, 0) != CK_RBAC_ALLOW;
        ck_rbac_policy_unref(p);
        r->decisions += 10;
    }
    ck_auth_user_free(jane);
    return NULL;
}

static void test_swaps_never_pull_a_policy_from_under_a_request(void **state)
{
    (void)state;
    struct ck_rbac_authorizer *a = ck_rbac_authorizer_new(versioned_policy(0));
    atomic_bool stop = false;
    struct reader readers[2] = {{.a = a, .stop = &stop}, {.a = a, .stop = &stop}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, read_loop, &readers[i]);
    for (int v = 1; v <= 300; v++)
        ck_rbac_authorizer_swap(a, versioned_policy(v));
    atomic_store(&stop, true);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_false(readers[i].wrong);
        assert_true(readers[i].decisions >= 1000);
    }
    /* the last swap is what a new request sees */
    struct ck_rbac_policy *p = ck_rbac_authorizer_current(a);
    static const struct req_case fail[] = {
        {"jane", NULL, "get", "", "secrets", NULL, NULL, "ns", NULL}};
    check(p, NULL, 0, fail, 1);
    ck_rbac_policy_unref(p);
    assert_null(ck_rbac_authorizer_free(a));
    a = ck_rbac_authorizer_new(NULL);
    assert_null(ck_rbac_authorizer_current(a));
    ck_rbac_authorizer_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rolebinding_to_clusterrole_applies_in_its_namespace_only),
        cmocka_unit_test(test_non_resource_urls_exact_prefix_and_star),
        cmocka_unit_test(test_subresources_need_their_own_rule),
        cmocka_unit_test(test_verbs_groups_and_resource_names),
        cmocka_unit_test(test_service_account_subjects),
        cmocka_unit_test(test_forbidden_messages_are_kubernetes_words),
        cmocka_unit_test(test_binding_to_missing_role_is_the_reason),
        cmocka_unit_test(test_aggregation_unions_matching_roles_in_name_order),
        cmocka_unit_test(test_bootstrap_policy),
        cmocka_unit_test(test_rules_for_lists_what_applies),
        cmocka_unit_test(test_covers_table),
        cmocka_unit_test(test_role_write_needs_the_rules_or_escalate),
        cmocka_unit_test(test_binding_write_needs_the_rules_or_bind),
        cmocka_unit_test(test_policy_outlives_its_inputs_and_refs),
        cmocka_unit_test(test_policy_allocation_failure_is_clean),
        cmocka_unit_test(test_swaps_never_pull_a_policy_from_under_a_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
