/*
 * test_record.c - tests for lib/client/record.c, the event recorder: the Event a record
 * makes, the correlator (count bumps by patch, aggregation of similar events into a
 * "(combined from similar events)" one, the per source+object spam filter) on a fake
 * clock, and the asynchronous sender (the queue's bound and drop counter, retries of
 * transport failures, no retry of the server's refusals). The sink is a fake written
 * here, which stores events like a server and can be told to fail or to block. No
 * sleeps: the fake sink's condition variable says when a write happened, and
 * ck_fake_clock_wait_for_waiters() when the sender sleeps again.
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/client.h"
#include "ckube/internal/util.h"

/* ---- the fake sink ------------------------------------------------------------------- */

struct call {
    char verb[8]; /* "create" or "patch" */
    char name[320];
    json_t *body;
};

struct fake_sink {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct call calls[256];
    size_t n_calls;
    json_t *stored; /* name -> event */
    int rv;
    int fail_times; /* the next fail_times calls fail (< 0: every call) */
    int fail_code, fail_http;
    bool blocked; /* calls wait until it is false */
    bool entered; /* a call is waiting while blocked */
};

static void record_call(struct fake_sink *s, const char *verb, const char *name, const json_t *b)
{
    if (s->n_calls < sizeof(s->calls) / sizeof(s->calls[0])) {
        struct call *c = &s->calls[s->n_calls++];
        snprintf(c->verb, sizeof(c->verb), "%s", verb);
        snprintf(c->name, sizeof(c->name), "%s", name);
        c->body = json_deep_copy(b);
    }
    pthread_cond_broadcast(&s->changed);
}

/* Under s->lock: whether this call fails, and with what. */
static int maybe_fail(struct fake_sink *s, struct ck_err *reterr)
{
    s->entered = true;
    pthread_cond_broadcast(&s->changed);
    while (s->blocked)
        pthread_cond_wait(&s->changed, &s->lock);
    if (s->fail_times == 0)
        return 0;
    if (s->fail_times > 0)
        s->fail_times--;
    int r = ck_err_set(reterr, s->fail_code, "injected failure");
    reterr->http_status = s->fail_http;
    return r;
}

