/*
 * test_scheduler_queue.c - tests for lib/controllers/scheduler/queue.c on a fake clock:
 * order, backoff growth and expiry, unschedulable pods moved by cluster events (to
 * backoff while it lasts), the move-request cycle, the 5-minute flush, deletion, and a
 * pop blocked on another thread woken by a backoff expiring.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/controllers/scheduler/internal.h"

struct fixture {
    struct ck_clock *clock;
    struct ck__sched_queue *q;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->clock = ck_fake_clock_new(1000 * CK_SEC);
    f->q = ck__sched_queue_new(f->clock);
    *state = f;
    return f->q ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_free(f->q);
    ck_fake_clock_free(f->clock);
    free(f);
    return 0;
}

/* Pops and checks the key; returns the cycle. */
static int64_t pop_expect(struct ck__sched_queue *q, const char *want, int want_attempts)
{
    char *key = NULL;
    int attempts = 0;
    int64_t cycle = 0;
    assert_int_equal(ck__sched_queue_pop(q, &key, &attempts, &cycle), 0);
    assert_string_equal(key, want);
    assert_int_equal(attempts, want_attempts);
    free(key);
    return cycle;
}

static void expect_counts(struct ck__sched_queue *q, size_t active, size_t backoff, size_t unsched)
{
    size_t a, b, u;
    ck__sched_queue_counts(q, &a, &b, &u);
    assert_int_equal(a, active);
    assert_int_equal(b, backoff);
    assert_int_equal(u, unsched);
}

static void test_pods_come_out_in_the_order_added_once_each(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(ck__sched_queue_add(f->q, "ns/a"), 0);
    assert_int_equal(ck__sched_queue_add(f->q, "ns/b"), 0);
    assert_int_equal(ck__sched_queue_add(f->q, "ns/a"), 0); /* an update: stays in place */
    expect_counts(f->q, 2, 0, 0);
    int64_t c1 = pop_expect(f->q, "ns/a", 1);
    int64_t c2 = pop_expect(f->q, "ns/b", 1);
    assert_true(c2 == c1 + 1);
    ck__sched_queue_add(f->q, "ns/a"); /* in flight: an update does not queue it again */
    expect_counts(f->q, 0, 0, 0);
    ck__sched_queue_done(f->q, "ns/a");
    ck__sched_queue_done(f->q, "ns/b");
}

static void test_unschedulable_pod_waits_for_an_event(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_add(f->q, "ns/a");
    int64_t cycle = pop_expect(f->q, "ns/a", 1);
    ck__sched_queue_unschedulable(f->q, "ns/a", cycle);
    expect_counts(f->q, 0, 0, 1);
    ck_fake_clock_step(f->clock, 20 * CK_SEC); /* backoff over, still no event */
    ck__sched_queue_add(f->q, "ns/b");
    pop_expect(f->q, "ns/b", 1);
    expect_counts(f->q, 0, 0, 1);
    ck__sched_queue_move_all(f->q); /* a node changed */
    expect_counts(f->q, 1, 0, 0);
    pop_expect(f->q, "ns/a", 2);
    ck__sched_queue_done(f->q, "ns/a");
    ck__sched_queue_done(f->q, "ns/b");
}

static void test_moved_pod_backs_off_while_its_backoff_lasts(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_add(f->q, "ns/a");
    int64_t cycle = pop_expect(f->q, "ns/a", 1);
    ck__sched_queue_unschedulable(f->q, "ns/a", cycle);
    ck__sched_queue_move_all(f->q); /* at once: its 1 s backoff is not over */
    expect_counts(f->q, 0, 1, 0);
    ck_fake_clock_step(f->clock, CK_SEC - 1);
    ck__sched_queue_add(f->q, "ns/b");
    pop_expect(f->q, "ns/b", 1); /* a is still backing off */
    ck_fake_clock_step(f->clock, 1);
    pop_expect(f->q, "ns/a", 2);
    ck__sched_queue_done(f->q, "ns/a");
    ck__sched_queue_done(f->q, "ns/b");
}

/* Pops a probe pod added now (which makes the queue flush its backoffs) and drops it. */
static void flush_with_probe(struct ck__sched_queue *q)
{
    ck__sched_queue_add(q, "ns/probe");
    char *key = NULL;
    int attempts;
    int64_t cycle;
    assert_int_equal(ck__sched_queue_pop(q, &key, &attempts, &cycle), 0);
    assert_string_equal(key, "ns/probe"); /* added before any backoff ended: first */
    free(key);
    ck__sched_queue_delete(q, "ns/probe");
}

