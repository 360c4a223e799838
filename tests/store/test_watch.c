/*
 * test_watch.c - the watch hub on its own, over a fake history: a watcher that starts
 * below the ring (or falls behind while it wraps) catches up through history and then
 * follows the ring, every revision once and in order; key and prefix filters; a watch
 * from a compacted revision ends with CK_ECOMPACTED; a progress request is answered
 * with the head; no callback runs after cancel returns.
 *
 * The fake history is the whole log kept in memory, what the SQLite backend's
 * revisions table is to the real hub. (The store conformance suite also runs the hub
 * through the SQLite backend.)
 */
#include "cktest.h"

#include <stdio.h>

#include "../../lib/store/internal.h"
#include "storetest.h"

struct history {
    pthread_mutex_t lock;
    struct ck__event log[64];
    size_t n;
    int64_t compacted;
    int calls;
};

static int fake_history(void *backend, const char *key, size_t key_len, bool prefix, int64_t from,
                        int64_t to, int (*emit)(const struct ck__event *ev, void *arg), void *arg,
                        int64_t *ret_compacted, struct ck_err *reterr)
{
    struct history *h = backend;
    pthread_mutex_lock(&h->lock);
    h->calls++;
    int64_t compacted = h->compacted;
    size_t n = h->n;
    pthread_mutex_unlock(&h->lock);
    if (from <= compacted) {
        *ret_compacted = compacted;
        return ck_err_set(reterr, CK_ECOMPACTED, "compacted");
    }
    for (size_t i = 0; i < n; i++) {
        const struct ck__event *ev = &h->log[i];
        if (ev->revision >= from && ev->revision <= to &&
            ck__key_matches(key, key_len, prefix, ev->kv->key, ev->kv->key_len))
            emit(ev, arg);
    }
    return 0;
}

/* Commits one put of key at the next revision: into the history, then the hub. */
static void commit(struct ck__hub *hub, struct history *h, const char *key)
{
    pthread_mutex_lock(&h->lock);
    int64_t rev = (int64_t)h->n + 1;
    struct ck_kv *kv = ck__kv_new(key, strlen(key), "v", 1, rev, rev, 1);
    assert_non_null(kv);
    h->log[h->n++] = (struct ck__event){.type = CK_STORE_EVENT_PUT, .revision = rev, .kv = kv};
    pthread_mutex_unlock(&h->lock);
    struct ck__event ev = {.type = CK_STORE_EVENT_PUT, .revision = rev, .kv = ck_kv_ref(kv)};
    ck__hub_publish(hub, &ev, 1, rev);
}

static void history_release(struct history *h)
{
    for (size_t i = 0; i < h->n; i++)
        ck_kv_unref(h->log[i].kv);
    pthread_mutex_destroy(&h->lock);
}

/* A hub keeping `capacity` events in memory over the history h. */
static struct ck__hub *hub_new(struct history *h, size_t capacity)
{
    struct ck__hub *hub = NULL;
    assert_int_equal(ck__hub_new(capacity, 0, 0, fake_history, h, &hub, NULL), 0);
    return hub;
}

static void assert_revisions(struct collector *c, int64_t first, size_t n)
{
    pthread_mutex_lock(&c->lock);
    assert_int_equal(c->n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(c->events[i].type, CK_STORE_EVENT_PUT);
        assert_int_equal(c->events[i].revision, first + (int64_t)i);
    }
    pthread_mutex_unlock(&c->lock);
}

