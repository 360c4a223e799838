/*
 * test_gate.c - lib/featuregate/gate.c: registration (R), setting (S, D1),
 * emulation (V3-V6) and reading (Q1, Q5). Rule ids in the test names.
 */
#include "cktest.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fgtest.h"

static bool en(struct ck_fg_gate *g, const char *name)
{
    return ck_fg_enabled_name(g, name);
}

/* M4, Q1: a new gate knows AllAlpha and AllBeta, both off. */
static void test_M4_special_gates(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    assert_int_equal(ck_fg_count(g), 2);
    assert_string_equal(ck_fg_name(g, CK_FG_ALL_ALPHA), "AllAlpha");
    assert_string_equal(ck_fg_name(g, CK_FG_ALL_BETA), "AllBeta");
    assert_false(ck_fg_enabled(g, CK_FG_ALL_ALPHA));
    assert_int_equal(ck_fg_spec_in_effect(g, CK_FG_ALL_BETA).stage, CK_FG_BETA);
    ck_fg_gate_free(g);
}

struct reg_case {
    const char *name;
    struct ck_fg_spec specs[3];
    size_t n;
    const char *err; /* NULL: accepted */
};

#define MC(s, a, b) ((s).has_min_compat = true, (s).min_compat = V(a, b), (s))

