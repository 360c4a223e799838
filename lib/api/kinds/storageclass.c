/*
 * storageclass.c - the StorageClass kind (storage.k8s.io/v1): how volumes
 * of a class are provisioned.
 *
 * Mirrors Kubernetes' pkg/registry/storage/storageclass/strategy.go,
 * pkg/apis/storage/v1/defaults.go and ValidateStorageClass(Update) in
 * pkg/apis/storage/validation: cluster-scoped, no generation, no status;
 * reclaimPolicy defaults to Delete and volumeBindingMode to Immediate (the
 * schema); provisioner is required and a qualified name (case aside);
 * parameter keys are not empty, at most 512 of them and 256 KiB in all;
 * reclaimPolicy is Delete or Retain, volumeBindingMode Immediate or
 * WaitForFirstConsumer. provisioner, parameters and reclaimPolicy never
 * change ("updates to ... are forbidden."), nor volumeBindingMode. The
 * printer shows NAME (with " (default)" when the is-default-class annotation
 * is "true", as kube-apiserver's table writes it), PROVISIONER, RECLAIMPOLICY,
 * VOLUMEBINDINGMODE, ALLOWVOLUMEEXPANSION and AGE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_storage.c and tests/e2e/test_kinds.sh.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"

#define MAX_PARAMETERS      512
#define MAX_PARAMETERS_SIZE (256 * 1024)

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    const char *provisioner = ck__str_at(obj, "provisioner");
    if (!provisioner || !*provisioner) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "provisioner", NULL, false, NULL);
    } else {
        char lower[512];
        size_t n = strlen(provisioner);
        if (n >= sizeof(lower))
            n = sizeof(lower) - 1;
        for (size_t i = 0; i < n; i++)
            lower[i] = (char)(provisioner[i] >= 'A' && provisioner[i] <= 'Z' ? provisioner[i] + 32
                                                                             : provisioner[i]);
        lower[n] = 0;
        struct ck_field_errors local = {0};
        ck_validate_qualified_name(lower, "provisioner", &local);
        for (size_t i = 0; i < local.len; i++)
            ck_field_errors_add(errs, CK_FIELD_INVALID, "provisioner", provisioner, true, "%s",
                                local.items[i].detail ? local.items[i].detail : "");
        ck_field_errors_release(&local);
    }
    const json_t *params = json_object_get(obj, "parameters");
    if (json_object_size(params) > MAX_PARAMETERS) {
        ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "parameters", NULL, false,
                            "must have at most %d bytes", MAX_PARAMETERS);
    } else {
        const char *k;
        const json_t *v;
        size_t total = 0;
        json_object_foreach((json_t *)params, k, v)
        {
            if (!*k)
                ck_field_errors_add(errs, CK_FIELD_INVALID, "parameters", "", true,
                                    "field can not be empty.");
            total += strlen(k) + strlen(json_string_value(v) ? json_string_value(v) : "");
        }
        if (total > MAX_PARAMETERS_SIZE)
            ck_field_errors_add(errs, CK_FIELD_TOO_LONG, "parameters", NULL, false,
                                "must have at most %d bytes", MAX_PARAMETERS_SIZE);
    }
    const char *reclaim = ck__str_at(obj, "reclaimPolicy");
    if (reclaim && *reclaim && strcmp(reclaim, "Delete") != 0 && strcmp(reclaim, "Retain") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "reclaimPolicy", reclaim, true,
                            "supported values: \"Delete\", \"Retain\"");
    const char *binding = ck__str_at(obj, "volumeBindingMode");
    if (!binding)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "volumeBindingMode", NULL, false, NULL);
    else if (strcmp(binding, "Immediate") != 0 && strcmp(binding, "WaitForFirstConsumer") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "volumeBindingMode", binding, true,
                            "supported values: \"Immediate\", \"WaitForFirstConsumer\"");
    if (!old)
        return;
    const json_t *old_params = json_object_get(old, "parameters");
    bool params_same = json_object_size(params) == json_object_size(old_params) &&
                       (json_object_size(params) == 0 || json_equal(params, old_params));
    if (!params_same)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "parameters", NULL, false,
                            "updates to parameters are forbidden.");
    const char *was = ck__str_at(old, "provisioner");
    if (strcmp(provisioner ? provisioner : "", was ? was : "") != 0)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "provisioner", NULL, false,
                            "updates to provisioner are forbidden.");
    was = ck__str_at(old, "reclaimPolicy");
    if (strcmp(reclaim ? reclaim : "", was ? was : "") != 0)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "reclaimPolicy", NULL, false,
                            "updates to reclaimPolicy are forbidden.");
    was = ck__str_at(old, "volumeBindingMode");
    if (strcmp(binding ? binding : "", was ? was : "") != 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "volumeBindingMode", binding ? binding : "",
                            true, "field is immutable");
}

/* storageutil.IsDefaultAnnotation: the GA or the beta annotation says "true". */
static bool is_default(const json_t *obj)
{
    const json_t *a = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *ga =
        json_string_value(json_object_get(a, "storageclass.kubernetes.io/is-default-class"));
    const char *beta =
        json_string_value(json_object_get(a, "storageclass.beta.kubernetes.io/is-default-class"));
    return (ga && strcmp(ga, "true") == 0) || (beta && strcmp(beta, "true") == 0);
}

