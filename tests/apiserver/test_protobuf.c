/*
 * test_protobuf.c - the API server speaking Kubernetes' protobuf over real
 * HTTP (lib/apiserver/protobuf.c and its hooks): a create with a protobuf
 * body answered in protobuf, GET and LIST answers that are exactly the
 * encoding of the JSON answers, a protobuf watch's frames, DeleteOptions in
 * protobuf, a custom resource's 415 and 406, and readers in protobuf on
 * several threads while a writer changes the objects they read (the
 * encoding cache is shared by every request thread). Labelled
 * `concurrency`, so it also runs under ThreadSanitizer.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <pthread.h>

#include "ckube/api.h"
#include "httptest.h"

static char dir[] = "/tmp/ckube-test-protobuf-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define POD      "io.k8s.api.core.v1.Pod"
#define PODS     "/api/v1/namespaces/default/pods"
#define PROTOBUF "application/vnd.kubernetes.protobuf"
#define POD_BODY                                                                                   \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":"            \
    "{\"app\":\"p\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1\"}]}}"

/* METHOD path with a body of len bytes (may hold NULs) and header lines; like http_call(). */
static void raw_call(const char *method, const char *path, const void *body, size_t len,
                     const char *const *headers, struct response *ret)
{
    char url[2048];
    snprintf(url, sizeof(url), "%s%s", ck_apiserver_url(server), path);
    memset(ret, 0, sizeof(*ret));
    struct httptest_buf out = {0}, head = {0};
    CURL *curl = curl_easy_init();
    struct curl_slist *list = NULL;
    for (size_t i = 0; headers && headers[i]; i++)
        list = curl_slist_append(list, headers[i]);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, httptest_collect);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    if (curl_easy_perform(curl) != CURLE_OK)
        abort();
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &ret->status);
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    ret->body = out.buf ? out.buf : calloc(1, 1);
    ret->len = out.len;
    ret->headers = head.buf ? head.buf : calloc(1, 1);
    ret->headers_len = head.len;
}

static const char *const accept_protobuf[] = {"Accept: " PROTOBUF, NULL};

/* GET path as protobuf: the answer's bytes (the caller frees them). */
static char *get_protobuf(const char *path, size_t *ret_len)
{
    struct response r;
    raw_call("GET", path, NULL, 0, accept_protobuf, &r);
    if (r.status != 200 || !strstr(r.headers, "Content-Type: " PROTOBUF))
        fail_msg("GET %s: %ld %s", path, r.status, r.headers);
    *ret_len = r.len;
    free(r.headers);
    return r.body;
}

/* Encodes obj as message; the caller frees the bytes. */
static char *encode(const char *message, const json_t *obj, size_t *ret_len)
{
    char *bytes = NULL;
    struct ck_err err = {0};
    if (ck_proto_encode(message, obj, &bytes, ret_len, &err) < 0)
        fail_msg("encode %s: %s", message, ck_err_message(&err));
    return bytes;
}

static void test_create_in_protobuf(void **state)
{
    (void)state;
    char *text = NULL;
    assert_true(asprintf(&text, POD_BODY, "made") > 0);
    json_t *pod = json_loads(text, 0, NULL);
    size_t len = 0;
    char *body = encode(POD, pod, &len);
    static const char *const headers[] = {"Content-Type: " PROTOBUF, "Accept: " PROTOBUF, NULL};
    struct response r;
    raw_call("POST", PODS "?fieldValidation=Strict", body, len, headers, &r);
    assert_int_equal(r.status, 201);
    assert_non_null(strstr(r.headers, "Content-Type: " PROTOBUF));
    json_t *made = NULL;
    assert_int_equal(ck_proto_decode(POD, r.body, r.len, &made, NULL), 0);
    assert_string_equal(str(made, "metadata.name"), "made");
    assert_non_null(str(made, "metadata.uid"));
    json_t *image = json_object_get(json_array_get(at(made, "spec.containers"), 0), "image");
    assert_string_equal(json_string_value(image), "nginx:1");
    /* defaults applied as to a JSON create */
    assert_string_equal(str(made, "spec.restartPolicy"), "Always");
    response_release(&r);
    json_decref(made);
    free(body);
    json_decref(pod);
    free(text);
}

