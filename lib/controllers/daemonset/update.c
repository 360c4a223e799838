/*
 * update.c - the RollingUpdate step of the DaemonSet controller (kubernetes
 * pkg/controller/daemon/update.go: rollingUpdate, findUpdatedPodsOnNode,
 * updatedDesiredNodeCounts).
 *
 * Without surge, old pods are deleted so that no more than maxUnavailable nodes are
 * without an available pod (an old pod that is not available is replaced at once), and
 * the manage step of the next sync creates the new pods. With surge, a new pod is made
 * beside an old available one on up to maxSurge nodes at a time (at once where the old
 * one is not available), and the old pod is deleted when the new one is available.
 * A node with more than one old or one new pod is left to the manage step. When both
 * counts come to zero, one node may be unavailable.
 *
 * Threading: called from sync only.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* findUpdatedPodsOnNode: false when the node has two new or two old pods. */
static bool find_updated(const json_t *ds, const struct ck__ds_node_pods *g, const char *hash,
                         const json_t **ret_new, const json_t **ret_old)
{
    *ret_new = *ret_old = NULL;
    for (size_t i = 0; g && i < g->n; i++) {
        const json_t *pod = g->pods[i];
        if (json_object_get(ck__ds_meta(pod), "deletionTimestamp"))
            continue;
        const json_t **slot = ck__ds_pod_updated(pod, hash, ds) ? ret_new : ret_old;
        if (*slot) {
            *ret_new = *ret_old = NULL;
            return false;
        }
        *slot = pod;
    }
    return true;
}

/* Appends to dst all of must, then the first `remaining` (kept within 0..n) of candidates. */
static void take_within_budget(struct ck__ds_names *dst, const struct ck__ds_names *must,
                               const struct ck__ds_names *candidates, int remaining)
{
    if (remaining < 0)
        remaining = 0;
    if ((size_t)remaining > candidates->n)
        remaining = (int)candidates->n;
    for (size_t i = 0; i < must->n; i++)
        ck__ds_names_push(dst, must->v[i]);
    for (int i = 0; i < remaining; i++)
        ck__ds_names_push(dst, candidates->v[i]);
}

