/*
 * test_schema_cr.c - tests for the custom-resource side of lib/api/schema.c:
 * a CronTab kind built as a CRD's schema becomes one (inline schema marked
 * x-ckube-custom-resource, metadata a $ref to ObjectMeta). Decoding prunes
 * and never refuses a wrong type; validation reports what apiextensions
 * reports, in its words; nulls, defaults, preserved and embedded fields,
 * list types, formats and patterns.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

/* Schemas are written with ' for " to stay readable; q() swaps them back. */
static char *q(const char *text)
{
    return swap_quotes(text);
}

static const char crontab_schemas[] =
    "{'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta':{'type':'object','properties':{"
    "   'name':{'type':'string'},'generation':{'type':'integer','format':'int64'}}},"
    " 'test.CronTab':{'type':'object','x-ckube-custom-resource':true,'properties':{"
    "  'apiVersion':{'type':'string'},'kind':{'type':'string'},"
    "  'metadata':{'$ref':'#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'},"
    "  'spec':{'type':'object','required':['cronSpec'],'properties':{"
    "    'cronSpec':{'type':'string','pattern':'^(\\\\d+|\\\\*)(/\\\\d+)?(\\\\s+(\\\\d+|\\\\*)(/\\\\d+)?){4}$'},"
    "    'image':{'type':'string','minLength':1,'maxLength':8},"
    "    'replicas':{'type':'integer','minimum':1,'maximum':10,'default':1},"
    "    'ratio':{'type':'number','exclusiveMinimum':true,'minimum':0,'multipleOf':0.5},"
    "    'mode':{'type':'string','enum':['Fast','Slow'],'default':'Fast'},"
    "    'note':{'type':'string','nullable':true},"
    "    'owner':{'type':'string','format':'email'},"
    "    'size':{'x-kubernetes-int-or-string':true},"
    "    'tags':{'type':'array','items':{'type':'string'},'maxItems':3,'minItems':1,"
    "            'x-kubernetes-list-type':'set'},"
    "    'ports':{'type':'array','x-kubernetes-list-type':'map',"
    "             'x-kubernetes-list-map-keys':['name'],'items':{'type':'object',"
    "             'required':['name'],'properties':{'name':{'type':'string'},"
    "             'port':{'type':'integer','default':80}}}},"
    "    'labels':{'type':'object','additionalProperties':{'type':'string'},'maxProperties':2},"
    "    'levels':{'type':'object','additionalProperties':{'type':'integer','default':3}},"
    "    'steps':{'type':'array','items':{'type':'integer','default':9}},"
    "    'level':{'type':'integer','enum':[1,2]},"
    "    'bigset':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'integer'}},"
    "    'uniq':{'type':'array','uniqueItems':true,'items':{'type':'object',"
    "            'x-kubernetes-preserve-unknown-fields':true}},"
    "    'groups':{'type':'object','additionalProperties':{'type':'array',"
    "              'x-kubernetes-list-type':'set','items':{'type':'string'}}},"
    "    'pairs':{'type':'array','x-kubernetes-list-type':'set','items':{'type':'object',"
    "             'x-kubernetes-map-type':'atomic','x-kubernetes-preserve-unknown-fields':true}},"
    "    'routes':{'type':'array','x-kubernetes-list-type':'map',"
    "              'x-kubernetes-list-map-keys':['port','host'],'items':{'type':'object',"
    "              'properties':{'host':{'type':'string'},'port':{'type':'integer'}}}},"
    "    'extra':{'type':'object','x-kubernetes-preserve-unknown-fields':true,"
    "             'properties':{'known':{'type':'object','properties':{'a':{'type':'integer',"
    "             'default':7}}}}},"
    "    'template':{'type':'object','x-kubernetes-embedded-resource':true,"
    "                'properties':{'spec':{'type':'object','properties':{'x':{'type':'string'}}}}},"
    "    'choice':{'type':'string','anyOf':[{'pattern':'^a'},{'pattern':'^b'}]}"
    "  }}}}}";

static struct ck_schemas *set;

