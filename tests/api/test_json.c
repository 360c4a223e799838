/*
 * test_json.c - tests for lib/api/json.c: ck_json_loadb() accepts exactly
 * the texts jansson's json_loadb() accepts, builds the same values, and
 * says what is wrong with the others in jansson's words, with the line and
 * column (without asking jansson's parser); duplicate keys are refused
 * only under JSON_REJECT_DUPLICATES, the last one winning otherwise.
 * (Running out of memory: tests/api/test_alloc_fail.c.)
 */
#include "cktest.h"

#include <string.h>

#include "ckube/api.h"

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
    if (!want && (!ours.text[0] || json_error_code(&ours) != json_error_invalid_syntax))
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

static void test_deep_nesting_refused_like_jansson(void **state)
{
    (void)state;
    static char deep[2 * 2100 + 1];
    for (size_t i = 0; i < 2100; i++) {
        deep[i] = '[';
        deep[2 * 2100 - 1 - i] = ']';
    }
    expect_same(deep, 0);
    deep[2 * 2048] = '\0';
    memset(deep, '[', 2048);
    memset(deep + 2048, ']', 2048);
    expect_same(deep, 0);
}

static void test_syntax_messages(void **state)
{
    (void)state;
    static const struct {
        const char *text, *message;
        int line, column;
    } cases[] = {
        {"{\"a\" 1}", "':' expected", 1, 6},
        {"{\"a\":1,}", "string or '}' expected", 1, 8},
        {"[1 2]", "']' expected", 1, 4},
        {"{\n  \"a\": tru}", "invalid token", 2, 8},
        {"[\"\\u0000\"]", "\\u0000 is not allowed without JSON_ALLOW_NUL", 1, 4},
        {"[\"tab\there\"]", "control character 0x09", 1, 6},
        {"[\"\xc3\"]", "unable to decode byte 0xc3", 1, 3},
        {"[9223372036854775808]", "too big integer", 1, 21},
        {"[1e400]", "real number overflow", 1, 7},
        {"\"top\"", "'[' or '{' expected", 1, 1},
        {"{} {}", "end of file expected", 1, 4},
        {"{\"a\":[1,", "premature end of input", 1, 9},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *got = NULL;
        json_error_t jerr;
        const char *text = cases[i].text;
        assert_int_equal(ck_json_loadb(text, strlen(text), 0, &got, &jerr), CK_EINVAL);
        assert_null(got);
        if (strcmp(jerr.text, cases[i].message) != 0 || jerr.line != cases[i].line ||
            jerr.column != cases[i].column)
            fail_msg("%s: %s (line %d, column %d), want %s (line %d, column %d)", text, jerr.text,
                     jerr.line, jerr.column, cases[i].message, cases[i].line, cases[i].column);
    }
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
        cmocka_unit_test(test_deep_nesting_refused_like_jansson),
        cmocka_unit_test(test_syntax_messages),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_not_nul_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