static void test_backoff_doubles_up_to_ten_seconds(void **state)
{
    struct fixture *f = *state;
    static const int64_t want[] = {1, 2, 4, 8, 10, 10};
    ck__sched_queue_add(f->q, "ns/a");
    for (int i = 0; i < 6; i++) {
        pop_expect(f->q, "ns/a", i + 1);
        ck__sched_queue_backoff(f->q, "ns/a"); /* e.g. a binding error */
        ck_fake_clock_step(f->clock, want[i] * CK_SEC - 1);
        flush_with_probe(f->q);
        expect_counts(f->q, 0, 1, 0); /* still backing off */
        ck_fake_clock_step(f->clock, 1);
        flush_with_probe(f->q);
        expect_counts(f->q, 1, 0, 0); /* its backoff is over */
    }
    ck__sched_queue_delete(f->q, "ns/a");
    expect_counts(f->q, 0, 0, 0);
}

static void test_failure_after_a_move_in_its_cycle_goes_to_backoff(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_add(f->q, "ns/a");
    int64_t cycle = pop_expect(f->q, "ns/a", 1);
    ck__sched_queue_move_all(f->q); /* a node appeared while a was being scheduled */
    ck__sched_queue_unschedulable(f->q, "ns/a", cycle);
    expect_counts(f->q, 0, 1, 0); /* not parked: it retries after its backoff */
    ck_fake_clock_step(f->clock, CK_SEC);
    pop_expect(f->q, "ns/a", 2);
    ck__sched_queue_done(f->q, "ns/a");
}

static void test_unschedulable_pods_are_retried_after_five_minutes(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_add(f->q, "ns/a");
    int64_t cycle = pop_expect(f->q, "ns/a", 1);
    ck__sched_queue_unschedulable(f->q, "ns/a", cycle);
    ck_fake_clock_step(f->clock, CK__SCHED_MAX_UNSCHEDULABLE - 1);
    ck__sched_queue_add(f->q, "ns/b");
    pop_expect(f->q, "ns/b", 1);
    ck_fake_clock_step(f->clock, 1);
    pop_expect(f->q, "ns/a", 2);
    ck__sched_queue_done(f->q, "ns/a");
    ck__sched_queue_done(f->q, "ns/b");
}

static void test_deleted_pods_leave_every_set(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_add(f->q, "ns/a");
    ck__sched_queue_add(f->q, "ns/b");
    ck__sched_queue_add(f->q, "ns/c");
    int64_t cycle = pop_expect(f->q, "ns/a", 1);
    ck__sched_queue_unschedulable(f->q, "ns/a", cycle);
    pop_expect(f->q, "ns/b", 1);
    ck__sched_queue_backoff(f->q, "ns/b");
    expect_counts(f->q, 1, 1, 1);
    ck__sched_queue_delete(f->q, "ns/a");
    ck__sched_queue_delete(f->q, "ns/b");
    ck__sched_queue_delete(f->q, "ns/c");
    expect_counts(f->q, 0, 0, 0);
    /* a pod deleted while in flight: its outcome is ignored */
    ck__sched_queue_add(f->q, "ns/d");
    cycle = pop_expect(f->q, "ns/d", 1);
    ck__sched_queue_delete(f->q, "ns/d");
    ck__sched_queue_unschedulable(f->q, "ns/d", cycle);
    expect_counts(f->q, 0, 0, 0);
}

struct popper {
    struct ck__sched_queue *q;
    char *key;
    int r;
};

static void *pop_thread(void *arg)
{
    struct popper *p = arg;
    int attempts;
    int64_t cycle;
    p->r = ck__sched_queue_pop(p->q, &p->key, &attempts, &cycle);
    return NULL;
}

static void test_blocked_pop_wakes_when_backoff_ends_and_on_shutdown(void **state)
{
    struct fixture *f = *state;
    ck__sched_queue_add(f->q, "ns/a");
    pop_expect(f->q, "ns/a", 1);
    ck__sched_queue_backoff(f->q, "ns/a");
    struct popper p = {.q = f->q};
    pthread_t t;
    pthread_create(&t, NULL, pop_thread, &p);
    ck_fake_clock_step(f->clock, CK_SEC); /* wakes the waiter whose deadline came */
    pthread_join(t, NULL);
    assert_int_equal(p.r, 0);
    assert_string_equal(p.key, "ns/a");
    free(p.key);
    ck__sched_queue_done(f->q, "ns/a");

    struct popper q2 = {.q = f->q};
    pthread_create(&t, NULL, pop_thread, &q2);
    ck__sched_queue_shutdown(f->q);
    pthread_join(t, NULL);
    assert_int_equal(q2.r, CK_ESHUTDOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pods_come_out_in_the_order_added_once_each, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unschedulable_pod_waits_for_an_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moved_pod_backs_off_while_its_backoff_lasts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_backoff_doubles_up_to_ten_seconds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_after_a_move_in_its_cycle_goes_to_backoff,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_unschedulable_pods_are_retried_after_five_minutes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_pods_leave_every_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocked_pop_wakes_when_backoff_ends_and_on_shutdown,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