static int sink_create(void *data, const char *namespace, const json_t *event, json_t **ret_event,
                       struct ck_err *reterr)
{
    struct fake_sink *s = data;
    (void)namespace;
    pthread_mutex_lock(&s->lock);
    const char *name =
        json_string_value(json_object_get(json_object_get(event, "metadata"), "name"));
    record_call(s, "create", name, event);
    int r = maybe_fail(s, reterr);
    if (r == 0) {
        json_t *stored = json_deep_copy(event);
        char rv[16];
        snprintf(rv, sizeof(rv), "%d", ++s->rv);
        json_object_set_new(json_object_get(stored, "metadata"), "resourceVersion",
                            json_string(rv));
        json_object_set(s->stored, name, stored);
        *ret_event = stored;
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

static int sink_patch(void *data, const char *namespace, const char *name, const json_t *patch,
                      json_t **ret_event, struct ck_err *reterr)
{
    struct fake_sink *s = data;
    (void)namespace;
    pthread_mutex_lock(&s->lock);
    record_call(s, "patch", name, patch);
    int r = maybe_fail(s, reterr);
    json_t *stored = json_object_get(s->stored, name);
    if (r == 0 && !stored) {
        r = ck_err_set(reterr, CK_ENOENT, "events \"%s\" not found", name);
        reterr->http_status = 404;
    } else if (r == 0) {
        json_t *copy = json_deep_copy(patch);
        json_object_update(stored, copy);
        json_decref(copy);
        *ret_event = json_deep_copy(stored);
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

static const struct ck_event_sink_ops sink_ops = {sink_create, sink_patch};

/* Waits until the sink has seen n calls. */
static void wait_calls(struct fake_sink *s, size_t n)
{
    pthread_mutex_lock(&s->lock);
    while (s->n_calls < n)
        pthread_cond_wait(&s->changed, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

/* ---- fixture ------------------------------------------------------------------------- */

struct fixture {
    struct ck_clock *clock;
    struct fake_sink sink;
    struct ck_event_sink iface;
    struct ck_event_recorder *rec;
    json_t *rs;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->clock = ck_fake_clock_new(1000 * CK_SEC);
    pthread_mutex_init(&f->sink.lock, NULL);
    pthread_cond_init(&f->sink.changed, NULL);
    f->sink.stored = json_object();
    f->iface = (struct ck_event_sink){&sink_ops, &f->sink};
    f->rs = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "apiVersion", "apps/v1", "kind",
                      "ReplicaSet", "metadata", "name", "web-7d4b9c", "namespace", "prod", "uid",
                      "uid-1", "resourceVersion", "42");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ck_event_recorder_free(f->rec);
    for (size_t i = 0; i < f->sink.n_calls; i++)
        json_decref(f->sink.calls[i].body);
    json_decref(f->sink.stored);
    json_decref(f->rs);
    pthread_cond_destroy(&f->sink.changed);
    pthread_mutex_destroy(&f->sink.lock);
    ck_fake_clock_free(f->clock);
    free(f);
    return 0;
}

static void start(struct fixture *f, bool synchronous, size_t queue_len, int max_tries)
{
    struct ck_event_recorder_options o = {
        .component = "replicaset-controller",
        .synchronous = synchronous,
        .queue_len = queue_len,
        .max_tries = max_tries,
        .retry_interval = 10 * CK_SEC,
        .correlator = {.clock = f->clock},
    };
    assert_int_equal(ck_event_recorder_new(&o, &f->iface, &f->rec, NULL), 0);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_string_value(v);
}

/* The next `times` sink calls fail with code (times < 0: every call); http 0: transport. */
static void fail_sink(struct fixture *f, int times, int code, int http)
{
    f->sink.fail_times = times;
    f->sink.fail_code = code;
    f->sink.fail_http = http;
}

static struct ck_event_recorder_stats stats(struct fixture *f)
{
    struct ck_event_recorder_stats s;
    ck_event_recorder_stats(f->rec, &s);
    return s;
}

/* The stats once the sender has handled every queued event. */
static struct ck_event_recorder_stats flushed(struct fixture *f)
{
    assert_int_equal(ck_event_recorder_flush(f->rec, 3600 * CK_SEC), 0);
    return stats(f);
}

/* ---- the event ----------------------------------------------------------------------- */

static void test_event_describes_the_object_and_the_source(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "SuccessfulCreate", "Created pod: %s",
                     "web-7d4b9c-x1");
    assert_int_equal(f->sink.n_calls, 1);
    const json_t *ev = f->sink.calls[0].body;
    assert_string_equal(f->sink.calls[0].verb, "create");
    assert_string_equal(str_at(ev, "kind", NULL), "Event");
    assert_string_equal(str_at(ev, "metadata", "namespace"), "prod");
    assert_true(strncmp(str_at(ev, "metadata", "name"), "web-7d4b9c.", 11) == 0);
    assert_string_equal(str_at(ev, "involvedObject", "kind"), "ReplicaSet");
    assert_string_equal(str_at(ev, "involvedObject", "apiVersion"), "apps/v1");
    assert_string_equal(str_at(ev, "involvedObject", "uid"), "uid-1");
    assert_string_equal(str_at(ev, "involvedObject", "resourceVersion"), "42");
    assert_string_equal(str_at(ev, "source", "component"), "replicaset-controller");
    assert_string_equal(str_at(ev, "reportingComponent", NULL), "replicaset-controller");
    assert_string_equal(str_at(ev, "reportingInstance", NULL), "");
    assert_string_equal(str_at(ev, "reason", NULL), "SuccessfulCreate");
    assert_string_equal(str_at(ev, "message", NULL), "Created pod: web-7d4b9c-x1");
    assert_string_equal(str_at(ev, "type", NULL), "Normal");
    assert_int_equal(json_integer_value(json_object_get(ev, "count")), 1);
    assert_non_null(str_at(ev, "firstTimestamp", NULL));
    assert_string_equal(str_at(ev, "firstTimestamp", NULL), str_at(ev, "lastTimestamp", NULL));
    assert_int_equal(stats(f).created, 1);
}

/* What the deployment controller will record: ScalingReplicaSet on the Deployment. */
static void test_scaling_events_on_a_deployment(void **state)
{
    struct fixture *f = *state;
    struct ck_event_recorder_options o = {.component = "deployment-controller",
                                          .synchronous = true,
                                          .correlator = {.clock = f->clock}};
    assert_int_equal(ck_event_recorder_new(&o, &f->iface, &f->rec, NULL), 0);
    json_t *d = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "apiVersion", "apps/v1", "kind",
                          "Deployment", "metadata", "name", "web", "namespace", "default", "uid",
                          "d-uid", "resourceVersion", "7");
    ck_event_recordf(f->rec, d, CK_EVENT_NORMAL, "ScalingReplicaSet",
                     "Scaled up replica set %s from %d to %d", "web-7d4b9c", 0, 3);
    ck_event_recordf(f->rec, d, CK_EVENT_NORMAL, "ScalingReplicaSet",
                     "Scaled down replica set %s from %d to %d", "web-5f6a7b", 3, 2);
    json_decref(d);
    assert_int_equal(f->sink.n_calls, 2);
    const json_t *ev = f->sink.calls[0].body;
    assert_string_equal(str_at(ev, "involvedObject", "kind"), "Deployment");
    assert_string_equal(str_at(ev, "involvedObject", "uid"), "d-uid");
    assert_string_equal(str_at(ev, "source", "component"), "deployment-controller");
    assert_string_equal(str_at(ev, "message", NULL),
                        "Scaled up replica set web-7d4b9c from 0 to 3");
    assert_string_equal(str_at(f->sink.calls[1].body, "message", NULL),
                        "Scaled down replica set web-5f6a7b from 3 to 2");
    assert_string_equal(f->sink.calls[1].verb, "create"); /* another message: another event */
}

static void test_unsupported_type_is_dropped(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    ck_event_recordf(f->rec, f->rs, "Bogus", "X", "y");
    ck_event_recordf(NULL, f->rs, CK_EVENT_NORMAL, "X", "no recorder: no-op");
    assert_int_equal(f->sink.n_calls, 0);
    assert_int_equal(stats(f).recorded, 0);
}

static void test_cluster_scoped_object_gets_default_namespace(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    json_t *node = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Node",
                             "metadata", "name", "n1", "uid", "u-n1");
    ck_event_recordf(f->rec, node, CK_EVENT_WARNING, "NodeNotReady", "down");
    json_decref(node);
    assert_string_equal(str_at(f->sink.calls[0].body, "metadata", "namespace"), "default");
    assert_null(
        json_object_get(json_object_get(f->sink.calls[0].body, "involvedObject"), "namespace"));
}

/* ---- the correlator ------------------------------------------------------------------ */

static void test_repeat_is_a_count_bump_by_patch(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    for (int i = 0; i < 3; i++) {
        ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "Error creating: %s",
                         "quota");
        ck_fake_clock_step(f->clock, 2 * CK_SEC);
    }
    assert_int_equal(f->sink.n_calls, 3);
    const char *first = f->sink.calls[0].name;
    for (int i = 1; i < 3; i++) {
        const json_t *p = f->sink.calls[i].body;
        assert_string_equal(f->sink.calls[i].verb, "patch");
        assert_string_equal(f->sink.calls[i].name, first);
        assert_int_equal(json_integer_value(json_object_get(p, "count")), i + 1);
        assert_string_equal(str_at(p, "message", NULL), "Error creating: quota");
        assert_non_null(str_at(p, "lastTimestamp", NULL));
        assert_int_equal(json_object_size(p), 3);
    }
    /* the stored event: count 3, lastTimestamp moved 4 s past firstTimestamp */
    const json_t *ev = json_object_get(f->sink.stored, first);
    assert_int_equal(json_integer_value(json_object_get(ev, "count")), 3);
    assert_string_not_equal(str_at(ev, "firstTimestamp", NULL), str_at(ev, "lastTimestamp", NULL));
    assert_int_equal(stats(f).created, 1);
    assert_int_equal(stats(f).patched, 2);
}

static void test_patch_of_a_vanished_event_creates_it_again(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R", "m");
    json_object_clear(f->sink.stored); /* expired on the server */
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R", "m");
    assert_int_equal(f->sink.n_calls, 3);
    assert_string_equal(f->sink.calls[1].verb, "patch");
    assert_string_equal(f->sink.calls[2].verb, "create");
    const json_t *ev = f->sink.calls[2].body;
    assert_int_equal(json_integer_value(json_object_get(ev, "count")), 2);
    assert_null(json_object_get(json_object_get(ev, "metadata"), "resourceVersion"));
}

static void test_keys(void **state)
{
    struct fixture *f = *state;
    struct ck_event_correlator *c;
    struct ck_event_correlator_options o = {.clock = f->clock};
    assert_int_equal(ck_event_correlator_new(&o, &c, NULL), 0);
    /* the same event about another uid (a recreated object) is not a repeat */
    json_t *a =
        json_pack("{s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s}, s:{s:s}, s:s, s:s, s:s, s:i}", "kind",
                  "Event", "metadata", "name", "a.1", "namespace", "ns", "involvedObject", "kind",
                  "Pod", "name", "p", "uid", "u1", "source", "component", "c", "type", "Normal",
                  "reason", "R", "message", "m", "count", 1);
    json_t *b = json_deep_copy(a);
    json_object_set_new(json_object_get(b, "involvedObject"), "uid", json_string("u2"));
    struct ck_event_correlation r;
    assert_int_equal(ck_event_correlate(c, a, &r), 0);
    assert_null(r.patch);
    ck_event_correlation_release(&r);
    assert_int_equal(ck_event_correlate(c, b, &r), 0);
    assert_null(r.patch);
    ck_event_correlation_release(&r);
    /* the exact event again is, even before the server answered (no update_state) */
    assert_int_equal(ck_event_correlate(c, a, &r), 0);
    assert_non_null(r.patch);
    assert_int_equal(json_integer_value(json_object_get(r.event, "count")), 2);
    ck_event_correlation_release(&r);
    assert_int_equal(ck_event_correlate(c, NULL, &r), CK_EINVAL);
    json_decref(a);
    json_decref(b);
    ck_event_correlator_free(c);
}

static void test_ten_similar_events_are_combined(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    for (int i = 0; i < 9; i++)
        ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "Error %d", i);
    assert_int_equal(f->sink.n_calls, 9);
    for (int i = 0; i < 9; i++)
        assert_string_equal(f->sink.calls[i].verb, "create");
    /* the tenth distinct message within 10 minutes: one combined event */
    ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "Error %d", 9);
    assert_int_equal(f->sink.n_calls, 10);
    const json_t *agg = f->sink.calls[9].body;
    assert_string_equal(f->sink.calls[9].verb, "create");
    assert_string_equal(str_at(agg, "message", NULL), "(combined from similar events): Error 9");
    assert_string_equal(str_at(agg, "reason", NULL), "FailedCreate");
    assert_string_equal(str_at(agg, "involvedObject", "uid"), "uid-1");
    const char *agg_name = f->sink.calls[9].name;
    /* further similar events bump the combined one, whatever their message */
    ck_fake_clock_step(f->clock, 60 * CK_SEC);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "Error %d", 10);
    assert_int_equal(f->sink.n_calls, 11);
    assert_string_equal(f->sink.calls[10].verb, "patch");
    assert_string_equal(f->sink.calls[10].name, agg_name);
    assert_int_equal(json_integer_value(json_object_get(f->sink.calls[10].body, "count")), 2);
    assert_string_equal(str_at(f->sink.calls[10].body, "message", NULL),
                        "(combined from similar events): Error 10");
    /* another reason is not similar */
    ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedDelete", "Error %d", 11);
    assert_string_equal(f->sink.calls[11].verb, "create");
    assert_string_equal(str_at(f->sink.calls[11].body, "message", NULL), "Error 11");
}

