/*
 * queue.c - the scheduling queue: which pending pod the scheduler tries next.
 *
 * Mirrors pkg/scheduler/backend/queue's PriorityQueue of Kubernetes 1.32, without
 * priorities (pods are tried in the order they were added) and without queueing hints
 * (every cluster event moves every unschedulable pod):
 * - activeQ: pods to try now, first in first out;
 * - backoffQ: pods whose last attempt failed, each until its backoff ends, 1 s doubling
 *   per attempt up to 10 s, then back to activeQ;
 * - unschedulablePods: pods that fit nowhere; a node change or a pod leaving a node
 *   (ck__sched_queue_move_all) moves them to activeQ, or to backoffQ while their
 *   backoff lasts; after 5 minutes they are retried anyway. A pod that failed in a cycle
 *   that began before the latest move goes to backoffQ instead (moveRequestCycle), so
 *   the event that might have freed room for it is not missed.
 *
 * A pod is in exactly one place: one of the three sets, or in flight (popped, being
 * scheduled or bound). Entries live inline in a string map keyed by "namespace/name";
 * the sets are intrusive doubly linked lists through them.
 *
 * Threading: every call takes q->lock; pop sleeps on q->cond with the queue's clock, so
 * a test moves a fake clock to end backoffs.
 *
 * Tested by tests/controllers/test_scheduler_queue.c on a fake clock.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum where { ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT };

struct entry {
    struct entry *prev, *next;
    struct ck__strmap_entry *map_entry; /* its key */
    enum where where;
    int attempts;
    int64_t backoff_until; /* BACKOFF, and UNSCHEDULABLE pods moved early */
    int64_t unschedulable_since;
};

struct list {
    struct entry *head, *tail;
    size_t len;
};

struct ck__sched_queue {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct ck_clock *clock;
    struct ck__strmap entries;
    struct list lists[3]; /* ACTIVE, BACKOFF, UNSCHEDULABLE */
    int64_t cycle;        /* schedulingCycle: pops so far */
    int64_t move_cycle;   /* moveRequestCycle: the cycle of the latest move_all */
    bool shutdown;
};

static void unlink_entry(struct ck__sched_queue *q, struct entry *e)
{
    if (e->where == IN_FLIGHT)
        return;
    struct list *l = &q->lists[e->where];
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
    l->len--;
}

static void link_entry(struct ck__sched_queue *q, struct entry *e, enum where where)
{
    unlink_entry(q, e);
    e->where = where;
    if (where == IN_FLIGHT)
        return;
    struct list *l = &q->lists[where];
    e->prev = l->tail;
    e->next = NULL;
    if (l->tail)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
    l->len++;
    if (where == ACTIVE)
        pthread_cond_broadcast(&q->cond);
}

static struct entry *find(struct ck__sched_queue *q, const char *key)
{
    struct ck__strmap_entry *me = ck__strmap_find(&q->entries, key);
    return me ? me->value : NULL;
}

/* calculateBackoffDuration: 1 s, doubled per attempt beyond the first, at most 10 s. */
static int64_t backoff_for(int attempts)
{
    int64_t d = CK__SCHED_INITIAL_BACKOFF;
    for (int i = 1; i < attempts && d < CK__SCHED_MAX_BACKOFF; i++)
        d *= 2;
    return d < CK__SCHED_MAX_BACKOFF ? d : CK__SCHED_MAX_BACKOFF;
}

struct ck__sched_queue *ck__sched_queue_new(struct ck_clock *clock)
{
    struct ck__sched_queue *q = calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL); /* ck_clock_wait() waits on CLOCK_MONOTONIC */
    q->clock = clock;
    return q;
}

struct ck__sched_queue *ck__sched_queue_free(struct ck__sched_queue *q)
{
    if (!q)
        return NULL;
    ck__strmap_release(&q->entries);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
    return NULL;
}

/* Where an unschedulable pod goes when something moves it. */
static void requeue(struct ck__sched_queue *q, struct entry *e, int64_t now)
{
    link_entry(q, e, now < e->backoff_until ? BACKOFF : ACTIVE);
}

int ck__sched_queue_add(struct ck__sched_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct entry *e = find(q, key);
    int r = 0;
    if (!e) {
        struct ck__strmap_entry *me = ck__strmap_insert(&q->entries, key, sizeof(*e));
        if (!me) {
            r = CK_ENOMEM;
        } else {
            e = me->value;
            e->map_entry = me;
            e->where = IN_FLIGHT; /* not linked yet */
            link_entry(q, e, ACTIVE);
        }
    } else if (e->where == UNSCHEDULABLE) {
        requeue(q, e, ck_clock_now(q->clock));
    }
    pthread_mutex_unlock(&q->lock);
    return r;
}

