/*
 * internal.h - private to lib/client (and the controllers built on it); never installed.
 *
 * Two helpers every file of the client library needs:
 *
 * - ck__malloc/ck__calloc/ck__realloc/ck__strdup: the library's allocation calls, with a
 *   test hook that makes the Nth call fail, so allocation failure is an ordinary test
 *   (SQLite's faultsim). The hook is process-wide and meant for single-threaded tests.
 * - struct ck__strmap: a string-keyed hash map (chaining, FNV-1a, doubling). It copies
 *   keys and stores void * values it does not own. Not thread-safe: its owner locks.
 */
#ifndef CKUBE_CLIENT_INTERNAL_H
#define CKUBE_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

void *ck__malloc(size_t size);
void *ck__calloc(size_t n, size_t size);
void *ck__realloc(void *p, size_t size);
char *ck__strdup(const char *s);

/*
 * Makes the nth allocation from now fail (1 = the next one), and every one after it
 * when `sticky`; 0 turns the hook off. Returns how many allocations were made since the
 * last call, so a test can loop n = 1, 2, ... until an operation succeeds.
 */
unsigned long ck__alloc_fail_at(unsigned long n, bool sticky);

struct ck__strmap_entry {
    struct ck__strmap_entry *next;
    void *value;
    unsigned long hash;
    char key[]; /* the map's own copy */
};

struct ck__strmap {
    struct ck__strmap_entry **buckets;
    size_t nbuckets; /* a power of two, or 0 before the first insert */
    size_t len;
};

/* An empty map needs no allocation: `struct ck__strmap m = {0};` is ready to use. */
void ck__strmap_release(struct ck__strmap *m);

/* Returns the entry for key, or NULL. */
struct ck__strmap_entry *ck__strmap_find(const struct ck__strmap *m, const char *key);

/*
 * Inserts key (copied) with value, or finds it when present. Returns the entry and sets
 * *ret_created, or NULL when out of memory (the map is unchanged).
 */
struct ck__strmap_entry *ck__strmap_put(struct ck__strmap *m, const char *key, void *value,
                                        bool *ret_created);

/*
 * Inserts key, which must be absent, with `extra` zeroed bytes (16-byte aligned) inside
 * the entry itself as its value (NULL value when extra is 0): one allocation for key and
 * payload, freed with the entry. Returns the entry, or NULL when out of memory (the map
 * is unchanged).
 */
struct ck__strmap_entry *ck__strmap_insert(struct ck__strmap *m, const char *key, size_t extra);

/* Removes and frees an entry of m (and its inline payload) without hashing again. */
void ck__strmap_remove_entry(struct ck__strmap *m, struct ck__strmap_entry *e);

/* Removes key; returns its value, or NULL when absent. */
void *ck__strmap_remove(struct ck__strmap *m, const char *key);

/* Iteration: for (e = ck__strmap_next(m, NULL, &i); e; e = ck__strmap_next(m, e, &i)). */
struct ck__strmap_entry *ck__strmap_next(const struct ck__strmap *m, struct ck__strmap_entry *e,
                                         size_t *bucket);

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

#endif /* CKUBE_CLIENT_INTERNAL_H */

/*
 * References on shared objects. jansson's json_incref/json_decref change the count
 * atomically but first read it with a plain load (to skip its static singletons), which
 * is a data race once several threads share the object; these use atomics throughout.
 */
#include <jansson.h>

static inline json_t *ck__json_ref(const json_t *obj)
{
    json_t *o = (json_t *)obj; /* the count is the one mutable part of a shared object */
    if (o && __atomic_load_n(&o->refcount, __ATOMIC_RELAXED) != (size_t)-1)
        __atomic_add_fetch(&o->refcount, 1, __ATOMIC_RELAXED);
    return o;
}

static inline void ck__json_unref(const json_t *obj)
{
    json_t *o = (json_t *)obj;
    if (o && __atomic_load_n(&o->refcount, __ATOMIC_RELAXED) != (size_t)-1 &&
        __atomic_sub_fetch(&o->refcount, 1, __ATOMIC_ACQ_REL) == 0)
        json_delete(o);
}

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
