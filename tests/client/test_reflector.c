/*
 * test_reflector.c - the reflector over a fake list/watch, without any server: the
 * informer's thread lists in pages, watches from the list's version, follows events and
 * bookmarks, watches again after a clean end, relists after a 410 (as an ERROR event and
 * as an answer) and delivers only the difference, and backs off on a fake clock after a
 * failed list or watch, keeping its version.
 *
 * The fake serves scripted listings (the k-th complete list gets listings[k], the last
 * one repeating) and scripted watch sessions (each call takes the next; past the script
 * a watch parks until the test releases it, which is how a test knows every event
 * before was handled: handlers run on the reflector's thread before it watches again).
 */
#include "cktest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/informer.h"

static const struct ck_resource widgets = {"example.com", "v1", "widgets", true};

/* ---- the fake list/watch ------------------------------------------------------- */

struct item {
    const char *name, *rv;
};

struct listing {
    const char *rv;
    struct item items[6];
};

enum end { END_CLEAN, END_GONE_EVENT, END_GONE_ANSWER, END_FAIL };

struct event {
    const char *type, *name, *rv; /* BOOKMARK: name NULL */
};

struct session {
    struct event events[6];
    enum end end;
};

struct fake {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    const struct listing *listings;
    size_t nlistings, full_lists; /* complete lists started */
    int pages, fail_lists;        /* fail_lists: fail that many list calls first */
    const struct session *sessions;
    size_t nsessions, watches;
    char watch_rv[8][16]; /* what each watch asked for */
    bool parked, released;
};

static json_t *object(const char *name, const char *rv)
{
    return name ? json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", name, "namespace", "default",
                            "resourceVersion", rv)
                : json_pack("{s:{s:s}}", "metadata", "resourceVersion", rv);
}

static int fake_list(void *ctx, const struct ck_list_options *opts, json_t **ret_list,
                     struct ck_err *reterr)
{
    struct fake *f = ctx;
    assert_null(opts->resource_version); /* the newest state */
    pthread_mutex_lock(&f->lock);
    if (f->fail_lists > 0) {
        f->fail_lists--;
        pthread_mutex_unlock(&f->lock);
        return ck_err_set(reterr, CK_EIO, "fake: connection refused");
    }
    size_t start = opts->continue_token ? strtoul(opts->continue_token, NULL, 10) : 0;
    if (!opts->continue_token)
        f->full_lists++;
    size_t k = f->full_lists - 1 < f->nlistings ? f->full_lists - 1 : f->nlistings - 1;
    const struct listing *l = &f->listings[k];
    f->pages++;
    pthread_mutex_unlock(&f->lock);
    size_t n = 0;
    while (n < 6 && l->items[n].name)
        n++;
    size_t end =
        opts->limit > 0 && start + (size_t)opts->limit < n ? start + (size_t)opts->limit : n;
    json_t *items = json_array();
    for (size_t i = start; i < end; i++)
        json_array_append_new(items, object(l->items[i].name, l->items[i].rv));
    json_t *meta = json_pack("{s:s}", "resourceVersion", l->rv);
    if (end < n) {
        char next[16];
        snprintf(next, sizeof(next), "%zu", end);
        json_object_set_new(meta, "continue", json_string(next));
    }
    *ret_list = json_pack("{s:o, s:o}", "metadata", meta, "items", items);
    return 0;
}

static int fake_watch(void *ctx, const struct ck_list_options *opts, ck_watch_func fn, void *arg,
                      const atomic_bool *stop, struct ck_err *reterr)
{
    struct fake *f = ctx;
    assert_true(opts->allow_watch_bookmarks);
    pthread_mutex_lock(&f->lock);
    size_t i = f->watches++;
    if (i < 8)
        snprintf(f->watch_rv[i], sizeof(f->watch_rv[i]), "%s",
                 opts->resource_version ? opts->resource_version : "");
    if (i >= f->nsessions) {
        f->parked = true;
        pthread_cond_broadcast(&f->changed);
        while (!f->released)
            pthread_cond_wait(&f->changed, &f->lock);
        pthread_mutex_unlock(&f->lock);
        return ck_err_set(reterr, CK_ESHUTDOWN, "fake: released");
    }
    const struct session *s = &f->sessions[i];
    pthread_mutex_unlock(&f->lock);
    assert_non_null(stop);
    for (size_t e = 0; e < 6 && s->events[e].type; e++) {
        int r = fn(s->events[e].type, object(s->events[e].name, s->events[e].rv), arg);
        if (r)
            return r;
    }
    switch (s->end) {
    case END_CLEAN:
        return 0;
    case END_GONE_EVENT: {
        json_t *status = json_pack("{s:s, s:s, s:s, s:i}", "kind", "Status", "reason", "Expired",
                                   "message", "too old resource version", "code", 410);
        return fn("ERROR", status, arg);
    }
    case END_GONE_ANSWER:
        ck_err_set(reterr, CK_ECOMPACTED, "too old resource version");
        reterr->http_status = 410;
        return CK_ECOMPACTED;
    case END_FAIL:
        break;
    }
    return ck_err_set(reterr, CK_EIO, "fake: connection reset");
}

