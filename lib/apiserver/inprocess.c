/*
 * inprocess.c - lists and watches for components in the server's own process (the
 * reflector's source, client-go tools/cache listwatch.go's ListWatch, served here
 * instead of by a REST client).
 *
 * kube-apiserver has no exact equivalent: its own controllers use loopback clients
 * (LoopbackClientConfig), which still speak HTTP to the server. Here a component of
 * `ckube server` reads its collections straight from the server: a list runs the HTTP
 * LIST's code (ck__registry_list, the answer's bytes from ck__list_json) and a watch
 * subscribes to the store as an HTTP watch stream does, through the same per-watcher
 * filtering (ck__watch_event), but its events are queued as references to the stored
 * key-values and decoded on the watcher's own thread, once, without a TLS connection, a
 * libmicrohttpd connection or a JSON encoding between them. The metadata form
 * (ck_apiserver_metadata_list_watch_init, for metadata informers) answers
 * PartialObjectMetadataLists and PartialObjectMetadata events as the HTTP path does
 * for the metadata client.
 *
 * The component still acts as its own user: every list and watch is authorized by RBAC
 * and the node authorizer as the HTTP request would be (ck__auth_authorize_target), and
 * refused with the same Status. The server keeps no audit log, so there is nothing else
 * to record. Writes do not come this way.
 *
 * Threading: a watch's store callback (on a store thread) filters the event as an HTTP
 * stream's does (decoding only what a selector must see) and queues references under
 * the watch's lock; the watcher's thread takes the queue, decodes and calls its function. A watcher
 * that falls MAX_QUEUED bytes behind is cut, as an HTTP stream over its budget is: its queue is
 * dropped and the watch ends cleanly, and the reflector watches again from the last resourceVersion
 * it saw.
 *
 * Tested in tests/apiserver/test_inprocess.c, against the REST client's answers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/apiserver.h"
#include "ckube/informer.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define MAX_QUEUED        (64u * 1024 * 1024) /* stored bytes a watcher may lag behind */
#define BOOKMARK_INTERVAL 60                  /* seconds, as watch.c asks the store */

struct source {
    struct ck_apiserver *server;
    struct ck_auth_user *user;
    bool partial;           /* PartialObjectMetadata, as the metadata client asks for */
    char path[CK__KEY_MAX]; /* the collection's API path, as an HTTP request names it */
};

/* The collection, as an HTTP request to it is routed; 404 as the server answers. */
static int route(const struct source *src, struct ck__target *t, struct ck_err *reterr)
{
    if (ck__route(src->path, t) < 0)
        return ck_err_status(reterr, "NotFound",
                             "the server could not find the requested resource");
    t->user = src->user;
    return 0;
}

static int parse_selectors(const struct ck__target *t, const struct ck_list_options *opts,
                           struct ck_label_selector **labels, struct ck_field_selector **fields,
                           struct ck_err *reterr)
{
    int r = ck__parse_selector_text(t->kind, opts->label_selector, opts->field_selector, labels,
                                    fields, reterr);
    if (r == 0 && ck_label_selector_is_empty(*labels))
        *labels = ck_label_selector_free(*labels);
    if (r == 0 && ck_field_selector_is_empty(*fields))
        *fields = ck_field_selector_free(*fields);
    return r;
}

/* ---- list ------------------------------------------------------------------ */

static int list(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                struct ck_err *reterr)
{
    const struct source *src = ctx;
    struct ck__target t;
    struct ck_label_selector *labels = NULL;
    struct ck_field_selector *fields = NULL;
    int r = route(src, &t, reterr);
    if (r == 0)
        r = ck__auth_authorize_target(src->server, src->user, "list", &t, reterr);
    if (r == 0)
        r = parse_selectors(&t, opts, &labels, &fields, reterr);
    if (r < 0)
        return r;
    struct ck__list_options lo = {
        .namespace = t.namespace,
        .labels = labels,
        .fields = fields,
        .limit = opts->limit > 0 ? opts->limit : 0,
        .continue_token = opts->continue_token,
        .resource_version = opts->resource_version,
        .resource_version_match = opts->resource_version_match,
    };
    struct ck__list_result result;
    r = ck__registry_list(src->server->registry, t.kind, &lo, &result, reterr);
    ck_label_selector_free(labels);
    ck_field_selector_free(fields);
    if (r < 0)
        return r;
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)result.revision);
    if (src->partial) { /* as an HTTP LIST asking for PartialObjectMetadataList */
        *ret_list = ck__partial_list_of(&result, rv);
        ck__list_result_release(&result);
        return *ret_list ? 0 : ck_err_no_memory(reterr);
    }
    size_t len = 0;
    char *text = ck__list_json(t.kind, rv, &result, &len);
    ck__list_result_release(&result);
    r = text ? ck_json_loadb(text, len, 0, ret_list, NULL) : CK_ENOMEM;
    free(text);
    return r < 0 ? ck_err_no_memory(reterr) : 0;
}

