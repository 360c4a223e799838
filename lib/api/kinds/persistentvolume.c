/*
 * persistentvolume.c - the PersistentVolume kind (v1): a piece of storage in
 * the cluster, which a claim binds.
 *
 * Mirrors Kubernetes' pkg/registry/core/persistentvolume/strategy.go and
 * ValidatePersistentVolumeSpec in pkg/apis/core/validation: cluster-scoped,
 * status through its subresource; persistentVolumeReclaimPolicy defaults to
 * Retain and volumeMode to Filesystem (the schema). A volume needs a
 * capacity of storage only, greater than zero, at least one access mode of
 * ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod (the last
 * alone), and exactly one volume source; a local volume needs node affinity.
 *
 * A create starts Pending, as Kubernetes' strategy has it; the
 * persistentvolume-binder controller makes it Available (or Bound) at once.
 * The printer (STATUS Terminating once the deletion started) shows NAME, CAPACITY, ACCESS
 * MODES, RECLAIM POLICY, STATUS, CLAIM, STORAGECLASS, VOLUMEATTRIBUTESCLASS,
 * REASON, AGE and, wide, VOLUMEMODE.
 *
 * Threading: the descriptor is static and immutable; the hooks are pure.
 *
 * Tested by tests/api/test_storage.c and tests/e2e/test_kinds.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"

/* The volume sources of a PersistentVolumeSource, in Kubernetes' order of checking. */
static const char *const sources[] = {
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cinder",
    "cephfs",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
};

static int prepare_for_create(json_t *obj)
{
    json_t *status = json_pack("{s:s}", "phase", "Pending");
    const json_t *created = ck__json_path(obj, "metadata.creationTimestamp");
    if (status && json_is_string(created))
        json_object_set(status, "lastPhaseTransitionTime", (json_t *)created);
    return !status || json_object_set_new(obj, "status", status) < 0 ? CK_ENOMEM : 0;
}

static void validate_sources(const json_t *spec, struct ck_field_errors *errs)
{
    int n = 0;
    char f[64];
    for (size_t i = 0; i < CK__COUNT(sources); i++) {
        const json_t *s = json_object_get(spec, sources[i]);
        if (!s)
            continue;
        snprintf(f, sizeof(f), "spec.%s", sources[i]);
        if (n++ > 0) {
            ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, f, NULL, false,
                                "may not specify more than 1 volume type");
            continue;
        }
        if (strcmp(sources[i], "hostPath") == 0 || strcmp(sources[i], "local") == 0 ||
            strcmp(sources[i], "nfs") == 0) {
            const char *path = ck__str_at(s, "path");
            snprintf(f, sizeof(f), "spec.%s.path", sources[i]);
            if (!path || !*path)
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, f, NULL, false, NULL);
        }
        if (strcmp(sources[i], "nfs") == 0 &&
            !(ck__str_at(s, "server") && *ck__str_at(s, "server")))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.nfs.server", NULL, false, NULL);
        if (strcmp(sources[i], "csi") == 0) {
            if (!(ck__str_at(s, "driver") && *ck__str_at(s, "driver")))
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.csi.driver", NULL, false, NULL);
            if (!(ck__str_at(s, "volumeHandle") && *ck__str_at(s, "volumeHandle")))
                ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.csi.volumeHandle", NULL, false,
                                    NULL);
        }
        if (strcmp(sources[i], "local") == 0 && !json_object_get(spec, "nodeAffinity"))
            ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.nodeAffinity", NULL, false,
                                "Local volume requires node affinity");
    }
    if (n == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec", NULL, false,
                            "must specify a volume type");
}

