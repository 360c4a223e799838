/*
 * test_conformance.c - the one suite every store backend must pass.
 *
 * Run as `test_store_conformance URL`: "sqlite" makes a fresh database in a
 * temporary directory; "etcd://..." uses a running etcd (tests/store/
 * etcd-test-env.sh starts one). Every test works under its own key prefix so
 * that tests never see each other's keys on a shared etcd. Compaction runs
 * last because it discards history for everyone.
 */
#include "cktest.h"

#include <stdio.h>
#include <unistd.h>

#include "storetest.h"

static const char *url_arg;
static char url[512];
static char tmpdir[256];
static struct ck_store *store;
static bool is_etcd;

/* A per-test, per-run prefix: "/ct/<pid>/<name>/". */
static size_t mkprefix(char *out, size_t cap, const char *name)
{
    return (size_t)snprintf(out, cap, "/ct/%d/%s/", (int)getpid(), name);
}

__attribute__((format(printf, 4, 5))) static size_t mkkey(char *out, size_t cap, const char *prefix,
                                                          const char *fmt, ...)
{
    int n = snprintf(out, cap, "%s", prefix);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(out + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return (size_t)n;
}

static int setup(void **state)
{
    (void)state;
    if (strcmp(url_arg, "sqlite") == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof(tmpdir), "%s/ckube-conf-XXXXXX", t ? t : "/tmp");
        if (!mkdtemp(tmpdir))
            return -1;
        snprintf(url, sizeof(url), "sqlite://%s/state.db", tmpdir);
    } else {
        snprintf(url, sizeof(url), "%s", url_arg);
        is_etcd = true;
    }
    struct ck_store_options opts = {.compaction_interval_ms = -1};
    struct ck_err err = {0};
    if (ck_store_open(url, &opts, &store, &err) < 0) {
        fprintf(stderr, "open %s: %s\n", url, err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ck_store_close(store);
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            return -1;
    }
    return 0;
}

static void test_revisions_and_versions(void **state)
{
    (void)state;
    char p[128], k[160];
    mkprefix(p, sizeof(p), "rev");
    size_t kl = mkkey(k, sizeof(k), p, "a%d", 0);
    struct ck_err err = {0};
    int64_t r1, r2, r3, cur;
    assert_int_equal(ck_store_create(store, k, kl, "v1", 2, &r1, &err), 0);
    assert_int_equal(ck_store_create(store, k, kl, "v9", 2, NULL, &err), CK_EEXIST);
    assert_int_equal(ck_store_put(store, k, kl, "v2", 2, &r2, &err), 0);
    assert_int_equal(r2, r1 + 1);
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(store, k, kl, 0, &kv, &cur, &err), 0);
    assert_int_equal(cur, r2);
    assert_memory_equal(kv->value, "v2", 2);
    assert_int_equal(kv->value_len, 2);
    assert_int_equal(kv->create_revision, r1);
    assert_int_equal(kv->mod_revision, r2);
    assert_int_equal(kv->version, 2);
    ck_kv_unref(kv);
    /* a read-only transaction does not move the revision */
    struct ck_store_op get = {.type = CK_STORE_OP_GET, .key = k, .key_len = kl};
    struct ck_store_txn txn = {.then_ops = &get, .n_then = 1};
    struct ck_store_txn_result res;
    assert_int_equal(ck_store_txn(store, &txn, &res, &err), 0);
    assert_true(res.succeeded);
    assert_true(res.revision >= r2);
    assert_int_equal(res.results[0].n_kvs, 1);
    ck_store_txn_result_release(&res);
    assert_int_equal(ck_store_delete(store, k, kl, 0, &r3, NULL, &err), 0);
    assert_true(r3 > r2);
    assert_int_equal(ck_store_get(store, k, kl, 0, &kv, NULL, &err), CK_ENOENT);
    /* re-created: a new incarnation, version 1 again */
    int64_t r4;
    assert_int_equal(ck_store_create(store, k, kl, "v3", 2, &r4, &err), 0);
    assert_int_equal(ck_store_get(store, k, kl, 0, &kv, NULL, &err), 0);
    assert_int_equal(kv->create_revision, r4);
    assert_int_equal(kv->version, 1);
    ck_kv_unref(kv);
}

