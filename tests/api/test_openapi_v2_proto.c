/*
 * test_openapi_v2_proto.c - /openapi/v2 in protobuf (lib/api/openapi_v2_proto.c).
 *
 * Small documents are checked byte for byte against the encoding gnostic's
 * OpenAPIv2.proto gives them; the whole built-in Swagger document is decoded
 * back with protoc --decode against tests/data/openapiv2/OpenAPIv2.proto
 * (argv[1] is that folder), which skips (77) when protoc is not installed.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"

static const char *proto_dir;

static void encode(const char *json, char **ret, size_t *ret_len)
{
    json_error_t jerr;
    json_t *doc = json_loads(json, JSON_DECODE_ANY, &jerr);
    assert_non_null(doc);
    struct ck_err err = {0};
    int r = ck_openapi_v2_proto(doc, ret, ret_len, &err);
    if (r < 0)
        fail_msg("encode: %s", err.msg);
    json_decref(doc);
}

static void expect_bytes(const char *json, const char *want, size_t want_len)
{
    char *data = NULL;
    size_t len = 0;
    encode(json, &data, &len);
    assert_int_equal(len, want_len);
    assert_memory_equal(data, want, want_len);
    free(data);
}

static void test_scalars_and_info(void **state)
{
    (void)state;
    /* Document {1: swagger, 2: Info {1: title, 2: version}, 5: schemes} */
    expect_bytes("{\"swagger\":\"2.0\",\"info\":{\"title\":\"K\",\"version\":\"v\"},"
                 "\"schemes\":[\"https\"]}",
                 "\x0a\x03"
                 "2.0"
                 "\x12\x06\x0a\x01K\x12\x01v"
                 "\x2a\x05https",
                 5 + 8 + 7);
}

static void test_definitions_are_named_schemas(void **state)
{
    (void)state;
    /* 9: Definitions {1: NamedSchema {1: "A", 2: Schema {11: maxLength 3, 16: uniqueItems,
     * 22: TypeItem {1: "object"}, 31: NamedAny {1: "x-k", 2: Any {2: yaml}}}}}; "bogus" is
     * not a Schema key and is left out */
    expect_bytes(
        "{\"definitions\":{\"A\":{\"type\":\"object\",\"maxLength\":3,\"uniqueItems\":true,"
        "\"x-k\":\"v\",\"bogus\":1}}}",
        "\x4a\x25\x0a\x23\x0a\x01"
        "A\x12\x1e"
        "\x58\x03"
        "\x80\x01\x01"
        "\xb2\x01\x08\x0a\x06"
        "object"
        "\xfa\x01\x0b\x0a\x03"
        "x-k\x12\x04\x12\x02v\n",
        39);
}

static void test_oneofs(void **state)
{
    (void)state;
    /* PathItem 9: ParametersItem: $ref -> {2: JsonReference {1: ref}};
     * in: query -> {1: Parameter {2: NonBodyParameter {3: Query {2: in, 4: name}}}} */
    expect_bytes("{\"paths\":{\"/p\":{\"parameters\":[{\"$ref\":\"#/r\"},"
                 "{\"in\":\"query\",\"name\":\"n\"}]}}}",
                 "\x42\x23\x12\x21\x0a\x02/p\x12\x1b"
                 "\x4a\x07\x12\x05\x0a\x03#/r"
                 "\x4a\x10\x0a\x0e\x12\x0c\x1a\x0a\x12\x05query\x22\x01n",
                 37);
    /* Schema 21: AdditionalPropertiesItem {2: true} for a boolean */
    expect_bytes("{\"definitions\":{\"B\":{\"additionalProperties\":true}}}",
                 "\x4a\x0c\x0a\x0a\x0a\x01"
                 "B\x12\x05\xaa\x01\x02\x10\x01",
                 14);
}

static void test_wrong_type_is_an_error(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:i}", "swagger", 2);
    char *data = NULL;
    size_t len = 0;
    struct ck_err err = {0};
    assert_int_equal(ck_openapi_v2_proto(doc, &data, &len, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "Document.swagger"));
    assert_null(data);
    ck_err_release(&err);
    json_decref(doc);
}

