/*
 * default_storage_class.c - the DefaultStorageClass admission plugin: a claim created
 * without a class gets the cluster's default StorageClass.
 *
 * Mirrors plugin/pkg/admission/storage/storageclass/setdefault/admission.go of
 * Kubernetes 1.32 (and GetDefaultClass of pkg/volume/util): on create of a
 * PersistentVolumeClaim (not its status) that asks for no class — spec.storageClassName
 * absent or null, and no volume.beta.kubernetes.io/storage-class annotation; an empty
 * name asks for "no class" and is kept — the StorageClass annotated
 * storageclass.kubernetes.io/is-default-class (or its beta form) "true" becomes its
 * class; none leaves it unset; of several, the newest (creationTimestamp, then the
 * smallest name).
 *
 * Threading: reads the store only.
 */
#include <string.h>

#include "../internal.h"

#define BETA_CLASS_ANNOTATION "volume.beta.kubernetes.io/storage-class"

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    if (a->op != CK__ADMISSION_CREATE || !ck__admission_is(a, "", "persistentvolumeclaims"))
        return 0;
    const struct ck_kind *class_kind = ck_kind_lookup("storage.k8s.io", "v1", "storageclasses");
    json_t *spec = json_object_get(a->obj, "spec");
    const json_t *given = json_object_get(spec, "storageClassName");
    const json_t *annotations = json_object_get(json_object_get(a->obj, "metadata"), "annotations");
    if (!class_kind || !json_is_object(spec) || (given && !json_is_null(given)) ||
        json_object_get(annotations, BETA_CLASS_ANNOTATION))
        return 0; /* the claim asked for a class (validation answers a claim without spec) */
    static const char *const marks[] = {"storageclass.kubernetes.io/is-default-class",
                                        "storageclass.beta.kubernetes.io/is-default-class", NULL};
    char name[254];
    int r = ck__admission_newest_default(reg, class_kind, marks, name, sizeof(name), reterr);
    if (r < 0 || !*name)
        return r;
    return json_object_set_new(spec, "storageClassName", json_string(name)) < 0
               ? ck_err_no_memory(reterr)
               : 0;
}

const struct ck__admission_plugin ck__admission_default_storage_class = {
    .name = "DefaultStorageClass", .admit = admit};
