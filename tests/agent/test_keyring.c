/*
 * test_keyring.c - tests for lib/agent/keyring.c: which credentials of a pod's image
 * pull secrets a pull tries, as kubelet's credential provider keyring
 * (pkg/credentialprovider/keyring_test.go's cases): the image's repository normalized,
 * the keys' hosts, ports, globs and paths, the more specific key first, docker.io's
 * aliases, "auth" over username and password, both secret types, and the secrets that
 * add nothing or are malformed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/agent/internal.h"
#include "ckube/internal/util.h"

/* A Secret of type with data key holding base64 of config (JSON text). */
static json_t *secret(const char *type, const char *key, const char *config)
{
    char *b64 = ck_base64_encode(config, strlen(config));
    json_t *s = json_pack("{s:s, s:{s:s}}", "type", type, "data", key, b64);
    free(b64);
    return s;
}

/* A keyring of one dockerconfigjson secret whose auths are the JSON text auths. */
static void keyring_of(struct ck__keyring *k, const char *auths)
{
    char config[2048];
    snprintf(config, sizeof(config), "{\"auths\": %s}", auths);
    json_t *s = secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", config);
    struct ck_err err = {0};
    assert_int_equal(ck__keyring_add_secret(k, s, &err), 0);
    json_decref(s);
}

/* The usernames the pull of image tries, joined by ",". */
static void users_for(const struct ck__keyring *k, const char *image, char *buf, size_t size)
{
    char *repo = ck__image_repository(image);
    assert_non_null(repo);
    const struct ck__cred *creds[8];
    size_t n = ck__keyring_lookup(k, repo, creds, 8);
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? "," : "", creds[i]->username);
    }
    free(repo);
}

static void test_image_repository_normalized(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"busybox", "docker.io/library/busybox"},
        {"busybox:1.36", "docker.io/library/busybox"},
        {"library/busybox@sha256:abc", "docker.io/library/busybox"},
        {"user/app:v1", "docker.io/user/app"},
        {"docker.io/busybox", "docker.io/busybox"},
        {"index.docker.io/busybox:1", "docker.io/library/busybox"},
        {"index.docker.io/user/app", "docker.io/user/app"},
        {"127.0.0.1:5000/busybox:1", "127.0.0.1:5000/busybox"},
        {"localhost/app", "localhost/app"},
        {"quay.io/coreos/etcd:v3.5@sha256:0123", "quay.io/coreos/etcd"},
        {"registry:5000/a/b", "registry:5000/a/b"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *repo = ck__image_repository(cases[i][0]);
        assert_non_null(repo);
        if (strcmp(repo, cases[i][1]) != 0)
            fail_msg("%s: %s, want %s", cases[i][0], repo, cases[i][1]);
        free(repo);
    }
}

static void test_host_port_and_path_match(void **state)
{
    (void)state;
    struct ck__keyring k = {0};
    keyring_of(&k, "{\"registry.example.com\": {\"username\": \"plain\", \"password\": \"p\"},"
                   " \"https://ported.example.com:5000/v2/\": {\"username\": \"ported\"},"
                   " \"quay.io/coreos\": {\"username\": \"coreos\"},"
                   " \"quay.io\": {\"username\": \"quay\"},"
                   " \"*.glob.io\": {\"username\": \"glob\"}}");
    char users[256];
    users_for(&k, "registry.example.com/app:1", users, sizeof(users));
    assert_string_equal(users, "plain");
    /* a port must be the same: none is not 5000 */
    users_for(&k, "ported.example.com/app", users, sizeof(users));
    assert_string_equal(users, "");
    users_for(&k, "ported.example.com:5000/app", users, sizeof(users));
    assert_string_equal(users, "ported");
    users_for(&k, "registry.example.com:5000/app", users, sizeof(users));
    assert_string_equal(users, "");
    /* the more specific key first, then the host's */
    users_for(&k, "quay.io/coreos/etcd:v3", users, sizeof(users));
    assert_string_equal(users, "coreos,quay");
    users_for(&k, "quay.io/other/app", users, sizeof(users));
    assert_string_equal(users, "quay");
    /* a glob matches one host part, and as many parts are needed */
    users_for(&k, "a.glob.io/app", users, sizeof(users));
    assert_string_equal(users, "glob");
    users_for(&k, "a.b.glob.io/app", users, sizeof(users));
    assert_string_equal(users, "");
    /* a host that is only a suffix is another host */
    users_for(&k, "example.com/app", users, sizeof(users));
    assert_string_equal(users, "");
    /* a short name is docker.io's, which has no credentials here */
    users_for(&k, "busybox", users, sizeof(users));
    assert_string_equal(users, "");
    ck__keyring_release(&k);
}

