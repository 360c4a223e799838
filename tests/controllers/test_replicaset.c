/*
 * test_replicaset.c - the ReplicaSet controller and the controller-ref manager against
 * a real ckube API server started in-process: create, replace, release, adopt, delete
 * ranking, status, scale to 0 and back, and the ReplicaFailure condition with its event.
 *
 * The test marks pods Running and Ready through the status subresource (there is no node
 * agent). It waits for conditions by re-checking them on every event of its own
 * informers, never by sleeping, and gives up with a message naming the condition after
 * WAIT_TIMEOUT. The unit tests of the same controller, on fakes, are in
 * test_replicaset_sync.c.
 */
#include "cktest.h"

#include <pthread.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the server helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/replicaset.h"

/* How long a condition may take to hold before the test fails (ctest's limit is 120 s). */
#define WAIT_TIMEOUT (30 * CK_SEC)

static const struct ck_resource *pods_res, *rss_res, *nss_res;

struct env {
    char dir[64];
    struct ck_apiserver *server;
    struct ck_rest *ctl_client, *client;
    struct ck_informer_factory *ctl_factory, *watch_factory;
    struct ck_rs_controller *rsc;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned long generation; /* events seen by the test's informers */
    const char *ns;           /* where get_rs and set_replicas look */
};

static void bump(struct env *e)
{
    pthread_mutex_lock(&e->lock);
    e->generation++;
    pthread_cond_broadcast(&e->changed);
    pthread_mutex_unlock(&e->lock);
}
static void on_add(const json_t *o, bool i, void *arg)
{
    (void)o, (void)i;
    bump(arg);
}
static void on_update(const json_t *a, const json_t *b, void *arg)
{
    (void)a, (void)b;
    bump(arg);
}
static void on_delete(const json_t *o, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)o, (void)t;
    bump(arg);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    pthread_mutex_init(&e->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->changed, &attr);
    pthread_condattr_destroy(&attr);
    e->ns = "default";
    snprintf(e->dir, sizeof(e->dir), "/tmp/ck-rs-XXXXXX");
    e->server = test_server_start(e->dir);
    assert_non_null(e->server);
    struct ck_rest_config config = {.server = ck_apiserver_url(e->server), .qps = -1};
    struct ck_err err = {0};
    assert_int_equal(ck_rest_new(&config, &e->ctl_client, &err), 0);
    assert_int_equal(ck_rest_new(&config, &e->client, &err), 0);
    assert_int_equal(ck_informer_factory_new(e->ctl_client, NULL, 0, NULL, &e->ctl_factory, &err),
                     0);
    assert_int_equal(ck_rs_controller_new(e->ctl_client, e->ctl_factory, NULL, &e->rsc, &err), 0);
    assert_int_equal(ck_informer_factory_start(e->ctl_factory, &err), 0);
    assert_int_equal(ck_rs_controller_run(e->rsc, 3, &err), 0);

    assert_int_equal(ck_informer_factory_new(e->client, NULL, 0, NULL, &e->watch_factory, &err), 0);
    struct ck_event_handler h = {on_add, on_update, on_delete, e};
    assert_int_equal(
        ck_informer_add_handler(ck_informer_factory_for(e->watch_factory, pods_res), &h, 0, &err),
        0);
    assert_int_equal(
        ck_informer_add_handler(ck_informer_factory_for(e->watch_factory, rss_res), &h, 0, &err),
        0);
    assert_int_equal(ck_informer_factory_start(e->watch_factory, &err), 0);
    assert_true(ck_informer_factory_wait_for_sync(e->watch_factory, CK_TIME_NEVER));
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_informer_factory_free(e->watch_factory);
    ck_informer_factory_stop(e->ctl_factory);
    ck_rs_controller_free(e->rsc);
    ck_informer_factory_free(e->ctl_factory);
    ck_rest_free(e->client);
    ck_rest_free(e->ctl_client);
    test_server_stop(e->server, e->dir);
    pthread_cond_destroy(&e->changed);
    pthread_mutex_destroy(&e->lock);
    free(e);
    return 0;
}

/*
 * Re-evaluates pred after every event until it holds; fails the test, naming what it
 * waited for, when WAIT_TIMEOUT passes first.
 */
