/*
 * test_crd_conversion.c - tests for lib/apiserver/conversion.c (and the webhook client
 * it shares with the admission webhooks) over real HTTP: a CustomResourceDefinition
 * whose versions v1 (stored, spec.cronSpec) and v2 (spec.schedule) are converted by a
 * conversion webhook served here over HTTPS (libmicrohttpd with a certificate of a CA
 * made for the test with the server's own PKI code). Checked: the validation of the
 * Webhook strategy, the ConversionReview sent (uid, desiredAPIVersion, only the objects
 * not yet in that version, a list in one review), create, get, list, update and watch
 * through both versions, every check of the answer with Kubernetes' words, metadata
 * restored but labels and annotations, and a webhook that is down (500).
 */
#define _GNU_SOURCE
#include "cktest.h"

#include <microhttpd.h>
#include <pthread.h>
#include <time.h>

#include "ckube/auth.h"
#include "httptest.h"

static char dir[] = "/tmp/ckube-test-crdconv-XXXXXX";
static char pki_dir[] = "/tmp/ckube-test-crdconv-pki-XXXXXX";
static struct ck_apiserver *server;

#include "apitest.h"

#define CRDS "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define V1   "/apis/stable.example.com/v1/namespaces/default/crontabs"
#define V2   "/apis/stable.example.com/v2/namespaces/default/crontabs"

/* ---- the conversion webhook ------------------------------------------------------ */

/* How the webhook misbehaves (the test sets it between requests). */
enum mode {
    CONVERT,        /* converts right */
    WRONG_UID,      /* answers another uid */
    FAILURE,        /* result.status Failure with a message */
    FAILURE_SILENT, /* result.status Failure without one */
    TOO_FEW,        /* one object less */
    WRONG_VERSION,  /* leaves apiVersion as it was */
    WRONG_KIND,     /* changes kind */
    WRONG_NAME,     /* changes metadata.name */
    META_CHANGES,   /* changes generation (restored) and a label (kept) */
    BAD_LABEL,      /* a label value that is not a valid one */
    WRONG_REVIEW,   /* answers an AdmissionReview */
};

static struct {
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t lock;
    enum mode mode;
    int reviews;     /* how many were received */
    json_t *last;    /* the last review received */
    char *ca_bundle; /* base64 of the CA's PEM */
} hook = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct upload {
    char *data;
    size_t len;
};

static void rename_member(json_t *obj, const char *from, const char *to)
{
    json_t *v = json_object_get(obj, from);
    if (!v)
        return;
    json_object_set(obj, to, v);
    json_object_del(obj, from);
}

/* One object converted to desired: v1 spec.cronSpec <-> v2 spec.schedule. */
static json_t *convert_one(const json_t *in, const char *desired, enum mode mode)
{
    json_t *out = json_deep_copy(in);
    json_t *spec = json_object_get(out, "spec");
    if (strcmp(desired, "stable.example.com/v2") == 0)
        rename_member(spec, "cronSpec", "schedule");
    else
        rename_member(spec, "schedule", "cronSpec");
    if (mode != WRONG_VERSION)
        json_object_set_new(out, "apiVersion", json_string(desired));
    json_t *meta = json_object_get(out, "metadata");
    if (mode == WRONG_KIND)
        json_object_set_new(out, "kind", json_string("CronJob"));
    if (mode == WRONG_NAME)
        json_object_set_new(meta, "name", json_string("other"));
    if (mode == META_CHANGES || mode == BAD_LABEL) {
        json_object_set_new(meta, "generation", json_integer(99));
        json_t *labels = json_object_get(meta, "labels");
        if (!labels)
            json_object_set_new(meta, "labels", labels = json_object());
        json_object_set_new(labels, "converted",
                            json_string(mode == BAD_LABEL ? "not a value!" : "yes"));
    }
    return out;
}

