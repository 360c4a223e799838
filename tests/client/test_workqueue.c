/*
 * test_workqueue.c - tests for lib/client/workqueue.c: client-go's queue semantics (FIFO,
 * a key is queued once, never processed twice at once, re-queued when added while
 * processing), shutdown with and without drain, metrics, allocation failure, and a
 * stress test (run under ThreadSanitizer) with many producers and workers.
 */
#include "cktest.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/client/internal.h"
#include "ckube/client.h"

static struct ck_wq *new_queue(const char *name, struct ck_clock *clock)
{
    struct ck_wq *q = NULL;
    struct ck_wq_options opts = {.name = name, .clock = clock};
    assert_int_equal(ck_wq_new(&opts, &q, NULL), 0);
    return q;
}

static const char *get_key(struct ck_wq *q)
{
    const char *key = NULL;
    assert_int_equal(ck_wq_get(q, &key), 0);
    return key;
}

static void test_keys_come_out_in_fifo_order(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    const char *keys[] = {"ns/a", "ns/b", "c", "ns/d"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(ck_wq_add(q, keys[i]), 0);
    for (size_t i = 0; i < 4; i++) {
        const char *k = get_key(q);
        assert_string_equal(k, keys[i]);
        ck_wq_done(q, k);
    }
    assert_int_equal(ck_wq_len(q), 0);
    ck_wq_free(q);
}

static void test_a_key_added_twice_is_queued_once(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "foo");
    assert_int_equal(ck_wq_len(q), 1);
    ck_wq_add(q, "bar");
    assert_int_equal(ck_wq_len(q), 2);
    ck_wq_add(q, "foo");
    assert_int_equal(ck_wq_len(q), 2);
    const char *k = get_key(q);
    assert_string_equal(k, "foo");
    ck_wq_done(q, k);
    k = get_key(q);
    assert_string_equal(k, "bar");
    ck_wq_done(q, k);
    const char *none = NULL;
    assert_int_equal(ck_wq_try_get(q, &none), CK_ENOENT);
    assert_null(none);
    ck_wq_free(q);
}

static void test_add_while_processing_requeues_once(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "foo");
    const char *k = get_key(q);
    assert_string_equal(k, "foo");
    /* Added (twice) while processing: not handed out again before done. */
    ck_wq_add(q, "foo");
    ck_wq_add(q, "foo");
    assert_int_equal(ck_wq_len(q), 0);
    assert_true(ck_wq_contains(q, "foo"));
    const char *other;
    assert_int_equal(ck_wq_try_get(q, &other), CK_ENOENT);
    ck_wq_done(q, k);
    assert_int_equal(ck_wq_len(q), 1);
    k = get_key(q);
    assert_string_equal(k, "foo");
    ck_wq_done(q, k);
    assert_int_equal(ck_wq_len(q), 0);
    assert_false(ck_wq_contains(q, "foo"));
    ck_wq_free(q);
}

static void test_done_of_a_key_not_processing_is_a_noop(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_done(q, "never-added");
    ck_wq_add(q, "waiting");
    ck_wq_done(q, "waiting"); /* queued, not processing: stays queued */
    assert_int_equal(ck_wq_len(q), 1);
    assert_string_equal(get_key(q), "waiting");
    ck_wq_free(q);
}

static void test_bad_arguments_are_errors(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    assert_int_equal(ck_wq_add(q, NULL), CK_EINVAL);
    assert_int_equal(ck_wq_add_after(q, NULL, CK_SEC), CK_EINVAL);
    assert_int_equal(ck_wq_add_rate_limited(q, "no-limiter"), CK_EINVAL);
    assert_int_equal(ck_wq_num_requeues(q, "no-limiter"), 0);
    ck_wq_free(q);
}

static void test_get_after_shutdown_hands_out_queued_keys_then_shutdown(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "a");
    ck_wq_shutdown(q);
    assert_true(ck_wq_is_shutting_down(q));
    assert_int_equal(ck_wq_add(q, "added after shutdown"), CK_ESHUTDOWN);
    const char *k = get_key(q);
    assert_string_equal(k, "a");
    ck_wq_done(q, k);
    const char *untouched = "untouched";
    assert_int_equal(ck_wq_get(q, &untouched), CK_ESHUTDOWN);
    assert_string_equal(untouched, "untouched");
    assert_int_equal(ck_wq_try_get(q, &untouched), CK_ESHUTDOWN);
    ck_wq_shutdown(q); /* twice is fine */
    ck_wq_free(q);
}

struct getter {
    struct ck_wq *q;
    int ret;
};

static void *getter_main(void *arg)
{
    struct getter *g = arg;
    const char *key;
    g->ret = ck_wq_get(g->q, &key);
    return NULL;
}

