/*
 * ckube/informer.h - reflectors and shared informers (client-go tools/cache reflector.go,
 * shared_informer.go and informers/factory.go).
 *
 * An informer keeps an indexed, in-memory copy of one resource (an indexer, see
 * client.h) in step with the API server and tells handlers what changed. Its reflector
 * thread lists the resource in pages, then watches from the list's resourceVersion with
 * bookmarks; when a watch ends it reconnects from the last version it saw; when that
 * version is gone (410) it lists again and delivers only the difference: adds, updates,
 * and deletions of objects that vanished meanwhile, as "deleted final state unknown"
 * tombstones. While the server is unreachable it retries with exponential backoff and
 * jitter (client-go's 800 ms doubling to 30 s, each delay stretched by up to 100%).
 *
 * The reflector reads through a struct ck_list_watch (client-go's ListerWatcher), not
 * the REST client itself: informers made from a client and a resource get one over
 * ck_rest; a test or an embedder may pass its own.
 *
 * The factory shares one informer per resource among every controller of a process;
 * it holds as many as it is asked for.
 *
 * Handlers run on the informer's thread (its reflector, or its resync timer), one call
 * at a time per informer, after the cache already holds the change: they must be quick
 * (put a key on a work queue) and must not change the objects they are given, which are
 * borrowed for the call. client-go runs each handler on its own goroutine with an
 * unbounded buffer; we call them in line, which keeps every handler in event order and
 * needs no buffer, at the price that a slow handler delays the others.
 */
#ifndef CKUBE_INFORMER_H
#define CKUBE_INFORMER_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ckube/client.h"
#include "ckube/rest.h"

/* client-go's ResourceEventHandlerFuncs. Any function may be NULL. */
struct ck_event_handler {
    /* A new object; is_in_initial_list when it came with the first list. */
    void (*on_add)(const json_t *obj, bool is_in_initial_list, void *arg);
    /* A change, or a periodic resync (then old_obj and new_obj are the same object). */
    void (*on_update)(const json_t *old_obj, const json_t *new_obj, void *arg);
    /*
     * A deletion: obj is the last state, and tombstone is NULL when the watch saw the
     * delete, or set when only a relist noticed it (DeletedFinalStateUnknown; then obj
     * is tombstone->obj and may be stale).
     */
    void (*on_delete)(const json_t *obj, const struct ck_deleted_final_state_unknown *tombstone,
                      void *arg);
    void *arg;
};

/* ---- where a reflector gets its objects (client-go cache.ListerWatcher) ---- */

/*
 * A list/watch source: the two calls a reflector makes, and the context they get. The
 * reflector depends on this and nothing else, so it can run over the REST client
 * (ck_rest_list_watch_init), over a fake in a test, or over anything that lists and
 * watches Kubernetes-shaped objects. Both functions are called from the reflector's
 * thread only, one at a time.
 */
struct ck_list_watch {
    /*
     * One page of the list. opts carries label_selector, limit and continue_token (never
     * a resourceVersion: the reflector lists the newest state). Returns 0 and a List
     * object in *ret_list, a new reference the caller owns ({"metadata":
     * {"resourceVersion", "continue"}, "items": [...]}), or a negative CK_E* code with
     * *reterr filled.
     */
    int (*list)(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                struct ck_err *reterr);
    /*
     * A watch from opts->resource_version (with label_selector, allow_watch_bookmarks,
     * timeout_seconds), delivering events to fn in order on the calling thread, with the
     * contract of ck_rest_watch(): returns 0 when the stream ends, what fn returned when
     * it ended the stream, CK_ESHUTDOWN once *stop is true (it must notice within about
     * a second), CK_ECOMPACTED when the version is gone (an HTTP 410; a 410 may instead
     * arrive as an ERROR event carrying a Status with code 410), other codes on failure.
     */
    int (*watch)(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                 const atomic_bool *stop, struct ck_err *reterr);
    void *ctx;
};

