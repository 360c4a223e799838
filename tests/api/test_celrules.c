/*
 * test_celrules.c - tests for lib/api/celrules.c: a CRD's
 * x-kubernetes-validations rules compiled from a schema and evaluated
 * against custom resources as kube-apiserver evaluates them (the walk, the
 * transition rules and their old values, optionalOldSelf, messages,
 * reasons, fieldPath, the cost limits, ratcheting), and the checks a
 * definition's rules get when it is written (ck_crd_schema_check), with
 * Kubernetes' words.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

/* A JSON literal with ` standing for " (CEL strings keep their '). */
static json_t *json_of(const char *text_bq)
{
    char *text = strdup(text_bq);
    assert_non_null(text);
    for (char *c = text; *c; c++)
        if (*c == '`')
            *c = '"';
    json_t *j = load(text);
    free(text);
    return j;
}

/* The errors' texts, one a line ("" when none); caller frees. */
static char *rendered(struct ck_field_errors *errs)
{
    assert_false(errs->nomem);
    size_t cap = 1;
    for (size_t i = 0; i < errs->len; i++) {
        char *line = ck_field_error_string(&errs->items[i]);
        cap += strlen(line) + 1;
        free(line);
    }
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (size_t i = 0; i < errs->len; i++) {
        char *line = ck_field_error_string(&errs->items[i]);
        strcat(out, line);
        strcat(out, "\n");
        free(line);
    }
    return out;
}

/* Rules compiled from a schema literal (per_call: their per-call limit, 0 for the default). */
static struct ck_crd_rules *rules_of(const char *schema_bq, uint64_t per_call)
{
    json_t *schema = json_of(schema_bq);
    struct ck_crd_rules *rules = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_crd_rules_new(schema, per_call, &rules, &err), 0);
    assert_non_null(rules);
    json_decref(schema); /* the rules keep their own copy */
    return rules;
}

/*
 * The errors after validating obj (old: NULL on a create) against schema's rules, with the
 * errors errs holds already (the schema's own; released here); caller frees.
 */
static char *errors_of(const char *schema_bq, const char *obj_bq, const char *old_bq,
                       uint64_t per_call, int64_t budget, struct ck_field_errors *errs)
{
    struct ck_crd_rules *rules = rules_of(schema_bq, per_call);
    json_t *obj = json_of(obj_bq);
    json_t *old = old_bq ? json_of(old_bq) : NULL;
    ck_crd_rules_validate(rules, obj, old, budget, errs);
    char *got = rendered(errs);
    ck_field_errors_release(errs);
    ck_crd_rules_free(rules);
    json_decref(obj);
    json_decref(old);
    return got;
}

/* One write: the object, its old value (NULL: a create), the errors it must get ("": none). */
struct step {
    const char *obj, *old, *want;
};

/* Validates each step's object against schema's rules and compares the errors. */
static void run_steps(const char *schema_bq, const struct step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct ck_field_errors errs = {0};
        char *got = errors_of(schema_bq, steps[i].obj, steps[i].old, 0, 0, &errs);
        if (strcmp(got, steps[i].want) != 0)
            fail_msg("step %zu (%s):\ngot:\n%s\nwant:\n%s", i, steps[i].obj, got, steps[i].want);
        free(got);
    }
}

#define RUN(schema, steps) run_steps(schema, steps, sizeof(steps) / sizeof(steps[0]))

static void expect_text(char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
}

/* spec: {a, b, name, items: [string], labels: {string}}, with rules the tests add. */
#define SPEC_SCHEMA(spec_rules, root_rules)                                                        \
    "{`type`:`object`,`x-kubernetes-validations`:[" root_rules "],"                                \
    "`properties`:{`spec`:{`type`:`object`,`x-kubernetes-validations`:[" spec_rules "],"           \
    "`properties`:{`a`:{`type`:`integer`},`b`:{`type`:`integer`},`name`:{`type`:`string`},"        \
    "`items`:{`type`:`array`,`items`:{`type`:`string`,"                                            \
    "`x-kubernetes-validations`:[{`rule`:`self.size() < 4`}]}},"                                   \
    "`labels`:{`type`:`object`,`additionalProperties`:{`type`:`string`,"                           \
    "`x-kubernetes-validations`:[{`rule`:`self != 'x'`,`message`:`no x`}]}}}}}}"