static void test_shutdown_wakes_blocked_getters(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    struct getter g[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        g[i] = (struct getter){q, 1};
        pthread_create(&t[i], NULL, getter_main, &g[i]);
    }
    ck_wq_shutdown(q);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(g[i].ret, CK_ESHUTDOWN);
    }
    ck_wq_free(q);
}

struct drainer {
    struct ck_wq *q;
    atomic_bool finished;
};

static void *drainer_main(void *arg)
{
    struct drainer *d = arg;
    ck_wq_shutdown_drain(d->q);
    atomic_store(&d->finished, true);
    return NULL;
}

/* Starts ck_wq_shutdown_drain(q) on a thread and waits until it has begun. */
static pthread_t start_drain(struct drainer *d, struct ck_wq *q)
{
    pthread_t t;
    d->q = q;
    atomic_store(&d->finished, false);
    pthread_create(&t, NULL, drainer_main, d);
    while (!ck_wq_is_shutting_down(q))
        sched_yield();
    return t;
}

static void test_shutdown_drain_waits_for_processing_keys(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "foo");
    ck_wq_add(q, "bar");
    const char *first = get_key(q), *second = get_key(q);
    struct drainer d;
    pthread_t t = start_drain(&d, q);
    const char *k;
    assert_int_equal(ck_wq_get(q, &k), CK_ESHUTDOWN);
    ck_wq_done(q, first);
    /* One key is still processing: the drain cannot have returned. */
    assert_false(atomic_load(&d.finished));
    ck_wq_done(q, second);
    pthread_join(t, NULL);
    assert_true(atomic_load(&d.finished));
    ck_wq_free(q);
}

static void test_shutdown_without_drain_does_not_wait(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "foo");
    ck_wq_add(q, "bar");
    get_key(q);
    get_key(q);
    ck_wq_shutdown(q); /* returns although two keys are processing */
    assert_true(ck_wq_is_shutting_down(q));
    ck_wq_free(q);
}

static void test_shutdown_ends_a_drain_early(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "foo");
    get_key(q);
    struct drainer d;
    pthread_t t = start_drain(&d, q);
    ck_wq_shutdown(q); /* a second SIGTERM: stop waiting for the drain */
    pthread_join(t, NULL);
    assert_true(atomic_load(&d.finished));
    ck_wq_free(q);
}

static void test_drain_hands_out_a_key_dirtied_while_processing(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    ck_wq_add(q, "foo");
    const char *gotten = get_key(q);
    ck_wq_add(q, "foo");
    struct drainer d;
    pthread_t t = start_drain(&d, q);
    const char *k;
    assert_int_equal(ck_wq_get(q, &k), CK_ESHUTDOWN);
    ck_wq_done(q, gotten);
    /* done put the dirty key back: it is handed out although the queue is shutting down. */
    const char *again = get_key(q);
    assert_string_equal(again, "foo");
    ck_wq_done(q, again);
    assert_int_equal(ck_wq_get(q, &k), CK_ESHUTDOWN);
    pthread_join(t, NULL);
    ck_wq_free(q);
}

static void test_metrics_follow_the_fake_clock(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(1000 * CK_SEC);
    struct ck_wq *q = new_queue("pods", clock);
    ck_wq_add(q, "a");
    ck_wq_add(q, "b");
    ck_wq_add(q, "a");
    ck_fake_clock_step(clock, 2 * CK_MSEC);
    const char *a = get_key(q);

    struct ck_wq_metrics m;
    ck_wq_metrics(q, &m);
    assert_int_equal(m.depth, 1);
    assert_int_equal(m.adds, 2);
    assert_int_equal(m.queue_duration.count, 1);
    assert_int_equal(m.queue_duration.buckets[6], 1); /* 2 ms <= 0.01 s */
    assert_true(m.queue_duration.sum > 0.0019 && m.queue_duration.sum < 0.0021);

    ck_fake_clock_step(clock, 3 * CK_SEC);
    const char *b = get_key(q);
    ck_fake_clock_step(clock, 1 * CK_SEC);
    ck_wq_metrics(q, &m);
    assert_int_equal(m.depth, 0);
    /* a has run 4 s, b 1 s. */
    assert_true(m.unfinished_work_seconds > 4.99 && m.unfinished_work_seconds < 5.01);
    assert_true(m.longest_running_processor_seconds > 3.99 &&
                m.longest_running_processor_seconds < 4.01);
    ck_wq_done(q, a);
    ck_wq_done(q, b);
    ck_wq_metrics(q, &m);
    assert_int_equal(m.work_duration.count, 2);
    assert_int_equal(m.work_duration.buckets[8], 1); /* 1 s <= 1 */
    assert_int_equal(m.work_duration.buckets[9], 1); /* 4 s <= 10 */
    assert_true(m.unfinished_work_seconds == 0);

    char *text = ck_wq_metrics_text(q);
    assert_non_null(text);
    assert_non_null(
        strstr(text, "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"pods\"} 0\n"));
    assert_non_null(strstr(text, "workqueue_adds_total{name=\"pods\"} 2\n"));
    assert_non_null(
        strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"pods\",le=\"1e-08\"} 0\n"));
    assert_non_null(
        strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"pods\",le=\"0.01\"} 1\n"));
    assert_non_null(
        strstr(text, "workqueue_queue_duration_seconds_bucket{name=\"pods\",le=\"+Inf\"} 2\n"));
    assert_non_null(
        strstr(text, "workqueue_work_duration_seconds_bucket{name=\"pods\",le=\"1\"} 1\n"));
    assert_non_null(
        strstr(text, "workqueue_work_duration_seconds_bucket{name=\"pods\",le=\"10\"} 2\n"));
    assert_non_null(strstr(text, "workqueue_work_duration_seconds_count{name=\"pods\"} 2\n"));
    assert_non_null(strstr(text, "workqueue_unfinished_work_seconds{name=\"pods\"} 0\n"));
    assert_non_null(strstr(text, "workqueue_longest_running_processor_seconds{name=\"pods\"} 0\n"));
    assert_non_null(strstr(text, "workqueue_retries_total{name=\"pods\"} 0\n"));
    free(text);
    ck_wq_free(q);
    ck_fake_clock_free(clock);
}

