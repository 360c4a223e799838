/*
 * delaying.c - ck_wq_add_after(): keys that enter the queue later (client-go
 * util/workqueue/delaying_queue.go).
 *
 * Delayed keys wait in a min-heap on their ready time, with a map from key to heap entry
 * so a key is in the heap once: adding it again only moves it earlier, never later (as
 * client-go's insert does). One timer thread, started by the first delayed add, moves the
 * keys whose time has come into the queue and sleeps in ck_clock_wait() until the
 * earliest ready time, so a fake clock drives it in tests. client-go also wakes every 10 s
 * "as insurance"; a condition variable cannot miss a signal, so we need no heartbeat.
 *
 * Unlike client-go, ck_wq_add_after() inserts into the heap itself, under q->lock, instead
 * of passing entries to the timer thread through a channel: once it returns, the key is
 * either queued or in the heap, which makes tests deterministic.
 *
 * Each delayed add counts as a retry (workqueue_retries_total), as client-go counts them.
 *
 * Threading: everything is under q->lock; the timer thread sleeps on q->timer_cond, which
 * ck_wq_add_after() signals when the earliest ready time changes and shutdown broadcasts.
 */
#include <stdlib.h>

#include "internal.h"

static void heap_swap(struct ck__wq_delayed **h, size_t i, size_t j)
{
    struct ck__wq_delayed *t = h[i];
    h[i] = h[j];
    h[j] = t;
    h[i]->index = i;
    h[j]->index = j;
}

static void sift_up(struct ck__wq_delayed **h, size_t i)
{
    while (i > 0 && h[(i - 1) / 2]->ready_at > h[i]->ready_at) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(struct ck__wq_delayed **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, min = i;
        if (l < n && h[l]->ready_at < h[min]->ready_at)
            min = l;
        if (r < n && h[r]->ready_at < h[min]->ready_at)
            min = r;
        if (min == i)
            return;
        heap_swap(h, i, min);
        i = min;
    }
}

/* Removes and frees the heap's earliest entry. */
static void heap_pop(struct ck_wq *q)
{
    struct ck__wq_delayed *d = q->heap[0];
    q->heap_len--;
    if (q->heap_len > 0) {
        q->heap[0] = q->heap[q->heap_len];
        q->heap[0]->index = 0;
        sift_down(q->heap, q->heap_len, 0);
    }
    ck__strmap_remove(&q->delayed, d->key);
    free(d);
}

static void *timer_main(void *arg)
{
    struct ck_wq *q = arg;
    pthread_mutex_lock(&q->lock);
    while (!q->shutting_down) {
        int64_t now = ck_clock_now(q->clock);
        while (q->heap_len > 0 && q->heap[0]->ready_at <= now) {
            if (ck__wq_add_locked(q, q->heap[0]->key, now) == CK_ENOMEM) {
                /* Keep the key rather than lose it; try again in a moment. */
                q->heap[0]->ready_at = now + 100 * CK_MSEC;
                sift_down(q->heap, q->heap_len, 0);
                break;
            }
            heap_pop(q);
        }
        int64_t deadline = q->heap_len > 0 ? q->heap[0]->ready_at : CK_TIME_NEVER;
        ck_clock_wait(q->clock, &q->timer_cond, &q->lock, deadline);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static int insert(struct ck_wq *q, const char *key, int64_t ready_at)
{
    struct ck__strmap_entry *e = ck__strmap_find(&q->delayed, key);
    if (e) {
        struct ck__wq_delayed *d = e->value;
        if (ready_at < d->ready_at) {
            d->ready_at = ready_at;
            sift_up(q->heap, d->index);
            if (d->index == 0)
                pthread_cond_signal(&q->timer_cond);
        }
        return 0;
    }
    if (q->heap_len == q->heap_cap) {
        size_t cap = q->heap_cap ? q->heap_cap * 2 : 16;
        struct ck__wq_delayed **heap = ck__realloc(q->heap, cap * sizeof(*heap));
        if (!heap)
            return CK_ENOMEM;
        q->heap = heap;
        q->heap_cap = cap;
    }
    struct ck__wq_delayed *d = ck__malloc(sizeof(*d));
    if (!d)
        return CK_ENOMEM;
    bool created;
    e = ck__strmap_put(&q->delayed, key, d, &created);
    if (!e) {
        free(d);
        return CK_ENOMEM;
    }
    d->key = e->key;
    d->ready_at = ready_at;
    d->index = q->heap_len;
    q->heap[q->heap_len++] = d;
    sift_up(q->heap, d->index);
    if (d->index == 0)
        pthread_cond_signal(&q->timer_cond);
    return 0;
}

int ck_wq_add_after(struct ck_wq *q, const char *key, int64_t delay)
{
    if (!key)
        return CK_EINVAL;
    pthread_mutex_lock(&q->lock);
    int r = CK_ESHUTDOWN;
    if (q->shutting_down)
        goto out_unlock;
    q->retries++;
    int64_t now = ck_clock_now(q->clock);
    if (delay <= 0) {
        r = ck__wq_add_locked(q, key, now);
        goto out_unlock;
    }
    if (!q->timer_started) {
        if (pthread_create(&q->timer_thread, NULL, timer_main, q) != 0) {
            r = CK_ENOMEM;
            goto out_unlock;
        }
        q->timer_started = true;
    }
    r = insert(q, key, delay < CK_TIME_NEVER - now ? now + delay : CK_TIME_NEVER - 1);
out_unlock:
    pthread_mutex_unlock(&q->lock);
    return r;
}

size_t ck_wq_delayed_len(struct ck_wq *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->heap_len;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void ck__wq_delayed_release(struct ck_wq *q)
{
    for (size_t i = 0; i < q->heap_len; i++)
        free(q->heap[i]);
    free(q->heap);
    q->heap = NULL;
    q->heap_len = q->heap_cap = 0;
    ck__strmap_release(&q->delayed);
}
