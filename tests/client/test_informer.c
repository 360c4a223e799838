/*
 * test_informer.c - reflector and shared informers against a real ckube API server:
 * paged initial list, watch events to handlers, resync, and convergence after the
 * server is stopped mid-watch, objects vanish and history is compacted meanwhile (so
 * the reconnecting watch gets 410 and the reflector relists and delivers tombstones).
 */
#include "cktest.h"

#include <pthread.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* we use only the server helpers */
#include "apiserver/httptest.h"
#pragma GCC diagnostic pop
#include "ckube/informer.h"
#include "ckube/store.h"

/* The resource these tests address; the client keeps no list of its own. */
static const struct ck_resource pods = {"", "v1", "pods", true};

struct recorder {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int adds, initial_adds, updates, resyncs, deletes, tombstones;
    char last_tombstone[64];
};

static void rec_add(const json_t *obj, bool initial, void *arg)
{
    (void)obj;
    struct recorder *r = arg;
    pthread_mutex_lock(&r->lock);
    r->adds++;
    r->initial_adds += initial;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

static void rec_update(const json_t *old, const json_t *obj, void *arg)
{
    struct recorder *r = arg;
    pthread_mutex_lock(&r->lock);
    if (old == obj)
        r->resyncs++;
    else
        r->updates++;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

static void rec_delete(const json_t *obj, const struct ck_deleted_final_state_unknown *t, void *arg)
{
    (void)obj;
    struct recorder *r = arg;
    pthread_mutex_lock(&r->lock);
    r->deletes++;
    if (t) {
        r->tombstones++;
        snprintf(r->last_tombstone, sizeof(r->last_tombstone), "%s", t->key);
    }
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

/* Waits (no timeout: ctest's ends a hung test) until *field reaches want. */
static void wait_count(struct recorder *r, const int *field, int want)
{
    pthread_mutex_lock(&r->lock);
    while (*field < want)
        pthread_cond_wait(&r->changed, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

static struct ck_apiserver *start_on(const char *dir, const char *listen)
{
    char store[256];
    snprintf(store, sizeof(store), "sqlite://%s/state.db", dir);
    struct ck_apiserver_config config = {
        .disable_admission_plugins = "ServiceAccount", .listen = listen, .store_url = store};
    struct ck_apiserver *server = NULL;
    struct ck_err err = {0};
    if (ck_apiserver_start(&config, &server, &err) < 0)
        fprintf(stderr, "start: %s\n", err.msg);
    return server;
}

static void create_pod(struct ck_rest *c, const char *name)
{
    json_t *pod =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind", "Pod",
                  "metadata", "name", name, "spec", "containers", "name", "c", "image", "nginx");
    struct ck_err err = {0};
    assert_int_equal(ck_rest_create(c, &pods, "default", pod, NULL, &err), 0);
    json_decref(pod);
}

/* Starts a server in dir (a mkdtemp template) with n pods prefix-0 ... and a client. */
static struct ck_rest *start_with_pods(char *dir, struct ck_apiserver **ret_server,
                                       const char *prefix, int n)
{
    *ret_server = test_server_start(dir);
    assert_non_null(*ret_server);
    struct ck_rest_config config = {.server = ck_apiserver_url(*ret_server), .qps = -1};
    struct ck_rest *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_rest_new(&config, &c, &err), 0);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        create_pod(c, name);
    }
    return c;
}

/* The cache holds exactly what the server lists: same keys, same resourceVersions. */
static void assert_converged(struct ck_rest *c, struct ck_informer *inf)
{
    json_t *list = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_rest_list(c, &pods, "", NULL, &list, &err), 0);
    json_t *items = json_object_get(list, "items");
    struct ck_indexer *ix = ck_informer_indexer(inf);
    assert_int_equal(ck_indexer_len(ix), json_array_size(items));
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        char *key = NULL;
        assert_int_equal(ck_meta_namespace_key(item, &key, &err), 0);
        const json_t *cached = NULL;
        assert_int_equal(ck_indexer_get_by_key(ix, key, &cached), 0);
        const json_t *a = json_object_get(json_object_get(item, "metadata"), "resourceVersion");
        const json_t *b = json_object_get(json_object_get(cached, "metadata"), "resourceVersion");
        assert_string_equal(json_string_value(a), json_string_value(b));
        ck_cached_unref(cached);
        free(key);
    }
    json_decref(list);
}

