/*
 * watch.c - the in-memory event log and its fan-out to watchers (the hub).
 *
 * The SQLite backend's single writer thread publishes the events of every
 * committed batch here, in revision order, after COMMIT. The hub keeps the
 * most recent events in a ring bounded twice: by count (`cap`) and by the
 * bytes of the keys and values the events hold (`max_bytes`, so that a few
 * large objects updated often cannot pin gigabytes). Whichever bound is hit
 * first drops the oldest revision, whole; everything at or below `floor` has
 * left the ring (or predates the hub) and lives only in the database's
 * revisions table (until compaction: a watch from below the compacted
 * revision ends with CK_ECOMPACTED, the API server's 410). The newest
 * revision always stays, however large. One delivery thread serves every
 * watcher:
 *
 *   - a watcher whose next revision is above floor is fed from the ring: all
 *     matching events from `next` to head, then next = head + 1;
 *   - a watcher at or below floor (it started in the past, or fell behind
 *     while the ring wrapped) catches up through the backend's history
 *     function up to the current head, then joins the ring. Nothing polls:
 *     the thread sleeps on a condition variable until a publish, a new watch
 *     or a progress request.
 *
 * Guarantees: events reach each watcher in revision order, each once
 * (`next` only grows and every revision up to head is either in the ring or
 * in the database). A progress event carries head once the watcher has
 * everything up to head.
 *
 * Threading: `lock` guards everything. Callbacks run on the delivery thread
 * without the lock; `delivering` names the watch whose callback may be
 * running, and ck__hub_watch_cancel() waits until it is not its watch, which
 * is what makes "no callback after cancel returns" true. A cancelled watch
 * stays linked (marked `removed`) until then, so the thread's list cursor is
 * always valid.
 *
 * Tests: tests/store/test_watch.c drives the hub alone over a fake history
 * (catch-up below the ring, wrap-around, filters, compaction, progress, cancel);
 * the conformance suite runs it under the SQLite backend.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct hub_watch {
    struct ck_store_watch base;
    struct ck__hub *hub;
    char *key;
    size_t key_len;
    bool prefix;
    int64_t next; /* next revision to deliver */
    ck_store_watch_fn fn;
    void *userdata;
    bool progress_requested;
    bool finished;     /* an error was delivered; nothing more */
    int pending_error; /* deliver this error first (compacted at creation) */
    int64_t pending_compacted;
    int64_t last_sent_ms; /* monotonic time of the last delivery */
    struct hub_watch *prev_w, *next_w;
};

