/*
 * namespace_lifecycle.c - the NamespaceLifecycle admission plugin: nothing is created
 * in a namespace that does not exist or is being terminated, and the namespaces the
 * cluster needs are never deleted.
 *
 * Mirrors k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle/admission.go as
 * 1.32 has it: a create of a namespaced object in a missing namespace is 404
 * `namespaces "x" not found`; in a terminating one 403 `... is forbidden: unable to
 * create new content in namespace x because it is being terminated` with the
 * NamespaceTerminating cause; deleting default, kube-system or kube-public is 403
 * `... this namespace may not be deleted`. Namespaces are looked up in the namespace
 * cache (namespace_cache.c) first, then in the store, as the plugin's live lookup does.
 *
 * Threading: reads the store and the thread-safe namespace cache only.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

static const char *const immortal[] = {"default", "kube-system", "kube-public"};

/* 0 when namespace exists and is not terminating; 404 or 403 otherwise. */
static int check_namespace(struct ck__registry *reg, const struct ck__admission_attrs *a,
                           struct ck_err *reterr)
{
    const struct ck_kind *ns_kind = ck_kind_with_role(CK_KIND_ROLE_NAMESPACE);
    const char *namespace = a->namespace;
    bool terminating = false;
    uint64_t generation = 0;
    if (!ck__namespace_cache_lookup(reg->namespaces, namespace, &terminating, &generation)) {
        char key[CK__KEY_MAX];
        ck__object_key(ns_kind, "", namespace, key, sizeof(key));
        const struct ck_kv *kv = NULL;
        struct ck_err err = {0};
        int r = ck_store_get(reg->store, key, strlen(key), 0, &kv, NULL, &err);
        if (r == CK_ENOENT)
            return ck__err_not_found(reterr, ns_kind, namespace);
        if (r < 0)
            return ck__err_store(reterr, &err);
        json_t *ns = ck__decode_stored(kv);
        terminating =
            ns && json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp") != NULL;
        json_decref(ns);
        ck_kv_unref(kv);
        if (!ns)
            return ck_err_no_memory(reterr);
        ck__namespace_cache_fill(reg->namespaces, namespace, terminating, generation);
    }
    if (!terminating)
        return 0;
    int r = ck__admission_forbidden(
        a, reterr, "unable to create new content in namespace %s because it is being terminated",
        namespace);
    ck_err_add_cause(reterr, "NamespaceTerminating", "namespace is being terminated",
                     "metadata.namespace");
    return r;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    if (a->op == CK__ADMISSION_DELETE && ck__admission_is_role(a, CK_KIND_ROLE_NAMESPACE)) {
        for (size_t i = 0; i < sizeof(immortal) / sizeof(immortal[0]); i++)
            if (strcmp(a->name, immortal[i]) == 0)
                return ck__admission_forbidden(a, reterr, "this namespace may not be deleted");
        return 0;
    }
    if (a->op != CK__ADMISSION_CREATE || !a->kind->namespaced ||
        !ck_kind_with_role(CK_KIND_ROLE_NAMESPACE))
        return 0;
    return check_namespace(reg, a, reterr);
}

/* Kubernetes runs it as a mutating plugin, first of all, so that its 404 comes first. */
const struct ck__admission_plugin ck__admission_namespace_lifecycle = {.name = "NamespaceLifecycle",
                                                                       .admit = admit};
