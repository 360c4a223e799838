/*
 * storage_object_in_use_protection.c - the StorageObjectInUseProtection admission
 * plugin: every new PersistentVolume and PersistentVolumeClaim carries the finalizer
 * that keeps it while it is in use.
 *
 * Mirrors plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go of
 * Kubernetes 1.32: on create of a persistentvolume (not a subresource) the finalizer
 * kubernetes.io/pv-protection, of a persistentvolumeclaim kubernetes.io/pvc-protection,
 * is appended unless present. The pv-protection and pvc-protection controllers
 * (lib/controllers/volume/protection.c) remove it once nothing uses the object.
 *
 * Threading: pure; touches only the request's object.
 */
#include <string.h>

#include "../internal.h"

static int add_finalizer(json_t *obj, const char *finalizer, struct ck_err *reterr)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta))
        return 0; /* validation answers an object without metadata */
    json_t *list = json_object_get(meta, "finalizers");
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f)
    {
        if (json_string_value(f) && strcmp(json_string_value(f), finalizer) == 0)
            return 0;
    }
    if (!json_is_array(list)) {
        list = json_array();
        if (!list || json_object_set_new(meta, "finalizers", list) < 0)
            return ck_err_no_memory(reterr);
    }
    return json_array_append_new(list, json_string(finalizer)) < 0 ? ck_err_no_memory(reterr) : 0;
}

static int admit(struct ck__registry *reg, const struct ck__admission_attrs *a,
                 struct ck_err *reterr)
{
    (void)reg;
    if (a->op != CK__ADMISSION_CREATE)
        return 0;
    if (ck__admission_is(a, "", "persistentvolumes"))
        return add_finalizer(a->obj, "kubernetes.io/pv-protection", reterr);
    if (ck__admission_is(a, "", "persistentvolumeclaims"))
        return add_finalizer(a->obj, "kubernetes.io/pvc-protection", reterr);
    return 0;
}

const struct ck__admission_plugin ck__admission_storage_object_in_use_protection = {
    .name = "StorageObjectInUseProtection", .admit = admit};
