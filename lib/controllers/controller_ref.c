/*
 * controller_ref.c - the controller-ref manager (kubernetes pkg/controller/
 * controller_ref_manager.go: BaseControllerRefManager.ClaimObject, AdoptPod, ReleasePod,
 * and RecheckDeletionTimestamp).
 *
 * Adoption and release rewrite the child's metadata.ownerReferences with an update
 * conditional on the child's resourceVersion from the cache (Kubernetes sends a
 * strategic-merge patch with a uid precondition; a conditional update is as safe: it
 * fails with a conflict if anything changed, and the controller retries on a fresher
 * cache). The fresh read of the owner before the first adoption is done once per claim.
 *
 * Writes go through the controller's client interface (struct ck_ctl_client), so the
 * unit test runs a claim on the fake client and checks its actions.
 *
 * Threading: no state; called from a controller's sync, one per owner key at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "ckube/controllers.h"
#include "ckube/internal/util.h"

const json_t *ck_controller_ref(const json_t *obj)
{
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref)
    {
        if (json_is_true(json_object_get(ref, "controller")))
            return ref;
    }
    return NULL;
}

static bool being_deleted(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

/* RecheckDeletionTimestamp: the owner, read fresh, is the same and not being deleted. */
static int recheck_owner(const struct ck_ref_owner *o, struct ck_err *reterr)
{
    json_t *fresh = NULL;
    const char *ns = ck__meta_str(o->owner, "namespace"), *name = ck__meta_str(o->owner, "name");
    int r = ck_ctl_get(o->client, o->owner_res, ns, name, &fresh, reterr);
    if (r < 0)
        return r;
    const char *uid = ck__meta_str(fresh, "uid"), *want = ck__meta_str(o->owner, "uid");
    if (!uid || !want || strcmp(uid, want) != 0)
        r = ck_err_set(reterr, CK_ECONFLICT, "original %s %s/%s is gone: got uid %s, wanted %s",
                       o->kind, ns, name, uid ? uid : "", want ? want : "");
    else if (being_deleted(fresh))
        r = ck_err_set(reterr, CK_ECONFLICT, "%s/%s has just been deleted at %s", ns, name,
                       ck__meta_str(fresh, "deletionTimestamp"));
    json_decref(fresh);
    return r;
}

/* Writes child with ownerReferences changed: adopt adds ours, release removes it. */
static int write_refs(const struct ck_ref_owner *o, const json_t *child, bool adopt,
                      struct ck_err *reterr)
{
    json_t *copy = ck__json_copy(child);
    if (!copy)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    json_t *meta = json_object_get(copy, "metadata");
    json_t *refs = json_object_get(meta, "ownerReferences");
    if (!json_is_array(refs)) {
        refs = json_array();
        json_object_set_new(meta, "ownerReferences", refs);
    }
    const char *uid = ck__meta_str(o->owner, "uid");
    for (size_t i = json_array_size(refs); i-- > 0;) {
        const char *ref_uid = json_string_value(json_object_get(json_array_get(refs, i), "uid"));
        if (ref_uid && uid && strcmp(ref_uid, uid) == 0)
            json_array_remove(refs, i);
    }
    if (adopt)
        json_array_append_new(refs, ck_controller_ref_new(o->owner, o->api_version, o->kind));
    if (json_array_size(refs) == 0)
        json_object_del(meta, "ownerReferences");
    int r = ck_ctl_update(o->client, o->child_res, ck__meta_str(child, "namespace"), copy, NULL,
                          reterr);
    json_decref(copy);
    return r;
}

static bool selects(const struct ck_ref_owner *o, const json_t *child)
{
    if (!o->selector || ck_label_selector_is_empty(o->selector))
        return false;
    return ck_label_selector_matches(o->selector,
                                     json_object_get(json_object_get(child, "metadata"), "labels"));
}

int ck_claim_objects(const struct ck_ref_owner *o, const json_t *const *candidates, size_t n,
                     struct ck_obj_list *ret_claimed, struct ck_err *reterr)
{
    ret_claimed->items = calloc(n ? n : 1, sizeof(*ret_claimed->items));
    ret_claimed->n = 0;
    if (!ret_claimed->items)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const char *uid = ck__meta_str(o->owner, "uid");
    const char *ns = ck__meta_str(o->owner, "namespace");
    bool owner_deleting = being_deleted(o->owner);
    int first_err = 0, rechecked = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *child = candidates[i];
        const json_t *ref = ck_controller_ref(child);
        bool match = selects(o, child);
        struct ck_err err = {0};
        int r = 0;
        bool claim = false;
        if (ref) {
            const char *ref_uid = json_string_value(json_object_get(ref, "uid"));
            if (!ref_uid || !uid || strcmp(ref_uid, uid) != 0)
                continue; /* someone else's */
            if (match)
                claim = true;
            else if (!owner_deleting && (r = write_refs(o, child, false, &err)) == CK_ENOENT)
                r = 0; /* gone already: nothing to release */
        } else {
            const char *child_ns = ck__meta_str(child, "namespace");
            if (owner_deleting || !match || being_deleted(child) || !child_ns || !ns ||
                strcmp(child_ns, ns) != 0)
                continue;
            if (rechecked == 0)
                rechecked = recheck_owner(o, &err) < 0 ? -1 : 1;
            if (rechecked < 0) {
                r = err.code;
            } else {
                r = write_refs(o, child, true, &err);
                claim = r == 0;
                if (r == CK_ENOENT)
                    r = 0; /* gone: skip it */
            }
        }
        if (claim)
            ret_claimed->items[ret_claimed->n++] = ck_cached_ref(child);
        if (r < 0 && first_err == 0) {
            first_err = r;
            if (reterr)
                *reterr = err;
        }
        if (rechecked < 0)
            break; /* the owner is gone or going: adopt nothing more */
    }
    return first_err;
}
