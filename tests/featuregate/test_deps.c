/*
 * test_deps.c - lib/featuregate/deps.c: declaring dependencies (R13) and
 * refusing a state that enables a feature whose dependency is off (S12),
 * with Kubernetes' error texts.
 */
#include "cktest.h"

#include "fgtest.h"

struct dep_case {
    const char *name;
    const char *feature;
    const char *deps[2];
    size_t n;
    const char *err; /* NULL: accepted */
};

/* R13: what may depend on what. */
static void test_R13_declaration_rules(void **state)
{
    (void)state;
    const struct dep_case cases[] = {
        {"alpha on alpha", "AlphaA", {"AlphaB"}, 1, NULL},
        {"beta on GA", "BetaOn", {"GAOn"}, 1, NULL},
        {"unknown feature",
         "Nope",
         {"AlphaA"},
         1,
         "cannot add dependency for unknown feature Nope"},
        {"unknown dependency",
         "AlphaA",
         {"AlphaB", "Nope"},
         2,
         "cannot add dependency from AlphaA to unknown feature Nope"},
        {"less stable",
         "BetaOn",
         {"AlphaA"},
         1,
         "BETA feature BetaOn cannot depend on ALPHA feature AlphaA at version 0.0"},
        {"deprecated is least stable",
         "AlphaA",
         {"Old"},
         1,
         "ALPHA feature AlphaA cannot depend on DEPRECATED feature Old at version 0.0"},
        {"default on needs default on",
         "BetaOn",
         {"BetaOff"},
         1,
         "default-enabled feature BetaOn cannot depend on default-disabled feature BetaOff at "
         "version 0.0"},
        {"locked needs locked",
         "GALocked",
         {"GAOn"},
         1,
         "locked-to-default feature GALocked cannot depend on unlocked feature GAOn at version "
         "0.0"},
        {"checked at every version, newest first",
         "Growing",
         {"Late"},
         1,
         "BETA feature Growing cannot depend on ALPHA feature Late at version 1.32"},
        {"alpha may depend on a feature that does not exist yet", "Early", {"Late"}, 1, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_gate *g = ck_fg_gate_new(V(1, 33));
        struct ck_fg_err err = {0};
        int rc = 0;
        rc |= ck_fg_add(g, "AlphaA", SPEC(0, 0, false, false, ALPHA), NULL, NULL);
        rc |= ck_fg_add(g, "AlphaB", SPEC(0, 0, false, false, ALPHA), NULL, NULL);
        rc |= ck_fg_add(g, "BetaOn", SPEC(0, 0, true, false, BETA), NULL, NULL);
        rc |= ck_fg_add(g, "BetaOff", SPEC(0, 0, false, false, BETA), NULL, NULL);
        rc |= ck_fg_add(g, "GAOn", SPEC(0, 0, true, false, GA), NULL, NULL);
        rc |= ck_fg_add(g, "GALocked", SPEC(0, 0, true, true, GA), NULL, NULL);
        rc |= ck_fg_add(g, "Old", SPEC(0, 0, false, false, DEPRECATED), NULL, NULL);
        struct ck_fg_spec grow[] = {SPEC(1, 30, false, false, ALPHA),
                                    SPEC(1, 32, false, false, BETA)};
        struct ck_fg_spec late[] = {SPEC(1, 31, false, false, ALPHA),
                                    SPEC(1, 33, false, false, BETA)};
        struct ck_fg_spec early = SPEC(1, 29, false, false, ALPHA);
        rc |= ck_fg_add_versioned(g, "Growing", grow, 2, NULL, NULL);
        rc |= ck_fg_add_versioned(g, "Late", late, 2, NULL, NULL);
        rc |= ck_fg_add_versioned(g, "Early", &early, 1, NULL, NULL);
        assert_int_equal(rc, 0);
        ck_fg_feature_t f = 0;
        bool known = ck_fg_lookup(g, cases[i].feature, &f) == 0;
        rc = ck_fg_add_dependencies(g, cases[i].feature, cases[i].deps, cases[i].n, &err);
        size_t nd = 99;
        if (known)
            (void)ck_fg_dependencies(g, f, &nd);
        if (!cases[i].err) {
            if (rc != 0)
                fail_msg("%s: unexpected %s", cases[i].name, err.msg);
            assert_int_equal(nd, cases[i].n);
        } else {
            if (rc == 0 || strcmp(err.msg, cases[i].err) != 0)
                fail_msg("%s: rc %d '%s'", cases[i].name, rc, err.msg);
            if (known)
                assert_int_equal(nd, 0); /* all or nothing */
        }
        ck_fg_gate_free(g);
    }
}

/* R13: lists merge, sort and de-duplicate; cycles and a closed gate are refused. */
static void test_R13_merge_cycles_close(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 33));
    struct ck_fg_err err = {0};
    ck_fg_feature_t x, b, c;
    assert_int_equal(ck_fg_add(g, "X", SPEC(0, 0, false, false, ALPHA), &x, NULL), 0);
    assert_int_equal(ck_fg_add(g, "C", SPEC(0, 0, false, false, ALPHA), &c, NULL), 0);
    assert_int_equal(ck_fg_add(g, "B", SPEC(0, 0, false, false, ALPHA), &b, NULL), 0);
    const char *cb[] = {"C", "B"}, *bb[] = {"B", "B"}, *xx[] = {"X"};
    assert_int_equal(ck_fg_add_dependencies(g, "X", cb, 2, &err), 0);
    assert_int_equal(ck_fg_add_dependencies(g, "X", bb, 2, &err), 0);
    size_t n;
    const ck_fg_feature_t *d = ck_fg_dependencies(g, x, &n);
    assert_int_equal(n, 2);
    assert_int_equal(d[0], b);
    assert_int_equal(d[1], c);
    assert_int_equal(ck_fg_add_dependencies(g, "B", xx, 1, &err), CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "cycle detected with feature "));
    (void)ck_fg_dependencies(g, b, &n);
    assert_int_equal(n, 0);
    assert_int_equal(ck_fg_add_dependencies(g, "X", xx, 1, &err), CK_FG_EINVAL); /* self */
    ck_fg_close(g);
    assert_int_equal(ck_fg_add_dependencies(g, "C", bb, 1, &err), CK_FG_EPERM);
    assert_string_equal(err.msg,
                        "cannot add a feature gate dependency after adding it to the flag set");
    ck_fg_gate_free(g);
}

