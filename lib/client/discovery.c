/*
 * discovery.c - the cached discovery client (client-go discovery.DiscoveryClient with
 * the memory cache of discovery/cached/memory).
 *
 * A refresh reads /api and /apis, then the resource list of every group version they
 * name (/api/v1, /apis/G/V), and builds one immutable snapshot: every top-level resource
 * with its group, version, kind, verbs, whether it is namespaced and whether its version
 * is the group's preferred one. Subresources ("pods/status") are left out: the garbage
 * collector and the namespace controller address whole objects only. A group version
 * whose document cannot be read is named in the snapshot's failed list rather than
 * failing the refresh, as client-go's ErrGroupDiscoveryFailed lets a caller use what was
 * found.
 *
 * Snapshots are reference counted and never change once published, so a reader keeps
 * one for as long as it works with it while refreshes publish newer ones. A snapshot
 * older than the ttl is refreshed on the next get; ck_discovery_invalidate() forces it
 * (a caller that met a resource it does not know, as client-go's RESTMapper resets).
 *
 * Threading: one mutex guards the current snapshot pointer; the reads of a refresh run
 * without it.
 *
 * Tested by tests/client/test_discovery.c (a fake source) and, against a real server,
 * through the garbage collector's and namespace controller's end-to-end tests.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/rest.h"
#include "internal.h"

struct ck_discovery {
    struct ck_discovery_source src;
    int64_t ttl;
    struct ck_clock *clock;
    pthread_mutex_t lock;
    struct ck_discovery_snapshot *current; /* NULL until the first refresh */
};

static int rest_get(void *ctx, const char *path, json_t **ret_doc, struct ck_err *reterr)
{
    return ck_rest_do(ctx, "GET", path, NULL, NULL, ret_doc, reterr);
}

void ck_discovery_source_rest(struct ck_discovery_source *src, struct ck_rest *client)
{
    *src = (struct ck_discovery_source){.get = rest_get, .ctx = client};
}

int ck_discovery_new(const struct ck_discovery_source *src, int64_t ttl, struct ck_clock *clock,
                     struct ck_discovery **ret_d, struct ck_err *reterr)
{
    struct ck_discovery *d = ck__calloc(1, sizeof(*d));
    if (!d)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    d->src = *src;
    d->ttl = ttl > 0 ? ttl : 30 * CK_SEC;
    d->clock = clock;
    pthread_mutex_init(&d->lock, NULL);
    *ret_d = d;
    return 0;
}

struct ck_discovery *ck_discovery_free(struct ck_discovery *d)
{
    if (!d)
        return NULL;
    ck_discovery_snapshot_unref(d->current);
    pthread_mutex_destroy(&d->lock);
    free(d);
    return NULL;
}

struct ck_discovery_snapshot *ck_discovery_snapshot_ref(struct ck_discovery_snapshot *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

struct ck_discovery_snapshot *ck_discovery_snapshot_unref(struct ck_discovery_snapshot *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        for (size_t i = 0; i < s->n_failed; i++)
            free(s->failed[i]);
        free(s->failed);
        free(s->resources);
        free(s);
    }
    return NULL;
}

/* ---- building a snapshot -------------------------------------------------------- */

static unsigned verb_bits(const json_t *verbs)
{
    static const char *const names[] = {"get",    "list",  "watch",  "create",
                                        "update", "patch", "delete", "deletecollection"};
    unsigned bits = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(verbs, i, v)
    {
        const char *s = json_string_value(v);
        for (size_t b = 0; s && b < sizeof(names) / sizeof(names[0]); b++)
            if (strcmp(s, names[b]) == 0)
                bits |= 1u << b;
    }
    return bits;
}

static int add_failed(struct ck_discovery_snapshot *s, const char *gv)
{
    char **grown = ck__realloc(s->failed, (s->n_failed + 1) * sizeof(*grown));
    if (!grown)
        return CK_ENOMEM;
    s->failed = grown;
    if (!(s->failed[s->n_failed] = ck__strdup(gv)))
        return CK_ENOMEM;
    s->n_failed++;
    return 0;
}

/* Adds the resources of one group version's APIResourceList. */
static int add_group_version(struct ck_discovery_snapshot *s, const char *group,
                             const char *version, bool preferred, const json_t *list)
{
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(list, "resources"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *kind = json_string_value(json_object_get(e, "kind"));
        if (!name || !kind || strchr(name, '/'))
            continue;
        struct ck_discovered *grown = ck__realloc(s->resources, (s->n + 1) * sizeof(*s->resources));
        if (!grown)
            return CK_ENOMEM;
        s->resources = grown;
        struct ck_discovered *r = &s->resources[s->n++];
        memset(r, 0, sizeof(*r));
        snprintf(r->group, sizeof(r->group), "%s", group);
        snprintf(r->version, sizeof(r->version), "%s", version);
        snprintf(r->resource, sizeof(r->resource), "%s", name);
        snprintf(r->kind, sizeof(r->kind), "%s", kind);
        if (*group)
            snprintf(r->api_version, sizeof(r->api_version), "%s/%s", group, version);
        else
            snprintf(r->api_version, sizeof(r->api_version), "%s", version);
        r->verbs = verb_bits(json_object_get(e, "verbs"));
        r->preferred = preferred;
        r->res.namespaced = json_is_true(json_object_get(e, "namespaced"));
    }
    return 0;
}

