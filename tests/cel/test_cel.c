/*
 * test_cel.c - the CEL library (lib/cel/): parsing and its errors, evaluation results
 * and errors, JSON variables, the cost and memory budgets, and the limits on input.
 *
 * Each case is an expression and what cel-spec (langdef.md) or Kubernetes' CEL
 * libraries say it gives: a value written as ck_cel_result_format() writes it (so its
 * type shows: 1u, 1.0, b"a"), or the words its error must contain.
 */
#define _GNU_SOURCE /* asprintf */
#include "cktest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cel.h"
#include "ckube/internal/util.h"

/* Evaluates expr with vars; returns the formatted value or "error: <message>" (caller
 * frees), the cost spent in *ret_cost when not NULL. */
static char *eval_with(const char *expr, const struct ck_cel_var *vars, size_t nvars,
                       uint64_t limit, int *ret_code, uint64_t *ret_cost)
{
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    int r = ck_cel_compile(expr, strlen(expr), &prog, &err);
    char *out = NULL;
    if (r) {
        if (asprintf(&out, "compile error: %s", ck_err_message(&err)) < 0)
            out = NULL;
        ck_err_release(&err);
        if (ret_code)
            *ret_code = r;
        return out;
    }
    struct ck_cel_result *res = NULL;
    r = ck_cel_eval(prog, vars, nvars, limit, &res, ret_cost, &err);
    if (ret_code)
        *ret_code = r;
    if (r) {
        if (asprintf(&out, "error: %s", ck_err_message(&err)) < 0)
            out = NULL;
        ck_err_release(&err);
    } else {
        out = ck_cel_result_format(res);
    }
    ck_cel_result_free(res);
    ck_cel_program_free(prog);
    assert_non_null(out);
    return out;
}

/* Evaluates expr with `self` (JSON text, may be NULL); returns the formatted value or
 * "error: <message>" (caller frees). */
static char *run(const char *expr, const char *self_json, uint64_t limit, int *ret_code)
{
    json_t *self = NULL;
    if (self_json) {
        self = json_loads(self_json, 0, NULL);
        assert_non_null(self);
    }
    struct ck_cel_var vars[] = {{"self", self, false, NULL, NULL}};
    char *out = eval_with(expr, vars, self ? 1 : 0, limit, ret_code, NULL);
    json_decref(self);
    return out;
}

struct value_case {
    const char *expr;
    const char *want;
};

static void check_values(const struct value_case *cases, size_t n, const char *self)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        char *got = run(cases[i].expr, self, 0, NULL);
        if (strcmp(got, cases[i].want)) {
            print_error("%s\n  want %s\n  got  %s\n", cases[i].expr, cases[i].want, got);
            failed++;
        }
        free(got);
    }
    assert_int_equal(failed, 0);
}

static void test_literals(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"0", "0"},
        {"-9223372036854775808", "-9223372036854775808"},
        {"9223372036854775807", "9223372036854775807"},
        {"0x1F", "31"},
        {"-0x10", "-16"},
        {"18446744073709551615u", "18446744073709551615u"},
        {"0xFFu", "255u"},
        {"1.5", "1.5"},
        {"1e3", "1000.0"},
        {".5", "0.5"},
        {"-2.5e-3", "-0.0025"},
        {"'a\\tb'", "\"a\\x09b\""},
        {"\"\\u00e9\"", "\"\xc3\xa9\""},
        {"\"\\303\"", "\"\xc3\x83\""},
        {"b\"\\303\\277\"", "b\"\\xc3\\xbf\""},
        {"b'\\xff'", "b\"\\xff\""},
        {"r'a\\nb'", "\"a\\\\nb\""},
        {"'''two\nlines'''", "\"two\\nlines\""},
        {"\"\"\"say \"hi\" \"\"\"", "\"say \\\"hi\\\" \""},
        {"rb'\\x'", "b\"\\\\x\""},
        {"true", "true"},
        {"null", "null"},
        {"[1, 'a', [true],]", "[1, \"a\", [true]]"},
        {"{'b': 1, 'a': 2,}", "{\"a\": 2, \"b\": 1}"},
        {"{}", "{}"},
        {"{}.map(k, k)", "[]"},
        {"'%s'.format([{}])", "\"{}\""},
        {"// comment\n 1 // more", "1"},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]), NULL);
}

