/*
 * test_introspect.c - lib/featuregate/introspect.c: KnownFeatures (Q3),
 * String (Q4), the metric (O1), the startup line, the JSON of Q2/P9 and
 * the docs table.
 */
#include "cktest.h"

#include "fgtest.h"

static void test_Q3_known_features(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    char *k = ck_fg_known_features(g);
    assert_string_equal(k, "AllAlpha=true|false (ALPHA - default=false)\n"
                           "AllBeta=true|false (BETA - default=false)\n"
                           "TestAlpha=true|false (ALPHA - default=false)\n"
                           "TestBeta=true|false (BETA - default=true)\n"
                           "TestBetaOff=true|false (BETA - default=false)\n"
                           "TestVersioned=true|false (BETA - default=true)");
    free(k);
    /* min-compatibility split: the current spec, or the one at M = E. */
    struct ck_fg_spec s[] = {SPEC(1, 28, false, false, BETA), SPEC(1, 28, true, false, BETA)};
    s[1].has_min_compat = true;
    s[1].min_compat = V(1, 28);
    struct ck_fg_gate *h = ck_fg_gate_new(V(1, 28));
    assert_int_equal(ck_fg_add_versioned(h, "TestFastBeta", s, 2, NULL, NULL), 0);
    k = ck_fg_known_features(h);
    assert_non_null(strstr(k, "TestFastBeta=true|false (BETA - default=false), or "
                              "TestFastBeta=true|false (BETA - default=true) if "
                              "--min-compatibility-version>=1.28"));
    free(k);
    ck_fg_gate_free(h);
    /* Specs that differ only in version still give both parts, as in Kubernetes. */
    struct ck_fg_spec t[] = {SPEC(1, 30, false, false, BETA), SPEC(1, 30, true, false, BETA),
                             SPEC(1, 32, false, false, BETA)};
    t[1].has_min_compat = true;
    t[1].min_compat = V(1, 30);
    h = ck_fg_gate_new(V(1, 32));
    assert_int_equal(ck_fg_set_versions(h, V(1, 32), V(1, 29), NULL), 0);
    assert_int_equal(ck_fg_add_versioned(h, "TestSlow", t, 3, NULL, NULL), 0);
    k = ck_fg_known_features(h);
    assert_non_null(strstr(k, "TestSlow=true|false (BETA - default=false), or "
                              "TestSlow=true|false (BETA - default=false) if "
                              "--min-compatibility-version>=1.30"));
    free(k);
    ck_fg_gate_free(h);
    ck_fg_gate_free(g);
}

static void test_Q4_string(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_set(g, "TestGA=true,TestBeta=true,TestAlpha=false", NULL), 0);
    char *s = ck_fg_string(g);
    assert_string_equal(s, "TestAlpha=false,TestBeta=true,TestGA=true");
    free(s);
    ck_fg_gate_free(g);
}

static void test_O1_metrics(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    assert_int_equal(ck_fg_set(g, "TestBeta=false", NULL), 0);
    char *m = ck_fg_metrics_text(g);
    assert_non_null(strstr(m, "# HELP kubernetes_feature_enabled [BETA] This metric records the "
                              "data about the stage and enablement of a k8s feature.\n"
                              "# TYPE kubernetes_feature_enabled gauge\n"));
    assert_non_null(strstr(m, "kubernetes_feature_enabled{name=\"AllAlpha\",stage=\"ALPHA\"} 0\n"));
    assert_non_null(strstr(m, "kubernetes_feature_enabled{name=\"TestBeta\",stage=\"BETA\"} 0\n"));
    assert_non_null(strstr(m, "kubernetes_feature_enabled{name=\"TestGA\",stage=\"\"} 1\n"));
    assert_null(strstr(m, "TestFuture")); /* V4: PreAlpha not listed */
    free(m);
    ck_fg_gate_free(g);
}

static void test_Q2_json_and_startup(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    assert_int_equal(ck_fg_add(g, "B", SPEC(0, 0, true, false, BETA), NULL, NULL), 0);
    struct ck_fg_spec fut = SPEC(1, 31, false, false, ALPHA);
    assert_int_equal(ck_fg_add_versioned(g, "Later", &fut, 1, NULL, NULL), 0);
    char *j = ck_fg_all_json(g);
    assert_string_equal(j, "{\"AllAlpha\":false,\"AllBeta\":false,\"B\":true}");
    free(j);
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    ck_fg_log_startup(g);
    assert_int_equal(log.n, 1);
    assert_string_equal(log.lines[0], "Feature gates: emulationVersion=1.30 "
                                      "minCompatibilityVersion=1.29 AllAlpha=false,AllBeta=false,"
                                      "B=true");
    ck_fg_gate_free(g);
}

static void test_docs_table(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 30));
    struct ck_fg_spec s[] = {SPEC(1, 27, false, false, ALPHA), SPEC(1, 29, true, false, BETA),
                             SPEC(1, 31, true, true, GA)};
    assert_int_equal(ck_fg_add_versioned(g, "Feat", s, 3, NULL, NULL), 0);
    char *md = ck_fg_docs_table(g, CK_FG_TABLE_MARKDOWN);
    assert_string_equal(md, "| Feature | Default | Stage | Since | Until | Locked |\n"
                            "| --- | --- | --- | --- | --- | --- |\n"
                            "| `Feat` | `false` | Alpha | 1.27 | 1.28 | no |\n"
                            "| `Feat` | `true` | Beta | 1.29 | 1.30 | no |\n"
                            "| `Feat` | `true` | GA | 1.31 | - | yes |\n");
    free(md);
    char *js = ck_fg_docs_table(g, CK_FG_TABLE_JSON);
    assert_non_null(strstr(js, "\"until\": null"));
    assert_non_null(strstr(js, "\"stage\": \"Beta\""));
    free(js);
    char *t = ck_fg_docs_table(g, CK_FG_TABLE_TEXT);
    assert_non_null(strstr(t, "FEATURE"));
    assert_null(strstr(t, "AllAlpha"));
    free(t);
    ck_fg_gate_free(g);
}

/* V10: Alpha features on while emulating an older version draw a warning. */
static void test_V10_alpha_under_emulation_warning(void **state)
{
    (void)state;
    struct ck_fg_gate *g = fg_test_gate();
    struct fg_log log = {0};
    ck_fg_set_logger(g, fg_log_record, &log);
    assert_int_equal(ck_fg_warn_emulated_alpha(g, V(1, 32)), 0); /* gate-off: none on */
    assert_int_equal(log.n, 0);
    assert_int_equal(ck_fg_set(g, "TestAlpha=true", NULL), 0);
    assert_int_equal(ck_fg_warn_emulated_alpha(g, V(1, 30)), 0); /* not emulating */
    assert_int_equal(ck_fg_warn_emulated_alpha(g, V(1, 32)), 1); /* gate-on */
    assert_true(fg_log_has(&log, "component has alpha features enabled in emulated version, "
                                 "this is unsupported features=[TestAlpha]"));
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_Q3_known_features),
        cmocka_unit_test(test_Q4_string),
        cmocka_unit_test(test_O1_metrics),
        cmocka_unit_test(test_Q2_json_and_startup),
        cmocka_unit_test(test_docs_table),
        cmocka_unit_test(test_V10_alpha_under_emulation_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