static void test_no_rules_no_validator(void **state)
{
    (void)state;
    json_t *schema = json_of("{`type`:`object`,`properties`:{`spec`:{`type`:`object`}}}");
    struct ck_crd_rules *rules = (struct ck_crd_rules *)1;
    struct ck_err err = {0};
    assert_int_equal(ck_crd_rules_new(schema, 0, &rules, &err), 0);
    assert_null(rules);
    struct ck_field_errors errs = {0};
    ck_crd_rules_validate(NULL, schema, NULL, 0, &errs); /* no rules: nothing to do */
    assert_int_equal(errs.len, 0);
    json_decref(schema);
}

static void test_a_stored_rule_that_does_not_compile_fails_every_write(void **state)
{
    (void)state;
    static const struct step steps[] = {
        {"{`spec`:{`a`:1}}", NULL,
         "spec: Invalid value: \"object\": rule compile error: compilation failed: ERROR: "
         "<input>:1:5: undeclared reference to 'frob' (in container '')\n"
         " | frob(self)\n"
         " | ....^\n"},
    };
    RUN(SPEC_SCHEMA("{`rule`:`frob(self)`},{`rule`:`  `}", ""), steps);
}

static void test_root_rule_sees_the_object(void **state)
{
    (void)state;
    const char *schema =
        SPEC_SCHEMA("", "{`rule`:`self.spec.a <= self.spec.b`,`message`:`a must not pass b`},"
                        "{`rule`:`self.metadata.name.startsWith('w')`}");
    static const struct step steps[] = {
        {"{`metadata`:{`name`:`w1`},`spec`:{`a`:1,`b`:2}}", NULL, ""},
        {"{`metadata`:{`name`:`v1`},`spec`:{`a`:3,`b`:2}}", NULL,
         "<nil>: Invalid value: \"object\": a must not pass b\n"
         "<nil>: Invalid value: \"object\": failed rule: "
         "self.metadata.name.startsWith('w')\n"},
    };
    RUN(schema, steps);
}

/* Values are typed by the schema, as the checker types them: formats, escaped names. */
static void test_values_are_typed_by_the_schema(void **state)
{
    (void)state;
    const char *schema =
        "{`type`:`object`,`properties`:{`spec`:{`type`:`object`,`x-kubernetes-validations`:["
        "{`rule`:`self.since < timestamp('2030-01-01T00:00:00Z')`,`message`:`too late`},"
        "{`rule`:`self.every <= duration('1h')`,`message`:`too slow`},"
        "{`rule`:`self.day.getFullYear() >= 2020`,`message`:`too early`},"
        "{`rule`:`self.data == b'hi'`,`message`:`not hi`},"
        "{`rule`:`self.foo__dash__bar != 'x' && self.__namespace__ != 'y'`,`message`:`named`}],"
        "`properties`:{`since`:{`type`:`string`,`format`:`date-time`},"
        "`every`:{`type`:`string`,`format`:`duration`},`day`:{`type`:`string`,`format`:`date`},"
        "`data`:{`type`:`string`,`format`:`byte`},`foo-bar`:{`type`:`string`},"
        "`namespace`:{`type`:`string`}}}}}";
    static const struct step steps[] = {
        {"{`spec`:{`since`:`2024-05-01T10:00:00Z`,`every`:`30m`,`day`:`2024-01-02`,"
         "`data`:`aGk=`,`foo-bar`:`a`,`namespace`:`b`}}",
         NULL, ""},
        {"{`spec`:{`since`:`2031-05-01T10:00:00Z`,`every`:`2h`,`day`:`2019-01-02`,"
         "`data`:`aGo=`,`foo-bar`:`x`,`namespace`:`b`}}",
         NULL,
         "spec: Invalid value: \"object\": too late\n"
         "spec: Invalid value: \"object\": too slow\n"
         "spec: Invalid value: \"object\": too early\n"
         "spec: Invalid value: \"object\": not hi\n"
         "spec: Invalid value: \"object\": named\n"},
    };
    RUN(schema, steps);
}

static void test_nested_object_list_and_map_rules(void **state)
{
    (void)state;
    const char *schema = SPEC_SCHEMA("{`rule`:`  self.a > 0  `}", "");
    static const struct step steps[] = {
        {"{`spec`:{`a`:0,`items`:[`ok`,`long`],`labels`:{`k`:`x`,`l`:`y`}}}", NULL,
         "spec: Invalid value: \"object\": failed rule: self.a > 0\n"
         "spec.items[1]: Invalid value: \"string\": failed rule: self.size() < 4\n"
         "spec.labels[k]: Invalid value: \"string\": no x\n"},
        /* null values and absent fields are not validated */
        {"{`spec`:{`a`:1,`items`:null}}", NULL, ""},
        {"{`spec`:null}", NULL, ""},
    };
    RUN(schema, steps);
}