static void test_metrics_text_escapes_the_queue_name(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue("a\"b\\c\nd", NULL);
    char *text = ck_wq_metrics_text(q);
    assert_non_null(strstr(text, "workqueue_depth{name=\"a\\\"b\\\\c\\nd\"} 0\n"));
    free(text);
    ck_wq_free(q);
}

static size_t count(const char *haystack, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_metrics_text_of_several_queues_has_one_family_header_each(void **state)
{
    (void)state;
    struct ck_wq *qs[] = {new_queue("pods", NULL), new_queue("replicasets", NULL)};
    ck_wq_add(qs[0], "a");
    ck_wq_add(qs[0], "b");
    ck_wq_add(qs[1], "c");
    char *text = ck_wq_metrics_text_all(qs, 2);
    assert_non_null(text);
    assert_int_equal(count(text, "# TYPE workqueue_depth gauge\n"), 1);
    assert_int_equal(count(text, "# HELP workqueue_queue_duration_seconds "), 1);
    assert_int_equal(count(text, "# TYPE workqueue_retries_total counter\n"), 1);
    assert_non_null(strstr(text, "workqueue_depth{name=\"pods\"} 2\nworkqueue_depth{name="
                                 "\"replicasets\"} 1\n"));
    assert_int_equal(count(text, "workqueue_work_duration_seconds_count{"), 2);
    free(text);
    ck_wq_free(qs[0]);
    ck_wq_free(qs[1]);
}

static void test_allocation_failure_leaves_the_queue_unchanged(void **state)
{
    (void)state;
    struct ck_wq *q = new_queue(NULL, NULL);
    char key[32];
    int failures = 0;
    /* 40 keys make the ring and the map grow; fail each allocation in turn. */
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof(key), "ns/key-%d", i);
        for (unsigned long n = 1;; n++) {
            ck__alloc_fail_at(n, true);
            int r = ck_wq_add(q, key);
            ck__alloc_fail_at(0, false);
            if (r == 0)
                break;
            failures++;
            assert_int_equal(r, CK_ENOMEM);
            assert_false(ck_wq_contains(q, key));
            assert_int_equal(ck_wq_len(q), (size_t)i);
        }
    }
    assert_true(failures >= 40);
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof(key), "ns/key-%d", i);
        const char *k = get_key(q);
        assert_string_equal(k, key);
        ck_wq_done(q, k);
    }
    struct ck_wq *none = NULL;
    ck__alloc_fail_at(1, false);
    assert_int_equal(ck_wq_new(NULL, &none, NULL), CK_ENOMEM);
    ck__alloc_fail_at(0, false);
    assert_null(none);
    ck_wq_free(q);
}

/* ---- stress: many producers and workers ---------------------------------------- */

#define STRESS_KEYS      64
#define STRESS_PRODUCERS 8
#define STRESS_WORKERS   8
#define STRESS_ADDS      4000

struct stress_key {
    char name[16];
    pthread_mutex_t mu;
    unsigned long generation; /* adds so far, under mu */
    unsigned long seen;       /* generation when its last processing started, under mu */
    atomic_int busy;          /* 1 while a worker processes it */
};