static void test_txn_compares(void **state)
{
    (void)state;
    char p[128], k[160];
    mkprefix(p, sizeof(p), "txn");
    size_t kl = mkkey(k, sizeof(k), p, "obj%d", 1);
    struct ck_err err = {0};
    int64_t r1, r2;
    assert_int_equal(ck_store_update(store, k, kl, "x", 1, 5, NULL, NULL, &err), CK_ENOENT);
    assert_int_equal(ck_store_create(store, k, kl, "one", 3, &r1, &err), 0);
    assert_int_equal(ck_store_update(store, k, kl, "two", 3, r1, &r2, NULL, &err), 0);
    const struct ck_kv *cur = NULL;
    assert_int_equal(ck_store_update(store, k, kl, "three", 5, r1, NULL, &cur, &err), CK_ECONFLICT);
    assert_non_null(cur);
    assert_int_equal(cur->mod_revision, r2);
    assert_memory_equal(cur->value, "two", 3);
    ck_kv_unref(cur);
    const struct ck_kv *prev = NULL;
    assert_int_equal(ck_store_delete(store, k, kl, r1, NULL, &prev, &err), CK_ECONFLICT);
    ck_kv_unref(prev);

    /* value and version compares, then/else branches */
    struct ck_store_cmp cmps[] = {
        {.key = k,
         .key_len = kl,
         .target = CK_STORE_CMP_VALUE,
         .result = CK_STORE_CMP_EQUAL,
         .value = "two",
         .value_len = 3},
        {.key = k,
         .key_len = kl,
         .target = CK_STORE_CMP_VERSION,
         .result = CK_STORE_CMP_GREATER,
         .number = 1},
    };
    char k2[160];
    size_t k2l = mkkey(k2, sizeof(k2), p, "obj%d", 2);
    struct ck_store_op then[] = {
        {.type = CK_STORE_OP_PUT,
         .key = k,
         .key_len = kl,
         .value = "four",
         .value_len = 4,
         .prev_kv = true},
        {.type = CK_STORE_OP_PUT, .key = k2, .key_len = k2l, .value = "b", .value_len = 1},
    };
    struct ck_store_op els[] = {{.type = CK_STORE_OP_GET, .key = k, .key_len = kl}};
    struct ck_store_txn txn = {
        .cmps = cmps, .n_cmps = 2, .then_ops = then, .n_then = 2, .else_ops = els, .n_else = 1};
    struct ck_store_txn_result res;
    assert_int_equal(ck_store_txn(store, &txn, &res, &err), 0);
    assert_true(res.succeeded);
    assert_int_equal(res.revision, r2 + 1);
    assert_int_equal(res.n_results, 2);
    assert_int_equal(res.results[0].n_kvs, 1);
    assert_memory_equal(res.results[0].kvs[0]->value, "two", 3);
    ck_store_txn_result_release(&res);
    /* both puts share one revision */
    const struct ck_kv *a, *b;
    assert_int_equal(ck_store_get(store, k, kl, 0, &a, NULL, &err), 0);
    assert_int_equal(ck_store_get(store, k2, k2l, 0, &b, NULL, &err), 0);
    assert_int_equal(a->mod_revision, b->mod_revision);
    ck_kv_unref(a);
    ck_kv_unref(b);
    /* same txn again: the value compare fails now, else runs the get */
    assert_int_equal(ck_store_txn(store, &txn, &res, &err), 0);
    assert_false(res.succeeded);
    assert_int_equal(res.revision, r2 + 1);
    assert_int_equal(res.n_results, 1);
    assert_int_equal(res.results[0].n_kvs, 1);
    assert_memory_equal(res.results[0].kvs[0]->value, "four", 4);
    ck_store_txn_result_release(&res);
    /* a key written twice in one txn is refused */
    struct ck_store_op twice[] = {
        {.type = CK_STORE_OP_PUT, .key = k2, .key_len = k2l, .value = "1", .value_len = 1},
        {.type = CK_STORE_OP_PUT, .key = k2, .key_len = k2l, .value = "2", .value_len = 1},
    };
    struct ck_store_txn bad = {.then_ops = twice, .n_then = 2};
    assert_int_equal(ck_store_txn(store, &bad, &res, &err), CK_EINVAL);
    /* delete-if-unchanged with the right revision */
    assert_int_equal(ck_store_get(store, k, kl, 0, &a, NULL, &err), 0);
    assert_int_equal(ck_store_delete(store, k, kl, a->mod_revision, NULL, &prev, &err), 0);
    assert_memory_equal(prev->value, "four", 4);
    ck_kv_unref(prev);
    ck_kv_unref(a);
}

