/*
 * test_tls.c - the API server with TLS, authentication and RBAC on (what
 * `ckube server` runs by default), in-process on 127.0.0.1:0: the PKI it
 * creates, the kubeconfig it writes (the CA and the admin certificate
 * embedded) driving the REST client over verified TLS, anonymous and token
 * requests through the RBAC authorizer with Kubernetes' 403 message, 401 for
 * bad credentials, the policy following RoleBinding writes, the escalation
 * check, and a component's own client certificate.
 */
#include "cktest.h"

#include <sys/stat.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the store helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/internal/util.h"
#include "ckube/rest.h"

static const struct ck_resource namespaces = {"", "v1", "namespaces", false};
static const struct ck_resource pods = {"", "v1", "pods", true};
static const struct ck_resource rolebindings = {"rbac.authorization.k8s.io", "v1", "rolebindings",
                                                true};
static const struct ck_resource roles = {"rbac.authorization.k8s.io", "v1", "roles", true};
static const struct ck_resource replicasets = {"apps", "v1", "replicasets", true};

struct fixture {
    char dir[64];
    char pki[96];
    char kubeconfig[96];
    char tokens[96];
    struct ck_apiserver *server;
    struct ck_rest *admin;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/ck-tls-XXXXXX");
    char store[256];
    assert_int_equal(test_store_dir(f->dir, store, sizeof(store)), 0);
    snprintf(f->pki, sizeof(f->pki), "%s/pki", f->dir);
    snprintf(f->kubeconfig, sizeof(f->kubeconfig), "%s/kubeconfig", f->dir);
    snprintf(f->tokens, sizeof(f->tokens), "%s/tokens.csv", f->dir);
    FILE *t = fopen(f->tokens, "w");
    assert_non_null(t);
    fputs("jane-token,jane,1001\n", t);
    fclose(t);
    struct ck_apiserver_config config = {.disable_admission_plugins = "ServiceAccount",
                                         .listen = "127.0.0.1:0",
                                         .store_url = store,
                                         .pki_dir = f->pki,
                                         .token_auth_file = f->tokens};
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_start(&config, &f->server, &err), 0);
    assert_int_equal(ck_apiserver_write_kubeconfig(f->server, f->kubeconfig, &err), 0);
    struct ck_kubeconfig *kc = NULL;
    assert_int_equal(ck_kubeconfig_load(f->kubeconfig, NULL, &kc, &err), 0);
    assert_int_equal(ck_rest_new_from_kubeconfig(kc, -1, 0, &f->admin, &err), 0);
    ck_kubeconfig_free(kc);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_rest_free(f->admin);
    ck_apiserver_free(f->server);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* GET path with the CA and an optional bearer token; the status, the body in *ret_body. */
static long tls_get(struct fixture *f, const char *path, const char *token, char **ret_body)
{
    char url[512], ca[128], auth[128];
    snprintf(url, sizeof(url), "%s%s", ck_apiserver_url(f->server), path);
    snprintf(ca, sizeof(ca), "%s/ca.crt", f->pki);
    struct httptest_buf out = {0};
    CURL *curl = curl_easy_init();
    assert_non_null(curl);
    struct curl_slist *headers = NULL;
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        headers = curl_slist_append(headers, auth);
    }
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CAINFO, ca);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
    long status = 0;
    assert_int_equal(curl_easy_perform(curl), CURLE_OK);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    *ret_body = out.buf ? out.buf : calloc(1, 1);
    return status;
}

/* A RoleBinding named name of ClusterRole role to User user. */
static json_t *role_binding(const char *name, const char *role, const char *user)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s}]}", "apiVersion",
                     "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name",
                     name, "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind",
                     "ClusterRole", "name", role, "subjects", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", "User", "name", user);
}

