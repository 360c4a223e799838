/*
 * test_rest.c - the REST client, and a client from the kubeconfig the server writes,
 * against a real ckube API server started in-process on 127.0.0.1:0 over a fresh SQLite
 * store. (Kubeconfig parsing itself: test_kubeconfig.c.)
 */
#include "cktest.h"

#include <pthread.h>
#include <stdatomic.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the server helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/internal/util.h"
#include "ckube/rest.h"

/* The resources these tests address; the client keeps no list of its own. */
static const struct ck_resource pods = {"", "v1", "pods", true};
static const struct ck_resource namespaces = {"", "v1", "namespaces", false};
static const struct ck_resource replicasets = {"apps", "v1", "replicasets", true};

struct fixture {
    char dir[64];
    struct ck_apiserver *server;
    struct ck_rest *client;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/ck-rest-XXXXXX");
    f->server = test_server_start(f->dir);
    assert_non_null(f->server);
    struct ck_rest_config config = {.server = ck_apiserver_url(f->server), .qps = -1};
    struct ck_err err = {0};
    assert_int_equal(ck_rest_new(&config, &f->client, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_rest_free(f->client);
    test_server_stop(f->server, f->dir);
    free(f);
    return 0;
}

/* A pod whose label k is value. */
static json_t *pod_with_label(const char *name, const char *value)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind",
                     "Pod", "metadata", "name", name, "labels", "k", value, "spec", "containers",
                     "name", "c", "image", "nginx");
}

static const char *label_k(const json_t *obj)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "k"));
}

/* The kubeconfig the server writes (JSON) gives a client that reaches it. */
static void test_kubeconfig_from_server(void **state)
{
    struct fixture *f = *state;
    char path[128];
    snprintf(path, sizeof(path), "%s/kubeconfig", f->dir);
    struct ck_err err = {0};
    assert_int_equal(ck_apiserver_write_kubeconfig(f->server, path, &err), 0);
    struct ck_kubeconfig *kc = NULL;
    assert_int_equal(ck_kubeconfig_load(path, NULL, &kc, &err), 0);
    assert_string_equal(kc->server, ck_apiserver_url(f->server));
    assert_string_equal(kc->namespace, "default");
    struct ck_rest *c = NULL;
    assert_int_equal(ck_rest_new_from_kubeconfig(kc, 0, 0, &c, &err), 0);
    json_t *ns = NULL;
    assert_int_equal(ck_rest_get(c, &namespaces, NULL, "kube-system", &ns, &err), 0);
    assert_string_equal(ck__meta_str(ns, "name"), "kube-system");
    json_decref(ns);
    ck_rest_free(c);
    ck_kubeconfig_free(kc);
    unlink(path);
}

static void test_crud_and_errors(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    json_t *cm = pod_with_label("one", "v1"), *created = NULL, *got = NULL;
    assert_int_equal(ck_rest_create(f->client, &pods, "default", cm, &created, &err), 0);
    assert_non_null(ck__meta_str(created, "uid"));
    const char *rv = ck__meta_str(created, "resourceVersion");
    assert_non_null(rv);

    /* AlreadyExists carries the Status */
    memset(&err, 0, sizeof(err));
    assert_int_equal(ck_rest_create(f->client, &pods, "default", cm, NULL, &err), CK_EEXIST);
    assert_int_equal(err.http_status, 409);
    assert_string_equal(err.reason, "AlreadyExists");
    assert_non_null(strstr(err.msg, "\"one\" already exists"));

    assert_int_equal(ck_rest_get(f->client, &pods, "default", "one", &got, &err), 0);
    assert_string_equal(ck__meta_str(got, "uid"), ck__meta_str(created, "uid"));

    /* update with the right resourceVersion, then a stale one: Conflict */
    json_t *upd = json_deep_copy(got), *updated = NULL;
    json_object_set_new(json_object_get(json_object_get(upd, "metadata"), "labels"), "k",
                        json_string("v2"));
    assert_int_equal(ck_rest_update(f->client, &pods, "default", upd, &updated, &err), 0);
    assert_string_equal(label_k(updated), "v2");
    assert_string_not_equal(ck__meta_str(updated, "resourceVersion"), rv);
    memset(&err, 0, sizeof(err));
    assert_int_equal(ck_rest_update(f->client, &pods, "default", upd, NULL, &err), CK_ECONFLICT);
    assert_int_equal(err.http_status, 409);
    assert_string_equal(err.reason, "Conflict");

    /* patch: merge patch where the server has PATCH, its Status where it does not */
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "k", "v3"), *patched = NULL;
    memset(&err, 0, sizeof(err));
    int r = ck_rest_patch(f->client, &pods, "default", "one", NULL, CK_PATCH_MERGE, patch, &patched,
                          &err);
    if (r == 0) {
        assert_string_equal(label_k(patched), "v3");
    } else {
        assert_int_equal(err.http_status, 405);
        assert_string_equal(err.reason, "MethodNotAllowed");
    }
    json_decref(patched);
    json_decref(patch);

    /* invalid: a bad name is 422 Invalid from the server */
    json_t *bad = pod_with_label("Not_Valid", "x");
    memset(&err, 0, sizeof(err));
    assert_int_equal(ck_rest_create(f->client, &pods, "default", bad, NULL, &err), CK_EINVAL);
    assert_int_equal(err.http_status, 422);
    assert_string_equal(err.reason, "Invalid");
    json_decref(bad);

    /* delete, then NotFound */
    assert_int_equal(ck_rest_delete(f->client, &pods, "default", "one", NULL, NULL, &err), 0);
    memset(&err, 0, sizeof(err));
    assert_int_equal(ck_rest_get(f->client, &pods, "default", "one", NULL, &err), CK_ENOENT);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.reason, "NotFound");
    assert_non_null(strstr(err.msg, "\"one\" not found"));

    /* names that cannot be a path segment never reach the wire */
    assert_int_equal(ck_rest_get(f->client, &pods, "default", "a/b", NULL, &err), CK_EINVAL);

    json_decref(upd);
    json_decref(updated);
    json_decref(got);
    json_decref(created);
    json_decref(cm);
}

