/*
 * transform.c - a store that transforms the values of some keys on their
 * way in and out of another store: encryption at rest.
 *
 * Kubernetes' storage layer runs every value through a "transformer" before
 * etcd sees it and after it reads it (k8s.io/apiserver/pkg/storage/value);
 * the API server's EncryptionConfiguration picks one per resource. This
 * wrapper is that layer for any backend: puts in a transaction are
 * transformed to their stored form, and every value read, by a range, a
 * transaction's get or previous kvs, or a watch event, is transformed back
 * before the caller sees it. Callers above (the registry, lists, watches)
 * never see the stored form; the backend never sees the plain one.
 *
 * Limits: a transaction compare on the VALUE of a transformed key compares
 * the stored (transformed) bytes, so it is refused (CK_EINVAL); compares on
 * versions and revisions are what the API server uses. A value that cannot
 * be transformed back fails the read (CK_EIO) with the transformer's reason.
 *
 * Threading: as thread-safe as the wrapped store; the transformer's
 * functions are called from any thread at once. The wrapper owns the
 * wrapped store and closes it.
 *
 * Tests: tests/store/test_transform.c, tests/apiserver/test_encryption.c.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct transformed {
    struct ck_store base; /* first: the generic layer's header */
    struct ck_store *inner;
    struct ck_store_transformer t;
};

struct transformed_watch {
    struct ck_store_watch base; /* first: ck_store_watch_cancel() finds our ops */
    struct ck_store_watch *inner;
    struct transformed *store;
    ck_store_watch_fn fn;
    void *userdata;
};

static struct transformed *of(struct ck_store *s)
{
    return (struct transformed *)s;
}

static bool applies(const struct transformed *s, const char *key, size_t key_len)
{
    return s->t.applies(s->t.ctx, key, key_len);
}

/* A new kv holding kv's value transformed back; kv itself when the key is not transformed. */
static int read_back(struct transformed *s, const struct ck_kv *kv, const struct ck_kv **ret,
                     struct ck_err *reterr)
{
    if (!kv || kv->value_len == 0 || !applies(s, kv->key, kv->key_len)) {
        *ret = ck_kv_ref(kv);
        return 0;
    }
    char *plain = NULL;
    size_t len = 0;
    int r = s->t.from_storage(s->t.ctx, kv->key, kv->key_len, kv->value, kv->value_len, &plain,
                              &len, reterr);
    if (r < 0)
        return r;
    *ret = ck__kv_new(kv->key, kv->key_len, plain, len, kv->create_revision, kv->mod_revision,
                      kv->version);
    free(plain);
    return *ret ? 0 : ck_err_no_memory(reterr);
}

/* Replaces each of kvs by its value transformed back. */
static int read_back_all(struct transformed *s, const struct ck_kv **kvs, size_t n,
                         struct ck_err *reterr)
{
    for (size_t i = 0; i < n; i++) {
        const struct ck_kv *plain = NULL;
        int r = read_back(s, kvs[i], &plain, reterr);
        if (r < 0)
            return r;
        ck_kv_unref(kvs[i]);
        kvs[i] = plain;
    }
    return 0;
}

static int t_range(struct ck_store *store, const struct ck_store_range *req,
                   struct ck_store_range_result *ret, struct ck_err *reterr)
{
    struct transformed *s = of(store);
    int r = ck_store_range(s->inner, req, ret, reterr);
    if (r == 0 && (r = read_back_all(s, ret->kvs, ret->n_kvs, reterr)) < 0)
        ck_store_range_result_release(ret);
    return r;
}

/* The ops with every put of a transformed key in its stored form; *ret_buffers to free. */
static int write_forms(struct transformed *s, const struct ck_store_op *ops, size_t n,
                       struct ck_store_op **ret_ops, char ***ret_buffers, struct ck_err *reterr)
{
    *ret_ops = NULL;
    *ret_buffers = NULL;
    if (n == 0)
        return 0;
    struct ck_store_op *copy = ck__calloc(n, sizeof(*copy));
    char **buffers = ck__calloc(n, sizeof(*buffers));
    if (!copy || !buffers) {
        free(copy);
        free(buffers);
        return ck_err_no_memory(reterr);
    }
    memcpy(copy, ops, n * sizeof(*copy));
    *ret_ops = copy;
    *ret_buffers = buffers;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].type != CK_STORE_OP_PUT || !applies(s, ops[i].key, ops[i].key_len))
            continue;
        size_t len = 0;
        int r = s->t.to_storage(s->t.ctx, ops[i].key, ops[i].key_len, ops[i].value,
                                ops[i].value_len, &buffers[i], &len, reterr);
        if (r < 0)
            return r;
        copy[i].value = buffers[i];
        copy[i].value_len = len;
    }
    return 0;
}

static void free_forms(struct ck_store_op *ops, char **buffers, size_t n)
{
    for (size_t i = 0; buffers && i < n; i++)
        free(buffers[i]);
    free(buffers);
    free(ops);
}

