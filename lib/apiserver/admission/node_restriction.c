/*
 * node_restriction.c - the NodeRestriction admission plugin: a node (system:node:NAME
 * in system:nodes) writes only what is its own.
 *
 * Mirrors plugin/pkg/admission/noderestriction/admission.go of Kubernetes 1.32 for the
 * kinds ckube's agent writes; what a node may do at all is RBAC's system:node role and
 * the node authorizer (authn_authz.c), this narrows it to the node's own objects:
 *
 * - nodes: only its own Node object (`node "a" is not allowed to modify node "b"`);
 * - leases: only its own, in kube-node-lease;
 * - pods: creates only of mirror pods bound to it; status updates and deletes (an
 *   eviction deletes) only of pods bound to it; no other update;
 * - serviceaccounts/token: a token only bound to a pod bound to it, for that pod's
 *   account, with the pod's uid as stored.
 *
 * Requests of any other user, and the server's own writes, pass untouched. ckube turns
 * the plugin on by default, as k3s does (kube-apiserver leaves it off).
 *
 * Threading: reads the store only.
 */
#include <string.h>

#include "../internal.h"

#define NODE_LEASE_NS         "kube-node-lease"
#define MIRROR_POD_ANNOTATION "kubernetes.io/config.mirror"

static const char *str(const json_t *obj, const char *field)
{
    return json_string_value(json_object_get(obj, field));
}

/* Whether the pod is bound to node. */
static bool bound_to(const json_t *pod, const char *node)
{
    const char *bound = str(json_object_get(pod, "spec"), "nodeName");
    return bound && strcmp(bound, node) == 0;
}

static int admit_pod(const struct ck__admission_attrs *a, const char *node, struct ck_err *reterr)
{
    const char *sub = a->subresource ? a->subresource : "";
    if (a->op == CK__ADMISSION_CREATE && !*sub) {
        const json_t *ann = json_object_get(json_object_get(a->obj, "metadata"), "annotations");
        if (!json_object_get(ann, MIRROR_POD_ANNOTATION))
            return ck__admission_forbidden(
                a, reterr,
                "pod does not have \"%s\" annotation, node \"%s\" can only create mirror pods",
                MIRROR_POD_ANNOTATION, node);
        if (!bound_to(a->obj, node))
            return ck__admission_forbidden(
                a, reterr, "node \"%s\" can only create pods with spec.nodeName set to itself",
                node);
        return 0;
    }
    if (a->op == CK__ADMISSION_DELETE)
        return bound_to(a->old, node)
                   ? 0
                   : ck__admission_forbidden(
                         a, reterr,
                         "node \"%s\" can only delete pods with spec.nodeName set to itself", node);
    if (strcmp(sub, "status") != 0)
        return ck__admission_forbidden(
            a, reterr,
            "unexpected operation %s, node \"%s\" can only create and delete mirror pods",
            a->op == CK__ADMISSION_CREATE ? "CREATE" : "UPDATE", node);
    return bound_to(a->old, node)
               ? 0
               : ck__admission_forbidden(a, reterr,
                                         "node \"%s\" can only update pod status for pods with "
                                         "spec.nodeName set to itself",
                                         node);
}

/* A TokenRequest (a->obj) for the service account a->name: bound to a pod of the node. */
static int admit_token(struct ck__registry *reg, const struct ck__admission_attrs *a,
                       const char *node, struct ck_err *reterr)
{
    const json_t *ref = json_object_get(json_object_get(a->obj, "spec"), "boundObjectRef");
    const char *kind = str(ref, "kind"), *pod_name = str(ref, "name"), *uid = str(ref, "uid");
    if (!kind || strcmp(kind, "Pod") != 0 || !pod_name)
        return ck__admission_forbidden(a, reterr, "node requested token not bound to a pod");
    json_t *pod = NULL;
    int r = ck__admission_get(reg, ck_kind_with_role(CK_KIND_ROLE_POD), a->namespace, pod_name,
                              &pod, reterr);
    if (r == CK_ENOENT)
        return ck__admission_forbidden(
            a, reterr, "node requested token bound to a pod that was not found: %s/%s",
            a->namespace, pod_name);
    if (r < 0)
        return r;
    const char *pod_uid = str(json_object_get(pod, "metadata"), "uid");
    const char *account = str(json_object_get(pod, "spec"), "serviceAccountName");
    if (!bound_to(pod, node))
        r = ck__admission_forbidden(
            a, reterr, "node requested token bound to a pod scheduled on a different node");
    else if (uid && *uid && (!pod_uid || strcmp(uid, pod_uid) != 0))
        r = ck__admission_forbidden(a, reterr,
                                    "the UID in the bound object reference (%s) does not match "
                                    "the UID in record. The object might have been deleted and "
                                    "then recreated",
                                    uid);
    else if (!account || strcmp(account, a->name) != 0)
        r = ck__admission_forbidden(
            a, reterr, "no relationship found between node '%s' and this object", node);
    json_decref(pod);
    return r;
}

static int node_restriction_admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                                  struct ck_err *reterr)
{
    const char *node = ck__auth_node_name(a->user);
    if (!node)
        return 0;
    const char *sub = a->subresource ? a->subresource : "";
    switch (a->kind->role) {
    case CK_KIND_ROLE_NODE:
        return strcmp(a->name, node) == 0
                   ? 0
                   : ck__admission_forbidden(a, reterr,
                                             "node \"%s\" is not allowed to modify node \"%s\"",
                                             node, ck__admission_name(a));
    case CK_KIND_ROLE_LEASE:
        if (strcmp(a->namespace, NODE_LEASE_NS) != 0)
            return ck__admission_forbidden(
                a, reterr, "can only access leases in the \"%s\" system namespace", NODE_LEASE_NS);
        return strcmp(a->name, node) == 0
                   ? 0
                   : ck__admission_forbidden(a, reterr, "%s",
                                             "can only access node lease with the same name as "
                                             "the requesting node");
    case CK_KIND_ROLE_POD:
        return admit_pod(a, node, reterr);
    case CK_KIND_ROLE_SERVICE_ACCOUNT:
        return a->op == CK__ADMISSION_CREATE && strcmp(sub, "token") == 0
                   ? admit_token(reg, a, node, reterr)
                   : 0;
    default:
        return 0;
    }
}

const struct ck__admission_plugin ck__admission_node_restriction = {
    .name = "NodeRestriction", .admit = node_restriction_admit};