static void test_list_pages(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        json_t *cm = pod_with_label(name, "x");
        json_object_set_new(json_object_get(json_object_get(cm, "metadata"), "labels"), "parity",
                            json_string(i % 2 ? "odd" : "even"));
        assert_int_equal(ck_rest_create(f->client, &pods, "default", cm, NULL, &err), 0);
        json_decref(cm);
    }
    struct ck_list_options opts = {.limit = 2};
    size_t seen = 0, pages = 0;
    char *cont = NULL;
    do {
        json_t *list = NULL;
        opts.continue_token = cont;
        assert_int_equal(ck_rest_list(f->client, &pods, "default", &opts, &list, &err), 0);
        seen += json_array_size(json_object_get(list, "items"));
        pages++;
        free(cont);
        const char *next =
            json_string_value(json_object_get(json_object_get(list, "metadata"), "continue"));
        cont = next && *next ? strdup(next) : NULL;
        json_decref(list);
    } while (cont);
    assert_int_equal(seen, 5);
    assert_int_equal(pages, 3);

    struct ck_list_options sel = {.label_selector = "parity in (odd)"};
    json_t *list = NULL;
    assert_int_equal(ck_rest_list(f->client, &pods, "default", &sel, &list, &err), 0);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 2);
    json_decref(list);

    /* a GET with query pairs: the value escaped, an empty or NULL one left out */
    const char *const pairs[][2] = {
        {"labelSelector", "parity in (odd)"}, {"limit", ""}, {"fieldSelector", NULL}};
    assert_int_equal(
        ck_rest_get_query(f->client, "/api/v1/namespaces/default/pods", pairs, 3, &list, &err), 0);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 2);
    json_decref(list);
    assert_int_equal(
        ck_rest_get_query(f->client, "/api/v1/namespaces/default/pods", pairs + 1, 2, &list, &err),
        0);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 5);
    json_decref(list);
}

/* Sequential calls reuse one kept-alive connection. */
static void test_keepalive(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    struct ck_rest_stats before, after;
    ck_rest_stats(f->client, &before);
    for (int i = 0; i < 20; i++) {
        json_t *ns = NULL;
        assert_int_equal(ck_rest_get(f->client, &namespaces, NULL, "default", &ns, &err), 0);
        json_decref(ns);
    }
    ck_rest_stats(f->client, &after);
    assert_int_equal(after.requests - before.requests, 20);
    assert_true(after.connections - before.connections <= 1);
}

