/*
 * volumebinding.c - the VolumeBinding plugin of the default profile, the part ckube
 * has (kubernetes pkg/scheduler/framework/plugins/volumebinding: volume_binding.go,
 * binder.go).
 *
 * PreFilter: a pod whose persistentVolumeClaim volume names a claim that does not
 * exist, is being deleted, or is unbound while its class binds Immediately fits no
 * node (UnschedulableAndUnresolvable, with Kubernetes' words). The node affinity
 * (required node selector) of every volume a bound claim of the pod uses is kept for
 * Filter, which refuses the nodes it does not match ("node(s) had volume node
 * affinity conflict"). PreBind: each unbound claim whose class binds
 * WaitForFirstConsumer is annotated volume.kubernetes.io/selected-node with the chosen
 * node, which is what dynamic provisioning waits for (the persistentvolume-binder's
 * local-path provisioner here).
 *
 * Not here (docs/differences.md): Kubernetes also matches unbound claims against
 * existing volumes per node and binds them in PreBind, checks that provisioning is
 * possible on the node (allowedTopologies, CSIStorageCapacity), and waits in PreBind
 * until the claims are bound before binding the pod; here the node agent waits for the
 * claim to be bound before it starts the pod.
 *
 * Threading: called from the scheduling thread (PreFilter, Filter under the cache
 * lock) and binder threads (PreBind); listers are thread-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "../scheduling_helpers.h"
#include "ckube/internal/util.h"
#include "internal.h"

#define SELECTED_NODE "volume.kubernetes.io/selected-node"

static const char *claim_class(const json_t *claim)
{
    const char *a = json_string_value(
        json_object_get(json_object_get(json_object_get(claim, "metadata"), "annotations"),
                        "volume.beta.kubernetes.io/storage-class"));
    if (a)
        return a;
    const char *s =
        json_string_value(json_object_get(json_object_get(claim, "spec"), "storageClassName"));
    return s ? s : "";
}

static bool waits_for_consumer(const struct ck__sched_volumes *v, const json_t *claim)
{
    const json_t *class = NULL;
    const char *name = claim_class(claim);
    if (!*name || ck_lister_get(&v->classes, "", name, &class) < 0)
        return false;
    const char *mode = json_string_value(json_object_get(class, "volumeBindingMode"));
    bool wait = mode && strcmp(mode, "WaitForFirstConsumer") == 0;
    ck_cached_unref(class);
    return wait;
}

static const char *volume_name(const json_t *claim)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(claim, "spec"), "volumeName"));
    return s && *s ? s : NULL;
}

static char *unresolvable(size_t n_nodes, const char *why)
{
    struct ck__buf b = {0};
    ck__buf_printf(&b,
                   "0/%zu nodes are available: %s. preemption: 0/%zu nodes are available: %zu "
                   "Preemption is not helpful for scheduling.",
                   n_nodes, why, n_nodes, n_nodes);
    return ck__buf_take(&b);
}

int ck__sched_volumes_prefilter(const struct ck__sched_volumes *v, struct ck__sched_pod *p,
                                size_t n_nodes, char **ret_message)
{
    *ret_message = NULL;
    if (!v->on)
        return 0;
    const char *ns = ck__meta_str(p->pod, "namespace");
    size_t i;
    const json_t *vol;
    bool unbound_immediate = false;
    json_array_foreach(json_object_get(json_object_get(p->pod, "spec"), "volumes"), i, vol)
    {
        const char *name = json_string_value(
            json_object_get(json_object_get(vol, "persistentVolumeClaim"), "claimName"));
        if (!name)
            continue;
        const json_t *claim = NULL;
        char why[512];
        if (ck_lister_get(&v->claims, ns ? ns : "", name, &claim) < 0) {
            snprintf(why, sizeof(why), "persistentvolumeclaim \"%s\" not found", name);
            *ret_message = unresolvable(n_nodes, why);
            return *ret_message ? CK__SCHED_UNRESOLVABLE : CK_ENOMEM;
        }
        if (json_object_get(json_object_get(claim, "metadata"), "deletionTimestamp")) {
            ck_cached_unref(claim);
            snprintf(why, sizeof(why), "persistentvolumeclaim \"%s\" is being deleted", name);
            *ret_message = unresolvable(n_nodes, why);
            return *ret_message ? CK__SCHED_UNRESOLVABLE : CK_ENOMEM;
        }
        const char *bound = volume_name(claim);
        const json_t *pv = NULL;
        if (bound && ck_lister_get(&v->volumes, "", bound, &pv) == 0) {
            const json_t *req = json_object_get(
                json_object_get(json_object_get(pv, "spec"), "nodeAffinity"), "required");
            if (req) {
                if (!p->volume_affinity)
                    p->volume_affinity = json_array();
                if (!p->volume_affinity ||
                    json_array_append_new(p->volume_affinity, json_deep_copy(req)) < 0) {
                    ck_cached_unref(pv);
                    ck_cached_unref(claim);
                    return CK_ENOMEM;
                }
            }
            ck_cached_unref(pv);
        } else if (!bound && !waits_for_consumer(v, claim)) {
            unbound_immediate = true;
        }
        ck_cached_unref(claim);
    }
    if (unbound_immediate) {
        *ret_message = unresolvable(n_nodes, "pod has unbound immediate PersistentVolumeClaims");
        return *ret_message ? CK__SCHED_UNRESOLVABLE : CK_ENOMEM;
    }
    return 0;
}

enum ck__sched_code ck__sched_filter_volume_binding(const struct ck__sched_pod *p,
                                                    const struct ck__sched_node *n,
                                                    struct ck__sched_status *st)
{
    size_t i;
    const json_t *req;
    json_array_foreach(p->volume_affinity, i, req)
    {
        if (!ck__node_selector_terms_match(n->node, req)) {
            st->code = CK__SCHED_UNRESOLVABLE;
            if (st->n_reasons < 4)
                st->reasons[st->n_reasons++] = CK__SCHED_REASON_VOLUME_AFFINITY;
            return st->code;
        }
    }
    return CK__SCHED_SUCCESS;
}

int ck__sched_volumes_prebind(const struct ck__sched_volumes *v, const struct ck_ctl_client *client,
                              const json_t *pod, const char *node, struct ck_err *reterr)
{
    if (!v->on)
        return 0;
    const struct ck_resource *res = ck_controller_resource("", "v1", "persistentvolumeclaims");
    const char *ns = ck__meta_str(pod, "namespace");
    size_t i;
    const json_t *vol;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "volumes"), i, vol)
    {
        const char *name = json_string_value(
            json_object_get(json_object_get(vol, "persistentVolumeClaim"), "claimName"));
        const json_t *claim = NULL;
        if (!name || ck_lister_get(&v->claims, ns ? ns : "", name, &claim) < 0)
            continue;
        const json_t *annotations =
            json_object_get(json_object_get(claim, "metadata"), "annotations");
        const char *selected = json_string_value(json_object_get(annotations, SELECTED_NODE));
        int r = 0;
        if (!volume_name(claim) && waits_for_consumer(v, claim) &&
            (!selected || strcmp(selected, node) != 0)) {
            json_t *patch =
                json_pack("{s:{s:{s:s}}}", "metadata", "annotations", SELECTED_NODE, node);
            r = patch ? ck_ctl_patch(client, res, ns ? ns : "", name, NULL,
                                     "application/merge-patch+json", patch, NULL, reterr)
                      : ck_err_set(reterr, CK_ENOMEM, "out of memory");
            json_decref(patch);
        }
        ck_cached_unref(claim);
        if (r < 0)
            return r;
    }
    return 0;
}