static void test_transition_rule_only_on_update_with_old_value(void **state)
{
    (void)state;
    const char *schema =
        SPEC_SCHEMA("{`rule`:`self.name == oldSelf.name`,`message`:`name is immutable`},"
                    "{`rule`:`!has(oldSelf.a) || self.a >= oldSelf.a`}",
                    "");
    static const struct step steps[] = {
        /* create: transition rules are not evaluated */
        {"{`spec`:{`name`:`a`,`a`:1}}", NULL, ""},
        {"{`spec`:{`name`:`a`,`a`:2}}", "{`spec`:{`name`:`a`,`a`:1}}", ""},
        {"{`spec`:{`name`:`b`,`a`:0}}", "{`spec`:{`name`:`a`,`a`:1}}",
         "spec: Invalid value: \"object\": name is immutable\n"
         "spec: Invalid value: \"object\": failed rule: "
         "!has(oldSelf.a) || self.a >= oldSelf.a\n"},
        /* no old value at the node: not evaluated */
        {"{`spec`:{`name`:`b`}}", "{`metadata`:{}}", ""},
    };
    RUN(schema, steps);
}

static void test_transition_rule_on_list_map_elements_by_key(void **state)
{
    (void)state;
    const char *schema =
        "{`type`:`object`,`properties`:{`ports`:{`type`:`array`,`x-kubernetes-list-type`:`map`,"
        "`x-kubernetes-list-map-keys`:[`name`],`items`:{`type`:`object`,`required`:[`name`],"
        "`properties`:{`name`:{`type`:`string`},`port`:{`type`:`integer`}},"
        "`x-kubernetes-validations`:[{`rule`:`self.port == oldSelf.port`,`message`:`fixed`}]}}}}";
    static const struct step steps[] = {
        /* reordered: each element meets its own old value */
        {"{`ports`:[{`name`:`b`,`port`:2},{`name`:`a`,`port`:1}]}",
         "{`ports`:[{`name`:`a`,`port`:1},{`name`:`b`,`port`:2}]}", ""},
        {"{`ports`:[{`name`:`b`,`port`:3},{`name`:`c`,`port`:9}]}",
         "{`ports`:[{`name`:`a`,`port`:1},{`name`:`b`,`port`:2}]}",
         "ports[0]: Invalid value: \"object\": fixed\n"},
    };
    RUN(schema, steps);
}

static void test_optional_old_self(void **state)
{
    (void)state;
    const char *schema =
        SPEC_SCHEMA("{`rule`:`oldSelf.hasValue() ? self.a >= oldSelf.value().a : self.a == 1`,"
                    "`optionalOldSelf`:true,`message`:`starts at 1 and grows`}",
                    "");
    static const struct step steps[] = {
        {"{`spec`:{`a`:1}}", NULL, ""},
        {"{`spec`:{`a`:5}}", NULL, "spec: Invalid value: \"object\": starts at 1 and grows\n"},
        {"{`spec`:{`a`:5}}", "{`spec`:{`a`:3}}", ""},
        {"{`spec`:{`a`:2}}", "{`spec`:{`a`:3}}",
         "spec: Invalid value: \"object\": starts at 1 and grows\n"},
    };
    RUN(schema, steps);
}

static void test_message_expression_and_its_fallbacks(void **state)
{
    (void)state;
    const char *schema = SPEC_SCHEMA(
        "{`rule`:`self.a < 10`,`messageExpression`:`'a is ' + string(self.a) + ', not below 10'`},"
        "{`rule`:`self.a < 5`,`message`:`below 5`,`messageExpression`:`self.nope`},"
        "{`rule`:`self.a < 3`,`message`:`below 3`,`messageExpression`:`'  '`},"
        "{`rule`:`self.a < 2`,`messageExpression`:`self.a`}",
        "");
    static const struct step steps[] = {
        {"{`spec`:{`a`:12}}", NULL,
         "spec: Invalid value: \"object\": a is 12, not below 10\n"
         "spec: Invalid value: \"object\": below 5\n"
         "spec: Invalid value: \"object\": below 3\n"
         "spec: Invalid value: \"object\": failed rule: self.a < 2\n"},
    };
    RUN(schema, steps);
}

