/*
 * test_runner.c - tests for lib/controllers/runner.c: forget on success, rate-limited
 * requeue on error (on a fake clock), no key lost even when the requeue cannot allocate,
 * conflicts logged at verbosity 2 and other failures as errors,
 * one worker per key at a time, workers started as keys need them (up to the count),
 * graceful stop with drain, and the swappable sync.
 * Waiting for the workers is done on conditions, never with sleeps.
 */
#include "cktest.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/client/internal.h"
#include "ckube/controllers.h"

struct fake {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int calls;       /* sync calls, under mu */
    int fail_first;  /* how many first calls fail */
    int fail_code;   /* what they fail with: CK_EIO when 0 */
    bool fail_alloc; /* make the requeue's allocations fail on the first call */
    char last_key[64];
    atomic_int busy[64]; /* per key index: 1 while synced */
    atomic_int overlaps;
    bool released; /* blocking_sync returns once set, under mu */
};

static int fake_sync(struct ck_controller *c, const char *key, struct ck_err *reterr)
{
    struct fake *f = c->data;
    pthread_mutex_lock(&f->mu);
    int call = ++f->calls;
    snprintf(f->last_key, sizeof(f->last_key), "%s", key);
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
    if (call == 1 && f->fail_alloc)
        ck__alloc_fail_at(1, true); /* everything the runner allocates next fails */
    if (call == 2 && f->fail_alloc)
        ck__alloc_fail_at(0, false);
    if (call <= f->fail_first)
        return ck_err_set(reterr, f->fail_code ? f->fail_code : CK_EIO,
                          "pretend the API server said no (%d)", call);
    return 0;
}

static int counting_sync(struct ck_controller *c, const char *key, struct ck_err *reterr)
{
    (void)reterr;
    struct fake *f = c->data;
    int i = atoi(strchr(key, '/') + 1);
    if (atomic_exchange(&f->busy[i], 1) != 0)
        atomic_fetch_add(&f->overlaps, 1);
    sched_yield();
    atomic_store(&f->busy[i], 0);
    pthread_mutex_lock(&f->mu);
    f->calls++;
    pthread_mutex_unlock(&f->mu);
    return 0;
}

/* Counts the call, then waits until the test sets f->released. */
static int blocking_sync(struct ck_controller *c, const char *key, struct ck_err *reterr)
{
    (void)key, (void)reterr;
    struct fake *f = c->data;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    pthread_cond_broadcast(&f->cond);
    while (!f->released)
        pthread_cond_wait(&f->cond, &f->mu);
    pthread_mutex_unlock(&f->mu);
    return 0;
}

static void wait_calls(struct fake *f, int n)
{
    pthread_mutex_lock(&f->mu);
    while (f->calls < n)
        pthread_cond_wait(&f->cond, &f->mu);
    pthread_mutex_unlock(&f->mu);
}

static void wait_delayed(struct ck_wq *q, size_t n)
{
    while (ck_wq_delayed_len(q) != n)
        sched_yield();
}

/* The runner logs every failed sync: keep the test output for the results. */
static FILE *devnull;

static struct fake *fake_new(void)
{
    struct fake *f = calloc(1, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cond, NULL);
    return f;
}

static void fake_free(struct fake *f)
{
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static struct ck_wq *limited_queue(struct ck_clock *clock)
{
    struct ck_wq_options opts = {
        .name = "test",
        .clock = clock,
        .limiter = ck_rl_exponential_new(5 * CK_MSEC, 1000 * CK_SEC),
    };
    struct ck_wq *q;
    assert_int_equal(ck_wq_new(&opts, &q, NULL), 0);
    return q;
}

static void test_failed_sync_is_retried_with_backoff_and_success_forgets(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct fake *f = fake_new();
    f->fail_first = 2;
    struct ck_controller c = {
        .name = "test", .sync = fake_sync, .data = f, .queue = limited_queue(clock)};
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 2, &r, NULL), 0);

    ck_wq_add(c.queue, "ns/a");
    wait_calls(f, 1);
    wait_delayed(c.queue, 1); /* failed: waiting 5 ms */
    assert_int_equal(ck_wq_num_requeues(c.queue, "ns/a"), 1);
    ck_fake_clock_step(clock, 5 * CK_MSEC);
    wait_calls(f, 2);
    wait_delayed(c.queue, 1); /* failed again: waiting 10 ms */
    assert_int_equal(ck_wq_num_requeues(c.queue, "ns/a"), 2);
    ck_fake_clock_step(clock, 5 * CK_MSEC);
    ck_fake_clock_wait_for_waiters(clock, 1);
    pthread_mutex_lock(&f->mu);
    assert_int_equal(f->calls, 2); /* 5 of the 10 ms: not yet */
    pthread_mutex_unlock(&f->mu);
    ck_fake_clock_step(clock, 5 * CK_MSEC);
    wait_calls(f, 3);

    r = ck_runner_stop(r); /* drains: the third sync has finished */
    assert_int_equal(ck_wq_num_requeues(c.queue, "ns/a"), 0);
    assert_string_equal(f->last_key, "ns/a");
    ck_wq_free(c.queue);
    fake_free(f);
    ck_fake_clock_free(clock);
}