static void validate(const json_t *obj, const json_t *old, struct ck_field_errors *errs)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *modes = json_object_get(spec, "accessModes");
    size_t i;
    const json_t *m;
    bool once_pod = false;
    if (json_array_size(modes) == 0)
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.accessModes", NULL, false, NULL);
    json_array_foreach(modes, i, m)
    {
        const char *s = json_string_value(m);
        if (s && strcmp(s, "ReadWriteOncePod") == 0)
            once_pod = true;
        else if (!s || (strcmp(s, "ReadWriteOnce") != 0 && strcmp(s, "ReadOnlyMany") != 0 &&
                        strcmp(s, "ReadWriteMany") != 0))
            ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.accessModes", s ? s : "", true,
                                "supported values: \"ReadOnlyMany\", \"ReadWriteMany\", "
                                "\"ReadWriteOnce\", \"ReadWriteOncePod\"");
    }
    if (once_pod && json_array_size(modes) > 1)
        ck_field_errors_add(errs, CK_FIELD_FORBIDDEN, "spec.accessModes", NULL, false,
                            "may not use ReadWriteOncePod with other access modes");

    const json_t *capacity = json_object_get(spec, "capacity");
    const json_t *storage = json_object_get(capacity, "storage");
    if (json_object_size(capacity) == 0) {
        ck_field_errors_add(errs, CK_FIELD_REQUIRED, "spec.capacity", NULL, false, NULL);
    } else if (!storage || json_object_size(capacity) > 1) {
        char *text = json_dumps(capacity, JSON_COMPACT | JSON_SORT_KEYS);
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.capacity", text ? text : "", false,
                            "supported values: \"storage\"");
        free(text);
    }
    int64_t milli = 0;
    if (json_is_string(storage) && ck_quantity_milli(json_string_value(storage), &milli) == 0 &&
        milli <= 0)
        ck_field_errors_add(errs, CK_FIELD_INVALID, "spec.capacity[storage]",
                            json_string_value(storage), true, "must be greater than zero");

    const char *reclaim = ck__str_at(spec, "persistentVolumeReclaimPolicy");
    if (reclaim && strcmp(reclaim, "Delete") != 0 && strcmp(reclaim, "Recycle") != 0 &&
        strcmp(reclaim, "Retain") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.persistentVolumeReclaimPolicy",
                            reclaim, true, "supported values: \"Delete\", \"Recycle\", \"Retain\"");
    const char *mode = ck__str_at(spec, "volumeMode");
    if (mode && strcmp(mode, "Block") != 0 && strcmp(mode, "Filesystem") != 0)
        ck_field_errors_add(errs, CK_FIELD_NOT_SUPPORTED, "spec.volumeMode", mode, true,
                            "supported values: \"Block\", \"Filesystem\"");
    const char *cls = ck__str_at(spec, "storageClassName");
    if (cls && *cls)
        ck_validate_dns1123_subdomain(cls, "spec.storageClassName", errs);
    validate_sources(spec, errs);
}

enum {
    COL_NAME,
    COL_CAPACITY,
    COL_ACCESS_MODES,
    COL_RECLAIM_POLICY,
    COL_STATUS,
    COL_CLAIM,
    COL_STORAGE_CLASS,
    COL_VOLUME_ATTRIBUTES_CLASS,
    COL_REASON,
    COL_AGE,
    COL_VOLUME_MODE,
};