static void test_list_watch_events(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-inf-XXXXXX";
    struct ck_apiserver *server = NULL;
    struct ck_rest *c = start_with_pods(dir, &server, "pre", 5);
    struct ck_err err = {0};

    struct ck_informer_factory *f = NULL;
    assert_int_equal(ck_informer_factory_new(c, NULL, 0, NULL, &f, &err), 0);
    struct ck_informer *inf = ck_informer_factory_for(f, &pods);
    assert_non_null(inf);
    assert_ptr_equal(ck_informer_factory_for(f, &pods), inf); /* shared */
    struct recorder rec = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler h = {rec_add, rec_update, rec_delete, &rec};
    assert_int_equal(ck_informer_add_handler(inf, &h, 0, &err), 0);
    assert_false(ck_informer_has_synced(inf));
    assert_int_equal(ck_informer_factory_start(f, &err), 0);
    assert_true(ck_informer_factory_wait_for_sync(f, CK_TIME_NEVER));
    assert_true(ck_informer_has_synced(inf));
    assert_int_equal(rec.initial_adds, 5);
    assert_int_equal(ck_indexer_len(ck_informer_indexer(inf)), 5);
    /*
     * A handler added once started gets what the cache holds as initial adds, before
     * the call returns, then live events (client-go's AddEventHandler on a running
     * informer); one that would resync is refused, since the resync schedule is fixed.
     */
    struct recorder late = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler late_h = {rec_add, rec_update, rec_delete, &late};
    assert_int_equal(ck_informer_add_handler(inf, &late_h, 30 * CK_SEC, &err), CK_EINVAL);
    assert_int_equal(ck_informer_add_handler(inf, &late_h, 0, &err), 0);
    assert_int_equal(late.initial_adds, 5);

    create_pod(c, "live");
    wait_count(&rec, &rec.adds, 6);
    wait_count(&late, &late.adds, 6);
    assert_int_equal(rec.initial_adds, 5);
    /* a removed handler is called no more: the update below reaches rec only */
    ck_informer_remove_handler(inf, &late_h);
    json_t *pod = NULL;
    assert_int_equal(ck_rest_get(c, &pods, "default", "live", &pod, &err), 0);
    json_object_set_new(json_object_get(pod, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
    assert_int_equal(ck_rest_update(c, &pods, "default", pod, NULL, &err), 0);
    json_decref(pod);
    wait_count(&rec, &rec.updates, 1);
    pthread_mutex_lock(&late.lock);
    assert_int_equal(late.updates, 0);
    pthread_mutex_unlock(&late.lock);
    assert_int_equal(ck_rest_delete(c, &pods, "default", "pre-0", NULL, NULL, &err), 0);
    wait_count(&rec, &rec.deletes, 1);
    assert_int_equal(rec.tombstones, 0); /* the watch saw it: no tombstone */
    assert_converged(c, inf);

    struct ck_informer_stats st;
    ck_informer_stats(inf, &st);
    assert_int_equal(st.lists, 1);
    assert_true(st.watch_events >= 3);

    ck_informer_factory_free(f);
    ck_rest_free(c);
    test_server_stop(server, dir);
}

static bool cached_has_managed_fields(struct ck_informer *inf, const char *key)
{
    const json_t *obj = NULL;
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), key, &obj), 0);
    bool has = json_object_get(json_object_get(obj, "metadata"), "managedFields") != NULL;
    ck_cached_unref(obj);
    return has;
}

/*
 * The factory's transform (kube-controller-manager's managedFields trim) runs on the
 * listed objects and on watch events: the server's objects keep their managedFields,
 * the cache holds none; without it the cache keeps them.
 */