/* R5-R10: the per-spec and per-transition checks, texts as Kubernetes'. */
static void test_R5_R10_registration_table(void **state)
{
    (void)state;
    struct ck_fg_spec patch = SPEC(1, 30, false, false, ALPHA);
    patch.version.ncomp = 3;
    struct ck_fg_spec nover = SPEC(1, 30, false, false, ALPHA);
    nover.has_version = false;
    struct ck_fg_spec beta30 = SPEC(1, 30, false, false, BETA);
    struct ck_fg_spec beta30mc = SPEC(1, 30, true, false, BETA);
    struct ck_fg_spec mcfirst = SPEC(1, 30, false, false, BETA);
    struct ck_fg_spec mcbig = SPEC(1, 30, true, false, BETA);
    struct ck_fg_spec r7stage = SPEC(1, 30, true, false, BETA);
    struct ck_fg_spec r7lock = SPEC(1, 30, true, true, BETA);
    struct ck_fg_spec r6a = SPEC(1, 29, true, false, BETA);
    struct ck_fg_spec r6b = SPEC(1, 29, false, false, ALPHA);
    const struct reg_case cases[] = {
        {"ok", {SPEC(1, 29, false, false, ALPHA), SPEC(1, 30, true, false, BETA)}, 2, NULL},
        {"R5 no version", {nover}, 1, "feature \"F\" did not provide a version"},
        {"R5 patch", {patch}, 1, "feature \"F\" specified patch version: 1.30.0"},
        {"R5 mcv first",
         {MC(mcfirst, 1, 29)},
         1,
         "feature \"F\" specified MinCompatibilityVersion: 1.29 without a preceding entry"},
        {"R5 mcv greater",
         {beta30, MC(mcbig, 1, 31)},
         2,
         "feature \"F\" MinCompatibilityVersion 1.31 greater than Version 1.30"},
        {"V5 mcv split ok", {beta30, MC(beta30mc, 1, 30)}, 2, NULL},
        {"R5 deprecated first",
         {SPEC(1, 29, false, false, DEPRECATED)},
         1,
         "feature \"F\" introduced as deprecated must provide a 1.0 entry"},
        {"R5 deprecated at 1.0 ok", {SPEC(1, 0, false, false, DEPRECATED)}, 1, NULL},
        {"R6 decreasing",
         {SPEC(1, 30, false, false, ALPHA), SPEC(1, 29, true, false, BETA)},
         2,
         "feature \"F\" lists version transitions in decreasing order (1.29 < 1.30)"},
        {"R6 duplicate",
         {SPEC(1, 30, false, false, ALPHA), SPEC(1, 30, true, false, BETA)},
         2,
         "feature \"F\" lists duplicate entries with the same versions (1.30 = 1.30)"},
        {"R8 no change",
         {SPEC(1, 29, false, false, BETA), SPEC(1, 30, false, false, BETA)},
         2,
         "feature \"F\" lists transition without stability change (1.29 -> 1.30)"},
        {"R9 unlock",
         {SPEC(1, 29, true, true, GA), SPEC(1, 30, true, false, DEPRECATED)},
         2,
         "feature \"F\" must not unlock after locking to default"},
        {"R10 resurrect",
         {SPEC(1, 0, false, false, DEPRECATED), SPEC(1, 30, true, false, GA)},
         2,
         "deprecated feature \"F\" must not resurrect from its terminal state"},
        {"R10 regress",
         {SPEC(1, 29, true, false, BETA), SPEC(1, 30, false, false, ALPHA)},
         2,
         "feature \"F\" regresses stability from more stable level to ALPHA in 1.30"},
        {"R10 alpha to GA ok",
         {SPEC(1, 29, false, false, ALPHA), SPEC(1, 30, true, true, GA)},
         2,
         NULL},
        {"R10 deprecated default change ok",
         {SPEC(1, 0, true, false, DEPRECATED), SPEC(1, 30, false, false, DEPRECATED)},
         2,
         NULL},
        {"R7 stability change",
         {SPEC(1, 30, false, false, ALPHA), MC(r7stage, 1, 30)},
         2,
         "feature \"F\" lists stability changes with the same version (ALPHA -> BETA)"},
        {"R7 lock change",
         {SPEC(1, 30, false, false, BETA), MC(r7lock, 1, 30)},
         2,
         "feature \"F\" lists locked to default changes with the same version (false -> true)"},
        {"R6 min compatibility decreasing is checked before R7",
         {SPEC(1, 29, false, false, BETA), MC(r6a, 1, 29), MC(r6b, 1, 28)},
         3,
         "feature \"F\" lists min compatibility version transitions in decreasing order "
         "(1.28 < 1.29)"},
        {"R11 alpha default on is not the library's business",
         {SPEC(1, 30, true, true, ALPHA)},
         1,
         NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
        struct ck_fg_err err = {0};
        int rc = ck_fg_add_versioned(g, "F", cases[i].specs, cases[i].n, NULL, &err);
        if (!cases[i].err) {
            if (rc != 0)
                fail_msg("%s: unexpected error %s", cases[i].name, err.msg);
            assert_int_equal(ck_fg_count(g), 3);
        } else {
            if (rc == 0 || strncmp(err.msg, cases[i].err, strlen(cases[i].err)) != 0)
                fail_msg("%s: got rc %d %s", cases[i].name, rc, err.msg);
            assert_int_equal(ck_fg_count(g), 2); /* R2: nothing stored */
        }
        ck_fg_gate_free(g);
    }
}

/* R1: Add forces version 0.0, so the spec applies at every version. */
static void test_R1_add_forces_version_zero(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 10));
    ck_fg_feature_t f;
    assert_int_equal(ck_fg_add(g, "A", SPEC(1, 30, true, false, BETA), &f, NULL), 0);
    assert_true(ck_fg_enabled(g, f));
    size_t n;
    assert_int_equal(ck_fg_specs(g, f, &n)[0].version.minor, 0);
    ck_fg_gate_free(g);
}

/* R3, R4: identical re-add is a no-op, different fails, closed gate refuses. */
static void test_R3_R4_readd_and_close(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    struct ck_fg_err err = {0};
    ck_fg_feature_t a, b;
    assert_int_equal(ck_fg_add(g, "A", SPEC(0, 0, false, false, ALPHA), &a, &err), 0);
    assert_int_equal(ck_fg_add(g, "A", SPEC(0, 0, false, false, ALPHA), &b, &err), 0);
    assert_int_equal(a, b);
    assert_int_equal(ck_fg_add(g, "A", SPEC(0, 0, true, false, ALPHA), NULL, &err), CK_FG_EEXIST);
    assert_non_null(strstr(err.msg, "feature gate \"A\" with different spec already exists: "));
    assert_int_equal(ck_fg_add(g, "AllAlpha", SPEC(0, 0, true, false, ALPHA), NULL, &err),
                     CK_FG_EEXIST);
    assert_int_equal(ck_fg_add(g, "AllBeta", SPEC(0, 0, false, false, BETA), NULL, &err), 0);
    ck_fg_close(g);
    assert_int_equal(ck_fg_add(g, "B", SPEC(0, 0, false, false, ALPHA), NULL, &err), CK_FG_EPERM);
    assert_string_equal(err.msg, "cannot add a feature gate after adding it to the flag set");
    assert_int_equal(ck_fg_set(g, "A=true", &err), 0); /* R3: set still works */
    assert_true(en(g, "A"));
    ck_fg_gate_free(g);
}