static void test_operators(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"1 + 2 * 3", "7"},
        {"(1 + 2) * 3", "9"},
        {"7 / 2", "3"},
        {"-7 / 2", "-3"},
        {"-7 % 3", "-1"},
        {"7u % 3u", "1u"},
        {"7.0 / 2.0", "3.5"},
        {"1.0 / 0.0", "double(\"+Inf\")"},
        {"'ab' + 'cd'", "\"abcd\""},
        {"b'a' + b'b'", "b\"ab\""},
        {"[1] + [2, 3]", "[1, 2, 3]"},
        {"!true", "false"},
        {"!!true", "true"},
        {"--5", "5"},
        {"-(-5)", "5"},
        {"1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3", "true"},
        {"1 == 1.0", "true"},
        {"1 == 1u", "true"},
        {"-1 < 1u", "true"},
        {"2.5 > 2", "true"},
        {"1 == 'a'", "false"},
        {"[1, 2] == [1, 2]", "true"},
        {"[1, 2] != [2, 1]", "true"},
        {"{'a': 1} == {'a': 1.0}", "true"},
        {"null == null", "true"},
        {"'a' < 'b'", "true"},
        {"b'a' < b'b'", "true"},
        {"false < true", "true"},
        {"2 in [1, 2]", "true"},
        {"'k' in {'k': 1}", "true"},
        {"3 in [1, 2]", "false"},
        {"true ? 1 : 2", "1"},
        {"false ? 1 : false ? 2 : 3", "3"},
        {"false && (1 / 0 == 1)", "false"},
        {"(1 / 0 == 1) && false", "false"},
        {"true || (1 / 0 == 1)", "true"},
        {"(1 / 0 == 1) || true", "true"},
        {"{'a': 1}['a']", "1"},
        {"[1, 2, 3][2]", "3"},
        {"{1: 'x'}[1u]", "\"x\""},
        {"0.0 / 0.0 == 0.0 / 0.0", "false"},
        {"type(1) == int", "true"},
        {"type('a')", "string"},
        {"type(type(1))", "type"},
        {"type(null)", "null_type"},
        {"{'while': 1}.while", "1"},
        {"'%s=%d'.format(['a', 1])", "\"a=1\""},
        {"strings.quote('a\"b')", "\"\\\"a\\\\\\\"b\\\"\""},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]), NULL);
}

static void test_functions(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"size('h\xc3\xa9llo')", "5"},
        {"'abc'.size()", "3"},
        {"size(b'ab')", "2"},
        {"size([1, 2])", "2"},
        {"size({'a': 1})", "1"},
        {"'hello'.contains('ell')", "true"},
        {"'hello'.startsWith('he')", "true"},
        {"'hello'.endsWith('lo')", "true"},
        {"'hello'.matches('^h.*o$')", "true"},
        {"matches('abc', 'b')", "true"},
        {"'abc'.matches('^b')", "false"},
        {"int('-42')", "-42"},
        {"int(2.9)", "2"},
        {"int(-2.9)", "-2"},
        {"int(3u)", "3"},
        {"uint(3)", "3u"},
        {"uint('7')", "7u"},
        {"double(3)", "3.0"},
        {"double('1.25')", "1.25"},
        {"string(12)", "\"12\""},
        {"string(1.5)", "\"1.5\""},
        {"string(-4.5e-3)", "\"-0.0045\""},
        {"string(b'hi')", "\"hi\""},
        {"string(true)", "\"true\""},
        {"bytes('hi')", "b\"hi\""},
        {"bool('true')", "true"},
        {"bool('f')", "false"},
        {"dyn(1) + 1", "2"},
        {"duration('1h30m') == duration('5400s')", "true"},
        {"string(duration('1.5s'))", "\"1.5s\""},
        {"duration('1m') + duration('30s')", "duration(\"90s\")"},
        {"timestamp('2009-02-13T23:31:30Z')", "timestamp(\"2009-02-13T23:31:30Z\")"},
        {"int(timestamp('2009-02-13T23:31:30Z'))", "1234567890"},
        {"timestamp('2009-02-13T23:31:30.5Z') + duration('500ms')",
         "timestamp(\"2009-02-13T23:31:31Z\")"},
        {"timestamp('2009-02-13T23:31:30Z').getFullYear()", "2009"},
        {"timestamp('2009-02-13T23:31:30Z').getMonth()", "1"},
        {"timestamp('2009-02-13T23:31:30Z').getDayOfMonth()", "12"},
        {"timestamp('2009-02-13T23:31:30Z').getDate()", "13"},
        {"timestamp('2009-02-13T23:31:30Z').getHours('+02:00')", "1"},
        {"timestamp('2009-02-13T23:31:30Z') - timestamp('2009-02-13T23:30:30Z')",
         "duration(\"60s\")"},
        {"duration('2h').getMinutes()", "120"},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]), NULL);
}

static void test_macros(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"[1, 2, 3].all(x, x > 0)", "true"},
        {"[1, 2, 3].all(x, x > 1)", "false"},
        {"[1, 2, 3].exists(x, x == 2)", "true"},
        {"[1, 2, 3].exists_one(x, x > 1)", "false"},
        {"[1, 2, 3].exists_one(x, x > 2)", "true"},
        {"[1, 2, 3].map(x, x * 2)", "[2, 4, 6]"},
        {"[1, 2, 3].map(x, x > 1, x * 10)", "[20, 30]"},
        {"[1, 2, 3].filter(x, x % 2 == 1)", "[1, 3]"},
        {"{'a': 1, 'b': 2}.map(k, k)", "[\"a\", \"b\"]"},
        {"{'a': 1, 'b': 2}.all(k, k.size() == 1)", "true"},
        {"[[1], [2, 3]].map(l, l.map(x, x + 1))", "[[2], [3, 4]]"},
        /* errors are absorbed when another element decides */
        {"[0, 1].exists(x, 1 / x == 1)", "true"},
        {"[0, 1].all(x, 1 / x == 5)", "false"},
        {"has({'a': 1}.a)", "true"},
        {"has({'a': 1}.b)", "false"},
        {"[].all(x, x)", "true"},
        {"[].exists(x, x)", "false"},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]), NULL);
}

