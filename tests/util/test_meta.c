/*
 * test_meta.c - metadata getters: present, absent, not a string, no metadata, NULL.
 */
#include "cktest.h"

#include "ckube/internal/util.h"

static void test_meta_str(void **state)
{
    (void)state;
    json_t *obj = json_pack("{s:{s:s, s:i}}", "metadata", "name", "web", "generation", 3);
    assert_string_equal(ck__meta_str(obj, "name"), "web");
    assert_null(ck__meta_str(obj, "namespace"));
    assert_null(ck__meta_str(obj, "generation")); /* not a string */
    json_t *bare = json_object();
    assert_null(ck__meta_str(bare, "name"));
    assert_null(ck__meta_str(NULL, "name"));
    json_decref(bare);
    json_decref(obj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
