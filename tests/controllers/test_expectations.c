/*
 * test_expectations.c - tests for lib/controllers/expectations.c, after Kubernetes'
 * controller_utils_test.go: counts met by observations, expiry after the timeout on a
 * fake clock, raise/lower/delete, tracked deletions counted once, and concurrent
 * observers (run under ThreadSanitizer).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdlib.h>

#include "ckube/controllers.h"

static struct ck_expectations *new_expectations(struct ck_clock *clock, int64_t timeout)
{
    struct ck_expectations *e;
    assert_int_equal(ck_expectations_new(clock, timeout, &e, NULL), 0);
    return e;
}

static void test_a_key_without_expectations_is_satisfied(void **state)
{
    (void)state;
    struct ck_expectations *e = new_expectations(NULL, 0);
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    int64_t adds, dels;
    assert_int_equal(ck_expectations_get(e, "ns/rs", &adds, &dels), CK_ENOENT);
    ck_expectations_creation_observed(e, "ns/rs"); /* no record: nothing to lower */
    assert_int_equal(ck_expectations_get(e, "ns/rs", &adds, &dels), CK_ENOENT);
    ck_expectations_free(e);
}

static void test_every_expected_creation_must_be_observed(void **state)
{
    (void)state;
    struct ck_expectations *e = new_expectations(NULL, 0);
    assert_int_equal(ck_expectations_expect_creations(e, "ns/rs", 3), 0);
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_creation_observed(e, "ns/rs");
    ck_expectations_creation_observed(e, "ns/rs");
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_creation_observed(e, "ns/rs");
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_creation_observed(e, "ns/rs"); /* may go negative, still satisfied */
    int64_t adds, dels;
    assert_int_equal(ck_expectations_get(e, "ns/rs", &adds, &dels), 0);
    assert_int_equal(adds, -1);
    assert_int_equal(dels, 0);
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    assert_true(ck_expectations_satisfied(e, "ns/other"));
    ck_expectations_free(e);
}

static void test_both_counts_must_be_met(void **state)
{
    (void)state;
    struct ck_expectations *e = new_expectations(NULL, 0);
    ck_expectations_set(e, "ns/rs", 1, 2);
    ck_expectations_creation_observed(e, "ns/rs");
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_deletion_observed(e, "ns/rs");
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_deletion_observed(e, "ns/rs");
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_free(e);
}

static void test_unmet_expectations_expire_after_the_timeout(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(1000 * CK_SEC);
    struct ck_expectations *e = new_expectations(clock, 0); /* the 5 minute default */
    ck_expectations_expect_deletions(e, "ns/rs", 1);
    ck_fake_clock_step(clock, CK_EXPECTATIONS_TIMEOUT);
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_fake_clock_step(clock, 1);
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    /* Setting them again restarts the clock; raising does not. */
    ck_expectations_expect_creations(e, "ns/rs", 1);
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_fake_clock_step(clock, CK_EXPECTATIONS_TIMEOUT);
    ck_expectations_raise(e, "ns/rs", 2, 0);
    ck_fake_clock_step(clock, 1);
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_free(e);
    ck_fake_clock_free(clock);
}

static void test_raise_lower_and_delete(void **state)
{
    (void)state;
    struct ck_expectations *e = new_expectations(NULL, 0);
    ck_expectations_raise(e, "ns/rs", 5, 5); /* no record: no-op */
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_set(e, "ns/rs", 1, 0);
    ck_expectations_raise(e, "ns/rs", 2, 1);
    int64_t adds, dels;
    ck_expectations_get(e, "ns/rs", &adds, &dels);
    assert_int_equal(adds, 3);
    assert_int_equal(dels, 1);
    ck_expectations_lower(e, "ns/rs", 3, 1);
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_set(e, "ns/rs", 4, 0);
    ck_expectations_delete(e, "ns/rs");
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    assert_int_equal(ck_expectations_get(e, "ns/rs", &adds, &dels), CK_ENOENT);
    ck_expectations_delete(e, "ns/never"); /* fine */
    ck_expectations_free(e);
}

static void test_tracked_deletions_count_each_object_once(void **state)
{
    (void)state;
    struct ck_expectations *e = new_expectations(NULL, 0);
    const char *pods[] = {"ns/pod-a", "ns/pod-b"};
    assert_int_equal(ck_expectations_expect_deletions_of(e, "ns/rs", pods, 2), 0);
    assert_int_equal(ck_expectations_pending_deletions(e, "ns/rs"), 2);
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    /* An update with deletionTimestamp, then the delete event: counted once. */
    ck_expectations_deletion_observed_of(e, "ns/rs", "ns/pod-a");
    ck_expectations_deletion_observed_of(e, "ns/rs", "ns/pod-a");
    ck_expectations_deletion_observed_of(e, "ns/rs", "ns/unrelated");
    int64_t adds, dels;
    ck_expectations_get(e, "ns/rs", &adds, &dels);
    assert_int_equal(dels, 1);
    assert_false(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_deletion_observed_of(e, "ns/rs", "ns/pod-b");
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    assert_int_equal(ck_expectations_pending_deletions(e, "ns/rs"), 0);

    /* A new set replaces the old one; deleting the expectations drops it. */
    const char *more[] = {"ns/pod-c"};
    ck_expectations_expect_deletions_of(e, "ns/rs", more, 1);
    ck_expectations_deletion_observed_of(e, "ns/rs", "ns/pod-a");
    assert_int_equal(ck_expectations_pending_deletions(e, "ns/rs"), 1);
    ck_expectations_delete(e, "ns/rs");
    assert_int_equal(ck_expectations_pending_deletions(e, "ns/rs"), 0);
    ck_expectations_free(e);
}

struct observer {
    struct ck_expectations *e;
};

static void *observe_main(void *arg)
{
    struct observer *o = arg;
    for (int i = 0; i < 250; i++)
        ck_expectations_creation_observed(o->e, "ns/rs");
    return NULL;
}

static void test_concurrent_observations_are_all_counted(void **state)
{
    (void)state;
    struct ck_expectations *e = new_expectations(NULL, 0);
    ck_expectations_expect_creations(e, "ns/rs", 1000);
    struct observer o = {e};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, observe_main, &o);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int64_t adds, dels;
    ck_expectations_get(e, "ns/rs", &adds, &dels);
    assert_int_equal(adds, 0);
    assert_true(ck_expectations_satisfied(e, "ns/rs"));
    ck_expectations_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_key_without_expectations_is_satisfied),
        cmocka_unit_test(test_every_expected_creation_must_be_observed),
        cmocka_unit_test(test_both_counts_must_be_met),
        cmocka_unit_test(test_unmet_expectations_expire_after_the_timeout),
        cmocka_unit_test(test_raise_lower_and_delete),
        cmocka_unit_test(test_tracked_deletions_count_each_object_once),
        cmocka_unit_test(test_concurrent_observations_are_all_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