static void wait_until_(struct env *e, bool (*pred)(struct env *e, void *arg), void *arg,
                        const char *what, const char *file, int line)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += WAIT_TIMEOUT / CK_SEC;
    for (;;) {
        pthread_mutex_lock(&e->lock);
        unsigned long seen = e->generation;
        pthread_mutex_unlock(&e->lock);
        if (pred(e, arg))
            return;
        int r = 0;
        pthread_mutex_lock(&e->lock);
        while (e->generation == seen && r == 0)
            r = pthread_cond_timedwait(&e->changed, &e->lock, &deadline);
        pthread_mutex_unlock(&e->lock);
        if (r != 0 && !pred(e, arg)) {
            fprintf(stderr, "%s:%d: timed out after %llds waiting for %s\n", file, line,
                    (long long)(WAIT_TIMEOUT / CK_SEC), what);
            fail_msg("timed out waiting for %s", what);
        }
        if (r != 0)
            return;
    }
}
#define wait_until(e, pred, arg) wait_until_((e), (pred), (arg), #pred, __FILE__, __LINE__)

static const char *meta_str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
}

static json_t *get_rs(struct env *e, const char *name)
{
    json_t *rs = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_rest_get(e->client, rss_res, e->ns, name, &rs, &err), 0);
    return rs;
}

/* The live pods (not being deleted) controlled by the ReplicaSet with this uid. */
static json_t *owned_pods(struct env *e, const char *uid)
{
    json_t *list = NULL, *out = json_array();
    struct ck_err err = {0};
    assert_int_equal(ck_rest_list(e->client, pods_res, "default", NULL, &list, &err), 0);
    size_t i;
    json_t *pod;
    json_array_foreach(json_object_get(list, "items"), i, pod)
    {
        const json_t *ref = ck_controller_ref(pod);
        const char *ref_uid = json_string_value(json_object_get(ref, "uid"));
        if (ref_uid && strcmp(ref_uid, uid) == 0 &&
            !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
            json_array_append(out, pod);
    }
    json_decref(list);
    return out;
}

struct want {
    const char *rs;
    const char *uid;
    size_t owned;
    json_int_t ready; /* -1: do not check status */
};

static bool converged(struct env *e, void *arg)
{
    struct want *w = arg;
    json_t *pods = owned_pods(e, w->uid);
    size_t n = json_array_size(pods);
    json_decref(pods);
    if (n != w->owned)
        return false;
    json_t *rs = get_rs(e, w->rs);
    const json_t *status = json_object_get(rs, "status");
    bool ok =
        json_integer_value(json_object_get(status, "replicas")) == (json_int_t)w->owned &&
        json_integer_value(json_object_get(status, "observedGeneration")) ==
            json_integer_value(json_object_get(json_object_get(rs, "metadata"), "generation"));
    if (w->ready >= 0)
        ok = ok && json_integer_value(json_object_get(status, "readyReplicas")) == w->ready &&
             json_integer_value(json_object_get(status, "availableReplicas")) == w->ready;
    json_decref(rs);
    return ok;
}

static json_t *rs_doc(const char *name, int replicas, const char *container_name)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, "
                     "s:s}]}}}}",
                     "apiVersion", "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
                     "spec", "replicas", replicas, "selector", "matchLabels", "app", name,
                     "template", "metadata", "labels", "app", name, "spec", "containers", "name",
                     container_name, "image", "nginx");
}

/* Marks a pod Running and Ready through the status subresource. */
static void mark_ready(struct env *e, json_t *pod)
{
    json_t *copy = json_deep_copy(pod);
    json_object_set_new(copy, "status",
                        json_pack("{s:s, s:[{s:s, s:s, s:s, s:s}]}", "phase", "Running",
                                  "conditions", "type", "Ready", "status", "True",
                                  "lastTransitionTime", "2026-01-01T00:00:00Z", "lastProbeTime",
                                  "2026-01-01T00:00:00Z"));
    struct ck_err err = {0};
    int r = ck_rest_update_status(e->client, pods_res, "default", copy, NULL, &err);
    if (r < 0)
        fprintf(stderr, "mark_ready %s: %s\n", meta_str(pod, "name"), err.msg);
    assert_int_equal(r, 0);
    json_decref(copy);
}

