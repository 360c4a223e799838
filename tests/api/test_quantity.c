/*
 * test_quantity.c - tests for lib/api/quantity.c: resource.Quantity's
 * MilliValue() over a table of the suffixes and edge cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ckube/api.h"

static void test_milli_values_match_kubernetes(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t milli;
    } cases[] = {
        {"0", 0},
        {"1", 1000},
        {"500m", 500},
        {"0.5", 500},
        {"1.5", 1500},
        {"100n", 1}, /* rounded up */
        {"1u", 1},
        {"2k", 2000000},
        {"1Ki", 1024000},
        {"128Mi", INT64_C(128) * 1024 * 1024 * 1000},
        {"256Gi", INT64_C(256) * 1024 * 1024 * 1024 * 1000},
        {"1G", INT64_C(1000000000000)},
        {"1e3", 1000000},
        {"1E-3", 1},
        {"+3", 3000},
        {"-1", -1000},
        {".5", 500},
        {"0.0001", 1},
        {"110", 110000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t v = -42;
        assert_int_equal(ck_quantity_milli(cases[i].in, &v), 0);
        if (v != cases[i].milli)
            fail_msg("%s: %lld, want %lld", cases[i].in, (long long)v, (long long)cases[i].milli);
    }
}

static void test_malformed_quantities_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {"",
                                      "m",
                                      "1.2.3",
                                      "1x",
                                      "Ki",
                                      "1KiB",
                                      "1e",
                                      "1e1234",
                                      "10Ei",
                                      "1 ",
                                      " 1",
                                      "1..",
                                      "99999999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = 7;
        if (ck_quantity_milli(bad[i], &v) != CK_EINVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_int_equal(v, 7);
    }
    assert_int_equal(ck_quantity_milli(NULL, NULL), CK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_milli_values_match_kubernetes),
        cmocka_unit_test(test_malformed_quantities_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
