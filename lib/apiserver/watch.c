/*
 * watch.c - watch streams: GET <collection>?watch=true.
 *
 * One stream per request: a store watch on the collection's key prefix
 * feeds a callback (on a store thread) that turns each event into one JSON
 * line, {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}\n,
 * and appends it to the stream's buffer. libmicrohttpd pulls the buffer
 * through a content-reader callback into a chunked response; when the buffer
 * is empty the reader suspends the connection, and the next event resumes
 * it, so an idle watch costs no thread and no polling.
 *
 * Kubernetes semantics (kube-api-contract section 7): resourceVersion unset
 * or "0" first sends ADDED for every current object; "N" sends only changes
 * after N, or one ERROR event with a 410 Status when N was compacted; label
 * and field selectors filter events, and an object that stops (starts)
 * matching is DELETED (ADDED) for this watcher; BOOKMARKs only when asked;
 * sendInitialEvents ends the initial events with a bookmark annotated
 * k8s.io/initial-events-end; timeoutSeconds (default: 30 to 60 minutes, as
 * Kubernetes picks) ends the stream cleanly; Table watches send one-row
 * Tables, with column definitions in the first event only; watches asking
 * for as=PartialObjectMetadata get each object (bookmarks included) as its
 * PartialObjectMetadata, in a stream whose Content-Type stays
 * application/json, as Kubernetes answers it.
 *
 * Memory: every event waits in its stream's buffer until the client reads it.
 * The buffers of one server share a budget (WATCH_BUDGET, 128 MiB) counted in
 * allocated bytes: a stream may grow its buffer while the total stays within
 * the budget, or while its own buffer stays within its share (the budget over
 * the number of streams), and never beyond MAX_BUFFERED. A stream that may
 * not is cut: the events it has not started sending are dropped, its buffer
 * shrinks to the rest of the line being sent and the response ends after it,
 * so the client sees whole events, then the end of the watch, and watches
 * again from the last resourceVersion it saw (as client-go's reflector does
 * when kube-apiserver closes a watcher that is too slow). A drained buffer
 * larger than a few read blocks is freed. Total buffer memory stays under
 * twice the budget; a client that never reads the rest of its line is closed
 * by the connection timeout.
 *
 * Locking: stream->lock guards the buffer and the flags. The reader runs on
 * the connection's MHD thread, the event callback on a store thread; suspend and resume
 * are both called with stream->lock held, so an event can never be missed
 * between "buffer empty" and "suspended". A ticker thread (one per server)
 * ends streams past their deadline, asks for bookmarks, and checks
 * suspended streams' sockets so that a vanished client is noticed and its
 * watch freed even when no event comes.
 *
 * What a watcher sees of the store's events (ck__watch_event: selection
 * transitions, conversion, bookmarks, failures), its initial events and the
 * check of its resourceVersion are shared with the watches of components in
 * the server's own process (inprocess.c), which get the same events through
 * a struct ck__watch_sink of their own instead of a buffer.
 *
 * Errors: a watch refused before it starts is answered with a Status; one
 * that fails later (compaction, the store) ends with an ERROR event whose
 * Status status.c builds (without empty details, as Kubernetes sends it).
 *
 * Tested in tests/apiserver/test_watch.c; also test_watch_gate.c
 * (sendInitialEvents), test_inprocess.c (the same events in-process),
 * test_server.c (1,000 watchers), the client's
 * reflector and informer tests, and kubectl get -w in the e2e tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"
#include "req_mhd.h"

#define MAX_BUFFERED      (64u * 1024 * 1024)  /* a client this far behind is cut off */
#define WATCH_BUDGET      (128u * 1024 * 1024) /* every stream's buffer together, by default */
#define BOOKMARK_INTERVAL 60                   /* seconds, as Kubernetes' cacher roughly does */
#define READ_BLOCK        (32 * 1024)
#define MAX_TIMEOUT       (100LL * 365 * 24 * 3600) /* timeoutSeconds beyond: 100 years */

