/*
 * informer.c - shared index informers and their factory (client-go tools/cache
 * shared_informer.go and informers/factory.go).
 *
 * An informer is a cache (the indexer), a reflector thread that feeds it (reflector.c),
 * the handlers it calls, and an optional resync thread. The reflector hands over either
 * one watch event (ck__informer_apply) or a complete list (ck__informer_replace); both
 * change the cache first and then call the handlers, so a handler that reads the cache
 * sees at least the state it is told about.
 *
 * The difference a relist delivers (client-go gets it from DeltaFIFO.Replace and the
 * informer's OnUpdate with the old object): keys new to the cache are adds; keys whose
 * resourceVersion changed are updates (old, new); keys that vanished are deletes with a
 * DeletedFinalStateUnknown tombstone carrying the last state we had. Unchanged objects
 * are not delivered again (resync does that, on its own schedule).
 *
 * Resync (client-go's resyncCheckPeriod): each handler with a period gets
 * on_update(obj, obj) for every cached object once per period, from the resync thread.
 *
 * Threading: `dispatch` serializes every change of the cache with its handler calls
 * (reflector thread, resync thread), so handlers see events in order and one at a time.
 * The cache itself is read by any thread. `synced` is published under `lock`, while
 * `dispatch` is held; the lock order is dispatch, then lock.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/informer.h"
#include "internal.h"
#include "reflector.h"

#define MAX_HANDLERS 32

struct handler {
    struct ck_event_handler h;
    const void *owner; /* ck_informer_factory_own_begin's, or NULL */
    int64_t resync;    /* 0: none */
    int64_t next_resync;
};

struct ck_informer {
    const struct ck_resource *res;
    const struct ck_list_watch *lw; /* opts->list_watch, or &rest_lw */
    struct ck_rest_list_watch rest_lw;
    char *namespace;
    char *label_selector;
    int64_t page_size;
    int64_t resync;
    struct ck_clock *clock;
    ck_transform_func transform;
    void *transform_arg;
    struct ck_indexer *indexer;

    struct handler handlers[MAX_HANDLERS];
    size_t nhandlers;

    pthread_mutex_t dispatch;

    pthread_mutex_t lock; /* synced, stop and the resync thread's sleep */
    pthread_cond_t changed;
    bool synced;
    bool started;
    bool stopping;
    bool resync_running;
    pthread_t resync_thread;
    struct ck__reflector reflector;

    struct ck_informer_factory *factory; /* the factory that made it, or NULL */
    struct ck_list_watch *made_lw;       /* the factory's maker made lw: released with it */
    struct ck_list_watch_maker maker;
    struct ck_informer *census_prev, *census_next; /* every live informer, for the census */
    bool in_census;
};

/* ---- handler owners (ck_informer_factory_own_begin) -------------------------------- */

/* The owner the calling thread adds handlers for on f's informers, while it has one. */
static _Thread_local struct {
    const struct ck_informer_factory *factory;
    const void *owner;
} own_scope;

static const void *owner_of(const struct ck_informer_factory *f)
{
    return f && own_scope.factory == f ? own_scope.owner : NULL;
}

/* ---- the census: every informer alive in the process ----------------------------- */

static pthread_mutex_t census_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ck_informer *census_head;

static void census_enter(struct ck_informer *inf)
{
    pthread_mutex_lock(&census_lock);
    inf->census_next = census_head;
    if (census_head)
        census_head->census_prev = inf;
    census_head = inf;
    pthread_mutex_unlock(&census_lock);
}

static void census_leave(struct ck_informer *inf)
{
    pthread_mutex_lock(&census_lock);
    if (inf->census_prev)
        inf->census_prev->census_next = inf->census_next;
    else if (census_head == inf)
        census_head = inf->census_next;
    if (inf->census_next)
        inf->census_next->census_prev = inf->census_prev;
    pthread_mutex_unlock(&census_lock);
}