static void test_status_and_scale(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    json_t *pod = json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind",
                            "Pod", "metadata", "name", "web", "spec", "containers", "name", "c",
                            "image", "nginx"),
           *created = NULL, *updated = NULL;
    assert_int_equal(ck_rest_create(f->client, &pods, "default", pod, &created, &err), 0);
    json_object_set_new(created, "status", json_pack("{s:s}", "phase", "Running"));
    assert_int_equal(ck_rest_update_status(f->client, &pods, "default", created, &updated, &err),
                     0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(updated, "status"), "phase")), "Running");
    json_decref(updated);
    json_decref(created);
    json_decref(pod);

    json_t *rs =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, "
                  "s:s}]}}}}",
                  "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", "rs", "spec",
                  "replicas", 1, "selector", "matchLabels", "app", "x", "template", "metadata",
                  "labels", "app", "x", "spec", "containers", "name", "c", "image", "nginx");
    assert_int_equal(ck_rest_create(f->client, &replicasets, "default", rs, NULL, &err), 0);
    json_decref(rs);
    json_t *scale = NULL;
    memset(&err, 0, sizeof(err));
    int r = ck_rest_update_scale(f->client, &replicasets, "default", "rs", 3, &scale, &err);
    if (r == 0) {
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(scale, "spec"), "replicas")), 3);
        json_decref(scale);
        assert_int_equal(ck_rest_get_scale(f->client, &replicasets, "default", "rs", &scale, &err),
                         0);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(scale, "spec"), "replicas")), 3);
        json_decref(scale);
    } else { /* a server without the scale subresource says so with a Status */
        assert_true(err.http_status == 404 || err.http_status == 405);
        assert_non_null(err.reason);
    }
}

/* ---- rate limiting, on a fake clock --------------------------------------- */

struct burst_arg {
    struct ck_rest *client;
    int n;
};

static void *do_gets(void *p)
{
    struct burst_arg *a = p;
    for (int i = 0; i < a->n; i++) {
        struct ck_err err = {0};
        json_t *ns = NULL;
        if (ck_rest_get(a->client, &namespaces, NULL, "default", &ns, &err) < 0)
            abort();
        json_decref(ns);
    }
    return NULL;
}

static void test_rate_limit(void **state)
{
    struct fixture *f = *state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct ck_err err = {0};
    struct ck_rest *c = NULL;
    /* defaults: burst 10 at 5 QPS */
    struct ck_rest_config config = {.server = ck_apiserver_url(f->server), .clock = clock};
    assert_int_equal(ck_rest_new(&config, &c, &err), 0);
    struct burst_arg a = {.client = c, .n = 10};
    do_gets(&a); /* the burst: no waiting on a clock that never moves */
    struct ck_rest_stats st;
    ck_rest_stats(c, &st);
    assert_int_equal(st.throttled, 0);

    /* the 11th waits for a token: 1/5 s */
    a.n = 1;
    pthread_t t;
    pthread_create(&t, NULL, do_gets, &a);
    ck_fake_clock_wait_for_waiters(clock, 1);
    ck_rest_stats(c, &st);
    assert_int_equal(st.requests, 10);
    ck_fake_clock_step(clock, 200 * CK_MSEC);
    pthread_join(t, NULL);
    ck_rest_stats(c, &st);
    assert_int_equal(st.requests, 11);
    assert_int_equal(st.throttled, 200 * CK_MSEC);
    ck_rest_free(c);

    /* settable: burst 2 */
    config.qps = 1;
    config.burst = 2;
    assert_int_equal(ck_rest_new(&config, &c, &err), 0);
    a.client = c;
    a.n = 3;
    pthread_create(&t, NULL, do_gets, &a);
    ck_fake_clock_wait_for_waiters(clock, 1);
    ck_rest_stats(c, &st);
    assert_int_equal(st.requests, 2);
    ck_fake_clock_step(clock, CK_SEC);
    pthread_join(t, NULL);
    ck_rest_stats(c, &st);
    assert_int_equal(st.throttled, CK_SEC);
    ck_rest_free(c);
    ck_fake_clock_free(clock);
}

/* ---- watch ----------------------------------------------------------------- */

struct watch_arg {
    struct fixture *f;
    char rv[32];
    atomic_bool stop;
    atomic_int events;
    char first_type[16];
    char first_name[64];
    int result;
    struct ck_err err;
};

static int on_event(const char *type, json_t *obj, void *p)
{
    struct watch_arg *w = p;
    int r = 0;
    if (strcmp(type, "BOOKMARK") != 0 && atomic_fetch_add(&w->events, 1) == 0) {
        snprintf(w->first_type, sizeof(w->first_type), "%s", type);
        snprintf(w->first_name, sizeof(w->first_name), "%s", ck__meta_str(obj, "name"));
        r = 7; /* stop after the first */
    }
    json_decref(obj);
    return r;
}

