/*
 * history.c - the DaemonSet's ControllerRevisions (kubernetes pkg/controller/daemon/
 * update.go: constructHistory, snapshot, dedupCurHistories, cleanupHistory, getPatch).
 *
 * A revision stores the DaemonSet's template as the strategic merge patch that restores
 * it, {"spec":{"template":{...,"$patch":"replace"}}}: kubectl's `rollout undo ds` sends
 * that data back as a patch of the DaemonSet. The revision is named <ds>-<hash> (the
 * template hash with status.collisionCount, as a ReplicaSet's pod-template-hash) and
 * labelled controller-revision-hash=<hash>, which the pods made from it carry too.
 *
 * The current revision is the one whose data equals the DaemonSet's patch; when none
 * does, it is made with the next revision number; when an older one does (a rollback, or
 * a template set back by hand), it is renumbered to be the newest. Two current ones
 * (made by a race) are reduced to the newest, its hash put on the other's pods. A name
 * taken by a different template (a hash collision) bumps status.collisionCount and the
 * sync is retried with a new name.
 *
 * Threading: called from sync only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../deployment/deployment.h"
#include "ckube/internal/util.h"
#include "internal.h"

/* getPatch: the data a revision of ds holds. New reference, NULL on no memory. */
static json_t *revision_data(const json_t *ds)
{
    const json_t *tmpl = json_object_get(json_object_get(ds, "spec"), "template");
    json_t *copy = tmpl ? ck__json_copy(tmpl) : json_object();
    if (!copy || json_object_set_new(copy, "$patch", json_string("replace")) < 0) {
        json_decref(copy);
        return NULL;
    }
    return json_pack("{s:{s:o}}", "spec", "template", copy);
}

static const char *label_of(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(json_object_get(ck__ds_meta(obj), "labels"), key));
}

static long long revision_of(const json_t *rev)
{
    return (long long)json_integer_value(json_object_get(rev, "revision"));
}

/* Appends obj (taking the reference) to list; CK_ENOMEM (the reference dropped) on failure. */
static int list_take(struct ck_obj_list *list, const json_t *obj)
{
    const json_t **items = realloc(list->items, (list->n + 1) * sizeof(*items));
    if (!items) {
        ck_cached_unref(obj);
        return CK_ENOMEM;
    }
    list->items = items;
    list->items[list->n++] = obj;
    return 0;
}

/* snapshot: creates revision number `number` of ds; *ret_rev a new reference. */
static int snapshot(struct ck_ds_controller *c, const json_t *ds, long long number, json_t *data,
                    json_t **ret_rev, struct ck_err *reterr)
{
    const char *ns = json_string_value(json_object_get(ck__ds_meta(ds), "namespace"));
    const json_t *collision = json_object_get(json_object_get(ds, "status"), "collisionCount");
    char hash[16], name[320];
    ck__deploy_template_hash(json_object_get(json_object_get(ds, "spec"), "template"), collision,
                             hash, sizeof(hash));
    snprintf(name, sizeof(name), "%s-%s", ck__ds_name_of(ds), hash);
    json_t *labels = ck__json_copy(json_object_get(
        json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "metadata"),
        "labels"));
    if (!json_is_object(labels)) {
        json_decref(labels);
        labels = json_object();
    }
    json_t *ref = ck_controller_ref_new(ds, CK__DS_API_VERSION, CK__DS_KIND);
    json_t *rev = NULL;
    if (labels && ref && json_object_set_new(labels, CK__DS_HASH_LABEL, json_string(hash)) == 0)
        rev = json_pack("{s:s, s:s, s:{s:s, s:s, s:O, s:[O]}, s:O, s:I}", "apiVersion", "apps/v1",
                        "kind", "ControllerRevision", "metadata", "name", name, "namespace", ns,
                        "labels", labels, "ownerReferences", ref, "data", data, "revision",
                        (json_int_t)number);
    const json_t *annotations = json_object_get(ck__ds_meta(ds), "annotations");
    if (rev && json_object_size(annotations))
        json_object_set(json_object_get(rev, "metadata"), "annotations", (json_t *)annotations);
    json_decref(labels);
    json_decref(ref);
    if (!rev)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    int r = ck_ctl_create(&c->client, c->revisions_res, ns, rev, ret_rev, reterr);
    json_decref(rev);
    if (r != CK_EEXIST)
        return r;

    /* the name is taken: by this very template (a cache behind), or by a collision */
    ck_err_release(reterr);
    json_t *existing = NULL;
    r = ck_ctl_get(&c->client, c->revisions_res, ns, name, &existing, reterr);
    if (r < 0)
        return r;
    if (json_equal(json_object_get(existing, "data"), data)) {
        *ret_rev = existing;
        return 0;
    }
    json_decref(existing);
    json_t *fresh = NULL;
    r = ck_ctl_get(&c->client, c->sets_res, ns, ck__ds_name_of(ds), &fresh, reterr);
    if (r < 0)
        return r;
    json_t *status = json_object_get(fresh, "status");
    const json_t *fresh_collision = json_object_get(status, "collisionCount");
    if (!json_equal(fresh_collision ? fresh_collision : json_null(),
                    collision ? collision : json_null())) {
        json_decref(fresh);
        return ck_err_set(reterr, CK_ECONFLICT,
                          "found a stale collision count of DaemonSet \"%s\" while processing; "
                          "will retry until it is updated",
                          ck__ds_name_of(ds));
    }
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(fresh, "status", status);
    }
    json_object_set_new(status, "collisionCount",
                        json_integer(json_integer_value(fresh_collision) + 1));
    r = ck_ctl_update_status(&c->client, c->sets_res, ns, fresh, NULL, reterr);
    json_decref(fresh);
    if (r < 0)
        return r;
    CK_LOGV(2, "daemonset %s/%s: found a hash collision, bumping collisionCount", ns,
            ck__ds_name_of(ds));
    return ck_err_set(reterr, CK_EEXIST, "controllerrevisions.apps \"%s\" already exists", name);
}