static json_t *answer(const json_t *review)
{
    pthread_mutex_lock(&hook.lock);
    enum mode mode = hook.mode;
    hook.reviews++;
    json_decref(hook.last);
    hook.last = json_deep_copy(review);
    pthread_mutex_unlock(&hook.lock);
    const json_t *req = json_object_get(review, "request");
    const char *desired = json_string_value(json_object_get(req, "desiredAPIVersion"));
    json_t *converted = json_array();
    size_t i;
    const json_t *obj;
    json_array_foreach(json_object_get(req, "objects"), i, obj)
    {
        if (mode == TOO_FEW && i == 0)
            continue;
        json_array_append_new(converted, convert_one(obj, desired ? desired : "", mode));
    }
    const char *uid = json_string_value(json_object_get(req, "uid"));
    json_t *result = mode == FAILURE ? json_pack("{s:s, s:s}", "status", "Failure", "message",
                                                 "cannot convert that")
                     : mode == FAILURE_SILENT ? json_pack("{s:s}", "status", "Failure")
                                              : json_pack("{s:s}", "status", "Success");
    json_t *resp = json_pack("{s:s, s:o, s:o}", "uid", mode == WRONG_UID ? "not-yours" : uid,
                             "result", result, "convertedObjects", converted);
    return json_pack(
        "{s:s, s:s, s:o}", "apiVersion",
        mode == WRONG_REVIEW ? "admission.k8s.io/v1"
                             : json_string_value(json_object_get(review, "apiVersion")),
        "kind", mode == WRONG_REVIEW ? "AdmissionReview" : "ConversionReview", "response", resp);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
    (void)cls, (void)url, (void)method, (void)version;
    struct upload *u = *con_cls;
    if (!u) {
        *con_cls = calloc(1, sizeof(*u));
        return MHD_YES;
    }
    if (*size) {
        u->data = realloc(u->data, u->len + *size + 1);
        memcpy(u->data + u->len, data, *size);
        u->len += *size;
        u->data[u->len] = '\0';
        *size = 0;
        return MHD_YES;
    }
    json_t *review = u->data ? json_loads(u->data, 0, NULL) : NULL;
    json_t *out = review ? answer(review) : json_object();
    char *text = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    json_decref(review);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    enum MHD_Result r = MHD_queue_response(conn, 200, resp);
    MHD_destroy_response(resp);
    return r;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                    enum MHD_RequestTerminationCode code)
{
    (void)cls, (void)conn, (void)code;
    struct upload *u = *con_cls;
    if (u)
        free(u->data);
    free(u);
    *con_cls = NULL;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

static void hook_start(void)
{
    struct ck_pki_options opts = {.dir = pki_dir, .listen_address = "127.0.0.1"};
    struct ck_pki pki = {0};
    struct ck_err err = {0};
    assert_int_equal(ck_pki_ensure(&opts, &pki, &err), 0);
    char *cert = slurp(pki.server_cert), *key = slurp(pki.server_key), *ca = slurp(pki.ca_cert);
    hook.ca_bundle = ck_base64_encode(ca, strlen(ca));
    assert_non_null(hook.ca_bundle);
    hook.daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_TLS, 0, NULL,
        NULL, on_request, NULL, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
        MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
    assert_non_null(hook.daemon);
    hook.port = MHD_get_daemon_info(hook.daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
    free(cert);
    free(key);
    free(ca);
    ck_pki_release(&pki);
}

static void set_mode(enum mode m)
{
    pthread_mutex_lock(&hook.lock);
    hook.mode = m;
    pthread_mutex_unlock(&hook.lock);
}

static int reviews(void)
{
    pthread_mutex_lock(&hook.lock);
    int n = hook.reviews;
    pthread_mutex_unlock(&hook.lock);
    return n;
}

/* A copy of the last review received. */
static json_t *last_review(void)
{
    pthread_mutex_lock(&hook.lock);
    json_t *r = json_deep_copy(hook.last);
    pthread_mutex_unlock(&hook.lock);
    assert_non_null(r);
    return r;
}

/* ---- the definition ---------------------------------------------------------------- */

#define VERSION(name, storage, field)                                                              \
    "{\"name\":\"" name "\",\"served\":true,\"storage\":" storage ","                              \
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"                        \
    "\"spec\":{\"type\":\"object\",\"properties\":{\"" field "\":{\"type\":\"string\"}}}}}},"      \
    "\"selectableFields\":[{\"jsonPath\":\".spec." field "\"}]}"

/* The definition of plural (kind CronTab) with conversion (a JSON object's members). */
static char *crd_named(const char *plural, const char *conversion)
{
    char *out = NULL;
    if (asprintf(
            &out,
            "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
            "\"metadata\":{\"name\":\"%s.stable.example.com\"},"
            "\"spec\":{\"group\":\"stable.example.com\",\"scope\":\"Namespaced\","
            "\"names\":{\"plural\":\"%s\",\"kind\":\"CronTab\"},"
            "\"versions\":[" VERSION("v1", "true", "cronSpec") "," VERSION(
                "v2", "false", "schedule") "],"
                                           "\"conversion\":{%s}}}",
            plural, plural, conversion) < 0)
        abort();
    return out;
}

static char *crd_with(const char *conversion)
{
    return crd_named("crontabs", conversion);
}

static char *webhook_conversion(const char *review_versions)
{
    char *out = NULL;
    if (asprintf(&out,
                 "\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":%s,"
                 "\"clientConfig\":{\"url\":\"https://127.0.0.1:%d/convert\",\"caBundle\":\"%s\"}}",
                 review_versions, hook.port, hook.ca_bundle) < 0)
        abort();
    return out;
}

static void pause_briefly(void)
{
    struct timespec t = {0, 20 * 1000 * 1000};
    nanosleep(&t, NULL);
}

static void await_status(const char *path, long want)
{
    for (int i = 0; i < 1000; i++) {
        if (status_of("GET", path, NULL) == want)
            return;
        pause_briefly();
    }
    fail_msg("GET %s never answered %ld", path, want);
}

static int setup(void **state)
{
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!mkdtemp(pki_dir))
        return -1;
    hook_start();
    server = test_server_start(dir);
    if (!server)
        return -1;
    char *conv = webhook_conversion("[\"v1\"]");
    char *crd = crd_with(conv);
    json_decref(call("POST", CRDS, crd, 201));
    free(crd);
    free(conv);
    await_status(V2, 200);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_server_stop(server, dir);
    MHD_stop_daemon(hook.daemon);
    json_decref(hook.last);
    free(hook.ca_bundle);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", pki_dir);
    if (system(cmd) != 0)
        return -1;
    curl_global_cleanup();
    return 0;
}

/* ---- tests ----------------------------------------------------------------------- */

/* POSTs a definition of crontabz with conversion and expects a 422 saying says. */
static void expect_invalid(const char *conversion, const char *says)
{
    /* another name, so that the served definition is left alone */
    char *crd = crd_named("crontabz", conversion);
    expect_status("POST", CRDS, crd, 422, "Invalid", says);
    free(crd);
}

static void test_strategy_validation(void **state)
{
    (void)state;
    expect_invalid("\"strategy\":\"Webhook\"",
                   "spec.conversion.webhookClientConfig: Required value: required when strategy "
                   "is set to Webhook");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{}}",
                   "spec.conversion.webhookClientConfig: Required value: exactly one of url or "
                   "service is required");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"url\":\"http://h/c\"}}",
                   "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is "
                   "the only allowed URL scheme");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"url\":\"https://u@h/c?q=1\"}}",
                   "user information is not permitted in the URL");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"url\":\"https://h/c?q=1\"}}",
                   "query parameters are not permitted in the URL");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"url\":\"https://h/c#f\"}}",
                   "fragments are not permitted in the URL");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"service\":{\"name\":\"s\"}}}",
                   "spec.conversion.webhookClientConfig.service.namespace: Required value: "
                   "service namespace is required");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"url\":\"https://h/c\",\"caBundle\":\"bm90IGEgY2VydA==\"}}",
                   "spec.conversion.webhookClientConfig.caBundle: Invalid value");
    expect_invalid(
        "\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":\"https://h/c\"}}",
        "spec.conversion.conversionReviewVersions: Required value");
    expect_invalid(
        "\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v3\"],"
        "\"clientConfig\":{\"url\":\"https://h/c\"}}",
        "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v3\"}: must "
        "include at least one of v1, v1beta1");
    expect_invalid("\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\","
                   "\"v1\"],\"clientConfig\":{\"url\":\"https://h/c\"}}",
                   "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v1\": duplicate "
                   "version");
    expect_invalid("\"strategy\":\"None\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],"
                   "\"clientConfig\":{\"url\":\"https://h/c\"}}",
                   "spec.conversion.webhookClientConfig: Forbidden: should not be set when "
                   "strategy is not set to Webhook");
    /* preserveUnknownFields: true cannot convert */
    char *conv = webhook_conversion("[\"v1\"]");
    char *crd = crd_named("crontabz", conv);
    json_t *obj = json_loads(crd, 0, NULL);
    json_object_set_new(json_object_get(obj, "spec"), "preserveUnknownFields", json_true());
    char *text = json_dumps(obj, JSON_COMPACT);
    expect_status("POST", CRDS, text, 422, "Invalid",
                  "spec.conversion.strategy: Invalid value: \"Webhook\": must be None if "
                  "spec.preserveUnknownFields is true");
    free(text);
    json_decref(obj);
    free(crd);
    free(conv);
}

