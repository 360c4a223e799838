/*
 * test_endpointslicemirroring.c - the EndpointSlice mirroring controller's sync on fakes:
 * caches the test fills (services, endpoints, slices behind listers) and the fake
 * client, as Kubernetes' endpointslicemirroring_controller_test.go and
 * reconciler_test.go do with fake informers and the fake clientset.
 */
#include "cktest.h"

#include "ckube/endpointslicemirroring.h"
#include "ckube/internal/util.h"
#include "fixtures.h"

#define SLICES ck_controller_resource("discovery.k8s.io", "v1", "endpointslices")

struct env {
    struct fx_cache services, endpoints, slices;
    struct ck_fake_client *fc;
    struct ck_ctl_client client;
    struct ck_mirroring_controller *c;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    fx_cache_init(&e->services);
    fx_cache_init(&e->endpoints);
    fx_cache_init(&e->slices);
    assert_int_equal(ck_fake_client_new(&e->fc, NULL), 0);
    ck_fake_client_iface(e->fc, &e->client);
    struct ck_mirroring_deps deps = {.client = &e->client,
                                     .services = &e->services.lister,
                                     .endpoints = &e->endpoints.lister,
                                     .slices = &e->slices.lister};
    assert_int_equal(ck_mirroring_controller_new_with(&deps, &e->c, NULL), 0);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    ck_mirroring_controller_free(e->c);
    ck_fake_client_free(e->fc);
    fx_cache_release(&e->services);
    fx_cache_release(&e->endpoints);
    fx_cache_release(&e->slices);
    free(e);
    return 0;
}

/* Service ext in default, with a selector app=x when selector is true. */
static void add_service(struct env *e, bool selector)
{
    json_t *svc = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[{s:i}]}}", "apiVersion", "v1",
                            "kind", "Service", "metadata", "name", "ext", "namespace", "default",
                            "uid", "svc-uid", "spec", "ports", "port", 80);
    if (selector)
        json_object_set_new(json_object_get(svc, "spec"), "selector",
                            json_pack("{s:s}", "app", "x"));
    fx_cache_add(&e->services, svc);
}

/* Endpoints ext with subsets (JSON text) and labels (NULL: none). */
static void add_endpoints(struct env *e, const char *subsets, json_t *labels)
{
    json_t *ep =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}}, s:o}", "apiVersion", "v1", "kind",
                  "Endpoints", "metadata", "name", "ext", "namespace", "default", "uid", "ep-uid",
                  "annotations", "team", "db", "kubectl.kubernetes.io/last-applied-configuration",
                  "{}", "subsets", json_loads(subsets, 0, NULL));
    assert_non_null(json_object_get(ep, "subsets"));
    if (labels)
        json_object_set_new(json_object_get(ep, "metadata"), "labels", labels);
    fx_cache_add(&e->endpoints, ep);
}

static void sync(struct env *e)
{
    struct ck_err err = {0};
    if (ck_mirroring_controller_sync(e->c, "default/ext", &err) < 0)
        fail_msg("sync: %s", err.msg);
}

static const json_t *created(struct env *e, size_t i)
{
    const struct ck_fake_action *a = fx_action(e->fc, "create", "endpointslices", i);
    return a ? a->body : NULL;
}

static const char *label(const json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
}

static void test_hand_written_endpoints_are_mirrored(void **state)
{
    struct env *e = *state;
    add_service(e, false);
    add_endpoints(
        e,
        "[{\"addresses\":[{\"ip\":\"10.1.0.2\",\"nodeName\":\"n1\"},{\"ip\":\"10.1.0.1\"}],"
        "\"notReadyAddresses\":[{\"ip\":\"10.1.0.3\",\"hostname\":\"db-3\"}],"
        "\"ports\":[{\"name\":\"pg\",\"port\":5432}]}]",
        json_pack("{s:s}", "tier", "data"));
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 1);
    const json_t *s = created(e, 0);
    assert_string_equal(fx_meta(s, "generateName"), "ext-");
    assert_string_equal(label(s, "kubernetes.io/service-name"), "ext");
    assert_string_equal(label(s, "endpointslice.kubernetes.io/managed-by"),
                        CK_MIRRORING_MANAGED_BY);
    assert_string_equal(label(s, "tier"), "data"); /* the Endpoints' own labels are kept */
    const json_t *annotations = json_object_get(json_object_get(s, "metadata"), "annotations");
    assert_string_equal(json_string_value(json_object_get(annotations, "team")), "db");
    assert_null(json_object_get(annotations, "kubectl.kubernetes.io/last-applied-configuration"));
    const json_t *owner =
        json_array_get(json_object_get(json_object_get(s, "metadata"), "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "Endpoints");
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), "ep-uid");
    assert_string_equal(json_string_value(json_object_get(s, "addressType")), "IPv4");
    const json_t *eps = json_object_get(s, "endpoints");
    assert_int_equal(json_array_size(eps), 3);
    const json_t *first = json_array_get(eps, 0), *third = json_array_get(eps, 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(first, "addresses"), 0)),
                        "10.1.0.2");
    assert_string_equal(json_string_value(json_object_get(first, "nodeName")), "n1");
    assert_true(json_is_true(json_object_get(json_object_get(first, "conditions"), "ready")));
    assert_true(json_is_false(json_object_get(json_object_get(third, "conditions"), "ready")));
    assert_string_equal(json_string_value(json_object_get(third, "hostname")), "db-3");
    const json_t *port = json_array_get(json_object_get(s, "ports"), 0);
    assert_string_equal(json_string_value(json_object_get(port, "name")), "pg");
    assert_int_equal(json_integer_value(json_object_get(port, "port")), 5432);
    assert_string_equal(json_string_value(json_object_get(port, "protocol")), "TCP");
}

