/*
 * test_base64.c - ck_base64_encode/decode: RFC 4648 test vectors, round
 * trips of every byte value, the URL-safe alphabet, line breaks, and
 * malformed input.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/util.h"

static void test_rfc4648_vectors(void **state)
{
    (void)state;
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char *e = ck_base64_encode(plain[i], strlen(plain[i]));
        assert_string_equal(e, coded[i]);
        free(e);
        size_t len = 99;
        char *d = ck_base64_decode(coded[i], &len);
        assert_int_equal(len, strlen(plain[i]));
        assert_string_equal(d, plain[i]);
        free(d);
    }
}

static void test_every_byte_round_trips(void **state)
{
    (void)state;
    unsigned char bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (unsigned char)i;
    char *e = ck_base64_encode(bytes, sizeof(bytes));
    size_t len = 0;
    char *d = ck_base64_decode(e, &len);
    assert_int_equal(len, sizeof(bytes));
    assert_memory_equal(d, bytes, sizeof(bytes));
    free(d);
    free(e);
}

static void test_url_safe_and_line_breaks(void **state)
{
    (void)state;
    size_t len = 0;
    char *d = ck_base64_decode("-_8=", &len); /* URL-safe form of "+/8=" */
    assert_int_equal(len, 2);
    assert_int_equal((unsigned char)d[0], 0xfb);
    assert_int_equal((unsigned char)d[1], 0xff);
    free(d);
    d = ck_base64_decode("Zm9v\r\nYmFy\n", NULL); /* PEM-style wrapped */
    assert_string_equal(d, "foobar");
    free(d);
}

static void test_malformed_is_null(void **state)
{
    (void)state;
    assert_null(ck_base64_decode("Zm9v!", NULL));
    assert_null(ck_base64_decode("Zm 9v", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_every_byte_round_trips),
        cmocka_unit_test(test_url_safe_and_line_breaks),
        cmocka_unit_test(test_malformed_is_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