struct ck__hub {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* delivery thread: something to do */
    pthread_cond_t idle; /* cancel: delivering changed */
    struct ck__event *ring;
    size_t cap, start, len;
    size_t bytes, max_bytes; /* held by the ring's events (event_bytes()); 0: no byte bound */
    int64_t floor;           /* every revision <= floor is outside the ring */
    int64_t head;            /* latest published revision */
    uint64_t seq;            /* bumped by every publish, watch, progress request */
    ck__history_fn history;
    void *backend;
    int64_t progress_ms;
    struct hub_watch *watches;
    struct hub_watch *delivering;
    bool stop;
    pthread_t thread;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * What an event in the ring keeps alive: its kv and prev_kv, counted whole
 * even when another event shares one (an overestimate, never an under).
 */
static size_t event_bytes(const struct ck__event *ev)
{
    size_t n = sizeof(*ev);
    if (ev->kv)
        n += sizeof(*ev->kv) + ev->kv->key_len + ev->kv->value_len + 2;
    if (ev->prev_kv)
        n += sizeof(*ev->prev_kv) + ev->prev_kv->key_len + ev->prev_kv->value_len + 2;
    return n;
}

static void event_release(struct ck__event *ev)
{
    ck_kv_unref(ev->kv);
    ck_kv_unref(ev->prev_kv);
}

static void deliver(struct hub_watch *w, const struct ck__event *ev)
{
    struct ck_store_event e = {
        .type = ev->type, .revision = ev->revision, .kv = ev->kv, .prev_kv = ev->prev_kv};
    w->fn(&e, w->userdata);
}

static void deliver_error(struct hub_watch *w, int code, int64_t compacted, const char *msg)
{
    struct ck_store_event e = {
        .type = CK_STORE_EVENT_ERROR, .error = code, .message = msg, .compact_revision = compacted};
    w->fn(&e, w->userdata);
}

struct catchup {
    struct hub_watch *w;
};

static int catchup_emit(const struct ck__event *ev, void *arg)
{
    deliver(((struct catchup *)arg)->w, ev);
    return 0;
}

/* Called with the lock held; returns with it held. Serves one watcher. */
static bool serve(struct ck__hub *hub, struct hub_watch *w)
{
    if (w->finished)
        return false;
    if (w->pending_error) {
        int code = w->pending_error;
        int64_t compacted = w->pending_compacted;
        w->finished = true;
        hub->delivering = w;
        pthread_mutex_unlock(&hub->lock);
        deliver_error(w, code, compacted, "store: required revision has been compacted");
        pthread_mutex_lock(&hub->lock);
        return true;
    }
    if (w->next <= hub->floor) {
        int64_t to = hub->head;
        int64_t from = w->next;
        hub->delivering = w;
        pthread_mutex_unlock(&hub->lock);
        struct catchup c = {w};
        struct ck_err err = {0};
        int64_t compacted = 0;
        int r = hub->history(hub->backend, w->key, w->key_len, w->prefix, from, to, catchup_emit,
                             &c, &compacted, &err);
        if (r < 0)
            deliver_error(w, r, compacted, err.msg);
        pthread_mutex_lock(&hub->lock);
        if (r < 0)
            w->finished = true;
        else
            w->next = to + 1;
        w->last_sent_ms = now_ms();
        return true;
    }
    /* From the ring: collect matching events (with references), deliver unlocked. */
    struct ck__event *batch = NULL;
    size_t n = 0;
    if (w->next <= hub->head) {
        /* The ring is sorted by revision: binary search the first wanted. */
        size_t lo = 0, hi = hub->len;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (hub->ring[(hub->start + mid) % hub->cap].revision < w->next)
                lo = mid + 1;
            else
                hi = mid;
        }
        batch = malloc(sizeof(*batch) * (hub->len - lo + 1));
        if (!batch)
            return false; /* retried on the next wake-up */
        for (size_t i = lo; i < hub->len; i++) {
            const struct ck__event *ev = &hub->ring[(hub->start + i) % hub->cap];
            if (ev->revision < w->next ||
                !ck__key_matches(w->key, w->key_len, w->prefix, ev->kv->key, ev->kv->key_len))
                continue;
            batch[n] = *ev;
            ck_kv_ref(ev->kv);
            ck_kv_ref(ev->prev_kv);
            n++;
        }
        w->next = hub->head + 1;
    }
    int64_t t = now_ms();
    bool progress = w->progress_requested ||
                    (hub->progress_ms > 0 && n == 0 && t - w->last_sent_ms >= hub->progress_ms);
    int64_t head = hub->head;
    if (n == 0 && !progress) {
        free(batch);
        return false;
    }
    w->progress_requested = false;
    w->last_sent_ms = t;
    hub->delivering = w;
    pthread_mutex_unlock(&hub->lock);
    for (size_t i = 0; i < n; i++) {
        deliver(w, &batch[i]);
        event_release(&batch[i]);
    }
    free(batch);
    if (progress) {
        struct ck_store_event e = {.type = CK_STORE_EVENT_PROGRESS, .revision = head};
        w->fn(&e, w->userdata);
    }
    pthread_mutex_lock(&hub->lock);
    return true;
}

static void *hub_main(void *arg)
{
    struct ck__hub *hub = arg;
    pthread_mutex_lock(&hub->lock);
    while (!hub->stop) {
        uint64_t seq = hub->seq;
        for (struct hub_watch *w = hub->watches; w; w = w->next_w) {
            serve(hub, w);
            hub->delivering = NULL;
            pthread_cond_broadcast(&hub->idle);
        }
        if (hub->stop || seq != hub->seq)
            continue;
        if (hub->progress_ms > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t wait = hub->progress_ms < 100 ? hub->progress_ms : 100;
            ts.tv_nsec += (long)wait * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&hub->wake, &hub->lock, &ts);
        } else {
            pthread_cond_wait(&hub->wake, &hub->lock);
        }
    }
    pthread_mutex_unlock(&hub->lock);
    return NULL;
}

int ck__hub_new(size_t capacity, int64_t head, int64_t progress_interval_ms, ck__history_fn history,
                void *backend, struct ck__hub **ret_hub, struct ck_err *reterr)
{
    return ck__hub_new_bounded(capacity, 0, head, progress_interval_ms, history, backend, ret_hub,
                               reterr);
}

int ck__hub_new_bounded(size_t capacity, size_t max_bytes, int64_t head,
                        int64_t progress_interval_ms, ck__history_fn history, void *backend,
                        struct ck__hub **ret_hub, struct ck_err *reterr)
{
    struct ck__hub *hub = calloc(1, sizeof(*hub));
    if (!hub)
        return ck_err_set(reterr, CK_ENOMEM, "store: out of memory");
    hub->cap = capacity ? capacity : 1;
    hub->max_bytes = max_bytes;
    hub->ring = calloc(hub->cap, sizeof(*hub->ring));
    if (!hub->ring) {
        free(hub);
        return ck_err_set(reterr, CK_ENOMEM, "store: out of memory");
    }
    hub->floor = head;
    hub->head = head;
    hub->history = history;
    hub->backend = backend;
    hub->progress_ms = progress_interval_ms;
    pthread_mutex_init(&hub->lock, NULL);
    pthread_cond_init(&hub->wake, NULL);
    pthread_cond_init(&hub->idle, NULL);
    if (pthread_create(&hub->thread, NULL, hub_main, hub) != 0) {
        pthread_mutex_destroy(&hub->lock);
        pthread_cond_destroy(&hub->wake);
        pthread_cond_destroy(&hub->idle);
        free(hub->ring);
        free(hub);
        return ck_err_set(reterr, CK_ENOMEM, "store: cannot start the watch thread");
    }
    *ret_hub = hub;
    return 0;
}

