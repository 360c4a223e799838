/*
 * test_gates.c - feature-gated fields driven by the schemas: dropped on
 * create while the gate is off, kept on update where the old object used
 * them, gated enum values refused unless already in use; every case with
 * the gate on and with it off, never relying on a default.
 */
#include "cktest.h"

#include <string.h>

#include "ckube/api.h"

/* A list of items whose `size` is gated, and a `mode` whose "fast" is gated. */
static const char doc[] =
    "{\"T\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},"
    "\"size\":{\"type\":\"integer\",\"minimum\":0,\"x-ckube-feature-gate\":\"Sized\"},"
    "\"mode\":{\"type\":\"string\",\"enum\":[\"slow\",\"fast\"],"
    "\"x-ckube-feature-gated-values\":{\"fast\":\"Fast\"}},"
    "\"items\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Item\"}}}},"
    "\"Item\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"size\":{\"allOf\":[{\"$ref\":\"#/components/schemas/Size\"}],"
    "\"x-ckube-feature-gate\":\"Sized\"}}},"
    "\"Size\":{\"type\":\"integer\"}}";

static bool sized_on, fast_on;

static bool enabled(void *ctx, const char *feature)
{
    (void)ctx;
    if (strcmp(feature, "Sized") == 0)
        return sized_on;
    if (strcmp(feature, "Fast") == 0)
        return fast_on;
    fail_msg("unexpected gate %s", feature);
    return false;
}

static struct ck_schemas *set;

static int setup(void **state)
{
    (void)state;
    const char *docs[] = {doc};
    struct ck_err err = {0};
    return ck_schemas_new(docs, 1, &set, &err);
}

static int teardown(void **state)
{
    (void)state;
    ck_schemas_free(set);
    return 0;
}

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v)
        fail_msg("bad test JSON: %s", jerr.text);
    return v;
}

/* obj after dropping disabled fields against old (NULL: a create). */
static json_t *dropped(const char *obj, const char *old)
{
    json_t *o = load(obj);
    json_t *prev = old ? load(old) : NULL;
    ck_schema_drop_disabled(set, "T", o, prev, enabled, NULL);
    json_decref(prev);
    return o;
}

static void test_create_drops_only_while_off(void **state)
{
    (void)state;
    for (int on = 0; on <= 1; on++) {
        sized_on = on;
        json_t *o =
            dropped("{\"name\":\"a\",\"size\":3,\"items\":[{\"name\":\"i\",\"size\":1}]}", NULL);
        assert_int_equal(json_object_get(o, "size") != NULL, on);
        json_t *item = json_array_get(json_object_get(o, "items"), 0);
        assert_int_equal(json_object_get(item, "size") != NULL, on); /* through allOf too */
        assert_string_equal(json_string_value(json_object_get(o, "name")), "a");
        json_decref(o);
        /* fewer members than properties: walked by its members, one dropped midway */
        o = dropped("{\"size\":3,\"name\":\"b\"}", NULL);
        assert_int_equal(json_object_get(o, "size") != NULL, on);
        assert_string_equal(json_string_value(json_object_get(o, "name")), "b");
        assert_int_equal(json_object_size(o), on ? 2 : 1);
        json_decref(o);
    }
}

static void test_update_keeps_what_old_used(void **state)
{
    (void)state;
    for (int on = 0; on <= 1; on++) {
        sized_on = on;
        /* old used it: kept (a new value too), gate or no gate */
        json_t *o = dropped("{\"size\":5}", "{\"size\":3}");
        assert_int_equal(json_integer_value(json_object_get(o, "size")), 5);
        json_decref(o);
        /* old did not: as on create */
        o = dropped("{\"size\":5}", "{\"name\":\"x\"}");
        assert_int_equal(json_object_get(o, "size") != NULL, on);
        json_decref(o);
        /* lists: any old element using the field keeps it for every element */
        o = dropped("{\"items\":[{\"name\":\"a\"},{\"name\":\"b\",\"size\":2}]}",
                    "{\"items\":[{\"name\":\"z\",\"size\":1}]}");
        assert_non_null(json_object_get(json_array_get(json_object_get(o, "items"), 1), "size"));
        json_decref(o);
        o = dropped("{\"items\":[{\"name\":\"b\",\"size\":2}]}", "{\"items\":[{\"name\":\"z\"}]}");
        assert_int_equal(
            json_object_get(json_array_get(json_object_get(o, "items"), 0), "size") != NULL, on);
        json_decref(o);
    }
}

/* The errors for obj against old (NULL: create), rendered and joined. */
static size_t value_errors(const char *obj, const char *old, char *buf, size_t size)
{
    json_t *o = load(obj);
    json_t *prev = old ? load(old) : NULL;
    struct ck_field_errors errs = {0};
    ck_schema_validate_gated_values(set, "T", o, prev, enabled, NULL, &errs);
    buf[0] = '\0';
    for (size_t i = 0; i < errs.len; i++) {
        char *s = ck_field_error_string(&errs.items[i]);
        snprintf(buf + strlen(buf), size - strlen(buf), "%s;", s);
        free(s);
    }
    size_t n = errs.len;
    ck_field_errors_release(&errs);
    json_decref(prev);
    json_decref(o);
    return n;
}