static void test_kubernetes_libraries(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"'hello'.charAt(1)", "\"e\""},
        {"'hello'.charAt(5)", "\"\""},
        {"'h\xc3\xa9llo'.indexOf('l')", "2"},
        {"'hello'.indexOf('l', 3)", "3"},
        {"'hello'.indexOf('')", "0"},
        {"'hello'.lastIndexOf('l')", "3"},
        {"'hello'.lastIndexOf('l', 2)", "2"},
        {"'hello'.indexOf('z')", "-1"},
        {"'TacoCat'.lowerAscii()", "\"tacocat\""},
        {"'TacoCat'.upperAscii()", "\"TACOCAT\""},
        {"'a-b-c'.replace('-', '+')", "\"a+b+c\""},
        {"'a-b-c'.replace('-', '+', 1)", "\"a+b-c\""},
        {"'ab'.replace('', '.')", "\".a.b.\""},
        {"'a,b,c'.split(',')", "[\"a\", \"b\", \"c\"]"},
        {"'a,b,c'.split(',', 2)", "[\"a\", \"b,c\"]"},
        {"'a,b,c'.split(',', 0)", "[]"},
        {"'abc'.split('')", "[\"a\", \"b\", \"c\"]"},
        {"''.split(',')", "[\"\"]"},
        {"'tacocat'.substring(4)", "\"cat\""},
        {"'tacocat'.substring(0, 4)", "\"taco\""},
        {"'  \\t trim\\n '.trim()", "\"trim\""},
        {"['a', 'b'].join()", "\"ab\""},
        {"['a', 'b'].join(', ')", "\"a, b\""},
        {"[1, 2, 2, 3].isSorted()", "true"},
        {"[2, 1].isSorted()", "false"},
        {"[1, 2, 3].sum()", "6"},
        {"[1.5, 2.5].sum()", "4.0"},
        {"[].sum()", "0"},
        {"[3, 1, 2].min()", "1"},
        {"[3, 1, 2].max()", "3"},
        {"[1, 2, 1].indexOf(1)", "0"},
        {"[1, 2, 1].lastIndexOf(1)", "2"},
        {"[1, 2].indexOf(5)", "-1"},
        {"sets.contains([1, 2, 3], [3, 1.0])", "true"},
        {"sets.contains([1], [1, 2])", "false"},
        {"sets.equivalent([1, 2, 2], [2, 1])", "true"},
        {"sets.intersects([1, 2], [5, 2u])", "true"},
        {"sets.intersects([], [1])", "false"},
        {"ip('10.0.0.1')", "ip(\"10.0.0.1\")"},
        {"ip('2001:DB8:0:0:0:0:0:1')", "ip(\"2001:db8::1\")"},
        {"string(ip('fe80:0:0:1:0:0:0:1'))", "\"fe80:0:0:1::1\""},
        {"string(ip('1:0:0:2:0:0:3:4'))", "\"1::2:0:0:3:4\""},
        {"string(ip('1:0:2:3:4:5:6:7'))", "\"1:0:2:3:4:5:6:7\""},
        {"string(ip('::'))", "\"::\""},
        {"ip('192.168.0.1').family()", "4"},
        {"ip('::1').family()", "6"},
        {"isIP('1.2.3.4') && !isIP('01.2.3.4') && !isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4')",
         "true"},
        {"ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')", "true"},
        {"ip('127.0.0.5').isLoopback() && ip('::1').isLoopback()", "true"},
        {"ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()", "true"},
        {"ip('169.254.1.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast()", "true"},
        {"ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()", "true"},
        {"ip('8.8.8.8').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()", "true"},
        {"cidr('10.0.0.0/8').containsIP('10.1.2.3')", "true"},
        {"cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))", "false"},
        {"cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", "true"},
        {"cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", "false"},
        {"cidr('2001:db8::/32').containsIP('2001:db8:1::1')", "true"},
        {"cidr('10.1.2.3/8').masked()", "cidr(\"10.0.0.0/8\")"},
        {"cidr('10.1.2.3/12').masked()", "cidr(\"10.0.0.0/12\")"},
        {"cidr('10.1.2.3/8').ip()", "ip(\"10.1.2.3\")"},
        {"cidr('::1/128').prefixLength()", "128"},
        {"isCIDR('10.0.0.0/33') || isCIDR('10.0.0.0/08') || isCIDR('10.0.0.0')", "false"},
        {"type(ip('1.2.3.4')) == type(ip('::1'))", "true"},
        {"ip('1.2.3.4') == ip('1.2.3.4') && ip('1.2.3.4') != ip('1.2.3.5')", "true"},
        {"quantity('1.5Ki')", "quantity(\"1536\")"},
        {"quantity('1.5Ki') == quantity('1536')", "true"},
        {"quantity('500m')", "quantity(\"0.5\")"},
        {"quantity('1e3') == quantity('1k')", "true"},
        {"quantity('50k').asInteger()", "50000"},
        {"quantity('500m').isInteger()", "false"},
        {"quantity('500000G').isInteger()", "true"},
        {"quantity('99999999999999999999999999999999999999e19').isInteger()", "false"},
        {"quantity('-99999999999999999999999999999999999999')",
         "quantity(\"-99999999999999999999999999999999999999\")"},
        {"quantity('9999999999999999999999999999999999999G').isInteger()", "false"},
        {"quantity('9999999999999999999999999999999999999G').asApproximateFloat() > 1e45", "true"},
        {"quantity('-1.5').sign()", "-1"},
        {"quantity('0').sign()", "0"},
        {"quantity('50k').add(quantity('20k')) == quantity('70k')", "true"},
        {"quantity('50k').sub(20000)", "quantity(\"30000\")"},
        {"quantity('50k').add(20).sub(quantity('100k')).sub(-50000)", "quantity(\"20\")"},
        {"quantity('200M').compareTo(quantity('0.2G'))", "0"},
        {"quantity('150Mi').isGreaterThan(quantity('100Mi'))", "true"},
        {"quantity('50M').isLessThan(quantity('100M'))", "true"},
        {"quantity('1Gi').isLessThan(quantity('1G'))", "false"},
        {"quantity('-1Ki').isLessThan(quantity('-1k'))", "true"},
        {"quantity('.5') == quantity('0.5') && quantity('5.') == quantity('5')", "true"},
        {"quantity('1n').asApproximateFloat()", "1e-09"},
        {"isQuantity('1.5Gi') && !isQuantity('1.5Gb') && !isQuantity('Ki') && !isQuantity('1e')",
         "true"},
        {"[duration('1.5s'), duration('2.6s')].sum()", "duration(\"4.1s\")"},
        {"[duration('-1.5s'), duration('2.6s')].sum()", "duration(\"1.1s\")"},
        {"[duration('-1.5s'), duration('-0.6s')].sum()", "duration(\"-2.1s\")"},
        {"'abc 123 def 45'.find('[0-9]+')", "\"123\""},
        {"'abc'.find('[0-9]+')", "\"\""},
        {"'abc 123 def 45'.findAll('[0-9]+')", "[\"123\", \"45\"]"},
        {"'abc 123 def 45'.findAll('[0-9]+', 1)", "[\"123\"]"},
        {"'a1b'.findAll('[0-9]*')", "[\"\", \"1\", \"\"]"},
        {"'\u00e9\u00e9'.findAll('')", "[\"\", \"\", \"\"]"},
        {"'1, 2, 3, 4'.findAll('[0-9]+').map(x, int(x)).sum()", "10"},
        {"'abc'.find('b' + '')", "\"b\""},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]), NULL);
}