struct ck__watch_stream {
    pthread_mutex_t lock;
    struct ck_apiserver *server;
    struct MHD_Connection *conn;
    struct ck__watch_view view; /* kind, selectors (owned), bookmarks */
    struct ck_store_watch *store_watch;
    bool table;
    bool table_columns_sent;
    bool partial;  /* each object as its PartialObjectMetadata */
    bool protobuf; /* frames of WatchEvent (application/vnd.kubernetes.protobuf;stream=watch) */
    bool suspended;
    bool ended;  /* no more events: drain the buffer, then end the response */
    bool closed; /* the response is gone: never touch conn again */
    time_t deadline;
    time_t next_bookmark;
    char *buf;
    size_t len, off, cap;
    bool mid_line;    /* the last byte handed to the client ended no line */
    size_t frame_end; /* protobuf: where the frame holding buf[off] ends (>= off) */
    struct ck__watch_stream *next_active; /* server->watches list, under server->watches_lock */
};

/* ---- the buffer --------------------------------------------------------- */

static size_t budget_of(struct ck_apiserver *server)
{
    size_t budget = atomic_load(&server->watch_budget);
    return budget ? budget : WATCH_BUDGET;
}

/* Sets s's buffer to cap bytes (0: frees it), keeping the server's total exact. */
static bool resize(struct ck__watch_stream *s, size_t cap)
{
    char *buf = NULL;
    if (cap) {
        buf = ck__realloc(s->buf, cap);
        if (!buf)
            return false;
    } else {
        free(s->buf);
    }
    if (cap > s->cap)
        atomic_fetch_add(&s->server->watch_buffered, cap - s->cap);
    else
        atomic_fetch_sub(&s->server->watch_buffered, s->cap - cap);
    s->buf = buf;
    s->cap = cap;
    return true;
}

/* Moves the unsent bytes to the front of the buffer. */
static void compact(struct ck__watch_stream *s)
{
    if (s->off == 0)
        return;
    memmove(s->buf, s->buf + s->off, s->len - s->off);
    s->len -= s->off;
    s->frame_end -= s->off;
    s->off = 0;
}

/*
 * Whether s may grow its buffer by grow bytes (see "Memory" above): what
 * counts is memory, the buffers' capacity. Call with s->lock held.
 */
static bool may_grow(const struct ck__watch_stream *s, size_t grow)
{
    size_t mine = s->cap + grow;
    if (mine > MAX_BUFFERED)
        return false;
    size_t budget = budget_of(s->server);
    if (atomic_load(&s->server->watch_buffered) + grow <= budget)
        return true;
    int streams = atomic_load(&s->server->active_watches);
    return mine <= budget / (size_t)(streams > 0 ? streams : 1);
}

/*
 * Ends s without the events it has not started sending: the buffer keeps
 * only the rest of the line being sent (shrunk to it), so the stream stops
 * between two whole events. Call with s->lock held.
 */
static void cut(struct ck__watch_stream *s)
{
    size_t keep = s->off;
    if (s->protobuf) {
        keep = s->frame_end; /* the frame being sent, whole */
    } else if (s->mid_line) {
        const char *nl = memchr(s->buf + s->off, '\n', s->len - s->off);
        keep = nl ? (size_t)(nl - s->buf) + 1 : s->len;
    }
    s->len = keep;
    compact(s);
    if (s->len < s->cap)
        resize(s, s->len); /* on failure it keeps the larger buffer, still counted */
    s->ended = true;
}

/* Wakes the reader; call with s->lock held. */
static void wake(struct ck__watch_stream *s)
{
    if (s->suspended && !s->closed) {
        s->suspended = false;
        MHD_resume_connection(s->conn);
    }
}

/*
 * Appends {"type":T,"object":OBJECT}\n, whole or not at all: a line cut
 * short would be malformed JSON for the client. When the client is too far
 * behind or the buffer cannot grow, the stream ends instead; the client
 * watches again from the last resourceVersion it saw, so nothing is lost.
 */
