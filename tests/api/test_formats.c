/*
 * test_formats.c - the string formats and patterns of custom resource
 * schemas (lib/api/formats.c), through ck_schema_validate(): a kind with one
 * property per format, and a table of values kube-openapi's strfmt (and
 * govalidator) accept or refuse.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"

static const char *const formats[] = {
    "byte",  "date",           "date-time", "datetime", "duration",     "uuid",
    "uuid3", "uuid4",          "uuid5",     "email",    "hostname",     "ipv4",
    "ipv6",  "cidr",           "mac",       "uri",      "hexcolor",     "rgbcolor",
    "ssn",   "isbn",           "isbn10",    "isbn13",   "bsonobjectid", "password",
    "int32", "unknown-format",
};

static struct ck_schemas *set;

static int load(void **state)
{
    (void)state;
    char doc[4096];
    size_t len = (size_t)snprintf(doc, sizeof(doc),
                                  "{\"t.F\":{\"type\":\"object\",\"x-ckube-custom-resource\":true,"
                                  "\"properties\":{\"pattern\":{\"type\":\"string\"},");
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        len += (size_t)snprintf(doc + len, sizeof(doc) - len,
                                "%s\"%s\":{\"type\":\"string\",\"format\":\"%s\"}", i ? "," : "",
                                formats[i], formats[i]);
    snprintf(doc + len, sizeof(doc) - len, "}}}");
    const char *docs[] = {doc};
    struct ck_err err = {0};
    return ck_schemas_new(docs, 1, &set, &err) == 0 ? 0 : -1;
}

static int unload(void **state)
{
    (void)state;
    set = ck_schemas_free(set);
    return 0;
}

static bool valid(const char *format, const char *value)
{
    json_t *obj = json_pack("{s:s}", format, value);
    struct ck_field_errors errs = {0};
    ck_schema_validate(set, "t.F", obj, &errs);
    bool ok = errs.len == 0;
    if (!ok) {
        char *text = ck_field_error_string(&errs.items[0]);
        char want[512];
        snprintf(want, sizeof(want),
                 "%s: Invalid value: \"%s\": %s in body must be of type %s: ", format, value,
                 format, format);
        if (strncmp(text, want, strlen(want)) != 0)
            fail_msg("unexpected error: %s", text);
        free(text);
    }
    ck_field_errors_release(&errs);
    json_decref(obj);
    return ok;
}

static const struct {
    const char *format, *value;
    bool ok;
} cases[] = {
    {"byte", "aGVsbG8=", true},
    {"byte", "aGVsbG8", false},
    {"byte", "", false},
    {"byte", "a===", false},
    {"date", "2024-02-29", true},
    {"date", "2023-02-29", false},
    {"date", "2024-1-01", false},
    {"date-time", "2024-02-29T23:59:59Z", true},
    {"date-time", "2024-02-29t10:00:00.123+05:30", true},
    {"datetime", "2024-02-29T10:00:00,5z", true},
    {"date-time", "2024-02-29T10:00:00", false},
    {"date-time", "2024-02-29 10:00:00Z", false},
    {"date-time", "2024-02-29T24:00:00Z", false},
    {"duration", "1h30m", true},
    {"duration", "-1.5s", true},
    {"duration", "0", true},
    {"duration", "3 days", true},
    {"duration", "1 hour and 5 minutes", true},
    {"duration", "1mss", false},
    {"duration", "soon", false},
    {"duration", "", false},
    {"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
    {"uuid", "123E4567E89B12D3A456426614174000", true},
    {"uuid", "123e4567-e89b-12d3-a456-42661417400", false},
    {"uuid3", "123e4567-e89b-32d3-a456-426614174000", true},
    {"uuid4", "123e4567-e89b-42d3-c456-426614174000", false},
    {"uuid5", "123e4567-e89b-52d3-a456-426614174000", true},
    {"email", "a.b@example.com", true},
    {"email", "Alice <alice@example.com>", true},
    {"email", "not-an-address", false},
    {"email", "a@@b", false},
    {"hostname", "localhost", true},
    {"hostname", "a-b", true},
    {"hostname", "my-host", false}, /* strfmt: one '-' right after the first character */
    {"hostname", "www.example.com", true},
    {"hostname", "my-host.example.com", true},
    {"hostname", "example.c0m", false},
    {"hostname", "-a.example.com", false},
    {"hostname", "example.com.", false},
    {"ipv4", "192.168.0.1", true},
    {"ipv4", "010.001.0.1", true}, /* leading zeros, as ParseIPSloppy */
    {"ipv4", "::ffff:1.2.3.4", true},
    {"ipv4", "256.1.1.1", false},
    {"ipv4", "1.2.3", false},
    {"ipv6", "fe80::1", true},
    {"ipv6", "1.2.3.4", false},
    {"cidr", "10.0.0.0/8", true},
    {"cidr", "fd00::/64", true},
    {"cidr", "10.0.0.0/33", false},
    {"cidr", "10.0.0.0", false},
    {"mac", "00:1a:2b:3c:4d:5e", true},
    {"mac", "00-1a-2b-3c-4d-5e", true},
    {"mac", "001a.2b3c.4d5e", true},
    {"mac", "00:1a:2b:3c:4d", false},
    {"uri", "https://example.com/a?b=c", true},
    {"uri", "/absolute/path", true},
    {"uri", "relative/path", false},
    {"hexcolor", "#fff", true},
    {"hexcolor", "A0B1C2", true},
    {"hexcolor", "#ffff", false},
    {"rgbcolor", "rgb(255, 0, 10)", true},
    {"rgbcolor", "rgb(256,0,0)", false},
    {"ssn", "123-45-6789", true},
    {"ssn", "123456789", false},
    {"isbn10", "0-306-40615-2", true},
    {"isbn10", "0306406153", false},
    {"isbn13", "978-0-306-40615-7", true},
    {"isbn13", "9780306406158", false},
    {"isbn", "9780306406157", true},
    {"bsonobjectid", "507f1f77bcf86cd799439011", true},
    {"bsonobjectid", "507f1f77bcf86cd79943901", false},
    {"password", "anything at all", true},
    {"int32", "not checked on strings", true},
    {"unknown-format", "stripped by apiextensions", true},
};