static void test_reason_gives_the_error_type(void **state)
{
    (void)state;
    const char *schema =
        SPEC_SCHEMA("{`rule`:`self.a > 0`,`reason`:`FieldValueForbidden`,`message`:`no`},"
                    "{`rule`:`self.a > 1`,`reason`:`FieldValueRequired`,`message`:`need`},"
                    "{`rule`:`self.a > 2`,`reason`:`FieldValueDuplicate`,`message`:`dup`},"
                    "{`rule`:`self.a > 3`,`reason`:`FieldValueInvalid`,`message`:`bad`}",
                    "");
    static const struct step steps[] = {
        {"{`spec`:{`a`:0}}", NULL,
         "spec: Forbidden: no\n"
         "spec: Required value: need\n"
         "spec: Duplicate value: \"object\"\n"
         "spec: Invalid value: \"object\": bad\n"},
    };
    RUN(schema, steps);
}

static void test_field_path_places_the_error(void **state)
{
    (void)state;
    const char *schema = SPEC_SCHEMA(
        "{`rule`:`self.a <= self.b`,`fieldPath`:`.a`,`message`:`a above b`},"
        "{`rule`:`!('k' in self.labels)`,`fieldPath`:`.labels['k']`,`reason`:`FieldValueForbidden`}",
        "{`rule`:`self.spec.a != 7`,`fieldPath`:`.spec.a`}");
    static const struct step steps[] = {
        {"{`spec`:{`a`:7,`b`:1,`labels`:{`k`:`v`}}}", NULL,
         "spec.a: Invalid value: \"object\": failed rule: self.spec.a != 7\n"
         "spec.a: Invalid value: \"object\": a above b\n"
         "spec.labels[k]: Forbidden: failed rule: !('k' in self.labels)\n"},
    };
    RUN(schema, steps);
}

static void test_evaluation_errors(void **state)
{
    (void)state;
    const char *schema =
        SPEC_SCHEMA("{`rule`:`self.missing > 0`},{`rule`:`self.a + 'x' == 1`}", "");
    static const struct step steps[] = {
        {"{`spec`:{`a`:1}}", NULL,
         "spec: Invalid value: \"object\": no such key: missing evaluating rule: "
         "self.missing > 0\n"
         "spec: Invalid value: \"object\": 'no such overload: _+_(int, string)': call "
         "arguments did not match a supported operator, function or macro signature for "
         "rule: self.a + 'x' == 1\n"},
    };
    RUN(schema, steps);
}

static void test_cost_limits(void **state)
{
    (void)state;
    const char *schema =
        SPEC_SCHEMA("{`rule`:`[1,2,3,4,5,6,7,8,9].all(x, [1,2,3,4,5,6,7,8,9].all(y, x * y > 0))`},"
                    "{`rule`:`self.a > 100`}",
                    "");
    struct ck_field_errors errs = {0};
    /* the call's own limit: this rule stops, and the rules after it are not run */
    expect_text(errors_of(schema, "{`spec`:{`a`:1}}", NULL, 50, 0, &errs),
                "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit "
                "exceeded': no further validation rules will be run due to call cost exceeds "
                "limit for rule: [1,2,3,4,5,6,7,8,9].all(x, [1,2,3,4,5,6,7,8,9].all(y, x * y > "
                "0))\n");
    /* the request's budget */
    expect_text(errors_of(schema, "{`spec`:{`a`:1}}", NULL, 0, 50, &errs),
                "spec: Invalid value: \"object\": validation failed due to running out of cost "
                "budget, no further validation rules will be run\n");
    /* within both: every rule runs */
    expect_text(errors_of(schema, "{`spec`:{`a`:1}}", NULL, 0, 0, &errs),
                "spec: Invalid value: \"object\": failed rule: self.a > 100\n");
    /* a messageExpression past the call's limit, at the rule's fieldPath */
    const char *message = SPEC_SCHEMA(
        "{`rule`:`self.a > 1`,`fieldPath`:`.a`,"
        "`messageExpression`:`[1,2,3,4,5,6,7,8,9].map(x, [1,2,3,4,5,6,7,8,9].map(y, x * y))"
        ".size() == 9 ? 'big' : 'small'`}",
        "");
    expect_text(errors_of(message, "{`spec`:{`a`:1}}", NULL, 50, 0, &errs),
                "spec.a: Invalid value: \"object\": no further validation rules will be run due "
                "to call cost exceeds limit for messageExpression: \"[1,2,3,4,5,6,7,8,9].map(x, "
                "[1,2,3,4,5,6,7,8,9].map(y, x * y)).size() == 9 ? 'big' : 'small'\"\n");
}