/*
 * The list/watch of one resource through the REST client (client-go's
 * NewListWatchFromClient). The caller allocates it; everything it points to is
 * borrowed and must outlive its use.
 */
struct ck_rest_list_watch {
    struct ck_list_watch lw; /* what to hand to an informer */
    struct ck_rest *client;
    const struct ck_resource *res;
    const char *namespace; /* NULL or "": all namespaces */
};

/* Fills rlw so that rlw->lw lists and watches res in namespace through client. */
void ck_rest_list_watch_init(struct ck_rest_list_watch *rlw, struct ck_rest *client,
                             const struct ck_resource *res, const char *namespace);

/* ---- informers ---------------------------------------------------------------- */

struct ck_informer;

/*
 * client-go's TransformFunc: changes an object in place after it is decoded and before
 * it enters the cache or reaches a handler. It runs on the informer's thread and must
 * keep the namespace, name and resourceVersion.
 */
typedef void (*ck_transform_func)(json_t *obj, void *arg);

/*
 * Drops metadata.managedFields, the transform kube-controller-manager and kube-scheduler
 * set on their informers: no controller reads them, they are often half of an object,
 * and an update that leaves them out keeps the stored ones (arg unused).
 */
void ck_transform_strip_managed_fields(json_t *obj, void *arg);

struct ck_informer_options {
    /*
     * Where the objects come from: list_watch when set (borrowed; must outlive the
     * informer; client and namespace are then unused), else res in namespace through
     * client (the convenience every controller uses).
     */
    const struct ck_list_watch *list_watch;
    struct ck_rest *client;        /* borrowed; must outlive the informer */
    const struct ck_resource *res; /* borrowed; names the informer, required */
    const char *namespace;         /* NULL or "": all namespaces */
    const char *label_selector;    /* NULL: everything */
    int64_t page_size;             /* list page size; 0: 500, as client-go */
    int64_t resync;                /* default resync period of handlers; 0: none */
    struct ck_clock *clock;        /* borrowed; NULL = real */
    ck_transform_func transform;   /* NULL: objects are cached as decoded */
    void *transform_arg;
    bool compact; /* cache objects as their text, decoded on each read (ck_indexer_set_compact) */
};

/*
 * Creates a stopped informer with an indexer that has the namespace index. Returns 0 and
 * sets *ret_inf, or CK_EINVAL / CK_ENOMEM.
 */
int ck_informer_new(const struct ck_informer_options *opts, struct ck_informer **ret_inf,
                    struct ck_err *reterr);

/* Stops the informer (if started), joins its threads and frees it and its cache. */
struct ck_informer *ck_informer_free(struct ck_informer *inf);

/*
 * Adds a handler (copied) with its own resync period (0: the informer's). On a started
 * informer (client-go's AddEventHandler on a running one) the handler is first called,
 * on the calling thread, with on_add(obj, true) for every cached object, then sees every
 * change after; such a late handler cannot resync (CK_EINVAL when its period, or the
 * informer's, is set).
 */
int ck_informer_add_handler(struct ck_informer *inf, const struct ck_event_handler *h,
                            int64_t resync, struct ck_err *reterr);

/*
 * Removes the handler with h's functions and arg (RemoveEventHandler); once it returns,
 * the handler is never called again. A handler not added is a no-op.
 */
void ck_informer_remove_handler(struct ck_informer *inf, const struct ck_event_handler *h);

/* Sets the informer's transform (NULL: none); before start only, else CK_EINVAL. */
int ck_informer_set_transform(struct ck_informer *inf, ck_transform_func fn, void *arg,
                              struct ck_err *reterr);

/*
 * Adds an index to the cache (ck_indexer_add_index), built over what the cache holds when
 * the informer already runs (client-go's AddIndexers on a started informer).
 */
int ck_informer_add_index(struct ck_informer *inf, const char *name, ck_index_func fn, void *arg,
                          struct ck_err *reterr);