/*
 * dedupCurHistories: of n current revisions keeps the newest; the others' pods get its
 * hash and they are deleted. *ret_keep: the kept one (borrowed from cur).
 */
static int dedup_current(struct ck_ds_controller *c, const json_t *ds, const json_t *const *cur,
                         size_t n, const json_t **ret_keep, struct ck_err *reterr)
{
    const json_t *keep = cur[0];
    for (size_t i = 1; i < n; i++)
        if (revision_of(cur[i]) > revision_of(keep))
            keep = cur[i];
    *ret_keep = keep;
    if (n == 1)
        return 0;
    const char *ns = json_string_value(json_object_get(ck__ds_meta(ds), "namespace"));
    const char *keep_hash = label_of(keep, CK__DS_HASH_LABEL);
    struct ck_obj_list pods = {0};
    int r = ck_lister_list(&c->pods, ns, NULL, &pods, reterr);
    for (size_t i = 0; r == 0 && i < n; i++) {
        if (cur[i] == keep)
            continue;
        const char *dup_hash = label_of(cur[i], CK__DS_HASH_LABEL);
        for (size_t j = 0; r == 0 && dup_hash && j < pods.n; j++) {
            const char *pod_hash = label_of(pods.items[j], CK__DS_HASH_LABEL);
            if (!pod_hash || strcmp(pod_hash, dup_hash) != 0)
                continue;
            json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", CK__DS_HASH_LABEL,
                                      keep_hash ? keep_hash : "");
            r = patch ? ck_ctl_patch(&c->client, c->pods_res, ns, ck__ds_name_of(pods.items[j]),
                                     NULL, "application/merge-patch+json", patch, NULL, reterr)
                      : ck_err_set(reterr, CK_ENOMEM, "out of memory");
            json_decref(patch);
            if (r == CK_ENOENT) {
                ck_err_release(reterr);
                r = 0;
            }
        }
        if (r == 0) {
            r = ck_ctl_delete(&c->client, c->revisions_res, ns, ck__ds_name_of(cur[i]), NULL, NULL,
                              reterr);
            if (r == CK_ENOENT) {
                ck_err_release(reterr);
                r = 0;
            }
        }
    }
    ck_obj_list_release(&pods);
    return r;
}