/* Room for len more bytes in the buffer, or false with the stream ended. */
static bool reserve(struct ck__watch_stream *s, size_t len)
{
    if (s->len + len > s->cap)
        compact(s);
    if (s->len + len > s->cap) {
        /* room for this event and, while the backlog is small, a few more */
        size_t want = s->len + len;
        size_t cap = want < READ_BLOCK * 4 ? want * 2 : want + want / 4;
        if (!may_grow(s, cap - s->cap) && !may_grow(s, (cap = want) - s->cap)) {
            CK_LOGV(1, "watch on %s: client too slow, closing the stream", s->view.kind->resource);
            cut(s);
            return false;
        }
        if (!resize(s, cap)) {
            cut(s);
            return false;
        }
    }
    return true;
}

/*
 * The protobuf stream's event: one frame (length, WatchEvent) for the JSON
 * object, whole or not at all; what cannot be encoded ends the stream.
 */
static void push_proto_event(struct ck__watch_stream *s, const char *type, const char *object,
                             size_t object_len)
{
    /* the object's encoding is made once for every watcher (protobuf.c's cache) */
    char *encoded = NULL, *frame = NULL;
    size_t encoded_len = 0, len = 0;
    struct ck_err err = {0};
    int r = ck__json_to_proto(object, object_len, &encoded, &encoded_len, &err);
    if (r == 0)
        r = ck_proto_watch_frame(type, encoded, encoded_len, &frame, &len, &err);
    free(encoded);
    ck_err_release(&err);
    if (r < 0) {
        s->ended = true;
        return;
    }
    if (reserve(s, len)) {
        memcpy(s->buf + s->len, frame, len);
        s->len += len;
    }
    free(frame);
}

/*
 * Appends the JSON event {"type":T,"object":O}\n, O being object[0, head),
 * rv (rv_len bytes), object[head, len): a stored object with its spliced
 * resourceVersion (ck__serve_stored_parts) goes into the stream straight from
 * the stored bytes, without a served copy per watcher.
 */
static void push_json_parts(struct ck__watch_stream *s, const char *type, const char *object,
                            size_t object_len, size_t head, const char *rv, size_t rv_len)
{
    if (s->ended)
        return;
    char start[48];
    size_t start_len = (size_t)snprintf(start, sizeof(start), "{\"type\":\"%s\",\"object\":", type);
    size_t len = start_len + object_len + rv_len + 2;
    if (!reserve(s, len))
        return;
    char *at = s->buf + s->len;
    memcpy(at, start, start_len);
    at += start_len;
    memcpy(at, object, head);
    at += head;
    if (rv_len)
        memcpy(at, rv, rv_len);
    at += rv_len;
    memcpy(at, object + head, object_len - head);
    at += object_len - head;
    memcpy(at, "}\n", 2);
    s->len += len;
}

static void push_event(struct ck__watch_stream *s, const char *type, const char *object,
                       size_t object_len)
{
    if (s->ended)
        return;
    if (s->protobuf)
        push_proto_event(s, type, object, object_len);
    else
        push_json_parts(s, type, object, object_len, object_len, NULL, 0);
}

/* An ERROR event with err's Status; the stream ends after it. */
static void push_error(struct ck__watch_stream *s, const struct ck_err *err)
{
    size_t len = 0;
    char *status = ck__status_json(err, true, &len);
    if (status)
        push_event(s, "ERROR", status, len);
    else
        push_event(s, "ERROR", ck__status_no_memory, strlen(ck__status_no_memory));
    free(status);
    s->ended = true;
}

/*
 * Ends the stream with a 500 ERROR: an event this watcher should get could
 * not be built. Its client lists or watches again, and gets it then.
 */
static void push_no_memory(struct ck__watch_stream *s)
{
    struct ck_err err = {0};
    ck_err_no_memory(&err);
    push_error(s, &err);
}

static void push_json_event(struct ck__watch_stream *s, const char *type, json_t *object)
{
    size_t len = 0;
    char *text = ck__json_dumps(object, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
    if (text)
        push_event(s, type, text, len);
    else
        push_no_memory(s);
    free(text);
}

json_t *ck__watch_served_object(const struct ck_kind *kind, const struct ck_kv *kv,
                                int64_t revision)
{
    json_t *obj = ck__decode_served(kind, kv);
    char rv[32];
    snprintf(rv, sizeof(rv), "%lld", (long long)revision);
    if (obj && json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                                   json_string(rv)) < 0)
        obj = (json_decref(obj), NULL);
    return obj;
}

