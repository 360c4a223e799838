/*
 * test_managedfields.c - tests for lib/api/managedfields.c: FieldsV1
 * parsing (table of valid and malformed documents) and writing back in
 * structured-merge-diff's form and order, the set algebra, paths as
 * conflict messages print them, and managedFields entries decoded and
 * encoded in kube-apiserver's order.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static void assert_json(const json_t *got, const char *want_text)
{
    json_t *want = load(want_text);
    if (!json_equal((json_t *)got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("got %s\nwant %s", g, want_text);
    }
    json_decref(want);
}

static json_t *parse(const char *text)
{
    json_t *doc = load(text);
    json_t *set = NULL;
    struct ck_err err = {0};
    if (ck_fieldset_from_fields_v1(doc, &set, &err) < 0)
        fail_msg("%s: %s", text, err.msg);
    json_decref(doc);
    return set;
}

static void test_fields_v1_round_trip(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "{}",
        "{\"f:spec\":{\"f:replicas\":{}}}",
        "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:app\":{}}}}",
        ("{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"web\\\"}\":{\".\":{},\"f:image\":{},"
         "\"f:name\":{}}}}}"),
        "{\"f:metadata\":{\"f:finalizers\":{\".\":{},\"v:\\\"a\\\"\":{},\"v:\\\"b\\\"\":{}}}}",
        "{\"f:list\":{\"i:0\":{},\"i:10\":{}}}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_t *set = parse(docs[i]);
        json_t *back = ck_fieldset_to_fields_v1(set);
        assert_json(back, docs[i]);
        json_decref(back);
        json_decref(set);
    }
}

static void test_fields_v1_malformed(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "[]",
        "{\"spec\":{}}",
        "{\"f:spec\":[]}",
        "{\".\":{}}",
        "{\"f:a\":{\".\":{\"x\":{}}}}",
        "{\"f:a\":{\"k:notjson\":{}}}",
        "{\"f:a\":{\"k:{}\":{}}}",
        "{\"f:a\":{\"i:x\":{}}}",
        "{\"f:a\":{\"v:\":{}}}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_t *doc = load(docs[i]);
        json_t *set = NULL;
        struct ck_err err = {0};
        if (ck_fieldset_from_fields_v1(doc, &set, &err) != CK_EINVAL)
            fail_msg("accepted %s", docs[i]);
        assert_null(set);
        json_decref(doc);
    }
}

static void test_output_is_sorted_as_structured_merge_diff_sorts(void **state)
{
    (void)state;
    json_t *set = parse("{\"f:b\":{},\"f:a\":{\"v:2\":{},\"k:{\\\"x\\\":1}\":{},\"f:z\":{},"
                        "\"i:1\":{},\".\":{}}}");
    json_t *back = ck_fieldset_to_fields_v1(set);
    char *text = json_dumps(back, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "{\"f:a\":{\".\":{},\"f:z\":{},\"k:{\\\"x\\\":1}\":{},\"v:2\":{},"
                              "\"i:1\":{}},\"f:b\":{}}");
    free(text);
    json_decref(back);
    json_decref(set);
}

static void test_set_algebra(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b, *uni, *diff, *inter;
    } cases[] = {
        {"{\"f:a\":{}}", "{\"f:b\":{}}", "{\"f:a\":{},\"f:b\":{}}", "{\"f:a\":{}}", "{}"},
        /* a member with children and a bare member of the same path */
        {"{\"f:m\":{\".\":{},\"f:x\":{}}}", "{\"f:m\":{}}", "{\"f:m\":{\".\":{},\"f:x\":{}}}",
         "{\"f:m\":{\"f:x\":{}}}", "{\"f:m\":{}}"},
        {"{\"f:s\":{\"f:x\":{},\"f:y\":{}}}", "{\"f:s\":{\"f:y\":{}}}",
         "{\"f:s\":{\"f:x\":{},\"f:y\":{}}}", "{\"f:s\":{\"f:x\":{}}}", "{\"f:s\":{\"f:y\":{}}}"},
        {"{}", "{\"f:a\":{}}", "{\"f:a\":{}}", "{}", "{}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *a = parse(cases[i].a), *b = parse(cases[i].b);
        json_t *u = ck_fieldset_union(a, b), *d = ck_fieldset_difference(a, b),
               *n = ck_fieldset_intersection(a, b);
        json_t *ue = ck_fieldset_to_fields_v1(u), *de = ck_fieldset_to_fields_v1(d),
               *ne = ck_fieldset_to_fields_v1(n);
        assert_json(ue, cases[i].uni);
        assert_json(de, cases[i].diff);
        assert_json(ne, cases[i].inter);
        assert_true(ck_fieldset_is_empty(n) == (strcmp(cases[i].inter, "{}") == 0));
        json_decref(ue), json_decref(de), json_decref(ne);
        json_decref(u), json_decref(d), json_decref(n);
        json_decref(a), json_decref(b);
    }
}

