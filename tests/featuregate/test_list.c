/*
 * test_list.c - lib/featuregate/list.c: loading Kubernetes' versioned
 * feature list (M3, P4) and linting it (L1, L2, L3, L4, L5).
 */
#include "cktest.h"

#include "fgtest.h"

/* P4, M3: the small list loads and resolves per emulated version. */
static void test_P4_load_small_list(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 31));
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_list_load(g, FG_DATA "/list.yaml", &err), 0);
    assert_int_equal(ck_fg_count(g), 7);
    assert_false(ck_fg_enabled_name(g, "TestBeta")); /* Alpha at 1.31 */
    ck_fg_feature_t ga;
    assert_int_equal(ck_fg_lookup(g, "TestGA", &ga), 0);
    size_t n;
    assert_int_equal(ck_fg_specs(g, ga, &n)[0].version.minor, 0); /* no version: Add */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 33), &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestBeta"));
    assert_true(ck_fg_enabled_name(g, "TestLocked"));
    assert_false(ck_fg_enabled_name(g, "TestOld")); /* Deprecated off at 1.32+ */
    /* Loading again is a no-op (R4 identical re-add). */
    assert_int_equal(ck_fg_list_load(g, FG_DATA "/list.yaml", &err), 0);
    assert_int_equal(ck_fg_count(g), 7);
    ck_fg_gate_free(g);
}

struct bad {
    const char *file;
    const char *needle;
};

/* Bad lists: each a clear error naming the gate or the line. */
static void test_P4_bad_lists(void **state)
{
    (void)state;
    const struct bad cases[] = {
        {"/list-bad-stage.yaml", "feature \"TestBadStage\": invalid preRelease \"alpha\""},
        {"/list-bad-order.yaml",
         "feature \"TestDecreasing\" lists version transitions in decreasing order"},
        {"/list-malformed.yaml", "malformed YAML"},
        {"/no-such-list.yaml", "no-such-list.yaml"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_gate *g = ck_fg_gate_new(V(1, 31));
        struct ck_fg_err err = {0};
        char path[512];
        snprintf(path, sizeof(path), "%s%s", FG_DATA, cases[i].file);
        assert_int_not_equal(ck_fg_list_load(g, path, &err), 0);
        if (!strstr(err.msg, cases[i].needle))
            fail_msg("%s: %s", cases[i].file, err.msg);
        ck_fg_gate_free(g);
    }
    const char *inline_bad[] = {"{a: 1}",
                                "- 1",
                                "- name: X",
                                "- name: X\n  versionedSpecs: []",
                                "- name: X\n  versionedSpecs:\n  - default: maybe\n    "
                                "preRelease: Alpha",
                                "- name: X\n  other: 1",
                                "- name: X\n  versionedSpecs:\n  - preRelease: GA\n  - "
                                "preRelease: Deprecated"};
    for (size_t i = 0; i < sizeof(inline_bad) / sizeof(inline_bad[0]); i++) {
        struct ck_fg_gate *g = ck_fg_gate_new(V(1, 31));
        struct ck_fg_err err = {0};
        if (ck_fg_list_parse(g, inline_bad[i], strlen(inline_bad[i]), &err) == 0)
            fail_msg("accepted: %s", inline_bad[i]);
        ck_fg_gate_free(g);
    }
}

/* P4 format extension: minCompatibilityVersion per spec (V5). */
static void test_P4_min_compat_extension(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 31));
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_list_load(g, FG_DATA "/list-mcv.yaml", &err), 0);
    assert_int_equal(ck_fg_set_versions(g, V(1, 31), V(1, 30), &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestCompat"));
    assert_int_equal(ck_fg_set_versions(g, V(1, 31), V(1, 31), &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestCompat"));
    ck_fg_gate_free(g);
}

struct findings {
    char lines[16][600];
    int n;
};

static void collect(void *ud, const char *line)
{
    struct findings *f = ud;
    if (f->n < 16)
        snprintf(f->lines[f->n++], sizeof(f->lines[0]), "%s", line);
}

/* L1, L2, L4, L5: one line per finding with the gate's name. */
static void test_L_lint(void **state)
{
    (void)state;
    struct findings f = {0};
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_list_lint(FG_DATA "/list.yaml", collect, &f, &err), 0);
    assert_int_equal(f.n, 0);
    int n = ck_fg_list_lint(FG_DATA "/list-lint-bad.yaml", collect, &f, &err);
    assert_int_equal(n, 6);
    assert_int_equal(f.n, 6);
    assert_string_equal(f.lines[0],
                        "ZetaAlphaOn: alpha feature ZetaAlphaOn cannot be enabled by default");
    assert_string_equal(f.lines[1],
                        "BetaRegress: feature list is not sorted by name (after ZetaAlphaOn)");
    assert_non_null(strstr(f.lines[2], "BetaRegress: feature \"BetaRegress\" regresses"));
    assert_string_equal(f.lines[3], "Dup: multiple conflicting specs found for feature:Dup");
    assert_non_null(strstr(f.lines[4], "Unordered: feature \"Unordered\" lists version "
                                       "transitions in decreasing order"));
    assert_string_equal(f.lines[5], "Zz: The alpha feature gate Zz is locked to default");
    assert_true(ck_fg_list_lint(FG_DATA "/list-malformed.yaml", collect, &f, &err) < 0);
}

/*
 * L3: removals against the previous list. Alpha goes freely; Beta never; GA
 * or Deprecated only once locked, and if locked after 1.31 not before the
 * locked version + 3 (gate-on side: at 1.36 the 1.33 lock may go).
 */
static void test_L3_removals(void **state)
{
    (void)state;
    struct findings f = {0};
    struct ck_fg_err err = {0};
    const char *prev = FG_DATA "/list-previous.yaml", *cur = FG_DATA "/list.yaml";
    assert_int_equal(ck_fg_list_lint_removals(prev, cur, V(1, 35), collect, &f, &err), 3);
    assert_string_equal(f.lines[0], "ZBetaGone: feature ZBetaGone cannot be removed while in beta");
    assert_string_equal(f.lines[1], "ZGALockedAt133: feature ZGALockedAt133 cannot be removed "
                                    "until version 1.36 (required for emulation support)");
    assert_string_equal(f.lines[2], "ZGAUnlocked: feature ZGAUnlocked cannot be removed because "
                                    "it is in GA or Deprecated state and is not locked to default");
    struct findings g = {0};
    assert_int_equal(ck_fg_list_lint_removals(prev, cur, V(1, 36), collect, &g, &err), 2);
    struct findings h = {0};
    assert_int_equal(ck_fg_list_lint_removals(prev, prev, V(1, 35), collect, &h, &err), 0);
    assert_true(ck_fg_list_lint_removals(FG_DATA "/nope.yaml", cur, V(1, 35), collect, &h, &err) <
                0);
    assert_non_null(strstr(err.msg, "nope.yaml"));
    assert_true(ck_fg_list_lint_removals(prev, FG_DATA "/list-malformed.yaml", V(1, 35), collect,
                                         &h, &err) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_P4_load_small_list),
        cmocka_unit_test(test_P4_bad_lists),
        cmocka_unit_test(test_P4_min_compat_extension),
        cmocka_unit_test(test_L_lint),
        cmocka_unit_test(test_L3_removals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
