/*
 * test_clock.c - the clocks every waiting thread of the client library sleeps on: the
 * real one is monotonic and times out; the fake one stands still, wakes exactly the
 * waiters whose deadline a step reaches, counts its waiters and lets a test wait for
 * them, and a waiter woken by its own condition leaves the list.
 */
#include "cktest.h"

#include <pthread.h>

#include "ckube/client.h"

static void test_real_clock(void **state)
{
    (void)state;
    int64_t a = ck_clock_now(NULL);
    int64_t b = ck_clock_now(ck_clock_real());
    assert_true(b >= a);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&mu);
    /* a deadline already behind us times out at once */
    assert_int_equal(ck_clock_wait(NULL, &cond, &mu, b - CK_SEC), CK_ETIMEDOUT);
    pthread_mutex_unlock(&mu);
    assert_null(ck_fake_clock_free(ck_clock_real())); /* not a fake: left alone */
}

struct sleeper {
    struct ck_clock *clock;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int64_t deadline;
    bool poked;
    int result;
    bool done;
};

static void *sleep_main(void *arg)
{
    struct sleeper *s = arg;
    pthread_mutex_lock(&s->mu);
    int r = 0;
    while (!s->poked && r == 0)
        r = ck_clock_wait(s->clock, &s->cond, &s->mu, s->deadline);
    s->result = r;
    s->done = true;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void sleeper_start(struct sleeper *s, pthread_t *t, struct ck_clock *clock, int64_t deadline)
{
    *s = (struct sleeper){.clock = clock, .deadline = deadline};
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    assert_int_equal(pthread_create(t, NULL, sleep_main, s), 0);
}

static bool sleeper_done(struct sleeper *s)
{
    pthread_mutex_lock(&s->mu);
    bool done = s->done;
    pthread_mutex_unlock(&s->mu);
    return done;
}

static void test_fake_clock_wakes_due_waiters_only(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(100);
    assert_non_null(clock);
    assert_int_equal(ck_clock_now(clock), 100);
    struct sleeper early, late;
    pthread_t te, tl;
    sleeper_start(&early, &te, clock, 100 + CK_SEC);
    sleeper_start(&late, &tl, clock, 100 + 3 * CK_SEC);
    ck_fake_clock_wait_for_waiters(clock, 2);
    assert_int_equal(ck_fake_clock_waiters(clock), 2);

    ck_fake_clock_step(clock, CK_SEC); /* reaches early's deadline, not late's */
    pthread_join(te, NULL);
    assert_int_equal(early.result, CK_ETIMEDOUT);
    assert_int_equal(ck_clock_now(clock), 100 + CK_SEC);
    assert_false(sleeper_done(&late));
    assert_int_equal(ck_fake_clock_waiters(clock), 1);

    /* woken by its own condition, not the clock: 0, and off the list */
    pthread_mutex_lock(&late.mu);
    late.poked = true;
    pthread_cond_signal(&late.cond);
    pthread_mutex_unlock(&late.mu);
    pthread_join(tl, NULL);
    assert_int_equal(late.result, 0);
    assert_int_equal(ck_fake_clock_waiters(clock), 0);

    /* a deadline already reached does not wait */
    pthread_mutex_lock(&late.mu);
    assert_int_equal(ck_clock_wait(clock, &late.cond, &late.mu, 100), CK_ETIMEDOUT);
    pthread_mutex_unlock(&late.mu);
    ck_fake_clock_free(clock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_clock),
        cmocka_unit_test(test_fake_clock_wakes_due_waiters_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