/* An object event of kv, already in the version watched: as the served bytes, a one-row
 * Table, or PartialObjectMetadata. */
static void push_converted_event(struct ck__watch_stream *s, const char *type,
                                 const struct ck_kv *kv, int64_t revision)
{
    if (s->table || s->partial) {
        json_t *obj = ck__watch_served_object(s->view.kind, kv, revision);
        char rv[32];
        snprintf(rv, sizeof(rv), "%lld", (long long)revision);
        if (!obj) {
            push_no_memory(s);
            return;
        }
        json_t *table = s->partial
                            ? ck__partial_object(obj)
                            : ck_table_build(s->view.kind, &obj, 1, !s->table_columns_sent,
                                             CK_INCLUDE_METADATA, rv, NULL, (long long)time(NULL));
        s->table_columns_sent = true;
        json_decref(obj);
        if (table)
            push_json_event(s, type, table);
        else
            push_no_memory(s);
        json_decref(table);
        return;
    }
    struct ck__served_parts parts;
    if (s->protobuf) { /* the encoder takes the served object whole */
        size_t len = 0;
        char *served = ck__serve_stored(s->view.kind, kv->value, kv->value_len, revision, &len);
        if (served)
            push_event(s, type, served, len);
        else
            push_no_memory(s);
        free(served);
    } else if (ck__serve_stored_parts(s->view.kind, kv->value, kv->value_len, revision, &parts) <
               0) {
        push_no_memory(s);
    } else if (parts.owned) {
        push_event(s, type, parts.owned, parts.owned_len);
        free(parts.owned);
    } else {
        push_json_parts(s, type, kv->value, kv->value_len, parts.head, parts.rv, parts.rv_len);
    }
}

json_t *ck__watch_bookmark(const struct ck_kind *kind, int64_t revision, bool initial_end,
                           bool partial)
{
    char rv[32], api_version[CK_API_VERSION_MAX];
    snprintf(rv, sizeof(rv), "%lld", (long long)revision);
    json_t *meta = json_pack("{s:s}", "resourceVersion", rv);
    /* without its annotation the client would wait for the end of the initial events */
    if (meta && initial_end &&
        json_object_set_new(meta, "annotations",
                            json_pack("{s:s}", "k8s.io/initial-events-end", "true")) < 0)
        meta = (json_decref(meta), NULL);
    /* a PartialObjectMetadata watch gets its bookmarks in that form too */
    return json_pack(
        "{s:s, s:s, s:o}", "kind", partial ? "PartialObjectMetadata" : kind->kind, "apiVersion",
        partial ? "meta.k8s.io/v1" : ck_kind_api_version(kind, api_version, sizeof(api_version)),
        "metadata", meta);
}

/* A BOOKMARK: an object of the kind holding only metadata.resourceVersion. */
static void push_bookmark(struct ck__watch_stream *s, int64_t revision, bool initial_end)
{
    json_t *obj = ck__watch_bookmark(s->view.kind, revision, initial_end, s->partial);
    if (obj)
        push_json_event(s, "BOOKMARK", obj);
    else
        push_no_memory(s);
    json_decref(obj);
}

/* ---- store events ------------------------------------------------------- */

/* 1 when kv passes the watch's selectors, 0 when not, CK_ENOMEM when it cannot tell. */
static int kv_passes(const struct ck__watch_view *v, const struct ck_kv *kv)
{
    if (!kv || kv->value_len == 0)
        return 0;
    if (!v->labels && !v->fields)
        return 1;
    json_t *obj = ck__decode_served(v->kind, kv); /* selectors see the defaults, as served */
    if (!obj)
        return CK_ENOMEM;
    bool ok = ck__matches(v->kind, obj, v->labels, v->fields);
    json_decref(obj);
    return ok;
}

/* The watcher fails with a 500: an event it should get could not be built. */
static void fail_no_memory(const struct ck__watch_sink *sink, void *arg)
{
    struct ck_err err = {0};
    ck_err_no_memory(&err);
    sink->fail(arg, &err, true);
    ck_err_release(&err);
}