static void test_blocking_schema_errors_skip_the_rules(void **state)
{
    (void)state;
    const char *schema = SPEC_SCHEMA("{`rule`:`self.a > 0`}", "");
    struct ck_field_errors errs = {0};
    ck_field_errors_add(&errs, CK_FIELD_REQUIRED, "spec.b", NULL, false, NULL);
    expect_text(errors_of(schema, "{`spec`:{`a`:0}}", NULL, 0, 0, &errs),
                "spec.b: Required value\n"
                "<nil>: Invalid value: \"null\": some validation rules were not checked because "
                "the object was invalid; correct the existing errors to complete validation\n");
    /* an Invalid value does not block them */
    ck_field_errors_add(&errs, CK_FIELD_INVALID, "spec.b", "1", false, "bad");
    expect_text(errors_of(schema, "{`spec`:{`a`:0}}", NULL, 0, 0, &errs),
                "spec.b: Invalid value: 1: bad\n"
                "spec: Invalid value: \"object\": failed rule: self.a > 0\n");
}

static void test_unchanged_invalid_values_ratchet(void **state)
{
    (void)state;
    const char *schema = SPEC_SCHEMA("{`rule`:`self.a > 0`}", "");
    static const struct step steps[] = {
        /* spec unchanged: its error was there before, it passes (Kubernetes warns) */
        {"{`metadata`:{`x`:2},`spec`:{`a`:0}}", "{`metadata`:{`x`:1},`spec`:{`a`:0}}", ""},
        {"{`spec`:{`a`:0,`b`:1}}", "{`spec`:{`a`:0}}",
         "spec: Invalid value: \"object\": failed rule: self.a > 0\n"},
        /* list elements of a list that is not a map or set ratchet with the list */
        {"{`spec`:{`a`:1,`items`:[`long`]}}", "{`spec`:{`a`:1,`items`:[`long`]}}", ""},
        {"{`spec`:{`a`:1,`items`:[`long`,`x`]}}", "{`spec`:{`a`:1,`items`:[`long`]}}",
         "spec.items[0]: Invalid value: \"string\": failed rule: self.size() < 4\n"},
    };
    RUN(schema, steps);
}

/* ---- the definition's checks -------------------------------------------- */

#define ROOT "spec.versions[0].schema.openAPIV3Schema"

static char *check(const char *schema_bq)
{
    json_t *schema = json_of(schema_bq);
    struct ck_field_errors errs = {0};
    ck_crd_schema_check(schema, ROOT, &errs);
    json_decref(schema);
    char *out = rendered(&errs);
    ck_field_errors_release(&errs);
    return out;
}

