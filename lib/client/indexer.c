/*
 * indexer.c - the informer cache: a thread-safe, indexed store of API objects (client-go
 * tools/cache/thread_safe_store.go, index.go, store.go).
 *
 * Objects are stored under their key ("namespace/name" or "name") in `items`. Each index
 * has a definition (name, function, argument) and, at the same position in `indices`, a
 * map from index value to the set of keys whose object emits that value. An update
 * recomputes the old object's values and the new one's and moves the key between sets;
 * objects are immutable once stored, so the old values are exactly what was indexed.
 *
 * Every change is all-or-nothing: index values are computed before anything changes, new
 * memberships are added first (remembering which ones were created, so a failure removes
 * only those), and stale ones are removed last (removal never allocates). Replace builds
 * the whole new content aside and swaps it in.
 *
 * Ownership: the store holds one reference per stored object; readers get new
 * references (ck_cached_unref() drops them), so an object outlives a concurrent update.
 *
 * A compact indexer (ck_indexer_set_compact) keeps each object as its compact JSON text
 * instead of a jansson tree (a tree takes about eight times the text's bytes: a pod of
 * 2.7 KB is 21 KB of tree): a reader gets a tree decoded for it, its own reference, which
 * is all the contract above promises; an update or delete decodes the stored object
 * again to find the index values it had.
 *
 * Threading: a pthread rwlock: lookups and lists share it, changes take it exclusively.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct ck_index_values {
    char **v;
    size_t n, cap;
};

struct index_def {
    char *name;
    ck_index_func fn;
    void *arg;
};

struct ck_indexer {
    pthread_rwlock_t lock;
    struct ck__strmap items;    /* key -> json_t * (one reference) */
    struct index_def *defs;     /* ndefs definitions */
    struct ck__strmap *indices; /* per definition: value -> struct ck__strmap * (key set) */
    size_t ndefs;
    bool compact; /* items hold char * (compact JSON text), not json_t * */
};

/* ---- keys and tombstones ------------------------------------------------ */

int ck_meta_namespace_key(const json_t *obj, char **ret_key, struct ck_err *reterr)
{
    const json_t *meta = json_is_object(obj) ? json_object_get(obj, "metadata") : NULL;
    if (!json_is_object(meta))
        return ck_err_set(reterr, CK_EINVAL, "object has no metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!name || !*name)
        return ck_err_set(reterr, CK_EINVAL, "object has no metadata.name");
    const json_t *nsv = json_object_get(meta, "namespace");
    if (nsv && !json_is_string(nsv) && !json_is_null(nsv))
        return ck_err_set(reterr, CK_EINVAL, "metadata.namespace of \"%s\" is not a string", name);
    const char *ns = json_string_value(nsv);
    size_t nslen = ns ? strlen(ns) : 0, namelen = strlen(name);
    char *key = ck__malloc(nslen + namelen + 2);
    if (!key)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (nslen) {
        memcpy(key, ns, nslen);
        key[nslen] = '/';
        memcpy(key + nslen + 1, name, namelen + 1);
    } else {
        memcpy(key, name, namelen + 1);
    }
    *ret_key = key;
    return 0;
}

int ck_split_meta_namespace_key(const char *key, char **ret_namespace, char **ret_name,
                                struct ck_err *reterr)
{
    if (!key)
        return ck_err_set(reterr, CK_EINVAL, "no key");
    const char *slash = strchr(key, '/');
    if (slash && strchr(slash + 1, '/'))
        return ck_err_set(reterr, CK_EINVAL, "unexpected key format: \"%s\"", key);
    const char *name = slash ? slash + 1 : key;
    size_t nslen = slash ? (size_t)(slash - key) : 0;
    if (!*name || (slash && nslen == 0))
        return ck_err_set(reterr, CK_EINVAL, "unexpected key format: \"%s\"", key);
    char *ns = ck__malloc(nslen + 1);
    char *nm = ns ? ck__strdup(name) : NULL;
    if (!nm) {
        free(ns);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    memcpy(ns, key, nslen);
    ns[nslen] = '\0';
    *ret_namespace = ns;
    *ret_name = nm;
    return 0;
}

const json_t *ck_cached_unref(const json_t *obj)
{
    ck__json_unref(obj);
    return NULL;
}

struct ck_deleted_final_state_unknown *ck_tombstone_new(const char *key, const json_t *obj)
{
    struct ck_deleted_final_state_unknown *t = ck__malloc(sizeof(*t));
    if (!t)
        return NULL;
    t->key = ck__strdup(key);
    if (!t->key) {
        free(t);
        return NULL;
    }
    t->obj = ck__json_ref(obj);
    return t;
}

struct ck_deleted_final_state_unknown *ck_tombstone_free(struct ck_deleted_final_state_unknown *t)
{
    if (!t)
        return NULL;
    ck_cached_unref(t->obj);
    free(t->key);
    free(t);
    return NULL;
}

int ck_deletion_handling_key(const json_t *obj,
                             const struct ck_deleted_final_state_unknown *tombstone, char **ret_key,
                             struct ck_err *reterr)
{
    if (!tombstone)
        return ck_meta_namespace_key(obj, ret_key, reterr);
    char *key = ck__strdup(tombstone->key);
    if (!key)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    *ret_key = key;
    return 0;
}

/* ---- index values and built-in index functions -------------------------- */

int ck_index_values_add(struct ck_index_values *out, const char *value)
{
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->v[i], value) == 0)
            return 0;
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 4;
        char **v = ck__realloc(out->v, cap * sizeof(*v));
        if (!v)
            return CK_ENOMEM;
        out->v = v;
        out->cap = cap;
    }
    char *copy = ck__strdup(value);
    if (!copy)
        return CK_ENOMEM;
    out->v[out->n++] = copy;
    return 0;
}