/*
 * A conversion webhook's failure on an event: kube-apiserver's watch encoder converts
 * the event, and when that fails it logs and ends the stream (handlers/watch.go); so do
 * we, and the client watches again from the last resourceVersion it saw.
 */
static void end_unconverted(const struct ck__watch_sink *sink, void *arg, const struct ck_err *err)
{
    CK_LOGS(0, "unable to encode watch object", "err", ck_err_message(err));
    sink->fail(arg, err, false);
}

/* An object event of kv, converted first when its kind has a conversion webhook. */
static void emit_object(const struct ck__watch_view *v, const char *type, const struct ck_kv *kv,
                        int64_t revision, const struct ck__watch_sink *sink, void *arg)
{
    if (v->kind->conversion_webhook) { /* in the version watched */
        struct ck_err err = {0};
        const struct ck_kv *converted = ck_kv_ref(kv);
        if (ck__convert_kvs(v->server->registry, v->kind, &converted, 1, false, &err) < 0)
            end_unconverted(sink, arg, &err);
        else
            sink->object(arg, type, converted, revision);
        ck_kv_unref(converted);
        ck_err_release(&err);
        return;
    }
    sink->object(arg, type, kv, revision);
}

/*
 * *cur and *prev (either may be NULL) replaced by their conversion to the version
 * watched, in one review, so that the selectors see what the watcher gets. 0, or < 0
 * with the watcher ended.
 */
static int convert_for_selectors(const struct ck__watch_view *v, const struct ck_kv **cur,
                                 const struct ck_kv **prev, const struct ck__watch_sink *sink,
                                 void *arg)
{
    const struct ck_kv *batch[2];
    size_t n = 0;
    if (*cur)
        batch[n++] = *cur;
    if (*prev)
        batch[n++] = *prev;
    struct ck_err err = {0};
    int r = ck__convert_kvs(v->server->registry, v->kind, batch, n, n > 1, &err);
    if (r < 0) {
        end_unconverted(sink, arg, &err);
        ck_err_release(&err);
        return r;
    }
    n = 0;
    if (*cur)
        *cur = batch[n++];
    if (*prev)
        *prev = batch[n++];
    return 0;
}

void ck__watch_event(const struct ck__watch_view *v, const struct ck_store_event *ev,
                     const struct ck__watch_sink *sink, void *arg)
{
    /* the object and its previous state, converted first when selectors must see them */
    const struct ck_kv *cur = ck_kv_ref(ev->kv), *prev = ck_kv_ref(ev->prev_kv);
    if (v->kind->conversion_webhook && (v->labels || v->fields) &&
        convert_for_selectors(v, &cur, &prev, sink, arg) < 0)
        goto out_unref;
    switch (ev->type) {
    case CK_STORE_EVENT_PUT: {
        int now = kv_passes(v, cur);
        int before = kv_passes(v, prev);
        if (now < 0 || before < 0)
            fail_no_memory(sink, arg);
        else if (now)
            emit_object(v, before ? "MODIFIED" : "ADDED", cur, ev->revision, sink, arg);
        else if (before) /* it left this watcher's selection */
            emit_object(v, "DELETED", prev, ev->revision, sink, arg);
        break;
    }
    case CK_STORE_EVENT_DELETE: {
        int before = kv_passes(v, prev);
        if (before < 0)
            fail_no_memory(sink, arg);
        else if (before)
            emit_object(v, "DELETED", prev, ev->revision, sink, arg);
        break;
    }
    case CK_STORE_EVENT_PROGRESS:
        if (v->bookmarks)
            sink->bookmark(arg, ev->revision);
        break;
    case CK_STORE_EVENT_ERROR: {
        struct ck_err err = {0};
        if (ev->error == CK_ECOMPACTED)
            ck_err_status(&err, "Expired", "too old resource version: %lld",
                          (long long)ev->compact_revision);
        else
            ck_err_status(&err, "InternalError", "%s", ev->message ? ev->message : "watch failed");
        sink->fail(arg, &err, true);
        ck_err_release(&err);
        break;
    }
    }
out_unref:
    ck_kv_unref(cur);
    ck_kv_unref(prev);
}

