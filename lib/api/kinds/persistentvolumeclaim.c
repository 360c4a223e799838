/*
 * persistentvolumeclaim.c - the PersistentVolumeClaim kind (v1): a request
 * for storage, which the persistentvolume-binder controller binds to a
 * PersistentVolume (lib/controllers/volume/persistentvolume.c).
 *
 * Mirrors Kubernetes' pkg/registry/core/persistentvolumeclaim/strategy.go:
 * the server owns status, which a create starts at phase Pending;
 * ValidatePersistentVolumeClaimSpec's two required fields. kubectl's columns.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_kinds.c (descriptor) and tests/e2e/test_workloads.sh.
 */
#include <string.h>

#include "../internal.h"

enum {
    COL_NAME,
    COL_STATUS,
    COL_VOLUME,
    COL_CAPACITY,
    COL_ACCESS_MODES,
    COL_STORAGE_CLASS,
    COL_VOLUME_ATTRIBUTES_CLASS,
    COL_AGE,
    COL_VOLUME_MODE,
};

static int prepare_for_create(json_t *obj)
{
    return json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending")) < 0
               ? CK_ENOMEM
               : 0;
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    if (json_array_size(json_object_get(spec, "accessModes")) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.accessModes", NULL, false,
                            "at least 1 access mode is required");
    if (!ck__json_path(spec, "resources.requests.storage"))
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.resources[storage]", NULL, false, NULL);
}

json_t *ck__access_modes_cell(const json_t *modes)
{
    char buf[64] = "";
    size_t i;
    const json_t *mode;
    json_array_foreach(modes, i, mode)
    {
        const char *m = json_string_value(mode);
        const char *abbr = !m                                   ? NULL
                           : strcmp(m, "ReadWriteOnce") == 0    ? "RWO"
                           : strcmp(m, "ReadOnlyMany") == 0     ? "ROX"
                           : strcmp(m, "ReadWriteMany") == 0    ? "RWX"
                           : strcmp(m, "ReadWriteOncePod") == 0 ? "RWOP"
                                                                : NULL;
        if (abbr && strlen(buf) + strlen(abbr) + 2 < sizeof(buf)) {
            if (buf[0])
                strcat(buf, ",");
            strcat(buf, abbr);
        }
    }
    return json_string(buf);
}

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    /* the printer's phase: Terminating once the deletion started */
    const char *phase = ck__str_at(obj, "status.phase");
    cells[COL_STATUS] = json_string(
        ck__json_path(obj, "metadata.deletionTimestamp") ? "Terminating" : (phase ? phase : ""));
    const char *capacity = json_string_value(ck__json_path(obj, "status.capacity.storage"));
    const char *storage_class = json_string_value(ck__json_path(obj, "spec.storageClassName"));
    const char *attributes_class =
        json_string_value(ck__json_path(obj, "spec.volumeAttributesClassName"));
    cells[COL_CAPACITY] = json_string(capacity ? capacity : "");
    cells[COL_ACCESS_MODES] = ck__access_modes_cell(ck__json_path(obj, "status.accessModes"));
    cells[COL_STORAGE_CLASS] = json_string(storage_class ? storage_class : "<unset>");
    cells[COL_VOLUME_ATTRIBUTES_CLASS] =
        json_string(attributes_class ? attributes_class : "<unset>");
}

static const char *const short_names[] = {"pvc", NULL};
static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_STATUS] = CK__COMPUTED_COLUMN(
        "Status", "string", "Phase represents the current phase of PersistentVolumeClaim.", 0),
    [COL_VOLUME] = {"Volume", "string", "",
                    "The binding reference to the PersistentVolume backing this claim.", 0,
                    ".spec.volumeName", CK_CELL_ABSENT_EMPTY, false},
    [COL_CAPACITY] = CK__COMPUTED_COLUMN("Capacity", "string",
                                         "The actual resources of the underlying volume.", 0),
    [COL_ACCESS_MODES] = CK__COMPUTED_COLUMN(
        "Access Modes", "string",
        "AccessModes contains the desired access modes the volume should have.", 0),
    [COL_STORAGE_CLASS] =
        CK__COMPUTED_COLUMN("StorageClass", "string", "StorageClass of the PVC", 0),
    [COL_VOLUME_ATTRIBUTES_CLASS] = CK__COMPUTED_COLUMN("VolumeAttributesClass", "string",
                                                        "VolumeAttributesClass of the PVC", 0),
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_VOLUME_MODE] = {"VolumeMode", "string", "", "The volume mode of the claim", 1,
                         ".spec.volumeMode", CK_CELL_ABSENT_EMPTY, false},
};

const struct ck_kind ck__kind_persistentvolumeclaim = {
    .group = "",
    .version = "v1",
    .kind = "PersistentVolumeClaim",
    .list_kind = "PersistentVolumeClaimList",
    .resource = "persistentvolumeclaims",
    .singular = "persistentvolumeclaim",
    .short_names = short_names,
    .namespaced = true,
    .schema = "io.k8s.api.core.v1.PersistentVolumeClaim",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .validate = validate,
};