void ck__hub_free(struct ck__hub *hub)
{
    if (!hub)
        return;
    pthread_mutex_lock(&hub->lock);
    hub->stop = true;
    pthread_cond_signal(&hub->wake);
    pthread_mutex_unlock(&hub->lock);
    pthread_join(hub->thread, NULL);
    for (size_t i = 0; i < hub->len; i++)
        event_release(&hub->ring[(hub->start + i) % hub->cap]);
    free(hub->ring);
    pthread_mutex_destroy(&hub->lock);
    pthread_cond_destroy(&hub->wake);
    pthread_cond_destroy(&hub->idle);
    free(hub);
}

void ck__hub_publish(struct ck__hub *hub, struct ck__event *events, size_t n, int64_t head)
{
    pthread_mutex_lock(&hub->lock);
    for (size_t i = 0; i < n; i++) {
        size_t size = event_bytes(&events[i]);
        while (hub->len == hub->cap ||
               (hub->max_bytes && hub->len > 0 && hub->bytes + size > hub->max_bytes)) {
            /* Drop the oldest revision entirely so floor stays exact. */
            int64_t rev = hub->ring[hub->start].revision;
            while (hub->len > 0 && hub->ring[hub->start].revision == rev) {
                hub->bytes -= event_bytes(&hub->ring[hub->start]);
                event_release(&hub->ring[hub->start]);
                hub->start = (hub->start + 1) % hub->cap;
                hub->len--;
            }
            hub->floor = rev;
        }
        hub->ring[(hub->start + hub->len) % hub->cap] = events[i];
        hub->len++;
        hub->bytes += size;
    }
    if (head > hub->head)
        hub->head = head;
    hub->seq++;
    pthread_cond_signal(&hub->wake);
    pthread_mutex_unlock(&hub->lock);
}

int ck__hub_watch(struct ck__hub *hub, const struct ck_store_ops *ops, const char *key,
                  size_t key_len, bool prefix, int64_t start_revision, int64_t compacted,
                  ck_store_watch_fn fn, void *userdata, struct ck_store_watch **ret_watch,
                  struct ck_err *reterr)
{
    struct hub_watch *w = calloc(1, sizeof(*w));
    if (!w || !(w->key = malloc(key_len + 1))) {
        free(w);
        return ck_err_set(reterr, CK_ENOMEM, "store: out of memory");
    }
    if (key_len)
        memcpy(w->key, key, key_len);
    w->base.ops = ops;
    w->hub = hub;
    w->key_len = key_len;
    w->prefix = prefix;
    w->fn = fn;
    w->userdata = userdata;
    w->last_sent_ms = now_ms();
    pthread_mutex_lock(&hub->lock);
    w->next = start_revision > 0 ? start_revision : hub->head + 1;
    if (start_revision > 0 && start_revision < compacted) {
        w->pending_error = CK_ECOMPACTED;
        w->pending_compacted = compacted;
    }
    w->next_w = hub->watches;
    if (hub->watches)
        hub->watches->prev_w = w;
    hub->watches = w;
    hub->seq++;
    pthread_cond_signal(&hub->wake);
    pthread_mutex_unlock(&hub->lock);
    *ret_watch = &w->base;
    return 0;
}

int ck__hub_watch_progress(struct ck_store_watch *watch, struct ck_err *reterr)
{
    (void)reterr;
    struct hub_watch *w = (struct hub_watch *)watch;
    struct ck__hub *hub = w->hub;
    pthread_mutex_lock(&hub->lock);
    w->progress_requested = true;
    hub->seq++;
    pthread_cond_signal(&hub->wake);
    pthread_mutex_unlock(&hub->lock);
    return 0;
}

void ck__hub_watch_cancel(struct ck_store_watch *watch)
{
    struct hub_watch *w = (struct hub_watch *)watch;
    struct ck__hub *hub = w->hub;
    pthread_mutex_lock(&hub->lock);
    w->finished = true;
    while (hub->delivering == w)
        pthread_cond_wait(&hub->idle, &hub->lock);
    if (w->prev_w)
        w->prev_w->next_w = w->next_w;
    else
        hub->watches = w->next_w;
    if (w->next_w)
        w->next_w->prev_w = w->prev_w;
    pthread_mutex_unlock(&hub->lock);
    free(w->key);
    free(w);
}

void ck__hub_usage(struct ck__hub *hub, size_t *ret_events, size_t *ret_bytes, int64_t *ret_floor)
{
    pthread_mutex_lock(&hub->lock);
    *ret_events = hub->len;
    *ret_bytes = hub->bytes;
    *ret_floor = hub->floor;
    pthread_mutex_unlock(&hub->lock);
}
