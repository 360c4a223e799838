/*
 * test_check.c - the CEL type checker (lib/cel/check.c): the types of expressions
 * over declared variables, types derived from OpenAPI schemas as Kubernetes derives
 * them, and cel-go's messages with their positions.
 *
 * Cases come from cel-go's checker tests (checker/checker_test.go), cel-spec's
 * conformance files where a case is checked, and Kubernetes' apiextensions
 * compilation_test.go (pkg/apiserver/schema/cel): each is an expression and the type
 * cel-go gives it, or its message.
 */
#define _GNU_SOURCE /* asprintf */
#include "cktest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/cel.h"
#include "ckube/internal/util.h"

/* The type of expr with self (and oldSelf) declared from the schema (JSON text, NULL:
 * no variables), or "error: MESSAGE" (caller frees). */
static char *typeof_self(const char *expr, const char *schema_json, bool root)
{
    json_t *schema = schema_json ? json_loads(schema_json, 0, NULL) : NULL;
    if (schema_json)
        assert_non_null(schema);
    struct ck_cel_decl decls[] = {
        {.name = "self", .schema = schema, .resource_root = root},
        {.name = "oldSelf", .schema = schema, .resource_root = root},
        {.name = "obj", .type = "dyn"},
        {.name = "m", .type = "map(string, int)"},
        {.name = "o", .type = "int", .optional = true},
    };
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    char *out = NULL;
    int r = ck_cel_compile(expr, strlen(expr), &prog, &err);
    if (r == 0) {
        char type[256];
        r = ck_cel_check(prog, decls, schema ? 5 : 0, type, sizeof(type), &err);
        if (r == 0)
            out = strdup(type);
    }
    if (r != 0 && asprintf(&out, "error: %s", ck_err_message(&err)) < 0)
        out = NULL;
    assert_non_null(out);
    ck_err_release(&err);
    ck_cel_program_free(prog);
    json_decref(schema);
    return out;
}

#define EXPECT(expr, schema, want)                                                                 \
    do {                                                                                           \
        char *got_ = typeof_self(expr, schema, false);                                             \
        if (strcmp(got_, want))                                                                    \
            fail_msg("%s\n  got:  %s\n  want: %s", expr, got_, want);                              \
        free(got_);                                                                                \
    } while (0)

static const char *const schema =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},"
    "\"replicas\":{\"type\":\"integer\"},"
    "\"ratio\":{\"type\":\"number\"},"
    "\"enabled\":{\"type\":\"boolean\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"port\":{\"x-kubernetes-int-or-string\":true},"
    "\"since\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"every\":{\"type\":\"string\",\"format\":\"duration\"},"
    "\"data\":{\"type\":\"string\",\"format\":\"byte\"},"
    "\"extra\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
    "\"untyped\":{\"x-kubernetes-preserve-unknown-fields\":true},"
    "\"foo-bar\":{\"type\":\"string\"},"
    "\"namespace\":{\"type\":\"string\"},"
    "\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"key\":{\"type\":\"string\"},\"value\":{\"type\":\"integer\"}}}},"
    "\"template\":{\"type\":\"object\",\"x-kubernetes-embedded-resource\":true,"
    "\"properties\":{\"spec\":{\"type\":\"object\"}}}"
    "}}";

