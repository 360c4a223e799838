/*
 * test_requestheader.c - lib/apiserver/requestheader.c, the --requestheader-*
 * authenticator: when the flags turn it on, which certificates are a front
 * proxy's (the request-header CA, the allowed names), the user its headers
 * name (the first username header with a value, every group value, extra
 * keys lower-cased and %-decoded, nothing without a username) and the data
 * of kube-system/extension-apiserver-authentication. The server's use of it
 * is tested by tests/e2e/test_requestheader.sh.
 */
#include "cktest.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ckube/auth.h>

#include "../../lib/apiserver/requestheader.h"

static char proxy_dir[64], other_dir[64];
static char proxy_ca[96];

/* A PKI under dir (a mkdtemp template) with a client certificate front-proxy-client. */
static void make_pki(char *dir)
{
    assert_non_null(mkdtemp(dir));
    struct ck_pki_options opts = {.dir = dir, .listen_address = "127.0.0.1"};
    struct ck_pki pki = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_pki_ensure(&opts, &pki, &err), 0);
    ck_pki_release(&pki);
    assert_int_equal(
        ck_pki_client_cert(&opts, "front-proxy-client", "front-proxy-client", NULL, 0, &err), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(proxy_dir, sizeof(proxy_dir), "/tmp/ckube-rh-XXXXXX");
    snprintf(other_dir, sizeof(other_dir), "/tmp/ckube-rh-XXXXXX");
    make_pki(proxy_dir);
    make_pki(other_dir);
    snprintf(proxy_ca, sizeof(proxy_ca), "%s/%s", proxy_dir, CK_PKI_CA_CERT);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[192];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", proxy_dir, other_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* dir's front-proxy-client certificate as DER in *ret (free ret->data with gnutls_free). */
static void client_der(const char *dir, gnutls_datum_t *ret)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/front-proxy-client.crt", dir);
    gnutls_datum_t pem = {0};
    assert_int_equal(gnutls_load_file(path, &pem), 0);
    gnutls_x509_crt_t crt;
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    assert_int_equal(gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM), 0);
    assert_int_equal(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, ret), 0);
    gnutls_x509_crt_deinit(crt);
    gnutls_free(pem.data);
}

static struct ck__requestheader *new_rh(const char *allowed)
{
    struct ck_apiserver_config config = {
        .requestheader_client_ca_file = proxy_ca,
        .requestheader_allowed_names = allowed,
        .requestheader_username_headers = "X-Remote-User, X-Other-User",
        .requestheader_group_headers = "X-Remote-Group",
        .requestheader_extra_headers_prefix = "X-Remote-Extra-",
    };
    struct ck__requestheader *rh = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck__requestheader_new(&config, &rh, &err), 0);
    assert_non_null(rh);
    return rh;
}

/* On only with the CA file and a username header, as kube-apiserver; bad flags refused. */
static void test_configuration(void **state)
{
    (void)state;
    struct ck__requestheader *rh = NULL;
    struct ck_err err = {0};
    struct ck_apiserver_config config = {.requestheader_client_ca_file = proxy_ca};
    assert_int_equal(ck__requestheader_new(&config, &rh, &err), 0);
    assert_null(rh);
    config.requestheader_username_headers = "";
    assert_int_equal(ck__requestheader_new(&config, &rh, &err), 0);
    assert_null(rh);
    config = (struct ck_apiserver_config){.requestheader_username_headers = "X-Remote-User"};
    assert_int_equal(ck__requestheader_new(&config, &rh, &err), 0);
    assert_null(rh);

    config.requestheader_client_ca_file = proxy_ca;
    config.requestheader_group_headers = "X-Remote-Group,,X-G";
    assert_int_equal(ck__requestheader_new(&config, &rh, &err), CK_EINVAL);
    assert_string_equal(ck_err_message(&err), "empty header \"\"");
    ck_err_release(&err);
    assert_null(rh);

    config.requestheader_group_headers = NULL;
    config.requestheader_client_ca_file = "/nonexistent/ca.crt";
    assert_int_equal(ck__requestheader_new(&config, &rh, &err), CK_EIO);
    assert_non_null(strstr(ck_err_message(&err), "error reading /nonexistent/ca.crt"));
    ck_err_release(&err);
}

/* The request-header CA and the allowed names decide what a certificate is. */
static void test_proxy_certificates(void **state)
{
    (void)state;
    gnutls_datum_t proxy = {0}, other = {0};
    client_der(proxy_dir, &proxy);
    client_der(other_dir, &other);

    struct ck__requestheader *any = new_rh(NULL);
    assert_int_equal(ck__requestheader_check(any, &proxy, 1), CK__PROXY_CERT_YES);
    assert_int_equal(ck__requestheader_check(any, &other, 1), CK__PROXY_CERT_NO);
    assert_int_equal(ck__requestheader_check(any, &proxy, 0), CK__PROXY_CERT_NO);
    assert_int_equal(ck__requestheader_check(NULL, &proxy, 1), CK__PROXY_CERT_NO);
    ck__requestheader_free(any);

    struct ck__requestheader *named = new_rh("aggregator,front-proxy-client");
    assert_int_equal(ck__requestheader_check(named, &proxy, 1), CK__PROXY_CERT_YES);
    assert_int_equal(ck__requestheader_check(named, &other, 1), CK__PROXY_CERT_NO);
    ck__requestheader_free(named);

    struct ck__requestheader *others = new_rh("aggregator");
    assert_int_equal(ck__requestheader_check(others, &proxy, 1), CK__PROXY_CERT_REFUSED);
    ck__requestheader_free(others);

    gnutls_free(proxy.data);
    gnutls_free(other.data);
}

