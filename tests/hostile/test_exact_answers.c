/*
 * test_exact_answers.c - bad or odd input answered as kube-apiserver 1.32
 * answers it (issue 17, "Kubernetes' exact answers"), each checked for its
 * code, reason and message, and for what must not have happened (nothing
 * stored, no revision spent):
 *
 *   - default, kube-system and kube-public cannot be deleted: 403 (the
 *     NamespaceLifecycle admission plugin's immortal namespaces);
 *   - an unknown dryRun value: 422 CreateOptions/UpdateOptions/PatchOptions/
 *     DeleteOptions invalid (ValidateDryRun), nothing stored or deleted;
 *   - a body whose apiVersion is not the endpoint's: 400;
 *   - watch from a revision the store has not reached, a continue token from
 *     the future: 504 "Too large resource version" with its cause; a
 *     compacted one stays 410;
 *   - PUT with resourceVersion "abc": 400;
 *   - timeoutSeconds=9223372036854775807 is clamped, not wrapped: the watch
 *     stays open;
 *   - a JSON patch removing /metadata/name: 400 (checkName), no write;
 *   - DELETE answers the object at the revision of its deletion.
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "apiserver/httptest.h"

static char dir[] = "/tmp/ckube-test-hostile-exact-XXXXXX";
static struct ck_apiserver *server;

#include "apiserver/apitest.h"

#define PODS "/api/v1/namespaces/default/pods"
#define POD_BODY(name)                                                                             \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\"},\"spec\":"       \
    "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}"

/* The collection's resourceVersion: the store's revision, which every write moves. */
static long long store_revision(void)
{
    json_t *list = call("GET", PODS, NULL, 200);
    long long rv = atoll(str(list, "metadata.resourceVersion"));
    json_decref(list);
    return rv;
}

static void test_system_namespaces_cannot_be_deleted(void **state)
{
    (void)state;
    static const char *const immortal[] = {"default", "kube-system", "kube-public"};
    for (size_t i = 0; i < 3; i++) {
        char path[128], says[128];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s", immortal[i]);
        snprintf(says, sizeof(says),
                 "namespaces \"%s\" is forbidden: this namespace may not be "
                 "deleted",
                 immortal[i]);
        expect_status("DELETE", path, NULL, 403, "Forbidden", says);
        json_t *ns = call("GET", path, NULL, 200);
        assert_null(at(ns, "metadata.deletionTimestamp"));
        json_decref(ns);
    }
    /* nor through a collection delete */
    expect_status("DELETE", "/api/v1/namespaces?fieldSelector=metadata.name%3Dkube-public", NULL,
                  403, "Forbidden", "namespaces \"kube-public\" is forbidden");
    /* any other namespace goes */
    json_decref(call("POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"mortal\"}}", 201));
    json_decref(call("DELETE", "/api/v1/namespaces/mortal", NULL, 200));
}

static void test_unknown_dry_run_is_invalid_and_changes_nothing(void **state)
{
    (void)state;
    long long before = store_revision();
    expect_status("POST", PODS "?dryRun=bogus", POD_BODY("dry"), 422, "Invalid",
                  "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
                  "[]string{\"bogus\"}: supported values: \"All\"");
    assert_int_equal(status_of("GET", PODS "/dry", NULL), 404);
    json_decref(call("POST", PODS, POD_BODY("dry"), 201));
    long long created = store_revision();
    assert_true(created > before);
    expect_status("PUT", PODS "/dry?dryRun=All&dryRun=x", POD_BODY("dry"), 422, "Invalid",
                  "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
                  "[]string{\"All\", \"x\"}");
    expect_status_h("PATCH", PODS "/dry?dryRun=yes", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
                    merge_type, 422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid");
    expect_status("DELETE", PODS "/dry?dryRun=true", NULL, 422, "Invalid",
                  "DeleteOptions.meta.k8s.io \"\" is invalid");
    assert_int_equal(store_revision(), created);
    assert_int_equal(status_of("GET", PODS "/dry", NULL), 200);
    /* All is still a dry run */
    json_decref(call("POST", PODS "?dryRun=All", POD_BODY("dry2"), 201));
    assert_int_equal(status_of("GET", PODS "/dry2", NULL), 404);
}

static void test_body_api_version_must_match_the_endpoint(void **state)
{
    (void)state;
    expect_status("POST", PODS,
                  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"av\"},"
                  "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                  400, "BadRequest",
                  "the API version in the data (apps/v1) does not match the expected API version "
                  "(v1)");
    assert_int_equal(status_of("GET", PODS "/av", NULL), 404);
    expect_status("POST", "/apis/apps/v1/namespaces/default/deployments",
                  "{\"apiVersion\":\"v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"}}",
                  400, "BadRequest",
                  "the API version in the data (v1) does not match the expected "
                  "API version (apps/v1)");
    /* no apiVersion at all is fine: the endpoint's */
    json_decref(call("POST", PODS,
                     "{\"metadata\":{\"name\":\"noav\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                     "\"image\":\"x\"}]}}",
                     201));
}