static void *watcher(void *p)
{
    struct watch_arg *w = p;
    struct ck_list_options opts = {.resource_version = w->rv, .allow_watch_bookmarks = true};
    w->result =
        ck_rest_watch(w->f->client, &pods, "default", &opts, on_event, w, &w->stop, &w->err);
    return NULL;
}

static void test_watch(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    json_t *list = NULL;
    assert_int_equal(ck_rest_list(f->client, &pods, "default", NULL, &list, &err), 0);
    struct watch_arg *w = calloc(1, sizeof(*w));
    w->f = f;
    snprintf(
        w->rv, sizeof(w->rv), "%s",
        json_string_value(json_object_get(json_object_get(list, "metadata"), "resourceVersion")));
    json_decref(list);
    pthread_t t;
    pthread_create(&t, NULL, watcher, w);
    /* created after the list's version: the watch delivers it whenever it connects */
    json_t *cm = pod_with_label("watched", "x");
    assert_int_equal(ck_rest_create(f->client, &pods, "default", cm, NULL, &err), 0);
    json_decref(cm);
    pthread_join(t, NULL);
    assert_int_equal(w->result, 7);
    assert_string_equal(w->first_type, "ADDED");
    assert_string_equal(w->first_name, "watched");

    /* an idle watch ends when asked to */
    char rv[32];
    snprintf(rv, sizeof(rv), "%s", w->rv);
    memset(w, 0, sizeof(*w));
    w->f = f;
    snprintf(w->rv, sizeof(w->rv), "%s", rv);
    atomic_store(&w->stop, true);
    pthread_create(&t, NULL, watcher, w);
    pthread_join(t, NULL);
    assert_int_equal(w->result, CK_ESHUTDOWN);
    assert_int_equal(atomic_load(&w->events), 0);
    free(w);
}

static void test_unreachable(void **state)
{
    (void)state;
    struct ck_rest *c = NULL;
    struct ck_err err = {0};
    /* port 1 on loopback: nothing listens there */
    struct ck_rest_config config = {.server = "http://127.0.0.1:1", .qps = -1};
    assert_int_equal(ck_rest_new(&config, &c, &err), 0);
    assert_int_equal(ck_rest_get(c, &pods, "default", "x", NULL, &err), CK_EIO);
    assert_int_equal(err.http_status, 0);
    ck_rest_free(c);
    struct ck_rest_config bad = {.server = "ftp://x"};
    assert_int_equal(ck_rest_new(&bad, &c, &err), CK_EINVAL);
}

/* Resources from discovery: group, version, plural and scope as the server serves them. */
static void test_discover_resource(void **state)
{
    struct fixture *f = *state;
    struct ck_api_resource found;
    struct ck_err err = {0};
    assert_int_equal(ck_rest_discover_resource(f->client, "v1", "Pod", &found, &err), 0);
    assert_string_equal(found.res.group, "");
    assert_string_equal(found.res.version, "v1");
    assert_string_equal(found.res.resource, "pods");
    assert_true(found.res.namespaced);
    assert_int_equal(ck_rest_discover_resource(f->client, "v1", "Namespace", &found, &err), 0);
    assert_string_equal(found.res.resource, "namespaces");
    assert_false(found.res.namespaced);
    assert_int_equal(ck_rest_discover_resource(f->client, "apps/v1", "ReplicaSet", &found, &err),
                     0);
    assert_string_equal(found.res.group, "apps");
    assert_string_equal(found.res.resource, "replicasets");
    json_t *list = NULL; /* and it addresses the server's collection */
    assert_int_equal(ck_rest_list(f->client, &found.res, "default", NULL, &list, &err), 0);
    json_decref(list);

    assert_int_equal(ck_rest_discover_resource(f->client, "v1", "Gadget", &found, &err), CK_ENOENT);
    assert_int_equal(
        ck_rest_discover_resource(f->client, "nope.example/v9", "Gadget", &found, &err), CK_ENOENT);
    assert_int_equal(ck_rest_discover_resource(f->client, "a/b/c", "Pod", &found, &err), CK_EINVAL);
    assert_int_equal(ck_rest_discover_resource(f->client, "", "Pod", &found, &err), CK_EINVAL);
    assert_int_equal(ck_rest_discover_resource(f->client, "/v1", "Pod", &found, &err), CK_EINVAL);
    assert_int_equal(ck_rest_discover_resource(f->client, "a b/v1", "Pod", &found, &err),
                     CK_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test_setup_teardown(test_kubeconfig_from_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crud_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_and_scale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rate_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_resource, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
