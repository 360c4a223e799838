/*
 * test_alloc_fail.c - the API server under allocation failure: every answer
 * is the request's success or a well-formed 500 InternalError Status, the
 * server keeps serving, and nothing leaks (under ASan).
 *
 * For each request of a representative set (create, get, list, list as a
 * Table, merge, strategic and JSON patch, status patch, update, a Scale read
 * and patched, delete with a
 * Success Status, deletecollection, a pod's binding, discovery, /metrics, a
 * watch; a create, get and list in Kubernetes' protobuf, whose 500s may be
 * protobuf Statuses) the test first counts the allocations the request makes through the
 * hook, then fails allocation n for n = 1, 2, ... up to that count (every one
 * up to DENSE, a spread of them beyond), resetting the object's state before
 * each attempt. Every success is held to the answer of a run without
 * failures (what is not the same twice aside: versions, uids, times, Table
 * cells). A sticky failure then fails everything from the
 * first allocation, which only the static fallback Status survives.
 *
 * jansson's allocations go through the hook too (json_set_alloc_funcs in
 * main, before any thread starts; jansson's allocator is one per process,
 * and a library must not take it from the program that embeds it, so the
 * server itself never sets it), for every request of the set: writes and
 * the three patch formats included, since lib/api reports a failed jansson
 * allocation as one. libmicrohttpd, libcurl and SQLite allocate outside the
 * hook.
 *
 * The hook counts allocations of every thread; only this test's requests
 * run while it is armed, and the test parses answers only after disarming.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <limits.h>
#include <stdatomic.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "httptest.h"

static char dir[] = "/tmp/ckube-test-alloc-fail-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define RS   "/apis/apps/v1/namespaces/default/replicasets"
#define PODS "/api/v1/namespaces/default/pods"

/* Failure points tried per request: every one up to DENSE, then about SPREAD more. */
#define DENSE  2000
#define SPREAD 200

static const char rs_body[] =
    "{\"metadata\":{\"name\":\"web\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"replicas\":1,"
    "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":"
    "{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}";

static const char pod_body[] =
    "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}";

/* One request of the set, the state it needs, and its success code. */
struct request_case {
    const char *name;
    const char *method;
    const char *path;
    const char *body;
    const char *const *headers;
    long success;
    void (*prepare)(void); /* run disarmed before every attempt */
    bool jansson;          /* jansson's allocations may fail too */
    bool stream;           /* a watch: 200, then events (an ERROR one a 500 Status) */
    const char *proto;     /* the message of a protobuf answer; NULL: JSON */
    bool proto_body;       /* the body is rs_proto (the ReplicaSet in protobuf) */
};

/* rs_body in Kubernetes' protobuf, made in main() */
static char *rs_proto;
static size_t rs_proto_len;

#define RS_MESSAGE "io.k8s.api.apps.v1.ReplicaSet"

/* Whether jansson allocates through the hook (for the request being tried). */
static atomic_bool jansson_hooked;

static void *json_alloc(size_t size)
{
    return atomic_load(&jansson_hooked) ? ck__malloc(size) : malloc(size);
}

static void rs_absent(void)
{
    long s = status_of("DELETE", RS "/web", NULL);
    assert_true(s == 200 || s == 404);
}

static void rs_present(void)
{
    long s = status_of("POST", RS, rs_body);
    assert_true(s == 201 || s == 409);
}

static void pod_unbound(void)
{
    long s = status_of("DELETE", PODS "/p?gracePeriodSeconds=0", NULL);
    assert_true(s == 200 || s == 404);
    assert_int_equal(status_of("POST", PODS, pod_body), 201);
}

static void nothing(void)
{
}

static const char *const table_accept[] = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io",
                                           NULL};
static const char *const proto_accept[] = {"Accept: application/vnd.kubernetes.protobuf", NULL};
static const char *const proto_both[] = {"Content-Type: application/vnd.kubernetes.protobuf",
                                         "Accept: application/vnd.kubernetes.protobuf", NULL};

