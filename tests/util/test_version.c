/*
 * test_version.c - tests for lib/util/version.c: the /version JSON has every
 * field of Kubernetes' version.Info, reports the Kubernetes API version
 * kubectl keys on (1.32), and gitVersion is valid semver.
 */
#include "cktest.h"

#include <jansson.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/util.h"

static void test_json_has_every_version_info_field(void **state)
{
    (void)state;
    char *text = ck_version_json(false);
    assert_non_null(text);
    json_error_t jerr;
    json_t *obj = json_loads(text, 0, &jerr);
    assert_non_null(obj);
    static const char *const fields[] = {"major",     "minor",        "gitVersion",
                                         "gitCommit", "gitTreeState", "buildDate",
                                         "goVersion", "compiler",     "platform"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        json_t *v = json_object_get(obj, fields[i]);
        if (!json_is_string(v))
            fail_msg("field %s missing or not a string", fields[i]);
    }
    assert_int_equal(json_object_size(obj), 9);
    assert_string_equal(json_string_value(json_object_get(obj, "major")), "1");
    assert_string_equal(json_string_value(json_object_get(obj, "minor")), "32");
    json_decref(obj);
    free(text);
}

static void test_git_version_is_semver_with_ckube_build_metadata(void **state)
{
    (void)state;
    const struct ck_version_info *v = ck_version();
    regex_t re;
    assert_int_equal(
        regcomp(&re, "^v1\\.32\\.[0-9]+\\+ckube\\.[0-9]+\\.[0-9]+\\.[0-9]+$", REG_EXTENDED), 0);
    assert_int_equal(regexec(&re, v->git_version, 0, NULL, 0), 0);
    regfree(&re);
    assert_non_null(strstr(v->git_version, ck_version_release()));
}

static void test_build_date_is_rfc3339_utc(void **state)
{
    (void)state;
    regex_t re;
    assert_int_equal(
        regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", REG_EXTENDED), 0);
    assert_int_equal(regexec(&re, ck_version()->build_date, 0, NULL, 0), 0);
    regfree(&re);
}

static void test_platform_and_compiler_are_named(void **state)
{
    (void)state;
    assert_int_equal(strncmp(ck_version()->platform, "linux/", 6), 0);
    assert_true(strlen(ck_version()->compiler) > 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_has_every_version_info_field),
        cmocka_unit_test(test_git_version_is_semver_with_ckube_build_metadata),
        cmocka_unit_test(test_build_date_is_rfc3339_utc),
        cmocka_unit_test(test_platform_and_compiler_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