static void test_catch_up_below_the_ring_then_follow(void **state)
{
    (void)state;
    struct history h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck__hub *hub = hub_new(&h, 4);
    for (int i = 0; i < 10; i++)
        commit(hub, &h, "/a/x"); /* revisions 1..10; the ring keeps 7..10 */
    struct collector all, recent;
    collector_init(&all);
    collector_init(&recent);
    struct ck_store_watch *w1 = NULL, *w2 = NULL;
    assert_int_equal(ck__hub_watch(hub, NULL, "/a/", 3, true, 2, 0, collect, &all, &w1, NULL), 0);
    assert_int_equal(ck__hub_watch(hub, NULL, "/a/x", 4, false, 9, 0, collect, &recent, &w2, NULL),
                     0);
    assert_true(collector_wait(&all, &all.n, 9));
    assert_true(collector_wait(&recent, &recent.n, 2));
    assert_revisions(&all, 2, 9);    /* 2..10: history, then the ring */
    assert_revisions(&recent, 9, 2); /* 9..10 from the ring alone */
    pthread_mutex_lock(&h.lock);
    assert_int_equal(h.calls, 1); /* only the watcher below the ring read history */
    pthread_mutex_unlock(&h.lock);

    for (int i = 0; i < 6; i++) /* 11..16, the ring wraps again; /b/ matches neither */
        commit(hub, &h, i == 2 ? "/b/y" : "/a/x");
    assert_true(collector_wait(&all, &all.n, 14));
    pthread_mutex_lock(&all.lock);
    assert_int_equal(all.n, 14);
    for (size_t i = 1; i < all.n; i++)
        assert_true(all.events[i].revision > all.events[i - 1].revision); /* once, in order */
    assert_int_equal(all.events[13].revision, 16);
    pthread_mutex_unlock(&all.lock);

    ck__hub_watch_cancel(w1);
    ck__hub_watch_cancel(w2);
    ck__hub_free(hub);
    collector_release(&all);
    collector_release(&recent);
    history_release(&h);
}

static void test_compacted_start_ends_the_watch(void **state)
{
    (void)state;
    struct history h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck__hub *hub = hub_new(&h, 2);
    for (int i = 0; i < 5; i++)
        commit(hub, &h, "/k");
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w = NULL;
    /* below the store's compacted revision: refused at once */
    assert_int_equal(ck__hub_watch(hub, NULL, "/k", 2, false, 2, 3, collect, &c, &w, NULL), 0);
    assert_true(collector_wait(&c, &c.n, 1));
    assert_int_equal(c.events[0].type, CK_STORE_EVENT_ERROR);
    assert_int_equal(c.events[0].error, CK_ECOMPACTED);
    assert_int_equal(c.events[0].compact_revision, 3);
    ck__hub_watch_cancel(w);
    collector_release(&c);

    /* history compacted under a catch-up: the error comes from history */
    pthread_mutex_lock(&h.lock);
    h.compacted = 3;
    pthread_mutex_unlock(&h.lock);
    collector_init(&c);
    assert_int_equal(ck__hub_watch(hub, NULL, "/k", 2, false, 3, 0, collect, &c, &w, NULL), 0);
    assert_true(collector_wait(&c, &c.n, 1));
    assert_int_equal(c.events[0].type, CK_STORE_EVENT_ERROR);
    assert_int_equal(c.events[0].error, CK_ECOMPACTED);
    ck__hub_watch_cancel(w);
    ck__hub_free(hub);
    collector_release(&c);
    history_release(&h);
}

static void test_progress_and_cancel(void **state)
{
    (void)state;
    struct history h = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck__hub *hub = hub_new(&h, 8);
    commit(hub, &h, "/p");
    struct collector a, b;
    collector_init(&a);
    collector_init(&b);
    struct ck_store_watch *wa = NULL, *wb = NULL;
    assert_int_equal(ck__hub_watch(hub, NULL, "/p", 2, false, 0, 0, collect, &a, &wa, NULL), 0);
    assert_int_equal(ck__hub_watch_progress(wa, NULL), 0);
    assert_true(collector_wait(&a, &a.progress, 1));
    assert_int_equal(a.last_progress, 1); /* nothing new after the head it started at */
    assert_int_equal(a.n, 0);

    ck__hub_watch_cancel(wa);
    assert_int_equal(ck__hub_watch(hub, NULL, "/p", 2, false, 0, 0, collect, &b, &wb, NULL), 0);
    commit(hub, &h, "/p");
    assert_true(collector_wait(&b, &b.n, 1)); /* delivered to b, so a's turn has passed */
    pthread_mutex_lock(&a.lock);
    assert_int_equal(a.n, 0); /* nothing after cancel */
    pthread_mutex_unlock(&a.lock);
    ck__hub_watch_cancel(wb);
    ck__hub_free(hub);
    collector_release(&a);
    collector_release(&b);
    history_release(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catch_up_below_the_ring_then_follow),
        cmocka_unit_test(test_compacted_start_ends_the_watch),
        cmocka_unit_test(test_progress_and_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
