/*
 * test_conformance.c - libckube-cel against cases of google/cel-spec's conformance
 * tests (tests/data/cel/conformance.json, made by scripts/gen-cel-conformance; its
 * provenance is in tests/data/cel/README.md).
 *
 * A case with `want` passes when its expression's value, formatted, equals the value
 * of `want` (a CEL literal) formatted the same way, so types count: 1 is not 1u. A
 * case with `error` passes when compiling or evaluating fails. Cases cel-spec has that
 * this library leaves out carry `skip` and a reason, printed in the summary. Cases
 * that fail for a known reason are listed with it in tests/data/cel/known-failures.txt;
 * the test fails when a case fails that is not listed, and when a listed case passes
 * (so the list shrinks as the library grows).
 *
 * The type checker runs over the cases without variables that evaluate to a value: it
 * must accept them, with a type that agrees with the value's, except the cases listed
 * in tests/data/cel/check-refusals.txt with the reason cel-go's checker (as Kubernetes
 * configures it) refuses them too.
 */
#define _GNU_SOURCE /* asprintf */
#include "cktest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cel.h"

static const char *data_dir = CKUBE_CEL_DATA;

/* The formatted value of expr with vars, or "error: ..." (caller frees). */
static char *value_of(const char *expr, size_t len, json_t *vars, bool *ret_failed)
{
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    char *out = NULL;
    *ret_failed = true;
    if (ck_cel_compile(expr, len, &prog, &err)) {
        if (asprintf(&out, "compile error: %s", ck_err_message(&err)) < 0)
            out = NULL;
        ck_err_release(&err);
        return out;
    }
    struct ck_cel_var v[16];
    size_t n = 0;
    const char *name;
    json_t *value;
    json_object_foreach(vars, name, value)
    {
        if (n < 16)
            v[n++] = (struct ck_cel_var){name, value, false, NULL, NULL};
    }
    struct ck_cel_result *res = NULL;
    if (ck_cel_eval(prog, v, n, 0, &res, NULL, &err)) {
        if (asprintf(&out, "error: %s", ck_err_message(&err)) < 0)
            out = NULL;
        ck_err_release(&err);
    } else {
        *ret_failed = false;
        out = ck_cel_result_format(res);
    }
    ck_cel_result_free(res);
    ck_cel_program_free(prog);
    return out;
}

/* The entries of a list of cases in the data directory, each `ID # why`, set to false. */
static json_t *load_list(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", data_dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    json_t *known = json_object();
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *hash = strstr(line, " #");
        assert_non_null(hash); /* every entry says why */
        *hash = '\0';
        json_object_set_new(known, line, json_false());
    }
    fclose(f);
    return known;
}

/* How many entries of a list (load_list()) no case used, each said. */
static size_t unused(json_t *list, const char *name)
{
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach(list, key, value)
    {
        if (!json_is_true(value)) {
            print_error("%s lists a case that is not run: %s\n", name, key);
            n++;
        }
    }
    return n;
}

/* The start of the checker's name of a result's type (in the order of enum ck_cel_type). */
static const char *result_type(const struct ck_cel_result *r)
{
    static const char *const names[] = {"null",     "bool",      "int",           "uint", "double",
                                        "string",   "bytes",     "list(",         "map(", "type",
                                        "duration", "timestamp", "optional_type("};
    enum ck_cel_type t = ck_cel_result_type(r);
    return t < sizeof(names) / sizeof(names[0]) ? names[t] : NULL;
}

/* NULL when the checker accepts expr with a type its value has, else why not (caller frees). */
static char *check_of(const char *expr, size_t len, bool *ret_ran)
{
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    struct ck_cel_result *res = NULL;
    char *why = NULL, type[256];
    *ret_ran = ck_cel_compile(expr, len, &prog, &err) == 0 &&
               ck_cel_eval(prog, NULL, 0, 0, &res, NULL, &err) == 0;
    if (*ret_ran && ck_cel_check(prog, NULL, 0, type, sizeof(type), &err)) {
        why = strdup(ck_err_message(&err));
    } else if (*ret_ran && strcmp(type, "dyn")) {
        const char *want = result_type(res);
        if (want && strncmp(type, want, strlen(want)) &&
            asprintf(&why, "checked as %s, evaluated to %s", type, want) < 0)
            why = NULL;
    }
    ck_err_release(&err);
    ck_cel_result_free(res);
    ck_cel_program_free(prog);
    return why;
}

