/*
 * bootstrap.c - the RBAC objects a new cluster starts with.
 *
 * The data is bootstrap-policy.json beside this file, embedded at build
 * time: the ClusterRoles and ClusterRoleBindings of Kubernetes 1.32's
 * bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy, whose
 * testdata/cluster-roles.yaml and cluster-role-bindings.yaml list them)
 * restricted to what ckube serves or is about to serve, plus the identities
 * of ckube's own components. Where ckube differs it is on purpose:
 *
 * - the per-controller roles (system:controller:replicaset-controller, ...)
 *   are Kubernetes', but ckube's controller manager runs them all as one
 *   user, system:kube-controller-manager, so their bindings name that user
 *   instead of one ServiceAccount per controller in kube-system;
 * - system:node is bound to the group system:nodes (Kubernetes 1.32 leaves
 *   the binding without subjects and lets the Node authorizer decide); the
 *   API server narrows a node's writes to its own objects with Kubernetes'
 *   NodeRestriction admission plugin (lib/apiserver/admission/);
 * - system:node-proxier is bound to the user system:kube-proxy, as in
 *   Kubernetes;
 * - system:kubelet-api-admin is bound by nothing, as in Kubernetes (an
 *   installer binds the API server's kubelet client to it);
 * - roles and rules of what ckube does not serve (certificates, volume
 *   attachments, the cloud controllers, volume expansion and attach/detach)
 *   are left out; the persistent-volume-binder, pvc-protection-controller,
 *   pv-protection-controller and system:volume-scheduler roles are in;
 * - system:aggregated-metrics-reader is metrics-server's (its manifest's
 *   ClusterRole, aggregated into view, edit and admin): the API server serves
 *   metrics.k8s.io itself.
 *
 * The JSON holds only names, labels, aggregation rules, rules and subjects;
 * ck_rbac_bootstrap() dresses them as API objects with the label
 * kubernetes.io/bootstrapping=rbac-defaults and the annotation
 * rbac.authorization.kubernetes.io/autoupdate=true, as Kubernetes does.
 *
 * Tests: tests/auth/test_rbac.c (test_bootstrap_policy).
 * Threading: pure; every call returns new objects.
 */
#include <string.h>

#include <ckube/auth.h>

extern const char *const ck__auth_bootstrap_documents[];
extern const size_t ck__auth_bootstrap_documents_count;

#define RBAC_API "rbac.authorization.k8s.io/v1"

static json_t *metadata(const json_t *entry)
{
    json_t *labels = json_pack("{s:s}", "kubernetes.io/bootstrapping", "rbac-defaults");
    json_t *extra = json_object_get(entry, "labels");
    if (labels && extra)
        json_object_update(labels, extra);
    return json_pack("{s:O,s:o,s:{s:s}}", "name", json_object_get(entry, "name"), "labels", labels,
                     "annotations", "rbac.authorization.kubernetes.io/autoupdate", "true");
}

static json_t *cluster_role(const json_t *entry)
{
    json_t *o = json_pack("{s:s,s:s,s:o}", "apiVersion", RBAC_API, "kind", "ClusterRole",
                          "metadata", metadata(entry));
    if (!o)
        return NULL;
    const json_t *agg = json_object_get(entry, "aggregationRule");
    int rc = agg ? json_object_set(o, "aggregationRule", (json_t *)agg)
                 : json_object_set(o, "rules", json_object_get(entry, "rules"));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *cluster_role_binding(const json_t *entry)
{
    json_t *subjects = json_array();
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(entry, "subjects"), i, s) json_array_append_new(
        subjects, json_pack("{s:s,s:O,s:O}", "apiGroup", "rbac.authorization.k8s.io", "kind",
                            json_object_get(s, "kind"), "name", json_object_get(s, "name")));
    return json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:O},s:o}", "apiVersion", RBAC_API, "kind",
                     "ClusterRoleBinding", "metadata", metadata(entry), "roleRef", "apiGroup",
                     "rbac.authorization.k8s.io", "kind", "ClusterRole", "name",
                     json_object_get(entry, "roleRef"), "subjects", subjects);
}

int ck_rbac_bootstrap(json_t **ret_cluster_roles, json_t **ret_cluster_role_bindings,
                      struct ck_err *reterr)
{
    json_t *doc = json_loads(ck__auth_bootstrap_documents[0], 0, NULL);
    json_t *roles = json_array(), *bindings = json_array();
    if (!doc || !roles || !bindings)
        goto nomem;
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(doc, "clusterRoles"), i,
                       e) if (json_array_append_new(roles, cluster_role(e))) goto nomem;
    json_array_foreach(json_object_get(doc, "clusterRoleBindings"), i,
                       e) if (json_array_append_new(bindings, cluster_role_binding(e))) goto nomem;
    json_decref(doc);
    *ret_cluster_roles = roles;
    *ret_cluster_role_bindings = bindings;
    return 0;
nomem:
    json_decref(doc);
    json_decref(roles);
    json_decref(bindings);
    return ck_err_set(reterr, CK_ENOMEM, "out of memory building the bootstrap policy");
}