static void set_replicas(struct env *e, const char *name, int replicas)
{
    struct ck_err err = {0};
    for (;;) { /* the controller writes status concurrently: retry on conflict */
        json_t *rs = get_rs(e, name);
        json_object_set_new(json_object_get(rs, "spec"), "replicas", json_integer(replicas));
        int r = ck_rest_update(e->client, rss_res, e->ns, rs, NULL, &err);
        json_decref(rs);
        if (r == 0)
            return;
        assert_int_equal(r, CK_ECONFLICT);
    }
}

struct named {
    const char *name;
    const char *uid; /* the controller uid wanted, or NULL for "no controller" */
};

static bool pod_controlled_as(struct env *e, void *arg)
{
    struct named *n = arg;
    json_t *pod = NULL;
    struct ck_err err = {0};
    if (ck_rest_get(e->client, pods_res, "default", n->name, &pod, &err) < 0)
        return false;
    const json_t *ref = ck_controller_ref(pod);
    const char *uid = json_string_value(json_object_get(ref, "uid"));
    bool ok = n->uid ? uid && strcmp(uid, n->uid) == 0 : ref == NULL;
    json_decref(pod);
    return ok;
}

static bool pod_gone_or_deleting(struct env *e, void *arg)
{
    json_t *pod = NULL;
    struct ck_err err = {0};
    if (ck_rest_get(e->client, pods_res, "default", arg, &pod, &err) == CK_ENOENT)
        return true;
    bool deleting = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
    json_decref(pod);
    return deleting;
}

/* Adopted, or already deleted as the surplus (which only an owner does). */
static bool stray_claimed(struct env *e, void *arg)
{
    struct named *n = arg;
    return pod_controlled_as(e, n) || pod_gone_or_deleting(e, (void *)n->name);
}

static void test_replicaset_lifecycle(void **state)
{
    struct env *e = *state;
    struct ck_err err = {0};
    json_t *doc = rs_doc("web", 5, "c"), *rs = NULL;
    assert_int_equal(ck_rest_create(e->client, rss_res, "default", doc, &rs, &err), 0);
    json_decref(doc);
    char uid[64];
    snprintf(uid, sizeof(uid), "%s", meta_str(rs, "uid"));
    json_decref(rs);

    /* replicas 5: five owned pods, made as Kubernetes makes them */
    struct want w = {.rs = "web", .uid = uid, .owned = 5, .ready = 0};
    wait_until(e, converged, &w);
    json_t *pods = owned_pods(e, uid);
    size_t i;
    json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        assert_string_equal(meta_str(pod, "generateName"), "web-");
        assert_memory_equal(meta_str(pod, "name"), "web-", 4);
        const json_t *ref = ck_controller_ref(pod);
        assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
        assert_string_equal(json_string_value(json_object_get(ref, "kind")), "ReplicaSet");
        assert_string_equal(json_string_value(json_object_get(ref, "apiVersion")), "apps/v1");
        assert_string_equal(json_string_value(json_object_get(ref, "name")), "web");
        mark_ready(e, pod);
    }
    w.ready = 5;
    wait_until(e, converged, &w);

    /* delete a pod: replaced */
    char victim[64];
    snprintf(victim, sizeof(victim), "%s", meta_str(json_array_get(pods, 0), "name"));
    assert_int_equal(ck_rest_delete(e->client, pods_res, "default", victim, NULL, NULL, &err), 0);
    w.ready = 4;
    wait_until(e, converged, &w);

    /* relabel a pod: released and replaced */
    json_t *relabel = NULL;
    const char *relabeled = meta_str(json_array_get(pods, 1), "name");
    assert_int_equal(ck_rest_get(e->client, pods_res, "default", relabeled, &relabel, &err), 0);
    json_object_set_new(json_object_get(json_object_get(relabel, "metadata"), "labels"), "app",
                        json_string("elsewhere"));
    int r = ck_rest_update(e->client, pods_res, "default", relabel, NULL, &err);
    if (r < 0)
        fprintf(stderr, "relabel: %s\n", err.msg);
    assert_int_equal(r, 0);
    json_decref(relabel);
    struct named released = {.name = relabeled, .uid = NULL};
    wait_until(e, pod_controlled_as, &released);
    w.ready = 3;
    wait_until(e, converged, &w);

    /* a matching orphan: adopted; the surplus deleted is a not-ready pod, never a ready one */
    json_t *stray = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:[{s:s, s:s}]}}", "apiVersion",
                              "v1", "kind", "Pod", "metadata", "name", "stray", "labels", "app",
                              "web", "spec", "containers", "name", "c", "image", "nginx");
    assert_int_equal(ck_rest_create(e->client, pods_res, "default", stray, NULL, &err), 0);
    json_decref(stray);
    struct named adopted = {.name = "stray", .uid = uid};
    wait_until(e, stray_claimed, &adopted);
    struct want six_or_five = {.rs = "web", .uid = uid, .owned = 5, .ready = 3};
    /* adoption makes 6, then one not-ready pod goes; the three ready ones stay */
    wait_until(e, converged, &six_or_five);
    json_t *now = owned_pods(e, uid);
    size_t ready_left = 0;
    json_array_foreach(now, i, pod)
    {
        const json_t *st = json_object_get(pod, "status");
        ready_left += json_is_string(json_object_get(st, "phase")) &&
                      strcmp(json_string_value(json_object_get(st, "phase")), "Running") == 0;
    }
    assert_int_equal(ready_left, 3);
    json_decref(now);

    /* scale to 0 and back */
    set_replicas(e, "web", 0);
    struct want zero = {.rs = "web", .uid = uid, .owned = 0, .ready = 0};
    wait_until(e, converged, &zero);
    set_replicas(e, "web", 3);
    struct want three = {.rs = "web", .uid = uid, .owned = 3, .ready = 0};
    wait_until(e, converged, &three);
    json_decref(pods);
}