static void test_transform_strips_managed_fields(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-inf-XXXXXX";
    struct ck_apiserver *server = NULL;
    struct ck_rest *c = start_with_pods(dir, &server, "t", 2);
    struct ck_err err = {0};
    struct ck_informer_factory *plain = NULL, *trimmed = NULL;
    assert_int_equal(ck_informer_factory_new(c, NULL, 0, NULL, &plain, &err), 0);
    assert_int_equal(ck_informer_factory_new(c, NULL, 0, NULL, &trimmed, &err), 0);
    ck_informer_factory_set_transform(trimmed, ck_transform_strip_managed_fields, NULL);
    ck_informer_factory_set_compact(trimmed, true); /* and cached as text, as ckube server's */
    struct ck_informer *kept = ck_informer_factory_for(plain, &pods);
    struct ck_informer *inf = ck_informer_factory_for(trimmed, &pods);
    struct recorder rec = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler h = {rec_add, rec_update, rec_delete, &rec};
    assert_int_equal(ck_informer_add_handler(inf, &h, 0, &err), 0);
    assert_int_equal(ck_informer_factory_start(plain, &err), 0);
    assert_int_equal(ck_informer_factory_start(trimmed, &err), 0);
    assert_true(ck_informer_factory_wait_for_sync(plain, CK_TIME_NEVER));
    assert_true(ck_informer_factory_wait_for_sync(trimmed, CK_TIME_NEVER));
    /* a running informer's transform stays as it is */
    assert_int_equal(ck_informer_set_transform(kept, ck_transform_strip_managed_fields, NULL, &err),
                     CK_EINVAL);

    json_t *pod = NULL;
    assert_int_equal(ck_rest_get(c, &pods, "default", "t-0", &pod, &err), 0);
    assert_non_null(json_object_get(json_object_get(pod, "metadata"), "managedFields"));
    assert_true(cached_has_managed_fields(kept, "default/t-0"));
    assert_false(cached_has_managed_fields(inf, "default/t-0"));
    assert_false(cached_has_managed_fields(inf, "default/t-1"));

    json_object_set_new(json_object_get(pod, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
    assert_int_equal(ck_rest_update(c, &pods, "default", pod, NULL, &err), 0);
    json_decref(pod);
    wait_count(&rec, &rec.updates, 1); /* a watch event, trimmed too */
    const json_t *obj = NULL;
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), "default/t-0", &obj), 0);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(obj, "metadata"), "labels"), "a")),
                        "b");
    ck_cached_unref(obj);
    assert_false(cached_has_managed_fields(inf, "default/t-0"));
    /* the compact cache decodes a tree for each read; the plain one hands out its own */
    const json_t *one = NULL, *two = NULL;
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), "default/t-1", &one), 0);
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(inf), "default/t-1", &two), 0);
    assert_ptr_not_equal(one, two);
    assert_true(json_equal(one, two));
    ck_cached_unref(one);
    ck_cached_unref(two);
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(kept), "default/t-1", &one), 0);
    assert_int_equal(ck_indexer_get_by_key(ck_informer_indexer(kept), "default/t-1", &two), 0);
    assert_ptr_equal(one, two);
    ck_cached_unref(one);
    ck_cached_unref(two);

    /* an informer of its own takes a transform before it starts */
    struct ck_informer_options opts = {.client = c, .res = &pods};
    struct ck_informer *own = NULL;
    assert_int_equal(ck_informer_new(&opts, &own, &err), 0);
    assert_int_equal(ck_informer_set_transform(own, ck_transform_strip_managed_fields, NULL, &err),
                     0);
    assert_int_equal(ck_informer_start(own, &err), 0);
    assert_true(ck_informer_wait_for_sync(own, CK_TIME_NEVER));
    assert_false(cached_has_managed_fields(own, "default/t-1"));
    ck_informer_free(own);

    ck_informer_factory_free(trimmed);
    ck_informer_factory_free(plain);
    ck_rest_free(c);
    test_server_stop(server, dir);
}

