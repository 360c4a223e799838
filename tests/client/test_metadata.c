/*
 * test_metadata.c - the metadata client and metadata-only informers against a real ckube
 * API server started in-process, which answers the client's Accept headers with
 * PartialObjectMetadata on the wire (stripping full objects stays for servers that
 * do not): gets, lists and watch events arrive as PartialObjectMetadata, an
 * informer's cache holds nothing but apiVersion, kind and metadata, deletecollection
 * empties a namespace's pods, and discovery over the REST client finds the served kinds.
 */
#include "cktest.h"

#include <stdatomic.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the server helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/informer.h"
#include "ckube/rest.h"

static const struct ck_resource pods = {"", "v1", "pods", true};

struct fixture {
    char dir[64];
    struct ck_apiserver *server;
    struct ck_rest *client;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/ck-md-XXXXXX");
    f->server = test_server_start(f->dir);
    assert_non_null(f->server);
    struct ck_rest_config config = {.server = ck_apiserver_url(f->server), .qps = -1};
    assert_int_equal(ck_rest_new(&config, &f->client, NULL), 0);
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

static void create_pod(struct fixture *f, const char *name)
{
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1",
                            "kind", "Pod", "metadata", "name", name, "labels", "app", "x", "spec",
                            "containers", "name", "c", "image", "nginx");
    assert_int_equal(ck_rest_create(f->client, &pods, "default", pod, NULL, NULL), 0);
    json_decref(pod);
}

/* Only apiVersion meta.k8s.io/v1, kind PartialObjectMetadata and metadata. */
static void assert_partial(const json_t *obj)
{
    assert_int_equal(json_object_size(obj), 3);
    assert_string_equal(json_string_value(json_object_get(obj, "kind")), "PartialObjectMetadata");
    assert_string_equal(json_string_value(json_object_get(obj, "apiVersion")), "meta.k8s.io/v1");
    assert_non_null(json_object_get(json_object_get(obj, "metadata"), "uid"));
}

static void test_strip_keeps_metadata_only(void **state)
{
    (void)state;
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}, s:{}}", "apiVersion", "v1", "kind",
                            "Pod", "metadata", "name", "p", "uid", "u", "spec", "status");
    json_t *m = ck_metadata_strip(pod);
    assert_partial(m);
    /* stripping what is already metadata gives it back */
    json_t *again = ck_metadata_strip(m);
    assert_ptr_equal(again, m);
    json_decref(again);
    json_decref(m);
    json_decref(pod);
    json_t *bare = json_pack("{s:s}", "kind", "Pod");
    assert_null(ck_metadata_strip(bare));
    json_decref(bare);
}

static void test_get_and_list_arrive_as_metadata(void **state)
{
    struct fixture *f = *state;
    create_pod(f, "a");
    create_pod(f, "b");
    json_t *obj = NULL;
    assert_int_equal(ck_metadata_get(f->client, &pods, "default", "a", &obj, NULL), 0);
    assert_partial(obj);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")), "a");
    json_decref(obj);
    json_t *list = NULL;
    assert_int_equal(ck_metadata_list(f->client, &pods, "default", NULL, &list, NULL), 0);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 2);
    assert_partial(json_array_get(json_object_get(list, "items"), 0));
    assert_non_null(json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
    json_decref(list);
    struct ck_err err = {0};
    assert_int_equal(ck_metadata_get(f->client, &pods, "default", "nosuch", &obj, &err), CK_ENOENT);
}

/* What the server sends for the metadata client's Accept headers: metadata only, on the wire. */
static void test_server_sends_metadata_only(void **state)
{
    struct fixture *f = *state;
    create_pod(f, "wire");
    const char *const one[] = {"Accept: " CK_ACCEPT_PARTIAL_METADATA, NULL};
    struct response r;
    http_call(f->server, "GET", "/api/v1/namespaces/default/pods/wire", NULL, one, &r);
    assert_int_equal(r.status, 200);
    /* the bare media type kube-apiserver writes for a converted object */
    assert_non_null(strstr(r.headers, "Content-Type: application/json\r\n"));
    assert_null(strstr(r.body, "\"spec\""));
    assert_non_null(strstr(r.body, "\"kind\":\"PartialObjectMetadata\""));
    response_release(&r);
    const char *const list[] = {"Accept: " CK_ACCEPT_PARTIAL_METADATA_LIST, NULL};
    http_call(f->server, "GET", "/api/v1/namespaces/default/pods", NULL, list, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.headers, "Content-Type: application/json\r\n"));
    assert_null(strstr(r.body, "\"spec\""));
    assert_non_null(strstr(r.body, "\"name\":\"wire\""));
    response_release(&r);
}

static void test_informer_cache_holds_metadata_only(void **state)
{
    struct fixture *f = *state;
    create_pod(f, "a");
    struct ck_metadata_informer *mi = NULL;
    assert_int_equal(ck_metadata_informer_new(f->client, &pods, NULL, 0, NULL, &mi, NULL), 0);
    struct ck_informer *inf = ck_metadata_informer_informer(mi);
    assert_int_equal(ck_informer_start(inf, NULL), 0);
    assert_true(ck_informer_wait_for_sync(inf, ck_clock_now(NULL) + 30 * CK_SEC));
    create_pod(f, "b"); /* arrives through the watch */
    const json_t *b = NULL;
    int64_t deadline = ck_clock_now(NULL) + 30 * CK_SEC;
    while (ck_indexer_get_by_key(ck_informer_indexer(inf), "default/b", &b) != 0) {
        assert_true(ck_clock_now(NULL) < deadline); /* the watch event never came */
        usleep(10000);
    }
    assert_partial(b);
    ck_cached_unref(b);
    const json_t *a = NULL;
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), "default/a", &a), 0);
    assert_partial(a);
    ck_cached_unref(a);
    ck_metadata_informer_free(mi);
}

static void test_delete_collection_and_discovery(void **state)
{
    struct fixture *f = *state;
    create_pod(f, "a");
    create_pod(f, "b");
    json_t *opts = json_pack("{s:s}", "propagationPolicy", "Background");
    assert_int_equal(
        ck_metadata_delete_collection(f->client, &pods, "default", opts, "app=x", NULL), 0);
    json_decref(opts);
    json_t *list = NULL;
    assert_int_equal(ck_metadata_list(f->client, &pods, "default", NULL, &list, NULL), 0);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 0);
    json_decref(list);
    struct ck_discovery_source src;
    ck_discovery_source_rest(&src, f->client);
    struct ck_discovery *d = NULL;
    assert_int_equal(ck_discovery_new(&src, 0, NULL, &d, NULL), 0);
    struct ck_discovery_snapshot *s = NULL;
    assert_int_equal(ck_discovery_get(d, &s, NULL), 0);
    const struct ck_discovered *rs = ck_discovery_find_kind(s, "apps/v1", "ReplicaSet");
    assert_non_null(rs);
    assert_string_equal(rs->res.resource, "replicasets");
    assert_true(rs->res.namespaced);
    assert_true(rs->verbs & CK_VERB_DELETECOLLECTION);
    assert_non_null(ck_discovery_find_kind(s, "example.ckube.io/v1", "Frobber"));
    assert_false(ck_discovery_find(s, "", "v1", "namespaces")->res.namespaced);
    assert_int_equal(s->n_failed, 0);
    ck_discovery_snapshot_unref(s);
    ck_discovery_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strip_keeps_metadata_only),
        cmocka_unit_test_setup_teardown(test_get_and_list_arrive_as_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_sends_metadata_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_informer_cache_holds_metadata_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_collection_and_discovery, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
