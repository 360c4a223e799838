/*
 * test_buf.c - the growable buffer: appends and printf across doublings, the cap
 * (refused whole, sticky), allocation failure at every step, take and release, the
 * libcurl callback and the line splitter with lines cut across calls.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

static void test_add_and_printf_grow(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    for (int i = 0; i < 1000; i++)
        assert_int_equal(ck__buf_printf(&b, "%d,", i % 10), 0);
    assert_int_equal(b.len, 2000);
    assert_int_equal(strlen(b.p), 2000);
    assert_int_equal(ck__buf_adds(&b, "end"), 0);
    assert_string_equal(b.p + 2000, "end");
    char *s = ck__buf_take(&b);
    assert_non_null(s);
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(strncmp(s, "0,1,2,", 6), 0);
    free(s);
}

static void test_take_empty_is_empty_string(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    char *s = ck__buf_take(&b);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
}

static void test_cap_refuses_and_sticks(void **state)
{
    (void)state;
    struct ck__buf b = {.max = 8};
    assert_int_equal(ck__buf_adds(&b, "12345"), 0);
    assert_int_equal(ck__buf_adds(&b, "6789"), CK__E2BIG); /* refused whole */
    assert_string_equal(b.p, "12345");
    assert_int_equal(ck__buf_adds(&b, "6"), CK__E2BIG); /* sticky */
    assert_null(ck__buf_take(&b));
    assert_int_equal(b.max, 8); /* the cap stays */
    assert_int_equal(b.err, 0);

    assert_int_equal(ck__buf_printf(&b, "%s", "1234"), 0);
    assert_int_equal(ck__buf_printf(&b, "%s", "56789"), CK__E2BIG);
    assert_string_equal(b.p, "1234");
    ck__buf_release(&b);
    assert_null(b.p);
}

static void test_allocation_failure_every_step(void **state)
{
    (void)state;
    for (unsigned long n = 1;; n++) {
        struct ck__buf b = {0};
        ck__alloc_fail_at(n, false);
        int r = 0;
        for (int i = 0; i < 200 && r == 0; i++)
            r = ck__buf_printf(&b, "line %d of a text that grows\n", i);
        ck__alloc_fail_at(0, false);
        char *s = ck__buf_take(&b);
        if (r == 0) {
            assert_non_null(s);
            free(s);
            break;
        }
        assert_int_equal(r, CK_ENOMEM);
        assert_null(s);
    }
}

static void test_consume(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    ck__buf_adds(&b, "abcdef");
    ck__buf_consume(&b, 2);
    assert_string_equal(b.p, "cdef");
    ck__buf_consume(&b, 100);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    ck__buf_release(&b);
}

static void test_curl_write(void **state)
{
    (void)state;
    struct ck__buf b = {.max = 10};
    char data[] = "0123456789abc";
    assert_int_equal(ck__buf_curl_write(data, 1, 6, &b), 6);
    assert_int_equal(ck__buf_curl_write(data, 2, 3, &b), 0); /* past the cap: fail */
    assert_int_equal(b.err, CK__E2BIG);
    ck__buf_release(&b);
}

struct seen {
    char lines[8][32];
    int n;
    int stop_after;
};

static bool on_line(void *arg, const char *line, size_t len)
{
    struct seen *s = arg;
    assert_int_equal(strlen(line), len); /* NUL-terminated in place */
    snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s", line);
    return s->n != s->stop_after;
}

static void test_lines_across_calls(void **state)
{
    (void)state;
    struct ck__buf b = {0};
    struct seen s = {.stop_after = -1};
    assert_true(ck__buf_lines(&b, "one\ntw", 6, on_line, &s));
    assert_int_equal(s.n, 1);
    assert_true(ck__buf_lines(&b, "o\n\nthree", 8, on_line, &s));
    assert_int_equal(s.n, 3);
    assert_string_equal(s.lines[0], "one");
    assert_string_equal(s.lines[1], "two");
    assert_string_equal(s.lines[2], "");
    assert_string_equal(b.p, "three"); /* waits for its newline */
    s.stop_after = 4;
    assert_false(ck__buf_lines(&b, "\nfour\n", 6, on_line, &s));
    assert_string_equal(s.lines[3], "three");
    assert_string_equal(b.p, "four\n"); /* not handed out after the stop */
    ck__buf_release(&b);

    struct ck__buf small = {.max = 4};
    assert_false(ck__buf_lines(&small, "too long", 8, on_line, &s));
    ck__buf_release(&small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_and_printf_grow),
        cmocka_unit_test(test_take_empty_is_empty_string),
        cmocka_unit_test(test_cap_refuses_and_sticks),
        cmocka_unit_test(test_allocation_failure_every_step),
        cmocka_unit_test(test_consume),
        cmocka_unit_test(test_curl_write),
        cmocka_unit_test(test_lines_across_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
