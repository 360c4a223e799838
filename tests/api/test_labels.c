/*
 * test_labels.c - tests for lib/api/labels.c: the label selector grammar
 * (every operator, white space, empty values, set syntax), rejection of bad
 * syntax, keys and values, matching, the canonical string form, and
 * selectors built from metav1.LabelSelector objects.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

static json_t *labels(const char *json)
{
    json_error_t jerr;
    json_t *j = json_loads(json, 0, &jerr);
    assert_non_null(j);
    return j;
}

static struct ck_label_selector *parse_ok(const char *text)
{
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    if (ck_label_selector_parse(text, &s, &err) != 0)
        fail_msg("parse \"%s\": %s", text, err.msg);
    return s;
}

static void test_matching_table(void **state)
{
    (void)state;
    static const struct {
        const char *selector;
        const char *labels;
        bool match;
    } cases[] = {
        {"", "{}", true},
        {"", "{\"a\":\"b\"}", true},
        {"app=web", "{\"app\":\"web\"}", true},
        {"app=web", "{\"app\":\"db\"}", false},
        {"app=web", "{}", false},
        {"app==web", "{\"app\":\"web\"}", true},
        {"app!=web", "{}", true},
        {"app!=web", "{\"app\":\"db\"}", true},
        {"app!=web", "{\"app\":\"web\"}", false},
        {"tier in (fe,be)", "{\"tier\":\"be\"}", true},
        {"tier in (fe,be)", "{\"tier\":\"db\"}", false},
        {"tier in (fe,be)", "{}", false},
        {"tier notin (fe,be)", "{}", true},
        {"tier notin (fe,be)", "{\"tier\":\"fe\"}", false},
        {"tier notin (fe,be)", "{\"tier\":\"db\"}", true},
        {"canary", "{\"canary\":\"\"}", true},
        {"canary", "{}", false},
        {"!canary", "{}", true},
        {"!canary", "{\"canary\":\"yes\"}", false},
        {"x=", "{\"x\":\"\"}", true},
        {"x=", "{\"x\":\"y\"}", false},
        {"n>5", "{\"n\":\"6\"}", true},
        {"n>5", "{\"n\":\"5\"}", false},
        {"n<5", "{\"n\":\"-1\"}", true},
        {"n<5", "{\"n\":\"abc\"}", false},
        {" app = web , tier in ( fe , be ) ", "{\"app\":\"web\",\"tier\":\"fe\"}", true},
        {"app=web,tier=fe", "{\"app\":\"web\",\"tier\":\"be\"}", false},
        {"k in ()", "{\"k\":\"\"}", true},
        {"k in (a,)", "{\"k\":\"\"}", true},
        {"example.com/role=db", "{\"example.com/role\":\"db\"}", true},
        {"in in (notin)", "{}", false}, /* `in` is not a key */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_label_selector *s = NULL;
        struct ck_err err = {0};
        int r = ck_label_selector_parse(cases[i].selector, &s, &err);
        if (strcmp(cases[i].selector, "in in (notin)") == 0) {
            assert_int_equal(r, CK_EINVAL);
            continue;
        }
        if (r != 0)
            fail_msg("parse \"%s\": %s", cases[i].selector, err.msg);
        json_t *l = labels(cases[i].labels);
        if (ck_label_selector_matches(s, l) != cases[i].match)
            fail_msg("\"%s\" on %s: want %s", cases[i].selector, cases[i].labels,
                     cases[i].match ? "match" : "no match");
        json_decref(l);
        ck_label_selector_free(s);
    }
}

static void test_bad_selectors_are_parse_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "app=web,",       /* trailing comma */
        ",app=web",       /* leading comma */
        "app=web=x",      /* value contains = */
        "app in fe",      /* set without parentheses */
        "app in (fe",     /* unclosed */
        "app in (fe be)", /* missing comma */
        "app notin",      /* no set */
        "!app=web",       /* ! takes no value */
        "=web",           /* no key */
        "app=we b",       /* two values */
        "-app=web",       /* key must start alphanumeric */
        "app=-web",       /* value must start alphanumeric */
        "a/b/c=d",        /* two slashes */
        "n>five",         /* Gt needs an integer */
        "n<",             /* Lt needs a value */
        "app)",
        "(app)",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ck_label_selector *s = NULL;
        struct ck_err err = {0};
        if (ck_label_selector_parse(bad[i], &s, &err) != CK_EINVAL)
            fail_msg("\"%s\" parsed but should not", bad[i]);
        assert_null(s);
        assert_int_equal(strncmp(err.msg, "unable to parse requirement: ", 29), 0);
    }
}

static void test_too_long_value_is_rejected(void **state)
{
    (void)state;
    char text[128] = "k=";
    memset(text + 2, 'v', 64);
    text[66] = '\0';
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_label_selector_parse(text, &s, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "must be no more than 63 characters"));
}

static void test_string_form_is_canonical(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"tier in (fe, be, fe),app=web", "app=web,tier in (be,fe)"},
        {"!b,a", "a,!b"},
        {"x==y", "x==y"},
        {"z notin (c,a)", "z notin (a,c)"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_label_selector *s = parse_ok(cases[i].in);
        char *str = ck_label_selector_string(s);
        assert_string_equal(str, cases[i].out);
        /* the string form parses back to the same string */
        struct ck_label_selector *again = parse_ok(str);
        char *str2 = ck_label_selector_string(again);
        assert_string_equal(str2, str);
        free(str2);
        free(str);
        ck_label_selector_free(again);
        ck_label_selector_free(s);
    }
}

static void test_from_label_selector_object(void **state)
{
    (void)state;
    json_t *obj = labels("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
                         "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"fe\",\"be\"]},"
                         "{\"key\":\"canary\",\"operator\":\"DoesNotExist\"}]}");
    struct ck_label_selector *s = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_label_selector_from_object(obj, &s, &err), 0);
    char *str = ck_label_selector_string(s);
    assert_string_equal(str, "app=web,!canary,tier in (be,fe)");
    free(str);
    json_t *l = labels("{\"app\":\"web\",\"tier\":\"fe\"}");
    assert_true(ck_label_selector_matches(s, l));
    json_object_set_new(l, "canary", json_string("1"));
    assert_false(ck_label_selector_matches(s, l));
    json_decref(l);
    ck_label_selector_free(s);
    json_decref(obj);

    /* NULL and {} select everything */
    assert_int_equal(ck_label_selector_from_object(NULL, &s, &err), 0);
    assert_true(ck_label_selector_is_empty(s));
    ck_label_selector_free(s);
}

static void test_bad_label_selector_objects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[]}]}",
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
        "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}",
        "{\"matchLabels\":{\"a\":1}}",
        "{\"matchLabels\":{\"-a\":\"b\"}}",
        "[]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *obj = labels(bad[i]);
        struct ck_label_selector *s = NULL;
        struct ck_err err = {0};
        if (ck_label_selector_from_object(obj, &s, &err) != CK_EINVAL)
            fail_msg("%s accepted", bad[i]);
        assert_null(s);
        json_decref(obj);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matching_table),
        cmocka_unit_test(test_bad_selectors_are_parse_errors),
        cmocka_unit_test(test_too_long_value_is_rejected),
        cmocka_unit_test(test_string_form_is_canonical),
        cmocka_unit_test(test_from_label_selector_object),
        cmocka_unit_test(test_bad_label_selector_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