/* Starts the reflector (and resync) threads. Idempotent. */
int ck_informer_start(struct ck_informer *inf, struct ck_err *reterr);

/* Asks the threads to stop and joins them; the cache stays readable. Idempotent. */
void ck_informer_stop(struct ck_informer *inf);

/*
 * Asks the threads to stop without waiting (its watch ends as soon as it notices);
 * ck_informer_stop() or ck_informer_free() still joins them. Stopping many informers,
 * ask each first, then stop each: they wind down together instead of one by one.
 */
void ck_informer_request_stop(struct ck_informer *inf);

/* True once the first list is in the cache and its handlers were called (HasSynced). */
bool ck_informer_has_synced(struct ck_informer *inf);

/* Waits until has_synced or the (real or fake) clock reaches deadline. */
bool ck_informer_wait_for_sync(struct ck_informer *inf, int64_t deadline);

/* The cache (borrowed; lives as long as the informer). Read it, never write it. */
struct ck_indexer *ck_informer_indexer(struct ck_informer *inf);

/* The resource the informer serves. */
const struct ck_resource *ck_informer_resource(const struct ck_informer *inf);

struct ck_informer_stats {
    uint64_t lists;        /* complete lists (the first and every relist) */
    uint64_t watches;      /* watch requests made */
    uint64_t watch_events; /* ADDED/MODIFIED/DELETED events applied */
    uint64_t expired;      /* 410s that forced a relist */
    uint64_t failures;     /* list or watch attempts that failed and backed off */
    char last_sync_resource_version[32];
};
void ck_informer_stats(struct ck_informer *inf, struct ck_informer_stats *ret_stats);

/*
 * The census of the process's caches: one row per group/resource that any live informer
 * caches, with how many informers cache it and how many objects they hold together. One
 * cache per resource in the process (one factory shared by every component) shows as
 * informers 1 and objects equal to the server's count; an informer with a selector (a
 * node's own pods) adds its few. Returns 0 and a malloc'ed array (free it; NULL when no
 * informer lives), or CK_ENOMEM.
 */
struct ck_informer_census_row {
    char group[254]; /* a DNS subdomain */
    char resource[64];
    size_t informers;
    size_t objects;
};
int ck_informer_census(struct ck_informer_census_row **ret_rows, size_t *ret_n);

/* ---- metadata-only informers (client-go metadatainformer) --------------------- */

/*
 * An informer whose cache holds PartialObjectMetadata only ({apiVersion, kind,
 * metadata}): it lists and watches res through the metadata client (rest.h), which asks
 * the server for that form and strips full objects when the server answers them. The
 * resource is copied; client is borrowed and must outlive it. Returns 0 or CK_ENOMEM /
 * CK_EINVAL.
 */
struct ck_metadata_informer;

int ck_metadata_informer_new(struct ck_rest *client, const struct ck_resource *res,
                             const char *namespace, int64_t resync, struct ck_clock *clock,
                             struct ck_metadata_informer **ret_mi, struct ck_err *reterr);

/* The informer itself (owned by mi): add handlers, start, stop, read its indexer. */
struct ck_informer *ck_metadata_informer_informer(struct ck_metadata_informer *mi);

/* Stops and frees the informer and its cache. NULL is a no-op. */
struct ck_metadata_informer *ck_metadata_informer_free(struct ck_metadata_informer *mi);

/* ---- the shared informer factory (client-go informers.SharedInformerFactory) ---- */

struct ck_informer_factory;

/* namespace NULL: all namespaces. resync: the informers' default resync period. */
int ck_informer_factory_new(struct ck_rest *client, const char *namespace, int64_t resync,
                            struct ck_clock *clock, struct ck_informer_factory **ret_f,
                            struct ck_err *reterr);

/*
 * Sets the transform of every informer the factory makes after this call (client-go's
 * WithTransform option); set it right after ck_informer_factory_new.
 */
