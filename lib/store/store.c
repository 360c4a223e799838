/*
 * store.c - the interface layer: connection strings, dispatch to a backend's
 * struct ck_store_ops, refcounted kvs, the create/update/delete helpers (each
 * one transaction) and the automatic compactor.
 *
 * Mirrors k8s.io/apiserver/pkg/storage/etcd3 (store.go's txn shapes:
 * create = "create_revision == 0 then put", GuaranteedUpdate = "mod_revision
 * == rev then put else get") and kube-apiserver's compactor
 * (storage/etcd3/compact.go: every interval compact to the revision seen at the
 * previous tick).
 *
 * Threading: everything here is reentrant; the compactor runs on its own
 * thread and stops in ck_store_close().
 *
 * Tests: tests/store/test_store.c (kv boxes, prefix ends, key matching, kv
 * arrays, the checks before a transaction reaches a backend); the conformance
 * suite (tests/store/test_conformance.c, on SQLite and on etcd) runs dispatch,
 * the create/update/delete transactions and the compactor through both backends.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* ---- kvs ------------------------------------------------------------------ */

struct kv_box {
    atomic_int refs;
    struct ck_kv kv;
    char data[]; /* key NUL value NUL */
};

#define BOX_OF(kv) ((struct kv_box *)((char *)(kv)-offsetof(struct kv_box, kv)))

struct ck_kv *ck__kv_new(const char *key, size_t key_len, const char *value, size_t value_len,
                         int64_t create_revision, int64_t mod_revision, int64_t version)
{
    struct kv_box *b = malloc(sizeof(*b) + key_len + value_len + 2);
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    char *k = b->data;
    char *v = b->data + key_len + 1;
    if (key_len)
        memcpy(k, key, key_len);
    k[key_len] = '\0';
    if (value_len)
        memcpy(v, value, value_len);
    v[value_len] = '\0';
    b->kv = (struct ck_kv){.key = k,
                           .key_len = key_len,
                           .value = v,
                           .value_len = value_len,
                           .create_revision = create_revision,
                           .mod_revision = mod_revision,
                           .version = version};
    return &b->kv;
}

const struct ck_kv *ck_kv_new(const char *key, size_t key_len, const char *value, size_t value_len,
                              int64_t create_revision, int64_t mod_revision, int64_t version)
{
    return ck__kv_new(key, key_len, value, value_len, create_revision, mod_revision, version);
}

const struct ck_kv *ck_kv_ref(const struct ck_kv *kv)
{
    if (kv)
        atomic_fetch_add_explicit(&BOX_OF(kv)->refs, 1, memory_order_relaxed);
    return kv;
}

const struct ck_kv *ck_kv_unref(const struct ck_kv *kv)
{
    if (kv && atomic_fetch_sub_explicit(&BOX_OF(kv)->refs, 1, memory_order_acq_rel) == 1)
        free(BOX_OF(kv));
    return NULL;
}

int ck__kvs_append(const struct ck_kv ***kvs, size_t *n, size_t *cap, const struct ck_kv *kv)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        const struct ck_kv **nk = realloc(*kvs, ncap * sizeof(*nk));
        if (!nk)
            return CK_ENOMEM;
        *kvs = nk;
        *cap = ncap;
    }
    (*kvs)[(*n)++] = ck_kv_ref(kv);
    return 0;
}

void ck__kvs_free(const struct ck_kv **kvs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_kv_unref(kvs[i]);
    free(kvs);
}

size_t ck__prefix_end(const char *prefix, size_t len, char *out)
{
    while (len > 0 && (unsigned char)prefix[len - 1] == 0xff)
        len--;
    if (len == 0)
        return 0;
    memcpy(out, prefix, len);
    out[len - 1] = (char)((unsigned char)out[len - 1] + 1);
    return len;
}

bool ck__key_matches(const char *wkey, size_t wkey_len, bool prefix, const char *key,
                     size_t key_len)
{
    if (prefix)
        return key_len >= wkey_len && memcmp(key, wkey, wkey_len) == 0;
    return key_len == wkey_len && memcmp(key, wkey, wkey_len) == 0;
}

void ck_store_range_result_release(struct ck_store_range_result *ret)
{
    if (!ret)
        return;
    ck__kvs_free(ret->kvs, ret->n_kvs);
    memset(ret, 0, sizeof(*ret));
}

