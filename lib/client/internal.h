/*
 * internal.h - private to lib/client; never installed, never included by another library.
 *
 * What the files of the client library share with each other: the reflector's view of
 * the informer it feeds, reference counting on shared objects, and the work queue's
 * private state. Allocation and the string map come from ckube/internal/util.h.
 */
#ifndef CKUBE_CLIENT_INTERNAL_H
#define CKUBE_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ckube/internal/util.h"

/*
 * Between the reflector (reflector.c) and the informer it feeds (informer.c): client-go's
 * Store interface as the reflector uses it. Objects are references the callee takes.
 */
struct ck_informer;
struct json_t;
/* A complete list: the new content of the cache. Returns 0 or a negative code. */
int ck__informer_replace(struct ck_informer *inf, struct json_t **objs, size_t n);
/* One watch event (ADDED, MODIFIED or DELETED). */
int ck__informer_apply(struct ck_informer *inf, const char *type, struct json_t *obj);

/*
 * A metadata informer (metadata.c) reading through the list/watch maker makes with
 * metadata set (copied, released with the informer), or through client when maker is
 * NULL; for the factory's ck_informer_factory_metadata_informer (informer.c).
 */
struct ck_list_watch_maker;
struct ck_metadata_informer;
struct ck_resource;
struct ck_rest;
struct ck_clock;
struct ck_err;
int ck__metadata_informer_new(struct ck_rest *client, const struct ck_list_watch_maker *maker,
                              const struct ck_resource *res, const char *namespace,
                              long long resync, struct ck_clock *clock,
                              struct ck_metadata_informer **ret_mi, struct ck_err *reterr);

/* ---- the work queue's private state, shared by workqueue.c, delaying.c, ratelimit.c ---- */

#include <pthread.h>
#include <stdint.h>

#include "ckube/client.h"

/* One key the queue knows: waiting (dirty, not processing), processing, or both. */
struct ck__wq_item {
    const char *key;    /* the copy held by the map entry */
    bool dirty;         /* needs processing (client-go's dirty set) */
    bool processing;    /* handed to a worker (client-go's processing set) */
    int64_t queued_at;  /* when it entered the queue, for queue_duration */
    int64_t started_at; /* when a worker took it, for work_duration */
};

/* A key waiting in the delaying heap for ready_at. */
struct ck__wq_delayed {
    const char *key; /* the copy held by the `delayed` map entry */
    int64_t ready_at;
    size_t index; /* position in the heap */
};

struct ck_wq {
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;  /* getters wait for keys; drain waits for processing to end */
    struct ck_clock *clock;
    char *name;

    struct ck__strmap items;   /* key -> struct ck__wq_item: dirty or processing */
    struct ck__wq_item **ring; /* FIFO of dirty, not-processing items */
    size_t head, len, cap;
    size_t nprocessing;
    bool shutting_down, drain;

    /* metrics */
    uint64_t adds, retries;
    struct ck_wq_histogram queue_duration, work_duration;

    /* delaying (delaying.c) */
    bool timer_started;
    pthread_t timer_thread;
    pthread_cond_t timer_cond;    /* wakes the timer thread: new earliest key, shutdown */
    struct ck__strmap delayed;    /* key -> struct ck__wq_delayed */
    struct ck__wq_delayed **heap; /* min-heap on ready_at */
    size_t heap_len, heap_cap;

    /* rate limiting (ratelimit.c) */
    struct ck_rate_limiter *limiter;
};

/* ck_wq_add() with q->lock held; now is the queue clock's time. */
int ck__wq_add_locked(struct ck_wq *q, const char *key, int64_t now);

/* Frees the delaying heap; q->lock held or the queue unreachable. */
void ck__wq_delayed_release(struct ck_wq *q);

#endif /* CKUBE_CLIENT_INTERNAL_H */
