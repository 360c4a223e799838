/*
 * test_endpointslice.c - the EndpointSlice controller's sync on fakes: caches the test
 * fills (services, pods, slices behind listers) and the fake client. Each test builds a
 * world, runs one sync of the service and checks the slices the client was asked to
 * create, update or delete, as Kubernetes' endpointslice_controller_test.go and
 * reconciler_test.go do with the fake clientset.
 */
#include "cktest.h"

#include "ckube/endpointslice.h"
#include "ckube/internal/util.h"
#include "fixtures.h"

#define SLICES ck_controller_resource("discovery.k8s.io", "v1", "endpointslices")

struct env {
    struct fx_cache services, pods, slices;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_eps_controller *c;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->services);
    fx_cache_init(&e->pods);
    fx_cache_init(&e->slices);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_eps_controller_deps deps = {.client = &e->client,
                                          .services = &e->services.lister,
                                          .pods = &e->pods.lister,
                                          .slices = &e->slices.lister};
    assert_int_equal(ck_eps_controller_new_with(&deps, &e->c, NULL), 0);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_eps_controller_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->services);
    fx_cache_release(&e->pods);
    fx_cache_release(&e->slices);
    free(e);
    return 0;
}

/* Service web selecting app=web, port 80 to target (a number or a name). */
static void add_service(struct env *e, json_t *target)
{
    json_t *svc = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:{s:s}, s:[{s:s, s:s, s:i, "
                            "s:o}]}}",
                            "apiVersion", "v1", "kind", "Service", "metadata", "name", "web",
                            "namespace", "default", "uid", "svc-uid", "resourceVersion", "1",
                            "spec", "selector", "app", "web", "ports", "name", "http", "protocol",
                            "TCP", "port", 80, "targetPort", target);
    fx_cache_add(&e->services, svc);
}

/* Pod name with label app=app, IP ip (NULL: none), Ready ready, a container port http=8080. */
static json_t *pod(const char *name, const char *app, const char *ip, bool ready)
{
    json_t *p = fx_pod("default", name, app, NULL);
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0), "ports",
        json_pack("[{s:s, s:i}]", "name", "http", "containerPort", 8080));
    json_t *status = json_object_get(p, "status");
    json_object_set_new(status, "phase", json_string("Running"));
    if (ip)
        json_object_set_new(status, "podIP", json_string(ip));
    json_object_set_new(
        status, "conditions",
        json_pack("[{s:s, s:s}]", "type", "Ready", "status", ready ? "True" : "False"));
    return p;
}

static void sync(struct env *e)
{
    struct ck_err err = {0};
    if (ck_eps_controller_sync(e->c, "default/web", &err) < 0)
        fail_msg("sync: %s", err.msg);
}

static const json_t *created(struct env *e, size_t i)
{
    const struct ck_fake_action *a = fx_action(e->fc, "create", "endpointslices", i);
    return a ? a->body : NULL;
}

/* The endpoint whose targetRef names pod name in slice, or NULL. */
static const json_t *endpoint_of(const json_t *slice, const char *name)
{
    size_t i;
    const json_t *ep;
    json_array_foreach(json_object_get(slice, "endpoints"), i, ep)
    {
        const char *n =
            json_string_value(json_object_get(json_object_get(ep, "targetRef"), "name"));
        if (n && strcmp(n, name) == 0)
            return ep;
    }
    return NULL;
}

static bool condition(const json_t *ep, const char *which)
{
    return json_is_true(json_object_get(json_object_get(ep, "conditions"), which));
}

static void test_a_service_without_pods_gets_a_placeholder(void **state)
{
    struct env *e = *state;
    add_service(e, json_integer(8080));
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 1);
    const json_t *s = created(e, 0);
    assert_int_equal(json_array_size(json_object_get(s, "endpoints")), 0);
    assert_string_equal(json_string_value(json_object_get(s, "addressType")), "IPv4");
    assert_string_equal(fx_meta(s, "generateName"), "web-");
    const json_t *labels = json_object_get(json_object_get(s, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/service-name")),
                        "web");
    assert_string_equal(
        json_string_value(json_object_get(labels, "endpointslice.kubernetes.io/managed-by")),
        CK_ENDPOINTSLICE_MANAGED_BY);
    const json_t *owner =
        json_array_get(json_object_get(json_object_get(s, "metadata"), "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Service");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), "svc-uid");
    assert_true(json_is_true(json_object_get(owner, "controller")));
}

