/*
 * test_jsonpath.c - tests for lib/api/jsonpath.c: Kubernetes' JSONPath as a
 * CustomResourceDefinition's printer columns use it (the first value
 * selected, missing keys allowed): fields, quoted keys, indexes, slices,
 * wildcards, unions, recursive descent, filters, literals; client-go's parse
 * errors; evaluation errors select nothing; and the Table cells of a custom
 * resource's columns.
 */
#include "cktest.h"

#include <stdio.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static const char object_text[] =
    "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app.kubernetes.io/name\":\"web\",\"tier\":\"x\"}},"
    "\"spec\":{\"items\":[{\"name\":\"b\",\"n\":1},{\"name\":\"c\",\"n\":2,\"r\":2.5}],"
    "\"replicas\":3,\"paused\":false},"
    "\"status\":{\"conditions\":[{\"type\":\"Synced\",\"status\":\"False\"},"
    "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Up\"}]}}";

/* The first value path selects, as compact JSON; "<none>" when nothing. */
static char *first(const char *path, char *buf, size_t size)
{
    json_t *obj = load(object_text);
    json_t *v = ck_jsonpath_first(path, obj);
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(buf, size, "%s", text ? text : "<none>");
    free(text);
    json_decref(v);
    json_decref(obj);
    return buf;
}

static void test_selects_what_kubernetes_selects(void **state)
{
    (void)state;
    static const struct {
        const char *path, *want;
    } cases[] = {
        {".metadata.name", "\"a\""},
        {"$.metadata.name", "\"a\""},
        {".status.conditions[?(@.type==\"Ready\")].status", "\"True\""},
        {".status.conditions[?(@.type=='Ready')].reason", "\"Up\""},
        {".status.conditions[?(@.type!=\"Ready\")].type", "\"Synced\""},
        {".status.conditions[?(@.reason)].type", "\"Ready\""},
        {".spec.items[?(@.n>1)].name", "\"c\""},
        {".spec.items[?(@.n<=1)].name", "\"b\""},
        {".spec.items[0].name", "\"b\""},
        {".spec.items[1].name", "\"c\""},
        {".spec.items[-1].name", "\"c\""},
        {".spec.items[*].name", "\"b\""},
        {".spec.items[1:2].name", "\"c\""},
        {".spec.items[::2].name", "\"b\""},
        {".spec.items[1,0].name", "\"c\""},
        {".metadata.labels['app.kubernetes.io/name']",
         "<none>"}, /* client-go: fields app, kubernetes, io/name */
        {".metadata.labels.app\\.kubernetes\\.io/name", "\"web\""},
        {".metadata.labels['tier']", "\"x\""},
        {".metadata.labels.*", "\"web\""},
        {"..reason", "\"Up\""},
        {".spec.replicas", "3"},
        {".spec.paused", "false"},
        {".spec", "{\"items\":[{\"name\":\"b\",\"n\":1},{\"name\":\"c\",\"n\":2,\"r\":2.5}],"
                  "\"replicas\":3,\"paused\":false}"},
        {".", "<object>"},
        {".spec.missing", "<none>"},
        {".spec.items[5].name", "<none>"},             /* out of bounds */
        {".spec.items[?(@.n==\"1\")].name", "<none>"}, /* int against string */
        {".spec.items[?(@.r==2.5)].name", "\"c\""},
        {".spec.items[?(@.r==2)].name", "<none>"}, /* real against int */
        {".spec.replicas[0]", "<none>"},           /* not an array */
        {".metadata.name}ignored", "\"a\""},
        {"range", "<none>"},
    };
    char buf[512];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        first(cases[i].path, buf, sizeof(buf));
        if (strcmp(cases[i].want, "<object>") == 0)
            assert_true(buf[0] == '{');
        else if (strcmp(buf, cases[i].want) != 0)
            fail_msg("%s: got %s, want %s", cases[i].path, buf, cases[i].want);
        struct ck_err err = {0};
        assert_int_equal(ck_jsonpath_check(cases[i].path, &err), 0);
    }
}