void ck_store_txn_result_release(struct ck_store_txn_result *ret)
{
    if (!ret)
        return;
    for (size_t i = 0; i < ret->n_results; i++)
        ck__kvs_free(ret->results[i].kvs, ret->results[i].n_kvs);
    free(ret->results);
    memset(ret, 0, sizeof(*ret));
}

/* ---- opening and dispatch ---------------------------------------------------- */

static void *compactor_main(void *arg);

/*
 * Reads the options after '?' in a connection string ("name=N&name=N") into
 * o. Returns 0, or CK_EINVAL naming the parameter it does not know.
 */
static int parse_url_options(const char *query, struct ck_store_options *o, struct ck_err *reterr)
{
    static const struct {
        const char *name;
        size_t offset;
    } known[] = {
        {"watch-history-events", offsetof(struct ck_store_options, watch_history_events)},
        {"watch-history-bytes", offsetof(struct ck_store_options, watch_history_bytes)},
    };
    const char *p = query;
    while (*p) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        size_t i = 0;
        for (; eq && i < sizeof(known) / sizeof(known[0]); i++)
            if (strlen(known[i].name) == (size_t)(eq - p) &&
                strncmp(p, known[i].name, (size_t)(eq - p)) == 0)
                break;
        char *end = NULL;
        unsigned long long v = eq ? strtoull(eq + 1, &end, 10) : 0;
        if (!eq || i == sizeof(known) / sizeof(known[0]) || end == eq + 1 || end != p + len ||
            eq[1] == '-')
            return ck_err_set(reterr, CK_EINVAL,
                              "store: bad connection string option \"%.*s\" (want "
                              "watch-history-events=N or watch-history-bytes=N)",
                              (int)len, p);
        *(size_t *)(void *)((char *)o + known[i].offset) = (size_t)v;
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

int ck_store_open(const char *url, const struct ck_store_options *opts, struct ck_store **ret_store,
                  struct ck_err *reterr)
{
    static const struct {
        const char *scheme;
        const struct ck_store_ops *ops;
    } schemes[] = {{"sqlite://", &ck__sqlite_ops}, {"etcd://", &ck__etcd_ops}};
    if (!url || !ret_store)
        return ck_err_set(reterr, CK_EINVAL, "store: no connection string");
    struct ck_store_options o = {0};
    if (opts)
        o = *opts;
    if (o.compaction_interval_ms == 0)
        o.compaction_interval_ms = 5 * 60 * 1000;
    if (o.etcd_timeout_ms <= 0)
        o.etcd_timeout_ms = 5000;
    if (o.etcd_attempts <= 0)
        o.etcd_attempts = 4;
    const char *query = strchr(url, '?');
    if (query) {
        int r = parse_url_options(query + 1, &o, reterr);
        if (r < 0)
            return r;
    }
    if (o.watch_history_events == 0)
        o.watch_history_events = 16384;
    if (o.watch_history_bytes == 0)
        o.watch_history_bytes = 64u * 1024 * 1024;
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        size_t n = strlen(schemes[i].scheme);
        if (strncmp(url, schemes[i].scheme, n) != 0)
            continue;
        struct ck_store *s;
        /* the backend sees the connection string without its options */
        char *target = strndup(url + n, query ? (size_t)(query - url) - n : strlen(url + n));
        if (!target)
            return ck_err_set(reterr, CK_ENOMEM, "store: out of memory");
        int r = schemes[i].ops->open(target, &o, &s, reterr);
        free(target);
        if (r < 0)
            return r;
        s->ops = schemes[i].ops;
        s->opts = o;
        pthread_mutex_init(&s->compactor_lock, NULL);
        pthread_cond_init(&s->compactor_cond, NULL);
        s->compactor_stop = false;
        s->compactor_running = false;
        if (o.compaction_interval_ms > 0) {
            if (pthread_create(&s->compactor, NULL, compactor_main, s) != 0) {
                ck_store_close(s);
                return ck_err_set(reterr, CK_ENOMEM, "store: cannot start the compactor");
            }
            s->compactor_running = true;
        }
        *ret_store = s;
        return 0;
    }
    return ck_err_set(reterr, CK_EINVAL,
                      "store: unsupported connection string \"%s\" (want sqlite://PATH or "
                      "etcd://host:port[,host:port...])",
                      url);
}

