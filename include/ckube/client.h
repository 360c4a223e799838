/*
 * ckube/client.h - libckube-client: the runtime controllers are written with.
 *
 * This part holds what needs no API server:
 *
 * - the clock (real and fake) every time-dependent piece takes, so that tests drive time
 *   instead of sleeping (k8s.io/utils/clock and its testing.FakeClock);
 * - the work queue, in client-go's three faces: plain (util/workqueue/queue.go), delaying
 *   (delaying_queue.go) and rate-limited (rate_limiting_queue.go, default_rate_limiters.go),
 *   with client-go's workqueue metrics;
 * - the indexer (tools/cache/thread_safe_store.go, index.go, store.go): a thread-safe,
 *   indexed cache of API objects, and the DeletedFinalStateUnknown tombstone;
 * - the event recorder (tools/record: event.go, events_cache.go): core/v1 Events written
 *   asynchronously through a sink, after a correlator has aggregated, counted and
 *   spam-filtered them.
 *
 * Objects are jansson values. Once an object is in a cache it is shared: every pointer the
 * library hands out is `const json_t *`, and callers must never change such an object
 * (client-go: "you must not modify anything returned by Get or List"); copy it with
 * json_deep_copy() before any change.
 *
 * Errors follow ckube/util.h: 0 or a negative CK_E* code, with a struct ck_err when the
 * caller wants words. Every function here is thread-safe unless it says otherwise.
 */
#ifndef CKUBE_CLIENT_H
#define CKUBE_CLIENT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckube/util.h"

#ifndef CK_ESHUTDOWN
#define CK_ESHUTDOWN (-ESHUTDOWN) /* the queue (or component) is shutting down */
#endif
#ifndef CK_ETIMEDOUT
#define CK_ETIMEDOUT (-ETIMEDOUT) /* a deadline passed */
#endif

/* ---- clock ------------------------------------------------------------- */

/* Times and durations are int64_t nanoseconds on a monotonic clock. */
#define CK_NSEC       INT64_C(1)
#define CK_USEC       INT64_C(1000)
#define CK_MSEC       INT64_C(1000000)
#define CK_SEC        INT64_C(1000000000)
#define CK_TIME_NEVER INT64_MAX /* a deadline that never comes */

struct ck_clock;

/* The process's monotonic clock (CLOCK_MONOTONIC). Static: never freed. */
struct ck_clock *ck_clock_real(void);

/* Now, in nanoseconds. clock may be NULL for the real clock. */
int64_t ck_clock_now(struct ck_clock *clock);

/*
 * Waits on cond, whose mutex mu the caller holds, until it is signalled or the clock
 * reaches deadline (CK_TIME_NEVER: no deadline), like pthread_cond_timedwait. Returns 0
 * when woken (perhaps spuriously: callers loop on their condition) or CK_ETIMEDOUT. This
 * is how every waiting thread of the library sleeps, so a fake clock can wake it.
 */
int ck_clock_wait(struct ck_clock *clock, pthread_cond_t *cond, pthread_mutex_t *mu,
                  int64_t deadline);

/*
 * A fake clock for tests (k8s.io/utils/clock/testing.FakeClock): time stands still at
 * start until ck_fake_clock_step() moves it; then every ck_clock_wait() whose deadline has
 * come wakes. Returns NULL when out of memory; free with ck_fake_clock_free() after every
 * user of the clock is gone.
 */
struct ck_clock *ck_fake_clock_new(int64_t start);
struct ck_clock *ck_fake_clock_free(struct ck_clock *clock);

/* Moves the fake clock forward by d and wakes the waiters whose deadline has come. */
void ck_fake_clock_step(struct ck_clock *clock, int64_t d);

/* How many threads are blocked in ck_clock_wait() on this fake clock right now. */
int ck_fake_clock_waiters(struct ck_clock *clock);

/*
 * Blocks until at least n threads wait on this fake clock: after a step, it tells a test
 * that a background thread has done what the step made due and gone back to sleep.
 */
void ck_fake_clock_wait_for_waiters(struct ck_clock *clock, int n);