/* ---- watch ----------------------------------------------------------------- */

struct event {
    const char *type;       /* static */
    const struct ck_kv *kv; /* a reference; NULL for a BOOKMARK */
    int64_t revision;
};

struct watch {
    struct ck__watch_view view;
    bool partial;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct event *queue; /* events not yet taken by the watcher */
    size_t n, cap;
    size_t bytes; /* the queued objects' stored bytes */
    bool ended;   /* no more events: a failure, or a cut */
    int code;     /* the failure's, 0 for a clean end */
    struct ck_err err;
};

static void drop_queue(struct watch *w)
{
    for (size_t i = 0; i < w->n; i++)
        ck_kv_unref(w->queue[i].kv);
    w->n = 0;
    w->bytes = 0;
}

/* w->lock held. A watcher too far behind is cut; one out of memory fails with a 500. */
static void enqueue(struct watch *w, const char *type, const struct ck_kv *kv, int64_t revision)
{
    if (w->ended)
        return;
    size_t size = kv ? kv->value_len : 0;
    if (w->bytes + size > MAX_QUEUED) {
        CK_LOGV(1, "in-process watch on %s: watcher too slow, ending its watch",
                w->view.kind->resource);
        drop_queue(w);
        w->ended = true;
        return;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct event *grown = ck__realloc(w->queue, cap * sizeof(*grown));
        if (!grown) {
            drop_queue(w);
            w->ended = true;
            w->code = ck_err_no_memory(&w->err);
            return;
        }
        w->queue = grown;
        w->cap = cap;
    }
    w->queue[w->n++] = (struct event){type, ck_kv_ref(kv), revision};
    w->bytes += size;
}

static void queue_object(void *arg, const char *type, const struct ck_kv *kv, int64_t revision)
{
    enqueue(arg, type, kv, revision);
}

static void queue_bookmark(void *arg, int64_t revision)
{
    enqueue(arg, "BOOKMARK", NULL, revision);
}

/* The end of the watch: with err's code when an HTTP watcher would get it as an ERROR. */
static void queue_failure(void *arg, const struct ck_err *err, bool send)
{
    struct watch *w = arg;
    if (w->ended)
        return;
    w->ended = true;
    if (send) /* reason: a static string, as ck_err_status() keeps it */
        w->code = ck_err_status(&w->err, err->reason ? err->reason : "InternalError", "%s",
                                ck_err_message(err));
}

static const struct ck__watch_sink queue_sink = {queue_object, queue_bookmark, queue_failure};

static void on_store_event(const struct ck_store_event *ev, void *userdata)
{
    struct watch *w = userdata;
    pthread_mutex_lock(&w->lock);
    if (!w->ended)
        ck__watch_event(&w->view, ev, &queue_sink, w);
    pthread_cond_signal(&w->changed);
    pthread_mutex_unlock(&w->lock);
}

/* The object of one queued event, as the HTTP watch would have sent it. */
static json_t *event_object(const struct watch *w, const struct event *e)
{
    if (!e->kv)
        return ck__watch_bookmark(w->view.kind, e->revision, false, w->partial);
    if (w->partial) {
        json_t *obj = ck__watch_served_object(w->view.kind, e->kv, e->revision);
        json_t *partial = obj ? ck__partial_object(obj) : NULL;
        json_decref(obj);
        return partial;
    }
    size_t len = 0;
    char *served =
        ck__serve_stored(w->view.kind, e->kv->value, e->kv->value_len, e->revision, &len);
    json_t *obj = NULL;
    if (served && ck_json_loadb(served, len, 0, &obj, NULL) < 0)
        obj = NULL;
    free(served);
    return obj;
}

