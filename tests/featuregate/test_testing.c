/*
 * test_testing.c - lib/featuregate/testing.c: the test helper (T1, T2, T5).
 */
#include "cktest.h"

#include "fgtest.h"

static void test_T1_T5_override_and_restore(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_set(g, "TestBeta=false", &err), 0);
    struct ck_fg_pair p[] = {{"TestAlpha", true}, {"TestBeta", true}};
    struct ck_fg_version emu = V(1, 29);
    struct ck_fg_test_state *st = ck_fg_test_override(g, p, 2, &emu, &err);
    assert_non_null(st);
    assert_true(ck_fg_enabled_name(g, "TestAlpha"));
    assert_true(ck_fg_enabled_name(g, "TestBeta"));
    assert_int_equal(ck_fg_emulation_version(g).minor, 29);
    assert_false(ck_fg_enabled_name(g, "TestVersioned")); /* Alpha at 1.29 */
    ck_fg_test_restore(st);
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    assert_false(ck_fg_explicitly_set(g, "TestAlpha"));
    assert_false(ck_fg_enabled_name(g, "TestBeta"));
    assert_true(ck_fg_explicitly_set(g, "TestBeta"));
    assert_int_equal(ck_fg_emulation_version(g).minor, 30);
    assert_true(ck_fg_enabled_name(g, "TestVersioned"));

    /* A failing override changes nothing and returns NULL. */
    struct ck_fg_pair bad[] = {{"TestLockedTrue", false}};
    assert_null(ck_fg_test_override(g, bad, 1, NULL, &err));
    assert_non_null(strstr(err.msg, "locked"));
    assert_false(ck_fg_explicitly_set(g, "TestLockedTrue"));
    ck_fg_gate_free(g);
}

/*
 * T2: AllAlpha/AllBeta in the helper set every Alpha/Beta gate explicitly,
 * so unlike S9 they override what the test had set before; explicit pairs
 * of the same call still win. Restore brings the earlier values back.
 */
static void test_T2_bulk_in_helper_overrides(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_set(g, "TestAlpha=false,TestBeta=false", &err), 0);
    struct ck_fg_pair p[] = {{"AllAlpha", true}, {"AllBeta", true}, {"TestBetaOff", false}};
    struct ck_fg_test_state *st = ck_fg_test_override(g, p, 3, NULL, &err);
    assert_non_null(st);
    assert_true(ck_fg_enabled_name(g, "TestAlpha"));    /* overrides the earlier false */
    assert_true(ck_fg_enabled_name(g, "TestBeta"));     /* likewise */
    assert_false(ck_fg_enabled_name(g, "TestBetaOff")); /* explicit in the call wins */
    assert_false(ck_fg_enabled_name(g, "TestDeprecated"));
    ck_fg_test_restore(st);
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    assert_false(ck_fg_enabled_name(g, "TestBeta"));
    assert_false(ck_fg_explicitly_set(g, "AllAlpha"));
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_T1_T5_override_and_restore),
        cmocka_unit_test(test_T2_bulk_in_helper_overrides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
