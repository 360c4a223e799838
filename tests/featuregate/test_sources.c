/*
 * test_sources.c - lib/featuregate/sources.c: the config file (P8, C3), the
 * environment (G4, G6, O6, P7, C4), the merged sources and their precedence
 * (P5, P6, C2, S9 across sources) and providers (G1, G2, G3).
 */
#include "cktest.h"

#include "fgtest.h"

static void free_pairs(struct ck_fg_pair *p, char *buf)
{
    free(p);
    free(buf);
}

/* P8: featureGates: map of booleans; other keys ignored; bad input errors. */
static void test_P8_config_files(void **state)
{
    (void)state;
    struct ck_fg_pair *p;
    size_t n;
    char *buf;
    struct ck_fg_err err = {0};
    assert_int_equal(ck_fg_config_load(FG_DATA "/config.yaml", &p, &n, &buf, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(p[0].name, "TestAlpha");
    assert_true(p[0].value);
    assert_string_equal(p[1].name, "TestBeta");
    assert_false(p[1].value);
    free_pairs(p, buf);
    assert_int_equal(ck_fg_config_load(FG_DATA "/config-no-gates.yaml", &p, &n, &buf, &err), 0);
    assert_int_equal(n, 0);
    free_pairs(p, buf);
    assert_int_equal(ck_fg_config_load(FG_DATA "/config-bad-value.yaml", &p, &n, &buf, &err),
                     CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "TestAlpha"));
    assert_int_equal(ck_fg_config_load(FG_DATA "/config-malformed.yaml", &p, &n, &buf, &err),
                     CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "malformed YAML"));
    assert_int_equal(ck_fg_config_load(FG_DATA "/does-not-exist.yaml", &p, &n, &buf, &err),
                     CK_FG_ENOENT);
    assert_non_null(strstr(err.msg, "does-not-exist.yaml"));
    const char *cases[] = {"featureGates: {}", "featureGates:",     "",
                           "- a\n- b",         "featureGates: [1]", "featureGates: {A: 1}"};
    const int rcs[] = {0, 0, 0, CK_FG_EINVAL, CK_FG_EINVAL, CK_FG_EINVAL};
    for (size_t i = 0; i < 6; i++) {
        int rc = ck_fg_config_parse(cases[i], strlen(cases[i]), &p, &n, &buf, &err);
        if (rc != rcs[i])
            fail_msg("'%s': rc %d %s", cases[i], rc, err.msg);
        if (rc == 0) {
            assert_int_equal(n, 0);
            free_pairs(p, buf);
        }
    }
}

static const char *fake_env(const char *name)
{
    if (!strcmp(name, "KUBE_FEATURE_TestAlpha"))
        return "True";
    if (!strcmp(name, "KUBE_FEATURE_TestBeta"))
        return " false"; /* G4: not trimmed, ignored */
    if (!strcmp(name, "KUBE_FEATURE_TestLockedTrue"))
        return "false"; /* contradicts the lock: ignored */
    if (!strcmp(name, "KUBE_FEATURE_TestGA"))
        return "1";
    if (!strcmp(name, "KUBE_FEATURE_TestFuture"))
        return "true"; /* PreAlpha: ignored silently */
    if (!strcmp(name, "KUBE_FEATURE_testalpha"))
        return "false";
    return NULL;
}