struct stress {
    struct ck_wq *q;
    struct stress_key keys[STRESS_KEYS];
    atomic_int overlaps;
    atomic_ulong processed;
};

static void *stress_producer(void *arg)
{
    struct stress *s = arg;
    unsigned int seed = (unsigned int)(uintptr_t)&seed;
    for (int i = 0; i < STRESS_ADDS; i++) {
        struct stress_key *k = &s->keys[rand_r(&seed) % STRESS_KEYS];
        /* The generation and the add are one step for the workers: any add they have not
         * seen when a processing starts must lead to another processing. */
        pthread_mutex_lock(&k->mu);
        k->generation++;
        int r = ck_wq_add(s->q, k->name);
        pthread_mutex_unlock(&k->mu);
        if (r != 0)
            atomic_fetch_add(&s->overlaps, 1000000);
    }
    return NULL;
}

static void *stress_worker(void *arg)
{
    struct stress *s = arg;
    const char *name;
    while (ck_wq_get(s->q, &name) == 0) {
        struct stress_key *k = &s->keys[atoi(name + 4)];
        if (atomic_exchange(&k->busy, 1) != 0)
            atomic_fetch_add(&s->overlaps, 1);
        pthread_mutex_lock(&k->mu);
        k->seen = k->generation;
        pthread_mutex_unlock(&k->mu);
        sched_yield();
        atomic_store(&k->busy, 0);
        atomic_fetch_add(&s->processed, 1);
        ck_wq_done(s->q, name);
    }
    return NULL;
}

static void test_stress_no_key_processed_concurrently_and_no_add_lost(void **state)
{
    (void)state;
    struct stress *s = calloc(1, sizeof(*s));
    s->q = new_queue("stress", NULL);
    for (int i = 0; i < STRESS_KEYS; i++) {
        snprintf(s->keys[i].name, sizeof(s->keys[i].name), "key-%d", i);
        pthread_mutex_init(&s->keys[i].mu, NULL);
    }
    pthread_t producers[STRESS_PRODUCERS], workers[STRESS_WORKERS];
    for (int i = 0; i < STRESS_WORKERS; i++)
        pthread_create(&workers[i], NULL, stress_worker, s);
    for (int i = 0; i < STRESS_PRODUCERS; i++)
        pthread_create(&producers[i], NULL, stress_producer, s);
    for (int i = 0; i < STRESS_PRODUCERS; i++)
        pthread_join(producers[i], NULL);
    /* Every add is in; drain: queued and dirty keys are still handed out. */
    ck_wq_shutdown_drain(s->q);
    for (int i = 0; i < STRESS_WORKERS; i++)
        pthread_join(workers[i], NULL);

    assert_int_equal(atomic_load(&s->overlaps), 0);
    unsigned long adds = 0;
    for (int i = 0; i < STRESS_KEYS; i++) {
        adds += s->keys[i].generation;
        if (s->keys[i].generation > 0)
            assert_int_equal(s->keys[i].seen, s->keys[i].generation);
        pthread_mutex_destroy(&s->keys[i].mu);
    }
    assert_int_equal(adds, (unsigned long)STRESS_PRODUCERS * STRESS_ADDS);
    unsigned long processed = atomic_load(&s->processed);
    assert_true(processed >= STRESS_KEYS / 2 && processed <= adds);
    assert_int_equal(ck_wq_len(s->q), 0);
    struct ck_wq_metrics m;
    ck_wq_metrics(s->q, &m);
    assert_int_equal(m.work_duration.count, processed);
    ck_wq_free(s->q);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_come_out_in_fifo_order),
        cmocka_unit_test(test_a_key_added_twice_is_queued_once),
        cmocka_unit_test(test_add_while_processing_requeues_once),
        cmocka_unit_test(test_done_of_a_key_not_processing_is_a_noop),
        cmocka_unit_test(test_bad_arguments_are_errors),
        cmocka_unit_test(test_get_after_shutdown_hands_out_queued_keys_then_shutdown),
        cmocka_unit_test(test_shutdown_wakes_blocked_getters),
        cmocka_unit_test(test_shutdown_drain_waits_for_processing_keys),
        cmocka_unit_test(test_shutdown_without_drain_does_not_wait),
        cmocka_unit_test(test_shutdown_ends_a_drain_early),
        cmocka_unit_test(test_drain_hands_out_a_key_dirtied_while_processing),
        cmocka_unit_test(test_metrics_follow_the_fake_clock),
        cmocka_unit_test(test_metrics_text_escapes_the_queue_name),
        cmocka_unit_test(test_metrics_text_of_several_queues_has_one_family_header_each),
        cmocka_unit_test(test_allocation_failure_leaves_the_queue_unchanged),
        cmocka_unit_test(test_stress_no_key_processed_concurrently_and_no_add_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
