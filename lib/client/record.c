/*
 * record.c - the event recorder: core/v1 Events about what a controller did (client-go
 * tools/record: event.go for the recorder and the sending loop, events_cache.go for the
 * correlator).
 *
 * A recorded event goes through three stages:
 *
 * 1. ck_event_recordf() (makeEvent) builds the Event on the caller's thread: named
 *    "<object>.<hex wall nanoseconds>" in the object's namespace ("default" for
 *    cluster-scoped ones), involvedObject from the object, count 1, both timestamps now,
 *    source and reporting component from the recorder. It is put on a bounded queue (a
 *    ring of queue_len slots); when the ring is full the event is dropped and counted,
 *    as client-go's broadcaster drops when its channel is full. The caller never waits
 *    for the server.
 * 2. The sender thread takes events in order and asks the correlator what to write.
 *    The correlator has three LRU caches, each keyed by a string built from the event:
 *    - aggregation, keyed by source, involved object, type, reason and reporting
 *      component: the set of distinct messages seen within the interval (10 minutes).
 *      Once it holds aggregate_max (10) messages, the event is replaced by one whose
 *      message is prefixed "(combined from similar events): " and whose cache key is
 *      the aggregation key, so later similar events bump that one event's count;
 *    - the event log, keyed by the full event (message included) or the aggregation
 *      key: an event seen before becomes a patch {count, lastTimestamp, message} of
 *      the earlier event's name;
 *    - the spam filter, keyed by source and involved object: a token bucket per key
 *      (burst 25, one token every 5 minutes); an event finding it empty is skipped.
 * 3. The write (recordToSink): a patch when the event is a repeat (a 404 falls back to a
 *    create), else a create. Success tells the correlator what the server stored. A
 *    transport failure is retried up to max_tries (12) times, the first retry after a
 *    random part of retry_interval, then every retry_interval (10 s); an answer from the
 *    server (Status error) is not retried. An event still failing is dropped and counted.
 *
 * Differences from client-go: one sender per recorder rather than a broadcaster shared by
 * several recorders and watchers (no logging watcher, no StartStructuredLogging); the
 * aggregate event keeps reportingComponent/reportingInstance (client-go leaves them
 * empty); a synchronous mode for deterministic controller tests.
 *
 * Time: the correlator reads the injected clock (monotonic) for its windows and buckets,
 * and turns it into wall time with the offset taken at creation, so a fake clock moves
 * the timestamps and names too.
 *
 * Threading: the correlator has one mutex around its caches; the recorder one mutex
 * around its ring, with `wake` (the sender sleeps on it, for work or between retries)
 * and `idle` (flushers sleep on it). Counters are atomics. Writes to the sink happen
 * outside both locks, on the sender thread (or the caller's, when synchronous).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/client.h"
#include "ckube/internal/util.h"
#include "ckube/rest.h"
#include "internal.h"

/* ---- a string-keyed LRU cache (github.com/golang/groupcache/lru) ------------------ */

struct agg_rec {
    char **keys; /* the distinct messages seen, at most max */
    size_t n;
    int64_t last; /* monotonic time of the last similar event */
};

struct log_rec {
    long long count;
    char first[CK__TIME_LEN]; /* firstTimestamp */
    char *name;
    char *rv;
};

struct spam_rec {
    double tokens;
    int64_t last; /* monotonic time of the last refill */
};

struct lru_node {
    struct lru_node *prev, *next; /* most recently used first */
    struct ck__strmap_entry *entry;
    union {
        struct agg_rec agg;
        struct log_rec log;
        struct spam_rec spam;
    } u;
};

struct lru {
    struct ck__strmap map;
    struct lru_node head; /* sentinel of the recency list */
    size_t cap;
    void (*release)(struct lru_node *n);
};

static void agg_release(struct lru_node *n)
{
    for (size_t i = 0; i < n->u.agg.n; i++)
        free(n->u.agg.keys[i]);
    free(n->u.agg.keys);
}

static void log_release(struct lru_node *n)
{
    free(n->u.log.name);
    free(n->u.log.rv);
}

static void lru_init(struct lru *l, size_t cap, void (*release)(struct lru_node *))
{
    memset(l, 0, sizeof(*l));
    l->head.prev = l->head.next = &l->head;
    l->cap = cap;
    l->release = release;
}