static void test_failed_sync_keeps_its_key_when_the_requeue_cannot_allocate(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    f->fail_first = 1;
    f->fail_alloc = true;
    struct ck_controller c = {
        .name = "test", .sync = fake_sync, .data = f, .queue = limited_queue(NULL)};
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 1, &r, NULL), 0);
    ck_wq_add(c.queue, "ns/oom");
    wait_calls(f, 2); /* synced again: the key was not lost */
    r = ck_runner_stop(r);
    assert_string_equal(f->last_key, "ns/oom");
    ck_wq_free(c.queue);
    fake_free(f);
}

static void test_failed_sync_on_a_queue_without_limiter_is_retried_at_once(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    f->fail_first = 2;
    struct ck_controller c = {.name = "test", .sync = fake_sync, .data = f};
    assert_int_equal(ck_wq_new(NULL, &c.queue, NULL), 0); /* no rate limiter */
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 1, &r, NULL), 0);
    ck_wq_add(c.queue, "ns/plain");
    wait_calls(f, 3);
    r = ck_runner_stop(r);
    ck_wq_free(c.queue);
    fake_free(f);
}

/* Runs one key through a sync failing once with code; returns what was logged. */
static char *log_of_one_failure(int code, int verbosity)
{
    struct fake *f = fake_new();
    f->fail_first = 1;
    f->fail_code = code;
    struct ck_controller c = {.name = "test", .sync = fake_sync, .data = f};
    assert_int_equal(ck_wq_new(NULL, &c.queue, NULL), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    ck_log_set_output(out);
    ck_log_set_verbosity(verbosity);
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 1, &r, NULL), 0);
    ck_wq_add(c.queue, "ns/logged");
    wait_calls(f, 2);
    r = ck_runner_stop(r);
    ck_log_set_verbosity(0);
    ck_log_set_output(devnull);
    fclose(out);
    ck_wq_free(c.queue);
    fake_free(f);
    return text;
}

/* handleErr: a conflict is retried quietly (verbosity 2); other failures are errors. */
static void test_a_conflict_is_logged_at_verbosity_2_other_failures_as_errors(void **state)
{
    (void)state;
    char *text = log_of_one_failure(CK_ECONFLICT, 0);
    assert_string_equal(text, "");
    free(text);
    text = log_of_one_failure(CK_ECONFLICT, 2);
    assert_non_null(strstr(text, "conflict syncing \"ns/logged\""));
    assert_int_equal(text[0], 'I');
    free(text);
    text = log_of_one_failure(CK_EIO, 0);
    assert_non_null(strstr(text, "error syncing \"ns/logged\""));
    assert_int_equal(text[0], 'E');
    free(text);
}

static int workers_started(struct ck_runner *r)
{
    struct ck_runner_stats stats;
    ck_runner_stats(r, &stats);
    return stats.workers;
}

/* Four keys whose syncs all block, on a runner of max workers: how many run at once. */
static void four_blocking_keys(int max, int want_running, int want_workers)
{
    struct fake *f = fake_new();
    struct ck_controller c = {
        .name = "test", .sync = blocking_sync, .data = f, .queue = limited_queue(NULL)};
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, max, &r, NULL), 0);
    assert_int_equal(workers_started(r), 1); /* the others as keys need them */
    char key[16];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof(key), "ns/%d", i);
        ck_wq_add(c.queue, key);
    }
    wait_calls(f, want_running); /* never returns unless that many run at once */
    assert_int_equal(workers_started(r), want_workers);
    pthread_mutex_lock(&f->mu);
    assert_int_equal(f->calls, want_running);
    f->released = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
    r = ck_runner_stop(r);
    assert_int_equal(f->calls, 4);
    ck_wq_free(c.queue);
    fake_free(f);
}

static void test_workers_start_as_keys_need_them(void **state)
{
    (void)state;
    /* the four run at once, and a fifth worker waits for the next key */
    four_blocking_keys(8, 4, 5);
    /* never more than the count: three run, the fourth key waits for one of them */
    four_blocking_keys(3, 3, 3);
}