static void test_pki_and_kubeconfig(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(strncmp(ck_apiserver_url(f->server), "https://127.0.0.1:", 18), 0);
    struct stat st;
    char path[160];
    snprintf(path, sizeof(path), "%s/ca.key", f->pki);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(f->kubeconfig, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    struct ck_kubeconfig *kc = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_kubeconfig_load(f->kubeconfig, NULL, &kc, &err), 0);
    assert_non_null(kc->ca_data);
    assert_non_null(strstr(kc->ca_data, "BEGIN CERTIFICATE"));
    assert_non_null(kc->client_cert_data);
    assert_non_null(kc->client_key_data);
    assert_false(kc->insecure_skip_tls_verify);
    ck_kubeconfig_free(kc);
    /* the admin (system:masters) through the kubeconfig: verified TLS, client certificate */
    json_t *ns = NULL;
    assert_int_equal(ck_rest_get(f->admin, &namespaces, NULL, "kube-system", &ns, &err), 0);
    assert_string_equal(ck__meta_str(ns, "name"), "kube-system");
    json_decref(ns);
}

static void test_anonymous_and_bad_credentials(void **state)
{
    struct fixture *f = *state;
    char *body = NULL;
    assert_int_equal(tls_get(f, "/readyz", NULL, &body), 200);
    assert_string_equal(body, "ok");
    free(body);
    assert_int_equal(tls_get(f, "/api/v1/namespaces/default/pods", NULL, &body), 403);
    assert_non_null(strstr(body, "\"message\":\"pods is forbidden: User \\\"system:anonymous\\\" "
                                 "cannot list resource \\\"pods\\\" in API group \\\"\\\" in the "
                                 "namespace \\\"default\\\"\""));
    assert_non_null(strstr(body, "\"reason\":\"Forbidden\""));
    free(body);
    assert_int_equal(tls_get(f, "/api/v1/pods", "garbage", &body), 401);
    assert_non_null(strstr(body, "\"reason\":\"Unauthorized\""));
    free(body);
    assert_int_equal(tls_get(f, "/metrics", NULL, &body), 403);
    assert_non_null(strstr(body, "forbidden: User \\\"system:anonymous\\\" cannot get path "
                                 "\\\"/metrics\\\""));
    free(body);
}

static void test_token_user_follows_bindings(void **state)
{
    struct fixture *f = *state;
    char *body = NULL;
    assert_int_equal(tls_get(f, "/api/v1/namespaces/default/pods", "jane-token", &body), 403);
    assert_non_null(strstr(body, "User \\\"jane\\\" cannot list resource \\\"pods\\\""));
    free(body);
    json_t *rb = role_binding("jane-view", "view", "jane");
    struct ck_err err = {0};
    assert_int_equal(ck_rest_create(f->admin, &rolebindings, "default", rb, NULL, &err), 0);
    json_decref(rb);
    assert_int_equal(tls_get(f, "/api/v1/namespaces/default/pods", "jane-token", &body), 200);
    free(body);
    assert_int_equal(tls_get(f, "/api/v1/namespaces/kube-system/pods", "jane-token", &body), 403);
    free(body);
    /* view may not bind: neither the verb nor the rules of edit */
    struct ck_rest_config rc = {
        .server = ck_apiserver_url(f->server), .token = "jane-token", .qps = -1};
    char ca[128];
    snprintf(ca, sizeof(ca), "%s/ca.crt", f->pki);
    rc.ca_file = ca;
    struct ck_rest *jane = NULL;
    assert_int_equal(ck_rest_new(&rc, &jane, &err), 0);
    json_t *list = NULL;
    assert_int_equal(ck_rest_list(jane, &pods, "default", NULL, &list, &err), 0);
    json_decref(list);
    assert_int_equal(ck_rest_list(jane, &pods, "kube-system", NULL, &list, &err), CK_EPERM);
    ck_err_release(&err);
    ck_rest_free(jane);
}