static void test_prefix_range_limit_count(void **state)
{
    (void)state;
    char p[128], k[160];
    size_t pl = mkprefix(p, sizeof(p), "range");
    struct ck_err err = {0};
    for (int i = 0; i < 25; i++) {
        size_t kl = mkkey(k, sizeof(k), p, "k%02d", i);
        assert_int_equal(ck_store_put(store, k, kl, k, kl, NULL, &err), 0);
    }
    /* a sibling prefix that must not match: "/ct/pid/range" + "x" */
    char sib[160];
    int sl = snprintf(sib, sizeof(sib), "%.*sx", (int)(pl - 1), p);
    assert_int_equal(ck_store_put(store, sib, (size_t)sl, "s", 1, NULL, &err), 0);

    struct ck_store_range req = {.key = p, .key_len = pl, .prefix = true, .limit = 10};
    struct ck_store_range_result res;
    assert_int_equal(ck_store_range(store, &req, &res, &err), 0);
    assert_int_equal(res.n_kvs, 10);
    assert_true(res.more);
    assert_int_equal(res.count, 25);
    ck_store_range_result_release(&res);

    /* without a limit: every key, counted, nothing more */
    struct ck_store_range all = {.key = p, .key_len = pl, .prefix = true};
    assert_int_equal(ck_store_range(store, &all, &res, &err), 0);
    assert_int_equal(res.n_kvs, 25);
    assert_int_equal(res.count, 25);
    assert_false(res.more);
    ck_store_range_result_release(&res);

    /* page through with from_key = last key + "\0" */
    int seen = 0;
    char from[200];
    size_t from_len = 0;
    for (int page = 0; page < 10; page++) {
        req.from_key = from_len ? from : NULL;
        req.from_key_len = from_len;
        assert_int_equal(ck_store_range(store, &req, &res, &err), 0);
        for (size_t i = 0; i < res.n_kvs; i++) {
            size_t kl = mkkey(k, sizeof(k), p, "k%02d", seen);
            assert_int_equal(res.kvs[i]->key_len, kl);
            assert_memory_equal(res.kvs[i]->key, k, kl);
            seen++;
        }
        bool more = res.more;
        if (res.n_kvs) {
            const struct ck_kv *last = res.kvs[res.n_kvs - 1];
            memcpy(from, last->key, last->key_len);
            from[last->key_len] = '\0';
            from_len = last->key_len + 1;
        }
        ck_store_range_result_release(&res);
        if (!more)
            break;
    }
    assert_int_equal(seen, 25);

    struct ck_store_range cnt = {.key = p, .key_len = pl, .prefix = true, .count_only = true};
    assert_int_equal(ck_store_range(store, &cnt, &res, &err), 0);
    assert_int_equal(res.count, 25);
    assert_int_equal(res.n_kvs, 0);
    ck_store_range_result_release(&res);

    int64_t deleted;
    assert_int_equal(ck_store_delete_prefix(store, p, pl, NULL, &deleted, &err), 0);
    assert_int_equal(deleted, 25);
    assert_int_equal(ck_store_range(store, &cnt, &res, &err), 0);
    assert_int_equal(res.count, 0);
    ck_store_range_result_release(&res);
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(store, sib, (size_t)sl, 0, &kv, NULL, &err), 0);
    ck_kv_unref(kv);
}