void ck_store_close(struct ck_store *store)
{
    if (!store)
        return;
    if (store->compactor_running) {
        pthread_mutex_lock(&store->compactor_lock);
        store->compactor_stop = true;
        pthread_cond_signal(&store->compactor_cond);
        pthread_mutex_unlock(&store->compactor_lock);
        pthread_join(store->compactor, NULL);
    }
    pthread_mutex_destroy(&store->compactor_lock);
    pthread_cond_destroy(&store->compactor_cond);
    store->ops->close(store);
}

const char *ck_store_backend(const struct ck_store *store)
{
    return store->ops->name;
}

int ck_store_range(struct ck_store *store, const struct ck_store_range *req,
                   struct ck_store_range_result *ret, struct ck_err *reterr)
{
    if (!req || !ret || (req->key_len && !req->key))
        return ck_err_set(reterr, CK_EINVAL, "store: range without a key");
    if (req->revision < 0 || req->limit < 0)
        return ck_err_set(reterr, CK_EINVAL, "store: negative revision or limit");
    if (req->from_key && (!req->prefix || !ck__key_matches(req->key, req->key_len, true,
                                                           req->from_key, req->from_key_len)))
        return ck_err_set(reterr, CK_EINVAL, "store: from_key must lie within the prefix");
    return store->ops->range(store, req, ret, reterr);
}

int ck_store_get(struct ck_store *store, const char *key, size_t key_len, int64_t revision,
                 const struct ck_kv **ret_kv, int64_t *ret_revision, struct ck_err *reterr)
{
    struct ck_store_range req = {.key = key, .key_len = key_len, .revision = revision};
    struct ck_store_range_result res;
    int r = ck_store_range(store, &req, &res, reterr);
    if (r < 0)
        return r;
    if (ret_revision)
        *ret_revision = res.revision;
    if (res.n_kvs == 0) {
        ck_store_range_result_release(&res);
        return ck_err_set(reterr, CK_ENOENT, "store: key not found");
    }
    *ret_kv = ck_kv_ref(res.kvs[0]);
    ck_store_range_result_release(&res);
    return 0;
}

static int check_ops(const struct ck_store_op *ops, size_t n, struct ck_err *reterr)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].type > CK_STORE_OP_GET)
            return ck_err_set(reterr, CK_EINVAL, "store: unknown operation %d", (int)ops[i].type);
        if (ops[i].key_len && !ops[i].key)
            return ck_err_set(reterr, CK_EINVAL, "store: operation without a key");
        if (ops[i].type == CK_STORE_OP_PUT && ops[i].prefix)
            return ck_err_set(reterr, CK_EINVAL, "store: a put cannot take a prefix");
        if (ops[i].type == CK_STORE_OP_PUT && ops[i].value_len && !ops[i].value)
            return ck_err_set(reterr, CK_EINVAL, "store: put without a value");
    }
    return 0;
}

int ck_store_txn(struct ck_store *store, const struct ck_store_txn *txn,
                 struct ck_store_txn_result *ret, struct ck_err *reterr)
{
    if (!txn || !ret)
        return ck_err_set(reterr, CK_EINVAL, "store: no transaction");
    for (size_t i = 0; i < txn->n_cmps; i++) {
        const struct ck_store_cmp *c = &txn->cmps[i];
        if (c->target > CK_STORE_CMP_VALUE || c->result > CK_STORE_CMP_GREATER ||
            (c->key_len && !c->key))
            return ck_err_set(reterr, CK_EINVAL, "store: malformed compare %zu", i);
    }
    int r = check_ops(txn->then_ops, txn->n_then, reterr);
    if (r == 0)
        r = check_ops(txn->else_ops, txn->n_else, reterr);
    if (r < 0)
        return r;
    return store->ops->txn(store, txn, ret, reterr);
}

/* ---- helpers ---------------------------------------------------------------- */

static struct ck_store_op put_op(const char *key, size_t key_len, const char *value,
                                 size_t value_len)
{
    return (struct ck_store_op){.type = CK_STORE_OP_PUT,
                                .key = key,
                                .key_len = key_len,
                                .value = value,
                                .value_len = value_len};
}