/* Asserts the 504 Kubernetes' NewTooLargeResourceVersionError makes. */
static void expect_too_large(const char *path, const char *wanted)
{
    json_t *s = call("GET", path, NULL, 504);
    assert_string_equal(str(s, "reason"), "Timeout");
    char says[128];
    snprintf(says, sizeof(says), "Timeout: Too large resource version: %s, current: ", wanted);
    if (!strstr(str(s, "message"), says))
        fail_msg("%s: \"%s\" lacks \"%s\"", path, str(s, "message"), says);
    json_t *cause = json_array_get(at(s, "details.causes"), 0);
    assert_string_equal(str(cause, "reason"), "ResourceVersionTooLarge");
    assert_string_equal(str(cause, "message"), "Too large resource version");
    json_decref(s);
}

static void test_future_revisions_are_504_never_500(void **state)
{
    (void)state;
    json_decref(call("POST", PODS, POD_BODY("f1"), 201));
    json_decref(call("POST", PODS, POD_BODY("f2"), 201));
    long long now = store_revision();
    char path[256], wanted[32];
    snprintf(wanted, sizeof(wanted), "%lld", now + 1000);
    snprintf(path, sizeof(path), PODS "?watch=true&resourceVersion=%s", wanted);
    expect_too_large(path, wanted);
    expect_too_large(PODS "?watch=true&resourceVersion=9223372036854775807", "9223372036854775807");
    expect_status("GET", PODS "?watch=true&resourceVersion=99999999999999999999", NULL, 400,
                  "BadRequest", "invalid resource version");
    /* a continue token naming a revision this store has not reached */
    json_t *page = call("GET", PODS "?limit=1", NULL, 200);
    const char *token = str(page, "metadata.continue");
    assert_non_null(token);
    const char *dot = strchr(token, '.');
    assert_non_null(dot);
    snprintf(path, sizeof(path), PODS "?limit=1&continue=%lld%s", now + 1000, dot);
    json_decref(page);
    expect_too_large(path, wanted);
    snprintf(path, sizeof(path), PODS "?limit=1&continue=99999999999999999999%s", ".6162");
    expect_status("GET", path, NULL, 400, "BadRequest", NULL);
}

static void test_put_with_a_non_numeric_resource_version_is_400(void **state)
{
    (void)state;
    json_decref(call("POST", PODS, POD_BODY("rv"), 201));
    long long before = store_revision();
    expect_status("PUT", PODS "/rv",
                  "{\"metadata\":{\"name\":\"rv\",\"resourceVersion\":\"abc\"},\"spec\":"
                  "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                  400, "BadRequest", "resourceVersion: Invalid value: \"abc\"");
    assert_int_equal(store_revision(), before);
    /* a stale numeric one is still the 409 of an optimistic lock */
    expect_status("PUT", PODS "/rv",
                  "{\"metadata\":{\"name\":\"rv\",\"resourceVersion\":\"1\"},\"spec\":"
                  "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}",
                  409, "Conflict", NULL);
}