static void test_parse_errors_are_client_go_messages(void **state)
{
    (void)state;
    static const struct {
        const char *path, *msg;
    } cases[] = {
        {".spec.items[0", "unterminated array"},
        {".spec.items[a]", "invalid array index a"},
        {".spec.items[\"a\"]", "invalid array index \"a\""},
        {".spec.items[?(@.a==1]", "unterminated filter"},
        {".spec.items[?(@.a==1)", "unclosed array expect ]"},
        {".a \"b", "unterminated quoted string"},
        {"....a", "invalid multiple recursive descent"},
        {"!a", "unrecognized character in action: U+0021 '!'"},
        {".a{", "unrecognized character in action: U+007B '{'"},
        {".a\n", "unclosed action"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_err err = {0};
        assert_int_equal(ck_jsonpath_check(cases[i].path, &err), CK_EINVAL);
        if (strcmp(err.msg, cases[i].msg) != 0)
            fail_msg("%s: got \"%s\", want \"%s\"", cases[i].path, err.msg, cases[i].msg);
        char buf[64];
        assert_string_equal(first(cases[i].path, buf, sizeof(buf)), "<none>");
    }
    char long_path[CK_JSONPATH_MAX + 2];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[0] = '.';
    long_path[sizeof(long_path) - 1] = '\0';
    struct ck_err err = {0};
    assert_int_equal(ck_jsonpath_check(long_path, &err), CK_EINVAL);
    long_path[CK_JSONPATH_MAX] = '\0';
    assert_int_equal(ck_jsonpath_check(long_path, &err), 0);
}

/* A CRD's columns: JSONPath cells, and the columns end at one that does not parse. */
static void test_printer_columns_use_jsonpath(void **state)
{
    (void)state;
    struct ck_schemas *base = NULL;
    assert_int_equal(ck_api_builtin_schemas(&base, NULL), 0);
    json_t *crd =
        load("{\"metadata\":{\"name\":\"widgets.example.com\"},"
             "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\","
             "\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
             "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
             "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
             "\"x-kubernetes-preserve-unknown-fields\":true}},"
             "\"additionalPrinterColumns\":["
             "{\"name\":\"Ready\",\"type\":\"string\","
             "\"jsonPath\":\".status.conditions[?(@.type==\\\"Ready\\\")].status\"},"
             "{\"name\":\"First\",\"type\":\"string\",\"jsonPath\":\".spec.items[0].name\"},"
             "{\"name\":\"Count\",\"type\":\"integer\",\"jsonPath\":\".spec.items[-1].n\"},"
             "{\"name\":\"Bad\",\"type\":\"string\",\"jsonPath\":\".spec.items[x]\"},"
             "{\"name\":\"After\",\"type\":\"string\",\"jsonPath\":\".metadata.name\"}]}]}}");
    struct ck_crd_kinds *kinds = NULL;
    assert_int_equal(ck_crd_kinds_new(crd, base, &kinds, NULL), 0);
    const struct ck_kind *kind = ck_crd_kinds_get(kinds, 0);
    assert_int_equal(kind->n_columns, 4); /* Name, Ready, First, Count */
    json_t *obj = load(object_text);
    json_t *cells = json_array();
    assert_int_equal(ck_table_row_cells(kind, obj, 0, cells), 0);
    char *text = json_dumps(cells, JSON_COMPACT);
    assert_string_equal(text, "[\"a\",\"True\",\"b\",2]");
    free(text);
    json_decref(cells);
    json_decref(obj);
    ck_crd_kinds_free(kinds);
    json_decref(crd);
    ck_schemas_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selects_what_kubernetes_selects),
        cmocka_unit_test(test_parse_errors_are_client_go_messages),
        cmocka_unit_test(test_printer_columns_use_jsonpath),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