static void lru_unlink(struct lru_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

static void lru_push_front(struct lru *l, struct lru_node *n)
{
    n->next = l->head.next;
    n->prev = &l->head;
    l->head.next->prev = n;
    l->head.next = n;
}

static void lru_remove(struct lru *l, struct lru_node *n)
{
    lru_unlink(n);
    if (l->release)
        l->release(n);
    ck__strmap_remove_entry(&l->map, n->entry);
}

static void lru_release(struct lru *l)
{
    while (l->head.next != &l->head)
        lru_remove(l, l->head.next);
    ck__strmap_release(&l->map);
}

/* The node for key, made most recent; NULL when absent. */
static struct lru_node *lru_get(struct lru *l, const char *key)
{
    struct ck__strmap_entry *e = ck__strmap_find(&l->map, key);
    if (!e)
        return NULL;
    struct lru_node *n = e->value;
    lru_unlink(n);
    lru_push_front(l, n);
    return n;
}

/*
 * The node for key, made most recent, created zeroed when absent (evicting the least
 * recent node beyond cap). *ret_created says which. NULL when out of memory.
 */
static struct lru_node *lru_add(struct lru *l, const char *key, bool *ret_created)
{
    struct lru_node *n = lru_get(l, key);
    *ret_created = !n;
    if (n)
        return n;
    struct ck__strmap_entry *e = ck__strmap_insert(&l->map, key, sizeof(struct lru_node));
    if (!e)
        return NULL;
    n = e->value;
    n->entry = e;
    lru_push_front(l, n);
    if (l->map.len > l->cap && l->head.prev != n)
        lru_remove(l, l->head.prev);
    return n;
}

/* ---- event fields -------------------------------------------------------------------- */

/* obj.a.b as a string, "" when absent. */
static const char *field(const json_t *obj, const char *a, const char *b)
{
    const json_t *v = json_object_get(obj, a);
    if (b)
        v = json_object_get(v, b);
    const char *s = json_string_value(v);
    return s ? s : "";
}

/* Concatenates the fields of event named by paths ("a" or "a.b"), as strings.Join(x, ""). */
static char *join_fields(const json_t *event, const char *const *paths)
{
    struct ck__buf b = {0};
    for (const char *const *p = paths; *p; p++) {
        char head[64];
        const char *dot = strchr(*p, '.');
        if (dot) {
            snprintf(head, sizeof(head), "%.*s", (int)(dot - *p), *p);
            ck__buf_adds(&b, field(event, head, dot + 1));
        } else {
            ck__buf_adds(&b, field(event, *p, NULL));
        }
    }
    return ck__buf_take(&b); /* "" for an empty join; NULL when out of memory */
}

/* getEventKey: the exact event. */
static const char *const event_key_fields[] = {
    "source.component",
    "source.host",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.fieldPath",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "type",
    "reason",
    "message",
    NULL,
};

/* EventAggregatorByReasonFunc: the event but its message. */
static const char *const aggregate_key_fields[] = {
    "source.component",
    "source.host",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "type",
    "reason",
    "reportingComponent",
    "reportingInstance",
    NULL,
};

/* getSpamKey: the source and the object. */
static const char *const spam_key_fields[] = {
    "source.component",          "source.host",
    "involvedObject.kind",       "involvedObject.namespace",
    "involvedObject.name",       "involvedObject.uid",
    "involvedObject.apiVersion", NULL,
};

/* ---- the correlator (EventCorrelator) ------------------------------------------------ */

struct ck_event_correlator {
    struct ck_clock *clock;
    int64_t wall0, mono0; /* wall = wall0 + (ck_clock_now - mono0) */
    size_t aggregate_max;
    int64_t aggregate_interval;
    double spam_burst, spam_qps;
    pthread_mutex_t lock; /* guards the three caches */
    struct lru aggregates, log, spam;
};

int ck_event_correlator_new(const struct ck_event_correlator_options *opts,
                            struct ck_event_correlator **ret, struct ck_err *reterr)
{
    struct ck_event_correlator_options o = opts ? *opts : (struct ck_event_correlator_options){0};
    struct ck_event_correlator *c = ck__calloc(1, sizeof(*c));
    if (!c)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    c->clock = o.clock;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->wall0 = (int64_t)ts.tv_sec * CK_SEC + ts.tv_nsec;
    c->mono0 = ck_clock_now(c->clock);
    c->aggregate_max = o.aggregate_max > 0 ? (size_t)o.aggregate_max : CK_EVENT_AGGREGATE_MAX;
    c->aggregate_interval =
        o.aggregate_interval > 0 ? o.aggregate_interval : CK_EVENT_AGGREGATE_INTERVAL;
    c->spam_burst = o.spam_burst > 0 ? o.spam_burst : CK_EVENT_SPAM_BURST;
    c->spam_qps = o.spam_qps > 0 ? o.spam_qps : CK_EVENT_SPAM_QPS;
    size_t cap = o.cache_size > 0 ? o.cache_size : CK_EVENT_CACHE_SIZE;
    pthread_mutex_init(&c->lock, NULL);
    lru_init(&c->aggregates, cap, agg_release);
    lru_init(&c->log, cap, log_release);
    lru_init(&c->spam, cap, NULL);
    *ret = c;
    return 0;
}

struct ck_event_correlator *ck_event_correlator_free(struct ck_event_correlator *c)
{
    if (!c)
        return NULL;
    lru_release(&c->aggregates);
    lru_release(&c->log);
    lru_release(&c->spam);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
}

int64_t ck_event_correlator_wall_now(struct ck_event_correlator *c)
{
    return c->wall0 + (ck_clock_now(c->clock) - c->mono0);
}

static const char *wall_format(int64_t wall, char *buf, size_t size)
{
    return ck__time_format(wall / CK_SEC, -1, buf, size);
}

void ck_event_correlation_release(struct ck_event_correlation *r)
{
    json_decref(r->event);
    json_decref(r->patch);
    memset(r, 0, sizeof(*r));
}

/*
 * EventAggregate, under c->lock: the event to go on with (a new reference: a copy of
 * event, or the aggregate one) and its cache key in *ret_key (caller frees).
 */
static json_t *aggregate(struct ck_event_correlator *c, const json_t *event, int64_t now,
                         char **ret_key)
{
    char *ekey = join_fields(event, event_key_fields);
    char *akey = join_fields(event, aggregate_key_fields);
    const char *message = field(event, "message", NULL);
    bool created;
    struct lru_node *n = ekey && akey ? lru_add(&c->aggregates, akey, &created) : NULL;
    if (!n)
        goto out_nomem;
    struct agg_rec *rec = &n->u.agg;
    if (!created && now - rec->last > c->aggregate_interval) {
        for (size_t i = 0; i < rec->n; i++)
            free(rec->keys[i]);
        rec->n = 0;
    }
    if (!rec->keys) {
        rec->keys = ck__calloc(c->aggregate_max + 1, sizeof(char *));
        if (!rec->keys) {
            lru_remove(&c->aggregates, n);
            goto out_nomem;
        }
    }
    bool seen = false;
    for (size_t i = 0; i < rec->n && !seen; i++)
        seen = strcmp(rec->keys[i], message) == 0;
    if (!seen) {
        char *copy = ck__strdup(message);
        if (!copy)
            goto out_nomem;
        rec->keys[rec->n++] = copy;
    }
    rec->last = now;

    if (rec->n < c->aggregate_max) {
        free(akey);
        *ret_key = ekey;
        return ck__json_copy(event);
    }
    free(rec->keys[--rec->n]); /* never grow beyond max (PopAny) */

    int64_t wall = c->wall0 + (now - c->mono0);
    char ts[CK__TIME_LEN], name[320];
    wall_format(wall, ts, sizeof(ts));
    snprintf(name, sizeof(name), "%s.%llx", field(event, "involvedObject", "name"),
             (unsigned long long)wall);
    struct ck__buf msg = {0};
    ck__buf_printf(&msg, "%s%s", CK_EVENT_AGGREGATE_PREFIX, message);
    json_t *agg =
        msg.err ? NULL
                : json_pack("{s:s, s:s, s:{s:s, s:s}, s:O*, s:s, s:s, s:s, s:O*, s:s, "
                            "s:s, s:i, s:O*, s:O*}",
                            "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
                            "namespace", field(event, "metadata", "namespace"), "involvedObject",
                            json_object_get(event, "involvedObject"), "reason",
                            field(event, "reason", NULL), "message", msg.p, "type",
                            field(event, "type", NULL), "source", json_object_get(event, "source"),
                            "firstTimestamp", ts, "lastTimestamp", ts, "count", 1,
                            "reportingComponent", json_object_get(event, "reportingComponent"),
                            "reportingInstance", json_object_get(event, "reportingInstance"));
    ck__buf_release(&msg);
    free(ekey);
    if (!agg) {
        free(akey);
        return NULL;
    }
    *ret_key = akey;
    return agg;

out_nomem:
    free(ekey);
    free(akey);
    return NULL;
}

/* Sets the event log's record for key from ev. Under c->lock. */
static int log_record(struct ck_event_correlator *c, const char *key, const json_t *ev)
{
    bool created;
    struct lru_node *n = lru_add(&c->log, key, &created);
    if (!n)
        return CK_ENOMEM;
    char *name = ck__strdup(field(ev, "metadata", "name"));
    const char *rv_s = ck__meta_str(ev, "resourceVersion");
    char *rv = rv_s ? ck__strdup(rv_s) : NULL;
    if (!name || (rv_s && !rv)) {
        free(name);
        free(rv);
        return CK_ENOMEM; /* the old record stays */
    }
    log_release(n);
    n->u.log.name = name;
    n->u.log.rv = rv;
    n->u.log.count = json_integer_value(json_object_get(ev, "count"));
    snprintf(n->u.log.first, sizeof(n->u.log.first), "%s", field(ev, "firstTimestamp", NULL));
    return 0;
}

/*
 * eventObserve, under c->lock: ev (taken) becomes the bump of an earlier event when key
 * has a record; *ret_patch gets the patch then (else NULL). Returns ev, or NULL.
 */
static json_t *observe(struct ck_event_correlator *c, json_t *ev, const char *key,
                       json_t **ret_patch)
{
    *ret_patch = NULL;
    struct lru_node *n = lru_get(&c->log, key);
    if (n && n->u.log.count > 0) {
        json_t *meta = json_object_get(ev, "metadata");
        long long count = n->u.log.count + 1;
        if (json_object_set_new(meta, "name", json_string(n->u.log.name)) < 0 ||
            (n->u.log.rv &&
             json_object_set_new(meta, "resourceVersion", json_string(n->u.log.rv)) < 0) ||
            json_object_set_new(ev, "firstTimestamp", json_string(n->u.log.first)) < 0 ||
            json_object_set_new(ev, "count", json_integer(count)) < 0)
            goto out_nomem;
        /* the two-way merge patch from {count 0, lastTimestamp epoch, message ""} */
        json_t *patch = json_pack("{s:I, s:O*}", "count", (json_int_t)count, "lastTimestamp",
                                  json_object_get(ev, "lastTimestamp"));
        const char *message = field(ev, "message", NULL);
        if (!patch ||
            (*message && json_object_set_new(patch, "message", json_string(message)) < 0)) {
            json_decref(patch);
            goto out_nomem;
        }
        *ret_patch = patch;
    }
    if (log_record(c, key, ev) < 0) {
        json_decref(*ret_patch);
        *ret_patch = NULL;
        goto out_nomem;
    }
    return ev;

out_nomem:
    json_decref(ev);
    return NULL;
}

/* EventSourceObjectSpamFilter.Filter, under c->lock: true when ev must be skipped. */
static int spam_filter(struct ck_event_correlator *c, const json_t *ev, int64_t now, bool *ret_skip)
{
    char *key = join_fields(ev, spam_key_fields);
    bool created;
    struct lru_node *n = key ? lru_add(&c->spam, key, &created) : NULL;
    free(key);
    if (!n)
        return CK_ENOMEM;
    struct spam_rec *rec = &n->u.spam;
    if (created) {
        rec->tokens = c->spam_burst; /* a new bucket starts full */
        rec->last = now;
    }
    double refill = (double)(now - rec->last) / (double)CK_SEC * c->spam_qps;
    rec->tokens = rec->tokens + refill > c->spam_burst ? c->spam_burst : rec->tokens + refill;
    rec->last = now;
    *ret_skip = rec->tokens < 1.0 - 1e-9;
    if (!*ret_skip)
        rec->tokens = rec->tokens > 1.0 ? rec->tokens - 1.0 : 0.0;
    return 0;
}

int ck_event_correlate(struct ck_event_correlator *c, const json_t *event,
                       struct ck_event_correlation *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!json_is_object(event))
        return CK_EINVAL;
    int64_t now = ck_clock_now(c->clock);
    char *key = NULL;
    json_t *patch = NULL;
    int r = 0;
    pthread_mutex_lock(&c->lock);
    json_t *ev = aggregate(c, event, now, &key);
    ev = ev ? observe(c, ev, key, &patch) : NULL;
    bool skip = false;
    if (!ev || spam_filter(c, ev, now, &skip) < 0)
        r = CK_ENOMEM;
    pthread_mutex_unlock(&c->lock);
    free(key);
    if (r < 0 || skip) {
        json_decref(ev);
        json_decref(patch);
        ret->skip = skip;
        return r;
    }
    ret->event = ev;
    ret->patch = patch;
    return 0;
}