struct set_case {
    const char *set;
    const char *err;      /* prefix, NULL: success */
    const char *on, *off; /* comma-free single names checked afterwards */
};

/* S1-S11 as a table: each case starts from a fresh test gate at 1.30. */
static void test_S_set_table(void **state)
{
    (void)state;
    const struct set_case cases[] = {
        {"TestAlpha=true", NULL, "TestAlpha", "TestBetaOff"},
        {"TestBeta=false", NULL, "TestGA", "TestBeta"},
        {"", NULL, "TestBeta", "TestAlpha"},
        {"fooBarBaz=true", "unrecognized feature gate: fooBarBaz", "TestBeta", "TestAlpha"},
        {"testalpha=true", "unrecognized feature gate: testalpha", NULL, "TestAlpha"}, /* M6 */
        {"=true", "unrecognized feature gate: ", NULL, "TestAlpha"},
        {"TestLockedTrue=false",
         "cannot set feature gate TestLockedTrue to false, feature is "
         "locked to true",
         "TestLockedTrue", NULL},
        {"TestLockedTrue=true", NULL, "TestLockedTrue", NULL}, /* S4: same value is fine */
        {"TestLockedFalse=true",
         "cannot set feature gate TestLockedFalse to true, feature is "
         "locked to false",
         NULL, "TestLockedFalse"},
        {"TestFuture=false",
         "cannot set feature gate TestFuture to false, feature is PreAlpha at "
         "emulated version 1.30",
         NULL, "TestFuture"}, /* S5, V4 */
        {"TestFuture=true,TestLockedTrue=false", "[cannot set feature gate", NULL, NULL}, /* S6 */
        {"TestAlpha=true,TestLockedTrue=false", "cannot set", NULL, "TestAlpha"},         /* D1 */
        {"AllAlpha=true", NULL, "TestAlpha", "TestFuture"},                               /* S8 */
        {"AllAlpha=true,TestAlpha=false", NULL, "AllAlpha", "TestAlpha"},                 /* S9 */
        {"TestAlpha=false,AllAlpha=true", NULL, "AllAlpha", "TestAlpha"},
        {"AllAlpha=false,TestAlpha=true", NULL, "TestAlpha", "AllAlpha"},
        {"AllBeta=true", NULL, "TestBetaOff", "TestAlpha"},
        {"TestBetaOff=false,AllBeta=true", NULL, "AllBeta", "TestBetaOff"},
        {"AllBeta=false", NULL, "TestGA", "TestBeta"},      /* S10 */
        {"AllBeta=false", NULL, "TestGA", "TestVersioned"}, /* S10: Beta at 1.30, default on */
        {"TestGA=false", NULL, NULL, "TestGA"},             /* S7: GA can be set */
        {"TestAlpha=true,TestAlpha=false", NULL, NULL, "TestAlpha"}, /* S1: last wins */
        {"TestAlpha=yes",
         "invalid value of TestAlpha=yes, err: strconv.ParseBool: parsing "
         "\"yes\": invalid syntax",
         NULL, "TestAlpha"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_gate *g = fg_test_gate();
        struct ck_fg_err err = {0};
        char *before = ck_fg_string(g);
        int rc = ck_fg_set(g, cases[i].set, &err);
        if (cases[i].err) {
            if (rc == 0 || strncmp(err.msg, cases[i].err, strlen(cases[i].err)) != 0)
                fail_msg("%s: rc %d msg %s", cases[i].set, rc, err.msg);
            char *after = ck_fg_string(g);
            assert_string_equal(before, after); /* D1 */
            assert_false(ck_fg_explicitly_set(g, "TestAlpha"));
            free(after);
        } else if (rc != 0) {
            fail_msg("%s: unexpected %s", cases[i].set, err.msg);
        }
        if (cases[i].on && !en(g, cases[i].on))
            fail_msg("%s: %s should be on", cases[i].set, cases[i].on);
        if (cases[i].off && en(g, cases[i].off))
            fail_msg("%s: %s should be off", cases[i].set, cases[i].off);
        free(before);
        ck_fg_gate_free(g);
    }
}

/* S9 across calls, S11 stickiness of bulk-derived values, S11 locks ignored. */
static void test_S9_S11_across_calls(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_set(g, "TestAlpha=false", NULL), 0);
    assert_int_equal(ck_fg_set(g, "AllAlpha=true", NULL), 0);
    assert_false(en(g, "TestAlpha")); /* S9: explicit from an earlier call wins */
    ck_fg_gate_free(g);

    g = fg_test_gate();
    struct ck_fg_spec lockedbeta = SPEC(0, 0, false, true, BETA);
    assert_int_equal(ck_fg_add(g, "TestLockedBeta", lockedbeta, NULL, NULL), 0);
    assert_int_equal(ck_fg_set(g, "AllAlpha=true", NULL), 0);
    assert_int_equal(ck_fg_set(g, "AllAlpha=false", NULL), 0);
    assert_true(en(g, "TestAlpha"));                    /* S11: stays on */
    assert_false(ck_fg_explicitly_set(g, "TestAlpha")); /* M5 */
    assert_true(ck_fg_explicitly_set(g, "AllAlpha"));
    assert_int_equal(ck_fg_set(g, "AllBeta=true", NULL), 0);
    assert_true(en(g, "TestLockedBeta")); /* S11: bulk ignores locks */
    ck_fg_gate_free(g);
}

