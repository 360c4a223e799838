/*
 * test_configdata.c - the ConfigMap and Secret kinds (lib/api/kinds/configmap.c,
 * secret.c, configdata.c): key rules, the 1 MiB limit, immutability, stringData
 * merged into data, the per-type key rules of Secrets, and their table cells, with
 * Kubernetes' messages.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static const struct ck_kind *kind(const char *resource)
{
    return ck_kind_lookup("", "v1", resource);
}

/* The errors of obj (against old) as one string, "; "-joined; caller frees. */
static char *errors_of(const struct ck_kind *k, const json_t *obj, const json_t *old)
{
    struct ck_field_errors errs = {0};
    ck_meta_validate(k, obj, old, &errs);
    char *all = calloc(1, 1);
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        char *next = NULL;
        if (asprintf(&next, "%s%s%s", all, *all ? "; " : "", s) < 0)
            abort();
        free(all);
        free(s);
        all = next;
    }
    ck_field_errors_release(&errs);
    return all;
}

static void expect(const char *resource, const char *obj_text, const char *old_text,
                   const char *want)
{
    json_t *obj = load(obj_text), *old = old_text ? load(old_text) : NULL;
    const struct ck_kind *k = kind(resource);
    assert_int_equal(ck_kind_default(k, obj), 0);
    char *got = errors_of(k, obj, old);
    if (want ? !strstr(got, want) : *got != '\0')
        fail_msg("%s: got \"%s\", want \"%s\"", obj_text, got, want ? want : "");
    free(got);
    json_decref(obj);
    json_decref(old);
}

#define CM(body)     "{\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"}," body "}"
#define SECRET(body) "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"}," body "}"