int ck_informer_census(struct ck_informer_census_row **ret_rows, size_t *ret_n)
{
    struct ck_informer_census_row *rows = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    pthread_mutex_lock(&census_lock);
    for (struct ck_informer *inf = census_head; inf && r == 0; inf = inf->census_next) {
        size_t i = 0;
        while (i < n && !(strcmp(rows[i].group, inf->res->group) == 0 &&
                          strcmp(rows[i].resource, inf->res->resource) == 0))
            i++;
        if (i == n && n == cap) {
            size_t grown = cap ? cap * 2 : 16;
            struct ck_informer_census_row *more = realloc(rows, grown * sizeof(*rows));
            if (!more) {
                r = CK_ENOMEM;
                break;
            }
            rows = more;
            cap = grown;
        }
        if (i == n) {
            rows[n] = (struct ck_informer_census_row){0};
            snprintf(rows[n].group, sizeof(rows[n].group), "%s", inf->res->group);
            snprintf(rows[n].resource, sizeof(rows[n].resource), "%s", inf->res->resource);
            n++;
        }
        rows[i].informers++;
        rows[i].objects += ck_indexer_len(inf->indexer);
    }
    pthread_mutex_unlock(&census_lock);
    if (r < 0) {
        free(rows);
        return r;
    }
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}

static char *dup_opt(const char *s, bool *oom)
{
    if (!s || !*s)
        return NULL;
    char *d = ck__strdup(s);
    *oom = *oom || !d;
    return d;
}

int ck_informer_new(const struct ck_informer_options *opts, struct ck_informer **ret_inf,
                    struct ck_err *reterr)
{
    if (!opts || !opts->res || (!opts->client && !opts->list_watch))
        return ck_err_set(reterr, CK_EINVAL,
                          "an informer needs a resource, and a client or a list/watch");
    struct ck_informer *inf = ck__calloc(1, sizeof(*inf));
    if (!inf)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    bool oom = false;
    inf->res = opts->res;
    inf->namespace = dup_opt(opts->namespace, &oom);
    ck_rest_list_watch_init(&inf->rest_lw, opts->client, opts->res, inf->namespace);
    inf->lw = opts->list_watch ? opts->list_watch : &inf->rest_lw.lw;
    inf->label_selector = dup_opt(opts->label_selector, &oom);
    inf->page_size = opts->page_size > 0 ? opts->page_size : 500;
    inf->resync = opts->resync > 0 ? opts->resync : 0;
    inf->clock = opts->clock;
    inf->transform = opts->transform;
    inf->transform_arg = opts->transform_arg;
    pthread_mutex_init(&inf->dispatch, NULL);
    pthread_mutex_init(&inf->lock, NULL);
    pthread_cond_init(&inf->changed, NULL);
    ck__reflector_init(&inf->reflector);
    int r = oom ? ck_err_set(reterr, CK_ENOMEM, "out of memory")
                : ck_indexer_new(&inf->indexer, reterr);
    if (r == 0 && opts->compact)
        ck_indexer_set_compact(inf->indexer);
    if (r == 0)
        r = ck_indexer_add_index(inf->indexer, CK_INDEX_NAMESPACE, ck_index_by_namespace, NULL,
                                 reterr);
    if (r < 0) {
        ck_informer_free(inf);
        return r;
    }
    census_enter(inf);
    inf->in_census = true;
    *ret_inf = inf;
    return 0;
}

struct ck_informer *ck_informer_free(struct ck_informer *inf)
{
    if (!inf)
        return NULL;
    ck_informer_stop(inf);
    if (inf->in_census)
        census_leave(inf);
    ck_indexer_free(inf->indexer);
    ck__reflector_release(&inf->reflector);
    pthread_cond_destroy(&inf->changed);
    pthread_mutex_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->dispatch);
    if (inf->made_lw && inf->maker.release) /* its reflector is gone: nothing reads it */
        inf->maker.release(inf->maker.arg, inf->made_lw);
    free(inf->made_lw);
    free(inf->namespace);
    free(inf->label_selector);
    free(inf);
    return NULL;
}

static bool is_started(struct ck_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    bool started = inf->started;
    pthread_mutex_unlock(&inf->lock);
    return started;
}

