/*
 * kinds.c - the registry of the kinds ckube serves, and what every kind's
 * descriptor answers the same way (names, subresources, field labels).
 *
 * A kind is described once, by a struct ck_kind: built-in kinds in
 * lib/api/kinds/<kind>.c, registered here on first use in the order of the
 * build's list (lib/api/CMakeLists.txt); a CustomResourceDefinition's when it
 * is established. Nothing here knows any kind by name.
 *
 * Publication follows lib/featuregate: the registry is a chain of immutable
 * snapshots, each an array of entries (the kind and its field label names).
 * Readers acquire-load the current snapshot and never lock. A writer takes
 * `lock`, builds a new snapshot from the current one, and release-stores it.
 * Replaced snapshots are never freed: they stay on the `older` chain until
 * the process exits, so a reader still walking one, or a caller still holding
 * the array ck_kinds() returned, never sees freed memory. The cost is one
 * array per registration, which happen a few times per process (start-up,
 * each CRD); a registry whose kinds churn would want epochs instead.
 *
 * Threading: ck_kinds(), ck_kind_lookup(), ck_kind_with_role() and
 * ck_kind_field_label_names() are lock-free; register and unregister
 * serialize on `lock`. The built-in kinds are registered under
 * pthread_once, before any reader sees a snapshot.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/api.h"
#include "ckube/internal/util.h"
#include "internal.h"

/* One registered kind: the descriptor (borrowed) and its field label names (owned). */
struct entry {
    const struct ck_kind *kind;
    const char **label_names; /* NULL-terminated; never freed (readers may hold it) */
};

struct snapshot {
    struct snapshot *older; /* the snapshot this one replaced: kept, never freed */
    size_t n;
    struct entry *entries;
    const struct ck_kind **kinds; /* the same kinds, as ck_kinds() hands them out */
    struct ck_api_feature *features;
    size_t n_features;
};

static _Atomic(struct snapshot *) current;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static struct snapshot empty;

/* ---- snapshots ---------------------------------------------------------- */

static bool same_resource(const struct ck_kind *a, const struct ck_kind *b)
{
    return strcmp(a->group, b->group) == 0 && strcmp(a->version, b->version) == 0 &&
           strcmp(a->resource, b->resource) == 0;
}

static const char **build_label_names(const struct ck_kind *kind)
{
    const char **names = calloc(kind->n_field_labels + 3, sizeof(*names));
    if (!names)
        return NULL;
    size_t n = 0;
    names[n++] = "metadata.name";
    names[n++] = "metadata.namespace";
    for (size_t i = 0; i < kind->n_field_labels; i++)
        names[n++] = kind->field_labels[i].label;
    names[n] = NULL;
    return names;
}

/* Every kind's gates, once each, in registration order. */
static int collect_features(struct snapshot *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n; i++)
        total += s->entries[i].kind->n_features;
    s->features = calloc(total ? total : 1, sizeof(*s->features));
    if (!s->features)
        return CK_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const struct ck_kind *k = s->entries[i].kind;
        for (size_t f = 0; f < k->n_features; f++) {
            bool seen = false;
            for (size_t j = 0; j < s->n_features && !seen; j++)
                seen = strcmp(s->features[j].name, k->features[f].name) == 0;
            if (!seen)
                s->features[s->n_features++] = k->features[f];
        }
    }
    return 0;
}