static void fake_init(struct fake *f, const struct listing *l, size_t nl, const struct session *s,
                      size_t ns)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->changed, NULL);
    f->listings = l;
    f->nlistings = nl;
    f->sessions = s;
    f->nsessions = ns;
}

/* Waits until the reflector asked for a watch past the script: all before is handled. */
static void fake_wait_parked(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    while (!f->parked)
        pthread_cond_wait(&f->changed, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

static void fake_release(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    f->released = true;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
}

static void fake_destroy(struct fake *f)
{
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
}

/* ---- what the handlers saw ------------------------------------------------------ */

struct log {
    pthread_mutex_t lock;
    char lines[32][48];
    size_t n;
};

static const char *field(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), name));
}

/* Logs "what name resourceVersion[ suffix]". */
static void record(struct log *l, const char *what, const json_t *obj, const char *suffix)
{
    pthread_mutex_lock(&l->lock);
    if (l->n < 32)
        snprintf(l->lines[l->n++], sizeof(l->lines[0]), "%s %s %s%s", what, field(obj, "name"),
                 field(obj, "resourceVersion"), suffix);
    pthread_mutex_unlock(&l->lock);
}

static void on_add(const json_t *obj, bool initial, void *arg)
{
    record(arg, "add", obj, initial ? " initial" : "");
}

static void on_update(const json_t *old, const json_t *obj, void *arg)
{
    (void)old;
    record(arg, "update", obj, "");
}

static void on_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    record(arg, "delete", obj, t ? " tombstone" : "");
}

/* True when lines [from, to) of l are exactly want[], in any order. */
static bool same_set(struct log *l, size_t from, size_t to, const char *const *want, size_t n)
{
    if (to - from != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = from; j < to && !found; j++)
            found = strcmp(l->lines[j], want[i]) == 0;
        if (!found)
            return false;
    }
    return true;
}

static void dump(struct log *l)
{
    for (size_t i = 0; i < l->n; i++)
        fprintf(stderr, "  %zu: %s\n", i, l->lines[i]);
}

static struct ck_informer *start(struct fake *f, struct log *l, struct ck_clock *clock)
{
    static struct ck_list_watch lw;
    lw = (struct ck_list_watch){.list = fake_list, .watch = fake_watch, .ctx = f};
    struct ck_informer_options opts = {
        .list_watch = &lw, .res = &widgets, .page_size = 2, .clock = clock};
    struct ck_informer *inf = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_informer_new(&opts, &inf, &err), 0);
    struct ck_event_handler h = {on_add, on_update, on_delete, l};
    assert_int_equal(ck_informer_add_handler(inf, &h, 0, &err), 0);
    assert_int_equal(ck_informer_start(inf, &err), 0);
    return inf;
}