int ck_informer_add_handler(struct ck_informer *inf, const struct ck_event_handler *h,
                            int64_t resync, struct ck_err *reterr)
{
    int64_t period = resync > 0 ? resync : inf->resync;
    pthread_mutex_lock(&inf->dispatch);
    bool started = is_started(inf);
    int r = 0;
    if (inf->nhandlers == MAX_HANDLERS)
        r = ck_err_set(reterr, CK_EINVAL, "informer %s: too many handlers", inf->res->resource);
    else if (started && period > 0) /* the resync thread's schedule is set at start */
        r = ck_err_set(reterr, CK_EINVAL, "informer %s: add resyncing handlers before start",
                       inf->res->resource);
    struct ck_obj_list cached = {0};
    if (r == 0 && started && ck_indexer_list(inf->indexer, &cached) < 0)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0) {
        /* a late handler first sees what the cache holds, as client-go replays it */
        for (size_t i = 0; i < cached.n && h->on_add; i++)
            h->on_add(cached.items[i], true, h->arg);
        struct handler *slot = &inf->handlers[inf->nhandlers++];
        *slot = (struct handler){.h = *h,
                                 .owner = owner_of(inf->factory),
                                 .resync = period,
                                 .next_resync = CK_TIME_NEVER};
    }
    pthread_mutex_unlock(&inf->dispatch);
    ck_obj_list_release(&cached);
    return r;
}

/* Removes the handlers h matches (one), or those of owner (all), under dispatch. */
static void remove_handlers(struct ck_informer *inf, const struct ck_event_handler *h,
                            const void *owner)
{
    pthread_mutex_lock(&inf->dispatch);
    for (size_t i = 0; i < inf->nhandlers;) {
        const struct ck_event_handler *have = &inf->handlers[i].h;
        bool match = h ? have->on_add == h->on_add && have->on_update == h->on_update &&
                             have->on_delete == h->on_delete && have->arg == h->arg
                       : inf->handlers[i].owner == owner;
        if (!match) {
            i++;
            continue;
        }
        memmove(&inf->handlers[i], &inf->handlers[i + 1],
                (inf->nhandlers - i - 1) * sizeof(inf->handlers[0]));
        inf->nhandlers--;
        if (h)
            break;
    }
    pthread_mutex_unlock(&inf->dispatch);
}

void ck_informer_remove_handler(struct ck_informer *inf, const struct ck_event_handler *h)
{
    remove_handlers(inf, h, NULL);
}

int ck_informer_set_transform(struct ck_informer *inf, ck_transform_func fn, void *arg,
                              struct ck_err *reterr)
{
    if (is_started(inf))
        return ck_err_set(reterr, CK_EINVAL, "informer %s: set the transform before start",
                          inf->res->resource);
    inf->transform = fn;
    inf->transform_arg = arg;
    return 0;
}

int ck_informer_add_index(struct ck_informer *inf, const char *name, ck_index_func fn, void *arg,
                          struct ck_err *reterr)
{
    /* the indexer builds it over what it holds, under its own lock: running or not */
    return ck_indexer_add_index(inf->indexer, name, fn, arg, reterr);
}

struct ck_indexer *ck_informer_indexer(struct ck_informer *inf)
{
    return inf->indexer;
}

const struct ck_resource *ck_informer_resource(const struct ck_informer *inf)
{
    return inf->res;
}

bool ck_informer_has_synced(struct ck_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    bool synced = inf->synced;
    pthread_mutex_unlock(&inf->lock);
    return synced;
}

bool ck_informer_wait_for_sync(struct ck_informer *inf, int64_t deadline)
{
    pthread_mutex_lock(&inf->lock);
    while (!inf->synced && !inf->stopping &&
           ck_clock_wait(inf->clock, &inf->changed, &inf->lock, deadline) == 0)
        ;
    bool synced = inf->synced;
    pthread_mutex_unlock(&inf->lock);
    return synced;
}