static void test_create_and_read_through_both_versions(void **state)
{
    (void)state;
    set_mode(CONVERT);
    /* created through v2: converted to the storage version v1 before it is stored */
    int before = reviews();
    json_t *made = call("POST", V2,
                        "{\"apiVersion\":\"stable.example.com/v2\",\"kind\":\"CronTab\","
                        "\"metadata\":{\"name\":\"a\"},\"spec\":{\"schedule\":\"* * * * */5\"}}",
                        201);
    assert_true(reviews() > before);
    /* the answer is in v2 again */
    assert_string_equal(str(made, "apiVersion"), "stable.example.com/v2");
    assert_string_equal(str(made, "spec.schedule"), "* * * * */5");
    assert_null(at(made, "spec.cronSpec"));
    assert_non_null(str(made, "metadata.resourceVersion"));
    json_decref(made);

    /* read through v1: the stored object, no webhook call */
    before = reviews();
    json_t *v1 = call("GET", V1 "/a", NULL, 200);
    assert_int_equal(reviews(), before);
    assert_string_equal(str(v1, "apiVersion"), "stable.example.com/v1");
    assert_string_equal(str(v1, "spec.cronSpec"), "* * * * */5");
    const char *uid = str(v1, "metadata.uid");

    /* read through v2: one review of the one object, asking for v2 */
    json_t *v2 = call("GET", V2 "/a", NULL, 200);
    assert_int_equal(reviews(), before + 1);
    assert_string_equal(str(v2, "apiVersion"), "stable.example.com/v2");
    assert_string_equal(str(v2, "spec.schedule"), "* * * * */5");
    assert_string_equal(str(v2, "metadata.uid"), uid);
    assert_string_equal(str(v2, "metadata.resourceVersion"), str(v1, "metadata.resourceVersion"));
    json_t *review = last_review();
    assert_string_equal(str(review, "apiVersion"), "apiextensions.k8s.io/v1");
    assert_string_equal(str(review, "kind"), "ConversionReview");
    assert_string_equal(str(review, "request.desiredAPIVersion"), "stable.example.com/v2");
    assert_true(strlen(str(review, "request.uid")) > 0);
    json_t *objects = at(review, "request.objects");
    assert_int_equal(json_array_size(objects), 1);
    assert_string_equal(str(json_array_get(objects, 0), "apiVersion"), "stable.example.com/v1");
    assert_string_equal(str(json_array_get(objects, 0), "spec.cronSpec"), "* * * * */5");
    json_decref(review);
    json_decref(v1);
    json_decref(v2);
}