static void test_range_at_revision(void **state)
{
    (void)state;
    char p[128], k[160];
    mkprefix(p, sizeof(p), "atrev");
    size_t kl = mkkey(k, sizeof(k), p, "x%d", 0);
    struct ck_err err = {0};
    int64_t r1, r2, r3;
    assert_int_equal(ck_store_put(store, k, kl, "v1", 2, &r1, &err), 0);
    assert_int_equal(ck_store_put(store, k, kl, "v2", 2, &r2, &err), 0);
    assert_int_equal(ck_store_delete(store, k, kl, 0, &r3, NULL, &err), 0);
    const struct ck_kv *kv;
    int64_t cur;
    assert_int_equal(ck_store_get(store, k, kl, r1, &kv, &cur, &err), 0);
    assert_memory_equal(kv->value, "v1", 2);
    assert_true(cur >= r3);
    ck_kv_unref(kv);
    assert_int_equal(ck_store_get(store, k, kl, r2, &kv, NULL, &err), 0);
    assert_memory_equal(kv->value, "v2", 2);
    ck_kv_unref(kv);
    assert_int_equal(ck_store_get(store, k, kl, r3, &kv, NULL, &err), CK_ENOENT);
    assert_int_equal(ck_store_get(store, k, kl, cur + 1000, &kv, NULL, &err), CK_EINVAL);
}

static void test_binary_keys_and_values(void **state)
{
    (void)state;
    char p[128];
    size_t pl = mkprefix(p, sizeof(p), "bin");
    char k1[200], k2[200];
    memcpy(k1, p, pl);
    memcpy(k1 + pl, "a\0b", 3);
    memcpy(k2, p, pl);
    memcpy(k2 + pl, "a\0c\xff", 4);
    const char val[] = {0, 1, 2, (char)0xff, 0, 'z'};
    struct ck_err err = {0};
    assert_int_equal(ck_store_put(store, k1, pl + 3, val, sizeof(val), NULL, &err), 0);
    assert_int_equal(ck_store_put(store, k2, pl + 4, "2", 1, NULL, &err), 0);
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(store, k1, pl + 3, 0, &kv, NULL, &err), 0);
    assert_int_equal(kv->key_len, pl + 3);
    assert_memory_equal(kv->key, k1, pl + 3);
    assert_int_equal(kv->value_len, sizeof(val));
    assert_memory_equal(kv->value, val, sizeof(val));
    ck_kv_unref(kv);
    /* "a\0" is a prefix of both; "a" alone only (not "a\0b" vs "a\0c" order) */
    char pre[200];
    memcpy(pre, p, pl);
    memcpy(pre + pl, "a\0", 2);
    struct ck_store_range req = {.key = pre, .key_len = pl + 2, .prefix = true};
    struct ck_store_range_result res;
    assert_int_equal(ck_store_range(store, &req, &res, &err), 0);
    assert_int_equal(res.n_kvs, 2);
    assert_memory_equal(res.kvs[0]->key, k1, pl + 3);
    assert_memory_equal(res.kvs[1]->key, k2, pl + 4);
    ck_store_range_result_release(&res);
    /* a prefix ending in 0xff */
    memcpy(pre + pl, "a\0c\xff", 4);
    req.key_len = pl + 4;
    assert_int_equal(ck_store_range(store, &req, &res, &err), 0);
    assert_int_equal(res.n_kvs, 1);
    ck_store_range_result_release(&res);
}

