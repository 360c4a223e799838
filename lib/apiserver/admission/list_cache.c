/*
 * list_cache.c - the configuration objects admission reads on every write (the kinds
 * whose descriptors set admission_lists_all: webhook configurations,
 * ValidatingAdmissionPolicies and their bindings, PriorityClasses, LimitRanges,
 * StorageClasses, IngressClasses), remembered between writes instead of
 * listed from the store for each one, as kube-apiserver's plugins read them from
 * informers (k8s.io/apiserver/pkg/admission/plugin/webhook/configuration,
 * .../policy/generic/policy_source.go, and the LimitRanger's and Priority plugin's
 * listers).
 *
 * One entry per kind and namespace asked for (all namespaces: ""), holding the decoded
 * objects as an array that is replaced, never changed: a reader keeps a reference to the
 * array it was given, whatever happens to the entry meanwhile. The objects are shared
 * and read-only; references on them are taken and dropped with ck__json_ref and
 * ck__json_unref, whose counts are atomic throughout.
 *
 * The cache only forgets, as namespace_cache.c: every entry of a kind goes when this
 * server writes an object of it (the registry calls ck__admission_cache_forget once the
 * write is stored, before it answers) and when the kind's store watch reports any change
 * (the writes of other servers on a shared etcd). A list read from the store fills its
 * entry again, unless something was forgotten while it ran: every forget bumps the
 * generation, and a fill that started under an older one is dropped. If a watch ends
 * (an error event) the cache keeps nothing more: every list reads the store, as before
 * there was a cache. A list longer than CK__ADMISSION_CACHE_MAX objects is not kept.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "ckube/internal/util.h"

struct watched {
    struct ck__admission_cache *cache;
    char prefix[CK__KEY_MAX]; /* the kind's keys in every namespace */
    size_t prefix_len;
    struct ck_store_watch *watch;
};

struct ck__admission_cache {
    /*
     * The kinds kept: those whose descriptors say admission lists them all
     * (admission_lists_all), one entry for every version of a resource (they share keys).
     */
    struct watched *kinds;
    size_t n_kinds;
    pthread_mutex_t lock;
    json_t *lists;       /* collection prefix (kind and namespace) -> array of objects */
    uint64_t generation; /* bumped by every forget */
    bool blind;          /* a watch ended: nothing is kept */
};

/* The kept kind whose keys start with prefix, or NULL. */
static struct watched *kept(struct ck__admission_cache *c, const char *prefix)
{
    for (size_t i = 0; c && i < c->n_kinds; i++)
        if (strncmp(prefix, c->kinds[i].prefix, c->kinds[i].prefix_len) == 0)
            return &c->kinds[i];
    return NULL;
}

/*
 * Takes key's list out of the cache, or puts items in its place (NULL: none); c->lock
 * held. The cache's own reference is dropped with ck__json_unref, never inside jansson,
 * so that the last reference, wherever it is dropped, is an atomic step ThreadSanitizer
 * sees too.
 */
static void replace_locked(struct ck__admission_cache *c, const char *key, json_t *items)
{
    json_t *old = ck__json_ref(json_object_get(c->lists, key));
    if (items)
        json_object_set(c->lists, key, items);
    else
        json_object_del(c->lists, key);
    ck__json_unref(old);
}

/* Drops every list of w's kind; c->lock held. */
static void forget_locked(struct ck__admission_cache *c, const struct watched *w)
{
    c->generation++;
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(c->lists, tmp, key, value)
    {
        if (strncmp(key, w->prefix, w->prefix_len) == 0)
            replace_locked(c, key, NULL);
    }
}

static void apply(struct watched *w, const struct ck_store_event *ev)
{
    struct ck__admission_cache *c = w->cache;
    if (ev->type == CK_STORE_EVENT_PROGRESS)
        return;
    pthread_mutex_lock(&c->lock);
    if (ev->type == CK_STORE_EVENT_ERROR) {
        c->blind = true;
        c->generation++;
        const char *key;
        json_t *value;
        void *tmp;
        json_object_foreach_safe(c->lists, tmp, key, value)
        {
            replace_locked(c, key, NULL);
        }
    } else {
        forget_locked(c, w);
    }
    pthread_mutex_unlock(&c->lock);
}