/* S12: gate-on needs its dependencies on; a refused state changes nothing (D1). */
static void test_S12_enabled_needs_dependencies(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 33));
    struct ck_fg_err err = {0};
    ck_fg_feature_t x, y;
    assert_int_equal(ck_fg_add(g, "X", SPEC(0, 0, false, false, ALPHA), &x, NULL), 0);
    assert_int_equal(ck_fg_add(g, "Y", SPEC(0, 0, false, false, ALPHA), &y, NULL), 0);
    assert_int_equal(ck_fg_add(g, "Z", SPEC(0, 0, false, false, ALPHA), NULL, NULL), 0);
    const char *yz[] = {"Y", "Z"};
    assert_int_equal(ck_fg_add_dependencies(g, "X", yz, 2, &err), 0);
    assert_int_equal(ck_fg_set(g, "X=true", &err), CK_FG_EINVAL);
    assert_string_equal(err.msg, "X is enabled, but depends on features that are disabled: [Y Z]");
    assert_false(ck_fg_enabled(g, x));
    assert_false(ck_fg_explicitly_set(g, "X"));
    assert_int_equal(ck_fg_set(g, "X=true,Y=true,Z=true", &err), 0);
    assert_true(ck_fg_enabled(g, x));
    assert_int_equal(ck_fg_set(g, "Y=false", &err), CK_FG_EINVAL); /* gate-off of a dependency */
    assert_string_equal(err.msg, "X is enabled, but depends on features that are disabled: [Y]");
    assert_true(ck_fg_enabled(g, y));
    assert_int_equal(ck_fg_set(g, "X=false,Y=false", &err), 0); /* both off together: fine */
    assert_false(ck_fg_enabled(g, x));
    assert_int_equal(ck_fg_validate(g, &err), 0);
    ck_fg_gate_free(g);

    /* AllAlpha turns dependent and dependencies on together. */
    g = ck_fg_gate_new(V(1, 33));
    assert_int_equal(ck_fg_add(g, "X", SPEC(0, 0, false, false, ALPHA), &x, NULL), 0);
    assert_int_equal(ck_fg_add(g, "Y", SPEC(0, 0, false, false, ALPHA), &y, NULL), 0);
    const char *only_y[] = {"Y"};
    assert_int_equal(ck_fg_add_dependencies(g, "X", only_y, 1, &err), 0);
    assert_int_equal(ck_fg_set(g, "AllAlpha=true", &err), 0);
    assert_true(ck_fg_enabled(g, x) && ck_fg_enabled(g, y));
    assert_int_equal(ck_fg_set(g, "AllAlpha=true,Y=false", &err), CK_FG_EINVAL);
    /* Q5: a copy keeps the dependencies, a reset copy does not. */
    struct ck_fg_gate *c = ck_fg_copy(g, false), *r = ck_fg_copy(g, true);
    assert_int_equal(ck_fg_set(c, "Y=false", &err), CK_FG_EINVAL);
    assert_int_equal(ck_fg_set(r, "X=true", &err), 0);
    ck_fg_gate_free(c);
    ck_fg_gate_free(r);
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_R13_declaration_rules),
        cmocka_unit_test(test_R13_merge_cycles_close),
        cmocka_unit_test(test_S12_enabled_needs_dependencies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