/* "If cmp (none: always) then put": *ret_ok says whether the put ran. */
static int put_if(struct ck_store *store, const struct ck_store_cmp *cmp, const char *key,
                  size_t key_len, const char *value, size_t value_len, bool *ret_ok,
                  int64_t *ret_revision, struct ck_err *reterr)
{
    struct ck_store_op op = put_op(key, key_len, value, value_len);
    struct ck_store_txn txn = {.cmps = cmp, .n_cmps = cmp ? 1 : 0, .then_ops = &op, .n_then = 1};
    struct ck_store_txn_result res;
    int r = ck_store_txn(store, &txn, &res, reterr);
    if (r < 0)
        return r;
    *ret_ok = res.succeeded || !cmp;
    if (*ret_ok && ret_revision)
        *ret_revision = res.revision;
    ck_store_txn_result_release(&res);
    return 0;
}

int ck_store_put(struct ck_store *store, const char *key, size_t key_len, const char *value,
                 size_t value_len, int64_t *ret_revision, struct ck_err *reterr)
{
    bool ok;
    return put_if(store, NULL, key, key_len, value, value_len, &ok, ret_revision, reterr);
}

int ck_store_create(struct ck_store *store, const char *key, size_t key_len, const char *value,
                    size_t value_len, int64_t *ret_revision, struct ck_err *reterr)
{
    struct ck_store_cmp cmp = {.key = key,
                               .key_len = key_len,
                               .target = CK_STORE_CMP_CREATE,
                               .result = CK_STORE_CMP_EQUAL,
                               .number = 0};
    bool ok;
    int r = put_if(store, &cmp, key, key_len, value, value_len, &ok, ret_revision, reterr);
    if (r < 0)
        return r;
    return ok ? 0 : ck_err_set(reterr, CK_EEXIST, "store: key already exists");
}

/*
 * "If mod_revision == expected (or the key exists, when expected is 0) then
 * op else get": the shape of update and delete.
 */
static int guarded(struct ck_store *store, const struct ck_store_op *op, int64_t expected,
                   int64_t *ret_revision, const struct ck_kv **ret_kv, struct ck_err *reterr)
{
    struct ck_store_cmp cmp = {.key = op->key, .key_len = op->key_len};
    if (expected > 0) {
        cmp.target = CK_STORE_CMP_MOD;
        cmp.result = CK_STORE_CMP_EQUAL;
        cmp.number = expected;
    } else {
        cmp.target = CK_STORE_CMP_CREATE;
        cmp.result = CK_STORE_CMP_GREATER;
        cmp.number = 0;
    }
    struct ck_store_op get = {.type = CK_STORE_OP_GET, .key = op->key, .key_len = op->key_len};
    struct ck_store_txn txn = {
        .cmps = &cmp, .n_cmps = 1, .then_ops = op, .n_then = 1, .else_ops = &get, .n_else = 1};
    struct ck_store_txn_result res;
    int r = ck_store_txn(store, &txn, &res, reterr);
    if (r < 0)
        return r;
    const struct ck_kv *kv =
        res.n_results == 1 && res.results[0].n_kvs > 0 ? ck_kv_ref(res.results[0].kvs[0]) : NULL;
    if (res.succeeded) {
        if (ret_revision)
            *ret_revision = res.revision;
        r = 0;
    } else if (!kv) {
        r = ck_err_set(reterr, CK_ENOENT, "store: key not found");
    } else {
        r = ck_err_set(reterr, CK_ECONFLICT,
                       "store: key was modified (mod revision %lld, expected %lld)",
                       (long long)kv->mod_revision, (long long)expected);
    }
    ck_store_txn_result_release(&res);
    if (ret_kv)
        *ret_kv = kv;
    else
        ck_kv_unref(kv);
    return r;
}

int ck_store_update(struct ck_store *store, const char *key, size_t key_len, const char *value,
                    size_t value_len, int64_t expected_mod_revision, int64_t *ret_revision,
                    const struct ck_kv **ret_current, struct ck_err *reterr)
{
    if (expected_mod_revision <= 0)
        return ck_err_set(reterr, CK_EINVAL, "store: update needs the expected mod revision");
    struct ck_store_op op = put_op(key, key_len, value, value_len);
    const struct ck_kv *cur = NULL;
    int r = guarded(store, &op, expected_mod_revision, ret_revision, &cur, reterr);
    if (r == 0)
        cur = ck_kv_unref(cur); /* on success the "else get" did not run: nothing */
    if (ret_current)
        *ret_current = cur;
    else
        ck_kv_unref(cur);
    return r;
}