static void test_large_value(void **state)
{
    (void)state;
    char p[128], k[160];
    mkprefix(p, sizeof(p), "large");
    size_t kl = mkkey(k, sizeof(k), p, "big%d", 0);
    size_t n = 1536 * 1024;
    char *v = malloc(n);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)(i * 7 + i / 251);
    struct ck_err err = {0};
    assert_int_equal(ck_store_put(store, k, kl, v, n, NULL, &err), 0);
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(store, k, kl, 0, &kv, NULL, &err), 0);
    assert_int_equal(kv->value_len, n);
    assert_memory_equal(kv->value, v, n);
    ck_kv_unref(kv);
    free(v);
}

#define WRITERS 4
#define PER     50

struct writer_arg {
    const char *prefix;
    int id;
};

static void *writer(void *arg)
{
    struct writer_arg *a = arg;
    char k[200];
    for (int i = 0; i < PER; i++) {
        size_t kl = mkkey(k, sizeof(k), a->prefix, "w%d", a->id);
        char v[32];
        int vl = snprintf(v, sizeof(v), "%d", i);
        struct ck_err err = {0};
        if (ck_store_put(store, k, kl, v, (size_t)vl, NULL, &err) < 0)
            fprintf(stderr, "put: %s\n", err.msg);
    }
    return NULL;
}