static void test_config_map_keys_and_duplicates(void **state)
{
    (void)state;
    expect("configmaps", CM("\"data\":{\"a.b_c-D\":\"x\"},\"binaryData\":{\"bin\":\"AAE=\"}"), NULL,
           NULL);
    expect("configmaps", CM("\"data\":{\"bad key\":\"x\"}"), NULL,
           "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of "
           "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
           "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
    expect("configmaps", CM("\"data\":{\"..\":\"x\"}"), NULL,
           "data[..]: Invalid value: \"..\": must not be '..'");
    expect("configmaps", CM("\"data\":{\"..a\":\"x\"}"), NULL, "must not start with '..'");
    expect("configmaps", CM("\"data\":{\"k\":\"x\"},\"binaryData\":{\"k\":\"eA==\"}"), NULL,
           "binaryData[k]: Invalid value: \"k\": duplicate of key present in data");
}

static void test_one_mebibyte_at_most(void **state)
{
    (void)state;
    size_t n = 1024 * 1024 + 1;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    json_t *cm = load(CM("\"data\":{}"));
    json_object_set_new(json_object_get(cm, "data"), "big", json_string(big));
    char *got = errors_of(kind("configmaps"), cm, NULL);
    assert_non_null(strstr(got, "Too long: may not be more than 1048576 bytes"));
    free(got);
    big[n - 1] = '\0'; /* exactly 1 MiB: fine */
    json_object_set_new(json_object_get(cm, "data"), "big", json_string(big));
    got = errors_of(kind("configmaps"), cm, NULL);
    assert_string_equal(got, "");
    free(got);
    json_decref(cm);
    free(big);
}

static void test_immutable_keeps_data(void **state)
{
    (void)state;
    const char *old = CM("\"immutable\":true,\"data\":{\"a\":\"1\"}");
    expect("configmaps",
           CM("\"immutable\":true,\"data\":{\"a\":\"1\"},\"metadata\":{\"name\":"
              "\"c\",\"namespace\":\"d\",\"labels\":{\"x\":\"y\"}}"),
           old, NULL);
    expect("configmaps", CM("\"immutable\":true,\"data\":{\"a\":\"2\"}"), old,
           "data: Forbidden: field is immutable when `immutable` is set");
    expect("configmaps", CM("\"data\":{\"a\":\"1\"}"), old,
           "immutable: Forbidden: field is immutable when `immutable` is set");
    /* not immutable before: anything goes */
    expect("configmaps", CM("\"immutable\":true,\"data\":{\"a\":\"2\"}"),
           CM("\"data\":{\"a\":\"1\"}"), NULL);
    expect("secrets", SECRET("\"immutable\":true,\"data\":{\"a\":\"Mg==\"}"),
           SECRET("\"immutable\":true,\"type\":\"Opaque\",\"data\":{\"a\":\"MQ==\"}"),
           "data: Forbidden: field is immutable when `immutable` is set");
}

static void test_string_data_merges_into_data(void **state)
{
    (void)state;
    json_t *s = load(SECRET("\"data\":{\"a\":\"b2xk\",\"b\":\"YmI=\"},"
                            "\"stringData\":{\"a\":\"new\",\"c\":\"\"}"));
    assert_int_equal(ck_kind_default(kind("secrets"), s), 0);
    assert_null(json_object_get(s, "stringData"));
    const json_t *data = json_object_get(s, "data");
    assert_string_equal(json_string_value(json_object_get(data, "a")), "bmV3"); /* "new" wins */
    assert_string_equal(json_string_value(json_object_get(data, "b")), "YmI=");
    assert_string_equal(json_string_value(json_object_get(data, "c")), "");
    assert_string_equal(json_string_value(json_object_get(s, "type")), "Opaque");
    json_decref(s);
}

static void test_secret_type_rules(void **state)
{
    (void)state;
    expect("secrets", SECRET("\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"eA==\"}"),
           NULL, "data[tls.key]: Required value");
    expect("secrets",
           SECRET("\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"eA==\",\"tls.key\":"
                  "\"eA==\"}"),
           NULL, NULL);
    expect("secrets", SECRET("\"type\":\"kubernetes.io/basic-auth\",\"data\":{}"), NULL,
           "data[username]: Required value; data[password]: Required value");
    expect("secrets", SECRET("\"type\":\"kubernetes.io/basic-auth\",\"data\":{\"password\":\"\"}"),
           NULL, NULL);
    expect("secrets", SECRET("\"type\":\"kubernetes.io/ssh-auth\",\"data\":{}"), NULL,
           "data[ssh-privatekey]: Required value");
    expect("secrets", SECRET("\"type\":\"kubernetes.io/dockerconfigjson\",\"data\":{}"), NULL,
           "data[.dockerconfigjson]: Required value");
    /* base64 of "{not json" */
    expect("secrets",
           SECRET("\"type\":\"kubernetes.io/dockerconfigjson\",\"data\":{\".dockerconfigjson\":"
                  "\"e25vdCBqc29u\"}"),
           NULL, "data[.dockerconfigjson]: Invalid value: <secret contents redacted>");
    expect("secrets",
           SECRET("\"type\":\"kubernetes.io/dockerconfigjson\",\"data\":{\".dockerconfigjson\":"
                  "\"e30=\"}"),
           NULL, NULL);
    expect("secrets", SECRET("\"type\":\"kubernetes.io/service-account-token\""), NULL,
           "metadata.annotations[kubernetes.io/service-account.name]: Required value");
    expect("secrets", SECRET("\"data\":{\"a\":\"!!!\"}"), NULL, "data[a]: Invalid value");
    expect("secrets", SECRET("\"type\":\"Other\""), SECRET("\"type\":\"Opaque\""),
           "type: Invalid value: \"Other\": field is immutable");
}

static void test_cells_and_field_labels(void **state)
{
    (void)state;
    json_t *s = load(SECRET("\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"eA==\","
                            "\"tls.key\":\"eA==\"}"));
    json_t *cells = json_array();
    assert_int_equal(ck_table_row_cells(kind("secrets"), s, 0, cells), 0);
    assert_string_equal(json_string_value(json_array_get(cells, 1)), "kubernetes.io/tls");
    assert_int_equal(json_integer_value(json_array_get(cells, 2)), 2);
    char buf[64];
    assert_string_equal(ck_kind_field_value(kind("secrets"), "type", s, buf, sizeof(buf)),
                        "kubernetes.io/tls");
    json_decref(cells);
    json_decref(s);
    json_t *cm = load(CM("\"data\":{\"a\":\"1\"},\"binaryData\":{\"b\":\"eA==\"}"));
    cells = json_array();
    assert_int_equal(ck_table_row_cells(kind("configmaps"), cm, 0, cells), 0);
    assert_int_equal(json_integer_value(json_array_get(cells, 1)), 2);
    json_decref(cells);
    json_decref(cm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_map_keys_and_duplicates),
        cmocka_unit_test(test_one_mebibyte_at_most),
        cmocka_unit_test(test_immutable_keeps_data),
        cmocka_unit_test(test_string_data_merges_into_data),
        cmocka_unit_test(test_secret_type_rules),
        cmocka_unit_test(test_cells_and_field_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