int ck__ds_rolling_update(struct ck_ds_controller *c, const json_t *ds, const char *ds_key,
                          const struct ck_obj_list *nodes, const struct ck_obj_list *pods,
                          const char *hash, struct ck_err *reterr)
{
    struct ck__ds_pods_by_node by_node;
    if (ck__ds_group_pods(pods, &by_node) < 0)
        return ck_err_set(reterr, CK_ENOMEM, "out of memory");
    /* updatedDesiredNodeCounts: the nodes to visit are those with pods and those wanting one */
    struct ck__ds_names visit = {0};
    int desired = 0;
    for (size_t i = 0; i < nodes->n; i++) {
        bool run, cont;
        ck_ds_node_should_run(nodes->items[i], ds, &run, &cont);
        if (!run)
            continue;
        desired++;
        if (!ck__ds_pods_on(&by_node, ck__ds_name_of(nodes->items[i])))
            ck__ds_names_push(&visit, ck__ds_name_of(nodes->items[i]));
    }
    for (size_t g = 0; g < by_node.n; g++)
        ck__ds_names_push(&visit, by_node.groups[g].node);
    int max_surge, max_unavailable;
    int r = ck__ds_surge_unavailable(ds, desired, &max_surge, &max_unavailable);
    if (r < 0) {
        free(visit.v);
        ck__ds_pods_by_node_release(&by_node);
        return ck_err_set(
            reterr, r, "invalid value for IntOrString: invalid type: string is not a percentage");
    }
    if (desired > 0 && max_unavailable == 0 && max_surge == 0)
        max_unavailable = 1;
    int64_t now = ck_clock_now(c->clock);
    long long min_ready = ck__ds_min_ready(ds);
    struct ck__ds_names to_delete = {0}, to_create = {0};

    if (max_surge == 0) {
        struct ck__ds_names replacements = {0}, candidates = {0};
        int unavailable = 0;
        for (size_t i = 0; i < visit.n; i++) {
            const json_t *new_pod, *old_pod;
            if (!find_updated(ds, ck__ds_pods_on(&by_node, visit.v[i]), hash, &new_pod, &old_pod)) {
                unavailable++; /* the manage step cleans this node up */
                continue;
            }
            if ((!old_pod && !new_pod) || (old_pod && new_pod)) {
                unavailable++;
            } else if (new_pod) {
                if (!ck__ds_pod_available(new_pod, min_ready, now))
                    unavailable++;
            } else if (!ck__ds_pod_available(old_pod, min_ready, now)) {
                ck__ds_names_push(&replacements, ck__ds_name_of(old_pod));
                unavailable++;
            } else if (unavailable < max_unavailable) {
                ck__ds_names_push(&candidates, ck__ds_name_of(old_pod));
            }
        }
        take_within_budget(&to_delete, &replacements, &candidates, max_unavailable - unavailable);
        bool nomem = replacements.nomem || candidates.nomem;
        free(replacements.v);
        free(candidates.v);
        if (nomem)
            to_delete.nomem = true;
    } else {
        struct ck__ds_names allowed_new = {0}, candidate_new = {0}, should_not_run = {0};
        int surge = 0, available = 0;
        for (size_t i = 0; r == 0 && i < visit.n; i++) {
            const json_t *new_pod, *old_pod;
            if (!find_updated(ds, ck__ds_pods_on(&by_node, visit.v[i]), hash, &new_pod, &old_pod)) {
                surge++;
                continue;
            }
            if (old_pod ? ck__ds_pod_available(old_pod, min_ready, now)
                        : new_pod && ck__ds_pod_available(new_pod, min_ready, now))
                available++;
            if (!old_pod)
                continue; /* the manage step handles it */
            if (new_pod) {
                if (!ck__ds_pod_available(new_pod, min_ready, now))
                    surge++; /* waiting for it to be available */
                else
                    ck__ds_names_push(&to_delete, ck__ds_name_of(old_pod));
                continue;
            }
            const json_t *node = NULL;
            if (ck_lister_get(&c->nodes, "", visit.v[i], &node) < 0) {
                r = ck_err_set(reterr, CK_ENOENT, "couldn't get node for nodeName \"%s\"",
                               visit.v[i]);
                break;
            }
            bool run, cont;
            ck_ds_node_should_run(node, ds, &run, &cont);
            ck_cached_unref(node);
            if (!ck__ds_pod_available(old_pod, min_ready, now)) {
                if (!run)
                    ck__ds_names_push(&to_delete, ck__ds_name_of(old_pod));
                else
                    ck__ds_names_push(&allowed_new, visit.v[i]);
            } else if (!run) {
                ck__ds_names_push(&should_not_run, ck__ds_name_of(old_pod));
            } else if (surge < max_surge) {
                ck__ds_names_push(&candidate_new, visit.v[i]);
            }
        }
        /* with surge, a pod on a node left behind goes only when another is available */
        int deletable = available - desired;
        if (deletable > (int)should_not_run.n)
            deletable = (int)should_not_run.n;
        for (int i = 0; i < deletable; i++)
            ck__ds_names_push(&to_delete, should_not_run.v[i]);
        take_within_budget(&to_create, &allowed_new, &candidate_new, max_surge - surge);
        if (allowed_new.nomem || candidate_new.nomem || should_not_run.nomem)
            to_create.nomem = true;
        free(allowed_new.v);
        free(candidate_new.v);
        free(should_not_run.v);
    }
    if (r == 0 && (visit.nomem || to_delete.nomem || to_create.nomem))
        r = ck_err_set(reterr, CK_ENOMEM, "out of memory");
    if (r == 0 && (to_delete.n || to_create.n))
        r = ck__ds_sync_nodes(c, ds, ds_key, to_delete.v, to_delete.n, to_create.v, to_create.n,
                              hash, reterr);
    free(to_delete.v);
    free(to_create.v);
    free(visit.v);
    ck__ds_pods_by_node_release(&by_node);
    return r;
}
