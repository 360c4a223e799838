/*
 * test_strconv.c - Go's ParseBool (every accepted spelling, near misses) and %q
 * (escapes, UTF-8 passing through, cutting between characters, the allocated form).
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"

static void test_parse_bool(void **state)
{
    (void)state;
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    static const char *const bad[] = {"", "yes", "tRUE", "2", "true ", "on"};
    for (size_t i = 0; i < 6; i++) {
        bool v = false;
        assert_true(ck__parse_bool(yes[i], &v));
        assert_true(v);
        assert_true(ck__parse_bool(no[i], &v));
        assert_false(v);
        v = true;
        assert_false(ck__parse_bool(bad[i], &v));
        assert_true(v); /* untouched */
    }
    bool v;
    assert_false(ck__parse_bool(NULL, &v));
}

static void test_quote(void **state)
{
    (void)state;
    char buf[64];
    assert_int_equal(ck__quote("plain", buf, sizeof(buf)), 7);
    assert_string_equal(buf, "\"plain\"");
    ck__quote("a\"b\\c\n\x7f", buf, sizeof(buf));
    assert_string_equal(buf, "\"a\\\"b\\\\c\\x0a\\x7f\"");
    ck__quote("caf\xc3\xa9", buf, sizeof(buf));
    assert_string_equal(buf, "\"caf\xc3\xa9\"");
    ck__quote("", buf, sizeof(buf));
    assert_string_equal(buf, "\"\"");
}

static void test_quote_cuts_between_characters(void **state)
{
    (void)state;
    char buf[8];
    assert_int_equal(ck__quote("abcdefgh", buf, sizeof(buf)), 10);
    assert_string_equal(buf, "\"abcde\"");
    assert_int_equal(ck__quote("abcd\n", buf, sizeof(buf)), 10);
    assert_string_equal(buf, "\"abcd\""); /* \x0a would not fit */
    char tiny[2] = "x";
    ck__quote("abc", tiny, sizeof(tiny));
    assert_string_equal(tiny, "");
}

static void test_quote_dup(void **state)
{
    (void)state;
    char *q = ck__quote_dup("x\ty");
    assert_string_equal(q, "\"x\\x09y\"");
    free(q);
    ck__alloc_fail_at(1, false);
    assert_null(ck__quote_dup("x"));
    ck__alloc_fail_at(0, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_quote_cuts_between_characters),
        cmocka_unit_test(test_quote_dup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
