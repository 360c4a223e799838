/*
 * test_ratelimit.c - tests for lib/client/ratelimit.c: the limiters of client-go's
 * default_rate_limiters_test.go (exponential, fast/slow, max-of, token bucket) and the
 * rate-limited queue of rate_limiting_queue_test.go, on a fake clock.
 */
#include "cktest.h"

#include <stdio.h>
#include <stdlib.h>

#include "ckube/client.h"

static void test_exponential_doubles_per_key_until_forgotten(void **state)
{
    (void)state;
    struct ck_rate_limiter *rl = ck_rl_exponential_new(1 * CK_MSEC, 1 * CK_SEC);
    assert_int_equal(ck_rl_when(rl, "one"), 1 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 2 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 4 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 8 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 16 * CK_MSEC);
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 5);
    assert_int_equal(ck_rl_when(rl, "two"), 1 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "two"), 2 * CK_MSEC);
    assert_int_equal(ck_rl_num_requeues(rl, "two"), 2);
    ck_rl_forget(rl, "one");
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 0);
    assert_int_equal(ck_rl_when(rl, "one"), 1 * CK_MSEC);
    assert_int_equal(ck_rl_num_requeues(rl, "unknown"), 0);
    ck_rl_free(rl);
}

static void test_exponential_caps_at_max_without_overflow(void **state)
{
    (void)state;
    struct ck_rate_limiter *rl = ck_rl_exponential_new(5 * CK_MSEC, 1000 * CK_SEC);
    int64_t last = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t d = ck_rl_when(rl, "hot");
        assert_true(d >= last && d <= 1000 * CK_SEC); /* never wraps negative */
        last = d;
    }
    assert_int_equal(last, 1000 * CK_SEC);
    ck_rl_free(rl);

    /* A base close to the limit of int64: the first doubling already caps. */
    rl = ck_rl_exponential_new(INT64_MAX / 2 + 1, INT64_MAX);
    ck_rl_when(rl, "big");
    assert_int_equal(ck_rl_when(rl, "big"), INT64_MAX);
    ck_rl_free(rl);
}

static void test_fast_slow_switches_after_max_fast(void **state)
{
    (void)state;
    struct ck_rate_limiter *rl = ck_rl_fast_slow_new(5 * CK_MSEC, 10 * CK_SEC, 3);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 10 * CK_SEC);
    assert_int_equal(ck_rl_when(rl, "one"), 10 * CK_SEC);
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 5);
    assert_int_equal(ck_rl_when(rl, "two"), 5 * CK_MSEC);
    assert_int_equal(ck_rl_num_requeues(rl, "two"), 1);
    ck_rl_forget(rl, "one");
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 0);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC);
    ck_rl_free(rl);
}

static void test_max_of_answers_the_longest_wait(void **state)
{
    (void)state;
    struct ck_rate_limiter *parts[] = {
        ck_rl_fast_slow_new(5 * CK_MSEC, 3 * CK_SEC, 3),
        ck_rl_exponential_new(1 * CK_MSEC, 1 * CK_SEC),
    };
    struct ck_rate_limiter *rl = ck_rl_max_of_new(parts, 2);
    assert_non_null(rl);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC); /* max(5, 1) */
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC); /* max(5, 2) */
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC); /* max(5, 4) */
    assert_int_equal(ck_rl_when(rl, "one"), 3 * CK_SEC);  /* max(3 s, 8 ms) */
    assert_int_equal(ck_rl_when(rl, "one"), 3 * CK_SEC);
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 5);
    assert_int_equal(ck_rl_when(rl, "two"), 5 * CK_MSEC);
    ck_rl_forget(rl, "one");
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 0);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC);
    ck_rl_free(rl);

    struct ck_rate_limiter *incomplete[] = {ck_rl_exponential_new(1, 2), NULL};
    assert_null(ck_rl_max_of_new(incomplete, 2)); /* frees the first one (ASan checks) */
}