/* ---- rate limiters (client-go util/workqueue/default_rate_limiters.go) ---- */

/*
 * A rate limiter says how long an item must wait before its next try. Items are strings
 * (work-queue keys). Each limiter is thread-safe and owned by one queue once given to it.
 */
struct ck_rate_limiter;

/* Each try of key waits base * 2^failures, capped at max (ItemExponentialFailureRateLimiter). */
struct ck_rate_limiter *ck_rl_exponential_new(int64_t base, int64_t max);

/* The first max_fast tries of a key wait fast, later ones slow (ItemFastSlowRateLimiter). */
struct ck_rate_limiter *ck_rl_fast_slow_new(int64_t fast, int64_t slow, int max_fast);

/*
 * An overall token bucket of qps tokens per second holding at most burst, starting full
 * (BucketRateLimiter over golang.org/x/time/rate): every try takes a token, waiting for
 * it when the bucket is empty. Not per key: it never forgets and counts no requeues.
 */
struct ck_rate_limiter *ck_rl_bucket_new(struct ck_clock *clock, double qps, int burst);

/*
 * The worst (longest) answer of several limiters (MaxOfRateLimiter). Takes ownership of
 * the n limiters, also on failure (NULL when out of memory or when one of them is NULL).
 */
struct ck_rate_limiter *ck_rl_max_of_new(struct ck_rate_limiter **limiters, size_t n);

/*
 * client-go's DefaultControllerRateLimiter: the max of exponential (5 ms, 1000 s) and a
 * bucket of 10 qps, burst 100. clock may be NULL for the real clock.
 */
struct ck_rate_limiter *ck_rl_default_controller_new(struct ck_clock *clock);

/* How long key must wait now; records one more failure of key. */
int64_t ck_rl_when(struct ck_rate_limiter *rl, const char *key);
/* Stops tracking key: its next failure starts again from the base delay. */
void ck_rl_forget(struct ck_rate_limiter *rl, const char *key);
/* How many failures of key are being tracked. */
int ck_rl_num_requeues(struct ck_rate_limiter *rl, const char *key);
struct ck_rate_limiter *ck_rl_free(struct ck_rate_limiter *rl);

/* ---- work queue (client-go util/workqueue) ----------------------------- */

/*
 * One queue type with three faces. Plain: ck_wq_add/get/done. Delaying: ck_wq_add_after,
 * served by one background thread started at the first delayed add. Rate-limited:
 * ck_wq_add_rate_limited/forget/num_requeues, when the queue was given a rate limiter.
 *
 * The plain queue is fair (FIFO), stingy (a key added several times before it is taken is
 * taken once) and never hands a key to two workers at once: a key added while a worker
 * processes it is marked dirty and goes back in the queue when the worker calls
 * ck_wq_done(). Keys are copied in; the queue owns its copies.
 */
struct ck_wq;

struct ck_wq_options {
    const char *name;                /* metric label; copied; NULL or "" for none */
    struct ck_clock *clock;          /* borrowed, must outlive the queue; NULL = real */
    struct ck_rate_limiter *limiter; /* taken (also on failure); NULL = no rate limiting */
};

/*
 * Creates a queue. opts may be NULL (unnamed, real clock, no limiter). Returns 0 and sets
 * *ret_q, or CK_ENOMEM.
 */
int ck_wq_new(const struct ck_wq_options *opts, struct ck_wq **ret_q, struct ck_err *reterr);

/*
 * Shuts the queue down (without drain), stops the delaying thread and frees everything.
 * No other thread may use the queue any more. Returns NULL.
 */
struct ck_wq *ck_wq_free(struct ck_wq *q);

/*
 * Marks key as needing processing (Add). Returns 0 (also when the key was already
 * waiting), CK_ESHUTDOWN when the queue is shutting down (the key is dropped, as
 * client-go drops it), CK_EINVAL for a NULL key, or CK_ENOMEM.
 */
int ck_wq_add(struct ck_wq *q, const char *key);

