/*
 * test_k8s_data.c - lib/featuregate/list.c against Kubernetes' own
 * versioned feature list, of which tests/data keeps a copy (its provenance
 * in tests/data/README.md), so it runs in every clone. Should the file be
 * missing, the program says so and exits 77 (skipped).
 *
 * Checks that the real list loads at several emulated versions (P4, L5: a
 * Kubernetes binary would panic on an R-rule violation), lints clean, and
 * resolves two gates whose lifecycle is written in the file (V3, V4, S8).
 */
#include "cktest.h"

#include <unistd.h>

#include "fgtest.h"

static struct ck_fg_gate *load_at(unsigned minor)
{
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, minor));
    struct ck_fg_err err = {0};
    assert_non_null(g);
    if (ck_fg_list_load(g, FG_K8S_LIST, &err) != 0)
        fail_msg("load at 1.%u: %s", minor, err.msg);
    return g;
}

/* P4, L5: every entry registers at 1.31-1.34; AllAlpha/AllBeta evaluate. */
static void test_P4_real_list_loads_at_several_versions(void **state)
{
    (void)state;
    const unsigned minors[] = {31, 32, 33, 34};
    for (size_t i = 0; i < 4; i++) {
        struct ck_fg_gate *g = load_at(minors[i]);
        struct ck_fg_err err = {0};
        assert_true(ck_fg_count(g) > 150);
        assert_int_equal(ck_fg_set(g, "AllAlpha=true,AllBeta=false", &err), 0);
        char *j = ck_fg_all_json(g);
        assert_non_null(strstr(j, "\"AllAlpha\":true"));
        free(j);
        ck_fg_gate_free(g);
    }
}

/* V3: AllowDNSOnlyNodeCSR is GA on until 1.30, Deprecated off from 1.31. */
static void test_V3_real_list_deprecation(void **state)
{
    (void)state;
    struct ck_fg_gate *g = load_at(30);
    struct ck_fg_err err = {0};
    assert_true(ck_fg_enabled_name(g, "AllowDNSOnlyNodeCSR"));
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 31), &err), 0);
    assert_false(ck_fg_enabled_name(g, "AllowDNSOnlyNodeCSR"));
    ck_fg_gate_free(g);
}

/* V4, S8: DisableAllocatorDualWrite: absent at 1.30, Alpha 1.31, Beta 1.33. */
static void test_V4_S8_real_list_lifecycle(void **state)
{
    (void)state;
    struct ck_fg_gate *g = load_at(30);
    struct ck_fg_err err = {0};
    assert_true(ck_fg_set(g, "DisableAllocatorDualWrite=false", &err) < 0);
    assert_non_null(strstr(err.msg, "PreAlpha at emulated version 1.30"));
    assert_int_equal(ck_fg_set(g, "AllAlpha=true", &err), 0);
    assert_false(ck_fg_enabled_name(g, "DisableAllocatorDualWrite")); /* PreAlpha untouched */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 31), &err), 0);
    assert_true(ck_fg_enabled_name(g, "DisableAllocatorDualWrite")); /* Alpha now */
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 33), &err), 0);
    assert_false(ck_fg_enabled_name(g, "DisableAllocatorDualWrite")); /* Beta, off */
    ck_fg_gate_free(g);
}

struct findings {
    int n;
    char first[512];
};

static void collect(void *ud, const char *line)
{
    struct findings *f = ud;
    if (f->n++ == 0)
        snprintf(f->first, sizeof(f->first), "%s", line);
}

/* L1, L2, L5: Kubernetes' own list passes its own lifecycle rules. */
static void test_L_real_list_lints_clean(void **state)
{
    (void)state;
    struct findings f = {0};
    struct ck_fg_err err = {0};
    int n = ck_fg_list_lint(FG_K8S_LIST, collect, &f, &err);
    if (n != 0)
        fail_msg("%d findings, first: %s (%s)", n, f.first, err.msg);
}

int main(void)
{
    if (access(FG_K8S_LIST, R_OK) != 0) {
        printf("skipped: %s is not present\n", FG_K8S_LIST);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_P4_real_list_loads_at_several_versions),
        cmocka_unit_test(test_V3_real_list_deprecation),
        cmocka_unit_test(test_V4_S8_real_list_lifecycle),
        cmocka_unit_test(test_L_real_list_lints_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