static void test_watch_order_concurrent_writers(void **state)
{
    (void)state;
    char p[128];
    size_t pl = mkprefix(p, sizeof(p), "watch");
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w;
    struct ck_err err = {0};
    assert_int_equal(ck_store_watch(store, p, pl, true, 0, collect, &c, &w, &err), 0);
    pthread_t th[WRITERS];
    struct writer_arg args[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (struct writer_arg){p, i};
        assert_int_equal(pthread_create(&th[i], NULL, writer, &args[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    assert_true(collector_wait(&c, &c.n, WRITERS * PER));
    ck_store_watch_cancel(w);
    assert_int_equal(c.n, WRITERS * PER);
    int next[WRITERS] = {0};
    for (size_t i = 0; i < c.n; i++) {
        const struct ck_store_event *e = &c.events[i];
        assert_int_equal(e->type, CK_STORE_EVENT_PUT);
        if (i > 0)
            assert_true(e->revision > c.events[i - 1].revision);
        assert_int_equal(e->kv->mod_revision, e->revision);
        int id = e->kv->key[e->kv->key_len - 1] - '0';
        assert_true(id >= 0 && id < WRITERS);
        /* each writer's values arrive in the order written, none missing */
        assert_int_equal(atoi(e->kv->value), next[id]);
        if (next[id] == 0) {
            assert_null(e->prev_kv);
        } else {
            assert_non_null(e->prev_kv);
            assert_int_equal(atoi(e->prev_kv->value), next[id] - 1);
        }
        next[id]++;
    }
    collector_release(&c);
}

static void test_watch_from_revision_and_cancel(void **state)
{
    (void)state;
    char p[128], k[160];
    size_t pl = mkprefix(p, sizeof(p), "resume");
    size_t kl = mkkey(k, sizeof(k), p, "obj%d", 0);
    struct ck_err err = {0};
    int64_t r1, r2, r3;
    assert_int_equal(ck_store_put(store, k, kl, "a", 1, &r1, &err), 0);
    assert_int_equal(ck_store_put(store, k, kl, "b", 1, &r2, &err), 0);
    assert_int_equal(ck_store_delete(store, k, kl, 0, &r3, NULL, &err), 0);
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w;
    assert_int_equal(ck_store_watch(store, p, pl, true, r2, collect, &c, &w, &err), 0);
    assert_true(collector_wait(&c, &c.n, 2));
    assert_int_equal(c.events[0].type, CK_STORE_EVENT_PUT);
    assert_int_equal(c.events[0].revision, r2);
    assert_memory_equal(c.events[0].kv->value, "b", 1);
    assert_memory_equal(c.events[0].prev_kv->value, "a", 1);
    assert_int_equal(c.events[1].type, CK_STORE_EVENT_DELETE);
    assert_int_equal(c.events[1].revision, r3);
    assert_int_equal(c.events[1].kv->key_len, kl);
    assert_memory_equal(c.events[1].prev_kv->value, "b", 1);
    /* exact-key watch from the past sees only its key */
    struct collector c2;
    collector_init(&c2);
    struct ck_store_watch *w2;
    assert_int_equal(ck_store_watch(store, k, kl - 1, false, r1, collect, &c2, &w2, &err), 0);
    int64_t r4;
    assert_int_equal(ck_store_put(store, k, kl, "c", 1, &r4, &err), 0);
    assert_true(collector_wait(&c, &c.n, 3));
    assert_int_equal(c.events[2].revision, r4);
    assert_null(c.events[2].prev_kv);
    ck_store_watch_cancel(w2);
    assert_int_equal(c2.n, 0); /* "obj" is not "obj0" */
    collector_release(&c2);
    /* after cancel returns, no callback: the collector can go */
    ck_store_watch_cancel(w);
    size_t n = c.n;
    collector_release(&c);
    assert_int_equal(n, 3);
    assert_int_equal(ck_store_put(store, k, kl, "d", 1, NULL, &err), 0);
}

static void test_watch_progress(void **state)
{
    (void)state;
    char p[128];
    size_t pl = mkprefix(p, sizeof(p), "progress");
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w;
    struct ck_err err = {0};
    int64_t r;
    assert_int_equal(ck_store_put(store, "/ct/other", 9, "x", 1, &r, &err), 0);
    assert_int_equal(ck_store_watch(store, p, pl, true, 0, collect, &c, &w, &err), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(ck_store_watch_progress(w, &err), 0);
    assert_true(collector_wait(&c, &c.progress, 1));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(c.last_progress >= r);
    /* the answer to the request: etcd's periodic progress (every 2 s in the
     * tests) comes first 2 s after the watch's stream opened */
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(waited < 1.5);
    ck_store_watch_cancel(w);
    assert_int_equal(c.n, 0);
    collector_release(&c);
}

static void test_compaction(void **state)
{
    (void)state;
    char p[128], k[160];
    size_t pl = mkprefix(p, sizeof(p), "compact");
    size_t kl = mkkey(k, sizeof(k), p, "c%d", 0);
    struct ck_err err = {0};
    int64_t r1, r2, r3;
    assert_int_equal(ck_store_put(store, k, kl, "1", 1, &r1, &err), 0);
    assert_int_equal(ck_store_put(store, k, kl, "2", 1, &r2, &err), 0);
    assert_int_equal(ck_store_put(store, k, kl, "3", 1, &r3, &err), 0);
    assert_int_equal(ck_store_compact(store, r2, &err), 0);
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(store, k, kl, r1, &kv, NULL, &err), CK_ECOMPACTED);
    assert_int_equal(ck_store_get(store, k, kl, r2, &kv, NULL, &err), 0);
    assert_memory_equal(kv->value, "2", 1);
    ck_kv_unref(kv);
    assert_int_equal(ck_store_get(store, k, kl, 0, &kv, NULL, &err), 0);
    assert_memory_equal(kv->value, "3", 1);
    ck_kv_unref(kv);
    assert_int_equal(ck_store_compact(store, r2, &err), CK_ECOMPACTED);
    int64_t cur, comp;
    assert_int_equal(ck_store_revisions(store, &cur, &comp, &err), 0);
    assert_int_equal(comp, r2);
    assert_true(cur >= r3);
    struct collector c;
    collector_init(&c);
    struct ck_store_watch *w;
    assert_int_equal(ck_store_watch(store, p, pl, true, r1, collect, &c, &w, &err), 0);
    assert_true(collector_wait(&c, &c.n, 1));
    assert_int_equal(c.events[0].type, CK_STORE_EVENT_ERROR);
    assert_int_equal(c.events[0].error, CK_ECOMPACTED);
    assert_int_equal(c.events[0].compact_revision, r2);
    ck_store_watch_cancel(w);
    collector_release(&c);
    /* a watch from the compacted revision itself still works */
    collector_init(&c);
    assert_int_equal(ck_store_watch(store, p, pl, true, r3, collect, &c, &w, &err), 0);
    assert_true(collector_wait(&c, &c.n, 1));
    assert_int_equal(c.events[0].type, CK_STORE_EVENT_PUT);
    assert_int_equal(c.events[0].revision, r3);
    ck_store_watch_cancel(w);
    collector_release(&c);
}

/*
 * The automatic compactor, on a 20 ms interval: each tick compacts to the
 * revision seen at the tick before, so after two ticks without writes the
 * history below the last write is gone and the last write is still there.
 * Compaction has no event to wait for, so the compacted revision is polled
 * (bounded by 30 s).
 */
static void test_auto_compaction(void **state)
{
    (void)state;
    ck_store_close(store);
    store = NULL;
    struct ck_store_options opts = {.compaction_interval_ms = 20};
    struct ck_store *s;
    struct ck_err err = {0};
    assert_int_equal(ck_store_open(url, &opts, &s, &err), 0);
    char p[128], k[160];
    mkprefix(p, sizeof(p), "autocompact");
    size_t kl = mkkey(k, sizeof(k), p, "a");
    int64_t r1, r2, cur = 0, comp = 0;
    assert_int_equal(ck_store_put(s, k, kl, "1", 1, &r1, &err), 0);
    assert_int_equal(ck_store_put(s, k, kl, "2", 1, &r2, &err), 0);
    for (int i = 0; i < 3000 && comp < r2; i++) {
        assert_int_equal(ck_store_revisions(s, &cur, &comp, &err), 0);
        if (comp < r2)
            usleep(10000);
    }
    assert_true(comp >= r2);
    const struct ck_kv *kv;
    assert_int_equal(ck_store_get(s, k, kl, r1, &kv, NULL, &err), CK_ECOMPACTED);
    assert_int_equal(ck_store_get(s, k, kl, 0, &kv, NULL, &err), 0);
    assert_memory_equal(kv->value, "2", 1);
    ck_kv_unref(kv);
    ck_store_close(s);
    opts.compaction_interval_ms = -1;
    assert_int_equal(ck_store_open(url, &opts, &store, &err), 0);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    struct ck_err err = {0};
    struct ck_store *s;
    assert_int_equal(ck_store_open("mysql://x", NULL, &s, &err), CK_EINVAL);
    assert_non_null(strstr(err.msg, "unsupported"));
    assert_int_equal(ck_store_open("etcd://nohost", NULL, &s, &err), CK_EINVAL);
    struct ck_store_range req = {.key = "/a/", .key_len = 3, .from_key = "/b", .from_key_len = 2};
    struct ck_store_range_result res;
    assert_int_equal(ck_store_range(store, &req, &res, &err), CK_EINVAL);
    assert_int_equal(ck_store_compact(store, 0, &err), CK_EINVAL);
}

int main(int argc, char **argv)
{
    url_arg = argc > 1 ? argv[1] : "sqlite";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_revisions_and_versions),
        cmocka_unit_test(test_txn_compares),
        cmocka_unit_test(test_prefix_range_limit_count),
        cmocka_unit_test(test_range_at_revision),
        cmocka_unit_test(test_binary_keys_and_values),
        cmocka_unit_test(test_large_value),
        cmocka_unit_test(test_watch_order_concurrent_writers),
        cmocka_unit_test(test_watch_from_revision_and_cancel),
        cmocka_unit_test(test_watch_progress),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_auto_compaction),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