static const struct request_case cases[] = {
    {"create", "POST", RS, rs_body, NULL, 201, rs_absent, true, false, NULL, false},
    {"get", "GET", RS "/web", NULL, NULL, 200, rs_present, true, false, NULL, false},
    {"list", "GET", RS "?labelSelector=app%3Dweb&limit=5", NULL, NULL, 200, rs_present, true, false,
     NULL, false},
    {"list table", "GET", RS, NULL, table_accept, 200, rs_present, true, false, NULL, false},
    {"patch", "PATCH", RS "/web", "{\"spec\":{\"replicas\":3}}", merge_type, 200, rs_present, true,
     false, NULL, false},
    {"strategic patch", "PATCH", RS "/web",
     "{\"metadata\":{\"labels\":{\"tier\":\"fe\"}},\"spec\":{\"template\":{\"spec\":"
     "{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.27\"},{\"name\":\"d\",\"image\":"
     "\"busybox\"}],\"$setElementOrder/containers\":[{\"name\":\"d\"},{\"name\":\"c\"}]}}}}",
     strategic_type, 200, rs_present, true, false, NULL, false},
    {"json patch", "PATCH", RS "/web",
     "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":4},{\"op\":\"add\",\"path\":"
     "\"/metadata/annotations\",\"value\":{\"a\":\"b\"}},{\"op\":\"copy\",\"from\":"
     "\"/metadata/labels/app\",\"path\":\"/metadata/annotations/c\"},{\"op\":\"test\",\"path\":"
     "\"/spec/replicas\",\"value\":4}]",
     jsonpatch_type, 200, rs_present, true, false, NULL, false},
    {"patch status", "PATCH", RS "/web/status", "{\"status\":{\"replicas\":2}}", merge_type, 200,
     rs_present, true, false, NULL, false},
    {"update", "PUT", RS "/web", rs_body, NULL, 200, rs_present, true, false, NULL, false},
    {"scale patch", "PATCH", RS "/web/scale", "{\"spec\":{\"replicas\":2}}", merge_type, 200,
     rs_present, true, false, NULL, false},
    {"scale get", "GET", RS "/web/scale", NULL, NULL, 200, rs_present, true, false, NULL, false},
    {"delete", "DELETE", RS "/web", NULL, NULL, 200, rs_present, true, false, NULL, false},
    {"deletecollection", "DELETE", RS "?labelSelector=app%3Dweb", NULL, NULL, 200, rs_present, true,
     false, NULL, false},
    {"binding", "POST", PODS "/p/binding",
     "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p\"},\"target\":"
     "{\"kind\":\"Node\",\"name\":\"n1\"}}",
     NULL, 201, pod_unbound, true, false, NULL, false},
    {"discovery", "GET", "/apis/apps/v1", NULL, NULL, 200, nothing, true, false, NULL, false},
    {"metrics", "GET", "/metrics", NULL, NULL, 200, nothing, true, false, NULL, false},
    {"watch", "GET", RS "?watch=1&timeoutSeconds=1&labelSelector=app%3Dweb", NULL, NULL, 200,
     rs_present, true, true, NULL, false},
    {"create in protobuf", "POST", RS, NULL, proto_both, 201, rs_absent, true, false, RS_MESSAGE,
     true},
    {"get in protobuf", "GET", RS "/web", NULL, proto_accept, 200, rs_present, true, false,
     RS_MESSAGE, false},
    {"list in protobuf", "GET", RS "?labelSelector=app%3Dweb", NULL, proto_accept, 200, rs_present,
     true, false, "io.k8s.api.apps.v1.ReplicaSetList", false},
};

/* A protobuf answer (its Content-Type says) as JSON, or NULL when it does not decode. */
static json_t *proto_answer(const struct response *r, const char *message)
{
    if (!r->headers || !strstr(r->headers, "Content-Type: application/vnd.kubernetes.protobuf"))
        return NULL;
    json_t *v = NULL;
    return ck_proto_decode(message, r->body, r->len, &v, NULL) == 0 ? v : NULL;
}

/* Asserts that r is a well-formed 500 InternalError Status. */
static void expect_internal_error(const struct request_case *c, unsigned long n,
                                  const struct response *r)
{
    json_error_t jerr;
    /* a protobuf-preferring client gets its Status in protobuf when that could be made */
    json_t *s = proto_answer(r, "io.k8s.apimachinery.pkg.apis.meta.v1.Status");
    if (!s)
        s = json_loads(r->body, 0, &jerr);
    if (!s)
        fail_msg("%s, allocation %lu failed: 500 that is not JSON: %s", c->name, n, r->body);
    const char *kind = json_string_value(json_object_get(s, "kind"));
    const char *reason = json_string_value(json_object_get(s, "reason"));
    const char *status = json_string_value(json_object_get(s, "status"));
    if (!kind || strcmp(kind, "Status") != 0 || !reason || strcmp(reason, "InternalError") != 0 ||
        !status || strcmp(status, "Failure") != 0 ||
        json_integer_value(json_object_get(s, "code")) != 500 ||
        !json_is_string(json_object_get(s, "message")))
        fail_msg("%s, allocation %lu failed: not a 500 InternalError Status: %s", c->name, n,
                 r->body);
    json_decref(s);
}