static void test_json_variables(void **state)
{
    (void)state;
    const char *self = "{\"metadata\": {\"name\": \"web\", \"labels\": {\"app\": \"x\"}},"
                       " \"spec\": {\"replicas\": 3, \"ratio\": 0.5, \"ports\": [80, 443],"
                       " \"paused\": false, \"note\": null}}";
    static const struct value_case cases[] = {
        {"self.metadata.name", "\"web\""},
        {"self.spec.replicas", "3"},
        {"type(self.spec.replicas)", "int"},
        {"self.spec.ratio", "0.5"},
        {"self.spec.replicas > 1 && self.spec.ratio < 1.0", "true"},
        {"self.spec.ports.all(p, p > 0 && p < 65536)", "true"},
        {"self.spec.ports[1]", "443"},
        {"has(self.spec.paused)", "true"},
        {"has(self.spec.missing)", "false"},
        {"has(self.metadata.labels.app)", "true"},
        {"self.spec.note == null", "true"},
        {"'app' in self.metadata.labels", "true"},
        {"self.metadata.labels['app']", "\"x\""},
        {"self.metadata.name.startsWith('w') ? 'yes' : 'no'", "\"yes\""},
        {"size(self.spec)", "5"},
        /* optional values (Kubernetes 1.29+) */
        {"self.?spec.?replicas.orValue(1)", "3"},
        {"self.?spec.?missing.orValue(1)", "1"},
        {"self.?status.conditions.orValue([])", "[]"},
        {"self.?spec.ports[?5].hasValue()", "false"},
        {"self.spec.ports[?0]", "optional.of(80)"},
        {"self.metadata.labels[?'app'].value()", "\"x\""},
        {"[?self.?spec.?missing, ?self.?spec.?replicas]", "[3]"},
        {"{?'a': optional.none(), 'b': 1}", "{\"b\": 1}"},
        {"optional.ofNonZeroValue('').hasValue()", "false"},
        {"optional.of(2).optMap(x, x * 2)", "optional.of(4)"},
        {"optional.none().or(optional.of(1))", "optional.of(1)"},
        {"type(optional.none()) == optional_type", "true"},
    };
    check_values(cases, sizeof(cases) / sizeof(cases[0]), self);
}

struct error_case {
    const char *expr;
    const char *want; /* a part of the message */
};

static void check_errors(const struct error_case *cases, size_t n, const char *self)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        char *got = run(cases[i].expr, self, 0, NULL);
        if (!strstr(got, cases[i].want)) {
            print_error("%s\n  want ...%s...\n  got  %s\n", cases[i].expr, cases[i].want, got);
            failed++;
        }
        free(got);
    }
    assert_int_equal(failed, 0);
}