static void test_gated_enum_values_ratchet(void **state)
{
    (void)state;
    char buf[512];
    for (int on = 0; on <= 1; on++) {
        fast_on = on;
        assert_int_equal(value_errors("{\"mode\":\"fast\"}", NULL, buf, sizeof(buf)), !on);
        if (!on)
            assert_string_equal(buf,
                                "mode: Unsupported value: \"fast\": supported values: \"slow\";");
        assert_int_equal(value_errors("{\"mode\":\"slow\"}", NULL, buf, sizeof(buf)), 0);
        /* already fast: stays acceptable */
        assert_int_equal(
            value_errors("{\"mode\":\"fast\"}", "{\"mode\":\"fast\"}", buf, sizeof(buf)), 0);
        assert_int_equal(
            value_errors("{\"mode\":\"fast\"}", "{\"mode\":\"slow\"}", buf, sizeof(buf)), !on);
    }
}

static void test_defaults_and_the_builtin_example(void **state)
{
    (void)state;
    size_t n = 0;
    const struct ck_api_feature *f = ck_api_features(&n);
    bool frobber2d = false, tuesday = false;
    for (size_t i = 0; i < n; i++) {
        frobber2d |= strcmp(f[i].name, "Frobber2D") == 0 && !f[i].default_on &&
                     strcmp(f[i].stage, "ALPHA") == 0;
        tuesday |= strcmp(f[i].name, "FrobberRestartPolicyOnTuesday") == 0 && !f[i].default_on;
    }
    assert_true(frobber2d);
    assert_true(tuesday);
    /* NULL: the defaults, which are off for these alpha gates */
    struct ck_schemas *builtin = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_api_builtin_schemas(&builtin, &err), 0);
    json_t *o = load("{\"spec\":{\"height\":1,\"width\":2}}");
    ck_schema_drop_disabled(builtin, "io.ckube.example.v1.Frobber", o, NULL, NULL, NULL);
    assert_null(json_object_get(json_object_get(o, "spec"), "width"));
    json_decref(o);
    o = load("{\"spec\":{\"containers\":[],\"resources\":{\"limits\":{\"cpu\":\"1\"}}}}");
    ck_schema_drop_disabled(builtin, "io.k8s.api.core.v1.Pod", o, NULL, NULL, NULL);
    assert_null(json_object_get(json_object_get(o, "spec"), "resources"));
    json_decref(o);
    ck_schemas_free(builtin);
}

/*
 * The walks skip what a reference leads to only when no gate is below it: a gate two
 * references down, one inside a schema that refers to itself, and one reached from a
 * layered set through its parent's schemas are all still found.
 */
static void test_gates_behind_references_and_cycles(void **state)
{
    (void)state;
    const char *nested[] = {
        "{\"Outer\":{\"type\":\"object\",\"properties\":{"
        "\"mid\":{\"description\":\"d\",\"$ref\":\"#/components/schemas/Mid\"},"
        "\"plain\":{\"$ref\":\"#/components/schemas/Plain\"}}},"
        "\"Mid\":{\"type\":\"object\",\"properties\":{"
        "\"self\":{\"$ref\":\"#/components/schemas/Mid\"},"
        "\"item\":{\"$ref\":\"#/components/schemas/Item\"}}},"
        "\"Plain\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\"}}},"
        "\"Item\":{\"type\":\"object\",\"properties\":{"
        "\"size\":{\"type\":\"integer\",\"x-ckube-feature-gate\":\"Sized\"}}}}"};
    const char *layer[] = {"{\"L\":{\"type\":\"object\",\"properties\":{"
                           "\"outer\":{\"$ref\":\"#/components/schemas/Outer\"}}}}"};
    struct ck_schemas *base = NULL, *layered = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_schemas_new(nested, 1, &base, &err), 0);
    assert_int_equal(ck_schemas_new_layered(base, layer, 1, &layered, &err), 0);
    static const char obj[] = "{\"mid\":{\"item\":{\"size\":1},\"self\":{\"item\":{\"size\":2}}},"
                              "\"plain\":{\"size\":3}}";
    for (int on = 0; on <= 1; on++) {
        sized_on = on;
        json_t *o = load(obj);
        ck_schema_drop_disabled(base, "Outer", o, NULL, enabled, NULL);
        json_t *mid = json_object_get(o, "mid");
        assert_int_equal(json_object_get(json_object_get(mid, "item"), "size") != NULL, on);
        json_t *self_item = json_object_get(json_object_get(mid, "self"), "item");
        assert_int_equal(json_object_get(self_item, "size") != NULL, on);
        assert_non_null(json_object_get(json_object_get(o, "plain"), "size")); /* not gated */
        json_decref(o);

        json_t *l = json_pack("{s:o}", "outer", load(obj));
        ck_schema_drop_disabled(layered, "L", l, NULL, enabled, NULL);
        mid = json_object_get(json_object_get(l, "outer"), "mid");
        assert_int_equal(json_object_get(json_object_get(mid, "item"), "size") != NULL, on);
        json_decref(l);
    }
    ck_schemas_free(layered);
    ck_schemas_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_drops_only_while_off),
        cmocka_unit_test(test_update_keeps_what_old_used),
        cmocka_unit_test(test_gated_enum_values_ratchet),
        cmocka_unit_test(test_defaults_and_the_builtin_example),
        cmocka_unit_test(test_gates_behind_references_and_cycles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