/*
 * Hands out the next key, blocking until there is one (Get): returns 0 and sets *ret_key,
 * which the queue owns and keeps valid until ck_wq_done(q, *ret_key). After a shutdown,
 * keys still queued are handed out as usual; once none is left, returns CK_ESHUTDOWN and
 * leaves *ret_key untouched.
 */
int ck_wq_get(struct ck_wq *q, const char **ret_key);

/*
 * Non-blocking ck_wq_get(): CK_ENOENT when the queue is empty (and not shut down).
 */
int ck_wq_try_get(struct ck_wq *q, const char **ret_key);

/*
 * Marks key as processed (Done). If it was added again meanwhile, it goes back to the end
 * of the queue. Calling it for a key that is not being processed is a no-op.
 */
void ck_wq_done(struct ck_wq *q, const char *key);

/* Keys waiting in the queue now (not processing, not delayed). Informational only. */
size_t ck_wq_len(struct ck_wq *q);

/* True when key is waiting or being processed. */
bool ck_wq_contains(struct ck_wq *q, const char *key);

/*
 * Refuses new keys and wakes every ck_wq_get() (ShutDown); keys still queued are handed
 * out until none is left. Also stops delayed adds. May be called more than once.
 */
void ck_wq_shutdown(struct ck_wq *q);

/*
 * ck_wq_shutdown(), then waits until every key being processed is done
 * (ShutDownWithDrain). Workers must keep calling ck_wq_done(); a ck_wq_shutdown() from
 * another thread ends the wait early.
 */
void ck_wq_shutdown_drain(struct ck_wq *q);

bool ck_wq_is_shutting_down(struct ck_wq *q);

/*
 * Adds key once delay has passed (AddAfter); at once when delay <= 0. A key already
 * waiting for a later time is moved to the earlier one. Returns as ck_wq_add().
 */
int ck_wq_add_after(struct ck_wq *q, const char *key, int64_t delay);

/* Keys waiting for their delay to pass. */
size_t ck_wq_delayed_len(struct ck_wq *q);

/*
 * Adds key after the delay the rate limiter gives it (AddRateLimited). CK_EINVAL when the
 * queue has no rate limiter.
 */
int ck_wq_add_rate_limited(struct ck_wq *q, const char *key);

/* Stops the rate limiter tracking key (Forget); the caller still calls ck_wq_done(). */
void ck_wq_forget(struct ck_wq *q, const char *key);

/* How many times key was requeued with rate limiting since it was last forgotten. */
int ck_wq_num_requeues(struct ck_wq *q, const char *key);

/* The buckets of both histograms: client-go's prometheus.ExponentialBuckets(10e-9, 10, 10). */
#define CK_WQ_HIST_BUCKETS 10
extern const double ck_wq_hist_bounds[CK_WQ_HIST_BUCKETS];

struct ck_wq_histogram {
    uint64_t buckets[CK_WQ_HIST_BUCKETS]; /* observations <= bound i (not cumulative) */
    uint64_t count;                       /* every observation, the +Inf bucket */
    double sum;                           /* seconds */
};

/* A snapshot of client-go's workqueue metrics for one queue. */
struct ck_wq_metrics {
    uint64_t depth;                           /* workqueue_depth */
    uint64_t adds;                            /* workqueue_adds_total */
    uint64_t retries;                         /* workqueue_retries_total (delayed adds) */
    struct ck_wq_histogram queue_duration;    /* workqueue_queue_duration_seconds */
    struct ck_wq_histogram work_duration;     /* workqueue_work_duration_seconds */
    double unfinished_work_seconds;           /* workqueue_unfinished_work_seconds */
    double longest_running_processor_seconds; /* workqueue_longest_running_processor_seconds */
};

void ck_wq_metrics(struct ck_wq *q, struct ck_wq_metrics *ret_metrics);

/*
 * Renders the metrics in the Prometheus text format with client-go's names and a
 * name="..." label. Returns a string the caller frees with free(), or NULL when out of
 * memory.
 */
char *ck_wq_metrics_text(struct ck_wq *q);

