/*
 * test_features.c - the handles generated from features/ckube-features.yaml
 * (featuregate gen-c): registration works and the handles read the gates.
 */
#include "cktest.h"

#include "ckube_features.h"
#include "fgtest.h"

static void test_generated_handles(void **state)
{
    (void)state;
    struct ck_fg_gate *g = ck_fg_gate_new(V(1, 33));
    struct ck_fg_err err = {0};
    assert_int_equal(ck_features_register(g, &err), 0);
    assert_string_equal(ck_fg_name(g, CK_FEATURE_PodLevelResources), "PodLevelResources");
    assert_false(ck_fg_enabled(g, CK_FEATURE_PodLevelResources));    /* Alpha, off */
    assert_true(ck_fg_enabled(g, CK_FEATURE_UserNamespacesSupport)); /* Beta on at 1.33 */
    assert_int_equal(ck_fg_set(g, "PodLevelResources=true", &err), 0);
    assert_true(ck_fg_enabled(g, CK_FEATURE_PodLevelResources));
    assert_int_equal(ck_fg_set_emulation_version(g, V(1, 32), &err), 0);
    assert_false(ck_fg_enabled(g, CK_FEATURE_UserNamespacesSupport)); /* Beta off at 1.32 */
    ck_fg_gate_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_handles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