static void test_similar_events_window_is_ten_minutes(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    for (int i = 0; i < 9; i++)
        ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "Error %d", i);
    ck_fake_clock_step(f->clock, 601 * CK_SEC); /* more than 10 minutes of silence */
    for (int i = 9; i < 18; i++)
        ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "Error %d", i);
    assert_int_equal(f->sink.n_calls, 18);
    for (size_t i = 0; i < 18; i++)
        assert_true(strncmp(str_at(f->sink.calls[i].body, "message", NULL), "(combined", 9) != 0);
}

static void test_spam_filter_bucket_per_source_and_object(void **state)
{
    struct fixture *f = *state;
    start(f, true, 0, 0);
    char reason[32];
    /* distinct reasons: never aggregated, never repeats; 25 pass, the 26th is skipped */
    for (int i = 0; i < 26; i++) {
        snprintf(reason, sizeof(reason), "Reason%d", i);
        ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, reason, "m");
    }
    assert_int_equal(f->sink.n_calls, 25);
    assert_int_equal(stats(f).skipped, 1);
    /* another object has its own bucket */
    json_t *other = json_deep_copy(f->rs);
    json_object_set_new(json_object_get(other, "metadata"), "uid", json_string("uid-2"));
    ck_event_recordf(f->rec, other, CK_EVENT_NORMAL, "Reason0", "m");
    json_decref(other);
    assert_int_equal(f->sink.n_calls, 26);
    /* one token comes back every 5 minutes */
    ck_fake_clock_step(f->clock, 299 * CK_SEC);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "Late0", "m");
    assert_int_equal(f->sink.n_calls, 26);
    ck_fake_clock_step(f->clock, 1 * CK_SEC); /* 300 s since the bucket emptied: one token */
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "Late1", "m");
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "Late2", "m");
    assert_int_equal(f->sink.n_calls, 27);
    assert_int_equal(stats(f).skipped, 3);
}