static void test_list_is_one_review(void **state)
{
    (void)state;
    set_mode(CONVERT);
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"l1\"},\"spec\":{\"cronSpec\":\"1\"}}",
                     201));
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"l2\"},\"spec\":{\"cronSpec\":\"2\"}}",
                     201));
    int before = reviews();
    json_t *list = call("GET", V1, NULL, 200);
    assert_int_equal(reviews(), before); /* everything stored in v1 already */
    size_t n = json_array_size(json_object_get(list, "items"));
    assert_true(n >= 2);
    json_decref(list);
    list = call("GET", V2, NULL, 200);
    assert_int_equal(reviews(), before + 1);
    assert_string_equal(str(list, "apiVersion"), "stable.example.com/v2");
    assert_int_equal(json_array_size(json_object_get(list, "items")), n);
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        assert_string_equal(str(item, "apiVersion"), "stable.example.com/v2");
        assert_non_null(str(item, "spec.schedule"));
        assert_null(at(item, "spec.cronSpec"));
    }
    json_t *review = last_review();
    assert_int_equal(json_array_size(at(review, "request.objects")), n);
    json_decref(review);
    json_decref(list);
    /* a field selector on a field only v2 has sees the objects converted */
    list = call("GET", V2 "?fieldSelector=spec.schedule%3D2", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 1);
    assert_string_equal(str(json_array_get(json_object_get(list, "items"), 0), "metadata.name"),
                        "l2");
    json_decref(list);
}

