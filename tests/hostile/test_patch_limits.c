/*
 * test_patch_limits.c - what one PATCH may make the server do: the patch
 * engines stop at their limits (struct ck_patch_limits) before doing the
 * work, and the API server answers as kube-apiserver does: 413 for more than
 * 10,000 JSON patch operations, 422 for copies past 3 MiB, 413 for a patched
 * object larger than the request body limit or a strategic merge that needs
 * too many list comparisons (docs/limits.md, "Patches").
 *
 * Short forms of the attacks; the long ones (a patch bomb against a server
 * whose memory is measured) are bench/hostile/patch_bomb.sh.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include "ckube/api.h"
#include "ckube/util.h"

#include "apiserver/httptest.h"

static char dir[] = "/tmp/ckube-test-hostile-patch-XXXXXX";
static struct ck_apiserver *server;

#include "apiserver/apitest.h"

/* A growing string buffer for building large bodies; aborts when out of memory. */
struct text {
    char *s;
    size_t len, cap;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s)
            abort();
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v)
        fail_msg("bad JSON in the test: %s", jerr.text);
    return v;
}

/* ---- the engines, with small limits ------------------------------------- */

static void test_json_patch_counts_operations_before_applying(void **state)
{
    (void)state;
    json_t *doc = load("{\"a\":1}");
    json_t *ops = load("[{\"op\":\"add\",\"path\":\"/b\",\"value\":1},"
                       "{\"op\":\"add\",\"path\":\"/c\",\"value\":1},"
                       "{\"op\":\"remove\",\"path\":\"/nothing\"}]");
    struct ck_patch_limits limits = {.max_operations = 2};
    json_t *out = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_json_patch_bounded(doc, ops, &limits, &out, &err), CK_EINVAL);
    assert_null(out);
    assert_int_equal(err.http_status, 413);
    assert_string_equal(err.reason, "RequestEntityTooLarge");
    assert_string_equal(ck_err_message(&err), "Request entity too large: The allowed maximum "
                                              "operations in a JSON patch is 2, got 3");
    ck_err_release(&err);
    /* at the limit the operations run (and the third one fails on its own) */
    limits.max_operations = 3;
    assert_int_equal(ck_json_patch_bounded(doc, ops, &limits, &out, &err), CK_EINVAL);
    assert_int_equal(err.http_status, 0);
    ck_err_release(&err);
    json_decref(ops);
    json_decref(doc);
}

static void test_json_patch_copies_stop_at_the_copy_limit(void **state)
{
    (void)state;
    json_t *doc = load("{\"d\":{\"k\":\"0123456789012345678901234567890123456789\"}}");
    /* each copy doubles /d: 50, 100, 200, 400 ... bytes */
    struct text t = {0};
    add(&t, "[");
    for (int i = 0; i < 40; i++)
        add(&t, "%s{\"op\":\"copy\",\"from\":\"/d\",\"path\":\"/d/c%d\"}", i ? "," : "", i);
    add(&t, "]");
    json_t *ops = load(t.s);
    free(t.s);
    struct ck_patch_limits limits = {.max_copy_bytes = 4096};
    json_t *out = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_json_patch_bounded(doc, ops, &limits, &out, &err), CK_EINVAL);
    assert_null(out);
    assert_int_equal(err.http_status, 422);
    assert_non_null(strstr(ck_err_message(&err), "Unable to complete the copy, the accumulated "
                                                 "size increase of copy is "));
    assert_non_null(strstr(ck_err_message(&err), "exceeding the limit 4096"));
    ck_err_release(&err);
    /* move does not grow the document and is not counted */
    json_t *moves = load("[{\"op\":\"move\",\"from\":\"/d\",\"path\":\"/e\"},"
                         "{\"op\":\"move\",\"from\":\"/e\",\"path\":\"/d\"}]");
    limits.max_copy_bytes = 1;
    assert_int_equal(ck_json_patch_bounded(doc, moves, &limits, &out, &err), 0);
    assert_true(json_equal(out, doc));
    json_decref(out);
    json_decref(moves);
    json_decref(ops);
    json_decref(doc);
}

static void test_strategic_merge_stops_at_its_comparison_budget(void **state)
{
    (void)state;
    struct ck_schemas *schemas = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_api_builtin_schemas(&schemas, &err), 0);
    json_t *pod = load("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":"
                       "[{\"name\":\"c\",\"image\":\"x\"}]}}");
    struct text t = {0};
    add(&t, "{\"metadata\":{\"finalizers\":[");
    for (int i = 0; i < 200; i++)
        add(&t, "%s\"x/f%d\"", i ? "," : "", i);
    add(&t, "]}}");
    json_t *patch = load(t.s);
    free(t.s);
    /* 200 set insertions compare 0 + 1 + ... + 199 = 19,900 elements */
    struct ck_patch_limits limits = {.max_comparisons = 10000};
    json_t *out = NULL;
    assert_int_equal(ck_strategic_merge_patch_bounded(schemas, "io.k8s.api.core.v1.Pod", pod, patch,
                                                      &limits, &out, &err),
                     CK_EINVAL);
    assert_null(out);
    assert_int_equal(err.http_status, 413);
    assert_non_null(strstr(ck_err_message(&err), "more than 10000 list element comparisons"));
    ck_err_release(&err);
    limits.max_comparisons = 19900;
    assert_int_equal(ck_strategic_merge_patch_bounded(schemas, "io.k8s.api.core.v1.Pod", pod, patch,
                                                      &limits, &out, &err),
                     0);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(out, "metadata"), "finalizers")), 200);
    json_decref(out);
    json_decref(patch);
    json_decref(pod);
    ck_schemas_free(schemas);
}