static void test_eval_errors(void **state)
{
    (void)state;
    static const struct error_case cases[] = {
        {"9223372036854775807 + 1", "error: return error for overflow"},
        {"-9223372036854775807 - 2", "error: return error for overflow"},
        {"0u - 1u", "error: return error for overflow"},
        {"1 / 0", "error: division by zero"},
        {"1 % 0", "error: modulus by zero"},
        {"-9223372036854775808 / -1", "error: return error for overflow"},
        {"1 + 1.0", "error: no such overload"},
        {"1 + 1u", "error: no such overload"},
        {"'a' < 1", "error: no such overload"},
        {"!1", "error: no such overload"},
        {"{'a': 1}.b", "error: no such key: b"},
        {"{'a': 1}['b']", "error: no such key: \"b\""},
        {"[1][1]", "error: index out of bounds: 1"},
        {"[1][-1]", "error: index out of bounds: -1"},
        {"1.f", "error: type 'int' does not support field selection"},
        {"x", "error: undeclared reference to 'x'"},
        {"int('x')", "error: cannot convert"},
        {"int(1e19)", "error: range error"},
        {"uint(-1)", "error: range error"},
        {"string(b'\\xff')", "error: invalid UTF-8"},
        {"true && 1 / 0 == 1", "error: division by zero"},
        {"1 / 0 == 1 ? 1 : 2", "error: division by zero"},
        {"1 ? 1 : 2", "error: no such overload"},
        {"[1, 0].all(x, 1 / x > 0)", "error: division by zero"},
        {"[1].map(x, 1 / 0)", "error: division by zero"},
        {"'abc'.matches('[' + '')", "error: error parsing regexp: missing closing ]: `[`"},
        {"{'a': 1, 'a': 2}", "error: Failed with repeated key"},
        {"{[1]: 2}", "error: unsupported key type"},
        {"'abc'.substring(2, 1)", "error: invalid substring range. start: 2, end: 1"},
        {"'abc'.charAt(4)", "error: index out of range: 4"},
        {"[].min()", "error: min called on empty list"},
        {"[1, 1.0].sum()", "error: no such overload"},
        {"duration('1x' + '')", "error: type conversion error"},
        {"timestamp('2009-02-30T00:00:00Z' + '')", "error: type conversion error"},
        {"5.all(x, x)", "error: expression of type 'int' cannot be range of a comprehension"},
        {"optional.none().value()", "error: optional.none() dereference"},
        {"ip('1.2.3')", "error: network address parse error"},
        {"ip('::ffff:1.2.3.4')", "IPv4-mapped IPv6 address is not allowed"},
        {"cidr('1.2.3.4/40')", "invalid CIDR prefix length"},
        {"quantity('1.2.3')", "error: quantities must match the regular expression"},
        {"quantity('1.5').asInteger()", "error: cannot convert value to integer"},
        {"[?1]", "error: no such overload"},
    };
    check_errors(cases, sizeof(cases) / sizeof(cases[0]), NULL);
}

static void test_parse_errors(void **state)
{
    (void)state;
    static const struct error_case cases[] = {
        {"1 +", "compile error: ERROR: <input>:1:4: Syntax error: "},
        {"1 + \n(2", "ERROR: <input>:2:3: Syntax error: mismatched input '<EOF>' expecting ')'"},
        {"(1", "<input>:1:3:"},
        {"[1, 2", "expecting ']'"},
        {"a.", "expecting IDENTIFIER"},
        {"1 2", "ERROR: <input>:1:3: Syntax error: mismatched input '2' expecting <EOF>"},
        {"'unterminated", "unterminated string literal"},
        {"'a\nb'", "newline in a quoted string literal"},
        {"'\\q'", "invalid escape sequence"},
        {"'\\uD800'", "invalid unicode code point"},
        {"b'\\U0001F600'", "\\U escape in a bytes literal"},
        {"9223372036854775808", "invalid int literal"},
        {"18446744073709551616u", "integer literal out of range"},
        {"if", "reserved identifier"},
        {"while.a", "reserved identifier"},
        {"1 # 2", "unexpected character"},
        {"Msg{a: 1}", "message construction is not supported"},
        {"has(a)", "invalid argument to has() macro"},
        {"[1].all(1, true)", "argument must be a simple name"},
        {"nosuchfunction(1)", "undeclared reference to 'nosuchfunction'"},
        {"'a'.substring()", "found no matching overload for 'substring'"},
        {"1 +\n 2 +", "\n | .."},
        {"'abc'.matches('(')", "<input>:1:15: error parsing regexp: missing closing ): `(`"},
        {"'abc'.findAll('[')", "<input>:1:15: error parsing regexp: missing closing ]: `[`"},
        {"duration('1x')", "<input>:1:10: invalid duration literal: 1x"},
        {"timestamp('2009-02-30T00:00:00Z')", "invalid timestamp literal: 2009-02-30T00:00:00Z"},
    };
    check_errors(cases, sizeof(cases) / sizeof(cases[0]), NULL);

    /* the snippet: the line and a caret under the column */
    char *got = run("a && (b ||", NULL, 0, NULL);
    assert_non_null(strstr(got, "<input>:1:11:"));
    assert_non_null(strstr(got, "\n | a && (b ||\n | ..........^"));
    free(got);
}