static void test_formats_accept_and_refuse_as_strfmt(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (valid(cases[i].format, cases[i].value) != cases[i].ok)
            fail_msg("format %s, %s: want %s", cases[i].format, cases[i].value,
                     cases[i].ok ? "valid" : "invalid");
}

static bool matches(const char *pattern, const char *value, bool *invalid)
{
    char doc[512];
    json_t *quoted = json_string(pattern);
    char *p = json_dumps(quoted, JSON_ENCODE_ANY);
    json_decref(quoted);
    snprintf(doc, sizeof(doc),
             "{\"t.P\":{\"type\":\"object\",\"x-ckube-custom-resource\":true,\"properties\":"
             "{\"v\":{\"type\":\"string\",\"pattern\":%s}}}}",
             p);
    free(p);
    const char *docs[] = {doc};
    struct ck_schemas *one = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_schemas_new(docs, 1, &one, &err), 0);
    json_t *obj = json_pack("{s:s}", "v", value);
    struct ck_field_errors errs = {0};
    ck_schema_validate(one, "t.P", obj, &errs);
    bool ok = errs.len == 0;
    *invalid = !ok && errs.items[0].detail && strstr(errs.items[0].detail, "pattern is invalid");
    if (*invalid) /* kube-openapi's words, then Go's */
        assert_non_null(
            strstr(errs.items[0].detail, ", but pattern is invalid: error parsing regexp: "));
    ck_field_errors_release(&errs);
    json_decref(obj);
    ck_schemas_free(one);
    return ok;
}

static void test_patterns_are_go_expressions_searched_anywhere(void **state)
{
    (void)state;
    bool invalid;
    assert_true(matches("b+", "abbbc", &invalid)); /* unanchored search */
    assert_false(matches("^b+$", "abbbc", &invalid));
    assert_false(invalid);
    assert_true(matches("^\\d{3}-\\w+\\s\\S$", "123-ab_c x", &invalid));
    assert_false(matches("^\\d+$", "12a", &invalid));
    assert_true(matches("^[\\d.]+$", "1.2.3", &invalid));
    assert_true(matches("^(?:ab)+$", "abab", &invalid));
    assert_true(matches("^[^\\s]+$", "no-space", &invalid) || invalid);
    /* escapes of ] ^ - inside a class */
    assert_true(matches("^[a-z\\-]+$", "a-b", &invalid));
    assert_false(matches("^[a-z\\-]+$", "a_b", &invalid));
    assert_false(invalid);
    /* a leading (?i) matches without case */
    assert_true(matches("(?i)^abc$", "ABC", &invalid));
    /* what Go refuses is an invalid pattern, never a crash */
    assert_false(matches("a**", "a", &invalid));
    assert_true(invalid);
    assert_false(matches("a{1001}", "a", &invalid));
    assert_true(invalid);
    assert_false(matches("a{20}{20}", "a", &invalid));
    assert_true(invalid);
    assert_false(matches("(", "a", &invalid));
    assert_true(invalid);
    assert_false(matches("[a-", "a", &invalid));
    assert_true(invalid);
    assert_false(matches("\\1", "a", &invalid));
    assert_true(invalid);
    /* the rest of Go's syntax is checked too: lazy, flags, \b, Unicode classes, hex */
    assert_false(matches("^a+?$", "b", &invalid));
    assert_false(invalid);
    assert_true(matches("^a+?$", "aa", &invalid));
    assert_true(matches("\\bword\\b", "a word", &invalid));
    assert_false(matches("\\bword\\b", "swordfish", &invalid));
    assert_true(matches("(?s)^a.b$", "a\nb", &invalid));
    assert_false(matches("^a.b$", "a\nb", &invalid));
    assert_true(matches("^\\pL+$", "Ünïcödé", &invalid));
    assert_false(matches("^\\pL+$", "a1", &invalid));
    assert_true(matches("^\\x41$", "A", &invalid));
    assert_false(matches("a{600}b{600}", "ab", &invalid));
    assert_false(invalid);
    /* the message carries Go's parser error, as kube-openapi's does */
    assert_false(matches("a(b", "a", &invalid));
    assert_true(invalid);
}

/*
 * prometheus-operator's CRDs (prometheuses, prometheusagents, thanosrulers) carry
 * ^[0-9a-zA-Z-.]+$, where a dash after a range is literal in Go.
 */
static void test_prometheus_operator_pattern_validates(void **state)
{
    (void)state;
    bool invalid;
    assert_true(matches("^[0-9a-zA-Z-.]+$", "prometheus-k8s.v2", &invalid));
    assert_false(invalid);
    assert_false(matches("^[0-9a-zA-Z-.]+$", "under_score", &invalid));
    assert_false(invalid);
    assert_false(matches("^[0-9a-zA-Z-.]+$", "", &invalid));
    assert_false(invalid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats_accept_and_refuse_as_strfmt),
        cmocka_unit_test(test_patterns_are_go_expressions_searched_anywhere),
        cmocka_unit_test(test_prometheus_operator_pattern_validates),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