static void test_address_types_and_ports_get_slices_of_their_own(void **state)
{
    struct env *e = *state;
    add_service(e, false);
    add_endpoints(
        e,
        "[{\"addresses\":[{\"ip\":\"10.1.0.1\"},{\"ip\":\"fd00::1\"},{\"ip\":\"bad\"}],"
        "\"ports\":[{\"port\":80}]},"
        "{\"addresses\":[{\"ip\":\"10.1.0.9\"}],\"ports\":[{\"port\":81}]},"
        "{\"addresses\":[{\"ip\":\"10.1.0.1\"},{\"ip\":\"10.1.0.5\"}],\"ports\":[{\"port\":80}]}]",
        NULL);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 3);
    assert_string_equal(json_string_value(json_object_get(created(e, 0), "addressType")), "IPv4");
    /* 10.1.0.1 twice for port 80 counts once */
    assert_int_equal(json_array_size(json_object_get(created(e, 0), "endpoints")), 2);
    assert_string_equal(json_string_value(json_object_get(created(e, 1), "addressType")), "IPv6");
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(created(e, 2), "ports"), 0), "port")),
                     81);
}

static void test_a_subset_mirrors_at_most_a_thousand_addresses(void **state)
{
    struct env *e = *state;
    add_service(e, false);
    json_t *addresses = json_array();
    for (int i = 0; i < 1005; i++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "10.2.%d.%d", i / 250, i % 250 + 1);
        json_array_append_new(addresses, json_pack("{s:s}", "ip", ip));
    }
    json_t *subsets = json_pack("[{s:o, s:[{s:i}]}]", "addresses", addresses, "ports", "port", 80);
    char *text = json_dumps(subsets, JSON_COMPACT);
    add_endpoints(e, text, NULL);
    free(text);
    json_decref(subsets);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 1);
    assert_int_equal(json_array_size(json_object_get(created(e, 0), "endpoints")),
                     CK_MIRRORING_MAX_ENDPOINTS);
}

/* A mirrored slice of ext as the server would hold it. */
static void add_mirrored_slice(struct env *e, const char *name)
{
    json_t *s = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:s, s:[]}", "apiVersion",
                          "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata", "name", name,
                          "namespace", "default", "labels", "kubernetes.io/service-name", "ext",
                          "endpointslice.kubernetes.io/managed-by", CK_MIRRORING_MANAGED_BY,
                          "addressType", "IPv4", "endpoints");
    fx_cache_add(&e->slices, s);
}

static void test_skipped_endpoints_and_selector_services_lose_their_mirrors(void **state)
{
    struct env *e = *state;
    add_service(e, false);
    add_endpoints(e, "[{\"addresses\":[{\"ip\":\"10.1.0.1\"}]}]",
                  json_pack("{s:s}", "endpointslice.kubernetes.io/skip-mirror", "true"));
    add_mirrored_slice(e, "ext-old");
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", SLICES), 1);
    assert_string_equal(fx_action(e->fc, "delete", "endpointslices", 0)->name, "ext-old");

    ck_fake_client_clear_actions(e->fc);
    add_service(e, true); /* now with a selector: the endpointslice controller's */
    add_endpoints(e, "[{\"addresses\":[{\"ip\":\"10.1.0.1\"}]}]", NULL);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 0);
    assert_int_equal(ck_fake_client_count(e->fc, "delete", SLICES), 1);
}

static void test_endpoints_without_a_service_are_not_mirrored(void **state)
{
    struct env *e = *state;
    add_endpoints(e, "[{\"addresses\":[{\"ip\":\"10.1.0.1\"}]}]", NULL);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "create", SLICES), 0);
}

static void test_an_unchanged_mirror_is_left_alone_and_a_changed_one_updated(void **state)
{
    struct env *e = *state;
    add_service(e, false);
    add_endpoints(e, "[{\"addresses\":[{\"ip\":\"10.1.0.1\"}],\"ports\":[{\"port\":80}]}]", NULL);
    sync(e);
    json_t *stored = ck__json_copy(created(e, 0));
    json_t *meta = json_object_get(stored, "metadata");
    json_object_del(meta, "generateName");
    json_object_set_new(meta, "name", json_string("ext-abcde"));
    assert_int_equal(ck_fake_client_seed(e->fc, SLICES, stored), 0); /* on the server */
    fx_cache_add(&e->slices, stored);
    ck_fake_client_clear_actions(e->fc);
    sync(e);
    size_t n = 0;
    ck_fake_client_actions(e->fc, &n);
    assert_int_equal(n, 0);
    add_endpoints(
        e,
        "[{\"addresses\":[{\"ip\":\"10.1.0.1\"},{\"ip\":\"10.1.0.2\"}],\"ports\":[{\"port\":80}]}]",
        NULL);
    sync(e);
    assert_int_equal(ck_fake_client_count(e->fc, "update", SLICES), 1);
    const struct ck_fake_action *u = fx_action(e->fc, "update", "endpointslices", 0);
    assert_string_equal(u->name, "ext-abcde");
    assert_int_equal(json_array_size(json_object_get(u->body, "endpoints")), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hand_written_endpoints_are_mirrored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_address_types_and_ports_get_slices_of_their_own, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_subset_mirrors_at_most_a_thousand_addresses, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_skipped_endpoints_and_selector_services_lose_their_mirrors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_endpoints_without_a_service_are_not_mirrored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_an_unchanged_mirror_is_left_alone_and_a_changed_one_updated, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