static int load_schemas(void **state)
{
    (void)state;
    char *doc = q(crontab_schemas);
    const char *docs[] = {doc};
    struct ck_err err = {0};
    int r = ck_schemas_new(docs, 1, &set, &err);
    free(doc);
    if (r != 0) {
        fprintf(stderr, "load_schemas: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int unload(void **state)
{
    (void)state;
    set = ck_schemas_free(set);
    return 0;
}

static json_t *decode(const char *body_q, enum ck_field_validation fv, struct ck_warnings *w,
                      struct ck_err *err)
{
    char *body = q(body_q);
    json_t *obj = NULL;
    int r = ck_schema_decode(set, "test.CronTab", body, strlen(body), fv, &obj, w, err);
    free(body);
    return r == 0 ? obj : NULL;
}

static json_t *decode_ok(const char *body_q)
{
    struct ck_err err = {0};
    json_t *obj = decode(body_q, CK_FIELD_VALIDATION_STRICT, NULL, &err);
    if (!obj)
        fail_msg("decode %s: %s", body_q, err.msg);
    return obj;
}

/* Every error of a decoded, defaulted, validated body, one a line. */
static char *errors_of(const char *body_q)
{
    struct ck_err err = {0};
    json_t *obj = decode(body_q, CK_FIELD_VALIDATION_IGNORE, NULL, &err);
    if (!obj)
        fail_msg("decode %s: %s", body_q, err.msg);
    assert_int_equal(ck_schema_default(set, "test.CronTab", obj), 0);
    struct ck_field_errors errs = {0};
    ck_schema_validate(set, "test.CronTab", obj, &errs);
    assert_false(errs.nomem);
    size_t cap = 1;
    for (size_t i = 0; i < errs.len; i++) {
        char *line = ck_field_error_string(&errs.items[i]);
        cap += strlen(line) + 1;
        free(line);
    }
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (size_t i = 0; i < errs.len; i++) {
        char *line = ck_field_error_string(&errs.items[i]);
        strcat(out, line);
        strcat(out, "\n");
        free(line);
    }
    ck_field_errors_release(&errs);
    json_decref(obj);
    return out;
}

static void expect_error(const char *body_q, const char *want_q)
{
    char *got = errors_of(body_q);
    char *want = q(want_q);
    if (!strstr(got, want))
        fail_msg("errors of %s:\n%s\nlack: %s", body_q, got, want);
    free(want);
    free(got);
}

static void expect_valid(const char *body_q)
{
    char *got = errors_of(body_q);
    if (*got)
        fail_msg("errors of %s:\n%s", body_q, got);
    free(got);
}

#define SPEC(fields) "{'spec':{'cronSpec':'* * * * */5'" fields "}}"

static void test_a_valid_crontab_has_no_errors(void **state)
{
    (void)state;
    expect_valid(SPEC(",'image':'nginx','tags':['a','b'],'ports':[{'name':'a'},{'name':'b'}],"
                      "'size':'10%','ratio':1.5,'owner':'a@example.com','choice':'bee'"));
}

static void test_wrong_type_is_a_422_in_kube_openapi_words(void **state)
{
    (void)state;
    /* decoding keeps it (no 400) ... */
    json_t *obj = decode_ok("{'spec':{'cronSpec':5}}");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(obj, "spec"), "cronSpec")),
                     5);
    json_decref(obj);
    /* ... validation names it */
    expect_error("{'spec':{'cronSpec':5}}",
                 "spec.cronSpec: Invalid value: 'integer': spec.cronSpec in body must be of type "
                 "string: 'integer'");
    expect_error(SPEC(",'size':true"),
                 "spec.size: Invalid value: 'boolean': spec.size in body must be of type "
                 "integer,string: 'boolean'");
    expect_error(SPEC(",'tags':[1]"), "spec.tags[0]: Invalid value: 'integer': spec.tags[0] in "
                                      "body must be of type string: 'integer'");
    char *errs = errors_of("{'spec':{'cronSpec':5}}");
    struct ck_field_errors list = {0};
    json_t *o = decode_ok("{'spec':{'cronSpec':5}}");
    ck_schema_validate(set, "test.CronTab", o, &list);
    assert_int_equal(list.len, 1);
    assert_string_equal(ck_field_error_reason(list.items[0].type), "FieldValueTypeInvalid");
    ck_field_errors_release(&list);
    json_decref(o);
    free(errs);
}