/* D1: after a failing set, later sets of other gates still work. */
static void test_D1_failure_does_not_poison(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    assert_int_not_equal(ck_fg_set(g, "TestLockedTrue=false", &err), 0);
    assert_false(ck_fg_explicitly_set(g, "TestLockedTrue"));
    assert_int_equal(ck_fg_set(g, "TestAlpha=true", &err), 0);
    assert_int_equal(ck_fg_validate(g, &err), 0); /* S15 */
    assert_true(en(g, "TestAlpha"));
    ck_fg_gate_free(g);
}

/* S7, O3: setting GA or Deprecated warns, once per recorded pair. */
static void test_S7_O3_warnings(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    assert_int_equal(ck_fg_set(g, "TestGA=true,TestDeprecated=true,TestAlpha=true", NULL), 0);
    assert_true(fg_log_has(&log, "Warning: setting GA feature gate. It will be removed in a "
                                 "future release. featureGate=\"TestGA\" value=true"));
    assert_true(fg_log_has(&log, "Warning: setting deprecated feature gate."));
    assert_false(fg_log_has(&log, "featureGate=\"TestAlpha\""));
    assert_true(fg_log_has(&log, "Updated featureGates=")); /* O2 */
    ck_fg_gate_free(g);
}

/* V3, V4: the spec in effect follows the emulation version. */
static void test_V3_V4_spec_at_emulation(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    ck_fg_feature_t v, fut;
    assert_int_equal(ck_fg_lookup(g, "TestVersioned", &v), 0);
    assert_int_equal(ck_fg_lookup(g, "TestFuture", &fut), 0);
    assert_true(ck_fg_enabled(g, v)); /* Beta on at 1.30 */
    assert_false(ck_fg_enabled(g, fut));
    assert_int_equal(ck_fg_spec_in_effect(g, fut).stage, CK_FG_PREALPHA);
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 29), NULL), 0);
    assert_false(ck_fg_enabled(g, v));                       /* Alpha off at 1.29 */
    assert_int_equal(ck_fg_min_compat_version(g).minor, 28); /* V2 */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 28), NULL), 0);
    assert_int_equal(ck_fg_spec_in_effect(g, v).stage, CK_FG_PREALPHA);
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 32), NULL), 0);
    assert_int_equal(ck_fg_spec_in_effect(g, v).stage, CK_FG_GA);
    assert_true(ck_fg_enabled(g, fut) == false);
    assert_int_equal(ck_fg_spec_in_effect(g, fut).stage, CK_FG_ALPHA);
    ck_fg_gate_free(g);
}

