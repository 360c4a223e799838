/*
 * test_structural.c - tests for ck_crd_schema_check (lib/api/structural.c):
 * a CRD's openAPIV3Schema checked as apiextensions checks it, with
 * Kubernetes' messages and paths; a good schema passes; garbage never
 * crashes it.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

#define ROOT "spec.versions[0].schema.openAPIV3Schema"

/* ' stands for " in the schemas below. */
static char *check(const char *schema_q)
{
    char *text = swap_quotes(schema_q);
    json_error_t jerr;
    json_t *schema = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!schema)
        fail_msg("bad test schema %s: %s", text, jerr.text);
    free(text);
    struct ck_field_errors errs = {0};
    ck_crd_schema_check(schema, ROOT, &errs);
    json_decref(schema);
    assert_false(errs.nomem);
    size_t cap = 1;
    char **lines = calloc(errs.len + 1, sizeof(*lines));
    for (size_t i = 0; i < errs.len; i++) {
        lines[i] = ck_field_error_string(&errs.items[i]);
        cap += strlen(lines[i]) + 1;
    }
    char *out = calloc(1, cap);
    for (size_t i = 0; i < errs.len; i++) {
        strcat(out, lines[i]);
        strcat(out, "\n");
        free(lines[i]);
    }
    free(lines);
    ck_field_errors_release(&errs);
    return out;
}

static void expect(const char *schema_q, const char *want)
{
    char *got = check(schema_q);
    if (!strstr(got, want))
        fail_msg("errors of %s:\n%s\nlack: %s", schema_q, got, want);
    free(got);
}

static void test_a_structural_crontab_schema_passes(void **state)
{
    (void)state;
    char *got = check(
        "{'type':'object','properties':{'metadata':{'type':'object'},"
        "'spec':{'type':'object','properties':{'cronSpec':{'type':'string','pattern':'^a+$'},"
        "'replicas':{'type':'integer','default':1,'minimum':1},"
        "'size':{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer'},{'type':'string'}]},"
        "'labels':{'type':'object','additionalProperties':{'type':'string'}},"
        "'free':{'type':'object','x-kubernetes-preserve-unknown-fields':true},"
        "'ports':{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':["
        "'name'],'items':{'type':'object','required':['name'],'properties':{'name':{'type':"
        "'string'}}}}}}}}");
    assert_string_equal(got, "");
    free(got);
}

static void test_types_are_required_where_specified(void **state)
{
    (void)state;
    expect("{'properties':{'a':{}}}", ROOT ".type: Required value: must not be empty at the root");
    expect("{'type':'object','properties':{'a':{}}}",
           ROOT ".properties[a].type: Required value: must not be empty for specified object "
                "fields");
    expect("{'type':'object','properties':{'a':{'type':'array'}}}",
           ROOT ".properties[a].items: Required value: must be specified");
    expect("{'type':'string'}",
           ROOT ".type: Invalid value: \"string\": must be object at the root");
    expect("{'type':'object','properties':{'a':{'type':'foo'}}}",
           ROOT ".properties[a].type: Unsupported value: \"foo\": supported values: \"array\", "
                "\"boolean\", \"integer\", \"number\", \"object\", \"string\"");
}

static void test_forbidden_keywords(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'$ref':'#/x'}}}",
           ROOT ".properties[a].$ref: Forbidden: $ref is not supported");
    expect("{'type':'object','definitions':{'x':{}}}",
           ROOT ".definitions: Forbidden: definitions is not supported");
    expect("{'type':'object','dependencies':{'x':['y']}}",
           ROOT ".dependencies: Forbidden: dependencies is not supported");
    expect("{'type':'object','properties':{'a':{'type':'array','items':{'type':'string'},"
           "'additionalItems':false}}}",
           ROOT ".properties[a].additionalItems: Forbidden: additionalItems is not supported");
    expect("{'type':'object','patternProperties':{'^a':{}}}",
           ROOT ".patternProperties: Forbidden: patternProperties is not supported");
    expect("{'type':'object','properties':{'a':{'type':'array','items':{'type':'string'},"
           "'uniqueItems':true}}}",
           ROOT ".properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since "
                "the runtime complexity becomes quadratic");
    expect("{'type':'object','nullable':true}",
           ROOT ".nullable: Forbidden: nullable cannot be true at the root");
}