int ck_store_delete(struct ck_store *store, const char *key, size_t key_len,
                    int64_t expected_mod_revision, int64_t *ret_revision,
                    const struct ck_kv **ret_prev, struct ck_err *reterr)
{
    struct ck_store_op op = {
        .type = CK_STORE_OP_DELETE, .key = key, .key_len = key_len, .prev_kv = true};
    const struct ck_kv *prev = NULL;
    int r = guarded(store, &op, expected_mod_revision < 0 ? 0 : expected_mod_revision, ret_revision,
                    &prev, reterr);
    if (ret_prev)
        *ret_prev = prev;
    else
        ck_kv_unref(prev);
    return r;
}

int ck_store_delete_prefix(struct ck_store *store, const char *prefix, size_t prefix_len,
                           int64_t *ret_revision, int64_t *ret_deleted, struct ck_err *reterr)
{
    struct ck_store_op op = {
        .type = CK_STORE_OP_DELETE, .key = prefix, .key_len = prefix_len, .prefix = true};
    struct ck_store_txn txn = {.then_ops = &op, .n_then = 1};
    struct ck_store_txn_result res;
    int r = ck_store_txn(store, &txn, &res, reterr);
    if (r < 0)
        return r;
    if (ret_revision)
        *ret_revision = res.revision;
    if (ret_deleted)
        *ret_deleted = res.n_results ? res.results[0].deleted : 0;
    ck_store_txn_result_release(&res);
    return 0;
}

/* ---- watch, compaction ----------------------------------------------------- */

int ck_store_watch(struct ck_store *store, const char *key, size_t key_len, bool prefix,
                   int64_t start_revision, ck_store_watch_fn fn, void *userdata,
                   struct ck_store_watch **ret_watch, struct ck_err *reterr)
{
    if (!fn || !ret_watch || (key_len && !key) || start_revision < 0)
        return ck_err_set(reterr, CK_EINVAL, "store: bad watch arguments");
    return store->ops->watch(store, key, key_len, prefix, start_revision, fn, userdata, ret_watch,
                             reterr);
}

int ck_store_watch_progress(struct ck_store_watch *watch, struct ck_err *reterr)
{
    return watch->ops->watch_progress(watch, reterr);
}

void ck_store_watch_cancel(struct ck_store_watch *watch)
{
    if (watch)
        watch->ops->watch_cancel(watch);
}

int ck_store_compact(struct ck_store *store, int64_t revision, struct ck_err *reterr)
{
    if (revision <= 0)
        return ck_err_set(reterr, CK_EINVAL, "store: compaction needs a positive revision");
    return store->ops->compact(store, revision, reterr);
}

int ck_store_revisions(struct ck_store *store, int64_t *ret_current, int64_t *ret_compacted,
                       struct ck_err *reterr)
{
    int64_t cur = 0, comp = 0;
    int r = store->ops->revisions(store, &cur, &comp, reterr);
    if (r < 0)
        return r;
    if (ret_current)
        *ret_current = cur;
    if (ret_compacted)
        *ret_compacted = comp;
    return 0;
}

/*
 * Every interval: compact to the revision seen at the previous tick, so one
 * interval of history stays for watchers that reconnect (compact.go).
 */
static void *compactor_main(void *arg)
{
    struct ck_store *s = arg;
    int64_t last = 0;
    pthread_mutex_lock(&s->compactor_lock);
    while (!s->compactor_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ms = s->opts.compaction_interval_ms;
        ts.tv_sec += (time_t)(ms / 1000);
        ts.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!s->compactor_stop &&
               pthread_cond_timedwait(&s->compactor_cond, &s->compactor_lock, &ts) == 0)
            ;
        if (s->compactor_stop)
            break;
        pthread_mutex_unlock(&s->compactor_lock);
        int64_t cur = 0, comp = 0;
        struct ck_err err = {0};
        if (s->ops->revisions(s, &cur, &comp, &err) == 0) {
            if (last > comp) {
                int r = s->ops->compact(s, last, &err);
                if (r < 0 && r != CK_ECOMPACTED)
                    CK_LOGW("store: compaction to %lld failed: %s", (long long)last, err.msg);
                else if (r == 0)
                    CK_LOGV(2, "store: compacted to revision %lld", (long long)last);
            }
            last = cur;
        } else {
            CK_LOGW("store: compactor cannot read revisions: %s", err.msg);
        }
        pthread_mutex_lock(&s->compactor_lock);
    }
    pthread_mutex_unlock(&s->compactor_lock);
    return NULL;
}