/* A snapshot of n entries (copied from entries); NULL when out of memory. */
static struct snapshot *snapshot_new(const struct entry *entries, size_t n)
{
    struct snapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->n = n;
    s->entries = calloc(n ? n : 1, sizeof(*s->entries));
    s->kinds = calloc(n ? n : 1, sizeof(*s->kinds));
    if (s->entries && n)
        memcpy(s->entries, entries, n * sizeof(*entries));
    if (!s->entries || !s->kinds || collect_features(s) < 0) {
        free(s->entries);
        free(s->kinds);
        free(s->features);
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        s->kinds[i] = entries[i].kind;
    return s;
}

/* Makes s current. lock held. */
static void publish(struct snapshot *s)
{
    s->older = atomic_load_explicit(&current, memory_order_relaxed);
    atomic_store_explicit(&current, s, memory_order_release);
}

static int register_locked(const struct ck_kind *kind, struct ck_err *reterr)
{
    if (!kind || !kind->group || !kind->version || !kind->kind || !kind->resource || !kind->schema)
        return ck_err_set(reterr, CK_EINVAL,
                          "a kind needs a group, version, kind, resource and schema");
    const struct snapshot *cur = atomic_load_explicit(&current, memory_order_relaxed);
    if (!cur)
        cur = &empty;
    for (size_t i = 0; i < cur->n; i++) {
        if (same_resource(cur->entries[i].kind, kind)) {
            char qr[256], gv[CK_API_VERSION_MAX];
            return ck_err_set(reterr, CK_EEXIST, "%s of %s is served already",
                              ck_kind_qualified_resource(kind, qr, sizeof(qr)),
                              ck_kind_api_version(kind, gv, sizeof(gv)));
        }
    }
    struct entry *entries = malloc((cur->n + 1) * sizeof(*entries));
    const char **names = build_label_names(kind);
    struct snapshot *s = NULL;
    if (entries && names) {
        if (cur->n)
            memcpy(entries, cur->entries, cur->n * sizeof(*entries));
        entries[cur->n] = (struct entry){.kind = kind, .label_names = names};
        s = snapshot_new(entries, cur->n + 1);
    }
    free(entries);
    if (!s) {
        free(names);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    publish(s);
    return 0;
}

/* The built-in kinds (generated from the build's list of lib/api/kinds files). */
static void register_builtin(void)
{
    size_t n = 0;
    const struct ck_kind *const *builtin = ck__builtin_kinds(&n);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++)
        if (register_locked(builtin[i], NULL) < 0)
            abort(); /* a duplicate among our own kinds, or no memory at start-up */
    pthread_mutex_unlock(&lock);
}

static const struct snapshot *snapshot(void)
{
    pthread_once(&builtin_once, register_builtin);
    const struct snapshot *s = atomic_load_explicit(&current, memory_order_acquire);
    return s ? s : &empty;
}

/* ---- the registry ------------------------------------------------------- */

int ck_kind_register(const struct ck_kind *kind, struct ck_err *reterr)
{
    pthread_once(&builtin_once, register_builtin);
    pthread_mutex_lock(&lock);
    int r = register_locked(kind, reterr);
    pthread_mutex_unlock(&lock);
    return r;
}

int ck_kind_unregister(const struct ck_kind *kind, struct ck_err *reterr)
{
    pthread_once(&builtin_once, register_builtin);
    pthread_mutex_lock(&lock);
    const struct snapshot *cur = atomic_load_explicit(&current, memory_order_relaxed);
    size_t at = cur ? cur->n : 0;
    for (size_t i = 0; cur && i < cur->n && at == cur->n; i++)
        if (cur->entries[i].kind == kind)
            at = i;
    int r = 0;
    if (!cur || at == cur->n) {
        r = ck_err_set(reterr, CK_ENOENT, "the kind is not registered");
    } else {
        struct entry *entries = malloc(cur->n * sizeof(*entries));
        struct snapshot *s = NULL;
        if (entries) {
            memcpy(entries, cur->entries, at * sizeof(*entries));
            memcpy(entries + at, cur->entries + at + 1, (cur->n - at - 1) * sizeof(*entries));
            s = snapshot_new(entries, cur->n - 1);
            free(entries);
        }
        if (s)
            publish(s); /* the removed entry's label names stay reachable from the old snapshot */
        else
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    pthread_mutex_unlock(&lock);
    return r;
}

int ck_kinds_change(const struct ck_kind *const *remove, size_t n_remove,
                    const struct ck_kind *const *add, size_t n_add, size_t *ret_skipped,
                    struct ck_err *reterr)
{
    pthread_once(&builtin_once, register_builtin);
    if (ret_skipped)
        *ret_skipped = 0;
    pthread_mutex_lock(&lock);
    const struct snapshot *cur = atomic_load_explicit(&current, memory_order_relaxed);
    if (!cur)
        cur = &empty;
    struct entry *entries = malloc((cur->n + n_add + 1) * sizeof(*entries));
    size_t n = 0;
    int r = entries ? 0 : CK_ENOMEM;
    for (size_t i = 0; r == 0 && i < cur->n; i++) {
        bool removed = false;
        for (size_t j = 0; j < n_remove && !removed; j++)
            removed = cur->entries[i].kind == remove[j];
        if (!removed)
            entries[n++] = cur->entries[i];
    }
    size_t kept = n;
    for (size_t i = 0; r == 0 && i < n_add; i++) {
        const struct ck_kind *kind = add[i];
        bool taken = !kind || !kind->group || !kind->version || !kind->kind || !kind->resource ||
                     !kind->schema;
        for (size_t j = 0; j < n && !taken; j++)
            taken = same_resource(entries[j].kind, kind);
        if (taken) {
            if (ret_skipped)
                (*ret_skipped)++;
            continue;
        }
        const char **names = build_label_names(kind);
        if (!names)
            r = CK_ENOMEM;
        else
            entries[n++] = (struct entry){.kind = kind, .label_names = names};
    }
    struct snapshot *s = r == 0 ? snapshot_new(entries, n) : NULL;
    if (s) {
        publish(s); /* the removed entries' label names stay reachable from the old snapshot */
    } else {
        for (size_t i = kept; entries && i < n; i++)
            free(entries[i].label_names);
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    free(entries);
    pthread_mutex_unlock(&lock);
    return r;
}

const struct ck_kind *const *ck_kinds(size_t *ret_count)
{
    const struct snapshot *s = snapshot();
    *ret_count = s->n;
    return s->kinds;
}

json_t *ck__doc_cache_copy(struct ck__doc_cache *c, const struct ck_schemas *set,
                           json_t *(*build)(const struct ck_schemas *set))
{
    size_t n;
    const struct ck_kind *const *kinds = ck_kinds(&n);
    pthread_mutex_lock(&c->lock);
    json_t *copy = c->kinds == kinds && c->set_serial == ck__schemas_serial(set)
                       ? ck__json_copy(c->doc)
                       : NULL;
    pthread_mutex_unlock(&c->lock);
    if (copy)
        return copy;
    json_t *doc = build(set);
    copy = doc ? ck__json_copy(doc) : NULL;
    if (copy) {
        pthread_mutex_lock(&c->lock);
        json_decref(c->doc);
        c->doc = doc;
        c->kinds = kinds;
        c->set_serial = ck__schemas_serial(set);
        pthread_mutex_unlock(&c->lock);
    } else {
        json_decref(doc);
    }
    return copy;
}

const struct ck_kind *ck_kind_lookup(const char *group, const char *version, const char *resource)
{
    const struct snapshot *s = snapshot();
    for (size_t i = 0; i < s->n; i++) {
        const struct ck_kind *k = s->entries[i].kind;
        if (strcmp(k->group, group) == 0 && strcmp(k->version, version) == 0 &&
            strcmp(k->resource, resource) == 0)
            return k;
    }
    return NULL;
}

const struct ck_kind *ck_kind_with_role(enum ck_kind_role role)
{
    const struct snapshot *s = snapshot();
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i].kind->role == role)
            return s->entries[i].kind;
    return NULL;
}

const struct ck_api_feature *ck_api_features(size_t *ret_count)
{
    const struct snapshot *s = snapshot();
    *ret_count = s->n_features;
    return s->features;
}

const char *const *ck_kind_field_label_names(const struct ck_kind *kind)
{
    /* a kind unregistered since the caller looked it up keeps its names in older snapshots */
    for (const struct snapshot *s = snapshot(); s; s = s->older)
        for (size_t i = 0; i < s->n; i++)
            if (s->entries[i].kind == kind)
                return s->entries[i].label_names;
    return NULL;
}

/* ---- what every descriptor answers -------------------------------------- */

const char *const ck__get_patch_update[] = {"get", "patch", "update", NULL};
const char *const ck__proxy_verbs[] = {"create", "delete", "get", "patch", "update", NULL};
const struct ck_subresource ck__status_subresource[1] = {CK__STATUS_SUBRESOURCE};
const char *const ck__status_keeps_labels[] = {"labels", NULL};

const struct ck_schemas *ck_kind_schemas(const struct ck_kind *kind,
                                         const struct ck_schemas *fallback)
{
    return kind && kind->schemas ? kind->schemas : fallback;
}

const char *ck_kind_api_version(const struct ck_kind *kind, char *buf, size_t size)
{
    if (kind->group[0])
        snprintf(buf, size, "%s/%s", kind->group, kind->version);
    else
        snprintf(buf, size, "%s", kind->version);
    return buf;
}

const char *ck_kind_qualified_resource(const struct ck_kind *kind, char *buf, size_t size)
{
    if (kind->group[0])
        snprintf(buf, size, "%s.%s", kind->resource, kind->group);
    else
        snprintf(buf, size, "%s", kind->resource);
    return buf;
}

const struct ck_subresource *ck_kind_subresource(const struct ck_kind *kind, const char *name)
{
    for (size_t i = 0; i < kind->n_subresources; i++)
        if (strcmp(kind->subresources[i].name, name) == 0)
            return &kind->subresources[i];
    return NULL;
}

const struct ck_subresource *ck_kind_subresource_part(const struct ck_kind *kind,
                                                      enum ck_subresource_part part)
{
    for (size_t i = 0; i < kind->n_subresources; i++)
        if (kind->subresources[i].part == part)
            return &kind->subresources[i];
    return NULL;
}

bool ck_subresource_allows(const struct ck_subresource *sub, const char *verb)
{
    for (size_t i = 0; sub->verbs && sub->verbs[i]; i++)
        if (strcmp(sub->verbs[i], verb) == 0)
            return true;
    return false;
}

bool ck_kind_has_finalizers(const struct ck_kind *kind, const json_t *obj)
{
    if (json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) > 0)
        return true;
    return kind->has_own_finalizers && kind->has_own_finalizers(obj);
}