/* A small page size makes the initial list take several pages. */
static void test_paged_list(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-inf-XXXXXX";
    struct ck_apiserver *server = NULL;
    struct ck_rest *c = start_with_pods(dir, &server, "p", 7);
    struct ck_err err = {0};
    struct ck_rest_stats before, after;
    ck_rest_stats(c, &before);
    struct ck_informer_options opts = {.client = c, .res = &pods, .page_size = 3};
    struct ck_informer *inf = NULL;
    assert_int_equal(ck_informer_new(&opts, &inf, &err), 0);
    assert_int_equal(ck_informer_start(inf, &err), 0);
    assert_true(ck_informer_wait_for_sync(inf, CK_TIME_NEVER));
    ck_rest_stats(c, &after);
    assert_true(after.requests - before.requests >= 3); /* 3 + 3 + 1 */
    assert_converged(c, inf);
    ck_informer_free(inf);
    ck_rest_free(c);
    test_server_stop(server, dir);
}

/* Resync delivers every cached object again, as on_update(obj, obj), on a fake clock. */
static void test_resync(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-inf-XXXXXX";
    struct ck_apiserver *server = NULL;
    struct ck_rest *c = start_with_pods(dir, &server, "pod", 0);
    struct ck_err err = {0};
    create_pod(c, "a");
    create_pod(c, "b");
    struct ck_clock *clock = ck_fake_clock_new(0);
    struct ck_informer_options opts = {.client = c, .res = &pods, .clock = clock};
    struct ck_informer *inf = NULL;
    assert_int_equal(ck_informer_new(&opts, &inf, &err), 0);
    struct recorder rec = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler h = {rec_add, rec_update, rec_delete, &rec};
    assert_int_equal(ck_informer_add_handler(inf, &h, 30 * CK_SEC, &err), 0);
    assert_int_equal(ck_informer_start(inf, &err), 0);
    wait_count(&rec, &rec.adds, 2);
    assert_int_equal(rec.resyncs, 0);
    ck_fake_clock_wait_for_waiters(clock, 1); /* the resync thread sleeps until 30 s */
    ck_fake_clock_step(clock, 30 * CK_SEC);
    wait_count(&rec, &rec.resyncs, 2);
    ck_fake_clock_wait_for_waiters(clock, 1);
    ck_fake_clock_step(clock, 30 * CK_SEC);
    wait_count(&rec, &rec.resyncs, 4);
    assert_int_equal(rec.updates, 0);
    ck_informer_free(inf);
    ck_fake_clock_free(clock);
    ck_rest_free(c);
    test_server_stop(server, dir);
}

/* Deletes key from the stopped server's store, then compacts history away. */
static void delete_and_compact(const char *dir, const char *const *keys, size_t n)
{
    char url[256];
    snprintf(url, sizeof(url), "sqlite://%s/state.db", dir);
    struct ck_store_options opts = {.compaction_interval_ms = -1};
    struct ck_store *store = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, &opts, &store, &err), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ck_store_delete(store, keys[i], strlen(keys[i]), 0, NULL, NULL, &err), 0);
    int64_t current = 0;
    assert_int_equal(ck_store_revisions(store, &current, NULL, &err), 0);
    assert_int_equal(ck_store_compact(store, current, &err), 0);
    ck_store_close(store);
}