void ck_event_correlator_update_state(struct ck_event_correlator *c, const json_t *stored)
{
    char *key = join_fields(stored, event_key_fields);
    if (!key)
        return;
    pthread_mutex_lock(&c->lock);
    log_record(c, key, stored); /* out of memory: the next repeat creates a new event */
    pthread_mutex_unlock(&c->lock);
    free(key);
}

/* ---- the REST sink ------------------------------------------------------------------- */

static const struct ck_resource events_resource = {"", "v1", "events", true};

static int rest_create(void *data, const char *namespace, const json_t *event, json_t **ret_event,
                       struct ck_err *reterr)
{
    return ck_rest_create(data, &events_resource, namespace, event, ret_event, reterr);
}

static int rest_patch(void *data, const char *namespace, const char *name, const json_t *patch,
                      json_t **ret_event, struct ck_err *reterr)
{
    return ck_rest_patch(data, &events_resource, namespace, name, NULL, CK_PATCH_STRATEGIC, patch,
                         ret_event, reterr);
}

static const struct ck_event_sink_ops rest_sink_ops = {rest_create, rest_patch};

void ck_event_sink_init_rest(struct ck_event_sink *s, struct ck_rest *rest)
{
    s->ops = &rest_sink_ops;
    s->data = rest;
}