static void test_conformance_type_check(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/conformance.json", data_dir);
    json_t *doc = json_load_file(path, JSON_ALLOW_NUL, NULL);
    assert_non_null(doc);
    json_t *refused = load_list("check-refusals.txt");
    size_t checked = 0, failed = 0, i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c)
    {
        if (json_object_get(c, "skip") || json_object_get(c, "bindings") ||
            !json_object_get(c, "want"))
            continue;
        char id[512];
        snprintf(id, sizeof(id), "%s/%s/%s", json_string_value(json_object_get(c, "file")),
                 json_string_value(json_object_get(c, "section")),
                 json_string_value(json_object_get(c, "name")));
        json_t *expr = json_object_get(c, "expr");
        bool ran;
        char *why = check_of(json_string_value(expr), json_string_length(expr), &ran);
        checked += ran;
        json_t *entry = json_object_get(refused, id);
        if (why && entry) {
            json_object_set_new(refused, id, json_true());
        } else if (why) {
            print_error("type check of %s: %s\n", id, why);
            failed++;
        } else if (entry) {
            print_error("listed in check-refusals.txt but accepted: %s\n", id);
            failed++;
        }
        free(why);
    }
    failed += unused(refused, "check-refusals.txt");
    print_message("cel-spec conformance, type checked: %zu cases, %zu refused as listed\n", checked,
                  json_object_size(refused));
    json_decref(refused);
    json_decref(doc);
    assert_true(checked > 1000);
    assert_int_equal(failed, 0);
}

static void test_conformance(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/conformance.json", data_dir);
    json_error_t jerr;
    json_t *doc = json_load_file(path, JSON_ALLOW_NUL, &jerr);
    assert_non_null(doc);
    json_t *known = load_list("known-failures.txt");
    json_t *skips = json_object();
    json_t *cases = json_object_get(doc, "cases");
    size_t passed = 0, failed = 0, expected_failures = 0, skipped = 0, i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *skip = json_string_value(json_object_get(c, "skip"));
        if (skip) {
            json_t *count = json_object_get(skips, skip);
            json_object_set_new(skips, skip,
                                json_integer(count ? json_integer_value(count) + 1 : 1));
            skipped++;
            continue;
        }
        char id[512];
        snprintf(id, sizeof(id), "%s/%s/%s", json_string_value(json_object_get(c, "file")),
                 json_string_value(json_object_get(c, "section")),
                 json_string_value(json_object_get(c, "name")));
        const char *expr = json_string_value(json_object_get(c, "expr"));
        size_t len = json_string_length(json_object_get(c, "expr"));
        json_t *bindings = json_object_get(c, "bindings");
        json_t *empty = json_object();
        bool got_error, want_error;
        char *got = value_of(expr, len, bindings ? bindings : empty, &got_error);
        bool ok;
        char *want = NULL;
        if (json_object_get(c, "error")) {
            ok = got_error;
        } else {
            json_t *w = json_object_get(c, "want");
            want = value_of(json_string_value(w), json_string_length(w), empty, &want_error);
            assert_false(want_error); /* the expected value must itself evaluate */
            ok = !got_error && !strcmp(got, want);
        }
        json_decref(empty);
        json_t *entry = json_object_get(known, id);
        if (ok && !entry) {
            passed++;
        } else if (!ok && entry) {
            expected_failures++;
            json_object_set_new(known, id, json_true());
        } else if (ok) {
            print_error("listed in known-failures.txt but passes: %s\n", id);
            failed++;
        } else {
            print_error("FAIL %s\n  expr: %s\n  want: %s\n  got:  %s\n", id, expr,
                        want ? want : "an error", got);
            failed++;
        }
        free(got);
        free(want);
    }
    failed += unused(known, "known-failures.txt");
    const char *key;
    json_t *value;
    print_message("cel-spec conformance: %zu cases, %zu passed, %zu known failures, %zu "
                  "unexpected, %zu skipped:\n",
                  json_array_size(cases), passed, expected_failures, failed, skipped);
    json_object_foreach(skips, key, value)
    {
        print_message("  skipped %lld: %s\n", (long long)json_integer_value(value), key);
    }
    json_decref(skips);
    json_decref(known);
    json_decref(doc);
    assert_true(passed > 0);
    assert_int_equal(failed, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        data_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance),
        cmocka_unit_test(test_conformance_type_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