static void test_additional_properties_rules(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'type':'object','properties':{'b':{'type':"
           "'string'}},'additionalProperties':{'type':'string'}}}}",
           ROOT ".properties[a].additionalProperties: Forbidden: additionalProperties and "
                "properties are mutual exclusive");
    expect("{'type':'object','additionalProperties':{'type':'string'}}",
           ROOT ".additionalProperties: Forbidden: must not be used at the root");
}

static void test_value_validations_stay_unstructured(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'type':'string','anyOf':[{'type':'string'}]}}}",
           ROOT ".properties[a].anyOf[0].type: Forbidden: must be empty to be structural");
    expect("{'type':'object','properties':{'a':{'type':'string','allOf':[{'description':'x'}]}}}",
           ROOT ".properties[a].allOf[0].description: Forbidden: must be empty to be structural");
}

static void test_value_validations_name_only_specified_fields(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'type':'string'}},'anyOf':[{'properties':{'b':"
           "{}}},{'required':['a']}]}",
           ROOT ".properties[b]: Required value: because it is defined in " ROOT
                ".anyOf[0].properties[b]");
    char *got = check("{'type':'object','properties':{'a':{'type':'string'}},'oneOf':[{'required':"
                      "['a']},{'properties':{'a':{'pattern':'^x'}}}]}");
    assert_string_equal(got, "");
    free(got);
}

static void test_patterns_go_refuses_are_refused(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'type':'string','pattern':'a(b'}}}",
           ROOT ".properties[a].pattern: Invalid value: \"a(b\": must be a valid regular "
                "expression, but isn't: error parsing regexp: missing closing ): `a(b`");
    expect("{'type':'object','properties':{'a':{'type':'string','pattern':'+'}}}",
           ROOT ".properties[a].pattern: Invalid value: \"+\": must be a valid regular "
                "expression, but isn't: error parsing regexp: missing argument to repetition "
                "operator: `+`");
    /* prometheus-operator's: a dash after a range is a literal dash in Go */
    char *prom = check("{'type':'object','properties':{'a':{'type':'string','pattern':"
                       "'^[0-9a-zA-Z-.]+$'}}}");
    assert_string_equal(prom, "");
    free(prom);
    /* valid in Go: lazy quantifiers, \b */
    char *got = check("{'type':'object','properties':{'a':{'type':'string','pattern':"
                      "'^\\\\bx+?$'}}}");
    assert_string_equal(got, "");
    free(got);
}

static void test_cel_rules_fields_are_checked(void **state)
{
    (void)state;
    expect("{'type':'object','x-kubernetes-validations':[{'rule':' '}]}",
           ROOT ".x-kubernetes-validations[0].rule: Required value: rule is not specified");
    expect("{'type':'object','x-kubernetes-validations':[{'rule':'self.a\\n> 1'}]}",
           ROOT ".x-kubernetes-validations[0].message: Required value: message must be specified "
                "if rule contains line breaks");
    expect("{'type':'object','x-kubernetes-validations':[{'rule':'true','reason':'Nope'}]}",
           ROOT ".x-kubernetes-validations[0].reason: Unsupported value: \"Nope\": supported "
                "values: \"FieldValueDuplicate\", \"FieldValueForbidden\", "
                "\"FieldValueInvalid\", \"FieldValueRequired\"");
    char *got = check("{'type':'object','properties':{'a':{'type':'integer'}},"
                      "'x-kubernetes-validations':[{'rule':'self.a > 1',"
                      "'message':'a must be more than 1','reason':'FieldValueInvalid'}]}");
    assert_string_equal(got, "");
    free(got);
}