/* ---- the recorder (EventRecorder, EventBroadcaster.StartRecordingToSink) ------------- */

struct ck_event_recorder {
    struct ck_event_sink sink;
    struct ck_event_correlator *correlator;
    struct ck_clock *clock;
    char *component, *host;
    int max_tries;
    int64_t retry_interval;
    bool synchronous;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake;  /* the sender: an event queued, or stop */
    pthread_cond_t idle;  /* flushers: the queue drained and nothing in flight */
    json_t **ring;
    size_t cap, head, len;
    bool busy; /* the sender is handling an event taken off the ring */
    bool stop;
    bool started;
    pthread_t sender;
    unsigned int seed; /* the retry jitter */

    atomic_uint_fast64_t recorded, created, patched, skipped, retries, dropped, failed;
};

/* Sleeps d on the recorder's clock; false when the recorder is stopping. */
static bool pause_for(struct ck_event_recorder *r, int64_t d)
{
    pthread_mutex_lock(&r->lock);
    int64_t deadline = ck_clock_now(r->clock) + d;
    while (!r->stop && ck_clock_now(r->clock) < deadline)
        ck_clock_wait(r->clock, &r->wake, &r->lock, deadline);
    bool go_on = !r->stop;
    pthread_mutex_unlock(&r->lock);
    return go_on;
}