static void test_update_through_v2(void **state)
{
    (void)state;
    set_mode(CONVERT);
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"u\"},\"spec\":{\"cronSpec\":\"old\"}}",
                     201));
    json_t *v2 = call("GET", V2 "/u", NULL, 200);
    json_object_set_new(json_object_get(v2, "spec"), "schedule", json_string("new"));
    char *text = json_dumps(v2, JSON_COMPACT);
    json_t *put = call("PUT", V2 "/u", text, 200);
    assert_string_equal(str(put, "apiVersion"), "stable.example.com/v2");
    assert_string_equal(str(put, "spec.schedule"), "new");
    free(text);
    json_decref(put);
    json_decref(v2);
    json_t *v1 = call("GET", V1 "/u", NULL, 200);
    assert_string_equal(str(v1, "spec.cronSpec"), "new");
    assert_null(at(v1, "spec.schedule"));
    json_decref(v1);
    /* a merge patch through v2 */
    json_decref(call_h("PATCH", V2 "/u", "{\"spec\":{\"schedule\":\"patched\"}}", merge_type, 200));
    v1 = call("GET", V1 "/u", NULL, 200);
    assert_string_equal(str(v1, "spec.cronSpec"), "patched");
    json_decref(v1);
}

static void test_watch_through_v2(void **state)
{
    (void)state;
    set_mode(CONVERT);
    /* from a resourceVersion before the create: the event comes from the store's watch */
    json_t *list = call("GET", V1, NULL, 200);
    char path[320];
    snprintf(path, sizeof(path),
             "%s?watch=1&resourceVersion=%s&fieldSelector=metadata.name%%3Dw&timeoutSeconds=1", V2,
             str(list, "metadata.resourceVersion"));
    json_decref(list);
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"w\"},\"spec\":{\"cronSpec\":\"watched\"}}",
                     201));
    struct response r;
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    json_t *ev = json_loads(r.body, JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(ev);
    assert_string_equal(str(ev, "type"), "ADDED");
    assert_string_equal(str(ev, "object.apiVersion"), "stable.example.com/v2");
    assert_string_equal(str(ev, "object.spec.schedule"), "watched");
    json_decref(ev);
    response_release(&r);

    /* a field only v2 has selects the event: the selector sees it converted */
    char *schedule = strstr(path, "metadata.name%3Dw");
    assert_non_null(schedule);
    char by_schedule[400];
    snprintf(by_schedule, sizeof(by_schedule), "%.*sspec.schedule%%3Dwatched%s",
             (int)(schedule - path), path, schedule + strlen("metadata.name%3Dw"));
    http_call(server, "GET", by_schedule, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"type\":\"ADDED\""));
    assert_non_null(strstr(r.body, "\"schedule\":\"watched\""));
    response_release(&r);

    /*
     * an event that cannot be converted ends the watch, as kube-apiserver's encoder
     * does: with a selector (converted to be selected) and without (converted to be sent)
     */
    set_mode(FAILURE);
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "ADDED"));
    assert_null(strstr(r.body, "watched"));
    response_release(&r);
    char *all = strstr(path, "&fieldSelector=");
    *all = '\0';
    strcat(path, "&timeoutSeconds=1");
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "ADDED"));
    response_release(&r);
    set_mode(CONVERT);
    http_call(server, "GET", path, NULL, NULL, &r);
    assert_non_null(strstr(r.body, "\"schedule\":\"watched\""));
    response_release(&r);
}