static void test_input_limits(void **state)
{
    (void)state;
    /* nesting deeper than the limit is refused, at the limit accepted */
    size_t depth = CK_CEL_MAX_DEPTH + 10;
    char *deep = malloc(2 * depth + 2);
    assert_non_null(deep);
    for (size_t i = 0; i < depth; i++) {
        deep[i] = '(';
        deep[depth + 1 + i] = ')';
    }
    deep[depth] = '1';
    deep[2 * depth + 1] = '\0';
    char *got = run(deep, NULL, 0, NULL);
    assert_non_null(strstr(got, "recursion limit exceeded"));
    free(got);
    memmove(deep, deep + 20, strlen(deep + 20) + 1);
    deep[strlen(deep) - 20] = '\0';
    got = run(deep, NULL, 0, NULL);
    assert_string_equal(got, "1");
    free(got);
    free(deep);

    /* a long left-leaning chain passes the tree height limit */
    size_t terms = 2000;
    char *chain = malloc(terms * 4 + 1);
    assert_non_null(chain);
    chain[0] = '\0';
    for (size_t i = 0; i < terms; i++)
        strcat(chain, i ? "+1" : "1");
    got = run(chain, NULL, 0, NULL);
    assert_non_null(strstr(got, "expression nested deeper than"));
    free(got);
    free(chain);

    /* the length limit */
    size_t len = CK_CEL_MAX_EXPR_LEN + 1;
    char *longexpr = malloc(len + 1);
    assert_non_null(longexpr);
    memset(longexpr, ' ', len);
    longexpr[0] = '1';
    longexpr[len] = '\0';
    got = run(longexpr, NULL, 0, NULL);
    assert_non_null(strstr(got, "exceeds limit"));
    free(got);
    /* the limit counts code points: as many two-byte characters in a string fit */
    len = CK_CEL_MAX_EXPR_LEN - 2;
    char *wide = malloc(2 * len + 3);
    assert_non_null(wide);
    wide[0] = '\'';
    for (size_t i = 0; i < len; i++)
        memcpy(wide + 1 + 2 * i, "\xc3\xa9", 2);
    wide[2 * len + 1] = '\'';
    wide[2 * len + 2] = '\0';
    got = run(wide, NULL, 0, NULL);
    assert_int_equal(strlen(got), 2 * len + 2); /* the string, quoted */
    free(got);
    free(wide);
    free(longexpr);
}

static void test_cost_budget(void **state)
{
    (void)state;
    int code = 0;
    /* a cubic comprehension over a small list passes the default limit */
    const char *cubic = "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19].map(a, "
                        "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19].map(b, "
                        "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19].map(c, "
                        "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19].all(d, "
                        "a + b + c + d >= 0))))";
    char *got = run(cubic, NULL, 0, &code);
    assert_int_equal(code, CK_CEL_ECOST);
    assert_string_equal(got, "error: operation cancelled: actual cost limit exceeded");
    free(got);
    /* the same with a tenth of the work fits */
    got = run("[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].all(b, a + b >= 0))", NULL, 0,
              &code);
    assert_int_equal(code, 0);
    assert_string_equal(got, "[true, true, true, true, true, true, true, true, true, true]");
    free(got);
    /* a small explicit limit stops a small expression */
    got = run("1 + 1 + 1 + 1", NULL, 3, &code);
    assert_int_equal(code, CK_CEL_ECOST);
    free(got);
    /* doubling a string: bounded by cost or memory, never by the machine */
    const char *doubling = "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,"
                           "25,26,27,28,29,30].map(i, 'x').join('abcdefghijklmnopqrstuvwxyz')"
                           ".replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')"
                           ".replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')"
                           ".replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')"
                           ".replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')";
    got = run(doubling, NULL, 200000, &code);
    assert_int_equal(code, CK_CEL_ECOST);
    free(got);
    /* errors absorbed by && do not absorb the budget */
    got = run("false && [0,1,2,3,4,5,6,7,8,9].all(x, true)", NULL, 5, &code);
    assert_int_equal(code, 0);
    assert_string_equal(got, "false");
    free(got);
}