static void test_restart_and_expired(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-inf-XXXXXX";
    struct ck_apiserver *server = NULL;
    struct ck_rest *c = start_with_pods(dir, &server, "keep", 4);
    struct ck_err err = {0};
    char listen[64];
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", ck_apiserver_port(server));
    create_pod(c, "gone-a");
    create_pod(c, "gone-b");

    struct ck_informer_options opts = {.client = c, .res = &pods, .page_size = 2};
    struct ck_informer *inf = NULL;
    assert_int_equal(ck_informer_new(&opts, &inf, &err), 0);
    struct recorder rec = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler h = {rec_add, rec_update, rec_delete, &rec};
    assert_int_equal(ck_informer_add_handler(inf, &h, 0, &err), 0);
    assert_int_equal(ck_informer_start(inf, &err), 0);
    assert_true(ck_informer_wait_for_sync(inf, CK_TIME_NEVER));
    create_pod(c, "seen-by-watch"); /* proves the watch is up before the server goes */
    wait_count(&rec, &rec.adds, 7);

    /* kill the server mid-watch; while it is down two pods vanish and history goes */
    ck_apiserver_free(server);
    static const char *const keys[] = {"/registry/pods/default/gone-a",
                                       "/registry/pods/default/gone-b"};
    delete_and_compact(dir, keys, 2);
    server = start_on(dir, listen);
    assert_non_null(server);

    /* the reflector reconnects, gets 410, relists and delivers the difference */
    wait_count(&rec, &rec.tombstones, 2);
    assert_int_equal(rec.deletes, 2);
    create_pod(c, "after");
    wait_count(&rec, &rec.adds, 8);
    assert_converged(c, inf);
    struct ck_informer_stats st;
    ck_informer_stats(inf, &st);
    assert_true(st.expired >= 1);
    assert_true(st.lists >= 2);

    ck_informer_free(inf);
    ck_rest_free(c);
    test_server_stop(server, dir);
}

/* The factory holds as many informers as it is asked for (it once stopped at 32). */
static void test_factory_grows(void **state)
{
    (void)state;
    struct ck_rest_config config = {.server = "http://127.0.0.1:1", .qps = -1};
    struct ck_rest *c = NULL;
    struct ck_err err = {0};
    assert_int_equal(ck_rest_new(&config, &c, &err), 0);
    struct ck_informer_factory *f = NULL;
    assert_int_equal(ck_informer_factory_new(c, NULL, 0, NULL, &f, &err), 0);
    enum { N = 100 };
    static char names[N][16];
    static struct ck_resource res[N];
    struct ck_informer *inf[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "things%d", i);
        res[i] = (struct ck_resource){"example.com", "v1", names[i], true};
        inf[i] = ck_informer_factory_for(f, &res[i]);
        assert_non_null(inf[i]);
        assert_ptr_equal(ck_informer_resource(inf[i]), &res[i]);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(inf[i], inf[j]);
    }
    for (int i = 0; i < N; i++) { /* shared: the same one every time after */
        struct ck_resource same = {"example.com", "v1", names[i], true};
        assert_ptr_equal(ck_informer_factory_for(f, &same), inf[i]);
    }
    assert_true(ck_informer_factory_wait_for_sync(f, 0)); /* none started: nothing to wait for */
    ck_informer_factory_free(f);
    ck_rest_free(c);
}

/* An index by metadata.name, added to a running informer. */
static int index_by_name(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    return name ? ck_index_values_add(out, name) : 0;
}

/* How many objects of pods the process's informers hold, by the census. */
static size_t census_pods(size_t *ret_informers)
{
    struct ck_informer_census_row *rows = NULL;
    size_t n = 0, objects = 0;
    *ret_informers = 0;
    assert_int_equal(ck_informer_census(&rows, &n), 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].group, "") == 0 && strcmp(rows[i].resource, "pods") == 0) {
            *ret_informers = rows[i].informers;
            objects = rows[i].objects;
        }
    free(rows);
    return objects;
}

/*
 * Components that come and go on one running factory (`ckube server`'s controller
 * managers, with their Leases): the handlers one adds within its owner scope go away
 * with ck_informer_factory_release(), the others' stay, the informer keeps running, and a
 * component that starts again adds its index again (a no-op) and gets the cache replayed.
 * The census counts the one cache once.
 */