enum write_result { WRITTEN, REFUSED, UNREACHABLE };

/* recordEvent: one write of a correlated event. */
static enum write_result write_once(struct ck_event_recorder *r,
                                    const struct ck_event_correlation *c)
{
    const char *ns = field(c->event, "metadata", "namespace");
    const char *name = field(c->event, "metadata", "name");
    json_t *stored = NULL;
    struct ck_err err = {0};
    int rc = CK_ENOENT;
    if (c->patch) {
        rc = r->sink.ops->patch(r->sink.data, ns, name, c->patch, &stored, &err);
        if (rc == 0)
            atomic_fetch_add(&r->patched, 1);
    }
    if (rc == CK_ENOENT) { /* a first occurrence, or the earlier event is gone */
        json_t *ev = ck__json_copy(c->event);
        if (!ev)
            return UNREACHABLE;
        json_object_del(json_object_get(ev, "metadata"), "resourceVersion");
        json_decref(stored);
        stored = NULL;
        ck_err_release(&err);
        rc = r->sink.ops->create(r->sink.data, ns, ev, &stored, &err);
        json_decref(ev);
        if (rc == 0)
            atomic_fetch_add(&r->created, 1);
    }
    if (rc == 0) {
        ck_event_correlator_update_state(r->correlator, stored ? stored : c->event);
        json_decref(stored);
        ck_err_release(&err);
        return WRITTEN;
    }
    json_decref(stored); /* a sink should leave it alone on failure; be safe if it did not */
    enum write_result w = err.http_status != 0 ? REFUSED : UNREACHABLE;
    if (w == REFUSED && rc == CK_EEXIST)
        CK_LOGV(5, "server rejected event %s/%s: %s (will not retry)", ns, name,
                ck_err_message(&err));
    else if (w == REFUSED)
        CK_LOGE("server rejected event %s/%s: %s (will not retry)", ns, name, ck_err_message(&err));
    else
        CK_LOGV(2, "unable to write event %s/%s: %s (may retry after sleeping)", ns, name,
                ck_err_message(&err));
    ck_err_release(&err);
    return w;
}