/*
 * The same for n queues in one exposition: each metric family's HELP and TYPE once, then
 * one series per queue (what a /metrics endpoint serving several controllers needs).
 */
char *ck_wq_metrics_text_all(struct ck_wq *const *queues, size_t n);

/* ---- object keys (client-go tools/cache/store.go) ---------------------- */

/*
 * The cache key of an API object: "namespace/name", or "name" when metadata.namespace is
 * absent or empty (MetaNamespaceKeyFunc). Returns 0 and sets *ret_key (free() it), or
 * CK_EINVAL when obj has no metadata or no non-empty string metadata.name, or CK_ENOMEM.
 */
int ck_meta_namespace_key(const json_t *obj, char **ret_key, struct ck_err *reterr);

/*
 * Splits a key made by ck_meta_namespace_key() (SplitMetaNamespaceKey): "ns/name" gives
 * ns and name, "name" gives "" and name. Returns 0 and sets both (free() them), or
 * CK_EINVAL for more than one '/' or an empty name or namespace part, or CK_ENOMEM.
 */
int ck_split_meta_namespace_key(const char *key, char **ret_namespace, char **ret_name,
                                struct ck_err *reterr);

/*
 * The last state of an object deleted while a watch was down, known only from a relist
 * (client-go's DeletedFinalStateUnknown). Delete handlers get either an object or one of
 * these; obj is a reference the tombstone holds and may be stale.
 */
struct ck_deleted_final_state_unknown {
    char *key;
    const json_t *obj;
};

/* Returns a tombstone holding a copy of key and a reference to obj, or NULL (no memory). */
struct ck_deleted_final_state_unknown *ck_tombstone_new(const char *key, const json_t *obj);
struct ck_deleted_final_state_unknown *ck_tombstone_free(struct ck_deleted_final_state_unknown *t);

/*
 * The key of what a delete handler got (DeletionHandlingMetaNamespaceKeyFunc): the
 * tombstone's key when tombstone is not NULL, else ck_meta_namespace_key(obj).
 */
int ck_deletion_handling_key(const json_t *obj,
                             const struct ck_deleted_final_state_unknown *tombstone, char **ret_key,
                             struct ck_err *reterr);

/*
 * Drops a reference on a shared object: one the library handed out, or the caller's own
 * once it gave the object to a cache. Returns NULL. Use it instead of json_decref() for
 * shared objects: jansson reads the count with a plain load before its atomic update, a
 * data race (ThreadSanitizer reports it) when other threads hold references too.
 */
const json_t *ck_cached_unref(const json_t *obj);

/* Takes a reference on a shared object (atomically; see ck_cached_unref). Returns obj. */
const json_t *ck_cached_ref(const json_t *obj);

/* ---- indexer (client-go tools/cache/thread_safe_store.go, index.go) ---- */

/*
 * A thread-safe store of API objects keyed by ck_meta_namespace_key(), with named
 * indices. The indexer holds a reference on every object it stores (json_incref) and
 * never changes one; what it hands out are new references the caller drops with
 * ck_cached_unref() (or ck_obj_list_release()), never borrowed pointers, so an object
 * stays valid after a concurrent update or replace.
 *
 * Threading: a read-write lock; readers run in parallel. Index functions run under the
 * write lock and must not call back into the indexer.
 */
struct ck_indexer;

/* The values an index function emits for one object. */
struct ck_index_values;

/* Adds value (copied) to out. Returns 0 or CK_ENOMEM. */
int ck_index_values_add(struct ck_index_values *out, const char *value);

/*
 * An index function (IndexFunc): emits zero or more values for obj with
 * ck_index_values_add(). Returns 0, or a negative code that makes the add fail.
 */
typedef int (*ck_index_func)(const json_t *obj, struct ck_index_values *out, void *arg);

/* Name of the by-namespace index (cache.NamespaceIndex): metadata.namespace. */
#define CK_INDEX_NAMESPACE "namespace"
int ck_index_by_namespace(const json_t *obj, struct ck_index_values *out, void *arg);

