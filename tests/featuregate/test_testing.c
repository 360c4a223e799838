/*
 * test_testing.c - lib/featuregate/testing.c: the test helper (T1-T6).
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
    struct ck_fg_test_state *st = ck_fg_test_override(g, NULL, p, 2, &emu, &err);
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
    assert_null(ck_fg_test_override(g, NULL, bad, 1, NULL, &err));
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
    struct ck_fg_test_state *st = ck_fg_test_override(g, NULL, p, 3, NULL, &err);
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

/* T3: switching a dependency off in the helper switches default-on dependents off. */
static void test_T3_dependency_off_turns_dependents_off(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 33));
    struct ck_fg_err err = {0};
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    assert_int_equal(ck_fg_add(g, "Base", SPEC(0, 0, true, false, BETA), NULL, NULL), 0);
    assert_int_equal(ck_fg_add(g, "UserOn", SPEC(0, 0, true, false, BETA), NULL, NULL), 0);
    assert_int_equal(ck_fg_add(g, "UserOff", SPEC(0, 0, false, false, BETA), NULL, NULL), 0);
    const char *base[] = {"Base"};
    assert_int_equal(ck_fg_add_dependencies(g, "UserOn", base, 1, &err), 0);
    assert_int_equal(ck_fg_add_dependencies(g, "UserOff", base, 1, &err), 0);
    struct ck_fg_pair off[] = {{"Base", false}};
    struct ck_fg_test_state *st = ck_fg_test_override(g, NULL, off, 1, NULL, &err);
    assert_non_null(st);
    assert_false(ck_fg_enabled_name(g, "Base"));
    assert_false(ck_fg_enabled_name(g, "UserOn")); /* gate-off follows its dependency */
    assert_true(fg_log_has(&log, "Disabling feature UserOn because its dependency Base is "
                                 "disabled"));
    assert_false(fg_log_has(&log, "feature UserOff")); /* default-off: untouched */
    ck_fg_test_restore(st);
    assert_true(ck_fg_enabled_name(g, "UserOn")); /* gate-on again after restore */
    /* Naming the dependent in the same call is an error, not an override (S12). */
    struct ck_fg_pair both[] = {{"Base", false}, {"UserOn", true}};
    assert_null(ck_fg_test_override(g, NULL, both, 2, NULL, &err));
    assert_non_null(strstr(err.msg, "UserOn is enabled, but depends on features that are "
                                    "disabled: [Base]"));
    assert_true(ck_fg_enabled_name(g, "Base"));
    ck_fg_gate_free(g);
}

/*
 * T6: client-go's helper overrides a feature of the current provider and
 * restores it; here the same helper works on ck_fg_provider(). Setting the
 * same value again during the test (a no-op set) keeps the override.
 */
static void test_T6_override_on_the_provider(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    assert_null(ck_fg_provider_replace(g));
    struct ck_fg_pair on[] = {{"TestAlpha", true}};
    struct ck_fg_test_state *st =
        ck_fg_test_override(ck_fg_provider(), "TestT6", on, 1, NULL, &err);
    assert_non_null(st);
    assert_true(ck_fg_enabled_name(ck_fg_provider(), "TestAlpha"));
    assert_int_equal(ck_fg_set(ck_fg_provider(), "TestAlpha=true", &err), 0);
    assert_true(ck_fg_enabled_name(ck_fg_provider(), "TestAlpha"));
    ck_fg_test_restore(st);
    assert_false(ck_fg_enabled_name(ck_fg_provider(), "TestAlpha"));
    assert_false(ck_fg_explicitly_set(ck_fg_provider(), "TestAlpha"));
    assert_ptr_equal(ck_fg_provider_replace(NULL), g);
    ck_fg_gate_free(g);
}

/*
 * T4: two unrelated tests may not override the same feature, or the
 * emulation version at different versions, at the same time; a subtest may.
 */
static void test_T4_parallel_overrides_detected(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    struct ck_fg_pair a_on[] = {{"TestAlpha", true}}, a_off[] = {{"TestAlpha", false}};
    struct ck_fg_pair b_off[] = {{"TestBeta", false}};
    struct ck_fg_version v29 = V(1, 29), v30 = V(1, 30);
    struct ck_fg_test_state *one = ck_fg_test_override(g, "TestOne", a_on, 1, &v30, &err);
    assert_non_null(one);
    assert_null(ck_fg_test_override(g, "TestTwo", a_off, 1, NULL, &err));
    assert_string_equal(err.msg,
                        "Detected parallel setting of a feature gate by both \"TestOne\" and "
                        "\"TestTwo\"");
    assert_true(ck_fg_enabled_name(g, "TestAlpha")); /* the refused override changed nothing */
    assert_null(ck_fg_test_override(g, "TestTwo", b_off, 1, &v29, &err));
    assert_string_equal(err.msg, "Detected parallel setting of a feature gate emulation version "
                                 "by both \"TestOne\" and \"TestTwo\"");
    assert_int_equal(ck_fg_emulation_version(g).minor, 30);
    struct ck_fg_test_state *two = ck_fg_test_override(g, "TestTwo", b_off, 1, &v30, &err);
    assert_non_null(two); /* another feature, same emulation version: fine */
    struct ck_fg_test_state *sub = ck_fg_test_override(g, "TestOne/sub", a_off, 1, NULL, &err);
    assert_non_null(sub); /* a subtest may override its parent's feature */
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    ck_fg_test_restore(sub);
    assert_true(ck_fg_enabled_name(g, "TestAlpha"));
    ck_fg_test_restore(two);
    ck_fg_test_restore(one);
    struct ck_fg_test_state *again = ck_fg_test_override(g, "TestTwo", a_off, 1, NULL, &err);
    assert_non_null(again); /* TestOne is done: no conflict any more */
    ck_fg_test_restore(again);
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_T1_T5_override_and_restore),
        cmocka_unit_test(test_T2_bulk_in_helper_overrides),
        cmocka_unit_test(test_T3_dependency_off_turns_dependents_off),
        cmocka_unit_test(test_T6_override_on_the_provider),
        cmocka_unit_test(test_T4_parallel_overrides_detected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