static void test_bucket_allows_burst_then_qps(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct ck_rate_limiter *rl = ck_rl_bucket_new(clock, 10, 100);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ck_rl_when(rl, "any"), 0);
    assert_int_equal(ck_rl_when(rl, "a"), 100 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "b"), 200 * CK_MSEC);
    assert_int_equal(ck_rl_num_requeues(rl, "a"), 0);
    /* One second refills 10 tokens: the debt of 2 is paid and 8 are left. */
    ck_fake_clock_step(clock, 1 * CK_SEC);
    for (int i = 0; i < 8; i++)
        assert_int_equal(ck_rl_when(rl, "c"), 0);
    assert_int_equal(ck_rl_when(rl, "c"), 100 * CK_MSEC);
    /* An hour refills no more than the burst. */
    ck_fake_clock_step(clock, 3600 * CK_SEC);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ck_rl_when(rl, "d"), 0);
    assert_true(ck_rl_when(rl, "d") > 0);
    ck_rl_free(rl);
    assert_null(ck_rl_bucket_new(clock, 0, 1));
    assert_null(ck_rl_bucket_new(clock, 1, 0));
    ck_fake_clock_free(clock);
}

static void test_default_controller_limiter_is_max_of_backoff_and_bucket(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct ck_rate_limiter *rl = ck_rl_default_controller_new(clock);
    assert_int_equal(ck_rl_when(rl, "one"), 5 * CK_MSEC);
    assert_int_equal(ck_rl_when(rl, "one"), 10 * CK_MSEC);
    char key[16];
    for (int i = 0; i < 98; i++) { /* 100 tokens in all */
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(ck_rl_when(rl, key), 5 * CK_MSEC);
    }
    /* The bucket is empty: a fresh key waits 100 ms, more than its 5 ms backoff. */
    assert_int_equal(ck_rl_when(rl, "fresh"), 100 * CK_MSEC);
    assert_int_equal(ck_rl_num_requeues(rl, "one"), 2);
    ck_rl_free(rl);
    ck_fake_clock_free(clock);
}

/* Checks that the key q's timer holds becomes ready exactly `delay` from now, and takes it. */
static const char *expect_ready_after(struct ck_clock *clock, struct ck_wq *q, int64_t delay)
{
    ck_fake_clock_wait_for_waiters(clock, 1);
    ck_fake_clock_step(clock, delay - 1);
    ck_fake_clock_wait_for_waiters(clock, 1);
    assert_int_equal(ck_wq_len(q), 0);
    ck_fake_clock_step(clock, 1);
    const char *key = NULL;
    assert_int_equal(ck_wq_get(q, &key), 0);
    return key;
}

static void test_rate_limited_queue_delays_by_the_limiter(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct ck_wq_options opts = {
        .name = "limited",
        .clock = clock,
        .limiter = ck_rl_exponential_new(1 * CK_MSEC, 1 * CK_SEC),
    };
    struct ck_wq *q;
    assert_int_equal(ck_wq_new(&opts, &q, NULL), 0);
    const char *key;

    assert_int_equal(ck_wq_add_rate_limited(q, "one"), 0);
    key = expect_ready_after(clock, q, 1 * CK_MSEC);
    assert_string_equal(key, "one");

    /* The second failure waits 2 ms. */
    assert_int_equal(ck_wq_add_rate_limited(q, "one"), 0);
    assert_int_equal(ck_wq_num_requeues(q, "one"), 2);
    ck_wq_done(q, key);
    key = expect_ready_after(clock, q, 2 * CK_MSEC);
    assert_string_equal(key, "one");

    ck_wq_forget(q, "one");
    assert_int_equal(ck_wq_num_requeues(q, "one"), 0);
    ck_wq_done(q, key);
    struct ck_wq_metrics m;
    ck_wq_metrics(q, &m);
    assert_int_equal(m.retries, 2);
    ck_wq_free(q);
    ck_fake_clock_free(clock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exponential_doubles_per_key_until_forgotten),
        cmocka_unit_test(test_exponential_caps_at_max_without_overflow),
        cmocka_unit_test(test_fast_slow_switches_after_max_fast),
        cmocka_unit_test(test_max_of_answers_the_longest_wait),
        cmocka_unit_test(test_bucket_allows_burst_then_qps),
        cmocka_unit_test(test_default_controller_limiter_is_max_of_backoff_and_bucket),
        cmocka_unit_test(test_rate_limited_queue_delays_by_the_limiter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