/* Name of the by-controller index: the uid of the ownerReference with controller: true. */
#define CK_INDEX_CONTROLLER_UID "controller-uid"
int ck_index_by_controller_uid(const json_t *obj, struct ck_index_values *out, void *arg);

/* Creates an empty indexer with no index. Returns 0 and sets *ret_ix, or CK_ENOMEM. */
int ck_indexer_new(struct ck_indexer **ret_ix, struct ck_err *reterr);
/*
 * Makes an empty indexer keep each object as its compact JSON text rather than a jansson
 * tree (about an eighth of the memory): every read decodes a tree of its own, every update
 * and delete decodes the stored object again. No effect once something is stored.
 */
void ck_indexer_set_compact(struct ck_indexer *ix);
struct ck_indexer *ck_indexer_free(struct ck_indexer *ix);

/*
 * Adds the index called name (copied), computing it for the objects already stored.
 * Adding the same index again (same name, function and arg) does nothing; CK_EEXIST
 * when another index of that name exists, CK_EINVAL for a NULL argument, the index
 * function's error, or CK_ENOMEM; the indexer is unchanged on failure.
 */
int ck_indexer_add_index(struct ck_indexer *ix, const char *name, ck_index_func fn, void *arg,
                         struct ck_err *reterr);

/*
 * Stores obj under its key, replacing what was there (Add and Update). The indexer takes
 * a reference; the caller keeps its own and must not change obj from now on. Returns 0,
 * CK_EINVAL when obj has no key, an index function's error or CK_ENOMEM (the indexer is
 * unchanged on failure).
 */
int ck_indexer_add(struct ck_indexer *ix, const json_t *obj, struct ck_err *reterr);

/* Removes the object stored under obj's key (Delete). CK_ENOENT when there is none. */
int ck_indexer_delete(struct ck_indexer *ix, const json_t *obj, struct ck_err *reterr);

/* Removes the object stored under key. CK_ENOENT when there is none. */
int ck_indexer_delete_key(struct ck_indexer *ix, const char *key, struct ck_err *reterr);

/*
 * Replaces the whole content with the n objects (Replace, used by a relist), recomputing
 * every index. Atomic: readers see the old content or the new, never a mix, and on error
 * (a keyless object, an index error, CK_ENOMEM) nothing changes. Later duplicates of a
 * key win, as in client-go.
 */
int ck_indexer_replace(struct ck_indexer *ix, const json_t *const *objs, size_t n,
                       struct ck_err *reterr);

/* Returns 0 and a new reference in *ret_obj, or CK_ENOENT (GetByKey). */
int ck_indexer_get_by_key(struct ck_indexer *ix, const char *key, const json_t **ret_obj);

/* Objects the caller holds a reference on each of; release with ck_obj_list_release(). */
struct ck_obj_list {
    const json_t **items;
    size_t n;
};
void ck_obj_list_release(struct ck_obj_list *list);

/* Keys the caller owns; release with ck_key_list_release(). */
struct ck_key_list {
    char **keys;
    size_t n;
};
void ck_key_list_release(struct ck_key_list *list);

/* Every stored object, in no particular order (List). 0 or CK_ENOMEM. */
int ck_indexer_list(struct ck_indexer *ix, struct ck_obj_list *ret_list);

/* Every stored key, sorted (ListKeys). 0 or CK_ENOMEM. */
int ck_indexer_list_keys(struct ck_indexer *ix, struct ck_key_list *ret_list);

/*
 * The objects whose index `index` has value `value` (ByIndex), in key order. CK_ENOENT
 * when there is no such index (client-go: "Index with name %s does not exist").
 */
int ck_indexer_by_index(struct ck_indexer *ix, const char *index, const char *value,
                        struct ck_obj_list *ret_list, struct ck_err *reterr);

/* The keys of those objects, sorted (IndexKeys). */
int ck_indexer_index_keys(struct ck_indexer *ix, const char *index, const char *value,
                          struct ck_key_list *ret_list, struct ck_err *reterr);

/* The values index `index` has now, sorted (ListIndexFuncValues). */
int ck_indexer_index_values(struct ck_indexer *ix, const char *index, struct ck_key_list *ret_list,
                            struct ck_err *reterr);