/* Every allocation of a compile and an evaluation may fail: a clean error, no leak. */
static void test_allocation_failures(void **state)
{
    (void)state;
    const char *expr =
        "self.items.map(i, i.name.upperAscii() + '-' + string(i.n)).join(',')"
        ".matches('^[A-Z]+-[0-9]+(,[A-Z]+-[0-9]+)*$') && {'a': [1, 2u, 3.0]} != {} && "
        "'%s'.format([self.items[0].name]).replace('a', 'bc') == 'bc'";
    json_t *self = json_loads("{\"items\": [{\"name\": \"a\", \"n\": 1}, "
                              "{\"name\": \"b\", \"n\": 2}]}",
                              0, NULL);
    assert_non_null(self);
    struct ck_cel_var vars[] = {{"self", self, false, NULL, NULL}};
    bool done = false;
    unsigned long n;
    for (n = 1; !done && n < 10000; n++) {
        struct ck_err err = {0};
        struct ck_cel_program *prog = NULL;
        struct ck_cel_result *res = NULL;
        ck__alloc_fail_at(n, false);
        int r = ck_cel_compile(expr, strlen(expr), &prog, &err);
        if (r == 0)
            r = ck_cel_eval(prog, vars, 1, 0, &res, NULL, &err);
        ck__alloc_fail_at(0, false);
        if (r == 0) {
            assert_true(ck_cel_result_bool(res));
            done = true;
        } else {
            assert_int_equal(r, CK_ENOMEM);
        }
        ck_cel_result_free(res);
        ck_cel_program_free(prog);
    }
    assert_true(done);
    assert_true(n > 3); /* the loop did fail some allocations */
    json_decref(self);
}

/* The bool an expression gives with an optional variable oldSelf of value old (NULL: none). */
static bool eval_with_optional(const char *expr, json_t *old)
{
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    assert_int_equal(ck_cel_compile(expr, strlen(expr), &prog, &err), 0);
    json_t *self = json_integer(3);
    struct ck_cel_var vars[] = {{"self", self, false, NULL, NULL},
                                {"oldSelf", old, true, NULL, NULL}};
    struct ck_cel_result *res = NULL;
    assert_int_equal(ck_cel_eval(prog, vars, 2, 0, &res, NULL, &err), 0);
    bool b = ck_cel_result_bool(res);
    ck_cel_result_free(res);
    ck_cel_program_free(prog);
    json_decref(self);
    return b;
}

