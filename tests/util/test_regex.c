/*
 * test_regex.c - Go's regular expressions over RE2 (lib/util/regex.cc).
 *
 * Three sources of cases: every `pattern` of published CRDs (prometheus-operator,
 * Gateway API, cert-manager, Argo CD, Istio: tests/data/regex/crd-patterns.json, each
 * of which Kubernetes accepted), the valid and invalid expressions of Go's own
 * regexp/syntax parse tests (tests/data/regex/go-parse-tests.json, and below the ones
 * a JSON file cannot hold), and searches whose answer Go's semantics fix. The data
 * directory is built in (CKUBE_REGEX_DATA) or the first argument.
 */
#include "cktest.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "ckube/util.h"

static const char *data_dir = CKUBE_REGEX_DATA;

static json_t *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", data_dir, name);
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j)
        fail_msg("%s: %s", path, jerr.text);
    return j;
}

/* 0 and a compiled expression, or the code with Go's message in *ret_error (freed here). */
static int compile(const char *pattern, size_t len, struct ck__regex **ret, char **ret_error)
{
    *ret = NULL;
    int r = ck__regex_compile(pattern, len, ret, ret_error);
    if (r == 0)
        assert_non_null(*ret);
    else
        assert_null(*ret);
    return r;
}

static int search(const char *pattern, const char *text)
{
    struct ck__regex *re;
    char *why = NULL;
    int r = compile(pattern, strlen(pattern), &re, &why);
    if (r != 0)
        fail_msg("%s: %s", pattern, why ? why : "(no message)");
    r = ck__regex_search(re, text, strlen(text));
    ck__regex_free(re);
    return r;
}

static void test_every_published_crd_pattern_compiles(void **state)
{
    (void)state;
    json_t *corpus = load("crd-patterns.json");
    size_t i;
    json_t *e;
    assert_true(json_array_size(corpus) >= 30);
    json_array_foreach(corpus, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "pattern"));
        assert_non_null(p);
        struct ck__regex *re;
        char *why = NULL;
        if (compile(p, strlen(p), &re, &why) != 0)
            fail_msg("refused %s: %s", p, why ? why : "");
        /* the empty value is searched without trouble; the answer depends on the pattern */
        int m = ck__regex_search(re, "", 0);
        assert_true(m == 0 || m == 1);
        ck__regex_free(re);
    }
    json_decref(corpus);
}

/* The pattern prometheus-operator's CRDs carry, which POSIX regcomp read otherwise. */
static void test_prometheus_operator_class_with_trailing_dash_dot(void **state)
{
    (void)state;
    const char *p = "^[0-9a-zA-Z-.]+$";
    assert_int_equal(search(p, "prometheus-k8s.monitoring"), 1);
    assert_int_equal(search(p, "v2.45.0"), 1);
    assert_int_equal(search(p, "a_b"), 0);
    assert_int_equal(search(p, "with space"), 0);
    assert_int_equal(search(p, ""), 0);
    /* Gateway API's header name: \x60 is a hex escape, ^ and | literal in the class */
    p = "^[A-Za-z0-9!#$%&'*+\\-.^_\\x60|~]+$";
    assert_int_equal(search(p, "X-Request-Id"), 1);
    assert_int_equal(search(p, "a`b|c^d"), 1);
    assert_int_equal(search(p, "a:b"), 0);
    /* prometheus-operator's alertmanager month range: (?i) in the middle */
    p = "^((?i)january|february|march|april|may|june|july|august|september|october|november|"
        "december|1[0-2]|[1-9])(?:((:((?i)january|february|march|april|may|june|july|august|"
        "september|october|november|december|1[0-2]|[1-9]))$)|$)";
    assert_int_equal(search(p, "January:march"), 1);
    assert_int_equal(search(p, "13"), 0);
}

static void test_go_parse_tests_valid_and_invalid(void **state)
{
    (void)state;
    json_t *t = load("go-parse-tests.json");
    size_t i;
    json_t *e;
    assert_true(json_array_size(json_object_get(t, "valid")) > 100);
    json_array_foreach(json_object_get(t, "valid"), i, e)
    {
        struct ck__regex *re;
        char *why = NULL;
        if (compile(json_string_value(e), json_string_length(e), &re, &why) != 0)
            fail_msg("Go takes %s, refused: %s", json_string_value(e), why ? why : "");
        ck__regex_free(re);
    }
    assert_true(json_array_size(json_object_get(t, "invalid")) > 30);
    json_array_foreach(json_object_get(t, "invalid"), i, e)
    {
        struct ck__regex *re;
        char *why = NULL;
        int r = compile(json_string_value(e), json_string_length(e), &re, &why);
        if (r == 0)
            fail_msg("Go refuses %s, accepted", json_string_value(e));
        assert_int_equal(r, CK_EINVAL);
        assert_non_null(why);
        assert_true(strncmp(why, "error parsing regexp: ", 22) == 0);
        free(why);
    }
    json_decref(t);
}