static void test_docker_hub_aliases(void **state)
{
    (void)state;
    struct ck__keyring k = {0};
    keyring_of(&k, "{\"https://index.docker.io/v1/\": {\"username\": \"hub\"},"
                   " \"127.0.0.1:5000\": {\"username\": \"local\"}}");
    char users[256];
    users_for(&k, "busybox:1", users, sizeof(users));
    assert_string_equal(users, "hub");
    users_for(&k, "docker.io/user/app", users, sizeof(users));
    assert_string_equal(users, "hub");
    users_for(&k, "index.docker.io/user/app", users, sizeof(users));
    assert_string_equal(users, "hub");
    users_for(&k, "127.0.0.1:5000/busybox", users, sizeof(users));
    assert_string_equal(users, "local");
    users_for(&k, "ghcr.io/user/app", users, sizeof(users));
    assert_string_equal(users, "");
    ck__keyring_release(&k);

    /* "docker.io" as a key matches docker.io's images directly */
    keyring_of(&k, "{\"docker.io\": {\"username\": \"short\"}}");
    users_for(&k, "busybox", users, sizeof(users));
    assert_string_equal(users, "short");
    ck__keyring_release(&k);
}

static void test_auth_overrides_username_and_password(void **state)
{
    (void)state;
    struct ck__keyring k = {0};
    char *auth = ck_base64_encode("alice:s3cr:et", 13);
    char auths[256];
    snprintf(auths, sizeof(auths),
             "{\"r.example.com\": {\"username\": \"bob\", \"password\": \"x\", \"auth\": \"%s\"}}",
             auth);
    free(auth);
    keyring_of(&k, auths);
    const struct ck__cred *creds[2];
    assert_int_equal(ck__keyring_lookup(&k, "r.example.com/app", creds, 2), 1);
    assert_string_equal(creds[0]->username, "alice");
    assert_string_equal(creds[0]->password, "s3cr:et");
    ck__keyring_release(&k);
}

static void test_secrets_in_order_and_types(void **state)
{
    (void)state;
    struct ck__keyring k = {0};
    struct ck_err err = {0};
    json_t *a = secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson",
                       "{\"auths\": {\"r.example.com\": {\"username\": \"first\"}}}");
    json_t *b = secret("kubernetes.io/dockercfg", ".dockercfg",
                       "{\"https://r.example.com\": {\"username\": \"second\"}}");
    /* other types, and a pull type whose key is missing, add nothing */
    json_t *opaque = secret("Opaque", ".dockerconfigjson",
                            "{\"auths\": {\"r.example.com\": {\"username\": \"no\"}}}");
    json_t *wrong_key = secret("kubernetes.io/dockercfg", ".dockerconfigjson",
                               "{\"r.example.com\": {\"username\": \"no\"}}");
    assert_int_equal(ck__keyring_add_secret(&k, a, &err), 0);
    assert_int_equal(ck__keyring_add_secret(&k, opaque, &err), 0);
    assert_int_equal(ck__keyring_add_secret(&k, wrong_key, &err), 0);
    assert_int_equal(ck__keyring_add_secret(&k, b, &err), 0);
    char users[256];
    users_for(&k, "r.example.com/app:2", users, sizeof(users));
    assert_string_equal(users, "first,second");
    ck__keyring_release(&k);
    json_decref(a);
    json_decref(b);
    json_decref(opaque);
    json_decref(wrong_key);
}

static void test_malformed_secrets_fail(void **state)
{
    (void)state;
    const char *configs[] = {
        "not json",
        "[1]",
        "{\"auths\": []}",
        "{\"auths\": {\"r.example.com\": \"x\"}}",
        "{\"auths\": {\"r.example.com\": {\"auth\": \"bm9jb2xvbg==\"}}}", /* "nocolon" */
    };
    for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
        struct ck__keyring k = {0};
        struct ck_err err = {0};
        json_t *s = secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", configs[i]);
        if (ck__keyring_add_secret(&k, s, &err) != CK_EINVAL)
            fail_msg("config %zu (%s) was accepted", i, configs[i]);
        assert_true(err.msg[0] != 0);
        ck__keyring_release(&k);
        json_decref(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_repository_normalized),
        cmocka_unit_test(test_host_port_and_path_match),
        cmocka_unit_test(test_docker_hub_aliases),
        cmocka_unit_test(test_auth_overrides_username_and_password),
        cmocka_unit_test(test_secrets_in_order_and_types),
        cmocka_unit_test(test_malformed_secrets_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
