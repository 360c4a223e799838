/*
 * operations.c - the garbage collector's live calls (kubernetes
 * pkg/controller/garbagecollector/operations.go and patch.go).
 *
 * Every call names an object by identity (apiVersion, kind, namespace, name, uid) and
 * finds its resource through discovery, re-reading discovery once when the kind is
 * unknown (a custom resource added since). Reads are fresh GETs, never the caches:
 * what a deletion decision rests on must be current. Deletes carry a uid precondition,
 * so an object deleted and recreated under the same name is never hit by a decision
 * about its predecessor. Changes to ownerReferences and finalizers are JSON patches
 * that first test the uid and resourceVersion read just before, so a concurrent writer
 * makes the patch fail (and the item retry) rather than be overwritten.
 *
 * Threading: called from workers; uses only the client and discovery, both thread-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckube/internal/util.h"
#include "internal.h"

int ck__gc_resource(struct ck_gc *gc, const char *api_version, const char *kind,
                    struct ck_api_resource *ret, struct ck_err *reterr)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct ck_discovery_snapshot *snap = NULL;
        int r = ck_discovery_get(gc->discovery, &snap, reterr);
        if (r < 0)
            return r;
        const struct ck_discovered *d = ck_discovery_find_kind(snap, api_version, kind);
        if (d) {
            snprintf(ret->group, sizeof(ret->group), "%s", d->group);
            snprintf(ret->version, sizeof(ret->version), "%s", d->version);
            snprintf(ret->resource, sizeof(ret->resource), "%s", d->resource);
            ret->res =
                (struct ck_resource){ret->group, ret->version, ret->resource, d->res.namespaced};
        }
        ck_discovery_snapshot_unref(snap);
        if (d)
            return 0;
        if (attempt == 0)
            ck_discovery_invalidate(gc->discovery);
    }
    /* not CK_ENOENT: an unknown kind must never read as an absent object */
    return ck_err_set(reterr, CK_EINVAL, "the server serves no kind %s in %s", kind, api_version);
}

int ck__gc_get_object(struct ck_gc *gc, const struct ck__gc_identity *id, json_t **ret_obj,
                      struct ck_err *reterr)
{
    struct ck_api_resource ar;
    int r = ck__gc_resource(gc, id->api_version, id->kind, &ar, reterr);
    if (r < 0)
        return r;
    return ck_ctl_get(&gc->client, &ar.res, ar.res.namespaced ? id->namespace : "", id->name,
                      ret_obj, reterr);
}

int ck__gc_delete_object(struct ck_gc *gc, const struct ck__gc_identity *id, const char *policy,
                         struct ck_err *reterr)
{
    struct ck_api_resource ar;
    int r = ck__gc_resource(gc, id->api_version, id->kind, &ar, reterr);
    if (r < 0)
        return r;
    json_t *opts = json_pack("{s:s, s:s, s:{s:s}, s:s}", "kind", "DeleteOptions", "apiVersion",
                             "v1", "preconditions", "uid", id->uid, "propagationPolicy", policy);
    if (!opts)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    r = ck_ctl_delete(&gc->client, &ar.res, ar.res.namespaced ? id->namespace : "", id->name, opts,
                      NULL, reterr);
    json_decref(opts);
    return r;
}

/*
 * Patches field (an array under metadata) of the live object to value (NULL: removes
 * it), testing uid and resourceVersion first.
 */
static int patch_metadata_array(struct ck_gc *gc, const struct ck_api_resource *ar,
                                const struct ck__gc_identity *id, const json_t *latest,
                                const char *field, json_t *value, struct ck_err *reterr)
{
    const char *rv = ck__meta_str(latest, "resourceVersion");
    char path[64];
    snprintf(path, sizeof(path), "/metadata/%s", field);
    json_t *ops = json_array();
    if (ops) {
        json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path",
                                             "/metadata/uid", "value", id->uid));
        if (rv)
            json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path",
                                                 "/metadata/resourceVersion", "value", rv));
        if (value && json_array_size(value))
            json_array_append_new(
                ops, json_pack("{s:s, s:s, s:O}", "op", "replace", "path", path, "value", value));
        else
            json_array_append_new(ops, json_pack("{s:s, s:s}", "op", "remove", "path", path));
    }
    if (!ops || json_array_size(ops) != (rv ? 3u : 2u)) {
        json_decref(ops);
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    int r = ck_ctl_patch(&gc->client, &ar->res, ar->res.namespaced ? id->namespace : "", id->name,
                         NULL, CK_PATCH_JSON, ops, NULL, reterr);
    json_decref(ops);
    return r;
}