/* ---- the API server ----------------------------------------------------- */

#define PODS "/api/v1/namespaces/default/pods"
#define SPEC "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}"

static void test_server_refuses_more_than_10000_operations(void **state)
{
    (void)state;
    json_decref(call("POST", PODS, "{\"metadata\":{\"name\":\"ops\"}," SPEC "}", 201));
    struct text t = {0};
    add(&t, "[");
    for (int i = 0; i < 10001; i++)
        add(&t, "%s{\"op\":\"test\",\"path\":\"/kind\",\"value\":\"Pod\"}", i ? "," : "");
    add(&t, "]");
    expect_status_h("PATCH", PODS "/ops", t.s, jsonpatch_type, 413, "RequestEntityTooLarge",
                    "Request entity too large: The allowed maximum operations in a JSON patch is "
                    "10000, got 10001");
    /* 10,000 are fine */
    t.len -= strlen(",{\"op\":\"test\",\"path\":\"/kind\",\"value\":\"Pod\"}]");
    add(&t, "]");
    json_decref(call_h("PATCH", PODS "/ops", t.s, jsonpatch_type, 200));
    free(t.s);
}

static void test_server_answers_a_copy_bomb_with_422(void **state)
{
    (void)state;
    struct text t = {0};
    add(&t, "{\"metadata\":{\"name\":\"bomb\",\"annotations\":{\"a\":\"");
    for (int i = 0; i < 1024; i++)
        add(&t, "x");
    add(&t, "\"}}," SPEC "}");
    json_decref(call("POST", PODS, t.s, 201));
    t.len = 0;
    /* 1.5 KB of doubling copies: 2^40 KiB if nothing stopped them */
    add(&t, "[");
    for (int i = 0; i < 40; i++)
        add(&t,
            "%s{\"op\":\"copy\",\"from\":\"/metadata/annotations\","
            "\"path\":\"/metadata/annotations/c%d\"}",
            i ? "," : "", i);
    add(&t, "]");
    expect_status_h("PATCH", PODS "/bomb", t.s, jsonpatch_type, 422, "Invalid",
                    "Unable to complete the copy, the accumulated size increase of copy is");
    free(t.s);
    /* nothing changed */
    json_t *cm = call("GET", PODS "/bomb", NULL, 200);
    assert_int_equal(json_object_size(at(cm, "metadata.annotations")), 1);
    json_decref(cm);
}

static void test_server_refuses_a_patched_object_over_3_mib(void **state)
{
    (void)state;
    /* a 2 MiB pod, and a 1.5 MiB patch: each under the body limit, together over it */
    size_t big = 2u * 1024 * 1024, more = 1536u * 1024;
    char *chunk = malloc(big + 1);
    assert_non_null(chunk);
    memset(chunk, 'y', big);
    chunk[big] = '\0';
    struct text t = {0};
    add(&t,
        "{\"metadata\":{\"name\":\"big\"},\"spec\":{\"containers\":[{\"name\":\"c\","
        "\"image\":\"x\",\"args\":[\"%s\"]}]}}",
        chunk);
    json_decref(call("POST", PODS, t.s, 201));
    chunk[more] = '\0';
    t.len = 0;
    add(&t, "{\"spec\":{\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"args\":[\"%s\"]}]}}",
        chunk);
    expect_status_h("PATCH", PODS "/big", t.s, merge_type, 413, "RequestEntityTooLarge",
                    "Request entity too large: limit is 3145728");
    expect_status_h("PATCH", PODS "/big", t.s, strategic_type, 413, "RequestEntityTooLarge",
                    "Request entity too large: limit is 3145728");
    free(chunk);
    free(t.s);
    json_t *pod = call("GET", PODS "/big", NULL, 200);
    assert_null(at(pod, "spec.initContainers"));
    json_decref(pod);
}

static void test_server_refuses_a_quadratic_strategic_merge(void **state)
{
    (void)state;
    json_decref(call("POST", "/api/v1/namespaces/default/pods",
                     "{\"metadata\":{\"name\":\"fin\"},\"spec\":{\"containers\":"
                     "[{\"name\":\"c\",\"image\":\"x\"}]}}",
                     201));
    /* 10,000 new finalizers: 50 million comparisons as a set union */
    struct text t = {0};
    add(&t, "{\"metadata\":{\"finalizers\":[");
    for (int i = 0; i < 10000; i++)
        add(&t, "%s\"example.com/f%d\"", i ? "," : "", i);
    add(&t, "]}}");
    expect_status_h("PATCH", "/api/v1/namespaces/default/pods/fin", t.s, strategic_type, 413,
                    "RequestEntityTooLarge", "list element comparisons");
    free(t.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_patch_counts_operations_before_applying),
        cmocka_unit_test(test_json_patch_copies_stop_at_the_copy_limit),
        cmocka_unit_test(test_strategic_merge_stops_at_its_comparison_budget),
        cmocka_unit_test(test_server_refuses_more_than_10000_operations),
        cmocka_unit_test(test_server_answers_a_copy_bomb_with_422),
        cmocka_unit_test(test_server_refuses_a_patched_object_over_3_mib),
        cmocka_unit_test(test_server_refuses_a_quadratic_strategic_merge),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