static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t len = strlen(head) + strlen(unit) * n + strlen(tail) + 1;
    char *s = malloc(len);
    assert_non_null(s);
    strcpy(s, head);
    for (size_t i = 0; i < n; i++)
        strcat(s, unit);
    strcat(s, tail);
    return s;
}

/* parse_test.go's cases built with strings.Repeat, and its invalid UTF-8. */
static void test_go_parse_tests_generated(void **state)
{
    (void)state;
    static const char *const bad_utf8[] = {"\xff", "[\xff]", "[\\\xff]", "\\\xff"};
    for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
        struct ck__regex *re;
        char *why = NULL;
        assert_int_equal(compile(bad_utf8[i], strlen(bad_utf8[i]), &re, &why), CK_EINVAL);
        assert_non_null(strstr(why, "invalid UTF-8"));
        free(why);
    }
    struct {
        char *pattern;
        bool valid;
    } cases[] = {
        {repeat("", "(", 999, ""), true},
        {repeat("", "(?:", 999, ""), true},
        {repeat("(", "|", 12345, ")"), true},
    };
    /* the closing halves */
    char *close1 = repeat("", ")", 999, "");
    char *close2 = repeat("", ")*", 999, "");
    cases[0].pattern = realloc(cases[0].pattern, strlen(cases[0].pattern) + strlen(close1) + 1);
    strcat(cases[0].pattern, close1);
    cases[1].pattern = realloc(cases[1].pattern, strlen(cases[1].pattern) + strlen(close2) + 1);
    strcat(cases[1].pattern, close2);
    free(close1);
    free(close2);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__regex *re;
        char *why = NULL;
        int r = compile(cases[i].pattern, strlen(cases[i].pattern), &re, &why);
        if (r != 0)
            fail_msg("case %zu: Go takes it, refused: %s", i, why ? why : "");
        ck__regex_free(re);
        free(cases[i].pattern);
    }
}

/* Go's limits on nesting and size, which RE2 does not all share. */
static void test_go_size_limits(void **state)
{
    (void)state;
    char *open = repeat("", "(", 1000, "");
    char *deep = repeat(open, ")", 1000, "");
    char *open2 = repeat("", "(?:", 1000, "");
    char *deep2 = repeat(open2, ")*", 1000, "");
    char *long1 = repeat("(", "(xx?)", 1000, "){1000}");
    char *long2 = repeat("", "(xx?){1000}", 1000, "");
    char *runes = repeat("", "\\pL", 27000, "");
    char *const invalid[] = {deep, deep2, long1, long2, runes};
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        struct ck__regex *re;
        char *why = NULL;
        int r = compile(invalid[i], strlen(invalid[i]), &re, &why);
        if (r == 0)
            fail_msg("case %zu: Go refuses it, accepted", i);
        assert_true(r == CK_EINVAL || r == CK__REGEX_TOO_LARGE);
        free(why);
        free(invalid[i]);
    }
    free(open);
    free(open2);
}