/* S4: lock judged at the emulated version. */
static void test_S4_lock_at_emulated_version(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 28), NULL), 0);
    assert_int_equal(ck_fg_set(g, "TestLockedFalse=true", NULL), 0);
    assert_true(en(g, "TestLockedFalse"));
    ck_fg_gate_free(g);
}

/* V6: changing E re-resolves raw input; invalid raw input fails and changes nothing. */
static void test_V6_emulation_change(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    assert_int_equal(ck_fg_set(g, "TestVersioned=true", NULL), 0);
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 28), &err), CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "TestVersioned to true, feature is PreAlpha at emulated "
                                    "version 1.28"));
    assert_int_equal(ck_fg_emulation_version(g).minor, 30); /* unchanged */
    assert_true(en(g, "TestVersioned"));
    assert_int_equal(ck_fg_set(g, "AllBeta=false", NULL), 0);
    assert_false(en(g, "TestBeta"));
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 32), &err), 0);
    assert_false(en(g, "TestBeta")); /* AllBeta re-applied from raw */
    assert_true(fg_log_has(&log, "Set feature gate emulation"));
    /* V6 after a lock appears: TestVersioned=true equals the lock, fine. */
    assert_true(en(g, "TestVersioned"));
    ck_fg_gate_free(g);
}

/* V5, R12: compatibility-gated specs and inheritance of MinCompatibilityVersion. */
static void test_V5_min_compat_gating(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    struct ck_fg_err err = {0};
    struct ck_fg_spec s[] = {SPEC(1, 28, false, false, BETA), SPEC(1, 28, true, false, BETA),
                             SPEC(1, 30, true, true, GA)};
    s[1].has_min_compat = true;
    s[1].min_compat = V(1, 28);
    ck_fg_feature_t f;
    assert_int_equal(ck_fg_add_versioned(g, "TestCompatC", s, 3, &f, &err), 0);
    assert_int_equal(ck_fg_set_versions(g, V(1, 30), V(1, 27), &err), 0);
    assert_false(ck_fg_enabled(g, f)); /* first Beta-off spec; GA hidden (R12) */
    assert_int_equal(ck_fg_spec_in_effect(g, f).stage, CK_FG_BETA);
    assert_int_equal(ck_fg_set(g, "TestCompatC=true", &err), 0); /* settable */
    assert_int_equal(ck_fg_reset_to_default(g, "TestCompatC", &err), 0);
    assert_int_equal(ck_fg_set_versions(g, V(1, 30), V(1, 28), &err), 0);
    assert_true(ck_fg_enabled(g, f));
    assert_int_equal(ck_fg_spec_in_effect(g, f).stage, CK_FG_GA);
    assert_int_not_equal(ck_fg_set(g, "TestCompatC=false", &err), 0);
    ck_fg_gate_free(g);
}

/* S13, S14: override the default; reset an explicit value. */
static void test_S13_S14_override_and_reset(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_override_default(g, "TestAlpha", true, &err), 0);
    assert_true(en(g, "TestAlpha"));
    assert_int_equal(ck_fg_override_default(g, "TestLockedTrue", false, &err), CK_FG_EPERM);
    assert_string_equal(err.msg,
                        "cannot override default: feature \"TestLockedTrue\" default is locked "
                        "to true");
    assert_int_equal(ck_fg_override_default(g, "Nope", false, &err), CK_FG_ENOENT);
    assert_int_equal(ck_fg_override_default(g, "TestFuture", true, &err), CK_FG_EINVAL);
    assert_int_equal(ck_fg_set(g, "TestAlpha=false", &err), 0);
    assert_false(en(g, "TestAlpha")); /* explicit beats overridden default */
    assert_int_equal(ck_fg_reset_to_default(g, "TestAlpha", &err), 0);
    assert_true(en(g, "TestAlpha"));
    assert_false(ck_fg_explicitly_set(g, "TestAlpha"));
    ck_fg_close(g);
    assert_int_equal(ck_fg_override_default(g, "TestAlpha", false, &err), CK_FG_EPERM);
    ck_fg_gate_free(g);
}