/* recordToSink: correlates ev (borrowed) and writes it, retrying transport failures. */
static void send_event(struct ck_event_recorder *r, const json_t *ev)
{
    struct ck_event_correlation c;
    if (ck_event_correlate(r->correlator, ev, &c) < 0) {
        atomic_fetch_add(&r->dropped, 1);
        CK_LOGE("unable to correlate event %s: out of memory", field(ev, "reason", NULL));
        return;
    }
    if (c.skip) {
        atomic_fetch_add(&r->skipped, 1);
        return;
    }
    for (int tries = 1;; tries++) {
        enum write_result w = write_once(r, &c);
        if (w == WRITTEN)
            break;
        if (w == REFUSED) {
            atomic_fetch_add(&r->failed, 1);
            break;
        }
        if (tries >= r->max_tries || r->synchronous) {
            atomic_fetch_add(&r->dropped, 1);
            CK_LOGE("unable to write event %s about %s/%s (retry limit exceeded!)",
                    field(ev, "reason", NULL), field(ev, "involvedObject", "namespace"),
                    field(ev, "involvedObject", "name"));
            break;
        }
        int64_t d = r->retry_interval;
        if (tries == 1) /* randomize the first sleep so senders do not retry in step */
            d = (int64_t)((double)d * ((double)rand_r(&r->seed) / ((double)RAND_MAX + 1.0)));
        atomic_fetch_add(&r->retries, 1);
        if (!pause_for(r, d)) {
            atomic_fetch_add(&r->dropped, 1);
            break;
        }
    }
    ck_event_correlation_release(&c);
}

