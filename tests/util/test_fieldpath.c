/*
 * test_fieldpath.c - tests for lib/util/fieldpath.c: steps appended to a field path,
 * the way the schema walks build theirs, and cut to fit the buffer at any length
 * without writing past it.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/internal/util.h"

static void test_steps(void **state)
{
    (void)state;
    char buf[64];
    size_t len = ck__path_push(buf, sizeof(buf), 0, "", "spec", NULL);
    len = ck__path_push(buf, sizeof(buf), len, ".", "containers", NULL);
    len = ck__path_push_index(buf, sizeof(buf), len, 12);
    len = ck__path_push(buf, sizeof(buf), len, ".", "env", NULL);
    len = ck__path_push(buf, sizeof(buf), len, "[", "HOME", "]");
    assert_string_equal(buf, "spec.containers[12].env[HOME]");
    assert_int_equal(len, strlen(buf));
    /* a step taken back is a shorter length; the next step overwrites it */
    len = ck__path_push_index(buf, sizeof(buf), strlen("spec.containers"), 0);
    assert_string_equal(buf, "spec.containers[0]");
    assert_int_equal(ck__path_push_index(buf, sizeof(buf), 0, 18446744073709551615u), 22);
    assert_string_equal(buf, "[18446744073709551615]");
    assert_int_equal(ck__path_push(buf, sizeof(buf), 0, NULL, NULL, NULL), 0);
    assert_string_equal(buf, "");
}

static void test_cut_to_fit(void **state)
{
    (void)state;
    for (size_t size = 1; size <= 12; size++) {
        char buf[16];
        memset(buf, 'x', sizeof(buf));
        size_t len = ck__path_push(buf, size, 0, "", "metadata", NULL);
        len = ck__path_push_index(buf, size, len, 345);
        const char *full = "metadata[345]";
        assert_int_equal(len, size - 1 < strlen(full) ? size - 1 : strlen(full));
        assert_int_equal(buf[len], '\0');
        assert_memory_equal(buf, full, len);
        for (size_t i = size; i < sizeof(buf); i++)
            assert_int_equal(buf[i], 'x'); /* nothing written past size */
        /* a length beyond the buffer is clamped, never trusted */
        assert_int_equal(ck__path_push(buf, size, 99, ".", "a", NULL), size - 1);
    }
    char none[1] = {'x'};
    assert_int_equal(ck__path_push(none, 0, 0, "", "a", NULL), 0);
    assert_int_equal(none[0], 'x');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_cut_to_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