static void test_primitives_and_operators(void **state)
{
    (void)state;
    EXPECT("1 + 2", schema, "int");
    EXPECT("1u * 2u", schema, "uint");
    EXPECT("1.5 / 2.0", schema, "double");
    EXPECT("'a' + 'b'", schema, "string");
    EXPECT("b'a' + b'b'", schema, "bytes");
    EXPECT("[1] + [2]", schema, "list(int)");
    EXPECT("{'a': 1}", schema, "map(string, int)");
    EXPECT("1 < 2.0 && 2u >= 1", schema, "bool");
    EXPECT("true ? 1 : 2", schema, "int");
    EXPECT("null", schema, "null");
    EXPECT("[]", schema, "list(dyn)");
    EXPECT("int", schema, "type(int)");
    EXPECT("type(1) == int", schema, "bool");
    EXPECT("dyn(1) + 'a'", schema, "string");
    EXPECT("timestamp('2024-01-01T00:00:00Z') - duration('1h')", schema, "timestamp");
    EXPECT("duration('1h') + duration('1m')", schema, "duration");
    EXPECT("1 in [1, 2]", schema, "bool");
    EXPECT("'a' in {'a': 1}", schema, "bool");
    EXPECT("[1, 2][0]", schema, "int");
    EXPECT("{'a': [1]}['a']", schema, "list(int)");
    /* cel-go's messages, with the operator's position */
    EXPECT("1 + 'a'", schema,
           "error: ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, "
           "string)'\n | 1 + 'a'\n | ..^");
    EXPECT("1 == 1.0", schema,
           "error: ERROR: <input>:1:3: found no matching overload for '_==_' applied to '(int, "
           "double)'\n | 1 == 1.0\n | ..^");
    EXPECT("'a' == null", schema,
           "error: ERROR: <input>:1:5: found no matching overload for '_==_' applied to "
           "'(string, null)'\n | 'a' == null\n | ....^");
    EXPECT("1 && true", schema,
           "error: ERROR: <input>:1:1: expected type 'bool' but found 'int'\n | 1 && true\n | ^");
    EXPECT("true ? 1 : 'a'", schema,
           "error: ERROR: <input>:1:6: found no matching overload for '_?_:_' applied to '(bool, "
           "int, string)'\n | true ? 1 : 'a'\n | .....^");
    EXPECT("[1, 'a']", schema,
           "error: ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a']\n | "
           "....^");
    EXPECT("-'a'", schema,
           "error: ERROR: <input>:1:1: found no matching overload for '-_' applied to "
           "'(string)'\n | -'a'\n | ^");
    EXPECT("x", schema,
           "error: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x\n | ^");
    /* every error, in order of position; one mistake is reported once */
    EXPECT("(1 + 'a') + ('b' - 'c')", schema,
           "error: ERROR: <input>:1:4: found no matching overload for '_+_' applied to '(int, "
           "string)'\n | (1 + 'a') + ('b' - 'c')\n | ...^\nERROR: <input>:1:18: found no "
           "matching overload for '_-_' applied to '(string, string)'\n | (1 + 'a') + ('b' - "
           "'c')\n | .................^");
}

static void test_functions(void **state)
{
    (void)state;
    EXPECT("size('abc')", schema, "int");
    EXPECT("'abc'.size()", schema, "int");
    EXPECT("'abc'.startsWith('a')", schema, "bool");
    EXPECT("'abc'.matches('^a')", schema, "bool");
    EXPECT("int('1') + int(1.5)", schema, "int");
    EXPECT("string(1)", schema, "string");
    EXPECT("'a,b'.split(',')", schema, "list(string)");
    EXPECT("['a'].join('-')", schema, "string");
    EXPECT("[1, 2].sum()", schema, "int");
    EXPECT("[1, 2].indexOf(1)", schema, "int");
    EXPECT("'%s'.format(['a'])", schema, "string");
    EXPECT("optional.of(1)", schema, "optional_type(int)");
    EXPECT("optional.of(1).orValue(2)", schema, "int");
    EXPECT("optional.none().hasValue()", schema, "bool");
    EXPECT("ip('10.0.0.1').family()", schema, "int");
    EXPECT("cidr('10.0.0.0/8').containsIP('10.0.0.1')", schema, "bool");
    EXPECT("string(ip('10.0.0.1'))", schema, "string");
    EXPECT("quantity('1Gi').add(1).isLessThan(quantity('2Gi'))", schema, "bool");
    EXPECT("sets.contains([1], [1])", schema, "bool");
    EXPECT("timestamp('2024-01-01T00:00:00Z').getFullYear()", schema, "int");
    EXPECT("size(1)", schema,
           "error: ERROR: <input>:1:5: found no matching overload for 'size' applied to "
           "'(int)'\n | size(1)\n | ....^");
    EXPECT("'abc'.startsWith(1)", schema,
           "error: ERROR: <input>:1:17: found no matching overload for 'startsWith' applied to "
           "'string.(int)'\n | 'abc'.startsWith(1)\n | ................^");
    EXPECT("quantity('1').add('a')", schema,
           "error: ERROR: <input>:1:18: found no matching overload for 'add' applied to "
           "'kubernetes.Quantity.(string)'\n | quantity('1').add('a')\n | .................^");
}