/* Number of stored objects. */
size_t ck_indexer_len(struct ck_indexer *ix);

/* ---- events (client-go tools/record) ------------------------------------ */

/*
 * What a controller tells users it did: core/v1 Events about an object. Three parts, as in
 * client-go:
 *
 * - the sink (EventSink): where events go, a create and a strategic-merge patch of the
 *   events resource. ck_event_sink_init_rest() writes through a REST client; tests and
 *   controllers give their own (libckube-controllers has one over its client interface).
 * - the correlator (EventCorrelator): turns a new event into what to write: the event
 *   itself, a count bump of an earlier one (a patch of count, lastTimestamp and message),
 *   an aggregate "(combined from similar events): ..." event once more than a few
 *   similar events differ only by message, or nothing when the source has spent its
 *   token bucket for the object (the spam filter).
 * - the recorder (EventRecorder + EventBroadcaster): ck_event_recordf() builds the event
 *   on the caller's thread and queues it; one sender thread correlates and writes, so
 *   recording never blocks. A full queue drops the event; so does a write that still
 *   fails after the last retry. Both are counted.
 */

#define CK_EVENT_NORMAL  "Normal"
#define CK_EVENT_WARNING "Warning"

/*
 * Where events are written. Each call returns 0 and, when ret_event is not NULL, a new
 * reference to what the server stored; or a negative code with words in *reterr. An error
 * with reterr->http_status set is the server's answer (not retried, as client-go does not
 * retry a Status error); one without is a transport failure (retried).
 */
struct ck_event_sink_ops {
    /* POST event to the events of namespace. */
    int (*create)(void *data, const char *namespace, const json_t *event, json_t **ret_event,
                  struct ck_err *reterr);
    /* PATCH (strategic merge) the event namespace/name; CK_ENOENT when it is gone. */
    int (*patch)(void *data, const char *namespace, const char *name, const json_t *patch,
                 json_t **ret_event, struct ck_err *reterr);
};

/* A sink: its operations and their state. Caller-owned; copy it freely. */
struct ck_event_sink {
    const struct ck_event_sink_ops *ops;
    void *data;
};

struct ck_rest;

/* The sink writing v1 events through rest (borrowed: it must outlive every user). */
void ck_event_sink_init_rest(struct ck_event_sink *s, struct ck_rest *rest);

/* client-go's defaults (events_cache.go, event.go). */
#define CK_EVENT_CACHE_SIZE         4096 /* maxLruCacheEntries */
#define CK_EVENT_AGGREGATE_MAX      10   /* defaultAggregateMaxEvents */
#define CK_EVENT_AGGREGATE_INTERVAL (600 * CK_SEC)
#define CK_EVENT_SPAM_BURST         25
#define CK_EVENT_SPAM_QPS           (1.0 / 300.0) /* one token every 5 minutes */
#define CK_EVENT_QUEUE_LEN          1000          /* maxQueuedEvents */
#define CK_EVENT_MAX_TRIES          12            /* maxTriesPerEvent */
#define CK_EVENT_RETRY_INTERVAL     (10 * CK_SEC) /* defaultSleepDuration */
#define CK_EVENT_AGGREGATE_PREFIX   "(combined from similar events): "

/* Zero fields take the defaults above; clock NULL is the real clock. */
struct ck_event_correlator_options {
    struct ck_clock *clock; /* borrowed; drives aggregation windows, buckets, timestamps */
    size_t cache_size;      /* entries in each of the three LRU caches */
    int aggregate_max;      /* similar events (differing by message) before combining */
    int64_t aggregate_interval;
    int spam_burst; /* events a source may send about one object at once */
    double spam_qps;
};

struct ck_event_correlator;

/* Returns 0 and sets *ret, or CK_ENOMEM. opts may be NULL. */
int ck_event_correlator_new(const struct ck_event_correlator_options *opts,
                            struct ck_event_correlator **ret, struct ck_err *reterr);
struct ck_event_correlator *ck_event_correlator_free(struct ck_event_correlator *c);