void ck_informer_stats(struct ck_informer *inf, struct ck_informer_stats *ret)
{
    struct ck__reflector *r = &inf->reflector;
    memset(ret, 0, sizeof(*ret));
    ret->lists = atomic_load(&r->lists);
    ret->watches = atomic_load(&r->watches);
    ret->watch_events = atomic_load(&r->watch_events);
    ret->expired = atomic_load(&r->expired);
    ret->failures = atomic_load(&r->failures);
    pthread_mutex_lock(&r->lock);
    snprintf(ret->last_sync_resource_version, sizeof(ret->last_sync_resource_version), "%s",
             r->last_rv);
    pthread_mutex_unlock(&r->lock);
}

const json_t *ck_cached_ref(const json_t *obj)
{
    return ck__json_ref(obj);
}

/* ---- delivering changes ------------------------------------------------------ */

static void notify_add(struct ck_informer *inf, const json_t *obj, bool initial)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].h.on_add)
            inf->handlers[i].h.on_add(obj, initial, inf->handlers[i].h.arg);
}

static void notify_update(struct ck_informer *inf, const json_t *old, const json_t *obj)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].h.on_update)
            inf->handlers[i].h.on_update(old, obj, inf->handlers[i].h.arg);
}

static void notify_delete(struct ck_informer *inf, const json_t *obj,
                          const struct ck_deleted_final_state_unknown *tombstone)
{
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].h.on_delete)
            inf->handlers[i].h.on_delete(obj, tombstone, inf->handlers[i].h.arg);
}