static int read_group_version(struct ck_discovery *d, struct ck_discovery_snapshot *s,
                              const char *group, const char *version, bool preferred)
{
    char path[512], gv[256];
    if (*group) {
        snprintf(path, sizeof(path), "/apis/%s/%s", group, version);
        snprintf(gv, sizeof(gv), "%s/%s", group, version);
    } else {
        snprintf(path, sizeof(path), "/api/%s", version);
        snprintf(gv, sizeof(gv), "%s", version);
    }
    json_t *doc = NULL;
    struct ck_err err = {0};
    int r = d->src.get(d->src.ctx, path, &doc, &err);
    if (r == CK_ENOMEM)
        return r;
    r = r < 0 ? add_failed(s, gv) : add_group_version(s, group, version, preferred, doc);
    json_decref(doc);
    return r;
}

/* Points every resource's res at its own strings (after the array stopped moving). */
static void fix_pointers(struct ck_discovery_snapshot *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct ck_discovered *r = &s->resources[i];
        bool namespaced = r->res.namespaced;
        r->res = (struct ck_resource){r->group, r->version, r->resource, namespaced};
    }
}

int ck_discovery_refresh(struct ck_discovery *d, struct ck_err *reterr)
{
    struct ck_discovery_snapshot *s = ck__calloc(1, sizeof(*s));
    if (!s)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    atomic_init(&s->refs, 1);
    s->taken = ck_clock_now(d->clock);
    json_t *core = NULL, *groups = NULL;
    int r = d->src.get(d->src.ctx, "/api", &core, reterr);
    if (r == 0)
        r = d->src.get(d->src.ctx, "/apis", &groups, reterr);
    size_t i, j;
    const json_t *v, *g;
    json_array_foreach(json_object_get(core, "versions"), i, v)
    {
        if (r == 0 && json_is_string(v))
            r = read_group_version(d, s, "", json_string_value(v), i == 0);
    }
    json_array_foreach(json_object_get(groups, "groups"), i, g)
    {
        const char *group = json_string_value(json_object_get(g, "name"));
        const char *pref =
            json_string_value(json_object_get(json_object_get(g, "preferredVersion"), "version"));
        json_array_foreach(json_object_get(g, "versions"), j, v)
        {
            const char *version = json_string_value(json_object_get(v, "version"));
            if (r == 0 && group && version)
                r = read_group_version(d, s, group, version,
                                       pref ? strcmp(pref, version) == 0 : j == 0);
        }
    }
    json_decref(core);
    json_decref(groups);
    if (r < 0) {
        if (r == CK_ENOMEM)
            ck_err_set(reterr, CK_ENOMEM, "out of memory");
        ck_discovery_snapshot_unref(s);
        return r;
    }
    fix_pointers(s);
    pthread_mutex_lock(&d->lock);
    struct ck_discovery_snapshot *old = d->current;
    d->current = s;
    pthread_mutex_unlock(&d->lock);
    ck_discovery_snapshot_unref(old);
    return 0;
}

int ck_discovery_get(struct ck_discovery *d, struct ck_discovery_snapshot **ret_snap,
                     struct ck_err *reterr)
{
    int64_t now = ck_clock_now(d->clock);
    pthread_mutex_lock(&d->lock);
    struct ck_discovery_snapshot *s = d->current;
    bool fresh = s && now - s->taken < d->ttl;
    if (fresh)
        ck_discovery_snapshot_ref(s);
    pthread_mutex_unlock(&d->lock);
    if (!fresh) {
        int r = ck_discovery_refresh(d, reterr);
        if (r < 0)
            return r;
        pthread_mutex_lock(&d->lock);
        s = ck_discovery_snapshot_ref(d->current);
        pthread_mutex_unlock(&d->lock);
    }
    *ret_snap = s;
    return 0;
}

void ck_discovery_invalidate(struct ck_discovery *d)
{
    pthread_mutex_lock(&d->lock);
    struct ck_discovery_snapshot *old = d->current;
    d->current = NULL;
    pthread_mutex_unlock(&d->lock);
    ck_discovery_snapshot_unref(old);
}

const struct ck_discovered *ck_discovery_find_kind(const struct ck_discovery_snapshot *s,
                                                   const char *api_version, const char *kind)
{
    for (size_t i = 0; s && api_version && kind && i < s->n; i++)
        if (strcmp(s->resources[i].api_version, api_version) == 0 &&
            strcmp(s->resources[i].kind, kind) == 0)
            return &s->resources[i];
    return NULL;
}

const struct ck_discovered *ck_discovery_find(const struct ck_discovery_snapshot *s,
                                              const char *group, const char *version,
                                              const char *resource)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strcmp(s->resources[i].group, group) == 0 &&
            strcmp(s->resources[i].version, version) == 0 &&
            strcmp(s->resources[i].resource, resource) == 0)
            return &s->resources[i];
    return NULL;
}
