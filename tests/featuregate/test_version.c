/*
 * test_version.c - lib/featuregate/version.c: V1 parsing and comparison,
 * the emulation window (V7, V8, P2) and --emulated-version syntax (V9, P3).
 */
#include "cktest.h"

#include "fgtest.h"

struct vcase {
    const char *in;
    int rc;
    unsigned major, minor, patch, ncomp;
};

static void test_V1_parse_table(void **state)
{
    (void)state;
    const struct vcase cases[] = {
        {"1.30", 0, 1, 30, 0, 2},
        {"v1.30", 0, 1, 30, 0, 2},
        {"  v1.30", 0, 1, 30, 0, 2},
        {"1.30.1", 0, 1, 30, 1, 3},
        {"1.30abc", 0, 1, 30, 0, 2},
        {"1.30.0-rc.1", 0, 1, 30, 0, 3},
        {"0.0", 0, 0, 0, 0, 2},
        {"1", CK_FG_EINVAL, 0, 0, 0, 0},
        {"", CK_FG_EINVAL, 0, 0, 0, 0},
        {"01.30", CK_FG_EINVAL, 0, 0, 0, 0},
        {"x1.30", CK_FG_EINVAL, 0, 0, 0, 0},
        {"1.99999999999", CK_FG_EINVAL, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_version v = {0};
        struct ck_fg_err err = {0};
        int rc = ck_fg_version_parse(cases[i].in, &v, &err);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d (%s)", cases[i].in, rc, err.msg);
        if (rc == 0 && (v.major != cases[i].major || v.minor != cases[i].minor ||
                        v.patch != cases[i].patch || v.ncomp != cases[i].ncomp))
            fail_msg("%s: got %u.%u.%u/%u", cases[i].in, v.major, v.minor, v.patch, v.ncomp);
    }
}

static void test_V1_compare_and_subtract(void **state)
{
    (void)state;
    assert_true(ck_fg_version_cmp(V(1, 9), V(1, 30)) < 0);
    assert_true(ck_fg_version_cmp(V(2, 0), V(1, 30)) > 0);
    assert_int_equal(ck_fg_version_cmp(V(1, 30), V(1, 30)), 0);
    assert_int_equal(ck_fg_version_sub_minor(V(1, 1), 3).minor, 0);
    char buf[32];
    assert_string_equal(ck_fg_version_fmt(V(1, 30), buf, sizeof(buf)), "1.30");
}

struct wcase {
    struct ck_fg_version bin, emu;
    const char *err;
    unsigned minc_minor;
};

/* V7, V8, P2: floor = max(binary - 3, 1.31), never above the binary. */
static void test_V7_V8_window_table(void **state)
{
    (void)state;
    const struct wcase cases[] = {
        {{1, 33, 0, 2}, {1, 30, 0, 2}, "emulation version 1.30 is not between [1.31, 1.33.0]", 0},
        {{1, 33, 0, 2}, {1, 34, 0, 2}, "emulation version 1.34 is not between [1.31, 1.33.0]", 0},
        {{1, 33, 0, 2}, {1, 32, 0, 2}, NULL, 31},
        {{1, 33, 0, 2}, {1, 31, 0, 2}, NULL, 31}, /* clamped to the floor */
        {{1, 35, 0, 2}, {1, 32, 0, 2}, NULL, 32}, /* V8: floor 1.32 */
        {{1, 29, 0, 2}, {1, 29, 0, 2}, NULL, 29}, /* P2: binary below 1.31 */
        {{1, 29, 0, 2}, {1, 28, 0, 2}, "emulation version 1.28 is not between [1.29, 1.29.0]", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_fg_version m = {0};
        struct ck_fg_err err = {0};
        int rc = ck_fg_window_check(cases[i].bin, cases[i].emu, NULL, &m, &err);
        if (cases[i].err) {
            assert_int_equal(rc, CK_FG_EINVAL);
            assert_string_equal(err.msg, cases[i].err);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(m.minor, cases[i].minc_minor);
        }
    }
    struct ck_fg_err err = {0};
    struct ck_fg_version m = V(1, 30);
    assert_int_equal(ck_fg_window_check(V(1, 33), V(1, 32), &m, NULL, &err), CK_FG_EINVAL);
    assert_string_equal(err.msg,
                        "minCompatibilityVersion version 1.30 is not between [1.31, 1.32]");
}

static void test_V9_P3_emulated_flag(void **state)
{
    (void)state;
    struct ck_fg_version v;
    struct ck_fg_err err = {0};
    const char *ok[] = {"1.32", "v1.32", "1.32.0", "kube=1.32"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(ck_fg_emulated_version_parse(ok[i], &v, &err), 0);
        assert_int_equal(v.minor, 32);
        assert_int_equal(v.ncomp, 2);
    }
    assert_int_equal(ck_fg_emulated_version_parse("1.32.1", &v, &err), CK_FG_EINVAL);
    assert_string_equal(err.msg, "patch version not allowed, got: kube=1.32.1");
    assert_int_equal(ck_fg_emulated_version_parse("foo=1.32", &v, &err), CK_FG_EINVAL);
    assert_string_equal(err.msg, "component not registered: foo");
    assert_int_equal(ck_fg_emulated_version_parse("banana", &v, &err), CK_FG_EINVAL);
    assert_non_null(strstr(err.msg, "banana"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_V1_parse_table),
        cmocka_unit_test(test_V1_compare_and_subtract),
        cmocka_unit_test(test_V7_V8_window_table),
        cmocka_unit_test(test_V9_P3_emulated_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
