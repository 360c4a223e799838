/*
 * test_timefmt.c - RFC 3339 parsing (table of accepted and refused times, offsets,
 * fractions, calendar edges) and formatting as Time and MicroTime.
 */
#include "cktest.h"

#include <stdint.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

static void test_parse_accepts(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t sec;
        long usec;
    } cases[] = {
        {"1970-01-01T00:00:00Z", 0, 0},
        {"2024-02-29T12:34:56Z", 1709210096, 0},
        {"2024-02-29t12:34:56z", 1709210096, 0},
        {"2024-02-29T14:34:56+02:00", 1709210096, 0},
        {"2024-02-29T10:04:56-02:30", 1709210096, 0},
        {"2024-02-29T12:34:56.5Z", 1709210096, 500000},
        {"2024-02-29T12:34:56.123456Z", 1709210096, 123456},
        {"2024-02-29T12:34:56.1234567Z", 1709210096, 123456}, /* beyond usec: cut */
        {"1969-12-31T23:59:59Z", -1, 0},
        {"2000-03-01T00:00:00Z", 951868800, 0},
        {"9999-12-31T23:59:59Z", 253402300799, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t sec = 42;
        long usec = 42;
        assert_int_equal(ck__time_parse(cases[i].in, &sec, &usec), 0);
        assert_int_equal(sec, cases[i].sec);
        assert_int_equal(usec, cases[i].usec);
    }
    int64_t sec;
    assert_int_equal(ck__time_parse("2024-01-01T00:00:00Z", &sec, NULL), 0);
}

static void test_parse_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "2024-01-01",
        "2024-01-01T00:00:00",       /* no zone */
        "2024-01-01 00:00:00Z",      /* space */
        "2024-1-01T00:00:00Z",       /* short field */
        "2024-13-01T00:00:00Z",      /* month */
        "2023-02-29T00:00:00Z",      /* not a leap year */
        "2024-04-31T00:00:00Z",      /* no such day */
        "2024-01-01T24:00:00Z",      /* hour */
        "2024-01-01T00:60:00Z",      /* minute */
        "2024-01-01T00:00:60Z",      /* second */
        "2024-01-01T00:00:00.Z",     /* empty fraction */
        "2024-01-01T00:00:00+0100",  /* offset without colon */
        "2024-01-01T00:00:00+24:00", /* offset hour */
        "2024-01-01T00:00:00Zjunk",  /* trailing */
        " 2024-01-01T00:00:00Z",     /* leading space */
        "0000-01-01T00:00:00+00:01", /* year -1 in UTC: could not be written back */
        "9999-12-31T23:59:59-00:01", /* year 10000 in UTC */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t sec = 7;
        assert_int_equal(ck__time_parse(bad[i], &sec, NULL), CK_EINVAL);
        assert_int_equal(sec, 7); /* untouched */
    }
    int64_t sec;
    assert_int_equal(ck__time_parse(NULL, &sec, NULL), CK_EINVAL);
}

static void test_format(void **state)
{
    (void)state;
    char buf[CK__TIME_LEN];
    assert_string_equal(ck__time_format(1709210096, -1, buf, sizeof(buf)), "2024-02-29T12:34:56Z");
    assert_string_equal(ck__time_format(1709210096, 5, buf, sizeof(buf)),
                        "2024-02-29T12:34:56.000005Z");
    assert_string_equal(ck__time_format(0, -1, buf, sizeof(buf)), "1970-01-01T00:00:00Z");
    int64_t sec;
    long usec;
    /* years below 1000 keep four digits, so what was parsed reads back (found by fuzzing) */
    assert_int_equal(ck__time_parse("0322-11-23T10:00:00Z", &sec, NULL), 0);
    assert_string_equal(ck__time_format(sec, -1, buf, sizeof(buf)), "0322-11-23T10:00:00Z");
    assert_int_equal(ck__time_parse("0000-01-01T00:00:00Z", &sec, NULL), 0);
    assert_string_equal(ck__time_format(sec, -1, buf, sizeof(buf)), "0000-01-01T00:00:00Z");
    /* round trip through an offset */
    assert_int_equal(ck__time_parse("2024-06-01T02:00:00.25+02:00", &sec, &usec), 0);
    assert_string_equal(ck__time_format(sec, usec, buf, sizeof(buf)),
                        "2024-06-01T00:00:00.250000Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_accepts),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