void ck_informer_factory_set_transform(struct ck_informer_factory *f, ck_transform_func fn,
                                       void *arg);

/*
 * Makes every informer the factory makes after this call cache its objects compact
 * (ck_informer_options.compact): one cache shared by a whole process's components holds
 * every object at about an eighth of a tree's memory, for a decode on each read.
 */
void ck_informer_factory_set_compact(struct ck_informer_factory *f, bool compact);

/*
 * What makes the list/watch of each informer the factory creates, instead of its client:
 * make fills *ret_lw for res in namespace (NULL: all namespaces; both outlive the
 * informer), of PartialObjectMetadata with metadata (for
 * ck_informer_factory_metadata_informer), and returns 0 or a negative code; release frees what make
 * made, once the informer is gone (NULL: nothing to free). `ckube server` lists and watches this
 * way straight from its API server (ck_apiserver_list_watch_init), while its writes still go
 * through the client.
 */
struct ck_list_watch_maker {
    int (*make)(void *arg, const struct ck_resource *res, const char *namespace, bool metadata,
                struct ck_list_watch *ret_lw, struct ck_err *reterr);
    void (*release)(void *arg, struct ck_list_watch *lw);
    void *arg;
};

/*
 * Sets the maker of the factory's informers made after this call (copied; NULL: back to
 * the client); set it right after ck_informer_factory_new.
 */
void ck_informer_factory_set_list_watch(struct ck_informer_factory *f,
                                        const struct ck_list_watch_maker *maker);

/*
 * A metadata informer of res (not one of the factory's: the caller owns and frees it,
 * and it may stop it while the factory runs) in the factory's namespace, reading
 * through the factory's maker when one is set, else through its client as
 * ck_metadata_informer_new() does. Returns 0, or the maker's error / CK_ENOMEM.
 */
int ck_informer_factory_metadata_informer(struct ck_informer_factory *f,
                                          const struct ck_resource *res, int64_t resync,
                                          struct ck_clock *clock,
                                          struct ck_metadata_informer **ret_mi,
                                          struct ck_err *reterr);

/* Stops and frees every informer of the factory. */
struct ck_informer_factory *ck_informer_factory_free(struct ck_informer_factory *f);

/*
 * The one informer for res (created on first use; the same pointer every time after).
 * Owned by the factory. NULL when out of memory.
 */
struct ck_informer *ck_informer_factory_for(struct ck_informer_factory *f,
                                            const struct ck_resource *res);

/* The informer the factory already has for group/resource, or NULL: never creates one. */
struct ck_informer *ck_informer_factory_lookup(struct ck_informer_factory *f, const char *group,
                                               const char *resource);

/* Starts every informer not started yet (Start). */
int ck_informer_factory_start(struct ck_informer_factory *f, struct ck_err *reterr);

/* Waits until every started informer has synced, or deadline (WaitForCacheSync). */
bool ck_informer_factory_wait_for_sync(struct ck_informer_factory *f, int64_t deadline);

/* Stops every informer (joins their threads); caches stay readable. */
void ck_informer_factory_stop(struct ck_informer_factory *f);

/*
 * Handlers with an owner, for components that come and go on one long-lived factory (the
 * controller managers of `ckube server`, started and stopped with their Leases, on the
 * process's one set of caches): every handler the calling thread adds to f's informers
 * between ck_informer_factory_own_begin(f, owner) and ck_informer_factory_own_end(f)
 * belongs to owner, and ck_informer_factory_release(f, owner) removes them all; once it
 * returns none of them is called again. Handlers other threads add meanwhile are not
 * owner's. The informers themselves keep running.
 */
void ck_informer_factory_own_begin(struct ck_informer_factory *f, const void *owner);
void ck_informer_factory_own_end(struct ck_informer_factory *f);
void ck_informer_factory_release(struct ck_informer_factory *f, const void *owner);

#endif /* CKUBE_INFORMER_H */