static void test_optional_variables_and_references(void **state)
{
    (void)state;
    assert_true(eval_with_optional("!oldSelf.hasValue()", NULL));
    json_t *two = json_integer(2);
    assert_true(eval_with_optional("oldSelf.hasValue() && self > oldSelf.value()", two));
    assert_true(eval_with_optional("oldSelf.orValue(9) == 2", two));
    json_decref(two);

    static const struct {
        const char *expr;
        bool reads;
    } cases[] = {
        {"self == oldSelf", true},
        {"has(oldSelf.a)", true},
        {"self.all(x, x in oldSelf)", true},
        {"self.map(oldSelf, oldSelf + 1) == [2]", false}, /* a comprehension variable hides it */
        {"self.oldSelf == 1", false},
        {"[1].exists(x, {'a': oldSelf}.a == x)", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck_err err = {0};
        struct ck_cel_program *prog = NULL;
        assert_int_equal(ck_cel_compile(cases[i].expr, strlen(cases[i].expr), &prog, &err), 0);
        if (ck_cel_program_references(prog, "oldSelf") != cases[i].reads)
            fail_msg("%s: reads oldSelf should be %d", cases[i].expr, cases[i].reads);
        ck_cel_program_free(prog);
    }
}

/* The fake authorizer: allows `list` of secrets in "" or "ns1", and GET of /healthz; errs on
 * verb "boom"; records the last request it was asked as "verb group/resource/subresource
 * namespace/name sa-namespace/sa-name". */
static char last_authz[256];

static void fake_authorize(void *ctx, const struct ck_cel_authz_request *q,
                           struct ck_cel_authz_decision *d)
{
    (void)ctx;
    snprintf(last_authz, sizeof(last_authz), "%s %s/%s/%s %s/%s %s/%s", q->verb, q->group,
             q->resource, q->subresource, q->namespace, q->name,
             q->sa_namespace ? q->sa_namespace : "", q->sa_name ? q->sa_name : "");
    if (!strcmp(q->verb, "boom")) {
        snprintf(d->error, sizeof(d->error), "webhook down");
        return;
    }
    d->allowed = q->resource_request
                     ? !strcmp(q->resource, "secrets") && !strcmp(q->verb, "list") &&
                           (!q->namespace[0] || !strcmp(q->namespace, "ns1"))
                     : !strcmp(q->path, "/healthz") && !strcmp(q->verb, "get");
    if (!d->allowed)
        snprintf(d->reason, sizeof(d->reason), "no rule for %s", q->verb);
}

/* Evaluates expr with the fake `authorizer` (request resource: pods/status "p" in "ns1"). */
static char *run_authz(const char *expr, uint64_t *ret_cost)
{
    struct ck_cel_authorizer az = {.authorize = fake_authorize,
                                   .group = "",
                                   .resource = "pods",
                                   .subresource = "status",
                                   .namespace = "ns1",
                                   .name = "p"};
    struct ck_cel_var vars[] = {{.name = "authorizer", .authorizer = &az}};
    return eval_with(expr, vars, 1, 0, NULL, ret_cost);
}

static void test_authorizer_library(void **state)
{
    (void)state;
    static const struct value_case cases[] = {
        {"authorizer.group('').resource('secrets').check('list').allowed()", "true"},
        {"authorizer.group('').resource('secrets').namespace('ns2').check('list').allowed()",
         "false"},
        {"authorizer.group('').resource('secrets').namespace('ns1').name('x').check('list')"
         ".allowed()",
         "true"},
        {"authorizer.group('').resource('secrets').check('get').reason()", "\"no rule for get\""},
        {"authorizer.group('').resource('secrets').check('list').reason()", "\"\""},
        {"authorizer.group('').resource('secrets').check('boom').errored()", "true"},
        {"authorizer.group('').resource('secrets').check('boom').error()", "\"webhook down\""},
        {"authorizer.group('').resource('secrets').check('list').errored()", "false"},
        {"authorizer.path('/healthz').check('get').allowed()", "true"},
        {"authorizer.path('/readyz').check('get').allowed()", "false"},
        {"authorizer.path('  ')", "error: path must not be empty"},
        {"authorizer.group('apps').resource(' ')", "error: resource must not be empty"},
        {"authorizer.serviceAccount('default', 'Bad_Name')", "error: Invalid service account name"},
        {"authorizer.serviceAccount('a.b', 'sa')", "error: Invalid service account namespace"},
        {"authorizer.requestResource.check('list').allowed()", "false"},
        {"type(authorizer.group('')) == kubernetes.authorization.GroupCheck",
         "error: undeclared reference to 'kubernetes' (in container '')"},
        {"string(type(authorizer.group('').resource('pods').check('get')))",
         "\"kubernetes.authorization.Decision\""},
        {"authorizer.check('get')", "error: no such overload"},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = run_authz(cases[i].expr, NULL);
        if (strncmp(got, cases[i].want, strlen(cases[i].want))) {
            print_error("%s\n  want %s\n  got  %s\n", cases[i].expr, cases[i].want, got);
            failed++;
        }
        free(got);
    }
    assert_int_equal(failed, 0);

    /* what the authorizer is asked: every field of the check, the request's resource */
    free(run_authz("authorizer.group('apps').resource('deployments').subresource('scale')"
                   ".namespace('n').name('d').check('update')",
                   NULL));
    assert_string_equal(last_authz, "update apps/deployments/scale n/d /");
    free(run_authz("authorizer.requestResource.check('get')", NULL));
    assert_string_equal(last_authz, "get /pods/status ns1/p /");
    free(run_authz("authorizer.serviceAccount('kube-system', 'builder').group('')"
                   ".resource('pods').check('get')",
                   NULL));
    assert_string_equal(last_authz, "get /pods/ / kube-system/builder");

    /* a check costs 350000: two fit in an expression, a third does not */
    uint64_t cost = 0;
    char *got = run_authz("authorizer.path('/a').check('get').allowed() || "
                          "authorizer.path('/b').check('get').allowed()",
                          &cost);
    assert_string_equal(got, "false");
    assert_true(cost >= 700000);
    free(got);
    got = run_authz("[1, 2, 3].all(i, !authorizer.path('/a').check('get').allowed())", NULL);
    assert_non_null(strstr(got, "cost limit exceeded"));
    free(got);
}

static void test_result_accessors(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    const char *expr = "{'name': self.metadata.name + '-x', 'n': [1, 2.5, null, true]}";
    assert_int_equal(ck_cel_compile(expr, strlen(expr), &prog, &err), 0);
    json_t *self = json_pack("{s:{s:s}}", "metadata", "name", "web");
    struct ck_cel_var vars[] = {{"self", self, false, NULL, NULL}};
    struct ck_cel_result *res = NULL;
    uint64_t cost = 0;
    assert_int_equal(ck_cel_eval(prog, vars, 1, 0, &res, &cost, &err), 0);
    assert_true(cost > 0);
    assert_int_equal(ck_cel_result_type(res), CK_CEL_MAP);
    json_t *j = NULL;
    assert_int_equal(ck_cel_result_to_json(res, &j), 0);
    char *text = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(text, "{\"n\":[1,2.5,null,true],\"name\":\"web-x\"}");
    free(text);
    json_decref(j);
    res = ck_cel_result_free(res);
    ck_cel_program_free(prog);

    expr = "self.metadata.name";
    assert_int_equal(ck_cel_compile(expr, strlen(expr), &prog, &err), 0);
    assert_int_equal(ck_cel_eval(prog, vars, 1, 0, &res, NULL, &err), 0);
    size_t len = 0;
    assert_string_equal(ck_cel_result_string(res, &len), "web");
    assert_int_equal(len, 3);
    assert_false(ck_cel_result_bool(res));
    ck_cel_result_free(res);
    /* without the variable: an error naming it */
    assert_int_equal(ck_cel_eval(prog, NULL, 0, 0, &res, NULL, &err), CK_EINVAL);
    assert_non_null(strstr(ck_err_message(&err), "'self'"));
    ck_err_release(&err);
    ck_cel_program_free(prog);
    json_decref(self);
}

int main(int argc, char **argv)
{
    if (argc > 1) /* one test, by name (a glob) */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_operators),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_macros),
        cmocka_unit_test(test_kubernetes_libraries),
        cmocka_unit_test(test_json_variables),
        cmocka_unit_test(test_eval_errors),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_input_limits),
        cmocka_unit_test(test_cost_budget),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_result_accessors),
        cmocka_unit_test(test_optional_variables_and_references),
        cmocka_unit_test(test_authorizer_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