static int64_t now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec;
}

/*
 * Takes the queued events into *batch (swapping buffers) once there are some, the watch
 * ended, *stop is set or wake_at (monotonic seconds) passed; waits a second at most
 * between looks at *stop.
 */
static void take(struct watch *w, struct event **batch, size_t *n, size_t *cap,
                 const atomic_bool *stop, int64_t wake_at)
{
    pthread_mutex_lock(&w->lock);
    bool idle = false;
    while (w->n == 0 && !w->ended && !(stop && atomic_load(stop)) && now_seconds() < wake_at) {
        if (!idle) { /* about to wait: the watcher's thread gives its allocator cache back */
            idle = true;
            pthread_mutex_unlock(&w->lock);
            ck__memory_idle();
            pthread_mutex_lock(&w->lock);
            continue;
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&w->changed, &w->lock, &until);
    }
    struct event *mine = *batch;
    size_t mine_cap = *cap;
    *batch = w->queue;
    *n = w->n;
    *cap = w->cap;
    w->queue = mine;
    w->cap = mine_cap;
    w->n = 0;
    w->bytes = 0;
    pthread_mutex_unlock(&w->lock);
}

/* Delivers the batch in order; what fn returned to end the watch, or 0. */
static int deliver(struct watch *w, struct event *batch, size_t n, ck_watch_func fn, void *arg,
                   struct ck_err *reterr)
{
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        if (r == 0) {
            json_t *obj = event_object(w, &batch[i]);
            r = obj ? fn(batch[i].type, obj, arg) : ck_err_no_memory(reterr);
        }
        ck_kv_unref(batch[i].kv);
    }
    return r;
}

static int watch_init(struct watch *w, const struct source *src, const struct ck__target *t,
                      const struct ck_list_options *opts, struct ck_err *reterr)
{
    memset(w, 0, sizeof(*w));
    w->view = (struct ck__watch_view){
        .server = src->server, .kind = t->kind, .bookmarks = opts->allow_watch_bookmarks};
    w->partial = src->partial;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->changed, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&w->lock, NULL);
    return parse_selectors(t, opts, &w->view.labels, &w->view.fields, reterr);
}

static void watch_release(struct watch *w)
{
    drop_queue(w);
    free(w->queue);
    ck_label_selector_free(w->view.labels);
    ck_field_selector_free(w->view.fields);
    ck_err_release(&w->err);
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
}

/* Watches from start (initial events first when initial) until the watch ends. */
static int watch_run(struct watch *w, const struct ck__target *t, int64_t start, bool initial,
                     const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                     const atomic_bool *stop, struct ck_err *reterr)
{
    int64_t revision = start;
    int r = 0;
    if (initial) {
        pthread_mutex_lock(&w->lock);
        r = ck__watch_initial(&w->view, t->namespace, &queue_sink, w, &revision, reterr);
        pthread_mutex_unlock(&w->lock);
        if (r < 0)
            return r;
    }
    char prefix[CK__KEY_MAX];
    ck__collection_prefix(t->kind, t->namespace, prefix, sizeof(prefix));
    struct ck_store_watch *sw = NULL;
    struct ck_err store_err = {0};
    if (ck_store_watch(w->view.server->store, prefix, strlen(prefix), true, revision + 1,
                       on_store_event, w, &sw, &store_err) < 0)
        return ck_err_internal(reterr, "%s", store_err.msg);
    int64_t deadline = opts->timeout_seconds > 0 ? now_seconds() + opts->timeout_seconds : 0;
    int64_t next_bookmark = now_seconds() + BOOKMARK_INTERVAL;
    struct event *batch = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (stop && atomic_load(stop)) {
            r = ck_err_set(reterr, CK_ESHUTDOWN, "the watch was stopped");
            break;
        }
        int64_t wake_at = next_bookmark;
        if (deadline && deadline < wake_at)
            wake_at = deadline;
        take(w, &batch, &n, &cap, stop, wake_at);
        r = deliver(w, batch, n, fn, arg, reterr);
        if (r != 0)
            break;
        pthread_mutex_lock(&w->lock);
        bool ended = w->ended && w->n == 0;
        pthread_mutex_unlock(&w->lock);
        if (ended) {
            if (w->code < 0) /* the Status an HTTP watcher would get as an ERROR event */
                r = ck_err_status(reterr, w->err.reason ? w->err.reason : "InternalError", "%s",
                                  ck_err_message(&w->err));
            break;
        }
        int64_t now = now_seconds();
        if (deadline && now >= deadline)
            break; /* timeoutSeconds: a clean end */
        if (now >= next_bookmark) {
            next_bookmark = now + BOOKMARK_INTERVAL;
            if (w->view.bookmarks)
                ck_store_watch_progress(sw, NULL);
        }
    }
    ck_store_watch_cancel(sw); /* no callback runs after this */
    free(batch);
    return r;
}