static bool has_failure(struct env *e, void *arg)
{
    json_t *rs = get_rs(e, arg);
    bool found = false;
    size_t i;
    json_t *cond;
    json_array_foreach(json_object_get(json_object_get(rs, "status"), "conditions"), i, cond)
    {
        found =
            found ||
            (strcmp(json_string_value(json_object_get(cond, "type")) ?: "", "ReplicaFailure") ==
                 0 &&
             strcmp(json_string_value(json_object_get(cond, "reason")) ?: "", "FailedCreate") == 0);
    }
    json_decref(rs);
    return found;
}

/*
 * Pods the server refuses: ReplicaFailure on the ReplicaSet. (ckube validates templates
 * up front, as Kubernetes does, so the refusal comes from a namespace being terminated:
 * updates still work there, creates are 403 Forbidden.)
 */
static void test_replica_failure(void **state)
{
    struct env *e = *state;
    struct ck_err err = {0};
    json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                           "metadata", "name", "doomed");
    assert_int_equal(ck_rest_create(e->client, nss_res, NULL, ns, NULL, &err), 0);
    json_decref(ns);
    json_t *doc = rs_doc("broken", 0, "c");
    assert_int_equal(ck_rest_create(e->client, rss_res, "doomed", doc, NULL, &err), 0);
    json_decref(doc);
    assert_int_equal(ck_rest_delete(e->client, nss_res, NULL, "doomed", NULL, NULL, &err), 0);
    e->ns = "doomed";
    json_t *rs = get_rs(e, "broken"); /* still there: nothing removes content yet */
    json_decref(rs);
    set_replicas(e, "broken", 2);
    wait_until(e, has_failure, (void *)"broken");
    rs = get_rs(e, "broken");
    json_t *cond = json_array_get(json_object_get(json_object_get(rs, "status"), "conditions"), 0);
    assert_string_equal(json_string_value(json_object_get(cond, "status")), "True");
    assert_non_null(strstr(json_string_value(json_object_get(cond, "message")), "forbidden"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rs, "status"), "replicas")),
                     0);
    json_decref(rs);
}

int main(void)
{
    pods_res = ck_controller_resource("", "v1", "pods");
    rss_res = ck_controller_resource("apps", "v1", "replicasets");
    nss_res = ck_controller_resource("", "v1", "namespaces");
    if (!pods_res || !rss_res || !nss_res)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replicaset_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replica_failure, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