static void test_schema_types(void **state)
{
    (void)state;
    EXPECT("self.name", schema, "string");
    EXPECT("self.replicas", schema, "int");
    EXPECT("self.ratio", schema, "double");
    EXPECT("self.enabled", schema, "bool");
    EXPECT("self.tags", schema, "list(string)");
    EXPECT("self.labels", schema, "map(string, string)");
    EXPECT("self.port", schema, "dyn");
    EXPECT("self.since", schema, "timestamp");
    EXPECT("self.every", schema, "duration");
    EXPECT("self.data", schema, "bytes");
    EXPECT("self.foo__dash__bar", schema, "string");
    EXPECT("self.__namespace__", schema, "string");
    EXPECT("self.items[0].value", schema, "int");
    EXPECT("self.items.all(i, i.value > 0)", schema, "bool");
    EXPECT("self.items.map(i, i.key)", schema, "list(string)");
    EXPECT("self.items.filter(i, i.value > 1)", schema, "list(object.items.@idx)");
    EXPECT("self.labels.exists(k, k.startsWith('a'))", schema, "bool");
    EXPECT("has(self.name)", schema, "bool");
    EXPECT("self.?name", schema, "optional_type(string)");
    EXPECT("self.?name.orValue('')", schema, "string");
    EXPECT("self.labels[?'a']", schema, "optional_type(string)");
    EXPECT("self.template.apiVersion + self.template.metadata.name", schema, "string");
    EXPECT("self.since < timestamp('2024-01-01T00:00:00Z')", schema, "bool");
    EXPECT("self.replicas == oldSelf.replicas", schema, "bool");
    EXPECT("self == oldSelf", schema, "bool");
    EXPECT("m['a'] + 1", schema, "int");
    EXPECT("o.hasValue()", schema, "bool");
    EXPECT("obj.anything.goes", schema, "dyn");
    /* preserve-unknown-fields: only the declared fields are there */
    EXPECT("self.extra.foo", schema,
           "error: ERROR: <input>:1:11: undefined field 'foo'\n | self.extra.foo\n | "
           "..........^");
    EXPECT("self.untyped", schema,
           "error: ERROR: <input>:1:5: undefined field 'untyped'\n | self.untyped\n | ....^");
    EXPECT("self.foo", schema,
           "error: ERROR: <input>:1:5: undefined field 'foo'\n | self.foo\n | ....^");
    EXPECT("self.namespace", schema,
           "error: ERROR: <input>:1:5: undefined field 'namespace'\n | self.namespace\n | ....^");
    EXPECT("self.replicas + self.name", schema,
           "error: ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, "
           "string)'\n | self.replicas + self.name\n | ..............^");
    EXPECT("self.name.foo", schema,
           "error: ERROR: <input>:1:10: type 'string' does not support field selection\n | "
           "self.name.foo\n | .........^");
    EXPECT("self.replicas.all(x, x)", schema,
           "error: ERROR: <input>:1:5: expression of type 'int' cannot be range of a "
           "comprehension (must be list, map, or dynamic)\n | self.replicas.all(x, x)\n | "
           "....^");
    EXPECT("self.tags.all(t, t)", schema,
           "error: ERROR: <input>:1:18: expected type 'bool' but found 'string'\n | "
           "self.tags.all(t, t)\n | .................^");
    EXPECT("self.since.startsWith('2024')", schema,
           "error: ERROR: <input>:1:22: found no matching overload for 'startsWith' applied to "
           "'timestamp.(string)'\n | self.since.startsWith('2024')\n | .....................^");
}

static void test_resource_root(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
                    "\"properties\":{\"x\":{\"type\":\"integer\"}}}}}";
    char *got = typeof_self("self.metadata.name + self.kind + self.apiVersion", s, true);
    assert_string_equal(got, "string");
    free(got);
    got = typeof_self("self.metadata.labels", s, true);
    assert_string_equal(got, "error: ERROR: <input>:1:14: undefined field 'labels'\n | "
                             "self.metadata.labels\n | .............^");
    free(got);
    got = typeof_self("self.kind", s, false);
    assert_non_null(strstr(got, "undefined field 'kind'"));
    free(got);
}

/* Without declarations every variable is undeclared; with a type name, that type. */
static void test_declarations(void **state)
{
    (void)state;
    struct ck_cel_program *prog = NULL;
    struct ck_err err = {0};
    const char *expr = "request.name.size() > params.limit";
    assert_int_equal(ck_cel_compile(expr, strlen(expr), &prog, &err), 0);
    char type[64];
    assert_int_equal(ck_cel_check(prog, NULL, 0, type, sizeof(type), &err), CK_EINVAL);
    assert_non_null(strstr(ck_err_message(&err), "undeclared reference to 'request'"));
    assert_non_null(strstr(ck_err_message(&err), "undeclared reference to 'params'"));
    ck_err_release(&err);
    struct ck_cel_decl decls[] = {{.name = "request", .type = "map(string, string)"},
                                  {.name = "params"}};
    assert_int_equal(ck_cel_check(prog, decls, 2, type, sizeof(type), &err), 0);
    assert_string_equal(type, "bool");
    ck_cel_program_free(prog);
    /* as cel-go, the first 100 errors, then how many more */
    struct ck__buf b = {0};
    for (int i = 0; i < 102; i++)
        ck__buf_printf(&b, "%sx%d", i ? " + " : "", i);
    assert_int_equal(ck_cel_compile(b.p, b.len, &prog, &err), 0);
    assert_int_equal(ck_cel_check(prog, NULL, 0, type, sizeof(type), &err), CK_EINVAL);
    const char *msg = ck_err_message(&err);
    assert_non_null(strstr(msg, "undeclared reference to 'x99' (in container '')"));
    assert_null(strstr(msg, "'x100'"));
    assert_non_null(strstr(msg, "^\n2 more errors were truncated"));
    ck_err_release(&err);
    ck_cel_program_free(prog);
    ck__buf_release(&b);
}