static void test_ready_not_ready_terminating_and_skipped_pods(void **state)
{
    struct env *e = *state;
    add_service(e, json_integer(8080));
    fx_cache_add(&e->pods, pod("ready", "web", "10.0.0.1", true));
    fx_cache_add(&e->pods, pod("unready", "web", "10.0.0.2", false));
    json_t *going = pod("going", "web", "10.0.0.3", true);
    json_object_set_new(json_object_get(going, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    fx_cache_add(&e->pods, going);
    fx_cache_add(&e->pods, pod("no-ip", "web", NULL, true));
    json_t *done = pod("done", "web", "10.0.0.5", false);
    json_object_set_new(json_object_get(done, "status"), "phase", json_string("Succeeded"));
    fx_cache_add(&e->pods, done);
    fx_cache_add(&e->pods, pod("other-app", "db", "10.0.0.6", true));
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 1);
    const json_t *s = created(e, 0);
    assert_int_equal(json_array_size(json_object_get(s, "endpoints")), 3);
    const json_t *ready = endpoint_of(s, "ready"), *unready = endpoint_of(s, "unready"),
                 *going_ep = endpoint_of(s, "going");
    assert_true(condition(ready, "ready") && condition(ready, "serving"));
    assert_false(condition(ready, "terminating"));
    assert_false(condition(unready, "ready") || condition(unready, "serving"));
    assert_false(condition(going_ep, "ready"));
    assert_true(condition(going_ep, "serving") && condition(going_ep, "terminating"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(ready, "addresses"), 0)),
                        "10.0.0.1");
    const json_t *port = json_array_get(json_object_get(s, "ports"), 0);
    assert_int_equal(json_integer_value(json_object_get(port, "port")), 8080);
    assert_string_equal(json_string_value(json_object_get(port, "name")), "http");

    /* the legacy Endpoints: ready and not-ready addresses, the terminating pod left out */
    const struct ck_fake_action *a = fx_action(e->fc, "create", "endpoints", 0);
    assert_non_null(a);
    assert_string_equal(fx_meta(a->body, "name"), "web");
    const json_t *subset = json_array_get(json_object_get(a->body, "subsets"), 0);
    assert_int_equal(json_array_size(json_object_get(subset, "addresses")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(subset, "addresses"), 0), "ip")),
                        "10.0.0.1");
    assert_int_equal(json_array_size(json_object_get(subset, "notReadyAddresses")), 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(subset, "notReadyAddresses"), 0), "ip")),
                        "10.0.0.2");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(subset, "ports"), 0), "port")),
                     8080);
}

static void test_named_ports_resolve_per_pod(void **state)
{
    struct env *e = *state;
    add_service(e, json_string("http"));
    fx_cache_add(&e->pods, pod("has-port", "web", "10.0.0.1", true));
    json_t *bare = pod("lacks-port", "web", "10.0.0.2", true);
    json_object_del(json_array_get(json_object_get(json_object_get(bare, "spec"), "containers"), 0),
                    "ports");
    fx_cache_add(&e->pods, bare);
    sync(e);
    const json_t *s = created(e, 0);
    assert_int_equal(json_array_size(json_object_get(s, "endpoints")), 1);
    assert_non_null(endpoint_of(s, "has-port"));
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(s, "ports"), 0), "port")),
        8080);
}

static void test_at_most_100_endpoints_per_slice(void **state)
{
    struct env *e = *state;
    add_service(e, json_integer(8080));
    for (int i = 0; i < 250; i++) {
        char name[32], ip[32];
        snprintf(name, sizeof(name), "p%03d", i);
        snprintf(ip, sizeof(ip), "10.0.%d.%d", i / 200, i % 200 + 1);
        fx_cache_add(&e->pods, pod(name, "web", ip, true));
    }
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 3);
    size_t total = 0;
    for (size_t i = 0; i < 3; i++) {
        size_t n = json_array_size(json_object_get(created(e, i), "endpoints"));
        assert_true(n <= CK_ENDPOINTSLICE_MAX_ENDPOINTS);
        total += n;
    }
    assert_int_equal(total, 250);
}

/* A slice as the controller wrote it, now stored under name. */
static json_t *stored(const json_t *body, const char *name)
{
    json_t *s = json_deep_copy(body);
    json_t *meta = json_object_get(s, "metadata");
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "uid", json_string(name));
    json_object_set_new(meta, "resourceVersion", json_string("1"));
    return s;
}

static void test_up_to_date_slices_are_left_alone_and_changes_update(void **state)
{
    struct env *e = *state;
    add_service(e, json_integer(8080));
    fx_cache_add(&e->pods, pod("a", "web", "10.0.0.1", true));
    sync(e);
    json_t *first = stored(created(e, 0), "web-aaaaa");
    assert_int_equal(ck_fake_client_seed(e->fc, SLICES, first), 0);
    fx_cache_add(&e->slices, json_incref(first));
    /* and a stale extra slice of the same service */
    json_t *extra = stored(created(e, 0), "web-zzzzz");
    assert_int_equal(ck_fake_client_seed(e->fc, SLICES, extra), 0);
    fx_cache_add(&e->slices, extra);
    ck_fake_client_clear_actions(e->fc);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "update", NULL), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", SLICES), 1);
    assert_string_equal(fx_action(e->fc, "delete", "endpointslices", 0)->name, "web-zzzzz");

    /* the pod becomes unready: the slice is updated in place */
    fx_cache_add(&e->pods, pod("a", "web", "10.0.0.1", false));
    ck_fake_client_clear_actions(e->fc);
    sync(e);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "endpointslices", 0);
    assert_non_null(u);
    assert_string_equal(fx_meta(u->body, "name"), "web-aaaaa");
    assert_false(condition(endpoint_of(u->body, "a"), "ready"));
    json_decref(first);
}

static void test_services_without_selector_are_not_managed(void **state)
{
    struct env *e = *state;
    fx_cache_add(&e->services,
                 json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[{s:i}]}}", "apiVersion", "v1",
                           "kind", "Service", "metadata", "name", "web", "namespace", "default",
                           "uid", "u", "spec", "ports", "port", 80));
    sync(e);
    size_t n = 0;
    ck_fake_client_actions(e->fc, &n);
    assert_int_equal(n, 0);
    /* a service that no longer exists: its Endpoints are deleted */
    struct ck_err err = {0};
    assert_int_equal(ck_eps_controller_sync(e->c, "default/gone", &err), 0);
    const struct ck_fake_action *a = fx_action(e->fc, "delete", "endpoints", 0);
    assert_non_null(a);
    assert_string_equal(a->name, "gone");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_service_without_pods_gets_a_placeholder, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ready_not_ready_terminating_and_skipped_pods, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_named_ports_resolve_per_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_at_most_100_endpoints_per_slice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_up_to_date_slices_are_left_alone_and_changes_update,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_services_without_selector_are_not_managed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