static void test_get_and_list_are_the_json_answers_encoded(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        char *text = NULL, name[16];
        snprintf(name, sizeof(name), "listed-%d", i);
        assert_true(asprintf(&text, POD_BODY, name) > 0);
        json_decref(call("POST", PODS, text, 201));
        free(text);
    }
    json_t *json = call("GET", PODS "/listed-1", NULL, 200);
    size_t len = 0, want_len = 0;
    char *got = get_protobuf(PODS "/listed-1", &len);
    char *want = encode(POD, json, &want_len);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    free(got);
    free(want);
    json_decref(json);

    json = call("GET", PODS "?labelSelector=app%3Dp", NULL, 200);
    got = get_protobuf(PODS "?labelSelector=app%3Dp", &len);
    json_t *list = NULL;
    assert_int_equal(ck_proto_decode("io.k8s.api.core.v1.PodList", got, len, &list, NULL), 0);
    assert_string_equal(str(list, "kind"), "PodList");
    assert_string_equal(str(list, "metadata.resourceVersion"),
                        str(json, "metadata.resourceVersion"));
    size_t n = json_array_size(json_object_get(json, "items"));
    assert_true(n >= 3);
    assert_int_equal(json_array_size(json_object_get(list, "items")), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(
            str(json_array_get(json_object_get(list, "items"), i), "metadata.name"),
            str(json_array_get(json_object_get(json, "items"), i), "metadata.name"));
    /* a second LIST (from the encodings kept) is the same bytes */
    size_t again_len = 0;
    char *again = get_protobuf(PODS "?labelSelector=app%3Dp", &again_len);
    assert_int_equal(again_len, len);
    assert_memory_equal(again, got, len);
    free(again);
    free(got);
    json_decref(list);
    json_decref(json);
}

static void test_watch_in_protobuf_frames(void **state)
{
    (void)state;
    json_t *json = call("GET", PODS, NULL, 200);
    size_t n = json_array_size(json_object_get(json, "items"));
    json_decref(json);
    static const char *const headers[] = {"Accept: " PROTOBUF ";stream=watch", NULL};
    struct response r;
    raw_call("GET", PODS "?watch=1&timeoutSeconds=1", NULL, 0, headers, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: " PROTOBUF ";stream=watch"));
    size_t frames = 0;
    for (size_t off = 0; off < r.len; frames++) {
        assert_true(r.len - off >= 4);
        const unsigned char *p = (const unsigned char *)r.body + off;
        size_t len = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) | ((size_t)p[2] << 8) | p[3];
        assert_true(len <= r.len - off - 4);
        json_t *event = NULL;
        struct ck_err err = {0};
        if (ck_proto_decode_watch_event(POD, p + 4, len, &event, &err) < 0)
            fail_msg("frame %zu: %s", frames, ck_err_message(&err));
        assert_string_equal(str(event, "type"), "ADDED");
        assert_string_equal(str(event, "object.kind"), "Pod");
        json_decref(event);
        off += 4 + len;
    }
    assert_int_equal(frames, n); /* resourceVersion unset: one ADDED per pod */
    response_release(&r);
}

static void test_delete_options_in_protobuf(void **state)
{
    (void)state;
    char *text = NULL;
    assert_true(asprintf(&text, POD_BODY, "gone") > 0);
    json_decref(call("POST", PODS, text, 201));
    free(text);
    json_t *opts =
        json_pack("{s:s, s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "DeleteOptions",
                  "propagationPolicy", "Sideways", "preconditions", "resourceVersion", "1");
    size_t len = 0;
    char *body = encode("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", opts, &len);
    static const char *const headers[] = {"Content-Type: " PROTOBUF, NULL};
    struct response r;
    /* the options are read: an unknown policy is refused */
    raw_call("DELETE", PODS "/gone", body, len, headers, &r);
    assert_int_equal(r.status, 422);
    assert_non_null(strstr(r.body, "Sideways"));
    response_release(&r);
    free(body);
    json_object_set_new(opts, "propagationPolicy", json_string("Background"));
    body = encode("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", opts, &len);
    /* and its precondition holds them back */
    raw_call("DELETE", PODS "/gone", body, len, headers, &r);
    assert_int_equal(r.status, 409);
    response_release(&r);
    free(body);
    json_object_del(opts, "preconditions");
    body = encode("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", opts, &len);
    raw_call("DELETE", PODS "/gone", body, len, headers, &r);
    assert_int_equal(r.status, 200);
    response_release(&r);
    free(body);
    json_decref(opts);
    assert_int_equal(status_of("GET", PODS "/gone", NULL), 404);
}