int ck__ds_construct_history(struct ck_ds_controller *c, const json_t *ds, char **ret_hash,
                             struct ck_obj_list *ret_old, struct ck_err *reterr)
{
    *ret_hash = NULL;
    memset(ret_old, 0, sizeof(*ret_old));
    const char *ns = json_string_value(json_object_get(ck__ds_meta(ds), "namespace"));
    struct ck_label_selector *sel = NULL;
    int r = ck_label_selector_from_object(json_object_get(json_object_get(ds, "spec"), "selector"),
                                          &sel, reterr);
    if (r < 0)
        return r;
    /* controlledHistories: the namespace's revisions, adopting matching orphans */
    struct ck_obj_list claimed = {0};
    r = ck__ds_claim(c, ds, sel, &c->revisions, c->revisions_res, &claimed, reterr);
    ck_label_selector_free(sel);
    json_t *data = r == 0 ? revision_data(ds) : NULL;
    if (r == 0 && !data)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    const json_t **cur = ck__calloc(claimed.n ? claimed.n : 1, sizeof(*cur));
    size_t n_cur = 0;
    if (r == 0 && !cur)
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    long long max_old = 0;
    for (size_t i = 0; r == 0 && i < claimed.n; i++) {
        const json_t *rev = claimed.items[i];
        const json_t *labeled = NULL;
        if (!label_of(rev, CK__DS_HASH_LABEL)) {
            /* older revisions: their name stands for the hash */
            json_t *copy = ck__json_copy(rev);
            json_t *meta = copy ? json_object_get(copy, "metadata") : NULL;
            json_t *labels = meta ? json_object_get(meta, "labels") : NULL;
            if (meta && !json_is_object(labels)) {
                labels = json_object();
                json_object_set_new(meta, "labels", labels);
            }
            json_t *updated = NULL;
            r = labels ? json_object_set_new(labels, CK__DS_HASH_LABEL,
                                             json_string(ck__ds_name_of(rev)))
                       : CK_ENOMEM;
            r = r == 0 ? ck_ctl_update(&c->client, c->revisions_res, ns, copy, &updated, reterr)
                       : ck_err_set(reterr, CK_ENOMEM, "out of memory");
            json_decref(copy);
            if (r < 0)
                break;
            labeled = updated;
        } else {
            labeled = ck_cached_ref(rev);
        }
        if (json_equal(json_object_get(labeled, "data"), data)) {
            cur[n_cur++] = labeled;
        } else {
            if (revision_of(labeled) > max_old)
                max_old = revision_of(labeled);
            r = list_take(ret_old, labeled);
        }
    }
    ck_obj_list_release(&claimed);
    json_t *created = NULL;
    const json_t *keep = NULL;
    if (r == 0 && n_cur == 0) {
        r = snapshot(c, ds, max_old + 1, data, &created, reterr);
        keep = created;
    } else if (r == 0) {
        r = dedup_current(c, ds, cur, n_cur, &keep, reterr);
        if (r == 0 && revision_of(keep) < max_old + 1) {
            json_t *copy = ck__json_copy(keep);
            if (copy)
                json_object_set_new(copy, "revision", json_integer(max_old + 1));
            r = copy ? ck_ctl_update(&c->client, c->revisions_res, ns, copy, NULL, reterr)
                     : ck_err_set(reterr, CK_ENOMEM, "out of memory");
            json_decref(copy);
        }
    }
    if (r == 0) {
        const char *hash = label_of(keep, CK__DS_HASH_LABEL);
        *ret_hash = ck__strdup(hash ? hash : "");
        if (!*ret_hash)
            r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n_cur; i++)
        ck_cached_unref(cur[i]);
    free(cur);
    json_decref(created);
    json_decref(data);
    if (r < 0)
        ck_obj_list_release(ret_old);
    return r;
}

static int cmp_by_revision(const void *a, const void *b)
{
    long long x = revision_of(*(const json_t *const *)a),
              y = revision_of(*(const json_t *const *)b);
    return x < y ? -1 : x > y;
}

int ck__ds_cleanup_history(struct ck_ds_controller *c, const json_t *ds,
                           const struct ck__ds_pods_by_node *pods, struct ck_obj_list *old,
                           struct ck_err *reterr)
{
    const json_t *limit = json_object_get(json_object_get(ds, "spec"), "revisionHistoryLimit");
    long long keep = json_is_integer(limit) ? json_integer_value(limit) : 10;
    long long to_kill = (long long)old->n - keep;
    if (to_kill <= 0)
        return 0;
    const char *ns = json_string_value(json_object_get(ck__ds_meta(ds), "namespace"));
    qsort(old->items, old->n, sizeof(*old->items), cmp_by_revision);
    for (size_t i = 0; i < old->n && to_kill > 0; i++) {
        const char *hash = label_of(old->items[i], CK__DS_HASH_LABEL);
        bool live = false;
        for (size_t g = 0; hash && !live && g < pods->n; g++)
            for (size_t k = 0; !live && k < pods->groups[g].n; k++) {
                const char *h = label_of(pods->groups[g].pods[k], CK__DS_HASH_LABEL);
                live = h && strcmp(h, hash) == 0;
            }
        if (live)
            continue;
        int r = ck_ctl_delete(&c->client, c->revisions_res, ns, ck__ds_name_of(old->items[i]), NULL,
                              NULL, reterr);
        if (r == CK_ENOENT)
            ck_err_release(reterr);
        else if (r < 0)
            return r;
        to_kill--;
    }
    return 0;
}
