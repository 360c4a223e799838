/*
 * test_ttl.c - tests for lib/apiserver/ttl.c, the expiry of events (--event-ttl): one
 * sweep over a SQLite store at a given time removes the events whose last activity is a
 * TTL or more in the past, keeps the others and every object of a kind that does not
 * expire, and pages through large collections; watchers see the expiry as a delete. The
 * sweeper thread's start and stop are covered by every server test, its timing by
 * tests/e2e/test_events.sh.
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/apiserver/internal.h"
#include "ckube/internal/util.h"

static char dir[] = "/tmp/ckube-ttl-XXXXXX";
static struct ck_store *store;

#define NOW 1800000000LL /* 2027-01-15T08:00:00Z */

static const char *stamp(long long ago, char *buf, size_t size)
{
    return ck__time_format(NOW - ago, -1, buf, size);
}

/* Stores an event created `created` seconds ago, last seen `last` seconds ago (< 0: none). */
static void put_event(const char *ns, const char *name, long long created, long long last)
{
    char c[CK__TIME_LEN], l[CK__TIME_LEN], key[256];
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:s}", "apiVersion", "v1", "kind",
                           "Event", "metadata", "name", name, "namespace", ns, "creationTimestamp",
                           stamp(created, c, sizeof(c)), "reason", "R");
    if (last >= 0)
        json_object_set_new(ev, "lastTimestamp", json_string(stamp(last, l, sizeof(l))));
    char *text = json_dumps(ev, JSON_COMPACT);
    snprintf(key, sizeof(key), "/registry/events/%s/%s", ns, name);
    assert_int_equal(ck_store_put(store, key, strlen(key), text, strlen(text), NULL, NULL), 0);
    free(text);
    json_decref(ev);
}

static bool exists(const char *key)
{
    const struct ck_kv *kv = NULL;
    int r = ck_store_get(store, key, strlen(key), 0, &kv, NULL, NULL);
    ck_kv_unref(kv);
    return r == 0;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s", "/tmp/ckube-ttl-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char url[300];
    snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
    return ck_store_open(url, NULL, &store, NULL);
}

static int teardown(void **state)
{
    (void)state;
    ck_store_close(store);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

static void test_sweep_removes_events_past_their_ttl(void **state)
{
    (void)state;
    put_event("default", "old", 7200, 7000);       /* last seen almost 2 h ago */
    put_event("default", "renewed", 7200, 60);     /* created long ago, bumped a minute ago */
    put_event("prod", "fresh", 10, 10);            /* new */
    put_event("prod", "no-last", 3600, -1);        /* only creationTimestamp: exactly 1 h */
    put_event("prod", "just-in-time", 3599, 3599); /* one second left */
    const char *pod = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                      "\"namespace\":\"prod\",\"creationTimestamp\":\"2020-01-01T00:00:00Z\"}}";
    assert_int_equal(ck_store_put(store, "/registry/pods/prod/p", 21, pod, strlen(pod), NULL, NULL),
                     0);
    size_t removed = 0;
    struct ck_err err = {0};
    assert_int_equal(ck__ttl_sweep(store, 3600, NOW, &removed, &err), 0);
    assert_int_equal(removed, 2);
    assert_false(exists("/registry/events/default/old"));
    assert_false(exists("/registry/events/prod/no-last"));
    assert_true(exists("/registry/events/default/renewed"));
    assert_true(exists("/registry/events/prod/fresh"));
    assert_true(exists("/registry/events/prod/just-in-time"));
    assert_true(exists("/registry/pods/prod/p")); /* pods do not expire */
    /* a second later the last one goes too */
    assert_int_equal(ck__ttl_sweep(store, 3600, NOW + 1, &removed, &err), 0);
    assert_int_equal(removed, 1);
    assert_false(exists("/registry/events/prod/just-in-time"));
}

static void test_sweep_pages_through_many_events(void **state)
{
    (void)state;
    char name[32];
    for (int i = 0; i < 1234; i++) {
        snprintf(name, sizeof(name), "ev-%04d", i);
        put_event(i % 2 ? "a" : "b", name, 100, i % 3 ? 50 : -1);
    }
    put_event("b", "zz-keep", 1, 1);
    size_t removed = 0;
    assert_int_equal(ck__ttl_sweep(store, 3, NOW, &removed, NULL), 0);
    assert_int_equal(removed, 1234);
    assert_true(exists("/registry/events/b/zz-keep"));
}

struct deletions {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    char key[256];
};

static void on_event(const struct ck_store_event *ev, void *arg)
{
    struct deletions *d = arg;
    if (ev->type != CK_STORE_EVENT_DELETE)
        return;
    pthread_mutex_lock(&d->lock);
    snprintf(d->key, sizeof(d->key), "%.*s", (int)ev->kv->key_len, ev->kv->key);
    pthread_cond_broadcast(&d->changed);
    pthread_mutex_unlock(&d->lock);
}

/* Watchers (the API's watch streams sit on the store's) see an expiry as a delete. */
static void test_watchers_see_the_expiry(void **state)
{
    (void)state;
    put_event("default", "old", 7200, 7200);
    const struct ck_kv *kv = NULL;
    assert_int_equal(ck_store_get(store, "/registry/events/default/old", 28, 0, &kv, NULL, NULL),
                     0);
    int64_t from = kv->mod_revision + 1;
    ck_kv_unref(kv);
    struct deletions d = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct ck_store_watch *w = NULL;
    assert_int_equal(
        ck_store_watch(store, "/registry/events/", 17, true, from, on_event, &d, &w, NULL), 0);
    size_t removed = 0;
    assert_int_equal(ck__ttl_sweep(store, 3600, NOW, &removed, NULL), 0);
    assert_int_equal(removed, 1);
    pthread_mutex_lock(&d.lock);
    while (!d.key[0])
        pthread_cond_wait(&d.changed, &d.lock);
    pthread_mutex_unlock(&d.lock);
    ck_store_watch_cancel(w);
    assert_string_equal(d.key, "/registry/events/default/old");
}

static void test_start_and_stop(void **state)
{
    (void)state;
    struct ck__ttl *t = NULL;
    assert_int_equal(ck__ttl_start(store, -1, &t, NULL), 0);
    assert_null(t); /* never expire: no thread */
    assert_int_equal(ck__ttl_start(store, 0, &t, NULL), 0);
    assert_non_null(t);
    assert_null(ck__ttl_stop(t));
    assert_null(ck__ttl_stop(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sweep_removes_events_past_their_ttl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_pages_through_many_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchers_see_the_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_and_stop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