static void values_release(struct ck_index_values *vals)
{
    for (size_t i = 0; i < vals->n; i++)
        free(vals->v[i]);
    free(vals->v);
    *vals = (struct ck_index_values){0};
}

static bool values_has(const struct ck_index_values *vals, const char *value)
{
    for (size_t i = 0; i < vals->n; i++)
        if (strcmp(vals->v[i], value) == 0)
            return true;
    return false;
}

int ck_index_by_namespace(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    const char *ns = ck__meta_str(obj, "namespace");
    return ns && *ns ? ck_index_values_add(out, ns) : 0;
}

int ck_index_by_controller_uid(const json_t *obj, struct ck_index_values *out, void *arg)
{
    (void)arg;
    const json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
    size_t i;
    const json_t *ref;
    json_array_foreach(refs, i, ref)
    {
        if (!json_is_true(json_object_get(ref, "controller")))
            continue;
        const char *uid = json_string_value(json_object_get(ref, "uid"));
        return uid && *uid ? ck_index_values_add(out, uid) : 0;
    }
    return 0;
}

/* ---- index maps ---------------------------------------------------------- */

static void index_map_release(struct ck__strmap *index)
{
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(index, NULL, &bucket); e;
         e = ck__strmap_next(index, e, &bucket)) {
        ck__strmap_release(e->value);
        free(e->value);
    }
    ck__strmap_release(index);
}

/* Adds key to the set of value. Sets *ret_created when the membership is new. */
static int index_insert(struct ck__strmap *index, const char *value, const char *key,
                        bool *ret_created)
{
    bool created;
    struct ck__strmap_entry *e = ck__strmap_put(index, value, NULL, &created);
    if (!e)
        return CK_ENOMEM;
    if (created) {
        e->value = ck__calloc(1, sizeof(struct ck__strmap));
        if (!e->value) {
            ck__strmap_remove(index, value);
            return CK_ENOMEM;
        }
    }
    struct ck__strmap *set = e->value;
    if (!ck__strmap_put(set, key, NULL, ret_created)) {
        if (set->len == 0) {
            ck__strmap_release(set);
            free(set);
            ck__strmap_remove(index, value);
        }
        return CK_ENOMEM;
    }
    return 0;
}

