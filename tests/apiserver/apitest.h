/*
 * apitest.h - assertions over the API server's answers, for the tests that
 * drive it over HTTP: call and check the status code, check a Status
 * object, read values at dotted paths, and the group setup that starts a
 * server. Include after defining
 * `static char dir[] = "/tmp/...-XXXXXX";` and `static struct ck_apiserver *server;`.
 */
#ifndef CKUBE_TESTS_APITEST_H
#define CKUBE_TESTS_APITEST_H

#include "httptest.h"

static const char *const merge_type[] = {"Content-Type: application/merge-patch+json", NULL};
static const char *const jsonpatch_type[] = {"Content-Type: application/json-patch+json", NULL};
static const char *const strategic_type[] = {"Content-Type: application/strategic-merge-patch+json",
                                             NULL};

static inline json_t *parse(const struct response *r)
{
    json_error_t jerr;
    json_t *v = json_loads(r->body, 0, &jerr);
    if (!v)
        fail_msg("not JSON (%ld): %s", r->status, r->body);
    return v;
}

/* Calls and returns only the status code, whatever it is. */
static inline long status_of(const char *method, const char *path, const char *body)
{
    struct response r;
    http_call(server, method, path, body, NULL, &r);
    long status = r.status;
    response_release(&r);
    return status;
}

/* Calls with headers and asserts the status code; returns the parsed body. */
static inline json_t *call_h(const char *method, const char *path, const char *body,
                             const char *const *headers, long want)
{
    struct response r;
    http_call(server, method, path, body, headers, &r);
    if (r.status != want)
        fail_msg("%s %s: %ld, want %ld: %s", method, path, r.status, want, r.body);
    json_t *v = parse(&r);
    response_release(&r);
    return v;
}

static inline json_t *call(const char *method, const char *path, const char *body, long want)
{
    return call_h(method, path, body, NULL, want);
}

/* Asserts a Status answer with its code, reason and a fragment of its message. */
static inline void expect_status_h(const char *method, const char *path, const char *body,
                                   const char *const *headers, long code, const char *reason,
                                   const char *says)
{
    json_t *s = call_h(method, path, body, headers, code);
    assert_string_equal(json_string_value(json_object_get(s, "kind")), "Status");
    assert_string_equal(json_string_value(json_object_get(s, "reason")), reason);
    const char *msg = json_string_value(json_object_get(s, "message"));
    if (says && !strstr(msg, says))
        fail_msg("%s %s: \"%s\" lacks \"%s\"", method, path, msg, says);
    json_decref(s);
}

/* The value at a dotted path of v ("spec.replicas"); borrowed. */
static inline json_t *at(json_t *v, const char *dotted)
{
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", dotted);
    char *save = NULL;
    for (char *k = strtok_r(copy, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
        v = json_object_get(v, k);
    return v;
}

static inline const char *str(json_t *v, const char *dotted)
{
    return json_string_value(at(v, dotted));
}

static inline void expect_status(const char *method, const char *path, const char *body, long code,
                                 const char *reason, const char *says)
{
    expect_status_h(method, path, body, NULL, code, reason, says);
}

static inline long long num(json_t *v, const char *dotted)
{
    return (long long)json_integer_value(at(v, dotted));
}

/*
 * cmocka group setup: libcurl, and a server (without a feature gate function)
 * on a fresh store under dir.
 */
static inline int apitest_setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    server = test_server_start(dir);
    return server ? 0 : -1;
}

static inline int apitest_teardown(void **state)
{
    (void)state;
    test_server_stop(server, dir);
    curl_global_cleanup();
    return 0;
}

#endif /* CKUBE_TESTS_APITEST_H */