enum {
    COL_NAME,
    COL_PROVISIONER,
    COL_RECLAIM_POLICY,
    COL_VOLUME_BINDING_MODE,
    COL_ALLOW_VOLUME_EXPANSION,
    COL_AGE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    char name[320];
    snprintf(name, sizeof(name), "%s%s", ck__or_none(ck__str_at(obj, "metadata.name")),
             is_default(obj) ? " (default)" : "");
    cells[COL_NAME] = json_string(name);
    const char *reclaim = ck__str_at(obj, "reclaimPolicy");
    const char *binding = ck__str_at(obj, "volumeBindingMode");
    cells[COL_RECLAIM_POLICY] = json_string(reclaim ? reclaim : "Delete");
    cells[COL_VOLUME_BINDING_MODE] = json_string(binding ? binding : "Immediate");
    cells[COL_ALLOW_VOLUME_EXPANSION] =
        json_boolean(json_is_true(json_object_get(obj, "allowVolumeExpansion")));
}

static const char *const short_names[] = {"sc", NULL};

static const struct ck_table_column columns[] = {
    [COL_NAME] = {"Name", "string", "name", CK__NAME_DOC, 0, NULL, CK_CELL_ABSENT_NONE, false},
    [COL_PROVISIONER] = {"Provisioner", "string", "",
                         "Provisioner indicates the type of the provisioner.", 0, ".provisioner",
                         CK_CELL_ABSENT_EMPTY, false},
    [COL_RECLAIM_POLICY] = CK__COMPUTED_COLUMN(
        "ReclaimPolicy", "string",
        "Dynamically provisioned PersistentVolumes of this storage class are created with this "
        "reclaimPolicy. Defaults to Delete.",
        0),
    [COL_VOLUME_BINDING_MODE] = CK__COMPUTED_COLUMN(
        "VolumeBindingMode", "string",
        "VolumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound. "
        "When unset, VolumeBindingImmediate is used.",
        0),
    [COL_ALLOW_VOLUME_EXPANSION] =
        CK__COMPUTED_COLUMN("AllowVolumeExpansion", "string",
                            "AllowVolumeExpansion shows whether the storage class "
                            "allow volume expand",
                            0),
    [COL_AGE] = CK__AGE_COLUMN,
};

const struct ck_kind ck__kind_storageclass = {
    .group = "storage.k8s.io",
    .version = "v1",
    .kind = "StorageClass",
    .list_kind = "StorageClassList",
    .resource = "storageclasses",
    .singular = "storageclass",
    .short_names = short_names,
    .namespaced = false,
    .admission_lists_all = true,
    .schema = "io.k8s.api.storage.v1.StorageClass",
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .validate = validate,
};
