/*
 * test_kubeconfig.c - kubeconfig loading (client-go tools/clientcmd): YAML and JSON,
 * contexts, namespaces, tokens inline and from files, CA data, paths made relative to
 * the file, and clear errors for what is missing or malformed; YAML to JSON the way
 * kubectl reads manifests. (A client built from the kubeconfig the server writes is in
 * test_rest.c; fuzz/fuzz_kubeconfig.c throws arbitrary bytes at the parser.)
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/rest.h"

static void test_kubeconfig_yaml(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-kc-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], token_path[128];
    snprintf(token_path, sizeof(token_path), "%s/token", dir);
    FILE *t = fopen(token_path, "w");
    fputs("s3cret\n", t);
    fclose(t);
    snprintf(path, sizeof(path), "%s/config", dir);
    FILE *k = fopen(path, "w");
    /* "LS0tCg==" is base64 of "---\n" */
    fputs("apiVersion: v1\n"
          "kind: Config\n"
          "current-context: dev\n"
          "clusters:\n"
          "- name: c1\n"
          "  cluster:\n"
          "    server: http://127.0.0.1:1234\n"
          "    certificate-authority: ca.pem\n"
          "    certificate-authority-data: LS0tCg==\n"
          "    insecure-skip-tls-verify: true\n"
          "users:\n"
          "- name: u1\n"
          "  user: {tokenFile: token, client-certificate: /abs/cert.pem}\n"
          "contexts:\n"
          "- name: other\n"
          "  context: {cluster: c1, user: u1}\n"
          "- name: dev\n"
          "  context:\n"
          "    cluster: c1\n"
          "    user: u1\n"
          "    namespace: team-a\n",
          k);
    fclose(k);
    struct ck_kubeconfig *kc = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_kubeconfig_load(path, NULL, &kc, &err), 0);
    assert_string_equal(kc->server, "http://127.0.0.1:1234");
    assert_string_equal(kc->namespace, "team-a");
    assert_string_equal(kc->token, "s3cret");
    char ca[160];
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    assert_string_equal(kc->ca_file, ca);
    assert_string_equal(kc->ca_data, "---\n");
    assert_string_equal(kc->client_cert_file, "/abs/cert.pem");
    assert_true(kc->insecure_skip_tls_verify);
    ck_kubeconfig_free(kc);

    /* another context: namespace defaults */
    assert_int_equal(ck_kubeconfig_load(path, "other", &kc, &err), 0);
    assert_string_equal(kc->namespace, "default");
    ck_kubeconfig_free(kc);

    /* errors are clear, never crashes */
    assert_int_equal(ck_kubeconfig_load(path, "nope", &kc, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "nope"));
    unlink(token_path);
    assert_int_equal(ck_kubeconfig_load(path, NULL, &kc, &err), CK_ENOENT);
    unlink(path);
    assert_int_equal(ck_kubeconfig_load(path, NULL, &kc, &err), CK_ENOENT);
    const char bad[] = "clusters: [unclosed";
    assert_int_equal(ck_kubeconfig_parse(bad, strlen(bad), "/", NULL, &kc, &err), CK_EINVAL);
    const char noserver[] = "{\"current-context\":\"x\",\"contexts\":[{\"name\":\"x\","
                            "\"context\":{\"cluster\":\"c\"}}],\"clusters\":[{\"name\":\"c\","
                            "\"cluster\":{}}]}";
    assert_int_equal(ck_kubeconfig_parse(noserver, strlen(noserver), "/", NULL, &kc, &err),
                     CK_EINVAL);
    assert_non_null(strstr(err.msg, "no server"));
    rmdir(dir);
}

static void test_yaml_to_json(void **state)
{
    (void)state;
    const char doc[] = "a: 1\nb: \"1\"\nc: [x, true, null]\nd: {e: 2.5}\n";
    json_t *j = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_yaml_to_json(doc, strlen(doc), &j, &err), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "b")), "1");
    assert_true(json_is_true(json_array_get(json_object_get(j, "c"), 1)));
    assert_true(json_is_null(json_array_get(json_object_get(j, "c"), 2)));
    assert_true(json_real_value(json_object_get(json_object_get(j, "d"), "e")) == 2.5);
    json_decref(j);
}

static void test_json_and_inline_credentials(void **state)
{
    (void)state;
    const char doc[] = "{\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\","
                       "\"context\":{\"cluster\":\"k\",\"user\":\"u\"}}],"
                       "\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":"
                       "\"https://h:6443\",\"insecure-skip-tls-verify\":\"true\"}}],"
                       "\"users\":[{\"name\":\"u\",\"user\":{\"token\":\"t0k\","
                       "\"client-key\":\"keys/k.pem\"}}]}";
    struct ck_kubeconfig *kc = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_kubeconfig_parse(doc, strlen(doc), "/etc/kube", NULL, &kc, &err), 0);
    assert_string_equal(kc->server, "https://h:6443");
    assert_string_equal(kc->token, "t0k");
    assert_string_equal(kc->client_key_file, "/etc/kube/keys/k.pem"); /* made absolute */
    assert_true(kc->insecure_skip_tls_verify);
    assert_null(kc->ca_file);
    assert_null(ck_kubeconfig_free(kc));
    assert_null(ck_kubeconfig_free(NULL));

    const char nouser[] = "{\"current-context\":\"c\",\"contexts\":[{\"name\":\"c\","
                          "\"context\":{\"cluster\":\"k\",\"user\":\"ghost\"}}],"
                          "\"clusters\":[{\"name\":\"k\",\"cluster\":{\"server\":"
                          "\"http://h\"}}]}";
    assert_int_equal(ck_kubeconfig_parse(nouser, strlen(nouser), "/", NULL, &kc, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "ghost"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubeconfig_yaml),
        cmocka_unit_test(test_json_and_inline_credentials),
        cmocka_unit_test(test_yaml_to_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