static void test_metadata_still_decodes_as_go(void **state)
{
    (void)state;
    struct ck_err err = {0};
    json_t *obj = decode("{'metadata':{'generation':'x'},'spec':{'cronSpec':'1 1 1 1 1'}}",
                         CK_FIELD_VALIDATION_STRICT, NULL, &err);
    assert_null(obj);
    assert_non_null(strstr(err.msg, "cannot unmarshal string"));
}

static void test_required_pattern_lengths_bounds(void **state)
{
    (void)state;
    expect_error("{'spec':{}}", "spec.cronSpec: Required value");
    /* the pattern is quoted with ' in the message: compare without the quote swap */
    char *got = errors_of("{'spec':{'cronSpec':'every minute'}}");
    assert_string_equal(got,
                        "spec.cronSpec: Invalid value: \"every minute\": spec.cronSpec in body "
                        "should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'\n");
    free(got);
    expect_error(SPEC(",'image':''"), "spec.image: Invalid value: '': spec.image in body should "
                                      "be at least 1 chars long");
    expect_error(SPEC(",'image':'123456789'"),
                 "spec.image: Too long: may not be more than 8 bytes");
    /* lengths count runes, not bytes: eight two-byte letters fit */
    expect_valid(
        SPEC(",'image':'\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9'"));
    expect_error(SPEC(",'replicas':0"), "spec.replicas: Invalid value: 0: spec.replicas in body "
                                        "should be greater than or equal to 1");
    expect_error(SPEC(",'replicas':11"), "spec.replicas: Invalid value: 11: spec.replicas in body "
                                         "should be less than or equal to 10");
    expect_error(SPEC(",'ratio':0"),
                 "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0");
    expect_error(SPEC(",'ratio':0.7"),
                 "spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5");
    expect_error(SPEC(",'mode':'Medium'"),
                 "spec.mode: Unsupported value: 'Medium': supported values: 'Fast', 'Slow'");
    /* every supported value quoted, numbers too */
    expect_error(SPEC(",'level':3"),
                 "spec.level: Unsupported value: 3: supported values: '1', '2'");
}

static void test_items_and_properties_counts(void **state)
{
    (void)state;
    expect_error(SPEC(",'tags':[]"),
                 "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items");
    expect_error(SPEC(",'tags':['a','b','c','d']"),
                 "spec.tags: Too many: 4: must have at most 3 items");
    expect_error(SPEC(",'labels':{'a':'1','b':'2','c':'3'}"),
                 "spec.labels: Too many: 3: must have at most 2 items");
    expect_error(SPEC(",'uniq':[{'a':1,'b':2},{'b':2,'a':1}]"),
                 "spec.uniq: Invalid value: '': spec.uniq in body shouldn");
    expect_valid(SPEC(",'uniq':[{'a':1},{'a':1.5}]"));
    expect_error(SPEC(",'labels':{'a':1}"), "spec.labels.a: Invalid value: 'integer': "
                                            "spec.labels.a in body must be of type string");
}

static void test_list_types_report_duplicates(void **state)
{
    (void)state;
    expect_error(SPEC(",'tags':['a','b','a']"), "spec.tags[2]: Duplicate value: 'a'");
    expect_error(SPEC(",'ports':[{'name':'a'},{'name':'a','port':81}]"),
                 "spec.ports[1]: Duplicate value: map[string]interface {}{'name':'a'}");
    expect_error(SPEC(",'ports':['x']"),
                 "spec.ports[0]: Invalid value: 'x': must be an object for an array of list-type "
                 "map");
}