/* The HTTP stream as a watcher: events become lines (or frames) of its buffer. */
static void stream_object(void *arg, const char *type, const struct ck_kv *kv, int64_t revision)
{
    push_converted_event(arg, type, kv, revision);
}

static void stream_bookmark(void *arg, int64_t revision)
{
    push_bookmark(arg, revision, false);
}

static void stream_fail(void *arg, const struct ck_err *err, bool send)
{
    struct ck__watch_stream *s = arg;
    if (send)
        push_error(s, err);
    s->ended = true;
}

static const struct ck__watch_sink stream_sink = {stream_object, stream_bookmark, stream_fail};

static void on_store_event(const struct ck_store_event *ev, void *userdata)
{
    struct ck__watch_stream *s = userdata;
    pthread_mutex_lock(&s->lock);
    /* cut or finished: building the event would be wasted work */
    if (!s->ended)
        ck__watch_event(&s->view, ev, &stream_sink, s);
    wake(s);
    pthread_mutex_unlock(&s->lock);
}

/* ---- the HTTP response -------------------------------------------------- */

static ssize_t read_stream(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct ck__watch_stream *s = cls;
    pthread_mutex_lock(&s->lock);
    size_t avail = s->len - s->off;
    if (avail == 0) {
        if (s->ended) {
            pthread_mutex_unlock(&s->lock);
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        s->suspended = true;
        MHD_suspend_connection(s->conn);
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    size_t n = avail < max ? avail : max;
    memcpy(out, s->buf + s->off, n);
    s->off += n;
    s->mid_line = out[n - 1] != '\n';
    /* protobuf: past the frames sent whole, to the end of the one being sent */
    while (s->protobuf && s->frame_end < s->off && s->frame_end + 4 <= s->len) {
        const unsigned char *p = (const unsigned char *)s->buf + s->frame_end;
        s->frame_end += 4 + ((size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3]);
    }
    if (s->off == s->len) {
        s->frame_end = 0;
        s->off = s->len = 0;
        if (s->cap > READ_BLOCK * 4)
            resize(s, 0); /* a burst is over: give its memory back */
    }
    pthread_mutex_unlock(&s->lock);
    return (ssize_t)n;
}

static void unlink_stream(struct ck__watch_stream *s)
{
    struct ck_apiserver *server = s->server;
    pthread_mutex_lock(&server->watches_lock);
    for (struct ck__watch_stream **p = &server->watches; *p; p = &(*p)->next_active) {
        if (*p == s) {
            *p = s->next_active;
            break;
        }
    }
    pthread_mutex_unlock(&server->watches_lock);
}

/* MHD is done with the response: the connection is going. Free everything. */
static void free_stream(void *cls)
{
    struct ck__watch_stream *s = cls;
    struct ck_apiserver *server = s->server;
    unlink_stream(s);
    pthread_mutex_lock(&s->lock);
    s->closed = true;
    pthread_mutex_unlock(&s->lock);
    ck_store_watch_cancel(s->store_watch); /* no callback runs after this */
    resize(s, 0);
    ck_label_selector_free(s->view.labels);
    ck_field_selector_free(s->view.fields);
    pthread_mutex_destroy(&s->lock);
    free(s);
    atomic_fetch_sub(&server->active_watches, 1);
}

/* ---- the ticker: deadlines, bookmarks, vanished clients ------------------- */

static bool peer_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info)
        return false;
    struct pollfd p = {.fd = info->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
        return true;
    char byte;
    return recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void ck__watch_tick(struct ck_apiserver *server, bool stopping)
{
    time_t now = time(NULL);
    pthread_mutex_lock(&server->watches_lock);
    for (struct ck__watch_stream *s = server->watches; s; s = s->next_active) {
        pthread_mutex_lock(&s->lock);
        if (!s->closed) {
            if (stopping || now >= s->deadline || (s->suspended && peer_gone(s->conn)))
                s->ended = true;
            if (s->view.bookmarks && now >= s->next_bookmark && !s->ended) {
                s->next_bookmark = now + BOOKMARK_INTERVAL;
                ck_store_watch_progress(s->store_watch, NULL);
            }
            if (s->ended)
                wake(s);
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&server->watches_lock);
}

/* ---- starting a watch --------------------------------------------------- */

int ck__watch_initial(const struct ck__watch_view *v, const char *namespace,
                      const struct ck__watch_sink *sink, void *arg, int64_t *ret_revision,
                      struct ck_err *reterr)
{
    struct ck__list_options opts = {
        .namespace = namespace, .labels = v->labels, .fields = v->fields};
    struct ck__list_result result;
    int r = ck__registry_list(v->server->registry, v->kind, &opts, &result, reterr);
    if (r < 0)
        return r;
    for (size_t i = 0; i < result.n_kvs; i++)
        emit_object(v, "ADDED", result.kvs[i], result.kvs[i]->mod_revision, sink, arg);
    *ret_revision = result.revision;
    ck__list_result_release(&result);
    return 0;
}

int ck__watch_start(struct ck_apiserver *server, const char *rv, int64_t *ret_start,
                    struct ck_err *reterr)
{
    *ret_start = 0;
    if (!rv || !*rv || strcmp(rv, "0") == 0)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(rv, &end, 10);
    if (*end || v < 0 || errno == ERANGE)
        return ck_err_status(reterr, "BadRequest", "invalid resource version");
    /*
     * A revision the store has not reached: 504 as Kubernetes answers once
     * its watch cache has waited for it. The store's revision is read
     * directly, so there is nothing to wait for.
     */
    struct ck_err rv_err = {0};
    int64_t current = 0;
    if (ck_store_revisions(server->store, &current, NULL, &rv_err) < 0)
        return ck_err_internal(reterr, "%s", rv_err.msg);
    if (v > current)
        return ck__err_too_large_rv(reterr, v, current);
    *ret_start = v;
    return 0;
}

/*
 * Kubernetes' validation of a watch's options (apimachinery's
 * validateWatchOptions): sendInitialEvents needs resourceVersionMatch
 * NotOlderThan and the WatchList gate; resourceVersionMatch needs
 * sendInitialEvents, only NotOlderThan, and no continue token.
 */
static void watch_options_errors(const struct ck_apiserver *server, struct ck__req *req,
                                 bool send_initial_param, const char *match,
                                 struct ck_field_errors *errs)
{
    bool not_older = match && strcmp(match, "NotOlderThan") == 0;
    if (send_initial_param) {
        if (!not_older)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "resourceVersionMatch", NULL, false,
                                "sendInitialEvents requires setting resourceVersionMatch to "
                                "NotOlderThan");
        if (!ck__watch_list_enabled(server))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "sendInitialEvents", NULL, false,
                                "sendInitialEvents is forbidden for watch unless the WatchList "
                                "feature gate is enabled");
    }
    if (match && *match) {
        if (!send_initial_param)
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "resourceVersionMatch", NULL, false,
                                "resourceVersionMatch is forbidden for watch unless "
                                "sendInitialEvents is provided");
        if (!not_older)
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "resourceVersionMatch", match, true,
                                "supported values: \"NotOlderThan\"");
        if (ck__query(req, "continue"))
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "resourceVersionMatch", NULL, false,
                                "resourceVersionMatch is forbidden when continue is provided");
    }
}