static void *sender_main(void *arg)
{
    struct ck_event_recorder *r = arg;
    bool worked = false; /* a thread that never allocated has no cache to give back */
    pthread_mutex_lock(&r->lock);
    for (;;) {
        if (worked && r->len == 0 && !r->stop) { /* about to wait */
            pthread_mutex_unlock(&r->lock);
            ck__memory_idle();
            pthread_mutex_lock(&r->lock);
        }
        while (r->len == 0 && !r->stop)
            ck_clock_wait(r->clock, &r->wake, &r->lock, CK_TIME_NEVER);
        if (r->stop)
            break;
        json_t *ev = r->ring[r->head];
        r->ring[r->head] = NULL;
        r->head = (r->head + 1) % r->cap;
        r->len--;
        r->busy = true;
        pthread_mutex_unlock(&r->lock);
        send_event(r, ev);
        json_decref(ev);
        worked = true;
        pthread_mutex_lock(&r->lock);
        r->busy = false;
        if (r->len == 0)
            pthread_cond_broadcast(&r->idle);
    }
    pthread_cond_broadcast(&r->idle);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int ck_event_recorder_new(const struct ck_event_recorder_options *opts,
                          const struct ck_event_sink *sink, struct ck_event_recorder **ret,
                          struct ck_err *reterr)
{
    if (!opts || !opts->component || !*opts->component || !sink || !sink->ops)
        return ck_err_set(reterr, CK_EINVAL, "an event recorder needs a component and a sink");
    struct ck_event_recorder *r = ck__calloc(1, sizeof(*r));
    if (!r)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    r->sink = *sink;
    r->clock = opts->correlator.clock;
    r->max_tries = opts->max_tries > 0 ? opts->max_tries : CK_EVENT_MAX_TRIES;
    r->retry_interval = opts->retry_interval > 0 ? opts->retry_interval : CK_EVENT_RETRY_INTERVAL;
    r->synchronous = opts->synchronous;
    r->cap = opts->queue_len > 0 ? opts->queue_len : CK_EVENT_QUEUE_LEN;
    r->seed = (unsigned int)ck_clock_now(NULL);
    r->component = ck__strdup(opts->component);
    r->host = opts->host ? ck__strdup(opts->host) : NULL;
    r->ring = r->synchronous ? NULL : ck__calloc(r->cap, sizeof(json_t *));
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_cond_init(&r->idle, NULL);
    int rc = 0;
    if (!r->component || (opts->host && !r->host) || (!r->synchronous && !r->ring))
        rc = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (rc == 0)
        rc = ck_event_correlator_new(&opts->correlator, &r->correlator, reterr);
    if (rc == 0 && !r->synchronous) {
        if (pthread_create(&r->sender, NULL, sender_main, r) != 0)
            rc = ck_err_set(reterr, CK_ENOMEM, "cannot start the event sender thread");
        else
            r->started = true;
    }
    if (rc < 0) {
        ck_event_recorder_free(r);
        return rc;
    }
    *ret = r;
    return 0;
}

struct ck_event_recorder *ck_event_recorder_free(struct ck_event_recorder *r)
{
    if (!r)
        return NULL;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    if (r->started)
        pthread_join(r->sender, NULL);
    for (size_t i = 0; r->ring && i < r->len; i++)
        json_decref(r->ring[(r->head + i) % r->cap]);
    free(r->ring);
    ck_event_correlator_free(r->correlator);
    pthread_cond_destroy(&r->idle);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r->component);
    free(r->host);
    free(r);
    return NULL;
}

/* makeEvent: the Event about obj, stamped now. New reference or NULL. */
static json_t *make_event(struct ck_event_recorder *r, const json_t *obj, const char *type,
                          const char *reason, const char *message)
{
    int64_t wall = ck_event_correlator_wall_now(r->correlator);
    char ts[CK__TIME_LEN], name[320];
    wall_format(wall, ts, sizeof(ts));
    const char *obj_name = ck__meta_str(obj, "name");
    const char *obj_ns = ck__meta_str(obj, "namespace");
    snprintf(name, sizeof(name), "%s.%llx", obj_name ? obj_name : "", (unsigned long long)wall);
    json_t *involved =
        json_pack("{s:s*, s:s*, s:s*, s:s*, s:s*, s:s*}", "kind",
                  json_string_value(json_object_get(obj, "kind")), "namespace", obj_ns, "name",
                  obj_name, "uid", ck__meta_str(obj, "uid"), "apiVersion",
                  json_string_value(json_object_get(obj, "apiVersion")), "resourceVersion",
                  ck__meta_str(obj, "resourceVersion"));
    json_t *source = json_pack("{s:s, s:s*}", "component", r->component, "host", r->host);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:o, s:s, s:s, s:i, s:s, "
                     "s:s}",
                     "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                     obj_ns && *obj_ns ? obj_ns : "default", "involvedObject", involved, "reason",
                     reason, "message", message, "type", type, "source", source, "firstTimestamp",
                     ts, "lastTimestamp", ts, "count", 1, "reportingComponent", r->component,
                     "reportingInstance", r->host ? r->host : "");
}