static void index_remove(struct ck__strmap *index, const char *value, const char *key)
{
    struct ck__strmap_entry *e = ck__strmap_find(index, value);
    if (!e)
        return;
    struct ck__strmap *set = e->value;
    ck__strmap_remove(set, key);
    if (set->len == 0) {
        ck__strmap_release(set);
        free(set);
        ck__strmap_remove(index, value);
    }
}

static int compute(const struct index_def *def, const json_t *obj, struct ck_index_values *out)
{
    *out = (struct ck_index_values){0};
    int r = def->fn(obj, out, def->arg);
    if (r < 0)
        values_release(out);
    return r;
}

/*
 * Indexes key (whose object emits `add`) in every index, then removes the memberships of
 * `del` (the old object's values) that `add` does not have. add and del are arrays of
 * ndefs value lists; del is NULL for a new key. The memberships key had before are
 * exactly `del`, so on failure removing every added one not in `del` restores them.
 */
static int reindex(struct ck__strmap *indices, size_t ndefs, const char *key,
                   struct ck_index_values *add, struct ck_index_values *del)
{
    for (size_t i = 0; i < ndefs; i++) {
        for (size_t j = 0; j < add[i].n; j++) {
            bool created;
            if (index_insert(&indices[i], add[i].v[j], key, &created) == 0)
                continue;
            /* Roll back the memberships this call created. */
            for (size_t ri = 0; ri <= i; ri++) {
                size_t rn = ri == i ? j : add[ri].n;
                for (size_t rj = 0; rj < rn; rj++)
                    if (!del || !values_has(&del[ri], add[ri].v[rj]))
                        index_remove(&indices[ri], add[ri].v[rj], key);
            }
            return CK_ENOMEM;
        }
    }
    if (del) {
        for (size_t i = 0; i < ndefs; i++)
            for (size_t j = 0; j < del[i].n; j++)
                if (!values_has(&add[i], del[i].v[j]))
                    index_remove(&indices[i], del[i].v[j], key);
    }
    return 0;
}

/* Computes every index's values for obj into vals[ndefs]. */
static int compute_all(const struct index_def *defs, size_t ndefs, const json_t *obj,
                       struct ck_index_values *vals)
{
    for (size_t i = 0; i < ndefs; i++) {
        int r = compute(&defs[i], obj, &vals[i]);
        if (r < 0) {
            for (size_t k = 0; k < i; k++)
                values_release(&vals[k]);
            return r;
        }
    }
    return 0;
}

static void release_all(struct ck_index_values *vals, size_t ndefs)
{
    if (!vals)
        return;
    for (size_t i = 0; i < ndefs; i++)
        values_release(&vals[i]);
}

/* ---- the indexer ------------------------------------------------------------ */

int ck_indexer_new(struct ck_indexer **ret_ix, struct ck_err *reterr)
{
    struct ck_indexer *ix = ck__calloc(1, sizeof(*ix));
    if (!ix)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory creating an indexer");
    pthread_rwlock_init(&ix->lock, NULL);
    *ret_ix = ix;
    return 0;
}

void ck_indexer_set_compact(struct ck_indexer *ix)
{
    pthread_rwlock_wrlock(&ix->lock);
    if (ix->items.len == 0)
        ix->compact = true;
    pthread_rwlock_unlock(&ix->lock);
}

/* What items keeps for obj: a new reference, or (compact) its text; NULL: no memory. */
static void *item_new(bool compact, const json_t *obj)
{
    return compact ? (void *)ck__json_dumps(obj, JSON_COMPACT, NULL) : (void *)ck__json_ref(obj);
}

static void item_free(bool compact, void *item)
{
    if (compact)
        free(item);
    else
        ck__json_unref(item);
}

