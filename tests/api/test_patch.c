/*
 * test_patch.c - tests for lib/api/patch.c: RFC 7386's own examples for
 * merge patch, RFC 6902's operations and failure cases for JSON patch, and
 * strategic merge patch on a schema of the test's own, including the
 * request bodies kubectl 1.32 sends (set image, apply dropping a container
 * and switching to Recreate, rollout pause/resume).
 */
#include "cktest.h"

#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "jsontest.h"

static void assert_json(const json_t *got, const char *want_text)
{
    json_t *want = load(want_text);
    if (!json_equal((json_t *)got, want)) {
        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("got %s\nwant %s", g, want_text);
    }
    json_decref(want);
}

static void test_merge_patch_rfc7386_examples(void **state)
{
    (void)state;
    static const struct {
        const char *target, *patch, *result;
    } cases[] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
        {"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
        {"{\"a\":\"foo\"}", "null", "null"},
        {"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *target = load(cases[i].target);
        json_t *patch = load(cases[i].patch);
        json_t *before = json_deep_copy(target);
        json_t *out = ck_merge_patch(target, patch);
        assert_json(out, cases[i].result);
        assert_true(json_equal(target, before)); /* the input is untouched */
        json_decref(out);
        json_decref(before);
        json_decref(target);
        json_decref(patch);
    }
}

static void test_json_patch_operations(void **state)
{
    (void)state;
    static const struct {
        const char *doc, *ops, *result;
    } cases[] = {
        {"{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
         "{\"foo\":\"bar\",\"baz\":\"qux\"}"},
        {"{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
         "{\"foo\":[\"bar\",\"qux\",\"baz\"]}"},
        {"{\"foo\":[1]}", "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":2}]", "{\"foo\":[1,2]}"},
        {"{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
         "{\"foo\":\"bar\"}"},
        {"{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
         "{\"foo\":[\"bar\",\"baz\"]}"},
        {"{\"baz\":\"qux\"}", "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
         "{\"baz\":\"boo\"}"},
        {"{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
         "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
         "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}"},
        {"{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
         "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
         "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}"},
        {"{\"a\":{\"b\":1}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"}]",
         "{\"a\":{\"b\":1},\"c\":{\"b\":1}}"},
        {"{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
         "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
         "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}"},
        {"{\"a/b\":1,\"m~n\":2}",
         "[{\"op\":\"replace\",\"path\":\"/a~1b\",\"value\":3},{\"op\":\"remove\",\"path\":\"/m~0n\"}]",
         "{\"a/b\":3}"},
        {"{\"x\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", "[1]"},
        /* kubectl rollout undo replaces the template and the annotations */
        {"{\"metadata\":{\"annotations\":{\"a\":\"1\"}},\"spec\":{\"template\":{\"x\":1}}}",
         "[{\"op\":\"replace\",\"path\":\"/spec/template\",\"value\":{\"x\":2}},"
         "{\"op\":\"replace\",\"path\":\"/metadata/annotations\",\"value\":{\"b\":\"2\"}}]",
         "{\"metadata\":{\"annotations\":{\"b\":\"2\"}},\"spec\":{\"template\":{\"x\":2}}}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = load(cases[i].doc);
        json_t *ops = load(cases[i].ops);
        json_t *out = NULL;
        struct ck_err err = {0};
        if (ck_json_patch(doc, ops, &out, &err) != 0)
            fail_msg("case %zu: %s", i, err.msg);
        assert_json(out, cases[i].result);
        json_decref(out);
        json_decref(doc);
        json_decref(ops);
    }
}

static void test_json_patch_failures_change_nothing(void **state)
{
    (void)state;
    static const struct {
        const char *ops, *says;
    } cases[] = {
        {"[{\"op\":\"test\",\"path\":\"/a\",\"value\":2}]", "testing value /a failed"},
        {"[{\"op\":\"replace\",\"path\":\"/missing\",\"value\":1}]",
         "replace operation does not apply"},
        {"[{\"op\":\"remove\",\"path\":\"/missing\"}]", "remove operation does not apply"},
        {"[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]", "add operation does not apply"},
        {"[{\"op\":\"add\",\"path\":\"/b/5\",\"value\":1}]", "add operation does not apply"},
        {"[{\"op\":\"add\",\"path\":\"/b/01\",\"value\":1}]", "add operation does not apply"},
        {"[{\"op\":\"move\",\"from\":\"/b\",\"path\":\"/b/0\"}]", "move operation does not apply"},
        {"[{\"op\":\"add\",\"path\":\"/c\",\"value\":1},{\"op\":\"bogus\",\"path\":\"/a\"}]",
         "unknown op"},
        {"[{\"path\":\"/a\"}]", "needs \"op\" and \"path\""},
        {"{\"op\":\"add\"}", "must be an array"},
        {"[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", "add operation does not apply"},
    };
    json_t *doc = load("{\"a\":1,\"b\":[1,2]}");
    json_t *before = json_deep_copy(doc);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *ops = load(cases[i].ops);
        json_t *out = NULL;
        struct ck_err err = {0};
        assert_int_equal(ck_json_patch(doc, ops, &out, &err), CK_EINVAL);
        assert_null(out);
        if (!strstr(err.msg, cases[i].says))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].says);
        json_decref(ops);
    }
    assert_true(json_equal(doc, before));
    json_decref(doc);
    json_decref(before);
}

