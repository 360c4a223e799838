/*
 * test_manager.c - the controller manager's --controllers selection, as Kubernetes'
 * IsControllerEnabled reads it, and its refusal of unknown names.
 */
#include "cktest.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enabled),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