void ck__sched_queue_delete(struct ck__sched_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct entry *e = find(q, key);
    if (e) {
        unlink_entry(q, e);
        ck__strmap_remove_entry(&q->entries, e->map_entry);
    }
    pthread_mutex_unlock(&q->lock);
}

/* Moves expired backoffs and stale unschedulable pods to activeQ; the next deadline. */
static int64_t flush(struct ck__sched_queue *q, int64_t now)
{
    int64_t next = CK_TIME_NEVER;
    for (struct entry *e = q->lists[BACKOFF].head, *n; e; e = n) {
        n = e->next;
        if (e->backoff_until <= now)
            link_entry(q, e, ACTIVE);
        else if (e->backoff_until < next)
            next = e->backoff_until;
    }
    for (struct entry *e = q->lists[UNSCHEDULABLE].head, *n; e; e = n) {
        n = e->next;
        int64_t until = e->unschedulable_since + CK__SCHED_MAX_UNSCHEDULABLE;
        if (until <= now)
            requeue(q, e, now);
        else if (until < next)
            next = until;
    }
    return next;
}

int ck__sched_queue_pop(struct ck__sched_queue *q, char **ret_key, int *ret_attempts,
                        int64_t *ret_cycle)
{
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->shutdown) {
            pthread_mutex_unlock(&q->lock);
            return CK_ESHUTDOWN;
        }
        int64_t next = flush(q, ck_clock_now(q->clock));
        struct entry *e = q->lists[ACTIVE].head;
        if (e) {
            char *key = strdup(e->map_entry->key);
            if (!key) {
                pthread_mutex_unlock(&q->lock);
                return CK_ENOMEM;
            }
            link_entry(q, e, IN_FLIGHT);
            e->attempts++;
            *ret_key = key;
            *ret_attempts = e->attempts;
            *ret_cycle = ++q->cycle;
            pthread_mutex_unlock(&q->lock);
            return 0;
        }
        ck_clock_wait(q->clock, &q->cond, &q->lock, next);
    }
}

void ck__sched_queue_unschedulable(struct ck__sched_queue *q, const char *key, int64_t cycle)
{
    pthread_mutex_lock(&q->lock);
    struct entry *e = find(q, key);
    if (e && e->where == IN_FLIGHT) {
        int64_t now = ck_clock_now(q->clock);
        e->backoff_until = now + backoff_for(e->attempts);
        e->unschedulable_since = now;
        link_entry(q, e, q->move_cycle >= cycle ? BACKOFF : UNSCHEDULABLE);
        pthread_cond_broadcast(&q->cond); /* a new deadline for pop */
    }
    pthread_mutex_unlock(&q->lock);
}

void ck__sched_queue_backoff(struct ck__sched_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct entry *e = find(q, key);
    if (e && e->where == IN_FLIGHT) {
        e->backoff_until = ck_clock_now(q->clock) + backoff_for(e->attempts);
        link_entry(q, e, BACKOFF);
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
}

void ck__sched_queue_done(struct ck__sched_queue *q, const char *key)
{
    pthread_mutex_lock(&q->lock);
    struct entry *e = find(q, key);
    if (e && e->where == IN_FLIGHT)
        ck__strmap_remove_entry(&q->entries, e->map_entry);
    pthread_mutex_unlock(&q->lock);
}

void ck__sched_queue_move_all(struct ck__sched_queue *q)
{
    pthread_mutex_lock(&q->lock);
    int64_t now = ck_clock_now(q->clock);
    while (q->lists[UNSCHEDULABLE].head)
        requeue(q, q->lists[UNSCHEDULABLE].head, now);
    q->move_cycle = q->cycle;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

void ck__sched_queue_counts(struct ck__sched_queue *q, size_t *ret_active, size_t *ret_backoff,
                            size_t *ret_unschedulable)
{
    pthread_mutex_lock(&q->lock);
    *ret_active = q->lists[ACTIVE].len;
    *ret_backoff = q->lists[BACKOFF].len;
    *ret_unschedulable = q->lists[UNSCHEDULABLE].len;
    pthread_mutex_unlock(&q->lock);
}

void ck__sched_queue_shutdown(struct ck__sched_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->shutdown = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}