static void assert_cached(struct ck_informer *inf, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *obj = NULL;
        assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), keys[i], &obj), 0);
        ck_cached_unref(obj);
    }
    assert_int_equal(ck_indexer_len(ck_informer_indexer(inf)), n);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_pages_events_bookmarks_and_relist_on_gone_event(void **state)
{
    (void)state;
    static const struct listing listings[] = {
        {"3", {{"a", "1"}, {"b", "2"}, {"c", "3"}}},
        /* after the 410: a unchanged, c changed, d vanished unseen, e new */
        {"9", {{"a", "5"}, {"c", "8"}, {"e", "9"}}},
    };
    static const struct session sessions[] = {
        {{{"ADDED", "d", "4"}, {"MODIFIED", "a", "5"}, {"BOOKMARK", NULL, "7"}}, END_CLEAN},
        {{{"DELETED", "b", "8"}}, END_GONE_EVENT},
    };
    struct fake f;
    fake_init(&f, listings, 2, sessions, 2);
    struct log l = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck_informer *inf = start(&f, &l, NULL);
    fake_wait_parked(&f);

    static const char *const initial[] = {"add a 1 initial", "add b 2 initial", "add c 3 initial"};
    static const char *const watched[] = {"add d 4", "update a 5", "delete b 8"};
    static const char *const relisted[] = {"update c 8", "delete d 4 tombstone", "add e 9"};
    if (l.n != 9 || !same_set(&l, 0, 3, initial, 3) || !same_set(&l, 6, 9, relisted, 3))
        dump(&l);
    assert_int_equal(l.n, 9);
    assert_true(same_set(&l, 0, 3, initial, 3));
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(l.lines[3 + i], watched[i]); /* watch events keep their order */
    assert_true(same_set(&l, 6, 9, relisted, 3));

    assert_int_equal(f.pages, 4); /* two pages of 2 for each list */
    assert_int_equal(f.watches, 3);
    assert_string_equal(f.watch_rv[0], "3"); /* the list's version */
    assert_string_equal(f.watch_rv[1], "7"); /* the bookmark's, after a clean end */
    assert_string_equal(f.watch_rv[2], "9"); /* the relist's */
    static const char *const keys[] = {"default/a", "default/c", "default/e"};
    assert_cached(inf, keys, 3);
    assert_true(ck_informer_has_synced(inf));

    struct ck_informer_stats st;
    ck_informer_stats(inf, &st);
    assert_int_equal(st.lists, 2);
    assert_int_equal(st.expired, 1);
    assert_int_equal(st.failures, 0);
    assert_int_equal(st.watch_events, 3);
    fake_release(&f);
    ck_informer_free(inf);
    fake_destroy(&f);
}

static void test_gone_answer_relists_and_failures_back_off(void **state)
{
    (void)state;
    static const struct listing listings[] = {
        {"1", {{"a", "1"}}},
        {"5", {{"a", "2"}}}, /* what the watch already delivered: nothing new */
    };
    static const struct session sessions[] = {
        {{{"MODIFIED", "a", "2"}}, END_GONE_ANSWER},
        {{{NULL, NULL, NULL}}, END_FAIL}, /* then watches again from the same version */
    };
    struct fake f;
    fake_init(&f, listings, 2, sessions, 2);
    f.fail_lists = 1;
    struct ck_clock *clock = ck_fake_clock_new(0);
    assert_non_null(clock);
    struct log l = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct ck_informer *inf = start(&f, &l, clock);

    /* the first list fails: the reflector waits 800 ms to 1.6 s on the clock */
    ck_fake_clock_wait_for_waiters(clock, 1);
    assert_false(ck_informer_has_synced(inf));
    assert_int_equal(f.pages, 0);
    ck_fake_clock_step(clock, 2 * CK_SEC);
    /* list, watch, 410, relist, watch fails: another wait */
    ck_fake_clock_wait_for_waiters(clock, 1);
    ck_fake_clock_step(clock, 2 * CK_SEC);
    fake_wait_parked(&f);

    if (l.n != 2)
        dump(&l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.lines[0], "add a 1 initial");
    assert_string_equal(l.lines[1], "update a 2");
    assert_int_equal(f.watches, 3);
    assert_string_equal(f.watch_rv[0], "1");
    assert_string_equal(f.watch_rv[1], "5");
    assert_string_equal(f.watch_rv[2], "5"); /* kept across the failure */
    struct ck_informer_stats st;
    ck_informer_stats(inf, &st);
    assert_int_equal(st.lists, 2);
    assert_int_equal(st.expired, 1);
    assert_int_equal(st.failures, 2);
    assert_string_equal(st.last_sync_resource_version, "5");

    fake_release(&f);
    ck_informer_free(inf);
    ck_fake_clock_free(clock);
    fake_destroy(&f);
}

static void test_needs_a_source(void **state)
{
    (void)state;
    struct ck_informer_options opts = {.res = &widgets};
    struct ck_informer *inf = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_informer_new(&opts, &inf, &err), CK_EINVAL);
    assert_null(inf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_events_bookmarks_and_relist_on_gone_event),
        cmocka_unit_test(test_gone_answer_relists_and_failures_back_off),
        cmocka_unit_test(test_needs_a_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