void ck_event_recordf(struct ck_event_recorder *r, const json_t *obj, const char *type,
                      const char *reason, const char *fmt, ...)
{
    if (!r)
        return;
    if (!type || (strcmp(type, CK_EVENT_NORMAL) != 0 && strcmp(type, CK_EVENT_WARNING) != 0)) {
        CK_LOGE("unsupported event type: '%s'", type ? type : "");
        return;
    }
    struct ck__buf msg = {0};
    va_list ap;
    va_start(ap, fmt);
    ck__buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    json_t *ev = msg.err ? NULL : make_event(r, obj, type, reason ? reason : "", msg.p);
    ck__buf_release(&msg);
    atomic_fetch_add(&r->recorded, 1);
    if (!ev) {
        atomic_fetch_add(&r->dropped, 1);
        CK_LOGE("unable to record event %s: out of memory", reason ? reason : "");
        return;
    }
    if (r->synchronous) {
        send_event(r, ev);
        json_decref(ev);
        return;
    }
    pthread_mutex_lock(&r->lock);
    bool full = r->len == r->cap || r->stop;
    if (!full) {
        r->ring[(r->head + r->len) % r->cap] = ev;
        r->len++;
        pthread_cond_signal(&r->wake);
    }
    pthread_mutex_unlock(&r->lock);
    if (full) {
        atomic_fetch_add(&r->dropped, 1);
        CK_LOGE("unable to record event %s about %s: too many queued events, dropped it",
                reason ? reason : "", field(obj, "metadata", "name"));
        json_decref(ev);
    }
}

int ck_event_recorder_flush(struct ck_event_recorder *r, int64_t timeout)
{
    if (!r || r->synchronous)
        return 0;
    pthread_mutex_lock(&r->lock);
    int64_t deadline = ck_clock_now(r->clock) + timeout;
    int rc = 0;
    while ((r->len > 0 || r->busy) && !r->stop && rc == 0)
        if (ck_clock_wait(r->clock, &r->idle, &r->lock, deadline) == CK_ETIMEDOUT)
            rc = CK_ETIMEDOUT;
    if (rc == CK_ETIMEDOUT && r->len == 0 && !r->busy)
        rc = 0;
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void ck_event_recorder_stats(struct ck_event_recorder *r, struct ck_event_recorder_stats *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!r)
        return;
    ret->recorded = atomic_load(&r->recorded);
    ret->created = atomic_load(&r->created);
    ret->patched = atomic_load(&r->patched);
    ret->skipped = atomic_load(&r->skipped);
    ret->retries = atomic_load(&r->retries);
    ret->dropped = atomic_load(&r->dropped);
    ret->failed = atomic_load(&r->failed);
    pthread_mutex_lock(&r->lock);
    ret->queue_length = r->len;
    pthread_mutex_unlock(&r->lock);
}

char *ck_event_recorder_metrics_text(struct ck_event_recorder *r)
{
    struct ck_event_recorder_stats s;
    ck_event_recorder_stats(r, &s);
    const char *component = r ? r->component : "";
    const struct {
        const char *name, *help;
        uint64_t value;
    } counters[] = {
        {"recorded", "Events handed to the recorder.", s.recorded},
        {"created", "Events created on the server.", s.created},
        {"patched", "Repeated events written as a count bump.", s.patched},
        {"skipped", "Events refused by the spam filter.", s.skipped},
        {"retries", "Event writes tried again after a transport failure.", s.retries},
        {"dropped", "Events lost: queue full, or the server unreachable after the last try.",
         s.dropped},
        {"failed", "Events the server refused.", s.failed},
    };
    struct ck__buf b = {0};
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
        ck__buf_printf(&b,
                       "# HELP ckube_events_%s_total %s\n# TYPE ckube_events_%s_total counter\n"
                       "ckube_events_%s_total{component=\"%s\"} %llu\n",
                       counters[i].name, counters[i].help, counters[i].name, counters[i].name,
                       component, (unsigned long long)counters[i].value);
    ck__buf_printf(&b,
                   "# HELP ckube_events_queue_length Events waiting to be sent.\n"
                   "# TYPE ckube_events_queue_length gauge\n"
                   "ckube_events_queue_length{component=\"%s\"} %llu\n",
                   component, (unsigned long long)s.queue_length);
    return ck__buf_take(&b);
}