static void test_list_type_duplicates_in_go_words(void **state)
{
    (void)state;
    /* map entries are named [key] by these checks, as field.Path's Key() names them */
    expect_error(SPEC(",'groups':{'g':['a','b','a']}"), "spec.groups[g][2]: Duplicate value: 'a'");
    expect_error(SPEC(",'pairs':[{'b':1,'a':'x'},{'a':'x','b':1}]"),
                 "spec.pairs[1]: Duplicate value: map[string]interface {}{'a':'x', 'b':1}");
    /* several keys: the object of them, keys sorted; a missing key is no value */
    expect_error(SPEC(",'routes':[{'host':'h','port':80},{'port':80,'host':'h'},{'port':81},"
                      "{'port':81}]"),
                 "spec.routes[1]: Duplicate value: map[string]interface {}{'host':'h', 'port':80}\n"
                 "spec.routes[3]: Duplicate value: map[string]interface {}{'port':81}\n");
    /* only the second appearance is reported */
    char *got = errors_of(SPEC(",'tags':['a','a','a']"));
    assert_non_null(strstr(got, "spec.tags[1]: Duplicate value: \"a\""));
    assert_null(strstr(got, "spec.tags[2]"));
    free(got);
}

static void test_long_sets_are_checked(void **state)
{
    (void)state;
    /* 20,000 distinct elements and a repeat of 7 at the end (quadratic checks would time out) */
    size_t n = 20000, cap = n * 8 + 128, len;
    char *body = malloc(cap);
    assert_non_null(body);
    len = (size_t)snprintf(body, cap, "{'spec':{'cronSpec':'1 1 1 1 1','bigset':[");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(body + len, cap - len, "%zu,", i);
    snprintf(body + len, cap - len, "7]}}");
    char *got = errors_of(body);
    free(body);
    assert_string_equal(got, "spec.bigset[20000]: Duplicate value: 7\n");
    free(got);
}

/* The errors of an update from old_q to body_q, one a line. */
static char *update_errors_of(const char *body_q, const char *old_q)
{
    struct ck_err err = {0};
    json_t *obj = decode(body_q, CK_FIELD_VALIDATION_IGNORE, NULL, &err);
    char *old_text = q(old_q);
    json_t *old = json_loads(old_text, 0, NULL);
    free(old_text);
    assert_non_null(obj);
    assert_non_null(old);
    struct ck_field_errors errs = {0};
    ck_schema_validate_update(set, "test.CronTab", obj, old, &errs);
    char text[2048] = "";
    for (size_t i = 0; i < errs.len; i++) {
        char *line = ck_field_error_string(&errs.items[i]);
        strncat(text, line, sizeof(text) - strlen(text) - 2);
        strcat(text, "\n");
        free(line);
    }
    ck_field_errors_release(&errs);
    json_decref(obj);
    json_decref(old);
    return strdup(text);
}

static void test_unchanged_invalid_values_ratchet_on_update(void **state)
{
    (void)state;
    /* the stored object breaks a rule (a schema made stricter since): an update that leaves the
     * value alone passes; one that changes it to another bad value does not */
    const char *old = SPEC(",'image':'far-too-long-image','ports':[{'name':'a','port':'x'}]");
    char *got = update_errors_of(
        SPEC(",'image':'far-too-long-image','replicas':2,'ports':[{'name':'a','port':'x'}]"), old);
    assert_string_equal(got, "");
    free(got);
    got = update_errors_of(SPEC(",'image':'another-long-image','ports':[{'name':'a','port':'x'}]"),
                           old);
    assert_string_equal(got, "spec.image: Too long: may not be more than 8 bytes\n");
    free(got);
    /* list-map elements correlate by their keys, wherever they moved */
    got = update_errors_of(
        SPEC(",'image':'x','ports':[{'name':'b','port':1},{'name':'a','port':'x'}]"), old);
    assert_string_equal(got, "");
    free(got);
    /* without an old object (a create) everything is checked */
    got = errors_of(old);
    assert_non_null(strstr(got, "spec.image: Too long"));
    assert_non_null(strstr(got, "spec.ports[0].port: Invalid value: \"string\""));
    free(got);
}