struct paths {
    char text[512];
};

static int add_path(const char *const *path, size_t n, void *arg)
{
    struct paths *p = arg;
    char *s = ck_fieldpath_string(path, n);
    assert_non_null(s);
    strcat(p->text, s);
    strcat(p->text, ";");
    free(s);
    return 0;
}

static void test_paths_print_as_in_conflicts(void **state)
{
    (void)state;
    json_t *set = parse("{\"f:spec\":{\"f:replicas\":{},\"f:template\":{\"f:spec\":{\"f:"
                        "containers\":{\"k:{\\\"name\\\":\\\"web\\\"}\":{\"f:image\":{}}}}}},"
                        "\"f:metadata\":{\"f:finalizers\":{\"v:\\\"x\\\"\":{}},\"f:labels\":"
                        "{\"f:app\":{}}},\"f:ports\":{\"k:{\\\"port\\\":80,\\\"protocol\\\":"
                        "\\\"TCP\\\"}\":{}}}");
    struct paths p = {""};
    assert_int_equal(ck_fieldset_walk(set, add_path, &p), 0);
    assert_string_equal(p.text, ".metadata.finalizers[=\"x\"];.metadata.labels.app;"
                                ".ports[port=80,protocol=\"TCP\"];.spec.replicas;"
                                ".spec.template.spec.containers[name=\"web\"].image;");
    json_decref(set);
}

static void test_entries_decode_and_encode_in_order(void **state)
{
    (void)state;
    json_t *list =
        load("[{\"manager\":\"b\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
             "\"2026-01-02T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:a\":{}}},"
             "{\"manager\":\"a\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
             "\"2026-01-03T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:b\":{}},"
             "\"subresource\":\"status\"},"
             "{\"manager\":\"z\",\"operation\":\"Apply\",\"apiVersion\":\"v1\",\"time\":"
             "\"2026-01-09T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:c\":{}}}]");
    struct ck_managed_fields mf;
    struct ck_err err = {0};
    assert_int_equal(ck_managed_fields_decode(list, &mf, &err), 0);
    assert_int_equal(mf.n, 3);
    assert_int_equal(ck_managed_fields_find(&mf, "a", "Update", "v1", "status"), 1);
    assert_int_equal(ck_managed_fields_find(&mf, "a", "Update", "v1", ""), -1);
    assert_int_equal(ck_managed_fields_find(&mf, "z", "Apply", "v2", ""), 2); /* any version */
    json_t *out = ck_managed_fields_encode(&mf);
    char *text = json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(
        text, "[{\"manager\":\"z\",\"operation\":\"Apply\",\"apiVersion\":\"v1\",\"time\":"
              "\"2026-01-09T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:c\":{}}},"
              "{\"manager\":\"b\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
              "\"2026-01-02T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:a\":{}}},"
              "{\"manager\":\"a\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
              "\"2026-01-03T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:b\":{}},"
              "\"subresource\":\"status\"}]");
    free(text);
    json_decref(out);
    ck_managed_fields_release(&mf);
    json_decref(list);

    static const char *const bad[] = {
        "{}",
        "[{\"manager\":\"a\",\"operation\":\"Update\",\"fieldsType\":\"FieldsV2\"}]",
        "[{\"manager\":\"a\",\"operation\":\"Replace\",\"fieldsType\":\"FieldsV1\"}]",
        ("[{\"manager\":\"a\",\"operation\":\"Apply\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
         "{\"x\":{}}}]"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *doc = load(bad[i]);
        assert_int_equal(ck_managed_fields_decode(doc, &mf, &err), CK_EINVAL);
        assert_int_equal(mf.n, 0);
        json_decref(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_v1_round_trip),
        cmocka_unit_test(test_fields_v1_malformed),
        cmocka_unit_test(test_output_is_sorted_as_structured_merge_diff_sorts),
        cmocka_unit_test(test_set_algebra),
        cmocka_unit_test(test_paths_print_as_in_conflicts),
        cmocka_unit_test(test_entries_decode_and_encode_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
