/*
 * namespace_cache.c - what a create needs to know of its namespace (that it
 * exists, and whether it is being terminated), remembered between creates
 * instead of read from the store for every one, as kube-apiserver's
 * NamespaceLifecycle admission answers from an informer's cache.
 *
 * The cache only forgets: a namespace's entry goes when this server writes
 * the namespace (the registry calls ck__namespace_cache_forget once the write
 * is stored, before it answers) and when a watch of the namespaces reports
 * any change to it (the writes of other servers on a shared etcd). A read of
 * the store fills an entry again, unless something was forgotten while it
 * ran: every forget bumps a generation, and a fill that started under an
 * older one is dropped, so a read that raced a change never leaves its stale
 * answer behind. A namespace that does not exist is never remembered.
 *
 * Another server's change is seen once its watch event arrives (milliseconds),
 * as kube-apiserver's other instances see it through their informers. If the
 * watch ends (an error event), the cache forgets everything and stays empty:
 * every create reads the store again, as before there was a cache.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

struct ck__namespace_cache {
    struct ck_store_watch *watch;
    char prefix[CK__KEY_MAX]; /* of the namespaces' keys, ahead of the name */
    size_t prefix_len;
    pthread_mutex_t lock;
    json_t *known;       /* name -> true (being terminated) or false */
    uint64_t generation; /* bumped by every forget */
    bool blind;          /* the watch ended: nothing is kept */
};

void ck__namespace_cache_event(struct ck__namespace_cache *c, const struct ck_store_event *ev)
{
    if (ev->type == CK_STORE_EVENT_PROGRESS)
        return;
    pthread_mutex_lock(&c->lock);
    c->generation++;
    if (ev->type == CK_STORE_EVENT_ERROR) {
        c->blind = true;
        json_object_clear(c->known);
    } else if (ev->kv && ev->kv->key_len > c->prefix_len) {
        json_object_deln(c->known, ev->kv->key + c->prefix_len, ev->kv->key_len - c->prefix_len);
    }
    pthread_mutex_unlock(&c->lock);
}

static void on_event(const struct ck_store_event *ev, void *arg)
{
    ck__namespace_cache_event(arg, ev);
}

int ck__namespace_cache_new(const struct ck_kind *namespace_kind, struct ck__namespace_cache **ret,
                            struct ck_err *reterr)
{
    *ret = NULL;
    struct ck__namespace_cache *c = ck__calloc(1, sizeof(*c));
    if (!c || !(c->known = json_object())) {
        free(c);
        return ck_err_no_memory(reterr);
    }
    int plen = ck__collection_prefix(namespace_kind, NULL, c->prefix, sizeof(c->prefix));
    if (plen < 0) {
        json_decref(c->known);
        free(c);
        return ck_err_set(reterr, CK_EINVAL, "no key prefix for namespaces");
    }
    c->prefix_len = (size_t)plen;
    pthread_mutex_init(&c->lock, NULL);
    *ret = c;
    return 0;
}

int ck__namespace_cache_start(struct ck_store *store, const struct ck_kind *namespace_kind,
                              struct ck__namespace_cache **ret, struct ck_err *reterr)
{
    struct ck__namespace_cache *c = NULL;
    int r = ck__namespace_cache_new(namespace_kind, &c, reterr);
    if (r < 0)
        return r;
    r = ck_store_watch(store, c->prefix, c->prefix_len, true, 0, on_event, c, &c->watch, reterr);
    if (r < 0) {
        ck__namespace_cache_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void ck__namespace_cache_free(struct ck__namespace_cache *c)
{
    if (!c)
        return;
    ck_store_watch_cancel(c->watch); /* no callback runs after this */
    json_decref(c->known);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

bool ck__namespace_cache_lookup(struct ck__namespace_cache *c, const char *name,
                                bool *ret_terminating, uint64_t *ret_generation)
{
    *ret_generation = 0;
    if (!c)
        return false;
    pthread_mutex_lock(&c->lock);
    const json_t *v = json_object_get(c->known, name);
    if (v)
        *ret_terminating = json_is_true(v);
    *ret_generation = c->generation;
    pthread_mutex_unlock(&c->lock);
    return v != NULL;
}

void ck__namespace_cache_fill(struct ck__namespace_cache *c, const char *name, bool terminating,
                              uint64_t generation)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    if (!c->blind && c->generation == generation &&
        json_object_size(c->known) < CK__NAMESPACE_CACHE_MAX)
        json_object_set_new(c->known, name, json_boolean(terminating));
    pthread_mutex_unlock(&c->lock);
}

void ck__namespace_cache_forget(struct ck__namespace_cache *c, const char *name)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->generation++;
    json_object_del(c->known, name);
    pthread_mutex_unlock(&c->lock);
}