static void test_formats(void **state)
{
    (void)state;
    expect_error(SPEC(",'owner':'not-an-address'"),
                 "spec.owner: Invalid value: 'not-an-address': spec.owner in body must be of type "
                 "email: 'not-an-address'");
}

static void test_any_of_names_the_path(void **state)
{
    (void)state;
    expect_error(SPEC(",'choice':'cat'"),
                 "<nil>: Invalid value: '': 'spec.choice' must validate at least one schema "
                 "(anyOf)");
}

static void test_nulls_defaults_and_nullable(void **state)
{
    (void)state;
    json_t *obj = decode_ok(SPEC(",'note':null,'image':null,'mode':null"));
    json_t *spec = json_object_get(obj, "spec");
    assert_true(json_is_null(json_object_get(spec, "note"))); /* nullable: kept */
    assert_null(json_object_get(spec, "image"));              /* no default: dropped */
    assert_int_equal(ck_schema_default(set, "test.CronTab", obj), 0);
    assert_string_equal(json_string_value(json_object_get(spec, "mode")), "Fast"); /* default */
    assert_int_equal(json_integer_value(json_object_get(spec, "replicas")), 1);
    json_decref(obj);
    /* a null array element is kept and refused */
    expect_error(SPEC(",'tags':[null]"), "spec.tags[0]: Invalid value: 'null': spec.tags[0] in "
                                         "body must be of type string: 'null'");
}

static void test_list_map_items_get_defaults(void **state)
{
    (void)state;
    json_t *obj = decode_ok(SPEC(",'ports':[{'name':'a'}]"));
    assert_int_equal(ck_schema_default(set, "test.CronTab", obj), 0);
    json_t *port = json_array_get(json_object_get(json_object_get(obj, "spec"), "ports"), 0);
    assert_int_equal(json_integer_value(json_object_get(port, "port")), 80);
    json_decref(obj);
}

static void test_pruning_preserve_and_embedded(void **state)
{
    (void)state;
    struct ck_warnings w = {0};
    struct ck_err err = {0};
    json_t *obj = decode(SPEC(",'unknown':1,'extra':{'free':{'x':1},'known':{'b':2}},"
                              "'template':{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},"
                              "'spec':{'x':'y','z':1},'other':2}"),
                         CK_FIELD_VALIDATION_WARN, &w, &err);
    assert_non_null(obj);
    json_t *spec = json_object_get(obj, "spec");
    assert_null(json_object_get(spec, "unknown"));
    json_t *extra = json_object_get(spec, "extra");
    assert_non_null(json_object_get(extra, "free")); /* preserved */
    /* specified fields below preserve-unknown-fields are still pruned and defaulted */
    assert_null(json_object_get(json_object_get(extra, "known"), "b"));
    json_t *tmpl = json_object_get(spec, "template");
    assert_string_equal(json_string_value(json_object_get(tmpl, "kind")), "Pod");
    assert_non_null(json_object_get(tmpl, "metadata"));
    assert_null(json_object_get(tmpl, "other"));
    assert_null(json_object_get(json_object_get(tmpl, "spec"), "z"));
    bool warned = false;
    for (size_t i = 0; i < w.len; i++)
        warned = warned || strcmp(w.items[i], "unknown field \"spec.unknown\"") == 0;
    assert_true(warned);
    assert_int_equal(ck_schema_default(set, "test.CronTab", obj), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(extra, "known"), "a")), 7);
    ck_warnings_release(&w);
    json_decref(obj);
    expect_error(SPEC(",'template':{'kind':'Pod'}"),
                 "spec.template.apiVersion: Required value: must not be empty");
}

static void test_strict_unknown_fields_are_a_decoding_error(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_null(decode(SPEC(",'foo':1"), CK_FIELD_VALIDATION_STRICT, NULL, &err));
    assert_string_equal(err.msg, "strict decoding error: unknown field \"spec.foo\"");
    /* sorted, as apiextensions sorts the pruned paths */
    assert_null(decode(SPEC(",'zz':1,'labels':{'a':'b'},'ports':[{'name':'a','x':1}],'aa':{}"),
                       CK_FIELD_VALIDATION_STRICT, NULL, &err));
    assert_string_equal(err.msg, "strict decoding error: unknown field \"spec.aa\", unknown field "
                                 "\"spec.ports[0].x\", unknown field \"spec.zz\"");
}