static void test_definition_rules_are_compiled(void **state)
{
    (void)state;
    expect_text(check(SPEC_SCHEMA("{`rule`:`self.a > 0`,`messageExpression`:`'a: ' + "
                                  "string(self.a)`,`fieldPath`:`.labels['k']`}",
                                  "{`rule`:`self == oldSelf.orValue(self)`,`optionalOldSelf`:"
                                  "true}")),
                "");
    /* the compiler's message follows Kubernetes' words (docs/cel.md: its own syntax errors) */
    char *got = check("{`type`:`object`,`x-kubernetes-validations`:[{`rule`:`frob(self)`}]}");
    const char *want =
        ROOT ".x-kubernetes-validations[0].rule: Invalid value: "
             "apiextensions.ValidationRule{Rule:\"frob(self)\", Message:\"\", "
             "MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), "
             "FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: "
             "ERROR: <input>:1:";
    if (strncmp(got, want, strlen(want)) != 0 ||
        !strstr(got, "undeclared reference to 'frob' (in container '')\n | frob(self)\n"))
        fail_msg("got:\n%s", got);
    free(got);
    /* rules are type-checked against the node's schema, as cel-go checks them */
    expect_text(check(SPEC_SCHEMA("{`rule`:`self.a + self.name > 0`}", "")), ROOT
                ".properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
                "apiextensions.ValidationRule{Rule:\"self.a + self.name > 0\", Message:\"\", "
                "MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), "
                "FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: "
                "<input>:1:8: found no matching overload for '_+_' applied to '(int, string)'\n"
                " | self.a + self.name > 0\n"
                " | .......^\n");
    got = check(SPEC_SCHEMA("{`rule`:`self.nope == 1`}", "{`rule`:`self.spec.a`}"));
    if (!strstr(got, ROOT ".x-kubernetes-validations[0].rule: Invalid value: "
                          "apiextensions.ValidationRule{Rule:\"self.spec.a\", ") ||
        !strstr(got, "}: cel expression must evaluate to a bool\n") ||
        !strstr(got, "}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n"))
        fail_msg("got:\n%s", got);
    free(got);
    got = check(SPEC_SCHEMA("{`rule`:`true`,`messageExpression`:`self.a`}", ""));
    assert_non_null(strstr(got, ".x-kubernetes-validations[0].messageExpression: Invalid value: "
                                "apiextensions.ValidationRule{Rule:\"true\", "));
    assert_non_null(strstr(got, "}: messageExpression must evaluate to a string\n"));
    free(got);
    /* the root has apiVersion, kind and metadata.name whatever its schema says */
    expect_text(check(SPEC_SCHEMA("", "{`rule`:`self.metadata.name.startsWith(self.kind)`}")), "");
}

static void test_definition_message_expression_field_path_and_old_self(void **state)
{
    (void)state;
    char *got = check("{`type`:`object`,`x-kubernetes-validations`:[{`rule`:`true`,"
                      "`messageExpression`:`'a' +`}]}");
    assert_non_null(strstr(got, ROOT ".x-kubernetes-validations[0].messageExpression: Invalid "
                                     "value: apiextensions.ValidationRule{Rule:\"true\", "));
    assert_non_null(strstr(got, "}: messageExpression compilation failed: ERROR: <input>:1:"));
    free(got);
    expect_text(check(SPEC_SCHEMA("{`rule`:`true`,`fieldPath`:`.nope`},"
                                  "{`rule`:`true`,`fieldPath`:`a`}",
                                  "")),
                ROOT ".properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: "
                     "\".nope\": fieldPath must be a valid path: does not refer to a valid "
                     "field\n" ROOT
                     ".properties[spec].x-kubernetes-validations[1].fieldPath: Invalid value: "
                     "\"a\": fieldPath must be a valid path: expected [ or . but got: a\n");
    expect_text(check("{`type`:`object`,`properties`:{`l`:{`type`:`array`,`items`:{`type`:"
                      "`string`,`x-kubernetes-validations`:[{`rule`:`self == oldSelf`}]}}}}"),
                ROOT ".properties[l].items.x-kubernetes-validations[0].rule: Invalid value: "
                     "\"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion "
                     "of the schema within " ROOT ".properties[l]\n");
    /* the schema's own errors at the rule's node come first: no compilation */
    got = check("{`type`:`object`,`x-kubernetes-validations`:[{`rule`:`self.a >`,`reason`:`No`}]}");
    assert_non_null(strstr(got, ".reason: Unsupported value: \"No\""));
    assert_null(strstr(got, "compilation failed"));
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_rules_no_validator),
        cmocka_unit_test(test_a_stored_rule_that_does_not_compile_fails_every_write),
        cmocka_unit_test(test_root_rule_sees_the_object),
        cmocka_unit_test(test_values_are_typed_by_the_schema),
        cmocka_unit_test(test_nested_object_list_and_map_rules),
        cmocka_unit_test(test_transition_rule_only_on_update_with_old_value),
        cmocka_unit_test(test_transition_rule_on_list_map_elements_by_key),
        cmocka_unit_test(test_optional_old_self),
        cmocka_unit_test(test_message_expression_and_its_fallbacks),
        cmocka_unit_test(test_reason_gives_the_error_type),
        cmocka_unit_test(test_field_path_places_the_error),
        cmocka_unit_test(test_evaluation_errors),
        cmocka_unit_test(test_cost_limits),
        cmocka_unit_test(test_blocking_schema_errors_skip_the_rules),
        cmocka_unit_test(test_unchanged_invalid_values_ratchet),
        cmocka_unit_test(test_definition_rules_are_compiled),
        cmocka_unit_test(test_definition_message_expression_field_path_and_old_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