enum ck__res ck__serve_watch(struct ck_apiserver *server, struct ck__req *req,
                             const struct ck__target *t)
{
    const char *rv = ck__query(req, "resourceVersion");
    const char *match = ck__query(req, "resourceVersionMatch");
    bool send_initial_param = ck__query(req, "sendInitialEvents") != NULL;
    bool send_initial = ck__query_bool(req, "sendInitialEvents");
    struct ck_field_errors errs = {0};
    watch_options_errors(server, req, send_initial_param, match, &errs);
    if (errs.len || errs.nomem) {
        struct ck_err invalid = {0};
        ck__err_invalid(&invalid, "meta.k8s.io", "ListOptions", "", &errs);
        ck_field_errors_release(&errs);
        return ck__fail(req, &invalid);
    }
    if (ck__negotiate_kind(req, t->kind) == CK__ACCEPT_PARTIAL_LIST) {
        /* a watch's events carry single objects */
        struct ck_err shape = {0};
        ck__err_partial_shape(&shape, t->kind, CK__ACCEPT_PARTIAL_LIST);
        return ck__fail(req, &shape);
    }
    int64_t start = 0;
    bool initial = !rv || !*rv || strcmp(rv, "0") == 0 || send_initial;
    struct ck_err start_err = {0};
    if (ck__watch_start(server, rv, &start, &start_err) < 0)
        return ck__fail(req, &start_err);
    const char *timeout = ck__query(req, "timeoutSeconds");
    long long timeout_s = timeout ? strtoll(timeout, NULL, 10) : 0;
    if (timeout_s > MAX_TIMEOUT)
        timeout_s = MAX_TIMEOUT; /* clamped: a deadline past time_t's range would wrap */
    if (timeout_s <= 0) {
        unsigned r = 0;
        if (getrandom(&r, sizeof(r), 0) != sizeof(r))
            r = (unsigned)time(NULL);
        timeout_s = 1800 + (long long)(r % 1800); /* Kubernetes: [30, 60) minutes */
    }

    struct ck_err err = {0};
    int r = 0;
    struct ck__watch_stream *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck__fail_no_memory(req);
    pthread_mutex_init(&s->lock, NULL);
    s->server = server;
    s->conn = ck__req_mhd(req); /* transitional: suspended and resumed here */
    s->view.server = server;
    s->view.kind = t->kind;
    enum ck__accept accept = ck__negotiate_kind(req, t->kind);
    s->table = accept == CK__ACCEPT_TABLE;
    s->protobuf = accept == CK__ACCEPT_PROTOBUF;
    s->partial = accept == CK__ACCEPT_PARTIAL;
    s->view.bookmarks = ck__query_bool(req, "allowWatchBookmarks");
    s->deadline = time(NULL) + timeout_s;
    s->next_bookmark = time(NULL) + BOOKMARK_INTERVAL;
    if (ck__parse_selectors(req, t->kind, &s->view.labels, &s->view.fields, &err) < 0)
        goto out_fail;
    if (ck_label_selector_is_empty(s->view.labels))
        s->view.labels = ck_label_selector_free(s->view.labels);
    if (ck_field_selector_is_empty(s->view.fields))
        s->view.fields = ck_field_selector_free(s->view.fields);

    int64_t revision = start;
    if (initial) {
        pthread_mutex_lock(&s->lock);
        r = ck__watch_initial(&s->view, t->namespace, &stream_sink, s, &revision, &err);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
            goto out_fail;
    }
    if (send_initial && s->view.bookmarks)
        push_bookmark(s, revision, true);

    char prefix[CK__KEY_MAX];
    ck__collection_prefix(t->kind, t->namespace, prefix, sizeof(prefix));
    struct ck_err store_err = {0};
    r = ck_store_watch(server->store, prefix, strlen(prefix), true, revision + 1, on_store_event, s,
                       &s->store_watch, &store_err);
    if (r < 0) {
        ck_err_internal(&err, "%s", store_err.msg);
        goto out_fail;
    }

    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_BLOCK,
                                                                  read_stream, s, free_stream);
    if (!resp) {
        ck_store_watch_cancel(s->store_watch);
        s->store_watch = NULL;
        ck_err_no_memory(&err);
        goto out_fail;
    }
    atomic_fetch_add(&server->active_watches, 1);
    pthread_mutex_lock(&server->watches_lock);
    s->next_active = server->watches;
    server->watches = s;
    pthread_mutex_unlock(&server->watches_lock);
    MHD_add_response_header(resp, "Content-Type",
                            /* a Table stream in JSON too, as kube-apiserver's (no as=) */
                            s->protobuf && !s->table ? CK_PROTOBUF_WATCH_MEDIA_TYPE
                                                     : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    return ck__req_mhd_queue(req, 200, resp);

out_fail:
    resize(s, 0);
    ck_label_selector_free(s->view.labels);
    ck_field_selector_free(s->view.fields);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return ck__fail(req, &err);
}