/* A GET through v2 of object o fails with a 500 whose message holds says. */
static void expect_failure(enum mode m, const char *o, const char *says)
{
    set_mode(m);
    char path[256];
    snprintf(path, sizeof(path), V2 "/%s", o);
    expect_status("GET", path, NULL, 500, "InternalError", says);
    set_mode(CONVERT);
}

static void test_answer_checks(void **state)
{
    (void)state;
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"c\",\"labels\":{\"a\":\"b\"}},"
                     "\"spec\":{\"cronSpec\":\"x\"}}",
                     201));
    expect_failure(WRONG_UID, "c",
                   "conversion webhook for stable.example.com/v1, Kind=CronTab failed: expected "
                   "response.uid=");
    expect_failure(FAILURE, "c",
                   "conversion webhook for stable.example.com/v1, Kind=CronTab failed: cannot "
                   "convert that");
    expect_failure(FAILURE_SILENT, "c",
                   "failed: response.result.status was 'Failure', not 'Success'");
    expect_failure(TOO_FEW, "c",
                   "conversion webhook for stable.example.com/v1, Kind=CronTab returned 0 "
                   "objects, expected 1");
    expect_failure(WRONG_VERSION, "c",
                   "returned invalid object at index 0: invalid groupVersion (expected "
                   "stable.example.com/v2, received stable.example.com/v1)");
    expect_failure(WRONG_KIND, "c",
                   "returned invalid object at index 0: invalid kind (expected CronTab, received "
                   "CronJob)");
    expect_failure(WRONG_NAME, "c", "returned invalid object: must have the same name: c != other");
    expect_failure(BAD_LABEL, "c", "returned invalid metadata: metadata.labels: Invalid value");
    expect_failure(WRONG_REVIEW, "c",
                   "failed: expected webhook response of apiextensions.k8s.io/v1, "
                   "Kind=ConversionReview, got admission.k8s.io/v1, Kind=AdmissionReview");

    /* of the metadata only labels and annotations are the webhook's */
    set_mode(META_CHANGES);
    json_t *v1 = call("GET", V1 "/c", NULL, 200);
    json_t *v2 = call("GET", V2 "/c", NULL, 200);
    assert_string_equal(str(v2, "metadata.labels.converted"), "yes");
    assert_string_equal(str(v2, "metadata.labels.a"), "b");
    assert_int_equal(num(v2, "metadata.generation"), num(v1, "metadata.generation"));
    json_decref(v1);
    json_decref(v2);

    /* a list's failure names the list kind, with the index of the object */
    set_mode(WRONG_VERSION);
    expect_status("GET", V2, NULL, 500, "InternalError",
                  "conversion webhook for stable.example.com/v1, Kind=CronTabList returned "
                  "invalid converted object at index 1: invalid groupVersion");
    /* a list of one object is a list all the same */
    expect_status("GET", V2 "?fieldSelector=metadata.name%3Dc", NULL, 500, "InternalError",
                  "conversion webhook for stable.example.com/v1, Kind=CronTabList returned "
                  "invalid converted object at index 1: invalid groupVersion");
    set_mode(CONVERT);
}