static void test_a_key_is_never_synced_by_two_workers(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    struct ck_controller c = {
        .name = "test", .sync = counting_sync, .data = f, .queue = limited_queue(NULL)};
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 8, &r, NULL), 0);
    char key[16];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "ns/%d", i % 64);
        ck_wq_add(c.queue, key);
    }
    r = ck_runner_stop(r);
    assert_int_equal(atomic_load(&f->overlaps), 0);
    assert_true(f->calls >= 64);
    ck_wq_free(c.queue);
    fake_free(f);
}

static void test_stop_syncs_every_queued_key_first(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    struct ck_controller c = {
        .name = "test", .sync = counting_sync, .data = f, .queue = limited_queue(NULL)};
    char key[16];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "ns/%d", i);
        ck_wq_add(c.queue, key);
    }
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 3, &r, NULL), 0);
    struct ck_runner_stats stats;
    ck_runner_stats(r, &stats);
    assert_true(stats.syncs <= 50);
    r = ck_runner_stop(r);
    assert_null(r);
    assert_int_equal(f->calls, 50);
    assert_int_equal(ck_wq_len(c.queue), 0);
    ck_wq_free(c.queue);
    fake_free(f);
}

static void test_stats_count_syncs_and_failures(void **state)
{
    (void)state;
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct fake *f = fake_new();
    f->fail_first = 1;
    struct ck_controller c = {
        .name = "test", .sync = fake_sync, .data = f, .queue = limited_queue(clock)};
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 1, &r, NULL), 0);
    ck_wq_add(c.queue, "ns/x");
    wait_calls(f, 1);
    wait_delayed(c.queue, 1);
    ck_fake_clock_step(clock, 5 * CK_MSEC);
    wait_calls(f, 2);
    /* The second sync succeeded; stop drains it, then the counts are final. */
    struct ck_runner_stats stats;
    ck_wq_shutdown_drain(c.queue);
    ck_runner_stats(r, &stats);
    assert_int_equal(stats.syncs, 2);
    assert_int_equal(stats.failures, 1);
    r = ck_runner_stop(r);
    ck_wq_free(c.queue);
    fake_free(f);
    ck_fake_clock_free(clock);
}

static int should_not_run(struct ck_controller *c, const char *key, struct ck_err *reterr)
{
    (void)c;
    (void)key;
    (void)reterr;
    fail_msg("the swapped-out sync ran");
    return 0;
}

static void test_sync_can_be_swapped_before_start(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    struct ck_controller c = {
        .name = "test", .sync = should_not_run, .data = f, .queue = limited_queue(NULL)};
    c.sync = fake_sync; /* as Kubernetes tests replace syncHandler */
    struct ck_runner *r;
    assert_int_equal(ck_runner_start(&c, 1, &r, NULL), 0);
    ck_wq_add(c.queue, "ns/swapped");
    wait_calls(f, 1);
    ck_runner_stop(r);
    assert_string_equal(f->last_key, "ns/swapped");
    ck_wq_free(c.queue);
    fake_free(f);
}

static void test_start_rejects_an_incomplete_controller(void **state)
{
    (void)state;
    struct ck_runner *r = NULL;
    struct ck_controller c = {.name = "test"};
    struct ck_err err = {0};
    assert_int_equal(ck_runner_start(&c, 1, &r, &err), CK_EINVAL);
    c.sync = fake_sync;
    assert_int_equal(ck_runner_start(&c, 1, &r, NULL), CK_EINVAL);
    c.queue = limited_queue(NULL);
    assert_int_equal(ck_runner_start(&c, 0, &r, NULL), CK_EINVAL);
    assert_null(r);
    assert_null(ck_runner_stop(NULL));
    ck_wq_free(c.queue);
}

static int quiet_logs(void **state)
{
    (void)state;
    devnull = fopen("/dev/null", "w");
    ck_log_set_output(devnull);
    return devnull ? 0 : -1;
}

static int restore_logs(void **state)
{
    (void)state;
    ck_log_set_output(NULL);
    fclose(devnull);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_sync_is_retried_with_backoff_and_success_forgets),
        cmocka_unit_test(test_failed_sync_keeps_its_key_when_the_requeue_cannot_allocate),
        cmocka_unit_test(test_failed_sync_on_a_queue_without_limiter_is_retried_at_once),
        cmocka_unit_test(test_a_conflict_is_logged_at_verbosity_2_other_failures_as_errors),
        cmocka_unit_test(test_a_key_is_never_synced_by_two_workers),
        cmocka_unit_test(test_workers_start_as_keys_need_them),
        cmocka_unit_test(test_stop_syncs_every_queued_key_first),
        cmocka_unit_test(test_stats_count_syncs_and_failures),
        cmocka_unit_test(test_sync_can_be_swapped_before_start),
        cmocka_unit_test(test_start_rejects_an_incomplete_controller),
    };
    return cmocka_run_group_tests(tests, quiet_logs, restore_logs);
}