void ck_transform_strip_managed_fields(json_t *obj, void *arg)
{
    (void)arg;
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

int ck__informer_apply(struct ck_informer *inf, const char *type, json_t *obj)
{
    if (inf->transform)
        inf->transform(obj, inf->transform_arg);
    char *key = NULL;
    int r = ck_meta_namespace_key(obj, &key, NULL);
    if (r < 0) {
        json_decref(obj);
        return 0; /* an object without a name cannot be cached; skip it */
    }
    pthread_mutex_lock(&inf->dispatch);
    const json_t *old = NULL;
    ck_indexer_get_by_key(inf->indexer, key, &old);
    if (strcmp(type, "DELETED") == 0) {
        ck_indexer_delete_key(inf->indexer, key, NULL);
        notify_delete(inf, obj, NULL);
    } else {
        r = ck_indexer_add(inf->indexer, obj, NULL);
        if (r == 0 && old)
            notify_update(inf, old, obj);
        else if (r == 0)
            notify_add(inf, obj, false);
    }
    pthread_mutex_unlock(&inf->dispatch);
    ck_cached_unref(old);
    ck_cached_unref(obj);
    free(key);
    return r;
}

static void mark_synced(struct ck_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    inf->synced = true;
    pthread_cond_broadcast(&inf->changed);
    pthread_mutex_unlock(&inf->lock);
}

int ck__informer_replace(struct ck_informer *inf, json_t **objs, size_t n)
{
    struct ck__strmap old = {0};
    struct ck_obj_list before = {0};
    bool initial = !ck_informer_has_synced(inf);
    for (size_t i = 0; inf->transform && i < n; i++)
        inf->transform(objs[i], inf->transform_arg);
    pthread_mutex_lock(&inf->dispatch);
    int r = ck_indexer_list(inf->indexer, &before);
    for (size_t i = 0; r == 0 && i < before.n; i++) {
        char *key = NULL;
        if (ck_meta_namespace_key(before.items[i], &key, NULL) == 0 &&
            !ck__strmap_put(&old, key, (void *)before.items[i], &(bool){false}))
            r = CK_ENOMEM;
        free(key);
    }
    if (r == 0)
        r = ck_indexer_replace(inf->indexer, (const json_t *const *)objs, n, NULL);
    if (r < 0) {
        pthread_mutex_unlock(&inf->dispatch);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        char *key = NULL;
        if (ck_meta_namespace_key(objs[i], &key, NULL) < 0)
            continue;
        const json_t *prev = ck__strmap_remove(&old, key);
        free(key);
        if (!prev) {
            notify_add(inf, objs[i], initial);
        } else {
            const char *a = ck__meta_str(prev, "resourceVersion"),
                       *b = ck__meta_str(objs[i], "resourceVersion");
            if (!a || !b || strcmp(a, b) != 0)
                notify_update(inf, prev, objs[i]);
        }
    }
    size_t bucket = 0;
    for (struct ck__strmap_entry *e = ck__strmap_next(&old, NULL, &bucket); e;
         e = ck__strmap_next(&old, e, &bucket)) {
        struct ck_deleted_final_state_unknown *t = ck_tombstone_new(e->key, e->value);
        if (t)
            notify_delete(inf, t->obj, t);
        ck_tombstone_free(t);
    }
    mark_synced(inf); /* under dispatch: a resync never runs between the list and this */
    pthread_mutex_unlock(&inf->dispatch);
out:
    ck__strmap_release(&old);
    ck_obj_list_release(&before);
    for (size_t i = 0; i < n; i++)
        ck_cached_unref(objs[i]);
    free(objs);
    return r;
}

/* ---- resync ------------------------------------------------------------------ */

static void *resync_main(void *arg)
{
    struct ck_informer *inf = arg;
    int64_t now = ck_clock_now(inf->clock);
    pthread_mutex_lock(&inf->dispatch);
    for (size_t i = 0; i < inf->nhandlers; i++)
        inf->handlers[i].next_resync =
            inf->handlers[i].resync ? now + inf->handlers[i].resync : CK_TIME_NEVER;
    pthread_mutex_unlock(&inf->dispatch);
    for (;;) {
        int64_t next = CK_TIME_NEVER;
        pthread_mutex_lock(&inf->dispatch); /* handlers may come and go meanwhile */
        for (size_t i = 0; i < inf->nhandlers; i++)
            if (inf->handlers[i].next_resync < next)
                next = inf->handlers[i].next_resync;
        pthread_mutex_unlock(&inf->dispatch);
        pthread_mutex_lock(&inf->lock);
        while (!inf->stopping && ck_clock_wait(inf->clock, &inf->changed, &inf->lock, next) == 0)
            ;
        bool stop = inf->stopping;
        pthread_mutex_unlock(&inf->lock);
        if (stop)
            break;
        now = ck_clock_now(inf->clock);
        pthread_mutex_lock(&inf->dispatch);
        struct ck_obj_list all = {0};
        if (ck_informer_has_synced(inf))
            ck_indexer_list(inf->indexer, &all);
        for (size_t i = 0; i < inf->nhandlers; i++) {
            struct handler *h = &inf->handlers[i];
            if (h->next_resync > now)
                continue;
            for (size_t j = 0; j < all.n && h->h.on_update; j++)
                h->h.on_update(all.items[j], all.items[j], h->h.arg);
            h->next_resync = now + h->resync;
        }
        pthread_mutex_unlock(&inf->dispatch);
        ck_obj_list_release(&all);
    }
    return NULL;
}

int ck_informer_start(struct ck_informer *inf, struct ck_err *reterr)
{
    pthread_mutex_lock(&inf->lock);
    if (inf->started) {
        pthread_mutex_unlock(&inf->lock);
        return 0;
    }
    inf->started = true;
    inf->stopping = false;
    pthread_mutex_unlock(&inf->lock);
    struct ck__reflector *r = &inf->reflector;
    r->lw = inf->lw;
    r->name = inf->res->resource;
    r->label_selector = inf->label_selector;
    r->page_size = inf->page_size;
    r->clock = inf->clock;
    r->informer = inf;
    if (ck__reflector_start(r) < 0)
        goto fail;
    bool resync = false;
    for (size_t i = 0; i < inf->nhandlers; i++)
        resync = resync || inf->handlers[i].resync > 0;
    if (resync) {
        if (pthread_create(&inf->resync_thread, NULL, resync_main, inf) != 0) {
            ck__reflector_stop(r);
            goto fail;
        }
        inf->resync_running = true;
    }
    return 0;
fail:
    pthread_mutex_lock(&inf->lock);
    inf->started = false;
    pthread_mutex_unlock(&inf->lock);
    return ck_err_set(reterr, CK_ENOMEM, "cannot start informer threads");
}

void ck_informer_request_stop(struct ck_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    bool running = inf->started && !inf->stopping;
    pthread_mutex_unlock(&inf->lock);
    if (running)
        ck__reflector_request_stop(&inf->reflector);
}

void ck_informer_stop(struct ck_informer *inf)
{
    pthread_mutex_lock(&inf->lock);
    bool running = inf->started && !inf->stopping;
    inf->stopping = true;
    pthread_cond_broadcast(&inf->changed);
    pthread_mutex_unlock(&inf->lock);
    if (!running)
        return;
    ck__reflector_stop(&inf->reflector);
    if (inf->resync_running)
        pthread_join(inf->resync_thread, NULL);
    inf->resync_running = false;
}

/* ---- the factory --------------------------------------------------------------- */

struct ck_informer_factory {
    struct ck_rest *client;
    char *namespace;
    int64_t resync;
    struct ck_clock *clock;
    ck_transform_func transform;
    void *transform_arg;
    bool compact;
    struct ck_list_watch_maker maker; /* make NULL: the client */
    pthread_mutex_t lock;
    struct ck_informer **informers; /* grows by doubling; never shrinks */
    size_t n, cap;
};

int ck_informer_factory_new(struct ck_rest *client, const char *namespace, int64_t resync,
                            struct ck_clock *clock, struct ck_informer_factory **ret_f,
                            struct ck_err *reterr)
{
    struct ck_informer_factory *f = ck__calloc(1, sizeof(*f));
    bool oom = !f;
    if (f)
        f->namespace = dup_opt(namespace, &oom);
    if (oom) {
        free(f);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    f->client = client;
    f->resync = resync;
    f->clock = clock;
    pthread_mutex_init(&f->lock, NULL);
    *ret_f = f;
    return 0;
}

void ck_informer_factory_set_compact(struct ck_informer_factory *f, bool compact)
{
    pthread_mutex_lock(&f->lock);
    f->compact = compact;
    pthread_mutex_unlock(&f->lock);
}

void ck_informer_factory_set_transform(struct ck_informer_factory *f, ck_transform_func fn,
                                       void *arg)
{
    pthread_mutex_lock(&f->lock);
    f->transform = fn;
    f->transform_arg = arg;
    pthread_mutex_unlock(&f->lock);
}

void ck_informer_factory_set_list_watch(struct ck_informer_factory *f,
                                        const struct ck_list_watch_maker *maker)
{
    pthread_mutex_lock(&f->lock);
    f->maker = maker ? *maker : (struct ck_list_watch_maker){0};
    pthread_mutex_unlock(&f->lock);
}

struct ck_informer_factory *ck_informer_factory_free(struct ck_informer_factory *f)
{
    if (!f)
        return NULL;
    ck_informer_factory_stop(f);
    for (size_t i = 0; i < f->n; i++)
        ck_informer_free(f->informers[i]);
    free(f->informers);
    pthread_mutex_destroy(&f->lock);
    free(f->namespace);
    free(f);
    return NULL;
}

/* The factory's informer for group/resource, or NULL; f->lock held. */
static struct ck_informer *find_locked(struct ck_informer_factory *f, const char *group,
                                       const char *resource)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->informers[i]->res->group, group) == 0 &&
            strcmp(f->informers[i]->res->resource, resource) == 0)
            return f->informers[i];
    return NULL;
}