static void test_v1beta1_review(void **state)
{
    (void)state;
    json_t *crd = call("GET", CRDS "/crontabs.stable.example.com", NULL, 200);
    json_object_set_new(at(crd, "spec.conversion.webhook"), "conversionReviewVersions",
                        json_pack("[s, s]", "v1beta1", "v1"));
    char *text = json_dumps(crd, JSON_COMPACT);
    json_decref(call("PUT", CRDS "/crontabs.stable.example.com", text, 200));
    free(text);
    json_decref(crd);
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"b\"},\"spec\":{\"cronSpec\":\"beta\"}}",
                     201));
    /* the served kinds change with the definition: wait for the v1beta1 review */
    json_t *review = NULL;
    for (int i = 0; i < 500; i++) {
        json_t *v2 = call("GET", V2 "/b", NULL, 200);
        json_decref(v2);
        review = last_review();
        if (strcmp(str(review, "apiVersion"), "apiextensions.k8s.io/v1beta1") == 0)
            break;
        json_decref(review);
        review = NULL;
        pause_briefly();
    }
    assert_non_null(review);
    assert_string_equal(str(review, "request.desiredAPIVersion"), "stable.example.com/v2");
    json_decref(review);
}

static void test_webhook_down(void **state)
{
    (void)state;
    json_decref(call("POST", V1,
                     "{\"apiVersion\":\"stable.example.com/v1\",\"kind\":\"CronTab\","
                     "\"metadata\":{\"name\":\"d\"},\"spec\":{\"cronSpec\":\"down\"}}",
                     201));
    MHD_stop_daemon(hook.daemon);
    hook.daemon = NULL;
    expect_status("GET", V2 "/d", NULL, 500, "InternalError",
                  "conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post "
                  "\"https://127.0.0.1:");
    expect_status("GET", V2, NULL, 500, "InternalError",
                  "conversion webhook for stable.example.com/v1, Kind=CronTabList failed: Post");
    /* a write through v2 cannot be converted for storage: nothing is stored */
    expect_status("POST", V2,
                  "{\"apiVersion\":\"stable.example.com/v2\",\"kind\":\"CronTab\","
                  "\"metadata\":{\"name\":\"never\"},\"spec\":{\"schedule\":\"x\"}}",
                  500, "InternalError",
                  "conversion webhook for stable.example.com/v2, Kind=CronTab failed");
    assert_int_equal(status_of("GET", V1 "/never", NULL), 404);
    /* the storage version needs no webhook */
    json_t *v1 = call("GET", V1 "/d", NULL, 200);
    assert_string_equal(str(v1, "spec.cronSpec"), "down");
    json_decref(v1);
    /* nor does deleting the definition, which deletes its objects as they are stored */
    json_decref(call("DELETE", CRDS "/crontabs.stable.example.com", NULL, 200));
    await_status(CRDS "/crontabs.stable.example.com", 404);
    assert_int_equal(status_of("GET", V1 "/d", NULL), 404);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strategy_validation),
        cmocka_unit_test(test_create_and_read_through_both_versions),
        cmocka_unit_test(test_list_is_one_review),
        cmocka_unit_test(test_update_through_v2),
        cmocka_unit_test(test_watch_through_v2),
        cmocka_unit_test(test_answer_checks),
        cmocka_unit_test(test_v1beta1_review),
        cmocka_unit_test(test_webhook_down), /* last: stops the webhook */
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