static void test_custom_resources_are_json_only(void **state)
{
    (void)state;
    static const char *const body_headers[] = {"Content-Type: " PROTOBUF, NULL};
    struct response r;
    raw_call("POST", "/apis/example.ckube.io/v1/namespaces/default/frobbers", "k8s\0\x0a", 6,
             body_headers, &r);
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "UnsupportedMediaType"));
    response_release(&r);
    raw_call("GET", "/apis/example.ckube.io/v1/namespaces/default/frobbers", NULL, 0,
             accept_protobuf, &r);
    assert_int_equal(r.status, 406);
    assert_non_null(strstr(r.body, "NotAcceptable")); /* in JSON */
    response_release(&r);
    static const char *const fallback[] = {"Accept: " PROTOBUF ", application/json", NULL};
    raw_call("GET", "/apis/example.ckube.io/v1/namespaces/default/frobbers", NULL, 0, fallback, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: application/json"));
    response_release(&r);
    /* an error about a built-in kind is a protobuf Status */
    raw_call("GET", PODS "/nowhere", NULL, 0, accept_protobuf, &r);
    assert_int_equal(r.status, 404);
    json_t *status = NULL;
    assert_int_equal(ck_proto_decode("io.k8s.apimachinery.pkg.apis.meta.v1.Status", r.body, r.len,
                                     &status, NULL),
                     0);
    assert_string_equal(str(status, "reason"), "NotFound");
    assert_int_equal(json_integer_value(json_object_get(status, "code")), 404);
    json_decref(status);
    response_release(&r);
}

#define READERS 4
#define WRITES  40

static void *reader(void *arg)
{
    bool *ok = arg;
    *ok = true;
    for (int i = 0; *ok && i < WRITES; i++) {
        struct response r;
        raw_call("GET", i % 2 ? PODS "/busy" : PODS, NULL, 0, accept_protobuf, &r);
        json_t *obj = NULL;
        *ok = r.status == 200 &&
              ck_proto_decode(i % 2 ? POD : "io.k8s.api.core.v1.PodList", r.body, r.len, &obj,
                              NULL) == 0 &&
              (i % 2 ? json_object_get(json_object_get(obj, "metadata"), "labels") != NULL
                     : json_array_size(json_object_get(obj, "items")) > 0);
        json_decref(obj);
        response_release(&r);
    }
    return NULL;
}

static void test_readers_in_protobuf_while_a_writer_changes_the_object(void **state)
{
    (void)state;
    char *text = NULL;
    assert_true(asprintf(&text, POD_BODY, "busy") > 0);
    json_decref(call("POST", PODS, text, 201));
    free(text);
    pthread_t threads[READERS];
    bool ok[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, reader, &ok[i]), 0);
    for (int i = 0; i < WRITES; i++) {
        char patch[128];
        snprintf(patch, sizeof(patch), "{\"metadata\":{\"labels\":{\"round\":\"%d\"}}}", i);
        json_decref(call_h("PATCH", PODS "/busy", patch, merge_type, 200));
    }
    for (int i = 0; i < READERS; i++) {
        pthread_join(threads[i], NULL);
        assert_true(ok[i]);
    }
    /* the last write is what a protobuf GET answers */
    size_t len = 0;
    char *got = get_protobuf(PODS "/busy", &len);
    json_t *obj = NULL;
    assert_int_equal(ck_proto_decode(POD, got, len, &obj, NULL), 0);
    char want[16];
    snprintf(want, sizeof(want), "%d", WRITES - 1);
    assert_string_equal(str(obj, "metadata.labels.round"), want);
    json_decref(obj);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_in_protobuf),
        cmocka_unit_test(test_get_and_list_are_the_json_answers_encoded),
        cmocka_unit_test(test_watch_in_protobuf_frames),
        cmocka_unit_test(test_delete_options_in_protobuf),
        cmocka_unit_test(test_custom_resources_are_json_only),
        cmocka_unit_test(test_readers_in_protobuf_while_a_writer_changes_the_object),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