/* What RE2 alone takes, and what Go alone takes (docs/differences.md lists the rest). */
static void test_go_and_re2_differences(void **state)
{
    (void)state;
    struct ck__regex *re;
    char *why = NULL;
    /* \C is RE2's "any byte": Go's invalid escape */
    assert_int_equal(compile("a\\Cb", 4, &re, &why), CK_EINVAL);
    assert_string_equal(why, "error parsing regexp: invalid escape sequence: `\\C`");
    free(why);
    why = NULL;
    assert_int_equal(compile("[\\C]", 4, &re, &why), CK_EINVAL);
    free(why);
    /* ... but literal inside \Q...\E */
    assert_int_equal(search("^\\Q\\C\\E$", "\\C"), 1);
    /* (?<name>) is Go's since 1.22; inside a class the characters are literal */
    assert_int_equal(search("^(?<year>\\d{4})-(?<m>\\d\\d)$", "2024-06"), 1);
    assert_int_equal(search("^[(?<]+$", "(?<"), 1);
    assert_int_equal(search("^[]a(?<]+$", "]a(?<"), 1);
    assert_int_equal(search("^[[:alpha:](?<]+$", "ab(?<"), 1);
    /* braces of \x{...} and \p{...} are no repeat */
    assert_int_equal(search("^\\x{1F600}{2}$", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80"), 1);
    why = NULL;
    assert_int_equal(compile("\\x{110000}", 10, &re, &why), CK_EINVAL);
    assert_string_equal(
        why, "error parsing regexp: invalid escape sequence: `\\x{110000`"); /* as Go cuts it */
    free(why);
    /* Go's capture names are ASCII; a character outside is refused, as Go does */
    why = NULL;
    assert_int_equal(compile("(?P<\xc3\xa9>a)", 9, &re, &why), CK_EINVAL);
    assert_string_equal(why, "error parsing regexp: invalid named capture: `(?P<\xc3\xa9>`");
    free(why);
    why = NULL;
    assert_int_equal(compile("(?<a-b>x)", 9, &re, &why), CK_EINVAL);
    assert_string_equal(why, "error parsing regexp: invalid named capture: `(?<a-b>`");
    free(why);
    /* an unfinished repeat is literal text, at the very end too */
    assert_int_equal(search("^x{105,$", "x{105,"), 1);
    assert_int_equal(search("^x{2000$", "x{2000"), 1);
    /* Go, like RE2, takes a name twice (SubexpIndex answers the leftmost) */
    assert_int_equal(search("^(?P<n>a)(?P<n>b)$", "ab"), 1);
    /* back references, lookarounds, possessive and atomic groups: Go refuses them all */
    static const char *const refused[] = {"(a)\\1", "(?=a)", "(?!a)", "a*+",   "(?>a)",
                                          "(?P=n)", "\\8",   "\\Z",   "(?#c)", "a{2}{3}"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        why = NULL;
        if (compile(refused[i], strlen(refused[i]), &re, &why) != CK_EINVAL)
            fail_msg("%s accepted", refused[i]);
        free(why);
    }
}

static void test_messages_read_as_go(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *message;
    } cases[] = {
        {"+", "error parsing regexp: missing argument to repetition operator: `+`"},
        {"[a", "error parsing regexp: missing closing ]: `[a`"},
        {"a(b", "error parsing regexp: missing closing ): `a(b`"},
        {"a)", "error parsing regexp: unexpected ): `a)`"},
        {"a**", "error parsing regexp: invalid nested repetition operator: `**`"},
        {"a{1001}", "error parsing regexp: invalid repeat count: `{1001}`"},
        {"[z-a]", "error parsing regexp: invalid character class range: `z-a`"},
        {"\\y", "error parsing regexp: invalid escape sequence: `\\y`"},
        {"a\\", "error parsing regexp: trailing backslash at end of expression: ``"},
        {"(?x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?x`"},
        {"\\p{Nope}", "error parsing regexp: invalid character class range: `\\p{Nope}`"},
        {"(?<=a)b", "error parsing regexp: invalid named capture: `(?<=a)b`"},
        {"x{1,9876543210}", "error parsing regexp: invalid repeat count: `{1,9876543210}`"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__regex *re;
        char *why = NULL;
        assert_int_equal(compile(cases[i].pattern, strlen(cases[i].pattern), &re, &why), CK_EINVAL);
        if (!why || strcmp(why, cases[i].message) != 0)
            fail_msg("%s: got %s, want %s", cases[i].pattern, why ? why : "(null)",
                     cases[i].message);
        free(why);
    }
}

/* Go's semantics: leftmost-first search anywhere, ^ and $ at the text's ends, . without \n. */
static void test_search_semantics_are_gos(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *text;
        int want;
    } cases[] = {
        {"b+", "abbbc", 1},
        {"^b+$", "abbbc", 0},
        {"^a$", "a\n", 0}, /* $ is the end of text, not before a final newline */
        {"(?m)^b$", "a\nb\nc", 1},
        {"^a.b$", "a\nb", 0},
        {"(?s)^a.b$", "a\nb", 1},
        {"(?i)^straße$", "STRAßE", 1},
        {"\\bword\\b", "a word here", 1},
        {"\\bword\\b", "swordfish", 0},
        {"^\\pL+$", "Ελληνικά", 1},
        {"^\\p{Greek}+$", "Ελληνικά", 1},
        {"^\\p{Greek}+$", "Latin", 0},
        {"^.$", "é", 1},    /* one rune, two bytes */
        {"^\\w+$", "é", 0}, /* \w is ASCII in Go */
        {"^[[:^digit:]]+$", "abc", 1},
        {"^a+?$", "aaa", 1},
        {"^(?:a|ab)c$", "abc", 1},
        {"\\x{1F600}", "smile \xf0\x9f\x98\x80", 1},
        {"^\\d{3}-\\w+\\s\\S$", "123-ab_c x", 1},
        {"a{600}b{600}", "ab", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (search(cases[i].pattern, cases[i].text) != cases[i].want)
            fail_msg("%s on \"%s\": want %d", cases[i].pattern, cases[i].text, cases[i].want);
    /* text is bytes with a length: a NUL inside is a character */
    struct ck__regex *re;
    assert_int_equal(compile("^a\\x00b$", 8, &re, NULL), 0);
    assert_int_equal(ck__regex_search(re, "a\0b", 3), 1);
    assert_int_equal(ck__regex_search(re, "a\0b", 1), 0);
    ck__regex_free(re);
}

/* Linear time: the expression that takes a backtracking engine 2^n steps. */
/* ck__regex_find: leftmost-first, from a byte offset, anchors against the whole text. */
static void test_find_positions(void **state)
{
    (void)state;
    struct ck__regex *re = NULL;
    assert_int_equal(ck__regex_compile("a+|b", 4, &re, NULL), 0);
    const char *text = "xxaaab ab";
    size_t a = 99, b = 99;
    assert_int_equal(ck__regex_find(re, text, strlen(text), 0, &a, &b), 1);
    assert_int_equal(a, 2);
    assert_int_equal(b, 5); /* leftmost-first takes all the a's */
    assert_int_equal(ck__regex_find(re, text, strlen(text), 5, &a, &b), 1);
    assert_int_equal(a, 5);
    assert_int_equal(b, 6);
    assert_int_equal(ck__regex_find(re, text, strlen(text), 9, &a, &b), 0);
    assert_int_equal(ck__regex_find(re, text, strlen(text), 10, &a, &b), 0); /* past the end */
    ck__regex_free(re);
    assert_int_equal(ck__regex_compile("^x", 2, &re, NULL), 0);
    assert_int_equal(ck__regex_find(re, text, strlen(text), 1, &a, &b),
                     0); /* ^ is the text's start */
    ck__regex_free(re);
}

static void test_search_is_linear(void **state)
{
    (void)state;
    char *p = repeat("", "a?", 30, "");
    char *pat = repeat(p, "a", 30, "");
    char *text = repeat("", "a", 30, "");
    assert_int_equal(search(pat, text), 1);
    assert_int_equal(
        search("^(a+)+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"), 0);
    free(p);
    free(pat);
    free(text);
}

static struct ck__regex *shared;

static void *searcher(void *arg)
{
    (void)arg;
    char text[64];
    for (int i = 0; i < 2000; i++) {
        snprintf(text, sizeof(text), "node-%d.example", i);
        if (ck__regex_search(shared, text, strlen(text)) != 1)
            return (void *)1;
        if (ck__regex_search(shared, "Not_Valid", 9) != 0)
            return (void *)1;
    }
    return NULL;
}

/* One compiled expression searched from several threads at once (TSan runs this). */
static void test_concurrent_searches(void **state)
{
    (void)state;
    assert_int_equal(
        ck__regex_compile("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]+)*$", 44, &shared, NULL), 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, searcher, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    shared = ck__regex_free(shared);
}

/* Allocation failure of the wrapper's own allocations is a clean CK_ENOMEM. */
static void test_allocation_failure(void **state)
{
    (void)state;
    for (unsigned long n = 1;; n++) {
        struct ck__regex *re = NULL;
        char *why = NULL;
        ck__alloc_fail_at(n, false);
        int r = ck__regex_compile("a(b", 3, &re, &why);
        unsigned long made = ck__alloc_fail_at(0, false);
        assert_null(re);
        if (r == CK_EINVAL && why) {
            free(why);
            break;
        }
        assert_true(r == CK_ENOMEM || (r == CK_EINVAL && !why));
        assert_true(made >= n - 1);
        assert_true(n < 10);
    }
    assert_null(ck__regex_free(NULL));
}

int main(int argc, char **argv)
{
    if (argc > 1)
        data_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_published_crd_pattern_compiles),
        cmocka_unit_test(test_prometheus_operator_class_with_trailing_dash_dot),
        cmocka_unit_test(test_go_parse_tests_valid_and_invalid),
        cmocka_unit_test(test_go_parse_tests_generated),
        cmocka_unit_test(test_go_size_limits),
        cmocka_unit_test(test_go_and_re2_differences),
        cmocka_unit_test(test_messages_read_as_go),
        cmocka_unit_test(test_search_semantics_are_gos),
        cmocka_unit_test(test_find_positions),
        cmocka_unit_test(test_search_is_linear),
        cmocka_unit_test(test_concurrent_searches),
        cmocka_unit_test(test_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