static void test_pruning_follows_the_structure_not_the_value(void **state)
{
    (void)state;
    struct ck_warnings w = {0};
    struct ck_err err = {0};
    /* an object where a string belongs loses its fields, and validation names the type */
    json_t *obj = decode("{'spec':{'cronSpec':{'a':1}}}", CK_FIELD_VALIDATION_WARN, &w, &err);
    assert_non_null(obj);
    assert_int_equal(json_object_size(json_object_get(json_object_get(obj, "spec"), "cronSpec")),
                     0);
    assert_int_equal(w.len, 1);
    assert_string_equal(w.items[0], "unknown field \"spec.cronSpec.a\"");
    ck_warnings_release(&w);
    json_decref(obj);
    expect_error("{'spec':{'cronSpec':{'a':1}}}", "spec.cronSpec: Invalid value: 'object': "
                                                  "spec.cronSpec in body must be of type string");
}

static void test_null_map_values_and_elements_take_defaults(void **state)
{
    (void)state;
    json_t *obj = decode_ok(SPEC(",'levels':{'a':null,'b':1},'steps':[null,2]"));
    assert_int_equal(ck_schema_default(set, "test.CronTab", obj), 0);
    json_t *spec = json_object_get(obj, "spec");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(spec, "levels"), "a")), 3);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(spec, "steps"), 0)), 9);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(spec, "steps"), 1)), 2);
    json_decref(obj);
}

static void test_embedded_kind_and_api_version_are_checked(void **state)
{
    (void)state;
    expect_error(SPEC(",'template':{'apiVersion':'a/b/c','kind':'Pod'}"),
                 "spec.template.apiVersion: Invalid value: 'a/b/c': unexpected GroupVersion "
                 "string: a/b/c");
    expect_error(SPEC(",'template':{'apiVersion':'v1','kind':'Pod_1'}"),
                 "spec.template.kind: Invalid value: 'Pod_1': may have mixed case, but should "
                 "otherwise match: a DNS-1035 label must consist of lower case alphanumeric");
}

static void test_list_type_errors_come_after_schema_errors(void **state)
{
    (void)state;
    char *got = errors_of(SPEC(",'tags':['a','a'],'image':''"));
    char *dup = strstr(got, "spec.tags[1]: Duplicate value");
    char *len = strstr(got, "spec.image: Invalid value");
    assert_non_null(dup);
    assert_non_null(len);
    assert_true(len < dup);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_valid_crontab_has_no_errors),
        cmocka_unit_test(test_wrong_type_is_a_422_in_kube_openapi_words),
        cmocka_unit_test(test_metadata_still_decodes_as_go),
        cmocka_unit_test(test_required_pattern_lengths_bounds),
        cmocka_unit_test(test_items_and_properties_counts),
        cmocka_unit_test(test_list_types_report_duplicates),
        cmocka_unit_test(test_list_type_duplicates_in_go_words),
        cmocka_unit_test(test_long_sets_are_checked),
        cmocka_unit_test(test_unchanged_invalid_values_ratchet_on_update),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_any_of_names_the_path),
        cmocka_unit_test(test_nulls_defaults_and_nullable),
        cmocka_unit_test(test_list_map_items_get_defaults),
        cmocka_unit_test(test_pruning_preserve_and_embedded),
        cmocka_unit_test(test_strict_unknown_fields_are_a_decoding_error),
        cmocka_unit_test(test_pruning_follows_the_structure_not_the_value),
        cmocka_unit_test(test_null_map_values_and_elements_take_defaults),
        cmocka_unit_test(test_embedded_kind_and_api_version_are_checked),
        cmocka_unit_test(test_list_type_errors_come_after_schema_errors),
    };
    return cmocka_run_group_tests(tests, load_schemas, unload);
}
