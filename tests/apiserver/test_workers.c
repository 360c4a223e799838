/*
 * test_workers.c - tests for lib/apiserver/workers.c, the threads that run the
 * API server's writes: jobs run at the same time on different threads (a
 * pool of N runs N jobs that each wait for all the others), stopping runs
 * every job still queued before it returns, and a job submitted once the pool
 * is stopping is refused so that its caller runs it; threads start only as
 * jobs need them (none before the first job, one reused by jobs that come one
 * after the other, as many as the jobs running at once). That every write of the
 * server goes through the pool and is answered is covered by every server
 * test that writes (test_handlers.c, test_server.c, the end-to-end tests).
 */
#include "cktest.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "../../lib/apiserver/internal.h"

#define CONCURRENT 8

struct counting_job {
    struct ck__work work;
    atomic_int *ran;
    /* for the concurrency test: every job waits until all have arrived */
    pthread_mutex_t *lock;
    pthread_cond_t *all_here;
    int *arrived;
    bool met_all; /* all CONCURRENT were running at once */
};

static void count(struct ck__work *work)
{
    struct counting_job *job = (struct counting_job *)work;
    atomic_fetch_add(job->ran, 1);
}

static void wait_for_all(struct ck__work *work)
{
    struct counting_job *job = (struct counting_job *)work;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10; /* a pool that ran jobs one at a time would never get there */
    pthread_mutex_lock(job->lock);
    (*job->arrived)++;
    pthread_cond_broadcast(job->all_here);
    int r = 0;
    while (*job->arrived < CONCURRENT && r == 0)
        r = pthread_cond_timedwait(job->all_here, job->lock, &deadline);
    job->met_all = *job->arrived >= CONCURRENT;
    pthread_mutex_unlock(job->lock);
    atomic_fetch_add(job->ran, 1);
}

/* Where CONCURRENT jobs wait for each other. */
struct rendezvous {
    pthread_mutex_t lock;
    pthread_cond_t all_here;
    int arrived;
};

/* Submits CONCURRENT jobs that each wait until all of them run: each needs a thread. */
static void submit_waiting_jobs(struct ck__workers *w, struct counting_job *jobs, atomic_int *ran,
                                struct rendezvous *meet)
{
    for (int i = 0; i < CONCURRENT; i++) {
        jobs[i] = (struct counting_job){.work.run = wait_for_all,
                                        .ran = ran,
                                        .lock = &meet->lock,
                                        .all_here = &meet->all_here,
                                        .arrived = &meet->arrived};
        assert_true(ck__workers_submit(w, &jobs[i].work));
    }
}

static void test_jobs_run_at_the_same_time(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck__workers *w = ck__workers_start(CONCURRENT, &err);
    assert_non_null(w);
    atomic_int ran = 0;
    struct rendezvous meet = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct counting_job jobs[CONCURRENT];
    submit_waiting_jobs(w, jobs, &ran, &meet);
    ck__workers_stop(w);
    ck__workers_free(w);
    assert_int_equal(atomic_load(&ran), CONCURRENT);
    for (int i = 0; i < CONCURRENT; i++)
        assert_true(jobs[i].met_all);
}

static void test_threads_start_as_jobs_need_them(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck__workers *w = ck__workers_start(64, &err);
    assert_non_null(w);
    assert_int_equal(ck__workers_threads(w), 0);
    atomic_int ran = 0;
    /* one job: one thread; the next job, submitted once that thread is idle again, reuses it */
    struct counting_job one[2];
    for (int i = 0; i < 2; i++) {
        one[i] = (struct counting_job){.work.run = count, .ran = &ran};
        assert_true(ck__workers_submit(w, &one[i].work));
        while (atomic_load(&ran) < i + 1)
            sched_yield();
        /* time for the thread to wait again (if it has not, the next job starts a second) */
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
    }
    unsigned after_one_at_a_time = ck__workers_threads(w);
    assert_in_range(after_one_at_a_time, 1, 2);
    /* CONCURRENT jobs that each wait for all the others: each needs a thread of its own */
    struct rendezvous meet = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct counting_job jobs[CONCURRENT];
    submit_waiting_jobs(w, jobs, &ran, &meet);
    while (atomic_load(&ran) < 2 + CONCURRENT)
        sched_yield();
    for (int i = 0; i < CONCURRENT; i++)
        assert_true(jobs[i].met_all);
    /* as many threads as jobs ran at once (one more if the first thread was late to wait
     * again), not the pool's 64 */
    assert_in_range(ck__workers_threads(w), CONCURRENT, CONCURRENT + after_one_at_a_time);
    ck__workers_stop(w);
    ck__workers_free(w);
}

static void test_stop_runs_every_queued_job(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck__workers *w = ck__workers_start(1, &err);
    assert_non_null(w);
    atomic_int ran = 0;
    struct counting_job jobs[200];
    for (int i = 0; i < 200; i++) {
        jobs[i] = (struct counting_job){.work.run = count, .ran = &ran};
        assert_true(ck__workers_submit(w, &jobs[i].work));
    }
    ck__workers_stop(w);
    assert_int_equal(atomic_load(&ran), 200);
    /* stopped: refused, so that the caller runs it; stopping twice is harmless */
    struct counting_job late = {.work.run = count, .ran = &ran};
    assert_false(ck__workers_submit(w, &late.work));
    ck__workers_stop(w);
    ck__workers_free(w);
    assert_int_equal(atomic_load(&ran), 200);
    ck__workers_stop(NULL);
    ck__workers_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_run_at_the_same_time),
        cmocka_unit_test(test_threads_start_as_jobs_need_them),
        cmocka_unit_test(test_stop_runs_every_queued_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