/* S13: OverrideDefaultAtVersion changes the spec in effect at that version only. */
static void test_S13_override_default_at_version(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate(); /* TestVersioned: Alpha 1.29, Beta on 1.30, GA 1.32 */
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_override_default_at(g, "TestVersioned", true, V(1, 29), &err), 0);
    assert_true(en(g, "TestVersioned")); /* at 1.30 the Beta default, untouched */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 29), &err), 0);
    assert_true(en(g, "TestVersioned")); /* the Alpha spec now defaults on */
    assert_int_equal(ck_fg_override_default_at(g, "TestVersioned", false, V(1, 30), &err), 0);
    assert_true(en(g, "TestVersioned")); /* gate-on at 1.29 still */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 30), &err), 0);
    assert_false(en(g, "TestVersioned")); /* gate-off: Beta overridden to off */
    assert_int_equal(ck_fg_override_default_at(g, "TestVersioned", false, V(1, 28), &err),
                     CK_FG_EINVAL);
    assert_string_equal(err.msg, "cannot override default: feature \"TestVersioned\" is not "
                                 "available before version 1.28");
    assert_int_equal(ck_fg_override_default_at(g, "TestVersioned", false, V(1, 32), &err),
                     CK_FG_EPERM); /* locked GA */
    ck_fg_gate_free(g);
}

/* Q5: deep copies are independent; reset keeps only registrations and versions. */
static void test_Q5_copy(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_set(g, "TestAlpha=true", NULL), 0);
    ck_fg_close(g);
    struct ck_fg_gate *c = ck_fg_copy(g, false);
    struct ck_fg_gate *r = ck_fg_copy(g, true);
    assert_true(en(c, "TestAlpha"));
    assert_false(en(r, "TestAlpha"));
    assert_int_equal(ck_fg_set(c, "TestAlpha=false,TestBeta=false", NULL), 0);
    assert_true(en(g, "TestAlpha"));
    assert_true(en(g, "TestBeta"));
    assert_int_equal(ck_fg_add(c, "New", SPEC(0, 0, false, false, ALPHA), NULL, NULL),
                     CK_FG_EPERM); /* closed flag copied */
    assert_int_equal(ck_fg_add(r, "New", SPEC(0, 0, false, false, ALPHA), NULL, NULL), 0);
    assert_int_equal(ck_fg_emulation_version(r).minor, 30);
    ck_fg_gate_free(c);
    ck_fg_gate_free(r);
    ck_fg_gate_free(g);
}

/* Q1, G5: an unknown name or handle is a programming error that aborts. */
static void test_Q1_G5_unknown_aborts(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            struct ck_fg_gate *g = fg_test_gate();
            if (freopen("/dev/null", "w", stderr) == NULL)
                _exit(3);
            if (which == 0)
                (void)ck_fg_enabled_name(g, "Nope");
            else
                (void)ck_fg_enabled(g, 999);
            _exit(0);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), SIGABRT);
    }
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_lookup(g, "Nope", NULL), CK_FG_ENOENT);
    ck_fg_gate_free(g);
}

/* M1, M2: a spec's fields survive registration; stage strings as Kubernetes'. */
static void test_M1_M2_specs_and_stage_strings(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    struct ck_fg_spec in[] = {SPEC(1, 28, false, false, ALPHA), SPEC(1, 29, false, false, BETA),
                              SPEC(1, 29, true, false, BETA), SPEC(1, 31, true, true, GA)};
    in[2].has_min_compat = true;
    in[2].min_compat = V(1, 29);
    ck_fg_feature_t f;
    assert_int_equal(ck_fg_add_versioned(g, "F", in, 4, &f, NULL), 0);
    size_t n;
    const struct ck_fg_spec *out = ck_fg_specs(g, f, &n);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ck_fg_version_cmp(out[i].version, in[i].version), 0);
        assert_int_equal(out[i].default_value, in[i].default_value);
        assert_int_equal(out[i].lock_to_default, in[i].lock_to_default);
        assert_int_equal(out[i].stage, in[i].stage);
        assert_int_equal(out[i].has_min_compat, in[i].has_min_compat);
    }
    assert_string_equal(ck_fg_stage_string(CK_FG_ALPHA), "ALPHA");
    assert_string_equal(ck_fg_stage_string(CK_FG_BETA), "BETA");
    assert_string_equal(ck_fg_stage_string(CK_FG_GA), "");
    assert_string_equal(ck_fg_stage_string(CK_FG_DEPRECATED), "DEPRECATED");
    assert_string_equal(ck_fg_stage_string(CK_FG_PREALPHA), "PRE-ALPHA");
    assert_string_equal(ck_fg_stage_list_name(CK_FG_GA), "GA"); /* M3 */
    ck_fg_gate_free(g);
}