static void test_metadata_only_name_and_generate_name(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'metadata':{'type':'object','properties':{'labels':"
           "{'type':'object'}}}}}",
           ROOT ".properties[metadata]: Forbidden: must not specify anything other than name and "
                "generateName, but metadata is implicitly specified");
    char *got = check("{'type':'object','properties':{'metadata':{'type':'object','properties':"
                      "{'name':{'type':'string','maxLength':10}}}}}");
    assert_string_equal(got, "");
    free(got);
    expect("{'type':'object','properties':{'metadata':{'type':'object','default':{}}}}",
           ROOT ".properties[metadata].default: Forbidden: must not be set in top-level metadata");
}

static void test_extensions_consistency(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'type':'string','x-kubernetes-list-type':'set'}}}",
           ROOT ".properties[a].type: Invalid value: \"string\": must be array if "
                "x-kubernetes-list-type is specified");
    expect("{'type':'object','properties':{'a':{'type':'array','items':{'type':'string'},"
           "'x-kubernetes-list-type':'map'}}}",
           ROOT ".properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if "
                "x-kubernetes-list-type is map");
    expect("{'type':'object','properties':{'a':{'type':'array','items':{'type':'object',"
           "'properties':{'n':{'type':'string'}}},'x-kubernetes-list-type':'map',"
           "'x-kubernetes-list-map-keys':['n']}}}",
           ROOT ".properties[a].items.properties[n].default: Required value: this property is in "
                "x-kubernetes-list-map-keys, so it must have a default or be a required property");
    expect("{'type':'object','properties':{'a':{'type':'object','x-kubernetes-map-type':'x'}}}",
           ROOT ".properties[a].x-kubernetes-map-type: Unsupported value: \"x\": supported "
                "values: \"atomic\", \"granular\"");
    expect("{'type':'object','properties':{'a':{'type':'object',"
           "'x-kubernetes-preserve-unknown-fields':false}}}",
           ROOT ".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must "
                "be true or undefined");
    expect("{'type':'object','properties':{'a':{'x-kubernetes-embedded-resource':true}}}",
           ROOT ".properties[a].type: Required value: must be object if "
                "x-kubernetes-embedded-resource is true");
}

static void test_defaults_must_validate_and_be_pruned(void **state)
{
    (void)state;
    expect("{'type':'object','properties':{'a':{'type':'integer','default':'x'}}}",
           ROOT ".properties[a].default: Invalid value: \"string\":  in body must be of type "
                "integer: \"string\"");
    expect("{'type':'object','properties':{'a':{'type':'object','properties':{'b':{'type':"
           "'string'}},'default':{'c':1}}}}",
           ROOT ".properties[a].default: Invalid value: {\"c\":1}: must not have unknown fields");
}

static void test_any_json_never_crashes(void **state)
{
    (void)state;
    static const char *const odd[] = {
        "null",
        "[]",
        "1",
        "{'type':1}",
        "{'properties':[]}",
        "{'items':[{}]}",
        "{'type':'object','properties':{'a':{'x-kubernetes-list-map-keys':[1,null]}}}",
        "{'allOf':[1,{'anyOf':'x'}],'not':[],'default':null}",
    };
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
        free(check(odd[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_structural_crontab_schema_passes),
        cmocka_unit_test(test_types_are_required_where_specified),
        cmocka_unit_test(test_forbidden_keywords),
        cmocka_unit_test(test_additional_properties_rules),
        cmocka_unit_test(test_value_validations_stay_unstructured),
        cmocka_unit_test(test_value_validations_name_only_specified_fields),
        cmocka_unit_test(test_patterns_go_refuses_are_refused),
        cmocka_unit_test(test_cel_rules_fields_are_checked),
        cmocka_unit_test(test_metadata_only_name_and_generate_name),
        cmocka_unit_test(test_extensions_consistency),
        cmocka_unit_test(test_defaults_must_validate_and_be_pruned),
        cmocka_unit_test(test_any_json_never_crashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
