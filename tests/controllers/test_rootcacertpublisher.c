/*
 * test_rootcacertpublisher.c - the root CA certificate publisher's sync on fakes: the
 * caches are indexers filled by hand, the writes go through the fake client. Cases after
 * Kubernetes' publisher_test.go: a namespace without `kube-root-ca.crt` gets it (the CA
 * under ca.crt, the description annotation); one whose ConfigMap is right gets nothing;
 * a changed CA, an extra key or a missing description is put back by an update that
 * keeps the object's other metadata; a create answered NotFound (the namespace went) is
 * success, any other failure is returned (to be retried by the queue).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckube/rootcacertpublisher.h"

#define CA "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

struct fixture {
    struct ck_fake_client *fake;
    struct ck_indexer *namespaces, *configmaps;
    struct ck_root_ca_publisher *c;
    const struct ck_resource *cm_res;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct ck_err err = {0};
    assert_int_equal(ck_fake_client_new(&f->fake, &err), 0);
    assert_int_equal(ck_indexer_new(&f->namespaces, &err), 0);
    assert_int_equal(ck_indexer_new(&f->configmaps, &err), 0);
    struct ck_root_ca_publisher_config config = {
        .namespaces = f->namespaces, .configmaps = f->configmaps, .root_ca = CA};
    ck_fake_client_iface(f->fake, &config.client);
    assert_int_equal(ck_root_ca_publisher_new(&config, &f->c, &err), 0);
    f->cm_res = ck_controller_resource("", "v1", "configmaps");
    assert_non_null(f->cm_res);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_root_ca_publisher_free(f->c);
    ck_indexer_free(f->namespaces);
    ck_indexer_free(f->configmaps);
    ck_fake_client_free(f->fake);
    free(f);
    return 0;
}

static void add_configmap(struct fixture *f, const char *ns, json_t *data, const char *description)
{
    json_t *cm =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:o}", "apiVersion", "v1", "kind",
                  "ConfigMap", "metadata", "name", CK_ROOT_CA_CONFIGMAP, "namespace", ns,
                  "resourceVersion", "7", "labels", "keep", "me", "data", data);
    assert_non_null(cm);
    if (description)
        json_object_set_new(json_object_get(cm, "metadata"), "annotations",
                            json_pack("{s:s}", CK_ROOT_CA_DESCRIPTION_ANNOTATION, description));
    struct ck_err err = {0};
    assert_int_equal(ck_fake_client_seed(f->fake, f->cm_res, cm), 0); /* on the "server" too */
    assert_int_equal(ck_indexer_add(f->configmaps, cm, &err), 0);
    ck_cached_unref(cm);
}

/* The one action recorded, of verb, on kube-root-ca.crt in ns. */
static const struct ck_fake_action *only_action(struct fixture *f, const char *verb, const char *ns)
{
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(f->fake, &n);
    assert_int_equal(n, 1);
    assert_string_equal(a[0].verb, verb);
    assert_string_equal(a[0].resource, "configmaps");
    assert_string_equal(a[0].namespace, ns);
    assert_string_equal(a[0].name, CK_ROOT_CA_CONFIGMAP);
    return a;
}

static void assert_published(const json_t *body)
{
    const json_t *data = json_object_get(body, "data");
    assert_int_equal(json_object_size(data), 1);
    assert_string_equal(json_string_value(json_object_get(data, "ca.crt")), CA);
    const char *d = json_string_value(
        json_object_get(json_object_get(json_object_get(body, "metadata"), "annotations"),
                        CK_ROOT_CA_DESCRIPTION_ANNOTATION));
    assert_non_null(d);
    assert_true(strlen(d) > 0);
}

static void test_missing_configmap_is_created(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    assert_int_equal(ck_root_ca_publisher_sync(f->c, "team", &err), 0);
    const struct ck_fake_action *a = only_action(f, "create", "team");
    assert_string_equal(json_string_value(json_object_get(a[0].body, "kind")), "ConfigMap");
    assert_published(a[0].body);
}

static void test_right_configmap_is_left_alone(void **state)
{
    struct fixture *f = *state;
    add_configmap(f, "team", json_pack("{s:s}", "ca.crt", CA), "about it");
    struct ck_err err = {0};
    assert_int_equal(ck_root_ca_publisher_sync(f->c, "team", &err), 0);
    size_t n = 0;
    ck_fake_client_actions(f->fake, &n);
    assert_int_equal(n, 0);
}

static void test_changed_configmap_is_restored(void **state)
{
    struct fixture *f = *state;
    static const struct {
        const char *ns, *ca, *extra, *description;
    } cases[] = {
        {"other-ca", "not the CA", NULL, "about it"},
        {"extra-key", CA, "x", "about it"},
        {"no-description", CA, NULL, NULL},
        {"empty-description", CA, NULL, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *data = json_pack("{s:s}", "ca.crt", cases[i].ca);
        if (cases[i].extra)
            json_object_set_new(data, "extra", json_string(cases[i].extra));
        add_configmap(f, cases[i].ns, data, cases[i].description);
        ck_fake_client_clear_actions(f->fake);
        struct ck_err err = {0};
        assert_int_equal(ck_root_ca_publisher_sync(f->c, cases[i].ns, &err), 0);
        const struct ck_fake_action *a = only_action(f, "update", cases[i].ns);
        assert_published(a[0].body);
        const json_t *meta = json_object_get(a[0].body, "metadata");
        assert_string_equal(json_string_value(json_object_get(meta, "resourceVersion")), "7");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(meta, "labels"), "keep")), "me");
    }
}

static void test_create_failures(void **state)
{
    struct fixture *f = *state;
    struct ck_err err = {0};
    assert_int_equal(ck_fake_client_fail(f->fake, "create", f->cm_res, 1, CK_ENOENT,
                                         "namespaces \"gone\" not found"),
                     0);
    assert_int_equal(ck_root_ca_publisher_sync(f->c, "gone", &err), 0);
    assert_int_equal(
        ck_fake_client_fail(f->fake, "create", f->cm_res, 1, CK_EIO, "connection refused"), 0);
    assert_int_equal(ck_root_ca_publisher_sync(f->c, "team", &err), CK_EIO);
    assert_non_null(strstr(ck_err_message(&err), "team/kube-root-ca.crt"));
    ck_err_release(&err);
    assert_int_equal(ck_fake_client_count(f->fake, "create", f->cm_res), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_missing_configmap_is_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_right_configmap_is_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_configmap_is_restored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