/* ---- the sender ---------------------------------------------------------------------- */

static void test_full_queue_drops_and_counts(void **state)
{
    struct fixture *f = *state;
    f->sink.blocked = true;
    start(f, false, 3, 0);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R0", "m");
    pthread_mutex_lock(&f->sink.lock);
    while (!f->sink.entered) /* the sender holds R0 in a write */
        pthread_cond_wait(&f->sink.changed, &f->sink.lock);
    pthread_mutex_unlock(&f->sink.lock);
    char reason[8];
    for (int i = 1; i <= 5; i++) { /* three fit in the queue, two are dropped */
        snprintf(reason, sizeof(reason), "R%d", i);
        ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, reason, "m");
    }
    struct ck_event_recorder_stats s = stats(f);
    assert_int_equal(s.dropped, 2);
    assert_int_equal(s.queue_length, 3);
    assert_int_equal(s.recorded, 6);
    char *text = ck_event_recorder_metrics_text(f->rec);
    assert_non_null(
        strstr(text, "ckube_events_dropped_total{component=\"replicaset-controller\"} 2\n"));
    assert_non_null(
        strstr(text, "ckube_events_queue_length{component=\"replicaset-controller\"} 3\n"));
    free(text);
    pthread_mutex_lock(&f->sink.lock);
    f->sink.blocked = false;
    pthread_cond_broadcast(&f->sink.changed);
    pthread_mutex_unlock(&f->sink.lock);
    s = flushed(f);
    assert_int_equal(s.created, 4);
    assert_int_equal(s.queue_length, 0);
    assert_string_equal(str_at(f->sink.calls[3].body, "reason", NULL), "R3");
}