/* What to write for one event. Owned by the caller: ck_event_correlation_release(). */
struct ck_event_correlation {
    bool skip;     /* the spam filter refused it: write nothing */
    json_t *event; /* the event to create (or, with a patch, the one it bumps) */
    json_t *patch; /* NULL: create event; else patch event's name with this */
};
void ck_event_correlation_release(struct ck_event_correlation *r);

/*
 * EventCorrelate: aggregates event (borrowed) with the similar events seen in the last
 * interval, turns a repeat of an event already written into a count bump, and asks the
 * spam filter. Returns 0 and fills *ret, or CK_ENOMEM / CK_EINVAL (no event).
 */
int ck_event_correlate(struct ck_event_correlator *c, const json_t *event,
                       struct ck_event_correlation *ret);

/* UpdateState: remembers what the server stored (its name, resourceVersion, count). */
void ck_event_correlator_update_state(struct ck_event_correlator *c, const json_t *stored);

/* Wall-clock nanoseconds as the correlator sees them (its clock plus the offset at start). */
int64_t ck_event_correlator_wall_now(struct ck_event_correlator *c);

struct ck_event_recorder_options {
    const char *component; /* source.component and reportingComponent; copied */
    const char *host;      /* source.host and reportingInstance; copied; NULL for none */
    size_t queue_len;      /* events waiting for the sender; 0: CK_EVENT_QUEUE_LEN */
    int max_tries;         /* writes of one event before it is dropped; 0: 12 */
    int64_t retry_interval;
    /*
     * Handle each event on the calling thread, with one try, instead of queueing it: for
     * unit tests of controllers, which assert the events a sync recorded.
     */
    bool synchronous;
    struct ck_event_correlator_options correlator; /* its clock is the recorder's */
};

struct ck_event_recorder;

/*
 * Creates a recorder writing to sink (copied; its data must outlive the recorder) and,
 * unless synchronous, starts its sender thread. Returns 0, CK_EINVAL (no component) or
 * CK_ENOMEM.
 */
int ck_event_recorder_new(const struct ck_event_recorder_options *opts,
                          const struct ck_event_sink *sink, struct ck_event_recorder **ret,
                          struct ck_err *reterr);

/*
 * Stops the sender (a write in flight finishes; a retry wait is cut short) and frees the
 * recorder. Events still queued are dropped without being counted. NULL is a no-op.
 */
struct ck_event_recorder *ck_event_recorder_free(struct ck_event_recorder *r);

/*
 * Records an event about obj (borrowed; its apiVersion, kind and metadata name the
 * involved object): type CK_EVENT_NORMAL or CK_EVENT_WARNING (another is logged and
 * dropped), reason in UpperCamelCase, a printf message. Never blocks on the server and
 * never fails: problems are counted and logged. r NULL is a no-op.
 */