static void on_event(const struct ck_store_event *ev, void *arg)
{
    apply(arg, ev);
}

void ck__admission_cache_event(struct ck__admission_cache *c, const struct ck_kind *kind,
                               const struct ck_store_event *ev)
{
    char prefix[CK__KEY_MAX];
    struct watched *w =
        ck__collection_prefix(kind, NULL, prefix, sizeof(prefix)) > 0 ? kept(c, prefix) : NULL;
    if (w)
        apply(w, ev);
}

int ck__admission_cache_start(struct ck_store *store, struct ck__admission_cache **ret,
                              struct ck_err *reterr)
{
    *ret = NULL;
    struct ck__admission_cache *c = ck__calloc(1, sizeof(*c));
    if (!c || !(c->lists = json_object())) {
        free(c);
        return ck_err_no_memory(reterr);
    }
    pthread_mutex_init(&c->lock, NULL);
    int r = 0;
    size_t n, n_flagged = 0;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    for (size_t i = 0; i < n; i++)
        n_flagged += kinds[i]->admission_lists_all;
    if (n_flagged && !(c->kinds = ck__calloc(n_flagged, sizeof(*c->kinds))))
        r = ck_err_no_memory(reterr);
    for (size_t i = 0; i < n && r == 0 && c->n_kinds < n_flagged; i++) {
        struct watched *w = &c->kinds[c->n_kinds];
        int len = kinds[i]->admission_lists_all
                      ? ck__collection_prefix(kinds[i], NULL, w->prefix, sizeof(w->prefix))
                      : -1;
        if (len <= 0 || kept(c, w->prefix))
            continue; /* not kept, or another version of a kept resource */
        w->cache = c;
        w->prefix_len = (size_t)len;
        if (store)
            r = ck_store_watch(store, w->prefix, w->prefix_len, true, 0, on_event, w, &w->watch,
                               reterr);
        if (r == 0)
            c->n_kinds++;
    }
    if (r < 0) {
        ck__admission_cache_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void ck__admission_cache_free(struct ck__admission_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_kinds; i++)
        ck_store_watch_cancel(c->kinds[i].watch); /* no callback runs after this */
    free(c->kinds);
    json_decref(c->lists);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

json_t *ck__admission_cache_lookup(struct ck__admission_cache *c, const char *prefix,
                                   bool *ret_keep, uint64_t *ret_generation)
{
    *ret_keep = false;
    *ret_generation = 0;
    if (!kept(c, prefix))
        return NULL;
    pthread_mutex_lock(&c->lock);
    json_t *items = ck__json_ref(json_object_get(c->lists, prefix));
    *ret_keep = !c->blind;
    *ret_generation = c->generation;
    pthread_mutex_unlock(&c->lock);
    return items;
}

void ck__admission_cache_fill(struct ck__admission_cache *c, const char *prefix, json_t *items,
                              uint64_t generation)
{
    if (!kept(c, prefix) || json_array_size(items) > CK__ADMISSION_CACHE_MAX)
        return;
    pthread_mutex_lock(&c->lock);
    if (!c->blind && c->generation == generation)
        replace_locked(c, prefix, items);
    pthread_mutex_unlock(&c->lock);
}

void ck__admission_cache_forget(struct ck__admission_cache *c, const struct ck_kind *kind)
{
    char prefix[CK__KEY_MAX];
    if (!c || ck__collection_prefix(kind, NULL, prefix, sizeof(prefix)) <= 0)
        return;
    struct watched *w = kept(c, prefix);
    if (!w)
        return;
    pthread_mutex_lock(&c->lock);
    forget_locked(c, w);
    pthread_mutex_unlock(&c->lock);
}