static int watch(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                 const atomic_bool *stop, struct ck_err *reterr)
{
    const struct source *src = ctx;
    struct ck__target t;
    int r = route(src, &t, reterr);
    if (r == 0)
        r = ck__auth_authorize_target(src->server, src->user, "watch", &t, reterr);
    int64_t start = 0;
    if (r == 0)
        r = ck__watch_start(src->server, opts->resource_version, &start, reterr);
    if (r < 0)
        return r;
    const char *rv = opts->resource_version;
    bool initial = !rv || !*rv || strcmp(rv, "0") == 0;
    struct watch w;
    r = watch_init(&w, src, &t, opts, reterr);
    if (r == 0)
        r = watch_run(&w, &t, start, initial, opts, fn, arg, stop, reterr);
    watch_release(&w);
    return r;
}

/* ---- the source ------------------------------------------------------------ */

static int source_init(struct ck_apiserver *server, const char *group, const char *version,
                       const char *resource, const char *namespace, const char *user,
                       const char *const *groups, size_t n_groups, bool partial,
                       struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    struct source *src = ck__calloc(1, sizeof(*src));
    bool ok = src && (src->user = ck_auth_user_new(user, NULL));
    for (size_t i = 0; ok && i < n_groups; i++)
        ok = ck_auth_user_add_group(src->user, groups[i]) == 0;
    if (!ok) {
        if (src)
            ck_auth_user_free(src->user);
        free(src);
        return ck_err_no_memory(reterr);
    }
    src->server = server;
    src->partial = partial;
    bool ns = namespace && *namespace;
    if (group && *group)
        snprintf(src->path, sizeof(src->path), "/apis/%s/%s%s%s/%s", group, version,
                 ns ? "/namespaces/" : "", ns ? namespace : "", resource);
    else
        snprintf(src->path, sizeof(src->path), "/api/%s%s%s/%s", version, ns ? "/namespaces/" : "",
                 ns ? namespace : "", resource);
    *ret_lw = (struct ck_list_watch){.list = list, .watch = watch, .ctx = src};
    return 0;
}

int ck_apiserver_list_watch_init(struct ck_apiserver *server, const char *group,
                                 const char *version, const char *resource, const char *namespace,
                                 const char *user, const char *const *groups, size_t n_groups,
                                 struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    return source_init(server, group, version, resource, namespace, user, groups, n_groups, false,
                       ret_lw, reterr);
}

int ck_apiserver_metadata_list_watch_init(struct ck_apiserver *server, const char *group,
                                          const char *version, const char *resource,
                                          const char *namespace, const char *user,
                                          const char *const *groups, size_t n_groups,
                                          struct ck_list_watch *ret_lw, struct ck_err *reterr)
{
    return source_init(server, group, version, resource, namespace, user, groups, n_groups, true,
                       ret_lw, reterr);
}

void ck_apiserver_list_watch_release(struct ck_list_watch *lw)
{
    struct source *src = lw ? lw->ctx : NULL;
    if (!src)
        return;
    ck_auth_user_free(src->user);
    free(src);
    lw->ctx = NULL;
}
