/*
 * storetest.h - helpers shared by the store tests: an event collector that a
 * watch callback fills and a test thread waits on (no sleeps: a condition
 * variable, with a generous deadline that only guards against hangs).
 *
 * Threading: the collector's fields are guarded by its mutex; the callback
 * runs on the store's thread, the waiters on the test's.
 */
#ifndef CKUBE_TESTS_STORETEST_H
#define CKUBE_TESTS_STORETEST_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/store.h"

struct collector {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct ck_store_event *events; /* kv/prev_kv referenced, message not kept */
    size_t n, cap;
    size_t progress; /* progress events seen */
    int64_t last_progress;
};

static inline void collector_init(struct collector *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
}

static inline void collector_release(struct collector *c)
{
    for (size_t i = 0; i < c->n; i++) {
        ck_kv_unref(c->events[i].kv);
        ck_kv_unref(c->events[i].prev_kv);
    }
    free(c->events);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
}

static inline void collect(const struct ck_store_event *ev, void *arg)
{
    struct collector *c = arg;
    pthread_mutex_lock(&c->lock);
    if (ev->type == CK_STORE_EVENT_PROGRESS) {
        c->progress++;
        c->last_progress = ev->revision;
    } else {
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 64;
            c->events = realloc(c->events, c->cap * sizeof(*c->events));
        }
        struct ck_store_event *e = &c->events[c->n++];
        *e = *ev;
        e->message = NULL;
        ck_kv_ref(e->kv);
        ck_kv_ref(e->prev_kv);
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Waits until *count >= n (count points into c); false after 60 s. */
static inline bool collector_wait(struct collector *c, const size_t *count, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 60;
    pthread_mutex_lock(&c->lock);
    int r = 0;
    while (*count < n && r == 0)
        r = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    bool ok = *count >= n;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

#endif /* CKUBE_TESTS_STORETEST_H */
