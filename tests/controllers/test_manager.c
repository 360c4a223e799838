/*
 * test_manager.c - the controller manager's table and its --controllers selection, as
 * Kubernetes' IsControllerEnabled reads it, its refusal of unknown names, and the list of
 * known names help texts print; each controller's worker count from its
 * --concurrent-NAME-syncs value or its default (Kubernetes': gc 20, namespace 10, 5 else).
 */
#include "cktest.h"

#include <stdio.h>
#include <string.h>

#include "ckube/manager.h"

static void test_enabled(void **state)
{
    (void)state;
    assert_true(ck_controller_manager_enabled("*", "replicaset"));
    assert_true(ck_controller_manager_enabled(NULL, "replicaset"));
    assert_false(ck_controller_manager_enabled("*,-replicaset", "replicaset"));
    assert_false(ck_controller_manager_enabled("-replicaset,*", "replicaset"));
    assert_true(ck_controller_manager_enabled("replicaset,-replicaset", "replicaset"));
    assert_true(ck_controller_manager_enabled("replicaset", "replicaset"));
    assert_false(ck_controller_manager_enabled("", "replicaset"));
    assert_false(ck_controller_manager_enabled("replicasets", "replicaset"));
    assert_false(ck_controller_manager_enabled("-replicaset", "replicaset"));
    /* a row's Kubernetes name says the same as its own */
    assert_false(ck_controller_manager_enabled("*,-node-ipam-controller", "nodeipam"));
    assert_true(ck_controller_manager_enabled("node-ipam-controller", "nodeipam"));
    assert_true(ck_controller_manager_enabled("endpointslice-mirroring-controller,-*",
                                              "endpointslicemirroring"));
    assert_false(ck_controller_manager_enabled("node-ipam-controller", "endpointslicemirroring"));
    assert_int_equal(ck_controller_manager_check("*,-endpointslice-mirroring-controller", NULL), 0);
}

static void test_check(void **state)
{
    (void)state;
    struct ck_err err = {0};
    assert_int_equal(ck_controller_manager_check("*,-replicaset", &err), 0);
    assert_int_equal(ck_controller_manager_check("replicaset", &err), 0);
    assert_int_equal(ck_controller_manager_check("*,-deploymnet", &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "\"deploymnet\" is not in the list of known controllers"));
    assert_int_equal(ck_controller_manager_check("foo", &err), CK_EINVAL);
}

static void test_table(void **state)
{
    (void)state;
    size_t n = 0;
    const struct ck_controller_descriptor *t = ck_controller_manager_table(&n);
    assert_true(n >= 1);
    char known[CK_CONTROLLER_MANAGER_KNOWN_SIZE];
    ck_controller_manager_known(known, sizeof(known));
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].start);
        assert_non_null(t[i].run);
        assert_non_null(t[i].stop);
        assert_non_null(strstr(known, t[i].name));
        /* every row is accepted by name and by -name, and "*" follows its default */
        struct ck_err err = {0};
        char minus[64];
        snprintf(minus, sizeof(minus), "*,-%s", t[i].name);
        assert_int_equal(ck_controller_manager_check(t[i].name, &err), 0);
        assert_int_equal(ck_controller_manager_check(minus, &err), 0);
        assert_int_equal(ck_controller_manager_enabled("*", t[i].name), t[i].enabled_by_default);
        assert_true(ck_controller_manager_enabled(t[i].name, t[i].name));
    }
    assert_non_null(strstr(known, "replicaset"));
    assert_non_null(strstr(known, "garbagecollector"));
    assert_non_null(strstr(known, "namespace"));
    assert_non_null(strstr(known, "deployment"));
    assert_non_null(strstr(known, "serviceaccount"));
    assert_false(ck_controller_manager_enabled("*", "nosuchcontroller"));
    /* a tiny buffer is truncated, never overrun */
    char tiny[4];
    assert_string_equal(ck_controller_manager_known(tiny, sizeof(tiny)), "rep");
}

static const struct ck_controller_descriptor *row(const char *name)
{
    size_t n = 0;
    const struct ck_controller_descriptor *t = ck_controller_manager_table(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    fail_msg("no controller %s in the table", name);
    return NULL;
}

static void test_workers(void **state)
{
    (void)state;
    /* kube-controller-manager 1.32's defaults and flag names */
    assert_int_equal(ck_controller_manager_workers(NULL, row("garbagecollector")), 20);
    assert_string_equal(row("garbagecollector")->syncs_flag, "gc");
    assert_int_equal(ck_controller_manager_workers(NULL, row("namespace")), 10);
    assert_int_equal(ck_controller_manager_workers(NULL, row("replicaset")), 5);
    assert_int_equal(ck_controller_manager_workers(NULL, row("deployment")), 5);
    /* a value given for one controller changes that one only */
    const struct ck_controller_workers given[] = {{"garbagecollector", 3}, {"replicaset", 7}};
    struct ck_controller_manager_config config = {.workers = given, .n_workers = 2};
    assert_int_equal(ck_controller_manager_workers(&config, row("garbagecollector")), 3);
    assert_int_equal(ck_controller_manager_workers(&config, row("replicaset")), 7);
    assert_int_equal(ck_controller_manager_workers(&config, row("namespace")), 10);
    assert_int_equal(ck_controller_manager_workers(&config, row("deployment")), 5);
    /* an unknown controller or a count below one is refused before anything starts */
    struct ck_err err = {0};
    struct ck_controller_manager *cm = NULL;
    const struct ck_controller_workers unknown[] = {{"nosuch", 3}};
    config = (struct ck_controller_manager_config){
        .controllers = "*", .workers = unknown, .n_workers = 1};
    assert_int_equal(ck_controller_manager_start(&config, &cm, &err), CK_EINVAL);
    assert_null(cm);
    assert_non_null(strstr(err.msg, "nosuch"));
    const struct ck_controller_workers zero[] = {{"garbagecollector", 0}};
    config.workers = zero;
    assert_int_equal(ck_controller_manager_start(&config, &cm, &err), CK_EINVAL);
    assert_null(cm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enabled),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
