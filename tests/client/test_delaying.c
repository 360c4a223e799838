/*
 * test_delaying.c - tests for lib/client/delaying.c: ck_wq_add_after() driven by a fake
 * clock (client-go's delaying_queue_test.go cases), shutdown, and one short wait on the
 * real clock. After a clock step, ck_fake_clock_wait_for_waiters() tells that the timer
 * thread has handled it; ck_wq_get() waits for a key to arrive. No sleeps.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>

#include "../../lib/client/internal.h"
#include "ckube/client.h"

struct fixture {
    struct ck_clock *clock;
    struct ck_wq *q;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->clock = ck_fake_clock_new(5000 * CK_SEC);
    struct ck_wq_options opts = {.name = "delayed", .clock = f->clock};
    if (ck_wq_new(&opts, &f->q, NULL) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_wq_free(f->q);
    ck_fake_clock_free(f->clock);
    free(f);
    return 0;
}

/* Steps the clock and waits until the timer thread sleeps again. */
static void step(struct fixture *f, int64_t d)
{
    ck_fake_clock_step(f->clock, d);
    ck_fake_clock_wait_for_waiters(f->clock, 1);
}

static void expect_get(struct fixture *f, const char *want)
{
    const char *key = NULL;
    assert_int_equal(ck_wq_get(f->q, &key), 0);
    assert_string_equal(key, want);
    ck_wq_done(f->q, key);
}

static void test_add_after_waits_for_the_clock(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(ck_wq_add_after(f->q, "foo", 50 * CK_MSEC), 0);
    step(f, 0);
    assert_int_equal(ck_wq_len(f->q), 0);
    assert_int_equal(ck_wq_delayed_len(f->q), 1);
    step(f, 49 * CK_MSEC);
    assert_int_equal(ck_wq_len(f->q), 0);
    ck_fake_clock_step(f->clock, 11 * CK_MSEC);
    expect_get(f, "foo");
    /* Far past any heartbeat: nothing else arrives. */
    step(f, 10 * CK_SEC);
    assert_int_equal(ck_wq_len(f->q), 0);
    assert_int_equal(ck_wq_delayed_len(f->q), 0);
}

static void test_adding_a_delayed_key_again_keeps_the_earlier_time(void **state)
{
    struct fixture *f = *state;
    ck_wq_add_after(f->q, "foo", 50 * CK_MSEC);
    ck_wq_add_after(f->q, "foo", 70 * CK_MSEC);
    assert_int_equal(ck_wq_delayed_len(f->q), 1);
    step(f, 0);
    assert_int_equal(ck_wq_len(f->q), 0);
    ck_fake_clock_step(f->clock, 60 * CK_MSEC);
    expect_get(f, "foo");
    step(f, 20 * CK_MSEC); /* past the later time: no second add */
    assert_int_equal(ck_wq_len(f->q), 0);

    /* This time the later call is the earlier time, and wins. */
    ck_wq_add_after(f->q, "foo", 50 * CK_MSEC);
    ck_wq_add_after(f->q, "foo", 30 * CK_MSEC);
    step(f, 0);
    assert_int_equal(ck_wq_len(f->q), 0);
    ck_fake_clock_step(f->clock, 40 * CK_MSEC);
    expect_get(f, "foo");
    step(f, 20 * CK_MSEC);
    assert_int_equal(ck_wq_len(f->q), 0);
}

static void test_a_later_added_earlier_key_fires_first(void **state)
{
    struct fixture *f = *state;
    ck_wq_add_after(f->q, "foo", 1 * CK_SEC);
    ck_wq_add_after(f->q, "bar", 50 * CK_MSEC);
    step(f, 0);
    assert_int_equal(ck_wq_len(f->q), 0);
    ck_fake_clock_step(f->clock, 60 * CK_MSEC);
    expect_get(f, "bar");
    ck_wq_add_after(f->q, "baz", 2 * CK_SEC);
    ck_fake_clock_step(f->clock, 1 * CK_SEC);
    expect_get(f, "foo");
    step(f, 0);
    assert_int_equal(ck_wq_len(f->q), 0);
    ck_fake_clock_step(f->clock, 2 * CK_SEC);
    expect_get(f, "baz");
}

static void test_keys_due_together_enter_in_ready_order(void **state)
{
    struct fixture *f = *state;
    ck_wq_add_after(f->q, "foo", 1 * CK_SEC);
    ck_wq_add_after(f->q, "bar", 500 * CK_MSEC);
    ck_wq_add_after(f->q, "baz", 250 * CK_MSEC);
    step(f, 0);
    assert_int_equal(ck_wq_len(f->q), 0);
    step(f, 2 * CK_SEC);
    assert_int_equal(ck_wq_len(f->q), 3);
    expect_get(f, "baz");
    expect_get(f, "bar");
    expect_get(f, "foo");
}