static int t_txn(struct ck_store *store, const struct ck_store_txn *txn,
                 struct ck_store_txn_result *ret, struct ck_err *reterr)
{
    struct transformed *s = of(store);
    for (size_t i = 0; i < txn->n_cmps; i++)
        if (txn->cmps[i].target == CK_STORE_CMP_VALUE &&
            applies(s, txn->cmps[i].key, txn->cmps[i].key_len))
            return ck_err_set(reterr, CK_EINVAL,
                              "store: cannot compare the value of a transformed key");
    struct ck_store_op *then_ops = NULL, *else_ops = NULL;
    char **then_buffers = NULL, **else_buffers = NULL;
    int r = write_forms(s, txn->then_ops, txn->n_then, &then_ops, &then_buffers, reterr);
    if (r == 0)
        r = write_forms(s, txn->else_ops, txn->n_else, &else_ops, &else_buffers, reterr);
    if (r == 0) {
        struct ck_store_txn stored = *txn;
        stored.then_ops = then_ops;
        stored.else_ops = else_ops;
        r = ck_store_txn(s->inner, &stored, ret, reterr);
    }
    free_forms(then_ops, then_buffers, txn->n_then);
    free_forms(else_ops, else_buffers, txn->n_else);
    if (r < 0)
        return r;
    for (size_t i = 0; i < ret->n_results && r == 0; i++)
        r = read_back_all(s, ret->results[i].kvs, ret->results[i].n_kvs, reterr);
    if (r < 0)
        ck_store_txn_result_release(ret);
    return r;
}

static void t_watch_event(const struct ck_store_event *event, void *userdata)
{
    struct transformed_watch *w = userdata;
    struct ck_store_event plain = *event;
    const struct ck_kv *kv = NULL, *prev = NULL;
    struct ck_err err = {0};
    int r = read_back(w->store, event->kv, &kv, &err);
    if (r == 0)
        r = read_back(w->store, event->prev_kv, &prev, &err);
    if (r == 0) {
        plain.kv = kv;
        plain.prev_kv = prev;
    } else {
        /* a value that cannot be read back ends the watch, as a failed read would */
        plain = (struct ck_store_event){.type = CK_STORE_EVENT_ERROR,
                                        .revision = event->revision,
                                        .error = r,
                                        .message = err.msg};
    }
    w->fn(&plain, w->userdata);
    ck_kv_unref(kv);
    ck_kv_unref(prev);
    ck_err_release(&err);
}

static const struct ck_store_ops transform_ops;

static int t_watch(struct ck_store *store, const char *key, size_t key_len, bool prefix,
                   int64_t start_revision, ck_store_watch_fn fn, void *userdata,
                   struct ck_store_watch **ret_watch, struct ck_err *reterr)
{
    struct transformed_watch *w = ck__calloc(1, sizeof(*w));
    if (!w)
        return ck_err_no_memory(reterr);
    w->base.ops = &transform_ops;
    w->store = of(store);
    w->fn = fn;
    w->userdata = userdata;
    int r = ck_store_watch(of(store)->inner, key, key_len, prefix, start_revision, t_watch_event, w,
                           &w->inner, reterr);
    if (r < 0) {
        free(w);
        return r;
    }
    *ret_watch = &w->base;
    return 0;
}

static int t_watch_progress(struct ck_store_watch *watch, struct ck_err *reterr)
{
    return ck_store_watch_progress(((struct transformed_watch *)watch)->inner, reterr);
}

static void t_watch_cancel(struct ck_store_watch *watch)
{
    struct transformed_watch *w = (struct transformed_watch *)watch;
    ck_store_watch_cancel(w->inner);
    free(w);
}

static int t_compact(struct ck_store *store, int64_t revision, struct ck_err *reterr)
{
    return ck_store_compact(of(store)->inner, revision, reterr);
}

static int t_revisions(struct ck_store *store, int64_t *ret_current, int64_t *ret_compacted,
                       struct ck_err *reterr)
{
    return ck_store_revisions(of(store)->inner, ret_current, ret_compacted, reterr);
}

static void t_close(struct ck_store *store)
{
    struct transformed *s = of(store);
    ck_store_close(s->inner);
    if (s->t.release)
        s->t.release(s->t.ctx);
    free(s);
}

static const struct ck_store_ops transform_ops = {
    .name = "transformed",
    .close = t_close,
    .range = t_range,
    .txn = t_txn,
    .watch = t_watch,
    .watch_progress = t_watch_progress,
    .watch_cancel = t_watch_cancel,
    .compact = t_compact,
    .revisions = t_revisions,
};

int ck_store_transformed(struct ck_store *inner, const struct ck_store_transformer *t,
                         struct ck_store **ret_store, struct ck_err *reterr)
{
    if (!inner || !t || !t->applies || !t->to_storage || !t->from_storage)
        return ck_err_set(reterr, CK_EINVAL, "store: incomplete transformer");
    struct transformed *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_no_memory(reterr);
    s->base.ops = &transform_ops;
    s->base.opts = inner->opts;
    pthread_mutex_init(&s->base.compactor_lock, NULL);
    pthread_cond_init(&s->base.compactor_cond, NULL);
    s->inner = inner;
    s->t = *t;
    *ret_store = &s->base;
    return 0;
}