static void assert_groups(const struct ck_auth_user *u, const char *const *want, size_t n)
{
    assert_int_equal(u->n_groups, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(u->groups[i], want[i]);
}

/* The user the headers name, as headerrequest's AuthenticateRequest reads them. */
static void test_user(void **state)
{
    (void)state;
    struct ck__requestheader *rh = new_rh(NULL);
    struct ck_auth_user *u = NULL;

    /* the first username header in the flag's order with a value; its first value */
    const struct ck__header h1[] = {
        {"Accept", "*/*"},
        {"x-other-user", "bob"},
        {"X-Remote-User", ""},
        {"X-REMOTE-GROUP", "devs"},
        {"X-Remote-Group", ""},
        {"x-remote-group", "ops"},
        {"X-Remote-Extra-Scopes", "read"},
        {"X-Remote-Extra-scopes", "write"},
        {"X-Remote-Extra-Acme.com%2Fproject", "p1"},
        {"X-Remote-Extra-bad%zz", "v"},
        {"X-Other-User", "carol"},
    };
    assert_int_equal(ck__requestheader_user(rh, h1, sizeof(h1) / sizeof(h1[0]), &u), 0);
    assert_non_null(u);
    assert_string_equal(u->name, "bob");
    static const char *const g1[] = {"devs", "ops", CK_AUTH_AUTHENTICATED};
    assert_groups(u, g1, 3);
    const json_t *scopes = json_object_get(u->extra, "scopes");
    assert_int_equal(json_array_size(scopes), 2);
    assert_string_equal(json_string_value(json_array_get(scopes, 0)), "read");
    assert_string_equal(json_string_value(json_array_get(scopes, 1)), "write");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(u->extra, "acme.com/project"), 0)), "p1");
    /* a malformed escape is kept as it came */
    assert_non_null(json_object_get(u->extra, "bad%zz"));
    assert_int_equal(json_object_size(u->extra), 3);
    ck_auth_user_free(u);

    /* X-Remote-User first when both have values */
    const struct ck__header h2[] = {{"X-Other-User", "bob"}, {"x-remote-user", "alice"}};
    assert_int_equal(ck__requestheader_user(rh, h2, 2, &u), 0);
    assert_string_equal(u->name, "alice");
    static const char *const g2[] = {CK_AUTH_AUTHENTICATED};
    assert_groups(u, g2, 1);
    assert_int_equal(json_object_size(u->extra), 0);
    ck_auth_user_free(u);

    /* no username: not this authenticator's request, whatever else is there */
    const struct ck__header h3[] = {{"X-Remote-Group", "system:masters"}, {"X-Remote-User", ""}};
    u = (struct ck_auth_user *)1;
    assert_int_equal(ck__requestheader_user(rh, h3, 2, &u), 0);
    assert_null(u);
    assert_int_equal(ck__requestheader_user(rh, NULL, 0, &u), 0);
    assert_null(u);
    ck__requestheader_free(rh);
}

/* The ConfigMap's data as the cluster authentication trust controller writes it. */
static void test_configmap_data(void **state)
{
    (void)state;
    json_t *data = ck__requestheader_configmap_data(NULL, "CLIENT CA");
    assert_non_null(data);
    assert_int_equal(json_object_size(data), 1);
    assert_string_equal(json_string_value(json_object_get(data, "client-ca-file")), "CLIENT CA");
    json_decref(data);

    struct ck__requestheader *rh = new_rh("front-proxy-client");
    data = ck__requestheader_configmap_data(rh, NULL);
    assert_non_null(data);
    assert_null(json_object_get(data, "client-ca-file"));
    assert_string_equal(json_string_value(json_object_get(data, "requestheader-username-headers")),
                        "[\"X-Remote-User\",\"X-Other-User\"]");
    assert_string_equal(json_string_value(json_object_get(data, "requestheader-group-headers")),
                        "[\"X-Remote-Group\"]");
    assert_string_equal(
        json_string_value(json_object_get(data, "requestheader-extra-headers-prefix")),
        "[\"X-Remote-Extra-\"]");
    assert_string_equal(json_string_value(json_object_get(data, "requestheader-allowed-names")),
                        "[\"front-proxy-client\"]");
    assert_string_equal(json_string_value(json_object_get(data, "requestheader-uid-headers")),
                        "[]");
    assert_string_equal(json_string_value(json_object_get(data, "requestheader-client-ca-file")),
                        ck__requestheader_ca_pem(rh));
    assert_non_null(strstr(ck__requestheader_ca_pem(rh), "BEGIN CERTIFICATE"));
    json_decref(data);
    ck__requestheader_free(rh);

    rh = new_rh(NULL);
    data = ck__requestheader_configmap_data(rh, "CLIENT CA");
    assert_string_equal(json_string_value(json_object_get(data, "requestheader-allowed-names")),
                        "[]");
    assert_int_equal(json_object_size(data), 7);
    json_decref(data);
    ck__requestheader_free(rh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configuration),
        cmocka_unit_test(test_proxy_certificates),
        cmocka_unit_test(test_user),
        cmocka_unit_test(test_configmap_data),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
