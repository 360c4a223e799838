/*
 * test_gc.c - the garbage collector and the namespace controller as the controller
 * manager runs them (their table rows), against a real ckube API server started
 * in-process: dependents of a deleted owner go (background), a foreground deletion
 * finishes, an orphaning one leaves the dependent without its reference, and a deleted
 * namespace is emptied and removed. Run under ThreadSanitizer too (label concurrency):
 * monitors, graph builder, workers and the namespace workers all run here.
 *
 * Waits re-read the server until the condition holds and fail with a message naming it
 * after WAIT_TIMEOUT. The unit tests, on fakes: test_gc_graph.c, test_gc_sync.c,
 * test_namespace_sync.c.
 */
#include "cktest.h"

#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the server helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/manager.h"

#define WAIT_TIMEOUT (30 * CK_SEC)

static const struct ck_resource pods = {"", "v1", "pods", true};
static const struct ck_resource frobbers = {"example.ckube.io", "v1", "frobbers", true};
static const struct ck_resource namespaces = {"", "v1", "namespaces", false};

struct env {
    char dir[64];
    struct ck_apiserver *server;
    struct ck_rest *client;
    struct ck_controller_manager *cm;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    snprintf(e->dir, sizeof(e->dir), "/tmp/ck-gc-XXXXXX");
    e->server = test_server_start(e->dir);
    assert_non_null(e->server);
    struct ck_rest_config config = {.server = ck_apiserver_url(e->server), .qps = -1};
    assert_int_equal(ck_rest_new(&config, &e->client, NULL), 0);
    /*
     * With the ReplicaSet controller on, the manager's factory has a pod informer, so
     * the collector monitors pods through it and Frobbers through a metadata informer:
     * both kinds of monitor are in every test below.
     */
    struct ck_controller_manager_config cm = {
        .client = e->client, .controllers = "garbagecollector,namespace,replicaset"};
    struct ck_err err = {0};
    assert_int_equal(ck_controller_manager_start(&cm, &e->cm, &err), 0);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_controller_manager_free(e->cm);
    ck_rest_free(e->client);
    test_server_stop(e->server, e->dir);
    free(e);
    return 0;
}

/* Creates a Frobber (owner NULL) or a pod owned by owner; returns its uid (static). */
static const char *create(struct env *e, const struct ck_resource *res, const char *ns,
                          const char *name, const json_t *owner, const char *finalizer)
{
    static char uid[64];
    json_t *obj = res == &pods ? json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion",
                                           "v1", "kind", "Pod", "metadata", "name", name, "spec",
                                           "containers", "name", "c", "image", "nginx")
                               : json_pack("{s:s, s:s, s:{s:s}, s:{s:i}}", "apiVersion",
                                           "example.ckube.io/v1", "kind", "Frobber", "metadata",
                                           "name", name, "spec", "height", 1);
    json_t *meta = json_object_get(obj, "metadata");
    if (owner)
        json_object_set_new(
            meta, "ownerReferences",
            json_pack(
                "[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "example.ckube.io/v1", "kind",
                "Frobber", "name",
                json_string_value(json_object_get(json_object_get(owner, "metadata"), "name")),
                "uid",
                json_string_value(json_object_get(json_object_get(owner, "metadata"), "uid")),
                "blockOwnerDeletion", 1));
    if (finalizer)
        json_object_set_new(meta, "finalizers", json_pack("[s]", finalizer));
    json_t *made = NULL;
    struct ck_err err = {0};
    if (ck_rest_create(e->client, res, ns, obj, &made, &err) < 0)
        fail_msg("create %s/%s: %s", ns, name, err.msg);
    snprintf(uid, sizeof(uid), "%s",
             json_string_value(json_object_get(json_object_get(made, "metadata"), "uid")));
    json_decref(obj);
    json_decref(made);
    return uid;
}

static json_t *get(struct env *e, const struct ck_resource *res, const char *ns, const char *name)
{
    json_t *obj = NULL;
    return ck_rest_get(e->client, res, ns, name, &obj, NULL) == 0 ? obj : NULL;
}

/* Waits until name is gone (want_gone) or has no ownerReferences (!want_gone). */
static void wait_for(struct env *e, const struct ck_resource *res, const char *ns, const char *name,
                     bool want_gone, const char *what)
{
    int64_t deadline = ck_clock_now(NULL) + WAIT_TIMEOUT;
    for (;;) {
        json_t *obj = get(e, res, ns, name);
        bool ok = want_gone ? !obj
                            : obj && !json_object_get(json_object_get(obj, "metadata"),
                                                      "ownerReferences");
        json_decref(obj);
        if (ok)
            return;
        if (ck_clock_now(NULL) > deadline)
            fail_msg("timed out waiting for: %s", what);
        usleep(20000);
    }
}

/* A Frobber `owner` in default with a pod `<owner>-dep` it owns. */
static void make_owner(struct env *e, const char *owner)
{
    char dep[64];
    snprintf(dep, sizeof(dep), "%s-dep", owner);
    create(e, &frobbers, "default", owner, NULL, NULL);
    json_t *obj = get(e, &frobbers, "default", owner);
    create(e, &pods, "default", dep, obj, NULL);
    json_decref(obj);
}

static void delete_owner(struct env *e, const char *owner, const char *policy)
{
    json_t *opts = json_pack("{s:s}", "propagationPolicy", policy);
    struct ck_err err = {0};
    if (ck_rest_delete(e->client, &frobbers, "default", owner, opts, NULL, &err) < 0)
        fail_msg("delete %s: %s", owner, err.msg);
    json_decref(opts);
}

/*
 * The owners and dependents are all made first: an orphaning (or foreground) deletion
 * acts on the dependents the collector's graph knows, so one issued before the
 * dependent's informer event arrived would miss it (Kubernetes has the same window).
 */
static void test_background_foreground_orphan(void **state)
{
    struct env *e = *state;
    make_owner(e, "bg");
    make_owner(e, "fg");
    make_owner(e, "or");
    delete_owner(e, "bg", "Background");
    wait_for(e, &pods, "default", "bg-dep", true, "the dependent of a deleted owner goes");
    delete_owner(e, "fg", "Foreground");
    wait_for(e, &frobbers, "default", "fg", true, "a foreground deletion finishes");
    wait_for(e, &pods, "default", "fg-dep", true, "its dependent went first");
    delete_owner(e, "or", "Orphan");
    wait_for(e, &frobbers, "default", "or", true, "an orphaning deletion finishes");
    wait_for(e, &pods, "default", "or-dep", false, "the orphan stays, without its reference");
}

static void test_namespace_emptied_and_removed(void **state)
{
    struct env *e = *state;
    json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                           "metadata", "name", "demo");
    assert_int_equal(ck_rest_create(e->client, &namespaces, NULL, ns, NULL, NULL), 0);
    json_decref(ns);
    create(e, &pods, "demo", "p1", NULL, NULL);
    create(e, &frobbers, "demo", "f1", NULL, NULL);
    assert_int_equal(ck_rest_delete(e->client, &namespaces, NULL, "demo", NULL, NULL, NULL), 0);
    wait_for(e, &namespaces, NULL, "demo", true, "the namespace is emptied and removed");
    json_t *left = get(e, &pods, "demo", "p1");
    assert_null(left);
}

int main(void)
{
    /* a failure's words must survive an abort in the server's teardown */
    setvbuf(stdout, NULL, _IONBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_background_foreground_orphan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_namespace_emptied_and_removed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