static void test_unreachable_server_retries_then_drops(void **state)
{
    struct fixture *f = *state;
    fail_sink(f, -1, CK_EIO, 0); /* http_status 0: a transport failure */
    start(f, false, 0, 3);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_WARNING, "FailedCreate", "x");
    for (size_t n = 1; n <= 2; n++) {
        wait_calls(&f->sink, n);
        ck_fake_clock_wait_for_waiters(f->clock, 1); /* the sender sleeps before retrying */
        assert_int_equal(f->sink.n_calls, n);
        ck_fake_clock_step(f->clock, 10 * CK_SEC);
    }
    wait_calls(&f->sink, 3);
    struct ck_event_recorder_stats s = flushed(f);
    assert_int_equal(s.retries, 2);
    assert_int_equal(s.dropped, 1);
    assert_int_equal(s.created, 0);
    assert_int_equal(f->sink.n_calls, 3);
}

static void test_transport_failure_then_success(void **state)
{
    struct fixture *f = *state;
    fail_sink(f, 1, CK_EIO, 0);
    start(f, false, 0, 0);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R", "m");
    wait_calls(&f->sink, 1);
    ck_fake_clock_wait_for_waiters(f->clock, 1);
    ck_fake_clock_step(f->clock, 10 * CK_SEC);
    struct ck_event_recorder_stats s = flushed(f);
    assert_int_equal(s.created, 1);
    assert_int_equal(s.retries, 1);
    assert_int_equal(s.dropped, 0);
}

