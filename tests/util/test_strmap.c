/*
 * test_strmap.c - the shared string map and the allocation hook: put, find,
 * remove, inline payloads, iteration over a map that grew through several
 * doublings, and the hook failing exactly the chosen allocation (once or
 * from then on) with the map left as it was.
 */
#include "cktest.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

static void test_put_find_remove(void **state)
{
    (void)state;
    struct ck__strmap m = {0};
    int values[3] = {1, 2, 3};
    bool created = false;
    assert_non_null(ck__strmap_put(&m, "a", &values[0], &created));
    assert_true(created);
    assert_non_null(ck__strmap_put(&m, "b", &values[1], &created));
    struct ck__strmap_entry *again = ck__strmap_put(&m, "a", &values[2], &created);
    assert_false(created);
    assert_ptr_equal(again->value, &values[0]); /* an existing key keeps its value */
    assert_int_equal(m.len, 2);
    assert_ptr_equal(ck__strmap_find(&m, "b")->value, &values[1]);
    assert_null(ck__strmap_find(&m, "c"));
    assert_ptr_equal(ck__strmap_remove(&m, "a"), &values[0]);
    assert_null(ck__strmap_remove(&m, "a"));
    assert_int_equal(m.len, 1);
    ck__strmap_release(&m);
    assert_int_equal(m.len, 0);
}

static void test_growth_and_iteration(void **state)
{
    (void)state;
    struct ck__strmap m = {0};
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "ns/obj-%d", i);
        struct ck__strmap_entry *e = ck__strmap_insert(&m, key, sizeof(int));
        assert_non_null(e);
        *(int *)e->value = i;
    }
    assert_int_equal(m.len, 1000);
    assert_true(m.nbuckets >= 1000 && (m.nbuckets & (m.nbuckets - 1)) == 0);
    unsigned char seen[1000] = {0};
    size_t bucket = 0, count = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&m, NULL, &bucket); e;
         e = ck__strmap_next(&m, e, &bucket)) {
        int v = *(int *)e->value;
        snprintf(key, sizeof(key), "ns/obj-%d", v);
        assert_string_equal(e->key, key);
        assert_int_equal(seen[v], 0);
        seen[v] = 1;
        count++;
    }
    assert_int_equal(count, 1000);
    ck__strmap_remove_entry(&m, ck__strmap_find(&m, "ns/obj-7"));
    assert_null(ck__strmap_find(&m, "ns/obj-7"));
    assert_int_equal(m.len, 999);
    ck__strmap_release(&m);
}

static void test_alloc_hook_fails_the_chosen_call(void **state)
{
    (void)state;
    ck__alloc_fail_at(2, false);
    void *first = ck__malloc(8);
    void *second = ck__malloc(8);
    void *third = ck__malloc(8);
    assert_non_null(first);
    assert_null(second);
    assert_non_null(third);
    assert_int_equal(ck__alloc_fail_at(1, true), 3); /* counts the calls made */
    assert_null(ck__calloc(1, 8));
    assert_null(ck__strdup("x"));
    assert_null(ck__realloc(first, 64));
    ck__alloc_fail_at(0, false);
    char *copy = ck__strdup("kept");
    assert_string_equal(copy, "kept");
    free(first);
    free(third);
    free(copy);
}

static void test_failed_insert_leaves_the_map_unchanged(void **state)
{
    (void)state;
    struct ck__strmap m = {0};
    bool created;
    assert_non_null(ck__strmap_put(&m, "kept", NULL, &created));
    for (unsigned long n = 1;; n++) {
        ck__alloc_fail_at(n, true);
        struct ck__strmap_entry *e = ck__strmap_put(&m, "new", NULL, &created);
        ck__alloc_fail_at(0, false);
        if (e)
            break;
        assert_int_equal(m.len, 1);
        assert_null(ck__strmap_find(&m, "new"));
        assert_non_null(ck__strmap_find(&m, "kept"));
    }
    assert_int_equal(m.len, 2);
    ck__strmap_release(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_find_remove),
        cmocka_unit_test(test_growth_and_iteration),
        cmocka_unit_test(test_alloc_hook_fails_the_chosen_call),
        cmocka_unit_test(test_failed_insert_leaves_the_map_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
