/*
 * test_media.c - tests for lib/apiserver/media.c without a server: which
 * codec and shape an Accept header picks (first acceptable entry wins,
 * wildcards mean JSON, as=/g=/v= pick the shape for either codec,
 * pretty=1), which codec a Content-Type names (none means JSON; unknown is
 * NULL, a 415), the media-type lists of the 406 and 415 messages, and the
 * 400 kube-apiserver answers a body that is not JSON at all.
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/internal/util.h"

static void test_accept_picks_codec_and_shape(void **state)
{
    (void)state;
    struct {
        const char *accept;
        const char *media_type; /* NULL: nothing acceptable */
        enum ck__accept shape;
        bool pretty;
    } cases[] = {
        {NULL, "application/json", CK__ACCEPT_JSON, false},
        {"", "application/json", CK__ACCEPT_JSON, false},
        {"application/json", "application/json", CK__ACCEPT_JSON, false},
        {"*/*", "application/json", CK__ACCEPT_JSON, false},
        {"application/*", "application/json", CK__ACCEPT_JSON, false},
        {"application/yaml", "application/yaml", CK__ACCEPT_JSON, false},
        {"APPLICATION/YAML", "application/yaml", CK__ACCEPT_JSON, false},
        {"application/json;pretty=1", "application/json", CK__ACCEPT_JSON, true},
        {"application/xml, application/yaml", "application/yaml", CK__ACCEPT_JSON, false},
        {"application/yaml, application/json", "application/yaml", CK__ACCEPT_JSON, false},
        {"application/vnd.kubernetes.protobuf,application/json", "application/json",
         CK__ACCEPT_PROTOBUF,
         false}, /* protobuf is answered by its handlers, JSON their fallback */
        {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "application/json",
         CK__ACCEPT_TABLE, false},
        {"application/yaml;as=Table;v=v1;g=meta.k8s.io", "application/yaml", CK__ACCEPT_TABLE,
         false},
        {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "application/json",
         CK__ACCEPT_PARTIAL_LIST, false},
        {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "application/json",
         CK__ACCEPT_PARTIAL, false},
        {"application/json;as=Unknown;g=meta.k8s.io;v=v1, application/yaml", "application/yaml",
         CK__ACCEPT_JSON, false},
        {"application/jsonx", NULL, CK__ACCEPT_NONE, false},
        {"application/xml", NULL, CK__ACCEPT_NONE, false},
        {"text/html", NULL, CK__ACCEPT_NONE, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ck__media m;
        ck__media_negotiate_accept(cases[i].accept, &m);
        const char *got = m.codec ? m.codec->media_type : NULL;
        if ((got == NULL) != (cases[i].media_type == NULL) ||
            (got && strcmp(got, cases[i].media_type) != 0) || m.shape != cases[i].shape ||
            m.pretty != cases[i].pretty)
            fail_msg("Accept \"%s\": %s shape %d pretty %d", cases[i].accept ? cases[i].accept : "",
                     got ? got : "(none)", m.shape, m.pretty);
    }
}

static void test_content_type_picks_codec(void **state)
{
    (void)state;
    assert_ptr_equal(ck__codec_for_content_type(NULL), ck__codec_json());
    assert_ptr_equal(ck__codec_for_content_type(""), ck__codec_json());
    assert_ptr_equal(ck__codec_for_content_type("application/json; charset=utf-8"),
                     ck__codec_json());
    assert_ptr_equal(ck__codec_for_content_type("*/*"), ck__codec_json());
    const struct ck__codec *yaml = ck__codec_for_content_type("application/yaml");
    assert_non_null(yaml);
    assert_string_equal(yaml->media_type, "application/yaml");
    assert_false(yaml->streams);
    assert_true(ck__codec_json()->streams);
    assert_null(ck__codec_for_content_type("application/x-www-form-urlencoded"));
    assert_null(ck__codec_for_content_type("application/jsonpatch"));
    assert_null(ck__codec_for_content_type("text/plain"));
}

static void test_media_type_lists(void **state)
{
    (void)state;
    char buf[128];
    ck__media_types(false, buf, sizeof(buf));
    assert_string_equal(buf, "application/json, application/yaml");
    ck__media_types(true, buf, sizeof(buf));
    assert_string_equal(buf, "application/json");
    struct ck_err err = {0};
    assert_int_equal(ck__err_unsupported_media(&err), CK_EINVAL);
    assert_int_equal(err.http_status, 415);
    assert_string_equal(err.msg, "the body of the request was in an unknown format - accepted "
                                 "media types include: application/json, application/yaml");
    ck_err_release(&err);
}

static void test_encode_json_and_yaml(void **state)
{
    (void)state;
    const struct ck__codec *json = ck__codec_json();
    const struct ck__codec *yaml = ck__codec_for_content_type("application/yaml");
    char *out = NULL;
    size_t len = 0;
    const char *doc = "{\"a\":[1,{}]}";
    assert_int_equal(json->encode(ck__strdup(doc), strlen(doc), false, &out, &len), 0);
    assert_string_equal(out, "{\"a\":[1,{}]}\n");
    assert_int_equal(len, strlen(doc) + 1);
    free(out);
    assert_int_equal(json->encode(ck__strdup(doc), strlen(doc), true, &out, &len), 0);
    assert_string_equal(out, "{\n  \"a\": [\n    1,\n    {}\n  ]\n}");
    assert_int_equal(len, strlen(out));
    free(out);
    const char *two = "{\"b\":\"on\",\"a\":[1,{}]}";
    assert_int_equal(yaml->encode(ck__strdup(two), strlen(two), false, &out, &len), 0);
    assert_string_equal(out, "a:\n- 1\n- {}\nb: \"on\"\n");
    free(out);
}

static void test_body_that_is_not_json(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_int_equal(ck__media_check_json("Pod", " \n{\"kind\":\"Pod\"}", 16, &err), 0);
    assert_int_equal(ck__media_check_json("Pod", "[]", 2, &err), 0);
    assert_int_equal(ck__media_check_json("Pod", "kind: Pod", 9, &err), CK_EINVAL);
    assert_int_equal(err.http_status, 400);
    assert_string_equal(err.msg, "the object provided is unrecognized (must be of type Pod): "
                                 "couldn't get version/kind; json parse error: invalid character "
                                 "'k' looking for beginning of value (6b696e643a20506f64)");
    ck_err_release(&err);
    assert_int_equal(ck__media_check_json("Pod", "", 0, &err), CK_EINVAL);
    assert_string_equal(err.msg, "the object provided is unrecognized (must be of type Pod): "
                                 "couldn't get version/kind; json parse error: unexpected end of "
                                 "JSON input (<empty>)");
    ck_err_release(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_picks_codec_and_shape),
        cmocka_unit_test(test_content_type_picks_codec),
        cmocka_unit_test(test_media_type_lists),
        cmocka_unit_test(test_encode_json_and_yaml),
        cmocka_unit_test(test_body_that_is_not_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
