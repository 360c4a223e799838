/*
 * clock.c - the real monotonic clock and a fake one tests drive (k8s.io/utils/clock).
 *
 * Every thread of the library that waits for a time sleeps in ck_clock_wait() on its own
 * condition variable. The real clock waits with pthread_cond_clockwait on
 * CLOCK_MONOTONIC, so wall-clock jumps change nothing. The fake clock keeps a list of the
 * threads waiting on it (their cond, mutex and deadline); ck_fake_clock_step() advances
 * time, takes the waiters whose deadline has come off the list and wakes them.
 *
 * Lock order: a waiter holds its own mutex and then takes the fake clock's lock to
 * register; ck_fake_clock_step() never holds the fake clock's lock while it takes a
 * waiter's mutex, so the two never deadlock. Because the step takes the waiter's mutex
 * before signalling, and the waiter holds it until it sleeps, no wakeup is lost.
 *
 * Tests: tests/client/test_clock.c; every test of a waiting piece (delaying and
 * rate-limited queues, reflector backoff) drives the fake clock too.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "ckube/client.h"

struct ck_clock {
    bool fake;
    pthread_mutex_t lock;  /* fake only: guards now and waiters */
    pthread_cond_t change; /* fake only: signalled when the waiter list grows */
    int64_t now;
    struct waiter *waiters;
    int nwaiters;
};

struct waiter {
    struct waiter *next;
    pthread_cond_t *cond;
    pthread_mutex_t *mu;
    int64_t deadline;
};

static struct ck_clock real_clock = {.fake = false};

struct ck_clock *ck_clock_real(void)
{
    return &real_clock;
}

int64_t ck_clock_now(struct ck_clock *clock)
{
    if (clock && clock->fake) {
        pthread_mutex_lock(&clock->lock);
        int64_t now = clock->now;
        pthread_mutex_unlock(&clock->lock);
        return now;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
}

static void unlink_waiter(struct ck_clock *clock, struct waiter *w)
{
    for (struct waiter **pp = &clock->waiters; *pp; pp = &(*pp)->next) {
        if (*pp == w) {
            *pp = w->next;
            clock->nwaiters--;
            return;
        }
    }
}

static int fake_wait(struct ck_clock *clock, pthread_cond_t *cond, pthread_mutex_t *mu,
                     int64_t deadline)
{
    struct waiter w = {.cond = cond, .mu = mu, .deadline = deadline};
    pthread_mutex_lock(&clock->lock);
    if (deadline <= clock->now) {
        pthread_mutex_unlock(&clock->lock);
        return CK_ETIMEDOUT;
    }
    w.next = clock->waiters;
    clock->waiters = &w;
    clock->nwaiters++;
    pthread_cond_broadcast(&clock->change);
    pthread_mutex_unlock(&clock->lock);

    pthread_cond_wait(cond, mu);

    pthread_mutex_lock(&clock->lock);
    unlink_waiter(clock, &w); /* still listed when woken by someone else */
    bool due = deadline <= clock->now;
    pthread_mutex_unlock(&clock->lock);
    return due ? CK_ETIMEDOUT : 0;
}

int ck_clock_wait(struct ck_clock *clock, pthread_cond_t *cond, pthread_mutex_t *mu,
                  int64_t deadline)
{
    if (clock && clock->fake)
        return fake_wait(clock, cond, mu, deadline);
    if (deadline == CK_TIME_NEVER) {
        pthread_cond_wait(cond, mu);
        return 0;
    }
    struct timespec ts = {.tv_sec = (time_t)(deadline / CK_SEC),
                          .tv_nsec = (long)(deadline % CK_SEC)};
    return pthread_cond_clockwait(cond, mu, CLOCK_MONOTONIC, &ts) == ETIMEDOUT ? CK_ETIMEDOUT : 0;
}

struct ck_clock *ck_fake_clock_new(int64_t start)
{
    struct ck_clock *clock = calloc(1, sizeof(*clock));
    if (!clock)
        return NULL;
    clock->fake = true;
    clock->now = start;
    pthread_mutex_init(&clock->lock, NULL);
    pthread_cond_init(&clock->change, NULL);
    return clock;
}

struct ck_clock *ck_fake_clock_free(struct ck_clock *clock)
{
    if (!clock || !clock->fake)
        return NULL;
    pthread_cond_destroy(&clock->change);
    pthread_mutex_destroy(&clock->lock);
    free(clock);
    return NULL;
}

void ck_fake_clock_step(struct ck_clock *clock, int64_t d)
{
    struct {
        pthread_cond_t *cond;
        pthread_mutex_t *mu;
    } wakes[16];

    pthread_mutex_lock(&clock->lock);
    clock->now += d;
    for (;;) {
        /* Take up to 16 due waiters off the list, wake them without our lock, repeat. */
        int n = 0;
        for (struct waiter **pp = &clock->waiters; *pp && n < 16;) {
            struct waiter *w = *pp;
            if (w->deadline <= clock->now) {
                wakes[n].cond = w->cond;
                wakes[n++].mu = w->mu;
                *pp = w->next;
                clock->nwaiters--;
            } else {
                pp = &w->next;
            }
        }
        pthread_mutex_unlock(&clock->lock);
        for (int i = 0; i < n; i++) {
            pthread_mutex_lock(wakes[i].mu);
            pthread_cond_broadcast(wakes[i].cond);
            pthread_mutex_unlock(wakes[i].mu);
        }
        if (n < 16)
            return;
        pthread_mutex_lock(&clock->lock);
    }
}

int ck_fake_clock_waiters(struct ck_clock *clock)
{
    pthread_mutex_lock(&clock->lock);
    int n = clock->nwaiters;
    pthread_mutex_unlock(&clock->lock);
    return n;
}

void ck_fake_clock_wait_for_waiters(struct ck_clock *clock, int n)
{
    pthread_mutex_lock(&clock->lock);
    while (clock->nwaiters < n)
        pthread_cond_wait(&clock->change, &clock->lock);
    pthread_mutex_unlock(&clock->lock);
}