static void cells(const json_t *obj, long long now, json_t **cells)
{
    (void)now;
    /* the printer's phase: Terminating once the deletion started */
    const char *phase = ck__str_at(obj, "status.phase");
    cells[COL_STATUS] = json_string(
        ck__json_path(obj, "metadata.deletionTimestamp") ? "Terminating" : (phase ? phase : ""));
    const char *capacity = ck__str_at(obj, "spec.capacity.storage");
    const json_t *claim = ck__json_path(obj, "spec.claimRef");
    const char *cls = ck__str_at(obj, "spec.storageClassName");
    const char *vac = ck__str_at(obj, "spec.volumeAttributesClassName");
    const char *mode = ck__str_at(obj, "spec.volumeMode");
    char buf[512] = "";
    if (claim)
        snprintf(buf, sizeof(buf), "%s/%s",
                 ck__str_at(claim, "namespace") ? ck__str_at(claim, "namespace") : "",
                 ck__str_at(claim, "name") ? ck__str_at(claim, "name") : "");
    if (!cls || !*cls) {
        const json_t *a = ck__json_path(obj, "metadata.annotations");
        cls = json_string_value(json_object_get(a, "volume.beta.kubernetes.io/storage-class"));
    }
    cells[COL_CAPACITY] = json_string(capacity ? capacity : "0");
    cells[COL_ACCESS_MODES] = ck__access_modes_cell(ck__json_path(obj, "spec.accessModes"));
    cells[COL_CLAIM] = json_string(buf);
    cells[COL_STORAGE_CLASS] = json_string(cls ? cls : "");
    cells[COL_VOLUME_ATTRIBUTES_CLASS] = json_string(vac ? vac : "<unset>");
    cells[COL_VOLUME_MODE] = json_string(mode ? mode : "<unset>");
}

static const char *const short_names[] = {"pv", NULL};
static const struct ck_table_column columns[] = {
    [COL_NAME] = CK__NAME_COLUMN(0),
    [COL_CAPACITY] = CK__COMPUTED_COLUMN("Capacity", "string",
                                         "capacity is the description of the persistent volume's "
                                         "resources and capacity.",
                                         0),
    [COL_ACCESS_MODES] = CK__COMPUTED_COLUMN("Access Modes", "string",
                                             "accessModes contains all ways the volume can be "
                                             "mounted.",
                                             0),
    [COL_RECLAIM_POLICY] = {"Reclaim Policy", "string", "",
                            "persistentVolumeReclaimPolicy defines what happens to a persistent "
                            "volume when released from its claim.",
                            0, ".spec.persistentVolumeReclaimPolicy", CK_CELL_ABSENT_EMPTY, false},
    [COL_STATUS] = CK__COMPUTED_COLUMN("Status", "string",
                                       "phase indicates if a volume is available, bound to a "
                                       "claim, or released by a claim.",
                                       0),
    [COL_CLAIM] = CK__COMPUTED_COLUMN("Claim", "string",
                                      "claimRef is part of a bi-directional binding between "
                                      "PersistentVolume and PersistentVolumeClaim.",
                                      0),
    [COL_STORAGE_CLASS] =
        CK__COMPUTED_COLUMN("StorageClass", "string", "StorageClass of the pv", 0),
    [COL_VOLUME_ATTRIBUTES_CLASS] = CK__COMPUTED_COLUMN("VolumeAttributesClass", "string",
                                                        "VolumeAttributesClass of the pv", 0),
    [COL_REASON] = {"Reason", "string", "",
                    "reason is a brief CamelCase string that describes any failure and is meant "
                    "for machine parsing and tidy display in the CLI.",
                    0, ".status.reason", CK_CELL_ABSENT_EMPTY, false},
    [COL_AGE] = CK__AGE_COLUMN,
    [COL_VOLUME_MODE] = CK__COMPUTED_COLUMN("VolumeMode", "string",
                                            "volumeMode defines if a volume is intended to be "
                                            "used with a formatted filesystem or to remain in raw "
                                            "block state.",
                                            1),
};

const struct ck_kind ck__kind_persistentvolume = {
    .group = "",
    .version = "v1",
    .kind = "PersistentVolume",
    .list_kind = "PersistentVolumeList",
    .resource = "persistentvolumes",
    .singular = "persistentvolume",
    .short_names = short_names,
    .namespaced = false,
    .schema = "io.k8s.api.core.v1.PersistentVolume",
    CK__KIND_SUBRESOURCES(ck__status_subresource),
    .status_keeps_metadata = ck__status_keeps_labels,
    CK__KIND_COLUMNS(columns),
    .cells = cells,
    .prepare_for_create = prepare_for_create,
    .validate = validate,
};
