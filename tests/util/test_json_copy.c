/*
 * test_json_copy.c - tests for lib/util/json_copy.c: the copy equals
 * json_deep_copy()'s and shares nothing with its original; a tree deeper than
 * the parser's limit is refused; under allocation failure the copy is whole or
 * NULL, with nothing leaked. ck__json_find finds an array's object by a member;
 * ck__json_set_condition makes status.conditions and moves a condition's
 * lastTransitionTime only when its status changes.
 */
#include "cktest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

static const char doc[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80}]}],"
    "\"ratio\":0.25,\"big\":9007199254740993,\"on\":true,\"off\":false,\"none\":null,"
    "\"nulvalue\":\"nul\\u0000value\",\"empty\":{},\"list\":[]}}";

static void test_same_tree_shares_nothing(void **state)
{
    (void)state;
    json_t *v = json_loads(doc, JSON_ALLOW_NUL, NULL);
    assert_non_null(v);
    json_t *want = json_deep_copy(v), *got = ck__json_copy(v);
    assert_true(json_equal(got, want));
    assert_ptr_not_equal(json_object_get(got, "spec"), json_object_get(v, "spec"));
    char *a = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *b = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(a, b); /* members in the same order */
    free(a);
    free(b);
    json_object_set_new(json_object_get(got, "metadata"), "name", json_string("changed"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "metadata"), "name")),
                        "p");
    json_decref(got);
    json_decref(want);
    json_decref(v);
    assert_null(ck__json_copy(NULL));
}

static void test_too_deep_is_refused(void **state)
{
    (void)state;
    json_t *root = json_array(), *at = root;
    for (int i = 0; i < 2100; i++) {
        json_t *inner = json_array();
        json_array_append_new(at, inner);
        at = inner;
    }
    assert_null(ck__json_copy(root));
    json_decref(root);
}

static void test_whole_or_nothing_under_allocation_failure(void **state)
{
    (void)state;
    json_t *v = json_loads(doc, JSON_ALLOW_NUL, NULL);
    assert_non_null(v);
    unsigned long failures = 0;
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, false);
        json_t *got = ck__json_copy(v);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (got)
            assert_true(json_equal(got, v));
        else
            failures++;
        json_decref(got);
        if (made < n)
            break;
    }
    assert_true(failures > 0);
    json_decref(v);
}

static void test_find_by_member(void **state)
{
    (void)state;
    json_t *list =
        json_loads("[{\"name\":\"a\"},7,{\"name\":1},{\"name\":\"b\",\"x\":2}]", 0, NULL);
    assert_non_null(list);
    json_t *b = ck__json_find(list, "name", "b");
    assert_int_equal(json_integer_value(json_object_get(b, "x")), 2);
    assert_ptr_equal(ck__json_find(list, "name", "a"), json_array_get(list, 0));
    assert_null(ck__json_find(list, "name", "c"));
    assert_null(ck__json_find(list, "other", "a"));
    assert_null(ck__json_find(NULL, "name", "a"));
    json_decref(list);
}

static int by_string(const void *x, const void *y)
{
    return strcmp(json_string_value(*(json_t *const *)x), json_string_value(*(json_t *const *)y));
}

static void test_array_sorted_in_place(void **state)
{
    (void)state;
    json_t *list = json_loads("[\"c\",\"a\",\"b\"]", 0, NULL);
    json_t *first = json_array_get(list, 0);
    assert_int_equal(ck__json_array_sort(list, by_string), 0);
    char *text = json_dumps(list, JSON_COMPACT);
    assert_string_equal(text, "[\"a\",\"b\",\"c\"]");
    free(text);
    assert_ptr_equal(json_array_get(list, 2), first); /* the same elements, moved */
    json_t *empty = json_array();
    assert_int_equal(ck__json_array_sort(empty, by_string), 0);
    assert_int_equal(json_array_size(empty), 0);
    json_decref(empty);
    json_decref(list);
}

static const char *condition_field(const json_t *obj, size_t i, const char *key)
{
    const json_t *c =
        json_array_get(json_object_get(json_object_get(obj, "status"), "conditions"), i);
    return json_string_value(json_object_get(c, key));
}

static void test_condition_set_and_its_transition_time(void **state)
{
    (void)state;
    json_t *obj = json_pack("{s:{s:s}}", "metadata", "name", "x");
    assert_int_equal(ck__json_set_condition(obj, "Available", "False", "Why", "no", 0), 0);
    assert_string_equal(condition_field(obj, 0, "type"), "Available");
    assert_string_equal(condition_field(obj, 0, "lastTransitionTime"), "1970-01-01T00:00:00Z");
    /* the same status: the time stays, the rest follows */
    assert_int_equal(ck__json_set_condition(obj, "Available", "False", "Other", "still", 60), 0);
    assert_string_equal(condition_field(obj, 0, "lastTransitionTime"), "1970-01-01T00:00:00Z");
    assert_string_equal(condition_field(obj, 0, "reason"), "Other");
    assert_string_equal(condition_field(obj, 0, "message"), "still");
    /* a new status moves it; another type is appended */
    assert_int_equal(ck__json_set_condition(obj, "Available", "True", "Passed", "ok", 120), 0);
    assert_string_equal(condition_field(obj, 0, "lastTransitionTime"), "1970-01-01T00:02:00Z");
    assert_int_equal(ck__json_set_condition(obj, "Dangling", "False", "Found", "ok", 180), 0);
    assert_string_equal(condition_field(obj, 1, "type"), "Dangling");
    assert_string_equal(condition_field(obj, 0, "status"), "True");
    json_decref(obj);
}

int main(void)
{
    json_set_alloc_funcs(ck__malloc, free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_tree_shares_nothing),
        cmocka_unit_test(test_too_deep_is_refused),
        cmocka_unit_test(test_whole_or_nothing_under_allocation_failure),
        cmocka_unit_test(test_find_by_member),
        cmocka_unit_test(test_array_sorted_in_place),
        cmocka_unit_test(test_condition_set_and_its_transition_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