/* G4, P7: client-go's environment rules. */
static void test_G4_P7_env(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    struct ck_fg_pair *p;
    size_t n;
    char *buf;
    assert_int_equal(ck_fg_env_pairs(g, fake_env, &p, &n, &buf, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(p[0].name, "TestAlpha");
    assert_true(p[0].value);
    assert_string_equal(p[1].name, "TestGA");
    assert_true(fg_log_has(&log, "Could not set feature gate feature=\"TestBeta\""));
    assert_true(fg_log_has(&log, "feature is locked feature=\"TestLockedTrue\""));
    assert_false(fg_log_has(&log, "TestFuture"));
    free_pairs(p, buf);
    ck_fg_gate_free(g);
}

/* P5: env < config < flags, merged per name, applied once. */
static void test_P5_precedence(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    struct ck_fg_gate *g = fg_test_gate();
    /* config: TestAlpha=true TestBeta=false AllAlpha=false; flags override TestAlpha. */
    const char *flags[] = {"TestAlpha=true", "TestAlpha=false,TestBetaOff=true"};
    assert_int_equal(ck_fg_apply_sources(g, flags, 2, FG_DATA "/config.yaml", false, &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestAlpha")); /* flags beat file; P6 last wins */
    assert_false(ck_fg_enabled_name(g, "TestBeta"));  /* file kept where flags are silent */
    assert_true(ck_fg_enabled_name(g, "TestBetaOff"));
    ck_fg_gate_free(g);

    /* The environment is the lowest source, and only with use_env. */
    setenv("KUBE_FEATURE_TestBetaOff", "true", 1);
    setenv("KUBE_FEATURE_TestAlpha", "false", 1);
    g = fg_test_gate();
    assert_int_equal(ck_fg_apply_sources(g, NULL, 0, NULL, false, &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestBetaOff"));
    ck_fg_gate_free(g);
    g = fg_test_gate();
    assert_int_equal(ck_fg_apply_sources(g, NULL, 0, FG_DATA "/config.yaml", true, &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestBetaOff")); /* env applies */
    assert_true(ck_fg_enabled_name(g, "TestAlpha"));   /* config beats env */
    ck_fg_gate_free(g);

    /* S9 across sources: AllAlpha from flags never beats an explicit file value. */
    g = fg_test_gate();
    const char *bulk[] = {"AllAlpha=true"};
    assert_int_equal(ck_fg_add(g, "TestAlpha2", SPEC(0, 0, false, false, ALPHA), NULL, NULL), 0);
    assert_int_equal(ck_fg_apply_sources(g, bulk, 1, FG_DATA "/config.yaml", false, &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestAlpha2"));
    assert_true(ck_fg_enabled_name(g, "AllAlpha"));
    ck_fg_gate_free(g);
    g = fg_test_gate();
    setenv("KUBE_FEATURE_TestAlpha", "false", 1);
    assert_int_equal(ck_fg_apply_sources(g, bulk, 1, NULL, true, &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestAlpha")); /* explicit env beats AllAlpha */
    unsetenv("KUBE_FEATURE_TestBetaOff");
    unsetenv("KUBE_FEATURE_TestAlpha");

    /* Errors from any source change nothing (D1). */
    const char *bad[] = {"TestLockedTrue=false"};
    assert_int_not_equal(ck_fg_apply_sources(g, bad, 1, NULL, false, &err), 0);
    assert_int_not_equal(ck_fg_apply_sources(g, NULL, 0, FG_DATA "/nope.yaml", false, &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    assert_false(ck_fg_explicitly_set(g, "TestLockedTrue"));
    ck_fg_gate_free(g);
}

/* G2, G3: replace the provider; fold one gate's features into another. */
static void test_G2_G3_provider_and_fold(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    struct ck_fg_gate *lib = ck_fg_gate_new(V(1, 30));
    struct ck_fg_spec s[] = {SPEC(1, 28, false, false, ALPHA), SPEC(1, 30, true, false, BETA)};
    assert_int_equal(ck_fg_add_versioned(lib, "ClientThing", s, 2, NULL, &err), 0);
    assert_null(ck_fg_provider_replace(lib));
    assert_ptr_equal(ck_fg_provider(), lib);

    struct ck_fg_gate *comp = fg_test_gate();
    assert_int_equal(ck_fg_fold(comp, lib, true, &err), 0);
    assert_int_equal(ck_fg_set_emulation_version(comp, V(1, 29), &err), 0);
    assert_false(ck_fg_enabled_name(comp, "ClientThing")); /* versioned specs kept */
    struct ck_fg_gate *flat = fg_test_gate();
    assert_int_equal(ck_fg_fold(flat, lib, false, &err), 0);
    assert_int_equal(ck_fg_set_emulation_version(flat, V(1, 29), &err), 0);
    assert_true(ck_fg_enabled_name(flat, "ClientThing")); /* latest spec, version 0.0 */
    assert_ptr_equal(ck_fg_provider_replace(comp), lib);
    assert_int_equal(ck_fg_set(ck_fg_provider(), "ClientThing=true", &err), 0);
    assert_true(ck_fg_enabled_name(ck_fg_provider(), "ClientThing"));
    assert_true(ck_fg_enabled_name(lib, "ClientThing")); /* the folded-from gate is separate */
    assert_false(ck_fg_explicitly_set(lib, "ClientThing"));
    ck_fg_provider_replace(NULL);
    ck_fg_gate_free(flat);
    ck_fg_gate_free(comp);
    ck_fg_gate_free(lib);
}

/*
 * C2, O5: repeated --feature-gates values are joined with commas and applied
 * in one call, so the last value wins per name whatever the order of the
 * occurrences, and AllAlpha in an early occurrence never beats a gate named
 * in a later one; the joined string is logged as the registry does.
 */
static void test_C2_O5_repeated_flags_one_set(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    struct ck_fg_gate *g = fg_test_gate();
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    const char *flags[] = {"AllAlpha=true,TestBeta=false", "TestAlpha=false", "TestBeta=true"};
    assert_int_equal(ck_fg_apply_sources(g, flags, 3, NULL, false, &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestAlpha")); /* gate-off: explicit beats AllAlpha */
    assert_true(ck_fg_enabled_name(g, "TestBeta"));   /* gate-on: the last occurrence wins */
    assert_true(ck_fg_enabled_name(g, "AllAlpha"));
    assert_true(fg_log_has(&log, "setting kube:feature-gates=AllAlpha=true,TestBeta=false,"
                                 "TestAlpha=false,TestBeta=true"));
    ck_fg_gate_free(g);
}

/*
 * C4: Kubernetes components never read KUBE_FEATURE_*; ckube components
 * read it only when they ask for it (use_env), gate-on and gate-off.
 */
static void test_C4_env_only_when_asked(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    setenv("KUBE_FEATURE_TestAlpha", "true", 1);
    setenv("KUBE_FEATURE_TestBeta", "false", 1);
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_apply_sources(g, NULL, 0, NULL, false, &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    assert_true(ck_fg_enabled_name(g, "TestBeta"));
    ck_fg_gate_free(g);
    g = fg_test_gate();
    assert_int_equal(ck_fg_apply_sources(g, NULL, 0, NULL, true, &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestAlpha"));
    assert_false(ck_fg_enabled_name(g, "TestBeta"));
    unsetenv("KUBE_FEATURE_TestAlpha");
    unsetenv("KUBE_FEATURE_TestBeta");
    ck_fg_gate_free(g);
}

/*
 * G6, O6: a value set directly beats the environment's (client-go's Set on
 * the env provider), a set of an unknown or locked gate fails, and the env
 * values accepted are logged as client-go does.
 */
static void test_G6_O6_set_beats_env(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    struct ck_fg_gate *g = fg_test_gate();
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    setenv("KUBE_FEATURE_TestAlpha", "true", 1);
    assert_int_equal(ck_fg_apply_sources(g, NULL, 0, NULL, true, &err), 0);
    unsetenv("KUBE_FEATURE_TestAlpha");
    assert_true(fg_log_has(&log, "Feature gate updated state feature=\"TestAlpha\" enabled=true"));
    assert_true(ck_fg_enabled_name(g, "TestAlpha"));
    assert_int_equal(ck_fg_set(g, "TestAlpha=false", &err), 0);
    assert_false(ck_fg_enabled_name(g, "TestAlpha"));
    assert_int_equal(ck_fg_set(g, "ClientNope=true", &err), CK_FG_ENOENT);
    assert_int_not_equal(ck_fg_set(g, "TestLockedTrue=false", &err), 0);
    assert_string_equal(err.msg,
                        "cannot set feature gate TestLockedTrue to false, feature is locked to "
                        "true");
    ck_fg_gate_free(g);
}

/*
 * G1: the provider is a gate: Enabled is Gates.Enabled, ck_fg_add and
 * ck_fg_add_versioned are Registry.Add and VersionedRegistry.AddVersioned.
 */
static void test_G1_provider_is_gates_and_registry(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    assert_null(ck_fg_provider_replace(g));
    struct ck_fg_spec on = SPEC(0, 0, true, false, BETA);
    struct ck_fg_spec vs[] = {SPEC(1, 29, false, false, ALPHA), SPEC(1, 31, true, false, BETA)};
    ck_fg_feature_t a, b;
    assert_int_equal(ck_fg_add(ck_fg_provider(), "ClientOn", on, &a, &err), 0);
    assert_int_equal(ck_fg_add_versioned(ck_fg_provider(), "ClientLater", vs, 2, &b, &err), 0);
    assert_true(ck_fg_enabled(ck_fg_provider(), a));
    assert_false(ck_fg_enabled(ck_fg_provider(), b)); /* Alpha at 1.30 */
    assert_ptr_equal(ck_fg_provider_replace(NULL), g);
    ck_fg_gate_free(g);
}

/* P5, C3: a component that has read its config file passes the contents. */
static void test_P5_C3_config_from_buffer(void **state)
{
    (void)state;
    struct ck_fg_err err = {0};
    struct ck_fg_gate *g = fg_test_gate();
    const char cfg[] = "kind: KubeletConfiguration\nfeatureGates:\n  TestAlpha: true\n"
                       "  TestBeta: false\n";
    const char *flags[] = {"TestBeta=true"};
    assert_int_equal(ck_fg_apply_sources_buf(g, flags, 1, cfg, strlen(cfg), false, &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestAlpha")); /* gate-on from the file */
    assert_true(ck_fg_enabled_name(g, "TestBeta"));  /* the flag beats the file's off */
    assert_int_equal(ck_fg_apply_sources_buf(g, NULL, 0, "featureGates: [", 15, false, &err),
                     CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "malformed YAML"));
    assert_int_equal(ck_fg_apply_sources_buf(g, flags, 1, NULL, 0, false, &err), 0);
    assert_true(ck_fg_enabled_name(g, "TestAlpha")); /* earlier values stay */
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_P8_config_files),
        cmocka_unit_test(test_G4_P7_env),
        cmocka_unit_test(test_P5_precedence),
        cmocka_unit_test(test_G2_G3_provider_and_fold),
        cmocka_unit_test(test_C2_O5_repeated_flags_one_set),
        cmocka_unit_test(test_C4_env_only_when_asked),
        cmocka_unit_test(test_G6_O6_set_beats_env),
        cmocka_unit_test(test_G1_provider_is_gates_and_registry),
        cmocka_unit_test(test_P5_C3_config_from_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
