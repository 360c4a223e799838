/*
 * test_yaml.c - tests for lib/util/yaml.c: YAML read into jansson (scalars
 * typed by YAML 1.2's core schema, quoted scalars always strings, errors
 * with their line), and jansson written as kube-apiserver writes YAML
 * (sigs.k8s.io/yaml over go-yaml v2): sorted keys in go-yaml's order,
 * strings quoted only where a YAML 1.1 reader would mistake them, literal
 * blocks for multi-line strings, empty maps and lists in flow form, and a
 * round trip that gives back the same JSON.
 */
#include "cktest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

static char *to_yaml(const char *json_text)
{
    json_t *v = json_loads(json_text, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    char *text = ck__json_to_yaml(v, NULL);
    json_decref(v);
    assert_non_null(text);
    return text;
}

static void expect_yaml(const char *json_text, const char *want)
{
    char *got = to_yaml(json_text);
    if (strcmp(got, want) != 0)
        fail_msg("%s:\n got: [%s]\nwant: [%s]", json_text, got, want);
    free(got);
}

static void test_objects_are_block_mappings_with_sorted_keys(void **state)
{
    (void)state;
    expect_yaml("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web\","
                "\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                "\"image\":\"nginx\",\"ports\":[{\"containerPort\":80}]}]}}",
                "apiVersion: v1\n"
                "kind: Pod\n"
                "metadata:\n"
                "  labels:\n"
                "    app: web\n"
                "  name: web\n"
                "spec:\n"
                "  containers:\n"
                "  - image: nginx\n"
                "    name: c\n"
                "    ports:\n"
                "    - containerPort: 80\n");
}

static void test_key_order_is_go_yamls(void **state)
{
    (void)state;
    /* numbers inside keys by value; a non-letter (digits too) before a letter */
    expect_yaml("{\"a10\":1,\"a9\":2,\"a_b\":3,\"aB\":4,\"Ab\":5}",
                "Ab: 5\na_b: 3\na9: 2\na10: 1\naB: 4\n");
}

static void test_strings_quoted_only_when_ambiguous(void **state)
{
    (void)state;
    expect_yaml("{\"a\":\"yes\",\"b\":\"on\",\"c\":\"123\",\"d\":\"\",\"e\":\"null\","
                "\"f\":\"2024-01-02T03:04:05Z\",\"g\":\"1.5e3\",\"h\":\"web-1\",\"i\":\"0x1F\","
                "\"j\":\"1:20\",\"k\":\"~\",\"l\":\"True\",\"m\":\"plain text\",\"n\":\"-\","
                "\"o\":\"100m\",\"p\":\".5\"}",
                "a: \"yes\"\nb: \"on\"\nc: \"123\"\nd: \"\"\ne: \"null\"\n"
                "f: \"2024-01-02T03:04:05Z\"\ng: \"1.5e3\"\nh: web-1\ni: \"0x1F\"\nj: \"1:20\"\n"
                "k: \"~\"\nl: \"True\"\nm: plain text\n\"n\": '-'\no: 100m\np: \".5\"\n");
}

static void test_scalars_and_empty_collections(void **state)
{
    (void)state;
    expect_yaml("{\"i\":-3,\"f\":0.5,\"big\":1e+21,\"t\":true,\"n\":null,\"o\":{},\"l\":[]}",
                "big: 1e+21\nf: 0.5\ni: -3\nl: []\n\"n\": null\no: {}\nt: true\n");
    expect_yaml("{\"s\":\"line one\\nline two\\n\"}", "s: |\n  line one\n  line two\n");
}

static void test_round_trip_gives_the_same_json(void **state)
{
    (void)state;
    const char *doc = "{\"a\":{\"b\":[1,2.5,\"3\",true,null,{\"c\":\"yes\"}],\"d\":\"\"},"
                      "\"e\":\"multi\\nline\",\"f\":\"2024-01-02T03:04:05Z\",\"g\":[]}";
    char *yaml = to_yaml(doc);
    json_t *back = NULL;
    assert_int_equal(ck__yaml_to_json(yaml, strlen(yaml), &back, NULL), 0);
    json_t *want = json_loads(doc, 0, NULL);
    if (!json_equal(back, want))
        fail_msg("round trip changed it:\n%s", yaml);
    json_decref(back);
    json_decref(want);
    free(yaml);
}

static void test_reading_yaml(void **state)
{
    (void)state;
    const char *text = "kind: Pod\nreplicas: 3\nok: true\nnothing: null\nquoted: \"3\"\n"
                       "list:\n- a\n- 1.5\n";
    json_t *v = NULL;
    assert_int_equal(ck__yaml_to_json(text, strlen(text), &v, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(v, "kind")), "Pod");
    assert_int_equal(json_integer_value(json_object_get(v, "replicas")), 3);
    assert_true(json_is_true(json_object_get(v, "ok")));
    assert_true(json_is_null(json_object_get(v, "nothing")));
    assert_string_equal(json_string_value(json_object_get(v, "quoted")), "3");
    assert_int_equal(json_array_size(json_object_get(v, "list")), 2);
    json_decref(v);

    struct ck_err err = {0};
    const char *bad = "a: b\nc: [unclosed\n";
    assert_int_equal(ck__yaml_to_json(bad, strlen(bad), &v, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "YAML line"));
}

static void test_too_deep_is_refused(void **state)
{
    (void)state;
    json_t *v = json_array();
    for (int i = 0; i < 100; i++)
        v = json_pack("[o]", v);
    assert_null(ck__json_to_yaml(v, NULL));
    json_decref(v);
}

static void test_allocation_failure_gives_all_or_nothing(void **state)
{
    (void)state;
    json_t *v = json_loads("{\"b\":{\"c\":[1,2,3],\"d\":\"yes\"},\"a\":\"x\"}", 0, NULL);
    char *want = ck__json_to_yaml(v, NULL);
    assert_non_null(want);
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, false);
        char *got = ck__json_to_yaml(v, NULL);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (got)
            assert_string_equal(got, want);
        free(got);
        if (made < n)
            break;
    }
    free(want);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objects_are_block_mappings_with_sorted_keys),
        cmocka_unit_test(test_key_order_is_go_yamls),
        cmocka_unit_test(test_strings_quoted_only_when_ambiguous),
        cmocka_unit_test(test_scalars_and_empty_collections),
        cmocka_unit_test(test_round_trip_gives_the_same_json),
        cmocka_unit_test(test_reading_yaml),
        cmocka_unit_test(test_too_deep_is_refused),
        cmocka_unit_test(test_allocation_failure_gives_all_or_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