const char *ck_kind_field_value(const struct ck_kind *kind, const char *label, const json_t *obj,
                                char *buf, size_t size)
{
    if (strcmp(label, "metadata.name") == 0 || strcmp(label, "metadata.namespace") == 0)
        return json_string_value(ck__json_path(obj, label));
    for (size_t i = 0; i < kind->n_field_labels; i++) {
        const struct ck_field_label *f = &kind->field_labels[i];
        if (strcmp(f->label, label) != 0)
            continue;
        if (!f->path)
            return kind->field_value ? kind->field_value(label, obj, buf, size) : NULL;
        const json_t *v = ck__json_path(obj, f->path);
        switch (f->type) {
        case CK_FIELD_LABEL_STRING:
            return json_string_value(v);
        case CK_FIELD_LABEL_BOOL:
            return json_is_true(v) ? "true" : "false";
        case CK_FIELD_LABEL_INT:
            snprintf(buf, size, "%lld", (long long)json_integer_value(v));
            return buf;
        }
    }
    return NULL;
}

const char *ck_kind_field_getter(const char *label, const json_t *obj, const void *kind, char *buf,
                                 size_t size)
{
    return ck_kind_field_value(kind, label, obj, buf, size);
}

/* A converted copy of obj, a new reference; NULL when out of memory. */
static json_t *converted(const json_t *obj, int (*convert)(json_t *))
{
    json_t *copy = ck__json_copy(obj);
    if (copy && convert(copy) < 0)
        copy = (json_decref(copy), NULL);
    return copy;
}

void ck__validate_converted(const json_t *obj, const json_t *old, int (*convert)(json_t *),
                            void (*validate)(const json_t *, const json_t *,
                                             struct ck_field_errors *),
                            struct ck_field_errors *errs)
{
    json_t *now = converted(obj, convert);
    json_t *was = old ? converted(old, convert) : NULL;
    if (now && (was || !old))
        validate(now, was, errs);
    else
        errs->nomem = true;
    json_decref(now);
    json_decref(was);
}

void ck__cells_converted(const json_t *obj, long long now, int (*convert)(json_t *),
                         void (*cells)(const json_t *, long long, json_t **), json_t **row)
{
    json_t *c = converted(obj, convert);
    if (c)
        cells(c, now, row);
    json_decref(c);
}