/*
 * Allocation n = 1, 2, ... of the encoder fails (its buffer, its YAML text;
 * jansson allocates through the project's hook here) until the encoder gets
 * by: each answer is the whole encoding, the same bytes, or CK_ENOMEM.
 */
static void test_out_of_memory(void **state)
{
    (void)state;
    json_t *doc =
        json_pack("{s:s, s:{s:{s:s, s:o, s:[s], s:{s:{s:s}}}}}", "swagger", "2.0", "definitions",
                  "A", "description", "d", "x-k", json_pack("[{s:s}]", "a", "b"), "required", "p",
                  "properties", "p", "type", "string");
    assert_non_null(doc);
    char *want = NULL, *got = NULL;
    size_t want_len = 0, got_len = 0;
    unsigned long n;
    for (n = 1; n < 100000; n++) {
        struct ck_err err = {0};
        ck__alloc_fail_at(n, false);
        int r = ck_openapi_v2_proto(doc, &got, &got_len, &err);
        unsigned long made = ck__alloc_fail_at(0, false);
        if (r == 0) {
            if (want) {
                assert_int_equal(got_len, want_len);
                assert_memory_equal(got, want, want_len);
                free(got);
            } else {
                want = got;
                want_len = got_len;
            }
        } else {
            assert_int_equal(r, CK_ENOMEM);
        }
        got = NULL;
        if (made < n)
            break;
    }
    assert_non_null(want);
    assert_true(n > 2);
    print_message("%lu allocations\n", n - 1);
    free(want);
    json_decref(doc);
}

/* The whole built-in document, decoded back by protoc. */
static void test_protoc_decodes_the_builtin_document(void **state)
{
    (void)state;
    if (system("protoc --version >/dev/null 2>&1") != 0) {
        print_message("skipped: protoc (Debian protobuf-compiler) is not installed\n");
        skip();
    }
    struct ck_schemas *schemas = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_api_builtin_schemas(&schemas, &err), 0);
    json_t *doc = ck_openapi_v2(schemas);
    assert_non_null(doc);
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(ck_openapi_v2_proto(doc, &data, &len, &err), 0);
    json_decref(doc);
    ck_schemas_free(schemas);

    char in[] = "/tmp/ckube-openapi-v2-pb-XXXXXX";
    int fd = mkstemp(in);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
    free(data);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "protoc --decode=openapi.v2.Document -I '%s' -I /usr/include OpenAPIv2.proto "
             "< '%s' 2>&1",
             proto_dir, in);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, got = 0;
    char *text = malloc(cap);
    size_t n;
    while ((n = fread(text + got, 1, cap - got - 1, p)) > 0) {
        got += n;
        if (got + 1 == cap)
            text = realloc(text, cap *= 2);
    }
    text[got] = '\0';
    int status = pclose(p);
    unlink(in);
    if (status != 0)
        fail_msg("protoc failed: %.500s", text);
    assert_non_null(strstr(text, "swagger: \"2.0\""));
    assert_non_null(strstr(text, "name: \"/api/v1/namespaces/{namespace}/pods\""));
    assert_non_null(strstr(text, "name: \"io.k8s.api.core.v1.Pod\""));
    assert_non_null(strstr(text, "name: \"x-kubernetes-group-version-kind\""));
    assert_non_null(strstr(text, "body_parameter"));
    assert_non_null(strstr(text, "query_parameter_sub_schema"));
    assert_non_null(strstr(text, "name: \"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\""));
    assert_non_null(strstr(text, "response_code"));
    /* nothing protoc could not place: an unknown field prints as its bare number */
    for (const char *line = text; *line;
         line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
        const char *first = line + strspn(line, " ");
        if (*first >= '0' && *first <= '9')
            fail_msg("protoc found an unknown field: %.80s", line);
    }
    free(text);
}

int main(int argc, char **argv)
{
    json_set_alloc_funcs(ck__malloc, free);
    proto_dir = argc > 1 ? argv[1] : "tests/data/openapiv2";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_scalars_and_info),
        cmocka_unit_test(test_definitions_are_named_schemas),
        cmocka_unit_test(test_oneofs),
        cmocka_unit_test(test_wrong_type_is_an_error),
        cmocka_unit_test(test_protoc_decodes_the_builtin_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
