/*
 * test_endpoint_reconciler.c - tests for lib/apiserver/endpoint_reconciler.c, the
 * kubernetes Service's Endpoints and EndpointSlice: passes of two servers sharing one
 * SQLite store at given times list both, sorted; a server whose record was not renewed
 * for the TTL drops out; one that stops removes itself at once; the objects carry
 * Kubernetes' labels and port. The thread and the advertised address are covered by
 * tests/e2e/test_pod_network.sh.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/internal/util.h"

static char dir[] = "/tmp/ckube-epr-XXXXXX";
static struct ck_store *store;
static struct ck__registry reg;

#define NOW 1800000000LL

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s", "/tmp/ckube-epr-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char url[300];
    snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
    if (ck_store_open(url, NULL, &store, NULL) < 0)
        return -1;
    const struct ck_schemas *schemas = NULL;
    if (ck__shared_schemas(&schemas, NULL) < 0)
        return -1;
    reg = (struct ck__registry){.store = store, .schemas = schemas};
    json_t *ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                           "metadata", "name", "default");
    char *out = NULL;
    size_t len = 0;
    int r = ck__registry_create(&reg, ck_kind_lookup("", "v1", "namespaces"), NULL, ns, false, &out,
                                &len, NULL);
    free(out);
    json_decref(ns);
    return r;
}

static int teardown(void **state)
{
    (void)state;
    ck_store_close(store);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

static json_t *read_obj(const char *resource, const char *group)
{
    const struct ck_kv *kv = NULL;
    int r = ck__registry_get(&reg, ck_kind_lookup(group, "v1", resource), "default", "kubernetes",
                             &kv, NULL);
    assert_int_equal(r, 0);
    json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
    ck_kv_unref(kv);
    assert_non_null(obj);
    return obj;
}

/* The Endpoints' addresses, space-separated, into buf; checks the slice says the same. */
static const char *listed(char *buf, size_t size)
{
    json_t *ep = read_obj("endpoints", "");
    json_t *slice = read_obj("endpointslices", "discovery.k8s.io");
    buf[0] = '\0';
    char from_slice[256] = "";
    size_t i;
    json_t *v;
    json_array_foreach(
        json_object_get(json_array_get(json_object_get(ep, "subsets"), 0), "addresses"), i, v)
    {
        strncat(buf, i ? " " : "", size - strlen(buf) - 1);
        strncat(buf, json_string_value(json_object_get(v, "ip")), size - strlen(buf) - 1);
    }
    json_array_foreach(json_object_get(slice, "endpoints"), i, v)
    {
        strncat(from_slice, i ? " " : "", sizeof(from_slice) - strlen(from_slice) - 1);
        strncat(from_slice, json_string_value(json_array_get(json_object_get(v, "addresses"), 0)),
                sizeof(from_slice) - strlen(from_slice) - 1);
        assert_true(json_is_true(json_object_get(json_object_get(v, "conditions"), "ready")));
    }
    assert_string_equal(buf, from_slice);
    json_decref(ep);
    json_decref(slice);
    return buf;
}

static void pass(const char *ip, long long at, bool remove)
{
    struct ck_err err = {0};
    if (ck__epr_reconcile(&reg, ip, 6443, at, CK__EPR_TTL, remove, &err) < 0)
        fail_msg("reconcile %s: %s", ip, ck_err_message(&err));
}

static void test_two_servers_are_listed_sorted_with_kubernetes_labels(void **state)
{
    (void)state;
    char buf[256];
    pass("10.0.0.9", NOW, false);
    assert_string_equal(listed(buf, sizeof(buf)), "10.0.0.9");
    pass("10.0.0.10", NOW + 1, false);
    assert_string_equal(listed(buf, sizeof(buf)), "10.0.0.9 10.0.0.10"); /* numeric order */
    json_t *ep = read_obj("endpoints", "");
    json_t *port = json_array_get(
        json_object_get(json_array_get(json_object_get(ep, "subsets"), 0), "ports"), 0);
    assert_string_equal(json_string_value(json_object_get(port, "name")), "https");
    assert_int_equal(json_integer_value(json_object_get(port, "port")), 6443);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(ep, "metadata"), "labels"),
                            "endpointslice.kubernetes.io/skip-mirror")),
                        "true");
    json_t *slice = read_obj("endpointslices", "discovery.k8s.io");
    json_t *labels = json_object_get(json_object_get(slice, "metadata"), "labels");
    assert_int_equal(json_object_size(labels), 1);
    assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/service-name")),
                        "kubernetes");
    assert_string_equal(json_string_value(json_object_get(slice, "addressType")), "IPv4");
    /* a pass that changes nothing writes nothing */
    int64_t before = 0, after = 0;
    assert_int_equal(ck_store_get(store, "", 0, 0, NULL, &before, NULL), CK_ENOENT);
    pass("10.0.0.9", NOW + 2, false);
    assert_int_equal(ck_store_get(store, "", 0, 0, NULL, &after, NULL), CK_ENOENT);
    assert_int_equal(after, before + 1); /* the record's renewal alone */
    json_decref(ep);
    json_decref(slice);
}

static void test_an_unrenewed_server_drops_out_and_a_stopping_one_leaves_at_once(void **state)
{
    (void)state;
    char buf[256];
    pass("10.0.0.1", NOW, false);
    pass("10.0.0.2", NOW, false);
    pass("10.0.0.3", NOW, false);
    assert_string_equal(listed(buf, sizeof(buf)), "10.0.0.1 10.0.0.2 10.0.0.3");
    /* 10.0.0.2 renews; 10.0.0.3 died; .1's pass after the TTL drops .3 */
    pass("10.0.0.2", NOW + CK__EPR_TTL - 1, false);
    pass("10.0.0.1", NOW + CK__EPR_TTL, false);
    assert_string_equal(listed(buf, sizeof(buf)), "10.0.0.1 10.0.0.2");
    const struct ck_kv *kv = NULL;
    assert_int_equal(ck_store_get(store, "/masterleases/10.0.0.3", 22, 0, &kv, NULL, NULL),
                     CK_ENOENT);
    pass("10.0.0.1", NOW + CK__EPR_TTL + 1, true); /* a clean stop */
    assert_string_equal(listed(buf, sizeof(buf)), "10.0.0.2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_servers_are_listed_sorted_with_kubernetes_labels,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_an_unrenewed_server_drops_out_and_a_stopping_one_leaves_at_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
