/*
 * ttl.c - objects that expire: the server side of kube-apiserver's --event-ttl.
 *
 * Kubernetes stores every event with an etcd lease of the TTL (one hour by default), and
 * each write of the event attaches a fresh lease, so an event disappears one TTL after
 * its last write, whatever its finalizers. Our store has no leases, so a sweeper thread
 * does it: every `interval` (a tenth of the TTL, at least 1 s and at most 1 min) it reads
 * the collections of the kinds whose descriptor has a last_activity hook (events), page
 * by page, and deletes each object whose last activity is a TTL or more in the past.
 * Which kinds expire is the descriptor's business; nothing here names one.
 *
 * The delete is conditional on the mod revision the sweep read, so an object written
 * meanwhile (a count bump, the analogue of a renewed lease) stays until a later sweep
 * finds it old again. The delete goes to the store directly, as a lease expiry does in
 * etcd: the watchers see DELETED through the store's watch, no finalizer or grace period
 * applies, and no request is counted in the metrics.
 *
 * Differences from Kubernetes (docs/differences.md): the age is read from the object's
 * own timestamps (for events lastTimestamp, series.lastObservedTime, eventTime and
 * creationTimestamp, second resolution), not from the time of the last write; and an
 * object may outlive its TTL by up to one interval.
 *
 * Threading: one thread per server, started by ck__ttl_start(); ck__ttl_stop() wakes and
 * joins it. It shares only the store (thread-safe) and the kind registry (lock-free).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckube/internal/util.h"
#include "internal.h"

#define SWEEP_PAGE   500
#define MIN_INTERVAL 1    /* seconds */
#define MAX_INTERVAL 60   /* seconds */
#define DEFAULT_TTL  3600 /* seconds: kube-apiserver's --event-ttl */

struct ck__ttl {
    struct ck_store *store; /* borrowed: the server closes it after stopping us */
    long long ttl;          /* seconds */
    long long interval;     /* seconds between sweeps */
    pthread_t thread;
    pthread_mutex_t lock; /* guards stop */
    pthread_cond_t wake;
    bool stop;
};

/* Deletes the expired objects of one kind; adds them to *removed. */
static int sweep_kind(struct ck_store *store, const struct ck_kind *kind, long long ttl,
                      long long now, size_t *removed, struct ck_err *reterr)
{
    char prefix[300];
    int plen = ck__collection_prefix(kind, NULL, prefix, sizeof(prefix));
    if (plen < 0)
        return ck_err_set(reterr, CK_EINVAL, "resource name too long: %s", kind->resource);
    char *from = NULL;
    size_t from_len = 0;
    int r = 0;
    for (bool more = true; more && r == 0;) {
        struct ck_store_range req = {.key = prefix,
                                     .key_len = (size_t)plen,
                                     .prefix = true,
                                     .from_key = from,
                                     .from_key_len = from_len,
                                     .limit = SWEEP_PAGE};
        struct ck_store_range_result res = {0};
        r = ck_store_range(store, &req, &res, reterr);
        if (r < 0)
            break;
        more = res.more;
        for (size_t i = 0; i < res.n_kvs; i++) {
            const struct ck_kv *kv = res.kvs[i];
            json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
            long long since = obj ? kind->last_activity(obj) : 0;
            json_decref(obj);
            if (since <= 0 || since + ttl > now)
                continue;
            struct ck_err err = {0};
            int d =
                ck_store_delete(store, kv->key, kv->key_len, kv->mod_revision, NULL, NULL, &err);
            if (d == 0)
                (*removed)++;
            else if (d != CK_ECONFLICT && d != CK_ENOENT) /* written or gone meanwhile: fine */
                CK_LOGV(2, "cannot expire %.*s: %s", (int)kv->key_len, kv->key,
                        ck_err_message(&err));
            ck_err_release(&err);
        }
        if (more && res.n_kvs > 0) { /* the next page starts just after the last key */
            const struct ck_kv *last = res.kvs[res.n_kvs - 1];
            char *next = realloc(from, last->key_len + 1);
            if (!next) {
                r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            } else {
                from = next;
                memcpy(from, last->key, last->key_len);
                from[last->key_len] = '\0';
                from_len = last->key_len + 1;
            }
        }
        ck_store_range_result_release(&res);
    }
    free(from);
    return r;
}

int ck__ttl_sweep(struct ck_store *store, long long ttl, long long now, size_t *ret_removed,
                  struct ck_err *reterr)
{
    size_t removed = 0, n = 0;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        if (kinds[i]->last_activity)
            r = sweep_kind(store, kinds[i], ttl, now, &removed, reterr);
    if (ret_removed)
        *ret_removed = removed;
    return r;
}

static void *sweeper_main(void *arg)
{
    struct ck__ttl *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += t->interval;
        while (!t->stop && pthread_cond_timedwait(&t->wake, &t->lock, &until) != ETIMEDOUT)
            ;
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->lock);
        size_t removed = 0;
        struct ck_err err = {0};
        if (ck__ttl_sweep(t->store, t->ttl, (long long)time(NULL), &removed, &err) < 0)
            CK_LOGV(2, "expiring objects: %s", ck_err_message(&err));
        else if (removed > 0)
            CK_LOGV(4, "expired %zu objects older than %llds", removed, t->ttl);
        ck_err_release(&err);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int ck__ttl_start(struct ck_store *store, int64_t ttl, struct ck__ttl **ret, struct ck_err *reterr)
{
    *ret = NULL;
    if (ttl < 0)
        return 0; /* objects never expire */
    struct ck__ttl *t = calloc(1, sizeof(*t));
    if (!t)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    t->store = store;
    t->ttl = ttl == 0 ? DEFAULT_TTL : (long long)((ttl + 999999999) / 1000000000);
    t->interval = t->ttl / 10;
    if (t->interval < MIN_INTERVAL)
        t->interval = MIN_INTERVAL;
    if (t->interval > MAX_INTERVAL)
        t->interval = MAX_INTERVAL;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&t->lock, NULL);
    if (pthread_create(&t->thread, NULL, sweeper_main, t) != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return ck_err_set(reterr, CK_EIO, "cannot start the expiry thread");
    }
    *ret = t;
    return 0;
}

struct ck__ttl *ck__ttl_stop(struct ck__ttl *t)
{
    if (!t)
        return NULL;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return NULL;
}
