/*
 * test_json_dump.c - tests for lib/util/json_dump.c: the same text as
 * json_dumps(), and under allocation failure (jansson allocating through
 * the hook) either that exact text or NULL, never text with pieces missing.
 */
#include "cktest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

static const char doc[] =
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web\","
    "\"labels\":{\"app\":\"web\",\"quote\\\"d\":\"tab\\there\",\"accent\":\"\\u00e9t\\u00e9\"}},"
    "\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"ratio\":0.5,"
    "\"list\":[true,false,null,1,\"two\",{\"three\":[]}]}}";

static void test_same_text_as_json_dumps(void **state)
{
    (void)state;
    json_t *v = json_loads(doc, 0, NULL);
    assert_non_null(v);
    static const size_t flags[] = {JSON_COMPACT | JSON_PRESERVE_ORDER, JSON_INDENT(2),
                                   JSON_COMPACT | JSON_SORT_KEYS};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        char *want = json_dumps(v, flags[i]);
        size_t len = 0;
        char *got = ck__json_dumps(v, flags[i], &len);
        assert_string_equal(got, want);
        assert_int_equal(len, strlen(want));
        free(want);
        free(got);
    }
    char *text = ck__json_dumps(v, JSON_COMPACT, NULL); /* the length is optional */
    assert_non_null(text);
    free(text);
    json_decref(v);
    assert_null(ck__json_dumps(NULL, JSON_COMPACT, NULL));
}

/* A text longer than the first allocation is written whole, as a short one is. */
static void test_long_text(void **state)
{
    (void)state;
    json_t *v = json_object();
    char key[16], value[512];
    memset(value, 'x', sizeof(value) - 1);
    value[sizeof(value) - 1] = '\0';
    for (int i = 0; i < 100; i++) { /* about 52 KiB */
        snprintf(key, sizeof(key), "k%d", i);
        json_object_set_new(v, key, json_string(value));
    }
    char *want = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t len = 0;
    char *got = ck__json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
    assert_true(strlen(want) > 50000);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    free(got);
    unsigned long failures = 0; /* every allocation failing in turn: whole or nothing */
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, false);
        got = ck__json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (got)
            assert_string_equal(got, want);
        else
            failures++;
        free(got);
        if (made < n)
            break;
    }
    assert_true(failures > 0);
    free(want);
    json_decref(v);
}

static void test_whole_or_nothing_under_allocation_failure(void **state)
{
    (void)state;
    json_t *v = json_loads(doc, 0, NULL);
    char *want = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    unsigned long failures = 0;
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, false);
        char *got = ck__json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER, NULL);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (got)
            assert_string_equal(got, want);
        else
            failures++;
        free(got);
        if (made < n)
            break;
    }
    assert_true(failures > 0); /* the buffer itself comes from the hook */
    free(want);
    json_decref(v);
}

int main(void)
{
    json_set_alloc_funcs(ck__malloc, free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_text_as_json_dumps),
        cmocka_unit_test(test_whole_or_nothing_under_allocation_failure),
        cmocka_unit_test(test_long_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