/*
 * The object an item holds, a new reference; NULL when memory ran out decoding it (a
 * failed allocation anywhere in jansson's parse counts: it can drop a byte and go on).
 */
static const json_t *item_obj(bool compact, const void *item)
{
    if (!compact)
        return ck__json_ref(item);
    unsigned long failures = ck__alloc_failures();
    json_t *obj = json_loads(item, 0, NULL);
    if (obj && ck__alloc_failures() != failures) {
        json_decref(obj);
        obj = NULL;
    }
    return obj;
}

static void items_release(struct ck__strmap *items, bool compact)
{
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(items, NULL, &bucket); e;
         e = ck__strmap_next(items, e, &bucket))
        item_free(compact, e->value);
    ck__strmap_release(items);
}

struct ck_indexer *ck_indexer_free(struct ck_indexer *ix)
{
    if (!ix)
        return NULL;
    items_release(&ix->items, ix->compact);
    for (size_t i = 0; i < ix->ndefs; i++) {
        index_map_release(&ix->indices[i]);
        free(ix->defs[i].name);
    }
    free(ix->indices);
    free(ix->defs);
    pthread_rwlock_destroy(&ix->lock);
    free(ix);
    return NULL;
}

static int find_def(const struct ck_indexer *ix, const char *name)
{
    for (size_t i = 0; i < ix->ndefs; i++)
        if (strcmp(ix->defs[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Builds an index over items. On failure returns the error with *out released. */
static int build_index(const struct index_def *def, const struct ck__strmap *items, bool compact,
                       struct ck__strmap *out)
{
    *out = (struct ck__strmap){0};
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(items, NULL, &bucket); e;
         e = ck__strmap_next(items, e, &bucket)) {
        struct ck_index_values vals;
        const json_t *obj = item_obj(compact, e->value);
        int r = obj ? compute(def, obj, &vals) : CK_ENOMEM;
        ck__json_unref(obj);
        for (size_t j = 0; r == 0 && j < vals.n; j++) {
            bool created;
            r = index_insert(out, vals.v[j], e->key, &created);
        }
        values_release(&vals);
        if (r < 0) {
            index_map_release(out);
            return r;
        }
    }
    return 0;
}

int ck_indexer_add_index(struct ck_indexer *ix, const char *name, ck_index_func fn, void *arg,
                         struct ck_err *reterr)
{
    if (!name || !fn)
        return ck_err_set(reterr, CK_EINVAL, "an index needs a name and a function");
    pthread_rwlock_wrlock(&ix->lock);
    int r;
    int have = find_def(ix, name);
    if (have >= 0) { /* the same index again (a controller started anew) is already there */
        r = ix->defs[have].fn == fn && ix->defs[have].arg == arg
                ? 0
                : ck_err_set(reterr, CK_EEXIST, "indexer conflict: %s", name);
        goto out_unlock;
    }
    struct index_def def = {ck__strdup(name), fn, arg};
    struct index_def *defs =
        def.name ? ck__realloc(ix->defs, (ix->ndefs + 1) * sizeof(*defs)) : NULL;
    if (defs)
        ix->defs = defs;
    struct ck__strmap *indices =
        defs ? ck__realloc(ix->indices, (ix->ndefs + 1) * sizeof(*indices)) : NULL;
    if (!indices) {
        free(def.name);
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory adding index %s", name);
        goto out_unlock;
    }
    ix->indices = indices;
    r = build_index(&def, &ix->items, ix->compact, &indices[ix->ndefs]);
    if (r < 0) {
        free(def.name);
        r = ck_err_set(reterr, r, "building index %s failed", name);
        goto out_unlock;
    }
    ix->defs[ix->ndefs++] = def;
out_unlock:
    pthread_rwlock_unlock(&ix->lock);
    return r;
}

int ck_indexer_add(struct ck_indexer *ix, const json_t *obj, struct ck_err *reterr)
{
    char *key = NULL;
    int r = ck_meta_namespace_key(obj, &key, reterr);
    if (r < 0)
        return r;
    pthread_rwlock_wrlock(&ix->lock);
    struct ck_index_values *add = ck__calloc(ix->ndefs + 1, sizeof(*add));
    struct ck_index_values *del = ck__calloc(ix->ndefs + 1, sizeof(*del));
    void *item = add && del ? item_new(ix->compact, obj) : NULL;
    const json_t *old = NULL;
    if (!item) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_free;
    }
    r = compute_all(ix->defs, ix->ndefs, obj, add);
    if (r < 0) {
        r = ck_err_set(reterr, r, "indexing %s failed", key);
        goto out_free;
    }
    struct ck__strmap_entry *e = ck__strmap_find(&ix->items, key);
    bool had = e != NULL;
    if (had && ix->ndefs > 0 &&
        (!(old = item_obj(ix->compact, e->value)) ||
         compute_all(ix->defs, ix->ndefs, old, del) < 0)) {
        had = false; /* del holds nothing to release */
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_release_add;
    }
    bool created = false;
    if (!e && !(e = ck__strmap_put(&ix->items, key, NULL, &created))) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_release_del;
    }
    r = reindex(ix->indices, ix->ndefs, e->key, add, had ? del : NULL);
    if (r < 0) {
        if (created)
            ck__strmap_remove(&ix->items, key);
        r = ck_err_set(reterr, r, "out of memory indexing %s", key);
        goto out_release_del;
    }
    item_free(ix->compact, e->value);
    e->value = item;
    item = NULL;
out_release_del:
    release_all(had ? del : NULL, ix->ndefs);
out_release_add:
    release_all(add, ix->ndefs);
out_free:
    item_free(ix->compact, item);
    ck__json_unref(old);
    free(add);
    free(del);
    pthread_rwlock_unlock(&ix->lock);
    free(key);
    return r;
}

int ck_indexer_delete_key(struct ck_indexer *ix, const char *key, struct ck_err *reterr)
{
    pthread_rwlock_wrlock(&ix->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&ix->items, key);
    if (!e) {
        pthread_rwlock_unlock(&ix->lock);
        return ck_err_set(reterr, CK_ENOENT, "%s not found", key);
    }
    /* Remove every membership of key, without recomputing (that could fail): scan the
     * values the stored object emits when possible, else every set. */
    const json_t *stored = ix->ndefs > 0 ? item_obj(ix->compact, e->value) : NULL;
    for (size_t i = 0; i < ix->ndefs; i++) {
        struct ck_index_values vals;
        if (stored && compute(&ix->defs[i], stored, &vals) == 0) {
            for (size_t j = 0; j < vals.n; j++)
                index_remove(&ix->indices[i], vals.v[j], e->key);
            values_release(&vals);
            continue;
        }
        size_t bucket;
        struct ck__strmap_entry *v = ck__strmap_next(&ix->indices[i], NULL, &bucket);
        while (v) {
            struct ck__strmap_entry *next = ck__strmap_next(&ix->indices[i], v, &bucket);
            ck__strmap_remove(v->value, e->key);
            if (((struct ck__strmap *)v->value)->len == 0) {
                ck__strmap_release(v->value);
                free(v->value);
                ck__strmap_remove(&ix->indices[i], v->key);
            }
            v = next;
        }
    }
    void *item = e->value;
    bool compact = ix->compact;
    ck__strmap_remove(&ix->items, key);
    pthread_rwlock_unlock(&ix->lock);
    ck__json_unref(stored);
    item_free(compact, item);
    return 0;
}

int ck_indexer_delete(struct ck_indexer *ix, const json_t *obj, struct ck_err *reterr)
{
    char *key = NULL;
    int r = ck_meta_namespace_key(obj, &key, reterr);
    if (r < 0)
        return r;
    r = ck_indexer_delete_key(ix, key, reterr);
    free(key);
    return r;
}

int ck_indexer_replace(struct ck_indexer *ix, const json_t *const *objs, size_t n,
                       struct ck_err *reterr)
{
    struct ck__strmap items = {0};
    int r = 0;
    pthread_rwlock_rdlock(&ix->lock);
    bool compact = ix->compact; /* set once, before the first object */
    pthread_rwlock_unlock(&ix->lock);
    for (size_t i = 0; i < n; i++) {
        char *key = NULL;
        r = ck_meta_namespace_key(objs[i], &key, reterr);
        if (r < 0)
            goto out_release_items;
        bool created;
        struct ck__strmap_entry *e = ck__strmap_put(&items, key, NULL, &created);
        free(key);
        if (!e) {
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out_release_items;
        }
        item_free(compact, e->value); /* a later duplicate wins */
        if (!(e->value = item_new(compact, objs[i]))) {
            ck__strmap_remove(&items, e->key);
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
            goto out_release_items;
        }
    }

    pthread_rwlock_wrlock(&ix->lock);
    struct ck__strmap *indices = ck__calloc(ix->ndefs + 1, sizeof(*indices));
    if (!indices) {
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
        goto out_unlock;
    }
    for (size_t i = 0; i < ix->ndefs; i++) {
        r = build_index(&ix->defs[i], &items, compact, &indices[i]);
        if (r < 0) {
            for (size_t k = 0; k < i; k++)
                index_map_release(&indices[k]);
            free(indices);
            r = ck_err_set(reterr, r, "building index %s failed", ix->defs[i].name);
            goto out_unlock;
        }
    }
    struct ck__strmap old_items = ix->items;
    struct ck__strmap *old_indices = ix->indices;
    ix->items = items;
    ix->indices = indices;
    items = old_items;
    for (size_t i = 0; i < ix->ndefs; i++)
        index_map_release(&old_indices[i]);
    free(old_indices);
out_unlock:
    pthread_rwlock_unlock(&ix->lock);
out_release_items:
    items_release(&items, compact); /* the old content on success, the new one on failure */
    return r;
}

int ck_indexer_get_by_key(struct ck_indexer *ix, const char *key, const json_t **ret_obj)
{
    pthread_rwlock_rdlock(&ix->lock);
    struct ck__strmap_entry *e = ck__strmap_find(&ix->items, key);
    const json_t *obj = e ? item_obj(ix->compact, e->value) : NULL;
    pthread_rwlock_unlock(&ix->lock);
    if (!e)
        return CK_ENOENT;
    if (!obj)
        return CK_ENOMEM;
    *ret_obj = obj;
    return 0;
}

void ck_obj_list_release(struct ck_obj_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        ck_cached_unref(list->items[i]);
    free(list->items);
    list->items = NULL;
    list->n = 0;
}

void ck_key_list_release(struct ck_key_list *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->keys[i]);
    free(list->keys);
    list->keys = NULL;
    list->n = 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copies the keys of map into a sorted list. */
static int keys_of(const struct ck__strmap *map, struct ck_key_list *ret_list)
{
    struct ck_key_list list = {ck__calloc(map->len + 1, sizeof(char *)), 0};
    if (!list.keys)
        return CK_ENOMEM;
    size_t bucket;
    for (struct ck__strmap_entry *e = ck__strmap_next(map, NULL, &bucket); e;
         e = ck__strmap_next(map, e, &bucket)) {
        if (!(list.keys[list.n] = ck__strdup(e->key))) {
            ck_key_list_release(&list);
            return CK_ENOMEM;
        }
        list.n++;
    }
    qsort(list.keys, list.n, sizeof(char *), cmp_str);
    *ret_list = list;
    return 0;
}

int ck_indexer_list(struct ck_indexer *ix, struct ck_obj_list *ret_list)
{
    pthread_rwlock_rdlock(&ix->lock);
    struct ck_obj_list list = {ck__calloc(ix->items.len + 1, sizeof(json_t *)), 0};
    bool oom = !list.items;
    if (list.items) {
        size_t bucket;
        for (struct ck__strmap_entry *e = ck__strmap_next(&ix->items, NULL, &bucket); e && !oom;
             e = ck__strmap_next(&ix->items, e, &bucket))
            oom = !(list.items[list.n++] = item_obj(ix->compact, e->value));
    }
    pthread_rwlock_unlock(&ix->lock);
    if (oom) {
        list.n -= list.n > 0; /* the last slot is NULL */
        ck_obj_list_release(&list);
        return CK_ENOMEM;
    }
    *ret_list = list;
    return 0;
}

int ck_indexer_list_keys(struct ck_indexer *ix, struct ck_key_list *ret_list)
{
    pthread_rwlock_rdlock(&ix->lock);
    int r = keys_of(&ix->items, ret_list);
    pthread_rwlock_unlock(&ix->lock);
    return r;
}

static const struct ck__strmap empty_set;

/* The key set of (index, value) with the read lock held; NULL when there is no index. */
static const struct ck__strmap *lookup(struct ck_indexer *ix, const char *index, const char *value,
                                       struct ck_err *reterr)
{
    int i = find_def(ix, index);
    if (i < 0) {
        ck_err_set(reterr, CK_ENOENT, "Index with name %s does not exist", index);
        return NULL;
    }
    struct ck__strmap_entry *e = ck__strmap_find(&ix->indices[i], value);
    return e ? e->value : &empty_set;
}

int ck_indexer_index_keys(struct ck_indexer *ix, const char *index, const char *value,
                          struct ck_key_list *ret_list, struct ck_err *reterr)
{
    pthread_rwlock_rdlock(&ix->lock);
    const struct ck__strmap *set = lookup(ix, index, value, reterr);
    int r = set ? keys_of(set, ret_list) : CK_ENOENT;
    pthread_rwlock_unlock(&ix->lock);
    if (r == CK_ENOMEM)
        ck_err_set(reterr, r, "out of memory");
    return r;
}

int ck_indexer_by_index(struct ck_indexer *ix, const char *index, const char *value,
                        struct ck_obj_list *ret_list, struct ck_err *reterr)
{
    pthread_rwlock_rdlock(&ix->lock);
    struct ck_key_list keys;
    const struct ck__strmap *set = lookup(ix, index, value, reterr);
    int r = set ? keys_of(set, &keys) : CK_ENOENT;
    if (r == 0) {
        struct ck_obj_list list = {ck__calloc(keys.n + 1, sizeof(json_t *)), 0};
        bool oom = !list.items;
        for (size_t i = 0; !oom && i < keys.n; i++)
            oom = !(list.items[list.n++] =
                        item_obj(ix->compact, ck__strmap_find(&ix->items, keys.keys[i])->value));
        ck_key_list_release(&keys);
        if (!oom) {
            *ret_list = list;
        } else {
            list.n -= list.n > 0; /* the last slot is NULL */
            ck_obj_list_release(&list);
            r = CK_ENOMEM;
        }
    }
    pthread_rwlock_unlock(&ix->lock);
    if (r == CK_ENOMEM)
        ck_err_set(reterr, r, "out of memory");
    return r;
}

int ck_indexer_index_values(struct ck_indexer *ix, const char *index, struct ck_key_list *ret_list,
                            struct ck_err *reterr)
{
    pthread_rwlock_rdlock(&ix->lock);
    int i = find_def(ix, index);
    int r = i < 0 ? ck_err_set(reterr, CK_ENOENT, "Index with name %s does not exist", index)
                  : keys_of(&ix->indices[i], ret_list);
    pthread_rwlock_unlock(&ix->lock);
    return r;
}

size_t ck_indexer_len(struct ck_indexer *ix)
{
    pthread_rwlock_rdlock(&ix->lock);
    size_t n = ix->items.len;
    pthread_rwlock_unlock(&ix->lock);
    return n;
}