static void test_many_delayed_keys_come_out_sorted(void **state)
{
    struct fixture *f = *state;
    /* 200 keys in a scrambled order exercise the heap's sift up and down. */
    char key[16];
    for (int i = 0; i < 200; i++) {
        int d = (i * 73) % 200;
        snprintf(key, sizeof(key), "k%03d", d);
        ck_wq_add_after(f->q, key, (d + 1) * CK_MSEC);
    }
    assert_int_equal(ck_wq_delayed_len(f->q), 200);
    step(f, 1 * CK_SEC);
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "k%03d", i);
        expect_get(f, key);
    }
}

static void test_zero_or_negative_delay_adds_now(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(ck_wq_add_after(f->q, "now", 0), 0);
    assert_int_equal(ck_wq_add_after(f->q, "past", -CK_SEC), 0);
    assert_int_equal(ck_wq_len(f->q), 2);
    assert_int_equal(ck_wq_delayed_len(f->q), 0);
    struct ck_wq_metrics m;
    ck_wq_metrics(f->q, &m);
    assert_int_equal(m.retries, 2);
}

static void test_a_delayed_key_that_is_processing_is_marked_dirty(void **state)
{
    struct fixture *f = *state;
    ck_wq_add(f->q, "foo");
    const char *key;
    assert_int_equal(ck_wq_get(f->q, &key), 0);
    ck_wq_add_after(f->q, "foo", 5 * CK_MSEC);
    step(f, 10 * CK_MSEC);
    assert_int_equal(ck_wq_len(f->q), 0); /* still processing */
    ck_wq_done(f->q, key);
    expect_get(f, "foo");
}

static void test_shutdown_drops_delayed_keys(void **state)
{
    struct fixture *f = *state;
    ck_wq_add_after(f->q, "foo", 1 * CK_SEC);
    ck_wq_shutdown(f->q);
    assert_int_equal(ck_wq_add_after(f->q, "bar", 1 * CK_SEC), CK_ESHUTDOWN);
    ck_fake_clock_step(f->clock, 2 * CK_SEC);
    const char *key;
    assert_int_equal(ck_wq_get(f->q, &key), CK_ESHUTDOWN);
}

static void test_add_after_on_the_real_clock(void **state)
{
    (void)state;
    struct ck_wq *q;
    assert_int_equal(ck_wq_new(NULL, &q, NULL), 0);
    int64_t start = ck_clock_now(NULL);
    assert_int_equal(ck_wq_add_after(q, "soon", 2 * CK_MSEC), 0);
    const char *key;
    assert_int_equal(ck_wq_get(q, &key), 0);
    assert_string_equal(key, "soon");
    assert_true(ck_clock_now(NULL) - start >= 2 * CK_MSEC); /* never early */
    ck_wq_done(q, key);
    ck_wq_free(q);
}

static void test_huge_delays_do_not_overflow(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(ck_wq_add_after(f->q, "forever", INT64_MAX), 0);
    step(f, 1000 * CK_SEC);
    assert_int_equal(ck_wq_len(f->q), 0);
    assert_int_equal(ck_wq_delayed_len(f->q), 1);
}

static void test_allocation_failure_leaves_the_heap_unchanged(void **state)
{
    struct fixture *f = *state;
    char key[16];
    int failures = 0;
    for (int i = 0; i < 40; i++) { /* enough keys to grow the heap and the map */
        snprintf(key, sizeof(key), "k%02d", i);
        for (unsigned long n = 1;; n++) {
            ck__alloc_fail_at(n, true);
            int r = ck_wq_add_after(f->q, key, (40 - i) * CK_MSEC);
            ck__alloc_fail_at(0, false);
            if (r == 0)
                break;
            failures++;
            assert_int_equal(r, CK_ENOMEM);
            assert_int_equal(ck_wq_delayed_len(f->q), (size_t)i);
        }
    }
    assert_true(failures >= 40);
    step(f, 1 * CK_SEC);
    for (int i = 39; i >= 0; i--) { /* the last added was due first */
        snprintf(key, sizeof(key), "k%02d", i);
        expect_get(f, key);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_after_waits_for_the_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adding_a_delayed_key_again_keeps_the_earlier_time,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_later_added_earlier_key_fires_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_keys_due_together_enter_in_ready_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_many_delayed_keys_come_out_sorted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_or_negative_delay_adds_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_delayed_key_that_is_processing_is_marked_dirty,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_drops_delayed_keys, setup, teardown),
        cmocka_unit_test(test_add_after_on_the_real_clock),
        cmocka_unit_test_setup_teardown(test_huge_delays_do_not_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocation_failure_leaves_the_heap_unchanged, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