/*
 * S2 is Kubernetes keeping a rejected pair in enabledRaw, so that every later
 * call fails again; D1 is ckube not doing so. Gate-on and gate-off: after the
 * rejected pair, both an enabling and a disabling set of another gate work,
 * and a later emulation change re-resolves only what was accepted.
 */
static void test_S2_D1_rejected_pair_not_recorded(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    assert_int_not_equal(ck_fg_set(g, "TestAlpha=true,TestFuture=true", &err), 0);
    assert_false(ck_fg_explicitly_set(g, "TestFuture"));
    assert_false(ck_fg_explicitly_set(g, "TestAlpha")); /* all pairs or none */
    assert_false(en(g, "TestAlpha"));
    assert_int_equal(ck_fg_set(g, "TestAlpha=true", &err), 0);
    assert_true(en(g, "TestAlpha"));
    assert_int_equal(ck_fg_set(g, "TestBeta=false", &err), 0);
    assert_false(en(g, "TestBeta"));
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 29), &err), 0);
    assert_true(en(g, "TestAlpha"));
    assert_false(en(g, "TestBeta"));
    ck_fg_gate_free(g);
}

/* C1: after close (flags registered), each --feature-gates occurrence is one more set. */
static void test_C1_closed_gate_accumulates_sets(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct ck_fg_err err = {0};
    ck_fg_close(g);
    assert_int_equal(ck_fg_set(g, "TestAlpha=true", &err), 0);
    assert_int_equal(ck_fg_set(g, "TestBeta=false", &err), 0);
    assert_true(en(g, "TestAlpha")); /* the first occurrence stays */
    assert_false(en(g, "TestBeta"));
    assert_true(ck_fg_explicitly_set(g, "TestAlpha"));
    assert_true(ck_fg_explicitly_set(g, "TestBeta"));
    ck_fg_gate_free(g);
}

/* O4: an emulation change that flips a value says so, with old and new value. */
static void test_O4_emulation_change_logs_flips(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    assert_true(en(g, "TestVersioned")); /* Beta on at 1.30 */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 29), NULL), 0);
    assert_true(fg_log_has(&log, "Warning: SetEmulationVersionAndMinCompatibilityVersion will "
                                 "change already queried feature featureGate=\"TestVersioned\" "
                                 "oldValue=true newValue=false"));
    assert_false(fg_log_has(&log, "featureGate=\"TestAlpha\"")); /* unchanged: not logged */
    assert_true(fg_log_has(&log, "Set feature gate emulation emulationVersion=\"1.29\" "
                                 "minCompatibilityVersion=\"1.28\""));
    int before = log.n;
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 29), NULL), 0);
    assert_int_equal(log.n, before); /* V6: same versions, a no-op */
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_M4_special_gates),
        cmocka_unit_test(test_R5_R10_registration_table),
        cmocka_unit_test(test_R1_add_forces_version_zero),
        cmocka_unit_test(test_R3_R4_readd_and_close),
        cmocka_unit_test(test_S_set_table),
        cmocka_unit_test(test_S9_S11_across_calls),
        cmocka_unit_test(test_D1_failure_does_not_poison),
        cmocka_unit_test(test_S7_O3_warnings),
        cmocka_unit_test(test_V3_V4_spec_at_emulation),
        cmocka_unit_test(test_S4_lock_at_emulated_version),
        cmocka_unit_test(test_V6_emulation_change),
        cmocka_unit_test(test_V5_min_compat_gating),
        cmocka_unit_test(test_S13_S14_override_and_reset),
        cmocka_unit_test(test_S13_override_default_at_version),
        cmocka_unit_test(test_Q5_copy),
        cmocka_unit_test(test_Q1_G5_unknown_aborts),
        cmocka_unit_test(test_M1_M2_specs_and_stage_strings),
        cmocka_unit_test(test_S2_D1_rejected_pair_not_recorded),
        cmocka_unit_test(test_C1_closed_gate_accumulates_sets),
        cmocka_unit_test(test_O4_emulation_change_logs_flips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