void ck_informer_factory_own_begin(struct ck_informer_factory *f, const void *owner)
{
    own_scope.factory = f;
    own_scope.owner = owner;
}

void ck_informer_factory_own_end(struct ck_informer_factory *f)
{
    if (own_scope.factory == f)
        own_scope.factory = NULL, own_scope.owner = NULL;
}

void ck_informer_factory_release(struct ck_informer_factory *f, const void *owner)
{
    /*
     * One entry at a time, never holding f->lock while an informer's handlers are
     * removed: a handler may ask the factory for an informer meanwhile. Informers are
     * only appended and never freed before the factory, so the i-th stays valid.
     */
    for (size_t i = 0;; i++) {
        pthread_mutex_lock(&f->lock);
        struct ck_informer *inf = i < f->n ? f->informers[i] : NULL;
        pthread_mutex_unlock(&f->lock);
        if (!inf)
            return;
        remove_handlers(inf, NULL, owner);
    }
}

/* The list/watch f's maker makes for res (f->lock held), or NULL without a maker. */
static struct ck_list_watch *make_list_watch(struct ck_informer_factory *f,
                                             const struct ck_resource *res, bool *failed)
{
    *failed = false;
    if (!f->maker.make)
        return NULL;
    struct ck_list_watch *lw = ck__calloc(1, sizeof(*lw));
    if (!lw || f->maker.make(f->maker.arg, res, f->namespace, false, lw, NULL) < 0) {
        free(lw);
        *failed = true;
        return NULL;
    }
    return lw;
}

