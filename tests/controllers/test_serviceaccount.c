/*
 * test_serviceaccount.c - the ServiceAccount controller's sync on fakes: the caches are
 * indexers filled by hand, the writes go through the fake client. Cases after
 * Kubernetes' serviceaccounts_controller_test.go: an Active namespace without `default`
 * gets it, one that has it gets nothing, a Terminating or unknown namespace gets
 * nothing, an AlreadyExists answer is success and any other failure is returned (to be
 * retried by the queue).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckube/sacontroller.h"

struct fixture {
    struct ck_fake_client *fake;
    struct ck_indexer *namespaces, *accounts;
    struct ck_sa_controller *c;
    const struct ck_resource *sa_res;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct ck_err err = {0};
    assert_int_equal(ck_fake_client_new(&f->fake, &err), 0);
    assert_int_equal(ck_indexer_new(&f->namespaces, &err), 0);
    assert_int_equal(ck_indexer_new(&f->accounts, &err), 0);
    struct ck_sa_controller_config config = {.namespaces = f->namespaces, .accounts = f->accounts};
    ck_fake_client_iface(f->fake, &config.client);
    assert_int_equal(ck_sa_controller_new(&config, &f->c, &err), 0);
    f->sa_res = ck_controller_resource("", "v1", "serviceaccounts");
    assert_non_null(f->sa_res);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_sa_controller_free(f->c);
    ck_indexer_free(f->namespaces);
    ck_indexer_free(f->accounts);
    ck_fake_client_free(f->fake);
    free(f);
    return 0;
}

static void add_namespace(struct fixture *f, const char *name, const char *phase)
{
    json_t *ns = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                           "metadata", "name", name, "status", "phase", phase);
    struct ck_err err = {0};
    assert_int_equal(ck_indexer_add(f->namespaces, ns, &err), 0);
    ck_cached_unref(ns);
}

static void add_account(struct fixture *f, const char *ns, const char *name)
{
    json_t *sa = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                           "metadata", "name", name, "namespace", ns);
    struct ck_err err = {0};
    assert_int_equal(ck_indexer_add(f->accounts, sa, &err), 0);
    ck_cached_unref(sa);
}

static void test_active_namespace_gets_default(void **state)
{
    struct fixture *f = *state;
    add_namespace(f, "team", "Active");
    add_account(f, "team", "builder"); /* another account is not the default one */
    struct ck_err err = {0};
    assert_int_equal(ck_sa_controller_sync(f->c, "team", &err), 0);
    size_t n = 0;
    const struct ck_fake_action *a = ck_fake_client_actions(f->fake, &n);
    assert_int_equal(n, 1);
    assert_string_equal(a[0].verb, "create");
    assert_string_equal(a[0].resource, "serviceaccounts");
    assert_string_equal(a[0].namespace, "team");
    assert_string_equal(a[0].name, "default");
    assert_string_equal(json_string_value(json_object_get(a[0].body, "kind")), "ServiceAccount");
}

static void test_existing_default_is_left_alone(void **state)
{
    struct fixture *f = *state;
    add_namespace(f, "team", "Active");
    add_account(f, "team", "default");
    struct ck_err err = {0};
    assert_int_equal(ck_sa_controller_sync(f->c, "team", &err), 0);
    assert_int_equal(ck_fake_client_count(f->fake, "create", NULL), 0);
}

static void test_terminating_or_unknown_namespace_gets_nothing(void **state)
{
    struct fixture *f = *state;
    add_namespace(f, "going", "Terminating");
    struct ck_err err = {0};
    assert_int_equal(ck_sa_controller_sync(f->c, "going", &err), 0);
    assert_int_equal(ck_sa_controller_sync(f->c, "nosuch", &err), 0);
    assert_int_equal(ck_fake_client_count(f->fake, "create", NULL), 0);
}

static void test_already_exists_is_success_other_failures_retry(void **state)
{
    struct fixture *f = *state;
    add_namespace(f, "team", "Active");
    struct ck_err err = {0};
    assert_int_equal(ck_fake_client_fail(f->fake, "create", f->sa_res, 1, CK_EEXIST,
                                         "serviceaccounts \"default\" already exists"),
                     0);
    assert_int_equal(ck_sa_controller_sync(f->c, "team", &err), 0);
    assert_int_equal(
        ck_fake_client_fail(f->fake, "create", f->sa_res, 1, CK_EIO, "connection refused"), 0);
    assert_int_equal(ck_sa_controller_sync(f->c, "team", &err), CK_EIO);
    assert_non_null(strstr(ck_err_message(&err), "team/default"));
    ck_err_release(&err);
    assert_int_equal(ck_sa_controller_sync(f->c, "team", &err), 0);
    assert_int_equal(ck_fake_client_count(f->fake, "create", f->sa_res), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_active_namespace_gets_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing_default_is_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminating_or_unknown_namespace_gets_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_already_exists_is_success_other_failures_retry, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
