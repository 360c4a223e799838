/*
 * test_json.c - tests for lib/api/json.c: ck_json_loadb() answers 0 with
 * jansson's value or CK_EINVAL with jansson's message; duplicate keys are
 * refused only under JSON_REJECT_DUPLICATES; and with jansson allocating
 * through the hook, the hook's failures never reach jansson's parser (which
 * does not survive them) while they still reach everything else.
 * (The API server under allocation failure: tests/apiserver/test_alloc_fail.c.)
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

/* ck_json_loadb() and json_loadb() agree on text under flags. */
static void expect_same(const char *text, size_t flags)
{
    json_error_t jerr, ours;
    json_t *want = json_loadb(text, strlen(text), flags, &jerr);
    json_t *got = NULL;
    int r = ck_json_loadb(text, strlen(text), flags, &got, &ours);
    if (want && (r != 0 || !json_equal(got, want)))
        fail_msg("%s: jansson reads it, ck_json_loadb answered %d", text, r);
    if (!want && r != CK_EINVAL)
        fail_msg("%s: jansson refuses it (%s), ck_json_loadb answered %d", text, jerr.text, r);
    if (!want && (!ours.text[0] || json_error_code(&ours) == json_error_out_of_memory))
        fail_msg("%s: no syntax error message (jansson's: %s)", text, jerr.text);
    json_decref(got);
    json_decref(want);
}

static void test_agrees_with_jansson(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{}",
        "[]",
        " \t\r\n{\"a\":1} \n",
        "{\"a\":[1,-2,3.5,-0.25e-3,1E+2,0,true,false,null,\"s\"],\"b\":{\"c\":{}}}",
        "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\"]",
        "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]",
        "[9223372036854775807,-9223372036854775808]",
        "[9223372036854775808]",
        "[1e400]",
        "[1e-400]",
        "[01]",
        "[1.]",
        "[.5]",
        "[-]",
        "[+1]",
        "[\"\\u0000\"]",
        "{\"\\u0000\":1}",
        "[\"\\ud83d\"]",
        "[\"\\ude00\"]",
        "[\"\\x\"]",
        "[\"tab\there\"]",
        "[\"\xc3\"]",
        "[\"\xed\xa0\x80\"]",
        "[\"\xc0\xaf\"]",
        "[tru]",
        "[nul]",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "[1,]",
        "[1 2]",
        "{a:1}",
        "",
        "   ",
        "\"top\"",
        "1",
        "{} {}",
        "{\"a\":1}x",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        expect_same(texts[i], 0);
        expect_same(texts[i], JSON_DECODE_ANY);
    }
}

static void test_parse_is_shielded_from_the_hook(void **state)
{
    (void)state;
    json_set_alloc_funcs(ck__malloc, free);
    /* long strings and numbers: jansson grows its token buffer while reading them */
    static const char text[] =
        "{\"metadata\":{\"uid\":\"0f9a7c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b\","
        "\"name\":\"a-rather-long-name-that-makes-the-token-buffer-grow-several-times\"},"
        "\"n\":[12345678901234,-3.25e-7,true,null],\"s\":\"caf\\u00e9\"}";
    json_t *want = json_loads(text, 0, NULL);
    assert_non_null(want);
    unsigned long failures = ck__alloc_failures();
    for (unsigned long n = 1; n <= 50; n++) {
        json_t *got = NULL;
        ck__alloc_fail_at(n, true); /* everything from the nth allocation on fails */
        int r = ck_json_loadb(text, strlen(text), 0, &got, NULL);
        ck__alloc_fail_at(0, false);
        assert_int_equal(r, 0); /* jansson's parser never sees the hook's failures */
        assert_true(json_equal(got, want));
        json_decref(got);
    }
    assert_int_equal(ck__alloc_failures(), failures);
    /* outside the parser the hook still fails this thread's allocations, and counts them */
    ck__alloc_fail_at(1, false);
    assert_null(json_object());
    ck__alloc_fail_at(0, false);
    assert_int_equal(ck__alloc_failures(), failures + 1);
    json_decref(want);
    json_set_alloc_funcs(malloc, free);
}

static void test_duplicate_keys(void **state)
{
    (void)state;
    const char *text = "{\"a\":1,\"b\":{\"x\":1},\"a\":2}";
    json_t *got = NULL;
    json_error_t jerr;
    assert_int_equal(ck_json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, &got, &jerr),
                     CK_EINVAL);
    assert_null(got);
    assert_int_equal(json_error_code(&jerr), json_error_duplicate_key);
    assert_non_null(strstr(jerr.text, "duplicate object key"));
    assert_non_null(strstr(jerr.text, "'\"a\"'"));
    /* without the flag the last value wins, in the first one's place */
    assert_int_equal(ck_json_loadb(text, strlen(text), 0, &got, NULL), 0);
    assert_int_equal(json_integer_value(json_object_get(got, "a")), 2);
    assert_string_equal(json_object_iter_key(json_object_iter(got)), "a");
    json_decref(got);
}

static void test_not_nul_terminated(void **state)
{
    (void)state;
    const char text[] = "{\"a\":12345}trailing";
    json_t *got = NULL;
    assert_int_equal(ck_json_loadb(text, 11, 0, &got, NULL), 0);
    assert_int_equal(json_integer_value(json_object_get(got, "a")), 12345);
    json_decref(got);
    assert_int_equal(ck_json_loadb(NULL, 0, 0, &got, NULL), CK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_jansson),
        cmocka_unit_test(test_parse_is_shielded_from_the_hook),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_not_nul_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