/* The type of expr over self and an optional oldSelf of the schema, or "error: ...". */
static char *typeof_optional_old(const char *expr, const char *schema_json)
{
    json_t *js = json_loads(schema_json, 0, NULL);
    assert_non_null(js);
    struct ck_cel_decl decls[] = {{.name = "self", .schema = js},
                                  {.name = "oldSelf", .schema = js, .optional = true}};
    struct ck_err err = {0};
    struct ck_cel_program *prog = NULL;
    char type[256], *out = NULL;
    int r = ck_cel_compile(expr, strlen(expr), &prog, &err);
    if (r == 0)
        r = ck_cel_check(prog, decls, 2, type, sizeof(type), &err);
    if (asprintf(&out, "%s%s", r ? "error: " : "", r ? ck_err_message(&err) : type) < 0)
        out = NULL;
    assert_non_null(out);
    ck_err_release(&err);
    ck_cel_program_free(prog);
    json_decref(js);
    return out;
}

/* apiextensions' compilation_test.go: optionalOldSelf transition rules, formats, maps. */
static void test_kubernetes_compilation_cases(void **state)
{
    (void)state;
    static const struct {
        const char *schema, *expr, *want; /* want: the type, or words of the error */
    } cases[] = {
        {"{`type`:`integer`}", "self >= oldSelf.value()", "bool"},
        {"{`type`:`integer`}", "self >= oldSelf.orValue(1)", "bool"},
        {"{`type`:`integer`}", "oldSelf.hasValue() ? self >= oldSelf.value() : true", "bool"},
        {"{`type`:`integer`}", "self >= oldSelf",
         "found no matching overload for '_>=_' applied to '(int, optional_type(int))'"},
        {"{`type`:`integer`}", "self >= oldSelf.orValue('')",
         "found no matching overload for 'orValue' applied to 'optional_type(int).(string)'"},
        {"{`type`:`object`,`properties`:{`o`:{`type`:`object`,`properties`:{`i`:{`type`:"
         "`integer`},`s`:{`type`:`string`},`o`:{`type`:`object`}}}}}",
         "self.o.i >= oldSelf.o.i.value() && self.o.o == oldSelf.o.o.value()", "bool"},
        {"{`type`:`object`,`properties`:{`o`:{`type`:`object`,`properties`:{`i`:{`type`:"
         "`integer`},`s`:{`type`:`string`}}}}}",
         "self.o.i >= oldSelf.o.s.orValue(0)", "orValue"},
        {"{`type`:`string`,`format`:`byte`}", "string(self).endsWith('s')", "bool"},
        {"{`type`:`number`}", "self > 1.0", "bool"},
        {"{`type`:`number`}", "size(self) == 10",
         "found no matching overload for 'size' applied to '(double)'"},
        {"{`type`:`object`,`additionalProperties`:{`type`:`boolean`}}", "size(self) > 0", "bool"},
        {"{`type`:`array`,`items`:{`type`:`array`,`items`:{`type`:`array`,`items`:{`type`:"
         "`string`}}}}",
         "size(self[0][0]) == 10", "bool"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "%s", cases[i].schema);
        for (char *p = text; *p; p++)
            if (*p == '`')
                *p = '"';
        char *got = typeof_optional_old(cases[i].expr, text);
        if (strcmp(got, cases[i].want) &&
            !(strncmp(got, "error: ", 7) == 0 && strstr(got, cases[i].want)))
            fail_msg("%s\n  got:  %s\n  want: %s", cases[i].expr, got, cases[i].want);
        free(got);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primitives_and_operators),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_schema_types),
        cmocka_unit_test(test_resource_root),
        cmocka_unit_test(test_declarations),
        cmocka_unit_test(test_kubernetes_compilation_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