struct ck_informer *ck_informer_factory_for(struct ck_informer_factory *f,
                                            const struct ck_resource *res)
{
    pthread_mutex_lock(&f->lock);
    struct ck_informer *inf = find_locked(f, res->group, res->resource);
    if (!inf && f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        struct ck_informer **grown = ck__realloc(f->informers, cap * sizeof(*grown));
        if (!grown)
            goto out;
        f->informers = grown;
        f->cap = cap;
    }
    bool failed = false;
    struct ck_list_watch *lw = inf ? NULL : make_list_watch(f, res, &failed);
    if (!inf && !failed) {
        struct ck_informer_options opts = {
            .list_watch = lw,
            .client = f->client,
            .res = res,
            .namespace = f->namespace,
            .resync = f->resync,
            .clock = f->clock,
            .transform = f->transform,
            .transform_arg = f->transform_arg,
            .compact = f->compact,
        };
        if (ck_informer_new(&opts, &inf, NULL) == 0) {
            inf->factory = f;
            inf->made_lw = lw;
            inf->maker = f->maker;
            f->informers[f->n++] = inf;
        } else if (lw) {
            if (f->maker.release)
                f->maker.release(f->maker.arg, lw);
            free(lw);
        }
    }
out:
    pthread_mutex_unlock(&f->lock);
    return inf;
}

int ck_informer_factory_metadata_informer(struct ck_informer_factory *f,
                                          const struct ck_resource *res, int64_t resync,
                                          struct ck_clock *clock,
                                          struct ck_metadata_informer **ret_mi,
                                          struct ck_err *reterr)
{
    pthread_mutex_lock(&f->lock);
    struct ck_list_watch_maker maker = f->maker;
    pthread_mutex_unlock(&f->lock);
    return ck__metadata_informer_new(f->client, maker.make ? &maker : NULL, res, f->namespace,
                                     resync, clock, ret_mi, reterr);
}

struct ck_informer *ck_informer_factory_lookup(struct ck_informer_factory *f, const char *group,
                                               const char *resource)
{
    pthread_mutex_lock(&f->lock);
    struct ck_informer *inf = find_locked(f, group, resource);
    pthread_mutex_unlock(&f->lock);
    return inf;
}

int ck_informer_factory_start(struct ck_informer_factory *f, struct ck_err *reterr)
{
    int r = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n && r == 0; i++)
        r = ck_informer_start(f->informers[i], reterr);
    pthread_mutex_unlock(&f->lock);
    return r;
}

bool ck_informer_factory_wait_for_sync(struct ck_informer_factory *f, int64_t deadline)
{
    /*
     * Informers are only ever appended and freed with the factory, so the i-th one stays
     * valid; the array itself may move when another thread adds one, so it is read under
     * the lock, one entry at a time, and never held while waiting.
     */
    for (size_t i = 0;; i++) {
        pthread_mutex_lock(&f->lock);
        struct ck_informer *inf = i < f->n ? f->informers[i] : NULL;
        pthread_mutex_unlock(&f->lock);
        if (!inf)
            return true;
        if (is_started(inf) && !ck_informer_wait_for_sync(inf, deadline))
            return false;
    }
}

void ck_informer_factory_stop(struct ck_informer_factory *f)
{
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->n; i++) /* every watch winds down at once */
        ck_informer_request_stop(f->informers[i]);
    for (size_t i = 0; i < f->n; i++)
        ck_informer_stop(f->informers[i]);
    pthread_mutex_unlock(&f->lock);
}