void ck_event_recordf(struct ck_event_recorder *r, const json_t *obj, const char *type,
                      const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Waits until every event queued so far has been written, skipped or dropped, or until
 * timeout passes on the recorder's clock. Returns 0 or CK_ETIMEDOUT.
 */
int ck_event_recorder_flush(struct ck_event_recorder *r, int64_t timeout);

struct ck_event_recorder_stats {
    uint64_t recorded;     /* events handed to ck_event_recordf() with a valid type */
    uint64_t created;      /* new events written */
    uint64_t patched;      /* count bumps written */
    uint64_t skipped;      /* refused by the spam filter */
    uint64_t retries;      /* writes tried again after a transport failure */
    uint64_t dropped;      /* lost: queue full, or still failing after the last try */
    uint64_t failed;       /* refused by the server (not retried) */
    uint64_t queue_length; /* waiting now */
};
void ck_event_recorder_stats(struct ck_event_recorder *r, struct ck_event_recorder_stats *ret);

/*
 * The stats in the Prometheus text format, labelled component="...": ckube_events_*_total
 * counters and the ckube_events_queue_length gauge. Caller frees; NULL when out of memory.
 */
char *ck_event_recorder_metrics_text(struct ck_event_recorder *r);

/* ---- leader election (tools/leaderelection) ------------------------------- */

/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's LeaderElector: every
 * candidate tries to acquire the Lease every retry period (with jitter); the holder renews
 * it every retry period and stops leading when it could not renew for renew_deadline,
 * which is shorter than lease_duration, so a leader that cannot renew stops acting before
 * another can take its lease. A Lease is taken over once its record has not changed for
 * lease_duration, measured on the candidate's own clock from when it saw the change (the
 * Lease's times are informative, clocks need not agree).
 */

/* client-go's and kube-controller-manager's defaults */
#define CK_LE_LEASE_DURATION (15 * CK_SEC)
#define CK_LE_RENEW_DEADLINE (10 * CK_SEC)
#define CK_LE_RETRY_PERIOD   (2 * CK_SEC)

/* The Lease the candidates share: get, create and conditional update of one object. */
struct ck_lease_lock_ops {
    /* GET namespace/name into *ret_lease; CK_ENOENT when there is none. */
    int (*get)(void *data, const char *namespace, const char *name, json_t **ret_lease,
               struct ck_err *reterr);
    /* POST lease; CK_EEXIST when another candidate made it first. */
    int (*create)(void *data, const json_t *lease, json_t **ret_lease, struct ck_err *reterr);
    /* PUT lease, conditional on its resourceVersion: CK_ECONFLICT when it moved on. */
    int (*update)(void *data, const json_t *lease, json_t **ret_lease, struct ck_err *reterr);
};

struct ck_lease_lock {
    const struct ck_lease_lock_ops *ops;
    void *data;
    const char *namespace; /* "kube-system" */
    const char *name;      /* "kube-controller-manager" */
};

/* The lock on the Lease namespace/name through rest (all borrowed: they must outlive it). */
void ck_lease_lock_init_rest(struct ck_lease_lock *lock, struct ck_rest *rest,
                             const char *namespace, const char *name);

struct ck_leader_election_config {
    struct ck_lease_lock lock; /* copied; what it points to is borrowed */
    const char *identity;      /* this candidate (copied): "host_<random>" */
    /* 0: the defaults above. lease_duration > renew_deadline > 1.2 * retry_period > 0 */
    int64_t lease_duration, renew_deadline, retry_period;
    struct ck_clock *clock; /* borrowed; NULL: the real clock */
    /*
     * Called on the elector's thread, so they must return promptly (start or stop work
     * on other threads): on_started_leading once the lease is held; on_stopped_leading
     * when the elector ends, by losing the lease or by being freed (as client-go's
     * OnStoppedLeading, also when it never led); on_new_leader (may be NULL) when the
     * observed holder changes, with the new holder's identity.
     */
    void (*on_started_leading)(void *arg);
    void (*on_stopped_leading)(void *arg);
    void (*on_new_leader)(void *arg, const char *identity);
    void *arg;
    /* When freed while leading, give the lease up (holder "", 1 s) so another takes it at once. */
    bool release_on_cancel;
};

struct ck_leader_elector;

/*
 * Checks config as client-go's NewLeaderElector ("leaseDuration must be greater than
 * renewDeadline", ...; CK_EINVAL) and starts electing on a thread of its own. Once it has
 * lost the lease it does not try again (as client-go's Run returns): start a new elector.
 */
int ck_leader_elector_start(const struct ck_leader_election_config *config,
                            struct ck_leader_elector **ret_le, struct ck_err *reterr);

/* Whether this candidate holds the lease as last observed. */
bool ck_leader_elector_is_leader(struct ck_leader_elector *le);

/* The holder last observed, copied into buf (cut to size); "" when none. Returns buf. */
const char *ck_leader_elector_leader(struct ck_leader_elector *le, char *buf, size_t size);

/*
 * Stops the elector (releasing the lease when leading and release_on_cancel), waits for
 * its thread, which calls on_stopped_leading, and frees it. NULL is a no-op; returns NULL.
 */
struct ck_leader_elector *ck_leader_elector_free(struct ck_leader_elector *le);

#endif /* CKUBE_CLIENT_H */
