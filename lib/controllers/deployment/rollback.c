/*
 * rollback.c - rolling a Deployment back to an earlier revision (kubernetes
 * pkg/controller/deployment/rollback.go).
 *
 * kubectl 1.32's `rollout undo` works client side: it finds the ReplicaSet of the
 * wanted revision (--to-revision, or the previous one) and patches the Deployment's
 * template and annotations from it. The controller then sees a Deployment whose
 * template equals that old ReplicaSet's (ignoring pod-template-hash), so
 * ck__deploy_find_new_rs() returns it and ck__deploy_sync_new_rs() gives it the next
 * revision, moving its old number into revision-history. No ReplicaSet is created.
 *
 * The controller-side path mirrors rollback.go for the deprecated
 * `deprecated.deployment.rollback.to` annotation (extensions/v1beta1 rollbackTo):
 * ck__deploy_rollback_revision() reads it, ck__deploy_rollback_find() picks the
 * ReplicaSet, ck__deploy_rollback_to_template() copies its template and annotations.
 * The caller then removes the annotation and updates the Deployment.
 *
 * Threading: no state.
 */
#include <errno.h>
#include <stdlib.h>

#include "ckube/util.h"
#include "deployment.h"

int64_t ck__deploy_rollback_revision(const json_t *d)
{
    const char *v = ck__deploy_annotation(d, CK_DEPLOY_ROLLBACK_TO_ANNOTATION);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    long long rev = strtoll(v, &end, 10);
    if (errno || end == v || *end || rev < 0)
        return -1; /* unparsable: Kubernetes ignores it too */
    return rev;
}

int ck__deploy_rollback_find(const json_t *const *all, size_t n_all, int64_t revision,
                             const json_t **ret_rs)
{
    if (revision == 0)
        revision = ck__deploy_last_revision(all, n_all);
    if (revision == 0)
        return CK_ENOENT; /* "Unable to find last revision." */
    for (size_t i = 0; i < n_all; i++) {
        int64_t v;
        if (all[i] && ck__deploy_revision(all[i], &v) == 0 && v == revision) {
            *ret_rs = all[i];
            return 0;
        }
    }
    return CK_ENOENT; /* "Unable to find the revision to rollback to." */
}

bool ck__deploy_rollback_to_template(json_t *d, const json_t *rs)
{
    const json_t *tmpl = json_object_get(json_object_get(rs, "spec"), "template");
    const json_t *cur = json_object_get(json_object_get(d, "spec"), "template");
    if (ck__deploy_equal_ignore_hash(cur, tmpl))
        return false;
    ck__deploy_set_from_rs_template(d, tmpl);
    /*
     * The Deployment also takes the ReplicaSet's annotations (change-cause...), or its
     * current ones would be copied onto the ReplicaSet it rolls back to.
     */
    ck__deploy_set_annotations_to(d, rs);
    return true;
}