/* Runs c once with allocation n failing (0: none); returns how many allocations it made. */
/* Asserts that every line of a watch stream is an event, and an ERROR one a 500 Status. */
static void expect_events(const struct request_case *c, unsigned long n, struct response *r)
{
    char *save = NULL;
    for (char *line = strtok_r(r->body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_error_t jerr;
        json_t *ev = json_loads(line, 0, &jerr);
        if (!ev)
            fail_msg("%s, allocation %lu failed: a line that is not JSON: %s", c->name, n, line);
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (!type || !json_is_object(json_object_get(ev, "object")))
            fail_msg("%s, allocation %lu failed: not an event: %s", c->name, n, line);
        if (strcmp(type, "ERROR") == 0) {
            char *status = json_dumps(json_object_get(ev, "object"), 0);
            struct response as_body = {.status = 500, .body = status};
            expect_internal_error(c, n, &as_body);
            free(status);
        }
        json_decref(ev);
    }
}

/* What a request answered with memory to spare (normalized), to hold every other success to. */
static json_t *reference;

/*
 * Drops what differs between two runs of one request: versions, uids, times (managedFields'
 * included), Table cells (ages).
 */
static void normalize(json_t *v)
{
    static const char *const volatile_keys[] = {"resourceVersion",    "uid",  "creationTimestamp",
                                                "lastTransitionTime", "time", "cells"};
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        normalize(item);
    }
    for (i = 0; i < sizeof(volatile_keys) / sizeof(volatile_keys[0]); i++)
        json_object_del(v, volatile_keys[i]);
    const char *key;
    json_object_foreach(v, key, item)
    {
        normalize(item);
    }
}

/* A success must be the success: the answer of the run without failures, as far as it is fixed. */
static void expect_reference(const struct request_case *c, unsigned long n,
                             const struct response *r)
{
    if (c->stream || strcmp(c->path, "/metrics") == 0)
        return; /* events and counters are not the same twice */
    json_error_t jerr;
    json_t *got = c->proto ? proto_answer(r, c->proto) : json_loads(r->body, 0, &jerr);
    if (!got)
        fail_msg("%s, allocation %lu failed: a success that is not %s: %s", c->name, n,
                 c->proto ? "protobuf" : "JSON", r->body);
    normalize(got);
    if (!n) {
        json_decref(reference);
        reference = got;
        return;
    }
    if (!json_equal(got, reference)) {
        char *want = json_dumps(reference, JSON_COMPACT);
        fail_msg("%s, allocation %lu failed: another success: %s\nwant %s", c->name, n, r->body,
                 want);
    }
    json_decref(got);
}

static unsigned long attempt(const struct request_case *c, unsigned long n)
{
    c->prepare();
    struct response r;
    atomic_store(&jansson_hooked, c->jansson);
    ck__alloc_fail_at(n ? n : ULONG_MAX, false);
    if (c->proto_body)
        http_call_n(server, c->method, c->path, rs_proto, rs_proto_len, c->headers, &r);
    else
        http_call(server, c->method, c->path, c->body, c->headers, &r);
    unsigned long made = ck__alloc_fail_at(0, false);
    atomic_store(&jansson_hooked, false);
    if (r.status == 500 && n)
        expect_internal_error(c, n, &r);
    else if (r.status != c->success)
        fail_msg("%s, allocation %lu failed: answered %ld: %s", c->name, n, r.status, r.body);
    else if (c->stream)
        expect_events(c, n, &r);
    else
        expect_reference(c, n, &r);
    response_release(&r);
    return made;
}

static void test_every_failure_answers_500_or_success(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct request_case *c = &cases[i];
        attempt(c, 0);                       /* the state every later attempt starts from */
        unsigned long total = attempt(c, 0); /* and the reference answer */
        assert_true(total > 0);
        print_message("%s: %lu allocations\n", c->name, total);
        unsigned long step = total > DENSE ? (total - DENSE) / SPREAD + 1 : 1;
        for (unsigned long n = 1; n <= total; n += n < DENSE ? 1 : step)
            if (attempt(c, n) < n)
                break; /* the request finished before allocation n */
        attempt(c, 0); /* and it still works */
    }
    json_decref(reference);
}

static void test_sticky_failure_answers_static_status(void **state)
{
    (void)state;
    struct response r;
    atomic_store(&jansson_hooked, true);
    ck__alloc_fail_at(1, true); /* every allocation from now on fails */
    http_call(server, "GET", RS "/web", NULL, NULL, &r);
    ck__alloc_fail_at(0, false);
    atomic_store(&jansson_hooked, false);
    assert_int_equal(r.status, 500);
    json_t *s = parse(&r);
    assert_string_equal(json_string_value(json_object_get(s, "reason")), "InternalError");
    assert_int_equal(json_integer_value(json_object_get(s, "code")), 500);
    json_decref(s);
    response_release(&r);
    /* the server is unharmed */
    rs_present();
    json_decref(call("GET", RS "/web", NULL, 200));
    json_decref(call("GET", "/api/v1/namespaces", NULL, 200));
}

int main(void)
{
    /* before any thread uses jansson: see the header comment */
    json_set_alloc_funcs(json_alloc, free);
    json_t *rs = json_loads(rs_body, 0, NULL);
    if (!rs || json_object_set_new(rs, "apiVersion", json_string("apps/v1")) < 0 ||
        json_object_set_new(rs, "kind", json_string("ReplicaSet")) < 0 ||
        ck_proto_encode(RS_MESSAGE, rs, &rs_proto, &rs_proto_len, NULL) < 0)
        return 1;
    json_decref(rs);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_failure_answers_500_or_success),
        cmocka_unit_test(test_sticky_failure_answers_static_status),
    };
    int failed = cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
    free(rs_proto);
    return failed;
}