static void test_escalation(void **state)
{
    struct fixture *f = *state;
    /* jane is admin in default: she may write bindings there, but not to cluster-admin */
    json_t *rb = role_binding("jane-admin", "admin", "jane");
    struct ck_err err = {0};
    assert_int_equal(ck_rest_create(f->admin, &rolebindings, "default", rb, NULL, &err), 0);
    char ca[128];
    snprintf(ca, sizeof(ca), "%s/ca.crt", f->pki);
    struct ck_rest_config rc = {
        .server = ck_apiserver_url(f->server), .token = "jane-token", .ca_file = ca, .qps = -1};
    struct ck_rest *jane = NULL;
    assert_int_equal(ck_rest_new(&rc, &jane, &err), 0);
    json_object_set_new(json_object_get(rb, "metadata"), "name", json_string("jane-root"));
    json_object_set_new(json_object_get(rb, "roleRef"), "name", json_string("cluster-admin"));
    assert_int_equal(ck_rest_create(jane, &rolebindings, "default", rb, NULL, &err), CK_EPERM);
    assert_non_null(strstr(ck_err_message(&err),
                           "rolebindings.rbac.authorization.k8s.io \"jane-root\" is forbidden: "
                           "user \"jane\" (groups=[\"system:authenticated\"]) is attempting "
                           "to grant RBAC permissions not currently held"));
    ck_err_release(&err);
    json_object_set_new(json_object_get(rb, "metadata"), "name", json_string("jane-edit"));
    json_object_set_new(json_object_get(rb, "roleRef"), "name", json_string("edit"));
    assert_int_equal(ck_rest_create(jane, &rolebindings, "default", rb, NULL, &err), 0);
    json_decref(rb);

    /* a Role with rules she holds; a PATCH adding one she lacks is checked as well */
    json_t *role =
        json_pack("{s:s, s:s, s:{s:s}, s:[{s:[s], s:[s], s:[s]}]}", "apiVersion",
                  "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", "name", "reader",
                  "rules", "apiGroups", "", "resources", "pods", "verbs", "get");
    assert_int_equal(ck_rest_create(jane, &roles, "default", role, NULL, &err), 0);
    json_decref(role);
    json_t *patch = json_pack("{s:[{s:[s], s:[s], s:[s]}]}", "rules", "apiGroups", "", "resources",
                              "nodes", "verbs", "list");
    assert_int_equal(
        ck_rest_do(jane, "PATCH",
                   "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/reader", patch,
                   "application/merge-patch+json", NULL, &err),
        CK_EPERM);
    assert_non_null(strstr(ck_err_message(&err), "roles.rbac.authorization.k8s.io \"reader\" is "
                                                 "forbidden: user \"jane\""));
    ck_err_release(&err);
    json_decref(patch);
    patch = json_pack("{s:[{s:[s], s:[s], s:[s, s]}]}", "rules", "apiGroups", "", "resources",
                      "pods", "verbs", "get", "list");
    assert_int_equal(
        ck_rest_do(jane, "PATCH",
                   "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/reader", patch,
                   "application/merge-patch+json", NULL, &err),
        0);
    json_decref(patch);
    ck_rest_free(jane);
}

static void test_component_identity(void **state)
{
    struct fixture *f = *state;
    char *ca = NULL, *cert = NULL, *key = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_component_credentials(f->server, "controller-manager",
                                                        "system:kube-controller-manager", NULL, &ca,
                                                        &cert, &key, &err),
                     0);
    struct ck_rest_config rc = {.server = ck_apiserver_url(f->server),
                                .ca_file = ca,
                                .cert_file = cert,
                                .key_file = key,
                                .qps = -1};
    struct ck_rest *cm = NULL;
    assert_int_equal(ck_rest_new(&rc, &cm, &err), 0);
    json_t *list = NULL;
    assert_int_equal(ck_rest_list(cm, &replicasets, NULL, NULL, &list, &err), 0);
    json_decref(list);
    /* least privilege: not an administrator */
    json_t *rb = role_binding("cm-admin", "admin", "system:kube-controller-manager");
    assert_int_equal(ck_rest_create(cm, &rolebindings, "default", rb, NULL, &err), CK_EPERM);
    assert_non_null(strstr(ck_err_message(&err), "User \"system:kube-controller-manager\" "
                                                 "cannot create resource \"rolebindings\""));
    json_decref(rb);
    ck_err_release(&err);
    ck_rest_free(cm);
    free(ca);
    free(cert);
    free(key);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pki_and_kubeconfig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymous_and_bad_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_user_follows_bindings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_component_identity, setup, teardown),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return r;
}