static void test_owned_handlers_on_a_shared_factory(void **state)
{
    (void)state;
    char dir[] = "/tmp/ck-inf-XXXXXX";
    struct ck_apiserver *server = NULL;
    struct ck_rest *c = start_with_pods(dir, &server, "pre", 3);
    struct ck_err err = {0};
    struct ck_informer_factory *f = NULL;
    assert_int_equal(ck_informer_factory_new(c, NULL, 0, NULL, &f, &err), 0);
    struct ck_informer *inf = ck_informer_factory_for(f, &pods);
    assert_non_null(inf);
    struct recorder a = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct recorder b = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    struct recorder free_h = {.lock = PTHREAD_MUTEX_INITIALIZER,
                              .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler ha = {rec_add, rec_update, rec_delete, &a};
    struct ck_event_handler hb = {rec_add, rec_update, rec_delete, &b};
    struct ck_event_handler hn = {rec_add, rec_update, rec_delete, &free_h};
    ck_informer_factory_own_begin(f, &a);
    assert_int_equal(ck_informer_add_handler(inf, &ha, 0, &err), 0);
    ck_informer_factory_own_end(f);
    ck_informer_factory_own_begin(f, &b);
    assert_int_equal(ck_informer_add_handler(inf, &hb, 0, &err), 0);
    ck_informer_factory_own_end(f);
    assert_int_equal(ck_informer_add_handler(inf, &hn, 0, &err), 0); /* nobody's */
    assert_int_equal(ck_informer_factory_start(f, &err), 0);
    assert_true(ck_informer_factory_wait_for_sync(f, CK_TIME_NEVER));
    assert_int_equal(a.initial_adds, 3);
    size_t informers = 0;
    assert_int_equal(census_pods(&informers), 3);
    assert_int_equal(informers, 1);

    ck_informer_factory_release(f, &a); /* a's component stopped */
    create_pod(c, "after");
    wait_count(&b, &b.adds, 4);
    wait_count(&free_h, &free_h.adds, 4);
    pthread_mutex_lock(&a.lock);
    assert_int_equal(a.adds, 3);
    pthread_mutex_unlock(&a.lock);
    assert_true(ck_informer_has_synced(inf));

    /* a's component starts again: its index is built over the cache, twice is once */
    struct recorder again = {.lock = PTHREAD_MUTEX_INITIALIZER,
                             .changed = PTHREAD_COND_INITIALIZER};
    struct ck_event_handler h2 = {rec_add, rec_update, rec_delete, &again};
    ck_informer_factory_own_begin(f, &a);
    assert_int_equal(ck_informer_add_index(inf, "name", index_by_name, NULL, &err), 0);
    assert_int_equal(ck_informer_add_index(inf, "name", index_by_name, NULL, &err), 0);
    assert_int_equal(ck_informer_add_handler(inf, &h2, 0, &err), 0);
    ck_informer_factory_own_end(f);
    assert_int_equal(again.initial_adds, 4);
    struct ck_obj_list found = {0};
    assert_int_equal(ck_indexer_by_index(ck_informer_indexer(inf), "name", "after", &found, &err),
                     0);
    assert_int_equal(found.n, 1);
    ck_obj_list_release(&found);
    ck_informer_factory_release(f, &a);
    ck_informer_factory_release(f, &b);
    assert_int_equal(ck_rest_delete(c, &pods, "default", "pre-0", NULL, NULL, &err), 0);
    wait_count(&free_h, &free_h.deletes, 1);
    pthread_mutex_lock(&b.lock);
    assert_int_equal(b.deletes, 0);
    pthread_mutex_unlock(&b.lock);
    pthread_mutex_lock(&again.lock);
    assert_int_equal(again.deletes, 0);
    pthread_mutex_unlock(&again.lock);

    ck_informer_factory_free(f);
    assert_int_equal(census_pods(&informers), 0); /* gone with its informer */
    assert_int_equal(informers, 0);
    ck_rest_free(c);
    test_server_stop(server, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_watch_events),
        cmocka_unit_test(test_transform_strips_managed_fields),
        cmocka_unit_test(test_paged_list),
        cmocka_unit_test(test_resync),
        cmocka_unit_test(test_restart_and_expired),
        cmocka_unit_test(test_factory_grows),
        cmocka_unit_test(test_owned_handlers_on_a_shared_factory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