/* Whether a watch with this query is still open after `seconds` (it must not have ended). */
static bool watch_still_open_after(const char *query, int seconds)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(ck_apiserver_port(server))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    char request[512];
    int n = snprintf(request, sizeof(request),
                     "GET " PODS "?%s HTTP/1.1\r\nHost: localhost\r\n\r\n", query);
    assert_int_equal(send(fd, request, (size_t)n, 0), n);
    struct httptest_buf got = {0};
    char block[4096];
    time_t until = time(NULL) + seconds;
    bool ended = false;
    while (!ended && time(NULL) < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        ssize_t r = recv(fd, block, sizeof(block), 0);
        if (r <= 0)
            ended = true;
        else
            httptest_collect(block, 1, (size_t)r, &got);
        ended = ended || (got.len >= 5 && memcmp(got.buf + got.len - 5, "0\r\n\r\n", 5) == 0);
    }
    assert_non_null(got.buf);
    assert_non_null(strstr(got.buf, "HTTP/1.1 200"));
    free(got.buf);
    close(fd);
    return !ended;
}

static void test_huge_timeout_seconds_is_clamped(void **state)
{
    (void)state;
    assert_true(watch_still_open_after("watch=true&timeoutSeconds=9223372036854775807", 3));
    /* a real timeout still ends the stream */
    assert_false(watch_still_open_after("watch=true&timeoutSeconds=1", 5));
}

static void test_json_patch_removing_the_name_is_refused_without_a_write(void **state)
{
    (void)state;
    json_decref(call("POST", PODS, POD_BODY("named"), 201));
    long long before = store_revision();
    expect_status_h("PATCH", PODS "/named", "[{\"op\":\"remove\",\"path\":\"/metadata/name\"}]",
                    jsonpatch_type, 400, "BadRequest",
                    "the name of the object (named based on URL) was undeterminable: name must be "
                    "provided");
    expect_status_h("PATCH", PODS "/named",
                    "[{\"op\":\"replace\",\"path\":\"/metadata/name\",\"value\":\"other\"}]",
                    jsonpatch_type, 400, "BadRequest",
                    "the name of the object (other) does not match the name on the URL (named)");
    expect_status_h("PATCH", PODS "/named", "{\"metadata\":{\"namespace\":\"kube-system\"}}",
                    merge_type, 400, "BadRequest",
                    "the namespace of the object (kube-system) does not match the namespace on the "
                    "request (default)");
    assert_int_equal(store_revision(), before); /* nothing written: no event */
}

static void test_delete_answers_the_revision_of_the_deletion(void **state)
{
    (void)state;
    json_t *pod = call("POST", PODS, POD_BODY("gone"), 201);
    long long created = atoll(str(pod, "metadata.resourceVersion"));
    json_decref(pod);
    json_decref(call("POST", PODS, POD_BODY("later"), 201)); /* the store moves on */
    json_t *deleted = call("DELETE", PODS "/gone?gracePeriodSeconds=0", NULL, 200);
    long long at = atoll(str(deleted, "metadata.resourceVersion"));
    json_decref(deleted);
    assert_true(at > created + 1);
    assert_int_equal(at, store_revision());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_dry_run_is_invalid_and_changes_nothing),
        cmocka_unit_test(test_body_api_version_must_match_the_endpoint),
        cmocka_unit_test(test_future_revisions_are_504_never_500),
        cmocka_unit_test(test_put_with_a_non_numeric_resource_version_is_400),
        cmocka_unit_test(test_huge_timeout_seconds_is_clamped),
        cmocka_unit_test(test_json_patch_removing_the_name_is_refused_without_a_write),
        cmocka_unit_test(test_delete_answers_the_revision_of_the_deletion),
        /* last: were default deletable, it would take every other test's pods with it */
        cmocka_unit_test(test_system_namespaces_cannot_be_deleted),
    };
    return cmocka_run_group_tests(tests, apitest_setup, apitest_teardown);
}