static void test_server_refusal_is_not_retried(void **state)
{
    struct fixture *f = *state;
    fail_sink(f, -1, CK_EINVAL, 422);
    start(f, false, 0, 0);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R", "m");
    struct ck_event_recorder_stats s = flushed(f);
    assert_int_equal(s.failed, 1);
    assert_int_equal(s.retries, 0);
    assert_int_equal(f->sink.n_calls, 1);
}

static void test_synchronous_failure_is_dropped_at_once(void **state)
{
    struct fixture *f = *state;
    fail_sink(f, 1, CK_EIO, 0);
    start(f, true, 0, 0);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R", "m");
    assert_int_equal(stats(f).dropped, 1);
    ck_event_recordf(f->rec, f->rs, CK_EVENT_NORMAL, "R", "m");
    assert_int_equal(stats(f).created, 1);
}

struct producer {
    struct fixture *f;
    int id;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    char reason[32];
    for (int i = 0; i < 50; i++) {
        snprintf(reason, sizeof(reason), "P%dE%d", p->id, i);
        ck_event_recordf(p->f->rec, p->f->rs, CK_EVENT_NORMAL, reason, "m");
    }
    return NULL;
}

static void test_concurrent_recorders_lose_nothing_uncounted(void **state)
{
    struct fixture *f = *state;
    struct ck_event_recorder_options o = {
        .component = "c",
        .queue_len = 16,
        .correlator = {.clock = f->clock, .spam_burst = 1000},
    };
    assert_int_equal(ck_event_recorder_new(&o, &f->iface, &f->rec, NULL), 0);
    pthread_t t[4];
    struct producer p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = (struct producer){f, i};
        pthread_create(&t[i], NULL, produce, &p[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    struct ck_event_recorder_stats s = flushed(f);
    assert_int_equal(s.recorded, 200);
    assert_int_equal(s.created + s.dropped, 200);
    pthread_mutex_lock(&f->sink.lock);
    assert_int_equal(f->sink.n_calls, s.created);
    pthread_mutex_unlock(&f->sink.lock);
}

/*
 * Every allocation of a recorder's life fails in turn (creation, two records: a create and
 * a count bump, free): nothing crashes or leaks (the sanitizer checks at exit), a failed
 * creation says CK_ENOMEM, a failed record is counted, until the run needs no failure.
 */
static void test_allocation_failures(void **state)
{
    struct fixture *f = *state;
    struct ck_event_recorder_options o = {
        .component = "c", .synchronous = true, .correlator = {.clock = f->clock}};
    unsigned long n = 1, made = 0;
    for (;; n++) {
        struct ck_event_recorder *r = NULL;
        ck__alloc_fail_at(n, false);
        int rc = ck_event_recorder_new(&o, &f->iface, &r, NULL);
        if (rc == 0) {
            ck_event_recordf(r, f->rs, CK_EVENT_NORMAL, "R", "m %d", 1);
            ck_event_recordf(r, f->rs, CK_EVENT_NORMAL, "R", "m %d", 1);
        }
        made = ck__alloc_fail_at(0, false);
        if (rc < 0)
            assert_int_equal(rc, CK_ENOMEM);
        else if (made >= n) {
            struct ck_event_recorder_stats s;
            ck_event_recorder_stats(r, &s);
            assert_true(s.created + s.patched + s.dropped >= 1);
        }
        ck_event_recorder_free(r);
        json_object_clear(f->sink.stored);
        if (made < n)
            break; /* the nth allocation never came: the run went through unhindered */
    }
    assert_true(n > 1);
}

static void test_bad_options(void **state)
{
    struct fixture *f = *state;
    struct ck_event_recorder *r = NULL;
    struct ck_event_recorder_options o = {0};
    assert_int_equal(ck_event_recorder_new(&o, &f->iface, &r, NULL), CK_EINVAL);
    assert_null(ck_event_recorder_free(NULL));
    assert_int_equal(ck_event_recorder_flush(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_event_describes_the_object_and_the_source, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scaling_events_on_a_deployment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_type_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_scoped_object_gets_default_namespace, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_repeat_is_a_count_bump_by_patch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patch_of_a_vanished_event_creates_it_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ten_similar_events_are_combined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_similar_events_window_is_ten_minutes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spam_filter_bucket_per_source_and_object, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_queue_drops_and_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_server_retries_then_drops, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_transport_failure_then_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_refusal_is_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_synchronous_failure_is_dropped_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_recorders_lose_nothing_uncounted, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_allocation_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