/* A miniature Deployment schema carrying Kubernetes' patch strategies. */
static const char smp_schemas[] =
    "{\"t.Deployment\":{\"type\":\"object\",\"properties\":{"
    "  \"metadata\":{\"$ref\":\"#/components/schemas/t.Meta\"},"
    "  \"spec\":{\"$ref\":\"#/components/schemas/t.Spec\"}}},"
    "\"t.Meta\":{\"type\":\"object\",\"properties\":{"
    "  \"annotations\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "  \"finalizers\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "    \"x-kubernetes-patch-strategy\":\"merge\"}}},"
    "\"t.Spec\":{\"type\":\"object\",\"properties\":{"
    "  \"paused\":{\"type\":\"boolean\"},"
    "  \"strategy\":{\"type\":\"object\",\"x-kubernetes-patch-strategy\":\"retainKeys\"},"
    "  \"template\":{\"$ref\":\"#/components/schemas/t.Template\"}}},"
    "\"t.Template\":{\"type\":\"object\",\"properties\":{"
    "  \"spec\":{\"$ref\":\"#/components/schemas/t.PodSpec\"}}},"
    "\"t.PodSpec\":{\"type\":\"object\",\"properties\":{"
    "  \"containers\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/t.Container\"},"
    "    \"x-kubernetes-patch-merge-key\":\"name\",\"x-kubernetes-patch-strategy\":\"merge\"},"
    "  \"tolerations\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}}},"
    "\"t.Container\":{\"type\":\"object\",\"properties\":{"
    "  \"name\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"
    "  \"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "  \"env\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},"
    "    \"x-kubernetes-patch-merge-key\":\"name\",\"x-kubernetes-patch-strategy\":\"merge\"}}}}";

static const char deployment[] =
    "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"annotations\":{\"x\":\"1\"}},"
    "\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%\"}},"
    "\"template\":{\"spec\":{\"containers\":["
    "{\"name\":\"a\",\"image\":\"x:1\",\"args\":[\"-v\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]},"
    "{\"name\":\"b\",\"image\":\"y:1\"}],"
    "\"tolerations\":[{\"key\":\"k1\"}]}}}}";

static void smp_case(struct ck_schemas *set, const char *patch_text, const char *want)
{
    json_t *doc = load(deployment);
    json_t *patch = load(patch_text);
    json_t *out = NULL;
    struct ck_err err = {0};
    if (ck_strategic_merge_patch(set, "t.Deployment", doc, patch, &out, &err) != 0)
        fail_msg("%s: %s", patch_text, err.msg);
    assert_json(out, want);
    json_t *again = load(deployment);
    assert_true(json_equal(doc, again)); /* untouched */
    json_decref(again);
    json_decref(out);
    json_decref(doc);
    json_decref(patch);
}