static bool in(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return true;
    return false;
}

/* GETs id and checks it is still the same object: CK_ENOENT when gone or replaced. */
static int get_same(struct ck_gc *gc, const struct ck__gc_identity *id, struct ck_api_resource *ar,
                    json_t **ret_obj, struct ck_err *reterr)
{
    int r = ck__gc_resource(gc, id->api_version, id->kind, ar, reterr);
    if (r == 0)
        r = ck_ctl_get(&gc->client, &ar->res, ar->res.namespaced ? id->namespace : "", id->name,
                       ret_obj, reterr);
    if (r == 0) {
        const char *uid = ck__meta_str(*ret_obj, "uid");
        if (!uid || strcmp(uid, id->uid) != 0) {
            json_decref(*ret_obj);
            *ret_obj = NULL;
            r = ck_err_set(reterr, CK_ENOENT, "%s %s was replaced", id->kind, id->name);
        }
    }
    return r;
}

/* Rewrites the ownerReferences of id: drops (drop) or unblocks (!drop) those to uids. */
static int edit_owner_refs(struct ck_gc *gc, const struct ck__gc_identity *id,
                           const char *const *uids, size_t n, bool drop, struct ck_err *reterr)
{
    struct ck_api_resource ar;
    json_t *latest = NULL;
    int r = get_same(gc, id, &ar, &latest, reterr);
    if (r == CK_ENOENT)
        return 0; /* gone: nothing to change */
    if (r < 0)
        return r;
    json_t *refs = json_array();
    bool changed = false;
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(json_object_get(latest, "metadata"), "ownerReferences"), i,
                       ref)
    {
        bool hit = in(json_string_value(json_object_get(ref, "uid")), uids, n);
        if (hit && drop) {
            changed = true;
            continue;
        }
        json_t *copy = ck__json_copy(ref);
        if (hit && json_is_true(json_object_get(copy, "blockOwnerDeletion"))) {
            json_object_set_new(copy, "blockOwnerDeletion", json_false());
            changed = true;
        }
        json_array_append_new(refs, copy);
    }
    if (changed)
        r = patch_metadata_array(gc, &ar, id, latest, "ownerReferences", refs, reterr);
    json_decref(refs);
    json_decref(latest);
    return r == CK_ENOENT ? 0 : r;
}

int ck__gc_remove_owner_refs(struct ck_gc *gc, const struct ck__gc_identity *id,
                             const char *const *uids, size_t n, struct ck_err *reterr)
{
    return edit_owner_refs(gc, id, uids, n, true, reterr);
}

int ck__gc_unblock_owner_refs(struct ck_gc *gc, const struct ck__gc_identity *id,
                              const char *const *uids, size_t n, struct ck_err *reterr)
{
    return edit_owner_refs(gc, id, uids, n, false, reterr);
}

int ck__gc_remove_finalizer(struct ck_gc *gc, const struct ck__gc_identity *id,
                            const char *finalizer, struct ck_err *reterr)
{
    struct ck_api_resource ar;
    json_t *latest = NULL;
    int r = get_same(gc, id, &ar, &latest, reterr);
    if (r == CK_ENOENT)
        return 0;
    if (r < 0)
        return r;
    if (!ck__gc_has_finalizer(latest, finalizer)) {
        json_decref(latest);
        return 0;
    }
    json_t *kept = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(latest, "metadata"), "finalizers"), i, f)
    {
        if (!json_is_string(f) || strcmp(json_string_value(f), finalizer) != 0)
            json_array_append(kept, f);
    }
    r = patch_metadata_array(gc, &ar, id, latest, "finalizers", kept, reterr);
    json_decref(kept);
    json_decref(latest);
    return r == CK_ENOENT ? 0 : r;
}

void ck__gc_report_invalid_namespace(struct ck_gc *gc, const struct ck__gc_identity *dep,
                                     const struct ck__gc_ref *ref)
{
    if (!gc->recorder)
        return;
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", dep->api_version, "kind",
                            dep->kind, "metadata", "name", dep->name, "namespace", dep->namespace,
                            "uid", dep->uid);
    if (!obj)
        return;
    ck_event_recordf(gc->recorder, obj, CK_EVENT_WARNING, "OwnerRefInvalidNamespace",
                     "ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in "
                     "namespace \"%s\"",
                     ref->api_version, ref->kind, dep->namespace, ref->name, ref->uid,
                     dep->namespace);
    json_decref(obj);
}