static void test_strategic_merge_patch(void **state)
{
    (void)state;
    const char *docs[] = {smp_schemas};
    struct ck_schemas *set = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_schemas_new(docs, 1, &set, &err), 0);

    /* kubectl set image: the container merges by name; the other stays */
    smp_case(
        set,
        "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
        "\"containers\":[{\"image\":\"x:2\",\"name\":\"a\"}]}}}}",
        "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"annotations\":{\"x\":\"1\"}},"
        "\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%\"}},"
        "\"template\":{\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"image\":\"x:2\",\"args\":[\"-v\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]},"
        "{\"name\":\"b\",\"image\":\"y:1\"}],\"tolerations\":[{\"key\":\"k1\"}]}}}}");

    /* kubectl apply dropping container b and env B, switching to Recreate */
    smp_case(
        set,
        "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"rollingUpdate\":null,\"type\":\"Recreate\"},"
        "\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}],"
        "\"containers\":[{\"$setElementOrder/env\":[{\"name\":\"A\"}],\"env\":[{\"$patch\":\"delete\",\"name\":\"B\"}],"
        "\"image\":\"x:2\",\"name\":\"a\"},{\"$patch\":\"delete\",\"name\":\"b\"}]}}}}",
        "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"annotations\":{\"x\":\"1\"}},"
        "\"spec\":{\"strategy\":{\"type\":\"Recreate\"},"
        "\"template\":{\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"image\":\"x:2\",\"args\":[\"-v\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}],"
        "\"tolerations\":[{\"key\":\"k1\"}]}}}}");

    /* rollout pause / resume */
    smp_case(
        set, "{\"spec\":{\"paused\":true}}",
        "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"annotations\":{\"x\":\"1\"}},"
        "\"spec\":{\"paused\":true,\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%\"}},"
        "\"template\":{\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"image\":\"x:1\",\"args\":[\"-v\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]},"
        "{\"name\":\"b\",\"image\":\"y:1\"}],\"tolerations\":[{\"key\":\"k1\"}]}}}}");

    /* new elements append; atomic lists (args, tolerations) replace; sets union */
    smp_case(
        set,
        "{\"metadata\":{\"finalizers\":[\"b\",\"c\"],\"$deleteFromPrimitiveList/finalizers\":[\"a\"]},"
        "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"z\"},"
        "{\"name\":\"a\",\"args\":[\"-q\"],\"env\":[{\"name\":\"C\",\"value\":\"3\"}]}],"
        "\"tolerations\":[{\"key\":\"k2\"}]}}}}",
        "{\"metadata\":{\"finalizers\":[\"b\",\"c\"],\"annotations\":{\"x\":\"1\"}},"
        "\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%\"}},"
        "\"template\":{\"spec\":{\"containers\":["
        "{\"name\":\"a\",\"image\":\"x:1\",\"args\":[\"-q\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"},{\"name\":\"C\",\"value\":\"3\"}]},"
        "{\"name\":\"b\",\"image\":\"y:1\"},{\"name\":\"c\",\"image\":\"z\"}],\"tolerations\":[{\"key\":\"k2\"}]}}}}");

    /* $patch: replace on a map and on a list; $patch: delete on a map */
    smp_case(
        set,
        "{\"metadata\":{\"annotations\":{\"$patch\":\"replace\",\"y\":\"2\"}},"
        "\"spec\":{\"strategy\":{\"$patch\":\"delete\"},\"template\":{\"spec\":{\"containers\":"
        "[{\"$patch\":\"replace\"},{\"name\":\"only\",\"image\":\"o\"}]}}}}",
        "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"annotations\":{\"y\":\"2\"}},"
        "\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"only\",\"image\":\"o\"}],"
        "\"tolerations\":[{\"key\":\"k1\"}]}}}}");

    /* $setElementOrder reorders the merged list */
    smp_case(
        set,
        "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}}}",
        "{\"metadata\":{\"finalizers\":[\"a\",\"b\"],\"annotations\":{\"x\":\"1\"}},"
        "\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":\"25%\"}},"
        "\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"y:1\"},"
        "{\"name\":\"a\",\"image\":\"x:1\",\"args\":[\"-v\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}]}],"
        "\"tolerations\":[{\"key\":\"k1\"}]}}}}");

    /* malformed patches are errors and change nothing */
    static const char *const bad[] = {
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"no-name\"}]}}}}",
        "{\"spec\":{\"template\":{\"spec\":{\"containers\":[\"scalar\"]}}}}",
        "{\"spec\":{\"$patch\":\"explode\"}}",
        "{\"spec\":{\"$unknownDirective\":1}}",
        "{\"spec\":{\"strategy\":{\"$retainKeys\":\"type\"}}}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *doc = load(deployment);
        json_t *patch = load(bad[i]);
        json_t *out = NULL;
        if (ck_strategic_merge_patch(set, "t.Deployment", doc, patch, &out, &err) != CK_EINVAL)
            fail_msg("accepted: %s", bad[i]);
        assert_null(out);
        json_decref(doc);
        json_decref(patch);
    }
    ck_schemas_free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_patch_rfc7386_examples),
        cmocka_unit_test(test_json_patch_operations),
        cmocka_unit_test(test_json_patch_failures_change_nothing),
        cmocka_unit_test(test_strategic_merge_patch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
